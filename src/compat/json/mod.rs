//! JSON Schema: parsing (drafts 4, 6, 7, 2019-09 and 2020-12), `$ref`
//! resolution, and compatibility by Confluent's difference catalogue.
//!
//! A `$ref` resolves inside the document (`#/definitions/…`, `$id`s,
//! anchors) or into a referenced schema (the [`SchemaText`]'s references,
//! those of references included), named as Confluent's `JsonSchema` names
//! them: by the reference's name, also when both are resolved against the
//! schema's own `$id`, or by the referenced schema's `$id`. A referenced
//! schema is read when a `$ref` first needs it, into the same node arena, so
//! the difference walk follows a reference as it follows a local `$ref`: a
//! change inside a referenced schema is reported like an inline one, with
//! the path of the place that refers to it.
//!
//! The check runs in two steps, as Confluent's does. First a walk records
//! every difference between the schema whose data must be read (the
//! "original") and the schema that reads it (the "update"), each as a
//! [`Change`] with Confluent's type name ([`Kind`]) and path. Then one table,
//! [`is_compatible`], judges each kind under a [`JsonPolicy`]. BACKWARD walks
//! from the earlier version to the candidate; FORWARD walks the other way.
//!
//! Content models decide most verdicts. An object is *open* when it allows
//! any additional property (`additionalProperties` absent or `true`),
//! *closed* with `additionalProperties: false`, and *partially open* when
//! `patternProperties` or an `additionalProperties` schema constrain the
//! extra properties. Adding a property to an open object is not BACKWARD
//! compatible under STRICT: data written earlier may already carry that name
//! with another type. Closing an open object is never compatible.
//!
//! The schemas are read as Confluent's loader reads them, quirks included,
//! so the differences match its lists: a `type` array is an `anyOf` of one
//! schema per type; keywords of several types without `type` make an
//! `allOf`; `$ref` replaces its siblings; equal subschemas of a combined
//! schema count once. With `$schema` 2019-09 or 2020-12, a changed `$id` is
//! not reported, `properties: {}` alone constrains nothing, `minContains`
//! defaults to 1 under `contains`, and `items: true|false` without
//! `prefixItems` says whether any items may appear (reported as
//! `additionalItems`). Recursive schemas are compared pair by pair with
//! each pair's result remembered; a pair met again while it is being
//! compared is assumed unchanged, and results that leaned on that
//! assumption are kept only once it proves true, so a change deep in a
//! recursive structure is never masked.
//!
//! Where we knowingly differ from Confluent:
//! - `format`, `contains` and `propertyNames` are read and checked for
//!   validity but, as in Confluent, changes to them are not reported.
//! - Remote `$ref`s (to documents that are neither this one nor a
//!   reference) are an error here, not a fetch.
//! - A reference's name and a `$ref` match when equal but for a leading
//!   `./`, or when equal once both are put in the folder of the schema's
//!   `$id`; other URI resolution (`..` segments, absolute paths) is not
//!   done. References of references are one list by name, as in Confluent,
//!   so two versions of one name in a graph are read as the first one met.
//! - An unknown `$schema` URI is refused rather than read as draft-07.
//! - The LENIENT table was worked out from Confluent's documented intent
//!   and the corpus: besides STRICT's compatible kinds it accepts closing
//!   or narrowing an open model, adding optional (or defaulted required)
//!   properties to an open model, removing properties from a closed one,
//!   and properties not covered by a partially open model.
//! - When several maximum matchings of combined subschemas exist, the one
//!   reported pairs subschemas without differences first, then follows
//!   document order; Confluent's depends on hash order. The verdict does
//!   not depend on the choice.
//! - Invalid schemas are found by checking every keyword the checker reads
//!   (and root `definitions`/`$defs`), not the whole draft meta-schema: a
//!   keyword nobody compares, such as `$comment`, is not validated.
//! - A changed `multipleOf` is classified (expanded, reduced, changed) by
//!   exact decimal division of the numbers as written, so 0.3 is a multiple
//!   of 0.1; Confluent's `NumberSchemaDiff` truncates both to integers first
//!   (and throws when it divides by a step below 1).
//! - A comparison that needs more than [`DEFAULT_STEP_BUDGET`] steps, or
//!   nests thousands of `$ref`s deep, is an error ([`TooComplex`]), never a
//!   guess.

mod decimal;
mod diff;
mod document;
mod explain;
mod kind;
mod model;
mod parse;
mod policy;

use serde::Serialize;

pub use kind::Kind;
pub use model::Draft;
pub use parse::ParseError;
pub use policy::{JsonPolicy, is_compatible};

use super::{Direction, Incompatibility, SchemaPath, SchemaText};
use model::{Meta, Node, NodeId};

/// The deepest nesting of arrays and objects a JSON Schema document may
/// have (serde_json's default limit, which this reader kept when it moved to
/// the borrowed tree): the parse and the walks over the parsed document
/// recurse no deeper. (Avro documents may nest deeper: see
/// [`crate::compat::avro::MAX_NESTING`].)
pub const MAX_NESTING: usize = 128;

/// How many node comparisons one check may make before it gives up as too
/// complex to decide (combined schemas compare every pair of subschemas).
pub const DEFAULT_STEP_BUDGET: usize = 2_000_000;

/// A JSON Schema document, parsed, validated and with its `$ref`s resolved.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    draft: Draft,
    nodes: Vec<Node>,
    metas: Vec<Meta>,
    /// Per node: true when some `$ref` names it, so walks may meet it twice.
    shared: Vec<bool>,
    /// Per node read from the text: a fingerprint of its JSON, when its
    /// subtree has no `$ref` or `not` (which can differ, or report a
    /// difference, even where the text is the same).
    digests: Vec<Option<parse::Digest>>,
    root: NodeId,
    canonical: String,
}

impl JsonSchema {
    /// Parses a schema text.
    ///
    /// # Errors
    /// [`ParseError`] naming the problem and its place: text that is not
    /// JSON, a keyword of the wrong shape (`{"type": 5}`), a `$ref` that
    /// names nothing in the document or only leads round to itself.
    pub fn parse(schema: &SchemaText) -> Result<Self, ParseError> {
        let document = document::read(&schema.text)?;
        let documents: Vec<std::cell::OnceCell<document::Document<'_>>> =
            schema.references.iter().map(|_| std::cell::OnceCell::new()).collect();
        let referenced: Vec<parse::Referenced<'_>> = schema
            .references
            .iter()
            .zip(&documents)
            .map(|(reference, document)| parse::Referenced {
                name: &reference.name,
                text: &reference.text,
                document,
            })
            .collect();
        let parsed = parse::parse(&document.root, document.objects, &referenced)?;
        let mut shared = vec![false; parsed.nodes.len()];
        for node in &parsed.nodes {
            if let Node::Ref(target) = node {
                shared[*target as usize] = true;
            }
        }
        Ok(Self {
            shared,
            digests: parsed.digests,
            draft: parsed.draft,
            nodes: parsed.nodes,
            metas: parsed.metas,
            root: parsed.root,
            canonical: document::canonical(&document.root),
        })
    }

    /// The draft the document was read with.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// The canonical text: the document with keys sorted and no whitespace,
    /// so layout and key order do not change a schema's identity.
    pub fn canonical(&self) -> String {
        self.canonical.clone()
    }

    /// The root's `$id`, when it is a string.
    pub fn root_id(&self) -> Option<String> {
        // The canonical text parsed once already, within the nesting limit.
        let document = document::read(&self.canonical).ok()?;
        document::member(&document.root, "$id")?.as_str().map(str::to_owned)
    }

    /// SHA-256 of the canonical text, in lowercase hex.
    pub fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(self.canonical.as_bytes());
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// How many schema nodes the document has: a measure of checking cost.
    pub fn size(&self) -> usize {
        self.nodes.len()
    }
}

/// One difference between two schemas, as Confluent's `SchemaDiff` reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Change {
    /// Confluent's type name.
    pub kind: Kind,
    /// Where: a JSON Pointer into the update (or into the original, for
    /// what the update no longer has); [`SchemaPath::to_confluent`] gives
    /// Confluent's `#/properties/foo` form.
    pub path: SchemaPath,
}

/// The walk could not finish within its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "too complex to decide: comparing the schemas needs more than {budget} steps or nests deeper than \
     the checker allows (combined schemas compare every pair of subschemas); simplify the \
     anyOf/oneOf/allOf nesting or the chains of `$ref`"
)]
pub struct TooComplex {
    /// The budget that ran out.
    pub budget: usize,
}

/// Every difference from `original` to `update`, with Confluent's kinds
/// and paths. Which sub-comparisons count as compatible (matching combined
/// subschemas, partially open models) depends on `policy`, as in Confluent.
///
/// # Errors
/// [`TooComplex`] when the walk needs more than `budget` comparisons.
pub fn differences(
    original: &JsonSchema,
    update: &JsonSchema,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<Change>, TooComplex> {
    let shallow = diff::Differ::new(original, update, policy, budget, diff::SHALLOW_MAX_DEPTH).run();
    let raw = match shallow {
        Ok(raw) => raw,
        Err(error) if error.too_deep => deep_walk(original, update, policy, budget)?,
        Err(_) => return Err(TooComplex { budget }),
    };
    Ok(raw
        .iter()
        .map(|change| {
            let mut path = SchemaPath::root();
            for step in diff::steps_of(change) {
                path = match step {
                    diff::Step::Key(key) => path.key(key),
                    diff::Step::Index(index) => path.index(index),
                };
            }
            Change {
                kind: change.kind,
                path,
            }
        })
        .collect())
}

/// The walk again, on a thread with a stack large enough for deeply
/// recursive schemas; still bounded by the step budget and a depth limit.
fn deep_walk<'a>(
    original: &'a JsonSchema,
    update: &'a JsonSchema,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<diff::RawChange<'a>>, TooComplex> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("json-schema-diff".to_owned())
            .stack_size(diff::DEEP_STACK_BYTES)
            .spawn_scoped(scope, || {
                diff::Differ::new(original, update, policy, budget, diff::DEEP_MAX_DEPTH).run()
            })
            .ok()
            .and_then(|handle| handle.join().ok())
            .and_then(Result::ok)
            .ok_or(TooComplex { budget })
    })
}

/// Every incompatibility between `candidate` and the earlier version at
/// 1-based position `version`, in one `direction`, under `policy`.
pub(crate) fn check(
    candidate: &JsonSchema,
    earlier: &JsonSchema,
    direction: Direction,
    version: usize,
    policy: JsonPolicy,
    budget: usize,
) -> Result<Vec<Incompatibility>, TooComplex> {
    let (original, update) = match direction {
        Direction::Backward => (earlier, candidate),
        Direction::Forward => (candidate, earlier),
    };
    let sides = crate::compat::sides::Sides { direction, version };
    Ok(differences(original, update, policy, budget)?
        .into_iter()
        .filter(|change| !is_compatible(change.kind, policy))
        .map(|change| Incompatibility {
            kind: super::Kind::Json(change.kind),
            message: format!(
                "{}: {}",
                explain::explain(change.kind, &change.path, &sides),
                sides.consequence("may reject")
            ),
            path: change.path,
            version,
            directions: vec![direction],
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_accepts_every_kind_strict_accepts() {
        for &kind in Kind::ALL {
            if is_compatible(kind, JsonPolicy::Strict) {
                assert!(is_compatible(kind, JsonPolicy::Lenient), "{kind}");
            }
        }
    }

    #[test]
    fn every_kind_reads_back_from_its_confluent_name() {
        for &kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>(), Ok(kind));
            assert_eq!(serde_json::to_string(&kind).ok(), Some(format!("\"{kind}\"")));
        }
        assert!("NOT_A_KIND".parse::<Kind>().is_err());
    }

    #[test]
    fn policies_parse_in_any_case() {
        assert_eq!("lenient".parse::<JsonPolicy>(), Ok(JsonPolicy::Lenient));
        assert_eq!("STRICT".parse::<JsonPolicy>(), Ok(JsonPolicy::Strict));
        let error = "sloppy".parse::<JsonPolicy>().unwrap_err().to_string();
        assert!(error.contains("STRICT, LENIENT"), "{error}");
    }

    #[test]
    fn a_draft_is_chosen_by_its_schema_uri() {
        let draft = |text: &str| JsonSchema::parse(&SchemaText::new(text)).map(|schema| schema.draft());
        assert_eq!(draft("{}"), Ok(Draft::Draft7));
        assert_eq!(
            draft(r#"{"$schema":"http://json-schema.org/draft-04/schema#"}"#),
            Ok(Draft::Draft4)
        );
        assert_eq!(
            draft(r#"{"$schema":"http://json-schema.org/draft-06/schema#"}"#),
            Ok(Draft::Draft6)
        );
        assert_eq!(
            draft(r#"{"$schema":"https://json-schema.org/draft/2019-09/schema"}"#),
            Ok(Draft::Draft2019)
        );
        assert_eq!(
            draft(r#"{"$schema":"https://json-schema.org/draft/2020-12/schema"}"#),
            Ok(Draft::Draft2020)
        );
    }

    /// A schema with references, each `(name, text)`.
    fn with_references(text: &str, references: &[(&str, &str)]) -> SchemaText {
        SchemaText {
            text: text.to_owned(),
            references: references
                .iter()
                .map(|(name, text)| crate::compat::Reference {
                    name: (*name).to_owned(),
                    text: (*text).to_owned(),
                })
                .collect(),
        }
    }

    const ADDRESS: &str = r#"{"type":"object","properties":{"city":{"type":"string"}},
        "definitions":{"zip":{"type":"string","maxLength":10}}}"#;

    // Issue 39, item 1: a `$ref` to a referenced schema was refused.
    #[test]
    fn a_ref_names_a_referenced_schema_by_the_reference_name() {
        let person = r#"{"type":"object","properties":{"home":{"$ref":"addr.json"},
            "zips":{"type":"array","items":{"$ref":"addr.json#/definitions/zip"}}},
            "definitions":{"work":{"$ref":"./addr.json"}}}"#;
        let parsed = JsonSchema::parse(&with_references(person, &[("addr.json", ADDRESS)]));
        assert!(parsed.is_ok(), "{parsed:?}");
        let error = JsonSchema::parse(&SchemaText::new(person)).unwrap_err().to_string();
        assert!(error.contains("cannot resolve `$ref` \"./addr.json\""), "{error}");
        assert!(error.contains("the schema has no references"), "{error}");
    }

    #[test]
    fn a_ref_names_a_referenced_schema_by_its_id_or_by_a_uri_relative_to_the_schema_id() {
        let address = r#"{"$id":"https://example.com/schemas/address","type":"object"}"#;
        let by_id = r#"{"properties":{"home":{"$ref":"https://example.com/schemas/address"}}}"#;
        assert!(JsonSchema::parse(&with_references(by_id, &[("addr", address)])).is_ok());
        let relative = r#"{"$id":"https://example.com/schemas/person.json",
            "properties":{"home":{"$ref":"https://example.com/schemas/addr.json"}}}"#;
        assert!(JsonSchema::parse(&with_references(relative, &[("addr.json", ADDRESS)])).is_ok());
    }

    #[test]
    fn references_of_references_resolve_and_a_problem_inside_one_names_it() {
        let address = r#"{"type":"object","properties":{"country":{"$ref":"country.json"}}}"#;
        let country = r#"{"type":"string","minLength":2}"#;
        let person = r#"{"properties":{"home":{"$ref":"addr.json"}}}"#;
        let both = [("country.json", country), ("addr.json", address)];
        assert!(JsonSchema::parse(&with_references(person, &both)).is_ok());
        let error = JsonSchema::parse(&with_references(person, &[("addr.json", address)])).unwrap_err();
        assert_eq!(error.position, "addr.json#/properties/country/$ref", "{error}");
        assert!(error.problem.contains("the references are `addr.json`"), "{error}");
        let missing = r#"{"properties":{"home":{"$ref":"country.json#/definitions/none"}}}"#;
        let error = JsonSchema::parse(&with_references(missing, &both)).unwrap_err();
        assert!(
            error
                .problem
                .contains("nothing in the referenced schema `country.json` is at that place"),
            "{error}"
        );
    }

    #[test]
    fn a_cycle_of_refs_across_referenced_schemas_is_refused_and_named() {
        let person = r#"{"properties":{"home":{"$ref":"a.json"}}}"#;
        let references = [("a.json", r#"{"$ref":"b.json"}"#), ("b.json", r#"{"$ref":"a.json"}"#)];
        let error = JsonSchema::parse(&with_references(person, &references))
            .unwrap_err()
            .to_string();
        assert!(error.contains("cycle of references"), "{error}");
        assert!(error.contains("a.json#") && error.contains("b.json#"), "{error}");
    }

    #[test]
    fn a_structure_recursive_across_referenced_schemas_is_read() {
        let person = r#"{"type":"object","properties":{"home":{"$ref":"addr.json"}}}"#;
        let address = r#"{"type":"object","properties":{"owner":{"$ref":"person.json"}}}"#;
        let references = [("addr.json", address), ("person.json", person)];
        assert!(JsonSchema::parse(&with_references(person, &references)).is_ok());
    }

    #[test]
    fn a_change_inside_a_referenced_schema_is_judged_like_an_inline_change() {
        use crate::compat::{Format, Mode, check};
        let person = r#"{"type":"object","properties":{"home":{"$ref":"addr.json"}}}"#;
        let address_v1 = r#"{"type":"object","properties":{"city":{"type":"string"}}}"#;
        let address_v2 = r#"{"type":"object","properties":{"city":{"type":"integer"}}}"#;
        let previous = with_references(person, &[("addr.json", address_v1)]);
        let candidate = with_references(person, &[("addr.json", address_v2)]);
        let report = check(Format::Json, Mode::Backward, &candidate, &[previous]).unwrap();
        let found: Vec<String> = report
            .incompatibilities
            .iter()
            .map(|found| format!("{} {}", found.kind, found.path))
            .collect();
        assert_eq!(found, ["TYPE_CHANGED /properties/home/properties/city"]);
        let inline = |city: &str| {
            SchemaText::new(format!(
                r#"{{"type":"object","properties":{{"home":{{"type":"object","properties":{{"city":{{"type":"{city}"}}}}}}}}}}"#
            ))
        };
        let inline_report = check(Format::Json, Mode::Backward, &inline("integer"), &[inline("string")]).unwrap();
        assert_eq!(report.incompatibilities.len(), inline_report.incompatibilities.len());
        assert_eq!(
            report.incompatibilities[0].path,
            inline_report.incompatibilities[0].path
        );
    }
}

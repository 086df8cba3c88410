//! JSON Schema verdicts proven on data (issue 9, JSON part): for generated
//! schema histories v1..vn the engine calls compatible, every instance
//! valid under the writer is valid under the reader (checked with the
//! `jsonschema` validator), in every direction and against every version
//! the mode promises, under both of Confluent's policies. For pairs it calls
//! incompatible, the rate at which generated instances actually fail is
//! printed per kind.
//!
//! What a writer may write depends on the policy. STRICT (Confluent's
//! default) assumes writers use an open content model: an object without
//! `additionalProperties: false` may carry undeclared properties with any
//! value (or values of the `additionalProperties` schema). LENIENT assumes
//! writers only write the properties their schema declares.
//!
//! Rules of the reference semantics that are unsound on data by design are
//! listed in [`KNOWN_DIVERGENCES`]; the property excuses exactly the pairs
//! where such a rule was applied, and a test proves each still diverges.
//! The seeds are fixed, so every run checks the same cases.

#[path = "support/json_gen.rs"]
mod json_gen;
#[path = "support/precision.rs"]
mod precision;

use std::collections::BTreeMap;

use json_gen::{Schema, history, instance, text};
use jsonschema::Validator;
use precision::Precision;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use schemaops::compat::json::{DEFAULT_STEP_BUDGET, JsonPolicy, JsonSchema, differences, is_compatible};
use schemaops::compat::{Checker, Direction, Format, Mode, Report, SchemaText};
use serde_json::{Value, json};

/// Confluent rules that call a change compatible although data written
/// under the writer can fail the reader: (kind, why). The property excuses
/// a failing instance only when the walk from writer to reader found one of
/// these kinds, the policy judges it compatible, and every error the
/// validator reports is the keyword that rule lets through, on the object
/// it applied to ([`excused`]).
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[
    (
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "Confluent treats a default as filling in a property older data lacks, but JSON Schema \
         validation never applies defaults: an instance without the newly required property fails",
    ),
    (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "the same assumption when the required property is new to a closed or partially open object",
    ),
    (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
        "LENIENT only: the same assumption when the required property is new to an open object",
    ),
    (
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "a property that takes any value is judged before whether it is required, so a new \
         required `{}` property passes although instances written without it fail",
    ),
    (
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "LENIENT only: the writer declared the property and so writes it, but the reader's closed \
         model no longer lets it through",
    ),
];

/// For each known divergence, a pair that shows it: (kind, policy, writer, reader, instance of the writer).
const DIVERGENCE_EXAMPLES: &[(&str, JsonPolicy, &str, &str, &str)] = &[
    (
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        JsonPolicy::Strict,
        r#"{"type":"object","properties":{"a":{"type":"string"}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"string","default":""}},"required":["a"]}"#,
        "{}",
    ),
    (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        JsonPolicy::Strict,
        r#"{"type":"object","properties":{"b":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{"type":"string","default":""},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false}"#,
        r#"{"b":1}"#,
    ),
    (
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
        JsonPolicy::Lenient,
        r#"{"type":"object","properties":{"b":{"type":"integer"}}}"#,
        r#"{"type":"object","properties":{"a":{"type":"string","default":""},"b":{"type":"integer"}},"required":["a"]}"#,
        r#"{"b":1}"#,
    ),
    (
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        JsonPolicy::Strict,
        r#"{"type":"object","properties":{"b":{"type":"integer"}}}"#,
        r#"{"type":"object","properties":{"a":{},"b":{"type":"integer"}},"required":["a"]}"#,
        r#"{"b":1}"#,
    ),
    (
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        JsonPolicy::Lenient,
        r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"b":{"type":"integer"}},"additionalProperties":false}"#,
        r#"{"a":"x"}"#,
    ),
];

const POLICIES: [JsonPolicy; 2] = [JsonPolicy::Strict, JsonPolicy::Lenient];

/// Every mode that promises something.
const MODES: [Mode; 6] = [
    Mode::Backward,
    Mode::BackwardTransitive,
    Mode::Forward,
    Mode::ForwardTransitive,
    Mode::Full,
    Mode::FullTransitive,
];

/// Instances per version drawn for each policy.
const INSTANCES: usize = 6;
/// Instances of the writer tried against the reader of an incompatible pair.
const PRECISION_INSTANCES: usize = 24;

fn validator(schema: &Value) -> Validator {
    jsonschema::draft7::new(schema).expect("generated schemas are valid JSON Schema")
}

/// The engine's verdict on `candidate` after `previous` (oldest first).
fn verdict(policy: JsonPolicy, mode: Mode, previous: &[String], candidate: &str) -> Report {
    let previous: Vec<SchemaText> = previous.iter().map(SchemaText::new).collect();
    Checker::default()
        .with_json_policy(policy)
        .check(Format::Json, mode, &SchemaText::new(candidate), &previous)
        .expect("generated schemas are valid and decidable")
}

/// The object schema a validation error is about, when a divergent rule
/// could explain it: a `required` or a closed `additionalProperties`
/// failure, as (kind of keyword, pointer to the object in the reader).
fn error_site(schema_path: &str) -> Option<(&'static str, &str)> {
    if let Some(object) = schema_path.strip_suffix("/required") {
        Some(("required", object))
    } else {
        schema_path
            .strip_suffix("/additionalProperties")
            .map(|object| ("additionalProperties", object))
    }
}

/// The keyword whose failures the divergent rule `kind` lets through.
fn keyword_let_through(kind: &str) -> &'static str {
    match kind {
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" => "additionalProperties",
        _ => "required",
    }
}

/// The known divergences the walk from `writer` to `reader` applied under
/// `policy`, each with the pointer to the object it applied to.
fn divergences_applied(policy: JsonPolicy, writer: &str, reader: &str) -> Vec<(&'static str, String)> {
    let parse = |text: &str| JsonSchema::parse(&SchemaText::new(text)).expect("generated schemas parse");
    let changes = differences(&parse(writer), &parse(reader), policy, DEFAULT_STEP_BUDGET)
        .expect("generated schemas are decidable");
    let mut applied = Vec::new();
    for change in changes {
        let Some((kind, _)) = KNOWN_DIVERGENCES.iter().find(|(kind, _)| *kind == change.kind.as_str()) else {
            continue;
        };
        if !is_compatible(change.kind, policy) {
            continue;
        }
        // The change names the property (`…/properties/a` or `…/required/a`); its object is two steps up.
        let path = change.path.to_string();
        let object = path.rsplitn(3, '/').nth(2).unwrap_or_default().to_owned();
        applied.push((*kind, object));
    }
    applied
}

/// The schema paths of every error `value` meets under `reader`.
fn errors(reader: &Validator, value: &Value) -> Vec<String> {
    reader
        .iter_errors(value)
        .map(|error| format!("{} ({error})", error.schema_path().as_str()))
        .collect()
}

/// The known divergences that explain every error of a failing instance,
/// if they do: each error must be the keyword a divergent rule the pair
/// applied lets through, on an object that rule applied to.
fn excused(
    policy: JsonPolicy,
    writer: &str,
    reader: &str,
    validator: &Validator,
    value: &Value,
) -> Option<Vec<&'static str>> {
    let applied = divergences_applied(policy, writer, reader);
    let mut used = Vec::new();
    for error in validator.iter_errors(value) {
        let (keyword, object) = error_site(error.schema_path().as_str())?;
        let (kind, _) = applied
            .iter()
            .find(|(kind, at)| keyword_let_through(kind) == keyword && at == object)?;
        used.push(*kind);
    }
    used.sort_unstable();
    used.dedup();
    (!used.is_empty()).then_some(used)
}

/// A generated history with instances of every version: (versions, STRICT instances, LENIENT instances).
type Case = (Vec<Schema>, Vec<Vec<Value>>, Vec<Vec<Value>>);

fn case() -> impl Strategy<Value = Case> {
    history().prop_flat_map(|versions| {
        let of = |extras: bool| -> Vec<_> {
            versions
                .iter()
                .map(|version| proptest::collection::vec(instance(version, extras), INSTANCES))
                .collect()
        };
        let (strict, lenient) = (of(true), of(false));
        (Just(versions), strict, lenient)
    })
}

/// The writer and reader of a direction between the candidate and an earlier version.
fn roles(direction: Direction, earlier: usize, candidate: usize) -> (usize, usize) {
    match direction {
        Direction::Backward => (earlier, candidate),
        Direction::Forward => (candidate, earlier),
    }
}

/// What checking one case saw, for the floors that keep the property from passing vacuously.
#[derive(Debug, Default)]
struct Tally {
    /// Per (policy, mode), in `POLICIES` x `MODES` order: verdicts that were
    /// compatible, and of those, ones where the candidate differs from some
    /// version it was checked against.
    compatible: [[(usize, usize); MODES.len()]; POLICIES.len()],
    /// (writer instance, reader) validations made for compatible verdicts.
    validations: usize,
    /// Failing instances excused by a known divergence, per kind.
    excused: BTreeMap<&'static str, usize>,
}

/// Checks one case: every promise of a compatible verdict holds on the instances.
fn holds(case: &Case, tally: &mut Tally) -> Result<(), TestCaseError> {
    let (versions, strict, lenient) = case;
    let texts: Vec<String> = versions.iter().map(text).collect();
    let documents: Vec<Value> = versions.iter().map(json_gen::render).collect();
    let validators: Vec<Validator> = documents.iter().map(validator).collect();
    for (index, instances) in strict.iter().chain(lenient).enumerate() {
        let version = index % versions.len();
        for value in instances {
            prop_assert!(
                validators[version].is_valid(value),
                "generator bug: {value} is not valid under v{}: {}",
                version + 1,
                texts[version]
            );
        }
    }
    let candidate = versions.len() - 1;
    for (p, policy) in POLICIES.into_iter().enumerate() {
        let instances = match policy {
            JsonPolicy::Strict => strict,
            JsonPolicy::Lenient => lenient,
        };
        for (m, mode) in MODES.into_iter().enumerate() {
            if !verdict(policy, mode, &texts[..candidate], &texts[candidate]).is_compatible() {
                continue;
            }
            let earlier: Vec<usize> = mode.versions_to_check(candidate).into_iter().map(|v| v - 1).collect();
            tally.compatible[p][m].0 += 1;
            if earlier.iter().any(|&e| texts[e] != texts[candidate]) {
                tally.compatible[p][m].1 += 1;
            }
            for &earlier in &earlier {
                for &direction in mode.directions() {
                    let (writer, reader) = roles(direction, earlier, candidate);
                    for value in &instances[writer] {
                        tally.validations += 1;
                        if validators[reader].is_valid(value) {
                            continue;
                        }
                        if let Some(kinds) = excused(policy, &texts[writer], &texts[reader], &validators[reader], value)
                        {
                            for kind in kinds {
                                *tally.excused.entry(kind).or_default() += 1;
                            }
                            continue;
                        }
                        let errors = errors(&validators[reader], value);
                        prop_assert!(
                            false,
                            "{policy} {mode} called v{} compatible, but an instance written with v{} fails v{}\n\
                             writer: {}\nreader: {}\ninstance: {value}\nerrors: {errors:?}\nhistory:\n{}",
                            candidate + 1,
                            writer + 1,
                            reader + 1,
                            texts[writer],
                            texts[reader],
                            texts
                                .iter()
                                .enumerate()
                                .map(|(i, t)| format!("  v{}: {t}", i + 1))
                                .collect::<Vec<_>>()
                                .join("\n")
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        rng_seed: RngSeed::Fixed(9),
        // Shrunk failures are saved beside this file, and replayed first on every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Whatever a mode promises for a compatible history holds on data:
    /// BACKWARD, the candidate reads what earlier versions wrote; FORWARD,
    /// earlier versions read what the candidate writes; FULL, both; the
    /// transitive forms against every earlier version, the others against
    /// the latest.
    #[test]
    fn instances_of_the_writer_validate_against_the_reader_whenever_the_engine_says_compatible(case in case()) {
        holds(&case, &mut Tally::default())?;
    }
}

fn draw(runner: &mut TestRunner) -> Case {
    case().new_tree(runner).expect("a case").current()
}

/// The property must not pass vacuously: on cases drawn with another seed,
/// every policy and mode meets both verdicts, compatible verdicts on
/// histories that really changed, and the data checks they lead to.
#[test]
fn every_policy_and_mode_sees_both_verdicts() {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(17),
        failure_persistence: None,
        ..Config::default()
    });
    let rounds = 400;
    let mut tally = Tally::default();
    for _ in 0..rounds {
        if let Err(failure) = holds(&draw(&mut runner), &mut tally) {
            panic!("{failure}");
        }
    }
    println!(
        "over {rounds} generated histories ({} instance validations; failures excused: {:?}):",
        tally.validations, tally.excused
    );
    println!("  policy   mode                 compatible  of which changed");
    for (p, policy) in POLICIES.into_iter().enumerate() {
        for (m, mode) in MODES.into_iter().enumerate() {
            let (compatible, changed) = tally.compatible[p][m];
            println!(
                "  {:<8} {:<20} {compatible:>4} ({:>2.0} %)  {changed:>4}",
                policy.to_string(),
                mode.to_string(),
                100.0 * compatible as f64 / rounds as f64
            );
        }
    }
    for (p, policy) in POLICIES.into_iter().enumerate() {
        for (m, mode) in MODES.into_iter().enumerate() {
            let (compatible, changed) = tally.compatible[p][m];
            assert!(
                changed >= rounds / 40 && compatible <= rounds * 9 / 10,
                "{policy} {mode}: {compatible} of {rounds} compatible ({changed} with a change); \
                 the generator should yield both verdicts often"
            );
        }
    }
    assert!(tally.validations >= 10 * rounds, "{} validations", tally.validations);
    for (kind, _) in KNOWN_DIVERGENCES {
        assert!(
            tally.excused.contains_key(kind),
            "the generated histories never needed the known divergence {kind}: is it stale?"
        );
    }
}

/// Each known divergence still occurs: the engine calls its example
/// compatible and the example's instance fails the reader. A divergence
/// fixed in the engine (or a rule no longer applied) makes this fail, so
/// the table cannot go stale.
#[test]
fn every_known_divergence_still_diverges() {
    for (kind, why) in KNOWN_DIVERGENCES {
        let (_, policy, writer, reader, value) = DIVERGENCE_EXAMPLES
            .iter()
            .find(|example| example.0 == *kind)
            .unwrap_or_else(|| panic!("no example for the known divergence {kind} ({why})"));
        let value: Value = serde_json::from_str(value).expect("example instances are JSON");
        let writer_document: Value = serde_json::from_str(writer).expect("example schemas are JSON");
        let reader_document: Value = serde_json::from_str(reader).expect("example schemas are JSON");
        assert!(
            validator(&writer_document).is_valid(&value),
            "{kind}: the instance is valid under the writer"
        );
        let reader_validator = validator(&reader_document);
        assert!(
            !reader_validator.is_valid(&value),
            "{kind}: the instance fails the reader"
        );
        assert_eq!(
            excused(*policy, writer, reader, &reader_validator, &value),
            Some(vec![*kind]),
            "{kind}: the rule explains the failure: {:?}",
            errors(&reader_validator, &value)
        );
        let report = verdict(*policy, Mode::Backward, &[(*writer).to_owned()], reader);
        assert!(
            report.is_compatible(),
            "{kind}: {policy} no longer calls the example compatible: {report:?}"
        );
        let applied: Vec<&str> = divergences_applied(*policy, writer, reader)
            .into_iter()
            .map(|(kind, _)| kind)
            .collect();
        assert_eq!(applied, vec![*kind], "{kind}");
    }
}

#[test]
fn incompatible_verdicts_are_mostly_borne_out_by_data() {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(2026),
        failure_persistence: None,
        ..Config::default()
    });
    let rounds = 2000;
    let mut precision = Precision::default();
    for _ in 0..rounds {
        let (versions, ..) = draw(&mut runner);
        let texts: Vec<String> = versions.iter().map(text).collect();
        let candidate = texts.len() - 1;
        let report = verdict(
            JsonPolicy::Strict,
            Mode::Backward,
            &texts[..candidate],
            &texts[candidate],
        );
        if report.is_compatible() {
            precision.count_compatible();
            continue;
        }
        let reader = validator(&json_gen::render(&versions[candidate]));
        let written = proptest::collection::vec(instance(&versions[candidate - 1], true), PRECISION_INSTANCES)
            .new_tree(&mut runner)
            .expect("instances")
            .current();
        let failed = written.iter().any(|value| !reader.is_valid(value));
        precision.count_incompatible(&report, failed);
    }
    precision.print(&format!(
        "json precision, BACKWARD under STRICT, over {rounds} generated histories"
    ));
    let (compatible, incompatible) = (precision.compatible, precision.incompatible);
    assert!(
        compatible >= rounds / 10 && incompatible >= rounds / 10,
        "the generator yields both verdicts: {compatible} compatible, {incompatible} incompatible"
    );
}

#[test]
fn the_model_renders_the_keywords_the_tests_rely_on() {
    let schema = Schema::Object(json_gen::Object {
        properties: [(
            0,
            json_gen::Property {
                schema: Schema::Scalar {
                    kind: json_gen::Scalar::String,
                    nullable: true,
                    lower: None,
                    upper: Some(4),
                },
                required: true,
                default: true,
                description: Some(1),
            },
        )]
        .into_iter()
        .collect(),
        additional: json_gen::Additional::False,
    });
    assert_eq!(
        json_gen::render(&schema),
        json!({
            "type": "object",
            "properties": {"a": {"type": ["string", "null"], "maxLength": 4, "default": null, "description": "note 1"}},
            "required": ["a"],
            "additionalProperties": false
        })
    );
}

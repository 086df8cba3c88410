//! The semantic diff: every change between an earlier version of a schema
//! and a candidate, compatible or not, each with its place, its element's
//! name, its kind in the format's own vocabulary, and, per direction,
//! the check's findings that it causes.
//!
//! Pure, like the rest of [`crate::compat`]. The changes come from a walk
//! of the two schemas: Confluent's difference walks for JSON Schema and
//! Protobuf (which already record compatible changes too), and a
//! structural walk for Avro ([`AvroChange`]). Whether a change *breaks* is
//! never decided here: the check runs in each direction and each of its
//! findings is attached to the change at its place (see [`attach`]). A
//! finding that no change explains becomes a change of its own
//! ([`ChangeKind::Unexplained`]), so nothing the check finds is lost.
//!
//! # Guarantees
//! A pair is compatible under BACKWARD (FORWARD, FULL) exactly when no
//! change breaks that direction (either direction), and every break
//! carries the message the check gives.
//!
//! ```
//! use schemaops::compat::{Checker, Direction, Format, SchemaRole, SchemaText};
//! use schemaops::compat::diff::diff;
//! let checker = Checker::default();
//! let parse = |text: &str| checker.parse(Format::Avro, SchemaRole::Candidate, &SchemaText::new(text)).unwrap();
//! let v1 = parse(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#);
//! let v2 = parse(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string"}]}"#);
//! let changes = diff(&checker, &v1, &v2, 1).unwrap();
//! let added = changes.iter().find(|c| c.element == "b").unwrap();
//! assert_eq!(added.kind.to_string(), "FIELD_ADDED_WITHOUT_DEFAULT");
//! assert!(added.breaks(Direction::Backward) && !added.breaks(Direction::Forward));
//! ```

mod attach;
pub mod avro;

use std::fmt;

use serde::Serialize;

pub use avro::AvroChange;

use super::{CheckError, Checker, Direction, Kind, Mode, ParsedSchema, SchemaPath, json, protobuf};

/// What kind of change, in the vocabulary of its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(untagged)]
pub enum ChangeKind {
    /// A change found by the Avro structural walk.
    Avro(AvroChange),
    /// One of Confluent's JSON Schema difference types.
    Json(json::Kind),
    /// One of Confluent's Protobuf difference types.
    Protobuf(protobuf::Kind),
    /// A finding of the check that no change of the walk explains; named
    /// by the finding's kind.
    Unexplained(Kind),
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChangeKind::Avro(kind) => kind.fmt(f),
            ChangeKind::Json(kind) => kind.fmt(f),
            ChangeKind::Protobuf(kind) => kind.fmt(f),
            ChangeKind::Unexplained(kind) => kind.fmt(f),
        }
    }
}

/// One finding of the check, as a reason a change breaks one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    /// The check's kind for it.
    pub kind: Kind,
    /// Where the check places it (in the reading schema).
    pub path: SchemaPath,
    /// The check's own message.
    pub message: String,
}

/// One change between two versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// What kind of change.
    pub kind: ChangeKind,
    /// Where: a JSON Pointer into the candidate, or into the earlier
    /// version for what only it has (Protobuf: message names and numbers).
    pub path: SchemaPath,
    /// The name of the element changed: a field, a type, a symbol.
    pub element: String,
    /// Before and after, in a few words, when the kind alone does not say.
    pub detail: String,
    /// Why the candidate cannot read data written with the earlier version
    /// because of this change; empty when it can.
    pub backward: Vec<Break>,
    /// Why the earlier version cannot read data written with the candidate
    /// because of this change; empty when it can.
    pub forward: Vec<Break>,
}

impl Change {
    /// Whether this change breaks `direction`.
    pub fn breaks(&self, direction: Direction) -> bool {
        !self.breaks_in(direction).is_empty()
    }

    /// The findings that make it break `direction`.
    pub fn breaks_in(&self, direction: Direction) -> &[Break] {
        match direction {
            Direction::Backward => &self.backward,
            Direction::Forward => &self.forward,
        }
    }
}

/// A change as a walk found it, placed in both schemas where it can be.
#[derive(Debug, Clone)]
pub(crate) struct Located<K> {
    pub(crate) kind: K,
    pub(crate) element: String,
    pub(crate) previous_path: Option<SchemaPath>,
    pub(crate) candidate_path: Option<SchemaPath>,
    pub(crate) detail: String,
}

/// Every change from `previous` to `candidate`, with the check's findings
/// in each direction attached; `version` is the number the findings'
/// messages call the earlier version by.
///
/// # Errors
/// [`CheckError::FormatMismatch`] for schemas of two formats;
/// [`CheckError::TooComplex`] when a JSON Schema walk exceeds its budget.
pub fn diff(
    checker: &Checker,
    previous: &ParsedSchema,
    candidate: &ParsedSchema,
    version: usize,
) -> Result<Vec<Change>, CheckError> {
    let walked: Vec<Located<ChangeKind>> = match (previous, candidate) {
        (ParsedSchema::Avro(old), ParsedSchema::Avro(new)) => retag(avro::changes(old, new), ChangeKind::Avro),
        (ParsedSchema::Json(old), ParsedSchema::Json(new)) => {
            let found = json::differences(old, new, checker.json_policy, checker.json_step_budget)
                .map_err(|source| super::stopped_or_too_complex(version, source))?;
            found
                .into_iter()
                .map(|change| Located {
                    kind: ChangeKind::Json(change.kind),
                    element: last_name(&change.path),
                    previous_path: Some(change.path.clone()),
                    candidate_path: Some(change.path),
                    detail: String::new(),
                })
                .collect()
        }
        (ParsedSchema::Protobuf(old), ParsedSchema::Protobuf(new)) => protobuf::differences(old, new)
            .into_iter()
            .map(|change| Located {
                kind: ChangeKind::Protobuf(change.kind),
                element: change.detail.field.clone().unwrap_or_else(|| last_name(&change.path)),
                previous_path: Some(change.path.clone()),
                candidate_path: Some(change.path),
                detail: protobuf_detail(&change.detail),
            })
            .collect(),
        (old, new) => {
            return Err(CheckError::FormatMismatch {
                candidate: new.format(),
                earlier: old.format(),
            });
        }
    };
    let backward = super::compare(Mode::Backward, candidate, previous, version, checker)?;
    let forward = super::compare(Mode::Forward, candidate, previous, version, checker)?;
    Ok(attach::attach(walked, &backward, &forward, checker.json_policy))
}

fn retag<K>(changes: Vec<Located<K>>, tag: impl Fn(K) -> ChangeKind) -> Vec<Located<ChangeKind>> {
    changes
        .into_iter()
        .map(|change| Located {
            kind: tag(change.kind),
            element: change.element,
            previous_path: change.previous_path,
            candidate_path: change.candidate_path,
            detail: change.detail,
        })
        .collect()
}

/// The last named step of a path: a property, message or type name.
fn last_name(path: &SchemaPath) -> String {
    path.segments()
        .iter()
        .rev()
        .find_map(|segment| match segment {
            super::Segment::Key(key) => Some(key.clone()),
            super::Segment::Index(_) => None,
        })
        .unwrap_or_default()
}

fn protobuf_detail(detail: &protobuf::Detail) -> String {
    match (&detail.before, &detail.after) {
        (Some(before), Some(after)) => format!("`{before}` to `{after}`"),
        (Some(before), None) => format!("was `{before}`"),
        (None, Some(after)) => format!("now `{after}`"),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::{Format, SchemaRole, SchemaText};

    fn changes(format: Format, old: &str, new: &str) -> Vec<Change> {
        let checker = Checker::default();
        let parse = |text: &str| {
            checker
                .parse(format, SchemaRole::Candidate, &SchemaText::new(text))
                .expect("a valid schema")
        };
        diff(&checker, &parse(old), &parse(new), 2).expect("the pair diffs")
    }

    fn named<'a>(changes: &'a [Change], kind: &str) -> &'a Change {
        changes
            .iter()
            .find(|change| change.kind.to_string() == kind)
            .unwrap_or_else(|| panic!("no {kind} in {changes:#?}"))
    }

    const V2: &str = r#"{"type":"record","name":"PlatonicSolid","fields":[
        {"name":"name","type":"string"},{"name":"faces","type":"int"},
        {"name":"vertices","type":["null","int"],"default":null}]}"#;

    #[test]
    fn a_field_added_without_a_default_breaks_backward_only_with_the_checks_message() {
        let v3 = r#"{"type":"record","name":"PlatonicSolid","fields":[
            {"name":"name","type":"string"},{"name":"faces","type":"int"},
            {"name":"vertices","type":["null","int"],"default":null},{"name":"edges","type":"int"}]}"#;
        let found = changes(Format::Avro, V2, v3);
        assert_eq!(found.len(), 1, "{found:#?}");
        let edges = named(&found, "FIELD_ADDED_WITHOUT_DEFAULT");
        assert_eq!(
            (edges.element.as_str(), edges.path.to_string()),
            ("edges", "/fields/3".to_owned())
        );
        assert!(edges.breaks(Direction::Backward) && !edges.breaks(Direction::Forward));
        assert!(
            edges.backward[0].message.contains("was added without a default"),
            "{}",
            edges.backward[0].message
        );
    }

    #[test]
    fn compatible_changes_are_listed_without_breaks() {
        let v3 = r#"{"type":"record","name":"PlatonicSolid","doc":"A solid","fields":[
            {"name":"name","type":"string"},{"name":"faces","type":"long"},
            {"name":"vertices","type":["null","int"],"default":null}]}"#;
        let found = changes(Format::Avro, V2, v3);
        let promoted = named(&found, "TYPE_PROMOTED");
        assert_eq!(promoted.path.to_string(), "/fields/1/type");
        assert!(!promoted.breaks(Direction::Backward));
        // Old readers cannot read a long as an int.
        assert!(promoted.breaks(Direction::Forward));
        assert!(!named(&found, "DOC_CHANGED").breaks(Direction::Forward));
    }

    #[test]
    fn an_enum_symbol_added_breaks_forward_and_a_removed_field_is_placed_in_the_earlier_version() {
        let old = r#"{"type":"record","name":"R","fields":[{"name":"gone","type":"int"},
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}}]}"#;
        let new = r#"{"type":"record","name":"R","fields":[
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}"#;
        let found = changes(Format::Avro, old, new);
        let symbol = named(&found, "SYMBOL_ADDED");
        assert_eq!(
            (symbol.element.as_str(), symbol.path.to_string()),
            ("B", "/fields/0/type/symbols".to_owned())
        );
        assert!(symbol.breaks(Direction::Forward) && !symbol.breaks(Direction::Backward));
        let gone = named(&found, "FIELD_REMOVED_WITHOUT_DEFAULT");
        assert_eq!(gone.path.to_string(), "/fields/0");
        assert!(gone.breaks(Direction::Forward));
        assert!(
            found
                .iter()
                .all(|change| !matches!(change.kind, ChangeKind::Unexplained(_)))
        );
    }

    #[test]
    fn json_and_protobuf_changes_carry_confluents_names() {
        let json = changes(
            Format::Json,
            r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#,
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false}"#,
        );
        let added = named(&json, "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL");
        assert_eq!(added.element, "b");
        assert!(!added.breaks(Direction::Backward) && added.breaks(Direction::Forward));
        let proto = changes(
            Format::Protobuf,
            "syntax = \"proto3\";\nmessage M { int32 a = 1; }\n",
            "syntax = \"proto3\";\nmessage M { string a = 1; }\n",
        );
        let changed = named(&proto, "FIELD_SCALAR_KIND_CHANGED");
        assert!(changed.breaks(Direction::Backward) && changed.breaks(Direction::Forward));
    }

    #[test]
    fn schemas_of_two_formats_are_an_error() {
        let checker = Checker::default();
        let avro = checker
            .parse(Format::Avro, SchemaRole::Candidate, &SchemaText::new(r#""int""#))
            .unwrap();
        let json = checker
            .parse(Format::Json, SchemaRole::Candidate, &SchemaText::new("{}"))
            .unwrap();
        assert!(matches!(
            diff(&checker, &avro, &json, 1),
            Err(CheckError::FormatMismatch { .. })
        ));
    }
}

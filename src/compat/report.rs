//! What a check found: [`Incompatibility`] values gathered into a [`Report`],
//! sorted and deduplicated so the same inputs always give the same output.

use std::fmt;

use serde::Serialize;

use super::avro;
use super::json;
use super::mode::Mode;
use super::path::SchemaPath;
use super::protobuf;

/// The kind of an incompatibility, from the closed set of one format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(untagged)]
pub enum Kind {
    /// An Avro schema-resolution failure.
    Avro(avro::Kind),
    /// A JSON Schema difference that breaks under the policy in force.
    Json(json::Kind),
    /// A Protobuf difference that breaks compatibility.
    Protobuf(protobuf::Kind),
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Avro(kind) => kind.fmt(f),
            Kind::Json(kind) => kind.fmt(f),
            Kind::Protobuf(kind) => kind.fmt(f),
        }
    }
}

/// One reason why the candidate cannot replace an earlier version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Incompatibility {
    /// What kind of break this is, in the format's own vocabulary.
    pub kind: Kind,
    /// Where it is: a JSON Pointer into the reading schema (the candidate for
    /// a backward check, the earlier version for a forward one), as Avro and
    /// Confluent locate it.
    pub path: SchemaPath,
    /// A sentence a person can act on: what changed, where, and who breaks.
    pub message: String,
    /// The 1-based position, in the `previous` list given to the check, of the
    /// version this breaks against.
    pub version: usize,
}

/// The outcome of a check that could decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The mode that was checked.
    pub mode: Mode,
    /// The 1-based positions of the earlier versions checked, newest first.
    pub checked_versions: Vec<usize>,
    /// Every incompatibility against every checked version, sorted by
    /// (version, path, kind, message) with duplicates removed.
    pub incompatibilities: Vec<Incompatibility>,
}

impl Report {
    /// Builds a report, putting the incompatibilities in their stable order.
    pub fn new(mode: Mode, checked_versions: Vec<usize>, mut incompatibilities: Vec<Incompatibility>) -> Self {
        incompatibilities
            .sort_by(|a, b| (a.version, &a.path, a.kind, &a.message).cmp(&(b.version, &b.path, b.kind, &b.message)));
        incompatibilities.dedup();
        Self {
            mode,
            checked_versions,
            incompatibilities,
        }
    }

    /// True when nothing breaks.
    pub fn is_compatible(&self) -> bool {
        self.incompatibilities.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incompatibility(version: usize, path: SchemaPath, kind: avro::Kind) -> Incompatibility {
        Incompatibility {
            kind: Kind::Avro(kind),
            path,
            message: "m".to_owned(),
            version,
        }
    }

    #[test]
    fn a_report_is_sorted_by_version_then_path_and_has_no_duplicates() {
        let late = incompatibility(2, SchemaPath::root().key("fields").index(0), avro::Kind::TypeMismatch);
        let early_b = incompatibility(1, SchemaPath::root().key("fields").index(10), avro::Kind::TypeMismatch);
        let early_a = incompatibility(1, SchemaPath::root().key("fields").index(2), avro::Kind::NameMismatch);
        let report = Report::new(
            Mode::FullTransitive,
            vec![2, 1],
            vec![late.clone(), early_b.clone(), early_a.clone(), late.clone()],
        );
        assert_eq!(report.incompatibilities, vec![early_a, early_b, late]);
        assert!(!report.is_compatible());
    }
}

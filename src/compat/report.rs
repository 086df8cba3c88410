//! What a check found: [`Incompatibility`] values gathered into a [`Report`],
//! sorted and deduplicated so the same inputs always give the same output.

use std::fmt;

use serde::Serialize;

use super::avro;
use super::json;
use super::mode::{Direction, Mode};
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
    /// The directions it breaks: BACKWARD (consumers using the new schema), FORWARD (consumers
    /// still using the earlier version), or both, listed once (FULL).
    pub directions: Vec<Direction>,
}

/// The outcome of a check that could decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The mode that was checked.
    pub mode: Mode,
    /// The 1-based positions of the earlier versions checked, newest first.
    pub checked_versions: Vec<usize>,
    /// The incompatibilities against the checked versions, sorted by
    /// (version, path, kind, message) with duplicates removed: every one, or
    /// the first [`Report::MAX_LISTED`] when there are more (`total` counts them all).
    pub incompatibilities: Vec<Incompatibility>,
    /// How many incompatibilities there are in all, listed or not.
    pub total: usize,
}

impl Report {
    /// Builds a report, putting the incompatibilities in their stable order,
    /// and listing once a change that breaks both directions (see [`merge_directions`]).
    pub fn new(mode: Mode, checked_versions: Vec<usize>, mut incompatibilities: Vec<Incompatibility>) -> Self {
        incompatibilities.sort_by(|a, b| {
            (a.version, &a.path, a.kind, cause(&a.message), &a.directions).cmp(&(
                b.version,
                &b.path,
                b.kind,
                cause(&b.message),
                &b.directions,
            ))
        });
        incompatibilities.dedup();
        let mut incompatibilities = merge_directions(incompatibilities);
        let total = incompatibilities.len();
        // What every consumer of a report (statuses, REST answers, the matrix, the pages) holds
        // and renders stays bounded however many fields a hostile pair of schemas changes.
        incompatibilities.truncate(Self::MAX_LISTED);
        incompatibilities.shrink_to_fit();
        Self {
            mode,
            checked_versions,
            incompatibilities,
            total,
        }
    }

    /// The most incompatibilities a report lists; `total` counts the rest.
    pub const MAX_LISTED: usize = 1_000;

    /// "3 problems", or "10,000 problems; the first 1,000 listed".
    pub fn count_phrase(&self) -> String {
        let noun = if self.total == 1 { "problem" } else { "problems" };
        if self.total > self.incompatibilities.len() {
            format!(
                "{} {noun}; the first {} listed",
                self.total,
                self.incompatibilities.len()
            )
        } else {
            format!("{} {noun}", self.total)
        }
    }

    /// True when nothing breaks.
    pub fn is_compatible(&self) -> bool {
        self.total == 0
    }
}

impl Incompatibility {
    /// This entry as the checks of each direction found it: one entry per
    /// direction, each message naming only its own consumers (the inverse
    /// of how [`Report::new`] lists a change that breaks both ways once).
    pub fn per_direction(&self) -> Vec<Incompatibility> {
        if self.directions.len() < 2 {
            return vec![self.clone()];
        }
        // "{cause}{backward clause}, and {forward clause}", as `merge_directions` wrote it.
        let second = consumers_clause_start(&self.message);
        let head = self.message[..second]
            .strip_suffix(", and ")
            .unwrap_or(&self.message[..second]);
        let first = consumers_clause_start(head);
        let cause = &head[..first];
        let clauses = [&head[first..], &self.message[second..]];
        self.directions
            .iter()
            .zip(clauses)
            .map(|(direction, clause)| Incompatibility {
                message: format!("{cause}{clause}"),
                directions: vec![*direction],
                ..self.clone()
            })
            .collect()
    }
}

/// Where the message's closing clause about consumers starts (every format
/// ends its messages with "consumers … cannot read …"); the whole message
/// when it has none.
fn consumers_clause_start(message: &str) -> usize {
    message.rfind("consumers ").unwrap_or(message.len())
}

/// What changed, without who breaks: the message up to its consumers clause.
fn cause(message: &str) -> &str {
    &message[..consumers_clause_start(message)]
}

/// One entry for a change found in both directions against the same
/// version, at the same path, of the same kind and cause: its message names
/// both kinds of consumer that break, and `directions` both directions.
/// `sorted` must be sorted so that such a pair is adjacent, BACKWARD first.
fn merge_directions(sorted: Vec<Incompatibility>) -> Vec<Incompatibility> {
    let mut merged: Vec<Incompatibility> = Vec::with_capacity(sorted.len());
    for next in sorted {
        if let Some(last) = merged.last_mut() {
            let same_change = last.version == next.version
                && last.path == next.path
                && last.kind == next.kind
                && cause(&last.message) == cause(&next.message)
                && last
                    .directions
                    .iter()
                    .all(|direction| !next.directions.contains(direction));
            if same_change {
                let clause = &next.message[consumers_clause_start(&next.message)..];
                last.message = format!("{}, and {clause}", last.message);
                last.directions.extend(next.directions);
                continue;
            }
        }
        merged.push(next);
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_lists_at_most_a_thousand_and_counts_them_all() {
        let many: Vec<Incompatibility> = (0..1_500)
            .map(|index| Incompatibility {
                kind: Kind::Avro(avro::Kind::TypeMismatch),
                path: SchemaPath::root().key("fields").index(index),
                message: format!("field {index} changed: consumers using the new schema cannot read it"),
                version: 1,
                directions: vec![Direction::Backward],
            })
            .collect();
        let report = Report::new(Mode::Backward, vec![1], many);
        assert_eq!(report.incompatibilities.len(), Report::MAX_LISTED);
        assert_eq!(report.total, 1_500);
        assert!(!report.is_compatible());
        assert_eq!(report.count_phrase(), "1500 problems; the first 1000 listed");
    }

    #[test]
    fn a_change_breaking_both_directions_is_listed_once_with_both() {
        let found = |direction, clause: &str| Incompatibility {
            kind: Kind::Avro(avro::Kind::TypeMismatch),
            path: SchemaPath::root().key("fields").index(0),
            message: format!("field `a` changed from int to string: {clause}"),
            version: 1,
            directions: vec![direction],
        };
        let report = Report::new(
            Mode::Full,
            vec![1],
            vec![
                found(
                    Direction::Forward,
                    "consumers still using version 1 cannot read records written with the new schema",
                ),
                found(
                    Direction::Backward,
                    "consumers using the new schema cannot read records written with version 1",
                ),
            ],
        );
        assert_eq!(report.incompatibilities.len(), 1, "{report:?}");
        let only = &report.incompatibilities[0];
        assert_eq!(only.directions, [Direction::Backward, Direction::Forward]);
        assert_eq!(
            only.message,
            "field `a` changed from int to string: consumers using the new schema cannot read records written \
             with version 1, and consumers still using version 1 cannot read records written with the new schema"
        );
        let split = only.per_direction();
        assert_eq!(split.len(), 2);
        assert_eq!(
            split[1].message,
            "field `a` changed from int to string: consumers still using version 1 cannot read records written \
             with the new schema"
        );
        assert_eq!(split[1].directions, [Direction::Forward]);
    }

    fn incompatibility(version: usize, path: SchemaPath, kind: avro::Kind) -> Incompatibility {
        Incompatibility {
            kind: Kind::Avro(kind),
            path,
            message: "m".to_owned(),
            version,
            directions: vec![Direction::Backward],
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

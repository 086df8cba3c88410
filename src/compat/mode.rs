//! The vocabulary of a check: which schema language ([`Format`]) and which
//! compatibility rule ([`Mode`], split into [`Direction`] and [`Scope`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A schema language, named as Confluent's `schemaType` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Format {
    /// Apache Avro (`.avsc` JSON).
    Avro,
    /// JSON Schema.
    Json,
    /// Protocol Buffers (`.proto` text).
    Protobuf,
}

impl Format {
    /// Confluent's name for the format.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Avro => "AVRO",
            Format::Json => "JSON",
            Format::Protobuf => "PROTOBUF",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = UnknownName;

    /// Accepts Confluent's names in any case, and `JSONSCHEMA` / `PROTO` as aliases.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_uppercase().as_str() {
            "AVRO" => Ok(Format::Avro),
            "JSON" | "JSONSCHEMA" => Ok(Format::Json),
            "PROTOBUF" | "PROTO" => Ok(Format::Protobuf),
            _ => Err(UnknownName {
                what: "format",
                given: text.to_owned(),
                expected: "AVRO, JSON, PROTOBUF",
            }),
        }
    }
}

/// A compatibility mode, with Confluent's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    /// The candidate reads data written with the latest version.
    Backward,
    /// The candidate reads data written with every version.
    BackwardTransitive,
    /// The latest version reads data written with the candidate.
    Forward,
    /// Every version reads data written with the candidate.
    ForwardTransitive,
    /// Backward and forward against the latest version.
    Full,
    /// Backward and forward against every version.
    FullTransitive,
    /// No check.
    None,
}

/// Which way data must flow between the candidate and an earlier version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Direction {
    /// The candidate reads what the earlier version wrote.
    Backward,
    /// The earlier version reads what the candidate writes.
    Forward,
}

/// Which earlier versions a mode checks against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The newest earlier version only.
    Latest,
    /// Every earlier version.
    All,
}

impl Mode {
    /// Every mode, in Confluent's documentation order.
    pub const ALL: [Mode; 7] = [
        Mode::Backward,
        Mode::BackwardTransitive,
        Mode::Forward,
        Mode::ForwardTransitive,
        Mode::Full,
        Mode::FullTransitive,
        Mode::None,
    ];

    /// Confluent's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Backward => "BACKWARD",
            Mode::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Mode::Forward => "FORWARD",
            Mode::ForwardTransitive => "FORWARD_TRANSITIVE",
            Mode::Full => "FULL",
            Mode::FullTransitive => "FULL_TRANSITIVE",
            Mode::None => "NONE",
        }
    }

    /// The directions this mode checks: none, one, or both.
    pub fn directions(self) -> &'static [Direction] {
        match self {
            Mode::Backward | Mode::BackwardTransitive => &[Direction::Backward],
            Mode::Forward | Mode::ForwardTransitive => &[Direction::Forward],
            Mode::Full | Mode::FullTransitive => &[Direction::Backward, Direction::Forward],
            Mode::None => &[],
        }
    }

    /// The 1-based positions, newest first, of the earlier versions this
    /// mode checks when there are `count` of them.
    pub fn versions_to_check(self, count: usize) -> Vec<usize> {
        if self.directions().is_empty() {
            return Vec::new();
        }
        match self.scope() {
            Scope::Latest => (count > 0).then_some(count).into_iter().collect(),
            Scope::All => (1..=count).rev().collect(),
        }
    }

    /// The earlier versions this mode checks against.
    pub fn scope(self) -> Scope {
        match self {
            Mode::BackwardTransitive | Mode::ForwardTransitive | Mode::FullTransitive => Scope::All,
            Mode::Backward | Mode::Forward | Mode::Full | Mode::None => Scope::Latest,
        }
    }

    /// The same directions against one given version: transitivity does not
    /// apply when the version to check against is named.
    pub fn against_one_version(self) -> Mode {
        match self {
            Mode::BackwardTransitive => Mode::Backward,
            Mode::ForwardTransitive => Mode::Forward,
            Mode::FullTransitive => Mode::Full,
            other => other,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = UnknownName;

    /// Accepts Confluent's names in any case, with `-` for `_`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let wanted = text.to_ascii_uppercase().replace('-', "_");
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == wanted)
            .ok_or_else(|| UnknownName {
                what: "compatibility mode",
                given: text.to_owned(),
                expected: "BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE",
            })
    }
}

/// A format or mode name that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{given}`: expected one of {expected}")]
pub struct UnknownName {
    what: &'static str,
    given: String,
    expected: &'static str,
}

impl UnknownName {
    /// A name given for `what` that is none of `expected`.
    pub(crate) fn new(what: &'static str, given: &str, expected: &'static str) -> Self {
        Self {
            what,
            given: given.to_owned(),
            expected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_parses_from_its_confluent_name() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
        }
        assert_eq!("full-transitive".parse::<Mode>(), Ok(Mode::FullTransitive));
    }

    #[test]
    fn an_unknown_mode_names_the_choices() {
        let error = "SIDEWAYS".parse::<Mode>().unwrap_err().to_string();
        assert!(error.contains("`SIDEWAYS`"), "{error}");
        assert!(error.contains("FULL_TRANSITIVE"), "{error}");
    }

    #[test]
    fn full_checks_both_directions_and_transitive_checks_all_versions() {
        assert_eq!(Mode::Full.directions().len(), 2);
        assert_eq!(Mode::None.directions().len(), 0);
        assert_eq!(Mode::FullTransitive.scope(), Scope::All);
        assert_eq!(Mode::Forward.scope(), Scope::Latest);
    }

    #[test]
    fn against_one_version_drops_only_transitivity() {
        for mode in Mode::ALL {
            let single = mode.against_one_version();
            assert_eq!(single.directions(), mode.directions(), "{mode}");
            assert_eq!(single.scope(), Scope::Latest, "{mode}");
        }
    }

    #[test]
    fn versions_to_check_are_newest_first() {
        assert_eq!(Mode::Backward.versions_to_check(3), vec![3]);
        assert_eq!(Mode::FullTransitive.versions_to_check(3), vec![3, 2, 1]);
        assert_eq!(Mode::None.versions_to_check(3), Vec::<usize>::new());
        assert_eq!(Mode::Forward.versions_to_check(0), Vec::<usize>::new());
    }
}

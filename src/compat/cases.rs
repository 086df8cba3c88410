//! The conformance case line format of `tests/conformance/*.jsonl`, and how
//! one case runs through the engine. `schemaops compat --cases` and the
//! conformance tests both read cases through here, so the two cannot drift.

use serde::{Deserialize, Serialize};

use super::{Checker, Format, Incompatibility, Mode, Reference, SchemaText, error_chain};

/// One case: earlier versions, a candidate, a mode, and optionally the reference's verdict.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    /// Stable id, unique across the corpus.
    pub id: String,
    /// The schema language.
    pub format: Format,
    /// The compatibility mode.
    pub mode: Mode,
    /// Earlier schema texts, oldest first.
    pub previous: Vec<String>,
    /// The new schema text.
    pub candidate: String,
    /// The reference implementation's verdict, when known.
    #[serde(default)]
    pub compatible: Option<bool>,
    /// JSON Schema: the reference's verdict under the LENIENT policy, when known.
    #[serde(default)]
    pub compatible_lenient: Option<bool>,
    /// The reference's incompatibility kinds, when it says.
    #[serde(default)]
    pub expected_kinds: Option<Vec<String>>,
    /// One location per expected kind.
    #[serde(default)]
    pub expected_locations: Option<Vec<String>>,
    /// The candidate's references.
    #[serde(default)]
    pub references: Vec<CaseReference>,
    /// The references of each earlier schema, one list per entry of `previous`.
    #[serde(default)]
    pub previous_references: Vec<Vec<CaseReference>>,
}

/// A schema reference inside a case.
#[derive(Debug, Clone, Deserialize)]
pub struct CaseReference {
    /// The name the referring schema uses.
    pub name: String,
    /// The referenced text; absent for well-known files every toolchain ships.
    #[serde(default)]
    pub schema: Option<String>,
}

/// What running a case gave, one JSON line of `schemaops compat --cases`.
#[derive(Debug, Clone, Serialize)]
pub struct CaseOutcome {
    /// The case's id.
    pub id: String,
    /// The verdict, or `null` when the engine could not decide.
    pub compatible: Option<bool>,
    /// Every incompatibility found.
    pub incompatibilities: Vec<Incompatibility>,
    /// Why the engine could not decide, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Case {
    /// The candidate and the earlier versions (oldest first), each with its
    /// references; well-known references without text are left to the engine.
    pub fn schema_texts(&self) -> (SchemaText, Vec<SchemaText>) {
        let candidate = schema_text(&self.candidate, &self.references);
        let previous = self
            .previous
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let references = self.previous_references.get(index).map_or(&[][..], Vec::as_slice);
                schema_text(text, references)
            })
            .collect();
        (candidate, previous)
    }

    /// Runs the case with `checker`.
    pub fn run(&self, checker: &Checker) -> CaseOutcome {
        let (candidate, previous) = self.schema_texts();
        match checker.check(self.format, self.mode, &candidate, &previous) {
            Ok(report) => CaseOutcome {
                id: self.id.clone(),
                compatible: Some(report.is_compatible()),
                incompatibilities: report.incompatibilities,
                error: None,
            },
            Err(error) => CaseOutcome {
                id: self.id.clone(),
                compatible: None,
                incompatibilities: Vec::new(),
                error: Some(error_chain(&error)),
            },
        }
    }
}

fn schema_text(text: &str, references: &[CaseReference]) -> SchemaText {
    SchemaText {
        text: text.to_owned(),
        references: references
            .iter()
            .filter_map(|reference| {
                reference.schema.as_ref().map(|schema| Reference {
                    name: reference.name.clone(),
                    text: schema.clone(),
                })
            })
            .collect(),
    }
}

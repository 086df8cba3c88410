//! `check`'s results as a table, a JSON document (`-o json`), or GitHub
//! Actions workflow commands (`-o github`). Pure.

use std::fmt::Write as _;

use serde::Serialize;

use super::{Checked, Drift, Outcome, SettingChange, Verdict, verdict};
use crate::crd::IncompatibilityStatus;
use crate::local::manifests::Origin;

/// How many objects ended each way: "2 unchanged, 1 would register, 1 would be rejected".
pub fn tally(checked: &[Checked]) -> String {
    let count = |name: &str| checked.iter().filter(|c| c.outcome.name() == name).count();
    let parts: Vec<String> = [
        ("unchanged", "unchanged"),
        ("revert", "would revert"),
        ("register", "would register"),
        ("configure", "would change settings"),
        ("rejected", "would be rejected"),
        ("undecided", "could not be checked"),
    ]
    .into_iter()
    .filter_map(|(name, words)| {
        let n = count(name);
        (n > 0).then(|| format!("{n} {words}"))
    })
    .collect();
    if parts.is_empty() {
        "nothing to check".to_owned()
    } else {
        parts.join(", ")
    }
}

/// Where an object came from, as `file:line`.
fn location(origin: &Origin) -> String {
    format!("{}:{}", origin.path.display(), origin.line)
}

/// One row per object, then the explanation of each rejection, then the tally.
pub fn render_table(checked: &[Checked]) -> String {
    let mut rows = vec![[
        "KIND".to_owned(),
        "NAMESPACE".to_owned(),
        "NAME".to_owned(),
        "SUBJECT".to_owned(),
        "SOURCE".to_owned(),
        "RESULT".to_owned(),
    ]];
    for object in checked {
        rows.push([
            object.kind.as_str().to_owned(),
            object.key.namespace.clone(),
            object.key.name.clone(),
            object.subject.clone(),
            location(&object.origin),
            match (&object.drift, &object.policy_warning) {
                (Some(drift), _) => format!("{}; drifted ({})", object.summary(), drift.reason),
                (None, Some(_)) => format!("{}; policy warning", object.summary()),
                (None, None) => object.summary(),
            },
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    for object in checked {
        let (reason, message) = match &object.outcome {
            Outcome::Rejected { reason, message, .. } => (reason, message),
            Outcome::Undecided { reason, message } => (reason, message),
            _ => continue,
        };
        let verb = if object.outcome.name() == "rejected" {
            "would be rejected"
        } else {
            "could not be checked"
        };
        let _ = writeln!(
            out,
            "\n{} {} {verb} ({reason}), {}:",
            object.kind.as_str(),
            object.key,
            location(&object.origin)
        );
        for line in message.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for object in checked {
        let Outcome::Revert { version, latest } = &object.outcome else {
            continue;
        };
        let _ = writeln!(
            out,
            "\n{} {} would revert, {}:\n  the spec equals version {version}, which this Schema registered before; \
             version {latest} stays the subject's latest, so producers that use the latest version \
             (use.latest.version) would keep writing version {latest}",
            object.kind.as_str(),
            object.key,
            location(&object.origin)
        );
    }
    for object in checked {
        let Some(drift) = &object.drift else { continue };
        let _ = writeln!(
            out,
            "\n{} {} has drifted ({}), {}:\n  {}",
            object.kind.as_str(),
            object.key,
            drift.reason,
            location(&object.origin),
            drift.message
        );
    }
    for object in checked {
        let Some(warning) = &object.policy_warning else {
            continue;
        };
        let _ = writeln!(
            out,
            "\n{} {} has a policy warning, {}:\n  {warning}",
            object.kind.as_str(),
            object.key,
            location(&object.origin)
        );
    }
    let _ = writeln!(out, "\n{}", tally(checked));
    out
}

/// The JSON document of `-o json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsonReport<'a> {
    /// `accepted`, `rejected` or `undecided`.
    pub verdict: &'static str,
    /// What the check ran against, in words.
    pub against: &'a str,
    /// One entry per object.
    pub objects: Vec<JsonObject<'a>>,
}

/// One object in the JSON document. Every key is always present.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsonObject<'a> {
    /// Schema or SubjectConfig.
    pub kind: &'static str,
    /// The namespace.
    pub namespace: &'a str,
    /// The name.
    pub name: &'a str,
    /// The manifest file.
    pub file: String,
    /// The document within the file, from 1.
    pub document: usize,
    /// The line the document starts at.
    pub line: usize,
    /// unchanged, register, configure, rejected or undecided.
    pub outcome: &'static str,
    /// The subject.
    pub subject: &'a str,
    /// The version holding the schema afterwards (the new one when registering).
    pub version: Option<u32>,
    /// The version the object's status named before.
    pub previous_version: Option<u32>,
    /// The versions the run would create.
    pub new_versions: &'a [u32],
    /// The setting changes of a SubjectConfig.
    pub changes: &'a [SettingChange],
    /// The Ready reason when rejected or undecided.
    pub reason: Option<&'a str>,
    /// The Ready message when rejected or undecided.
    pub message: Option<&'a str>,
    /// Every incompatibility listed in the status (at most 20).
    pub incompatibilities: &'a [IncompatibilityStatus],
    /// How many incompatibilities there are in all.
    pub incompatibilities_total: usize,
    /// The subject's drift from what schemaops registered, if any.
    pub drift: Option<&'a Drift>,
    /// What a Warn policy says of the object, if anything.
    pub policy_warning: Option<&'a str>,
}

/// The stable, machine-readable document of `-o json`.
pub fn render_json(checked: &[Checked], against: &str) -> String {
    const NONE: &[SettingChange] = &[];
    const NO_INCOMPATIBILITIES: &[IncompatibilityStatus] = &[];
    let report = JsonReport {
        verdict: match verdict(checked) {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::Undecided => "undecided",
        },
        against,
        objects: checked
            .iter()
            .map(|object| {
                let (changes, reason, message, incompatibilities, total) = match &object.outcome {
                    Outcome::Configure { changes } => (changes.as_slice(), None, None, NO_INCOMPATIBILITIES, 0),
                    Outcome::Rejected {
                        reason,
                        message,
                        incompatibilities,
                        total,
                    } => (
                        NONE,
                        Some(reason.as_str()),
                        Some(message.as_str()),
                        incompatibilities.as_slice(),
                        *total,
                    ),
                    Outcome::Undecided { reason, message } => (
                        NONE,
                        Some(reason.as_str()),
                        Some(message.as_str()),
                        NO_INCOMPATIBILITIES,
                        0,
                    ),
                    Outcome::Unchanged | Outcome::Revert { .. } | Outcome::Register { .. } => {
                        (NONE, None, None, NO_INCOMPATIBILITIES, 0)
                    }
                };
                JsonObject {
                    kind: object.kind.as_str(),
                    namespace: &object.key.namespace,
                    name: &object.key.name,
                    file: object.origin.path.display().to_string(),
                    document: object.origin.document,
                    line: object.origin.line,
                    outcome: object.outcome.name(),
                    subject: &object.subject,
                    version: object.version,
                    previous_version: object.previous_version,
                    new_versions: &object.new_versions,
                    changes,
                    reason,
                    message,
                    incompatibilities,
                    incompatibilities_total: total,
                    drift: object.drift.as_ref(),
                    policy_warning: object.policy_warning.as_deref(),
                }
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).expect("the report always serializes to JSON");
    text.push('\n');
    text
}

/// Escapes the message of a GitHub Actions workflow command: `%`, CR and LF.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`) of a workflow command: as
/// [`escape_data`], plus `:` and `,`, which end a property.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One workflow command: `::error file=…,line=…,title=…::message`.
fn workflow_command(command: &str, origin: &Origin, title: &str, message: &str) -> String {
    format!(
        "::{command} file={},line={},title={}::{}\n",
        escape_property(&origin.path.display().to_string()),
        origin.line,
        escape_property(title),
        escape_data(message)
    )
}

/// GitHub Actions workflow commands: `::error` for each object that would
/// be rejected (or could not be checked), `::warning` for each that drifted
/// or a Warn policy flags, `::notice` for each that would register or change
/// settings, each pointing at its manifest document; then the tally as a
/// plain line.
pub fn render_github(checked: &[Checked]) -> String {
    let mut out = String::new();
    for object in checked {
        let name = format!("{} {}", object.kind.as_str(), object.key);
        if let Some(drift) = &object.drift {
            out.push_str(&workflow_command(
                "warning",
                &object.origin,
                &format!("{name} has drifted ({})", drift.reason),
                &drift.message,
            ));
        }
        if let Some(warning) = &object.policy_warning {
            out.push_str(&workflow_command(
                "warning",
                &object.origin,
                &format!("{name} has a policy warning"),
                warning,
            ));
        }
        let line = match &object.outcome {
            Outcome::Unchanged => continue,
            Outcome::Revert { .. } => workflow_command(
                "warning",
                &object.origin,
                &format!("{name} would revert"),
                &format!("subject {}: {}", object.subject, object.summary()),
            ),
            Outcome::Register { .. } => workflow_command(
                "notice",
                &object.origin,
                &format!("{name} would register"),
                &format!("subject {}: {}", object.subject, object.summary()),
            ),
            Outcome::Configure { .. } => workflow_command(
                "notice",
                &object.origin,
                &format!("{name} would change settings"),
                &format!("subject {}: {}", object.subject, object.summary()),
            ),
            Outcome::Rejected { reason, message, .. } => workflow_command(
                "error",
                &object.origin,
                &format!("{name} would be rejected ({reason})"),
                message,
            ),
            Outcome::Undecided { reason, message } => workflow_command(
                "error",
                &object.origin,
                &format!("{name} could not be checked ({reason})"),
                message,
            ),
        };
        out.push_str(&line);
    }
    let _ = writeln!(out, "schemaops check: {}", tally(checked));
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::checked;
    use super::*;

    #[test]
    fn github_messages_escape_percent_and_line_breaks() {
        assert_eq!(escape_data("100% sure\r\nnext: a,b"), "100%25 sure%0D%0Anext: a,b");
    }

    #[test]
    fn github_properties_also_escape_colons_and_commas() {
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn a_rejection_becomes_one_error_annotation_at_its_document() {
        let rejected = checked(Outcome::Rejected {
            reason: "IncompatibleSchema".to_owned(),
            message: "incompatible under BACKWARD: 1 problem\n- READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3 (100%)"
                .to_owned(),
            incompatibilities: Vec::new(),
            total: 1,
        });
        let rendered = render_github(&[rejected, checked(Outcome::Unchanged)]);
        let lines: Vec<&str> = rendered.lines().collect();
        assert_eq!(
            lines,
            [
                "::error file=manifests/orders%2C v2.yaml,line=14,title=Schema default/orders would be rejected \
                 (IncompatibleSchema)::incompatible under BACKWARD: 1 problem%0A- \
                 READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3 (100%25)",
                "schemaops check: 1 unchanged, 1 would be rejected",
            ]
        );
    }

    #[test]
    fn a_policy_warning_becomes_a_warning_annotation_beside_the_notice() {
        let mut registered = checked(Outcome::Register { version: 2 });
        registered.policy_warning =
            Some("SchemaPolicy prod rule deletionPolicies at spec.deletionPolicy: …".to_owned());
        let rendered = render_github(&[registered]);
        assert!(
            rendered.starts_with(
                "::warning file=manifests/orders%2C v2.yaml,line=14,title=Schema default/orders has a policy \
                 warning::SchemaPolicy prod rule deletionPolicies at spec.deletionPolicy: …\n::notice "
            ),
            "{rendered}"
        );
    }

    #[test]
    fn a_registration_becomes_a_notice() {
        let rendered = render_github(&[checked(Outcome::Register { version: 2 })]);
        assert!(
            rendered.starts_with(
                "::notice file=manifests/orders%2C v2.yaml,line=14,title=Schema default/orders would register::subject orders-value: would register as version 2\n"
            ),
            "{rendered}"
        );
    }
}

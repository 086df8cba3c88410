//! Classifying one object's result from its status after the scratch run
//! and its subject before and after it. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::{Drift, Outcome, SettingChange, SubjectState};
use crate::crd::conditions::{ConditionType, Reason, find_condition};
use crate::crd::{SchemaStatus, SubjectConfigStatus};

/// The drift a Schema's status reports, if any.
pub(super) fn drift_of(status: Option<&SchemaStatus>) -> Option<Drift> {
    let drifted = status?.drift()?;
    Some(Drift {
        reason: drifted.reason.clone(),
        message: drifted.message.clone(),
    })
}

/// The message of a `PolicyWarning=True` condition, if any.
pub(super) fn policy_warning_of(conditions: &[Condition]) -> Option<String> {
    find_condition(conditions, ConditionType::PolicyWarning)
        .filter(|condition| condition.status == "True")
        .map(|condition| condition.message.clone())
}

/// Versions in `after` that are not in `before`.
pub(super) fn new_versions(before: &SubjectState, after: &SubjectState) -> Vec<u32> {
    after
        .versions
        .iter()
        .copied()
        .filter(|version| !before.versions.contains(version))
        .collect()
}

/// A status message in the conditional a prediction needs: `check` never
/// writes, so "nothing was written" becomes "nothing would be written".
fn conditional(message: &str) -> String {
    message.replace(
        "nothing was written to the registry",
        "nothing would be written to the registry",
    )
}

/// Ready=False is a rejection; Ready missing or Unknown is undecided.
fn not_ready(ready: Option<&Condition>) -> Option<Outcome> {
    match ready {
        Some(condition) if condition.status == "True" => None,
        Some(condition) if condition.status == "False" => Some(Outcome::Rejected {
            reason: condition.reason.clone(),
            message: conditional(&condition.message),
            incompatibilities: Vec::new(),
            total: 0,
        }),
        Some(condition) => Some(Outcome::Undecided {
            reason: condition.reason.clone(),
            message: condition.message.clone(),
        }),
        None => Some(Outcome::Undecided {
            reason: "NotReconciled".to_owned(),
            message: "the scratch run left the object without a Ready condition".to_owned(),
        }),
    }
}

/// What applying a Schema would do, from its status after the scratch run
/// and its subject's versions before and after it.
///
/// Ready=False: rejected, with the incompatibilities of the status. Ready
/// with a version the subject did not hold before: would register. Ready
/// with a version it held: unchanged.
pub fn classify_schema(
    after: Option<&SchemaStatus>,
    before_subject: &SubjectState,
    after_subject: &SubjectState,
) -> Outcome {
    let ready = after.and_then(|status| find_condition(&status.conditions, ConditionType::Ready));
    match not_ready(ready) {
        Some(Outcome::Rejected { reason, message, .. }) => {
            let compatibility = after.and_then(|status| status.compatibility.as_ref());
            Outcome::Rejected {
                reason,
                message,
                incompatibilities: compatibility.map(|c| c.incompatibilities.clone()).unwrap_or_default(),
                total: compatibility.map_or(0, |c| usize::try_from(c.total).unwrap_or(0)),
            }
        }
        Some(other) => other,
        None => match after
            .and_then(|status| status.version)
            .and_then(|v| u32::try_from(v).ok())
        {
            Some(version) if ready.is_some_and(|ready| ready.reason == Reason::Reverted.as_str()) => Outcome::Revert {
                version,
                latest: after_subject.versions.last().copied().unwrap_or(version),
            },
            Some(version) if new_versions(before_subject, after_subject).contains(&version) => {
                Outcome::Register { version }
            }
            Some(_) => Outcome::Unchanged,
            None => Outcome::Undecided {
                reason: "NoVersion".to_owned(),
                message: "the scratch run left the Schema Ready without a version".to_owned(),
            },
        },
    }
}

/// What applying a SubjectConfig would do, from its status after the
/// scratch run and its subject's own settings before and after it.
pub fn classify_subject_config(
    after: Option<&SubjectConfigStatus>,
    before_subject: &SubjectState,
    after_subject: &SubjectState,
) -> Outcome {
    let ready = after.and_then(|status| find_condition(&status.conditions, ConditionType::Ready));
    if let Some(outcome) = not_ready(ready) {
        return outcome;
    }
    let mut changes = Vec::new();
    if before_subject.compatibility != after_subject.compatibility {
        changes.push(SettingChange {
            setting: "compatibility",
            from: before_subject.compatibility.map(|level| level.to_string()),
            to: after_subject.compatibility.map(|level| level.to_string()),
        });
    }
    if before_subject.mode != after_subject.mode {
        changes.push(SettingChange {
            setting: "mode",
            from: before_subject.mode.map(|mode| mode.as_str().to_owned()),
            to: after_subject.mode.map(|mode| mode.as_str().to_owned()),
        });
    }
    if changes.is_empty() {
        Outcome::Unchanged
    } else {
        Outcome::Configure { changes }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::compat::Mode;
    use crate::crd::{CompatibilityStatus, IncompatibilityStatus};
    use crate::registry::RegistryMode;

    fn condition(status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: "Ready".to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            observed_generation: Some(1),
        }
    }

    fn schema_status(ready: Condition, version: Option<i32>) -> SchemaStatus {
        SchemaStatus {
            version,
            conditions: vec![ready],
            ..SchemaStatus::default()
        }
    }

    fn versions(numbers: &[u32]) -> SubjectState {
        SubjectState {
            versions: numbers.to_vec(),
            ..SubjectState::default()
        }
    }

    #[test]
    fn a_ready_schema_holding_a_new_version_would_register_as_that_version() {
        let status = schema_status(condition("True", "Registered", ""), Some(3));
        assert_eq!(
            classify_schema(Some(&status), &versions(&[1, 2]), &versions(&[1, 2, 3])),
            Outcome::Register { version: 3 }
        );
    }

    #[test]
    fn a_ready_schema_on_a_version_the_subject_already_held_is_unchanged() {
        // Also when the held version is not the latest (a rollback to an earlier text).
        for version in [1, 2] {
            let status = schema_status(condition("True", "Registered", ""), Some(version));
            assert_eq!(
                classify_schema(Some(&status), &versions(&[1, 2]), &versions(&[1, 2])),
                Outcome::Unchanged
            );
        }
    }

    #[test]
    fn a_schema_not_ready_is_rejected_with_every_listed_incompatibility_even_after_earlier_edits_registered() {
        let mut status = schema_status(
            condition("False", "IncompatibleSchema", "incompatible: 2 problems"),
            Some(2),
        );
        let incompatibility = |path: &str| IncompatibilityStatus {
            kind: "READER_FIELD_MISSING_DEFAULT_VALUE".to_owned(),
            path: path.to_owned(),
            version: 2,
            message: "no default".to_owned(),
        };
        status.compatibility = Some(CompatibilityStatus {
            mode: "BACKWARD".to_owned(),
            checked_versions: vec![2],
            incompatibilities: vec![incompatibility("/fields/3"), incompatibility("/fields/4")],
            total: 2,
        });
        let outcome = classify_schema(Some(&status), &versions(&[]), &versions(&[1, 2]));
        let Outcome::Rejected {
            reason,
            incompatibilities,
            total,
            ..
        } = outcome
        else {
            panic!("rejected: {outcome:?}");
        };
        assert_eq!(
            (reason.as_str(), incompatibilities.len(), total),
            ("IncompatibleSchema", 2, 2)
        );
    }

    #[test]
    fn a_schema_without_a_ready_verdict_is_undecided_not_rejected() {
        let status = schema_status(condition("Unknown", "RegistryUnavailable", "refused"), None);
        assert!(matches!(
            classify_schema(Some(&status), &versions(&[]), &versions(&[])),
            Outcome::Undecided { .. }
        ));
        assert!(matches!(
            classify_schema(None, &versions(&[]), &versions(&[])),
            Outcome::Undecided { .. }
        ));
    }

    #[test]
    fn a_subject_config_reports_the_settings_it_would_change() {
        let status = SubjectConfigStatus {
            conditions: vec![condition("True", "Configured", "")],
            ..SubjectConfigStatus::default()
        };
        let before = SubjectState::default();
        let after = SubjectState {
            compatibility: Some(Mode::Forward),
            mode: Some(RegistryMode::ReadOnly),
            ..SubjectState::default()
        };
        let Outcome::Configure { changes } = classify_subject_config(Some(&status), &before, &after) else {
            panic!("configure");
        };
        let described: Vec<String> = changes.iter().map(SettingChange::describe).collect();
        assert_eq!(
            described,
            ["would set compatibility FORWARD", "would set mode READONLY"]
        );
        assert_eq!(
            classify_subject_config(Some(&status), &after, &after),
            Outcome::Unchanged
        );
        let refused = SubjectConfigStatus {
            conditions: vec![condition("False", "SubjectConflict", "managed by default/other")],
            ..SubjectConfigStatus::default()
        };
        assert_eq!(
            classify_subject_config(Some(&refused), &before, &before).name(),
            "rejected"
        );
    }
}

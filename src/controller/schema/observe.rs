//! What an observed Schema reports (`managementPolicy: Observe`): whether the
//! registry holds its schema and at which version, whether Manage would find
//! it compatible, and what Manage would do, from the plan Manage would carry
//! out. Pure.

use super::decide::Plan;
use super::status::summary;
use crate::crd::Observation;
use crate::registry::Version;

/// The observation of Manage's plan `would`, the subject's latest live
/// version being `latest`.
pub fn describe(would: &Plan, latest: Option<Version>) -> Observation {
    let latest_version = latest.map(|version| version.get() as i32);
    let mut observation = Observation {
        latest_version,
        ..Observation::default()
    };
    observation.manage_would = match would {
        Plan::AlreadyRegistered {
            subject, version, id, ..
        } => {
            observation.registered_version = Some(version.get() as i32);
            observation.matches_latest = latest == Some(*version);
            let latest = match latest {
                Some(latest) if latest != *version => format!("; the subject's latest version is {latest}"),
                _ => String::new(),
            };
            format!("adopt version {version} of subject `{subject}` (ID {id}) and write nothing{latest}")
        }
        Plan::Register {
            subject,
            level,
            level_write,
            report,
            ..
        } => {
            observation.would_be_compatible = Some(true);
            let level_first = match level_write {
                Some(_) => format!("set the subject's level to {level}, then "),
                None => String::new(),
            };
            let checked = if report.checked_versions.is_empty() {
                "as its first version".to_owned()
            } else {
                format!("as a new version (compatible under {level})")
            };
            format!("{level_first}register this schema under subject `{subject}` {checked}")
        }
        Plan::Reject { subject, report } => {
            observation.would_be_compatible = Some(false);
            format!("refuse it: {}", summary(subject.as_str(), report))
        }
        Plan::ReadOnly { subject } => format!("wait: subject `{subject}` is READONLY"),
        Plan::Vanished { subject, version } => format!(
            "report that version {version} of subject `{subject}`, which held this schema, was deleted outside schemaops"
        ),
        Plan::PolicyViolation(verdict) => format!("refuse it: {}", verdict.denial_message().unwrap_or_default()),
        Plan::Conflict { .. } | Plan::Invalid(_) | Plan::Observe { .. } => String::new(),
    };
    observation
}

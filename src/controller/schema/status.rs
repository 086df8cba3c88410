//! The status step, pure: a plan and its outcome become the Schema's status.
//! The clock is an argument; `lastTransitionTime` moves only on a flip.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::compat::Report;
use crate::controller::MAX_LISTED_INCOMPATIBILITIES;
use crate::crd::conditions::{
    ConditionType, MAX_MESSAGE_BYTES, Reason, find_condition, set_condition, truncate_message,
};
use crate::crd::{CompatibilityStatus, IncompatibilityStatus, SchemaStatus};

use super::act::Outcome;
use super::decide::{Held, Plan, SchemaInputs};
use crate::registry::{SchemaId, Version};

/// The longest message kept for one listed incompatibility.
const MAX_FRAGMENT_BYTES: usize = 1024;

/// The condition types this controller always sets on a Schema; it also
/// owns Drifted and DeletionBlocked, present only while they hold.
const KEPT: [ConditionType; 3] = [ConditionType::Ready, ConditionType::Stalled, ConditionType::Reconciling];

/// The versions `previous` says its Schema registered or adopted; for a
/// status written before `ownVersions` existed, the version it held (unless
/// it only observed it).
fn own_versions_before(previous: &SchemaStatus) -> Vec<i32> {
    if !previous.own_versions.is_empty() {
        return previous.own_versions.clone();
    }
    let observed = find_condition(&previous.conditions, ConditionType::Ready)
        .is_some_and(|ready| ready.reason == Reason::Observed.as_str());
    previous.version.filter(|_| !observed).into_iter().collect()
}

/// The status after acting on `plan`.
pub fn render(inputs: &SchemaInputs, plan: &Plan, outcome: &Outcome, now: &Time) -> SchemaStatus {
    let previous = inputs.status.clone().unwrap_or_default();
    let generation = inputs.generation;
    let mut status = SchemaStatus {
        observed_generation: generation,
        subject: previous.subject.clone(),
        version: previous.version,
        id: previous.id,
        fingerprint: previous.fingerprint.clone(),
        own_versions: own_versions_before(&previous),
        guid: previous.guid.clone(),
        metadata: previous.metadata.clone(),
        conditions: owned_conditions(&previous.conditions),
        compatibility: None,
        observation: None,
    };
    let mut drift = None;
    let verdict = match (plan, outcome) {
        (Plan::Conflict { owner }, _) => {
            let owner = owner
                .as_ref()
                .map_or("another resource".to_owned(), |key| format!("Schema {key}"));
            Verdict::Stalled(
                Reason::SubjectConflict,
                format!("the subject is managed by {owner}; this Schema waits until that one is deleted"),
            )
        }
        (Plan::Invalid(unusable), _) => Verdict::Stalled(unusable.reason, unusable.message.clone()),
        (Plan::Vanished { subject, version }, _) => {
            drift = Some(format!(
                "version {version} of subject `{subject}`, which held this schema, was deleted outside schemaops"
            ));
            Verdict::Stalled(
                Reason::VersionDeletedOutsideSchemaops,
                format!(
                    "version {version} of subject `{subject}` was deleted outside schemaops; schemaops does not \
                     recreate it by itself: change the Schema to register it again"
                ),
            )
        }
        (Plan::ReadOnly { subject }, _) => Verdict::Stalled(
            Reason::SubjectReadOnly,
            format!("subject `{subject}` is READONLY: no new versions can be registered"),
        ),
        (
            Plan::AlreadyRegistered {
                subject,
                version,
                id,
                fingerprint,
                drifted_to,
                reverted_from,
                held,
            },
            _,
        ) => {
            // Keep the report of the check that registered this version; a
            // later rejection's report does not describe it.
            status.compatibility = previous
                .compatibility
                .clone()
                .filter(|report| report.total == 0 && previous.version == Some(version.get() as i32));
            status.version = Some(version.get() as i32);
            status.id = Some(id.get() as i32);
            status.fingerprint = Some(fingerprint.clone());
            show_held(&mut status, held);
            status.remember_own(version.get() as i32);
            drift = drifted_to.map(|newest| {
                format!(
                    "subject `{subject}` has version {newest}, registered outside schemaops; this Schema holds \
                     version {version}. schemaops leaves it as it is"
                )
            });
            // A version this Schema did not register (it held none, or adopted this one before).
            let previous_reason = find_condition(&previous.conditions, ConditionType::Ready)
                .map(|ready| ready.reason.as_str())
                .unwrap_or_default();
            let adopted = previous.version.is_none()
                || previous_reason == Reason::Observed.as_str()
                || (previous_reason == Reason::Adopted.as_str() && previous.version == Some(version.get() as i32));
            if held.contract_dropped {
                Verdict::Stalled(
                    Reason::ContractsUnsupported,
                    contract_dropped(subject.as_str(), *version, *id),
                )
            } else if let Some(later) = reverted_from {
                Verdict::Ready(
                    Reason::Reverted,
                    format!(
                        "the spec equals version {version} of subject `{subject}` (ID {id}), which this Schema \
                         registered before: a revert. Version {later}, also this Schema's, stays the subject's \
                         latest: reverting in git removes no version, so producers that use the latest version \
                         (use.latest.version) keep writing version {later}; deleting it, or registering a new \
                         version, changes that"
                    ),
                )
            } else if adopted {
                Verdict::Ready(
                    Reason::Adopted,
                    format!(
                        "version {version} of subject `{subject}` holds this schema (ID {id}); it was registered \
                         before this Schema managed the subject, and is adopted"
                    ),
                )
            } else {
                Verdict::Ready(
                    Reason::Registered,
                    format!("version {version} of subject `{subject}` holds this schema (ID {id})"),
                )
            }
        }
        (
            Plan::Register {
                subject,
                fingerprint,
                report,
                ..
            },
            Outcome::Registered(registered, held),
        ) => {
            status.version = Some(registered.version.get() as i32);
            status.id = Some(registered.id.get() as i32);
            status.fingerprint = Some(fingerprint.clone());
            status.remember_own(registered.version.get() as i32);
            status.compatibility = Some(compatibility(report));
            show_held(&mut status, held);
            if held.contract_dropped {
                Verdict::Stalled(
                    Reason::ContractsUnsupported,
                    contract_dropped(subject.as_str(), registered.version, registered.id),
                )
            } else {
                // The same words as `AlreadyRegistered`, which the next reconcile
                // renders: a different message would be one more status write.
                Verdict::Ready(
                    Reason::Registered,
                    format!(
                        "version {} of subject `{subject}` holds this schema (ID {})",
                        registered.version, registered.id
                    ),
                )
            }
        }
        (Plan::Register { report, .. }, Outcome::Refused { reason, message }) => {
            status.compatibility = Some(compatibility(report));
            Verdict::Stalled(*reason, message.clone())
        }
        (Plan::Register { subject, .. }, Outcome::Nothing) => Verdict::Stalled(
            Reason::RegistryRejected,
            format!("the registry did not store the schema under `{subject}`"),
        ),
        (Plan::Reject { subject, report }, _) => {
            status.compatibility = Some(compatibility(report));
            Verdict::Stalled(Reason::IncompatibleSchema, summary(subject.as_str(), report))
        }
        (Plan::PolicyViolation(verdict), _) => {
            // What was registered stays, and so does the report of the check that registered it.
            status.compatibility = previous.compatibility.clone().filter(|report| report.total == 0);
            let reason = if verdict.subject_not_allowed() {
                Reason::SubjectNotAllowed
            } else {
                Reason::PolicyViolation
            };
            let message = verdict.denial_message().unwrap_or_default();
            Verdict::Stalled(reason, format!("nothing was written to the registry: {message}"))
        }
        (Plan::Observe { would, latest }, _) => {
            let observation = super::observe::describe(would, *latest);
            match would.as_ref() {
                Plan::AlreadyRegistered {
                    version,
                    id,
                    fingerprint,
                    held,
                    ..
                } => {
                    status.version = Some(version.get() as i32);
                    status.id = Some(id.get() as i32);
                    status.fingerprint = Some(fingerprint.clone());
                    show_held(&mut status, held);
                }
                other => {
                    // The spec's schema is not registered: the status shows no version of it.
                    status.version = None;
                    status.id = None;
                    status.fingerprint = None;
                    status.guid = None;
                    status.metadata = None;
                    if let Plan::Register { report, .. } | Plan::Reject { report, .. } = other {
                        status.compatibility = Some(compatibility(report));
                    }
                }
            }
            let message = format!("observed, nothing written; Manage would {}", observation.manage_would);
            status.observation = Some(observation);
            Verdict::Ready(Reason::Observed, message)
        }
    };
    if let Plan::PolicyViolation(_) = plan {
        // A refused claim does not take the subject: only one it held before stays.
    } else if let Plan::Conflict { .. } = plan {
        // A resource that does not manage the subject shows nothing of it.
        status.subject = None;
        status.version = None;
        status.id = None;
        status.fingerprint = None;
        status.guid = None;
        status.metadata = None;
    } else {
        status.subject = Some(inputs.subject.clone());
    }
    let mut conditions = Conditions {
        list: &mut status.conditions,
        generation,
        now,
    };
    if let Some(message) = drift {
        let reason = match plan {
            Plan::Vanished { .. } => Reason::VersionDeletedOutsideSchemaops,
            _ => Reason::RegisteredOutsideSchemaops,
        };
        conditions.set(ConditionType::Drifted, true, reason, &message);
    }
    verdict.apply(&mut conditions);
    status
}

/// Sets `PolicyWarning=True` with every warning of `verdict`; without any,
/// the condition is absent (the render drops it, as it does Drifted).
pub fn note_policy_warnings(status: &mut SchemaStatus, verdict: &crate::policy::Verdict, now: &Time) {
    if let Some(message) = verdict.warning_message() {
        let generation = status.observed_generation;
        let mut conditions = Conditions {
            list: &mut status.conditions,
            generation,
            now,
        };
        let message = truncate_message(&message, MAX_MESSAGE_BYTES);
        conditions.set(ConditionType::PolicyWarning, true, Reason::PolicyViolation, &message);
    }
}

/// The status while the registry cannot be reached: what was in force stays,
/// `Reconciling=True` says a retry is pending.
pub fn render_unavailable(inputs: &SchemaInputs, message: &str, now: &Time) -> SchemaStatus {
    let mut status = inputs.status.clone().unwrap_or_default();
    status.conditions = owned_conditions(&status.conditions);
    let mut conditions = Conditions {
        list: &mut status.conditions,
        generation: inputs.generation,
        now,
    };
    let message = truncate_message(
        &format!("the registry cannot be reached; retrying: {message}"),
        MAX_MESSAGE_BYTES,
    );
    if find_condition(conditions.list, ConditionType::Ready).is_none() {
        conditions.set(ConditionType::Ready, false, Reason::RegistryUnavailable, &message);
        conditions.set(ConditionType::Stalled, false, Reason::RegistryUnavailable, "");
    }
    conditions.set(ConditionType::Reconciling, true, Reason::RegistryUnavailable, &message);
    status
}

/// Shows the registered version's GUID and merged metadata.
fn show_held(status: &mut SchemaStatus, held: &Held) {
    status.guid = held.guid.clone();
    status.metadata = held.metadata.clone();
}

/// Why a registered Schema is not Ready on a registry that drops contracts.
fn contract_dropped(subject: &str, version: Version, id: SchemaId) -> String {
    format!(
        "version {version} of subject `{subject}` holds this schema (ID {id}), but without its metadata and rule \
         set: this registry does not keep data contracts (Karapace drops them), so serializers reading them from \
         the registry will not find them"
    )
}

/// Where the plan leaves the resource.
enum Verdict {
    Ready(Reason, String),
    Stalled(Reason, String),
}

impl Verdict {
    fn apply(self, conditions: &mut Conditions<'_>) {
        match self {
            Verdict::Ready(reason, message) => {
                let message = truncate_message(&message, MAX_MESSAGE_BYTES);
                conditions.set(ConditionType::Ready, true, reason, &message);
                conditions.set(ConditionType::Stalled, false, reason, "");
            }
            Verdict::Stalled(reason, message) => {
                let message = truncate_message(&message, MAX_MESSAGE_BYTES);
                conditions.set(ConditionType::Ready, false, reason, &message);
                conditions.set(ConditionType::Stalled, true, reason, &message);
            }
        }
        conditions.set(ConditionType::Reconciling, false, Reason::Progressing, "");
    }
}

/// The condition list being built, with the generation and time to stamp.
struct Conditions<'a> {
    list: &'a mut Vec<Condition>,
    generation: Option<i64>,
    now: &'a Time,
}

impl Conditions<'_> {
    fn set(&mut self, type_: ConditionType, status: bool, reason: Reason, message: &str) {
        set_condition(
            self.list,
            type_,
            status,
            reason.as_str(),
            message,
            self.generation,
            self.now,
        );
    }
}

/// The previous conditions this controller owns, minus those set only while
/// they hold (Drifted, DeletionBlocked, PolicyWarning), which the render sets
/// again if so.
fn owned_conditions(previous: &[Condition]) -> Vec<Condition> {
    previous
        .iter()
        .filter(|condition| KEPT.iter().any(|owned| owned.as_str() == condition.type_))
        .cloned()
        .collect()
}

/// The status form of a report: capped, with fragments cut to size.
pub fn compatibility(report: &Report) -> CompatibilityStatus {
    CompatibilityStatus {
        mode: report.mode.as_str().to_owned(),
        checked_versions: report.checked_versions.iter().map(|&version| version as i32).collect(),
        incompatibilities: report
            .incompatibilities
            .iter()
            .take(MAX_LISTED_INCOMPATIBILITIES)
            .map(|found| IncompatibilityStatus {
                kind: found.kind.to_string(),
                path: found.path.to_string(),
                version: found.version as i32,
                message: truncate_message(&found.message, MAX_FRAGMENT_BYTES),
            })
            .collect(),
        total: i32::try_from(report.total).unwrap_or(i32::MAX),
    }
}

/// One message naming every incompatibility, cut to fit a condition.
pub fn summary(subject: &str, report: &Report) -> String {
    let versions: Vec<String> = report.checked_versions.iter().map(ToString::to_string).collect();
    let mut text = format!(
        "incompatible with subject `{subject}` under {} (checked version{} {}): {}",
        report.mode,
        if versions.len() == 1 { "" } else { "s" },
        versions.join(", "),
        report.count_phrase(),
    );
    for found in &report.incompatibilities {
        text.push_str(&format!(
            "\n- version {}, {} at {}: {}",
            found.version, found.kind, found.path, found.message
        ));
    }
    truncate_message(&text, MAX_MESSAGE_BYTES)
}

/// An event worth recording when the status changes this way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// `Registered`, `Rejected` or `Drifted`.
    pub reason: &'static str,
    /// True for a Warning event.
    pub warning: bool,
    /// The event's note, at most 1 KiB.
    pub note: String,
}

/// The events for going from `previous` to `next`: the Ready or Stalled
/// [`transition`], a Warning `Drifted` when the subject newly drifted from
/// what schemaops registered (or drifted another way), and a Warning
/// `PolicyWarning` when a policy newly warns (or warns of something else).
pub fn transitions(previous: Option<&SchemaStatus>, next: &SchemaStatus) -> Vec<Transition> {
    let mut events: Vec<Transition> = transition(previous, next).into_iter().collect();
    let warning = |status: &SchemaStatus| {
        find_condition(&status.conditions, ConditionType::PolicyWarning)
            .filter(|condition| condition.status == "True")
            .map(|condition| condition.message.clone())
    };
    if let Some(now) = warning(next)
        && previous.and_then(warning).as_ref() != Some(&now)
    {
        events.push(Transition {
            reason: "PolicyWarning",
            warning: true,
            note: truncate_message(&now, MAX_FRAGMENT_BYTES),
        });
    }
    if let Some(now) = next.drift() {
        let before = previous.and_then(SchemaStatus::drift);
        if !before.is_some_and(|c| c.reason == now.reason && c.message == now.message) {
            events.push(Transition {
                reason: "Drifted",
                warning: true,
                note: truncate_message(&format!("{}: {}", now.reason, now.message), MAX_FRAGMENT_BYTES),
            });
        }
    }
    events
}

/// The event for going from `previous` to `next`, if it is a transition:
/// newly Ready (or Ready on another version), or newly stalled (or stalled
/// for a new reason or message).
pub fn transition(previous: Option<&SchemaStatus>, next: &SchemaStatus) -> Option<Transition> {
    let ready = |status: &SchemaStatus| find_condition(&status.conditions, ConditionType::Ready).cloned();
    let stalled = |status: &SchemaStatus| {
        find_condition(&status.conditions, ConditionType::Stalled)
            .filter(|condition| condition.status == "True")
            .cloned()
    };
    let before_ready = previous.and_then(ready);
    let now_ready = ready(next)?;
    if now_ready.status == "True" {
        let was_ready = before_ready.as_ref().is_some_and(|c| c.status == "True");
        let same_version = previous.is_some_and(|p| p.version == next.version);
        let reason = match now_ready.reason.as_str() {
            "Observed" => "Observed",
            "Adopted" => "Adopted",
            _ => "Registered",
        };
        let same_reason = before_ready.as_ref().is_some_and(|c| c.reason == now_ready.reason);
        return (!was_ready || !same_version || !same_reason).then(|| Transition {
            reason,
            warning: false,
            note: truncate_message(&now_ready.message, MAX_FRAGMENT_BYTES),
        });
    }
    let now_stalled = stalled(next)?;
    let before = previous.and_then(stalled);
    let same = before.is_some_and(|c| c.reason == now_stalled.reason && c.message == now_stalled.message);
    (!same).then(|| Transition {
        reason: "Rejected",
        warning: true,
        note: truncate_message(
            &format!("{}: {}", now_stalled.reason, now_stalled.message),
            MAX_FRAGMENT_BYTES,
        ),
    })
}

/// True when `a` and `b` differ in more than condition times.
pub fn changed(a: Option<&SchemaStatus>, b: &SchemaStatus) -> bool {
    let Some(a) = a else { return true };
    let strip = |status: &SchemaStatus| {
        let mut status = status.clone();
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(Default::default());
        }
        status.conditions.sort_by(|x, y| x.type_.cmp(&y.type_));
        status
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::compat::{Checker, Limits, Mode};
    use crate::controller::schema::decide::decide;
    use crate::controller::schema::decide::tests::{RSVP_V1, RSVP_WITH_OPTIONAL, RSVP_WITHOUT_EVENT, inputs, registry};
    use crate::registry::{Registered, SchemaId, Version};

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    fn condition<'a>(status: &'a SchemaStatus, type_: &str) -> &'a Condition {
        status.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn a_rejection_is_ready_false_stalled_true_with_every_incompatibility_listed() {
        let inputs = inputs(RSVP_WITHOUT_EVENT, registry(&[RSVP_V1], Mode::Forward, None), None);
        let plan = decide(&inputs, &Checker::new(Limits::default()));
        let status = render(&inputs, &plan, &Outcome::Nothing, &at(100));
        assert_eq!(condition(&status, "Ready").status, "False");
        assert_eq!(condition(&status, "Ready").reason, "IncompatibleSchema");
        assert_eq!(condition(&status, "Stalled").status, "True");
        assert_eq!(condition(&status, "Reconciling").status, "False");
        assert!(condition(&status, "Ready").message.contains("event_id"));
        let compatibility = status.compatibility.clone().unwrap();
        assert_eq!(compatibility.mode, "FORWARD");
        assert_eq!(compatibility.total, 1);
        assert_eq!(compatibility.incompatibilities[0].version, 1);
        assert_eq!(status.observed_generation, Some(2));
        assert!(condition(&status, "Ready").observed_generation == Some(2));
        assert_eq!(status.subject.as_deref(), Some("rsvp-value"));
    }

    #[test]
    fn a_registration_is_ready_with_version_and_id_and_clears_the_old_report() {
        let mut inputs = inputs(RSVP_WITH_OPTIONAL, registry(&[RSVP_V1], Mode::Backward, None), None);
        let rejected = SchemaStatus {
            compatibility: Some(CompatibilityStatus {
                mode: "BACKWARD".to_owned(),
                checked_versions: vec![1],
                incompatibilities: Vec::new(),
                total: 3,
            }),
            ..Default::default()
        };
        inputs.status = Some(rejected);
        let plan = decide(&inputs, &Checker::new(Limits::default()));
        let registered = Registered {
            id: SchemaId::new(4).unwrap(),
            version: Version::new(2).unwrap(),
            created: true,
        };
        let status = render(
            &inputs,
            &plan,
            &Outcome::Registered(registered, Held::default()),
            &at(100),
        );
        assert_eq!((status.version, status.id), (Some(2), Some(4)));
        assert_eq!(condition(&status, "Ready").status, "True");
        assert_eq!(status.compatibility.as_ref().unwrap().total, 0);
        assert_eq!(status.fingerprint.map(|f| f.len()), Some(64));
        let event = transition(
            inputs.status.as_ref(),
            &render(
                &inputs,
                &plan,
                &Outcome::Registered(registered, Held::default()),
                &at(1),
            ),
        )
        .unwrap();
        assert_eq!(event.reason, "Registered");
    }

    #[test]
    fn rendering_twice_changes_nothing_but_times_so_no_patch_and_no_event_follow() {
        let mut inputs = inputs(RSVP_WITHOUT_EVENT, registry(&[RSVP_V1], Mode::Forward, None), None);
        let plan = decide(&inputs, &Checker::new(Limits::default()));
        let first = render(&inputs, &plan, &Outcome::Nothing, &at(100));
        assert!(transition(None, &first).is_some_and(|event| event.reason == "Rejected" && event.warning));
        inputs.status = Some(first.clone());
        let second = render(&inputs, &plan, &Outcome::Nothing, &at(200));
        assert_eq!(first, second, "lastTransitionTime stays when nothing flips");
        assert!(!changed(Some(&first), &second));
        assert!(transition(Some(&first), &second).is_none());
    }

    #[test]
    fn a_new_drift_is_a_warning_event_once() {
        let mut quiet = SchemaStatus::default();
        crate::crd::conditions::set_condition(
            &mut quiet.conditions,
            ConditionType::Ready,
            true,
            "Registered",
            "registered as version 1",
            Some(1),
            &at(1),
        );
        let mut drifted = quiet.clone();
        crate::crd::conditions::set_condition(
            &mut drifted.conditions,
            ConditionType::Drifted,
            true,
            "RegisteredOutsideSchemaops",
            "version 2 was registered outside schemaops",
            Some(1),
            &at(2),
        );
        let events = transitions(Some(&quiet), &drifted);
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].reason, events[0].warning), ("Drifted", true));
        assert!(events[0].note.contains("version 2"), "{}", events[0].note);
        assert!(transitions(Some(&drifted), &drifted).is_empty(), "no second event");
    }

    #[test]
    fn an_unreachable_registry_keeps_what_was_in_force_and_says_reconciling() {
        let mut inputs = inputs(RSVP_WITH_OPTIONAL, registry(&[RSVP_V1], Mode::Backward, None), None);
        let plan = decide(&inputs, &Checker::new(Limits::default()));
        let registered = Registered {
            id: SchemaId::new(4).unwrap(),
            version: Version::new(2).unwrap(),
            created: true,
        };
        inputs.status = Some(render(
            &inputs,
            &plan,
            &Outcome::Registered(registered, Held::default()),
            &at(100),
        ));
        let status = render_unavailable(&inputs, "connection refused", &at(200));
        assert_eq!(condition(&status, "Ready").status, "True");
        assert_eq!(condition(&status, "Reconciling").status, "True");
        assert_eq!(condition(&status, "Reconciling").reason, "RegistryUnavailable");
        assert_eq!(status.version, Some(2));
    }

    #[test]
    fn a_vanished_version_stays_reported_on_the_next_reconcile() {
        let mut inputs = inputs(RSVP_V1, registry(&[], Mode::Backward, None), None);
        let registered = SchemaStatus {
            observed_generation: Some(2),
            version: Some(1),
            ..Default::default()
        };
        let mut ready = registered.clone();
        set_condition(
            &mut ready.conditions,
            ConditionType::Ready,
            true,
            "Registered",
            "",
            Some(2),
            &at(1),
        );
        inputs.status = Some(ready);
        let checker = Checker::new(Limits::default());
        let plan = decide(&inputs, &checker);
        assert!(matches!(plan, Plan::Vanished { .. }), "{plan:?}");
        let reported = render(&inputs, &plan, &Outcome::Nothing, &at(2));
        assert_eq!(condition(&reported, "Drifted").reason, "VersionDeletedOutsideSchemaops");
        assert_eq!(condition(&reported, "Ready").status, "False");
        inputs.status = Some(reported);
        assert!(
            matches!(decide(&inputs, &checker), Plan::Vanished { .. }),
            "nothing is recreated"
        );
    }

    #[test]
    fn a_new_text_under_the_same_generation_is_registered_not_reported_as_vanished() {
        // A `schemaFrom` ConfigMap edited: the generation stays, the text and so its fingerprint change.
        let mut inputs = inputs(RSVP_WITH_OPTIONAL, registry(&[RSVP_V1], Mode::Backward, None), None);
        let mut ready = SchemaStatus {
            observed_generation: inputs.generation,
            version: Some(1),
            fingerprint: Some("0".repeat(64)),
            ..Default::default()
        };
        set_condition(
            &mut ready.conditions,
            ConditionType::Ready,
            true,
            "Registered",
            "",
            inputs.generation,
            &at(1),
        );
        inputs.status = Some(ready);
        let plan = decide(&inputs, &Checker::new(Limits::default()));
        assert!(matches!(plan, Plan::Register { .. }), "{plan:?}");
    }

    #[test]
    fn the_listed_incompatibilities_are_capped_but_counted() {
        use crate::compat::{Incompatibility, Kind, Report, SchemaPath, avro};
        let many: Vec<Incompatibility> = (0..30)
            .map(|i| Incompatibility {
                kind: Kind::Avro(avro::Kind::ReaderFieldMissingDefaultValue),
                path: SchemaPath::root().key("fields").index(i),
                message: "x".repeat(5000),
                version: 1,
                directions: vec![crate::compat::Direction::Backward],
            })
            .collect();
        let report = Report::new(Mode::Backward, vec![1], many);
        let listed = compatibility(&report);
        assert_eq!(listed.incompatibilities.len(), MAX_LISTED_INCOMPATIBILITIES);
        assert_eq!(listed.total, 30);
        assert!(listed.incompatibilities[0].message.len() <= MAX_FRAGMENT_BYTES);
        assert!(summary("s", &report).len() <= MAX_MESSAGE_BYTES);
    }

    #[test]
    fn an_observed_schema_says_what_manage_would_do_and_plans_no_write() {
        use crate::controller::schema::decide::judge;
        let checker = Checker::new(Limits::default());
        let mut compatible = inputs(RSVP_WITH_OPTIONAL, registry(&[RSVP_V1], Mode::Backward, None), None);
        compatible.observe = true;
        let plan = judge(&compatible, &checker).plan;
        assert!(matches!(plan, Plan::Observe { .. }), "{plan:?}");
        let status = render(&compatible, &plan, &Outcome::Nothing, &at(100));
        assert_eq!(condition(&status, "Ready").reason, "Observed");
        let observation = status.observation.clone().unwrap();
        assert_eq!(observation.would_be_compatible, Some(true));
        assert_eq!(observation.latest_version, Some(1));
        assert_eq!(observation.registered_version, None);
        assert!(!observation.matches_latest);
        assert_eq!(
            observation.manage_would,
            "register this schema under subject `rsvp-value` as a new version (compatible under BACKWARD)"
        );

        let mut breaking = inputs(RSVP_WITHOUT_EVENT, registry(&[RSVP_V1], Mode::Forward, None), None);
        breaking.observe = true;
        let plan = judge(&breaking, &checker).plan;
        let status = render(&breaking, &plan, &Outcome::Nothing, &at(100));
        assert_eq!(condition(&status, "Ready").status, "True", "observing is not failing");
        let observation = status.observation.unwrap();
        assert_eq!(observation.would_be_compatible, Some(false));
        assert!(
            observation.manage_would.starts_with("refuse it: incompatible"),
            "{observation:?}"
        );
        assert_eq!(status.compatibility.unwrap().total, 1);
    }

    #[test]
    fn a_version_registered_before_schemaops_is_adopted_and_says_so() {
        let mut held = registry(&[RSVP_V1], Mode::Backward, None);
        held.holding = Some(crate::registry::VersionedSchema {
            contract: Default::default(),
            subject: crate::controller::schema::decide::tests::subject(),
            version: Version::FIRST,
            id: SchemaId::new(9).unwrap(),
            format: crate::compat::Format::Avro,
            text: RSVP_V1.to_owned(),
            answer_text: None,
            references: Vec::new(),
            deleted: false,
        });
        let first = inputs(RSVP_V1, held.clone(), None);
        let plan = decide(&first, &Checker::new(Limits::default()));
        let adopted = render(&first, &plan, &Outcome::Nothing, &at(100));
        assert_eq!(condition(&adopted, "Ready").reason, "Adopted");
        assert!(condition(&adopted, "Ready").message.contains("is adopted"));
        assert_eq!(adopted.version, Some(1));
        // The next reconcile keeps the word: no status write, no event.
        let mut again = inputs(RSVP_V1, held, None);
        again.status = Some(adopted.clone());
        let plan = decide(&again, &Checker::new(Limits::default()));
        let still = render(&again, &plan, &Outcome::Nothing, &at(200));
        assert!(!changed(Some(&adopted), &still));
        assert!(transition(Some(&adopted), &still).is_none());
    }
}

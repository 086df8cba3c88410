//! Status conditions as the Kubernetes API conventions and kstatus read them:
//! the condition types and reasons schemaops uses, and [`set_condition`],
//! which keeps `lastTransitionTime` unless the status flips.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The condition types schemaops sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionType {
    /// The resource is in the state its spec asks for.
    Ready,
    /// Progress stopped on an error that needs a change to the spec.
    Stalled,
    /// Work or a retry is pending.
    Reconciling,
    /// The registry holds a newer version of the subject than any schemaops registered.
    Drifted,
    /// Deletion waits: other schemas still refer to the subject.
    DeletionBlocked,
    /// A SchemaPolicy whose action is Warn finds a violation; the change went through.
    PolicyWarning,
    /// A registry connection's Secrets and ConfigMaps were read and give a usable client.
    CredentialsResolved,
    /// A registry connection's registry answers.
    Reachable,
    /// A registry connection's optional features were probed.
    CapabilitiesDetected,
}

impl ConditionType {
    /// The name in `status.conditions[].type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Stalled => "Stalled",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Drifted => "Drifted",
            ConditionType::DeletionBlocked => "DeletionBlocked",
            ConditionType::PolicyWarning => "PolicyWarning",
            ConditionType::CredentialsResolved => "CredentialsResolved",
            ConditionType::Reachable => "Reachable",
            ConditionType::CapabilitiesDetected => "CapabilitiesDetected",
        }
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a condition has its status: the `reason` of conditions and events,
/// a bounded set of PascalCase words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The schema is registered (now or earlier) under its subject.
    Registered,
    /// The subject's settings are in force in the registry.
    Configured,
    /// The schema breaks an earlier version under the compatibility level.
    IncompatibleSchema,
    /// The schema text cannot be parsed.
    InvalidSchema,
    /// The subject already holds schemas of another type.
    SchemaTypeChanged,
    /// The spec itself is unusable: a bad subject name or reference.
    InvalidSpec,
    /// The ConfigMap (or its key) named by `schemaFrom` does not exist.
    SchemaSourceNotFound,
    /// Another resource already manages the subject.
    SubjectConflict,
    /// The subject is in READONLY mode.
    SubjectReadOnly,
    /// The registry refused a schema schemaops judged compatible.
    RegistryRejected,
    /// The registry could not be reached; retrying.
    RegistryUnavailable,
    /// Work is in progress.
    Progressing,
    /// A newer version was registered outside schemaops.
    RegisteredOutsideSchemaops,
    /// The version holding the schema was deleted outside schemaops.
    VersionDeletedOutsideSchemaops,
    /// Other schemas still refer to the subject.
    ReferencedBySchemas,
    /// The subject was deleted from the registry.
    Deleted,
    /// The schema is valid, but checking it against an earlier version needs
    /// more work than the checker allows: simplify it.
    TooComplex,
    /// A SubjectConfig asks for a mode, and the registry cannot hold a
    /// per-subject mode (Karapace): the level applies, the mode does not.
    ModeUnsupported,
    /// The resource asks for data contracts (metadata, rule sets, or the
    /// settings that merge them) and the registry does not keep them
    /// (Karapace drops them): what it does keep is in force, the rest is not.
    ContractsUnsupported,
    /// A SchemaPolicy refuses the change; nothing was written to the registry.
    PolicyViolation,
    /// A SchemaPolicy does not let the resource's namespace manage its subject.
    SubjectNotAllowed,
    /// A SchemaPolicy cannot be used (its status says why).
    InvalidPolicy,
    /// `managementPolicy: Observe`: the registry was read, nothing was written.
    Observed,
    /// The schema was already registered (before schemaops managed it): its version was adopted.
    Adopted,
    /// The spec equals an earlier version this Schema registered, and a later one of its own
    /// stays the subject's latest: a git revert.
    Reverted,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 25] = [
        Reason::Registered,
        Reason::Configured,
        Reason::IncompatibleSchema,
        Reason::InvalidSchema,
        Reason::SchemaTypeChanged,
        Reason::InvalidSpec,
        Reason::SchemaSourceNotFound,
        Reason::SubjectConflict,
        Reason::SubjectReadOnly,
        Reason::RegistryRejected,
        Reason::RegistryUnavailable,
        Reason::Progressing,
        Reason::RegisteredOutsideSchemaops,
        Reason::VersionDeletedOutsideSchemaops,
        Reason::ReferencedBySchemas,
        Reason::Deleted,
        Reason::TooComplex,
        Reason::ModeUnsupported,
        Reason::ContractsUnsupported,
        Reason::PolicyViolation,
        Reason::SubjectNotAllowed,
        Reason::InvalidPolicy,
        Reason::Observed,
        Reason::Adopted,
        Reason::Reverted,
    ];

    /// The reason written as `word` (see [`as_str`](Self::as_str)), if any.
    pub fn parse(word: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|reason| reason.as_str() == word)
    }

    /// The PascalCase word written in conditions, events and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Registered => "Registered",
            Reason::Configured => "Configured",
            Reason::IncompatibleSchema => "IncompatibleSchema",
            Reason::InvalidSchema => "InvalidSchema",
            Reason::SchemaTypeChanged => "SchemaTypeChanged",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::SchemaSourceNotFound => "SchemaSourceNotFound",
            Reason::SubjectConflict => "SubjectConflict",
            Reason::SubjectReadOnly => "SubjectReadOnly",
            Reason::RegistryRejected => "RegistryRejected",
            Reason::RegistryUnavailable => "RegistryUnavailable",
            Reason::Progressing => "Progressing",
            Reason::RegisteredOutsideSchemaops => "RegisteredOutsideSchemaops",
            Reason::VersionDeletedOutsideSchemaops => "VersionDeletedOutsideSchemaops",
            Reason::ReferencedBySchemas => "ReferencedBySchemas",
            Reason::Deleted => "Deleted",
            Reason::TooComplex => "TooComplex",
            Reason::ModeUnsupported => "ModeUnsupported",
            Reason::ContractsUnsupported => "ContractsUnsupported",
            Reason::PolicyViolation => "PolicyViolation",
            Reason::SubjectNotAllowed => "SubjectNotAllowed",
            Reason::InvalidPolicy => "InvalidPolicy",
            Reason::Observed => "Observed",
            Reason::Adopted => "Adopted",
            Reason::Reverted => "Reverted",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The longest condition message the API server accepts, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;

/// Cuts `message` to fit a condition (under [`MAX_MESSAGE_BYTES`]) at a
/// character boundary, saying how much was left out.
pub fn truncate_message(message: &str, limit: usize) -> String {
    if message.len() <= limit {
        return message.to_owned();
    }
    let note = format!(" … ({} more bytes left out)", message.len());
    let mut end = limit.saturating_sub(note.len());
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let left_out = message.len() - end;
    format!("{} … ({left_out} more bytes left out)", &message[..end])
}

/// Sets the condition of `type_` in `conditions` to `status` with `reason`
/// and `message`, for the object's `generation`.
///
/// `lastTransitionTime` becomes `now` only when the condition is new or its
/// status flips, so an unchanged condition renders identically and writing
/// it back causes no new watch event. Conditions of other types, including
/// other writers', are kept as they are.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) {
    let status = if status { "True" } else { "False" };
    let condition = Condition {
        type_: type_.as_str().to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: now.clone(),
    };
    match conditions.iter_mut().find(|existing| existing.type_ == condition.type_) {
        Some(existing) => {
            let last_transition_time = if existing.status == condition.status {
                existing.last_transition_time.clone()
            } else {
                condition.last_transition_time.clone()
            };
            *existing = Condition {
                last_transition_time,
                ..condition
            };
        }
        None => conditions.push(condition),
    }
}

/// Removes the condition of `type_`, if present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: ConditionType) {
    conditions.retain(|condition| condition.type_ != type_.as_str());
}

/// The condition of `type_`, if present.
pub fn find_condition(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|condition| condition.type_ == type_.as_str())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    #[test]
    fn every_reason_parses_back_from_its_word_and_nothing_else_does() {
        for reason in Reason::ALL {
            assert_eq!(Reason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(Reason::parse("incompatible schema: field x"), None);
    }

    #[test]
    fn the_transition_time_changes_only_when_the_status_flips() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            ConditionType::Ready,
            false,
            "Incompatible",
            "v1",
            Some(1),
            &at(10),
        );
        set_condition(
            &mut conditions,
            ConditionType::Ready,
            false,
            "Incompatible",
            "v2",
            Some(2),
            &at(20),
        );
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, at(10), "same status keeps the time");
        assert_eq!(conditions[0].message, "v2");
        assert_eq!(conditions[0].observed_generation, Some(2));
        set_condition(
            &mut conditions,
            ConditionType::Ready,
            true,
            "Registered",
            "ok",
            Some(3),
            &at(30),
        );
        assert_eq!(conditions[0].last_transition_time, at(30), "a flip takes the new time");
        assert_eq!(conditions[0].status, "True");
    }

    #[test]
    fn other_conditions_are_kept() {
        let mut conditions = vec![Condition {
            type_: "Synced".to_owned(),
            status: "True".to_owned(),
            reason: "ByArgo".to_owned(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: at(1),
        }];
        set_condition(
            &mut conditions,
            ConditionType::Stalled,
            true,
            "InvalidSchema",
            "bad",
            Some(1),
            &at(5),
        );
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0].type_, "Synced");
        assert_eq!(conditions[1].type_, "Stalled");
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary_and_say_so() {
        let message = "é".repeat(40_000);
        let cut = truncate_message(&message, MAX_MESSAGE_BYTES);
        assert!(cut.len() <= MAX_MESSAGE_BYTES, "{}", cut.len());
        assert!(cut.ends_with("more bytes left out)"));
        assert_eq!(truncate_message("short", MAX_MESSAGE_BYTES), "short");
    }
}

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
}

impl ConditionType {
    /// The name in `status.conditions[].type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Stalled => "Stalled",
            ConditionType::Reconciling => "Reconciling",
        }
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
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
}

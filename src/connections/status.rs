//! A connection's status, rendered from what checking it found ([`Check`]):
//! the conditions `CredentialsResolved`, `Reachable`, `CapabilitiesDetected`
//! and `Ready`, the endpoint in use, the capabilities, and how many objects
//! are bound to it. Pure: the caller checks, passes `now`, and writes the
//! status only when [`render_status`] gives something new.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::ResolveError;
use crate::crd::conditions::{ConditionType, set_condition};
use crate::crd::{ConnectionStatus, RegistryCapabilities};
use crate::registry::external::Capabilities;

/// What checking a connection found, step by step: each step runs only when
/// the one before it succeeded.
#[derive(Debug)]
pub enum Check {
    /// The connection gives no client: a missing Secret or key, bad TLS
    /// material, or an unusable spec.
    Unresolved(ResolveError),
    /// A client was built; the registry did not answer at `endpoint`.
    Unreachable {
        /// The URL tried.
        endpoint: String,
        /// What went wrong, in a sentence (no secrets).
        message: String,
    },
    /// The registry answered; its capabilities could not be probed (e.g. the
    /// credentials were refused).
    Undetected {
        /// The URL in use.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
    /// The registry answered and its capabilities are known.
    Ready {
        /// The URL in use, or `embedded`.
        endpoint: String,
        /// What it can do.
        capabilities: RegistryCapabilities,
    },
}

/// The status of a connection of `generation` with `bound` objects bound to
/// it, after `check`; conditions keep their transition times unless their
/// status flips.
pub fn render_status(
    check: &Check,
    generation: Option<i64>,
    bound: usize,
    previous: Option<&ConnectionStatus>,
    now: &Time,
) -> ConnectionStatus {
    let mut status = ConnectionStatus {
        observed_generation: generation,
        conditions: previous.map(|previous| previous.conditions.clone()).unwrap_or_default(),
        bound_objects: Some(i32::try_from(bound).unwrap_or(i32::MAX)),
        // Flavour and version are kept from an earlier status until a probe says otherwise.
        flavour: previous.and_then(|previous| previous.flavour.clone()),
        version: previous.and_then(|previous| previous.version.clone()),
        ..ConnectionStatus::default()
    };
    let mut set = |type_, ok: bool, reason: &str, message: &str| {
        set_condition(&mut status.conditions, type_, ok, reason, message, generation, now);
    };
    let pending = "an earlier step failed";
    match check {
        Check::Unresolved(error) => {
            let (reason, message) = (error.reason(), error.to_string());
            set(ConditionType::CredentialsResolved, false, reason, &message);
            set(ConditionType::Reachable, false, "NotChecked", pending);
            set(ConditionType::CapabilitiesDetected, false, "NotChecked", pending);
            set(ConditionType::Ready, false, reason, &message);
        }
        Check::Unreachable { endpoint, message } => {
            set(ConditionType::CredentialsResolved, true, "Resolved", "");
            set(ConditionType::Reachable, false, "RegistryUnavailable", message);
            set(ConditionType::CapabilitiesDetected, false, "NotChecked", pending);
            set(ConditionType::Ready, false, "RegistryUnavailable", message);
            status.endpoint = Some(endpoint.clone());
        }
        Check::Undetected { endpoint, message } => {
            set(ConditionType::CredentialsResolved, true, "Resolved", "");
            set(ConditionType::Reachable, true, "Answered", "");
            set(ConditionType::CapabilitiesDetected, false, "ProbeFailed", message);
            set(ConditionType::Ready, false, "ProbeFailed", message);
            status.endpoint = Some(endpoint.clone());
        }
        Check::Ready { endpoint, capabilities } => {
            set(ConditionType::CredentialsResolved, true, "Resolved", "");
            set(ConditionType::Reachable, true, "Answered", "");
            set(ConditionType::CapabilitiesDetected, true, "Detected", "");
            set(ConditionType::Ready, true, "Ready", "");
            status.endpoint = Some(endpoint.clone());
            status.capabilities = Some(*capabilities);
        }
    }
    status
}

/// The capabilities an external registry was probed to have, as a status lists them;
/// `contracts` when the data-contract probe ran. IMPORT mode is not probed yet.
pub fn capabilities_of(found: &Capabilities, contracts: Option<bool>) -> RegistryCapabilities {
    RegistryCapabilities {
        subject_mode: found.subject_mode,
        contracts,
        contexts: found.contexts,
        guids: found.guids,
        normalize: found.normalize,
        import_mode: None,
    }
}

/// Whether `new` differs from `old` in anything but condition times: only
/// then is it worth a write (a write is also a watch event).
pub fn changed(old: Option<&ConnectionStatus>, new: &ConnectionStatus) -> bool {
    let Some(old) = old else { return true };
    let without_times = |status: &ConnectionStatus| {
        let mut status = status.clone();
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        }
        status
    };
    without_times(old) != without_times(new)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::crd::conditions::find_condition;
    use crate::crd::{RegistryKind, RegistryRef};

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    fn condition(status: &ConnectionStatus, type_: ConditionType) -> (String, String, String) {
        let found = find_condition(&status.conditions, type_).unwrap();
        (found.status.clone(), found.reason.clone(), found.message.clone())
    }

    #[test]
    fn a_missing_secret_is_credentials_resolved_false_with_its_name() {
        let error = ResolveError::SourceNotFound {
            reference: RegistryRef {
                kind: RegistryKind::SchemaRegistry,
                name: "orders".to_owned(),
            },
            source_kind: "Secret",
            namespace: "team-a".to_owned(),
            name: "registry-credentials".to_owned(),
        };
        let status = render_status(&Check::Unresolved(error), Some(3), 2, None, &at(10));
        let (state, reason, message) = condition(&status, ConditionType::CredentialsResolved);
        assert_eq!((state.as_str(), reason.as_str()), ("False", "SecretNotFound"));
        assert!(message.contains("Secret team-a/registry-credentials"), "{message}");
        assert_eq!(condition(&status, ConditionType::Ready).1, "SecretNotFound");
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.bound_objects, Some(2));
        assert!(status.conditions.iter().all(|c| c.observed_generation == Some(3)));
    }

    #[test]
    fn a_secret_rbac_forbids_is_credentials_resolved_false_naming_the_chart_value() {
        let error = ResolveError::SourceForbidden {
            source_kind: "Secret",
            namespace: "platform".to_owned(),
            name: "registry-credentials".to_owned(),
        };
        assert!(error.is_credentials() && !error.is_transient());
        let status = render_status(&Check::Unresolved(error), Some(1), 0, None, &at(10));
        let (state, reason, message) = condition(&status, ConditionType::CredentialsResolved);
        assert_eq!((state.as_str(), reason.as_str()), ("False", "SecretForbidden"));
        assert!(
            message.contains("Secret platform/registry-credentials") && message.contains("connectionSecretNamespaces"),
            "{message}"
        );
        assert_eq!(condition(&status, ConditionType::Ready).1, "SecretForbidden");
    }

    #[test]
    fn an_unreachable_registry_resolved_its_credentials_but_is_not_ready() {
        let check = Check::Unreachable {
            endpoint: "http://registry:8081".to_owned(),
            message: "connection refused".to_owned(),
        };
        let status = render_status(&check, Some(1), 0, None, &at(10));
        assert_eq!(condition(&status, ConditionType::CredentialsResolved).0, "True");
        assert_eq!(
            condition(&status, ConditionType::Reachable),
            (
                "False".to_owned(),
                "RegistryUnavailable".to_owned(),
                "connection refused".to_owned()
            )
        );
        assert_eq!(condition(&status, ConditionType::Ready).0, "False");
        assert_eq!(status.endpoint.as_deref(), Some("http://registry:8081"));
    }

    #[test]
    fn a_ready_connection_lists_its_capabilities_and_an_unchanged_one_is_not_rewritten() {
        let capabilities = RegistryCapabilities {
            subject_mode: true,
            contexts: true,
            ..RegistryCapabilities::default()
        };
        let check = Check::Ready {
            endpoint: "embedded".to_owned(),
            capabilities,
        };
        let first = render_status(&check, Some(1), 1, None, &at(10));
        assert_eq!(condition(&first, ConditionType::Ready).0, "True");
        assert_eq!(first.capabilities, Some(capabilities));
        let again = render_status(&check, Some(1), 1, Some(&first), &at(20));
        assert_eq!(again, first, "the transition times stay");
        assert!(!changed(Some(&first), &again));
        let more = render_status(&check, Some(1), 2, Some(&first), &at(30));
        assert!(changed(Some(&first), &more), "a new bound count is written");
        let down = render_status(
            &Check::Unreachable {
                endpoint: "embedded".to_owned(),
                message: "down".to_owned(),
            },
            Some(1),
            2,
            Some(&first),
            &at(40),
        );
        let ready = find_condition(&down.conditions, ConditionType::Ready).unwrap();
        assert_eq!(ready.last_transition_time, at(40), "a flip takes the new time");
        let resolved = find_condition(&down.conditions, ConditionType::CredentialsResolved).unwrap();
        assert_eq!(resolved.last_transition_time, at(10));
    }
}

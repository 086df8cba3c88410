//! Admission of SubjectConfigs: judged against the platform's policies (the
//! level it sets, or the registry's global level it falls back to without
//! one; its mode; its subject), as the reconcile judges them. A denial is
//! 403 `Forbidden` with the policy, rule, field path and remedy; a Warn
//! policy's violations come back as admission warnings.

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use super::review::{Admission, CODE_FORBIDDEN, CODE_INVALID, deny, warn};
use crate::crd::SubjectConfig;

impl Admission {
    /// Judges a SubjectConfig CREATE or UPDATE.
    pub(super) async fn review_subject_config(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        response: AdmissionResponse,
    ) -> AdmissionResponse {
        let Some(object) = &request.object else {
            return deny(
                response,
                CODE_INVALID,
                "Invalid",
                "the request carries no object".to_owned(),
            );
        };
        let mut config = match as_subject_config(object) {
            Ok(config) => config,
            Err(error) => {
                return deny(
                    response,
                    CODE_INVALID,
                    "Invalid",
                    format!("the object is not a valid SubjectConfig: {error}"),
                );
            }
        };
        let previous = request.old_object.as_ref().and_then(|old| as_subject_config(old).ok());
        if request.operation == Operation::Update && previous.as_ref().is_some_and(|old| old.spec == config.spec) {
            return response;
        }
        if config.metadata.namespace.is_none() {
            config.metadata.namespace.clone_from(&request.namespace);
        }
        let policy = self.policies.context();
        if policy.policies.is_empty() {
            return response;
        }
        // Without a level of its own, the subject falls back to the global
        // one; an unreachable registry leaves that to the controller.
        let global = match config.spec.compatibility {
            Some(_) => None,
            None => self.registry.compatibility(None, true).await.ok(),
        };
        let verdict = policy.judge_subject_config(&config, previous.as_ref(), global);
        if let Some(message) = verdict.denial_message() {
            return deny(response, CODE_FORBIDDEN, "Forbidden", message);
        }
        let mut response = response;
        for warning in verdict.warnings() {
            response = warn(response, warning.to_string());
        }
        response
    }
}

fn as_subject_config(object: &DynamicObject) -> Result<SubjectConfig, serde_json::Error> {
    serde_json::to_value(object).and_then(serde_json::from_value)
}

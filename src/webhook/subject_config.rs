//! Admission of SubjectConfigs: judged against the platform's policies (the
//! level it sets, or the registry's global level it falls back to without
//! one; its mode; its subject), as the reconcile judges them. A denial is
//! 403 `Forbidden` with the policy, rule, field path and remedy; a Warn
//! policy's violations come back as admission warnings.

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use super::review::{Admission, CODE_FORBIDDEN, CODE_INVALID, SUBJECT_CONFIG_KIND, deny, objects_of, warn};
use crate::crd::SubjectConfig;

impl Admission {
    /// Judges a SubjectConfig CREATE or UPDATE.
    pub(super) async fn review_subject_config(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        response: AdmissionResponse,
    ) -> AdmissionResponse {
        let (mut config, previous) = match objects_of::<SubjectConfig>(request, SUBJECT_CONFIG_KIND) {
            Ok(objects) => objects,
            Err(problem) => return deny(response, CODE_INVALID, "Invalid", problem),
        };
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

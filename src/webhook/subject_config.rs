//! Admission of SubjectConfigs: judged against the platform's policies (the
//! level it sets, or the registry's global level it falls back to without
//! one; its mode; its subject), as the reconcile judges them. A denial is
//! 403 `Forbidden` with the policy, rule, field path and remedy; a Warn
//! policy's violations come back as admission warnings.
//!
//! A DELETE is judged too: deleting the SubjectConfig that sets its
//! subject's level drops the subject to the registry's global level, which
//! a policy's compatibility floor may forbid (as it forbids REST `DELETE
//! /config/{subject}`).

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};

use super::review::{Admission, CODE_FORBIDDEN, CODE_INVALID, SUBJECT_CONFIG_KIND, deny, objects_of, warn};
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::{Schema, SubjectConfig};

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
    /// Judges a SubjectConfig DELETE by the object before it (`oldObject`):
    /// when it manages its subject and sets a level, the subject falls back
    /// to the registry's global level, judged against the compatibility
    /// rules. Anything that cannot be judged (no old object, an unreachable
    /// registry) is allowed: the controller keeps the level then.
    pub(super) async fn review_subject_config_deletion(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        response: AdmissionResponse,
    ) -> AdmissionResponse {
        let typed =
            |object: &DynamicObject| serde_json::to_value(object).and_then(serde_json::from_value::<SubjectConfig>);
        let Some(Ok(mut config)) = request.old_object.as_ref().map(typed) else {
            return response;
        };
        // Judged whatever the management policy: the operator's cleanup removes
        // the subject's level for an observed SubjectConfig too. One bound to a
        // registry connection is judged by the operator's cleanup, against its
        // own registry's global level, not the default registry's.
        if config.spec.compatibility.is_none() || config.spec.registry_ref.is_some() {
            return response;
        }
        if config.metadata.namespace.is_none() {
            config.metadata.namespace.clone_from(&request.namespace);
        }
        let policy = self.policies.context();
        if policy.policies.is_empty() {
            return response;
        }
        // Only the SubjectConfig that manages the subject takes its level away.
        let key = ObjectKey::of(&config.metadata);
        let subject = &config.spec.subject;
        let configs = self.view.subject_configs();
        let others = configs
            .iter()
            .map(AsRef::as_ref)
            .filter(|other| ObjectKey::of(&other.metadata) != key);
        let view = SubjectView::of_claimable(
            subject,
            std::iter::empty::<&Schema>(),
            others.chain(std::iter::once(&config)),
            |claimant| policy.may_claim(claimant, subject),
        );
        if view.config_owner.as_ref() != Some(&key) {
            return response;
        }
        let Ok(global) = self.registry.compatibility(None, true).await else {
            return response;
        };
        let verdict = policy.judge_subject_config_deletion(&config, global);
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

//! One AdmissionReview in, one AdmissionResponse out: the Schema is read
//! and decided exactly as the controller reads and decides it
//! ([`read_candidate`], [`decide`]), and the plan becomes allowed or denied.
//!
//! Knows nothing of HTTP or TLS. The cluster reaches it only through
//! [`ViewSource`] (the Schemas and SubjectConfigs known) and
//! [`ConfigMapSource`] (a `schemaFrom` ConfigMap's data), so tests pass
//! fixed lists.
//!
//! # Rules
//! - The object of a CREATE or UPDATE of any schemaops kind is first held
//!   to its CRD's schema as `check` and `apply` hold a manifest
//!   ([`crate::crd::validate`]): an unknown field, a wrong type or a value
//!   the enum lacks is denied with 422 `Invalid` and the same message. The
//!   API server prunes unknown fields (or refuses them, under
//!   `fieldValidation=Strict`) before a webhook is called, so this matters
//!   for objects sent otherwise; it keeps the three verdicts one.
//! - An UPDATE of a Schema or SubjectConfig that adds, changes or removes
//!   `spec.registryRef` is denied with 422 `Invalid`, as the CRD's CEL rules
//!   deny it (a subject does not move between registries by an edit).
//! - CREATE and UPDATE of `schemaops.dev` `Schema`s and `SubjectConfig`s
//!   are judged, and so is the DELETE of a `SubjectConfig` (the level its
//!   subject falls back to); every other operation, kind or subresource is
//!   allowed, and so is an object outside the one namespace the operator
//!   watches (when it watches one).
//! - An UPDATE that leaves the spec as it was (labels, finalizers, deletion)
//!   is allowed without reading anything.
//! - `Reject` (incompatible) and `Invalid` (unparseable schema, bad
//!   references, type change, bad subject) are denied with 422 `Invalid`,
//!   the message the status would show; `Conflict` is denied with 403
//!   `Forbidden` naming the Schema that manages the subject.
//! - A registry that cannot be reached, and a ConfigMap that is missing or
//!   unreadable, allow with a warning: the controller still guards the
//!   registry and reports these in the status.
//!
//! # Caveats
//! The view comes from the operator's caches (on a follower replica under
//! leader election, from watches of its own): until they are filled, or
//! when two Schemas claim a subject at the same moment, a conflict can be
//! missed here. The controller then reports it as it always has.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::{DynamicObject, Status, TypeMeta};

use crate::compat::Checker;
use crate::connections::{Connections, ResolveError, rules};
use crate::controller::judge::{PolicyContext, PolicySource};
use crate::controller::schema::decide::{self, Plan, SchemaInputs};
use crate::controller::schema::{read, status};
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::RegistryRef;
use crate::crd::conditions::{MAX_MESSAGE_BYTES, Reason, truncate_message};
use crate::crd::{Schema, SubjectConfig};
use crate::registry::Registry;

/// The API group of the resources judged here.
pub const API_GROUP: &str = "schemaops.dev";

/// The kind judged here, with its compatibility and the policies.
pub const KIND: &str = "Schema";

/// The other kind judged here, against the policies.
pub const SUBJECT_CONFIG_KIND: &str = "SubjectConfig";

/// The cluster-scoped kind, only held to its schema here.
pub const SCHEMA_POLICY_KIND: &str = "SchemaPolicy";

/// The HTTP status code of a denial for an incompatible or invalid schema:
/// the API server's own answer to an object that fails validation.
pub const CODE_INVALID: u16 = 422;

/// The HTTP status code of a denial for a subject managed by another Schema.
/// Not 409: clients retry a `Conflict`, and retrying cannot help here.
pub const CODE_FORBIDDEN: u16 = 403;

/// The warning sent when the registry cannot be read.
pub const REGISTRY_UNREACHABLE: &str = "the registry cannot be reached; the controller will check this schema";

/// The Schemas and SubjectConfigs the webhook judges a Schema against.
pub trait ViewSource: Send + Sync {
    /// Every Schema known (the candidate's stored version may be among them).
    fn schemas(&self) -> Vec<Arc<Schema>>;
    /// Every SubjectConfig known.
    fn subject_configs(&self) -> Vec<Arc<SubjectConfig>>;
}

/// Fixed lists, for tests and for `schemaops` commands without a cluster.
#[derive(Debug, Clone, Default)]
pub struct FixedView {
    /// The Schemas.
    pub schemas: Vec<Schema>,
    /// The SubjectConfigs.
    pub subject_configs: Vec<SubjectConfig>,
}

impl ViewSource for FixedView {
    fn schemas(&self) -> Vec<Arc<Schema>> {
        self.schemas.iter().cloned().map(Arc::new).collect()
    }

    fn subject_configs(&self) -> Vec<Arc<SubjectConfig>> {
        self.subject_configs.iter().cloned().map(Arc::new).collect()
    }
}

/// Reads the data of the ConfigMap a Schema's `schemaFrom` names.
#[async_trait]
pub trait ConfigMapSource: Send + Sync {
    /// The data of ConfigMap `name` in `namespace`, `None` when it does not exist.
    ///
    /// # Errors
    /// A message saying why it could not be read.
    async fn data(&self, namespace: &str, name: &str) -> Result<Option<BTreeMap<String, String>>, String>;
}

/// Fixed ConfigMaps keyed by (namespace, name), for tests.
#[derive(Debug, Clone, Default)]
pub struct FixedConfigMaps(pub BTreeMap<(String, String), BTreeMap<String, String>>);

#[async_trait]
impl ConfigMapSource for FixedConfigMaps {
    async fn data(&self, namespace: &str, name: &str) -> Result<Option<BTreeMap<String, String>>, String> {
        Ok(self.0.get(&(namespace.to_owned(), name.to_owned())).cloned())
    }
}

/// Why a request body is not an AdmissionReview the webhook can answer (HTTP 400).
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    /// The body is not an AdmissionReview.
    #[error("the body is not an admission.k8s.io/v1 AdmissionReview: {0}")]
    Malformed(#[source] serde_json::Error),
    /// The review carries no request.
    #[error("the AdmissionReview has no `request`")]
    MissingRequest,
}

/// Parses a request body.
///
/// # Errors
/// [`BadReview`] when the body is not a review with a request.
pub fn parse(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, BadReview> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body).map_err(BadReview::Malformed)?;
    review.try_into().map_err(|_| BadReview::MissingRequest)
}

/// The review sent back for `response`.
pub fn into_review(mut response: AdmissionResponse) -> AdmissionReview<DynamicObject> {
    response.types = TypeMeta {
        api_version: "admission.k8s.io/v1".to_owned(),
        kind: "AdmissionReview".to_owned(),
    };
    response.into_review()
}

/// What the webhook judges with: the controller's registry, engine and view.
pub struct Admission {
    /// The registry the controller writes to.
    pub registry: Arc<dyn Registry>,
    /// The registry connections, to refuse a `spec.registryRef` the object's
    /// namespace may not use. `None`: objects with one are allowed with a warning.
    pub connections: Option<Arc<Connections>>,
    /// The engine.
    pub checker: Checker,
    /// The Schemas and SubjectConfigs known.
    pub view: Arc<dyn ViewSource>,
    /// ConfigMap lookups for `schemaFrom`.
    pub config_maps: Arc<dyn ConfigMapSource>,
    /// The one namespace the controllers watch, or every namespace (`None`):
    /// Schemas elsewhere are no business of this operator and are allowed.
    pub namespace: Option<String>,
    /// The platform's policies, kept current by the operator's watch.
    pub policies: PolicySource,
}

impl Admission {
    /// Judges one request; never fails (anything it cannot decide is allowed).
    pub async fn review(&self, request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
        let response = AdmissionResponse::from(request);
        let judged = matches!(request.operation, Operation::Create | Operation::Update)
            && request.kind.group == API_GROUP
            && request.sub_resource.as_deref().unwrap_or_default().is_empty()
            && (self.namespace.is_none()
                || self.namespace == request.namespace
                || request.kind.kind == SCHEMA_POLICY_KIND);
        if request.operation == Operation::Delete
            && request.kind.group == API_GROUP
            && request.kind.kind == SUBJECT_CONFIG_KIND
            && request.sub_resource.as_deref().unwrap_or_default().is_empty()
            && (self.namespace.is_none() || self.namespace == request.namespace)
        {
            return self.review_subject_config_deletion(request, response).await;
        }
        if judged && let Some(problems) = schema_violations(request) {
            return deny(response, CODE_INVALID, "Invalid", problems);
        }
        if judged && let Some(problem) = registry_ref_changed(request) {
            return deny(response, CODE_INVALID, "Invalid", problem);
        }
        if judged && let Some(registry_ref) = bound_registry(request) {
            return self.review_bound(request, response, &registry_ref).await;
        }
        if judged && request.kind.kind == SUBJECT_CONFIG_KIND {
            return self.review_subject_config(request, response).await;
        }
        if !judged || request.kind.kind != KIND {
            return response;
        }
        let (mut schema, previous) = match objects_of::<Schema>(request, KIND) {
            Ok(objects) => objects,
            Err(problem) => return deny(response, CODE_INVALID, "Invalid", problem),
        };
        if request.operation == Operation::Update
            && let Some(previous) = &previous
        {
            if previous.spec == schema.spec {
                tracing::debug!(name = request.name, "Spec unchanged; allowed");
                return response;
            }
            // The API server bumps the generation of a changed spec before
            // validation; make sure the decision sees a new generation, or
            // it would take this edit for the registered spec (`Vanished`).
            let next = previous.metadata.generation.map(|generation| generation + 1);
            schema.metadata.generation = schema.metadata.generation.max(next);
        }
        if schema.metadata.namespace.is_none() {
            schema.metadata.namespace.clone_from(&request.namespace);
        }
        if schema.metadata.name.is_none() && !request.name.is_empty() {
            schema.metadata.name = Some(request.name.clone());
        }
        self.judge(response, schema, previous).await
    }

    async fn judge(&self, response: AdmissionResponse, schema: Schema, previous: Option<Schema>) -> AdmissionResponse {
        let key = ObjectKey::of(&schema.metadata);
        let policy = self.policies.context();
        let view = self.view_with(&schema, &policy);
        let config_map = match &schema.spec.schema_from {
            Some(from) => match self
                .config_maps
                .data(&key.namespace, &from.config_map_key_ref.name)
                .await
            {
                Ok(data) => data,
                Err(message) => {
                    return warn(
                        response,
                        format!(
                            "ConfigMap `{}` cannot be read ({message}); the controller will check this schema",
                            from.config_map_key_ref.name
                        ),
                    );
                }
            },
            None => None,
        };
        let text = read::schema_text(&schema.spec, config_map.as_ref());
        let owner = view.schema_owner.as_ref() == Some(&key);
        let candidate = match read::read_candidate(owner, &schema.spec, text, &view, self.registry.as_ref()).await {
            Ok(candidate) => candidate,
            Err(error) => {
                tracing::warn!(
                    schema = %key,
                    error = &error as &dyn std::error::Error,
                    "Registry unreadable; allowed with a warning"
                );
                return warn(response, REGISTRY_UNREACHABLE.to_owned());
            }
        };
        let observe = schema.spec.management_policy == crate::crd::ManagementPolicy::Observe;
        let inputs = SchemaInputs {
            key: key.clone(),
            generation: schema.metadata.generation,
            subject: schema.spec.subject.clone(),
            status: schema.status.clone(),
            view,
            candidate,
            policy: decide::PolicyInputs {
                context: policy,
                object: Some(Arc::new(schema)),
                old_object: previous.map(Arc::new),
            },
            observe,
        };
        let decision = decide::judge(&inputs, &self.checker);
        tracing::debug!(schema = %key, plan = decision.plan.name(), "Admission decided");
        let mut response = verdict(response, &inputs, decision.plan);
        for warning in decision.verdict.warnings() {
            response = warn(response, warning.to_string());
        }
        response
    }

    /// The view of the candidate's subject, with the candidate in place of
    /// its stored version.
    fn view_with(&self, candidate: &Schema, policy: &PolicyContext) -> SubjectView {
        let key = ObjectKey::of(&candidate.metadata);
        let schemas = self.view.schemas();
        let configs = self.view.subject_configs();
        let others = schemas
            .iter()
            .map(AsRef::as_ref)
            .filter(|schema| ObjectKey::of(&schema.metadata) != key);
        let subject = &candidate.spec.subject;
        SubjectView::of_claimable(
            subject,
            others.chain(std::iter::once(candidate)),
            configs.iter().map(AsRef::as_ref),
            |claimant| policy.may_claim(claimant, subject),
        )
    }
}

/// Allows or denies after `plan`.
fn verdict(response: AdmissionResponse, inputs: &SchemaInputs, plan: Plan) -> AdmissionResponse {
    match plan {
        Plan::Reject { subject, report } => deny(
            response,
            CODE_INVALID,
            "Invalid",
            status::summary(subject.as_str(), &report),
        ),
        Plan::Invalid(unusable) if unusable.reason == Reason::SchemaSourceNotFound => warn(
            response,
            format!("{}; the controller will check this schema", unusable.message),
        ),
        Plan::Invalid(unusable) => deny(response, CODE_INVALID, "Invalid", unusable.message),
        Plan::PolicyViolation(verdict) => deny(
            response,
            CODE_FORBIDDEN,
            "Forbidden",
            verdict.denial_message().unwrap_or_default(),
        ),
        Plan::Conflict { owner } => {
            let owner = owner.map_or("another resource".to_owned(), |owner| format!("Schema {owner}"));
            deny(
                response,
                CODE_FORBIDDEN,
                "Forbidden",
                format!(
                    "subject `{}` is managed by {owner}; delete that Schema first or name another subject",
                    inputs.subject
                ),
            )
        }
        // An observed Schema writes nothing: it is allowed, with what Manage would refuse as a warning.
        Plan::Observe { would, .. } => match *would {
            Plan::Reject { subject, report } => warn(
                response,
                format!(
                    "observed only; Manage would refuse it: {}",
                    status::summary(subject.as_str(), &report)
                ),
            ),
            Plan::PolicyViolation(verdict) => warn(
                response,
                format!(
                    "observed only; Manage would refuse it: {}",
                    verdict.denial_message().unwrap_or_default()
                ),
            ),
            _ => response,
        },
        Plan::ReadOnly { .. } | Plan::AlreadyRegistered { .. } | Plan::Vanished { .. } | Plan::Register { .. } => {
            response
        }
    }
}

/// What in the request's object breaks its CRD's schema, one violation a
/// line, as `check` words each (without its file and line); `None` when
/// nothing does, or the kind is none of schemaops'.
fn schema_violations(request: &AdmissionRequest<DynamicObject>) -> Option<String> {
    let object = serde_json::to_value(request.object.as_ref()?).ok()?;
    let violations = crate::crd::validate::validate(&request.kind.kind, &object)?;
    let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Why an UPDATE of a Schema or SubjectConfig is refused for touching
/// `spec.registryRef`, which is fixed at creation (the CRD's CEL rules say the
/// same; this keeps the webhook's verdict equal where CEL is not evaluated).
fn registry_ref_changed(request: &AdmissionRequest<DynamicObject>) -> Option<String> {
    if request.operation != Operation::Update || ![KIND, SUBJECT_CONFIG_KIND].contains(&request.kind.kind.as_str()) {
        return None;
    }
    let registry_ref =
        |object: Option<&DynamicObject>| object.and_then(|object| object.data["spec"].get("registryRef").cloned());
    let (before, after) = (
        registry_ref(request.old_object.as_ref()),
        registry_ref(request.object.as_ref()),
    );
    match (&before, &after) {
        (None, None) => None,
        (Some(before), Some(after)) if before == after => None,
        (None, Some(_)) | (Some(_), None) => {
            Some("spec.registryRef: registryRef cannot be added or removed after creation".to_owned())
        }
        (Some(_), Some(_)) => Some("spec.registryRef: registryRef is immutable".to_owned()),
    }
}

/// The `spec.registryRef` of a Schema or SubjectConfig being created or updated.
fn bound_registry(request: &AdmissionRequest<DynamicObject>) -> Option<RegistryRef> {
    if ![KIND, SUBJECT_CONFIG_KIND].contains(&request.kind.kind.as_str()) {
        return None;
    }
    let registry_ref = request.object.as_ref()?.data["spec"].get("registryRef")?;
    // A malformed ref is the schema validation's to refuse.
    serde_json::from_value(registry_ref.clone()).ok()
}

impl Admission {
    /// The policies' verdict on a bound object's spec alone (its subject,
    /// type, deletion policy, level and mode as written, and its registry):
    /// what needs no registry. `None` when the object cannot be read.
    fn judge_bound_spec(&self, request: &AdmissionRequest<DynamicObject>) -> Option<crate::policy::Verdict> {
        let policy = self.policies.context();
        if policy.policies.is_empty() {
            return None;
        }
        let with_namespace = |metadata: &mut kube::api::ObjectMeta| {
            if metadata.namespace.is_none() {
                metadata.namespace.clone_from(&request.namespace);
            }
        };
        if request.kind.kind == KIND {
            let (mut schema, previous) = objects_of::<Schema>(request, KIND).ok()?;
            with_namespace(&mut schema.metadata);
            Some(policy.judge_schema(&schema, previous.as_ref(), None, None))
        } else {
            let (mut config, previous) = objects_of::<SubjectConfig>(request, SUBJECT_CONFIG_KIND).ok()?;
            with_namespace(&mut config.metadata);
            Some(policy.judge_subject_config(&config, previous.as_ref(), None))
        }
    }

    /// Judges an object bound to a registry connection: a policy its spec
    /// breaks (a registry its namespace may not use, among others), a ref its
    /// namespace may not use, or to a connection being deleted, and a
    /// SubjectConfig asking for a mode or data-contract settings its
    /// connection's registry was found to lack, are denied; an object managed
    /// through a `readOnly` connection is warned that it is only observed;
    /// otherwise it is allowed with a warning (the webhook judges against the
    /// default registry only, so the controller judges this one against its
    /// own, and a connection missing or not ready yet makes it wait, not fail).
    async fn review_bound(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        mut response: AdmissionResponse,
        registry_ref: &RegistryRef,
    ) -> AdmissionResponse {
        if let Some(verdict) = self.judge_bound_spec(request) {
            if let Some(message) = verdict.denial_message() {
                return deny(response, CODE_FORBIDDEN, "Forbidden", message);
            }
            for warning in verdict.warnings() {
                response = warn(response, warning.to_string());
            }
        }
        let unjudged = format!(
            "spec.registryRef names {registry_ref}: the admission webhook does not judge objects bound to a \
             registry connection yet; the controller checks this one against that registry and reports in its \
             status"
        );
        let Some(connections) = &self.connections else {
            return warn(response, unjudged);
        };
        let namespace = request.namespace.as_deref().unwrap_or_default();
        if let Ok(connection) = connections.connection(namespace, registry_ref).await {
            if let Some(problem) =
                settings_asked(request).and_then(|asked| rules::unsupported_settings(&connection, asked))
            {
                return deny(response, CODE_INVALID, "Invalid", problem);
            }
            if connection.spec.read_only && writes(request) {
                response = warn(
                    response,
                    format!(
                        "spec.registryRef: {registry_ref} is readOnly, so this object is observed (as with \
                         managementPolicy: Observe) and nothing is written"
                    ),
                );
            }
        }
        match connections.resolve(namespace, Some(registry_ref)).await {
            Ok(_) => warn(response, unjudged),
            Err(error @ (ResolveError::NamespaceNotAllowed { .. } | ResolveError::Deleting { .. })) => deny(
                response,
                CODE_FORBIDDEN,
                "Forbidden",
                format!("spec.registryRef: {error}"),
            ),
            Err(error) => warn(
                response,
                format!("spec.registryRef: {error}; the object waits until its registry can be used"),
            ),
        }
    }
}

/// What a SubjectConfig being created or updated asks its registry to hold;
/// `None` for a Schema or an object that does not read as a SubjectConfig.
fn settings_asked(request: &AdmissionRequest<DynamicObject>) -> Option<rules::SettingsAsked> {
    if request.kind.kind != SUBJECT_CONFIG_KIND {
        return None;
    }
    let (config, _) = objects_of::<SubjectConfig>(request, SUBJECT_CONFIG_KIND).ok()?;
    Some(rules::SettingsAsked {
        manage: config.spec.management_policy.is_manage(),
        subject_mode: config.spec.mode.is_some(),
        contract_settings: !config.spec.contract.is_empty(),
    })
}

/// Whether the object being created or updated is managed (would write to its registry).
fn writes(request: &AdmissionRequest<DynamicObject>) -> bool {
    request.object.as_ref().is_some_and(|object| {
        object.data["spec"]
            .get("managementPolicy")
            .is_none_or(|policy| policy == "Manage")
    })
}

/// The request's object as a `kind` (with the object before an UPDATE, when
/// it reads as one), or why the request cannot be judged.
pub(super) fn objects_of<T: serde::de::DeserializeOwned>(
    request: &AdmissionRequest<DynamicObject>,
    kind: &str,
) -> Result<(T, Option<T>), String> {
    let typed = |object: &DynamicObject| serde_json::to_value(object).and_then(serde_json::from_value::<T>);
    let object = request
        .object
        .as_ref()
        .ok_or_else(|| "the request carries no object".to_owned())?;
    let object = typed(object).map_err(|error| format!("the object is not a valid {kind}: {error}"))?;
    let previous = request.old_object.as_ref().and_then(|old| typed(old).ok());
    Ok((object, previous))
}

pub(super) fn deny(mut response: AdmissionResponse, code: u16, reason: &str, message: String) -> AdmissionResponse {
    response.allowed = false;
    response.result = Status::failure(&truncate_message(&message, MAX_MESSAGE_BYTES), reason).with_code(code);
    response
}

/// Adds `warning`, in parts when it is longer than the API server passes on whole.
pub(super) fn warn(mut response: AdmissionResponse, warning: String) -> AdmissionResponse {
    response
        .warnings
        .get_or_insert_with(Vec::new)
        .extend(super::warning::parts(&warning));
    response
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn schema_object(name: &str, subject: &str, text: &str) -> Value {
        json!({
            "apiVersion": "schemaops.dev/v1alpha1",
            "kind": "Schema",
            "metadata": {"name": name, "namespace": "default", "generation": 1},
            "spec": {"subject": subject, "schemaType": "AVRO", "schema": text}
        })
    }

    fn request(
        operation: &str,
        kind: &str,
        object: Option<Value>,
        old: Option<Value>,
    ) -> AdmissionRequest<DynamicObject> {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "uid-1",
                "kind": {"group": API_GROUP, "version": "v1alpha1", "kind": kind},
                "resource": {"group": API_GROUP, "version": "v1alpha1", "resource": "schemas"},
                "name": "orders",
                "namespace": "default",
                "operation": operation,
                "userInfo": {},
                "object": object,
                "oldObject": old
            }
        });
        parse(body.to_string().as_bytes()).unwrap()
    }

    /// An admission on an empty embedded registry in `folder`.
    async fn admission(folder: &std::path::Path, schemas: Vec<Schema>) -> Admission {
        let registry = crate::commands::registry::open_registry(&folder.join("registry.db"), None, Checker::default())
            .await
            .unwrap();
        Admission {
            registry: Arc::new(registry),
            connections: None,
            checker: Checker::default(),
            view: Arc::new(FixedView {
                schemas,
                subject_configs: Vec::new(),
            }),
            config_maps: Arc::new(FixedConfigMaps::default()),
            namespace: None,
            policies: PolicySource::default(),
        }
    }

    const TEXT: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;

    #[tokio::test]
    async fn an_update_that_adds_changes_or_removes_the_registry_ref_is_denied() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let with_ref = |name: &str| {
            let mut object = schema_object("orders", "orders-value", TEXT);
            object["spec"]["registryRef"] = json!({"kind": "SchemaRegistry", "name": name});
            object
        };
        let plain = schema_object("orders", "orders-value", TEXT);
        for (case, old, new, message) in [
            ("added", plain.clone(), with_ref("a"), "cannot be added or removed"),
            ("removed", with_ref("a"), plain.clone(), "cannot be added or removed"),
            ("changed", with_ref("a"), with_ref("b"), "registryRef is immutable"),
        ] {
            let response = admission.review(&request("UPDATE", KIND, Some(new), Some(old))).await;
            assert!(!response.allowed, "{case}: {response:?}");
            assert!(
                response.result.message.contains(message),
                "{case}: {}",
                response.result.message
            );
        }
        let response = admission
            .review(&request("UPDATE", KIND, Some(with_ref("a")), Some(with_ref("a"))))
            .await;
        assert!(response.allowed, "{response:?}");
    }

    #[tokio::test]
    async fn a_schema_bound_to_a_registry_connection_is_not_judged_against_the_default_registry() {
        let folder = tempfile::tempdir().unwrap();
        let holder: Schema = serde_json::from_value(schema_object("holder", "orders-value", TEXT)).unwrap();
        let admission = admission(folder.path(), vec![holder]).await;
        // Without a ref it would be denied: another Schema manages the subject in the default registry.
        let plain = schema_object("orders", "orders-value", TEXT);
        let response = admission.review(&request("CREATE", KIND, Some(plain), None)).await;
        assert!(!response.allowed, "{response:?}");
        let mut bound = schema_object("orders", "orders-value", TEXT);
        bound["spec"]["registryRef"] = json!({"kind": "SchemaRegistry", "name": "team-registry"});
        let response = admission.review(&request("CREATE", KIND, Some(bound), None)).await;
        assert!(response.allowed, "{response:?}");
        let warnings = response.warnings.unwrap_or_default().join(" ");
        assert!(
            warnings.contains("SchemaRegistry/team-registry") && warnings.contains("does not judge"),
            "{warnings}"
        );
    }

    /// A cluster holding one ClusterSchemaRegistry, `shared` (embedded), that allows `team-a` only.
    struct OneSharedRegistry;

    #[async_trait]
    impl crate::connections::ClusterReads for OneSharedRegistry {
        async fn schema_registry(
            &self,
            _namespace: &str,
            _name: &str,
        ) -> Result<Option<crate::crd::SchemaRegistry>, ResolveError> {
            Ok(None)
        }

        async fn cluster_schema_registry(
            &self,
            name: &str,
        ) -> Result<Option<crate::crd::ClusterSchemaRegistry>, ResolveError> {
            let shared = json!({
                "apiVersion": "schemaops.dev/v1alpha1", "kind": "ClusterSchemaRegistry",
                "metadata": {"name": "shared", "uid": "u", "generation": 1},
                "spec": {"embedded": {}, "allowedNamespaces": {"names": ["team-a"]}}
            });
            Ok((name == "shared").then(|| serde_json::from_value(shared).unwrap()))
        }

        async fn namespace_labels(
            &self,
            _name: &str,
        ) -> Result<std::collections::BTreeMap<String, String>, ResolveError> {
            Ok(std::collections::BTreeMap::new())
        }

        async fn source(
            &self,
            _source: &crate::connections::rules::Source,
        ) -> Result<Option<crate::connections::Fetched>, ResolveError> {
            Ok(None)
        }
    }

    #[tokio::test]
    async fn a_registry_ref_the_namespace_may_not_use_is_denied_and_one_that_may_yet_work_is_warned_about() {
        let folder = tempfile::tempdir().unwrap();
        let mut admission = admission(folder.path(), Vec::new()).await;
        admission.connections = Some(Arc::new(Connections::new(
            Arc::clone(&admission.registry),
            Some(Arc::clone(&admission.registry)),
            Arc::new(OneSharedRegistry),
            Checker::default(),
        )));
        let bound = |kind: &str, name: &str| {
            let mut object = schema_object("orders", "orders-value", TEXT);
            object["spec"]["registryRef"] = json!({"kind": kind, "name": name});
            object
        };
        let in_namespace = |namespace: &str, object: Value| {
            let mut request = request("CREATE", KIND, Some(object), None);
            request.namespace = Some(namespace.to_owned());
            request
        };
        let denied = admission
            .review(&in_namespace("team-c", bound("ClusterSchemaRegistry", "shared")))
            .await;
        assert!(!denied.allowed, "{denied:?}");
        assert_eq!(denied.result.code, CODE_FORBIDDEN);
        assert!(
            denied
                .result
                .message
                .contains("ClusterSchemaRegistry/shared does not allow namespace team-c"),
            "{}",
            denied.result.message
        );
        // Allowed, then waits: not checked yet, or not created yet (it may come in the same sync).
        for (namespace, object, says) in [
            ("team-a", bound("ClusterSchemaRegistry", "shared"), "is not ready"),
            ("team-a", bound("SchemaRegistry", "later"), "does not exist"),
        ] {
            let response = admission.review(&in_namespace(namespace, object)).await;
            assert!(response.allowed, "{response:?}");
            let warnings = response.warnings.unwrap_or_default().join(" ");
            assert!(warnings.contains(says) && warnings.contains("waits"), "{warnings}");
        }
    }

    #[tokio::test]
    async fn a_first_schema_for_a_subject_is_allowed() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let object = schema_object("orders", "orders-value", TEXT);
        let response = admission.review(&request("CREATE", KIND, Some(object), None)).await;
        assert!(response.allowed, "{response:?}");
        assert_eq!(response.uid, "uid-1");
    }

    #[tokio::test]
    async fn an_unparseable_schema_is_denied_as_invalid() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let object = schema_object("orders", "orders-value", "{\"type\": ");
        let response = admission.review(&request("CREATE", KIND, Some(object), None)).await;
        assert!(!response.allowed);
        assert_eq!(response.result.code, CODE_INVALID);
        assert_eq!(response.result.reason, "Invalid");
        assert!(!response.result.message.is_empty());
    }

    #[tokio::test]
    async fn a_bad_subject_name_is_denied_as_invalid() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let object = schema_object("orders", "", TEXT);
        let response = admission.review(&request("CREATE", KIND, Some(object), None)).await;
        assert!(!response.allowed);
        assert!(
            response.result.message.starts_with("spec.subject"),
            "{}",
            response.result.message
        );
    }

    #[tokio::test]
    async fn a_claim_on_a_held_subject_is_forbidden_and_names_the_holder() {
        let folder = tempfile::tempdir().unwrap();
        let mut holder: Schema = serde_json::from_value(schema_object("first", "orders-value", TEXT)).unwrap();
        holder.status = Some(crate::crd::SchemaStatus {
            subject: Some("orders-value".to_owned()),
            ..Default::default()
        });
        let admission = admission(folder.path(), vec![holder]).await;
        let object = schema_object("second", "orders-value", TEXT);
        let response = admission.review(&request("CREATE", KIND, Some(object), None)).await;
        assert!(!response.allowed);
        assert_eq!(response.result.code, CODE_FORBIDDEN);
        assert!(
            response.result.message.contains("Schema default/first"),
            "{}",
            response.result.message
        );
    }

    #[tokio::test]
    async fn deletes_other_kinds_and_status_writes_are_allowed() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let broken = schema_object("orders", "orders-value", "not a schema");
        let delete = request("DELETE", KIND, None, Some(broken.clone()));
        assert!(admission.review(&delete).await.allowed);
        let other = request("CREATE", "Deployment", Some(broken.clone()), None);
        assert!(admission.review(&other).await.allowed);
        let mut status = request("UPDATE", KIND, Some(broken.clone()), None);
        status.sub_resource = Some("status".to_owned());
        assert!(admission.review(&status).await.allowed);
        let watching_elsewhere = Admission {
            namespace: Some("kafka".to_owned()),
            ..admission
        };
        let create = request("CREATE", KIND, Some(broken), None);
        assert!(watching_elsewhere.review(&create).await.allowed);
    }

    #[tokio::test]
    async fn fields_outside_the_crd_schema_are_denied_as_invalid_in_every_kind() {
        let folder = tempfile::tempdir().unwrap();
        let admission = admission(folder.path(), Vec::new()).await;
        let mut schema = schema_object("orders", "orders-value", TEXT);
        schema["spec"]["schemaTyp"] = json!("PROTOBUF");
        let config = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SubjectConfig",
            "metadata": {"name": "orders", "namespace": "default"},
            "spec": {"subject": "orders-value", "compatibility": "FULLY"}
        });
        let policy = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SchemaPolicy", "metadata": {"name": "p"},
            "spec": {"rules": {"naming": {"avroNamespce": "com.acme.*"}}}
        });
        for (kind, object, expected) in [
            (KIND, schema, "spec.schemaTyp: unknown field (did you mean schemaType?)"),
            (
                SUBJECT_CONFIG_KIND,
                config,
                "spec.compatibility: unsupported value \"FULLY\"",
            ),
            (
                SCHEMA_POLICY_KIND,
                policy,
                "spec.rules.naming.avroNamespce: unknown field (did you mean avroNamespace?)",
            ),
        ] {
            let response = admission.review(&request("CREATE", kind, Some(object), None)).await;
            assert!(!response.allowed, "{kind}");
            assert_eq!(response.result.code, CODE_INVALID);
            assert!(
                response.result.message.starts_with(expected),
                "{}",
                response.result.message
            );
        }
    }

    #[test]
    fn a_denial_message_is_capped_under_the_condition_limit() {
        let request = request("CREATE", KIND, None, None);
        let response = deny(
            AdmissionResponse::from(&request),
            CODE_INVALID,
            "Invalid",
            "x".repeat(100 * 1024),
        );
        assert!(response.result.message.len() <= MAX_MESSAGE_BYTES);
    }

    #[test]
    fn the_reply_is_an_admission_review_v1() {
        let request = request("CREATE", KIND, None, None);
        let review = serde_json::to_value(into_review(AdmissionResponse::from(&request))).unwrap();
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(review["response"]["uid"], "uid-1");
    }
}

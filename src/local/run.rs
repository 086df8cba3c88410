//! One `apply` run: manifests into the stored objects (all or nothing),
//! then every SubjectConfig and Schema reconciled against the registry.
//!
//! A history is written in order: once the registry fails transiently (an
//! outage, a registry without a leader, a store error), the run stops. The
//! object whose edit failed keeps that edit as pending, and no later edit of
//! it, nor of any other object, is tried: nothing is judged against a
//! history that skipped a version. [`Interruption`] says what was left.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::manifests::{Manifest, ManifestError, Origin};
use super::objects::{Objects, ObjectsError};
use super::policies::{self, PolicyError, RunPolicies};
use crate::compat::Checker;
use crate::connections::RegistryScope;
use crate::controller::judge::PolicyContext;
use crate::controller::view::{ObjectKey, SubjectView};
use crate::controller::{schema, subject_config};
use crate::crd::conditions::ConditionType;
use crate::crd::{ManagementPolicy, ResourceKind, Schema, SubjectConfig};
use crate::registry::Registry;

/// The registries of one run: the command's own for objects without a
/// `registryRef`, and one for each connection an object is bound to.
pub struct Registries<'a> {
    /// For objects without a `registryRef`.
    pub default: &'a dyn Registry,
    /// Each bound connection's registry, by the scope of its objects. An
    /// object whose scope is missing (a stored object whose connection
    /// cannot be followed in this run) is left as it is.
    pub bound: BTreeMap<RegistryScope, BoundRegistry<'a>>,
}

/// A connection's registry in one run.
#[derive(Clone, Copy)]
pub struct BoundRegistry<'a> {
    /// The registry.
    pub registry: &'a dyn Registry,
    /// The connection is `readOnly`: its objects are observed, never written.
    pub read_only: bool,
}

impl<'a> Registries<'a> {
    /// Only `registry`, for runs where no object names a connection.
    pub fn single(registry: &'a dyn Registry) -> Self {
        Self {
            default: registry,
            bound: BTreeMap::new(),
        }
    }

    /// The registry of `scope`; `None` for a connection not followed in this run.
    pub fn of(&self, scope: &RegistryScope) -> Option<BoundRegistry<'a>> {
        match scope {
            RegistryScope::Default => Some(BoundRegistry {
                registry: self.default,
                read_only: false,
            }),
            bound => self.bound.get(bound).copied(),
        }
    }
}

/// The registry scope of a Schema.
pub fn schema_scope(schema: &Schema) -> RegistryScope {
    RegistryScope::of(
        schema.metadata.namespace.as_deref().unwrap_or_default(),
        schema.spec.registry_ref.as_ref(),
    )
}

/// The registry scope of a SubjectConfig.
pub fn config_scope(config: &SubjectConfig) -> RegistryScope {
    RegistryScope::of(
        config.metadata.namespace.as_deref().unwrap_or_default(),
        config.spec.registry_ref.as_ref(),
    )
}

/// How many passes over the Schemas at most: a Schema whose references name
/// a subject registered later in the same run succeeds on the next pass.
const MAX_PASSES: usize = 3;

/// Why a run stopped before reconciling.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The manifests could not be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// The stored objects could not be read or written.
    #[error(transparent)]
    Objects(#[from] ObjectsError),
    /// The policies cannot be used.
    #[error(transparent)]
    Policies(#[from] PolicyError),
    /// The registry connections cannot be used.
    #[error(transparent)]
    Connections(#[from] super::connections::ConnectionError),
    /// A manifest is an edit the API server would refuse.
    #[error("{origin}: {problem}")]
    Refused {
        /// Where it is.
        origin: Origin,
        /// Why.
        problem: String,
    },
    /// `--require-namespace-labels`, and a policy that selects namespaces by
    /// label would judge objects of namespaces whose labels are unknown.
    #[error("{}", unlabelled_message(unlabelled))]
    UnlabelledNamespaces {
        /// Each namespace with the policies that select by label.
        unlabelled: Vec<(String, Vec<String>)>,
    },
}

/// The warning (or, with `--require-namespace-labels`, the error) for
/// namespaces whose labels are unknown to policies that select by label.
pub fn unlabelled_message(unlabelled: &[(String, Vec<String>)]) -> String {
    let names: Vec<&str> = unlabelled.iter().map(|(name, _)| name.as_str()).collect();
    let policies: std::collections::BTreeSet<&str> = unlabelled
        .iter()
        .flat_map(|(_, policies)| policies.iter().map(String::as_str))
        .collect();
    format!(
        "SchemaPolicy {} selects namespaces by label, but the labels of namespace {} are unknown here, so \
         its objects are judged as if the namespace had no labels; give them with a Namespace manifest \
         (in a --policy file, e.g. `kubectl get namespaces -o yaml > namespaces.yaml`) or \
         --namespace-labels NAMESPACE:KEY=VALUE",
        policies.into_iter().collect::<Vec<_>>().join(", "),
        names.join(", ")
    )
}

/// An object this run applied, as it ended.
#[derive(Debug, Clone)]
pub enum Applied {
    /// A Schema.
    Schema(Box<Schema>),
    /// A SubjectConfig.
    SubjectConfig(Box<SubjectConfig>),
}

/// One manifest document naming one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Schema or SubjectConfig.
    pub kind: ResourceKind,
    /// The object.
    pub key: ObjectKey,
    /// Where the manifest is; `None` for an object stored by an earlier run.
    pub origin: Option<Origin>,
}

impl std::fmt::Display for Edit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind.as_str(), self.key)?;
        match &self.origin {
            Some(origin) => write!(f, ", the edit in {origin}"),
            None => f.write_str(", as stored by an earlier run"),
        }
    }
}

/// The registry failed transiently and the run stopped there.
#[derive(Debug, Clone)]
pub struct Interruption {
    /// What the registry said.
    pub error: String,
    /// The edit that failed: it stays pending (its object's status says so).
    pub pending: Edit,
    /// The edits this run did not try, in manifest order.
    pub not_tried: Vec<Edit>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The objects this run applied, as they ended, in manifest order.
    pub applied: Vec<Applied>,
    /// Set when the registry failed and the run stopped early.
    pub interrupted: Option<Interruption>,
    /// Namespaces of objects this run judged whose labels are unknown to a
    /// policy that selects namespaces by label, each with those policies.
    pub unlabelled: Vec<(String, Vec<String>)>,
}

/// Applies the manifests `loaded` (as [`super::manifests::read`] gives
/// them) to the objects kept in `data` and reconciles each object against
/// the registry of its scope in `registries`, judged by the stored
/// SchemaPolicies and `policies` (from `--policy` files, in force for this
/// run only), saves, and returns what the run did.
///
/// ConfigMaps and SubjectConfigs go first (so a level change applies to the
/// schemas of the same run); then each Schema manifest is applied and
/// reconciled in turn, so successive edits of one Schema in one run are
/// judged one after the other, as the operator would see them arrive.
///
/// # Errors
/// [`ApplyError`] when a manifest is refused, or a policy is invalid (then
/// nothing is stored or registered), or the objects file cannot be used.
pub async fn apply_loaded(
    loaded: Vec<(Origin, Manifest)>,
    policies: &RunPolicies,
    data: &std::path::Path,
    registries: &Registries<'_>,
    checker: &Checker,
    now: &Time,
) -> Result<Outcome, ApplyError> {
    let objects = Objects::load(data)?;
    // Every edit must be acceptable before anything is stored or registered.
    let mut trial = objects.clone();
    for (origin, manifest) in &loaded {
        trial
            .apply(manifest.clone(), now)
            .map_err(|problem| ApplyError::Refused {
                origin: origin.clone(),
                problem,
            })?;
    }
    let policy = policies::context(&trial, policies)?;
    let judged = loaded.iter().filter_map(|(_, manifest)| match manifest {
        Manifest::Schema(schema) => schema.metadata.namespace.as_deref(),
        Manifest::SubjectConfig(config) => config.metadata.namespace.as_deref(),
        _ => None,
    });
    let unlabelled = policies::unlabelled(&policy, &trial, policies, judged);
    if policies.require_namespace_labels && !unlabelled.is_empty() {
        return Err(ApplyError::UnlabelledNamespaces { unlabelled });
    }
    let mut run = Run {
        objects,
        policy,
        registries,
        checker,
        now,
        applied: Vec::new(),
        interrupted: None,
    };
    let (schemas, settings): (Vec<_>, Vec<_>) = loaded
        .into_iter()
        .partition(|(_, manifest)| matches!(manifest, Manifest::Schema(_)));
    for (origin, manifest) in settings {
        if let Manifest::SubjectConfig(config) = &manifest {
            run.remember(ResourceKind::SubjectConfig, ObjectKey::of(&config.metadata), &origin);
        }
        run.objects.apply(manifest, now).map_err(internal)?;
    }
    run.reconcile_configs().await;
    for (origin, manifest) in schemas {
        let Manifest::Schema(schema) = &manifest else { continue };
        let key = ObjectKey::of(&schema.metadata);
        if let Some(interruption) = &mut run.interrupted {
            interruption.not_tried.push(Edit {
                kind: ResourceKind::Schema,
                key,
                origin: Some(origin),
            });
            continue;
        }
        run.remember(ResourceKind::Schema, key.clone(), &origin);
        run.objects.apply(manifest, now).map_err(internal)?;
        if let Some(index) = run
            .objects
            .schemas
            .iter()
            .position(|s| ObjectKey::of(&s.metadata) == key)
        {
            run.reconcile_schema(index).await;
        }
    }
    run.settle().await;
    run.objects.save(data)?;
    let mut outcome = run.finish();
    outcome.unlabelled = unlabelled;
    Ok(outcome)
}

/// The state of one run.
struct Run<'a> {
    objects: Objects,
    /// The policies in force and the namespaces known.
    policy: PolicyContext,
    registries: &'a Registries<'a>,
    checker: &'a Checker,
    now: &'a Time,
    /// The objects applied, with the manifest that last set each.
    applied: Vec<(ResourceKind, ObjectKey, Origin)>,
    interrupted: Option<Interruption>,
}

impl Run<'_> {
    fn remember(&mut self, kind: ResourceKind, key: ObjectKey, origin: &Origin) {
        match self
            .applied
            .iter_mut()
            .find(|(k, known, _)| *k == kind && *known == key)
        {
            Some(entry) => entry.2 = origin.clone(),
            None => self.applied.push((kind, key, origin.clone())),
        }
    }

    /// The manifest that last set the object in this run.
    fn origin_of(&self, kind: ResourceKind, key: &ObjectKey) -> Option<Origin> {
        self.applied
            .iter()
            .find(|(k, known, _)| *k == kind && known == key)
            .map(|(_, _, origin)| origin.clone())
    }

    /// Stops the run at `pending`.
    fn interrupt(&mut self, kind: ResourceKind, key: ObjectKey, error: String) {
        let origin = self.origin_of(kind, &key);
        tracing::warn!(object = %key, error = %error, "The registry failed; the run stops here");
        self.interrupted = Some(Interruption {
            error,
            pending: Edit { kind, key, origin },
            not_tried: Vec::new(),
        });
    }

    /// What the stored objects of the registry `scope` say about `subject`
    /// (claims are per registry); a claim a policy refuses never wins it.
    fn view(&self, scope: &RegistryScope, subject: &str) -> SubjectView {
        SubjectView::of_claimable(
            subject,
            self.objects
                .schemas
                .iter()
                .filter(|schema| schema_scope(schema) == *scope),
            self.objects
                .subject_configs
                .iter()
                .filter(|config| config_scope(config) == *scope),
            |claimant| self.policy.may_claim(claimant, subject),
        )
    }

    async fn reconcile_configs(&mut self) {
        for index in 0..self.objects.subject_configs.len() {
            let scope = config_scope(&self.objects.subject_configs[index]);
            let Some(bound) = self.registries.of(&scope) else {
                continue;
            };
            let mut config = self.objects.subject_configs[index].clone();
            // A read-only connection: its objects are observed, never written (as the operator does).
            if bound.read_only && config.spec.management_policy.is_manage() {
                config.spec.management_policy = ManagementPolicy::Observe;
            }
            let view = self.view(&scope, &config.spec.subject);
            match subject_config::reconcile(&config, &view, bound.registry, &self.policy, self.now).await {
                Ok(reconciled) => self.objects.subject_configs[index].status = Some(reconciled.status),
                Err(error) => {
                    let key = ObjectKey::of(&config.metadata);
                    self.interrupt(ResourceKind::SubjectConfig, key, error.to_string());
                    return;
                }
            }
        }
    }

    /// Reconciles one stored Schema; true when its status changed. A
    /// transient failure interrupts the run.
    async fn reconcile_schema(&mut self, index: usize) -> bool {
        let scope = schema_scope(&self.objects.schemas[index]);
        let Some(bound) = self.registries.of(&scope) else {
            return false;
        };
        let mut observed = self.objects.schemas[index].clone();
        // A read-only connection: its objects are observed, never written (as the operator does).
        if bound.read_only {
            observed.spec.management_policy = ManagementPolicy::Observe;
        }
        let schema = &observed;
        let view = self.view(&scope, &schema.spec.subject);
        let namespace = schema.metadata.namespace.as_deref().unwrap_or_default();
        let config_map = schema
            .spec
            .schema_from
            .as_ref()
            .and_then(|from| self.objects.config_map_data(namespace, &from.config_map_key_ref.name));
        let reconciled = schema::reconcile(
            schema,
            &view,
            config_map,
            bound.registry,
            self.checker,
            &self.policy,
            self.now,
        )
        .await;
        let key = ObjectKey::of(&schema.metadata);
        let mut status = reconciled.status;
        if let Some(error) = reconciled.retry {
            let origin = self.origin_of(ResourceKind::Schema, &key);
            mark_pending(&mut status, origin.as_ref());
            self.interrupt(ResourceKind::Schema, key, error.to_string());
        }
        let changed = schema::status::changed(self.objects.schemas[index].status.as_ref(), &status);
        self.objects.schemas[index].status = Some(status);
        changed
    }

    /// Passes over every stored Schema until nothing changes: a Schema whose
    /// references name a subject registered later in the run succeeds now.
    async fn settle(&mut self) {
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            for index in 0..self.objects.schemas.len() {
                if self.interrupted.is_some() {
                    return;
                }
                changed |= self.reconcile_schema(index).await;
            }
            if !changed {
                break;
            }
        }
    }

    /// The applied objects in manifest order, and the interruption.
    fn finish(self) -> Outcome {
        let objects = &self.objects;
        let applied = self
            .applied
            .iter()
            .filter_map(|(kind, key, _)| match kind {
                ResourceKind::Schema => objects
                    .schemas
                    .iter()
                    .find(|s| ObjectKey::of(&s.metadata) == *key)
                    .map(|schema| Applied::Schema(Box::new(schema.clone()))),
                ResourceKind::SubjectConfig => objects
                    .subject_configs
                    .iter()
                    .find(|s| ObjectKey::of(&s.metadata) == *key)
                    .map(|config| Applied::SubjectConfig(Box::new(config.clone()))),
            })
            .collect();
        Outcome {
            applied,
            interrupted: self.interrupted,
            unlabelled: Vec::new(),
        }
    }
}

/// Says in the Reconciling condition which edit is pending.
fn mark_pending(status: &mut crate::crd::SchemaStatus, origin: Option<&Origin>) {
    let Some(origin) = origin else { return };
    if let Some(condition) = status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == ConditionType::Reconciling.as_str() && c.status == "True")
    {
        condition.message = crate::crd::conditions::truncate_message(
            &format!(
                "the edit in {origin} is pending; later edits of this object were not tried in this run: {}",
                condition.message
            ),
            crate::crd::conditions::MAX_MESSAGE_BYTES,
        );
    }
}

/// The trial run accepted every edit, so the real one cannot refuse any.
fn internal(problem: String) -> ApplyError {
    ApplyError::Refused {
        origin: Origin {
            path: PathBuf::new(),
            document: 0,
            line: 0,
        },
        problem,
    }
}

//! The controllers wired to the Kubernetes API: watches, finalizers, status
//! writes (server-side apply, only when something changed), events on
//! transitions, and retries. The decisions themselves live in
//! [`schema`](super::schema) and [`subject_config`](super::subject_config).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use super::schema::cleanup::{self, CleanupOutcome};
use super::view::{ObjectKey, SubjectView};
use super::{FIELD_MANAGER, FINALIZER, schema, subject_config};
use crate::compat::Checker;
use crate::connections::{Connections, RegistryScope, ResolveError};
use crate::controller::judge::{PolicyContext, PolicySource};
use crate::crd::conditions::{ConditionType, Reason, find_condition, set_condition};
use crate::crd::{
    ClusterSchemaRegistry, RegistryKind, RegistryRef, ResourceKind, Schema, SchemaRegistry, SubjectConfig,
};
use crate::metrics::{Metrics, ReconcileResult};
use crate::registry::SubjectName;
use registries::ConnectionObject as _;

/// The first retry delay after a transient failure; it doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
/// The longest retry delay.
const MAX_RETRY: Duration = Duration::from_secs(300);
/// How often a Schema waiting for another to release its subject looks again
/// (a watch on the other Schemas usually wakes it sooner).
const CONFLICT_RETRY: Duration = Duration::from_secs(30);
/// How often an object waiting for its registry connection looks again (the
/// connection's watch usually wakes it sooner).
const REGISTRY_WAIT_RETRY: Duration = Duration::from_secs(30);
/// How often a deletion blocked by referrers looks again, without backing off.
const DELETION_RETRY: Duration = Duration::from_secs(5);

/// Why a reconcile failed; every failure is retried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API failed.
    #[error("failed to {action}")]
    Kube {
        /// What was being done.
        action: &'static str,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The registry failed transiently.
    #[error("the registry failed")]
    Registry(#[source] crate::registry::Error),
    /// Deletion waits for referrers to go.
    #[error("deletion blocked: {0}")]
    DeletionBlocked(String),
    /// Deletion of a SubjectConfig waits: a policy forbids the level its
    /// subject would fall back to, so the level stays.
    #[error("deletion refused by policy: {0}")]
    DeletionRefusedByPolicy(String),
    /// The finalizer helper failed.
    #[error("the finalizer failed")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
    /// The object's `registryRef` could not be resolved at a time it must be
    /// (the API server failed, or a deletion needs the registry).
    #[error("failed to resolve the registry")]
    Resolve(#[source] ResolveError),
    /// A registry connection's deletion waits for the objects bound to it.
    #[error("deletion waits: {0}")]
    ConnectionInUse(String),
}

impl Error {
    /// True when the reconcile waits on purpose (a deletion blocked by
    /// referrers or refused by a policy) rather than failed: it is retried
    /// at a steady pace.
    pub fn is_waiting(&self) -> bool {
        matches!(
            self,
            Error::Finalizer(inner)
                if matches!(
                    inner.as_ref(),
                    finalizer::Error::CleanupFailed(
                        Error::DeletionBlocked(_) | Error::DeletionRefusedByPolicy(_) | Error::ConnectionInUse(_)
                    )
                )
        )
    }

    /// The bounded reason, for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Kube { .. } => "KubernetesApi",
            Error::Registry(_) => Reason::RegistryUnavailable.as_str(),
            Error::DeletionBlocked(_) => Reason::ReferencedBySchemas.as_str(),
            Error::DeletionRefusedByPolicy(_) => Reason::PolicyViolation.as_str(),
            Error::Finalizer(_) => "Finalizer",
            Error::Resolve(error) => error.reason(),
            Error::ConnectionInUse(_) => "RegistryInUse",
        }
    }
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    scope: Scope,
    connections: Arc<Connections>,
    checker: Checker,
    schemas: Store<Schema>,
    /// The cached Schemas by subject, kept by the watch that wakes rivals.
    claims: Arc<Mutex<claims::Claims>>,
    configs: Store<SubjectConfig>,
    events: events::Publisher,
    resync: Duration,
    failures: Mutex<HashMap<ObjectKey, u32>>,
    metrics: Arc<Metrics>,
    policy: PolicySource,
}

impl Context {
    /// A context on `client` for tests: one namespace (`default`), the
    /// Schema cache holding `schemas`, an empty SubjectConfig cache.
    #[cfg(test)]
    fn for_tests(
        client: Client,
        registry: Arc<dyn crate::registry::Registry>,
        checker: Checker,
        schemas: &[Schema],
    ) -> Self {
        let mut schema_writer = kube::runtime::reflector::store::Writer::<Schema>::default();
        let mut claims = claims::Claims::default();
        for schema in schemas {
            schema_writer.apply_watcher_event(&watcher::Event::Apply(schema.clone()));
            claims.observe(schema);
        }
        let reads = Arc::new(crate::connections::KubeReads(client.clone()));
        Self {
            events: events::Publisher::new(client.clone(), "schemaops"),
            scope: Scope(Some("default".to_owned())),
            client,
            connections: Arc::new(Connections::new(registry, None, reads, checker)),
            checker,
            schemas: schema_writer.as_reader(),
            claims: Arc::new(Mutex::new(claims)),
            configs: kube::runtime::reflector::store::Writer::<SubjectConfig>::default().as_reader(),
            resync: Duration::from_secs(300),
            failures: Mutex::new(HashMap::new()),
            metrics: Arc::new(Metrics::default()),
            policy: PolicySource::default(),
        }
    }

    /// The view of `subject` in the registry `scope` from the caches; a claim
    /// `policy` forbids does not count, nor one on the same subject of
    /// another registry.
    fn view(&self, scope: &RegistryScope, subject: &str, policy: &PolicyContext) -> SubjectView {
        let schemas = schemas_naming(&self.schemas, &self.claims, subject);
        let configs = self.configs.state();
        SubjectView::of_claimable(
            subject,
            schemas
                .iter()
                .map(AsRef::as_ref)
                .filter(|schema| in_scope(*schema, scope)),
            configs
                .iter()
                .map(AsRef::as_ref)
                .filter(|config| in_scope(*config, scope)),
            |claimant| policy.may_claim(claimant, subject),
        )
    }

    /// The view of `subject` with the SubjectConfigs read from the API server
    /// rather than the cache: when one `kubectl apply` changes the level and
    /// the schema, the level's write precedes the schema's, and a fresh read
    /// is sure to see it, so the schema is judged under the new level.
    async fn view_with_fresh_configs(
        &self,
        scope: &RegistryScope,
        subject: &str,
        policy: &PolicyContext,
    ) -> Result<SubjectView, Error> {
        let configs = self
            .scope
            .api::<SubjectConfig>(&self.client)
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::Kube {
                action: "list the SubjectConfigs",
                source,
            })?;
        let schemas = schemas_naming(&self.schemas, &self.claims, subject);
        Ok(SubjectView::of_claimable(
            subject,
            schemas
                .iter()
                .map(AsRef::as_ref)
                .filter(|schema| in_scope(*schema, scope)),
            configs.items.iter().filter(|config| in_scope(*config, scope)),
            |claimant| policy.may_claim(claimant, subject),
        ))
    }

    /// The delay before the next retry of `key`, doubling with each failure in a row.
    fn backoff(&self, key: &ObjectKey) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = failures.entry(key.clone()).or_insert(0);
        *count = count.saturating_add(1);
        FIRST_RETRY.saturating_mul(1 << (*count - 1).min(8)).min(MAX_RETRY)
    }

    fn succeeded(&self, key: &ObjectKey) {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(key);
    }
}

/// A Schema or SubjectConfig, as the registry it lives in sees it.
trait Bound: Resource<DynamicType = ()> {
    /// Its `spec.registryRef`.
    fn registry_ref(&self) -> Option<&RegistryRef>;

    /// The registry scope its subject is claimed in.
    fn registry_scope(&self) -> RegistryScope {
        RegistryScope::of(
            self.meta().namespace.as_deref().unwrap_or_default(),
            self.registry_ref(),
        )
    }
}

impl Bound for Schema {
    fn registry_ref(&self) -> Option<&RegistryRef> {
        self.spec.registry_ref.as_ref()
    }
}

impl Bound for SubjectConfig {
    fn registry_ref(&self) -> Option<&RegistryRef> {
        self.spec.registry_ref.as_ref()
    }
}

fn in_scope(object: &impl Bound, scope: &RegistryScope) -> bool {
    object.registry_scope() == *scope
}

/// The namespaces the controllers watch: one, or all (`None`).
#[derive(Debug, Clone)]
struct Scope(Option<String>);

impl Scope {
    fn api<K>(&self, client: &Client) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match &self.0 {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        }
    }
}

/// The operator's settings.
pub struct Settings {
    /// The one namespace watched, or every namespace.
    pub namespace: Option<String>,
    /// The engine.
    pub checker: Checker,
    /// How often every resource is compared with the registry again.
    pub resync: Duration,
    /// How often the ConfigMaps that Schemas name are read again.
    pub config_map_poll: Duration,
    /// Where reconciles and rejections are counted.
    pub metrics: Arc<Metrics>,
    /// The policies in force, which the operator keeps current from its watches.
    pub policies: PolicySource,
    /// Bumped whenever the policies (or namespace labels) change: every
    /// Schema and SubjectConfig is then judged again.
    pub policy_changes: Option<tokio::sync::watch::Receiver<u64>>,
}

/// Runs the Schema and SubjectConfig controllers until `shutdown` resolves.
/// `ready` is called once both caches have their first full list.
pub async fn run(
    client: Client,
    connections: Arc<Connections>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ready: impl FnOnce() + Send + 'static,
) {
    Controllers::new(client, connections, settings)
        .run(shutdown, ready)
        .await;
}

/// Schema and SubjectConfig caches kept by watches of their own, for a
/// replica that serves the admission webhook while another replica leads:
/// a follower's controllers, and so their caches, do not run until it leads.
/// Returns the caches and the future that keeps them filled until `shutdown`.
pub fn watched_caches(
    client: &Client,
    namespace: Option<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (
    Store<Schema>,
    Store<SubjectConfig>,
    impl Future<Output = ()> + Send + 'static,
) {
    let scope = Scope(namespace);
    let (schemas, schema_writer) = reflector::store::<Schema>();
    let (configs, config_writer) = reflector::store::<SubjectConfig>();
    let schema_watch = slim_watch(scope.api::<Schema>(client), schema_writer);
    let config_watch = slim_watch(scope.api::<SubjectConfig>(client), config_writer);
    let keep_filled = async move {
        let schema_watch = schema_watch.default_backoff().for_each(log_watch_error);
        let config_watch = config_watch.default_backoff().for_each(log_watch_error);
        tokio::select! {
            _ = futures::future::join(schema_watch, config_watch) => {}
            () = shutdown => {}
        }
    };
    (schemas, configs, keep_filled)
}

/// A watch error is retried with backoff; it is worth a log line, no more.
fn log_watch_error<T>(event: Result<T, watcher::Error>) -> std::future::Ready<()> {
    if let Err(error) = event {
        tracing::debug!(
            error = &error as &dyn std::error::Error,
            "A cache's watch failed; retrying"
        );
    }
    std::future::ready(())
}

/// The Schema and SubjectConfig controllers, built but not running yet, so
/// that their caches can be shared (the admission webhook reads them).
pub struct Controllers {
    schema_controller: Controller<Schema>,
    config_controller: Controller<SubjectConfig>,
    policy_controller: Controller<crate::crd::SchemaPolicy>,
    namespaced_registry_controller: Controller<SchemaRegistry>,
    cluster_registry_controller: Controller<ClusterSchemaRegistry>,
    context: Arc<Context>,
    shutdown_tx: tokio::sync::watch::Sender<bool>,
}

impl Controllers {
    /// The Schema cache; filled once [`run`](Self::run) runs.
    pub fn schemas(&self) -> Store<Schema> {
        self.context.schemas.clone()
    }

    /// The SubjectConfig cache; filled once [`run`](Self::run) runs.
    pub fn subject_configs(&self) -> Store<SubjectConfig> {
        self.context.configs.clone()
    }

    /// Builds the controllers and their caches; each object's registry comes
    /// from `connections`.
    pub fn new(client: Client, connections: Arc<Connections>, settings: Settings) -> Self {
        build(client, connections, settings)
    }

    /// Runs the controllers until `shutdown` resolves. `ready` is called once
    /// both caches have their first full list.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + Sync + 'static,
        ready: impl FnOnce() + Send + 'static,
    ) {
        run_built(self, shutdown, ready).await;
    }
}

fn build(client: Client, connections: Arc<Connections>, settings: Settings) -> Controllers {
    let scope = Scope(settings.namespace.clone());
    let schemas_api = scope.api::<Schema>(&client);
    let configs_api = scope.api::<SubjectConfig>(&client);
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let stop = |mut receiver: tokio::sync::watch::Receiver<bool>| async move {
        let _ = receiver.wait_for(|stopped| *stopped).await;
    };

    let (config_store, config_changes) = slim_cache(configs_api.clone());
    let (schema_store, schema_changes) = slim_cache(schemas_api);
    // Every change the caches apply (the first list included) recounts the
    // policies, so their counts follow the objects and the statuses the
    // reconciles write, from the start rather than at the next RECOUNT.
    let (recount_tx, recount_rx) = tokio::sync::watch::channel(0_u64);
    let recount_tx = Arc::new(recount_tx);
    let config_changes = policies::recounting(config_changes, Arc::clone(&recount_tx));
    let schema_changes = policies::recounting(schema_changes, recount_tx);
    let config_controller =
        Controller::for_stream(config_changes, config_store.clone()).with_config(controller_config());
    let schema_controller =
        Controller::for_stream(schema_changes, schema_store.clone()).with_config(controller_config());

    // A connection that changes (its status above all) wakes the objects bound to it.
    let config_controller = woken_by_connections(config_controller, &config_store, &scope, &client);
    let schema_controller = woken_by_connections(schema_controller, &schema_store, &scope, &client);
    let namespaced_registry_controller =
        Controller::new(scope.api::<SchemaRegistry>(&client), watcher::Config::default())
            .graceful_shutdown_on(stop(shutdown_rx.clone()));
    let cluster_registry_controller = Controller::new(
        Api::<ClusterSchemaRegistry>::all(client.clone()),
        watcher::Config::default(),
    )
    .graceful_shutdown_on(stop(shutdown_rx.clone()));

    let by_subject = schema_store.clone();
    let claims = Arc::new(Mutex::new(claims::Claims::default()));
    let rivals = Arc::clone(&claims);
    let schema_controller = schema_controller
        // A Schema that changes or goes may release its subject to another
        // claimant, or stop referring to a subject whose deletion waits.
        .watches(
            scope.api::<Schema>(&client),
            watcher::Config::default(),
            move |changed: Schema| {
                let mut rivals = rivals.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                rivals.observe(&changed)
            },
        )
        .watches(configs_api, watcher::Config::default(), move |config: SubjectConfig| {
            schemas_where(&by_subject, |schema| schema.spec.subject == config.spec.subject)
        })
        // The ConfigMaps that Schemas name are read again on a period, never watched.
        .reconcile_on(sources::changed_sources(
            client.clone(),
            schema_store.clone(),
            settings.config_map_poll,
        ))
        .graceful_shutdown_on(stop(shutdown_rx.clone()));
    let config_controller = config_controller.graceful_shutdown_on(stop(shutdown_rx.clone()));
    let (schema_controller, config_controller) = match &settings.policy_changes {
        Some(changes) => (
            schema_controller.reconcile_all_on(policies::each_change(changes.clone())),
            config_controller.reconcile_all_on(policies::each_change(changes.clone())),
        ),
        None => (schema_controller, config_controller),
    };
    let policy_controller = policies::status_controller(&client)
        .reconcile_all_on(policies::each_change(recount_rx))
        .graceful_shutdown_on(stop(shutdown_rx));

    let context = Arc::new(Context {
        events: events::Publisher::new(client.clone(), "schemaops"),
        scope,
        client,
        connections,
        checker: settings.checker,
        schemas: schema_store.clone(),
        claims,
        configs: config_store.clone(),
        resync: settings.resync,
        failures: Mutex::new(HashMap::new()),
        metrics: settings.metrics,
        policy: settings.policies,
    });
    Controllers {
        schema_controller,
        config_controller,
        policy_controller,
        namespaced_registry_controller,
        cluster_registry_controller,
        context,
        shutdown_tx,
    }
}

/// `controller`, also reconciling the objects of `store` bound to a registry
/// connection (of either kind) whenever that connection changes.
fn woken_by_connections<K>(controller: Controller<K>, store: &Store<K>, scope: &Scope, client: &Client) -> Controller<K>
where
    K: Bound
        + Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let namespaced = store.clone();
    let cluster = store.clone();
    controller
        .watches(
            scope.api::<SchemaRegistry>(client),
            watcher::Config::default(),
            move |connection: SchemaRegistry| {
                bound_to(&namespaced, &registries::scope_of_connection(&connection.connection()))
            },
        )
        .watches(
            Api::<ClusterSchemaRegistry>::all(client.clone()),
            watcher::Config::default(),
            move |connection: ClusterSchemaRegistry| {
                bound_to(&cluster, &registries::scope_of_connection(&connection.connection()))
            },
        )
}

/// The cached objects of `store` bound to the registry `scope`, as references to reconcile.
fn bound_to<K: Bound + Clone>(store: &Store<K>, scope: &RegistryScope) -> Vec<ObjectRef<K>> {
    store
        .state_filter(|object| in_scope(object, scope))
        .iter()
        .map(|object| ObjectRef::from_obj(object.as_ref()))
        .collect()
}

async fn run_built(
    controllers: Controllers,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ready: impl FnOnce() + Send + 'static,
) {
    let Controllers {
        schema_controller,
        config_controller,
        policy_controller,
        namespaced_registry_controller,
        cluster_registry_controller,
        context,
        shutdown_tx,
    } = controllers;
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("Shutting down the controllers");
        let _ = shutdown_tx.send(true);
    });
    // Ready once both kinds can be listed (the API answers and the CRDs are
    // installed). Not `Store::wait_until_ready`: its one-waker channel would
    // race the controller's own wait for the same cache.
    let probe_client = context.client.clone();
    let probe_scope = context.scope.clone();
    tokio::spawn(async move {
        let probe = ListParams::default().limit(1);
        loop {
            let schemas = probe_scope.api::<Schema>(&probe_client).list_metadata(&probe).await;
            let configs = probe_scope
                .api::<SubjectConfig>(&probe_client)
                .list_metadata(&probe)
                .await;
            match (schemas, configs) {
                (Ok(_), Ok(_)) => break ready(),
                (Err(error), _) | (_, Err(error)) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "Cannot list the custom resources yet"
                    );
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    });

    let schemas = schema_controller
        .run(reconcile_schema, error_policy, Arc::clone(&context))
        .for_each(|result| async move { log_result(result) });
    let configs = config_controller
        .run(reconcile_config, error_policy, Arc::clone(&context))
        .for_each(|result| async move { log_result(result) });
    let namespaced_registries = namespaced_registry_controller
        .run(
            registries::reconcile_connection::<SchemaRegistry>,
            error_policy,
            Arc::clone(&context),
        )
        .for_each(|result| async move { log_result(result) });
    let cluster_registries = cluster_registry_controller
        .run(
            registries::reconcile_connection::<ClusterSchemaRegistry>,
            error_policy,
            Arc::clone(&context),
        )
        .for_each(|result| async move { log_result(result) });
    let policies = policy_controller
        .run(policies::reconcile_policy, error_policy, context)
        .for_each(|result| async move { log_result(result) });
    futures::join!(schemas, configs, policies, namespaced_registries, cluster_registries);
}

fn log_result<K: Resource, E: std::error::Error + 'static>(result: Result<(ObjectRef<K>, Action), E>)
where
    K::DynamicType: Clone,
{
    match result {
        Ok((object, _)) => tracing::trace!(%object, "Reconciled"),
        Err(error) => tracing::debug!(error = &error as &dyn std::error::Error, "Reconcile not done"),
    }
}

/// Every failed reconcile is retried, later each time it fails in a row.
fn error_policy<K: Resource<DynamicType = ()>>(object: Arc<K>, error: &Error, context: Arc<Context>) -> Action {
    let key = ObjectKey::of(object.meta());
    if error.is_waiting() {
        // Not a failure: the finalizer keeps the object until its referrers go.
        // A referrer's change usually wakes it first (the cache may lag that event).
        tracing::info!(kind = %K::kind(&()), object = %key, error = error as &dyn std::error::Error, "Deletion waits");
        return Action::requeue(DELETION_RETRY);
    }
    let delay = context.backoff(&key);
    tracing::warn!(
        kind = %K::kind(&()),
        object = %key,
        reason = error.reason(),
        error = error as &dyn std::error::Error,
        retry_in_seconds = delay.as_secs(),
        "Reconcile failed; retrying"
    );
    Action::requeue(delay)
}

/// Writes the whole status this controller owns, by server-side apply.
async fn patch_status<K>(context: &Context, key: &ObjectKey, status: &impl serde::Serialize) -> Result<(), Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(context.client.clone(), &key.namespace);
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    api.patch_status(
        &key.name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(|source| Error::Kube {
        action: "write the status",
        source,
    })?;
    Ok(())
}

/// Marks `conditions` as waiting for the registry `error` says cannot be
/// used: `Ready=False` and `Reconciling=True` with its reason, `Stalled=False`
/// (a connection that comes right needs no change to the object).
fn set_waiting(
    conditions: &mut Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
    error: &ResolveError,
    generation: Option<i64>,
    now: &Time,
) {
    let reason = error.reason();
    let message = crate::crd::conditions::truncate_message(
        &format!("waiting for its registry: {error}"),
        crate::crd::conditions::MAX_MESSAGE_BYTES,
    );
    set_condition(
        conditions,
        ConditionType::Ready,
        false,
        reason,
        &message,
        generation,
        now,
    );
    set_condition(conditions, ConditionType::Stalled, false, reason, "", generation, now);
    set_condition(
        conditions,
        ConditionType::Reconciling,
        true,
        reason,
        &message,
        generation,
        now,
    );
}

/// Counts every violation in a new generation of `object` (the reconciles
/// of one generation judge it again and again), and records an event for
/// each audited one: denials and warnings have events of their own.
async fn record_policy<K: InRegistry>(
    context: &Context,
    object: &K,
    observed_before: Option<i64>,
    verdict: &crate::policy::Verdict,
) {
    if observed_before.is_some() && observed_before == object.meta().generation {
        return;
    }
    for violation in &verdict.violations {
        for (taken, action) in [
            (violation.actions.deny, "Deny"),
            (violation.actions.warn, "Warn"),
            (violation.actions.audit, "Audit"),
        ] {
            if taken {
                context.metrics.policy_violation(&violation.policy, action);
            }
        }
    }
    for violation in verdict.audits() {
        publish(context, object, "PolicyAudit", false, violation.to_string()).await;
    }
}

/// What events about an object say of the registry it lives in.
pub(super) trait InRegistry: Resource<DynamicType = ()> {
    /// The connection the object is bound to; `None` for the install's default registry, and
    /// for the connections themselves.
    fn bound_to(&self) -> Option<&RegistryRef> {
        None
    }
}

impl InRegistry for Schema {
    fn bound_to(&self) -> Option<&RegistryRef> {
        self.spec.registry_ref.as_ref()
    }
}

impl InRegistry for SubjectConfig {
    fn bound_to(&self) -> Option<&RegistryRef> {
        self.spec.registry_ref.as_ref()
    }
}

impl InRegistry for SchemaRegistry {}

impl InRegistry for ClusterSchemaRegistry {}

/// The connection `reference` of an object in `namespace`, as an event's related object.
fn connection_object(namespace: Option<&str>, reference: &RegistryRef) -> ObjectReference {
    ObjectReference {
        api_version: Some(format!("{}/{}", crate::crd::API_GROUP, crate::crd::API_VERSION)),
        kind: Some(reference.kind.as_str().to_owned()),
        name: Some(reference.name.clone()),
        namespace: match reference.kind {
            RegistryKind::SchemaRegistry => namespace.map(str::to_owned),
            RegistryKind::ClusterSchemaRegistry => None,
        },
        ..ObjectReference::default()
    }
}

/// Records an event about `object`. An object bound to a connection names it: in the note, and
/// as the event's related object.
async fn publish<K: InRegistry>(context: &Context, object: &K, reason: &str, warning: bool, note: String) {
    let bound = object.bound_to();
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.to_owned(),
        note: Some(match bound {
            Some(reference) => format!("{note} (registry {reference})"),
            None => note,
        }),
        action: "Reconcile".to_owned(),
        secondary: bound.map(|reference| connection_object(object.meta().namespace.as_deref(), reference)),
    };
    if let Err(error) = context.events.publish(&event, &object.object_ref(&())).await {
        // An event is a courtesy; the status already says what happened.
        tracing::debug!(error = &error as &dyn std::error::Error, "Could not record an event");
    }
}

mod claims;
mod configs;
pub mod events;
mod policies;
mod registries;
mod schemas;
mod slim;
mod sources;
mod throughput;

use claims::schemas_naming;
use configs::reconcile_config;
use schemas::reconcile_schema;
use slim::{slim_cache, slim_watch};
use throughput::{controller_config, schemas_where};

/// How a reconcile ended, for the metrics: an error; a retry sooner than
/// the resync (the registry failed, a write conflict); or done.
fn reconcile_result(outcome: &Result<Action, Error>, resync: Duration) -> ReconcileResult {
    match outcome {
        Err(_) => ReconcileResult::Error,
        Ok(action) if *action == Action::requeue(resync) || *action == Action::await_change() => ReconcileResult::Ok,
        Ok(_) => ReconcileResult::Requeue,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod waiting_tests {
    use super::*;

    #[test]
    fn an_object_whose_registry_cannot_be_used_waits_with_the_resolve_reason() {
        let error = ResolveError::NamespaceNotAllowed {
            reference: RegistryRef {
                kind: crate::crd::RegistryKind::ClusterSchemaRegistry,
                name: "shared".to_owned(),
            },
            namespace: "team-c".to_owned(),
        };
        let mut conditions = Vec::new();
        let now = Time(Timestamp::UNIX_EPOCH);
        set_waiting(&mut conditions, &error, Some(4), &now);
        let found = |type_| find_condition(&conditions, type_).unwrap();
        let ready = found(ConditionType::Ready);
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "RegistryNotAllowed")
        );
        assert_eq!(
            ready.message,
            "waiting for its registry: ClusterSchemaRegistry/shared does not allow namespace team-c (see its \
             spec.allowedNamespaces)"
        );
        assert_eq!(found(ConditionType::Reconciling).status, "True");
        assert_eq!(found(ConditionType::Stalled).status, "False");
        assert!(
            conditions
                .iter()
                .all(|condition| condition.observed_generation == Some(4))
        );
    }

    #[test]
    fn a_deletion_blocked_by_referrers_waits_and_other_errors_fail() {
        let blocked = Error::Finalizer(Box::new(finalizer::Error::CleanupFailed(Error::DeletionBlocked(
            "referred to by Schema a/b".to_owned(),
        ))));
        assert!(blocked.is_waiting());
        let failed = Error::Finalizer(Box::new(finalizer::Error::CleanupFailed(Error::Registry(
            crate::registry::Error::Unavailable {
                url: "http://registry".to_owned(),
                reason: "connection refused".to_owned(),
            },
        ))));
        assert!(!failed.is_waiting());
    }
}

//! The controllers wired to the Kubernetes API: watches, finalizers, status
//! writes (server-side apply, only when something changed), events on
//! transitions, and retries. The decisions themselves live in
//! [`schema`](super::schema) and [`subject_config`](super::subject_config).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use super::schema::cleanup::{self, CleanupOutcome};
use super::view::{ObjectKey, SubjectView};
use super::{FIELD_MANAGER, FINALIZER, schema, subject_config};
use crate::compat::Checker;
use crate::crd::conditions::{ConditionType, Reason, find_condition, set_condition};
use crate::crd::{ResourceKind, Schema, SubjectConfig};
use crate::metrics::{Metrics, ReconcileResult};
use crate::registry::{Registry, SubjectName};

/// The first retry delay after a transient failure; it doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
/// The longest retry delay.
const MAX_RETRY: Duration = Duration::from_secs(300);
/// How often a Schema waiting for another to release its subject looks again
/// (a watch on the other Schemas usually wakes it sooner).
const CONFLICT_RETRY: Duration = Duration::from_secs(30);
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
    /// The finalizer helper failed.
    #[error("the finalizer failed")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// True when the reconcile waits on purpose (a deletion blocked by
    /// referrers) rather than failed: it is retried at a steady pace.
    pub fn is_waiting(&self) -> bool {
        matches!(
            self,
            Error::Finalizer(inner)
                if matches!(inner.as_ref(), finalizer::Error::CleanupFailed(Error::DeletionBlocked(_)))
        )
    }

    /// The bounded reason, for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Kube { .. } => "KubernetesApi",
            Error::Registry(_) => Reason::RegistryUnavailable.as_str(),
            Error::DeletionBlocked(_) => Reason::ReferencedBySchemas.as_str(),
            Error::Finalizer(_) => "Finalizer",
        }
    }
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    scope: Scope,
    registry: Arc<dyn Registry>,
    checker: Checker,
    schemas: Store<Schema>,
    configs: Store<SubjectConfig>,
    recorder: Recorder,
    resync: Duration,
    failures: Mutex<HashMap<ObjectKey, u32>>,
    metrics: Arc<Metrics>,
}

impl Context {
    /// A context on `client` for tests: one namespace (`default`), the
    /// Schema cache holding `schemas`, an empty SubjectConfig cache.
    #[cfg(test)]
    fn for_tests(client: Client, registry: Arc<dyn Registry>, checker: Checker, schemas: &[Schema]) -> Self {
        let mut schema_writer = kube::runtime::reflector::store::Writer::<Schema>::default();
        for schema in schemas {
            schema_writer.apply_watcher_event(&watcher::Event::Apply(schema.clone()));
        }
        Self {
            recorder: Recorder::new(client.clone(), "schemaops".into()),
            scope: Scope(Some("default".to_owned())),
            client,
            registry,
            checker,
            schemas: schema_writer.as_reader(),
            configs: kube::runtime::reflector::store::Writer::<SubjectConfig>::default().as_reader(),
            resync: Duration::from_secs(300),
            failures: Mutex::new(HashMap::new()),
            metrics: Arc::new(Metrics::default()),
        }
    }

    /// The view of `subject` from the caches.
    fn view(&self, subject: &str) -> SubjectView {
        let schemas = self.schemas.state();
        let configs = self.configs.state();
        SubjectView::of(
            subject,
            schemas.iter().map(AsRef::as_ref),
            configs.iter().map(AsRef::as_ref),
        )
    }

    /// The view of `subject` with the SubjectConfigs read from the API server
    /// rather than the cache: when one `kubectl apply` changes the level and
    /// the schema, the level's write precedes the schema's, and a fresh read
    /// is sure to see it, so the schema is judged under the new level.
    async fn view_with_fresh_configs(&self, subject: &str) -> Result<SubjectView, Error> {
        let configs = self
            .scope
            .api::<SubjectConfig>(&self.client)
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::Kube {
                action: "list the SubjectConfigs",
                source,
            })?;
        let schemas = self.schemas.state();
        Ok(SubjectView::of(
            subject,
            schemas.iter().map(AsRef::as_ref),
            configs.items.iter(),
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
    /// Where reconciles and rejections are counted.
    pub metrics: Arc<Metrics>,
}

/// Runs the Schema and SubjectConfig controllers until `shutdown` resolves.
/// `ready` is called once both caches have their first full list.
pub async fn run(
    client: Client,
    registry: Arc<dyn Registry>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ready: impl FnOnce() + Send + 'static,
) {
    Controllers::new(client, registry, settings).run(shutdown, ready).await;
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
    let schema_watch = reflector(
        schema_writer,
        watcher(scope.api::<Schema>(client), watcher::Config::default()),
    );
    let config_watch = reflector(
        config_writer,
        watcher(scope.api::<SubjectConfig>(client), watcher::Config::default()),
    );
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

    /// Builds the controllers and their caches.
    pub fn new(client: Client, registry: Arc<dyn Registry>, settings: Settings) -> Self {
        build(client, registry, settings)
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

fn build(client: Client, registry: Arc<dyn Registry>, settings: Settings) -> Controllers {
    let scope = Scope(settings.namespace.clone());
    let schemas_api = scope.api::<Schema>(&client);
    let configs_api = scope.api::<SubjectConfig>(&client);
    let config_maps_api = scope.api::<ConfigMap>(&client);
    let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
    let stop = |mut receiver: tokio::sync::watch::Receiver<bool>| async move {
        let _ = receiver.wait_for(|stopped| *stopped).await;
    };

    let config_controller = Controller::new(configs_api.clone(), watcher::Config::default());
    let schema_controller = Controller::new(schemas_api, watcher::Config::default());
    let schema_store = schema_controller.store();
    let config_store = config_controller.store();

    let by_subject = schema_store.clone();
    let by_config_map = schema_store.clone();
    let by_claim = schema_store.clone();
    let schema_controller = schema_controller
        // A Schema that changes or goes may release its subject to another
        // claimant, or stop referring to a subject whose deletion waits.
        .watches(
            scope.api::<Schema>(&client),
            watcher::Config::default(),
            move |changed: Schema| {
                let changed_key = ObjectKey::of(&changed.metadata);
                schemas_where(&by_claim, |schema| {
                    let claims_same = schema.spec.subject == changed.spec.subject;
                    let referred_to = changed.spec.references.iter().any(|r| r.subject == schema.spec.subject);
                    (claims_same || referred_to) && ObjectKey::of(&schema.metadata) != changed_key
                })
            },
        )
        .watches(configs_api, watcher::Config::default(), move |config: SubjectConfig| {
            schemas_where(&by_subject, |schema| schema.spec.subject == config.spec.subject)
        })
        .watches(
            config_maps_api,
            watcher::Config::default(),
            move |config_map: ConfigMap| {
                let namespace = config_map.namespace();
                let name = config_map.name_any();
                schemas_where(&by_config_map, |schema| {
                    schema.namespace() == namespace
                        && schema
                            .spec
                            .schema_from
                            .as_ref()
                            .is_some_and(|from| from.config_map_key_ref.name == name)
                })
            },
        )
        .graceful_shutdown_on(stop(shutdown_rx.clone()));
    let config_controller = config_controller.graceful_shutdown_on(stop(shutdown_rx));

    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), "schemaops".into()),
        scope,
        client,
        registry,
        checker: settings.checker,
        schemas: schema_store.clone(),
        configs: config_store.clone(),
        resync: settings.resync,
        failures: Mutex::new(HashMap::new()),
        metrics: settings.metrics,
    });
    Controllers {
        schema_controller,
        config_controller,
        context,
        shutdown_tx,
    }
}

async fn run_built(
    controllers: Controllers,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ready: impl FnOnce() + Send + 'static,
) {
    let Controllers {
        schema_controller,
        config_controller,
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
        .run(reconcile_config, error_policy, context)
        .for_each(|result| async move { log_result(result) });
    futures::join!(schemas, configs);
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

fn schemas_where(store: &Store<Schema>, wanted: impl Fn(&Schema) -> bool) -> Vec<ObjectRef<Schema>> {
    store
        .state()
        .iter()
        .filter(|schema| wanted(schema))
        .map(|schema| ObjectRef::from_obj(schema.as_ref()))
        .collect()
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

#[tracing::instrument(skip_all, fields(namespace = schema.namespace(), name = schema.name_any(), generation = schema.metadata.generation))]
async fn reconcile_schema(schema: Arc<Schema>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let outcome = finalize_schema(schema, &context).await;
    let result = reconcile_result(&outcome, context.resync);
    context
        .metrics
        .reconciled(ResourceKind::Schema, result, started.elapsed());
    outcome
}

/// How a reconcile ended, for the metrics: an error; a retry sooner than
/// the resync (the registry failed, a write conflict); or done.
fn reconcile_result(outcome: &Result<Action, Error>, resync: Duration) -> ReconcileResult {
    match outcome {
        Err(_) => ReconcileResult::Error,
        Ok(action) if *action == Action::requeue(resync) || *action == Action::await_change() => ReconcileResult::Ok,
        Ok(_) => ReconcileResult::Requeue,
    }
}

async fn finalize_schema(schema: Arc<Schema>, context: &Context) -> Result<Action, Error> {
    let namespace = schema.namespace().unwrap_or_default();
    let api = Api::<Schema>::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, schema, |event| async {
        match event {
            finalizer::Event::Apply(schema) => apply_schema(&schema, context).await,
            finalizer::Event::Cleanup(schema) => cleanup_schema(&schema, context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn apply_schema(schema: &Schema, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&schema.metadata);
    let view = context.view_with_fresh_configs(&schema.spec.subject).await?;
    let config_map = match &schema.spec.schema_from {
        Some(from) => Api::<ConfigMap>::namespaced(context.client.clone(), &key.namespace)
            .get_opt(&from.config_map_key_ref.name)
            .await
            .map_err(|source| Error::Kube {
                action: "read the schema's ConfigMap",
                source,
            })?
            .map(|config_map| config_map.data.unwrap_or_default()),
        None => None,
    };
    let now = Time(Timestamp::now());
    let reconciled = schema::reconcile(
        schema,
        &view,
        config_map.as_ref(),
        context.registry.as_ref(),
        &context.checker,
        &now,
    )
    .await;
    let previous = schema.status.as_ref();
    if schema::status::changed(previous, &reconciled.status) {
        patch_status::<Schema>(context, &key, &reconciled.status).await?;
        for transition in schema::status::transitions(previous, &reconciled.status) {
            if transition.reason == "Rejected"
                && let Some(reason) = find_condition(&reconciled.status.conditions, ConditionType::Stalled)
                    .and_then(|stalled| Reason::parse(&stalled.reason))
            {
                context.metrics.rejected(reason);
            }
            publish(context, schema, transition.reason, transition.warning, transition.note).await;
        }
    }
    if let Some(error) = reconciled.retry {
        let delay = context.backoff(&key);
        tracing::warn!(
            error = &error as &dyn std::error::Error,
            retry_in_seconds = delay.as_secs(),
            "The registry failed; retrying"
        );
        return Ok(Action::requeue(delay));
    }
    context.succeeded(&key);
    if let Some(schema::Plan::Conflict { .. }) = reconciled.plan {
        return Ok(Action::requeue(CONFLICT_RETRY));
    }
    Ok(Action::requeue(context.resync))
}

async fn cleanup_schema(schema: &Schema, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&schema.metadata);
    let view = context.view(&schema.spec.subject);
    let owner = view.schema_owner.as_ref() == Some(&key);
    let subject = SubjectName::new(schema.spec.subject.clone()).ok();
    let needs_referrers = owner && schema.spec.deletion_policy != crate::crd::DeletionPolicy::Retain;
    let registry_referrers = match (&subject, needs_referrers) {
        (Some(subject), true) => cleanup::registry_referrers(context.registry.as_ref(), subject)
            .await
            .map_err(Error::Registry)?,
        _ => Vec::new(),
    };
    let resource_referrers: Vec<ObjectKey> = view.referrers.into_iter().filter(|referrer| *referrer != key).collect();
    let plan = cleanup::decide_cleanup(
        schema.spec.deletion_policy,
        owner,
        subject,
        &resource_referrers,
        &registry_referrers,
    );
    match cleanup::act_cleanup(&plan, context.registry.as_ref())
        .await
        .map_err(Error::Registry)?
    {
        CleanupOutcome::Done { deleted } => {
            if deleted {
                let note = format!(
                    "deleted subject `{}` ({:?})",
                    schema.spec.subject, schema.spec.deletion_policy
                );
                publish(context, schema, Reason::Deleted.as_str(), false, note).await;
            }
            Ok(Action::await_change())
        }
        CleanupOutcome::Blocked(message) => {
            let mut status = schema.status.clone().unwrap_or_default();
            let now = Time(Timestamp::now());
            set_condition(
                &mut status.conditions,
                ConditionType::DeletionBlocked,
                true,
                Reason::ReferencedBySchemas.as_str(),
                &message,
                schema.metadata.generation,
                &now,
            );
            if schema::status::changed(schema.status.as_ref(), &status) {
                patch_status::<Schema>(context, &key, &status).await?;
                publish(context, schema, "DeletionBlocked", true, message.clone()).await;
            }
            Err(Error::DeletionBlocked(message))
        }
    }
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

async fn publish<K: Resource<DynamicType = ()>>(
    context: &Context,
    object: &K,
    reason: &str,
    warning: bool,
    note: String,
) {
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.to_owned(),
        note: Some(note),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    if let Err(error) = context.recorder.publish(&event, &object.object_ref(&())).await {
        // An event is a courtesy; the status already says what happened.
        tracing::debug!(error = &error as &dyn std::error::Error, "Could not record an event");
    }
}

#[tracing::instrument(skip_all, fields(namespace = config.namespace(), name = config.name_any(), generation = config.metadata.generation))]
async fn reconcile_config(config: Arc<SubjectConfig>, context: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let outcome = finalize_config(config, &context).await;
    let result = reconcile_result(&outcome, context.resync);
    context
        .metrics
        .reconciled(ResourceKind::SubjectConfig, result, started.elapsed());
    outcome
}

async fn finalize_config(config: Arc<SubjectConfig>, context: &Context) -> Result<Action, Error> {
    let namespace = config.namespace().unwrap_or_default();
    let api = Api::<SubjectConfig>::namespaced(context.client.clone(), &namespace);
    finalizer(&api, FINALIZER, config, |event| async {
        match event {
            finalizer::Event::Apply(config) => apply_config(&config, context).await,
            finalizer::Event::Cleanup(config) => cleanup_config(&config, context).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

async fn apply_config(config: &SubjectConfig, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&config.metadata);
    let view = context.view(&config.spec.subject);
    let now = Time(Timestamp::now());
    let status = subject_config::reconcile(config, &view, context.registry.as_ref(), &now)
        .await
        .map_err(Error::Registry)?;
    if subject_config_changed(config.status.as_ref(), &status) {
        patch_status::<SubjectConfig>(context, &key, &status).await?;
    }
    context.succeeded(&key);
    Ok(Action::requeue(context.resync))
}

async fn cleanup_config(config: &SubjectConfig, context: &Context) -> Result<Action, Error> {
    let key = ObjectKey::of(&config.metadata);
    let view = context.view(&config.spec.subject);
    if view.config_owner.as_ref() == Some(&key)
        && let Ok(subject) = SubjectName::new(config.spec.subject.clone())
    {
        subject_config::clear(context.registry.as_ref(), &subject)
            .await
            .map_err(Error::Registry)?;
    }
    Ok(Action::await_change())
}

fn subject_config_changed(a: Option<&crate::crd::SubjectConfigStatus>, b: &crate::crd::SubjectConfigStatus) -> bool {
    let Some(a) = a else { return true };
    let strip = |status: &crate::crd::SubjectConfigStatus| {
        let mut status = status.clone();
        for condition in &mut status.conditions {
            condition.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        }
        status
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    //! Scripted request/response tests of the Schema reconcile: a mock API
    //! server (`tower_test`) answers the exact requests expected, in order.

    use axum::http::{Method, Request, Response};
    use kube::client::Body;
    use serde_json::{Value, json};
    use tower_test::mock::Handle;

    use super::*;
    use crate::crd::SchemaSpec;
    use crate::registry::VersionFilter;
    use crate::registry::embedded::EmbeddedRegistry;
    use crate::registry::embedded::sqlite::SqliteStore;

    const NAME: &str = "orders";
    const SUBJECT: &str = "orders-value";
    const V1: &str =
        r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;
    /// V1 with a required field without a default: not BACKWARD compatible.
    const V2_INCOMPATIBLE: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"long"}]}"#;
    const SCHEMAS: &str = "/apis/schemaops.dev/v1alpha1/namespaces/default/schemas";
    const CONFIGS: &str = "/apis/schemaops.dev/v1alpha1/namespaces/default/subjectconfigs";
    const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
    /// How long a scenario waits for any request it does not expect.
    const QUIET: Duration = Duration::from_millis(300);

    #[test]
    fn a_reconcile_counts_as_ok_error_or_requeue() {
        let resync = Duration::from_secs(300);
        let ok = |action| reconcile_result(&Ok(action), resync);
        assert_eq!(ok(Action::requeue(resync)), ReconcileResult::Ok);
        assert_eq!(ok(Action::await_change()), ReconcileResult::Ok);
        assert_eq!(ok(Action::requeue(Duration::from_secs(2))), ReconcileResult::Requeue);
        let failed = Err(Error::DeletionBlocked("referenced".to_owned()));
        assert_eq!(reconcile_result(&failed, resync), ReconcileResult::Error);
    }

    type Responder = Box<dyn FnOnce(&Value) -> Value + Send>;

    /// One request the reconcile must make, and the answer it gets.
    struct Expected {
        method: Method,
        path_and_query: String,
        content_type: Option<&'static str>,
        respond: Responder,
    }

    impl Expected {
        fn new(
            method: Method,
            path_and_query: impl Into<String>,
            content_type: Option<&'static str>,
            respond: impl FnOnce(&Value) -> Value + Send + 'static,
        ) -> Self {
            Self {
                method,
                path_and_query: path_and_query.into(),
                content_type,
                respond: Box::new(respond),
            }
        }
    }

    /// Answers the `expected` requests in order, asserting method, path and
    /// query, and content type; then fails if another request arrives within
    /// [`QUIET`] or before the client is dropped (the reconcile awaits every
    /// answer, so a request it makes keeps the client alive until seen).
    /// Resolves to the request bodies (JSON; `Null` when empty).
    fn scenario(
        mut handle: Handle<Request<Body>, Response<Body>>,
        expected: Vec<Expected>,
    ) -> tokio::task::JoinHandle<Vec<Value>> {
        tokio::spawn(async move {
            let mut bodies = Vec::new();
            for (index, expected) in expected.into_iter().enumerate() {
                let (request, send) = handle
                    .next_request()
                    .await
                    .unwrap_or_else(|| panic!("request {index} never came: the client went away"));
                let path_and_query = request.uri().path_and_query().map(|p| p.as_str().to_owned());
                assert_eq!(request.method(), expected.method, "request {index}: {path_and_query:?}");
                assert_eq!(
                    path_and_query.as_deref(),
                    Some(expected.path_and_query.as_str()),
                    "request {index}"
                );
                let content_type = request
                    .headers()
                    .get("content-type")
                    .map(|value| value.to_str().unwrap().to_owned());
                assert_eq!(content_type.as_deref(), expected.content_type, "request {index}");
                let bytes = request.into_body().collect_bytes().await.unwrap();
                let body: Value = if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).unwrap()
                };
                let response = (expected.respond)(&body);
                send.send_response(
                    Response::builder()
                        .status(if expected.method == Method::POST { 201 } else { 200 })
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&response).unwrap()))
                        .unwrap(),
                );
                bodies.push(body);
            }
            if let Ok(Some((request, _))) = tokio::time::timeout(QUIET, handle.next_request()).await {
                let (parts, body) = request.into_parts();
                let body = body.collect_bytes().await.unwrap_or_default();
                panic!(
                    "unexpected request: {} {} {}",
                    parts.method,
                    parts.uri,
                    String::from_utf8_lossy(&body)
                );
            }
            bodies
        })
    }

    /// Runs the reconcile of `schema` against `expected`, with `schema` alone
    /// in the Schema cache; returns the reconcile's result and the bodies sent.
    async fn run(
        registry: &Arc<EmbeddedRegistry>,
        schema: &Schema,
        expected: Vec<Expected>,
    ) -> (Result<Action, Error>, Vec<Value>) {
        let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let registry: Arc<dyn Registry> = registry.clone();
        let context = Context::for_tests(client, registry, Checker::default(), std::slice::from_ref(schema));
        let server = scenario(handle, expected);
        let result = tokio::time::timeout(
            Duration::from_secs(10),
            reconcile_schema(Arc::new(schema.clone()), Arc::new(context)),
        )
        .await
        .expect("the reconcile hung: a request was not answered");
        let bodies = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the scenario did not finish: an expected request never came")
            .expect("the scenario failed");
        (result, bodies)
    }

    async fn registry(folder: &tempfile::TempDir) -> Arc<EmbeddedRegistry> {
        let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
        Arc::new(
            EmbeddedRegistry::open(Arc::new(store), Checker::default())
                .await
                .unwrap(),
        )
    }

    async fn live_versions(registry: &EmbeddedRegistry) -> Vec<u64> {
        let subject = SubjectName::new(SUBJECT.to_owned()).unwrap();
        match registry.versions(&subject, VersionFilter::Live).await {
            Ok(versions) => versions,
            Err(crate::registry::Error::SubjectNotFound { .. }) => Vec::new(),
            Err(error) => panic!("{error}"),
        }
        .into_iter()
        .map(|version| u64::from(version.get()))
        .collect()
    }

    fn schema(text: &str, generation: i64, finalizer: bool) -> Schema {
        let mut schema = Schema::new(
            NAME,
            SchemaSpec {
                subject: SUBJECT.to_owned(),
                schema_type: Default::default(),
                schema: Some(text.to_owned()),
                schema_from: None,
                references: Vec::new(),
                deletion_policy: Default::default(),
            },
        );
        schema.metadata.namespace = Some("default".to_owned());
        schema.metadata.uid = Some("0d1e7a5e-0000-4000-8000-000000000001".to_owned());
        schema.metadata.resource_version = Some("1".to_owned());
        schema.metadata.generation = Some(generation);
        schema.metadata.creation_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        if finalizer {
            schema.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
        }
        schema
    }

    fn empty_config_list() -> Expected {
        Expected::new(Method::GET, format!("{CONFIGS}?"), None, |_| {
            json!({
                "apiVersion": "schemaops.dev/v1alpha1",
                "kind": "SubjectConfigList",
                "metadata": {"resourceVersion": "1"},
                "items": [],
            })
        })
    }

    /// The status patch; answers with `schema` carrying the patched status.
    fn status_patch(schema: &Schema) -> Expected {
        let object = serde_json::to_value(schema).unwrap();
        Expected::new(
            Method::PATCH,
            format!("{SCHEMAS}/{NAME}/status?&force=true&fieldManager=schemaops"),
            Some("application/apply-patch+yaml"),
            move |body| {
                let mut object = object;
                object["status"] = body["status"].clone();
                object
            },
        )
    }

    /// The Recorder's event; answers with the event as created.
    fn event() -> Expected {
        Expected::new(Method::POST, format!("{EVENTS}?"), Some("application/json"), |body| {
            body.clone()
        })
    }

    fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
        status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|condition| condition["type"] == type_)
            .unwrap_or_else(|| panic!("no {type_} condition in {status}"))
    }

    fn assert_condition(status: &Value, type_: &str, value: &str, reason: Option<&str>, generation: i64) {
        let condition = condition(status, type_);
        assert_eq!(condition["status"], value, "{type_}: {condition}");
        assert_eq!(condition["observedGeneration"], generation, "{type_}: {condition}");
        assert!(condition["lastTransitionTime"].is_string(), "{type_}: {condition}");
        if let Some(reason) = reason {
            assert_eq!(condition["reason"], reason, "{type_}: {condition}");
        }
    }

    fn assert_event(event: &Value, reason: &str, type_: &str) {
        assert_eq!(event["apiVersion"], "events.k8s.io/v1", "{event}");
        assert_eq!(event["kind"], "Event", "{event}");
        assert_eq!(event["reason"], reason, "{event}");
        assert_eq!(event["type"], type_, "{event}");
        assert_eq!(event["action"], "Reconcile", "{event}");
        assert_eq!(event["reportingController"], "schemaops", "{event}");
        assert_eq!(event["metadata"]["namespace"], "default", "{event}");
        assert!(
            event["metadata"]["name"].as_str().unwrap().starts_with("orders."),
            "{event}"
        );
        assert!(event["eventTime"].is_string(), "{event}");
        let regarding = &event["regarding"];
        assert_eq!(regarding["apiVersion"], "schemaops.dev/v1alpha1", "{event}");
        assert_eq!(regarding["kind"], "Schema", "{event}");
        assert_eq!(regarding["name"], NAME, "{event}");
        assert_eq!(regarding["namespace"], "default", "{event}");
    }

    /// Scenario 1 against `registry`: registers V1, returns the status written.
    async fn register_v1(registry: &Arc<EmbeddedRegistry>) -> Value {
        let schema = schema(V1, 1, true);
        let (result, bodies) = run(
            registry,
            &schema,
            vec![empty_config_list(), status_patch(&schema), event()],
        )
        .await;
        result.unwrap();
        assert_eq!(bodies[0], Value::Null, "a list has no body");
        let patch = &bodies[1];
        let keys: Vec<&String> = patch.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "kind", "status"], "{patch}");
        assert_eq!(patch["apiVersion"], "schemaops.dev/v1alpha1");
        assert_eq!(patch["kind"], "Schema");
        let status = &patch["status"];
        assert_eq!(status["observedGeneration"], 1, "{status}");
        assert_eq!(status["subject"], SUBJECT, "{status}");
        assert_eq!(status["version"], 1, "{status}");
        assert_eq!(status["id"], 1, "{status}");
        let fingerprint = status["fingerprint"].as_str().unwrap();
        assert!(
            fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()),
            "{fingerprint}"
        );
        assert_eq!(status["conditions"].as_array().unwrap().len(), 3, "{status}");
        assert_condition(status, "Ready", "True", Some("Registered"), 1);
        assert_eq!(
            condition(status, "Ready")["message"],
            "version 1 of subject `orders-value` holds this schema (ID 1)"
        );
        assert_condition(status, "Stalled", "False", None, 1);
        assert_condition(status, "Reconciling", "False", None, 1);
        assert_eq!(
            status["compatibility"],
            json!({"mode": "BACKWARD", "checkedVersions": [], "incompatibilities": [], "total": 0}),
            "{status}"
        );
        assert_event(&bodies[2], "Registered", "Normal");
        assert_eq!(bodies[2]["note"], condition(status, "Ready")["message"]);
        assert_eq!(live_versions(registry).await, [1]);
        status.clone()
    }

    #[tokio::test]
    async fn a_new_schema_is_registered_and_its_status_written_once() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(&folder).await;
        register_v1(&registry).await;
    }

    #[tokio::test]
    async fn an_unchanged_schema_only_lists_the_subject_configs() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(&folder).await;
        let status = register_v1(&registry).await;
        let mut schema = schema(V1, 1, true);
        schema.status = Some(serde_json::from_value(status).unwrap());
        // No status patch, no event: a reconcile woken by our own write is quiet.
        let (result, bodies) = run(&registry, &schema, vec![empty_config_list()]).await;
        result.unwrap();
        assert_eq!(bodies.len(), 1);
        assert_eq!(live_versions(&registry).await, [1]);
    }

    #[tokio::test]
    async fn an_incompatible_edit_is_rejected_in_the_status_and_by_a_warning() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(&folder).await;
        let registered = register_v1(&registry).await;
        let mut schema = schema(V2_INCOMPATIBLE, 2, true);
        schema.status = Some(serde_json::from_value(registered.clone()).unwrap());
        let (result, bodies) = run(
            &registry,
            &schema,
            vec![empty_config_list(), status_patch(&schema), event()],
        )
        .await;
        result.unwrap();
        let patch = &bodies[1];
        assert_eq!(patch["apiVersion"], "schemaops.dev/v1alpha1");
        assert_eq!(patch["kind"], "Schema");
        let status = &patch["status"];
        assert_eq!(status["observedGeneration"], 2, "{status}");
        assert_eq!(status["subject"], SUBJECT, "{status}");
        assert_eq!(status["version"], 1, "{status}");
        assert_eq!(status["id"], 1, "{status}");
        assert_eq!(status["fingerprint"], registered["fingerprint"], "{status}");
        assert_condition(status, "Ready", "False", Some("IncompatibleSchema"), 2);
        assert_condition(status, "Stalled", "True", Some("IncompatibleSchema"), 2);
        assert_condition(status, "Reconciling", "False", None, 2);
        let compatibility = &status["compatibility"];
        assert_eq!(compatibility["total"], 1, "{compatibility}");
        assert_eq!(compatibility["mode"], "BACKWARD", "{compatibility}");
        let incompatibilities = compatibility["incompatibilities"].as_array().unwrap();
        assert_eq!(incompatibilities.len(), 1, "{compatibility}");
        let incompatibility = &incompatibilities[0];
        assert_eq!(
            incompatibility["kind"], "READER_FIELD_MISSING_DEFAULT_VALUE",
            "{incompatibility}"
        );
        assert_eq!(incompatibility["path"], "/fields/1", "{incompatibility}");
        assert_eq!(incompatibility["version"], 1, "{incompatibility}");
        assert_event(&bodies[2], "Rejected", "Warning");
        let note = bodies[2]["note"].as_str().unwrap();
        assert!(note.starts_with("IncompatibleSchema: "), "{note}");
        assert_eq!(live_versions(&registry).await, [1]);
    }

    #[tokio::test]
    async fn a_schema_without_the_finalizer_only_gets_the_finalizer() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(&folder).await;
        let schema = schema(V1, 1, false);
        let mut patched = serde_json::to_value(&schema).unwrap();
        patched["metadata"]["finalizers"] = json!([FINALIZER]);
        let (result, bodies) = run(
            &registry,
            &schema,
            vec![Expected::new(
                Method::PATCH,
                format!("{SCHEMAS}/{NAME}?"),
                Some("application/json-patch+json"),
                move |_| patched,
            )],
        )
        .await;
        result.unwrap();
        assert_eq!(
            bodies[0],
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
            ])
        );
        assert!(
            live_versions(&registry).await.is_empty(),
            "nothing registered before the finalizer"
        );
    }
}

#[cfg(test)]
mod waiting_tests {
    use super::*;

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

//! Keeping a process's [`PolicySource`] current from the cluster: watches of
//! the SchemaPolicies and the Namespaces (for `namespaceSelector`). A policy
//! is compiled again only when its generation changes. Every replica runs
//! this, leader or not: its webhook and registry port judge with it.
//!
//! Each change bumps a counter that the controllers listen to, so that every
//! Schema and SubjectConfig is judged again: a policy tightened later marks
//! existing objects, and a loosened one lets them through.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, ResourceExt as _};

use super::judge::{NamespaceLabels, PolicySource};
use crate::crd::SchemaPolicy;
use crate::policy::{CompiledPolicy, InvalidPolicy, PolicySet};

/// How long the first listing retries before the operator goes on without
/// policies it cannot read (it logs why, and the watch keeps trying).
const FIRST_LIST_PATIENCE: Duration = Duration::from_secs(30);

/// Compiled policies kept by name and generation, so a change to one policy
/// (or to a namespace's labels) does not compile the others again.
#[derive(Default)]
struct Compiled(HashMap<String, CompiledAt>);

/// A policy compiled at one generation: usable, or why not.
type CompiledAt = (Option<i64>, Result<Arc<CompiledPolicy>, InvalidPolicy>);

impl Compiled {
    /// The set of every policy in `policies`, compiling the new and changed ones.
    fn set_of(&mut self, policies: &[Arc<SchemaPolicy>]) -> PolicySet {
        let mut kept = HashMap::with_capacity(policies.len());
        for policy in policies {
            let name = policy.name_any();
            let generation = policy.metadata.generation;
            let compiled = match self.0.remove(&name) {
                Some((seen, compiled)) if seen == generation => compiled,
                _ => CompiledPolicy::compile(&name, &policy.spec).map(Arc::new),
            };
            kept.insert(name, (generation, compiled));
        }
        self.0 = kept;
        let mut valid = Vec::new();
        let mut invalid = Vec::new();
        for (_, compiled) in self.0.values() {
            match compiled {
                Ok(policy) => valid.push(Arc::clone(policy)),
                Err(problems) => invalid.push(problems.clone()),
            }
        }
        PolicySet::from_compiled(valid, invalid)
    }
}

fn labels_of(namespaces: &[Arc<Namespace>]) -> NamespaceLabels {
    namespaces
        .iter()
        .map(|namespace| (namespace.name_any(), namespace.labels().clone()))
        .collect()
}

/// Lists the policies and namespaces once, before any reconcile or admission
/// runs: without this, the first judgements would be made with no policy.
/// A cluster without the SchemaPolicy CRD has no policies.
pub async fn load_once(client: &Client, source: &PolicySource) {
    let started = std::time::Instant::now();
    loop {
        let policies = listed(
            Api::<SchemaPolicy>::all(client.clone())
                .list(&ListParams::default())
                .await,
        );
        let namespaces = listed(Api::<Namespace>::all(client.clone()).list(&ListParams::default()).await);
        match (policies, namespaces) {
            (Ok(policies), Ok(namespaces)) => {
                if policies.is_none() {
                    tracing::warn!("The SchemaPolicy CRD is not installed; no policy applies");
                }
                let policies: Vec<Arc<SchemaPolicy>> = policies.unwrap_or_default().into_iter().map(Arc::new).collect();
                let namespaces: Vec<Arc<Namespace>> =
                    namespaces.unwrap_or_default().into_iter().map(Arc::new).collect();
                source.set_policies(Compiled::default().set_of(&policies));
                source.set_namespaces(labels_of(&namespaces));
                return;
            }
            (Err(error), _) | (_, Err(error)) => {
                if started.elapsed() > FIRST_LIST_PATIENCE {
                    tracing::error!(
                        error = &error as &dyn std::error::Error,
                        "Cannot list the SchemaPolicies or Namespaces; going on, the watch keeps trying"
                    );
                    return;
                }
                tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    "Cannot list the SchemaPolicies yet"
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

/// The items of a listing; `None` when the kind is not served (404).
fn listed<K: Clone>(result: Result<kube::api::ObjectList<K>, kube::Error>) -> Result<Option<Vec<K>>, kube::Error> {
    match result {
        Ok(list) => Ok(Some(list.items)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

/// Watches the SchemaPolicies and the Namespaces until `shutdown`, putting
/// every change in force in `source` and bumping the returned counter.
/// Returns the SchemaPolicy cache, the counter, and the future that runs it all.
pub fn watch(
    client: &Client,
    source: PolicySource,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (
    Store<SchemaPolicy>,
    tokio::sync::watch::Receiver<u64>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (policies, policy_writer) = reflector::store::<SchemaPolicy>();
    let (namespaces, namespace_writer) = reflector::store::<Namespace>();
    let policy_events = reflector(
        policy_writer,
        watcher(Api::<SchemaPolicy>::all(client.clone()), watcher::Config::default()),
    )
    .default_backoff()
    .map(|event| event.map(|_| ()));
    let namespace_events = reflector(
        namespace_writer,
        watcher(Api::<Namespace>::all(client.clone()), watcher::Config::default()),
    )
    .default_backoff()
    .map(|event| event.map(|_| ()));
    let (changed_tx, changed_rx) = tokio::sync::watch::channel(0u64);
    let store = policies.clone();
    let run = async move {
        let mut compiled = Compiled::default();
        let mut events = std::pin::pin!(futures::stream::select(policy_events, namespace_events));
        let keep_current = async {
            while let Some(event) = events.next().await {
                if let Err(error) = event {
                    tracing::debug!(
                        error = &error as &dyn std::error::Error,
                        "A policy watch failed; retrying"
                    );
                    continue;
                }
                let set = compiled.set_of(&policies.state());
                let labels = labels_of(&namespaces.state());
                let before = source.context();
                let unchanged = same_policies(&before.policies, &set) && *before.namespaces == labels;
                if !unchanged {
                    source.set_policies(set);
                    source.set_namespaces(labels);
                    changed_tx.send_modify(|count| *count += 1);
                }
            }
        };
        tokio::select! {
            () = keep_current => {}
            () = shutdown => {}
        }
    };
    (store, changed_rx, run)
}

/// Whether two sets hold the same compiled policies (the cache hands out the
/// same `Arc` for an unchanged policy) and the same invalid ones.
fn same_policies(a: &PolicySet, b: &PolicySet) -> bool {
    a.policies().len() == b.policies().len()
        && a.policies().iter().zip(b.policies()).all(|(x, y)| Arc::ptr_eq(x, y))
        && a.invalid() == b.invalid()
}

//! The room between the controller and `registry/`: an object's
//! `spec.registryRef` resolved into the [`Registry`] it lives in.
//!
//! Without a ref, the install's default registry (today's flags). With one,
//! the [`SchemaRegistry`](crate::crd::SchemaRegistry) of the object's own
//! namespace or a [`ClusterSchemaRegistry`](crate::crd::ClusterSchemaRegistry)
//! that allows the namespace ([`rules`]); its credentials come from the
//! Secrets (and CA ConfigMaps) it names ([`credentials`]).
//!
//! # Cache
//! A client is built once per connection and kept while its key holds: the
//! connection's UID and generation and the `resourceVersion` of every Secret
//! and ConfigMap it reads. A rotated password changes a Secret's
//! resourceVersion, so the next resolve builds a new client: no restart.
//! Every resolve reads those Secrets by name (targeted gets, never a list or
//! a watch), so the operator needs only `get` on Secrets.
//!
//! Knows nothing of reconciles or status; [`ClusterReads`] is all it asks of
//! the API server, so tests pass fixed objects.

pub mod credentials;
mod error;
mod kube_reads;
pub mod rules;
pub mod status;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

pub use credentials::Fetched;
pub use error::ResolveError;
pub use kube_reads::KubeReads;
pub use rules::{Connection, RegistryScope};
use rules::{Source, Target};

use crate::compat::Checker;
use crate::crd::{ClusterSchemaRegistry, RegistryKind, RegistryRef, SchemaRegistry};
use crate::registry::Registry;
use crate::registry::external::ExternalRegistry;

/// What the resolver reads from the cluster, by name only.
#[async_trait]
pub trait ClusterReads: Send + Sync {
    /// The SchemaRegistry `name` of `namespace`, if it exists.
    async fn schema_registry(&self, namespace: &str, name: &str) -> Result<Option<SchemaRegistry>, ResolveError>;
    /// The ClusterSchemaRegistry `name`, if it exists.
    async fn cluster_schema_registry(&self, name: &str) -> Result<Option<ClusterSchemaRegistry>, ResolveError>;
    /// The labels of namespace `name` (none when it does not exist).
    async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, ResolveError>;
    /// The Secret or ConfigMap `source`, if it exists.
    async fn source(&self, source: &Source) -> Result<Option<Fetched>, ResolveError>;
}

/// A resolved ref: the registry, and what the object must know about it.
#[derive(Clone)]
pub struct Resolved {
    /// The registry the object lives in.
    pub registry: Arc<dyn Registry>,
    /// The connection, or `None` for the install's default registry.
    pub connection: Option<RegistryRef>,
    /// The connection is `readOnly`: observe, never write.
    pub read_only: bool,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("connection", &self.connection)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// What a resolved registry is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// Reconciling a live object.
    Work,
    /// Cleaning up after an object being deleted.
    Cleanup,
}

/// A connection's client, as the cache holds it.
#[derive(Clone)]
pub struct Client {
    /// The registry.
    pub registry: Arc<dyn Registry>,
    /// The same client, typed, when the registry is external (its
    /// capabilities can be probed).
    pub external: Option<Arc<ExternalRegistry>>,
    /// What it was built from.
    pub key: CacheKey,
}

/// What a cached client was built from; a different key rebuilds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// The connection's `metadata.uid` (a deleted and recreated connection differs).
    pub uid: String,
    /// The connection's `metadata.generation` (a spec change differs).
    pub generation: i64,
    /// Each Secret and ConfigMap read, with its `resourceVersion` (`None` when missing).
    pub sources: Vec<(Source, Option<String>)>,
}

/// Where a connection's client is cached: its kind, namespace (none for the cluster kind), name.
type Slot = (RegistryKind, Option<String>, String);

struct Cached {
    key: CacheKey,
    registry: Arc<dyn Registry>,
    external: Option<Arc<ExternalRegistry>>,
}

/// Where the registries are: the default one, the embedded one (when this
/// operator runs one), and every connection's, cached.
pub struct Connections {
    default: Arc<dyn Registry>,
    embedded: Option<Arc<dyn Registry>>,
    reads: Arc<dyn ClusterReads>,
    checker: Checker,
    cache: Mutex<HashMap<Slot, Cached>>,
}

impl Connections {
    /// A resolver over `reads`: `default` for objects without a ref,
    /// `embedded` for connections that say `embedded: {}` (none when the
    /// operator manages an external registry), `checker` for the clients built.
    pub fn new(
        default: Arc<dyn Registry>,
        embedded: Option<Arc<dyn Registry>>,
        reads: Arc<dyn ClusterReads>,
        checker: Checker,
    ) -> Self {
        Self {
            default,
            embedded,
            reads,
            checker,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The install's default registry.
    pub fn default_registry(&self) -> Arc<dyn Registry> {
        Arc::clone(&self.default)
    }

    /// The registry of an object in `namespace` with `registry_ref`, for
    /// reading and writing: the connection must allow the namespace, give a
    /// client, and be `Ready`.
    ///
    /// # Errors
    /// A [`ResolveError`] whose [`reason`](ResolveError::reason) names the
    /// cause: a missing, deleting or disallowed connection, a missing Secret
    /// or key, unusable TLS material, a connection not `Ready`, or an API
    /// server that could not be asked.
    pub async fn resolve(&self, namespace: &str, registry_ref: Option<&RegistryRef>) -> Result<Resolved, ResolveError> {
        self.resolve_for(namespace, registry_ref, Purpose::Work).await
    }

    /// The registry of an object in `namespace` that is being deleted, for
    /// its cleanup: a connection being deleted (which waits for its objects)
    /// or not `Ready` still gives its client.
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve), less `Deleting` and `NotReady`.
    pub async fn resolve_for_cleanup(
        &self,
        namespace: &str,
        registry_ref: Option<&RegistryRef>,
    ) -> Result<Resolved, ResolveError> {
        self.resolve_for(namespace, registry_ref, Purpose::Cleanup).await
    }

    async fn resolve_for(
        &self,
        namespace: &str,
        registry_ref: Option<&RegistryRef>,
        purpose: Purpose,
    ) -> Result<Resolved, ResolveError> {
        let Some(reference) = registry_ref else {
            return Ok(Resolved {
                registry: self.default_registry(),
                connection: None,
                read_only: false,
            });
        };
        let connection = self.connection(namespace, reference).await?;
        let labels = if rules::needs_namespace_labels(&connection) {
            self.reads.namespace_labels(namespace).await?
        } else {
            BTreeMap::new()
        };
        match purpose {
            Purpose::Work => rules::check_use(&connection, namespace, &labels)?,
            Purpose::Cleanup => rules::check_namespace(&connection, namespace, &labels)?,
        }
        let registry = self.client(&connection).await?.registry;
        if purpose == Purpose::Work {
            rules::check_ready(&connection)?;
        }
        Ok(Resolved {
            registry,
            connection: Some(reference.clone()),
            read_only: connection.spec.read_only,
        })
    }

    /// The connection `reference` names for an object in `namespace`.
    ///
    /// # Errors
    /// [`ResolveError::NotFound`], or a read failure.
    pub async fn connection(&self, namespace: &str, reference: &RegistryRef) -> Result<Connection, ResolveError> {
        let found = match reference.kind {
            RegistryKind::SchemaRegistry => self
                .reads
                .schema_registry(namespace, &reference.name)
                .await?
                .map(|object| Connection::from_namespaced(&object)),
            RegistryKind::ClusterSchemaRegistry => self
                .reads
                .cluster_schema_registry(&reference.name)
                .await?
                .map(|object| Connection::from_cluster(&object)),
        };
        found.ok_or_else(|| ResolveError::NotFound {
            reference: reference.clone(),
            namespace: (reference.kind == RegistryKind::SchemaRegistry).then(|| namespace.to_owned()),
        })
    }

    /// The client of `connection`, from the cache while its [`CacheKey`]
    /// holds, else built anew (and cached).
    /// Reads every Secret and ConfigMap the connection names.
    ///
    /// # Errors
    /// What [`rules::target`], [`rules::sources`] and
    /// [`credentials::external_config`] refuse, unusable TLS material, and
    /// read failures.
    pub async fn client(&self, connection: &Connection) -> Result<Client, ResolveError> {
        let target = rules::target(connection)?;
        let sources = rules::sources(connection)?;
        let mut fetched = BTreeMap::new();
        for source in &sources {
            if let Some(found) = self.reads.source(source).await? {
                fetched.insert(source.clone(), found);
            }
        }
        let key = CacheKey {
            uid: connection.uid.clone(),
            generation: connection.generation,
            sources: sources
                .iter()
                .map(|source| {
                    let version = fetched
                        .get(source)
                        .map(|found: &Fetched| found.resource_version.clone());
                    (source.clone(), version)
                })
                .collect(),
        };
        let slot: Slot = (
            connection.reference.kind,
            connection.namespace.clone(),
            connection.reference.name.clone(),
        );
        if let Some(cached) = self.lock().get(&slot).filter(|cached| cached.key == key) {
            return Ok(Client {
                registry: Arc::clone(&cached.registry),
                external: cached.external.clone(),
                key,
            });
        }
        let (registry, external): (Arc<dyn Registry>, _) = match target {
            Target::Embedded => match &self.embedded {
                Some(embedded) => (Arc::clone(embedded), None),
                None => {
                    return Err(ResolveError::EmbeddedUnavailable {
                        reference: connection.reference.clone(),
                    });
                }
            },
            Target::External(spec) => {
                // The first URL, failing over to the others in order.
                let config = credentials::failover_config(connection, spec, &fetched)?;
                let client = ExternalRegistry::new(&config, self.checker).map_err(|source| ResolveError::Tls {
                    reference: connection.reference.clone(),
                    source,
                })?;
                tracing::info!(
                    connection = %connection.reference,
                    namespace = connection.namespace.as_deref().unwrap_or_default(),
                    urls = %config.display_urls().join(", "),
                    generation = connection.generation,
                    "Built a registry client"
                );
                let client = Arc::new(client);
                (Arc::clone(&client) as Arc<dyn Registry>, Some(client))
            }
        };
        self.lock().insert(
            slot,
            Cached {
                key: key.clone(),
                registry: Arc::clone(&registry),
                external: external.clone(),
            },
        );
        Ok(Client {
            registry,
            external,
            key,
        })
    }

    /// Forgets the cached client of a connection (deleted, or its status
    /// found it unusable).
    pub fn forget(&self, kind: RegistryKind, namespace: Option<&str>, name: &str) {
        self.lock()
            .remove(&(kind, namespace.map(str::to_owned), name.to_owned()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Slot, Cached>> {
        // A panic while holding the lock leaves the map whole: keep using it.
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;

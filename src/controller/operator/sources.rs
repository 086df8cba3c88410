//! The ConfigMaps that Schemas take their text from (`schemaFrom`), read
//! again on a period instead of watched: the operator never lists or watches
//! ConfigMaps, so its RBAC needs only `get` on them, and it never holds a
//! ConfigMap that no Schema names.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, ResourceExt as _};

use crate::crd::Schema;

/// How many ConfigMaps are read at once.
const CONCURRENT_READS: usize = 4;

/// A ConfigMap by namespace and name.
type SourceKey = (String, String);

/// What a read found: the ConfigMap's `resourceVersion`, or `None` when it does not exist.
type Seen = Option<String>;

/// Every `period`, reads each ConfigMap a cached Schema names and yields
/// the Schemas that name one that changed, appeared or went since the last
/// read (or that was read for the first time: its Schema may have been
/// reconciled against an older text just before). A read that fails keeps
/// what was seen before and is tried again next period.
pub(super) fn changed_sources(
    client: Client,
    schemas: Store<Schema>,
    period: Duration,
) -> impl Stream<Item = ObjectRef<Schema>> + Send + 'static {
    let seen: HashMap<SourceKey, Seen> = HashMap::new();
    futures::stream::unfold(seen, move |previous| {
        let (client, schemas) = (client.clone(), schemas.clone());
        async move {
            tokio::time::sleep(period).await;
            let named = named_sources(&schemas);
            let reads = futures::stream::iter(named)
                .map(|key| {
                    let client = client.clone();
                    async move {
                        let read = Api::<ConfigMap>::namespaced(client, &key.0).get_opt(&key.1).await;
                        (key, read.map(|found| found.and_then(|map| map.resource_version())))
                    }
                })
                .buffer_unordered(CONCURRENT_READS)
                .collect::<Vec<_>>()
                .await;
            let mut now = HashMap::with_capacity(reads.len());
            let mut changed = BTreeSet::new();
            for (key, read) in reads {
                let seen = match read {
                    Ok(seen) => seen,
                    Err(error) => {
                        tracing::warn!(
                            namespace = %key.0,
                            config_map = %key.1,
                            error = &error as &dyn std::error::Error,
                            "Could not read a Schema's ConfigMap; trying again next period"
                        );
                        match previous.get(&key) {
                            Some(before) => before.clone(),
                            None => continue,
                        }
                    }
                };
                if previous.get(&key) != Some(&seen) {
                    changed.insert(key.clone());
                }
                now.insert(key, seen);
            }
            let wake = schemas_naming(&schemas, &changed);
            tracing::debug!(
                read = now.len(),
                changed = changed.len(),
                wake = wake.len(),
                "Read the Schemas' ConfigMaps"
            );
            Some((futures::stream::iter(wake), now))
        }
    })
    .flatten()
}

/// Every (namespace, ConfigMap) a cached Schema's `schemaFrom` names.
fn named_sources(schemas: &Store<Schema>) -> BTreeSet<SourceKey> {
    schemas
        .state()
        .iter()
        .filter_map(|schema| {
            let from = schema.spec.schema_from.as_ref()?;
            Some((schema.namespace()?, from.config_map_key_ref.name.clone()))
        })
        .collect()
}

/// The cached Schemas whose `schemaFrom` names one of `sources`.
fn schemas_naming(schemas: &Store<Schema>, sources: &BTreeSet<SourceKey>) -> Vec<ObjectRef<Schema>> {
    if sources.is_empty() {
        return Vec::new();
    }
    super::throughput::schemas_where(schemas, |schema| {
        let (Some(namespace), Some(from)) = (schema.namespace(), schema.spec.schema_from.as_ref()) else {
            return false;
        };
        sources.contains(&(namespace, from.config_map_key_ref.name.clone()))
    })
}

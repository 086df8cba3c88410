//! What the caches keep of each object: everything but what no reconcile
//! reads and every write makes larger.
//!
//! On a Kubernetes API server, a Schema's `metadata.managedFields` records
//! every field each writer set (the creator's spec, our finalizer, our status
//! with each condition) as JSON trees, and kubectl's last-applied annotation
//! is a second copy of the spec: both grow each cached object and neither is
//! read here. (The test API server sends no managedFields, so the operator
//! bench does not measure this.)

use futures::Stream;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Resource};

/// kubectl's copy of the last applied manifest (client-side apply).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops `object`'s managed fields and kubectl's last-applied annotation.
pub(super) fn slim<K: Resource>(object: &mut K) {
    let metadata = object.meta_mut();
    metadata.managed_fields = None;
    if let Some(annotations) = metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// A watch of `api` whose objects are slimmed before the cache keeps them.
pub(super) fn slim_watch<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    reflector::reflector(writer, watcher(api, watcher::Config::default()).modify(slim::<K>))
}

/// A cache of `api`'s objects, slimmed, and the stream of changed objects
/// that fills it (what `Controller::new` builds, less the slimming).
pub(super) fn slim_cache<K>(api: Api<K>) -> (Store<K>, impl Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    (store, slim_watch(api, writer).applied_objects())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{Schema, SchemaSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};

    #[test]
    fn slimming_keeps_spec_status_and_other_metadata_and_drops_managed_fields_and_last_applied() {
        let mut schema = Schema::new(
            "orders",
            SchemaSpec {
                metadata: None,
                rule_set: None,
                subject: "orders-value".to_owned(),
                registry_ref: None,
                schema_type: Default::default(),
                schema: Some("\"string\"".to_owned()),
                schema_from: None,
                references: Vec::new(),
                deletion_policy: Default::default(),
                management_policy: Default::default(),
            },
        );
        schema.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".to_owned()),
            fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {}}))),
            ..ManagedFieldsEntry::default()
        }]);
        schema.metadata.annotations = Some(
            [
                (LAST_APPLIED.to_owned(), "{\"spec\":{}}".to_owned()),
                ("team".to_owned(), "payments".to_owned()),
            ]
            .into(),
        );
        schema.metadata.finalizers = Some(vec!["schemaops.dev/cleanup".to_owned()]);
        schema.metadata.generation = Some(3);
        let mut expected = schema.clone();
        expected.metadata.managed_fields = None;
        expected.metadata.annotations = Some([("team".to_owned(), "payments".to_owned())].into());

        slim(&mut schema);
        assert_eq!(schema.metadata, expected.metadata);
        assert_eq!(schema.spec, expected.spec);
    }
}

//! [`ClusterReads`] through the API server: targeted gets by name, never a
//! list or a watch, so the ServiceAccount needs only `get` on Secrets and
//! ConfigMaps and cannot enumerate them. A get RBAC forbids (a Secret in a
//! namespace the chart's `connectionSecretNamespaces` does not list) is
//! [`ResolveError::SourceForbidden`], not a transient failure.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Api;

use super::rules::{Source, SourceKind};
use super::{ClusterReads, Fetched, ResolveError};
use crate::crd::{ClusterSchemaRegistry, SchemaRegistry};

/// Reads through a Kubernetes client.
#[derive(Clone)]
pub struct KubeReads(pub kube::Client);

fn read_failed(what: String) -> impl FnOnce(kube::Error) -> ResolveError {
    move |error| ResolveError::Read {
        what,
        source: Box::new(error),
    }
}

#[async_trait]
impl ClusterReads for KubeReads {
    async fn schema_registry(&self, namespace: &str, name: &str) -> Result<Option<SchemaRegistry>, ResolveError> {
        Api::<SchemaRegistry>::namespaced(self.0.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(read_failed(format!("SchemaRegistry {namespace}/{name}")))
    }

    async fn cluster_schema_registry(&self, name: &str) -> Result<Option<ClusterSchemaRegistry>, ResolveError> {
        Api::<ClusterSchemaRegistry>::all(self.0.clone())
            .get_opt(name)
            .await
            .map_err(read_failed(format!("ClusterSchemaRegistry {name}")))
    }

    async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, ResolveError> {
        let namespace = Api::<Namespace>::all(self.0.clone())
            .get_opt(name)
            .await
            .map_err(read_failed(format!("namespace {name}")))?;
        Ok(namespace
            .and_then(|namespace| namespace.metadata.labels)
            .unwrap_or_default())
    }

    async fn source(&self, source: &Source) -> Result<Option<Fetched>, ResolveError> {
        let what = source.to_string();
        let forbidden_or = |error: kube::Error| match error {
            kube::Error::Api(status) if status.code == 403 => ResolveError::SourceForbidden {
                source_kind: source.kind.as_str(),
                namespace: source.namespace.clone(),
                name: source.name.clone(),
            },
            other => read_failed(what.clone())(other),
        };
        match source.kind {
            SourceKind::Secret => {
                let secret = Api::<Secret>::namespaced(self.0.clone(), &source.namespace)
                    .get_opt(&source.name)
                    .await
                    .map_err(forbidden_or)?;
                Ok(secret.map(|secret| Fetched {
                    resource_version: secret.metadata.resource_version.unwrap_or_default(),
                    data: secret
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(key, value)| (key, value.0))
                        .collect(),
                }))
            }
            SourceKind::ConfigMap => {
                let config_map = Api::<ConfigMap>::namespaced(self.0.clone(), &source.namespace)
                    .get_opt(&source.name)
                    .await
                    .map_err(forbidden_or)?;
                Ok(config_map.map(|config_map| {
                    let text = config_map
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(key, value)| (key, value.into_bytes()));
                    let binary = config_map
                        .binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(key, value)| (key, value.0));
                    Fetched {
                        resource_version: config_map.metadata.resource_version.unwrap_or_default(),
                        data: text.chain(binary).collect(),
                    }
                }))
            }
        }
    }
}

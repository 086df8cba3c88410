//! The two registry connection kinds: [`SchemaRegistry`] (namespaced, usable
//! only by the Schemas and SubjectConfigs of its own namespace) and
//! [`ClusterSchemaRegistry`] (cluster-scoped, usable by the namespaces its
//! `allowedNamespaces` names). Both carry the same [`ConnectionSpec`] and
//! [`ConnectionStatus`]; the rules about who may use which live in
//! `src/connections/`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::connection::{ConnectionSpec, ConnectionStatus};

/// A schema registry the Schemas and SubjectConfigs of this namespace can pick with
/// `spec.registryRef: {kind: SchemaRegistry, name: …}`.
// Each printer column repeats `type_ = …`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[kube(
    group = "schemaops.dev",
    version = "v1alpha1",
    kind = "SchemaRegistry",
    namespaced,
    status = "ConnectionStatus",
    shortname = "sreg",
    category = "schemaops",
    doc = "A connection to a schema registry for the Schemas and SubjectConfigs of this namespace: the operator's embedded registry, or an external Confluent-compatible one with credentials from Secrets of this namespace. `status` says whether the credentials resolved, the registry answers, and what it can do.",
    printcolumn(name = "Endpoint", type_ = "string", json_path = ".status.endpoint"),
    printcolumn(name = "Flavour", type_ = "string", json_path = ".status.flavour"),
    printcolumn(name = "Bound", type_ = "integer", json_path = ".status.boundObjects"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("has(self.embedded) != has(self.external)").message("set exactly one of embedded and external"))]
#[serde(rename_all = "camelCase")]
pub struct SchemaRegistrySpec {
    /// Where the registry is, how to authenticate, and whether to write.
    #[serde(flatten)]
    pub connection: ConnectionSpec,
}

/// A schema registry for the namespaces it allows: their Schemas and SubjectConfigs pick it
/// with `spec.registryRef: {kind: ClusterSchemaRegistry, name: …}`.
// Each printer column repeats `type_ = …`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[kube(
    group = "schemaops.dev",
    version = "v1alpha1",
    kind = "ClusterSchemaRegistry",
    status = "ConnectionStatus",
    shortname = "csreg",
    category = "schemaops",
    doc = "A connection to a schema registry shared by the namespaces `allowedNamespaces` names: the operator's embedded registry, or an external Confluent-compatible one with credentials from named Secrets. Only a cluster administrator writes one. `status` says whether the credentials resolved, the registry answers, and what it can do.",
    printcolumn(name = "Endpoint", type_ = "string", json_path = ".status.endpoint"),
    printcolumn(name = "Flavour", type_ = "string", json_path = ".status.flavour"),
    printcolumn(name = "Bound", type_ = "integer", json_path = ".status.boundObjects"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("has(self.embedded) != has(self.external)").message("set exactly one of embedded and external"))]
#[serde(rename_all = "camelCase")]
pub struct ClusterSchemaRegistrySpec {
    /// Where the registry is, how to authenticate, and whether to write. Every Secret and
    /// ConfigMap it names carries its `namespace`.
    #[serde(flatten)]
    pub connection: ConnectionSpec,
    /// The namespaces whose objects may use this registry. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<AllowedNamespaces>,
}

/// Which namespaces may use a ClusterSchemaRegistry: those named, and those whose labels the
/// selector matches (an empty selector `{}` matches every namespace).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllowedNamespaces {
    /// Namespaces, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// A label selector over namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

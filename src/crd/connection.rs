//! What the two registry connection kinds share: where the registry is and
//! how to authenticate to it ([`ConnectionSpec`]), what the operator found
//! out about it ([`ConnectionStatus`]), and the [`RegistryRef`] by which a
//! Schema or SubjectConfig picks one. The kinds themselves are
//! [`super::SchemaRegistry`] (namespaced) and
//! [`super::ClusterSchemaRegistry`] (cluster-scoped).
//!
//! Credentials are never written in these objects: only the names of the
//! Secrets (and keys) that hold them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// The part of a connection's spec both kinds have. Exactly one of
/// `embedded` and `external` is set (the kinds' CEL rule says so).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionSpec {
    /// The operator's own embedded registry. Takes no settings: `embedded: {}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded: Option<EmbeddedRegistry>,
    /// A Confluent-compatible registry the operator reaches over HTTP(S): Confluent Schema
    /// Registry, Karapace, Apicurio's ccompat API, Redpanda.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalRegistrySpec>,
    /// Observe only: the objects bound to this registry are read and reported, never written
    /// (as if each had `managementPolicy: Observe`). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// The operator's embedded registry; no settings.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
pub struct EmbeddedRegistry {}

/// Where an external registry is and how to talk to it.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRegistrySpec {
    /// The registry's base URLs (with any path prefix, e.g. `https://host/apis/ccompat/v7`), in
    /// order of preference: the first that answers is used, the others are fail-overs. User
    /// info in a URL is ignored; credentials go in `auth`.
    #[schemars(length(min = 1, max = 8), inner(regex(pattern = "^https?://")))]
    pub urls: Vec<String>,
    /// A schema context (Confluent's `:.context:` prefix) that every subject of the bound
    /// objects lives in. Absent: the default context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// How to authenticate. Absent: no `Authorization` header (mutual TLS may still apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RegistryAuth>,
    /// TLS settings: a client certificate for mutual TLS, the CA to trust, the server name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<RegistryTls>,
    /// Limits on calls to the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<RegistryTimeouts>,
}

/// The credentials sent to the registry; exactly one of `basic` and `bearer`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.basic) != has(self.bearer)").message("set exactly one of basic and bearer"))]
#[serde(rename_all = "camelCase")]
pub struct RegistryAuth {
    /// HTTP basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicAuth>,
    /// `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer: Option<BearerAuth>,
}

/// A user name and the Secret key holding its password.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    /// The user name.
    pub username: String,
    /// The key of a Secret (in the connection's namespace; for a ClusterSchemaRegistry, in the
    /// namespace its ref names) that holds the password. Re-read when the Secret changes.
    pub password_secret_ref: SecretKeyRef,
}

/// The Secret key holding a bearer token.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BearerAuth {
    /// The key of a Secret that holds the token. Re-read when the Secret changes.
    pub token_secret_ref: SecretKeyRef,
}

/// A key of a Secret. For a SchemaRegistry the Secret is in the connection's own namespace;
/// a ClusterSchemaRegistry must name the namespace.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// The Secret's name.
    pub name: String,
    /// The key whose value is used.
    pub key: String,
    /// The Secret's namespace: required on a ClusterSchemaRegistry, not allowed on a
    /// SchemaRegistry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A whole Secret, by name.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    /// The Secret's name.
    pub name: String,
    /// The Secret's namespace: required on a ClusterSchemaRegistry, not allowed on a
    /// SchemaRegistry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A key of a ConfigMap.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapKeySelector {
    /// The ConfigMap's name.
    pub name: String,
    /// The key whose value is used.
    pub key: String,
    /// The ConfigMap's namespace: required on a ClusterSchemaRegistry, not allowed on a
    /// SchemaRegistry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// TLS towards the registry.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryTls {
    /// A `kubernetes.io/tls` Secret (keys `tls.crt` and `tls.key`) whose certificate is
    /// presented for mutual TLS. Re-read when the Secret changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_secret_ref: Option<SecretRef>,
    /// The PEM CA certificates to trust instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<CaSource>,
    /// The name the server's certificate must be issued to, when it differs from the URL's host
    /// (a registry reached by an IP or a Service name its certificate does not list). The TLS
    /// server name indication sent stays the URL's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// Where PEM CA certificates come from: exactly one of a Secret key and a ConfigMap key.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, KubeSchema)]
#[x_kube(validation = Rule::new("has(self.secretKeyRef) != has(self.configMapKeyRef)").message("set exactly one of secretKeyRef and configMapKeyRef"))]
#[serde(rename_all = "camelCase")]
pub struct CaSource {
    /// A key of a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
    /// A key of a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<ConfigMapKeySelector>,
}

/// Limits on calls to an external registry.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryTimeouts {
    /// The limit on one attempt (connect, send, read the answer), in seconds. Default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 300))]
    pub attempt_seconds: Option<u32>,
    /// The limit on one call, every retry included, in seconds. Default 12.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 600))]
    pub deadline_seconds: Option<u32>,
}

/// What the operator found out about a connection.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// CredentialsResolved, Reachable, CapabilitiesDetected and Ready, following the Kubernetes
    /// API conventions.
    #[serde(default)]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The URL in use: the first of `spec.external.urls` that answered, or `embedded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The server, when it says: e.g. `confluent`, `karapace`, `schemaops`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour: Option<String>,
    /// The server's version, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The optional features the registry was found to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<RegistryCapabilities>,
    /// How many Schemas and SubjectConfigs are bound to this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_objects: Option<i32>,
}

/// The optional features of a registry, as probed.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryCapabilities {
    /// A subject can hold a mode of its own (Karapace: no).
    pub subject_mode: bool,
    /// Data-contract metadata and rule sets are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<bool>,
    /// Schema contexts (`GET /contexts`).
    pub contexts: bool,
    /// Schema GUIDs given out by the registry (`/schemas/guids`).
    pub guids: bool,
    /// `normalize=true` on lookups and registrations.
    pub normalize: bool,
    /// The IMPORT mode (registering with given IDs), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_mode: Option<bool>,
}

/// The connection a Schema or SubjectConfig uses. Absent: the install's default registry.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryRef {
    /// SchemaRegistry (in the object's own namespace) or ClusterSchemaRegistry.
    pub kind: RegistryKind,
    /// The connection's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The two connection kinds.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, schemars::JsonSchema)]
pub enum RegistryKind {
    /// A namespaced [`super::SchemaRegistry`]: usable only from its own namespace.
    SchemaRegistry,
    /// A cluster-scoped [`super::ClusterSchemaRegistry`]: usable from the namespaces it allows.
    ClusterSchemaRegistry,
}

impl RegistryKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            RegistryKind::SchemaRegistry => "SchemaRegistry",
            RegistryKind::ClusterSchemaRegistry => "ClusterSchemaRegistry",
        }
    }
}

impl std::fmt::Display for RegistryRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

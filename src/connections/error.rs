//! [`ResolveError`]: why an object's `registryRef` gives no registry, one
//! variant per cause, each with its own condition reason.

use crate::crd::RegistryRef;

/// Why a `registryRef` could not be resolved into a registry.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No connection of that kind and name exists (a SchemaRegistry is looked up only in the
    /// object's own namespace).
    #[error("{reference} does not exist{}", in_namespace(namespace.as_deref()))]
    NotFound {
        /// The ref.
        reference: RegistryRef,
        /// Where a SchemaRegistry was looked for.
        namespace: Option<String>,
    },
    /// The ClusterSchemaRegistry does not allow the object's namespace.
    #[error("{reference} does not allow namespace {namespace} (see its spec.allowedNamespaces)")]
    NamespaceNotAllowed {
        /// The ref.
        reference: RegistryRef,
        /// The object's namespace.
        namespace: String,
    },
    /// The connection is being deleted; nothing new binds to it.
    #[error("{reference} is being deleted")]
    Deleting {
        /// The ref.
        reference: RegistryRef,
    },
    /// The connection is not `Ready` (its credentials, its registry, or its first check):
    /// the objects bound to it wait.
    #[error("{reference} is not ready ({reason}): {message}")]
    NotReady {
        /// The ref.
        reference: RegistryRef,
        /// The reason of its `Ready` condition.
        reason: String,
        /// The message of its `Ready` condition.
        message: String,
    },
    /// The connection's spec cannot be used as it is.
    #[error("{reference} is invalid: {problem}")]
    InvalidConnection {
        /// The ref.
        reference: RegistryRef,
        /// What is wrong, in a sentence.
        problem: String,
    },
    /// The connection names the embedded registry, and this operator runs without one.
    #[error("{reference} names the embedded registry, and this operator manages an external one")]
    EmbeddedUnavailable {
        /// The ref.
        reference: RegistryRef,
    },
    /// A Secret or ConfigMap the connection names does not exist.
    #[error("{reference}: {source_kind} {namespace}/{name} does not exist")]
    SourceNotFound {
        /// The ref.
        reference: RegistryRef,
        /// `Secret` or `ConfigMap`.
        source_kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A Secret or ConfigMap the connection names lacks the key (or its value is not UTF-8
    /// where text is needed).
    #[error("{reference}: {source_kind} {namespace}/{name} has no usable key {key}")]
    KeyMissing {
        /// The ref.
        reference: RegistryRef,
        /// `Secret` or `ConfigMap`.
        source_kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The key.
        key: String,
    },
    /// The operator may not read a Secret or ConfigMap the connection names: its RBAC grants
    /// `get` on Secrets only in the namespaces the chart's `connectionSecretNamespaces` lists.
    #[error(
        "the operator may not read {source_kind} {namespace}/{name}: list namespace {namespace} in the chart's \
         connectionSecretNamespaces (a Role granting get on Secrets there)"
    )]
    SourceForbidden {
        /// `Secret` or `ConfigMap`.
        source_kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The TLS material (CA, client certificate or key) cannot be used.
    #[error("{reference}: the TLS settings cannot be used")]
    Tls {
        /// The ref.
        reference: RegistryRef,
        /// Why.
        #[source]
        source: crate::registry::external::ConfigError,
    },
    /// The API server could not be asked.
    #[error("failed to read {what}")]
    Read {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn in_namespace(namespace: Option<&str>) -> String {
    namespace
        .map(|namespace| format!(" in namespace {namespace}"))
        .unwrap_or_default()
}

impl ResolveError {
    /// The condition and event reason: PascalCase, one per variant.
    pub fn reason(&self) -> &'static str {
        match self {
            ResolveError::NotFound { .. } => "RegistryNotFound",
            ResolveError::NamespaceNotAllowed { .. } => "RegistryNotAllowed",
            ResolveError::Deleting { .. } => "RegistryDeleting",
            ResolveError::NotReady { .. } => "RegistryNotReady",
            ResolveError::InvalidConnection { .. } => "InvalidRegistryConnection",
            ResolveError::EmbeddedUnavailable { .. } => "EmbeddedRegistryUnavailable",
            ResolveError::SourceNotFound {
                source_kind: "Secret", ..
            } => "SecretNotFound",
            ResolveError::SourceNotFound { .. } => "ConfigMapNotFound",
            ResolveError::KeyMissing {
                source_kind: "Secret", ..
            } => "SecretKeyMissing",
            ResolveError::KeyMissing { .. } => "ConfigMapKeyMissing",
            ResolveError::SourceForbidden {
                source_kind: "Secret", ..
            } => "SecretForbidden",
            ResolveError::SourceForbidden { .. } => "ConfigMapForbidden",
            ResolveError::Tls { .. } => "InvalidTlsMaterial",
            ResolveError::Read { .. } => "RegistryLookupFailed",
        }
    }

    /// Whether the cause is outside the spec (the API server could not be
    /// asked) and a retry with backoff may succeed without a change.
    pub fn is_transient(&self) -> bool {
        matches!(self, ResolveError::Read { .. })
    }

    /// Whether the cause lies in the credentials (a Secret, ConfigMap, key or
    /// TLS material): what `CredentialsResolved=False` reports.
    pub fn is_credentials(&self) -> bool {
        matches!(
            self,
            ResolveError::SourceNotFound { .. }
                | ResolveError::KeyMissing { .. }
                | ResolveError::SourceForbidden { .. }
                | ResolveError::Tls { .. }
        )
    }
}

//! Who may use which connection, and what a connection reads: pure
//! functions over a [`Connection`] (either kind, as plain values) and the
//! facts the caller fetched. No I/O.
//!
//! # Rules
//! - A `SchemaRegistry` is found only in the object's own namespace (the ref
//!   has no namespace field), so another namespace's connection is never
//!   used: it is simply not found.
//! - A `ClusterSchemaRegistry` is usable from a namespace its
//!   `allowedNamespaces` names, or whose labels its selector matches (an
//!   empty selector matches every namespace). Without `allowedNamespaces`,
//!   from none.
//! - A connection being deleted takes no new objects (the objects already
//!   bound to it may still clean up through it).
//! - Objects bound to a connection whose `Ready` condition is not `True` for
//!   its current generation wait ([`check_ready`]).
//! - Exactly one of `embedded` and `external`, and an external one has at
//!   least one `http(s)` URL.
//! - A SchemaRegistry reads Secrets and ConfigMaps of its own namespace only
//!   (a `namespace` on its refs must be its own); a ClusterSchemaRegistry
//!   names the namespace of each.

use std::collections::BTreeMap;

use super::ResolveError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::crd::conditions::{ConditionType, find_condition};
use crate::crd::{
    AllowedNamespaces, ClusterSchemaRegistry, ConnectionSpec, ConnectionStatus, ExternalRegistrySpec,
    RegistryCapabilities, RegistryKind, RegistryRef, SchemaRegistry,
};
use crate::policy::Selector;

/// A connection of either kind, as the rules read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// Its kind and name.
    pub reference: RegistryRef,
    /// Its namespace: set for a SchemaRegistry, `None` for a ClusterSchemaRegistry.
    pub namespace: Option<String>,
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The spec both kinds share.
    pub spec: ConnectionSpec,
    /// On a ClusterSchemaRegistry, who may use it.
    pub allowed_namespaces: Option<AllowedNamespaces>,
    /// Its `Ready` condition, as the connection controller last wrote it.
    pub ready: Option<Condition>,
    /// The capabilities its status lists, as the connection controller last found them.
    pub capabilities: Option<RegistryCapabilities>,
}

fn ready_condition(status: Option<&ConnectionStatus>) -> Option<Condition> {
    status.and_then(|status| find_condition(&status.conditions, ConditionType::Ready).cloned())
}

impl Connection {
    /// A namespaced connection.
    pub fn from_namespaced(object: &SchemaRegistry) -> Self {
        Self {
            reference: RegistryRef {
                kind: RegistryKind::SchemaRegistry,
                name: object.metadata.name.clone().unwrap_or_default(),
            },
            namespace: object.metadata.namespace.clone(),
            uid: object.metadata.uid.clone().unwrap_or_default(),
            generation: object.metadata.generation.unwrap_or_default(),
            deleting: object.metadata.deletion_timestamp.is_some(),
            spec: object.spec.connection.clone(),
            allowed_namespaces: None,
            ready: ready_condition(object.status.as_ref()),
            capabilities: object.status.as_ref().and_then(|status| status.capabilities),
        }
    }

    /// A cluster-scoped connection.
    pub fn from_cluster(object: &ClusterSchemaRegistry) -> Self {
        Self {
            reference: RegistryRef {
                kind: RegistryKind::ClusterSchemaRegistry,
                name: object.metadata.name.clone().unwrap_or_default(),
            },
            namespace: None,
            uid: object.metadata.uid.clone().unwrap_or_default(),
            generation: object.metadata.generation.unwrap_or_default(),
            deleting: object.metadata.deletion_timestamp.is_some(),
            spec: object.spec.connection.clone(),
            allowed_namespaces: object.spec.allowed_namespaces.clone(),
            ready: ready_condition(object.status.as_ref()),
            capabilities: object.status.as_ref().and_then(|status| status.capabilities),
        }
    }

    fn invalid(&self, problem: impl Into<String>) -> ResolveError {
        ResolveError::InvalidConnection {
            reference: self.reference.clone(),
            problem: problem.into(),
        }
    }
}

/// Which registry an object's subject lives in, as claims see it: two
/// objects contend for a subject only when their scopes are equal. A
/// SchemaRegistry is its namespace's, so the same name in two namespaces is
/// two scopes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegistryScope {
    /// The install's default registry (no `registryRef`).
    Default,
    /// A SchemaRegistry.
    Namespaced {
        /// Its namespace (the object's).
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A ClusterSchemaRegistry.
    Cluster {
        /// Its name.
        name: String,
    },
}

impl RegistryScope {
    /// The scope in a metric label or a message: `default` (the install's
    /// registry), `SchemaRegistry/NAMESPACE/NAME` or `ClusterSchemaRegistry/NAME`.
    /// As many values as connections, which only their authors create.
    pub fn label(&self) -> String {
        match self {
            RegistryScope::Default => "default".to_owned(),
            RegistryScope::Namespaced { namespace, name } => format!("SchemaRegistry/{namespace}/{name}"),
            RegistryScope::Cluster { name } => format!("ClusterSchemaRegistry/{name}"),
        }
    }

    /// The scope of an object in `namespace` with `registry_ref`.
    pub fn of(namespace: &str, registry_ref: Option<&RegistryRef>) -> Self {
        match registry_ref {
            None => RegistryScope::Default,
            Some(reference) => match reference.kind {
                RegistryKind::SchemaRegistry => RegistryScope::Namespaced {
                    namespace: namespace.to_owned(),
                    name: reference.name.clone(),
                },
                RegistryKind::ClusterSchemaRegistry => RegistryScope::Cluster {
                    name: reference.name.clone(),
                },
            },
        }
    }
}

/// Where a connection points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target<'a> {
    /// The operator's embedded registry.
    Embedded,
    /// A registry over HTTP.
    External(&'a ExternalRegistrySpec),
}

/// Where `connection` points.
///
/// # Errors
/// [`ResolveError::InvalidConnection`] for both or neither of `embedded` and
/// `external`, or an external one without a usable URL.
pub fn target(connection: &Connection) -> Result<Target<'_>, ResolveError> {
    match (&connection.spec.embedded, &connection.spec.external) {
        (Some(_), None) => Ok(Target::Embedded),
        (None, Some(external)) => {
            if external.urls.is_empty() {
                return Err(connection.invalid("spec.external.urls is empty"));
            }
            for url in &external.urls {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|error| connection.invalid(format!("spec.external.urls: {url} is not a URL ({error})")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(connection.invalid(format!("spec.external.urls: {url} is not http or https")));
                }
            }
            Ok(Target::External(external))
        }
        _ => Err(connection.invalid("set exactly one of spec.embedded and spec.external")),
    }
}

/// Whether an object in `namespace` (whose labels are `labels`) may use
/// `connection`; the caller found it by the object's ref (a SchemaRegistry in
/// the object's own namespace).
///
/// # Errors
/// [`ResolveError::Deleting`], [`ResolveError::NamespaceNotAllowed`], or
/// [`ResolveError::InvalidConnection`] for a selector that does not compile.
pub fn check_use(
    connection: &Connection,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(), ResolveError> {
    if connection.deleting {
        return Err(ResolveError::Deleting {
            reference: connection.reference.clone(),
        });
    }
    check_namespace(connection, namespace, labels)
}

/// Whether `connection` is `Ready=True` for its current generation, as the
/// connection controller found: objects bound to it act only then.
///
/// # Errors
/// [`ResolveError::NotReady`] with the connection's own reason and message
/// (or `NotChecked` before its first check).
pub fn check_ready(connection: &Connection) -> Result<(), ResolveError> {
    let not_ready = |reason: &str, message: &str| ResolveError::NotReady {
        reference: connection.reference.clone(),
        reason: reason.to_owned(),
        message: message.to_owned(),
    };
    match &connection.ready {
        Some(ready) if ready.observed_generation != Some(connection.generation) => Err(not_ready(
            "NotChecked",
            "its current generation has not been checked yet",
        )),
        Some(ready) if ready.status == "True" => Ok(()),
        Some(ready) => Err(not_ready(&ready.reason, &ready.message)),
        None => Err(not_ready("NotChecked", "it has not been checked yet")),
    }
}

/// What a SubjectConfig asks its registry to hold, as far as a connection
/// can be known to refuse it before anything is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsAsked {
    /// It is managed (written), not observed.
    pub manage: bool,
    /// It sets `spec.mode`.
    pub subject_mode: bool,
    /// It sets data-contract settings.
    pub contract_settings: bool,
}

/// Why a SubjectConfig asking for `asked` cannot be held by `connection`'s
/// registry, as its last check found it: a mode where the registry holds
/// no per-subject mode (Karapace), or data-contract settings where it keeps
/// none. The controller would end such an object `Stalled`
/// (`ModeUnsupported`, `ContractsUnsupported`), so the webhook refuses it
/// at once. Capabilities count only while the connection is `Ready` for its
/// current generation; a read-only connection writes nothing, so asks nothing.
pub fn unsupported_settings(connection: &Connection, asked: SettingsAsked) -> Option<String> {
    if !asked.manage || connection.spec.read_only || check_ready(connection).is_err() {
        return None;
    }
    let capabilities = connection.capabilities?;
    let reference = &connection.reference;
    if asked.subject_mode && !capabilities.subject_mode {
        return Some(format!(
            "spec.mode: the registry of {reference} cannot hold a per-subject mode (its \
             status.capabilities.subjectMode is false); leave spec.mode out, the registry's global mode applies"
        ));
    }
    if asked.contract_settings && capabilities.contracts == Some(false) {
        return Some(format!(
            "the registry of {reference} keeps no data-contract settings (its status.capabilities.contracts is \
             false); leave them out"
        ));
    }
    None
}

/// The namespace part of [`check_use`]: a SchemaRegistry serves its own
/// namespace, a ClusterSchemaRegistry those it allows. Also what lets an
/// object bound to a connection being deleted clean up through it.
///
/// # Errors
/// As [`check_use`], less [`ResolveError::Deleting`].
pub fn check_namespace(
    connection: &Connection,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(), ResolveError> {
    match connection.reference.kind {
        RegistryKind::SchemaRegistry => {
            if connection.namespace.as_deref() == Some(namespace) {
                Ok(())
            } else {
                // The lookup is by the object's namespace, so this means a caller bug; refuse anyway.
                Err(ResolveError::NotFound {
                    reference: connection.reference.clone(),
                    namespace: Some(namespace.to_owned()),
                })
            }
        }
        RegistryKind::ClusterSchemaRegistry => {
            let allowed = connection.allowed_namespaces.as_ref();
            let by_name = allowed.is_some_and(|allowed| allowed.names.iter().any(|name| name == namespace));
            let by_labels = match allowed.and_then(|allowed| allowed.selector.as_ref()) {
                Some(selector) => Selector::new(selector)
                    .map_err(|problem| connection.invalid(format!("spec.allowedNamespaces.selector: {problem}")))?
                    .matches(labels),
                None => false,
            };
            if by_name || by_labels {
                Ok(())
            } else {
                Err(ResolveError::NamespaceNotAllowed {
                    reference: connection.reference.clone(),
                    namespace: namespace.to_owned(),
                })
            }
        }
    }
}

/// Whether the ClusterSchemaRegistry's `allowedNamespaces` looks at labels,
/// so a caller knows whether it must read the namespace's.
pub fn needs_namespace_labels(connection: &Connection) -> bool {
    connection
        .allowed_namespaces
        .as_ref()
        .is_some_and(|allowed| allowed.selector.is_some())
}

/// A Secret or a ConfigMap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    /// A Secret.
    Secret,
    /// A ConfigMap.
    ConfigMap,
}

impl SourceKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Secret => "Secret",
            SourceKind::ConfigMap => "ConfigMap",
        }
    }
}

/// One Secret or ConfigMap a connection reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source {
    /// Secret or ConfigMap.
    pub kind: SourceKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// The namespace of a Secret or ConfigMap a connection names with `given`.
///
/// # Errors
/// [`ResolveError::InvalidConnection`] when a SchemaRegistry names another
/// namespace, or a ClusterSchemaRegistry names none.
pub fn source_namespace(connection: &Connection, given: Option<&str>, field: &str) -> Result<String, ResolveError> {
    match (&connection.namespace, given) {
        (Some(own), None) => Ok(own.clone()),
        (Some(own), Some(given)) if given == own => Ok(own.clone()),
        (Some(own), Some(given)) => Err(connection.invalid(format!(
            "{field}.namespace: a SchemaRegistry reads only its own namespace {own}, not {given}"
        ))),
        (None, Some(given)) => Ok(given.to_owned()),
        (None, None) => Err(connection.invalid(format!(
            "{field}.namespace: a ClusterSchemaRegistry must name the namespace"
        ))),
    }
}

/// Every Secret and ConfigMap `connection` reads, in a stable order and
/// without repeats: what its cache key covers and what the controller watches.
///
/// # Errors
/// What [`source_namespace`] refuses.
pub fn sources(connection: &Connection) -> Result<Vec<Source>, ResolveError> {
    let Some(external) = &connection.spec.external else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    let mut add = |kind, name: &str, namespace: Option<&str>, field: &str| -> Result<(), ResolveError> {
        found.push(Source {
            kind,
            namespace: source_namespace(connection, namespace, field)?,
            name: name.to_owned(),
        });
        Ok(())
    };
    if let Some(auth) = &external.auth {
        if let Some(basic) = &auth.basic {
            let secret = &basic.password_secret_ref;
            add(
                SourceKind::Secret,
                &secret.name,
                secret.namespace.as_deref(),
                "spec.external.auth.basic.passwordSecretRef",
            )?;
        }
        if let Some(bearer) = &auth.bearer {
            let secret = &bearer.token_secret_ref;
            add(
                SourceKind::Secret,
                &secret.name,
                secret.namespace.as_deref(),
                "spec.external.auth.bearer.tokenSecretRef",
            )?;
        }
    }
    if let Some(tls) = &external.tls {
        if let Some(secret) = &tls.client_certificate_secret_ref {
            add(
                SourceKind::Secret,
                &secret.name,
                secret.namespace.as_deref(),
                "spec.external.tls.clientCertificateSecretRef",
            )?;
        }
        if let Some(ca) = &tls.ca {
            if let Some(secret) = &ca.secret_key_ref {
                add(
                    SourceKind::Secret,
                    &secret.name,
                    secret.namespace.as_deref(),
                    "spec.external.tls.ca.secretKeyRef",
                )?;
            }
            if let Some(config_map) = &ca.config_map_key_ref {
                add(
                    SourceKind::ConfigMap,
                    &config_map.name,
                    config_map.namespace.as_deref(),
                    "spec.external.tls.ca.configMapKeyRef",
                )?;
            }
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

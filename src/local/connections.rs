//! Registry connections without a cluster: the SchemaRegistry and
//! ClusterSchemaRegistry manifests among the files (and those stored by
//! earlier runs) say where each bound object's subject lives, as the
//! operator's [`crate::connections`] says it in a cluster, with the same
//! rules ([`rules`]): a SchemaRegistry serves its own namespace, a
//! ClusterSchemaRegistry the namespaces it allows.
//!
//! # Credentials
//! The Secrets a connection names are the cluster's; `apply` and `check`
//! never read them, nor anything else from the manifests, for a secret.
//! The credentials come from one local file named by
//! `--registry-credentials` (or `SCHEMAOPS_REGISTRY_CREDENTIALS`), keyed by
//! the connection: `SchemaRegistry/NAMESPACE/NAME` or
//! `ClusterSchemaRegistry/NAME`, each with the `password` (basic; the user
//! name is the manifest's) or `token` (bearer), and `caFile`,
//! `clientCertFile` and `clientKeyFile` (paths relative to the file) where
//! the manifest names a CA or client certificate. A file rather than one
//! environment variable per connection: connection names hold `-` and `.`,
//! and a namespaced one needs its namespace, which an environment variable
//! name cannot carry without a mangling where two names can meet; a file is
//! also what a CI secret is mounted as.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::manifests::{DEFAULT_NAMESPACE, Manifest, Origin};
use super::objects::{Objects, ObjectsError};
use super::policies::RunPolicies;
use crate::connections::credentials::failover_config;
use crate::connections::rules::{self, Connection, Target};
use crate::connections::{Fetched, RegistryScope};
use crate::controller::judge::NamespaceLabels;
use crate::crd::{RegistryKind, RegistryRef, RegistryTls};
use crate::registry::external::ExternalConfig;

/// The environment variable naming the credentials file.
pub const CREDENTIALS_ENV: &str = "SCHEMAOPS_REGISTRY_CREDENTIALS";

/// Why the connections of a run cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// The credentials file could not be read or is not what it should be.
    #[error("--registry-credentials {}: {problem}", path.display())]
    Credentials {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The stored objects could not be read.
    #[error(transparent)]
    Objects(#[from] ObjectsError),
    /// Objects of this run name connections that cannot be used; one line per object.
    #[error("{}", problems.join("\n"))]
    Refs {
        /// Each object's message, with its file and document.
        problems: Vec<String>,
    },
}

/// The secrets of one connection, as the credentials file gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConnectionCredentials {
    /// The basic-authentication password.
    #[serde(default)]
    pub password: Option<String>,
    /// The bearer token.
    #[serde(default)]
    pub token: Option<String>,
    /// PEM CA certificates to trust.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (chain) for mutual TLS.
    #[serde(default)]
    pub client_cert_file: Option<PathBuf>,
    /// Its PEM private key.
    #[serde(default)]
    pub client_key_file: Option<PathBuf>,
}

/// The credentials file: connection key to secrets. No file: no credentials.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    path: Option<PathBuf>,
    entries: BTreeMap<String, ConnectionCredentials>,
}

impl Credentials {
    /// Reads the file at `path`, or none.
    ///
    /// # Errors
    /// [`ConnectionError::Credentials`] when it cannot be read, is not a
    /// mapping of connection keys to credentials, or names a key that is
    /// no connection's.
    pub fn load(path: Option<&Path>) -> Result<Self, ConnectionError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let problem = |problem: String| ConnectionError::Credentials {
            path: path.to_owned(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|error| problem(format!("cannot be read ({error})")))?;
        // Messages never quote the file: it holds secrets.
        let entries: BTreeMap<String, ConnectionCredentials> = serde_saphyr::from_str(&text).map_err(|_| {
            problem(
                "is not a mapping of `SchemaRegistry/NAMESPACE/NAME` or `ClusterSchemaRegistry/NAME` to password, \
                 token, caFile, clientCertFile and clientKeyFile"
                    .to_owned(),
            )
        })?;
        if let Some(key) = entries.keys().find(|key| !is_connection_key(key)) {
            return Err(problem(format!(
                "{key} is no connection: use SchemaRegistry/NAMESPACE/NAME or ClusterSchemaRegistry/NAME"
            )));
        }
        let folder = path.parent().unwrap_or(Path::new(""));
        let entries = entries
            .into_iter()
            .map(|(key, mut entry)| {
                for file in [
                    &mut entry.ca_file,
                    &mut entry.client_cert_file,
                    &mut entry.client_key_file,
                ]
                .into_iter()
                .flatten()
                {
                    *file = folder.join(&*file);
                }
                (key, entry)
            })
            .collect();
        Ok(Self {
            path: Some(path.to_owned()),
            entries,
        })
    }

    /// Where to put the secrets of the connection `key`, for messages.
    fn hint(&self, key: &str) -> String {
        match &self.path {
            Some(path) => format!("under `{key}` in --registry-credentials {}", path.display()),
            None => format!("under `{key}` in a file named by --registry-credentials (or ${CREDENTIALS_ENV})"),
        }
    }
}

fn is_connection_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('/').collect();
    let named = |part: &&str| !part.is_empty();
    match parts.as_slice() {
        ["SchemaRegistry", namespace, name] => named(namespace) && named(name),
        ["ClusterSchemaRegistry", name] => named(name),
        _ => false,
    }
}

/// The key of `connection` in the credentials file.
pub fn connection_key(connection: &Connection) -> String {
    match &connection.namespace {
        Some(namespace) => format!(
            "{}/{namespace}/{}",
            connection.reference.kind.as_str(),
            connection.reference.name
        ),
        None => connection.reference.to_string(),
    }
}

/// Where the objects bound to one connection live.
#[derive(Debug, Clone, PartialEq)]
pub enum BindingTarget {
    /// The local data folder's registry.
    Embedded,
    /// A registry over HTTP, configured with the local credentials.
    External(Box<ExternalConfig>),
}

/// A connection some object of the run is bound to, resolved.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The registry scope of the objects bound to it.
    pub scope: RegistryScope,
    /// The connection.
    pub reference: RegistryRef,
    /// Its credentials-file key (`SchemaRegistry/team-a/main`), for messages.
    pub key: String,
    /// `readOnly`: its objects are observed, never written.
    pub read_only: bool,
    /// Where it points.
    pub target: BindingTarget,
}

impl Binding {
    /// Where it points, in words: `the data folder's registry` or `the
    /// registry at URL` (`URL, then URL` with fallbacks).
    pub fn describe(&self) -> String {
        match &self.target {
            BindingTarget::Embedded => format!("{}: the data folder's registry", self.key),
            BindingTarget::External(config) => {
                format!(
                    "{}: the registry at {}",
                    self.key,
                    config.display_urls().join(", then ")
                )
            }
        }
    }
}

/// The connections the objects kept in `data`, with the manifests `loaded`
/// applied, are bound to ([`bindings`]); the namespaces' labels are those
/// stored, and those of `policies`. An edit the run will refuse is passed
/// over here: the run itself says why.
///
/// # Errors
/// As [`bindings`], and the objects file cannot be read.
pub fn plan(
    data: &Path,
    loaded: &[(Origin, Manifest)],
    policies: &RunPolicies,
    credentials: &Credentials,
    now: &Time,
) -> Result<Vec<Binding>, ConnectionError> {
    let mut trial = Objects::load(data)?;
    for (_, manifest) in loaded {
        let _refused_later = trial.apply(manifest.clone(), now);
    }
    let namespaces = super::policies::namespaces(&trial, &policies.namespaces);
    bindings(&trial, loaded, &namespaces, credentials)
}

/// The connections the Schemas and SubjectConfigs of `objects` (the stored
/// objects with this run's manifests `loaded` applied) are bound to, one
/// per registry scope, in scope order.
///
/// An object of this run whose ref cannot be followed (a connection that is
/// not among the manifests nor stored, one that does not allow the
/// namespace, missing credentials) is an error naming it and its ref. A
/// stored object of an earlier run whose ref cannot be followed now is left
/// as it is (its scope has no binding).
///
/// # Errors
/// [`ConnectionError::Refs`] naming each such object of this run.
pub fn bindings(
    objects: &Objects,
    loaded: &[(Origin, Manifest)],
    namespaces: &NamespaceLabels,
    credentials: &Credentials,
) -> Result<Vec<Binding>, ConnectionError> {
    let in_run: BTreeSet<(&'static str, String, String)> = loaded
        .iter()
        .filter_map(|(_, manifest)| match manifest {
            Manifest::Schema(schema) => Some(("Schema", &schema.metadata)),
            Manifest::SubjectConfig(config) => Some(("SubjectConfig", &config.metadata)),
            _ => None,
        })
        .map(|(kind, metadata)| (kind, namespace_of(metadata), metadata.name.clone().unwrap_or_default()))
        .collect();
    let origin_of = |kind: &str, namespace: &str, name: &str| {
        loaded.iter().rev().find_map(|(origin, manifest)| {
            let metadata = match manifest {
                Manifest::Schema(schema) if kind == "Schema" => &schema.metadata,
                Manifest::SubjectConfig(config) if kind == "SubjectConfig" => &config.metadata,
                _ => return None,
            };
            (namespace_of(metadata) == namespace && metadata.name.as_deref() == Some(name)).then(|| origin.clone())
        })
    };
    let bound = objects
        .schemas
        .iter()
        .filter_map(|schema| Some(("Schema", &schema.metadata, schema.spec.registry_ref.as_ref()?)))
        .chain(
            objects
                .subject_configs
                .iter()
                .filter_map(|config| Some(("SubjectConfig", &config.metadata, config.spec.registry_ref.as_ref()?))),
        );
    let mut resolved: BTreeMap<RegistryScope, Result<Binding, String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (kind, metadata, reference) in bound {
        let namespace = namespace_of(metadata);
        let scope = RegistryScope::of(&namespace, Some(reference));
        let result = resolved
            .entry(scope.clone())
            .or_insert_with(|| resolve(objects, &namespace, reference, scope, namespaces, credentials));
        let Err(problem) = result else { continue };
        let name = metadata.name.clone().unwrap_or_default();
        if in_run.contains(&(kind, namespace.clone(), name.clone())) {
            let origin = origin_of(kind, &namespace, &name).map_or_else(String::new, |origin| format!("{origin}: "));
            problems.push(format!(
                "{origin}{kind} {namespace}/{name} names spec.registryRef {reference}: {problem}"
            ));
        } else {
            tracing::warn!(
                object = %format!("{kind} {namespace}/{name}"),
                connection = %reference,
                problem = %problem,
                "A stored object's registry connection cannot be followed in this run; it is left as it is"
            );
        }
    }
    if !problems.is_empty() {
        return Err(ConnectionError::Refs { problems });
    }
    Ok(resolved.into_values().filter_map(Result::ok).collect())
}

fn namespace_of(metadata: &kube::api::ObjectMeta) -> String {
    metadata
        .namespace
        .clone()
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

/// The connection `reference` names for an object in `namespace`, checked and configured.
fn resolve(
    objects: &Objects,
    namespace: &str,
    reference: &RegistryRef,
    scope: RegistryScope,
    namespaces: &NamespaceLabels,
    credentials: &Credentials,
) -> Result<Binding, String> {
    let named = |metadata: &kube::api::ObjectMeta| metadata.name.as_deref() == Some(reference.name.as_str());
    let connection = match reference.kind {
        RegistryKind::SchemaRegistry => objects
            .schema_registries
            .iter()
            .find(|connection| named(&connection.metadata) && namespace_of(&connection.metadata) == namespace)
            .map(Connection::from_namespaced),
        RegistryKind::ClusterSchemaRegistry => objects
            .cluster_schema_registries
            .iter()
            .find(|connection| named(&connection.metadata))
            .map(Connection::from_cluster),
    };
    let Some(connection) = connection else {
        let wanted = match reference.kind {
            RegistryKind::SchemaRegistry => format!("a SchemaRegistry {} in namespace {namespace}", reference.name),
            RegistryKind::ClusterSchemaRegistry => format!("a ClusterSchemaRegistry {}", reference.name),
        };
        return Err(format!(
            "no such connection among the manifests (nor stored by an earlier apply): add {wanted} to the files"
        ));
    };
    let empty = BTreeMap::new();
    let labels = namespaces.get(namespace).unwrap_or(&empty);
    rules::check_use(&connection, namespace, labels).map_err(|error| error.to_string())?;
    let key = connection_key(&connection);
    let target = match rules::target(&connection).map_err(|error| error.to_string())? {
        Target::Embedded => BindingTarget::Embedded,
        Target::External(_) => BindingTarget::External(Box::new(configure(&connection, &key, credentials)?)),
    };
    Ok(Binding {
        scope,
        reference: reference.clone(),
        key,
        read_only: connection.spec.read_only,
        target,
    })
}

/// The client configuration of the external `connection` (whose
/// credentials-file key is `key`): its spec, with the secrets of the
/// credentials file where the cluster would read Secrets.
fn configure(connection: &Connection, key: &str, credentials: &Credentials) -> Result<ExternalConfig, String> {
    let mut spec = connection.spec.external.clone().unwrap_or_default();
    let given = credentials.entries.get(key).cloned().unwrap_or_default();
    let missing = |what: &str| format!("its {what} is not given: put it {}", credentials.hint(key));
    // The secret values stand where external_config looks for each Secret key.
    let mut fetched: BTreeMap<_, Fetched> = BTreeMap::new();
    let mut put = |namespace: Option<&str>, name: &str, data_key: &str, value: &str, field: &str| {
        let source = rules::Source {
            kind: rules::SourceKind::Secret,
            namespace: rules::source_namespace(connection, namespace, field).map_err(|error| error.to_string())?,
            name: name.to_owned(),
        };
        fetched
            .entry(source)
            .or_default()
            .data
            .insert(data_key.to_owned(), value.as_bytes().to_vec());
        Ok::<(), String>(())
    };
    if let Some(auth) = &spec.auth {
        if let Some(basic) = &auth.basic {
            let secret = &basic.password_secret_ref;
            let password = given
                .password
                .as_deref()
                .ok_or_else(|| missing("password (basic auth)"))?;
            let field = "spec.external.auth.basic.passwordSecretRef";
            put(secret.namespace.as_deref(), &secret.name, &secret.key, password, field)?;
        }
        if let Some(bearer) = &auth.bearer {
            let secret = &bearer.token_secret_ref;
            let token = given.token.as_deref().ok_or_else(|| missing("token (bearer auth)"))?;
            let field = "spec.external.auth.bearer.tokenSecretRef";
            put(secret.namespace.as_deref(), &secret.name, &secret.key, token, field)?;
        }
    }
    // TLS material comes as files: the spec's Secret and ConfigMap refs are taken out of what
    // external_config reads, and the files put in the configuration.
    let tls = spec.tls.take().unwrap_or_default();
    spec.tls = tls.server_name.clone().map(|server_name| RegistryTls {
        server_name: Some(server_name),
        ..RegistryTls::default()
    });
    let mut config = failover_config(connection, &spec, &fetched).map_err(|error| error.to_string())?;
    if tls.ca.is_some() {
        config.ca_file = Some(given.ca_file.clone().ok_or_else(|| missing("CA (caFile)"))?);
    }
    if tls.client_certificate_secret_ref.is_some() {
        config.client_cert_file = Some(
            given
                .client_cert_file
                .clone()
                .ok_or_else(|| missing("client certificate (clientCertFile)"))?,
        );
        config.client_key_file = Some(
            given
                .client_key_file
                .clone()
                .ok_or_else(|| missing("client key (clientKeyFile)"))?,
        );
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_keys_name_the_kind_the_namespace_of_a_namespaced_one_and_the_name() {
        assert!(is_connection_key("SchemaRegistry/team-a/main"));
        assert!(is_connection_key("ClusterSchemaRegistry/shared.eu"));
        assert!(!is_connection_key("SchemaRegistry/main"));
        assert!(!is_connection_key("ClusterSchemaRegistry/team-a/shared"));
        assert!(!is_connection_key("Secret/team-a/main"));
        assert!(!is_connection_key("SchemaRegistry//main"));
    }

    #[test]
    fn a_credentials_file_that_does_not_parse_is_refused_without_quoting_it() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("credentials.yaml");
        std::fs::write(&path, "SchemaRegistry/team-a/main:\n  pasword: hunter2\n").unwrap();
        let message = Credentials::load(Some(&path)).unwrap_err().to_string();
        assert!(message.contains("is not a mapping"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
        std::fs::write(&path, "Secret/team-a/main:\n  password: hunter2\n").unwrap();
        let message = Credentials::load(Some(&path)).unwrap_err().to_string();
        assert!(message.contains("Secret/team-a/main is no connection"), "{message}");
    }
}

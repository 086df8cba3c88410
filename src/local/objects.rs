//! The objects `apply` keeps between runs (`objects.json` in the data
//! folder): every Schema, SubjectConfig, ConfigMap, SchemaPolicy, Namespace
//! and registry connection applied so far, with metadata and status, as the
//! API server would keep them.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::manifests::Manifest;
use crate::crd::{ClusterSchemaRegistry, RegistryRef, Schema, SchemaPolicy, SchemaRegistry, SubjectConfig};

/// The file name inside the data folder.
pub const FILE_NAME: &str = "objects.json";

/// Why the objects file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    /// It could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// "read" or "write".
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// It is not what `apply` writes.
    #[error("{} is damaged; move it away to start afresh", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
}

/// Every object applied so far, in the order first applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Objects {
    /// The Schemas.
    #[serde(default)]
    pub schemas: Vec<Schema>,
    /// The SubjectConfigs.
    #[serde(default)]
    pub subject_configs: Vec<SubjectConfig>,
    /// The ConfigMaps.
    #[serde(default)]
    pub config_maps: Vec<ConfigMap>,
    /// The SchemaPolicies (cluster-scoped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_policies: Vec<SchemaPolicy>,
    /// The Namespaces (cluster-scoped), for their labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<Namespace>,
    /// The SchemaRegistries: later runs follow the refs of stored objects to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_registries: Vec<SchemaRegistry>,
    /// The ClusterSchemaRegistries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_schema_registries: Vec<ClusterSchemaRegistry>,
}

impl Objects {
    /// Loads the objects from `folder`, or none when the file is missing.
    ///
    /// # Errors
    /// [`ObjectsError`] when the file cannot be read or parsed.
    pub fn load(folder: &Path) -> Result<Self, ObjectsError> {
        let path = folder.join(FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ObjectsError::Io {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        serde_json::from_str(&text).map_err(|source| ObjectsError::Damaged { path, source })
    }

    /// Writes the objects to `folder`, replacing the file atomically.
    ///
    /// # Errors
    /// [`ObjectsError`] when the file cannot be written.
    pub fn save(&self, folder: &Path) -> Result<(), ObjectsError> {
        let path = folder.join(FILE_NAME);
        let partial = folder.join(format!("{FILE_NAME}.partial"));
        let io = |source| ObjectsError::Io {
            action: "write",
            path: path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(self).expect("objects always serialize to JSON");
        std::fs::write(&partial, text).map_err(io)?;
        std::fs::rename(&partial, &path).map_err(io)
    }

    /// Applies one manifest as an edit of the stored object with the same
    /// kind, namespace and name (or as a new object): a changed spec bumps
    /// `metadata.generation`; the status is kept.
    ///
    /// # Errors
    /// A message when the edit is refused (a Schema's or SubjectConfig's subject is immutable).
    pub fn apply(&mut self, manifest: Manifest, now: &Time) -> Result<(), String> {
        match manifest {
            Manifest::Schema(schema) => upsert(&mut self.schemas, *schema, now),
            Manifest::SubjectConfig(config) => upsert(&mut self.subject_configs, *config, now),
            Manifest::ConfigMap(config_map) => upsert(&mut self.config_maps, *config_map, now),
            Manifest::SchemaPolicy(policy) => upsert(&mut self.schema_policies, *policy, now),
            Manifest::Namespace(namespace) => upsert(&mut self.namespaces, *namespace, now),
            Manifest::SchemaRegistry(connection) => upsert(&mut self.schema_registries, *connection, now),
            Manifest::ClusterSchemaRegistry(connection) => {
                upsert(&mut self.cluster_schema_registries, *connection, now)
            }
        }
    }

    /// The data of the ConfigMap `name` in `namespace`.
    pub fn config_map_data(&self, namespace: &str, name: &str) -> Option<&std::collections::BTreeMap<String, String>> {
        static EMPTY: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        self.config_maps
            .iter()
            .find(|c| c.metadata.namespace.as_deref() == Some(namespace) && c.metadata.name.as_deref() == Some(name))
            .map(|c| c.data.as_ref().unwrap_or(&EMPTY))
    }
}

/// What `apply` needs of each kind it keeps.
trait Kept {
    /// The kind, for messages.
    const KIND: &'static str;
    fn metadata(&self) -> &ObjectMeta;
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
    /// The immutable subject, for the kinds that have one.
    fn subject(&self) -> Option<&str>;
    /// The immutable `spec.registryRef`, for the kinds that have one.
    fn registry_ref(&self) -> Option<&RegistryRef> {
        None
    }
    /// Takes the desired state (spec or data) of `applied`; true when it changed.
    fn take_desired(&mut self, applied: Self) -> bool;
    /// Forgets any status a manifest carried: only reconciles write it.
    fn clear_status(&mut self);
}

/// The kinds with a spec and a status: Schema and SubjectConfig (whose
/// subject is immutable), SchemaPolicy and Namespace (which have none).
macro_rules! kept_with_spec {
    ($($kind:ident => $subject:expr $(, $registry_ref:expr)?);* $(;)?) => {$(
        impl Kept for $kind {
            const KIND: &'static str = stringify!($kind);
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
            fn subject(&self) -> Option<&str> {
                let subject: fn(&$kind) -> Option<&str> = $subject;
                subject(self)
            }
            $(fn registry_ref(&self) -> Option<&RegistryRef> {
                let registry_ref: fn(&$kind) -> Option<&RegistryRef> = $registry_ref;
                registry_ref(self)
            })?
            fn take_desired(&mut self, applied: Self) -> bool {
                let changed = self.spec != applied.spec;
                self.spec = applied.spec;
                changed
            }
            fn clear_status(&mut self) {
                self.status = None;
            }
        }
    )*};
}

kept_with_spec!(
    Schema => |schema| Some(&schema.spec.subject), |schema| schema.spec.registry_ref.as_ref();
    SubjectConfig => |config| Some(&config.spec.subject), |config| config.spec.registry_ref.as_ref();
    SchemaPolicy => |_| None;
    Namespace => |_| None;
    SchemaRegistry => |_| None;
    ClusterSchemaRegistry => |_| None;
);

impl Kept for ConfigMap {
    const KIND: &'static str = "ConfigMap";
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    fn subject(&self) -> Option<&str> {
        None
    }
    fn take_desired(&mut self, applied: Self) -> bool {
        let changed = self.data != applied.data || self.binary_data != applied.binary_data;
        self.data = applied.data;
        self.binary_data = applied.binary_data;
        changed
    }
    fn clear_status(&mut self) {}
}

/// Applies `applied` as an edit of the object with its namespace and name, or as a new one.
fn upsert<T: Kept>(kept: &mut Vec<T>, mut applied: T, now: &Time) -> Result<(), String> {
    let Some(stored) = kept
        .iter_mut()
        .find(|stored| same_object(stored.metadata(), applied.metadata()))
    else {
        create(T::KIND, applied.metadata_mut(), now);
        applied.clear_status();
        kept.push(applied);
        return Ok(());
    };
    if stored.subject() != applied.subject() {
        return Err(format!(
            "spec.subject is immutable: {} {} manages `{}`",
            T::KIND,
            stored.metadata().name.as_deref().unwrap_or_default(),
            stored.subject().unwrap_or_default()
        ));
    }
    if stored.registry_ref() != applied.registry_ref() {
        let named = |reference: Option<&RegistryRef>| reference.map_or_else(|| "none".to_owned(), ToString::to_string);
        return Err(format!(
            "spec.registryRef is immutable: {} {} is bound to {} (moving a subject between registries is not an \
             edit; delete the object and create it anew)",
            T::KIND,
            stored.metadata().name.as_deref().unwrap_or_default(),
            named(stored.registry_ref())
        ));
    }
    let metadata = applied.metadata().clone();
    let changed = stored.take_desired(applied);
    edit(stored.metadata_mut(), metadata, changed);
    Ok(())
}

fn same_object(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    a.namespace == b.namespace && a.name == b.name
}

/// Stamps a new object as the API server does.
fn create(kind: &str, metadata: &mut ObjectMeta, now: &Time) {
    metadata.generation = Some(1);
    metadata.creation_timestamp = Some(now.clone());
    metadata.uid = Some(uid(kind, metadata, now));
    metadata.resource_version = None;
}

/// Takes the manifest's labels and annotations; bumps the generation when the spec changed.
fn edit(stored: &mut ObjectMeta, applied: ObjectMeta, spec_changed: bool) {
    stored.labels = applied.labels;
    stored.annotations = applied.annotations;
    if spec_changed {
        stored.generation = Some(stored.generation.unwrap_or(0) + 1);
    }
}

/// A stable, unique-enough ID from the object's kind, key and creation
/// time: a Schema and a SubjectConfig of one name are different objects.
fn uid(kind: &str, metadata: &ObjectMeta, now: &Time) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(kind);
    hasher.update([0]);
    hasher.update(metadata.namespace.as_deref().unwrap_or_default());
    hasher.update([0]);
    hasher.update(metadata.name.as_deref().unwrap_or_default());
    hasher.update([0]);
    hasher.update(now.0.to_string());
    let hex: String = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

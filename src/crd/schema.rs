//! The `Schema` resource: one subject's schema, with the outcome of its
//! compatibility check in its status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

pub use crate::registry::contract::{Metadata, RuleSet};

/// A schema for one subject of the registry. schemaops checks every change
/// against the subject's earlier versions under its compatibility level, and
/// registers it only when it is compatible.
// Each printer column repeats `type_ = …`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[kube(
    group = "schemaops.dev",
    version = "v1alpha1",
    kind = "Schema",
    namespaced,
    status = "SchemaStatus",
    shortname = "sch",
    category = "schemaops",
    doc = "A schema for one subject of a Kafka schema registry. schemaops checks every change of `spec.schema` against the subject's earlier versions under its compatibility level and registers it as a new version only when it is compatible; `status` says which version and ID it got, or every breaking change that kept it out.",
    printcolumn(name = "Subject", type_ = "string", json_path = ".spec.subject"),
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.schemaType"),
    printcolumn(name = "Version", type_ = "integer", json_path = ".status.version"),
    printcolumn(name = "ID", type_ = "integer", json_path = ".status.id"),
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
#[x_kube(validation = Rule::new("has(self.schema) != has(self.schemaFrom)").message("set exactly one of schema and schemaFrom"))]
#[x_kube(validation = Rule::new("has(self.registryRef) == has(oldSelf.registryRef)").message("registryRef cannot be added or removed after creation"))]
#[serde(rename_all = "camelCase")]
pub struct SchemaSpec {
    /// The registry subject this schema is a version of, e.g. `orders-value`. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("subject is immutable"))]
    pub subject: String,
    /// The registry this object lives in: `{kind: SchemaRegistry, name: …}` (in this namespace)
    /// or `{kind: ClusterSchemaRegistry, name: …}`. Absent: the install's default registry.
    /// Immutable: it cannot be added, changed or removed once the object exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("registryRef is immutable"))]
    pub registry_ref: Option<super::RegistryRef>,
    /// The schema language: AVRO (the default), JSON or PROTOBUF.
    #[serde(default)]
    pub schema_type: SchemaType,
    /// The schema text, inline. Exactly one of `schema` and `schemaFrom` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Where to read the schema text from instead: a key of a ConfigMap in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_from: Option<SchemaFrom>,
    /// Other subjects' versions this schema refers to (Avro named types, Protobuf imports, JSON `$ref`s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<SchemaReferenceSpec>,
    /// Data-contract metadata registered with the schema: `tags` by element path, free-form
    /// `properties`, and `sensitive` property names. Part of the schema's identity: a change of
    /// metadata alone registers a new version. The subject's configured defaults and overrides
    /// are merged in (status.metadata shows the result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Data-contract rules registered with the schema: `migrationRules` (UPGRADE, DOWNGRADE,
    /// UPDOWN), `domainRules` and `encodingRules` (WRITE, READ, WRITEREAD), as Confluent's
    /// serializers run them. Part of the schema's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_set: Option<RuleSet>,
    /// What happens in the registry when this resource is deleted: Retain (the default) leaves the
    /// subject as it is, SoftDelete soft-deletes it, HardDelete removes it for good.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Manage (the default) registers the schema; Observe never writes to the registry and only
    /// reports, in `status.observation`, what the registry holds and what Manage would do.
    #[serde(default, skip_serializing_if = "ManagementPolicy::is_manage")]
    #[schemars(extend("default" = "Manage"))]
    pub management_policy: ManagementPolicy,
}

/// A schema language.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SchemaType {
    /// Apache Avro.
    #[default]
    Avro,
    /// JSON Schema.
    Json,
    /// Protocol Buffers.
    Protobuf,
}

/// Where a schema's text comes from.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaFrom {
    /// A key of a ConfigMap in the Schema's namespace.
    pub config_map_key_ref: ConfigMapKeyRef,
}

/// A key of a ConfigMap.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
pub struct ConfigMapKeyRef {
    /// The ConfigMap's name.
    pub name: String,
    /// The key whose value is the schema text.
    pub key: String,
}

/// A reference to a version of another subject.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
pub struct SchemaReferenceSpec {
    /// The name this schema uses: an Avro full name, a .proto import path, or a JSON `$ref` URL.
    pub name: String,
    /// The referenced subject.
    pub subject: String,
    /// The referenced version (1 or more).
    #[schemars(range(min = 1))]
    pub version: i32,
}

/// What deleting a Schema does in the registry.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, schemars::JsonSchema)]
pub enum DeletionPolicy {
    /// Leave the subject and its versions in the registry.
    #[default]
    Retain,
    /// Soft-delete the subject (its versions stay readable by ID).
    SoftDelete,
    /// Soft-delete, then remove the subject for good.
    HardDelete,
}

/// What schemaops last did with a Schema.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The subject the schema is registered under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The registry version that holds the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// The registry's global ID of the schema (what Kafka records carry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i32>,
    /// SHA-256 of the schema's canonical form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The versions this Schema registered (or adopted) itself, ascending, the newest
    /// [`SchemaStatus::OWN_VERSIONS_KEPT`]: a spec equal to one of them is a revert, and only a
    /// later version that is not among them is drift.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_versions: Vec<i32>,
    /// The schema's GUID, as Confluent computes it: what the newest serializers put in a record
    /// header instead of the ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<String>,
    /// The metadata the registry holds for the version: the spec's, with the subject's
    /// configured defaults and overrides merged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Ready, Stalled and Reconciling, following the Kubernetes API conventions (kstatus).
    #[serde(default)]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The last compatibility check: the level, the versions checked, and every incompatibility found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityStatus>,
    /// With `managementPolicy: Observe`: what the registry holds and what Manage would do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
}

/// What an observed Schema found.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The registry version that holds this spec's schema, when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_version: Option<i32>,
    /// The subject's latest live version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_version: Option<i32>,
    /// Whether the spec's schema is the subject's latest version.
    pub matches_latest: bool,
    /// Whether Manage would find the schema compatible; absent when it would not check it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub would_be_compatible: Option<bool>,
    /// What Manage would do, in a sentence.
    pub manage_would: String,
}

/// Whether schemaops writes to the registry for a resource.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq, schemars::JsonSchema)]
pub enum ManagementPolicy {
    /// Register and configure as the spec says.
    #[default]
    Manage,
    /// Write nothing; report what the registry holds and what Manage would do.
    Observe,
}

impl ManagementPolicy {
    /// Whether this is the default, Manage.
    pub fn is_manage(&self) -> bool {
        *self == ManagementPolicy::Manage
    }
}

impl SchemaStatus {
    /// How many of its own versions a Schema's status remembers.
    pub const OWN_VERSIONS_KEPT: usize = 100;

    /// The versions this Schema registered or adopted: `ownVersions`, or
    /// `version` for a status written before `ownVersions` existed.
    pub fn own(&self) -> impl Iterator<Item = i32> + '_ {
        let legacy = self.version.filter(|_| self.own_versions.is_empty());
        self.own_versions.iter().copied().chain(legacy)
    }

    /// Remembers `version` as one of this Schema's own.
    pub fn remember_own(&mut self, version: i32) {
        if let Err(at) = self.own_versions.binary_search(&version) {
            self.own_versions.insert(at, version);
        }
        let excess = self.own_versions.len().saturating_sub(Self::OWN_VERSIONS_KEPT);
        self.own_versions.drain(..excess);
    }

    /// The `Drifted=True` condition, when the subject moved on outside
    /// schemaops (a newer version registered, or the Schema's own deleted).
    pub fn drift(&self) -> Option<&Condition> {
        super::conditions::find_condition(&self.conditions, super::conditions::ConditionType::Drifted)
            .filter(|condition| condition.status == "True")
    }
}

/// The outcome of a compatibility check.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityStatus {
    /// The level checked, e.g. BACKWARD.
    pub mode: String,
    /// The registry versions checked, newest first.
    #[serde(default)]
    pub checked_versions: Vec<i32>,
    /// The incompatibilities found, at most 20; `total` counts them all.
    #[serde(default)]
    pub incompatibilities: Vec<IncompatibilityStatus>,
    /// How many incompatibilities there are in all.
    pub total: i32,
}

/// One incompatibility.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, schemars::JsonSchema)]
pub struct IncompatibilityStatus {
    /// Its kind, e.g. READER_FIELD_MISSING_DEFAULT_VALUE.
    pub kind: String,
    /// Where it is: a JSON Pointer into the schema, e.g. `/fields/3/type`.
    pub path: String,
    /// The registry version it breaks against.
    pub version: i32,
    /// What changed and who breaks, in a sentence.
    pub message: String,
}

//! The `SubjectConfig` resource: the compatibility level and mode of one
//! subject, with the values in force in its status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::registry::contract::ContractConfig;

/// The policy of one registry subject. A field left out (or the resource
/// deleted) falls back to the registry's global setting.
// Each printer column repeats `type_ = …`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[kube(
    group = "schemaops.dev",
    version = "v1alpha1",
    kind = "SubjectConfig",
    namespaced,
    status = "SubjectConfigStatus",
    shortname = "subcfg",
    category = "schemaops",
    doc = "The compatibility level, mode and data-contract settings of one registry subject. schemaops writes them to the registry and reports in `status` the values in force and where they come from; a field left out (or the resource deleted) falls back to the registry's global setting.",
    printcolumn(name = "Subject", type_ = "string", json_path = ".spec.subject"),
    printcolumn(name = "Compatibility", type_ = "string", json_path = ".status.compatibility"),
    printcolumn(name = "Mode", type_ = "string", json_path = ".status.mode"),
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
#[x_kube(validation = Rule::new("has(self.registryRef) == has(oldSelf.registryRef)").message("registryRef cannot be added or removed after creation"))]
#[serde(rename_all = "camelCase")]
pub struct SubjectConfigSpec {
    /// The registry subject, e.g. `orders-value`. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("subject is immutable"))]
    pub subject: String,
    /// The registry this object lives in: `{kind: SchemaRegistry, name: …}` (in this namespace)
    /// or `{kind: ClusterSchemaRegistry, name: …}`. Absent: the install's default registry.
    /// Immutable: it cannot be added, changed or removed once the object exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("registryRef is immutable"))]
    pub registry_ref: Option<super::RegistryRef>,
    /// The compatibility level new versions are checked under. Absent: the registry's global level
    /// (BACKWARD unless changed). Deleting the SubjectConfig removes the level, unless a
    /// SchemaPolicy forbids the global level the subject would fall back to: then the webhook
    /// refuses the deletion, or the level stays and the deletion waits (`DeletionBlocked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityLevel>,
    /// READWRITE, or READONLY to refuse new versions. Absent: the registry's global mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SubjectMode>,
    /// The data-contract settings (Confluent's `/config` fields beside the level):
    /// `compatibilityGroup`, `defaultMetadata`, `overrideMetadata`, `defaultRuleSet`,
    /// `overrideRuleSet`, `normalize`, `alias`, `aliasForDeks`, `validateFields`,
    /// `validateNewSchemas`, `validateRules` and `compatibilityPolicy`. Those left out are removed
    /// from the subject.
    #[serde(flatten)]
    pub contract: ContractConfig,
    /// Manage (the default) writes the settings; Observe never writes to the registry and only
    /// reports, in `status.observation`, whether the registry holds them and what Manage would do.
    #[serde(default, skip_serializing_if = "super::ManagementPolicy::is_manage")]
    #[schemars(extend("default" = "Manage"))]
    pub management_policy: super::ManagementPolicy,
}

/// A compatibility level, with Confluent's names.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompatibilityLevel {
    /// The new schema reads data written with the latest version.
    Backward,
    /// The new schema reads data written with every version.
    BackwardTransitive,
    /// The latest version reads data written with the new schema.
    Forward,
    /// Every version reads data written with the new schema.
    ForwardTransitive,
    /// Backward and forward against the latest version.
    Full,
    /// Backward and forward against every version.
    FullTransitive,
    /// No check.
    None,
}

/// The write mode of a subject.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SubjectMode {
    /// New versions may be registered.
    Readwrite,
    /// New versions are refused.
    Readonly,
}

/// Where a setting in force comes from.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingSource {
    /// The subject's own setting.
    Subject,
    /// The registry's global setting.
    Global,
}

/// The settings in force for the subject.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubjectConfigStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The subject this resource manages; set once it owns the subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The compatibility level in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityLevel>,
    /// Where the level in force comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility_source: Option<SettingSource>,
    /// The mode in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SubjectMode>,
    /// Where the mode in force comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_source: Option<SettingSource>,
    /// Ready, Stalled and Reconciling, following the Kubernetes API conventions (kstatus).
    #[serde(default)]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// With `managementPolicy: Observe`: whether the registry holds the spec's settings and what
    /// Manage would do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<ConfigObservation>,
}

/// What an observed SubjectConfig found.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigObservation {
    /// Whether the registry already holds the spec's settings for the subject.
    pub matches: bool,
    /// What Manage would do, in a sentence.
    pub manage_would: String,
}

//! The `SchemaPolicy` resource: a platform team's rules for the Schemas and
//! SubjectConfigs of the namespaces it matches (who may manage which subject,
//! the compatibility floor, allowed deletion policies, modes, schema types and
//! names), and what happens to an object that breaks one (Deny, Warn, Audit).
//!
//! Cluster-scoped, like Kubernetes' own ValidatingAdmissionPolicy: a tenant
//! cannot write one, so a tenant cannot lower the floor it must clear. The
//! evaluation lives in [`crate::policy`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::{CompatibilityLevel, DeletionPolicy, SchemaType};

/// A platform policy over Schemas and SubjectConfigs. Every policy that
/// matches an object applies, and the strictest outcome wins.
// Each printer column repeats `type_ = …`, which clippy takes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[kube(
    group = "schemaops.dev",
    version = "v1alpha1",
    kind = "SchemaPolicy",
    doc = "A platform team's rules for the Schemas and SubjectConfigs of the namespaces it matches: which subjects a namespace may manage, the lowest compatibility level, the deletion policies, modes, schema types and names allowed, and CEL rules. Every matching policy applies; Deny refuses at admission and reconcile, Warn and Audit report.",
    status = "SchemaPolicyStatus",
    shortname = "schpol",
    category = "schemaops",
    printcolumn(name = "Actions", type_ = "string", json_path = ".spec.validationActions"),
    printcolumn(name = "Matched", type_ = "integer", json_path = ".status.matched"),
    printcolumn(name = "Violations", type_ = "integer", json_path = ".status.violations"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct SchemaPolicySpec {
    /// Which objects the policy applies to. Empty: every Schema and SubjectConfig.
    #[serde(default, rename = "match")]
    pub match_: PolicyMatch,
    /// The rules a matched object must follow.
    #[serde(default)]
    pub rules: PolicyRules,
    /// What a violation does: Deny refuses the change, Warn lets it through with an admission
    /// warning and a `PolicyWarning` condition, Audit only records an event and a metric.
    /// Default: Deny. Deny and Warn cannot be combined.
    // At most three (one of each); the bound also keeps the CEL rule's estimated cost small.
    #[serde(default = "default_actions")]
    #[schemars(length(max = 3))]
    #[x_kube(validation = Rule::new("!('Deny' in self && 'Warn' in self)").message("Deny and Warn cannot be combined"))]
    pub validation_actions: Vec<ValidationAction>,
}

fn default_actions() -> Vec<ValidationAction> {
    vec![ValidationAction::Deny]
}

/// Which objects a policy applies to; every field set must match.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyMatch {
    /// The labels of the object's namespace. Not consulted by the registry's REST API, which
    /// cannot tell which namespace a caller acts for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// The namespaces, by name. Empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Subject patterns: `*` matches any run of characters, `?` one character, and
    /// `{namespace}` the object's namespace, `{namespace_}` the same with every `-` as `_`. Empty:
    /// any subject.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    /// The schema types of the Schemas matched. Empty: any. SubjectConfigs, which have no type,
    /// are matched whatever this says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_types: Vec<SchemaType>,
    /// The registries the objects matched live in (`spec.registryRef`, or the install's default
    /// registry). Empty: any. Not consulted by the registry's REST API.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub registries: Vec<PolicyRegistry>,
}

/// A registry as a policy names it: a registry connection by kind and name (a pattern), or the
/// install's default registry (`kind: Default`, no name).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, KubeSchema)]
#[x_kube(validation = Rule::new("self.kind == 'Default' ? !has(self.name) : has(self.name)").message("name is required for SchemaRegistry and ClusterSchemaRegistry, and not allowed for Default"))]
#[serde(rename_all = "camelCase")]
pub struct PolicyRegistry {
    /// `SchemaRegistry` (in the object's own namespace), `ClusterSchemaRegistry`, or `Default`.
    pub kind: PolicyRegistryKind,
    /// The connection's name: `*` matches any run of characters, `?` one character, and
    /// `{namespace}` the object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
}

/// What kind of registry a policy names.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
pub enum PolicyRegistryKind {
    /// The install's default registry: objects without `spec.registryRef`.
    Default,
    /// A namespaced SchemaRegistry.
    SchemaRegistry,
    /// A ClusterSchemaRegistry.
    ClusterSchemaRegistry,
}

/// The registries the matched namespaces may use.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq, schemars::JsonSchema)]
pub struct RegistriesRule {
    /// The registries allowed; an object bound to any other (or, without `Default` here, to the
    /// default registry) is refused.
    #[schemars(length(max = 64))]
    pub allowed: Vec<PolicyRegistry>,
}

/// The rules of a policy; a rule left out allows anything.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRules {
    /// The subjects the matched namespaces may manage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subjects: Option<SubjectsRule>,
    /// The compatibility levels a subject may have: what a SubjectConfig sets, and the registry's
    /// global level a subject without one falls back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityRule>,
    /// The `deletionPolicy` values a Schema may choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policies: Option<Vec<DeletionPolicy>>,
    /// The modes a subject may be given (by a SubjectConfig or `PUT /mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<ModeName>>,
    /// The schema types a Schema may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_types: Option<Vec<SchemaType>>,
    /// The registries the matched namespaces may use (`spec.registryRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registries: Option<RegistriesRule>,
    /// Patterns the names inside a schema must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<NamingRule>,
    /// When true, every field of every Avro record must have a `doc`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_field_docs: bool,
    /// CEL expressions that must be true, over `object`, `oldObject` (null on create) and
    /// `schema` (a summary of the parsed schema: `type` (AVRO, JSON or PROTOBUF), `name`,
    /// `namespace`, `package`, `id`, `fields`; null while a Schema is judged on its spec alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validations: Vec<CelValidation>,
}

/// The subjects the matched namespaces may manage.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
pub struct SubjectsRule {
    /// Subject patterns (`*`, `?`, `{namespace}`, `{namespace_}`), e.g. `{namespace}.*`. A subject outside every
    /// pattern is refused even when nobody manages it yet.
    pub allowed: Vec<String>,
}

/// The compatibility levels allowed. With both fields set, a level must satisfy both.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityRule {
    /// The levels allowed, e.g. everything but NONE.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<CompatibilityLevel>,
    /// The floor: a level must guarantee at least what this one does. NONE is below every level;
    /// BACKWARD and FORWARD are incomparable; FULL is above both; a transitive level is above its
    /// plain one (FULL_TRANSITIVE is above every level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<CompatibilityLevel>,
}

/// A subject mode, with Confluent's names.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ModeName {
    /// New versions may be registered.
    Readwrite,
    /// New versions are refused.
    Readonly,
    /// Reads only, overriding subject modes.
    ReadonlyOverride,
    /// Versions are written with chosen IDs, unchecked.
    Import,
}

impl ModeName {
    /// Confluent's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ModeName::Readwrite => "READWRITE",
            ModeName::Readonly => "READONLY",
            ModeName::ReadonlyOverride => "READONLY_OVERRIDE",
            ModeName::Import => "IMPORT",
        }
    }
}

/// Patterns (`*`, `?`, `{namespace}`, and `{namespace_}`: the namespace with every `-` as `_`, since
/// Avro namespaces and Protobuf packages cannot hold `-`) the names inside a schema must match.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamingRule {
    /// The namespace of an Avro schema's named types at the top, e.g. `com.acme.{namespace_}.*`: the top-level
    /// record, enum or fixed, or each one in a top-level union (`[record, "null"]`). A schema with
    /// none (a primitive such as a `"string"` key, an array, a map) has no name to judge and passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avro_namespace: Option<String>,
    /// The package of a Protobuf schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protobuf_package: Option<String>,
    /// The `$id` of a JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_id: Option<String>,
}

/// A CEL expression that must be true.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, schemars::JsonSchema)]
pub struct CelValidation {
    /// The expression, e.g. `object.metadata.name.startsWith("orders")`.
    pub expression: String,
    /// What the refusal says when the expression is false. Default: the expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a violation of a policy does.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, schemars::JsonSchema)]
pub enum ValidationAction {
    /// Refuse the change: admission denies it, the reconcile writes nothing to the registry.
    Deny,
    /// Let the change through with an admission warning and a `PolicyWarning` condition.
    Warn,
    /// Let the change through; record an event and a metric.
    Audit,
}

/// What the operator last found about a policy.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaPolicyStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready (False with reason InvalidPolicy when the policy cannot be used).
    #[serde(default)]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// How many Schemas and SubjectConfigs the policy matches.
    #[serde(default)]
    pub matched: i64,
    /// How many of them violate it now.
    #[serde(default)]
    pub violations: i64,
}

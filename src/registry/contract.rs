//! Data contracts: the `metadata` and `ruleSet` a schema carries, as
//! Confluent's clients send them, with the checks the registry applies
//! before storing them and the merge of a subject's configured defaults and
//! overrides into what a registration stores.
//!
//! Pure: no I/O. Maps and sets are ordered, so a contract serializes the
//! same way however it was sent, and its JSON can take part in a schema's
//! identity.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};

/// Tags, properties and sensitive names attached to a schema.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Tags by the path of the element they mark (`Order.card_number` → `[PII]`).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub tags: BTreeMap<String, BTreeSet<String>>,
    /// Free-form properties (`owner`, `application.major_version`, …).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub properties: BTreeMap<String, String>,
    /// Names of properties whose values are secret.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeSet::is_empty"
    )]
    pub sensitive: BTreeSet<String>,
}

impl Metadata {
    /// True when it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty() && self.properties.is_empty() && self.sensitive.is_empty()
    }

    /// `other` laid over `self`: tags and properties of `other` replace
    /// those of the same key, sensitive names are united.
    pub fn merged_with(&self, other: &Metadata) -> Metadata {
        let mut merged = self.clone();
        for (path, tags) in &other.tags {
            merged.tags.insert(path.clone(), tags.clone());
        }
        for (key, value) in &other.properties {
            merged.properties.insert(key.clone(), value.clone());
        }
        merged.sensitive.extend(other.sensitive.iter().cloned());
        merged
    }
}

/// What a rule does: checks a condition or transforms values.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum RuleKind {
    /// Transforms a value (encryption, migration); a rule without a kind.
    #[default]
    Transform,
    /// Checks a value (a CEL data-quality rule).
    Condition,
}

/// When a rule runs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum RuleMode {
    /// Migrating a record to a newer version.
    Upgrade,
    /// Migrating a record to an older version.
    Downgrade,
    /// Both migrations.
    Updown,
    /// Writing (serializing).
    Write,
    /// Reading (deserializing).
    Read,
    /// Both writing and reading; a rule without a mode.
    #[default]
    Writeread,
}

impl RuleMode {
    /// Confluent's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleMode::Upgrade => "UPGRADE",
            RuleMode::Downgrade => "DOWNGRADE",
            RuleMode::Updown => "UPDOWN",
            RuleMode::Write => "WRITE",
            RuleMode::Read => "READ",
            RuleMode::Writeread => "WRITEREAD",
        }
    }

    fn is_migration(self) -> bool {
        matches!(self, RuleMode::Upgrade | RuleMode::Downgrade | RuleMode::Updown)
    }
}

/// One rule of a rule set.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Unique within the rule set.
    #[serde(default)]
    pub name: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// TRANSFORM (when absent) or CONDITION.
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: RuleKind,
    /// When it runs (WRITEREAD when absent).
    #[serde(default, deserialize_with = "null_as_default")]
    pub mode: RuleMode,
    /// The executor (`CEL`, `CEL_FIELD`, `ENCRYPT`, `JSONATA`, …).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub rule_type: Option<String>,
    /// The tags of the fields it applies to.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeSet::is_empty"
    )]
    pub tags: BTreeSet<String>,
    /// Parameters of the executor.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub params: BTreeMap<String, String>,
    /// The expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
    /// The action when it passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<String>,
    /// The action when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<String>,
    /// Whether it is switched off.
    #[serde(default, deserialize_with = "null_as_default")]
    pub disabled: bool,
}

/// The rules of a schema, by the phase they run in.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct RuleSet {
    /// Rules that move records between versions (UPGRADE, DOWNGRADE, UPDOWN).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub migration_rules: Vec<Rule>,
    /// Rules on the values themselves (WRITE, READ, WRITEREAD).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub domain_rules: Vec<Rule>,
    /// Rules on the encoded bytes (WRITE, READ, WRITEREAD).
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub encoding_rules: Vec<Rule>,
    /// Where the rules run; absent, wherever the client decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_at: Option<ExecutionEnvironment>,
}

/// Where a rule set's rules run: Confluent's `ExecutionEnvironment`. Any
/// other value makes the request malformed (400), as it does for Confluent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum ExecutionEnvironment {
    /// Everywhere.
    All,
    /// In the serializers and deserializers.
    Client,
    /// In a gateway between clients and brokers.
    Gateway,
    /// In the registry.
    Server,
    /// Nowhere: the rules are switched off.
    None,
}

impl ExecutionEnvironment {
    /// Confluent's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionEnvironment::All => "ALL",
            ExecutionEnvironment::Client => "CLIENT",
            ExecutionEnvironment::Gateway => "GATEWAY",
            ExecutionEnvironment::Server => "SERVER",
            ExecutionEnvironment::None => "NONE",
        }
    }
}

impl RuleSet {
    /// True when it holds no rule.
    pub fn is_empty(&self) -> bool {
        self.migration_rules.is_empty() && self.domain_rules.is_empty() && self.encoding_rules.is_empty()
    }

    /// `other` laid over `self`, list by list: the rules of `self` that
    /// `other` does not rename stay in order, then come those of `other`;
    /// `other`'s `enableAt` wins when it has one.
    pub fn merged_with(&self, other: &RuleSet) -> RuleSet {
        RuleSet {
            migration_rules: merge_rules(&self.migration_rules, &other.migration_rules),
            domain_rules: merge_rules(&self.domain_rules, &other.domain_rules),
            encoding_rules: merge_rules(&self.encoding_rules, &other.encoding_rules),
            enable_at: other.enable_at.or(self.enable_at),
        }
    }

    /// Checks every rule as Confluent's `RuleSet.validate` does: a name
    /// of at most 64 letters, digits, `_` and `-` that starts with a letter
    /// or `_` and is unique across the three lists; a type; a mode that fits
    /// its list; several actions (`a,b`) only for WRITEREAD and UPDOWN.
    ///
    /// # Errors
    /// Every problem, each naming the list and the rule.
    pub fn validate(&self) -> Result<(), InvalidRuleSet> {
        let mut problems = Vec::new();
        let mut names = BTreeSet::new();
        let lists = [
            ("migrationRules", &self.migration_rules, true),
            ("domainRules", &self.domain_rules, false),
            ("encodingRules", &self.encoding_rules, false),
        ];
        for (list, rules, migration) in lists {
            for (index, rule) in rules.iter().enumerate() {
                let at = format!("{list}[{index}]");
                match rule.name.as_deref() {
                    None => problems.push(format!("{at}: missing rule name")),
                    Some("") => problems.push(format!("{at}: empty rule name")),
                    Some(name) if name.len() > MAX_RULE_NAME => {
                        problems.push(format!("{at}: rule name is longer than {MAX_RULE_NAME} characters"));
                    }
                    Some(name) if !is_valid_rule_name(name) => problems.push(format!(
                        "{at}: illegal character in rule name `{name}` (it must start with a letter or `_` and \
                         hold only letters, digits, `_` and `-`)"
                    )),
                    Some(name) if !names.insert(name) => {
                        problems.push(format!("{at}: found rule with duplicate name `{name}`"));
                    }
                    Some(_) => {}
                }
                if rule.rule_type.as_deref().is_none_or(str::is_empty) {
                    problems.push(format!("{at}: missing rule type"));
                }
                if migration != rule.mode.is_migration() {
                    let allowed = if migration {
                        "UPGRADE, DOWNGRADE or UPDOWN"
                    } else {
                        "WRITE, READ or WRITEREAD"
                    };
                    problems.push(format!(
                        "{at}: {list} can only be {allowed}, not {}",
                        rule.mode.as_str()
                    ));
                }
                let several = [&rule.on_success, &rule.on_failure]
                    .into_iter()
                    .flatten()
                    .any(|action| action.contains(','));
                if several && !matches!(rule.mode, RuleMode::Writeread | RuleMode::Updown) {
                    problems.push(format!(
                        "{at}: multiple actions are only valid with WRITEREAD and UPDOWN"
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidRuleSet { problems })
        }
    }
}

/// The longest rule name Confluent accepts.
const MAX_RULE_NAME: usize = 64;

/// Why a rule set was refused: every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rule set: {}", problems.join("; "))]
pub struct InvalidRuleSet {
    /// Each problem, naming its rule.
    pub problems: Vec<String>,
}

fn is_valid_rule_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
}

/// The rules of `base` whose names `over` does not use, in order, then those of `over`.
fn merge_rules(base: &[Rule], over: &[Rule]) -> Vec<Rule> {
    base.iter()
        .filter(|rule| !over.iter().any(|newer| newer.name == rule.name))
        .chain(over)
        .cloned()
        .collect()
}

/// A schema's data contract: what identity adds to the text and references.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contract {
    /// Its metadata, when it has any (boxed: most schemas have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Box<Metadata>>,
    /// Its rules, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_set: Option<Box<RuleSet>>,
}

impl Contract {
    /// True when it carries neither metadata nor rules.
    pub fn is_empty(&self) -> bool {
        self.metadata.is_none() && self.rule_set.is_none()
    }

    /// The same contract with empty parts dropped, so `{}` and absent are one identity.
    pub fn normalized(self) -> Contract {
        Contract {
            metadata: self.metadata.filter(|metadata| !metadata.is_empty()),
            rule_set: self.rule_set.filter(|rules| !rules.is_empty()),
        }
    }

    /// This contract (a registration's) with each part it lacks taken from
    /// `previous` (the subject's newest version's), as Confluent fills it.
    pub fn or_inherited(&self, previous: Option<&Contract>) -> Contract {
        Contract {
            metadata: self
                .metadata
                .clone()
                .or_else(|| previous.and_then(|previous| previous.metadata.clone())),
            rule_set: self
                .rule_set
                .clone()
                .or_else(|| previous.and_then(|previous| previous.rule_set.clone())),
        }
    }

    /// The value of a metadata property.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.metadata
            .as_ref()
            .and_then(|metadata| metadata.properties.get(key))
            .map(String::as_str)
    }
}

/// A subject's (or the registry's) data-contract settings, beside its
/// compatibility level: Confluent's `/config` fields other than the level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContractConfig {
    /// The metadata property whose value splits a subject's versions into
    /// lineages: a new version is checked only against its own lineage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility_group: Option<String>,
    /// Metadata a registration starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_metadata: Option<Metadata>,
    /// Metadata laid over every registration's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_metadata: Option<Metadata>,
    /// Rules a registration starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_rule_set: Option<RuleSet>,
    /// Rules laid over every registration's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_rule_set: Option<RuleSet>,
    /// Whether registrations and lookups normalize schemas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize: Option<bool>,
    /// Another subject this one stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Another subject whose data-encryption keys this one uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_for_deks: Option<String>,
    /// Whether Confluent's server checks Avro field names. Stored and given back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_fields: Option<bool>,
    /// Whether Confluent's server validates new schemas more strictly. Stored and given back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_new_schemas: Option<bool>,
    /// Whether Confluent's server checks rule expressions. Stored and given back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate_rules: Option<bool>,
    /// How strictly Confluent compares schemas (LOGICAL, STRICT, LENIENT). Stored and given back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility_policy: Option<CompatibilityPolicy>,
}

/// Confluent's `CompatibilityPolicy`: read in any case; a name outside the
/// three reads as none, as Confluent's `forName` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum CompatibilityPolicy {
    /// Compare what the schemas mean.
    Logical,
    /// Compare strictly.
    Strict,
    /// Compare leniently.
    Lenient,
}

impl CompatibilityPolicy {
    /// The policy a name stands for, in any case; `None` for any other name.
    pub fn by_name(name: &str) -> Option<CompatibilityPolicy> {
        match name.to_ascii_uppercase().as_str() {
            "LOGICAL" => Some(CompatibilityPolicy::Logical),
            "STRICT" => Some(CompatibilityPolicy::Strict),
            "LENIENT" => Some(CompatibilityPolicy::Lenient),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for CompatibilityPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        CompatibilityPolicy::by_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown compatibility policy `{name}`")))
    }
}

/// Reads a policy name that may be unknown: `null` and unknown names as
/// `Some(None)` (cleared, as Confluent stores them); with
/// `#[serde(default)]`, a missing field stays `None`.
fn policy_by_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<CompatibilityPolicy>>, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    Ok(Some(name.as_deref().and_then(CompatibilityPolicy::by_name)))
}

impl ContractConfig {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == ContractConfig::default()
    }

    /// Whether a version with contract `theirs` is checked against a new one
    /// with `mine`: always without a compatibility group; with one, when the
    /// group's metadata property has the same value in both (absent equals absent).
    pub fn same_lineage(&self, mine: &Contract, theirs: &Contract) -> bool {
        self.compatibility_group
            .as_deref()
            .is_none_or(|group| mine.property(group) == theirs.property(group))
    }

    /// True when it sets defaults or overrides to merge into registrations.
    pub fn has_defaults_or_overrides(&self) -> bool {
        self.default_metadata.is_some()
            || self.override_metadata.is_some()
            || self.default_rule_set.is_some()
            || self.override_rule_set.is_some()
    }

    /// Checks the rule sets it holds.
    ///
    /// # Errors
    /// The first invalid rule set, its problems prefixed by its field.
    pub fn validate(&self) -> Result<(), InvalidRuleSet> {
        for (field, rules) in [
            ("defaultRuleSet", &self.default_rule_set),
            ("overrideRuleSet", &self.override_rule_set),
        ] {
            if let Some(rules) = rules {
                rules.validate().map_err(|invalid| InvalidRuleSet {
                    problems: invalid
                        .problems
                        .into_iter()
                        .map(|problem| format!("{field}.{problem}"))
                        .collect(),
                })?;
            }
        }
        Ok(())
    }

    /// The contract a registration stores: the configured overrides laid
    /// over the `specific` contract (the request's, or the previous
    /// version's when the request carries none), itself laid over the
    /// configured defaults.
    pub fn merge(&self, specific: &Contract) -> Contract {
        let metadata = layer(
            self.default_metadata.as_ref(),
            specific.metadata.as_deref(),
            self.override_metadata.as_ref(),
            Metadata::merged_with,
        );
        let rule_set = layer(
            self.default_rule_set.as_ref(),
            specific.rule_set.as_deref(),
            self.override_rule_set.as_ref(),
            RuleSet::merged_with,
        );
        Contract {
            metadata: metadata.map(Box::new),
            rule_set: rule_set.map(Box::new),
        }
        .normalized()
    }
}

/// A change to data-contract settings, as `PUT /config` carries it: a field
/// left out keeps its value, `null` clears it, a value replaces it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigPatch {
    /// See [`ContractConfig::compatibility_group`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub compatibility_group: Option<Option<String>>,
    /// See [`ContractConfig::default_metadata`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Metadata>)]
    pub default_metadata: Option<Option<Metadata>>,
    /// See [`ContractConfig::override_metadata`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Metadata>)]
    pub override_metadata: Option<Option<Metadata>>,
    /// See [`ContractConfig::default_rule_set`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<RuleSet>)]
    pub default_rule_set: Option<Option<RuleSet>>,
    /// See [`ContractConfig::override_rule_set`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<RuleSet>)]
    pub override_rule_set: Option<Option<RuleSet>>,
    /// See [`ContractConfig::normalize`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub normalize: Option<Option<bool>>,
    /// See [`ContractConfig::alias`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub alias: Option<Option<String>>,
    /// See [`ContractConfig::alias_for_deks`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub alias_for_deks: Option<Option<String>>,
    /// See [`ContractConfig::validate_fields`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub validate_fields: Option<Option<bool>>,
    /// See [`ContractConfig::validate_new_schemas`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub validate_new_schemas: Option<Option<bool>>,
    /// See [`ContractConfig::validate_rules`].
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub validate_rules: Option<Option<bool>>,
    /// See [`ContractConfig::compatibility_policy`]; an unknown name clears it.
    #[serde(
        default,
        deserialize_with = "policy_by_name",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>)]
    pub compatibility_policy: Option<Option<CompatibilityPolicy>>,
}

impl ConfigPatch {
    /// True when it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == ConfigPatch::default()
    }

    /// The patch that sets every field to its value in `config` (clearing those it lacks).
    pub fn replacing_with(config: &ContractConfig) -> ConfigPatch {
        ConfigPatch {
            compatibility_group: Some(config.compatibility_group.clone()),
            default_metadata: Some(config.default_metadata.clone()),
            override_metadata: Some(config.override_metadata.clone()),
            default_rule_set: Some(config.default_rule_set.clone()),
            override_rule_set: Some(config.override_rule_set.clone()),
            normalize: Some(config.normalize),
            alias: Some(config.alias.clone()),
            alias_for_deks: Some(config.alias_for_deks.clone()),
            validate_fields: Some(config.validate_fields),
            validate_new_schemas: Some(config.validate_new_schemas),
            validate_rules: Some(config.validate_rules),
            compatibility_policy: Some(config.compatibility_policy),
        }
    }

    /// `config` with this patch applied.
    ///
    /// # Errors
    /// A rule set it sets that is not valid.
    pub fn apply(&self, config: &ContractConfig) -> Result<ContractConfig, InvalidRuleSet> {
        fn pick<T: Clone>(change: &Option<Option<T>>, current: &Option<T>) -> Option<T> {
            match change {
                None => current.clone(),
                Some(value) => value.clone(),
            }
        }
        let patched = ContractConfig {
            compatibility_group: pick(&self.compatibility_group, &config.compatibility_group),
            default_metadata: pick(&self.default_metadata, &config.default_metadata),
            override_metadata: pick(&self.override_metadata, &config.override_metadata),
            default_rule_set: pick(&self.default_rule_set, &config.default_rule_set),
            override_rule_set: pick(&self.override_rule_set, &config.override_rule_set),
            normalize: pick(&self.normalize, &config.normalize),
            alias: pick(&self.alias, &config.alias),
            alias_for_deks: pick(&self.alias_for_deks, &config.alias_for_deks),
            validate_fields: pick(&self.validate_fields, &config.validate_fields),
            validate_new_schemas: pick(&self.validate_new_schemas, &config.validate_new_schemas),
            validate_rules: pick(&self.validate_rules, &config.validate_rules),
            compatibility_policy: pick(&self.compatibility_policy, &config.compatibility_policy),
        };
        patched.validate()?;
        Ok(patched)
    }
}

/// Reads a field that is present: `null` as `Some(None)`; with
/// `#[serde(default)]`, a missing field stays `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `over` ∘ (`specific` ∘ `default`), where any part may be absent.
fn layer<T: Clone>(default: Option<&T>, specific: Option<&T>, over: Option<&T>, merge: fn(&T, &T) -> T) -> Option<T> {
    let base = match (default, specific) {
        (Some(default), Some(specific)) => Some(merge(default, specific)),
        (one, other) => one.or(other).cloned(),
    };
    match (base, over) {
        (Some(base), Some(over)) => Some(merge(&base, over)),
        (base, over) => base.or_else(|| over.cloned()),
    }
}

fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(deserializer: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, mode: RuleMode) -> Rule {
        Rule {
            name: Some(name.to_owned()),
            doc: None,
            kind: RuleKind::Condition,
            mode,
            rule_type: Some("CEL".to_owned()),
            tags: BTreeSet::new(),
            params: BTreeMap::new(),
            expr: Some("message.amount > 0".to_owned()),
            on_success: None,
            on_failure: None,
            disabled: false,
        }
    }

    #[test]
    fn a_rule_set_reports_every_problem_with_its_place() {
        let mut nameless = rule("x", RuleMode::Write);
        nameless.name = None;
        let mut typeless = rule("typeless", RuleMode::Write);
        typeless.rule_type = None;
        let mut two_actions = rule("twoActions", RuleMode::Write);
        two_actions.on_failure = Some("ERROR,NONE".to_owned());
        let set = RuleSet {
            migration_rules: vec![rule("up", RuleMode::Write)],
            domain_rules: vec![
                nameless,
                typeless,
                rule("1bad", RuleMode::Read),
                rule("up", RuleMode::Read),
                two_actions,
            ],
            encoding_rules: vec![rule("enc", RuleMode::Upgrade)],
            enable_at: None,
        };
        let problems = set.validate().unwrap_err().problems;
        assert_eq!(problems.len(), 7, "{problems:#?}");
        assert_eq!(
            problems[0],
            "migrationRules[0]: migrationRules can only be UPGRADE, DOWNGRADE or UPDOWN, not WRITE"
        );
        assert_eq!(problems[1], "domainRules[0]: missing rule name");
        assert_eq!(problems[2], "domainRules[1]: missing rule type");
        assert!(problems[3].contains("`1bad`"), "{}", problems[3]);
        assert_eq!(problems[4], "domainRules[3]: found rule with duplicate name `up`");
        assert!(problems[5].contains("multiple actions"), "{}", problems[5]);
        assert!(problems[6].starts_with("encodingRules[0]: encodingRules can only be WRITE"));
        let good = RuleSet {
            domain_rules: vec![
                rule("checkAmount", RuleMode::Write),
                rule("_mask-ssn", RuleMode::Writeread),
            ],
            ..RuleSet::default()
        };
        assert!(good.validate().is_ok());
    }

    #[test]
    fn the_merge_lays_overrides_over_specific_over_defaults() {
        let metadata = |pairs: &[(&str, &str)]| Metadata {
            properties: pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            ..Metadata::default()
        };
        let config = ContractConfig {
            default_metadata: Some(metadata(&[("owner", "platform"), ("tier", "gold")])),
            override_metadata: Some(metadata(&[("tier", "platinum")])),
            default_rule_set: Some(RuleSet {
                domain_rules: vec![rule("a", RuleMode::Write)],
                ..RuleSet::default()
            }),
            ..ContractConfig::default()
        };
        let specific = Contract {
            metadata: Some(Box::new(metadata(&[("owner", "team-a"), ("major", "2")]))),
            rule_set: Some(Box::new(RuleSet {
                domain_rules: vec![rule("b", RuleMode::Read)],
                ..RuleSet::default()
            })),
        };
        let merged = config.merge(&specific);
        assert_eq!(
            merged.metadata.unwrap().properties,
            metadata(&[("owner", "team-a"), ("major", "2"), ("tier", "platinum")]).properties
        );
        let names: Vec<_> = merged
            .rule_set
            .unwrap()
            .domain_rules
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, vec![Some("a".to_owned()), Some("b".to_owned())]);
        let base = RuleSet {
            domain_rules: vec![
                rule("a", RuleMode::Write),
                rule("b", RuleMode::Write),
                rule("c", RuleMode::Write),
            ],
            ..RuleSet::default()
        };
        let over = RuleSet {
            domain_rules: vec![rule("b", RuleMode::Read), rule("d", RuleMode::Read)],
            ..RuleSet::default()
        };
        let merged: Vec<_> = base
            .merged_with(&over)
            .domain_rules
            .into_iter()
            .map(|r| (r.name.unwrap(), r.mode))
            .collect();
        assert_eq!(
            merged,
            vec![
                ("a".to_owned(), RuleMode::Write),
                ("c".to_owned(), RuleMode::Write),
                ("b".to_owned(), RuleMode::Read),
                ("d".to_owned(), RuleMode::Read)
            ]
        );
        assert_eq!(
            ContractConfig::default().merge(&Contract::default()),
            Contract::default()
        );
    }

    #[test]
    fn a_config_patch_keeps_what_it_leaves_out_and_clears_what_it_nulls() {
        let config = ContractConfig {
            compatibility_group: Some("major".to_owned()),
            alias: Some("other".to_owned()),
            ..ContractConfig::default()
        };
        let patch: ConfigPatch = serde_json::from_str(r#"{"alias":null,"normalize":true}"#).unwrap();
        let patched = patch.apply(&config).unwrap();
        assert_eq!(patched.compatibility_group.as_deref(), Some("major"));
        assert_eq!(patched.alias, None);
        assert_eq!(patched.normalize, Some(true));
        let bad: ConfigPatch =
            serde_json::from_str(r#"{"defaultRuleSet":{"domainRules":[{"name":"r","mode":"UPGRADE","type":"CEL"}]}}"#)
                .unwrap();
        let error = bad.apply(&config).unwrap_err().to_string();
        assert!(error.contains("defaultRuleSet.domainRules[0]"), "{error}");
    }

    #[test]
    fn null_and_missing_lists_read_as_empty_and_serialize_sorted() {
        let text = r#"{"tags":null,"properties":{"b":"2","a":"1"},"sensitive":["z","a"]}"#;
        let metadata: Metadata = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::to_string(&metadata).unwrap(),
            r#"{"properties":{"a":"1","b":"2"},"sensitive":["a","z"]}"#
        );
        let rule: Rule =
            serde_json::from_str(r#"{"name":"r","type":null,"tags":null,"disabled":null,"mode":null}"#).unwrap();
        assert_eq!(rule.rule_type, None);
        assert!(!rule.disabled);
        assert_eq!((rule.kind, rule.mode), (RuleKind::Transform, RuleMode::Writeread));
        assert_eq!(
            serde_json::to_string(&rule).unwrap(),
            r#"{"name":"r","kind":"TRANSFORM","mode":"WRITEREAD","disabled":false}"#
        );
    }

    // Issue 39 item 4: Confluent's `CompatibilityPolicy.forName` reads any case and
    // gives null for other names, which `ConfigValue.update` stores.
    #[test]
    fn an_unknown_compatibility_policy_clears_the_setting() {
        let config = ContractConfig {
            compatibility_policy: Some(CompatibilityPolicy::Strict),
            ..ContractConfig::default()
        };
        let patch: ConfigPatch = serde_json::from_str(r#"{"compatibilityPolicy":"lenient"}"#).unwrap();
        assert_eq!(
            patch.apply(&config).unwrap().compatibility_policy,
            Some(CompatibilityPolicy::Lenient)
        );
        let patch: ConfigPatch = serde_json::from_str(r#"{"compatibilityPolicy":"sideways"}"#).unwrap();
        assert_eq!(patch.apply(&config).unwrap().compatibility_policy, None);
        let patch: ConfigPatch = serde_json::from_str(r#"{"alias":"other"}"#).unwrap();
        assert_eq!(
            patch.apply(&config).unwrap().compatibility_policy,
            Some(CompatibilityPolicy::Strict)
        );
    }

    #[test]
    fn enable_at_outside_its_enum_is_malformed_and_the_later_one_wins_a_merge() {
        assert!(serde_json::from_str::<RuleSet>(r#"{"enableAt":"SOMEWHERE"}"#).is_err());
        let base: RuleSet = serde_json::from_str(r#"{"enableAt":"CLIENT"}"#).unwrap();
        assert_eq!(
            base.merged_with(&RuleSet::default()).enable_at,
            Some(ExecutionEnvironment::Client)
        );
        let over: RuleSet = serde_json::from_str(r#"{"enableAt":"SERVER"}"#).unwrap();
        assert_eq!(base.merged_with(&over).enable_at, Some(ExecutionEnvironment::Server));
    }
}

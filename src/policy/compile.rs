//! A `SchemaPolicy` spec made ready to evaluate: patterns compiled, the
//! namespace selector parsed, CEL expressions compiled. A spec that cannot be
//! used is refused with every problem named (the policy's `Ready=False`).

use std::fmt;

use super::cel::Expression;
use super::level;
use super::pattern::Pattern;
use super::selector::Selector;
use super::verdict::Actions;
use crate::crd::{
    CompatibilityLevel, DeletionPolicy, ModeName, PolicyRegistry, PolicyRegistryKind, SchemaPolicySpec, SchemaType,
    ValidationAction,
};

/// A registry a policy names, compiled: the default registry, or a connection kind with a name pattern.
#[derive(Debug)]
pub(super) enum RegistryPattern {
    /// The install's default registry.
    Default,
    /// A SchemaRegistry whose name matches.
    Namespaced(Pattern),
    /// A ClusterSchemaRegistry whose name matches.
    Cluster(Pattern),
}

/// A policy ready to evaluate.
#[derive(Debug)]
pub struct CompiledPolicy {
    pub(super) name: String,
    pub(super) actions: Actions,
    pub(super) namespace_selector: Option<Selector>,
    pub(super) namespaces: Vec<String>,
    pub(super) subjects: Vec<Pattern>,
    pub(super) schema_types: Vec<SchemaType>,
    /// `match.registries`: empty matches any.
    pub(super) registries: Vec<RegistryPattern>,
    /// `rules.registries.allowed`, when there is the rule.
    pub(super) allowed_registries: Option<Vec<RegistryPattern>>,
    /// The same as written, for messages.
    pub(super) allowed_registry_names: Vec<String>,
    pub(super) allowed_subjects: Option<Vec<Pattern>>,
    /// The levels the compatibility rule allows, when there is one.
    pub(super) levels: Option<Vec<CompatibilityLevel>>,
    pub(super) deletion_policies: Option<Vec<DeletionPolicy>>,
    pub(super) modes: Option<Vec<ModeName>>,
    pub(super) allowed_types: Option<Vec<SchemaType>>,
    pub(super) avro_namespace: Option<Pattern>,
    pub(super) protobuf_package: Option<Pattern>,
    pub(super) json_id: Option<Pattern>,
    pub(super) require_field_docs: bool,
    pub(super) validations: Vec<(Expression, Option<String>)>,
}

/// Why a policy cannot be used: every problem, each with its field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPolicy {
    /// The policy's name.
    pub policy: String,
    /// The problems, e.g. `spec.rules.subjects.allowed[0]: the pattern is empty`.
    pub problems: Vec<String>,
}

impl fmt::Display for InvalidPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SchemaPolicy {} is invalid: {}",
            self.policy,
            self.problems.join("; ")
        )
    }
}

impl std::error::Error for InvalidPolicy {}

impl CompiledPolicy {
    /// Compiles the policy `name`.
    ///
    /// # Errors
    /// [`InvalidPolicy`] listing every problem of the spec.
    pub fn compile(name: &str, spec: &SchemaPolicySpec) -> Result<Self, InvalidPolicy> {
        let mut problems = Vec::new();
        let mut patterns = |field: &str, sources: &[String]| -> Vec<Pattern> {
            sources
                .iter()
                .enumerate()
                .filter_map(|(index, source)| match Pattern::new(source) {
                    Ok(pattern) => Some(pattern),
                    Err(error) => {
                        problems.push(format!("{field}[{index}]: {error}"));
                        None
                    }
                })
                .collect()
        };
        let subjects = patterns("spec.match.subjects", &spec.match_.subjects);
        let allowed_subjects = spec
            .rules
            .subjects
            .as_ref()
            .map(|rule| patterns("spec.rules.subjects.allowed", &rule.allowed));
        let naming = spec.rules.naming.clone().unwrap_or_default();
        let mut one = |field: &str, source: &Option<String>| {
            source
                .as_ref()
                .and_then(|source| patterns(field, std::slice::from_ref(source)).pop())
        };
        let avro_namespace = one("spec.rules.naming.avroNamespace", &naming.avro_namespace);
        let protobuf_package = one("spec.rules.naming.protobufPackage", &naming.protobuf_package);
        let json_id = one("spec.rules.naming.jsonId", &naming.json_id);

        let mut registries = |field: &str, sources: &[PolicyRegistry]| -> Vec<RegistryPattern> {
            sources
                .iter()
                .enumerate()
                .filter_map(|(index, source)| {
                    let compiled = match (source.kind, source.name.as_deref()) {
                        (PolicyRegistryKind::Default, None) => Ok(RegistryPattern::Default),
                        (PolicyRegistryKind::Default, Some(_)) => Err("a Default registry has no name".to_owned()),
                        (_, None) => Err("name is required".to_owned()),
                        (kind, Some(name)) => Pattern::new(name)
                            .map(|pattern| match kind {
                                PolicyRegistryKind::SchemaRegistry => RegistryPattern::Namespaced(pattern),
                                _ => RegistryPattern::Cluster(pattern),
                            })
                            .map_err(|error| error.to_string()),
                    };
                    compiled
                        .map_err(|problem| problems.push(format!("{field}[{index}]: {problem}")))
                        .ok()
                })
                .collect()
        };
        let match_registries = registries("spec.match.registries", &spec.match_.registries);
        let allowed_registries = spec
            .rules
            .registries
            .as_ref()
            .map(|rule| registries("spec.rules.registries.allowed", &rule.allowed));
        let allowed_registry_names = spec
            .rules
            .registries
            .as_ref()
            .map(|rule| rule.allowed.iter().map(registry_name).collect())
            .unwrap_or_default();

        let namespace_selector = match spec.match_.namespace_selector.as_ref().map(Selector::new) {
            Some(Ok(selector)) => Some(selector),
            Some(Err(error)) => {
                problems.push(format!("spec.match.namespaceSelector: {error}"));
                None
            }
            None => None,
        };
        let actions = actions(&spec.validation_actions, &mut problems);
        let levels = spec.rules.compatibility.as_ref().map(|rule| {
            let levels: Vec<CompatibilityLevel> = level::ALL
                .into_iter()
                .filter(|candidate| rule.allowed.is_empty() || rule.allowed.contains(candidate))
                .filter(|candidate| rule.minimum.is_none_or(|minimum| level::at_least(*candidate, minimum)))
                .collect();
            if levels.is_empty() {
                problems
                    .push("spec.rules.compatibility: no level is both in `allowed` and at least `minimum`".to_owned());
            }
            levels
        });
        let validations = spec
            .rules
            .validations
            .iter()
            .enumerate()
            .filter_map(
                |(index, validation)| match Expression::compile(&validation.expression) {
                    Ok(expression) => Some((expression, validation.message.clone())),
                    Err(error) => {
                        problems.push(format!("spec.rules.validations[{index}].expression: {error}"));
                        None
                    }
                },
            )
            .collect();
        if !problems.is_empty() {
            return Err(InvalidPolicy {
                policy: name.to_owned(),
                problems,
            });
        }
        Ok(Self {
            name: name.to_owned(),
            actions,
            namespace_selector,
            namespaces: spec.match_.namespaces.clone(),
            subjects,
            schema_types: spec.match_.schema_types.clone(),
            registries: match_registries,
            allowed_registries,
            allowed_registry_names,
            allowed_subjects,
            levels,
            deletion_policies: spec.rules.deletion_policies.clone(),
            modes: spec.rules.modes.clone(),
            allowed_types: spec.rules.schema_types.clone(),
            avro_namespace,
            protobuf_package,
            json_id,
            require_field_docs: spec.rules.require_field_docs,
            validations,
        })
    }

    /// The policy's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the policy selects namespaces by their labels (`match.namespaceSelector`).
    pub fn selects_namespaces_by_label(&self) -> bool {
        self.namespace_selector.is_some()
    }

    /// What the policy does about a violation.
    pub fn actions(&self) -> Actions {
        self.actions
    }

    /// Whether the policy has CEL validations (which need the object as JSON).
    pub fn has_validations(&self) -> bool {
        !self.validations.is_empty()
    }
}

/// The actions of `validationActions`, as Kubernetes' ValidatingAdmissionPolicy
/// takes them: at least one, no repeats, and not Deny with Warn.
fn actions(listed: &[ValidationAction], problems: &mut Vec<String>) -> Actions {
    let mut actions = Actions::default();
    if listed.is_empty() {
        problems.push("spec.validationActions: name at least one of Deny, Warn, Audit".to_owned());
    }
    for (index, action) in listed.iter().enumerate() {
        let seen = match action {
            ValidationAction::Deny => std::mem::replace(&mut actions.deny, true),
            ValidationAction::Warn => std::mem::replace(&mut actions.warn, true),
            ValidationAction::Audit => std::mem::replace(&mut actions.audit, true),
        };
        if seen {
            problems.push(format!("spec.validationActions[{index}]: {action:?} is listed twice"));
        }
    }
    if actions.deny && actions.warn {
        problems
            .push("spec.validationActions: Deny and Warn cannot be combined (a denial already says why)".to_owned());
    }
    actions
}

/// A registry as a policy writes it, for messages: `Default`, `SchemaRegistry/NAME`.
fn registry_name(registry: &PolicyRegistry) -> String {
    match (registry.kind, registry.name.as_deref()) {
        (PolicyRegistryKind::Default, _) | (_, None) => "the default registry".to_owned(),
        (PolicyRegistryKind::SchemaRegistry, Some(name)) => format!("SchemaRegistry/{name}"),
        (PolicyRegistryKind::ClusterSchemaRegistry, Some(name)) => format!("ClusterSchemaRegistry/{name}"),
    }
}

//! Judging one proposal against one compiled policy: does the policy apply,
//! and which of its rules does the proposal break.

use serde_json::Value;

use super::cel::{Bindings, Variables};
use super::compile::{CompiledPolicy, RegistryPattern};
use super::level;
use super::pattern::Pattern;
use super::proposal::{NamespaceFacts, Proposal, ProposedRegistry, Target};
use super::verdict::{Rule, Violation};
use crate::compat::SchemaSummary;
use crate::crd::SchemaType;

/// How many undocumented fields a violation names before it counts the rest.
const LISTED_FIELDS: usize = 5;

impl RegistryPattern {
    /// Whether `registry` (of an object in `namespace`) is one this names.
    pub(super) fn matches(&self, registry: ProposedRegistry<'_>, namespace: Option<&str>) -> bool {
        use crate::crd::RegistryKind;
        match (self, registry) {
            (RegistryPattern::Default, ProposedRegistry::Default) => true,
            (RegistryPattern::Namespaced(name), ProposedRegistry::Connection(reference)) => {
                reference.kind == RegistryKind::SchemaRegistry && name.matches(&reference.name, namespace)
            }
            (RegistryPattern::Cluster(name), ProposedRegistry::Connection(reference)) => {
                reference.kind == RegistryKind::ClusterSchemaRegistry && name.matches(&reference.name, namespace)
            }
            _ => false,
        }
    }
}

impl CompiledPolicy {
    /// Whether the policy matches `namespace` (by name and labels).
    pub(super) fn matches_namespace(&self, namespace: &NamespaceFacts<'_>) -> bool {
        (self.namespaces.is_empty() || self.namespaces.iter().any(|name| name == namespace.name))
            && self
                .namespace_selector
                .as_ref()
                .is_none_or(|selector| selector.matches(namespace.labels))
    }

    /// Whether the policy applies to the subject and type of `proposal`,
    /// whatever its namespace.
    fn matches_subject(&self, proposal: &Proposal<'_>, namespace: Option<&str>) -> bool {
        let subject_matches = match proposal.subject {
            Some(subject) => {
                self.subjects.is_empty() || self.subjects.iter().any(|pattern| pattern.matches(subject, namespace))
            }
            // The global settings: what every subject falls back to.
            None => true,
        };
        let type_matches = match proposal.schema_type {
            Some(schema_type) => self.schema_types.is_empty() || self.schema_types.contains(&schema_type),
            None => true,
        };
        // At the REST API the registry is not known: not consulted, as the namespace is not.
        let registry_matches = match proposal.registry {
            Some(registry) => {
                self.registries.is_empty()
                    || self
                        .registries
                        .iter()
                        .any(|pattern| pattern.matches(registry, namespace))
            }
            None => true,
        };
        subject_matches && type_matches && registry_matches
    }

    /// Whether the policy applies to `proposal`. At the REST API (no
    /// namespace) its namespace match is not consulted.
    pub fn applies_to(&self, proposal: &Proposal<'_>) -> bool {
        let namespace = proposal.namespace.as_ref();
        namespace.is_none_or(|namespace| self.matches_namespace(namespace))
            && self.matches_subject(proposal, namespace.map(|namespace| namespace.name))
    }

    /// Every rule of this policy that `proposal` breaks, pushed onto `out`.
    /// `bindings` are the CEL variables of the proposal, converted by the
    /// first policy that needs them.
    pub(super) fn judge(
        &self,
        proposal: &Proposal<'_>,
        bindings: &mut Option<Result<Bindings, String>>,
        out: &mut Vec<Violation>,
    ) {
        if !self.applies_to(proposal) {
            self.judge_reservation(proposal, out);
            return;
        }
        let namespace = proposal.namespace.map(|namespace| namespace.name);
        let mut violate = |rule: Rule, path: &str, problem: String, remedy: String| {
            out.push(Violation {
                policy: self.name.clone(),
                rule,
                path: path.to_owned(),
                problem,
                remedy,
                actions: self.actions,
            });
        };
        if proposal.target != Target::Registry
            && let (Some(allowed), Some(subject), Some(namespace)) =
                (&self.allowed_subjects, proposal.subject, namespace)
            && !allowed.iter().any(|pattern| pattern.matches(subject, Some(namespace)))
        {
            violate(
                Rule::Subjects,
                "spec.subject",
                format!("namespace {namespace} may not manage subject `{subject}`"),
                format!("use a subject matching {}", listed(allowed, Some(namespace))),
            );
        }
        if proposal.target != Target::Registry
            && let (Some(allowed), Some(registry), Some(namespace)) =
                (&self.allowed_registries, proposal.registry, namespace)
            && !allowed.iter().any(|pattern| pattern.matches(registry, Some(namespace)))
        {
            violate(
                Rule::Registries,
                "spec.registryRef",
                format!("namespace {namespace} may not use {registry}"),
                format!("use one of {}", or_nothing(&self.allowed_registry_names)),
            );
        }
        if let (Some(levels), Some(proposed)) = (&self.levels, proposal.level)
            && !levels.contains(&proposed.level)
        {
            let names: Vec<&str> = levels.iter().map(|level| level::name(*level)).collect();
            violate(
                Rule::Compatibility,
                &proposed.origin.path(),
                format!("{} is {}", proposed.origin, level::name(proposed.level)),
                format!("the level must be one of {}", names.join(", ")),
            );
        }
        if let (Some(allowed), Some(policy)) = (&self.deletion_policies, proposal.deletion_policy)
            && !allowed.contains(&policy)
        {
            let names: Vec<String> = allowed.iter().map(|policy| format!("{policy:?}")).collect();
            violate(
                Rule::DeletionPolicies,
                "spec.deletionPolicy",
                format!("deletionPolicy {policy:?} is not allowed"),
                format!("use one of {}", or_nothing(&names)),
            );
        }
        if let (Some(allowed), Some(proposed)) = (&self.modes, proposal.mode)
            && !allowed.contains(&proposed.mode)
        {
            let names: Vec<&str> = allowed.iter().map(|mode| mode.as_str()).collect();
            violate(
                Rule::Modes,
                proposed.path,
                format!("mode {} is not allowed", proposed.mode.as_str()),
                format!("use one of {}", or_nothing(&names)),
            );
        }
        if let (Some(allowed), Some(schema_type), Target::Schema) =
            (&self.allowed_types, proposal.schema_type, proposal.target)
            && !allowed.contains(&schema_type)
        {
            let names: Vec<&str> = allowed.iter().map(|schema_type| type_name(*schema_type)).collect();
            violate(
                Rule::SchemaTypes,
                "spec.schemaType",
                format!("schema type {} is not allowed", type_name(schema_type)),
                format!("use one of {}", or_nothing(&names)),
            );
        }
        if let (Some(summary), Some(schema_type)) = (proposal.summary, proposal.schema_type) {
            self.judge_names(summary, schema_type, namespace, &mut violate);
            if self.require_field_docs && schema_type == SchemaType::Avro {
                judge_docs(summary, &mut violate);
            }
        }
        if proposal.target != Target::Registry
            && let Some(object) = proposal.object
            && !self.validations.is_empty()
        {
            let bindings = bindings.get_or_insert_with(|| {
                let schema = proposal
                    .summary
                    .and_then(|summary| serde_json::to_value(summary).ok())
                    .unwrap_or(Value::Null);
                Bindings::new(&Variables {
                    object,
                    old_object: proposal.old_object.unwrap_or(&Value::Null),
                    schema: &schema,
                })
            });
            for (index, (expression, message)) in self.validations.iter().enumerate() {
                let outcome = match bindings {
                    Ok(bindings) => expression.holds(bindings),
                    Err(error) => Err(error.clone()),
                };
                let problem = match outcome {
                    Ok(true) => continue,
                    Ok(false) => message
                        .clone()
                        .unwrap_or_else(|| format!("`{}` is false", expression.source())),
                    Err(error) => format!("`{}` cannot be evaluated: {error}", expression.source()),
                };
                violate(
                    Rule::Validation(index),
                    "metadata",
                    problem,
                    format!("the object must satisfy `{}`", expression.source()),
                );
            }
        }
    }

    /// The naming rule for `schema_type`. An Avro schema is judged by the
    /// namespaces of its named types at the top (the top-level record, enum
    /// or fixed, or each one in a top-level union); a primitive, array or map
    /// has none, and the rule does not apply to it. A Protobuf package or
    /// JSON `$id` left out is judged as empty. Nothing is formatted unless a
    /// name breaks the rule (this runs for every policy and every Schema).
    fn judge_names(
        &self,
        summary: &SchemaSummary,
        schema_type: SchemaType,
        namespace: Option<&str>,
        violate: &mut impl FnMut(Rule, &str, String, String),
    ) {
        let mut judge = |rule: Rule, pattern: &Pattern, value: &str, what: &dyn Fn() -> String| {
            if !pattern.matches(value, namespace) {
                violate(
                    rule,
                    "spec.schema",
                    format!("{} is `{value}`", what()),
                    format!("it must match `{}`", pattern.for_namespace(namespace)),
                );
            }
        };
        match schema_type {
            SchemaType::Avro => {
                let Some(pattern) = &self.avro_namespace else {
                    return;
                };
                let union = summary.name.is_none();
                for named in &summary.top_level_types {
                    let what = || {
                        if union {
                            format!("the Avro namespace of `{}` in the top-level union", named.full_name)
                        } else {
                            "the Avro namespace".to_owned()
                        }
                    };
                    judge(Rule::AvroNamespace, pattern, &named.namespace, &what);
                }
            }
            SchemaType::Protobuf => {
                if let Some(pattern) = &self.protobuf_package {
                    let package = summary.package.as_deref().unwrap_or_default();
                    judge(Rule::ProtobufPackage, pattern, package, &|| {
                        "the Protobuf package".to_owned()
                    });
                }
            }
            SchemaType::Json => {
                if let Some(pattern) = &self.json_id {
                    let id = summary.id.as_deref().unwrap_or_default();
                    judge(Rule::JsonId, pattern, id, &|| "the JSON Schema `$id`".to_owned());
                }
            }
        }
    }

    /// A subject this policy keeps for the namespaces it matches cannot be
    /// claimed from a namespace it does not match.
    fn judge_reservation(&self, proposal: &Proposal<'_>, out: &mut Vec<Violation>) {
        let (Some(allowed), Some(subject), Some(claimant), Target::Schema | Target::SubjectConfig) = (
            &self.allowed_subjects,
            proposal.subject,
            proposal.namespace,
            proposal.target,
        ) else {
            return;
        };
        // Cheap tests first: a pattern the subject cannot match whatever the
        // namespace, and (for `{namespace}` patterns) a namespace whose name
        // is not in the subject, rule a candidate out without the selector.
        if !allowed.iter().any(|pattern| pattern.matches(subject, None)) {
            return;
        }
        let holder = proposal.known_namespaces.iter().find(|namespace| {
            namespace.name != claimant.name
                && allowed.iter().any(|pattern| {
                    pattern.could_name(subject, namespace.name) && pattern.matches(subject, Some(namespace.name))
                })
                && self.matches_namespace(namespace)
                && self.matches_subject(proposal, Some(namespace.name))
        });
        if let Some(holder) = holder {
            out.push(Violation {
                policy: self.name.clone(),
                rule: Rule::Subjects,
                path: "spec.subject".to_owned(),
                problem: format!(
                    "subject `{subject}` is kept for namespace {} (it matches {})",
                    holder.name,
                    listed(allowed, Some(holder.name))
                ),
                remedy: format!("manage it from namespace {}, or choose another subject", holder.name),
                actions: self.actions,
            });
        }
    }
}

/// One violation naming the Avro fields without a doc.
fn judge_docs(summary: &SchemaSummary, violate: &mut impl FnMut(Rule, &str, String, String)) {
    let missing: Vec<String> = summary
        .fields
        .iter()
        .filter(|field| !field.documented)
        .map(|field| format!("{}.{}", field.record, field.name))
        .collect();
    if missing.is_empty() {
        return;
    }
    let mut named = missing
        .iter()
        .take(LISTED_FIELDS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if missing.len() > LISTED_FIELDS {
        named.push_str(&format!(" and {} more", missing.len() - LISTED_FIELDS));
    }
    violate(
        Rule::FieldDocs,
        "spec.schema",
        format!("{} field(s) have no doc: {named}", missing.len()),
        "give every field a non-empty `doc`".to_owned(),
    );
}

fn listed(patterns: &[Pattern], namespace: Option<&str>) -> String {
    let names: Vec<String> = patterns
        .iter()
        .map(|pattern| format!("`{}`", pattern.for_namespace(namespace)))
        .collect();
    or_nothing(&names)
}

fn or_nothing<T: AsRef<str>>(names: &[T]) -> String {
    if names.is_empty() {
        "(nothing is allowed)".to_owned()
    } else {
        names.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ")
    }
}

/// The schema type's name as a spec writes it.
fn type_name(schema_type: SchemaType) -> &'static str {
    match schema_type {
        SchemaType::Avro => "AVRO",
        SchemaType::Json => "JSON",
        SchemaType::Protobuf => "PROTOBUF",
    }
}

//! Judging Schemas and SubjectConfigs against the platform's SchemaPolicies:
//! the bridge from the resources to the pure evaluation in
//! [`crate::policy`]. The same judgement runs in the reconcile (operator and
//! `apply`), `check` and the admission webhook.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::level::level_of;
use super::view::{Claimant, ObjectKey};
use crate::compat::{Mode, SchemaSummary};
use crate::crd::{ModeName, ResourceKind, Schema, SubjectConfig, SubjectMode};
use crate::policy::{
    LevelOrigin, NamespaceFacts, PolicySet, Proposal, ProposedLevel, ProposedMode, ProposedRegistry, Rule,
    SharedPolicies, Target, Verdict,
};

/// The labels of every namespace known, by name.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

/// The policies in force and the namespaces they may select.
#[derive(Debug, Clone, Default)]
pub struct PolicyContext {
    /// The policies.
    pub policies: Arc<PolicySet>,
    /// Every namespace known, with its labels.
    pub namespaces: Arc<NamespaceLabels>,
}

/// The policies and namespace labels in force in one process: shared by the
/// parts that judge (the reconcile, the webhook, the registry's REST API) and
/// kept current by the one that watches (or reads files).
#[derive(Debug, Clone, Default)]
pub struct PolicySource {
    policies: SharedPolicies,
    namespaces: Arc<RwLock<Arc<NamespaceLabels>>>,
}

impl PolicySource {
    /// A source holding `policies` over `namespaces`.
    pub fn new(policies: PolicySet, namespaces: NamespaceLabels) -> Self {
        let source = Self::default();
        source.set_policies(policies);
        source.set_namespaces(namespaces);
        source
    }

    /// What is in force now.
    pub fn context(&self) -> PolicyContext {
        let namespaces = Arc::clone(&self.namespaces.read().unwrap_or_else(|poisoned| poisoned.into_inner()));
        PolicyContext::new(self.policies.current(), namespaces)
    }

    /// The policies alone (what the registry's REST API needs).
    pub fn policies(&self) -> SharedPolicies {
        self.policies.clone()
    }

    /// Puts `policies` in force.
    pub fn set_policies(&self, policies: PolicySet) {
        self.policies.replace(policies);
    }

    /// Replaces the namespaces known.
    pub fn set_namespaces(&self, namespaces: NamespaceLabels) {
        *self.namespaces.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(namespaces);
    }
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl PolicyContext {
    /// A context of `policies` over `namespaces`.
    pub fn new(policies: Arc<PolicySet>, namespaces: Arc<NamespaceLabels>) -> Self {
        Self { policies, namespaces }
    }

    /// Judges `proposal` as made from `namespace`, with the known namespaces
    /// at hand for the subjects a policy keeps for one of them.
    fn evaluate(&self, namespace: &str, proposal: Proposal<'_>) -> Verdict {
        if self.policies.is_empty() {
            return Verdict::default();
        }
        let known: Vec<NamespaceFacts<'_>> = self
            .namespaces
            .iter()
            .map(|(name, labels)| NamespaceFacts { name, labels })
            .collect();
        let proposal = Proposal {
            namespace: Some(NamespaceFacts {
                name: namespace,
                labels: self.namespaces.get(namespace).unwrap_or(&NO_LABELS),
            }),
            known_namespaces: &known,
            ..proposal
        };
        self.policies.evaluate(&proposal)
    }

    /// The object as CEL sees it, when some policy has CEL validations.
    fn object_json<T: serde::Serialize>(&self, object: &T) -> Option<Value> {
        self.policies
            .needs_object()
            .then(|| serde_json::to_value(object).ok())
            .flatten()
    }

    /// Judges a Schema: its subject, type and deletion policy, and, when
    /// known, its parsed schema's names and the level it would be checked
    /// under. `old` is the object before the change (admission only).
    pub fn judge_schema(
        &self,
        schema: &Schema,
        old: Option<&Schema>,
        summary: Option<&SchemaSummary>,
        level: Option<&ProposedLevel>,
    ) -> Verdict {
        let object = self.object_json(schema);
        let old_object = old.and_then(|old| self.object_json(old));
        let namespace = schema.metadata.namespace.as_deref().unwrap_or_default();
        self.evaluate(
            namespace,
            Proposal {
                subject: Some(&schema.spec.subject),
                schema_type: Some(schema.spec.schema_type),
                deletion_policy: Some(schema.spec.deletion_policy),
                registry: Some(ProposedRegistry::of(schema.spec.registry_ref.as_ref())),
                level,
                summary,
                object: object.as_ref(),
                old_object: old_object.as_ref(),
                ..Proposal::new(Target::Schema)
            },
        )
    }

    /// Judges a SubjectConfig: its subject, the level it sets (or, without
    /// one, the registry's `global` level it falls back to, when known), and
    /// its mode.
    pub fn judge_subject_config(
        &self,
        config: &SubjectConfig,
        old: Option<&SubjectConfig>,
        global: Option<Mode>,
    ) -> Verdict {
        let level = match (config.spec.compatibility, global) {
            (Some(level), _) => Some(ProposedLevel {
                level,
                origin: LevelOrigin::Spec,
            }),
            (None, Some(global)) => Some(ProposedLevel {
                level: level_of(global),
                origin: LevelOrigin::Unset,
            }),
            (None, None) => None,
        };
        let mode = config.spec.mode.map(|mode| ProposedMode {
            mode: match mode {
                SubjectMode::Readwrite => ModeName::Readwrite,
                SubjectMode::Readonly => ModeName::Readonly,
            },
            path: "spec.mode",
        });
        let object = self.object_json(config);
        let old_object = old.and_then(|old| self.object_json(old));
        let namespace = config.metadata.namespace.as_deref().unwrap_or_default();
        self.evaluate(
            namespace,
            Proposal {
                subject: Some(&config.spec.subject),
                registry: Some(ProposedRegistry::of(config.spec.registry_ref.as_ref())),
                level: level.as_ref(),
                mode,
                object: object.as_ref(),
                old_object: old_object.as_ref(),
                ..Proposal::new(Target::SubjectConfig)
            },
        )
    }

    /// Judges the deletion of `config`, which manages its subject's level:
    /// the subject then falls back to the registry's `global` level, and only
    /// the compatibility rules judge that (deleting is never refused for the
    /// subject, mode or CEL rules; a deletion leaves nothing to satisfy them).
    pub fn judge_subject_config_deletion(&self, config: &SubjectConfig, global: Mode) -> Verdict {
        let level = ProposedLevel {
            level: level_of(global),
            origin: LevelOrigin::Deletion,
        };
        let namespace = config.metadata.namespace.as_deref().unwrap_or_default();
        let mut verdict = self.evaluate(
            namespace,
            Proposal {
                subject: Some(&config.spec.subject),
                registry: Some(ProposedRegistry::of(config.spec.registry_ref.as_ref())),
                level: Some(&level),
                ..Proposal::new(Target::SubjectConfig)
            },
        );
        verdict
            .violations
            .retain(|violation| violation.rule == Rule::Compatibility);
        verdict
    }

    /// Whether `claimant` may claim `subject`: a claim that a policy's
    /// subject rule denies never wins the subject, however old. A Schema's
    /// claim is judged with its type, as its own judgement is, so a policy
    /// that matches other types only does not take the subject from it.
    pub fn may_claim(&self, claimant: &Claimant<'_>, subject: &str) -> bool {
        if self.policies.is_empty() {
            return true;
        }
        let key = claimant.key;
        let target = match claimant.kind {
            ResourceKind::Schema => Target::Schema,
            ResourceKind::SubjectConfig => Target::SubjectConfig,
        };
        let known: Vec<NamespaceFacts<'_>> = self
            .namespaces
            .iter()
            .map(|(name, labels)| NamespaceFacts { name, labels })
            .collect();
        self.policies.may_claim(&Proposal {
            namespace: Some(NamespaceFacts {
                name: &key.namespace,
                labels: self.namespaces.get(&key.namespace).unwrap_or(&NO_LABELS),
            }),
            subject: Some(subject),
            schema_type: claimant.schema_type,
            known_namespaces: &known,
            ..Proposal::new(target)
        })
    }
}

/// Where the level a Schema is checked under comes from: its subject's
/// SubjectConfig (named `owner`) when that sets one, else the subject's own
/// level in the registry, else the registry's global level.
pub fn level_origin(
    config_sets_level: bool,
    owner: Option<&ObjectKey>,
    subject_level_in_registry: bool,
    config_exists: bool,
) -> LevelOrigin {
    match (config_sets_level, owner) {
        (true, Some(owner)) => LevelOrigin::SubjectConfig(owner.to_string()),
        _ if !config_exists && subject_level_in_registry => LevelOrigin::RegistrySubject,
        _ => LevelOrigin::Global,
    }
}

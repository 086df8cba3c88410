//! What is judged: a plain description of one proposed change, built by the
//! caller (the reconcile, the webhook, `apply`, the registry's REST API) from
//! what it knows. A fact left out skips the rules that need it.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::compat::SchemaSummary;
use crate::crd::{CompatibilityLevel, DeletionPolicy, ModeName, RegistryRef, SchemaType};

/// The kind of change judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A Schema resource.
    Schema,
    /// A SubjectConfig resource.
    SubjectConfig,
    /// A write to the registry's REST API (`PUT /config`, `PUT /mode`, …).
    Registry,
}

/// The namespace an object lives in, with its labels.
#[derive(Debug, Clone, Copy)]
pub struct NamespaceFacts<'a> {
    /// The namespace's name.
    pub name: &'a str,
    /// Its labels (empty when not known).
    pub labels: &'a BTreeMap<String, String>,
}

/// Where a compatibility level comes from, for the field path and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelOrigin {
    /// A SubjectConfig's `spec.compatibility`.
    Spec,
    /// The SubjectConfig named, which manages the Schema's subject.
    SubjectConfig(String),
    /// The subject's own level in the registry.
    RegistrySubject,
    /// The registry's global level, which the subject falls back to.
    Global,
    /// The registry's global level, which applies to a SubjectConfig's
    /// subject while it sets no level of its own.
    Unset,
    /// The body of a REST request.
    Request,
    /// The registry's global level, which the subject falls back to once
    /// the SubjectConfig that sets its level is deleted.
    Deletion,
    /// The registry's global level, which a REST `DELETE /config/{subject}`
    /// leaves the subject on (or `DELETE /config` resets to): a request with
    /// no body and no field to point at.
    Removal,
}

impl LevelOrigin {
    /// Where the level is set, so where it is fixed: a field of the object
    /// judged, the SubjectConfig that sets a Schema's level, the REST body's
    /// field, or nothing (empty) for a REST removal.
    pub fn path(&self) -> String {
        match self {
            LevelOrigin::Spec | LevelOrigin::Unset | LevelOrigin::Deletion => "spec.compatibility".to_owned(),
            LevelOrigin::SubjectConfig(name) => format!("SubjectConfig {name} spec.compatibility"),
            // No SubjectConfig sets the level: one would fix it.
            LevelOrigin::RegistrySubject | LevelOrigin::Global => "a SubjectConfig's spec.compatibility".to_owned(),
            LevelOrigin::Request => "compatibility".to_owned(),
            LevelOrigin::Removal => String::new(),
        }
    }
}

impl fmt::Display for LevelOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelOrigin::Spec => f.write_str("the level set"),
            LevelOrigin::SubjectConfig(name) => write!(f, "the level SubjectConfig {name} sets for the subject"),
            LevelOrigin::RegistrySubject => f.write_str("the subject's level in the registry"),
            LevelOrigin::Global | LevelOrigin::Removal => {
                f.write_str("the level the subject falls back to (the registry's global level)")
            }
            LevelOrigin::Unset => f.write_str("without a level set, the registry's global level applies, and it"),
            LevelOrigin::Request => f.write_str("the level requested"),
            LevelOrigin::Deletion => f.write_str(
                "once this SubjectConfig is deleted, the subject falls back to the registry's global level, and it",
            ),
        }
    }
}

/// A compatibility level and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedLevel {
    /// The level.
    pub level: CompatibilityLevel,
    /// Where it comes from.
    pub origin: LevelOrigin,
}

/// A subject mode and the field path it is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProposedMode {
    /// The mode.
    pub mode: ModeName,
    /// Where it is: `spec.mode`, `mode` in a REST body, or nothing (empty)
    /// for a REST removal.
    pub path: &'static str,
}

/// The registry an object lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposedRegistry<'a> {
    /// The install's default registry (no `spec.registryRef`).
    Default,
    /// The connection its `spec.registryRef` names.
    Connection(&'a RegistryRef),
}

impl<'a> ProposedRegistry<'a> {
    /// The registry of an object with `registry_ref`.
    pub fn of(registry_ref: Option<&'a RegistryRef>) -> Self {
        registry_ref.map_or(ProposedRegistry::Default, ProposedRegistry::Connection)
    }
}

impl fmt::Display for ProposedRegistry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProposedRegistry::Default => f.write_str("the default registry"),
            ProposedRegistry::Connection(reference) => write!(f, "{reference}"),
        }
    }
}

/// One proposed change, as plain facts.
#[derive(Debug, Clone, Copy)]
pub struct Proposal<'a> {
    /// What is judged.
    pub target: Target,
    /// The object's namespace; `None` at the REST API.
    pub namespace: Option<NamespaceFacts<'a>>,
    /// The subject; `None` for the registry's global settings.
    pub subject: Option<&'a str>,
    /// A Schema's type.
    pub schema_type: Option<SchemaType>,
    /// A Schema's deletion policy.
    pub deletion_policy: Option<DeletionPolicy>,
    /// The compatibility level the change sets, or that would be in force.
    pub level: Option<&'a ProposedLevel>,
    /// The mode the change sets.
    pub mode: Option<ProposedMode>,
    /// The registry the object lives in; `None` at the REST API.
    pub registry: Option<ProposedRegistry<'a>>,
    /// The parsed schema's names.
    pub summary: Option<&'a SchemaSummary>,
    /// The object as JSON, for CEL validations.
    pub object: Option<&'a Value>,
    /// The object before the change, for CEL validations.
    pub old_object: Option<&'a Value>,
    /// Every namespace known, with its labels: a subject that a policy
    /// reserves for one of them cannot be claimed from a namespace the
    /// policy does not match.
    pub known_namespaces: &'a [NamespaceFacts<'a>],
}

impl<'a> Proposal<'a> {
    /// A proposal with only its target set.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            namespace: None,
            subject: None,
            schema_type: None,
            deletion_policy: None,
            level: None,
            mode: None,
            registry: None,
            summary: None,
            object: None,
            old_object: None,
            known_namespaces: &[],
        }
    }
}

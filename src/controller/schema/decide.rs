//! The decision, pure and synchronous: from what was read to a [`Plan`].

use crate::compat::{Checker, Mode, Report, SchemaRole, SchemaText, error_chain};
use crate::controller::level::{self, LevelWrite};
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::SchemaStatus;
use crate::crd::conditions::Reason;
use crate::registry::{NewSchema, RegistryMode, SchemaId, SubjectName, Version};

use super::read::RegistrySubject;

/// Everything a decision about one Schema needs.
#[derive(Debug, Clone)]
pub struct SchemaInputs {
    /// The resource.
    pub key: ObjectKey,
    /// Its `metadata.generation`.
    pub generation: Option<i64>,
    /// The subject its spec names.
    pub subject: String,
    /// Its status as last written.
    pub status: Option<SchemaStatus>,
    /// Who manages the subject, and the SubjectConfig's policy.
    pub view: SubjectView,
    /// The schema to register and what the registry holds.
    pub candidate: Candidate,
}

/// Why a spec cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// The condition reason.
    pub reason: Reason,
    /// What is wrong and where.
    pub message: String,
}

/// The schema this resource proposes, as far as the read got.
#[derive(Debug, Clone)]
pub enum Candidate {
    /// Another resource manages the subject; nothing was read.
    NotOwner,
    /// The spec is unusable; the registry was not read.
    Unusable(Unusable),
    /// A schema to judge, with the registry's view of the subject.
    Usable {
        /// The subject.
        subject: SubjectName,
        /// The schema, as the registry would store it.
        schema: NewSchema,
        /// What the registry holds.
        registry: Box<RegistrySubject>,
    },
}

/// What to do, and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Another resource manages the subject.
    Conflict {
        /// The resource that manages it.
        owner: Option<ObjectKey>,
    },
    /// The spec or the schema is unusable: a change to it is needed.
    Invalid(Unusable),
    /// The subject is read-only.
    ReadOnly {
        /// The subject.
        subject: SubjectName,
    },
    /// The subject already holds the schema: adopt its version, write nothing.
    AlreadyRegistered {
        /// The subject.
        subject: SubjectName,
        /// The version holding it.
        version: Version,
        /// Its ID.
        id: SchemaId,
        /// SHA-256 of the canonical form.
        fingerprint: String,
        /// The subject's newest version, when newer than any this resource registered.
        drifted_to: Option<Version>,
    },
    /// Compatible: register it.
    Register {
        /// The subject.
        subject: SubjectName,
        /// The schema.
        schema: NewSchema,
        /// The level it was judged under.
        level: Mode,
        /// The level write that must precede the registration.
        level_write: Option<LevelWrite>,
        /// SHA-256 of the canonical form.
        fingerprint: String,
        /// The check that passed.
        report: Report,
    },
    /// Incompatible: register nothing.
    Reject {
        /// The subject.
        subject: SubjectName,
        /// Every incompatibility, with registry version numbers.
        report: Report,
    },
}

impl Plan {
    /// A short name for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Plan::Conflict { .. } => "Conflict",
            Plan::Invalid(_) => "Invalid",
            Plan::ReadOnly { .. } => "ReadOnly",
            Plan::AlreadyRegistered { .. } => "AlreadyRegistered",
            Plan::Register { .. } => "Register",
            Plan::Reject { .. } => "Reject",
        }
    }
}

/// Decides what to do with one Schema.
pub fn decide(inputs: &SchemaInputs, checker: &Checker) -> Plan {
    let (subject, schema, registry) = match &inputs.candidate {
        Candidate::NotOwner => {
            return Plan::Conflict {
                owner: inputs.view.schema_owner.clone(),
            };
        }
        Candidate::Unusable(unusable) => return Plan::Invalid(unusable.clone()),
        Candidate::Usable {
            subject,
            schema,
            registry,
        } => (subject, schema, registry),
    };
    let references = match &registry.references {
        Ok(references) => references.clone(),
        Err(message) => {
            return Plan::Invalid(Unusable {
                reason: Reason::InvalidSpec,
                message: format!("spec.references: {message}"),
            });
        }
    };
    let text = SchemaText {
        text: schema.text.clone(),
        references,
    };
    let candidate = match checker.parse(schema.format, SchemaRole::Candidate, &text) {
        Ok(parsed) => parsed,
        Err(error) => {
            return Plan::Invalid(Unusable {
                reason: Reason::InvalidSchema,
                message: error_chain(&error),
            });
        }
    };
    let fingerprint = candidate.fingerprint();
    let (level, level_write) = level::desired(inputs.view.config.as_ref(), registry.global_level, registry.subject_level);
    if let Some(holding) = &registry.holding {
        let registered_before = inputs.status.as_ref().and_then(|status| status.version).unwrap_or(0);
        let newest = registry.live_versions.last().copied();
        let drifted_to =
            newest.filter(|newest| newest.get() > holding.version.get() && newest.get() as i64 > i64::from(registered_before));
        return Plan::AlreadyRegistered {
            subject: subject.clone(),
            version: holding.version,
            id: holding.id,
            fingerprint,
            drifted_to,
        };
    }
    if read_only(inputs, registry.mode) {
        return Plan::ReadOnly {
            subject: subject.clone(),
        };
    }
    let mut parsed = Vec::with_capacity(registry.previous.len());
    for (version, format, text) in &registry.previous {
        if *format != schema.format {
            return Plan::Invalid(Unusable {
                reason: Reason::SchemaTypeChanged,
                message: format!(
                    "subject `{subject}` holds {} schemas (version {version}); a {} schema cannot be checked against them",
                    format.as_str(),
                    schema.format.as_str()
                ),
            });
        }
        match checker.parse(*format, SchemaRole::Previous(version.get() as usize), text) {
            Ok(earlier) => parsed.push((version.get() as usize, earlier)),
            Err(error) => {
                return Plan::Invalid(Unusable {
                    reason: Reason::InvalidSchema,
                    message: format!("the registry's {}", error_chain(&error)),
                });
            }
        }
    }
    let numbered: Vec<(usize, &crate::compat::ParsedSchema)> =
        parsed.iter().map(|(number, earlier)| (*number, earlier)).collect();
    let report = match checker.check_numbered(level, &candidate, &numbered) {
        Ok(report) => report,
        Err(error) => {
            return Plan::Invalid(Unusable {
                reason: Reason::InvalidSchema,
                message: error_chain(&error),
            });
        }
    };
    if report.is_compatible() {
        Plan::Register {
            subject: subject.clone(),
            schema: schema.clone(),
            level,
            level_write,
            fingerprint,
            report,
        }
    } else {
        Plan::Reject {
            subject: subject.clone(),
            report,
        }
    }
}

/// Whether registrations are refused: the SubjectConfig asks for READONLY,
/// or (without one saying otherwise) the registry is read-only.
fn read_only(inputs: &SchemaInputs, registry_mode: RegistryMode) -> bool {
    use crate::crd::SubjectMode;
    match inputs.view.config.as_ref().and_then(|config| config.mode) {
        Some(SubjectMode::Readonly) => true,
        Some(SubjectMode::Readwrite) => registry_mode == RegistryMode::ReadOnlyOverride,
        None => matches!(registry_mode, RegistryMode::ReadOnly | RegistryMode::ReadOnlyOverride),
    }
}

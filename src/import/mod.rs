//! `import`: copies a whole Confluent-compatible registry into the embedded
//! one, or into any registry with IMPORT mode (Confluent, `schemaops
//! registry`), keeping every schema ID, version number, soft-deleted state,
//! reference, level and the modes subjects hold of their own.
//!
//! Three steps, one module each: [`read`] gathers what the source holds and
//! what the target already holds of it, and refuses a source whose answers
//! contradict the questions asked or each other (see [`Contradiction`]); [`plan`] decides, without I/O, what
//! to write and in which order (or refuses, naming every conflict);
//! [`copy`] writes the plan with IMPORT semantics. Knows nothing of
//! Kubernetes or of the command line.

pub mod copy;
pub mod plan;
pub mod read;

use crate::compat::Mode;
use crate::registry::{RegistryMode, SchemaId, SubjectName, Version};

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The source registry could not be read.
    #[error("failed to read {what} from the source registry")]
    Source {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// The target registry could not be read or written.
    #[error("failed to {action} in the target registry")]
    Target {
        /// What was being done.
        action: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// The target refused IMPORT mode, so it cannot keep the source's IDs
    /// and versions (nothing was written). Karapace has no IMPORT mode: it
    /// serves `GET /mode` only.
    #[error(
        "the target registry refused IMPORT mode, so it cannot keep the source's IDs and versions \
         (Karapace has no IMPORT mode); nothing was written"
    )]
    NoImportMode(#[source] crate::registry::Error),
    /// The source cannot be copied as it stands (nothing was written).
    #[error("the source cannot be imported: {0}")]
    Unimportable(String),
    /// The source's answers contradict the questions or each other (nothing was written).
    #[error("the source contradicts itself in {} place(s); nothing was written", .0.len())]
    Contradictions(Vec<Contradiction>),
    /// The target holds content that differs from the source's (nothing was written).
    #[error("the target conflicts with the source in {} place(s); nothing was written", .0.len())]
    Conflicts(Vec<Conflict>),
}

/// A place where the target already holds something other than the source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// The target holds a different schema under one of the source's IDs.
    #[error("schema ID {id} holds a different schema in the target")]
    Id {
        /// The ID.
        id: SchemaId,
    },
    /// A subject version of the target holds another schema ID than the source's.
    #[error("subject `{subject}` version {version} holds schema ID {target} in the target, {source_id} in the source")]
    Version {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
        /// The ID in the target.
        target: SchemaId,
        /// The ID in the source.
        source_id: SchemaId,
    },
    /// A version is soft-deleted in the target but live in the source.
    #[error("subject `{subject}` version {version} is soft-deleted in the target but live in the source")]
    Deleted {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
    },
}

/// A place where the source answered another question than the one asked,
/// or gave two answers that cannot both be true.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Contradiction {
    /// Asked for a version of one subject, the answer named another subject.
    #[error("asked for subject `{subject}` version {version}, the source answered for subject `{answered}`")]
    Subject {
        /// The subject asked for.
        subject: SubjectName,
        /// The version asked for.
        version: Version,
        /// The subject the answer named.
        answered: SubjectName,
    },
    /// Asked for one version, the answer named another.
    #[error("asked for subject `{subject}` version {version}, the source answered with version {answered}")]
    Version {
        /// The subject asked for.
        subject: SubjectName,
        /// The version asked for.
        version: Version,
        /// The version the answer named.
        answered: Version,
    },
    /// Subject versions gave one schema ID with different schemas (texts,
    /// types or references); the ID was read again to say which it holds.
    #[error(
        "schema ID {id} is given with {} different schemas: {}; GET /schemas/ids/{id} gives {}",
        claims.len(),
        claim_list(claims),
        by_id
    )]
    Id {
        /// The ID.
        id: SchemaId,
        /// The subject versions that gave it, grouped by the schema they gave.
        claims: Vec<Vec<(SubjectName, Version)>>,
        /// What reading the ID itself gave.
        by_id: IdAnswer,
    },
}

/// What the source answered when an ID claimed by two schemas was read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdAnswer {
    /// The schema of one group of claims (an index into them).
    Claim(usize),
    /// A schema that none of the claims gave.
    Another,
    /// An error.
    Failed(String),
}

impl std::fmt::Display for IdAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdAnswer::Claim(index) => write!(f, "the schema of the {} group", ordinal(*index)),
            IdAnswer::Another => f.write_str("yet another schema"),
            IdAnswer::Failed(error) => write!(f, "an error ({error})"),
        }
    }
}

/// Groups of subject versions as `(1) `a` version 1; (2) `b` version 1, `c` version 2`.
fn claim_list(claims: &[Vec<(SubjectName, Version)>]) -> String {
    claims
        .iter()
        .enumerate()
        .map(|(index, group)| {
            let members: Vec<String> = group
                .iter()
                .map(|(subject, version)| format!("subject `{subject}` version {version}"))
                .collect();
            format!("{} by {}", ordinal(index), members.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `first`, `second`, … for small indexes.
fn ordinal(index: usize) -> String {
    match index {
        0 => "first".to_owned(),
        1 => "second".to_owned(),
        2 => "third".to_owned(),
        n => format!("{}th", n + 1),
    }
}

/// A level and a mode of the registry (`subject` `None`) or of one subject;
/// `None` where it has none of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The subject, or `None` for the global settings.
    pub subject: Option<SubjectName>,
    /// Its compatibility level.
    pub level: Option<Mode>,
    /// Its mode.
    pub mode: Option<RegistryMode>,
}

/// Copies what was read from a source (by [`read::source`]) into `target`:
/// reads the target, plans, then writes. `progress` hears (versions
/// registered, versions to register).
///
/// # Errors
/// [`ImportError`]; on [`ImportError::Conflicts`] and
/// [`ImportError::Unimportable`] nothing was written.
pub async fn import(
    held: &read::Source,
    target: &dyn crate::registry::Registry,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<copy::Summary, ImportError> {
    let present = read::target(target, held).await?;
    let plan = plan::plan(held, &present)?;
    copy::copy(held, &plan, target, progress).await
}

//! `import`: copies a whole Confluent-compatible registry into the embedded
//! one, keeping every schema ID, version number, soft-deleted state,
//! reference, level and mode.
//!
//! Three steps, one module each: [`read`] gathers what the source holds and
//! what the target already holds of it; [`plan`] decides, without I/O, what
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
    /// The source cannot be copied as it stands (nothing was written).
    #[error("the source cannot be imported: {0}")]
    Unimportable(String),
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

/// Copies everything `source` holds into `target`: reads both, plans, then
/// writes. `progress` hears (versions registered, versions to register).
///
/// # Errors
/// [`ImportError`]; on [`ImportError::Conflicts`] and
/// [`ImportError::Unimportable`] nothing was written.
pub async fn import(
    source: &dyn crate::registry::Registry,
    target: &dyn crate::registry::Registry,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<copy::Summary, ImportError> {
    let held = read::source(source).await?;
    let present = read::target(target, &held).await?;
    let plan = plan::plan(&held, &present)?;
    copy::copy(&held, &plan, target, progress).await
}

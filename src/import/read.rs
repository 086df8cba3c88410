//! Reads what an import needs: every version the source holds (soft-deleted
//! ones included) with its settings, and what the target already holds
//! under the same IDs, subject versions and subjects.

use std::collections::HashMap;

use super::{ImportError, Settings};
use crate::registry::{
    Error, Registry, SchemaContent, SchemaId, SubjectFilter, SubjectName, Version, VersionFilter, VersionSelector,
    VersionedSchema,
};

/// What the source registry holds.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// Every version of every subject, soft-deleted ones included, by subject then version.
    pub versions: Vec<VersionedSchema>,
    /// The global settings first, then each subject's, by subject.
    pub settings: Vec<Settings>,
}

/// What the target holds of the source's IDs, versions and subjects.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The content of each source ID the target holds.
    pub ids: HashMap<SchemaId, SchemaContent>,
    /// The ID and soft-deleted state of each source subject version the target holds.
    pub versions: HashMap<(SubjectName, Version), (SchemaId, bool)>,
    /// The target's settings, in the order of the source's.
    pub settings: Vec<Settings>,
}

/// Reads every subject, version and setting of the source.
///
/// # Errors
/// [`ImportError::Source`] naming what could not be read.
pub async fn source(registry: &dyn Registry) -> Result<Source, ImportError> {
    let failed = |what: String| move |source| ImportError::Source { what, source };
    let filter = SubjectFilter {
        include_deleted: true,
        ..SubjectFilter::default()
    };
    let subjects = registry
        .subjects(&filter)
        .await
        .map_err(failed("the subjects".to_owned()))?;
    let mut read = Source {
        versions: Vec::new(),
        settings: vec![
            settings(registry, None)
                .await
                .map_err(failed("the global settings".to_owned()))?,
        ],
    };
    for subject in subjects {
        let versions = registry
            .versions(&subject, VersionFilter::All)
            .await
            .map_err(failed(format!("the versions of subject `{subject}`")))?;
        for version in versions {
            let held = registry
                .version(&subject, VersionSelector::Exact(version), true)
                .await
                .map_err(failed(format!("subject `{subject}` version {version}")))?;
            read.versions.push(held);
        }
        let own = settings(registry, Some(&subject))
            .await
            .map_err(failed(format!("the settings of subject `{subject}`")))?;
        read.settings.push(own);
    }
    Ok(read)
}

/// Reads what the target holds of `source`.
///
/// # Errors
/// [`ImportError::Target`] when the target cannot be read.
pub async fn target(registry: &dyn Registry, source: &Source) -> Result<Target, ImportError> {
    let failed = |action: String| move |source| ImportError::Target { action, source };
    let mut read = Target::default();
    for held in &source.versions {
        if !read.ids.contains_key(&held.id)
            && let Some(content) = absent_as_none(registry.schema_by_id(held.id).await)
                .map_err(failed(format!("read schema ID {}", held.id)))?
        {
            read.ids.insert(held.id, content.as_ref().clone());
        }
        let found = absent_as_none(
            registry
                .version(&held.subject, VersionSelector::Exact(held.version), true)
                .await,
        )
        .map_err(failed(format!(
            "read subject `{}` version {}",
            held.subject, held.version
        )))?;
        if let Some(found) = found {
            read.versions
                .insert((held.subject.clone(), held.version), (found.id, found.deleted));
        }
    }
    for wanted in &source.settings {
        let own = settings(registry, wanted.subject.as_ref())
            .await
            .map_err(failed("read the levels and modes".to_owned()))?;
        read.settings.push(own);
    }
    Ok(read)
}

/// The level and mode a registry holds for `subject` (or globally) of its own.
///
/// # Errors
/// The registry's error when it cannot be asked.
async fn settings(registry: &dyn Registry, subject: Option<&SubjectName>) -> Result<Settings, Error> {
    let level = match registry.compatibility(subject, false).await {
        Ok(level) => Some(level),
        Err(Error::SubjectCompatibilityNotConfigured { .. } | Error::SubjectNotFound { .. }) => None,
        Err(error) => return Err(error),
    };
    let mode = match registry.mode(subject, false).await {
        Ok(mode) => Some(mode),
        Err(Error::SubjectModeNotConfigured { .. } | Error::SubjectNotFound { .. }) => None,
        Err(error) => return Err(error),
    };
    Ok(Settings {
        subject: subject.cloned(),
        level,
        mode,
    })
}

/// `None` for an answer that says the thing asked for does not exist.
fn absent_as_none<T>(answer: Result<T, Error>) -> Result<Option<T>, Error> {
    match answer {
        Ok(found) => Ok(Some(found)),
        Err(Error::SubjectNotFound { .. } | Error::VersionNotFound { .. } | Error::SchemaNotFound { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

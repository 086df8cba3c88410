//! What a registry really holds, asked in ways every Confluent-compatible
//! server answers alike. Karapace ignores `deletedOnly` (it answers the
//! live list) and has no per-subject mode (it answers the global one), so
//! soft-deleted versions and subject modes are derived, never taken from
//! those answers as they come.

use super::{Error, Registry, RegistryMode, SubjectFilter, SubjectName, Version, VersionFilter};

/// A subject's soft-deleted versions: `?deleted=true` minus the live list.
/// None for a subject the registry does not know.
///
/// # Errors
/// The registry's error for anything but an unknown subject.
pub async fn soft_deleted_versions(registry: &dyn Registry, subject: &SubjectName) -> Result<Vec<Version>, Error> {
    let all = versions_or_none(registry.versions(subject, VersionFilter::All).await)?;
    let live = versions_or_none(registry.versions(subject, VersionFilter::Live).await)?;
    Ok(all.into_iter().filter(|version| !live.contains(version)).collect())
}

/// The subjects whose every version is soft-deleted: `?deleted=true` minus
/// the live list.
///
/// # Errors
/// The registry's error.
pub async fn soft_deleted_subjects(registry: &dyn Registry) -> Result<Vec<SubjectName>, Error> {
    let all = SubjectFilter {
        include_deleted: true,
        ..SubjectFilter::default()
    };
    let all = registry.subjects(&all).await?;
    let live = registry.subjects(&SubjectFilter::default()).await?;
    Ok(all.into_iter().filter(|subject| !live.contains(subject)).collect())
}

/// The mode a subject holds of its own, given the registry's global mode;
/// `None` when it only inherits one. A mode is its own only where the
/// registry can hold subject modes at all and the mode differs from the
/// global one: an own mode equal to the global one cannot be told from an
/// inherited one on every registry (Karapace answers the global mode for
/// any existing subject), so it is treated as inherited.
///
/// # Errors
/// The registry's error for anything but "no mode of its own".
pub async fn own_subject_mode(
    registry: &dyn Registry,
    subject: &SubjectName,
    global: RegistryMode,
) -> Result<Option<RegistryMode>, Error> {
    if !registry.supports_subject_mode().await? {
        return Ok(None);
    }
    match registry.mode(Some(subject), false).await {
        Ok(mode) if mode != global => Ok(Some(mode)),
        Ok(_) | Err(Error::SubjectModeNotConfigured { .. } | Error::SubjectNotFound { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

fn versions_or_none(answer: Result<Vec<Version>, Error>) -> Result<Vec<Version>, Error> {
    match answer {
        Err(Error::SubjectNotFound { .. }) => Ok(Vec::new()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::compat::{Checker, Format};
    use crate::registry::embedded::EmbeddedRegistry;
    use crate::registry::embedded::sqlite::SqliteStore;
    use crate::registry::{NewSchema, RegisterOptions, VersionSelector};

    async fn registry(folder: &std::path::Path) -> EmbeddedRegistry {
        let store = SqliteStore::open(&folder.join("registry.db")).unwrap();
        EmbeddedRegistry::open(Arc::new(store), Checker::default())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn only_a_mode_other_than_the_global_one_is_a_subjects_own() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(folder.path()).await;
        let [frozen, pinned, plain] = ["frozen", "pinned", "plain"].map(|s| SubjectName::new(s).unwrap());
        registry
            .set_mode(Some(&frozen), RegistryMode::ReadOnly, false)
            .await
            .unwrap();
        registry
            .set_mode(Some(&pinned), RegistryMode::ReadWrite, false)
            .await
            .unwrap();
        let global = RegistryMode::ReadWrite;
        assert_eq!(
            own_subject_mode(&registry, &frozen, global).await.unwrap(),
            Some(RegistryMode::ReadOnly)
        );
        assert_eq!(own_subject_mode(&registry, &pinned, global).await.unwrap(), None);
        assert_eq!(own_subject_mode(&registry, &plain, global).await.unwrap(), None);
    }

    #[tokio::test]
    async fn soft_deleted_versions_are_the_listed_ones_that_are_not_live() {
        let folder = tempfile::tempdir().unwrap();
        let registry = registry(folder.path()).await;
        let subject = SubjectName::new("s").unwrap();
        // Each a promotion of the one before, so BACKWARD takes them.
        for text in ["\"int\"", "\"long\"", "\"double\""] {
            let schema = NewSchema {
                format: Format::Avro,
                text: text.to_owned(),
                references: Vec::new(),
                contract: Default::default(),
            };
            registry
                .register(&subject, &schema, RegisterOptions::default())
                .await
                .unwrap();
        }
        let second = Version::new(2).unwrap();
        registry
            .delete_version(&subject, VersionSelector::Exact(second), false)
            .await
            .unwrap();
        assert_eq!(soft_deleted_versions(&registry, &subject).await.unwrap(), vec![second]);
        let unknown = SubjectName::new("unknown").unwrap();
        assert!(soft_deleted_versions(&registry, &unknown).await.unwrap().is_empty());
    }
}

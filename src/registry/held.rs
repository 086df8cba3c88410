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

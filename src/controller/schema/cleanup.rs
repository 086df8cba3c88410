//! What the finalizer does when a Schema is deleted: honour its
//! `deletionPolicy`, but never delete a subject that other schemas still
//! refer to, and never one this resource does not manage.

use crate::controller::view::ObjectKey;
use crate::crd::DeletionPolicy;
use crate::registry::{Error, Registry, SchemaId, SubjectName, VersionFilter, VersionSelector};

/// What deleting the resource does in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupPlan {
    /// Leave the registry as it is: Retain, or the subject is not ours.
    Leave,
    /// Wait: others refer to the subject.
    Blocked {
        /// Who refers to it, for the condition message.
        referrers: Vec<String>,
    },
    /// Delete the subject (soft, or soft then permanent).
    Delete {
        /// The subject.
        subject: SubjectName,
        /// Whether to delete permanently after the soft delete.
        permanent: bool,
    },
}

/// Decides the cleanup from the policy, ownership and referrers (pure).
///
/// `resource_referrers` are the Schemas whose references name the subject;
/// `registry_referrers` the registry's schema IDs that do.
pub fn decide_cleanup(
    policy: DeletionPolicy,
    owner: bool,
    subject: Option<SubjectName>,
    resource_referrers: &[ObjectKey],
    registry_referrers: &[SchemaId],
) -> CleanupPlan {
    let Some(subject) = subject.filter(|_| owner) else {
        return CleanupPlan::Leave;
    };
    let permanent = match policy {
        DeletionPolicy::Retain => return CleanupPlan::Leave,
        DeletionPolicy::SoftDelete => false,
        DeletionPolicy::HardDelete => true,
    };
    let mut referrers: Vec<String> = resource_referrers.iter().map(|key| format!("Schema {key}")).collect();
    referrers.extend(registry_referrers.iter().map(|id| format!("schema ID {id}")));
    if referrers.is_empty() {
        CleanupPlan::Delete { subject, permanent }
    } else {
        CleanupPlan::Blocked { referrers }
    }
}

/// The IDs of the registry's schemas that refer to any live version of `subject`.
///
/// # Errors
/// The registry's error when it fails transiently.
pub async fn registry_referrers(registry: &dyn Registry, subject: &SubjectName) -> Result<Vec<SchemaId>, Error> {
    let versions = match registry.versions(subject, VersionFilter::Live).await {
        Ok(versions) => versions,
        Err(error) if error.is_unanswered() => return Err(error),
        Err(_) => return Ok(Vec::new()),
    };
    let mut referrers = Vec::new();
    for version in versions {
        match registry.referenced_by(subject, VersionSelector::Exact(version)).await {
            Ok(ids) => referrers.extend(ids),
            Err(error) if error.is_unanswered() => return Err(error),
            Err(_) => {}
        }
    }
    referrers.sort_unstable();
    referrers.dedup();
    Ok(referrers)
}

/// What the cleanup did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupOutcome {
    /// Done: the finalizer may go.
    Done {
        /// True when versions were deleted.
        deleted: bool,
    },
    /// Not done; the message says why. The finalizer stays.
    Blocked(String),
}

/// Carries out a cleanup plan. Deleting a subject that is already gone is done.
///
/// # Errors
/// The registry's error when it fails transiently (the finalizer stays and
/// the caller retries).
pub async fn act_cleanup(plan: &CleanupPlan, registry: &dyn Registry) -> Result<CleanupOutcome, Error> {
    match plan {
        CleanupPlan::Leave => Ok(CleanupOutcome::Done { deleted: false }),
        CleanupPlan::Blocked { referrers } => Ok(CleanupOutcome::Blocked(format!(
            "the subject is still referred to by {}; delete or change those first",
            referrers.join(", ")
        ))),
        CleanupPlan::Delete { subject, permanent } => {
            let soft = registry.delete_subject(subject, false).await;
            let mut deleted = match soft {
                Ok(versions) => !versions.is_empty(),
                Err(Error::SubjectNotFound { .. } | Error::SubjectSoftDeleted { .. }) => false,
                Err(error) => return blocked_or_error(error),
            };
            if *permanent {
                match registry.delete_subject(subject, true).await {
                    Ok(versions) => deleted |= !versions.is_empty(),
                    Err(Error::SubjectNotFound { .. }) => {}
                    Err(error) => return blocked_or_error(error),
                }
            }
            Ok(CleanupOutcome::Done { deleted })
        }
    }
}

fn blocked_or_error(error: Error) -> Result<CleanupOutcome, Error> {
    if error.is_transient() {
        Err(error)
    } else {
        Ok(CleanupOutcome::Blocked(format!(
            "the registry refused to delete the subject: {error}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Option<SubjectName> {
        Some(SubjectName::new("s").unwrap())
    }

    #[test]
    fn retain_leaves_the_registry_alone() {
        assert_eq!(
            decide_cleanup(DeletionPolicy::Retain, true, subject(), &[], &[]),
            CleanupPlan::Leave
        );
    }

    #[test]
    fn a_resource_that_does_not_manage_the_subject_deletes_nothing() {
        assert_eq!(
            decide_cleanup(DeletionPolicy::HardDelete, false, subject(), &[], &[]),
            CleanupPlan::Leave
        );
    }

    #[test]
    fn referrers_block_the_deletion_and_are_named() {
        let referrer = ObjectKey {
            namespace: "team".to_owned(),
            name: "orders".to_owned(),
        };
        let plan = decide_cleanup(
            DeletionPolicy::SoftDelete,
            true,
            subject(),
            &[referrer],
            &[SchemaId::new(7).unwrap()],
        );
        assert_eq!(
            plan,
            CleanupPlan::Blocked {
                referrers: vec!["Schema team/orders".to_owned(), "schema ID 7".to_owned()]
            }
        );
    }

    #[test]
    fn hard_delete_deletes_permanently() {
        assert_eq!(
            decide_cleanup(DeletionPolicy::HardDelete, true, subject(), &[], &[]),
            CleanupPlan::Delete {
                subject: SubjectName::new("s").unwrap(),
                permanent: true
            }
        );
    }
}

//! Deleting versions and subjects, softly (the IDs stay served) or for
//! good, never while another schema refers to what would go.

use super::EmbeddedRegistry;
use super::store::Change;
use crate::registry::{Error, SchemaId, SubjectName, Version, VersionSelector};

impl EmbeddedRegistry {
    pub(super) async fn remove_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        permanent: bool,
    ) -> Result<Version, Error> {
        self.write(move |decided_on| async move {
            let (version, change) = {
                let state = self.read();
                Self::refuse_writes_in(state.effective_mode(subject), subject)?;
                // An exact version is found even when soft-deleted, to tell 40406 from 40402.
                let include_deleted = permanent || matches!(version, VersionSelector::Exact(_));
                let (version, entry) = state.select(subject, version, include_deleted)?;
                match (permanent, entry.deleted) {
                    (false, true) => {
                        return Err(Error::VersionSoftDeleted {
                            subject: subject.clone(),
                            version,
                        });
                    }
                    (true, false) => {
                        return Err(Error::VersionNotSoftDeleted {
                            subject: subject.clone(),
                            version,
                        });
                    }
                    _ => {}
                }
                // A hard delete also waits for soft-deleted referrers: their IDs are still served,
                // and records written with them would become unreadable (Confluent's 42206).
                let referrers = state.referrers(subject, version, permanent);
                if !referrers.is_empty() {
                    return Err(Error::ReferencesExist {
                        subject: subject.clone(),
                        version,
                        referrers,
                    });
                }
                let subject = subject.clone();
                let change = if permanent {
                    Change::RemoveVersion { subject, version }
                } else {
                    Change::SoftDeleteVersion { subject, version }
                };
                (version, change)
            };
            self.commit("delete the version", decided_on, vec![change]).await?;
            tracing::info!(subject = %subject, version = version.get(), permanent, "Deleted version");
            Ok(version)
        })
        .await
    }

    pub(super) async fn remove_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
        self.write(move |decided_on| async move {
            let (versions, changes) = {
                let state = self.read();
                Self::refuse_writes_in(state.effective_mode(subject), subject)?;
                let found = state.subject(subject)?;
                let live: Vec<Version> = found.live().map(|(version, _)| version).collect();
                let all: Vec<Version> = found.versions.keys().copied().collect();
                let targets = match (permanent, live.is_empty()) {
                    (false, true) => {
                        return Err(Error::SubjectSoftDeleted {
                            subject: subject.clone(),
                        });
                    }
                    (true, false) => {
                        return Err(Error::SubjectNotSoftDeleted {
                            subject: subject.clone(),
                        });
                    }
                    (false, false) => live,
                    (true, true) => all,
                };
                for version in &targets {
                    // Referrers held only by this subject's own versions go with it.
                    let referrers: Vec<SchemaId> = state
                        .referrers(subject, *version, permanent)
                        .into_iter()
                        .filter(|id| state.holders(*id, true).iter().any(|holder| holder.subject != *subject))
                        .collect();
                    if !referrers.is_empty() {
                        return Err(Error::ReferencesExist {
                            subject: subject.clone(),
                            version: *version,
                            referrers,
                        });
                    }
                }
                let mut changes: Vec<Change> = targets
                    .iter()
                    .map(|version| {
                        let (subject, version) = (subject.clone(), *version);
                        if permanent {
                            Change::RemoveVersion { subject, version }
                        } else {
                            Change::SoftDeleteVersion { subject, version }
                        }
                    })
                    .collect();
                let mut row = found.row(subject);
                row.compatibility = None;
                row.mode = None;
                changes.push(Change::PutSubject(row));
                (targets, changes)
            };
            self.commit("delete the subject", decided_on, changes).await?;
            tracing::info!(subject = %subject, permanent, count = versions.len(), "Deleted subject");
            Ok(versions)
        })
        .await
    }
}

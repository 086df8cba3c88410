//! The embedded registry's working state in memory: every schema, subject
//! and version, answered without touching storage. Changes are applied here
//! only after the store has made them durable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::store::{Change, Snapshot, SubjectRow, VersionRow};
use crate::compat::Mode;
use crate::registry::{
    Error, RegistryMode, SchemaContent, SchemaId, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter,
    VersionSelector, VersionedSchema,
};

/// One version of a subject in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: SchemaId,
    pub(crate) deleted: bool,
}

/// A subject in memory.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) versions: BTreeMap<Version, Entry>,
    /// Hard-deleted versions: their numbers are never given again.
    pub(crate) retired: BTreeSet<Version>,
    pub(crate) next_version: Version,
    pub(crate) compatibility: Option<Mode>,
    pub(crate) mode: Option<RegistryMode>,
}

impl Subject {
    fn new() -> Self {
        Self {
            versions: BTreeMap::new(),
            retired: BTreeSet::new(),
            next_version: Version::FIRST,
            compatibility: None,
            mode: None,
        }
    }

    /// Live versions, oldest first.
    pub(crate) fn live(&self) -> impl DoubleEndedIterator<Item = (Version, SchemaId)> + '_ {
        self.versions
            .iter()
            .filter(|(_, entry)| !entry.deleted)
            .map(|(version, entry)| (*version, entry.id))
    }

    pub(crate) fn row(&self, subject: &SubjectName) -> SubjectRow {
        SubjectRow {
            subject: subject.clone(),
            next_version: self.next_version,
            compatibility: self.compatibility,
            mode: self.mode,
        }
    }
}

/// What a registration is decided on: when any of it changes between the
/// decision and the write, the registration is decided again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegistrationInputs {
    /// The subject's mode in force.
    pub(crate) mode: RegistryMode,
    /// The ID of a schema with the candidate's identity, when one exists.
    pub(crate) known_id: Option<SchemaId>,
    /// The newest live version of the subject holding that schema.
    pub(crate) existing: Option<Version>,
    /// The subject's compatibility level in force.
    pub(crate) level: Mode,
    /// The subject's live versions, oldest first.
    pub(crate) live: Vec<(Version, SchemaId)>,
}

/// Everything the registry holds.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) schemas: FxHashMap<SchemaId, Arc<SchemaContent>>,
    pub(crate) by_fingerprint: FxHashMap<String, SchemaId>,
    pub(crate) subjects: BTreeMap<SubjectName, Subject>,
    pub(crate) compatibility: Option<Mode>,
    pub(crate) mode: Option<RegistryMode>,
    /// Subject versions holding each schema, for lookups by ID.
    holders: FxHashMap<SchemaId, Vec<SubjectVersion>>,
    /// The newest store batch applied here.
    pub(crate) revision: u64,
}

/// The level when neither the subject nor the registry sets one.
pub(crate) const DEFAULT_COMPATIBILITY: Mode = Mode::Backward;

impl State {
    pub(crate) fn from_snapshot(snapshot: Snapshot) -> Self {
        let mut state = State {
            compatibility: snapshot.compatibility,
            mode: snapshot.mode,
            revision: snapshot.revision,
            ..State::default()
        };
        let mut changes: Vec<Change> = snapshot.schemas.into_iter().map(Change::PutSchema).collect();
        changes.extend(snapshot.subjects.into_iter().map(Change::PutSubject));
        changes.extend(snapshot.versions.into_iter().map(Change::PutVersion));
        for change in &changes {
            state.apply(change);
        }
        for (subject, version) in snapshot.retired {
            let entry = state.subjects.entry(subject).or_insert_with(Subject::new);
            entry.retired.insert(version);
        }
        state
    }

    /// Applies a committed batch, unless it is not newer than the last one
    /// applied (a batch can arrive twice: from its writer and from a catch-up).
    pub(crate) fn apply_batch(&mut self, revision: u64, changes: &[Change]) {
        if revision <= self.revision {
            return;
        }
        for change in changes {
            self.apply(change);
        }
        self.revision = revision;
    }

    /// Applies a change that the store has made durable.
    pub(crate) fn apply(&mut self, change: &Change) {
        match change {
            Change::PutSchema(row) => {
                self.by_fingerprint.insert(row.fingerprint.clone(), row.id);
                self.schemas.entry(row.id).or_insert_with(|| {
                    Arc::new(SchemaContent {
                        format: row.format,
                        text: row.text.clone(),
                        references: row.references.clone(),
                    })
                });
            }
            Change::PutSubject(row) => {
                let subject = self.subjects.entry(row.subject.clone()).or_insert_with(Subject::new);
                subject.next_version = row.next_version;
                subject.compatibility = row.compatibility;
                subject.mode = row.mode;
            }
            Change::PutVersion(VersionRow {
                subject,
                version,
                id,
                deleted,
            }) => {
                let entry = self.subjects.entry(subject.clone()).or_insert_with(Subject::new);
                entry.versions.insert(
                    *version,
                    Entry {
                        id: *id,
                        deleted: *deleted,
                    },
                );
                if entry.next_version <= *version {
                    entry.next_version = version.next();
                }
                let holders = self.holders.entry(*id).or_default();
                let holder = SubjectVersion {
                    subject: subject.clone(),
                    version: *version,
                };
                if let Err(position) = holders.binary_search(&holder) {
                    holders.insert(position, holder);
                }
            }
            Change::SoftDeleteVersion { subject, version } => {
                if let Some(entry) = self.subjects.get_mut(subject).and_then(|s| s.versions.get_mut(version)) {
                    entry.deleted = true;
                }
            }
            Change::RemoveVersion { subject, version } => {
                let held = self.subjects.get_mut(subject);
                let removed = held.and_then(|s| {
                    s.retired.insert(*version);
                    s.versions.remove(version)
                });
                if let Some(entry) = removed
                    && let Some(holders) = self.holders.get_mut(&entry.id)
                {
                    holders.retain(|holder| !(holder.subject == *subject && holder.version == *version));
                }
            }
            Change::SetGlobalCompatibility(level) => self.compatibility = *level,
            Change::SetGlobalMode(mode) => self.mode = *mode,
        }
    }

    /// What registering the schema with `fingerprint` under `subject` is decided on.
    pub(crate) fn registration_inputs(&self, subject: &SubjectName, fingerprint: &str) -> RegistrationInputs {
        let known_id = self.by_fingerprint.get(fingerprint).copied();
        let held = self.subjects.get(subject);
        let existing = known_id.and_then(|id| {
            held?
                .live()
                .rev()
                .find(|(_, holding)| *holding == id)
                .map(|(version, _)| version)
        });
        RegistrationInputs {
            mode: self.effective_mode(subject),
            known_id,
            existing,
            level: self.effective_compatibility(subject),
            live: held.map(|s| s.live().collect()).unwrap_or_default(),
        }
    }

    /// The stored row of a subject, or a new one.
    pub(crate) fn subject_row(&self, subject: &SubjectName) -> SubjectRow {
        self.subjects.get(subject).map_or_else(
            || SubjectRow {
                subject: subject.clone(),
                next_version: Version::FIRST,
                compatibility: None,
                mode: None,
            },
            |found| found.row(subject),
        )
    }

    /// The ID the next new schema gets: one above every ID used while that
    /// is representable, else the smallest never used (IDs are never freed,
    /// so a gap below the highest was never given). `None` when every ID is used.
    pub(crate) fn next_free_id(&self) -> Option<SchemaId> {
        let highest = self.schemas.keys().map(|id| id.get()).max().unwrap_or(0);
        if let Some(next) = SchemaId::new(i64::from(highest) + 1) {
            return Some(next);
        }
        let mut used: Vec<u32> = self.schemas.keys().map(|id| id.get()).collect();
        used.sort_unstable();
        let mut candidate = 1u32;
        for id in used {
            if id > candidate {
                break;
            }
            candidate = id + 1;
        }
        SchemaId::new(i64::from(candidate))
    }

    pub(crate) fn subject(&self, subject: &SubjectName) -> Result<&Subject, Error> {
        self.subjects
            .get(subject)
            .filter(|s| !s.versions.is_empty())
            .ok_or_else(|| Error::SubjectNotFound {
                subject: subject.clone(),
            })
    }

    /// The level in force for a subject.
    pub(crate) fn effective_compatibility(&self, subject: &SubjectName) -> Mode {
        self.subjects
            .get(subject)
            .and_then(|s| s.compatibility)
            .or(self.compatibility)
            .unwrap_or(DEFAULT_COMPATIBILITY)
    }

    /// The mode in force for a subject.
    pub(crate) fn effective_mode(&self, subject: &SubjectName) -> RegistryMode {
        if self.mode == Some(RegistryMode::ReadOnlyOverride) {
            return RegistryMode::ReadOnlyOverride;
        }
        self.subjects
            .get(subject)
            .and_then(|s| s.mode)
            .or(self.mode)
            .unwrap_or(RegistryMode::ReadWrite)
    }

    /// The versions holding a schema; soft-deleted ones only with `include_deleted`.
    pub(crate) fn holders(&self, id: SchemaId, include_deleted: bool) -> Vec<SubjectVersion> {
        self.holders
            .get(&id)
            .map(|holders| {
                holders
                    .iter()
                    .filter(|holder| include_deleted || !self.is_deleted(&holder.subject, holder.version))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn is_deleted(&self, subject: &SubjectName, version: Version) -> bool {
        self.subjects
            .get(subject)
            .and_then(|s| s.versions.get(&version))
            .is_none_or(|entry| entry.deleted)
    }

    /// The schema with this ID, while some version (even soft-deleted) holds it.
    pub(crate) fn schema(&self, id: SchemaId) -> Result<&Arc<SchemaContent>, Error> {
        let held = self.holders.get(&id).is_some_and(|holders| !holders.is_empty());
        self.schemas
            .get(&id)
            .filter(|_| held)
            .ok_or_else(|| Error::SchemaNotFound {
                what: format!("with ID {id}"),
            })
    }

    pub(crate) fn subjects_matching(&self, filter: &SubjectFilter) -> Vec<SubjectName> {
        self.subjects
            .iter()
            .filter(|(name, _)| {
                filter
                    .prefix
                    .as_deref()
                    .is_none_or(|prefix| name.as_str().starts_with(prefix))
            })
            .filter(|(_, subject)| {
                let live = subject.live().next().is_some();
                let deleted = !live && !subject.versions.is_empty();
                if filter.deleted_only {
                    deleted
                } else {
                    live || (filter.include_deleted && deleted)
                }
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    pub(crate) fn versions_matching(
        &self,
        subject: &SubjectName,
        filter: VersionFilter,
    ) -> Result<Vec<Version>, Error> {
        let found = self.subject(subject)?;
        let versions: Vec<Version> = found
            .versions
            .iter()
            .filter(|(_, entry)| match filter {
                VersionFilter::Live => !entry.deleted,
                VersionFilter::All => true,
                VersionFilter::DeletedOnly => entry.deleted,
            })
            .map(|(version, _)| *version)
            .collect();
        if versions.is_empty() && filter == VersionFilter::Live {
            return Err(Error::SubjectNotFound {
                subject: subject.clone(),
            });
        }
        Ok(versions)
    }

    /// Resolves a selector to a version of the subject. A subject whose
    /// every version is soft-deleted is not found unless deleted versions
    /// are asked for (Confluent: 40401, not 40402).
    pub(crate) fn select(
        &self,
        subject: &SubjectName,
        selector: VersionSelector,
        include_deleted: bool,
    ) -> Result<(Version, Entry), Error> {
        let found = self.subject(subject)?;
        let picked = match selector {
            VersionSelector::Latest => found
                .versions
                .iter()
                .rev()
                .find(|(_, entry)| include_deleted || !entry.deleted),
            VersionSelector::Exact(version) => found
                .versions
                .get_key_value(&version)
                .filter(|(_, entry)| include_deleted || !entry.deleted),
        };
        if let Some((version, entry)) = picked {
            return Ok((*version, *entry));
        }
        if !include_deleted && found.versions.values().all(|entry| entry.deleted) {
            return Err(Error::SubjectNotFound {
                subject: subject.clone(),
            });
        }
        Err(Error::VersionNotFound {
            subject: subject.clone(),
            version: selector.to_string(),
        })
    }

    pub(crate) fn versioned(
        &self,
        subject: &SubjectName,
        version: Version,
        entry: Entry,
    ) -> Result<VersionedSchema, Error> {
        let row = self.schemas.get(&entry.id).ok_or_else(|| Error::SchemaNotFound {
            what: format!("with ID {}", entry.id),
        })?;
        Ok(VersionedSchema {
            subject: subject.clone(),
            version,
            id: entry.id,
            format: row.format,
            text: row.text.clone(),
            references: row.references.clone(),
            deleted: entry.deleted,
        })
    }

    /// The IDs of live schemas whose references name this version.
    pub(crate) fn referrers(&self, subject: &SubjectName, version: Version) -> Vec<SchemaId> {
        let mut ids: Vec<SchemaId> = self
            .schemas
            .iter()
            .filter(|(_, content)| {
                content
                    .references
                    .iter()
                    .any(|reference| reference.subject == *subject && reference.version == version)
            })
            .map(|(id, _)| *id)
            .filter(|id| !self.holders(*id, false).is_empty())
            .collect();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::embedded::store::SubjectRow;

    #[test]
    fn a_batch_seen_twice_from_its_writer_and_a_catch_up_is_applied_once() {
        let subject = SubjectName::new("orders").unwrap();
        let version = |number| {
            Change::PutVersion(VersionRow {
                subject: subject.clone(),
                version: Version::new(number).unwrap(),
                id: SchemaId::new(1).unwrap(),
                deleted: false,
            })
        };
        let mut state = State::default();
        state.apply_batch(1, &[version(1)]);
        state.apply_batch(2, &[version(2)]);
        // The first batch again, and an old revision with a change that would matter.
        state.apply_batch(1, &[version(1)]);
        state.apply_batch(
            2,
            &[Change::RemoveVersion {
                subject: subject.clone(),
                version: Version::new(2).unwrap(),
            }],
        );
        assert_eq!(state.revision, 2);
        assert_eq!(state.subjects[&subject].versions.len(), 2);
        assert_eq!(
            state.subject_row(&subject),
            SubjectRow {
                subject: subject.clone(),
                next_version: Version::new(3).unwrap(),
                compatibility: None,
                mode: None,
            }
        );
    }
}

//! The embedded registry's working state in memory: every schema, subject
//! and version, answered without touching storage. Changes are applied here
//! only after the store has made them durable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::store::{Change, SchemaRow, Snapshot, SubjectRow, VersionRow};
use sha2::{Digest, Sha256};

use crate::compat::{Format, Mode};
use crate::registry::context;
use crate::registry::contract::{Contract, ContractConfig};
use crate::registry::search::{self, ElementHit, Found, Query, SearchIndex, SubjectHit, Target};
use crate::registry::{
    Error, Guid, RegistryMode, SchemaContent, SchemaId, SchemaReference, SubjectFilter, SubjectName, SubjectVersion,
    Version, VersionFilter, VersionSelector, VersionedSchema,
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
    /// The subject's own data-contract settings.
    pub(crate) config: ContractConfig,
}

impl Subject {
    fn new() -> Self {
        Self {
            versions: BTreeMap::new(),
            retired: BTreeSet::new(),
            next_version: Version::FIRST,
            compatibility: None,
            mode: None,
            config: ContractConfig::default(),
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
            config: self.config.clone(),
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
    /// The subject's live versions the candidate is checked against, oldest
    /// first: all of them, or with a compatibility group only those of the
    /// candidate's lineage.
    pub(crate) live: Vec<(Version, SchemaId)>,
    /// The subject's newest live version, whose contract a registration
    /// without one inherits.
    pub(crate) latest: Option<(Version, SchemaId)>,
    /// The data-contract settings in force.
    pub(crate) config: ContractConfig,
    /// The contract the registration stores.
    pub(crate) contract: Contract,
}

/// A schema submitted for registration, lookup or a check, parsed.
pub(crate) struct Candidate<'a> {
    pub(crate) format: Format,
    /// Its canonical form.
    pub(crate) canonical: &'a str,
    pub(crate) references: &'a [SchemaReference],
    /// Its contract as sent.
    pub(crate) contract: &'a Contract,
}

impl Candidate<'_> {
    /// Its identity with `contract`: SHA-256 over the format, canonical
    /// form, references and (when not empty) the contract, so a schema
    /// without one keeps the identity it had before data contracts.
    pub(crate) fn identity(&self, contract: &Contract) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.format.as_str().as_bytes());
        hasher.update([0]);
        hasher.update(self.canonical.as_bytes());
        for reference in self.references {
            hasher.update([0]);
            hasher.update(reference.name.as_bytes());
            hasher.update([0]);
            hasher.update(reference.subject.as_str().as_bytes());
            hasher.update([0]);
            hasher.update(reference.version.get().to_be_bytes());
        }
        if !contract.is_empty() {
            hasher.update([1]);
            hasher.update(serde_json::to_vec(contract).unwrap_or_default());
        }
        hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// Everything the registry holds.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) schemas: FxHashMap<SchemaId, Arc<SchemaContent>>,
    pub(crate) by_fingerprint: FxHashMap<String, SchemaId>,
    pub(crate) subjects: BTreeMap<SubjectName, Subject>,
    pub(crate) compatibility: Option<Mode>,
    pub(crate) mode: Option<RegistryMode>,
    /// The global data-contract settings.
    pub(crate) config: ContractConfig,
    /// Schemas by GUID: the first ID given to content with that GUID.
    pub(crate) by_guid: FxHashMap<Guid, SchemaId>,
    /// Subject versions holding each schema, for lookups by ID.
    holders: FxHashMap<SchemaId, Vec<SubjectVersion>>,
    /// The schemas whose references name each subject version, so finding a
    /// version's referrers does not scan every schema (schemas are never
    /// removed, so neither are entries).
    referring: FxHashMap<SubjectVersion, Vec<SchemaId>>,
    /// The elements of every schema by name, for searches (kept like
    /// `schemas`: a schema's entries stay when its versions are deleted).
    pub(crate) search: SearchIndex,
    /// The newest store batch applied here.
    pub(crate) revision: u64,
}

/// The text REST answers give for a schema of `format` stored as `text`,
/// when it is not `text` itself: an Avro schema as Confluent answers it,
/// Avro's own `Schema.toString()` (issue 39 item 8). The author's text stays
/// what is stored.
fn answer_text(format: Format, text: &str) -> Option<String> {
    match format {
        Format::Avro => crate::compat::avro::schema_string(text).filter(|answer| answer != text),
        Format::Json | Format::Protobuf => None,
    }
}

/// What loading a schema row prepares before it is put in memory: its
/// answer text and its elements for the search index.
type Prepared = (Option<String>, Vec<search::Element>);

fn prepare(row: &SchemaRow) -> Prepared {
    (
        answer_text(row.format, &row.text),
        search::elements::elements(row.format, &row.text),
    )
}

/// [`prepare`] for every row, on as many threads as there are cores.
fn prepare_all(rows: &[SchemaRow]) -> Vec<Prepared> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let chunk = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = rows
            .chunks(chunk)
            .map(|rows| scope.spawn(move || rows.iter().map(prepare).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// The level when neither the subject nor the registry sets one.
pub(crate) const DEFAULT_COMPATIBILITY: Mode = Mode::Backward;

impl State {
    pub(crate) fn from_snapshot(snapshot: Snapshot) -> Self {
        let mut state = State {
            compatibility: snapshot.compatibility,
            mode: snapshot.mode,
            config: snapshot.config,
            revision: snapshot.revision,
            ..State::default()
        };
        // Answers and elements are prepared on every core: it is most of a load's work.
        let prepared = prepare_all(&snapshot.schemas);
        for (row, prepared) in snapshot.schemas.iter().zip(prepared) {
            state.put_schema(row, prepared);
        }
        let mut changes: Vec<Change> = snapshot.subjects.into_iter().map(Change::PutSubject).collect();
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

    /// Puts a schema in memory with its answer text, prepared once here so
    /// reads do not render per request, and its elements in the search
    /// index; a schema held already is kept.
    fn put_schema(&mut self, row: &SchemaRow, (answer_text, elements): Prepared) {
        self.by_fingerprint.insert(row.fingerprint.clone(), row.id);
        if self.schemas.contains_key(&row.id) {
            return;
        }
        self.search.add(row.id, row.format, elements);
        let content = SchemaContent {
            format: row.format,
            text: row.text.clone(),
            answer_text,
            references: row.references.clone(),
            contract: row.contract.clone(),
        };
        self.by_guid.entry(content.guid()).or_insert(row.id);
        // The GUID over the author's text, which answers gave before they
        // followed Confluent's text, still resolves.
        if content.answer_text.is_some() {
            let authored = Guid::of(&content.text, &content.references, &content.contract);
            self.by_guid.entry(authored).or_insert(row.id);
        }
        for reference in &content.references {
            let target = SubjectVersion {
                subject: reference.subject.clone(),
                version: reference.version,
            };
            self.referring.entry(target).or_default().push(row.id);
        }
        self.schemas.insert(row.id, Arc::new(content));
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
                let held = self.schemas.contains_key(&row.id);
                let prepared = if held { (None, Vec::new()) } else { prepare(row) };
                self.put_schema(row, prepared);
            }
            Change::PutSubject(row) => {
                let subject = self.subjects.entry(row.subject.clone()).or_insert_with(Subject::new);
                subject.next_version = row.next_version;
                subject.compatibility = row.compatibility;
                subject.mode = row.mode;
                subject.config = row.config.clone();
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
            Change::SetGlobalConfig(config) => self.config = config.clone(),
        }
    }

    /// What registering `candidate` under `subject` is decided on, and its
    /// identity. Outside IMPORT mode its contract is merged as Confluent
    /// merges it: the configured overrides over the candidate's own metadata
    /// and rules (or, for each it lacks, the newest version's) over the
    /// configured defaults.
    pub(crate) fn registration_inputs(
        &self,
        subject: &SubjectName,
        candidate: &Candidate<'_>,
    ) -> (RegistrationInputs, String) {
        let mode = self.effective_mode(subject);
        let held = self.subjects.get(subject);
        let latest = held.and_then(|s| s.live().next_back());
        let config = self.config_in_scope(subject).clone();
        let as_sent = candidate.contract.clone().normalized();
        // A version holding the schema as sent answers first, as Confluent's
        // lookup before a registration finds it, unless settings would
        // change what is stored.
        let held_as_sent = (mode != RegistryMode::Import && !config.has_defaults_or_overrides())
            .then(|| candidate.identity(&as_sent))
            .filter(|fingerprint| {
                let id = self.by_fingerprint.get(fingerprint);
                held.is_some_and(|s| s.live().any(|(_, holding)| Some(&holding) == id))
            });
        let (contract, fingerprint) = match held_as_sent {
            Some(fingerprint) => (as_sent, fingerprint),
            None if mode == RegistryMode::Import => {
                let fingerprint = candidate.identity(&as_sent);
                (as_sent, fingerprint)
            }
            None => {
                let merged = self.merged_contract(&config, latest, candidate.contract);
                let fingerprint = candidate.identity(&merged);
                (merged, fingerprint)
            }
        };
        let known_id = self.by_fingerprint.get(&fingerprint).copied();
        let existing = known_id.and_then(|id| {
            held?
                .live()
                .rev()
                .find(|(_, holding)| *holding == id)
                .map(|(version, _)| version)
        });
        let inputs = RegistrationInputs {
            mode,
            known_id,
            existing,
            level: self.effective_compatibility(subject),
            live: self.lineage(held, &config, &contract),
            latest,
            config,
            contract,
        };
        (inputs, fingerprint)
    }

    /// The contract `requested` becomes under `config`, inheriting from the
    /// version `latest` what it lacks.
    fn merged_contract(
        &self,
        config: &ContractConfig,
        latest: Option<(Version, SchemaId)>,
        requested: &Contract,
    ) -> Contract {
        let previous = latest
            .and_then(|(_, id)| self.schemas.get(&id))
            .map(|content| &content.contract);
        config.merge(&requested.or_inherited(previous))
    }

    /// The live versions of `held` a schema with `contract` is checked
    /// against under `config`: its lineage, with a compatibility group.
    fn lineage(
        &self,
        held: Option<&Subject>,
        config: &ContractConfig,
        contract: &Contract,
    ) -> Vec<(Version, SchemaId)> {
        let Some(held) = held else {
            return Vec::new();
        };
        held.live()
            .filter(|(_, id)| {
                self.schemas
                    .get(id)
                    .is_none_or(|content| config.same_lineage(contract, &content.contract))
            })
            .collect()
    }

    /// The data-contract settings in force for a subject: its own when it
    /// has a configuration of its own (a level or any setting), else the
    /// global ones, as Confluent takes the whole configuration in scope.
    pub(crate) fn config_in_scope(&self, subject: &SubjectName) -> &ContractConfig {
        self.in_scope(subject, |own| {
            (own.compatibility.is_some() || !own.config.is_empty()).then_some(&own.config)
        })
        .unwrap_or(&self.config)
    }

    /// The version of `subject` holding the candidate: by its contract as
    /// sent, else by the contract a registration would give it.
    pub(crate) fn lookup(
        &self,
        subject: &SubjectName,
        candidate: &Candidate<'_>,
        include_deleted: bool,
    ) -> Option<(Version, Entry)> {
        let held = self.subjects.get(subject)?;
        let find = |fingerprint: &str| {
            let id = self.by_fingerprint.get(fingerprint)?;
            held.versions
                .iter()
                .rev()
                .find(|(_, entry)| entry.id == *id && (include_deleted || !entry.deleted))
                .map(|(version, entry)| (*version, *entry))
        };
        find(&candidate.identity(&candidate.contract.clone().normalized())).or_else(|| {
            let merged = self.merged_contract(
                self.config_in_scope(subject),
                held.live().next_back(),
                candidate.contract,
            );
            find(&candidate.identity(&merged))
        })
    }

    /// The live versions a compatibility check of the candidate under
    /// `subject` reads (its lineage, with a compatibility group).
    pub(crate) fn versions_to_check(
        &self,
        subject: &SubjectName,
        candidate: &Candidate<'_>,
    ) -> Vec<(Version, SchemaId)> {
        let held = self.subjects.get(subject);
        let config = self.config_in_scope(subject);
        let contract = self.merged_contract(config, held.and_then(|s| s.live().next_back()), candidate.contract);
        self.lineage(held, config, &contract)
    }

    /// The stored row of a subject, or a new one.
    pub(crate) fn subject_row(&self, subject: &SubjectName) -> SubjectRow {
        self.subjects.get(subject).map_or_else(
            || SubjectRow {
                subject: subject.clone(),
                next_version: Version::FIRST,
                compatibility: None,
                mode: None,
                config: ContractConfig::default(),
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

    /// The highest schema ID given so far (Confluent's `maxId`).
    pub(crate) fn max_id(&self) -> Option<SchemaId> {
        self.schemas.keys().max().copied()
    }

    /// The refusal of `id`, chosen for a registration to `subject`, when it
    /// already names other content: who holds it, and in which context.
    pub(crate) fn id_in_use(&self, id: SchemaId, subject: &SubjectName) -> Error {
        let holder = match self.holders(id, true).first() {
            Some(held) => format!(
                "subject `{}` version {} in context `{}`",
                held.subject,
                held.version,
                context::context_of(held.subject.as_str())
            ),
            None => "no version any more (IDs of schemas deleted for good are never given again)".to_owned(),
        };
        Error::IdInUse {
            id,
            context: context::context_of(subject.as_str()).to_owned(),
            holder,
        }
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
        self.in_scope(subject, |own| own.compatibility)
            .or(self.compatibility)
            .unwrap_or(DEFAULT_COMPATIBILITY)
    }

    /// The first setting `read` finds on the subject, then on the subjects
    /// its context falls back to (the context's own, then `:.__GLOBAL:`).
    fn in_scope<'a, T>(&'a self, subject: &SubjectName, read: impl Fn(&'a Subject) -> Option<T>) -> Option<T> {
        self.subjects.get(subject).and_then(&read).or_else(|| {
            context::fallbacks(subject.as_str()).into_iter().find_map(|fallback| {
                let fallback = SubjectName::new(fallback).ok()?;
                self.subjects.get(&fallback).and_then(&read)
            })
        })
    }

    /// The mode in force for a subject.
    pub(crate) fn effective_mode(&self, subject: &SubjectName) -> RegistryMode {
        if self.mode == Some(RegistryMode::ReadOnlyOverride) {
            return RegistryMode::ReadOnlyOverride;
        }
        self.in_scope(subject, |own| own.mode)
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

    /// Answers a search over live versions (see [`crate::registry::search`]).
    pub(crate) fn search(&self, query: &Query) -> Found {
        let mut found = Found::default();
        if query.target() == Target::Subject {
            for (name, subject) in &self.subjects {
                if !query.matches(name.as_str()) {
                    continue;
                }
                let Some((version, content)) = subject
                    .live()
                    .next_back()
                    .and_then(|(version, id)| Some((version, self.schemas.get(&id)?)))
                else {
                    continue;
                };
                if found.subjects.len() == query.limit() {
                    found.more = true;
                    break;
                }
                found.subjects.push(SubjectHit {
                    subject: name.clone(),
                    latest_version: version,
                    schema_type: content.format.as_str(),
                });
            }
            return found;
        }
        'postings: for posting in self.search.matching(query) {
            for holder in self.holders(posting.id, false) {
                if found.elements.len() == query.limit() {
                    found.more = true;
                    break 'postings;
                }
                found.elements.push(ElementHit {
                    subject: holder.subject,
                    version: holder.version,
                    id: posting.id,
                    schema_type: posting.format.as_str(),
                    kind: posting.kind,
                    name: posting.name.to_string(),
                    path: posting.path.to_string(),
                    type_name: posting.type_name.to_string(),
                });
            }
        }
        found
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
            answer_text: row.answer_text.clone(),
            references: row.references.clone(),
            contract: row.contract.clone(),
            deleted: entry.deleted,
        })
    }

    /// The IDs of live schemas whose references name this version.
    /// The schemas that refer to `version` of `subject` and are held by a
    /// version that is live, or (with `include_soft_deleted`, for a hard
    /// delete, which would leave them unreadable) by any version at all.
    pub(crate) fn referrers(
        &self,
        subject: &SubjectName,
        version: Version,
        include_soft_deleted: bool,
    ) -> Vec<SchemaId> {
        let target = SubjectVersion {
            subject: subject.clone(),
            version,
        };
        let mut ids: Vec<SchemaId> = self
            .referring
            .get(&target)
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| !self.holders(*id, include_soft_deleted).is_empty())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// References whose target version no longer exists (hard-deleted
    /// before deletes checked soft-deleted referrers): each referring schema
    /// with the subject and version it names.
    pub(crate) fn dangling_references(&self) -> Vec<(SchemaId, SubjectName, Version)> {
        let mut dangling: Vec<(SchemaId, SubjectName, Version)> = self
            .schemas
            .iter()
            .flat_map(|(id, content)| {
                content
                    .references
                    .iter()
                    .filter(|reference| {
                        self.subjects
                            .get(&reference.subject)
                            .is_none_or(|found| !found.versions.contains_key(&reference.version))
                    })
                    .map(|reference| (*id, reference.subject.clone(), reference.version))
            })
            .collect();
        dangling.sort();
        dangling
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
                config: ContractConfig::default(),
            }
        );
    }
}

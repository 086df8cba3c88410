//! The embedded registry: versions stored by schemaops itself, behind a
//! [`Store`], with the working state in memory.
//!
//! # Guarantees
//! Writes are serialized and durable before they are acknowledged: each
//! registration, delete or setting is one store transaction, applied to
//! memory only after it commits. Reads never wait for storage. IDs and
//! versions are never reused, even after hard deletes.

mod cache;
mod coalesce;
pub mod kafka;
pub mod postgres;
pub mod sqlite;
mod state;
pub mod store;
mod stored_text;
mod wal_index;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use async_trait::async_trait;

use self::cache::ParsedCache;
use self::state::State;
use self::store::{Applied, CatchUp, Change, SchemaRow, StaleRevision, Store, VersionRow};
use super::Guid;
use super::contract::{ConfigPatch, ContractConfig};
use super::{
    CompatibilityResult, Error, NewSchema, RegisterOptions, Registered, Registry, RegistryMode, SchemaContent,
    SchemaId, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter, VersionSelector, VersionedSchema,
};
use crate::compat::{Checker, Format, Mode, ParsedSchema, Reference, Report, SchemaRole, SchemaText};

/// How many times a write decides again after other processes wrote first.
const MAX_WRITE_ATTEMPTS: usize = 100;

/// How deep references may nest (a reference to a schema with references…).
const MAX_REFERENCE_DEPTH: usize = 32;

/// What [`EmbeddedRegistry::reference_texts`] has gathered so far.
#[derive(Default)]
struct ReferenceWalk {
    /// The versions already walked.
    visited: std::collections::HashSet<(SubjectName, Version)>,
    /// The import names already given a text.
    names: std::collections::HashSet<String>,
    /// The texts, each after those it imports.
    texts: Vec<Reference>,
}

/// A registry that stores its versions itself.
pub struct EmbeddedRegistry {
    state: RwLock<State>,
    /// Serializes writes: a registration's compatibility check and its write
    /// see the same versions.
    writes: tokio::sync::Mutex<()>,
    store: Arc<dyn Store>,
    checker: Checker,
    parsed: ParsedCache,
    /// Shares catch-ups between concurrent reads.
    catch_ups: coalesce::Coalesced,
    /// False when this registry stands in for one without per-subject modes
    /// (`check` against Karapace): then it behaves as that one does.
    subject_modes: std::sync::atomic::AtomicBool,
    /// False when this registry stands in for one without data contracts
    /// (`check` against Karapace or Confluent 7.x): then it behaves as that
    /// one does.
    data_contracts: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for EmbeddedRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedRegistry").finish_non_exhaustive()
    }
}

/// How many dangling references the start-up log names one by one.
const LOGGED_DANGLING_REFERENCES: usize = 20;

/// Logs the references a store already holds whose target version is gone
/// (hard-deleted while a soft-deleted version still referred to it, before
/// such deletes were refused): the referring schema is still served, but a
/// client cannot resolve its reference.
fn report_dangling_references(state: &State) {
    let dangling = state.dangling_references();
    for (id, subject, version) in dangling.iter().take(LOGGED_DANGLING_REFERENCES) {
        tracing::warn!(
            schema_id = id.get(),
            %subject,
            version = version.get(),
            "Schema {id} refers to version {version} of subject `{subject}`, which was hard-deleted: \
             clients cannot resolve the reference; register that version again (IMPORT mode keeps its number)"
        );
    }
    if dangling.len() > LOGGED_DANGLING_REFERENCES {
        tracing::warn!(
            more = dangling.len() - LOGGED_DANGLING_REFERENCES,
            "More schemas refer to hard-deleted versions"
        );
    }
}

impl EmbeddedRegistry {
    /// Loads everything from `store`; `checker` judges every registration.
    ///
    /// # Errors
    /// [`Error::Store`] when the store cannot be read.
    pub async fn open(store: Arc<dyn Store>, checker: Checker) -> Result<Self, Error> {
        let snapshot = store.load().await.map_err(|source| Error::Store {
            action: "load the registry",
            source,
        })?;
        let state = State::from_snapshot(snapshot);
        report_dangling_references(&state);
        Ok(Self {
            state: RwLock::new(state),
            writes: tokio::sync::Mutex::new(()),
            store,
            checker,
            parsed: ParsedCache::default(),
            catch_ups: coalesce::Coalesced::default(),
            subject_modes: std::sync::atomic::AtomicBool::new(true),
            data_contracts: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Makes this registry behave as one without per-subject modes does: a
    /// subject's mode is the global one, and writing one is
    /// [`Error::Unsupported`]. For a scratch copy of such a registry, so a
    /// check predicts what applying to it would do.
    pub fn emulate_no_subject_modes(&self) {
        self.subject_modes.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Makes this registry behave as one without data contracts does:
    /// data-contract settings are [`Error::Unsupported`], and the metadata
    /// and rule set of a registration are dropped. For a scratch copy of
    /// such a registry, so a check predicts what applying to it would do.
    pub fn emulate_no_data_contracts(&self) {
        self.data_contracts.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    fn has_data_contracts(&self) -> bool {
        self.data_contracts.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn has_subject_modes(&self) -> bool {
        self.subject_modes.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn refuse_subject_mode(&self, subject: Option<&SubjectName>) -> Result<(), Error> {
        if subject.is_some() && !self.has_subject_modes() {
            return Err(Error::Unsupported {
                url: "the scratch registry".to_owned(),
                feature: "a per-subject mode",
            });
        }
        Ok(())
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // State changes are single `apply` calls that cannot panic half-way.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes every write committed before this call (by any process)
    /// visible in memory. When the store can tell at once that nothing is
    /// new, that is all; otherwise concurrent callers share store round
    /// trips (see [`coalesce`]): under load, one catch-up serves every read
    /// that arrived before it started.
    async fn catch_up(&self) -> Result<(), Error> {
        // Asked after this call began, so as good as a catch-up begun then.
        let revision = self.read().revision;
        if self.store.unchanged_since(revision) {
            return Ok(());
        }
        self.catch_ups.run(|| self.catch_up_now()).await
    }

    /// Applies the batches other processes committed since the last one
    /// seen, or loads everything again when the store's log no longer
    /// reaches back that far.
    async fn catch_up_now(&self) -> Result<(), Error> {
        let revision = self.read().revision;
        let catch_up = self
            .store
            .changes_since(revision)
            .await
            .map_err(|source| Error::Store {
                action: "read other processes' writes",
                source,
            })?;
        match catch_up {
            CatchUp::Batches(batches) if batches.is_empty() => {}
            CatchUp::Batches(batches) => {
                let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
                for batch in &batches {
                    state.apply_batch(batch.revision, &batch.changes);
                }
            }
            CatchUp::Reload => {
                tracing::info!(
                    revision,
                    "The store's log was compacted past this process; loading it again"
                );
                let snapshot = self.store.load().await.map_err(|source| Error::Store {
                    action: "load the registry again",
                    source,
                })?;
                let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
                // Another request may have caught up meanwhile; never go back.
                if snapshot.revision >= state.revision {
                    *state = State::from_snapshot(snapshot);
                }
            }
        }
        Ok(())
    }

    /// Runs `attempt` under the write lock on caught-up state, again while
    /// another process wrote first.
    ///
    /// `attempt` is given the revision of the state it decides on, and
    /// commits with it ([`Self::commit`]): reads catch up without the write
    /// lock, so the state may move on while an attempt runs, and a commit
    /// based on the revision seen at its end would write changes decided on
    /// older state (an ID another process took meanwhile, say).
    async fn write<T, F, Fut>(&self, mut attempt: F) -> Result<T, Error>
    where
        F: FnMut(u64) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let _write = self.writes.lock().await;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            self.catch_up().await?;
            let decided_on = self.read().revision;
            match attempt(decided_on).await {
                Err(Error::Store { source, .. }) if source.is::<StaleRevision>() => continue,
                other => return other,
            }
        }
        Err(Error::Store {
            action: "write while other processes keep writing",
            source: Box::new(StaleRevision),
        })
    }

    /// Makes `changes` durable on top of the state they were decided on
    /// (revision `decided_on`, no later), then applies them in memory.
    async fn commit(&self, action: &'static str, decided_on: u64, changes: Vec<Change>) -> Result<(), Error> {
        let applied = self
            .store
            .apply_after(decided_on, changes.clone())
            .await
            .map_err(|source| Error::Store { action, source })?;
        let revision = match applied {
            Applied::Committed { revision } => revision,
            Applied::Behind => {
                return Err(Error::Store {
                    action,
                    source: Box::new(StaleRevision),
                });
            }
        };
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        state.apply_batch(revision, &changes);
        Ok(())
    }

    /// The texts of the schemas `references` name, each after its own
    /// references: every (subject, version) once, however many schemas of
    /// the graph refer to it, so the walk is linear in the graph's size.
    fn reference_texts(
        state: &State,
        references: &[super::SchemaReference],
        depth: usize,
        walk: &mut ReferenceWalk,
    ) -> Result<(), Error> {
        if depth > MAX_REFERENCE_DEPTH {
            return Err(Error::InvalidSchema {
                reason: format!("references nest more than {MAX_REFERENCE_DEPTH} levels deep"),
            });
        }
        for reference in references {
            if !walk.visited.insert((reference.subject.clone(), reference.version)) {
                continue;
            }
            let (_, entry) = state
                .select(&reference.subject, VersionSelector::Exact(reference.version), true)
                .map_err(|_| Error::InvalidSchema {
                    reason: format!(
                        "reference `{}` names version {} of subject `{}`, which does not exist",
                        reference.name, reference.version, reference.subject
                    ),
                })?;
            let row = state.schema(entry.id)?;
            Self::reference_texts(state, &row.references, depth + 1, walk)?;
            if walk.names.insert(reference.name.clone()) {
                walk.texts.push(Reference {
                    name: reference.name.clone(),
                    text: row.text.clone(),
                });
            }
        }
        Ok(())
    }

    fn schema_text(state: &State, text: &str, references: &[super::SchemaReference]) -> Result<SchemaText, Error> {
        let mut walk = ReferenceWalk::default();
        Self::reference_texts(state, references, 0, &mut walk)?;
        Ok(SchemaText {
            text: text.to_owned(),
            references: walk.texts,
        })
    }

    /// Parses a submitted schema (and checks its rules); returns it with
    /// its canonical form.
    async fn parse_new(&self, schema: &NewSchema) -> Result<(Arc<ParsedSchema>, String), Error> {
        if let Some(rules) = &schema.contract.rule_set {
            rules.validate()?;
        }
        let text = Self::schema_text(&self.read(), &schema.text, &schema.references)?;
        let checker = self.checker;
        let format = schema.format;
        let parsed = blocking(move || checker.parse(format, SchemaRole::Candidate, &text))
            .await?
            .map_err(|error| Error::from_check(&error))?;
        let canonical = parsed.canonical();
        Ok((Arc::new(parsed), canonical))
    }

    /// The text to store for `schema`, parsed as `parsed` with canonical
    /// form `canonical` (see [`stored_text`]): a rewritten text only when it
    /// parses back to the same canonical form, else the text as sent.
    async fn stored_text(
        &self,
        schema: &NewSchema,
        parsed: &Arc<ParsedSchema>,
        canonical: &str,
        normalize: bool,
    ) -> Result<String, Error> {
        let plain = stored_text::plain_text(schema.format, &schema.text);
        let Some(rewritten) = stored_text::rewritten_text(parsed, &schema.text, normalize) else {
            return Ok(plain);
        };
        let text = Self::schema_text(&self.read(), &rewritten, &schema.references)?;
        let checker = self.checker;
        let format = schema.format;
        let reparsed = blocking(move || checker.parse(format, SchemaRole::Candidate, &text)).await?;
        match reparsed {
            Ok(again) if again.canonical() == canonical => Ok(rewritten),
            outcome => {
                tracing::warn!(
                    format = format.as_str(),
                    parses = outcome.is_ok(),
                    "The rewritten schema text would not keep the schema's identity; storing the text as sent"
                );
                Ok(plain)
            }
        }
    }

    /// The parsed form of a stored schema, from the cache or parsed now.
    async fn parse_stored(&self, id: SchemaId) -> Result<Arc<ParsedSchema>, Error> {
        if let Some(parsed) = self.parsed.get(id) {
            return Ok(parsed);
        }
        let (format, text, cost) = {
            let state = self.read();
            let row = state.schema(id)?;
            (
                row.format,
                Self::schema_text(&state, &row.text, &row.references)?,
                row.text.len(),
            )
        };
        let checker = self.checker;
        let parsed = blocking(move || checker.parse(format, SchemaRole::Previous(0), &text))
            .await?
            .map_err(|error| Error::InvalidSchema {
                reason: format!(
                    "stored schema {id} cannot be read: {}",
                    crate::compat::error_chain(&error)
                ),
            })?;
        let parsed = Arc::new(parsed);
        self.parsed.insert(id, Arc::clone(&parsed), cost);
        Ok(parsed)
    }

    /// Checks `candidate` against `versions` (oldest first) under `level`.
    async fn compare(
        &self,
        level: Mode,
        candidate: Arc<ParsedSchema>,
        versions: Vec<(Version, SchemaId)>,
    ) -> Result<Report, Error> {
        // Parse only the versions the level reads: the latest one, unless transitive.
        let mut wanted = level.versions_to_check(versions.len());
        wanted.sort_unstable();
        let mut previous = Vec::with_capacity(wanted.len());
        for position in wanted {
            let (version, id) = versions[position - 1];
            previous.push((version.get() as usize, self.parse_stored(id).await?));
        }
        let checker = self.checker;
        blocking(move || {
            let numbered: Vec<(usize, &ParsedSchema)> = previous
                .iter()
                .map(|(number, parsed)| (*number, parsed.as_ref()))
                .collect();
            checker.check_numbered(level, &candidate, &numbered)
        })
        .await?
        .map_err(|error| Error::from_check(&error))
    }

    /// Allocates the ID and version of a registration decided on `decided`
    /// and commits it on top of revision `decided_on`; runs under the write lock.
    #[allow(clippy::too_many_arguments)]
    async fn store_registration(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
        decided: &state::RegistrationInputs,
        fingerprint: &str,
        stored: &str,
        decided_on: u64,
    ) -> Result<Registered, Error> {
        let (id, version, changes) = {
            let state = self.read();
            let id = match (options.id, decided.known_id) {
                (Some(wanted), Some(known)) if wanted != known => return Err(Error::IdMismatch { id: wanted }),
                (Some(wanted), None) if state.schemas.contains_key(&wanted) => {
                    return Err(Error::IdMismatch { id: wanted });
                }
                (Some(wanted), _) => wanted,
                (None, Some(known)) => known,
                (None, None) => state.next_free_id().ok_or_else(|| Error::NotPermitted {
                    reason: "the registry has used every schema ID".to_owned(),
                })?,
            };
            let mut subject_row = state.subject_row(subject);
            let held = state.subjects.get(subject);
            let version = match options.version {
                Some(wanted) if held.is_some_and(|s| s.versions.contains_key(&wanted)) => {
                    return Err(Error::NotPermitted {
                        reason: format!("version {wanted} of subject `{subject}` already exists"),
                    });
                }
                Some(wanted) if held.is_some_and(|s| s.retired.contains(&wanted)) => {
                    return Err(Error::NotPermitted {
                        reason: format!(
                            "version {wanted} of subject `{subject}` was hard-deleted; version numbers are never \
                             reused, so schemas referring to it cannot come to mean other content"
                        ),
                    });
                }
                Some(wanted) => wanted,
                None => subject_row.next_version,
            };
            if version == version.next() {
                return Err(Error::NotPermitted {
                    reason: format!(
                        "version {version} is the last version number; subject `{subject}` could take no \
                         version after it, so it is never given"
                    ),
                });
            }
            subject_row.next_version = subject_row.next_version.max(version.next());
            let mut changes = Vec::with_capacity(3);
            if !state.schemas.contains_key(&id) {
                changes.push(Change::PutSchema(SchemaRow {
                    id,
                    format: schema.format,
                    text: stored.to_owned(),
                    fingerprint: fingerprint.to_owned(),
                    references: schema.references.clone(),
                    contract: decided.contract.clone(),
                }));
            }
            changes.push(Change::PutSubject(subject_row));
            changes.push(Change::PutVersion(VersionRow {
                subject: subject.clone(),
                version,
                id,
                deleted: false,
            }));
            (id, version, changes)
        };
        self.commit("store the registration", decided_on, changes).await?;
        tracing::info!(subject = %subject, version = version.get(), id = id.get(), "Registered schema");
        Ok(Registered {
            id,
            version,
            created: true,
        })
    }

    fn refuse_writes_in(mode: RegistryMode, subject: &SubjectName) -> Result<(), Error> {
        match mode {
            RegistryMode::ReadOnly | RegistryMode::ReadOnlyOverride => Err(Error::NotPermitted {
                reason: format!("subject `{subject}` is in {} mode", mode.as_str()),
            }),
            RegistryMode::ReadWrite | RegistryMode::Import => Ok(()),
        }
    }
}

/// A submitted schema with its canonical form, as the state judges it.
fn candidate<'a>(schema: &'a NewSchema, canonical: &'a str) -> state::Candidate<'a> {
    state::Candidate {
        format: schema.format,
        canonical,
        references: &schema.references,
        contract: &schema.contract,
    }
}

/// Runs CPU-heavy work (parsing, checking) off the async workers.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    super::request_budget::blocking(work)
        .await
        .map_err(|error| Error::Store {
            action: "run a schema check",
            source: Box::new(error),
        })
}

#[async_trait]
impl Registry for EmbeddedRegistry {
    async fn schema_by_id(&self, id: SchemaId) -> Result<Arc<SchemaContent>, Error> {
        // An ID's content never changes, so a known ID needs no catch-up:
        // serializers' hot path costs no store round trip.
        let known = self.read().schema(id).ok().cloned();
        if let Some(content) = known {
            return Ok(content);
        }
        self.catch_up().await?;
        self.read().schema(id).cloned()
    }

    async fn serialized_by_id(&self, id: SchemaId) -> Result<String, Error> {
        let content = self.schema_by_id(id).await?;
        if content.format != Format::Protobuf {
            return Ok(content.text.clone());
        }
        let parsed = self.parse_stored(id).await?;
        parsed.serialized().ok_or_else(|| Error::InvalidSchema {
            reason: format!("schema {id} has no file descriptor to serialize"),
        })
    }

    async fn versions_of_id(&self, id: SchemaId, include_deleted: bool) -> Result<Vec<SubjectVersion>, Error> {
        self.catch_up().await?;
        let state = self.read();
        state.schema(id)?;
        Ok(state.holders(id, include_deleted))
    }

    async fn subjects(&self, filter: &SubjectFilter) -> Result<Vec<SubjectName>, Error> {
        self.catch_up().await?;
        Ok(self.read().subjects_matching(filter))
    }

    async fn versions(&self, subject: &SubjectName, filter: VersionFilter) -> Result<Vec<Version>, Error> {
        self.catch_up().await?;
        self.read().versions_matching(subject, filter)
    }

    async fn version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        self.catch_up().await?;
        let state = self.read();
        let (version, entry) = state.select(subject, version, include_deleted)?;
        state.versioned(subject, version, entry)
    }

    async fn lookup(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        self.catch_up().await?;
        self.read().subject(subject)?;
        let (_, canonical) = self.parse_new(schema).await?;
        let state = self.read();
        let found = state.lookup(subject, &candidate(schema, &canonical), include_deleted);
        match found {
            Some((version, entry)) => state.versioned(subject, version, entry),
            None => Err(Error::SchemaNotFound {
                what: format!("under subject `{subject}`"),
            }),
        }
    }

    async fn register(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
    ) -> Result<Registered, Error> {
        // Parsing and the compatibility check run without the write lock, on
        // what the subject holds then; under the lock, the registration goes
        // ahead only if that is still what it holds, else it is decided again.
        let without_contract;
        let schema = if self.has_data_contracts() {
            schema
        } else {
            without_contract = NewSchema {
                contract: super::contract::Contract::default(),
                ..schema.clone()
            };
            &without_contract
        };
        self.catch_up().await?;
        let (parsed, canonical) = self.parse_new(schema).await?;
        let submitted = candidate(schema, &canonical);
        // Worked out once, and only when the registry may store new content.
        let mut stored: Option<String> = None;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            self.catch_up().await?;
            let (decided, fingerprint) = self.read().registration_inputs(subject, &submitted);
            Self::refuse_writes_in(decided.mode, subject)?;
            let importing = decided.mode == RegistryMode::Import;
            if !importing && (options.id.is_some() || options.version.is_some()) {
                return Err(Error::NotPermitted {
                    reason: "an ID or version can be chosen only in IMPORT mode".to_owned(),
                });
            }
            if let (Some(id), Some(version)) = (decided.known_id, decided.existing)
                && options.version.is_none_or(|wanted| wanted == version)
            {
                return Ok(Registered {
                    id,
                    version,
                    created: false,
                });
            }
            if !importing {
                let report = self
                    .compare(decided.level, Arc::clone(&parsed), decided.live.clone())
                    .await?;
                if !report.is_compatible() {
                    return Err(Error::Incompatible { report });
                }
            }
            // Content stored already (under another subject) keeps its text.
            if decided.known_id.is_none() && stored.is_none() {
                // A configuration in scope with `normalize: true` normalizes
                // every registration, as `?normalize=true` does.
                let normalize = options.normalize || decided.config.normalize == Some(true);
                stored = Some(self.stored_text(schema, &parsed, &canonical, normalize).await?);
            }
            let text = stored.as_deref().unwrap_or(&schema.text);
            let registered = self
                .write(|decided_on| {
                    let (submitted, decided, fingerprint) = (&submitted, &decided, &fingerprint);
                    async move {
                        if self.read().registration_inputs(subject, submitted).0 != *decided {
                            return Ok(None);
                        }
                        self.store_registration(subject, schema, options, decided, fingerprint, text, decided_on)
                            .await
                            .map(Some)
                    }
                })
                .await?;
            if let Some(registered) = registered {
                self.parsed.insert(registered.id, parsed, schema.text.len());
                return Ok(registered);
            }
        }
        Err(Error::Store {
            action: "register while other writers keep changing the subject",
            source: Box::new(StaleRevision),
        })
    }

    async fn check(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        self.catch_up().await?;
        let (parsed, canonical) = self.parse_new(schema).await?;
        let (level, versions) = {
            let state = self.read();
            let level = state.effective_compatibility(subject);
            match against {
                None => (level, state.versions_to_check(subject, &candidate(schema, &canonical))),
                Some(selector) => match state.select(subject, selector, false) {
                    Ok((version, entry)) => (level.against_one_version(), vec![(version, entry.id)]),
                    // No live version: against latest, nothing to break
                    // (Confluent's CompatibilityResource); a numbered
                    // version of such a subject is a missing version.
                    Err(Error::SubjectNotFound { .. }) if selector == VersionSelector::Latest => (level, Vec::new()),
                    Err(Error::SubjectNotFound { .. }) => {
                        return Err(Error::VersionNotFound {
                            subject: subject.clone(),
                            version: selector.to_string(),
                        });
                    }
                    Err(error) => return Err(error),
                },
            }
        };
        let report = self.compare(level, parsed, versions).await?;
        Ok(CompatibilityResult { level, report })
    }

    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        self.catch_up().await?;
        let state = self.read();
        let global = state.compatibility.unwrap_or(state::DEFAULT_COMPATIBILITY);
        match subject {
            None => Ok(global),
            Some(subject) => match state.subjects.get(subject).and_then(|s| s.compatibility) {
                Some(level) => Ok(level),
                None if fallback => Ok(state.effective_compatibility(subject)),
                None => Err(Error::SubjectCompatibilityNotConfigured {
                    subject: subject.clone(),
                }),
            },
        }
    }

    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        self.write(move |decided_on| async move {
            let change = self.setting_change(subject, Setting::Compatibility(Some(level)));
            self.commit("store the compatibility level", decided_on, vec![change])
                .await?;
            Ok(level)
        })
        .await
    }

    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        self.write(move |decided_on| async move {
            let has_settings = subject.is_some_and(|subject| {
                self.read()
                    .subjects
                    .get(subject)
                    .is_some_and(|own| !own.config.is_empty())
            });
            let old = match self.compatibility(subject, has_settings).await {
                Ok(old) => old,
                Err(error) => return Err(error),
            };
            let changes = match subject {
                None => vec![
                    Change::SetGlobalCompatibility(None),
                    Change::SetGlobalConfig(ContractConfig::default()),
                ],
                Some(subject) => {
                    let mut row = self.subject_row(subject);
                    row.compatibility = None;
                    row.config = ContractConfig::default();
                    vec![Change::PutSubject(row)]
                }
            };
            self.commit("remove the compatibility level", decided_on, changes)
                .await?;
            Ok(old)
        })
        .await
    }

    async fn schema_by_guid(&self, guid: Guid) -> Result<(SchemaId, Arc<SchemaContent>), Error> {
        self.catch_up().await?;
        let state = self.read();
        let not_found = || Error::SchemaNotFound {
            what: format!("with GUID {guid}"),
        };
        let id = *state.by_guid.get(&guid).ok_or_else(not_found)?;
        let content = state.schema(id).map_err(|_| not_found())?;
        Ok((id, Arc::clone(content)))
    }

    async fn contract_config(&self, subject: Option<&SubjectName>) -> Result<ContractConfig, Error> {
        self.catch_up().await?;
        let state = self.read();
        Ok(match subject {
            None => state.config.clone(),
            Some(subject) => state
                .subjects
                .get(subject)
                .map(|own| own.config.clone())
                .unwrap_or_default(),
        })
    }

    async fn contract_config_in_scope(&self, subject: &SubjectName) -> Result<ContractConfig, Error> {
        self.catch_up().await?;
        Ok(self.read().config_in_scope(subject).clone())
    }

    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error> {
        if !self.has_data_contracts() {
            return Err(Error::Unsupported {
                url: "the scratch registry".to_owned(),
                feature: "data-contract settings",
            });
        }
        self.write(move |decided_on| async move {
            let current = self.contract_config(subject).await?;
            let updated = patch.apply(&current)?;
            let change = self.setting_change(subject, Setting::Contract(Box::new(updated.clone())));
            self.commit("store the data-contract settings", decided_on, vec![change])
                .await?;
            Ok(updated)
        })
        .await
    }

    async fn mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        self.catch_up().await?;
        let state = self.read();
        let global = state.mode.unwrap_or(RegistryMode::ReadWrite);
        match subject {
            None => Ok(global),
            Some(_) if !self.has_subject_modes() && fallback => Ok(global),
            Some(subject) if !self.has_subject_modes() => Err(Error::SubjectModeNotConfigured {
                subject: subject.clone(),
            }),
            Some(subject) => match state.subjects.get(subject).and_then(|s| s.mode) {
                Some(mode) => Ok(mode),
                None if fallback => Ok(state.effective_mode(subject)),
                None => Err(Error::SubjectModeNotConfigured {
                    subject: subject.clone(),
                }),
            },
        }
    }

    async fn set_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject)?;
        self.write(move |decided_on| async move {
            if mode == RegistryMode::Import && !force {
                let state = self.read();
                let has_versions = match subject {
                    None => state.subjects.values().any(|s| !s.versions.is_empty()),
                    Some(subject) => state.subjects.get(subject).is_some_and(|s| !s.versions.is_empty()),
                };
                if has_versions {
                    return Err(Error::NotPermitted {
                        reason: "IMPORT mode on a registry or subject that holds versions needs force=true".to_owned(),
                    });
                }
            }
            let change = self.setting_change(subject, Setting::Mode(Some(mode)));
            self.commit("store the mode", decided_on, vec![change]).await?;
            Ok(mode)
        })
        .await
    }

    async fn delete_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject)?;
        self.write(move |decided_on| async move {
            let old = self.mode(subject, false).await?;
            let change = self.setting_change(subject, Setting::Mode(None));
            self.commit("remove the mode", decided_on, vec![change]).await?;
            Ok(old)
        })
        .await
    }

    async fn supports_subject_mode(&self) -> Result<bool, Error> {
        Ok(self.has_subject_modes())
    }

    async fn supports_data_contracts(&self) -> Result<bool, Error> {
        Ok(self.has_data_contracts())
    }

    async fn delete_version(
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

    async fn delete_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
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

    async fn referenced_by(&self, subject: &SubjectName, version: VersionSelector) -> Result<Vec<SchemaId>, Error> {
        self.catch_up().await?;
        let state = self.read();
        let (version, _) = state.select(subject, version, true)?;
        Ok(state.referrers(subject, version, false))
    }

    async fn referrer_count(&self, subject: &SubjectName) -> Result<usize, Error> {
        self.catch_up().await?;
        let state = self.read();
        let versions = state.versions_matching(subject, VersionFilter::Live)?;
        Ok(versions
            .into_iter()
            .map(|version| state.referrers(subject, version, false).len())
            .sum())
    }

    fn schema_types(&self) -> Vec<Format> {
        vec![Format::Json, Format::Protobuf, Format::Avro]
    }

    fn stats(&self) -> Option<super::Stats> {
        let state = self.read();
        Some(super::Stats {
            schemas: state.schemas.len(),
            subjects: state.subjects.len(),
            versions: state.subjects.values().map(|subject| subject.versions.len()).sum(),
        })
    }
}

/// A setting of a subject or of the whole registry; `None` (or empty) clears it.
enum Setting {
    Compatibility(Option<Mode>),
    Mode(Option<RegistryMode>),
    Contract(Box<ContractConfig>),
}

impl EmbeddedRegistry {
    /// The change that applies `setting` to `subject`, or globally.
    fn setting_change(&self, subject: Option<&SubjectName>, setting: Setting) -> Change {
        match (subject, setting) {
            (None, Setting::Compatibility(level)) => Change::SetGlobalCompatibility(level),
            (None, Setting::Mode(mode)) => Change::SetGlobalMode(mode),
            (None, Setting::Contract(config)) => Change::SetGlobalConfig(*config),
            (Some(subject), setting) => {
                let mut row = self.subject_row(subject);
                match setting {
                    Setting::Compatibility(level) => row.compatibility = level,
                    Setting::Mode(mode) => row.mode = mode,
                    Setting::Contract(config) => row.config = *config,
                }
                Change::PutSubject(row)
            }
        }
    }

    /// The stored row of a subject, or a new one.
    fn subject_row(&self, subject: &SubjectName) -> store::SubjectRow {
        self.read().subject_row(subject)
    }
}

//! The embedded registry: versions stored by schemaops itself, behind a
//! [`Store`], with the working state in memory.
//!
//! # Guarantees
//! Writes are serialized and durable before they are acknowledged: each
//! registration, delete or setting is one store transaction, applied to
//! memory only after it commits. Reads never wait for storage. IDs and
//! versions are never reused, even after hard deletes.
//!
//! This module keeps the state in step with the store (catch-up, write,
//! commit) and answers reads; the [`Registry`] methods that decide more
//! live with their job: [`registration`], [`settings`], [`deletion`], and
//! [`schemas`] for parsing and comparing.

mod cache;
mod coalesce;
mod deletion;
pub mod kafka;
pub mod postgres;
mod registration;
mod schemas;
pub use schemas::stored_fingerprint;
mod settings;
pub mod sqlite;
mod state;
pub mod store;
mod stored_text;
mod wal_index;

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use async_trait::async_trait;

use self::cache::ParsedCache;
use self::schemas::candidate;
use self::state::State;
use self::store::{Applied, CatchUp, Change, StaleRevision, Store};
use super::Guid;
use super::contract::{ConfigPatch, ContractConfig};
use super::{
    CompatibilityResult, Error, NewSchema, RegisterOptions, Registered, Registry, RegistryMode, SchemaContent,
    SchemaId, SharedVersion, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter, VersionSelector,
    VersionedSchema,
};
use crate::compat::{Checker, Format, Mode};

/// How many times a write decides again after other processes wrote first.
const MAX_WRITE_ATTEMPTS: usize = 100;

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

    async fn shared_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<SharedVersion, Error> {
        self.catch_up().await?;
        let state = self.read();
        let (version, entry) = state.select(subject, version, include_deleted)?;
        Ok(SharedVersion {
            version,
            id: entry.id,
            deleted: entry.deleted,
            content: Arc::clone(state.schemas.get(&entry.id).ok_or_else(|| Error::SchemaNotFound {
                what: format!("with ID {}", entry.id),
            })?),
        })
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
        self.register_version(subject, schema, options).await
    }

    async fn check(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        self.check_candidate(subject, schema, against).await
    }

    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        self.own_compatibility(subject, fallback).await
    }

    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        self.store_compatibility(subject, level).await
    }

    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        self.remove_compatibility(subject).await
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
        self.own_contract_config(subject).await
    }

    async fn contract_config_in_scope(&self, subject: &SubjectName) -> Result<ContractConfig, Error> {
        self.contract_config_of_scope(subject).await
    }

    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error> {
        self.patch_contract_config(subject, patch).await
    }

    async fn mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        self.own_mode(subject, fallback).await
    }

    async fn set_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error> {
        self.store_mode(subject, mode, force).await
    }

    async fn delete_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.remove_mode(subject).await
    }

    async fn subjects_with_mode(&self, prefix: &str) -> Result<Vec<SubjectName>, Error> {
        self.subjects_with_own_mode(prefix).await
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
        self.remove_version(subject, version, permanent).await
    }

    async fn delete_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
        self.remove_subject(subject, permanent).await
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

    async fn search(&self, query: &super::search::Query) -> Result<super::search::Found, Error> {
        self.catch_up().await?;
        Ok(self.read().search(query))
    }

    fn schema_types(&self) -> Vec<Format> {
        vec![Format::Json, Format::Protobuf, Format::Avro]
    }

    async fn max_schema_id(&self) -> Result<Option<SchemaId>, Error> {
        self.catch_up().await?;
        Ok(self.read().max_id())
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

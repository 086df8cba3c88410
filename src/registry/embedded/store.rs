//! Durable storage behind the embedded registry: a [`Store`] loads
//! everything once and then applies batches of [`Change`]s, each batch in one
//! transaction. The registry keeps the working state in memory and writes
//! through, so reads never wait on storage.
//!
//! A store several processes may share (both SQLite and PostgreSQL) also
//! keeps a log of committed batches, each with a revision: a process catches
//! up with the others by reading the batches after the last revision it has
//! seen ([`Store::changes_since`]), and writes only on top of the newest one
//! ([`Store::apply_after`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::compat::{Format, Mode};
use crate::registry::contract::{Contract, ContractConfig};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// A stored schema: content-addressed by its fingerprint, never removed, so
/// an ID is never given to other content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaRow {
    /// The global ID.
    pub id: SchemaId,
    /// The language.
    pub format: Format,
    /// The text as first registered.
    pub text: String,
    /// SHA-256 over (format, canonical form, references, contract): the schema's identity.
    pub fingerprint: String,
    /// The schemas it refers to.
    pub references: Vec<SchemaReference>,
    /// Its metadata and rules (none in stores written before data contracts).
    #[serde(default, skip_serializing_if = "Contract::is_empty")]
    pub contract: Contract,
}

/// A subject's own settings and its version counter, kept after a hard
/// delete so versions are never reused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectRow {
    /// The subject.
    pub subject: SubjectName,
    /// The number the next version gets.
    pub next_version: Version,
    /// The subject's compatibility level, when it has its own.
    pub compatibility: Option<Mode>,
    /// The subject's mode, when it has its own.
    pub mode: Option<RegistryMode>,
    /// The subject's data-contract settings.
    #[serde(default, skip_serializing_if = "ContractConfig::is_empty")]
    pub config: ContractConfig,
}

/// One version of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRow {
    /// The subject.
    pub subject: SubjectName,
    /// The version.
    pub version: Version,
    /// The schema it holds.
    pub id: SchemaId,
    /// Whether it is soft-deleted.
    pub deleted: bool,
}

/// Everything a store holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every schema ever registered.
    pub schemas: Vec<SchemaRow>,
    /// Every subject ever used.
    pub subjects: Vec<SubjectRow>,
    /// Every version not hard-deleted.
    pub versions: Vec<VersionRow>,
    /// Every hard-deleted version, by subject: its number is never given again.
    pub retired: Vec<(SubjectName, Version)>,
    /// The global compatibility level, when set.
    pub compatibility: Option<Mode>,
    /// The global mode, when set.
    pub mode: Option<RegistryMode>,
    /// The global data-contract settings.
    pub config: ContractConfig,
    /// The newest committed batch it includes (0 for a store without a log).
    pub revision: u64,
}

/// One write. A batch of them is applied atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change {
    /// Adds a schema: a no-op when its ID holds the same schema, an error
    /// ([`ConflictingSchema`]) when it holds another one.
    PutSchema(SchemaRow),
    /// Adds or replaces a subject's row.
    PutSubject(SubjectRow),
    /// Adds a version.
    PutVersion(VersionRow),
    /// Marks a version soft-deleted.
    SoftDeleteVersion {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
    },
    /// Removes a version for good; its number stays retired.
    RemoveVersion {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
    },
    /// Sets or clears the global compatibility level.
    SetGlobalCompatibility(Option<Mode>),
    /// Sets or clears the global mode.
    SetGlobalMode(Option<RegistryMode>),
    /// Replaces the global data-contract settings (empty clears them).
    SetGlobalConfig(ContractConfig),
}

impl Snapshot {
    /// Whether it holds no schema and no subject (settings aside).
    pub fn holds_nothing(&self) -> bool {
        self.schemas.is_empty() && self.subjects.is_empty()
    }

    /// The one batch that rebuilds this snapshot in a store that holds
    /// nothing: schemas, subjects, versions (soft-deleted ones marked), the
    /// hard-deleted version numbers kept retired, then the global settings.
    pub fn into_changes(self) -> Vec<Change> {
        let mut changes = Vec::with_capacity(self.schemas.len() + self.subjects.len() + self.versions.len() + 3);
        changes.extend(self.schemas.into_iter().map(Change::PutSchema));
        changes.extend(self.subjects.into_iter().map(Change::PutSubject));
        changes.extend(self.versions.into_iter().map(Change::PutVersion));
        changes.extend(
            self.retired
                .into_iter()
                .map(|(subject, version)| Change::RemoveVersion { subject, version }),
        );
        changes.push(Change::SetGlobalCompatibility(self.compatibility));
        changes.push(Change::SetGlobalMode(self.mode));
        changes.push(Change::SetGlobalConfig(self.config));
        changes
    }
}

/// Why the store failed.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

/// A committed batch from a store's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Its revision: batches commit in revision order.
    pub revision: u64,
    /// What it changed.
    pub changes: Vec<Change>,
}

/// What a process must do to see the writes of other processes since a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatchUp {
    /// Apply these batches, oldest first; none when nothing is new.
    Batches(Vec<Batch>),
    /// The log no longer reaches back to that revision (its older entries
    /// were compacted): load everything again.
    Reload,
}

/// What became of a batch given to [`Store::apply_after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It is durable, as the batch with this revision.
    Committed {
        /// The batch's revision.
        revision: u64,
    },
    /// Nothing was written: another process committed after the given
    /// revision, so the batch may rest on stale state.
    Behind,
}

/// The error a write gets when another process wrote first; the registry
/// catches up and decides again.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("another process wrote to the store first")]
pub struct StaleRevision;

/// The error a write gets from a store this process only reads (a follower
/// that cannot forward the write): answered 500 with code 50004, as
/// Confluent's followers answer when they know no leader to forward to
/// (`RestUnknownLeaderException`, `Errors.UNKNOWN_LEADER_ERROR_CODE`).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("this process only reads the store; send writes to the instance that writes it")]
pub struct ReadOnlyStore;

/// The error a write gets from an instance that does not lead the Kafka
/// store's group and cannot forward it (no leader known, or it just lost
/// the lead): answered 500 with code 50004, as [`ReadOnlyStore`] is.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("no leader of the store is known to this instance; retry the write shortly")]
pub struct NoLeader;

/// Whether a store error means "not the writer here": 50004.
pub fn is_unknown_leader(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    error.is::<ReadOnlyStore>() || error.is::<NoLeader>()
}

/// The error a write gets when the ID it gives a schema already holds
/// another one; nothing of the batch is written.
#[derive(Debug, Clone, thiserror::Error)]
#[error("schema ID {id} already holds another schema (stored fingerprint {stored}, new {new}); nothing was written")]
pub struct ConflictingSchema {
    /// The ID.
    pub id: SchemaId,
    /// The fingerprint of the schema it holds.
    pub stored: String,
    /// The fingerprint of the schema the write gave it.
    pub new: String,
}

/// Succeeds when a [`Change::PutSchema`] of `row` that found its ID taken
/// found the same schema there (fingerprint `stored`).
///
/// # Errors
/// [`ConflictingSchema`] when the ID holds another schema.
pub fn check_same_schema(row: &SchemaRow, stored: &str) -> Result<(), StoreError> {
    if row.fingerprint == stored {
        return Ok(());
    }
    Err(Box::new(ConflictingSchema {
        id: row.id,
        stored: stored.to_owned(),
        new: row.fingerprint.clone(),
    }))
}

/// Durable storage for the embedded registry.
///
/// # Guarantees
/// When `apply` returns `Ok`, the whole batch is durable (it survives a
/// process kill and, with the SQLite store's settings, a power loss); when
/// it returns `Err`, none of it is.
#[async_trait]
pub trait Store: Send + Sync {
    /// Reads everything.
    async fn load(&self) -> Result<Snapshot, StoreError>;

    /// Applies a batch of changes in one transaction.
    async fn apply(&self, changes: Vec<Change>) -> Result<(), StoreError>;

    /// The batches other processes committed after `revision`, oldest
    /// first, or [`CatchUp::Reload`] when the log no longer holds them all.
    ///
    /// A store that one process owns has none: this default.
    async fn changes_since(&self, revision: u64) -> Result<CatchUp, StoreError> {
        let _ = revision;
        Ok(CatchUp::Batches(Vec::new()))
    }

    /// Whether nothing can have been committed that a caller holding every
    /// batch up to `revision` lacks, known at once: no waiting, no round
    /// trip. `false` means "ask [`Store::changes_since`]", as this default
    /// always does. It runs on every read, before catch-ups are shared.
    fn unchanged_since(&self, revision: u64) -> bool {
        let _ = revision;
        false
    }

    /// Applies a batch in one transaction, unless a batch newer than
    /// `revision` was committed (then [`Applied::Behind`] and nothing is
    /// written). Writers across processes are serialized.
    ///
    /// The default, for a store that one process owns and whose writes the
    /// registry already serializes, applies and counts revisions in memory.
    async fn apply_after(&self, revision: u64, changes: Vec<Change>) -> Result<Applied, StoreError> {
        self.apply(changes).await?;
        Ok(Applied::Committed { revision: revision + 1 })
    }
}

/// A schema's contract as a store keeps it: JSON, or NULL when empty.
///
/// # Errors
/// When it cannot be serialized (it always can).
pub fn contract_json(contract: &Contract) -> Result<Option<String>, StoreError> {
    if contract.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(contract)?))
}

/// Data-contract settings as a store keeps them: JSON, or NULL when empty.
///
/// # Errors
/// When they cannot be serialized (they always can).
pub fn config_json(config: &ContractConfig) -> Result<Option<String>, StoreError> {
    if config.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string(config)?))
}

/// Reads a JSON column that NULL leaves at its default.
///
/// # Errors
/// When the stored JSON does not read.
pub fn read_json<T: Default + serde::de::DeserializeOwned>(text: Option<String>) -> Result<T, StoreError> {
    match text {
        None => Ok(T::default()),
        Some(text) => Ok(serde_json::from_str(&text)?),
    }
}

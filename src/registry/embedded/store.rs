//! Durable storage behind the embedded registry: a [`Store`] loads
//! everything once and then applies batches of [`Change`]s, each batch in one
//! transaction. The registry keeps the working state in memory and writes
//! through, so reads never wait on storage.

use async_trait::async_trait;

use crate::compat::{Format, Mode};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// A stored schema: content-addressed by its fingerprint, never removed, so
/// an ID is never given to other content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRow {
    /// The global ID.
    pub id: SchemaId,
    /// The language.
    pub format: Format,
    /// The text as first registered.
    pub text: String,
    /// SHA-256 over (format, canonical form, references): the schema's identity.
    pub fingerprint: String,
    /// The schemas it refers to.
    pub references: Vec<SchemaReference>,
}

/// A subject's own settings and its version counter, kept after a hard
/// delete so versions are never reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectRow {
    /// The subject.
    pub subject: SubjectName,
    /// The number the next version gets.
    pub next_version: Version,
    /// The subject's compatibility level, when it has its own.
    pub compatibility: Option<Mode>,
    /// The subject's mode, when it has its own.
    pub mode: Option<RegistryMode>,
}

/// One version of a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The global compatibility level, when set.
    pub compatibility: Option<Mode>,
    /// The global mode, when set.
    pub mode: Option<RegistryMode>,
}

/// One write. A batch of them is applied atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Adds a schema (no-op when its ID exists).
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
    /// Removes a version for good.
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
}

/// Why the store failed.
pub type StoreError = Box<dyn std::error::Error + Send + Sync>;

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
}

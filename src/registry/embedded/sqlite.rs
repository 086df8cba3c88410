//! The SQLite [`Store`]: one file, WAL journal with `synchronous=FULL`, so a
//! committed batch survives a process kill and a power loss.
//!
//! Several processes may share the file (a serving `schemaops registry` and
//! `schemaops apply --data` on the same folder, or two registries): SQLite
//! is the arbiter, as PostgreSQL is for the PostgreSQL store. Every write is
//! one `BEGIN IMMEDIATE` transaction, which SQLite grants to one connection
//! of all processes at a time; under it the writer checks that no batch
//! newer than the one it decided on exists ([`Applied::Behind`] otherwise,
//! and the registry catches up and decides again), then writes the rows and
//! the batch's entry in the `changes` log. Readers catch up from the log;
//! `PRAGMA data_version` tells them without a query when nothing changed,
//! and the WAL index's header without even that when it stands still
//! ([`WalIndex`]).
//! The log is compacted as the PostgreSQL store's is ([`LOG_RETENTION`]).
//!
//! SQLite rather than a lock on the folder: a folder lock would refuse the
//! workflow the README shows (apply into the folder a registry serves), while
//! the embedded registry already knows how to share a store with other
//! processes.
//!
//! rusqlite rather than sqlx: SQLite is synchronous at heart, rusqlite gives
//! direct control of the pragmas durability depends on, and its dependency
//! tree is a fraction of sqlx's. Calls run on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::store::{
    Applied, Batch, CatchUp, Change, SchemaRow, Snapshot, Store, StoreError, SubjectRow, VersionRow, check_same_schema,
};
use super::store::{config_json, contract_json, read_json};
use super::wal_index::{Header, WalIndex};
use crate::compat::{Format, Mode};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// The schema version this code writes (`PRAGMA user_version`): 2 added the
/// `changes` log and `retired_versions`; 3 added data contracts (`contract`
/// on schemas, `config` on subjects). An older file gains them, empty, when
/// opened.
const LAYOUT_VERSION: i64 = 3;

/// The columns layout 3 added to tables an older file already has: (table, column).
const CONTRACT_COLUMNS: [(&str, &str); 2] = [("schemas", "contract"), ("subjects", "config")];

/// How many of the newest log entries compaction keeps; it runs each time
/// this many more have been written, so the log holds at most twice as many.
pub const LOG_RETENTION: u64 = 10_000;

const CREATE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS schemas (
    id          INTEGER PRIMARY KEY,
    format      TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL UNIQUE,
    refs        TEXT    NOT NULL,
    contract    TEXT
);
CREATE TABLE IF NOT EXISTS subjects (
    name          TEXT    PRIMARY KEY,
    next_version  INTEGER NOT NULL,
    compatibility TEXT,
    mode          TEXT,
    config        TEXT
);
CREATE TABLE IF NOT EXISTS versions (
    subject   TEXT    NOT NULL REFERENCES subjects(name),
    version   INTEGER NOT NULL,
    schema_id INTEGER NOT NULL REFERENCES schemas(id),
    deleted   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subject, version)
);
CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    revision INTEGER PRIMARY KEY AUTOINCREMENT,
    batch    TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS retired_versions (
    subject TEXT    NOT NULL REFERENCES subjects(name),
    version INTEGER NOT NULL,
    PRIMARY KEY (subject, version)
);
";

/// A registry store in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    /// Writes and loads.
    connection: Arc<Mutex<Connection>>,
    /// Catching up: its own connection, so a reader never waits behind a write.
    watch: Arc<Mutex<Watch>>,
    /// Tells, without locks, that nothing was committed since the last quiet catch-up.
    index: Arc<WalIndex>,
    log_retention: u64,
}

/// The catch-up connection and the last `PRAGMA data_version` it saw with
/// nothing newer in the log than what its caller had.
struct Watch {
    connection: Connection,
    quiet_at: Option<(i64, u64)>,
    /// Where each quiet catch-up is recorded with the header read before it.
    index: Arc<WalIndex>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

impl SqliteStore {
    /// Opens (creating when absent) the store at `path`.
    ///
    /// # Errors
    /// When the file cannot be opened, is not a registry store, or was
    /// written by a newer schemaops.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with_log_retention(path, LOG_RETENTION)
    }

    /// Opens the store with its log compacted every `log_retention` entries
    /// instead of [`LOG_RETENTION`] (at least one): for tests of compaction.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with_log_retention(path: &Path, log_retention: u64) -> Result<Self, StoreError> {
        let mut connection = connect(path)?;
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let layout: i64 = transaction.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if layout > LAYOUT_VERSION {
            return Err(format!(
                "{} was written by a newer schemaops (layout {layout}, this one reads up to {LAYOUT_VERSION})",
                path.display()
            )
            .into());
        }
        transaction.execute_batch(CREATE_TABLES)?;
        for (table, column) in CONTRACT_COLUMNS {
            let present: bool = transaction.query_row(
                "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
                params![table, column],
                |row| row.get(0),
            )?;
            if !present {
                transaction.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} TEXT"))?;
            }
        }
        transaction.pragma_update(None, "user_version", LAYOUT_VERSION)?;
        transaction.commit()?;
        // After a transaction in WAL mode: the index file exists.
        let index = Arc::new(WalIndex::open(path));
        let watch = Watch {
            connection: connect(path)?,
            quiet_at: None,
            index: Arc::clone(&index),
        };
        Ok(Self {
            path: path.to_owned(),
            connection: Arc::new(Mutex::new(connection)),
            watch: Arc::new(Mutex::new(watch)),
            index,
            log_retention: log_retention.max(1),
        })
    }

    fn with_connection<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static {
        with_locked(Arc::clone(&self.connection), work)
    }

    /// Writes `changes` and their log entry in one immediate transaction;
    /// with `after`, only when no batch newer than it exists.
    fn write(&self, after: Option<u64>, changes: Vec<Change>) -> impl Future<Output = Result<Applied, StoreError>> {
        let log_retention = self.log_retention;
        self.with_connection(move |connection| {
            let batch_text = serde_json::to_string(&changes)?;
            // Immediate: the write lock is taken before the log is read, so
            // no other process can commit between the check and the write.
            let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(after) = after
                && newest_revision(&transaction)? > after
            {
                return Ok(Applied::Behind);
            }
            for change in &changes {
                apply_one(&transaction, change)?;
            }
            transaction.execute("INSERT INTO changes (batch) VALUES (?1)", params![batch_text])?;
            let revision = u64::try_from(transaction.last_insert_rowid())?;
            if revision.is_multiple_of(log_retention) && revision > log_retention {
                compact_log(&transaction, revision - log_retention)?;
            }
            transaction.commit()?;
            Ok(Applied::Committed { revision })
        })
    }
}

/// Writes a consistent copy of the store at `source` to the new file
/// `target`, as of one moment, even while other processes write to it;
/// `source` and the files beside it are left as they were.
///
/// With no write-ahead log beside it (no process has the store open) the
/// file is copied as it is, and checked unchanged afterwards; otherwise
/// SQLite writes the copy (`VACUUM INTO`) from a read transaction, which
/// adds no file beside the source, since the log and its index exist already.
///
/// # Errors
/// When `source` cannot be read or `target` cannot be written.
pub fn snapshot_into(source: &Path, target: &Path) -> Result<(), StoreError> {
    let mut log = source.as_os_str().to_owned();
    log.push("-wal");
    let log = PathBuf::from(log);
    let stamp = |path: &Path| std::fs::metadata(path).and_then(|m| Ok((m.len(), m.modified()?)));
    if !log.exists() {
        let before = stamp(source)?;
        std::fs::copy(source, target)?;
        if !log.exists() && stamp(source)? == before {
            return Ok(());
        }
        // A process opened the store meanwhile: copy through SQLite.
        std::fs::remove_file(target)?;
    }
    let connection = Connection::open_with_flags(
        source,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(std::time::Duration::from_secs(10))?;
    let target = target
        .to_str()
        .ok_or_else(|| format!("the path {} is not UTF-8", target.display()))?;
    connection.execute("VACUUM INTO ?1", params![target])?;
    Ok(())
}

/// Opens a connection with the pragmas durability and sharing depend on.
fn connect(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open(path)?;
    // Waits for another process's write instead of failing with SQLITE_BUSY.
    connection.busy_timeout(std::time::Duration::from_secs(10))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    Ok(connection)
}

/// Runs `work` on tokio's blocking pool with the value behind `shared` locked.
async fn with_locked<C: Send + 'static, T: Send + 'static>(
    shared: Arc<Mutex<C>>,
    work: impl FnOnce(&mut C) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(move || {
        let mut guard = shared.lock().map_err(|_| "the store's connection lock is poisoned")?;
        work(&mut guard)
    })
    .await?
}

/// The newest committed batch's revision (0 before the first).
fn newest_revision(connection: &Connection) -> Result<u64, StoreError> {
    let newest: i64 = connection.query_row("SELECT coalesce(max(revision), 0) FROM changes", [], |row| row.get(0))?;
    Ok(u64::try_from(newest)?)
}

/// Deletes the log entries up to `through` and records that they are gone.
fn compact_log(transaction: &rusqlite::Transaction<'_>, through: u64) -> Result<(), StoreError> {
    let through = i64::try_from(through)?;
    transaction.execute("DELETE FROM changes WHERE revision <= ?1", params![through])?;
    set_setting(transaction, "log_compacted_through", Some(&through.to_string()))
}

/// What the catch-up connection saw on arriving: the WAL-index header, then
/// `PRAGMA data_version`. In that order: a commit after the header was read
/// moves the header, one before it moves data_version.
struct Seen {
    header: Option<Header>,
    data_version: i64,
}

/// Whether nothing can have been committed after `revision`, with what
/// tells. data_version changes when another connection (of this process or
/// another) commits; while it stands still and the caller has seen what was
/// newest then, nothing can be new, and the index records that. It is read
/// from memory (the WAL index), without a query of the tables, by a
/// statement prepared once (preparing it took a fifth of each catch-up).
fn nothing_new(watch: &Watch, revision: u64) -> Result<(bool, Seen), StoreError> {
    let header = watch.index.header();
    let data_version: i64 = watch
        .connection
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))?;
    let quiet = match watch.quiet_at {
        Some((version, newest)) if version == data_version && revision >= newest => {
            watch.index.record_quiet(header, newest);
            true
        }
        _ => false,
    };
    Ok((quiet, Seen { header, data_version }))
}

/// The batches after `revision`, or [`CatchUp::Reload`] when compaction
/// deleted some of them.
fn batches_since(watch: &mut Watch, revision: u64) -> Result<CatchUp, StoreError> {
    let (quiet, seen) = nothing_new(watch, revision)?;
    if quiet {
        return Ok(CatchUp::Batches(Vec::new()));
    }
    let transaction = watch.connection.transaction()?;
    let after = i64::try_from(revision)?;
    let mut statement = transaction.prepare(
        "SELECT revision, batch FROM changes WHERE revision > ?1 \
         UNION ALL \
         SELECT -1, '' FROM settings WHERE key = 'log_compacted_through' AND CAST(value AS INTEGER) > ?1 \
         ORDER BY 1",
    )?;
    let mut rows = statement.query(params![after])?;
    let mut batches = Vec::new();
    while let Some(row) = rows.next()? {
        let revision: i64 = row.get(0)?;
        if revision < 0 {
            return Ok(CatchUp::Reload);
        }
        let text: String = row.get(1)?;
        batches.push(Batch {
            revision: u64::try_from(revision)?,
            changes: serde_json::from_str(&text)?,
        });
    }
    drop(rows);
    drop(statement);
    transaction.commit()?;
    let newest = batches.last().map_or(revision, |batch| batch.revision);
    watch.quiet_at = Some((seen.data_version, newest));
    watch.index.record_quiet(seen.header, newest);
    Ok(CatchUp::Batches(batches))
}

#[async_trait]
impl Store for SqliteStore {
    async fn load(&self) -> Result<Snapshot, StoreError> {
        self.with_connection(|connection| {
            // One read transaction: the tables and the revision they reflect.
            let transaction = connection.transaction()?;
            let snapshot = read_snapshot(&transaction)?;
            transaction.commit()?;
            Ok(snapshot)
        })
        .await
    }

    async fn apply(&self, changes: Vec<Change>) -> Result<(), StoreError> {
        self.write(None, changes).await.map(|_| ())
    }

    async fn changes_since(&self, revision: u64) -> Result<CatchUp, StoreError> {
        // The usual answer, nothing new, takes one `PRAGMA data_version`: a
        // read of the WAL index, cheaper than the hand-off to the blocking
        // pool, so it is asked here when the watch is free. Anything else
        // (reading the log) runs on the blocking pool.
        if let Ok(watch) = self.watch.try_lock()
            && nothing_new(&watch, revision)?.0
        {
            return Ok(CatchUp::Batches(Vec::new()));
        }
        with_locked(Arc::clone(&self.watch), move |watch| batches_since(watch, revision)).await
    }

    fn unchanged_since(&self, revision: u64) -> bool {
        self.index.unchanged_since(revision)
    }

    async fn apply_after(&self, revision: u64, changes: Vec<Change>) -> Result<Applied, StoreError> {
        self.write(Some(revision), changes).await
    }
}

fn apply_one(transaction: &rusqlite::Transaction<'_>, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::PutSchema(row) => {
            let inserted = transaction.execute(
                "INSERT INTO schemas (id, format, text, fingerprint, refs, contract) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (id) DO NOTHING",
                params![
                    row.id.get(),
                    row.format.as_str(),
                    row.text,
                    row.fingerprint,
                    serde_json::to_string(&row.references)?,
                    contract_json(&row.contract)?
                ],
            )?;
            if inserted == 0 {
                let stored: String = transaction.query_row(
                    "SELECT fingerprint FROM schemas WHERE id = ?1",
                    params![row.id.get()],
                    |stored| stored.get(0),
                )?;
                check_same_schema(row, &stored)?;
            }
        }
        Change::PutSubject(row) => {
            transaction.execute(
                "INSERT INTO subjects (name, next_version, compatibility, mode, config) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (name) DO UPDATE SET next_version = ?2, compatibility = ?3, mode = ?4, config = ?5",
                params![
                    row.subject.as_str(),
                    row.next_version.get(),
                    row.compatibility.map(Mode::as_str),
                    row.mode.map(RegistryMode::as_str),
                    config_json(&row.config)?
                ],
            )?;
        }
        Change::PutVersion(row) => {
            transaction.execute(
                "INSERT INTO versions (subject, version, schema_id, deleted) VALUES (?1, ?2, ?3, ?4)",
                params![row.subject.as_str(), row.version.get(), row.id.get(), row.deleted],
            )?;
        }
        Change::SoftDeleteVersion { subject, version } => {
            transaction.execute(
                "UPDATE versions SET deleted = 1 WHERE subject = ?1 AND version = ?2",
                params![subject.as_str(), version.get()],
            )?;
        }
        Change::RemoveVersion { subject, version } => {
            transaction.execute(
                "DELETE FROM versions WHERE subject = ?1 AND version = ?2",
                params![subject.as_str(), version.get()],
            )?;
            transaction.execute(
                "INSERT INTO retired_versions (subject, version) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![subject.as_str(), version.get()],
            )?;
        }
        Change::SetGlobalCompatibility(level) => set_setting(transaction, "compatibility", level.map(Mode::as_str))?,
        Change::SetGlobalMode(mode) => set_setting(transaction, "mode", mode.map(RegistryMode::as_str))?,
        Change::SetGlobalConfig(config) => set_setting(transaction, "config", config_json(config)?.as_deref())?,
    }
    Ok(())
}

fn set_setting(transaction: &rusqlite::Transaction<'_>, key: &str, value: Option<&str>) -> Result<(), StoreError> {
    match value {
        Some(value) => transaction.execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
            params![key, value],
        )?,
        None => transaction.execute("DELETE FROM settings WHERE key = ?1", params![key])?,
    };
    Ok(())
}

fn read_snapshot(connection: &Connection) -> Result<Snapshot, StoreError> {
    let mut snapshot = Snapshot {
        revision: newest_revision(connection)?,
        ..Snapshot::default()
    };
    let mut statement =
        connection.prepare("SELECT id, format, text, fingerprint, refs, contract FROM schemas ORDER BY id")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let format: String = row.get(1)?;
        let refs: String = row.get(4)?;
        snapshot.schemas.push(SchemaRow {
            id: SchemaId::new(id).ok_or_else(|| format!("stored schema ID {id} is out of range"))?,
            format: format.parse::<Format>()?,
            text: row.get(2)?,
            fingerprint: row.get(3)?,
            references: serde_json::from_str::<Vec<SchemaReference>>(&refs)?,
            contract: read_json(row.get::<_, Option<String>>(5)?)?,
        });
    }
    let mut statement = connection.prepare("SELECT name, next_version, compatibility, mode, config FROM subjects")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let compatibility: Option<String> = row.get(2)?;
        let mode: Option<String> = row.get(3)?;
        snapshot.subjects.push(SubjectRow {
            subject: SubjectName::new(row.get::<_, String>(0)?)?,
            next_version: Version::new(row.get(1)?)?,
            compatibility: compatibility.map(|level| level.parse::<Mode>()).transpose()?,
            mode: mode.map(|mode| mode.parse::<RegistryMode>()).transpose()?,
            config: read_json(row.get::<_, Option<String>>(4)?)?,
        });
    }
    let mut statement = connection.prepare("SELECT subject, version, schema_id, deleted FROM versions")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(2)?;
        snapshot.versions.push(VersionRow {
            subject: SubjectName::new(row.get::<_, String>(0)?)?,
            version: Version::new(row.get(1)?)?,
            id: SchemaId::new(id).ok_or_else(|| format!("stored schema ID {id} is out of range"))?,
            deleted: row.get(3)?,
        });
    }
    let mut statement = connection.prepare("SELECT subject, version FROM retired_versions")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        snapshot
            .retired
            .push((SubjectName::new(row.get::<_, String>(0)?)?, Version::new(row.get(1)?)?));
    }
    let setting = |key: &str| -> Result<Option<String>, StoreError> {
        Ok(connection
            .query_row("SELECT value FROM settings WHERE key = ?1", params![key], |row| {
                row.get(0)
            })
            .optional()?)
    };
    snapshot.compatibility = setting("compatibility")?
        .map(|level| level.parse::<Mode>())
        .transpose()?;
    snapshot.mode = setting("mode")?.map(|mode| mode.parse::<RegistryMode>()).transpose()?;
    snapshot.config = read_json(setting("config")?)?;
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::embedded::store::ConflictingSchema;

    fn schema(id: i64, fingerprint: &str) -> Change {
        Change::PutSchema(SchemaRow {
            contract: Default::default(),
            id: SchemaId::new(id).unwrap(),
            format: Format::Avro,
            text: "\"long\"".to_owned(),
            fingerprint: fingerprint.to_owned(),
            references: Vec::new(),
        })
    }

    fn subject(name: &str) -> Change {
        Change::PutSubject(SubjectRow {
            config: Default::default(),
            subject: SubjectName::new(name).unwrap(),
            next_version: Version::new(2).unwrap(),
            compatibility: None,
            mode: None,
        })
    }

    #[tokio::test]
    async fn a_schema_id_given_to_other_content_fails_the_whole_batch() {
        let folder = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
        store.apply(vec![schema(1, "a")]).await.unwrap();
        // The same content again is a no-op.
        store.apply(vec![schema(1, "a")]).await.unwrap();
        let error = store.apply(vec![subject("s"), schema(1, "b")]).await.unwrap_err();
        let conflict = error.downcast_ref::<ConflictingSchema>().expect("a ConflictingSchema");
        assert_eq!(conflict.id.get(), 1);
        assert!(
            error.to_string().contains("schema ID 1 already holds another schema"),
            "{error}"
        );
        let snapshot = store.load().await.unwrap();
        assert_eq!(snapshot.schemas.len(), 1);
        assert_eq!(snapshot.schemas[0].fingerprint, "a");
        assert!(snapshot.subjects.is_empty(), "nothing of the batch was written");
    }

    #[tokio::test]
    async fn the_lock_free_answer_holds_only_until_another_store_commits() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("registry.db");
        let first = SqliteStore::open(&path).unwrap();
        let second = SqliteStore::open(&path).unwrap();
        assert!(!second.unchanged_since(0), "no catch-up has found the store quiet yet");
        assert_eq!(second.changes_since(0).await.unwrap(), CatchUp::Batches(Vec::new()));
        assert!(second.unchanged_since(0), "quiet since the catch-up");
        first.apply_after(0, vec![schema(1, "a")]).await.unwrap();
        assert!(!second.unchanged_since(0), "the other store committed");
        assert!(matches!(second.changes_since(0).await.unwrap(), CatchUp::Batches(b) if b.len() == 1));
        assert!(second.unchanged_since(1));
        assert!(!second.unchanged_since(0), "a caller without revision 1 lacks it");
        // The writer's own store answers the same way about its own commit.
        assert!(!first.unchanged_since(0));
    }

    #[tokio::test]
    async fn two_stores_on_one_file_see_each_others_batches_and_refuse_stale_writes() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("registry.db");
        let first = SqliteStore::open_with_log_retention(&path, 2).unwrap();
        let second = SqliteStore::open_with_log_retention(&path, 2).unwrap();
        assert_eq!(second.changes_since(0).await.unwrap(), CatchUp::Batches(Vec::new()));
        let applied = first.apply_after(0, vec![schema(1, "a")]).await.unwrap();
        assert_eq!(applied, Applied::Committed { revision: 1 });
        let CatchUp::Batches(batches) = second.changes_since(0).await.unwrap() else {
            panic!("the log reaches back to 0");
        };
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].revision, 1);
        assert_eq!(batches[0].changes, vec![schema(1, "a")]);
        // Nothing new after revision 1, asked twice (the second answer comes from data_version).
        for _ in 0..2 {
            assert_eq!(second.changes_since(1).await.unwrap(), CatchUp::Batches(Vec::new()));
        }
        // A write decided on revision 0 comes too late.
        assert_eq!(
            second.apply_after(0, vec![schema(2, "b")]).await.unwrap(),
            Applied::Behind
        );
        assert_eq!(second.load().await.unwrap().schemas.len(), 1);
        assert_eq!(second.load().await.unwrap().revision, 1);
        // Past the retention, a process that saw only revision 1 must load again.
        for (revision, id) in (2..=6).zip(2..) {
            let applied = first
                .apply_after(revision - 1, vec![schema(id, &id.to_string())])
                .await
                .unwrap();
            assert_eq!(applied, Applied::Committed { revision });
        }
        assert_eq!(second.changes_since(1).await.unwrap(), CatchUp::Reload);
        assert!(matches!(second.changes_since(5).await.unwrap(), CatchUp::Batches(b) if b.len() == 1));
    }

    #[tokio::test]
    async fn a_snapshot_of_an_open_store_holds_its_commits_and_adds_no_file_beside_it() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("registry.db");
        let store = SqliteStore::open(&path).unwrap();
        store.apply(vec![schema(1, "a")]).await.unwrap();
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(folder.path())
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            names.sort();
            names
        };
        let before = listing();
        assert!(before.iter().any(|name| name == "registry.db-wal"), "{before:?}");
        let copy = tempfile::tempdir().unwrap();
        let target = copy.path().join("registry.db");
        snapshot_into(&path, &target).unwrap();
        assert_eq!(listing(), before);
        let copied = SqliteStore::open(&target).unwrap().load().await.unwrap();
        assert_eq!(copied.schemas.len(), 1);
        assert_eq!(copied.revision, 1);
    }

    #[tokio::test]
    async fn a_layout_1_file_gains_the_log_and_data_contracts_and_keeps_its_rows() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("registry.db");
        {
            let connection = Connection::open(&path).unwrap();
            let layout_1 = CREATE_TABLES
                .replace("CREATE TABLE IF NOT EXISTS changes", "CREATE TABLE old_changes")
                .replace(",\n    contract    TEXT", "")
                .replace(",\n    config        TEXT", "");
            assert!(!layout_1.contains("contract") && !layout_1.contains("config"));
            connection.execute_batch(&layout_1).unwrap();
            connection
                .execute_batch("DROP TABLE old_changes; PRAGMA user_version = 1;")
                .unwrap();
            connection
                .execute(
                    "INSERT INTO schemas (id, format, text, fingerprint, refs) VALUES (7, 'AVRO', '\"long\"', 'f', '[]')",
                    [],
                )
                .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let snapshot = store.load().await.unwrap();
        assert_eq!(snapshot.schemas.len(), 1);
        assert_eq!(snapshot.revision, 0);
        let mut with_contract = schema(8, "g");
        if let Change::PutSchema(row) = &mut with_contract {
            row.contract.metadata = Some(Box::default());
            row.contract
                .metadata
                .as_mut()
                .unwrap()
                .properties
                .insert("owner".into(), "a".into());
        }
        assert_eq!(
            store.apply_after(0, vec![with_contract.clone()]).await.unwrap(),
            Applied::Committed { revision: 1 }
        );
        let reloaded = SqliteStore::open(&path).unwrap().load().await.unwrap();
        assert_eq!(Change::PutSchema(reloaded.schemas[1].clone()), with_contract);
    }
}

//! The SQLite [`Store`]: one file, WAL journal with `synchronous=FULL`, so a
//! committed batch survives a process kill and a power loss.
//!
//! rusqlite rather than sqlx: SQLite is synchronous at heart, rusqlite gives
//! direct control of the pragmas durability depends on, and its dependency
//! tree is a fraction of sqlx's. Calls run on tokio's blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::store::{Change, SchemaRow, Snapshot, Store, StoreError, SubjectRow, VersionRow};
use crate::compat::{Format, Mode};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// The schema version this code writes (`PRAGMA user_version`).
const LAYOUT_VERSION: i64 = 1;

const CREATE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS schemas (
    id          INTEGER PRIMARY KEY,
    format      TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL UNIQUE,
    refs        TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS subjects (
    name          TEXT    PRIMARY KEY,
    next_version  INTEGER NOT NULL,
    compatibility TEXT,
    mode          TEXT
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
";

/// A registry store in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    connection: Arc<Mutex<Connection>>,
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
        let connection = Connection::open(path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.busy_timeout(std::time::Duration::from_secs(10))?;
        let layout: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
        if layout > LAYOUT_VERSION {
            return Err(format!(
                "{} was written by a newer schemaops (layout {layout}, this one reads up to {LAYOUT_VERSION})",
                path.display()
            )
            .into());
        }
        connection.execute_batch(CREATE_TABLES)?;
        connection.pragma_update(None, "user_version", LAYOUT_VERSION)?;
        Ok(Self {
            path: path.to_owned(),
            connection: Arc::new(Mutex::new(connection)),
        })
    }

    fn with_connection<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> impl Future<Output = Result<T, StoreError>> + Send + 'static {
        let connection = Arc::clone(&self.connection);
        async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = connection
                    .lock()
                    .map_err(|_| "the store's connection lock is poisoned")?;
                work(&mut guard)
            })
            .await?
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn load(&self) -> Result<Snapshot, StoreError> {
        self.with_connection(read_snapshot).await
    }

    async fn apply(&self, changes: Vec<Change>) -> Result<(), StoreError> {
        self.with_connection(move |connection| {
            let transaction = connection.transaction()?;
            for change in &changes {
                apply_one(&transaction, change)?;
            }
            transaction.commit()?;
            Ok(())
        })
        .await
    }
}

fn apply_one(transaction: &rusqlite::Transaction<'_>, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::PutSchema(row) => {
            transaction.execute(
                "INSERT INTO schemas (id, format, text, fingerprint, refs) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO NOTHING",
                params![
                    row.id.get(),
                    row.format.as_str(),
                    row.text,
                    row.fingerprint,
                    serde_json::to_string(&row.references)?
                ],
            )?;
        }
        Change::PutSubject(row) => {
            transaction.execute(
                "INSERT INTO subjects (name, next_version, compatibility, mode) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO UPDATE SET next_version = ?2, compatibility = ?3, mode = ?4",
                params![
                    row.subject.as_str(),
                    row.next_version.get(),
                    row.compatibility.map(Mode::as_str),
                    row.mode.map(RegistryMode::as_str)
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
        }
        Change::SetGlobalCompatibility(level) => set_setting(transaction, "compatibility", level.map(Mode::as_str))?,
        Change::SetGlobalMode(mode) => set_setting(transaction, "mode", mode.map(RegistryMode::as_str))?,
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

fn read_snapshot(connection: &mut Connection) -> Result<Snapshot, StoreError> {
    let mut snapshot = Snapshot::default();
    let mut statement = connection.prepare("SELECT id, format, text, fingerprint, refs FROM schemas ORDER BY id")?;
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
        });
    }
    let mut statement = connection.prepare("SELECT name, next_version, compatibility, mode FROM subjects")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let compatibility: Option<String> = row.get(2)?;
        let mode: Option<String> = row.get(3)?;
        snapshot.subjects.push(SubjectRow {
            subject: SubjectName::new(row.get::<_, String>(0)?)?,
            next_version: Version::new(row.get(1)?)?,
            compatibility: compatibility.map(|level| level.parse::<Mode>()).transpose()?,
            mode: mode.map(|mode| mode.parse::<RegistryMode>()).transpose()?,
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
    Ok(snapshot)
}

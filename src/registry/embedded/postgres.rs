//! The PostgreSQL [`Store`]: the same tables as the SQLite store, plus an
//! append-only `changes` log so that several registry processes can share
//! one database.
//!
//! Every write is one transaction that first takes a transaction-scoped
//! advisory lock ([`WRITE_LOCK`]), so writers of all processes are
//! serialized and batches commit in revision order. Under the lock it checks
//! that no batch newer than the writer's last-seen revision exists
//! ([`Applied::Behind`] otherwise), then writes the rows and the batch's log
//! entry. Readers catch up from the log with one indexed query.
//!
//! tokio-postgres rather than sqlx: the crate already has rusqlite for
//! SQLite, and sqlx would bring a second SQLite and a large macro tree.
//! Connections are plain TCP or Unix sockets without TLS (`NoTls`): run the
//! registry next to the database or inside a trusted network. Each store
//! keeps two connections, one for writes and loads (transactions need it to
//! itself) and one shared by readers (tokio-postgres pipelines queries on
//! it); either is opened again when it breaks.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Row, Transaction};

use super::store::{Applied, Batch, Change, SchemaRow, Snapshot, Store, StoreError, SubjectRow, VersionRow};
use crate::compat::{Format, Mode};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// The layout this code writes (the `layout` row of `settings`).
const LAYOUT_VERSION: i64 = 1;

/// The advisory lock key every writer takes: "schemaops" in ASCII, cut to 64 bits.
pub const WRITE_LOCK: i64 = 0x7363_6865_6d61_6f70;

const CREATE_TABLES: &str = "
CREATE TABLE IF NOT EXISTS schemas (
    id          BIGINT  PRIMARY KEY,
    format      TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL UNIQUE,
    refs        TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS subjects (
    name          TEXT    PRIMARY KEY,
    next_version  BIGINT  NOT NULL,
    compatibility TEXT,
    mode          TEXT
);
CREATE TABLE IF NOT EXISTS versions (
    subject   TEXT    NOT NULL REFERENCES subjects(name),
    version   BIGINT  NOT NULL,
    schema_id BIGINT  NOT NULL REFERENCES schemas(id),
    deleted   BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (subject, version)
);
CREATE TABLE IF NOT EXISTS settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    revision BIGSERIAL PRIMARY KEY,
    batch    TEXT      NOT NULL
);
";

/// A registry store in a PostgreSQL database, shareable by several processes.
pub struct PostgresStore {
    config: Config,
    writer: Mutex<Option<Client>>,
    reader: Mutex<Option<Arc<Client>>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The configuration may hold a password.
        f.debug_struct("PostgresStore")
            .field("dbname", &self.config.get_dbname())
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database `dsn` names (`postgres://user:pass@host:port/db`)
    /// and creates the tables when missing.
    ///
    /// # Errors
    /// When the DSN is malformed, the server cannot be reached, or the
    /// database was written by a newer schemaops.
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        let config: Config = dsn.parse()?;
        let mut client = connect(&config).await?;
        let transaction = client.transaction().await?;
        // Two processes starting together must not race on CREATE TABLE.
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await?;
        transaction.batch_execute(CREATE_TABLES).await?;
        let layout: Option<String> = transaction
            .query_opt("SELECT value FROM settings WHERE key = 'layout'", &[])
            .await?
            .map(|row| row.get(0));
        let layout: i64 = layout.as_deref().unwrap_or("0").parse()?;
        if layout > LAYOUT_VERSION {
            return Err(format!(
                "the database was written by a newer schemaops (layout {layout}, this one reads up to {LAYOUT_VERSION})"
            )
            .into());
        }
        transaction
            .execute(
                "INSERT INTO settings (key, value) VALUES ('layout', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
                &[&LAYOUT_VERSION.to_string()],
            )
            .await?;
        transaction.commit().await?;
        Ok(Self {
            config,
            writer: Mutex::new(Some(client)),
            reader: Mutex::new(None),
        })
    }

    /// The shared reading connection, opened again when it broke.
    async fn reader(&self) -> Result<Arc<Client>, StoreError> {
        let mut reader = self.reader.lock().await;
        match reader.as_ref() {
            Some(client) if !client.is_closed() => Ok(Arc::clone(client)),
            _ => {
                let client = Arc::new(connect(&self.config).await?);
                *reader = Some(Arc::clone(&client));
                Ok(client)
            }
        }
    }

    /// Runs `work` on the writing connection, opened again when it broke.
    async fn with_writer<T>(
        &self,
        work: impl AsyncFnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut writer = self.writer.lock().await;
        if writer.as_ref().is_none_or(Client::is_closed) {
            *writer = Some(connect(&self.config).await?);
        }
        let client = writer.as_mut().expect("the writer was connected just above");
        work(client).await
    }
}

async fn connect(config: &Config) -> Result<Client, StoreError> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(error = &error as &dyn std::error::Error, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

#[async_trait]
impl Store for PostgresStore {
    async fn load(&self) -> Result<Snapshot, StoreError> {
        self.with_writer(async |client| {
            // One snapshot for the tables and the revision they reflect.
            let transaction = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let snapshot = read_snapshot(&transaction).await?;
            transaction.commit().await?;
            Ok(snapshot)
        })
        .await
    }

    async fn apply(&self, changes: Vec<Change>) -> Result<(), StoreError> {
        self.write(None, &changes).await.map(|_| ())
    }

    async fn changes_since(&self, revision: u64) -> Result<Vec<Batch>, StoreError> {
        let reader = self.reader().await?;
        let rows = reader
            .query(
                "SELECT revision, batch FROM changes WHERE revision > $1 ORDER BY revision",
                &[&i64::try_from(revision)?],
            )
            .await?;
        rows.iter().map(batch).collect()
    }

    async fn apply_after(&self, revision: u64, changes: Vec<Change>) -> Result<Applied, StoreError> {
        self.write(Some(revision), &changes).await
    }
}

impl PostgresStore {
    /// Writes `changes` and their log entry under the write lock; with
    /// `after`, only when no batch newer than it exists.
    async fn write(&self, after: Option<u64>, changes: &[Change]) -> Result<Applied, StoreError> {
        let batch_text = serde_json::to_string(changes)?;
        self.with_writer(async |client| {
            let transaction = client.transaction().await?;
            transaction
                .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
                .await?;
            if let Some(after) = after {
                let newest: i64 = transaction
                    .query_one("SELECT coalesce(max(revision), 0) FROM changes", &[])
                    .await?
                    .get(0);
                if u64::try_from(newest)? > after {
                    // Dropping the transaction rolls it back and frees the lock.
                    return Ok(Applied::Behind);
                }
            }
            for change in changes {
                apply_one(&transaction, change).await?;
            }
            let revision: i64 = transaction
                .query_one(
                    "INSERT INTO changes (batch) VALUES ($1) RETURNING revision",
                    &[&batch_text],
                )
                .await?
                .get(0);
            transaction.commit().await?;
            Ok(Applied::Committed {
                revision: u64::try_from(revision)?,
            })
        })
        .await
    }
}

fn batch(row: &Row) -> Result<Batch, StoreError> {
    let revision: i64 = row.get(0);
    let text: String = row.get(1);
    Ok(Batch {
        revision: u64::try_from(revision)?,
        changes: serde_json::from_str(&text)?,
    })
}

async fn apply_one(transaction: &Transaction<'_>, change: &Change) -> Result<(), StoreError> {
    match change {
        Change::PutSchema(row) => {
            transaction
                .execute(
                    "INSERT INTO schemas (id, format, text, fingerprint, refs) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (id) DO NOTHING",
                    &[
                        &i64::from(row.id.get()),
                        &row.format.as_str(),
                        &row.text,
                        &row.fingerprint,
                        &serde_json::to_string(&row.references)?,
                    ],
                )
                .await?;
        }
        Change::PutSubject(row) => {
            transaction
                .execute(
                    "INSERT INTO subjects (name, next_version, compatibility, mode) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (name) DO UPDATE SET next_version = $2, compatibility = $3, mode = $4",
                    &[
                        &row.subject.as_str(),
                        &i64::from(row.next_version.get()),
                        &row.compatibility.map(Mode::as_str),
                        &row.mode.map(RegistryMode::as_str),
                    ],
                )
                .await?;
        }
        Change::PutVersion(row) => {
            transaction
                .execute(
                    "INSERT INTO versions (subject, version, schema_id, deleted) VALUES ($1, $2, $3, $4)",
                    &[
                        &row.subject.as_str(),
                        &i64::from(row.version.get()),
                        &i64::from(row.id.get()),
                        &row.deleted,
                    ],
                )
                .await?;
        }
        Change::SoftDeleteVersion { subject, version } => {
            transaction
                .execute(
                    "UPDATE versions SET deleted = TRUE WHERE subject = $1 AND version = $2",
                    &[&subject.as_str(), &i64::from(version.get())],
                )
                .await?;
        }
        Change::RemoveVersion { subject, version } => {
            transaction
                .execute(
                    "DELETE FROM versions WHERE subject = $1 AND version = $2",
                    &[&subject.as_str(), &i64::from(version.get())],
                )
                .await?;
        }
        Change::SetGlobalCompatibility(level) => {
            set_setting(transaction, "compatibility", level.map(Mode::as_str)).await?;
        }
        Change::SetGlobalMode(mode) => set_setting(transaction, "mode", mode.map(RegistryMode::as_str)).await?,
    }
    Ok(())
}

async fn set_setting(transaction: &Transaction<'_>, key: &str, value: Option<&str>) -> Result<(), StoreError> {
    match value {
        Some(value) => {
            transaction
                .execute(
                    "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2",
                    &[&key, &value],
                )
                .await?
        }
        None => {
            transaction
                .execute("DELETE FROM settings WHERE key = $1", &[&key])
                .await?
        }
    };
    Ok(())
}

fn schema_id(id: i64) -> Result<SchemaId, StoreError> {
    SchemaId::new(id).ok_or_else(|| format!("stored schema ID {id} is out of range").into())
}

fn version(version: i64) -> Result<Version, StoreError> {
    Ok(Version::new(version)?)
}

async fn read_snapshot(transaction: &Transaction<'_>) -> Result<Snapshot, StoreError> {
    let mut snapshot = Snapshot::default();
    for row in transaction
        .query(
            "SELECT id, format, text, fingerprint, refs FROM schemas ORDER BY id",
            &[],
        )
        .await?
    {
        let format: String = row.get(1);
        let refs: String = row.get(4);
        snapshot.schemas.push(SchemaRow {
            id: schema_id(row.get(0))?,
            format: format.parse::<Format>()?,
            text: row.get(2),
            fingerprint: row.get(3),
            references: serde_json::from_str::<Vec<SchemaReference>>(&refs)?,
        });
    }
    for row in transaction
        .query("SELECT name, next_version, compatibility, mode FROM subjects", &[])
        .await?
    {
        let compatibility: Option<String> = row.get(2);
        let mode: Option<String> = row.get(3);
        snapshot.subjects.push(SubjectRow {
            subject: SubjectName::new(row.get::<_, String>(0))?,
            next_version: version(row.get(1))?,
            compatibility: compatibility.map(|level| level.parse::<Mode>()).transpose()?,
            mode: mode.map(|mode| mode.parse::<RegistryMode>()).transpose()?,
        });
    }
    for row in transaction
        .query("SELECT subject, version, schema_id, deleted FROM versions", &[])
        .await?
    {
        snapshot.versions.push(VersionRow {
            subject: SubjectName::new(row.get::<_, String>(0))?,
            version: version(row.get(1))?,
            id: schema_id(row.get(2))?,
            deleted: row.get(3),
        });
    }
    for row in transaction
        .query(
            "SELECT key, value FROM settings WHERE key IN ('compatibility', 'mode')",
            &[],
        )
        .await?
    {
        let key: String = row.get(0);
        let value: String = row.get(1);
        match key.as_str() {
            "compatibility" => snapshot.compatibility = Some(value.parse::<Mode>()?),
            _ => snapshot.mode = Some(value.parse::<RegistryMode>()?),
        }
    }
    let newest: i64 = transaction
        .query_one("SELECT coalesce(max(revision), 0) FROM changes", &[])
        .await?
        .get(0);
    snapshot.revision = u64::try_from(newest)?;
    Ok(snapshot)
}

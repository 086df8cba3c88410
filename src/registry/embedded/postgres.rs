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
//! The log is compacted as it goes: every [`LOG_RETENTION`] revisions, the
//! writer deletes the entries older than the newest [`LOG_RETENTION`] and
//! records the newest revision deleted (`log_compacted_through` in
//! `settings`). A process that has not caught up since before that revision
//! cannot replay the gap, so it is told to load everything again
//! ([`CatchUp::Reload`]), as it did when it started.
//!
//! tokio-postgres rather than sqlx: the crate already has rusqlite for
//! SQLite, and sqlx would bring a second SQLite and a large macro tree.
//! Each store keeps two connections, one for writes and loads (transactions
//! need it to itself) and one shared by readers (tokio-postgres pipelines
//! queries on it); either is opened again when it breaks.
//!
//! # TLS
//! The DSN's `sslmode` decides, and nothing in between is offered:
//! - `disable`, and `prefer` (the default when the DSN names none): plain TCP
//!   or a Unix socket. `prefer` does not try TLS here, unlike libpq's.
//! - `require`: TLS through rustls (ring), or no connection at all. The
//!   server's certificate must chain to the system's trusted CAs or to one
//!   of [`PostgresOptions::ca_file`], and must be valid for the host the DSN
//!   names (a DNS name or an IP address). That is stricter than libpq's
//!   `require`, which verifies nothing unless a root certificate file
//!   exists; it is what libpq calls `verify-full`. There is no unverified mode.
//!   With [`PostgresOptions::client_identity`], the client presents that
//!   certificate, for servers that authenticate clients by certificate.
//!
//! A CA file or client certificate without `sslmode=require` is refused, not ignored. Errors name
//! the host and port and what failed (the certificate's issuer is unknown,
//! the server refused a connection without TLS, …), never the DSN itself,
//! which may hold a password.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Row, Transaction};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::store::{
    Applied, Batch, CatchUp, Change, SchemaRow, Snapshot, Store, StoreError, SubjectRow, VersionRow, check_same_schema,
    config_json, contract_json, read_json,
};
use crate::compat::{Format, Mode};
use crate::registry::tls;
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// The layout this code writes (the `layout` row of `settings`): 2 added
/// data contracts (`contract` on schemas, `config` on subjects), which an
/// older database gains, empty, when opened.
const LAYOUT_VERSION: i64 = 2;

/// How many of the newest log entries compaction keeps; it runs each time
/// this many more have been written, so the log holds at most twice as many.
pub const LOG_RETENTION: u64 = 10_000;

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
ALTER TABLE schemas ADD COLUMN IF NOT EXISTS contract TEXT;
CREATE TABLE IF NOT EXISTS subjects (
    name          TEXT    PRIMARY KEY,
    next_version  BIGINT  NOT NULL,
    compatibility TEXT,
    mode          TEXT
);
ALTER TABLE subjects ADD COLUMN IF NOT EXISTS config TEXT;
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
CREATE TABLE IF NOT EXISTS retired_versions (
    subject TEXT   NOT NULL REFERENCES subjects(name),
    version BIGINT NOT NULL,
    PRIMARY KEY (subject, version)
);
";

/// Where the store's database is, which CA certificates vouch for its
/// server beyond the system's, and which certificate this client presents.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// `postgres://user:password@host:port/database?sslmode=…`.
    pub dsn: String,
    /// A PEM file of CA certificates trusted in addition to the system's;
    /// only with `sslmode=require`.
    pub ca_file: Option<PathBuf>,
    /// PEM files of a client certificate chain and its key, for servers
    /// that authenticate clients by certificate; only with `sslmode=require`.
    pub client_identity: Option<(PathBuf, PathBuf)>,
}

impl PostgresOptions {
    /// The DSN alone, trusting the system's CAs when it asks for TLS.
    pub fn new(dsn: impl Into<String>) -> Self {
        Self {
            dsn: dsn.into(),
            ca_file: None,
            client_identity: None,
        }
    }
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The DSN may hold a password.
        f.debug_struct("PostgresOptions")
            .field("ca_file", &self.ca_file)
            .field("client_identity", &self.client_identity)
            .finish_non_exhaustive()
    }
}

/// Whether a DSN asks for TLS: `sslmode=require`. `disable` and `prefer`
/// (also the default) connect without it.
///
/// # Errors
/// When the DSN does not parse (the message names no part of it).
pub fn requires_tls(dsn: &str) -> Result<bool, StoreError> {
    let config: Config = dsn.parse().map_err(|error| describe_chain(&error))?;
    tls_wanted(&config)
}

fn tls_wanted(config: &Config) -> Result<bool, StoreError> {
    match config.get_ssl_mode() {
        SslMode::Disable | SslMode::Prefer => Ok(false),
        SslMode::Require => Ok(true),
        other => Err(format!("sslmode {other:?} is not supported; use require or disable").into()),
    }
}

/// A registry store in a PostgreSQL database, shareable by several processes.
pub struct PostgresStore {
    config: Config,
    connector: Connector,
    writer: Mutex<Option<Client>>,
    reader: Mutex<Option<Arc<Client>>>,
    log_retention: u64,
}

/// How connections reach the server, decided once from the DSN's `sslmode`.
#[derive(Clone)]
enum Connector {
    Plain,
    Tls(MakeRustlsConnect),
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The configuration may hold a password.
        f.debug_struct("PostgresStore")
            .field("dbname", &self.config.get_dbname())
            .field("tls", &matches!(self.connector, Connector::Tls(_)))
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database `dsn` names (`postgres://user:pass@host:port/db`)
    /// and creates the tables when missing. With `sslmode=require`, the
    /// server's certificate must chain to the system's trusted CAs.
    ///
    /// # Errors
    /// As [`PostgresStore::open`].
    pub async fn connect(dsn: &str) -> Result<Self, StoreError> {
        Self::open(&PostgresOptions::new(dsn)).await
    }

    /// Connects to the database `options` names, over TLS when its DSN has
    /// `sslmode=require` (see the module docs), and creates the tables when
    /// missing.
    ///
    /// # Errors
    /// When the DSN is malformed, a CA file is given without
    /// `sslmode=require` or cannot be read, the server cannot be reached or
    /// its certificate is refused, or the database was written by a newer
    /// schemaops.
    pub async fn open(options: &PostgresOptions) -> Result<Self, StoreError> {
        let config: Config = options.dsn.parse().map_err(|error| describe_chain(&error))?;
        let connector = if tls_wanted(&config)? {
            Connector::Tls(tls_connector(options)?)
        } else if let Some(path) = options
            .ca_file
            .as_ref()
            .or(options.client_identity.as_ref().map(|(cert, _)| cert))
        {
            return Err(format!(
                "the certificate file {} is only used over TLS: add sslmode=require to the DSN",
                path.display()
            )
            .into());
        } else {
            Connector::Plain
        };
        let mut client = connect(&config, &connector).await?;
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
            connector,
            writer: Mutex::new(Some(client)),
            reader: Mutex::new(None),
            log_retention: LOG_RETENTION,
        })
    }

    /// The same store, keeping `entries` log entries instead of
    /// [`LOG_RETENTION`] (at least one): for tests of compaction.
    #[must_use]
    pub fn with_log_retention(mut self, entries: u64) -> Self {
        self.log_retention = entries.max(1);
        self
    }

    /// The shared reading connection, opened again when it broke.
    async fn reader(&self) -> Result<Arc<Client>, StoreError> {
        let mut reader = self.reader.lock().await;
        match reader.as_ref() {
            Some(client) if !client.is_closed() => Ok(Arc::clone(client)),
            _ => {
                let client = Arc::new(connect(&self.config, &self.connector).await?);
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
            *writer = Some(connect(&self.config, &self.connector).await?);
        }
        let client = writer.as_mut().expect("the writer was connected just above");
        work(client).await
    }
}

/// rustls on ring, trusting the system's CAs and those of the CA file, and
/// presenting the client certificate when there is one.
fn tls_connector(options: &PostgresOptions) -> Result<MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    tls::add_system_roots(&mut roots);
    if let Some(path) = &options.ca_file {
        tls::add_ca_file(&mut roots, path)?;
    }
    if roots.is_empty() {
        return Err("sslmode=require, but the system trusts no CA and no --store-ca-file was given".into());
    }
    let builder = tls::client_builder(roots)?;
    let config = match &options.client_identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let (chain, key) = tls::read_client_identity(cert, key)?;
            builder.with_client_auth_cert(chain, key)?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// Opens a connection and drives it on its own task.
async fn connect(config: &Config, connector: &Connector) -> Result<Client, StoreError> {
    let connected = match connector {
        Connector::Plain => config.connect(NoTls).await.map(|(client, connection)| {
            drive(connection);
            client
        }),
        Connector::Tls(tls) => config.connect(tls.clone()).await.map(|(client, connection)| {
            drive(connection);
            client
        }),
    };
    connected.map_err(|error| {
        Box::new(ConnectError {
            server: server(config),
            reason: reason(&error, connector),
        }) as StoreError
    })
}

/// Runs a connection's I/O on its own task until it ends, logging why when it broke.
fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    tokio_postgres::Connection<S, T>: Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(error = &error as &dyn std::error::Error, "PostgreSQL connection ended");
        }
    });
}

/// A connection that could not be opened: which server, and what went wrong
/// in words an operator can act on (tokio-postgres's own error chain when
/// nothing better is known).
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to PostgreSQL at {server}: {reason}")]
pub struct ConnectError {
    /// `host:port` (several, comma-separated, when the DSN names several).
    pub server: String,
    /// What failed and what to do about it.
    pub reason: String,
}

/// The servers a configuration names, as `host:port` (never the password).
fn server(config: &Config) -> String {
    let port = |index: usize| {
        config
            .get_ports()
            .get(index)
            .or_else(|| config.get_ports().first())
            .copied()
            .unwrap_or(5432)
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| match host {
            Host::Tcp(name) if name.contains(':') => format!("[{name}]:{}", port(index)),
            Host::Tcp(name) => format!("{name}:{}", port(index)),
            Host::Unix(folder) => format!("the socket in {}", folder.display()),
        })
        .collect();
    if hosts.is_empty() {
        "no host".to_owned()
    } else {
        hosts.join(", ")
    }
}

/// What a failed connection attempt means for the operator.
fn reason(error: &tokio_postgres::Error, connector: &Connector) -> String {
    if let Some(refused) = rustls_error(error) {
        use rustls::CertificateError;
        let problem = match refused {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
                "the TLS handshake failed: the server's certificate is issued by an unknown CA \
                 (neither the system's CAs nor --store-ca-file vouch for it)"
                    .to_owned()
            }
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => "the TLS handshake failed: the server's certificate is not valid for the host the DSN names \
                  (connect by a name or address the certificate lists)"
                .to_owned(),
            rustls::Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
                "the TLS handshake failed: the server's certificate has expired".to_owned()
            }
            rustls::Error::InvalidCertificate(problem) => {
                format!("the TLS handshake failed: the server's certificate was refused ({problem:?})")
            }
            other => format!("the TLS handshake failed: {other}"),
        };
        return problem;
    }
    if let Some(db) = error.as_db_error() {
        if *db.code() == SqlState::INVALID_AUTHORIZATION_SPECIFICATION && matches!(connector, Connector::Plain) {
            return format!(
                "the server refused the connection: {db} (if the server takes only TLS connections, \
                 add sslmode=require to the DSN)"
            );
        }
        return format!("the server refused the connection: {db}");
    }
    let chain = describe_chain(error);
    if chain.contains("server does not support TLS") {
        return "sslmode=require, but the server does not offer TLS (its `ssl` setting is off, or the DSN names \
                a Unix socket, which never has TLS)"
            .to_owned();
    }
    chain
}

/// The rustls error under a TLS failure, if that is what it was: tokio-rustls
/// wraps it in an `io::Error`, whose `source` skips it.
fn rustls_error(error: &tokio_postgres::Error) -> Option<&rustls::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(current) = cause {
        if let Some(found) = current.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        if let Some(found) = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(found);
        }
        cause = current.source();
    }
    None
}

/// An error and its causes on one line.
fn describe_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        text.push_str(": ");
        text.push_str(&current.to_string());
        cause = current.source();
    }
    text
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

    async fn changes_since(&self, revision: u64) -> Result<CatchUp, StoreError> {
        let reader = self.reader().await?;
        // One statement, so one snapshot: the entries after `revision`, led
        // by a marker row (revision -1) when compaction deleted some of them.
        let rows = reader
            .query(
                "SELECT revision, batch FROM changes WHERE revision > $1 \
                 UNION ALL \
                 SELECT -1::bigint, '' FROM settings \
                     WHERE key = 'log_compacted_through' AND value::bigint > $1 \
                 ORDER BY 1",
                &[&i64::try_from(revision)?],
            )
            .await?;
        if rows.first().is_some_and(|row| row.get::<_, i64>(0) < 0) {
            return Ok(CatchUp::Reload);
        }
        Ok(CatchUp::Batches(rows.iter().map(batch).collect::<Result<_, _>>()?))
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
            let revision = u64::try_from(revision)?;
            if revision.is_multiple_of(self.log_retention) && revision > self.log_retention {
                compact_log(&transaction, revision - self.log_retention).await?;
            }
            transaction.commit().await?;
            Ok(Applied::Committed { revision })
        })
        .await
    }
}

/// Deletes the log entries up to `through` and records that they are gone.
async fn compact_log(transaction: &Transaction<'_>, through: u64) -> Result<(), StoreError> {
    let through = i64::try_from(through)?;
    transaction
        .execute("DELETE FROM changes WHERE revision <= $1", &[&through])
        .await?;
    set_setting(transaction, "log_compacted_through", Some(&through.to_string())).await
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
            let inserted = transaction
                .execute(
                    "INSERT INTO schemas (id, format, text, fingerprint, refs, contract) VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (id) DO NOTHING",
                    &[
                        &i64::from(row.id.get()),
                        &row.format.as_str(),
                        &row.text,
                        &row.fingerprint,
                        &serde_json::to_string(&row.references)?,
                        &contract_json(&row.contract)?,
                    ],
                )
                .await?;
            if inserted == 0 {
                let stored: String = transaction
                    .query_one(
                        "SELECT fingerprint FROM schemas WHERE id = $1",
                        &[&i64::from(row.id.get())],
                    )
                    .await?
                    .get(0);
                check_same_schema(row, &stored)?;
            }
        }
        Change::PutSubject(row) => {
            transaction
                .execute(
                    "INSERT INTO subjects (name, next_version, compatibility, mode, config) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (name) DO UPDATE SET next_version = $2, compatibility = $3, mode = $4, config = $5",
                    &[
                        &row.subject.as_str(),
                        &i64::from(row.next_version.get()),
                        &row.compatibility.map(Mode::as_str),
                        &row.mode.map(RegistryMode::as_str),
                        &config_json(&row.config)?,
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
            transaction
                .execute(
                    "INSERT INTO retired_versions (subject, version) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&subject.as_str(), &i64::from(version.get())],
                )
                .await?;
        }
        Change::SetGlobalCompatibility(level) => {
            set_setting(transaction, "compatibility", level.map(Mode::as_str)).await?;
        }
        Change::SetGlobalMode(mode) => set_setting(transaction, "mode", mode.map(RegistryMode::as_str)).await?,
        Change::SetGlobalConfig(config) => {
            set_setting(transaction, "config", config_json(config)?.as_deref()).await?;
        }
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
            "SELECT id, format, text, fingerprint, refs, contract FROM schemas ORDER BY id",
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
            contract: read_json(row.get(5))?,
        });
    }
    for row in transaction
        .query(
            "SELECT name, next_version, compatibility, mode, config FROM subjects",
            &[],
        )
        .await?
    {
        let compatibility: Option<String> = row.get(2);
        let mode: Option<String> = row.get(3);
        snapshot.subjects.push(SubjectRow {
            subject: SubjectName::new(row.get::<_, String>(0))?,
            next_version: version(row.get(1))?,
            compatibility: compatibility.map(|level| level.parse::<Mode>()).transpose()?,
            mode: mode.map(|mode| mode.parse::<RegistryMode>()).transpose()?,
            config: read_json(row.get(4))?,
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
        .query("SELECT subject, version FROM retired_versions", &[])
        .await?
    {
        snapshot
            .retired
            .push((SubjectName::new(row.get::<_, String>(0))?, version(row.get(1))?));
    }
    for row in transaction
        .query(
            "SELECT key, value FROM settings WHERE key IN ('compatibility', 'mode', 'config')",
            &[],
        )
        .await?
    {
        let key: String = row.get(0);
        let value: String = row.get(1);
        match key.as_str() {
            "compatibility" => snapshot.compatibility = Some(value.parse::<Mode>()?),
            "config" => snapshot.config = read_json(Some(value))?,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(options: &PostgresOptions) -> String {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let error = runtime.block_on(PostgresStore::open(options)).unwrap_err();
        error.to_string()
    }

    #[test]
    fn a_ca_file_that_is_missing_or_not_pem_is_named_before_any_connection() {
        let not_pem = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not_pem.path(), "not a certificate\n").unwrap();
        // Port 1 refuses connections: the CA file must be refused before that.
        let dsn = "postgres://u:secret@127.0.0.1:1/db?sslmode=require";
        for path in [not_pem.path(), std::path::Path::new("/nonexistent/ca.pem")] {
            let mut options = PostgresOptions::new(dsn);
            options.ca_file = Some(path.to_owned());
            let error = error_of(&options);
            assert!(
                error.contains(&format!("failed to read CA certificates from {}", path.display())),
                "{error}"
            );
        }
    }

    #[test]
    fn a_client_certificate_or_key_that_is_not_pem_is_named_before_any_connection() {
        let not_pem = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not_pem.path(), "not a certificate\n").unwrap();
        let certificate = rcgen::generate_simple_self_signed(vec!["client".to_owned()]).unwrap();
        let cert_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(cert_file.path(), certificate.cert.pem()).unwrap();
        let dsn = "postgres://u:secret@127.0.0.1:1/db?sslmode=require";
        for (cert, key, named) in [
            (not_pem.path(), cert_file.path(), "client certificate"),
            (cert_file.path(), not_pem.path(), "client key"),
        ] {
            let mut options = PostgresOptions::new(dsn);
            options.client_identity = Some((cert.to_owned(), key.to_owned()));
            let error = error_of(&options);
            let file = if named == "client key" { key } else { cert };
            assert!(
                error.contains(&format!("failed to read {named} from {}", file.display())),
                "{error}"
            );
            assert!(!error.contains("secret"), "{error}");
        }
    }

    #[test]
    fn a_ca_file_without_sslmode_require_is_refused_not_ignored() {
        let mut options = PostgresOptions::new("postgres://u:secret@127.0.0.1:1/db");
        options.ca_file = Some("/etc/hostname".into());
        let error = error_of(&options);
        assert!(error.contains("add sslmode=require"), "{error}");
    }

    #[test]
    fn connection_errors_name_the_server_but_not_the_password() {
        let error = error_of(&PostgresOptions::new("postgres://u:secret@127.0.0.1:1/db"));
        assert!(
            error.starts_with("cannot connect to PostgreSQL at 127.0.0.1:1: "),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
        let config: Config = "postgres://u@[::1]:5433,db.example/x".parse().unwrap();
        assert_eq!(server(&config), "[::1]:5433, db.example:5432");
    }
}

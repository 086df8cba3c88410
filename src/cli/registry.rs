//! Arguments of `schemaops registry`: where it listens, where it stores, who may write, and the
//! checked configuration they resolve into.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::ApiAccessArgs;
use crate::compat::Limits;
use crate::compat::budget::BudgetLimits;
use crate::compat::json::JsonPolicy;
use crate::http_server::ServerLimits;
use crate::http_server::args::ServerLimitsArgs;
use crate::registry::api::{AccessPolicy, AdmissionConfig, RestWrites};
use crate::registry::embedded::postgres::{PostgresOptions, requires_tls};

/// What `schemaops registry` does, as its help says it.
pub const REGISTRY_ABOUT: &str = "Serve the Confluent Schema Registry REST API from the embedded store";

/// Arguments of `schemaops registry`.
#[derive(Debug, Args)]
#[command(about = REGISTRY_ABOUT, long_about = None)]
pub struct RegistryArgs {
    /// Folder for the registry's data (created when missing).
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// A PostgreSQL database instead of SQLite under `--data`.
    #[command(flatten)]
    pub store: StoreArgs,

    /// Address to listen on; port 0 picks a free port (the address is printed).
    #[arg(long, env = "SCHEMAOPS_LISTEN", default_value = "127.0.0.1:8081")]
    pub listen: String,

    /// The largest request body accepted, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_BODY_BYTES", default_value_t = crate::registry::api::DEFAULT_BODY_LIMIT)]
    pub max_body_bytes: usize,

    /// The largest schema accepted, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_SCHEMA_BYTES", default_value_t = Limits::DEFAULT_MAX_SCHEMA_BYTES)]
    pub max_schema_bytes: usize,

    /// How JSON Schema differences are judged: STRICT (Confluent's default) or LENIENT.
    #[arg(long, env = "SCHEMAOPS_JSON_POLICY", default_value = "strict")]
    pub json_policy: JsonPolicy,

    /// Who may read and write over REST.
    #[command(flatten)]
    pub access: ApiAccessArgs,

    /// SchemaPolicy files or folders judging level and mode writes (repeatable; read at start-up).
    #[arg(long = "policy", value_name = "PATH", env = "SCHEMAOPS_POLICY")]
    pub policies: Vec<PathBuf>,

    /// Limits on slow and idle clients.
    #[command(flatten)]
    pub http: ServerLimitsArgs,

    /// How many checks run at once, and each one's memory and time.
    #[command(flatten)]
    pub checks: CheckBudgetArgs,

    /// Log format.
    #[command(flatten)]
    pub logging: LoggingArgs,
}

/// The REST API's budgets for requests that parse or check schemas
/// (compatibility tests, registrations, lookups, diffs, matrices, pages).
#[derive(Debug, Args)]
#[command(next_help_heading = "Check budgets")]
pub struct CheckBudgetArgs {
    /// Requests that parse or check schemas running at once; 0 picks the CPUs
    /// available, at least 2 and at most 4.
    #[arg(long, env = "SCHEMAOPS_MAX_CONCURRENT_CHECKS", default_value_t = 0)]
    pub max_concurrent_checks: usize,

    /// How long such a request waits for a turn before it is answered 429
    /// with Retry-After, in milliseconds.
    #[arg(long, env = "SCHEMAOPS_CHECK_QUEUE_MILLIS", default_value_t = AdmissionConfig::DEFAULT_QUEUE_MILLIS)]
    pub check_queue_millis: u64,

    /// The memory one request's parsing and checking may be estimated to
    /// need, in MiB; over it the request is refused (422, 42209) before the work.
    #[arg(long, env = "SCHEMAOPS_MAX_CHECK_MEMORY_MIB", default_value_t = AdmissionConfig::DEFAULT_MEMORY_MIB)]
    pub max_check_memory_mib: usize,

    /// How long one request's checks may run, in seconds (422, 42201, past it).
    #[arg(long, env = "SCHEMAOPS_MAX_CHECK_SECONDS", default_value_t = AdmissionConfig::DEFAULT_CHECK_SECONDS)]
    pub max_check_seconds: u64,
}

impl CheckBudgetArgs {
    /// The gate's configuration.
    ///
    /// # Errors
    /// A message naming a budget of zero.
    pub fn into_config(self) -> Result<AdmissionConfig, String> {
        if self.max_check_memory_mib == 0 || self.max_check_seconds == 0 {
            return Err("--max-check-memory-mib and --max-check-seconds must be at least 1".to_owned());
        }
        Ok(AdmissionConfig {
            permits: match self.max_concurrent_checks {
                0 => AdmissionConfig::default_permits(),
                permits => permits,
            },
            queue_wait: std::time::Duration::from_millis(self.check_queue_millis),
            budget: BudgetLimits {
                memory_bytes: self.max_check_memory_mib.saturating_mul(1024 * 1024),
                time: std::time::Duration::from_secs(self.max_check_seconds),
            },
        })
    }
}

/// Logging options shared by the long-running commands.
#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct LoggingArgs {
    /// `plain` for people, `json` for log collectors. Levels come from `RUST_LOG` (default `info`).
    #[arg(long, value_enum, env = "SCHEMAOPS_LOG_FORMAT", default_value_t = LogFormat::Plain)]
    pub log_format: LogFormat,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Plain,
    /// One JSON object per event.
    Json,
}

/// What `schemaops registry` will do, checked and typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    /// The SQLite file.
    pub database: PathBuf,
    /// The PostgreSQL database used instead of the SQLite file, when given.
    pub postgres: Option<PostgresOptions>,
    /// Where to listen.
    pub listen: std::net::SocketAddr,
    /// The request body limit.
    pub body_limit: usize,
    /// Limits on slow and idle clients.
    pub server_limits: ServerLimits,
    /// How many checks run at once, and each one's budget.
    pub admission: AdmissionConfig,
    /// Schema size limits.
    pub limits: Limits,
    /// The policy that judges JSON Schema differences.
    pub json_policy: JsonPolicy,
    /// Who may read and write over REST.
    pub access: AccessPolicy,
    /// SchemaPolicy files or folders.
    pub policies: Vec<PathBuf>,
    /// Log format.
    pub log_format: LogFormat,
}

impl RegistryArgs {
    /// Resolves the arguments into a configuration, reading credential files.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<RegistryConfig, String> {
        let listen = self.listen.parse().map_err(|error| {
            format!(
                "--listen `{}` is not an address like 127.0.0.1:8081: {error}",
                self.listen
            )
        })?;
        if self.max_body_bytes == 0 || self.max_schema_bytes == 0 {
            return Err("--max-body-bytes and --max-schema-bytes must be at least 1".to_owned());
        }
        Ok(RegistryConfig {
            database: self.data.join("registry.db"),
            postgres: self.store.into_options()?,
            listen,
            body_limit: self.max_body_bytes,
            server_limits: self.http.into_limits()?,
            admission: self.checks.into_config()?,
            limits: Limits {
                max_schema_bytes: self.max_schema_bytes,
            },
            json_policy: self.json_policy,
            access: self.access.into_policy(RestWrites::Open)?,
            policies: self.policies,
            log_format: self.logging.log_format,
        })
    }
}

/// Where the embedded registry keeps its data instead of SQLite under
/// `--data` (`schemaops registry` and `schemaops operator`).
#[derive(Debug, Args)]
#[command(next_help_heading = "PostgreSQL store")]
pub struct StoreArgs {
    /// A PostgreSQL database for the embedded registry instead of SQLite under
    /// `--data`: `postgres://user:password@host:port/database`. Add
    /// `?sslmode=require` for TLS (the server's certificate and host name are
    /// verified); without it the connection is plain. Several registry
    /// processes may share one database.
    #[arg(long = "store", env = "SCHEMAOPS_STORE", value_name = "DSN", hide_env_values = true)]
    pub dsn: Option<String>,

    /// PEM file of CA certificates trusted for the PostgreSQL server's
    /// certificate, besides the system's; needs `sslmode=require` in `--store`.
    #[arg(long = "store-ca-file", env = "SCHEMAOPS_STORE_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// PEM certificate chain presented to the PostgreSQL server (its `cert`
    /// authentication); with `--store-client-key` and `sslmode=require`.
    #[arg(long = "store-client-cert", env = "SCHEMAOPS_STORE_CLIENT_CERT", value_name = "FILE")]
    pub client_cert: Option<PathBuf>,

    /// PEM private key of `--store-client-cert`.
    #[arg(long = "store-client-key", env = "SCHEMAOPS_STORE_CLIENT_KEY", value_name = "FILE")]
    pub client_key: Option<PathBuf>,
}

impl StoreArgs {
    /// Checks that `--store` names a PostgreSQL database, and that the TLS
    /// files come with it, with `sslmode=require`, and exist. Messages never
    /// repeat the DSN: it may hold a password.
    ///
    /// # Errors
    /// A message naming the flag at fault.
    pub fn into_options(self) -> Result<Option<PostgresOptions>, String> {
        let tls_files = [
            ("--store-ca-file", &self.ca_file),
            ("--store-client-cert", &self.client_cert),
            ("--store-client-key", &self.client_key),
        ];
        let Some(dsn) = self.dsn else {
            return match tls_files.iter().find(|(_, file)| file.is_some()) {
                Some((flag, _)) => Err(format!("{flag} needs --store (a PostgreSQL URL with sslmode=require)")),
                None => Ok(None),
            };
        };
        if !(dsn.starts_with("postgres://") || dsn.starts_with("postgresql://")) {
            return Err("--store takes a PostgreSQL URL like postgres://user:password@host:5432/database".to_owned());
        }
        let tls = requires_tls(&dsn).map_err(|error| format!("--store is not a valid PostgreSQL URL: {error}"))?;
        for (flag, file) in tls_files {
            let Some(path) = file else { continue };
            if !tls {
                return Err(format!(
                    "{flag} {} is only used over TLS: add sslmode=require to the --store URL \
                     (postgres://…/database?sslmode=require)",
                    path.display()
                ));
            }
            if !path.is_file() {
                return Err(format!("{flag} {} is not a readable file", path.display()));
            }
        }
        let client_identity = match (self.client_cert, self.client_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err("--store-client-cert needs --store-client-key".to_owned()),
            (None, Some(_)) => return Err("--store-client-key needs --store-client-cert".to_owned()),
        };
        Ok(Some(PostgresOptions {
            dsn,
            ca_file: self.ca_file,
            client_identity,
        }))
    }
}

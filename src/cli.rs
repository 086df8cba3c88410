//! The command line: clap types, then the checked, typed configuration each
//! command runs with. Nothing here runs a command.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::compat::budget::BudgetLimits;
use crate::compat::json::JsonPolicy;
use crate::compat::{Checker, Format, Limits, Mode};
use crate::http_server::ServerLimits;
use crate::http_server::args::ServerLimitsArgs;
use crate::registry::api::{AccessPolicy, AdmissionConfig, RestWrites};
use crate::registry::embedded::postgres::{PostgresOptions, requires_tls};
use crate::registry::external::ExternalConfig;

mod access;
mod connection;
mod export;
mod import;
mod local;
pub use access::ApiAccessArgs;
pub use connection::{RegistryConnectionArgs, TargetRegistryArgs};
pub use export::{ExportArgs, ExportConfig, ExportSource};
pub use import::{ImportArgs, ImportConfig};
pub use local::{ApplyArgs, ApplyConfig, CheckArgs, CheckConfig, CheckOutput, CheckSource, ObjectOutput};

/// Kafka schemas as Kubernetes resources, checked for compatibility before they are registered.
#[derive(Debug, Parser)]
#[command(name = "schemaops", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply Schema and SubjectConfig manifests to the embedded registry on disk (or to a running
    /// registry with `--registry-url`), without a cluster.
    ///
    /// Each compatible schema is registered; each incompatible one is left out
    /// and its status says why. Objects are kept in the data folder between
    /// runs, so a later run is an edit. With `--registry-url` the schemas and
    /// levels go to that Confluent-compatible registry (checked to answer
    /// before anything is applied) and the data folder keeps only the
    /// objects. Exit status: 0 all accepted, 1 some rejected, 2 error.
    Apply(ApplyArgs),
    /// Say what `apply` would do with Schema and SubjectConfig manifests, without writing anything.
    ///
    /// The manifests are applied to a scratch copy of the data folder (or to
    /// an empty registry without `--data`); each object is reported as
    /// unchanged, would register (as version N), would change settings, or
    /// would be rejected, with every incompatibility. Exit status: 0 all
    /// would be accepted, 1 some would be rejected, 2 error (an unreadable
    /// or invalid manifest, or an object that could not be checked).
    Check(CheckArgs),
    /// Check schema files for compatibility with the compatibility engine.
    ///
    /// Exit status: 0 compatible, 1 incompatible, 2 error (bad usage, or a
    /// schema that cannot be read or is invalid).
    Compat(CompatArgs),
    /// Serve the Confluent Schema Registry REST API from the embedded store.
    Registry(RegistryArgs),
    /// Run the controllers against the cluster, with the embedded registry serving its REST API.
    Operator(Box<OperatorArgs>),
    /// Write a registry's subjects as Schema and SubjectConfig manifests, one file per subject, plus `index.md`.
    Export(Box<ExportArgs>),
    /// Copy a Confluent-compatible registry into the embedded one, keeping every schema ID and
    /// version. Exit status: 0 copied (or nothing to copy), 2 error or conflict (nothing written).
    Import(ImportArgs),
    /// Print the CustomResourceDefinitions of Schema, SubjectConfig and SchemaPolicy as YAML (`kubectl apply -f -`).
    Crds,
}

/// Engine options shared by the commands that judge schemas.
#[derive(Debug, Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineArgs {
    /// How JSON Schema differences are judged: STRICT (Confluent's default) or LENIENT.
    #[arg(long, env = "SCHEMAOPS_JSON_POLICY", default_value = "strict")]
    pub json_policy: JsonPolicy,

    /// The largest schema accepted, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_SCHEMA_BYTES", default_value_t = Limits::DEFAULT_MAX_SCHEMA_BYTES)]
    pub max_schema_bytes: usize,
}

impl EngineArgs {
    /// The checker these options describe.
    ///
    /// # Errors
    /// A message when a limit is zero.
    pub fn checker(&self) -> Result<Checker, String> {
        if self.max_schema_bytes == 0 {
            return Err("--max-schema-bytes must be at least 1".to_owned());
        }
        Ok(Checker::new(Limits {
            max_schema_bytes: self.max_schema_bytes,
        })
        .with_json_policy(self.json_policy))
    }
}

/// Arguments of `schemaops operator`.
#[derive(Debug, Args)]
pub struct OperatorArgs {
    /// Folder for the embedded registry's data (created when missing).
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// A PostgreSQL database instead of SQLite under `--data`.
    #[command(flatten)]
    pub store: StoreArgs,

    /// Address of the registry's REST API; port 0 picks a free port (printed). Loopback by
    /// default: in a cluster, give `0.0.0.0:8081` (the chart does).
    #[arg(long, env = "SCHEMAOPS_REGISTRY_LISTEN", default_value = "127.0.0.1:8081")]
    pub registry_listen: String,

    /// Address of the health (`/healthz`), readiness (`/readyz`) and metrics endpoints. Loopback
    /// by default: in a cluster, give `0.0.0.0:8080` (the chart does).
    #[arg(long, env = "SCHEMAOPS_HEALTH_LISTEN", default_value = "127.0.0.1:8080")]
    pub health_listen: String,

    /// How often the ConfigMaps that Schemas' `schemaFrom` name are read again, in seconds.
    /// ConfigMaps are never listed or watched: only those named are read (RBAC: `get`).
    #[arg(long, env = "SCHEMAOPS_CONFIG_MAP_POLL_SECONDS", default_value_t = 30)]
    pub config_map_poll_seconds: u64,

    /// A kubeconfig file; by default `KUBECONFIG`, `~/.kube/config`, or the in-cluster service account.
    #[arg(long, env = "SCHEMAOPS_KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Watch only this namespace (by default every namespace).
    #[arg(long, env = "SCHEMAOPS_NAMESPACE")]
    pub namespace: Option<String>,

    /// How often every Schema is compared with the registry again (drift), in seconds.
    #[arg(long, env = "SCHEMAOPS_RESYNC_SECONDS", default_value_t = 300)]
    pub resync_seconds: u64,

    /// The largest request body the registry API accepts, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_BODY_BYTES", default_value_t = crate::registry::api::DEFAULT_BODY_LIMIT)]
    pub max_body_bytes: usize,

    /// Who may read and write the embedded registry over REST (GitOps-only by default).
    #[command(flatten)]
    pub access: ApiAccessArgs,

    /// Leader election options.
    #[command(flatten)]
    pub leader: LeaderArgs,

    /// Webhook options.
    #[command(flatten)]
    pub webhook: WebhookArgs,
    /// An external registry to manage instead of the embedded one.
    #[command(flatten)]
    pub registry: RegistryConnectionArgs,

    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,

    /// Limits on slow and idle clients of the registry API, health and webhook servers.
    #[command(flatten)]
    pub http: ServerLimitsArgs,

    /// Logging options.
    #[command(flatten)]
    pub logging: LoggingArgs,
}

/// Leader election (`schemaops operator`): only the Lease holder reconciles.
#[derive(Debug, Args)]
#[command(next_help_heading = "Leader election")]
pub struct LeaderArgs {
    /// Run the controllers only while holding a coordination.k8s.io Lease (for several replicas).
    #[arg(long, env = "SCHEMAOPS_LEADER_ELECTION")]
    pub leader_election: bool,

    /// The Lease's name.
    #[arg(long, env = "SCHEMAOPS_LEASE_NAME", default_value = "schemaops-leader")]
    pub lease_name: String,

    /// The Lease's namespace; by default `POD_NAMESPACE`, else `--namespace`, else `default`.
    #[arg(long, env = "SCHEMAOPS_LEASE_NAMESPACE")]
    pub lease_namespace: Option<String>,

    /// How long the Lease holds without renewal, in seconds.
    #[arg(long, env = "SCHEMAOPS_LEASE_DURATION_SECONDS", default_value_t = 15)]
    pub lease_duration_seconds: u64,

    /// How often the leader renews the Lease (and a candidate retries), in seconds.
    #[arg(long, env = "SCHEMAOPS_RENEW_SECONDS", default_value_t = 5)]
    pub renew_seconds: u64,
}

impl LeaderArgs {
    fn into_config(self, namespace: Option<&str>) -> Result<Option<crate::controller::leader::ElectionConfig>, String> {
        if !self.leader_election {
            return Ok(None);
        }
        if self.renew_seconds == 0 || self.renew_seconds >= self.lease_duration_seconds {
            return Err("--renew-seconds must be at least 1 and less than --lease-duration-seconds".to_owned());
        }
        let lease_namespace = self
            .lease_namespace
            .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|n| !n.is_empty()))
            .or_else(|| namespace.map(str::to_owned))
            .unwrap_or_else(|| "default".to_owned());
        Ok(Some(crate::controller::leader::ElectionConfig {
            lease_name: self.lease_name,
            lease_namespace,
            identity: crate::controller::leader::default_identity(),
            lease_duration: std::time::Duration::from_secs(self.lease_duration_seconds),
            renew_period: std::time::Duration::from_secs(self.renew_seconds),
        }))
    }
}

/// The validating admission webhook's options (`schemaops operator`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Admission webhook")]
pub struct WebhookArgs {
    /// Serve the validating admission webhook over HTTPS at this address (off unless given; port 0 picks one, printed).
    #[arg(long, env = "SCHEMAOPS_WEBHOOK_LISTEN", value_name = "ADDR")]
    pub webhook_listen: Option<String>,

    /// The webhook's certificate chain (PEM), e.g. mounted by cert-manager; generated at start-up when absent.
    #[arg(
        long,
        env = "SCHEMAOPS_WEBHOOK_CERT_FILE",
        value_name = "FILE",
        requires = "webhook_key_file"
    )]
    pub webhook_cert_file: Option<PathBuf>,

    /// The private key (PEM) of `--webhook-cert-file`.
    #[arg(
        long,
        env = "SCHEMAOPS_WEBHOOK_KEY_FILE",
        value_name = "FILE",
        requires = "webhook_cert_file"
    )]
    pub webhook_key_file: Option<PathBuf>,

    /// A DNS name (or IP address) of the generated certificate; repeatable. By default
    /// `schemaops-webhook.NAMESPACE.svc` and its shorter and longer forms, `localhost` and `127.0.0.1`.
    #[arg(
        long,
        env = "SCHEMAOPS_WEBHOOK_DNS_NAMES",
        value_name = "NAME",
        value_delimiter = ',',
        conflicts_with = "webhook_cert_file"
    )]
    pub webhook_dns_name: Vec<String>,

    /// Write the CA bundle (base64 of the PEM) for the ValidatingWebhookConfiguration's `caBundle` to this file.
    #[arg(long, env = "SCHEMAOPS_WEBHOOK_CA_BUNDLE_OUT", value_name = "FILE")]
    pub webhook_ca_bundle_out: Option<PathBuf>,
}

/// The webhook's Service name, the stem of the default certificate names.
pub const WEBHOOK_SERVICE: &str = "schemaops-webhook";

/// The namespace assumed in the default certificate names when `--namespace` is not given.
pub const DEFAULT_WEBHOOK_NAMESPACE: &str = "schemaops";

/// Where the webhook's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookCertificate {
    /// PEM files.
    Files {
        /// The certificate chain.
        certificate: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
    /// Generated at start-up, with its own CA, for these names.
    Generated {
        /// DNS names and IP addresses.
        names: Vec<String>,
    },
}

/// The webhook's settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookConfig {
    /// Where it listens.
    pub listen: std::net::SocketAddr,
    /// Its certificate.
    pub certificate: WebhookCertificate,
    /// Where to write the CA bundle.
    pub ca_bundle_out: Option<PathBuf>,
}

impl WebhookArgs {
    /// The webhook's settings, `None` when it is off.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self, namespace: Option<&str>) -> Result<Option<WebhookConfig>, String> {
        let Some(listen) = self.webhook_listen else {
            return Ok(None);
        };
        let listen = listen
            .parse()
            .map_err(|error| format!("--webhook-listen `{listen}` is not an address like 0.0.0.0:8443: {error}"))?;
        let certificate = match (self.webhook_cert_file, self.webhook_key_file) {
            (Some(certificate), Some(key)) => WebhookCertificate::Files { certificate, key },
            (None, None) if self.webhook_dns_name.is_empty() => {
                let namespace = namespace.unwrap_or(DEFAULT_WEBHOOK_NAMESPACE);
                let service = format!("{WEBHOOK_SERVICE}.{namespace}");
                WebhookCertificate::Generated {
                    names: vec![
                        WEBHOOK_SERVICE.to_owned(),
                        service.clone(),
                        format!("{service}.svc"),
                        format!("{service}.svc.cluster.local"),
                        "localhost".to_owned(),
                        "127.0.0.1".to_owned(),
                    ],
                }
            }
            (None, None) => WebhookCertificate::Generated {
                names: self.webhook_dns_name,
            },
            _ => return Err("--webhook-cert-file and --webhook-key-file go together".to_owned()),
        };
        Ok(Some(WebhookConfig {
            listen,
            certificate,
            ca_bundle_out: self.webhook_ca_bundle_out,
        }))
    }
}

/// What `schemaops operator` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// The SQLite file of the embedded registry.
    pub database: PathBuf,
    /// The PostgreSQL database used instead of the SQLite file, when given.
    pub postgres: Option<PostgresOptions>,
    /// Where the registry API listens.
    pub registry_listen: std::net::SocketAddr,
    /// Where health and readiness are served.
    pub health_listen: std::net::SocketAddr,
    /// The kubeconfig file, if not inferred.
    pub kubeconfig: Option<PathBuf>,
    /// The one namespace watched, or every namespace.
    pub namespace: Option<String>,
    /// The drift resync period.
    pub resync: std::time::Duration,
    /// How often the ConfigMaps that Schemas name are read again.
    pub config_map_poll: std::time::Duration,
    /// Who may read and write the embedded registry over REST.
    pub access: AccessPolicy,
    /// The registry API's body limit.
    pub body_limit: usize,
    /// Limits on slow and idle clients of every server.
    pub server_limits: ServerLimits,
    /// The engine.
    pub checker: Checker,
    /// The admission webhook, when it is on.
    pub webhook: Option<WebhookConfig>,
    /// The external registry managed instead of the embedded one, if any.
    pub external_registry: Option<ExternalConfig>,
    /// Leader election, when it is on.
    pub leader_election: Option<crate::controller::leader::ElectionConfig>,
    /// Log format.
    pub log_format: LogFormat,
}

impl OperatorArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<OperatorConfig, String> {
        let address = |flag: &str, text: &str| {
            text.parse::<std::net::SocketAddr>()
                .map_err(|error| format!("{flag} `{text}` is not an address like 0.0.0.0:8081: {error}"))
        };
        if self.resync_seconds == 0 {
            return Err("--resync-seconds must be at least 1".to_owned());
        }
        if self.config_map_poll_seconds == 0 {
            return Err("--config-map-poll-seconds must be at least 1".to_owned());
        }
        let webhook = self.webhook.into_config(self.namespace.as_deref())?;
        let leader_election = self.leader.into_config(self.namespace.as_deref())?;
        Ok(OperatorConfig {
            database: self.data.join("registry.db"),
            postgres: self.store.into_options()?,
            registry_listen: address("--registry-listen", &self.registry_listen)?,
            health_listen: address("--health-listen", &self.health_listen)?,
            kubeconfig: self.kubeconfig,
            namespace: self.namespace,
            resync: std::time::Duration::from_secs(self.resync_seconds),
            config_map_poll: std::time::Duration::from_secs(self.config_map_poll_seconds),
            access: self.access.into_policy(RestWrites::GitOpsOnly)?,
            body_limit: self.max_body_bytes,
            server_limits: self.http.into_limits()?,
            checker: self.engine.checker()?,
            webhook,
            external_registry: self.registry.into_config()?,
            leader_election,
            log_format: self.logging.log_format,
        })
    }
}

/// Arguments of `schemaops registry`.
#[derive(Debug, Args)]
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

/// Arguments of `schemaops compat`.
#[derive(Debug, Args)]
pub struct CompatArgs {
    /// Schema language of the files.
    #[arg(long, env = "SCHEMAOPS_FORMAT", default_value = "AVRO")]
    pub format: Format,

    /// Compatibility mode: BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE or NONE.
    #[arg(long, env = "SCHEMAOPS_MODE", default_value = "BACKWARD")]
    pub mode: Mode,

    /// An earlier version of the schema; repeat it, oldest first.
    #[arg(long = "previous", value_name = "FILE")]
    pub previous: Vec<PathBuf>,

    /// The new schema.
    #[arg(long, value_name = "FILE", required_unless_present = "cases")]
    pub candidate: Option<PathBuf>,

    /// A schema the others import or refer to, as NAME=FILE (for Protobuf, NAME
    /// is the import path, e.g. `common/money.proto=./money.proto`); repeat it.
    /// Every schema of the check sees the same references.
    #[arg(long = "reference", value_name = "NAME=FILE", conflicts_with = "cases")]
    pub references: Vec<String>,

    /// Run every case of a conformance JSON Lines file and print one JSON line per case.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["candidate", "previous"])]
    pub cases: Option<PathBuf>,

    /// How to print the result of a single check.
    #[arg(short = 'o', long, value_enum, env = "SCHEMAOPS_OUTPUT", default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// How JSON Schema differences are judged: STRICT (Confluent's default) or LENIENT.
    #[arg(long, env = "SCHEMAOPS_JSON_POLICY", default_value = "strict")]
    pub json_policy: JsonPolicy,

    /// The largest schema file accepted, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_SCHEMA_BYTES", default_value_t = Limits::DEFAULT_MAX_SCHEMA_BYTES)]
    pub max_schema_bytes: usize,
}

/// How a single check's result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Sentences for a person.
    Text,
    /// One JSON object.
    Json,
}

/// What `schemaops compat` will do, checked and typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompatConfig {
    /// Size limits for every schema read.
    pub limits: Limits,
    /// The policy that judges JSON Schema differences.
    pub json_policy: JsonPolicy,
    /// A single check, or a file of cases.
    pub job: CompatJob,
}

/// The two jobs of `schemaops compat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompatJob {
    /// Check one candidate against earlier versions.
    Pair {
        /// Schema language.
        format: Format,
        /// Compatibility mode.
        mode: Mode,
        /// Earlier versions, oldest first.
        previous: Vec<PathBuf>,
        /// The new schema.
        candidate: PathBuf,
        /// Referenced schemas: the name used to refer to each, and its file.
        references: Vec<(String, PathBuf)>,
        /// How to print the result.
        output: OutputFormat,
    },
    /// Run every case of a conformance file.
    Cases {
        /// The JSON Lines file.
        path: PathBuf,
    },
}

impl CompatArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument when the combination makes no sense.
    pub fn into_config(self) -> Result<CompatConfig, String> {
        if self.max_schema_bytes == 0 {
            return Err("--max-schema-bytes must be at least 1".to_owned());
        }
        let limits = Limits {
            max_schema_bytes: self.max_schema_bytes,
        };
        let job = match (self.cases, self.candidate) {
            (Some(path), _) => CompatJob::Cases { path },
            (None, Some(candidate)) => CompatJob::Pair {
                format: self.format,
                mode: self.mode,
                previous: self.previous,
                candidate,
                references: self
                    .references
                    .iter()
                    .map(|spec| match spec.split_once('=') {
                        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
                            Ok((name.to_owned(), PathBuf::from(path)))
                        }
                        _ => Err(format!("--reference `{spec}` should be NAME=FILE")),
                    })
                    .collect::<Result<_, _>>()?,
                output: self.output,
            },
            (None, None) => return Err("give --candidate FILE (with --previous FILE…), or --cases FILE".to_owned()),
        };
        Ok(CompatConfig {
            limits,
            json_policy: self.json_policy,
            job,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::registry::external::ExternalAuth;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn leader_election_is_off_by_default_and_takes_its_timings_from_the_flags() {
        assert!(operator_config(&[]).unwrap().leader_election.is_none());
        let election = operator_config(&[
            "--leader-election",
            "--lease-namespace",
            "ops",
            "--lease-duration-seconds",
            "3",
            "--renew-seconds",
            "1",
        ])
        .unwrap()
        .leader_election
        .unwrap();
        assert_eq!(election.lease_name, "schemaops-leader");
        assert_eq!(election.lease_namespace, "ops");
        assert_eq!(election.lease_duration, std::time::Duration::from_secs(3));
        assert_eq!(election.renew_period, std::time::Duration::from_secs(1));
        assert!(!election.identity.is_empty());
    }

    #[test]
    fn a_renew_period_not_shorter_than_the_lease_is_refused() {
        let error = operator_config(&[
            "--leader-election",
            "--lease-duration-seconds",
            "5",
            "--renew-seconds",
            "5",
        ])
        .unwrap_err();
        assert!(error.contains("--renew-seconds"), "{error}");
    }

    #[test]
    fn a_pair_check_resolves_into_a_pair_job() {
        let cli = Cli::parse_from([
            "schemaops",
            "compat",
            "--mode",
            "full_transitive",
            "--previous",
            "a.avsc",
            "--previous",
            "b.avsc",
            "--candidate",
            "c.avsc",
        ]);
        let Command::Compat(args) = cli.command else {
            panic!("a compat command");
        };
        let config = args.into_config().unwrap();
        assert_eq!(
            config.job,
            CompatJob::Pair {
                format: Format::Avro,
                mode: Mode::FullTransitive,
                previous: vec!["a.avsc".into(), "b.avsc".into()],
                candidate: "c.avsc".into(),
                references: Vec::new(),
                output: OutputFormat::Text,
            }
        );
    }

    fn operator_config(args: &[&str]) -> Result<OperatorConfig, String> {
        let cli = Cli::try_parse_from(["schemaops", "operator"].iter().chain(args)).map_err(|e| e.to_string())?;
        let Command::Operator(args) = cli.command else {
            panic!("an operator command");
        };
        args.into_config()
    }

    #[test]
    fn the_webhook_is_off_unless_an_address_is_given() {
        assert_eq!(operator_config(&[]).unwrap().webhook, None);
    }

    #[test]
    fn a_generated_webhook_certificate_names_the_service_in_the_watched_namespace() {
        let config = operator_config(&["--webhook-listen", "127.0.0.1:0", "--namespace", "kafka"]).unwrap();
        let webhook = config.webhook.unwrap();
        let WebhookCertificate::Generated { names } = webhook.certificate else {
            panic!("a generated certificate");
        };
        assert!(names.contains(&"schemaops-webhook.kafka.svc".to_owned()), "{names:?}");
        assert!(names.contains(&"localhost".to_owned()) && names.contains(&"127.0.0.1".to_owned()));
    }

    #[test]
    fn webhook_dns_names_repeat_and_replace_the_defaults() {
        let config = operator_config(&[
            "--webhook-listen",
            "127.0.0.1:0",
            "--webhook-dns-name",
            "a.example",
            "--webhook-dns-name",
            "b.example",
        ])
        .unwrap();
        assert_eq!(
            config.webhook.unwrap().certificate,
            WebhookCertificate::Generated {
                names: vec!["a.example".to_owned(), "b.example".to_owned()]
            }
        );
    }

    #[test]
    fn a_webhook_certificate_file_needs_its_key() {
        let error =
            operator_config(&["--webhook-listen", "127.0.0.1:0", "--webhook-cert-file", "tls.crt"]).unwrap_err();
        assert!(error.contains("--webhook-key-file"), "{error}");
    }

    #[test]
    fn registry_defaults_listen_on_loopback_with_data_in_dot_schemaops() {
        let cli = Cli::parse_from(["schemaops", "registry"]);
        let Command::Registry(args) = cli.command else {
            panic!("a registry command");
        };
        let config = args.into_config().unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:8081");
        assert_eq!(config.database, std::path::PathBuf::from(".schemaops/registry.db"));
        assert_eq!(config.postgres, None);
        assert_eq!(config.access, AccessPolicy::default());
    }

    #[test]
    fn the_operator_listens_on_loopback_and_takes_rest_writes_as_gitops_only_by_default() {
        let config = operator_config(&[]).unwrap();
        assert_eq!(config.registry_listen.to_string(), "127.0.0.1:8081");
        assert_eq!(config.health_listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.access.writes, RestWrites::GitOpsOnly);
        let open = operator_config(&["--rest-writes", "open", "--admin-credentials", "root:pw"]).unwrap();
        assert_eq!(open.access.writes, RestWrites::Open);
        assert_eq!(open.access.admins.len(), 1);
    }

    #[test]
    fn an_empty_admin_credentials_file_stops_the_start_with_the_flag_named() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let path = file.path().to_str().unwrap();
        let error = operator_config(&["--admin-credentials-file", path]).unwrap_err();
        assert!(
            error.contains("--admin-credentials-file") && error.contains("holds no credentials"),
            "{error}"
        );
        let error = operator_config(&["--admin-credentials-file", "/nonexistent/admin"]).unwrap_err();
        assert!(
            error.contains("cannot read the credentials file /nonexistent/admin"),
            "{error}"
        );
    }

    #[test]
    fn store_takes_only_a_postgres_url() {
        let registry = |store: &str| {
            let cli = Cli::parse_from(["schemaops", "registry", "--store", store]);
            let Command::Registry(args) = cli.command else {
                panic!("a registry command");
            };
            args.into_config()
        };
        let config = registry("postgres://u:p@db:5432/registry").unwrap();
        assert_eq!(
            config.postgres,
            Some(PostgresOptions::new("postgres://u:p@db:5432/registry"))
        );
        let error = registry("mysql://db/registry").unwrap_err();
        assert!(error.contains("--store"), "{error}");
        let config = operator_config(&["--store", "postgresql://db/registry"]).unwrap();
        assert_eq!(config.postgres, Some(PostgresOptions::new("postgresql://db/registry")));
    }

    fn registry_config(args: &[&str]) -> Result<RegistryConfig, String> {
        let cli = Cli::try_parse_from(["schemaops", "registry"].iter().chain(args)).map_err(|e| e.to_string())?;
        let Command::Registry(args) = cli.command else {
            panic!("a registry command");
        };
        args.into_config()
    }

    #[test]
    fn a_store_ca_file_needs_a_store_whose_dsn_says_sslmode_require() {
        let ca = tempfile::NamedTempFile::new().unwrap();
        let ca = ca.path().to_str().unwrap();
        let with_tls = "postgres://u:secret@db:5432/registry?sslmode=require";
        type Run = fn(&[&str]) -> Result<Option<PostgresOptions>, String>;
        let commands: [(&str, Run); 2] = [
            ("registry", |args| registry_config(args).map(|config| config.postgres)),
            ("operator", |args| operator_config(args).map(|config| config.postgres)),
        ];
        for (command, run) in commands {
            let error = run(&["--store-ca-file", ca]).unwrap_err();
            assert!(error.contains("--store-ca-file needs --store"), "{command}: {error}");
            for plain in [
                "postgres://u:secret@db:5432/registry",
                "postgres://u:secret@db:5432/registry?sslmode=prefer",
                "postgres://u:secret@db:5432/registry?sslmode=disable",
            ] {
                let error = run(&["--store", plain, "--store-ca-file", ca]).unwrap_err();
                assert!(error.contains("add sslmode=require"), "{command} {plain}: {error}");
                assert!(!error.contains("secret"), "{command}: the password leaked: {error}");
                // Without the CA file, the same DSNs are plain connections, as before.
                assert_eq!(run(&["--store", plain]).unwrap(), Some(PostgresOptions::new(plain)));
            }
            let options = run(&["--store", with_tls, "--store-ca-file", ca]).unwrap().unwrap();
            assert_eq!(options.ca_file.as_deref(), Some(std::path::Path::new(ca)), "{command}");
            assert!(!format!("{options:?}").contains("secret"), "{command}: {options:?}");
            assert_eq!(
                run(&["--store", with_tls]).unwrap(),
                Some(PostgresOptions::new(with_tls)),
                "{command}: the system's CAs alone"
            );
            let error = run(&["--store", with_tls, "--store-ca-file", "/nonexistent/ca.pem"]).unwrap_err();
            assert!(
                error.contains("--store-ca-file /nonexistent/ca.pem is not a readable file"),
                "{command}: {error}"
            );
            // libpq's verify-full is what require means here; tokio-postgres knows no other names.
            let error = run(&["--store", "postgres://u:secret@db/registry?sslmode=verify-full"]).unwrap_err();
            assert!(
                error.contains("--store is not a valid PostgreSQL URL"),
                "{command}: {error}"
            );
            assert!(!error.contains("secret"), "{command}: the password leaked: {error}");
        }
    }

    #[test]
    fn a_store_client_certificate_needs_its_key_a_store_and_sslmode_require() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let file = file.path().to_str().unwrap();
        let with_tls = "postgres://u:secret@db:5432/registry?sslmode=require";
        let identity = ["--store-client-cert", file, "--store-client-key", file];
        let registry = |args: &[&str]| registry_config(args).map(|config| config.postgres);
        let error = registry(&identity).unwrap_err();
        assert!(error.contains("--store-client-cert needs --store"), "{error}");
        let error = registry(&[&["--store", "postgres://u:secret@db/registry"][..], &identity].concat()).unwrap_err();
        assert!(error.contains("add sslmode=require"), "{error}");
        assert!(!error.contains("secret"), "the password leaked: {error}");
        let error = registry(&["--store", with_tls, "--store-client-cert", file]).unwrap_err();
        assert!(
            error.contains("--store-client-cert needs --store-client-key"),
            "{error}"
        );
        let error = registry(&["--store", with_tls, "--store-client-key", file]).unwrap_err();
        assert!(
            error.contains("--store-client-key needs --store-client-cert"),
            "{error}"
        );
        let options = operator_config(&[&["--store", with_tls][..], &identity].concat())
            .unwrap()
            .postgres
            .unwrap();
        assert_eq!(options.client_identity, Some((file.into(), file.into())));
        assert!(!format!("{options:?}").contains("secret"), "{options:?}");
    }

    #[test]
    fn inline_credentials_are_comma_separated() {
        let cli = Cli::parse_from(["schemaops", "registry", "--write-credentials", "ci:pw, token2"]);
        let Command::Registry(args) = cli.command else {
            panic!("a registry command");
        };
        assert_eq!(args.into_config().unwrap().access.writers.len(), 2);
    }

    #[test]
    fn without_a_registry_url_the_embedded_registry_is_used() {
        assert_eq!(operator_config(&[]).unwrap().external_registry, None);
        let error = operator_config(&["--registry-ca-file", "ca.pem"]).unwrap_err();
        assert!(error.contains("--registry-ca-file needs --registry-url"), "{error}");
    }

    #[test]
    fn registry_basic_credentials_come_from_flags_or_a_file_and_never_show() {
        let config = operator_config(&[
            "--registry-url",
            "https://registry.example:8081/apis/ccompat/v7",
            "--registry-username",
            "alice",
            "--registry-password",
            "hunter2-secret",
        ])
        .unwrap()
        .external_registry
        .unwrap();
        assert_eq!(
            config.auth,
            ExternalAuth::Basic {
                user: "alice".to_owned(),
                password: "hunter2-secret".to_owned()
            }
        );
        assert!(!format!("{config:?}").contains("hunter2-secret"));
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join("token");
        std::fs::write(&file, "tok-abc\n").unwrap();
        let config = operator_config(&[
            "--registry-url",
            "http://127.0.0.1:8081",
            "--registry-token-file",
            file.to_str().unwrap(),
        ])
        .unwrap()
        .external_registry
        .unwrap();
        assert_eq!(config.auth, ExternalAuth::Bearer("tok-abc".to_owned()));
    }

    #[test]
    fn registry_connection_mistakes_name_the_flag() {
        let cases: [(&[&str], &str); 5] = [
            (&["--registry-url", "ftp://x"], "--registry-url"),
            (&["--registry-url", "https://u:p@x"], "must not hold credentials"),
            (
                &["--registry-url", "https://x", "--registry-username", "u"],
                "--registry-username needs",
            ),
            (
                &["--registry-url", "https://x", "--registry-ca-file", "/no/such/ca.pem"],
                "--registry-ca-file",
            ),
            (
                &["--registry-url", "https://x", "--registry-timeout-seconds", "0"],
                "--registry-timeout-seconds",
            ),
        ];
        for (args, expected) in cases {
            let error = operator_config(args).unwrap_err();
            assert!(error.contains(expected), "{args:?}: {error}");
            assert!(!error.contains("u:p@"), "{error}");
        }
        assert!(
            operator_config(&[
                "--registry-url",
                "https://x",
                "--registry-token",
                "t",
                "--registry-username",
                "u"
            ])
            .is_err()
        );
        assert!(operator_config(&["--registry-url", "https://x", "--registry-client-cert", "c.pem"]).is_err());
    }

    #[test]
    fn apply_takes_the_registry_connection_flags() {
        let apply = |args: &[&str]| {
            let cli = Cli::parse_from(["schemaops", "apply"].iter().chain(args).chain(&["manifests/"]));
            let Command::Apply(args) = cli.command else {
                panic!("an apply command");
            };
            args.into_config()
        };
        assert_eq!(apply(&[]).unwrap().registry, None);
        let config = apply(&[
            "--registry-url",
            "http://127.0.0.1:8081/",
            "--registry-timeout-seconds",
            "3",
        ])
        .unwrap();
        let registry = config.registry.unwrap();
        assert_eq!(registry.display_url(), "http://127.0.0.1:8081");
        assert_eq!(registry.timeout, std::time::Duration::from_secs(3));
        let error = apply(&["--registry-token", "t"]).unwrap_err();
        assert!(error.contains("--registry-token needs --registry-url"), "{error}");
    }

    #[test]
    fn check_without_data_starts_from_an_empty_registry() {
        let cli = Cli::parse_from(["schemaops", "check", "-o", "github", "manifests/"]);
        let Command::Check(args) = cli.command else {
            panic!("a check command");
        };
        let config = args.into_config().unwrap();
        assert_eq!(config.source, CheckSource::Empty);
        assert_eq!(config.output, CheckOutput::Github);
    }

    #[test]
    fn check_refuses_a_data_folder_that_does_not_exist() {
        let cli = Cli::parse_from(["schemaops", "check", "--data", "/nonexistent/schemaops", "m/"]);
        let Command::Check(args) = cli.command else {
            panic!("a check command");
        };
        assert!(args.into_config().unwrap_err().contains("--data"));
    }

    #[test]
    fn cases_and_candidate_together_are_refused() {
        let parsed = Cli::try_parse_from(["schemaops", "compat", "--cases", "x.jsonl", "--candidate", "c.avsc"]);
        assert!(parsed.is_err());
    }
}

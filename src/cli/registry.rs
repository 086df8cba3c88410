//! Arguments of `schemaops registry`: where it listens, where it stores, who may write, and the
//! checked configuration they resolve into.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::ApiAccessArgs;
use super::kafka::StoreSecurityArgs;
use crate::compat::Limits;
use crate::compat::budget::BudgetLimits;
use crate::compat::json::JsonPolicy;
use crate::http_server::ServerLimits;
use crate::http_server::args::ServerLimitsArgs;
use crate::registry::api::{AccessPolicy, AdmissionConfig, RestWrites};
use crate::registry::embedded::kafka::election::ElectionOptions;
use crate::registry::embedded::kafka::topic_check::TopicPolicy;
use crate::registry::embedded::kafka::topic_store::KafkaOptions;
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

    /// A PostgreSQL database or a Kafka topic instead of SQLite under `--data`.
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
    /// The Kafka topic used instead of the SQLite file, when given.
    pub kafka: Option<KafkaOptions>,
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
        let store = self.store.into_options()?;
        Ok(RegistryConfig {
            database: self.data.join("registry.db"),
            postgres: store.postgres,
            kafka: store.kafka,
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
/// `--data` (`schemaops registry`, `operator` and `import`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Store")]
pub struct StoreArgs {
    /// A PostgreSQL database or a Kafka topic for the embedded registry
    /// instead of SQLite under `--data`.
    ///
    /// PostgreSQL: `postgres://user:password@host:port/database`; add
    /// `?sslmode=require` for TLS (the server's certificate and host name
    /// are verified), without it the connection is plain. Several registry
    /// processes may share one database.
    ///
    /// Kafka: `kafka://host:port[,host:port…]/topic` (TLS with
    /// `--store-tls`, SASL with `--store-sasl-mechanism`), the topic
    /// in Confluent Schema Registry's format (`_schemas` is Confluent's and
    /// Karapace's default). Every instance reads the whole topic before it
    /// answers and follows it; one elected instance writes, the others
    /// forward writes to it (see `--store-advertised-url`,
    /// `--store-leader-eligibility` and `--store-read-only`).
    #[arg(long = "store", env = "SCHEMAOPS_STORE", value_name = "URL", hide_env_values = true)]
    pub dsn: Option<String>,

    /// TLS to PostgreSQL (its CA and client files; `sslmode=require` in
    /// `--store` turns it on) or Kafka (`--store-tls`), and SASL to Kafka.
    #[command(flatten)]
    pub security: StoreSecurityArgs,

    /// Kafka store: the writer's transactional ID, the same on every
    /// instance of one topic: an instance that starts writing fences the
    /// one that wrote before. Also the ID of the group that elects the
    /// writer (default `schemaops-<topic>`).
    #[arg(
        long = "store-transactional-id",
        env = "SCHEMAOPS_STORE_TRANSACTIONAL_ID",
        value_name = "ID"
    )]
    pub transactional_id: Option<String>,

    /// Kafka store: only read the topic; writes are answered 500 with
    /// error code 50004, as a Confluent follower that knows no leader
    /// answers. For serving reads beside another registry that writes.
    #[arg(long = "store-read-only", env = "SCHEMAOPS_STORE_READ_ONLY")]
    pub read_only: bool,

    /// Kafka store: the URL other instances forward writes to when this one
    /// leads (Confluent's advertised `host.name` and listener); it must be
    /// different on every instance. Default: `http://` and the address
    /// `--listen` bound, which only suits instances on one machine.
    #[arg(
        long = "store-advertised-url",
        env = "SCHEMAOPS_STORE_ADVERTISED_URL",
        value_name = "URL"
    )]
    pub advertised_url: Option<String>,

    /// Kafka store: whether this instance may be elected to write
    /// (Confluent's `leader.eligibility`). An ineligible instance forwards
    /// every write to the leader.
    #[arg(
        long = "store-leader-eligibility",
        env = "SCHEMAOPS_STORE_LEADER_ELIGIBILITY",
        value_name = "BOOL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub leader_eligibility: bool,

    /// Kafka store: how long the group coordinator waits for an instance's
    /// heartbeat before it elects another leader without it, in
    /// milliseconds (Confluent's default is 10 s as well).
    #[arg(
        long = "store-session-timeout-ms",
        env = "SCHEMAOPS_STORE_SESSION_TIMEOUT_MS",
        value_name = "MS",
        default_value_t = 10_000
    )]
    pub session_timeout_ms: u64,

    /// Kafka store: the replication factor a missing topic is created with
    /// (at most the number of live brokers) and an existing one is expected
    /// to have (below it is a warning). Confluent's
    /// `kafkastore.topic.replication.factor`.
    #[arg(
        long = "store-topic-replication-factor",
        env = "SCHEMAOPS_STORE_TOPIC_REPLICATION_FACTOR",
        value_name = "N",
        default_value_t = 3
    )]
    pub topic_replication_factor: i16,

    /// Kafka store: fail when the topic is missing instead of creating it.
    #[arg(long = "store-no-create-topic", env = "SCHEMAOPS_STORE_NO_CREATE_TOPIC")]
    pub no_create_topic: bool,

    /// Kafka store: neither create nor check the topic (one partition,
    /// `cleanup.policy=compact`). Confluent's
    /// `kafkastore.topic.skip.validation`; for brokers that do not answer
    /// DescribeConfigs, at the risk of a topic that loses schemas.
    #[arg(long = "store-skip-topic-validation", env = "SCHEMAOPS_STORE_SKIP_TOPIC_VALIDATION")]
    pub skip_topic_validation: bool,
}

/// The stores `--store` and its options select; both `None` for SQLite.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoreOptions {
    /// A PostgreSQL database.
    pub postgres: Option<PostgresOptions>,
    /// A Kafka topic.
    pub kafka: Option<KafkaOptions>,
}

impl StoreArgs {
    /// Checks `--store` and the options that go with it: the TLS files
    /// need a PostgreSQL URL with `sslmode=require` and must exist; the
    /// Kafka options need a `kafka://` URL. Messages never repeat a
    /// PostgreSQL DSN: it may hold a password.
    ///
    /// # Errors
    /// A message naming the flag at fault.
    pub fn into_options(self) -> Result<StoreOptions, String> {
        let kafka_flags = [
            ("--store-transactional-id", self.transactional_id.is_some()),
            ("--store-read-only", self.read_only),
            ("--store-topic-replication-factor", self.topic_replication_factor != 3),
            ("--store-no-create-topic", self.no_create_topic),
            ("--store-skip-topic-validation", self.skip_topic_validation),
            ("--store-advertised-url", self.advertised_url.is_some()),
            ("--store-leader-eligibility", !self.leader_eligibility),
            ("--store-session-timeout-ms", self.session_timeout_ms != 10_000),
        ];
        let kafka_flags_given = kafka_flags
            .iter()
            .find(|(_, given)| *given)
            .map(|(flag, _)| (*flag).to_owned())
            .or_else(|| self.security.security().first_given());
        let is_kafka = self.dsn.as_deref().is_some_and(|dsn| dsn.starts_with("kafka://"));
        if !is_kafka && let Some(flag) = kafka_flags_given {
            return Err(format!(
                "{flag} is for the Kafka store: it needs --store kafka://host:port/topic"
            ));
        }
        if is_kafka {
            return self.into_kafka().map(|kafka| StoreOptions {
                postgres: None,
                kafka: Some(kafka),
            });
        }
        self.into_postgres()
            .map(|postgres| StoreOptions { postgres, kafka: None })
    }

    /// The options to read the topic a `kafka://` URL names, as a source
    /// to copy from: never written, never created, not checked (a topic
    /// that could not serve as a store can still be copied).
    ///
    /// # Errors
    /// A message naming `--store` and what is wrong with the URL.
    pub fn kafka_source(url: &str) -> Result<KafkaOptions, String> {
        if !url.starts_with("kafka://") {
            return Err(format!(
                "--store `{url}` is not a Kafka topic like kafka://broker:9092/_schemas"
            ));
        }
        let (bootstrap, topic) = parse_kafka_url(url)?;
        Ok(KafkaOptions {
            read_only: true,
            topic_policy: TopicPolicy {
                create: false,
                skip_validation: true,
                ..TopicPolicy::default()
            },
            ..KafkaOptions::new(bootstrap, topic)
        })
    }

    fn into_kafka(self) -> Result<KafkaOptions, String> {
        let (tls, sasl) = self.security.security().into_kafka()?;
        let url = self.dsn.unwrap_or_default();
        let (bootstrap, topic) = parse_kafka_url(&url)?;
        if self.topic_replication_factor < 1 {
            return Err("--store-topic-replication-factor must be at least 1".to_owned());
        }
        if let Some(id) = &self.transactional_id
            && id.trim().is_empty()
        {
            return Err("--store-transactional-id must not be empty".to_owned());
        }
        if let Some(url) = &self.advertised_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "--store-advertised-url `{url}` is not an http:// or https:// URL"
            ));
        }
        if !(1_000..=600_000).contains(&self.session_timeout_ms) {
            return Err("--store-session-timeout-ms must be between 1000 and 600000".to_owned());
        }
        let defaults = KafkaOptions::new(bootstrap, topic);
        let election = (!self.read_only).then(|| ElectionOptions {
            advertised_url: self.advertised_url.unwrap_or_default(),
            eligible: self.leader_eligibility,
            session_timeout: std::time::Duration::from_millis(self.session_timeout_ms),
        });
        Ok(KafkaOptions {
            transactional_id: self.transactional_id.unwrap_or(defaults.transactional_id.clone()),
            read_only: self.read_only,
            election,
            tls,
            sasl,
            topic_policy: TopicPolicy {
                create: !self.no_create_topic,
                replication_factor: self.topic_replication_factor,
                skip_validation: self.skip_topic_validation,
            },
            ..defaults
        })
    }

    fn into_postgres(self) -> Result<Option<PostgresOptions>, String> {
        let security = self.security;
        let tls_files = [
            ("--store-ca-file", &security.ca_file),
            ("--store-client-cert", &security.client_cert),
            ("--store-client-key", &security.client_key),
        ];
        let Some(dsn) = self.dsn else {
            return match tls_files.iter().find(|(_, file)| file.is_some()) {
                Some((flag, _)) => Err(format!("{flag} needs --store (a PostgreSQL URL with sslmode=require)")),
                None => Ok(None),
            };
        };
        if !(dsn.starts_with("postgres://") || dsn.starts_with("postgresql://")) {
            return Err(
                "--store takes a PostgreSQL URL like postgres://user:password@host:5432/database \
                        or a Kafka topic like kafka://broker:9092/_schemas"
                    .to_owned(),
            );
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
        let client_identity = match (security.client_cert, security.client_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err("--store-client-cert needs --store-client-key".to_owned()),
            (None, Some(_)) => return Err("--store-client-key needs --store-client-cert".to_owned()),
        };
        Ok(Some(PostgresOptions {
            dsn,
            ca_file: security.ca_file,
            client_identity,
        }))
    }
}

/// The bootstrap brokers (`host:port,host:port`) and the topic of a
/// `kafka://host:port[,host:port…]/topic` URL.
///
/// # Errors
/// A message naming `--store` and what is wrong.
fn parse_kafka_url(url: &str) -> Result<(String, String), String> {
    let rest = url.strip_prefix("kafka://").unwrap_or(url);
    let Some((brokers, topic)) = rest.split_once('/') else {
        return Err(format!(
            "--store `{url}` names no topic: give kafka://host:port/topic (Confluent's default topic is _schemas)"
        ));
    };
    let mut bootstrap = Vec::new();
    for broker in brokers.split(',') {
        let port = broker
            .rsplit_once(':')
            .filter(|(host, _)| !host.is_empty())
            .and_then(|(_, port)| port.parse::<u16>().ok());
        if port.is_none_or(|port| port == 0) {
            return Err(format!(
                "--store `{url}`: `{broker}` is not a broker address like kafka-0.kafka:9092"
            ));
        }
        bootstrap.push(broker);
    }
    // Kafka's own rule for topic names.
    let valid_topic = !topic.is_empty()
        && topic.len() <= 249
        && topic != "."
        && topic != ".."
        && topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid_topic {
        return Err(format!(
            "--store `{url}`: `{topic}` is not a Kafka topic name (1 to 249 of a-z, A-Z, 0-9, `.`, `_`, `-`)"
        ));
    }
    Ok((bootstrap.join(","), topic.to_owned()))
}

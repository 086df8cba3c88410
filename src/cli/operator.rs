//! Arguments of `schemaops operator`: the controllers, the webhook, leader election, and the
//! checked configuration they resolve into.

use std::path::PathBuf;

use clap::Args;

use super::{ApiAccessArgs, EngineArgs, LogFormat, LoggingArgs, RegistryConnectionArgs, StoreArgs};
use crate::compat::Checker;
use crate::http_server::ServerLimits;
use crate::http_server::args::ServerLimitsArgs;
use crate::registry::api::{AccessPolicy, RestWrites};
use crate::registry::embedded::kafka::topic_store::KafkaOptions;
use crate::registry::embedded::postgres::PostgresOptions;
use crate::registry::external::ExternalConfig;

/// What `schemaops operator` does, as its help says it.
pub const OPERATOR_ABOUT: &str =
    "Run the controllers against the cluster, with the embedded registry serving its REST API";

/// Arguments of `schemaops operator`.
#[derive(Debug, Args)]
#[command(about = OPERATOR_ABOUT, long_about = None)]
pub struct OperatorArgs {
    /// Folder for the embedded registry's data (created when missing).
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// A PostgreSQL database or a Kafka topic instead of SQLite under `--data`.
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
    /// The Kafka topic used instead of the SQLite file, when given.
    pub kafka: Option<KafkaOptions>,
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
        let store = self.store.into_options()?;
        Ok(OperatorConfig {
            database: self.data.join("registry.db"),
            postgres: store.postgres,
            kafka: store.kafka,
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

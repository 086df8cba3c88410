//! The options of `import` and its checked configuration.

use std::path::PathBuf;

use clap::Args;

use super::{EngineArgs, FromKafkaSecurityArgs, RegistryConnectionArgs, StoreArgs, TargetRegistryArgs};
use crate::compat::Checker;
use crate::registry::embedded::kafka::topic_store::KafkaOptions;
use crate::registry::embedded::postgres::PostgresOptions;
use crate::registry::external::ExternalConfig;

/// What `schemaops import` does, as its help says it.
pub const IMPORT_ABOUT: &str = "Copy a Confluent-compatible registry (through its REST API, or its Kafka store topic) into \
     the embedded one, keeping every schema ID and version. Exit status: 0 copied (or nothing to copy), 2 error or conflict (nothing \
     written)";

/// Arguments of `schemaops import`.
#[derive(Debug, Args)]
#[command(about = IMPORT_ABOUT, long_about = None)]
#[command(mut_arg("registry_url", |arg| arg
    .long("from")
    .env("SCHEMAOPS_IMPORT_FROM")
    .required_unless_present("from_kafka")
    .help("Base URL of the Confluent-compatible registry to copy, e.g. `https://registry:8081`")))]
pub struct ImportArgs {
    /// Folder of the embedded registry to copy into (created when missing).
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// A PostgreSQL database or a Kafka topic to copy into instead of SQLite under `--data`.
    #[command(flatten)]
    pub store: StoreArgs,

    /// The registry to copy from (`--from`) and how to connect to it.
    #[command(flatten)]
    pub source: RegistryConnectionArgs,

    /// A Confluent or Karapace store topic to copy instead of a registry's
    /// REST API: `kafka://host:port[,host:port…]/topic` (TLS with
    /// `--from-kafka-tls`, SASL with `--from-kafka-sasl-mechanism`). Read
    /// to its end, it is copied with its exact IDs, versions, soft and hard
    /// deletes and settings into an embedded store that holds nothing yet.
    #[arg(
        long,
        env = "SCHEMAOPS_IMPORT_FROM_KAFKA",
        value_name = "URL",
        conflicts_with = "registry_url"
    )]
    pub from_kafka: Option<String>,

    /// TLS and SASL to the brokers of `--from-kafka`.
    #[command(flatten)]
    pub from_kafka_security: FromKafkaSecurityArgs,

    /// An external registry to copy into instead (`--to-registry-url`).
    #[command(flatten)]
    pub target: TargetRegistryArgs,

    /// Engine options of the embedded registry.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What `schemaops import` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// What to copy.
    pub source: ImportSource,
    /// The SQLite file to copy into.
    pub database: PathBuf,
    /// The PostgreSQL database used instead of the SQLite file, when given.
    pub postgres: Option<PostgresOptions>,
    /// The Kafka topic used instead of the SQLite file, when given.
    pub kafka: Option<KafkaOptions>,
    /// The external registry copied into instead of the embedded store,
    /// when given (with the source's timeout, deadline and size limit).
    pub to_registry: Option<ExternalConfig>,
    /// The engine of the embedded registry.
    pub checker: Checker,
}

/// What `schemaops import` copies.
#[derive(Debug, Clone)]
pub enum ImportSource {
    /// A registry, through its REST API.
    Registry(Box<ExternalConfig>),
    /// A store topic in Confluent's record format, read directly.
    Kafka(Box<KafkaOptions>),
}

impl ImportSource {
    /// The registry copied through its REST API, if that is the source.
    pub fn registry(&self) -> Option<&ExternalConfig> {
        match self {
            ImportSource::Registry(config) => Some(config),
            ImportSource::Kafka(_) => None,
        }
    }
}

impl ImportArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<ImportConfig, String> {
        let store = self.store.into_options()?;
        let from_kafka_security = self.from_kafka_security.security();
        if self.from_kafka.is_none()
            && let Some(flag) = from_kafka_security.first_given()
        {
            return Err(format!("{flag} needs --from-kafka"));
        }
        if let Some(url) = self.from_kafka {
            if self.target.to_registry_url.is_some() {
                return Err("--from-kafka copies into the embedded store: give --data or --store, \
                            not --to-registry-url"
                    .to_owned());
            }
            let mut topic =
                super::StoreArgs::kafka_source(&url).map_err(|message| message.replace("--store", "--from-kafka"))?;
            (topic.tls, topic.sasl) = from_kafka_security.into_kafka()?;
            return Ok(ImportConfig {
                source: ImportSource::Kafka(Box::new(topic)),
                database: self.data.join("registry.db"),
                postgres: store.postgres,
                kafka: store.kafka,
                to_registry: None,
                checker: self.engine.checker()?,
            });
        }
        let source = self
            .source
            .into_config()
            .map_err(|message| message.replace("--registry-url", "--from"))?
            .ok_or_else(|| "--from or --from-kafka is required".to_owned())?;
        let to_registry = self.target.into_config()?.map(|mut target| {
            target.timeout = source.timeout;
            target.deadline = source.deadline;
            target.max_response_bytes = source.max_response_bytes;
            target
        });
        if to_registry.is_some() && (store.postgres.is_some() || store.kafka.is_some()) {
            return Err("give either --to-registry-url or --store, not both".to_owned());
        }
        Ok(ImportConfig {
            source: ImportSource::Registry(Box::new(source)),
            database: self.data.join("registry.db"),
            postgres: store.postgres,
            kafka: store.kafka,
            to_registry,
            checker: self.engine.checker()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use crate::cli::{Cli, Command};

    #[test]
    fn import_takes_the_source_as_from_and_the_target_as_data() {
        let cli =
            Cli::try_parse_from(["schemaops", "import", "--from", "http://registry:8081", "--data", "d"]).unwrap();
        let Command::Import(args) = cli.command else {
            panic!("expected import");
        };
        let config = args.into_config().unwrap();
        assert_eq!(config.source.registry().unwrap().display_url(), "http://registry:8081");
        assert_eq!(config.database, std::path::Path::new("d").join("registry.db"));
    }

    #[test]
    fn import_into_an_external_registry_takes_its_url_and_credentials_with_to() {
        let cli = Cli::try_parse_from([
            "schemaops",
            "import",
            "--from",
            "http://old:8081",
            "--to-registry-url",
            "https://new:8081",
            "--to-registry-token",
            "t",
            "--registry-deadline-seconds",
            "30",
        ])
        .unwrap();
        let Command::Import(args) = cli.command else {
            panic!("expected import");
        };
        let config = args.into_config().unwrap();
        let target = config.to_registry.unwrap();
        assert_eq!(target.display_url(), "https://new:8081");
        assert_eq!(
            target.auth,
            crate::registry::external::ExternalAuth::Bearer("t".to_owned())
        );
        assert_eq!(target.deadline, std::time::Duration::from_secs(30));
        assert_eq!(
            config.source.registry().unwrap().auth,
            crate::registry::external::ExternalAuth::None
        );
    }

    #[test]
    fn a_target_flag_without_its_url_or_beside_data_is_refused() {
        let args = [
            "schemaops",
            "import",
            "--from",
            "http://old:8081",
            "--to-registry-token",
            "t",
        ];
        let Command::Import(args) = Cli::try_parse_from(args).unwrap().command else {
            panic!("expected import");
        };
        assert_eq!(
            args.into_config().unwrap_err(),
            "--to-registry-token needs --to-registry-url"
        );
        let both = [
            "schemaops",
            "import",
            "--from",
            "http://old:8081",
            "--to-registry-url",
            "http://new:8081",
            "--data",
            "d",
        ];
        assert!(Cli::try_parse_from(both).is_err());
    }

    #[test]
    fn import_without_from_is_refused() {
        assert!(Cli::try_parse_from(["schemaops", "import", "--data", "d"]).is_err());
    }

    #[test]
    fn import_from_kafka_reads_the_topic_without_writing_or_checking_it() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from(["schemaops", "import"].iter().chain(args)).map_err(|e| e.to_string())?;
            let Command::Import(args) = cli.command else {
                panic!("expected import");
            };
            args.into_config()
        };
        let config = parse(&["--from-kafka", "kafka://k-0:9092,k-1:9092/_schemas", "--data", "d"]).unwrap();
        let super::ImportSource::Kafka(topic) = config.source else {
            panic!("a Kafka source");
        };
        assert_eq!(
            (topic.bootstrap.as_str(), topic.topic.as_str()),
            ("k-0:9092,k-1:9092", "_schemas")
        );
        assert!(topic.read_only && topic.topic_policy.skip_validation && !topic.topic_policy.create);

        let error = parse(&["--from-kafka", "kafka://k-0:9092"]).unwrap_err();
        assert!(
            error.contains("--from-kafka") && error.contains("names no topic"),
            "{error}"
        );
        let error = parse(&["--from-kafka", "http://k-0:9092/_schemas"]).unwrap_err();
        assert!(error.contains("--from-kafka"), "{error}");
        let error = parse(&[
            "--from-kafka",
            "kafka://k-0:9092/s",
            "--to-registry-url",
            "http://new:8081",
        ])
        .unwrap_err();
        assert!(error.contains("--to-registry-url"), "{error}");
        assert!(parse(&["--from-kafka", "kafka://k-0:9092/s", "--from", "http://old:8081"]).is_err());
    }
}

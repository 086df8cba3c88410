//! The options of `import` and its checked configuration.

use std::path::PathBuf;

use clap::Args;

use super::{EngineArgs, RegistryConnectionArgs, StoreArgs};
use crate::compat::Checker;
use crate::registry::embedded::postgres::PostgresOptions;
use crate::registry::external::ExternalConfig;

/// Arguments of `schemaops import`.
#[derive(Debug, Args)]
#[command(mut_arg("registry_url", |arg| arg
    .long("from")
    .env("SCHEMAOPS_IMPORT_FROM")
    .required(true)
    .help("Base URL of the Confluent-compatible registry to copy, e.g. `https://registry:8081`")))]
pub struct ImportArgs {
    /// Folder of the embedded registry to copy into (created when missing).
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// A PostgreSQL database to copy into instead of SQLite under `--data`.
    #[command(flatten)]
    pub store: StoreArgs,

    /// The registry to copy from (`--from`) and how to connect to it.
    #[command(flatten)]
    pub source: RegistryConnectionArgs,

    /// Engine options of the embedded registry.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// What `schemaops import` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// The registry to copy from.
    pub source: ExternalConfig,
    /// The SQLite file to copy into.
    pub database: PathBuf,
    /// The PostgreSQL database used instead of the SQLite file, when given.
    pub postgres: Option<PostgresOptions>,
    /// The engine of the embedded registry.
    pub checker: Checker,
}

impl ImportArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<ImportConfig, String> {
        let source = self
            .source
            .into_config()
            .map_err(|message| message.replace("--registry-url", "--from"))?
            .ok_or_else(|| "--from is required".to_owned())?;
        Ok(ImportConfig {
            source,
            database: self.data.join("registry.db"),
            postgres: self.store.into_options()?,
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
        assert_eq!(config.source.display_url(), "http://registry:8081");
        assert_eq!(config.database, std::path::Path::new("d").join("registry.db"));
    }

    #[test]
    fn import_without_from_is_refused() {
        assert!(Cli::try_parse_from(["schemaops", "import", "--data", "d"]).is_err());
    }
}

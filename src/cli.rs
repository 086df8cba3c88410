//! The command line: clap types, then the checked, typed configuration each
//! command runs with. Nothing here runs a command.

use clap::{Args, Parser, Subcommand};

use crate::compat::json::JsonPolicy;
use crate::compat::{Checker, Limits};

mod access;
mod compat;
mod connection;
mod export;
mod import;
mod kafka;
mod local;
mod operator;
mod registry;
#[cfg(test)]
mod tests;
pub use access::ApiAccessArgs;
pub use compat::{CompatArgs, CompatConfig, CompatJob, OutputFormat};
pub use connection::{RegistryConnectionArgs, TargetRegistryArgs};
pub use export::{ExportArgs, ExportConfig, ExportSource};
pub use import::{ImportArgs, ImportConfig, ImportSource};
pub use kafka::{FromKafkaSecurityArgs, KafkaSecurity, StoreSecurityArgs};
pub use local::{ApplyArgs, ApplyConfig, CheckArgs, CheckConfig, CheckOutput, CheckSource, ObjectOutput};
pub use operator::{
    DEFAULT_WEBHOOK_NAMESPACE, LeaderArgs, OperatorArgs, OperatorConfig, WEBHOOK_SERVICE, WebhookArgs,
    WebhookCertificate, WebhookConfig,
};
pub use registry::{CheckBudgetArgs, LogFormat, LoggingArgs, RegistryArgs, RegistryConfig, StoreArgs};

/// Kafka schemas as Kubernetes resources, checked for compatibility before they are registered.
#[derive(Debug, Parser)]
#[command(name = "schemaops", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands. Each one's arguments are built only when it runs
/// (`defer`), so a command starts without building the others' flags.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// `schemaops apply`: [`local::APPLY_ABOUT`].
    #[command(about = local::APPLY_ABOUT, long_about = local::APPLY_LONG_ABOUT)]
    Apply(ApplyArgs),
    /// `schemaops check`: [`local::CHECK_ABOUT`].
    #[command(about = local::CHECK_ABOUT, long_about = local::CHECK_LONG_ABOUT)]
    Check(CheckArgs),
    /// `schemaops compat`: [`compat::COMPAT_ABOUT`].
    #[command(about = compat::COMPAT_ABOUT, long_about = compat::COMPAT_LONG_ABOUT)]
    Compat(CompatArgs),
    /// `schemaops registry`: [`registry::REGISTRY_ABOUT`].
    #[command(about = registry::REGISTRY_ABOUT, long_about = None)]
    Registry(RegistryArgs),
    /// `schemaops operator`: [`operator::OPERATOR_ABOUT`].
    #[command(about = operator::OPERATOR_ABOUT, long_about = None)]
    Operator(Box<OperatorArgs>),
    /// `schemaops export`: [`export::EXPORT_ABOUT`].
    #[command(about = export::EXPORT_ABOUT, long_about = None)]
    Export(Box<ExportArgs>),
    /// `schemaops import`: [`import::IMPORT_ABOUT`].
    #[command(about = import::IMPORT_ABOUT, long_about = None)]
    Import(Box<ImportArgs>),
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

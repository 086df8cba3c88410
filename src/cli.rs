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

//! The options of `apply` and `check`, the two commands that work without a
//! cluster, and their checked configurations.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{EngineArgs, RegistryConnectionArgs};
use crate::compat::Checker;
use crate::local::manifests::Strictness;
use crate::registry::external::ExternalConfig;

/// Arguments of `schemaops apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Manifest files or folders (folders are read recursively, files in name
    /// order), or `-` for a stream on standard input (`kustomize build DIR | …`).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Unknown fields in Schema, SubjectConfig and SchemaPolicy documents are
    /// warnings instead of errors (for manifests written before they were
    /// checked); wrong types and values stay errors.
    #[arg(long)]
    pub lenient: bool,

    /// Folder for the registry and the applied objects (created when missing);
    /// with `--registry-url`, for the applied objects only.
    #[arg(long, env = "SCHEMAOPS_DATA", default_value = ".schemaops")]
    pub data: PathBuf,

    /// How to print the resulting objects.
    #[arg(short = 'o', long, value_enum, default_value_t = ObjectOutput::Table)]
    pub output: ObjectOutput,

    /// SchemaPolicy files or folders to judge with, besides the stored ones (repeatable; not stored).
    #[arg(long = "policy", value_name = "PATH", env = "SCHEMAOPS_POLICY")]
    pub policies: Vec<PathBuf>,

    /// A running registry to apply to instead of the embedded one under `--data`.
    #[command(flatten)]
    pub registry: RegistryConnectionArgs,

    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// How `apply` prints objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObjectOutput {
    /// One row per object, then the explanation of each rejection.
    Table,
    /// Each object as a YAML document, as `kubectl get -o yaml` shows it.
    Yaml,
    /// A `List` of the objects as JSON.
    Json,
}

/// What `schemaops apply` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct ApplyConfig {
    /// Manifest files or folders.
    pub paths: Vec<PathBuf>,
    /// The data folder.
    pub data: PathBuf,
    /// The registry to apply to; `None` for the embedded one in the data folder.
    pub registry: Option<ExternalConfig>,
    /// How to print.
    pub output: ObjectOutput,
    /// The `--policy` paths.
    pub policies: Vec<PathBuf>,
    /// The engine.
    pub checker: Checker,
    /// How unknown fields in manifests are taken.
    pub strictness: Strictness,
}

impl ApplyArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<ApplyConfig, String> {
        Ok(ApplyConfig {
            checker: self.engine.checker()?,
            registry: self.registry.into_config()?,
            paths: self.paths,
            data: self.data,
            output: self.output,
            policies: self.policies,
            strictness: strictness(self.lenient),
        })
    }
}

/// Arguments of `schemaops check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Manifest files or folders (folders are read recursively, files in name
    /// order), or `-` for a stream on standard input (`kustomize build DIR | …`).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Unknown fields in Schema, SubjectConfig and SchemaPolicy documents are
    /// warnings instead of errors (for manifests written before they were
    /// checked); wrong types and values stay errors.
    #[arg(long)]
    pub lenient: bool,

    /// Data folder of `apply` to check against (only read: a scratch copy is
    /// used). Without it, the manifests are checked against an empty registry.
    #[arg(long, env = "SCHEMAOPS_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// How to print the result.
    #[arg(short = 'o', long, value_enum, default_value_t = CheckOutput::Table)]
    pub output: CheckOutput,

    /// SchemaPolicy files or folders to judge with, besides those stored under `--data` (repeatable).
    #[arg(long = "policy", value_name = "PATH", env = "SCHEMAOPS_POLICY")]
    pub policies: Vec<PathBuf>,

    /// A registry to check against instead (only read: its subjects are copied into a scratch registry).
    #[command(flatten)]
    pub registry: RegistryConnectionArgs,

    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// How `check` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckOutput {
    /// One row per object, then the explanation of each rejection.
    Table,
    /// One JSON document: every object with its outcome and incompatibilities.
    Json,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`) annotating the manifests.
    Github,
}

/// The registry `check` starts its scratch copy from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckSource {
    /// An empty registry and no objects.
    Empty,
    /// A copy of an `apply` data folder (registry and objects).
    Data(PathBuf),
    /// The subjects the manifests name (and those they refer to), copied from a registry.
    Registry(Box<ExternalConfig>),
}

/// What `schemaops check` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// Manifest files or folders.
    pub paths: Vec<PathBuf>,
    /// Where the scratch registry comes from.
    pub source: CheckSource,
    /// How to print.
    pub output: CheckOutput,
    /// The `--policy` paths.
    pub policies: Vec<PathBuf>,
    /// The engine.
    pub checker: Checker,
    /// How unknown fields in manifests are taken.
    pub strictness: Strictness,
}

impl CheckArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<CheckConfig, String> {
        let registry = self.registry.into_config()?;
        let source = match (self.data, registry) {
            (Some(_), Some(_)) => return Err("give --data or --registry-url, not both".to_owned()),
            (Some(data), None) if !data.is_dir() => {
                return Err(format!("--data {} is not a folder", data.display()));
            }
            (Some(data), None) => CheckSource::Data(data),
            (None, Some(registry)) => CheckSource::Registry(Box::new(registry)),
            (None, None) => CheckSource::Empty,
        };
        Ok(CheckConfig {
            checker: self.engine.checker()?,
            paths: self.paths,
            source,
            output: self.output,
            policies: self.policies,
            strictness: strictness(self.lenient),
        })
    }
}

/// `--lenient` as a [`Strictness`].
fn strictness(lenient: bool) -> Strictness {
    if lenient {
        Strictness::Lenient
    } else {
        Strictness::Strict
    }
}

//! The options of `apply` and `check`, the two commands that work without a
//! cluster, and their checked configurations.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{EngineArgs, RegistryConnectionArgs};
use crate::compat::Checker;
use crate::local::manifests::Strictness;
use crate::local::policies::NamespaceLabelsArg;
use crate::registry::external::ExternalConfig;

/// What `schemaops apply` does, in one line (the list of commands and `-h`).
pub const APPLY_ABOUT: &str = "Apply Schema and SubjectConfig manifests to the embedded registry on disk (or to a running \
     registry with `--registry-url`), without a cluster";

/// What `schemaops apply` does, in full (`--help`).
pub const APPLY_LONG_ABOUT: &str = "Apply Schema and SubjectConfig manifests to the embedded registry on disk (or to a running \
     registry with `--registry-url`), without a cluster.\n\n\
     Each compatible schema is registered; each incompatible one is left out and its status \
     says why. Objects are kept in the data folder between runs, so a later run is an edit. \
     With `--registry-url` the schemas and levels go to that Confluent-compatible registry \
     (checked to answer before anything is applied) and the data folder keeps only the objects. \
     Exit status: 0 all accepted, 1 some rejected, 2 error.";

/// Arguments of `schemaops apply`.
#[derive(Debug, Args)]
#[command(about = APPLY_ABOUT, long_about = APPLY_LONG_ABOUT)]
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

    /// SchemaPolicy files or folders to judge with, besides the stored ones (repeatable; not
    /// stored). Namespace documents there give the namespaces' labels.
    #[arg(long = "policy", value_name = "PATH", env = "SCHEMAOPS_POLICY")]
    pub policies: Vec<PathBuf>,

    /// The namespaces' labels that policies select on.
    #[command(flatten)]
    pub namespaces: NamespaceContextArgs,

    /// A local file holding the credentials of the registry connections (SchemaRegistry and
    /// ClusterSchemaRegistry manifests) that objects name in `spec.registryRef`: a YAML mapping
    /// of `SchemaRegistry/NAMESPACE/NAME` or `ClusterSchemaRegistry/NAME` to `password` or
    /// `token` (and `caFile`, `clientCertFile`, `clientKeyFile`). The Secrets the manifests name
    /// are never read.
    #[arg(long, env = "SCHEMAOPS_REGISTRY_CREDENTIALS", value_name = "FILE")]
    pub registry_credentials: Option<PathBuf>,

    /// A running registry to apply to instead of the embedded one under `--data`.
    #[command(flatten)]
    pub registry: RegistryConnectionArgs,

    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The cluster context policies need, given without a cluster (`apply` and `check`).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Policy context")]
pub struct NamespaceContextArgs {
    /// A namespace's labels, as the cluster has them, for policies that select namespaces by
    /// label: `team-a:env=prod,tier=gold` (repeatable). Namespace manifests among the manifests
    /// or in a `--policy` file do the same (`kubectl get namespaces -o yaml > namespaces.yaml`).
    #[arg(long = "namespace-labels", value_name = "NAMESPACE:KEY=VALUE,…")]
    pub namespace_labels: Vec<NamespaceLabelsArg>,

    /// Make it an error (exit 2, nothing applied) when a policy selects namespaces by label and
    /// the labels of a namespace whose objects are judged are unknown; by default a warning.
    #[arg(long)]
    pub require_namespace_labels: bool,
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
    /// The credentials file of the registry connections.
    pub registry_credentials: Option<PathBuf>,
    /// How to print.
    pub output: ObjectOutput,
    /// The `--policy` paths.
    pub policies: Vec<PathBuf>,
    /// The namespaces' labels given on the command line, and how strict to be about the others.
    pub namespaces: NamespaceContextArgs,
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
            registry_credentials: self.registry_credentials,
            paths: self.paths,
            data: self.data,
            output: self.output,
            policies: self.policies,
            namespaces: self.namespaces,
            strictness: strictness(self.lenient),
        })
    }
}

/// What `schemaops check` does, in one line (the list of commands and `-h`).
pub const CHECK_ABOUT: &str = "Say what `apply` would do with Schema and SubjectConfig manifests, without writing \
     anything";

/// What `schemaops check` does, in full (`--help`).
pub const CHECK_LONG_ABOUT: &str = "Say what `apply` would do with Schema and SubjectConfig manifests, without writing \
     anything.\n\n\
     The manifests are applied to a scratch copy of the data folder (or to an empty registry \
     without `--data`); each object is reported as unchanged, would register (as version N), \
     would change settings, or would be rejected, with every incompatibility. Exit status: 0 \
     all would be accepted, 1 some would be rejected, 2 error (an unreadable or invalid \
     manifest, or an object that could not be checked).";

/// Arguments of `schemaops check`.
#[derive(Debug, Args)]
#[command(about = CHECK_ABOUT, long_about = CHECK_LONG_ABOUT)]
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

    /// Data folder of `apply` to check against (only read: a scratch copy is used). With
    /// `--registry-url` too, the objects `apply --registry-url` kept there (drift, reverts and
    /// claims are judged as `apply` judges them) and that registry's subjects. Without either,
    /// the manifests are checked against an empty registry.
    #[arg(long, env = "SCHEMAOPS_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// How to print the result.
    #[arg(short = 'o', long, value_enum, default_value_t = CheckOutput::Table)]
    pub output: CheckOutput,

    /// SchemaPolicy files or folders to judge with, besides those stored under `--data`
    /// (repeatable). Namespace documents there give the namespaces' labels.
    #[arg(long = "policy", value_name = "PATH", env = "SCHEMAOPS_POLICY")]
    pub policies: Vec<PathBuf>,

    /// The namespaces' labels that policies select on.
    #[command(flatten)]
    pub namespaces: NamespaceContextArgs,

    /// A local file holding the credentials of the registry connections (SchemaRegistry and
    /// ClusterSchemaRegistry manifests) that objects name in `spec.registryRef`: a YAML mapping
    /// of `SchemaRegistry/NAMESPACE/NAME` or `ClusterSchemaRegistry/NAME` to `password` or
    /// `token` (and `caFile`, `clientCertFile`, `clientKeyFile`). The Secrets the manifests name
    /// are never read.
    #[arg(long, env = "SCHEMAOPS_REGISTRY_CREDENTIALS", value_name = "FILE")]
    pub registry_credentials: Option<PathBuf>,

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
    /// The subjects the manifests name (and those they refer to), copied from a registry, and
    /// the objects of an `apply --registry-url` data folder when one is given.
    Registry {
        /// The registry.
        registry: Box<ExternalConfig>,
        /// The data folder whose objects (`objects.json`) are used.
        objects: Option<PathBuf>,
    },
}

impl CheckSource {
    /// What a check runs against, in words: `an empty registry`, `a copy of DIR`, or `the
    /// registry at URL (with the objects in DIR)`.
    pub fn describe(&self) -> String {
        match self {
            CheckSource::Empty => "an empty registry (no --data, no --registry-url)".to_owned(),
            CheckSource::Data(data) => format!("a copy of {}", data.display()),
            CheckSource::Registry { registry, objects } => {
                let objects = objects
                    .as_ref()
                    .map_or_else(String::new, |data| format!(" with the objects in {}", data.display()));
                format!("the registry at {}{objects}", registry.display_url())
            }
        }
    }
}

/// What `schemaops check` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// Manifest files or folders.
    pub paths: Vec<PathBuf>,
    /// Where the scratch registry comes from.
    pub source: CheckSource,
    /// The credentials file of the registry connections.
    pub registry_credentials: Option<PathBuf>,
    /// How to print.
    pub output: CheckOutput,
    /// The `--policy` paths.
    pub policies: Vec<PathBuf>,
    /// The namespaces' labels given on the command line, and how strict to be about the others.
    pub namespaces: NamespaceContextArgs,
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
        if let Some(data) = self.data.as_ref().filter(|data| !data.is_dir()) {
            return Err(format!("--data {} is not a folder", data.display()));
        }
        let source = match (self.data, registry) {
            (Some(data), None) => CheckSource::Data(data),
            (objects, Some(registry)) => CheckSource::Registry {
                registry: Box::new(registry),
                objects,
            },
            (None, None) => CheckSource::Empty,
        };
        Ok(CheckConfig {
            checker: self.engine.checker()?,
            paths: self.paths,
            source,
            registry_credentials: self.registry_credentials,
            output: self.output,
            policies: self.policies,
            namespaces: self.namespaces,
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

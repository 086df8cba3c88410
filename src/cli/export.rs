//! The options of `schemaops export` and its checked configuration.

use std::path::PathBuf;

use clap::Args;

use super::{EngineArgs, RegistryConnectionArgs};
use crate::compat::Checker;
use crate::crd::{RegistryKind, RegistryRef};
use crate::export::Selection;
use crate::policy::pattern::Pattern;
use crate::registry::external::ExternalConfig;

/// The data folder read when neither `--data` nor `--registry-url` is given.
const DEFAULT_DATA: &str = ".schemaops";

/// What `schemaops export` does, as its help says it.
pub const EXPORT_ABOUT: &str = "Write a registry's subjects as Schema and SubjectConfig manifests, one file per subject, \
     plus `index.md`";

/// Arguments of `schemaops export`.
#[derive(Debug, Args)]
#[command(about = EXPORT_ABOUT, long_about = None)]
pub struct ExportArgs {
    /// Folder to write the manifests and `index.md` into. It must be missing,
    /// empty, or hold only an earlier export (which is then replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Data folder of the embedded registry to export (default `./.schemaops`); only read.
    #[arg(long, env = "SCHEMAOPS_DATA", value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Export only the subjects matching this pattern (`*` any run, `?` one
    /// character; repeatable). Subjects they refer to are exported too.
    #[arg(long = "subjects", value_name = "GLOB")]
    pub subjects: Vec<String>,

    /// The namespace written into the manifests.
    #[arg(long, default_value = "default", value_name = "NS")]
    pub namespace: String,

    /// Every live version of each subject, oldest first, not only the latest.
    #[arg(long)]
    pub history: bool,

    /// Bind every object written to this registry connection: `spec.registryRef` set to
    /// `SchemaRegistry/NAME` (in `--namespace`) or `ClusterSchemaRegistry/NAME`. Without it the
    /// objects use the install's default registry.
    #[arg(long, value_name = "KIND/NAME")]
    pub registry_ref: Option<String>,

    /// A running registry to export instead of the embedded one.
    #[command(flatten)]
    pub registry: RegistryConnectionArgs,

    /// Engine options (used to open the embedded registry).
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Where `export` reads from.
#[derive(Debug, Clone)]
pub enum ExportSource {
    /// The embedded registry in this data folder.
    Data(PathBuf),
    /// A running Confluent-compatible registry.
    Registry(Box<ExternalConfig>),
}

/// What `schemaops export` will do, checked and typed.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// Where the registry is.
    pub source: ExportSource,
    /// The output folder.
    pub out: PathBuf,
    /// The subjects and versions to export.
    pub selection: Selection,
    /// The namespace of the manifests.
    pub namespace: String,
    /// The connection every object is bound to (`--registry-ref`).
    pub registry_ref: Option<RegistryRef>,
    /// The engine the embedded registry is opened with.
    pub checker: Checker,
}

impl ExportArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument that is wrong.
    pub fn into_config(self) -> Result<ExportConfig, String> {
        let registry = self.registry.into_config()?;
        let source = match (self.data, registry) {
            (Some(_), Some(_)) => return Err("give --data or --registry-url, not both".to_owned()),
            (None, Some(registry)) => ExportSource::Registry(Box::new(registry)),
            (data, None) => {
                let data = data.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA));
                if !data.join("registry.db").is_file() {
                    return Err(format!("--data {} holds no registry (registry.db)", data.display()));
                }
                ExportSource::Data(data)
            }
        };
        if !is_dns_label(&self.namespace) {
            return Err(format!(
                "--namespace `{}` is not a valid namespace (lowercase letters, digits and `-`, at most 63)",
                self.namespace
            ));
        }
        let registry_ref = self.registry_ref.as_deref().map(parse_registry_ref).transpose()?;
        let subjects = self
            .subjects
            .iter()
            .map(|glob| Pattern::new(glob).map_err(|error| format!("--subjects `{glob}`: {error}")))
            .collect::<Result<_, _>>()?;
        Ok(ExportConfig {
            checker: self.engine.checker()?,
            source,
            out: self.out,
            selection: Selection {
                subjects,
                history: self.history,
            },
            namespace: self.namespace,
            registry_ref,
        })
    }
}

/// `--registry-ref KIND/NAME` as a [`RegistryRef`].
fn parse_registry_ref(text: &str) -> Result<RegistryRef, String> {
    let wrong = || format!("--registry-ref `{text}` is not SchemaRegistry/NAME or ClusterSchemaRegistry/NAME");
    let (kind, name) = text.split_once('/').ok_or_else(wrong)?;
    let kind = match kind {
        "SchemaRegistry" => RegistryKind::SchemaRegistry,
        "ClusterSchemaRegistry" => RegistryKind::ClusterSchemaRegistry,
        _ => return Err(wrong()),
    };
    // A connection's name is a DNS-1123 subdomain: labels of a DNS label's characters, joined by dots.
    let valid = name.len() <= 253 && !name.is_empty() && name.split('.').all(is_dns_label);
    if !valid {
        return Err(wrong());
    }
    Ok(RegistryRef {
        kind,
        name: name.to_owned(),
    })
}

/// Whether `name` is a DNS-1123 label, as namespace names are.
fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

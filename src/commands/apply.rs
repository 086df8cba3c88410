//! `schemaops apply`: manifests into the embedded registry on disk (or a
//! running registry named by `--registry-url`), then the resulting objects
//! printed as a table, YAML or JSON.

use std::io::Write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::Verdict;
use crate::cli::{ApplyConfig, ObjectOutput};
use crate::crd::conditions::{ConditionType, Reason, find_condition};
use crate::local::connections::{Binding, BindingTarget, Credentials};
use crate::local::run::{Applied, ApplyError, BoundRegistry, Interruption, Registries};
use crate::registry::Registry;
use crate::registry::external::ExternalRegistry;

/// Why `apply` stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The registry could not be opened.
    #[error(transparent)]
    Registry(#[from] super::registry::Error),
    /// The registry client could not be configured.
    #[error("failed to configure the registry client")]
    ExternalRegistry(#[source] crate::registry::external::ConfigError),
    /// The registry named by `--registry-url` (or by a connection) did not
    /// answer, or refused the credentials, before anything was applied.
    #[error("nothing was applied to {url}")]
    Unreachable {
        /// The registry's base URL.
        url: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// Another apply is using the data folder, or its lock could not be taken.
    #[error(transparent)]
    Lock(#[from] crate::local::lock::LockError),
    /// The manifests or the stored objects could not be used.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The output could not be written.
    #[error("failed to write the output")]
    Write(#[source] std::io::Error),
    /// An object could not be rendered.
    #[error("failed to render the objects as {format}: {message}")]
    Render {
        /// YAML or JSON.
        format: &'static str,
        /// Why.
        message: String,
    },
}

/// Applies the manifests and prints the objects.
///
/// # Errors
/// [`Error`] when the registry, a manifest or the objects file cannot be used.
/// When the registry fails mid-run, the run stops: the objects applied so far
/// are printed, then (on standard error) the edit left pending and every
/// edit not tried, and the verdict is [`Verdict::Failed`].
pub async fn run(config: &ApplyConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    let registry = open(config).await?;
    // After opening, which creates the folder only once the registry answered.
    let _lock = crate::local::lock::ApplyLock::acquire(&config.data)?;
    let now = Time(Timestamp::now());
    let policies = crate::local::policies::load_with(
        &config.policies,
        &config.namespaces.namespace_labels,
        config.namespaces.require_namespace_labels,
    )
    .map_err(ApplyError::from)?;
    let loaded = super::read_manifests("apply", &config.paths, config.strictness).map_err(ApplyError::from)?;
    let skipped = crate::local::manifests::skip_summary(&loaded.skipped);
    let credentials = Credentials::load(config.registry_credentials.as_deref()).map_err(ApplyError::from)?;
    let bindings = crate::local::connections::plan(&config.data, &loaded.manifests, &policies, &credentials, &now)
        .map_err(ApplyError::from)?;
    let (data_registry, externals) = open_bound(config, &bindings).await?;
    let embedded = data_registry.as_deref().unwrap_or(registry.as_ref());
    let mut registries = Registries::single(registry.as_ref());
    for (binding, external) in bindings.iter().zip(&externals) {
        let registry: &dyn Registry = external.as_deref().unwrap_or(embedded);
        registries.bound.insert(
            binding.scope.clone(),
            BoundRegistry {
                registry,
                read_only: binding.read_only,
            },
        );
    }
    let outcome = crate::local::run::apply_loaded(
        loaded.manifests,
        &policies,
        &config.data,
        &registries,
        &config.checker,
        &now,
    )
    .await?;
    if !outcome.unlabelled.is_empty() {
        eprintln!(
            "warning: {}",
            crate::local::run::unlabelled_message(&outcome.unlabelled)
        );
    }
    let applied = outcome.applied;
    match config.output {
        ObjectOutput::Table => {
            print_table(&applied, out).map_err(Error::Write)?;
            super::report_skipped(skipped.as_deref(), Some(out)).map_err(Error::Write)?;
        }
        ObjectOutput::Yaml => {
            for object in &applied {
                let text = match object {
                    Applied::Schema(schema) => serde_saphyr::to_string(schema),
                    Applied::SubjectConfig(config) => serde_saphyr::to_string(config),
                }
                .map_err(|error| Error::Render {
                    format: "YAML",
                    message: error.to_string(),
                })?;
                write!(out, "---\n{text}").map_err(Error::Write)?;
            }
        }
        ObjectOutput::Json => {
            let items: Vec<serde_json::Value> = applied
                .iter()
                .map(|object| match object {
                    Applied::Schema(schema) => serde_json::to_value(schema),
                    Applied::SubjectConfig(config) => serde_json::to_value(config),
                })
                .collect::<Result<_, _>>()
                .map_err(|error| Error::Render {
                    format: "JSON",
                    message: error.to_string(),
                })?;
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
            let text = serde_json::to_string_pretty(&list).map_err(|error| Error::Render {
                format: "JSON",
                message: error.to_string(),
            })?;
            writeln!(out, "{text}").map_err(Error::Write)?;
        }
    }
    if config.output != ObjectOutput::Table {
        super::report_skipped(skipped.as_deref(), None).map_err(Error::Write)?;
    }
    if let Some(interruption) = &outcome.interrupted {
        report_interruption(interruption);
        return Ok(Verdict::Failed);
    }
    let all_ready = applied
        .iter()
        .all(|object| ready(object).is_some_and(|c| c.status == "True"));
    Ok(if all_ready {
        Verdict::Compatible
    } else {
        Verdict::Incompatible
    })
}

/// The embedded registry in the data folder, or the external one after it
/// answered: a registry that cannot be reached fails the run here, before
/// any object is stored (reconciling would only record it in each status).
async fn open(config: &ApplyConfig) -> Result<Box<dyn Registry>, Error> {
    let Some(external) = &config.registry else {
        let database = config.data.join("registry.db");
        return Ok(Box::new(
            super::registry::open_registry(&database, None, config.checker).await?,
        ));
    };
    let client = ExternalRegistry::new(external, config.checker).map_err(Error::ExternalRegistry)?;
    client.capabilities().await.map_err(|source| Error::Unreachable {
        url: external.display_url(),
        source,
    })?;
    std::fs::create_dir_all(&config.data).map_err(|source| super::registry::Error::CreateDataDir {
        path: config.data.clone(),
        source,
    })?;
    Ok(Box::new(client))
}

/// The registries the connections of `bindings` need besides the default
/// one: the data folder's embedded registry when some connection says
/// `embedded: {}` and the default is `--registry-url`'s, and each external
/// connection's client (in binding order; `None` for embedded ones). An
/// external registry must answer before anything is applied.
async fn open_bound(
    config: &ApplyConfig,
    bindings: &[Binding],
) -> Result<(Option<Box<dyn Registry>>, Vec<Option<Box<dyn Registry>>>), Error> {
    let embedded_needed = bindings.iter().any(|binding| binding.target == BindingTarget::Embedded);
    let data_registry: Option<Box<dyn Registry>> = if embedded_needed && config.registry.is_some() {
        let database = config.data.join("registry.db");
        Some(Box::new(
            super::registry::open_registry(&database, None, config.checker).await?,
        ))
    } else {
        None
    };
    let mut externals = Vec::with_capacity(bindings.len());
    for binding in bindings {
        externals.push(match &binding.target {
            BindingTarget::Embedded => None,
            BindingTarget::External(external) => {
                let client = ExternalRegistry::new(external, config.checker).map_err(Error::ExternalRegistry)?;
                client.capabilities().await.map_err(|source| Error::Unreachable {
                    url: format!("{} ({})", external.display_url(), binding.key),
                    source,
                })?;
                Some(Box::new(client) as Box<dyn Registry>)
            }
        });
    }
    Ok((data_registry, externals))
}

/// Tells on standard error where the run stopped and what it left undone.
fn report_interruption(interruption: &Interruption) {
    let mut text = format!(
        "schemaops apply: the registry failed, so the run stopped: {}\n  pending: {}\n",
        interruption.error, interruption.pending
    );
    if interruption.not_tried.is_empty() {
        text.push_str("  every other edit of this run was applied\n");
    } else {
        text.push_str(&format!("  not tried ({}):\n", interruption.not_tried.len()));
        for edit in &interruption.not_tried {
            text.push_str(&format!("    {edit}\n"));
        }
    }
    text.push_str("  Run apply again once the registry is available: it continues from the pending edit.\n");
    eprint!("{text}");
}

fn ready(object: &Applied) -> Option<&Condition> {
    let conditions = match object {
        Applied::Schema(schema) => &schema.status.as_ref()?.conditions,
        Applied::SubjectConfig(config) => &config.status.as_ref()?.conditions,
    };
    find_condition(conditions, ConditionType::Ready)
}

/// One row per object, then each one that is not Ready with its explanation.
fn print_table(applied: &[Applied], out: &mut dyn Write) -> std::io::Result<()> {
    let mut rows = vec![[
        "KIND".to_owned(),
        "NAMESPACE".to_owned(),
        "NAME".to_owned(),
        "SUBJECT".to_owned(),
        "VERSION".to_owned(),
        "ID".to_owned(),
        "READY".to_owned(),
        "REASON".to_owned(),
    ]];
    let dash = || "-".to_owned();
    for object in applied {
        let (kind, metadata, subject, version, id) = match object {
            Applied::Schema(schema) => {
                let status = schema.status.as_ref();
                (
                    "Schema",
                    &schema.metadata,
                    schema.spec.subject.clone(),
                    status.and_then(|s| s.version).map_or_else(dash, |v| v.to_string()),
                    status.and_then(|s| s.id).map_or_else(dash, |v| v.to_string()),
                )
            }
            Applied::SubjectConfig(config) => (
                "SubjectConfig",
                &config.metadata,
                config.spec.subject.clone(),
                dash(),
                dash(),
            ),
        };
        let ready = ready(object);
        let reason = match drift(object) {
            Some(drifted) if ready.is_some_and(|c| c.status == "True") => drifted.reason.clone(),
            _ => ready.map_or_else(dash, |c| c.reason.clone()),
        };
        rows.push([
            kind.to_owned(),
            metadata.namespace.clone().unwrap_or_default(),
            metadata.name.clone().unwrap_or_default(),
            subject,
            version,
            id,
            ready.map_or_else(|| "Unknown".to_owned(), |c| c.status.clone()),
            reason,
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    for object in applied {
        let Some(condition) = ready(object).filter(|c| c.status != "True") else {
            continue;
        };
        let (kind, metadata) = identity(object);
        writeln!(
            out,
            "\n{kind} {}/{} was not applied ({}):",
            metadata.namespace.as_deref().unwrap_or_default(),
            metadata.name.as_deref().unwrap_or_default(),
            condition.reason
        )?;
        for line in condition.message.lines() {
            writeln!(out, "  {line}")?;
        }
    }
    for object in applied {
        let Some(warning) = policy_warning(object) else {
            continue;
        };
        let (kind, metadata) = identity(object);
        writeln!(
            out,
            "\n{kind} {}/{} has a policy warning:\n  {}",
            metadata.namespace.as_deref().unwrap_or_default(),
            metadata.name.as_deref().unwrap_or_default(),
            warning.message
        )?;
    }
    for object in applied {
        let Some(reverted) = ready(object).filter(|c| c.status == "True" && c.reason == Reason::Reverted.as_str())
        else {
            continue;
        };
        let (kind, metadata) = identity(object);
        writeln!(
            out,
            "\n{kind} {}/{} is a revert:\n  {}",
            metadata.namespace.as_deref().unwrap_or_default(),
            metadata.name.as_deref().unwrap_or_default(),
            reverted.message
        )?;
    }
    for object in applied {
        let (Applied::Schema(schema), Some(drifted)) = (object, drift(object)) else {
            continue;
        };
        writeln!(
            out,
            "\nSchema {}/{} has drifted ({}):\n  {}",
            schema.metadata.namespace.as_deref().unwrap_or_default(),
            schema.metadata.name.as_deref().unwrap_or_default(),
            drifted.reason,
            drifted.message
        )?;
    }
    Ok(())
}

/// An object's `PolicyWarning=True` condition: a Warn policy let it
/// through. Reported in the table; it does not change the exit status.
fn policy_warning(object: &Applied) -> Option<&Condition> {
    let conditions = match object {
        Applied::Schema(schema) => &schema.status.as_ref()?.conditions,
        Applied::SubjectConfig(config) => &config.status.as_ref()?.conditions,
    };
    find_condition(conditions, ConditionType::PolicyWarning).filter(|condition| condition.status == "True")
}

/// A Schema's `Drifted=True` condition: the subject moved on outside
/// schemaops. Reported in the table; it does not change the exit status.
fn drift(object: &Applied) -> Option<&Condition> {
    let Applied::Schema(schema) = object else { return None };
    schema.status.as_ref()?.drift()
}

/// The kind and metadata of an applied object, for the notes under the table.
fn identity(object: &Applied) -> (&'static str, &kube::api::ObjectMeta) {
    match object {
        Applied::Schema(schema) => ("Schema", &schema.metadata),
        Applied::SubjectConfig(config) => ("SubjectConfig", &config.metadata),
    }
}

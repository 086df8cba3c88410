//! `schemaops check`: the manifests applied to a scratch registry, and what
//! that would do printed as a table, JSON or GitHub Actions annotations.
//! Nothing is written to the data folder.

use std::io::Write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::Verdict;
use crate::cli::{CheckConfig, CheckOutput, CheckSource};
use crate::connections::RegistryScope;
use crate::local::check::{self, CheckError};
use crate::local::connections::{self, BindingTarget, ConnectionError, Credentials};
use crate::local::manifests::{self, ManifestError};
use crate::local::policies::{self, PolicyError};
use crate::local::run::{BoundRegistry, Registries};
use crate::local::scratch::{Scratch, ScratchError};
use crate::registry::external::ExternalRegistry;
use crate::registry::{Registry, SubjectName};

/// Why `check` stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The manifests could not be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// A `--policy` path could not be used.
    #[error(transparent)]
    Policies(#[from] PolicyError),
    /// The registry connections could not be used.
    #[error(transparent)]
    Connections(#[from] ConnectionError),
    /// The scratch registry could not be made.
    #[error(transparent)]
    Scratch(#[from] ScratchError),
    /// The scratch run failed.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// The output could not be written.
    #[error("failed to write the output")]
    Write(#[source] std::io::Error),
    /// The registry client could not be configured.
    #[error("failed to configure the registry client")]
    ExternalRegistry(#[source] crate::registry::external::ConfigError),
}

/// The scratch registry and objects for `source`; `subjects` are the ones a
/// registry source must provide, and `contracts_used` says whether the
/// manifests carry data contracts (see [`Scratch::seeded`]).
///
/// # Errors
/// [`ScratchError`] when the copy cannot be made.
pub async fn scratch(
    source: &CheckSource,
    subjects: &[SubjectName],
    contracts_used: bool,
    checker: crate::compat::Checker,
) -> Result<Scratch, Error> {
    Ok(match source {
        CheckSource::Empty => Scratch::empty(checker).await?,
        // A file copy rather than `seed_scratch`: it keeps soft-deleted
        // versions, version counters and the objects' statuses exactly.
        CheckSource::Data(data) => Scratch::copy_of(data, checker).await?,
        CheckSource::Registry { registry, objects } => {
            let client = ExternalRegistry::new(registry, checker).map_err(Error::ExternalRegistry)?;
            let scratch = Scratch::seeded(&client, subjects, contracts_used, checker).await?;
            if let Some(data) = objects {
                scratch.take_objects_of(data)?;
            }
            scratch
        }
    })
}

/// Checks the manifests and prints the result.
///
/// # Errors
/// [`Error`] when a manifest is unreadable or refused, or the scratch fails.
pub async fn run(config: &CheckConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    let loaded = super::read_manifests("check", &config.paths, config.strictness)?;
    let policies = policies::load_with(
        &config.policies,
        &config.namespaces.namespace_labels,
        config.namespaces.require_namespace_labels,
    )?;
    let contracts_used = check::uses_contracts(&loaded.manifests);
    let scratch = scratch(
        &config.source,
        &check::subjects_of(&loaded.manifests, &RegistryScope::Default),
        contracts_used,
        config.checker,
    )
    .await?;
    let now = Time(Timestamp::now());
    let credentials = Credentials::load(config.registry_credentials.as_deref())?;
    let bindings = connections::plan(scratch.data(), &loaded.manifests, &policies, &credentials, &now)?;
    // Each connection's registry is a scratch too: embedded ones share the data folder's copy,
    // each external one is seeded from its registry with the subjects of its objects.
    let embedded_needed = bindings.iter().any(|binding| binding.target == BindingTarget::Embedded);
    let data_scratch = match &config.source {
        CheckSource::Registry { objects, .. } if embedded_needed => Some(match objects {
            Some(data) => Scratch::copy_of(data, config.checker).await?,
            None => Scratch::empty(config.checker).await?,
        }),
        _ => None,
    };
    let mut external_scratches = Vec::with_capacity(bindings.len());
    for binding in &bindings {
        external_scratches.push(match &binding.target {
            BindingTarget::Embedded => None,
            BindingTarget::External(external) => {
                let client = ExternalRegistry::new(external, config.checker).map_err(Error::ExternalRegistry)?;
                let subjects = check::subjects_of(&loaded.manifests, &binding.scope);
                Some(Scratch::seeded(&client, &subjects, contracts_used, config.checker).await?)
            }
        });
    }
    let default_view = scratch.view();
    let data_view = data_scratch.as_ref().map(Scratch::view);
    let external_views: Vec<_> = external_scratches
        .iter()
        .map(|scratch| scratch.as_ref().map(Scratch::view))
        .collect();
    let embedded: &dyn Registry = match &data_view {
        Some(view) => view,
        None => &default_view,
    };
    let mut registries = Registries::single(&default_view);
    for (binding, view) in bindings.iter().zip(&external_views) {
        let registry: &dyn Registry = match view {
            Some(view) => view,
            None => embedded,
        };
        registries.bound.insert(
            binding.scope.clone(),
            BoundRegistry {
                registry,
                read_only: binding.read_only,
            },
        );
    }
    let run = check::check(
        &loaded.manifests,
        &policies,
        scratch.data(),
        &registries,
        &config.checker,
        &now,
    )
    .await?;
    let checked = run.checked;
    if !run.unlabelled.is_empty() {
        let warning = crate::local::run::unlabelled_message(&run.unlabelled);
        eprintln!("warning: {warning}");
        if config.output == CheckOutput::Github {
            writeln!(
                out,
                "::warning title=schemaops check: namespace labels unknown::{}",
                check::escape_data(&warning)
            )
            .map_err(Error::Write)?;
        }
    }
    let mut against = config.source.describe();
    for binding in &bindings {
        against.push_str(&format!("; {}", binding.describe()));
    }
    let text = match config.output {
        CheckOutput::Table => format!(
            "{}schemaops check: checked against {against}\n",
            check::render_table(&checked)
        ),
        CheckOutput::Json => check::render_json(&checked, &against),
        CheckOutput::Github => format!(
            "{}::notice title=schemaops check::checked against {}\n",
            check::render_github(&checked),
            check::escape_data(&against)
        ),
    };
    out.write_all(text.as_bytes()).map_err(Error::Write)?;
    let skipped = manifests::skip_summary(&loaded.skipped);
    let table = config.output == CheckOutput::Table;
    super::report_skipped(skipped.as_deref(), table.then_some(out)).map_err(Error::Write)?;
    Ok(match check::verdict(&checked) {
        check::Verdict::Accepted => Verdict::Compatible,
        check::Verdict::Rejected => Verdict::Incompatible,
        check::Verdict::Undecided => Verdict::Failed,
    })
}

//! `schemaops check`: the manifests applied to a scratch registry, and what
//! that would do printed as a table, JSON or GitHub Actions annotations.
//! Nothing is written to the data folder.

use std::io::Write;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::Verdict;
use crate::cli::{CheckConfig, CheckOutput, CheckSource};
use crate::local::check::{self, CheckError};
use crate::local::manifests::{self, ManifestError};
use crate::local::policies::{self, PolicyError};
use crate::local::scratch::{Scratch, ScratchError};
use crate::registry::SubjectName;
use crate::registry::external::ExternalRegistry;

/// Why `check` stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The manifests could not be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// A `--policy` path could not be used.
    #[error(transparent)]
    Policies(#[from] PolicyError),
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
    let scratch = scratch(
        &config.source,
        &check::subjects_of(&loaded.manifests),
        check::uses_contracts(&loaded.manifests),
        config.checker,
    )
    .await?;
    let now = Time(Timestamp::now());
    let run = check::check(&loaded.manifests, &policies, &scratch, &config.checker, &now).await?;
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
    let against = config.source.describe();
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

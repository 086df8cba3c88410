//! `schemaops import`: a Confluent-compatible registry copied into the
//! embedded one, or into another registry with IMPORT mode
//! (`--to-registry-url`), with its IDs (see [`crate::import`]); progress on
//! standard error, the summary on standard output.

use std::io::Write;

use super::Verdict;
use crate::cli::ImportConfig;
use crate::import::{ImportError, import, read};
use crate::registry::Registry;
use crate::registry::external::ExternalRegistry;

/// How often progress is reported, in versions registered.
const PROGRESS_EVERY: usize = 500;

/// Why `import` could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The target registry could not be opened.
    #[error(transparent)]
    Registry(#[from] super::registry::Error),
    /// The source registry client could not be configured.
    #[error("failed to configure the source registry client")]
    Client(#[source] crate::registry::external::ConfigError),
    /// The source registry did not answer (nothing was written).
    #[error("nothing was imported from {url}")]
    Unreachable {
        /// The source's base URL.
        url: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// The target registry client could not be configured.
    #[error("failed to configure the target registry client")]
    TargetClient(#[source] crate::registry::external::ConfigError),
    /// The target registry did not answer (nothing was written).
    #[error("nothing was imported into {url}")]
    TargetUnreachable {
        /// The target's base URL.
        url: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// The copy failed.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The output could not be written.
    #[error("failed to write the output")]
    Write(#[source] std::io::Error),
}

/// Imports the source into the target and prints what was done.
///
/// # Errors
/// [`Error`] when a registry cannot be used; conflicts with the target and
/// contradictions in the source are printed, one a line, and give
/// [`Verdict::Failed`].
pub async fn run(config: &ImportConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    let source = ExternalRegistry::new(&config.source, config.checker).map_err(Error::Client)?;
    source.capabilities().await.map_err(|error| Error::Unreachable {
        url: config.source.display_url(),
        source: error,
    })?;
    // The whole source is read and checked before the target is opened.
    let held = match read::source(&source).await {
        Ok(held) => held,
        Err(error) if report_refusal(&error) => return Ok(Verdict::Failed),
        Err(error) => return Err(error.into()),
    };
    let target: Box<dyn Registry> = match &config.to_registry {
        Some(to) => {
            let target = ExternalRegistry::new(to, config.checker).map_err(Error::TargetClient)?;
            target.capabilities().await.map_err(|error| Error::TargetUnreachable {
                url: to.display_url(),
                source: error,
            })?;
            Box::new(target)
        }
        None => {
            let store = super::registry::ChosenStore {
                database: &config.database,
                postgres: config.postgres.as_ref(),
                kafka: config.kafka.as_ref(),
            };
            Box::new(super::registry::open_registry_on(store, config.checker).await?)
        }
    };
    let mut progress = |done: usize, total: usize| {
        if done.is_multiple_of(PROGRESS_EVERY) || done == total {
            eprintln!("schemaops import: {done}/{total} versions copied");
        }
    };
    let summary = match import(&held, target.as_ref(), &mut progress).await {
        Ok(summary) => summary,
        Err(error) if report_refusal(&error) => return Ok(Verdict::Failed),
        Err(error) => return Err(error.into()),
    };
    writeln!(
        out,
        "{} versions copied, {} already present, {} soft-deleted, {} levels and modes set{}",
        summary.copied,
        summary.present,
        summary.soft_deleted,
        summary.settings,
        if summary.copied + summary.soft_deleted + summary.settings == 0 {
            "; nothing changed"
        } else {
            ""
        }
    )
    .map_err(Error::Write)?;
    Ok(Verdict::Compatible)
}

/// Says on standard error why nothing was written when `error` is a
/// refusal (the target conflicts, or the source contradicts itself), one
/// line per problem; false for any other error.
fn report_refusal(error: &ImportError) -> bool {
    let (why, problems): (&str, Vec<String>) = match error {
        ImportError::Conflicts(conflicts) => (
            "the target conflicts with the source",
            conflicts.iter().map(ToString::to_string).collect(),
        ),
        ImportError::Contradictions(contradictions) => (
            "the source's answers contradict the questions or each other",
            contradictions.iter().map(ToString::to_string).collect(),
        ),
        _ => return false,
    };
    eprintln!("schemaops import: {why}; nothing was written:");
    for problem in problems {
        eprintln!("  {problem}");
    }
    true
}

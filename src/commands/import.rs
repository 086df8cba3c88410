//! `schemaops import`: a Confluent-compatible registry copied into the
//! embedded one, or into another registry with IMPORT mode
//! (`--to-registry-url`), with its IDs (see [`crate::import`]); progress on
//! standard error, the summary on standard output.
//!
//! With `--from-kafka`, a store topic in Confluent's record format is read
//! to its end (as the Kafka store reads it) and its state written into an
//! embedded store that holds nothing yet, in one batch: every ID, version,
//! soft delete, retired version number and setting as the topic has them,
//! including what REST cannot show (hard-deleted versions' numbers).

use std::io::Write;

use super::Verdict;
use crate::cli::{ImportConfig, ImportSource};
use crate::import::{ImportError, import, read};
use crate::registry::Registry;
use crate::registry::embedded::kafka::topic_store::KafkaOptions;
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
    /// The topic could not be read, or the target store not written.
    #[error("failed to copy the topic {topic}")]
    Topic {
        /// The topic.
        topic: String,
        /// Why.
        #[source]
        source: crate::registry::embedded::store::StoreError,
    },
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
    let source_config = match &config.source {
        ImportSource::Registry(source) => source,
        ImportSource::Kafka(topic) => return copy_topic(topic, config, out).await,
    };
    let source = ExternalRegistry::new(source_config, config.checker).map_err(Error::Client)?;
    source.capabilities().await.map_err(|error| Error::Unreachable {
        url: source_config.display_url(),
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
                leadership: None,
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

/// Copies the state of the store topic `topic` into the embedded store,
/// which must hold no schema and no subject.
async fn copy_topic(topic: &KafkaOptions, config: &ImportConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    let failed = |source| Error::Topic {
        topic: topic.topic.clone(),
        source,
    };
    let chosen = |kafka| super::registry::ChosenStore {
        database: &config.database,
        postgres: config.postgres.as_ref(),
        kafka,
        leadership: None,
    };
    let source = super::registry::open_store(chosen(Some(topic)), config.checker).await?;
    let snapshot = source.load().await.map_err(failed)?;
    let target = super::registry::open_store(chosen(config.kafka.as_ref()), config.checker).await?;
    let held = target.load().await.map_err(failed)?;
    if !held.holds_nothing() {
        eprintln!(
            "schemaops import: the target store already holds {} schemas and {} subjects; \
             --from-kafka copies into an empty store only; nothing was written",
            held.schemas.len(),
            held.subjects.len()
        );
        return Ok(Verdict::Failed);
    }
    let (schemas, subjects, versions, retired) = (
        snapshot.schemas.len(),
        snapshot.subjects.len(),
        snapshot.versions.len(),
        snapshot.retired.len(),
    );
    let soft_deleted = snapshot.versions.iter().filter(|row| row.deleted).count();
    target.apply(snapshot.into_changes()).await.map_err(failed)?;
    writeln!(
        out,
        "{schemas} schemas, {subjects} subjects and {versions} versions ({soft_deleted} soft-deleted) copied \
         from topic {}; {retired} hard-deleted version numbers kept retired",
        topic.topic
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

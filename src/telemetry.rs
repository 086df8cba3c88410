//! Logging: a tracing subscriber writing to stderr, filtered by `RUST_LOG`
//! (default `info`), as plain lines or JSON.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Installs the global subscriber, with `default_filter` (e.g. `info`) when
/// `RUST_LOG` is unset. Calling it twice keeps the first.
pub fn init(format: LogFormat, default_filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

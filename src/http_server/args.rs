//! The flags that set [`ServerLimits`], shared by `schemaops registry` and
//! `schemaops operator` (flattened into their arguments).

use std::time::Duration;

use clap::Args;

use super::ServerLimits;

/// Limits on slow, idle and oversized HTTP requests, for every server the command runs.
#[derive(Debug, Args)]
#[command(next_help_heading = "HTTP limits")]
pub struct ServerLimitsArgs {
    /// Seconds a client may take to send a request's line and headers.
    #[arg(long, env = "SCHEMAOPS_HEADER_TIMEOUT_SECONDS", default_value_t = ServerLimits::DEFAULT.header_read_timeout.as_secs())]
    pub header_timeout_seconds: u64,

    /// Seconds a keep-alive connection may stay open between requests.
    #[arg(long, env = "SCHEMAOPS_IDLE_TIMEOUT_SECONDS", default_value_t = ServerLimits::DEFAULT.idle_timeout.as_secs())]
    pub idle_timeout_seconds: u64,

    /// Seconds a request body may take to arrive; a slower one is answered 408.
    #[arg(long, env = "SCHEMAOPS_BODY_TIMEOUT_SECONDS", default_value_t = ServerLimits::DEFAULT.body_timeout.as_secs())]
    pub body_timeout_seconds: u64,

    /// The most connections each server keeps open; more wait to be accepted.
    #[arg(long, env = "SCHEMAOPS_MAX_CONNECTIONS", default_value_t = ServerLimits::DEFAULT.max_connections)]
    pub max_connections: u32,

    /// The longest request URI (path and query) in bytes; a longer one is answered 414.
    #[arg(long, env = "SCHEMAOPS_MAX_URI_BYTES", default_value_t = ServerLimits::DEFAULT.max_uri_bytes)]
    pub max_uri_bytes: usize,

    /// The most bytes of request header fields; more is answered 431.
    #[arg(long, env = "SCHEMAOPS_MAX_HEADER_BYTES", default_value_t = ServerLimits::DEFAULT.max_header_bytes)]
    pub max_header_bytes: usize,

    /// The most request header fields; more is answered 431.
    #[arg(long, env = "SCHEMAOPS_MAX_HEADER_FIELDS", default_value_t = ServerLimits::DEFAULT.max_header_fields)]
    pub max_header_fields: usize,
}

/// The largest `--max-header-bytes`: hyper's read buffer holds a whole head
/// within our limits (see `head::hyper_buffer`), so it grows with them.
const MOST_HEADER_BYTES: usize = 64 * 1024;

/// The largest `--max-header-fields`: hyper copies 64 bytes of room per
/// field for twice the limit into every head it parses (512 KiB here).
const MOST_HEADER_FIELDS: usize = 4096;

impl ServerLimitsArgs {
    /// The limits these flags describe.
    ///
    /// # Errors
    /// A message naming the flag that is zero.
    pub fn into_limits(self) -> Result<ServerLimits, String> {
        let seconds = |flag: &str, value: u64| match value {
            0 => Err(format!("{flag} must be at least 1")),
            value => Ok(Duration::from_secs(value)),
        };
        if self.max_connections == 0 {
            return Err("--max-connections must be at least 1".to_owned());
        }
        let count = |flag: &str, value: usize, most: usize| match value {
            0 => Err(format!("{flag} must be at least 1")),
            value if value > most => Err(format!("{flag} must be at most {most}")),
            value => Ok(value),
        };
        Ok(ServerLimits {
            header_read_timeout: seconds("--header-timeout-seconds", self.header_timeout_seconds)?,
            idle_timeout: seconds("--idle-timeout-seconds", self.idle_timeout_seconds)?,
            body_timeout: seconds("--body-timeout-seconds", self.body_timeout_seconds)?,
            max_connections: self.max_connections,
            max_uri_bytes: count("--max-uri-bytes", self.max_uri_bytes, super::head::HYPER_MAX_URI_BYTES)?,
            max_header_bytes: count("--max-header-bytes", self.max_header_bytes, MOST_HEADER_BYTES)?,
            max_header_fields: count("--max-header-fields", self.max_header_fields, MOST_HEADER_FIELDS)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        limits: ServerLimitsArgs,
    }

    fn limits(args: &[&str]) -> Result<ServerLimits, String> {
        let parsed = Command::try_parse_from(std::iter::once("schemaops").chain(args.iter().copied()))
            .map_err(|error| error.to_string())?;
        parsed.limits.into_limits()
    }

    #[test]
    fn without_flags_the_production_defaults_apply() {
        assert_eq!(limits(&[]), Ok(ServerLimits::DEFAULT));
    }

    #[test]
    fn each_flag_sets_its_limit() {
        let given = limits(&[
            "--header-timeout-seconds",
            "1",
            "--idle-timeout-seconds",
            "2",
            "--body-timeout-seconds",
            "3",
            "--max-connections",
            "4",
            "--max-uri-bytes",
            "5",
            "--max-header-bytes",
            "6",
            "--max-header-fields",
            "7",
        ]);
        let expected = ServerLimits {
            header_read_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(3),
            max_connections: 4,
            max_uri_bytes: 5,
            max_header_bytes: 6,
            max_header_fields: 7,
        };
        assert_eq!(given, Ok(expected));
    }

    #[test]
    fn zero_is_refused_naming_the_flag() {
        for flag in [
            "--header-timeout-seconds",
            "--idle-timeout-seconds",
            "--body-timeout-seconds",
            "--max-connections",
            "--max-uri-bytes",
            "--max-header-bytes",
            "--max-header-fields",
        ] {
            let error = limits(&[flag, "0"]).unwrap_err();
            assert!(error.contains(flag), "{flag}: {error}");
        }
    }

    #[test]
    fn a_uri_limit_above_hypers_own_and_a_header_limit_above_64_kib_are_refused() {
        let error = limits(&["--max-uri-bytes", "65535"]).unwrap_err();
        assert!(error.contains("--max-uri-bytes must be at most 65534"), "{error}");
        assert!(limits(&["--max-uri-bytes", "65534"]).is_ok());
        let error = limits(&["--max-header-bytes", "65537"]).unwrap_err();
        assert!(error.contains("--max-header-bytes must be at most 65536"), "{error}");
        let error = limits(&["--max-header-fields", "4097"]).unwrap_err();
        assert!(error.contains("--max-header-fields must be at most 4096"), "{error}");
    }
}

//! Who may use the registry API that `registry` and `operator` serve: the
//! credential lists and the write mode, shared by both commands.

use std::path::PathBuf;

use clap::Args;

use crate::registry::api::{AccessPolicy, RestWrites, load_credentials};

/// Credentials and the write mode of the registry API.
#[derive(Debug, Args)]
#[command(next_help_heading = "Registry API access")]
pub struct ApiAccessArgs {
    /// Who may change subjects, versions, levels and modes over REST. `gitops-only`: no one but
    /// an admin credential (changes go through Schema and SubjectConfig resources); `open`: write
    /// and admin credentials (anyone when no credential is configured). Default: `gitops-only` for
    /// `operator`, `open` for `registry`.
    #[arg(long, value_enum, env = "SCHEMAOPS_REST_WRITES")]
    pub rest_writes: Option<RestWrites>,

    /// A file of credentials allowed to read, one per line: `user:password` (basic), a bearer
    /// token, or either after `basic `/`bearer ` (such a token may hold `:`); `#` starts a comment.
    /// Once reads are protected, writes are too: with no write credentials, no one writes.
    #[arg(long, value_name = "FILE")]
    pub read_credentials_file: Option<PathBuf>,

    /// A file of credentials allowed to write (and read) when writes are open, in the same format.
    #[arg(long, value_name = "FILE")]
    pub write_credentials_file: Option<PathBuf>,

    /// A file of admin credentials, in the same format: they may write in either mode (imports,
    /// emergencies), and each of their writes is logged and counted.
    #[arg(long, value_name = "FILE")]
    pub admin_credentials_file: Option<PathBuf>,

    /// Credentials allowed to read, comma-separated, instead of a file.
    #[arg(
        long,
        env = "SCHEMAOPS_READ_CREDENTIALS",
        hide_env_values = true,
        conflicts_with = "read_credentials_file"
    )]
    pub read_credentials: Option<String>,

    /// Credentials allowed to write, comma-separated, instead of a file.
    #[arg(
        long,
        env = "SCHEMAOPS_WRITE_CREDENTIALS",
        hide_env_values = true,
        conflicts_with = "write_credentials_file"
    )]
    pub write_credentials: Option<String>,

    /// Admin credentials, comma-separated, instead of a file.
    #[arg(
        long,
        env = "SCHEMAOPS_ADMIN_CREDENTIALS",
        hide_env_values = true,
        conflicts_with = "admin_credentials_file"
    )]
    pub admin_credentials: Option<String>,
}

impl ApiAccessArgs {
    /// Reads the credential files into a policy; `default_writes` applies
    /// when `--rest-writes` is not given.
    ///
    /// # Errors
    /// A message naming the flag whose file cannot be read, holds a line
    /// that is not a credential, or holds none.
    pub fn into_policy(self, default_writes: RestWrites) -> Result<AccessPolicy, String> {
        let list = |file: Option<&std::path::Path>, inline: Option<&str>, flag: &str, variable: &str| {
            let origin = if file.is_some() {
                format!("--{flag}-file")
            } else {
                format!("--{flag} (or {variable})")
            };
            load_credentials(file, inline, &origin)
        };
        Ok(AccessPolicy {
            readers: list(
                self.read_credentials_file.as_deref(),
                self.read_credentials.as_deref(),
                "read-credentials",
                "SCHEMAOPS_READ_CREDENTIALS",
            )?,
            writers: list(
                self.write_credentials_file.as_deref(),
                self.write_credentials.as_deref(),
                "write-credentials",
                "SCHEMAOPS_WRITE_CREDENTIALS",
            )?,
            admins: list(
                self.admin_credentials_file.as_deref(),
                self.admin_credentials.as_deref(),
                "admin-credentials",
                "SCHEMAOPS_ADMIN_CREDENTIALS",
            )?,
            writes: self.rest_writes.unwrap_or(default_writes),
        })
    }
}

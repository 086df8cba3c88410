//! How to reach an external registry: the URL, credentials, TLS files and
//! limits each command that talks to one takes, checked into an
//! [`ExternalConfig`].

use std::path::PathBuf;

use clap::Args;

use crate::registry::external::{ExternalAuth, ExternalConfig};

/// How to reach an external Confluent-compatible registry (Confluent,
/// Karapace, Apicurio's `ccompat` API, Redpanda). Without `--registry-url`
/// the embedded registry is used.
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "Registry connection")]
pub struct RegistryConnectionArgs {
    /// Base URL of an external registry, e.g. `https://registry:8081` or
    /// `https://apicurio/apis/ccompat/v7`. Without it, the embedded registry is used.
    #[arg(long, env = "SCHEMAOPS_REGISTRY_URL", value_name = "URL")]
    pub registry_url: Option<String>,

    /// User name for HTTP basic authentication (with a password).
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_USERNAME",
        value_name = "USER"
    )]
    pub registry_username: Option<String>,

    /// Password for HTTP basic authentication. Prefer the environment or a file to the command line.
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_PASSWORD",
        hide_env_values = true,
        conflicts_with = "registry_password_file"
    )]
    pub registry_password: Option<String>,

    /// A file holding the basic-authentication password (trailing newline ignored).
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub registry_password_file: Option<PathBuf>,

    /// Bearer token sent as `Authorization: Bearer <token>`.
    #[arg(help_heading = "Registry authentication", 
        long,
        env = "SCHEMAOPS_REGISTRY_TOKEN",
        hide_env_values = true,
        conflicts_with_all = ["registry_token_file", "registry_username"]
    )]
    pub registry_token: Option<String>,

    /// A file holding the bearer token (trailing newline ignored).
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_TOKEN_FILE",
        value_name = "FILE",
        conflicts_with = "registry_username"
    )]
    pub registry_token_file: Option<PathBuf>,

    /// PEM file of CA certificates to trust for the registry's TLS certificate
    /// (by default the system's trust store).
    #[arg(long, env = "SCHEMAOPS_REGISTRY_CA_FILE", value_name = "FILE")]
    pub registry_ca_file: Option<PathBuf>,

    /// PEM client certificate (chain) for mutual TLS; needs --registry-client-key.
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_CLIENT_CERT",
        value_name = "FILE",
        requires = "registry_client_key"
    )]
    pub registry_client_cert: Option<PathBuf>,

    /// PEM private key of the client certificate; needs --registry-client-cert.
    #[arg(
        help_heading = "Registry authentication",
        long,
        env = "SCHEMAOPS_REGISTRY_CLIENT_KEY",
        value_name = "FILE",
        requires = "registry_client_cert"
    )]
    pub registry_client_key: Option<PathBuf>,

    /// Limit on one attempt of a request to the registry (connect, send, read), in seconds.
    #[arg(long, env = "SCHEMAOPS_REGISTRY_TIMEOUT_SECONDS", default_value_t = 10)]
    pub registry_timeout_seconds: u64,

    /// Limit on one request to the registry with all its retries and the waits between them, in
    /// seconds: a registry that accepts connections and never answers fails the request (and
    /// `apply`/`check` exit 2) within this.
    #[arg(long, env = "SCHEMAOPS_REGISTRY_DEADLINE_SECONDS", default_value_t = ExternalConfig::DEFAULT_DEADLINE.as_secs())]
    pub registry_deadline_seconds: u64,

    /// The longest answer read from the registry, in bytes (default 64 MiB); a longer one is an error.
    #[arg(
        long,
        env = "SCHEMAOPS_REGISTRY_MAX_RESPONSE_BYTES",
        value_name = "BYTES",
        default_value_t = ExternalConfig::DEFAULT_MAX_RESPONSE_BYTES
    )]
    pub registry_max_response_bytes: u64,
}

impl RegistryConnectionArgs {
    /// The external registry's configuration, or `None` without `--registry-url`.
    /// Reads the password and token files.
    ///
    /// # Errors
    /// A message naming the flag that is wrong. Messages never contain secrets.
    pub fn into_config(self) -> Result<Option<ExternalConfig>, String> {
        let endpoint = Endpoint {
            url: self.registry_url,
            username: self.registry_username,
            password: self.registry_password,
            password_file: self.registry_password_file,
            token: self.registry_token,
            token_file: self.registry_token_file,
            ca_file: self.registry_ca_file,
            client_cert: self.registry_client_cert,
            client_key: self.registry_client_key,
        };
        let Some(mut config) = endpoint.into_config("")? else {
            return Ok(None);
        };
        if self.registry_timeout_seconds == 0 {
            return Err("--registry-timeout-seconds must be at least 1".to_owned());
        }
        if self.registry_deadline_seconds == 0 {
            return Err("--registry-deadline-seconds must be at least 1".to_owned());
        }
        if self.registry_max_response_bytes < MIN_RESPONSE_BYTES {
            return Err(format!(
                "--registry-max-response-bytes must be at least {MIN_RESPONSE_BYTES}"
            ));
        }
        config.timeout = std::time::Duration::from_secs(self.registry_timeout_seconds);
        config.deadline = std::time::Duration::from_secs(self.registry_deadline_seconds);
        config.max_response_bytes = self.registry_max_response_bytes;
        Ok(Some(config))
    }
}

/// A registry that `import` copies into instead of the embedded store:
/// the URL, credentials and TLS files of [`RegistryConnectionArgs`] with
/// `--to-` in front (the limits are the source's).
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "Target registry (instead of --data)")]
pub struct TargetRegistryArgs {
    /// Base URL of a Confluent-compatible registry to copy into, keeping IDs and versions (it must
    /// have IMPORT mode: Confluent, `schemaops registry`), instead of the embedded store.
    #[arg(long, env = "SCHEMAOPS_IMPORT_TO", value_name = "URL", conflicts_with = "data")]
    pub to_registry_url: Option<String>,

    /// User name for HTTP basic authentication to the target (with a password).
    #[arg(long, env = "SCHEMAOPS_IMPORT_TO_USERNAME", value_name = "USER")]
    pub to_registry_username: Option<String>,

    /// Password for HTTP basic authentication to the target.
    #[arg(
        long,
        env = "SCHEMAOPS_IMPORT_TO_PASSWORD",
        hide_env_values = true,
        conflicts_with = "to_registry_password_file"
    )]
    pub to_registry_password: Option<String>,

    /// A file holding the target's basic-authentication password.
    #[arg(long, value_name = "FILE")]
    pub to_registry_password_file: Option<PathBuf>,

    /// Bearer token for the target.
    #[arg(
        long,
        env = "SCHEMAOPS_IMPORT_TO_TOKEN",
        hide_env_values = true,
        conflicts_with_all = ["to_registry_token_file", "to_registry_username"]
    )]
    pub to_registry_token: Option<String>,

    /// A file holding the target's bearer token.
    #[arg(long, value_name = "FILE", conflicts_with = "to_registry_username")]
    pub to_registry_token_file: Option<PathBuf>,

    /// PEM file of CA certificates to trust for the target's TLS certificate.
    #[arg(long, value_name = "FILE")]
    pub to_registry_ca_file: Option<PathBuf>,

    /// PEM client certificate (chain) for mutual TLS with the target.
    #[arg(long, value_name = "FILE", requires = "to_registry_client_key")]
    pub to_registry_client_cert: Option<PathBuf>,

    /// PEM private key of the target's client certificate.
    #[arg(long, value_name = "FILE", requires = "to_registry_client_cert")]
    pub to_registry_client_key: Option<PathBuf>,
}

impl TargetRegistryArgs {
    /// The target registry's configuration (with the default limits), or
    /// `None` without `--to-registry-url`. Reads the password and token files.
    ///
    /// # Errors
    /// A message naming the flag that is wrong. Messages never contain secrets.
    pub fn into_config(self) -> Result<Option<ExternalConfig>, String> {
        Endpoint {
            url: self.to_registry_url,
            username: self.to_registry_username,
            password: self.to_registry_password,
            password_file: self.to_registry_password_file,
            token: self.to_registry_token,
            token_file: self.to_registry_token_file,
            ca_file: self.to_registry_ca_file,
            client_cert: self.to_registry_client_cert,
            client_key: self.to_registry_client_key,
        }
        .into_config("to-")
    }
}

/// Where a registry is and how to prove who we are to it, as given.
struct Endpoint {
    url: Option<String>,
    username: Option<String>,
    password: Option<String>,
    password_file: Option<PathBuf>,
    token: Option<String>,
    token_file: Option<PathBuf>,
    ca_file: Option<PathBuf>,
    client_cert: Option<PathBuf>,
    client_key: Option<PathBuf>,
}

impl Endpoint {
    /// The configuration (with the default limits), or `None` without a
    /// URL; flags are named `--{prefix}registry-…` in messages.
    fn into_config(self, prefix: &str) -> Result<Option<ExternalConfig>, String> {
        let flag = |name: &str| format!("--{prefix}registry-{name}");
        let Some(text) = self.url else {
            let stray = [
                ("username", self.username.is_some()),
                ("password", self.password.is_some()),
                ("password-file", self.password_file.is_some()),
                ("token", self.token.is_some()),
                ("token-file", self.token_file.is_some()),
                ("ca-file", self.ca_file.is_some()),
                ("client-cert", self.client_cert.is_some()),
            ];
            return match stray.iter().find(|(_, given)| *given) {
                Some((name, _)) => Err(format!("{} needs {}", flag(name), flag("url"))),
                None => Ok(None),
            };
        };
        let url_flag = flag("url");
        let url = reqwest::Url::parse(&text).map_err(|error| format!("{url_flag} `{text}` is not a URL: {error}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{url_flag} `{text}` must start with http:// or https://"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{url_flag} must not hold credentials; use {} and {}",
                flag("username"),
                flag("password")
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!("{url_flag} `{text}` must not have a query or fragment"));
        }
        let password = match (self.password, &self.password_file) {
            (Some(password), _) => Some(password),
            (None, Some(path)) => Some(secret_file(&flag("password-file"), path)?),
            (None, None) => None,
        };
        let token = match (self.token, &self.token_file) {
            (Some(token), _) => Some(token),
            (None, Some(path)) => Some(secret_file(&flag("token-file"), path)?),
            (None, None) => None,
        };
        let auth = match (self.username, password, token) {
            (Some(user), Some(password), None) => ExternalAuth::Basic { user, password },
            (Some(_), None, _) => {
                return Err(format!(
                    "{} needs {} or {}",
                    flag("username"),
                    flag("password"),
                    flag("password-file")
                ));
            }
            (None, Some(_), _) => return Err(format!("{} needs {}", flag("password"), flag("username"))),
            (None, None, Some(token)) if token.is_empty() => {
                return Err(format!("{} is empty", flag("token")));
            }
            (None, None, Some(token)) => ExternalAuth::Bearer(token),
            (Some(_), Some(_), Some(_)) => {
                return Err(format!(
                    "give either {} or {}, not both",
                    flag("username"),
                    flag("token")
                ));
            }
            (None, None, None) => ExternalAuth::None,
        };
        for (name, path) in [
            ("ca-file", &self.ca_file),
            ("client-cert", &self.client_cert),
            ("client-key", &self.client_key),
        ] {
            if let Some(path) = path
                && !path.is_file()
            {
                return Err(format!("{} {} is not a readable file", flag(name), path.display()));
            }
        }
        let mut config = ExternalConfig::new(url);
        config.auth = auth;
        config.ca_file = self.ca_file;
        config.client_cert_file = self.client_cert;
        config.client_key_file = self.client_key;
        Ok(Some(config))
    }
}

/// The smallest `--registry-max-response-bytes`: room for any error body.
const MIN_RESPONSE_BYTES: u64 = 1024;

/// A password or token from a file, without the trailing newline.
pub(super) fn secret_file(flag: &str, path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{flag} {}: {error}", path.display()))?;
    let secret = text.trim_end_matches(['\r', '\n']).to_owned();
    if secret.is_empty() {
        return Err(format!("{flag} {} is empty", path.display()));
    }
    Ok(secret)
}

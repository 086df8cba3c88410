//! [`ExternalConfig`]: where a remote registry is and how to talk to it.
//! Secrets never appear in `Debug` output.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::registry::tls::PemText;

/// How the client authenticates to the registry.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum ExternalAuth {
    /// No `Authorization` header.
    #[default]
    None,
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(String),
}

impl fmt::Debug for ExternalAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalAuth::None => f.write_str("None"),
            ExternalAuth::Basic { user, .. } => write!(f, "Basic {{ user: {user:?}, password: \"***\" }}"),
            ExternalAuth::Bearer(_) => f.write_str("Bearer(\"***\")"),
        }
    }
}

/// A connection to a Confluent-compatible registry (Confluent, Karapace,
/// Apicurio's `ccompat` API, Redpanda). `Debug` shows no secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct ExternalConfig {
    /// The base URL, with any path prefix (`https://host/apis/ccompat/v7`).
    /// User info in it is ignored (never sent, never shown): use `auth`.
    pub url: reqwest::Url,
    /// Further base URLs of the same registry, in order: a request that cannot connect to the
    /// one in use moves on to the next (a registry connection's `urls` after the first).
    pub fallback_urls: Vec<reqwest::Url>,
    /// Credentials.
    pub auth: ExternalAuth,
    /// A PEM file of CA certificates to trust instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// A PEM certificate chain presented for mutual TLS (with `client_key_file`).
    pub client_cert_file: Option<PathBuf>,
    /// The PEM private key of `client_cert_file`.
    pub client_key_file: Option<PathBuf>,
    /// CA certificates given as PEM text (from a Secret or ConfigMap), trusted instead of
    /// `ca_file` and the system's roots.
    pub ca_pem: Option<PemText>,
    /// A client certificate chain and key given as PEM text (a `kubernetes.io/tls` Secret),
    /// presented for mutual TLS instead of the files.
    pub client_identity_pem: Option<(PemText, PemText)>,
    /// The name the registry's certificate must be issued to, instead of the URL's host (a
    /// connection's `tls.serverName`: a registry reached by an address its certificate does
    /// not name).
    pub server_name: Option<String>,
    /// The limit on one attempt: connecting, sending and reading the answer.
    pub timeout: Duration,
    /// The limit on one logical call: every attempt and every wait between
    /// them. An attempt is cut off when it runs out, and no retry starts
    /// that its wait would reach.
    pub deadline: Duration,
    /// Attempts after the first one for connection errors, timeouts, 408, 429 and 5xx.
    pub max_retries: u32,
    /// The wait before the first retry; each further retry waits twice as
    /// long (at most [`ExternalConfig::MAX_BACKOFF`]), plus up to 10% jitter.
    pub retry_backoff: Duration,
    /// The longest answer read, in bytes: a longer one is refused with
    /// [`crate::registry::Error::AnswerTooLarge`] once this much has arrived.
    pub max_response_bytes: u64,
}

impl ExternalConfig {
    /// The default limit on one attempt.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default limit on one logical call: a registry that accepts
    /// connections and never answers fails a call within this.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(12);
    /// The default number of retries: four attempts in all.
    pub const DEFAULT_MAX_RETRIES: u32 = 3;
    /// The default first backoff.
    pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(200);
    /// The default longest answer: 64 MiB, far above the largest listing or
    /// schema a registry serves in practice.
    pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
    /// The longest wait between two attempts.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

    /// A configuration for `url` without credentials or TLS files, with the defaults.
    pub fn new(url: reqwest::Url) -> Self {
        Self {
            url,
            fallback_urls: Vec::new(),
            auth: ExternalAuth::None,
            ca_file: None,
            client_cert_file: None,
            client_key_file: None,
            ca_pem: None,
            client_identity_pem: None,
            server_name: None,
            timeout: Self::DEFAULT_TIMEOUT,
            deadline: Self::DEFAULT_DEADLINE,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            retry_backoff: Self::DEFAULT_RETRY_BACKOFF,
            max_response_bytes: Self::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// The base URL without user info or a trailing slash: what requests
    /// start with and what errors and logs show.
    pub fn display_url(&self) -> String {
        shown(&self.url)
    }

    /// Every base URL, as [`ExternalConfig::display_url`] shows the first: the URL, then the
    /// fallbacks, in order.
    pub fn display_urls(&self) -> Vec<String> {
        std::iter::once(&self.url)
            .chain(&self.fallback_urls)
            .map(shown)
            .collect()
    }
}

/// `url` without user info or a trailing slash.
fn shown(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.as_str().trim_end_matches('/').to_owned()
}

impl fmt::Debug for ExternalConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalConfig")
            .field("urls", &self.display_urls())
            .field("auth", &self.auth)
            .field("ca_file", &self.ca_file)
            .field("client_cert_file", &self.client_cert_file)
            .field("client_key_file", &self.client_key_file)
            .field("ca_pem", &self.ca_pem)
            .field("client_identity_pem", &self.client_identity_pem)
            .field("timeout", &self.timeout)
            .field("deadline", &self.deadline)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff", &self.retry_backoff)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_passwords_or_tokens() {
        let mut config = ExternalConfig::new("https://registry.example/".parse().unwrap());
        config.auth = ExternalAuth::Basic {
            user: "alice".to_owned(),
            password: "s3cret-password".to_owned(),
        };
        let shown = format!("{config:?}");
        assert!(shown.contains("alice"), "{shown}");
        assert!(!shown.contains("s3cret-password"), "{shown}");
        config.auth = ExternalAuth::Bearer("tok-123456".to_owned());
        let shown = format!("{config:?}");
        assert!(!shown.contains("tok-123456"), "{shown}");
        config.url = "https://bob:url-secret@registry.example/ccompat/".parse().unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains("url-secret") && !shown.contains("bob"), "{shown}");
        assert_eq!(config.display_url(), "https://registry.example/ccompat");
    }
}

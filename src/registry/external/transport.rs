//! HTTP to the remote registry: the reqwest client with its rustls
//! configuration (ring provider, CA file or the system's roots, optional
//! client certificate), requests with retries and backoff, and error bodies
//! turned into [`Error`] values. Knows paths and status codes, not the
//! meaning of the Confluent API.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use super::config::{ExternalAuth, ExternalConfig};
use crate::registry::tls::{self, ReadPemError};
use crate::registry::{Error, SubjectName, Version, VersionSelector};

/// The media type of requests and the preferred one of answers.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// Everything but RFC 3986's unreserved characters is escaped, so a subject
/// with `/`, `?`, `%` or spaces stays one path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A path segment, percent-encoded.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// Why an [`super::ExternalRegistry`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A PEM file could not be read or holds nothing usable.
    #[error(transparent)]
    ReadPem(#[from] ReadPemError),
    /// Only one of the client certificate and key was given.
    #[error("a client certificate and a client key must be given together")]
    ClientIdentityIncomplete,
    /// rustls refused the configuration (a bad certificate or key).
    #[error("failed to configure TLS")]
    Tls(#[source] rustls::Error),
    /// The server name is neither a DNS name nor an IP address.
    #[error("the server name {name:?} is neither a DNS name nor an IP address")]
    ServerName {
        /// The name given.
        name: String,
    },
    /// The configuration checking the server name could not be built.
    #[error(transparent)]
    VerifyAs(tls::VerifyAsError),
    /// The HTTP client could not be built.
    #[error("failed to build the HTTP client")]
    Client(#[source] reqwest::Error),
}

/// An HTTP answer: its status and body.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The `error_code` of a Confluent error body, if it is one.
    pub fn error_code(&self) -> Option<u32> {
        serde_json::from_slice::<ErrorBody>(&self.body)
            .ok()
            .and_then(|body| body.error_code)
            .and_then(|code| u32::try_from(code).ok())
    }

    /// The `message` of a Confluent error body whole: a string as it is,
    /// anything else (Karapace's pydantic validation errors are a list) as
    /// JSON; else the body itself (Karapace answers 404/405 for a route it
    /// lacks with a bare JSON string). Bounded by [`MAX_ERROR_MESSAGE_BYTES`],
    /// cut between words with a note saying so.
    pub fn message(&self) -> String {
        let text = match serde_json::from_slice::<serde_json::Value>(&self.body) {
            Ok(serde_json::Value::Object(mut body)) => match body.remove("message") {
                Some(serde_json::Value::String(message)) => message,
                Some(message) if !message.is_null() => message.to_string(),
                _ => serde_json::Value::Object(body).to_string(),
            },
            Ok(serde_json::Value::String(message)) => message,
            _ => String::from_utf8_lossy(&self.body).trim().to_owned(),
        };
        bounded(&text, MAX_ERROR_MESSAGE_BYTES)
    }
}

/// The most of a registry's error message kept, in bytes.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 2048;

/// `text` when it fits in `limit` bytes; else its start, cut at the last
/// space that fits (a character boundary when there is none), and a note
/// saying how much was left out.
fn bounded(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(space) = text[..end].rfind(char::is_whitespace) {
        end = space;
    }
    let kept = text[..end].trim_end();
    format!("{kept} … ({} more bytes left out)", text.len() - kept.len())
}

#[derive(serde::Deserialize)]
struct ErrorBody {
    error_code: Option<i64>,
}

/// What a request is about, so that error codes become variants with context.
#[derive(Debug, Clone, Copy, Default)]
pub struct About<'a> {
    /// The subject of the request.
    pub subject: Option<&'a SubjectName>,
    /// The version of the request.
    pub version: Option<VersionSelector>,
}

/// The reqwest client, the base URLs and the retry policy.
pub struct Transport {
    client: reqwest::Client,
    /// The base URLs, in order of preference; at least one.
    bases: Vec<String>,
    /// The index in `bases` of the one in use: it moves on when a connection fails.
    current: AtomicUsize,
    auth: ExternalAuth,
    deadline: Duration,
    max_retries: u32,
    retry_backoff: Duration,
    max_response_bytes: u64,
}

/// Why one attempt got no usable answer.
enum AttemptError {
    /// Connecting, sending or reading failed.
    Http(reqwest::Error),
    /// The answer is longer than [`ExternalConfig::max_response_bytes`]; what was read is dropped.
    TooLarge,
}

impl Transport {
    /// Builds the client from `config`.
    ///
    /// # Errors
    /// [`ConfigError`] when a PEM file is unreadable or TLS refuses it.
    pub fn new(config: &ExternalConfig) -> Result<Self, ConfigError> {
        let tls = tls_config(config)?;
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static(
                "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; q=0.9, application/json; q=0.5",
            ),
        );
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .default_headers(headers)
            .user_agent(concat!("schemaops/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(ConfigError::Client)?;
        Ok(Self {
            client,
            bases: config.display_urls(),
            current: AtomicUsize::new(0),
            auth: config.auth.clone(),
            deadline: config.deadline,
            max_retries: config.max_retries,
            retry_backoff: config.retry_backoff,
            max_response_bytes: config.max_response_bytes,
        })
    }

    /// The base URL in use, as errors show it.
    pub fn base(&self) -> &str {
        &self.bases[self.current.load(Ordering::Relaxed) % self.bases.len()]
    }

    /// Sends a request, retrying connection errors, timeouts, 408, 429 and
    /// 5xx with exponential backoff, all within the configured deadline;
    /// returns whatever answer came last otherwise. With several base URLs,
    /// one that cannot be connected to hands over to the next at once
    /// (each URL once per call before backing off), and the next calls stay
    /// on the one that answered. Each failed attempt is
    /// logged (a warning: one line on standard error for the commands)
    /// with its number, why it failed, and what happens next.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when every attempt failed to connect, timed
    /// out, or got a retryable status, or the deadline passed;
    /// [`Error::AnswerTooLarge`], without retrying, for an answer longer
    /// than the configured maximum.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, Error> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.deadline;
        let mut attempt = 0u32;
        let mut failed_over = 0;
        loop {
            let index = self.current.load(Ordering::Relaxed) % self.bases.len();
            let url = format!("{}{path}", self.bases[index]);
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let outcome = tokio::time::timeout(left, self.attempt(method.clone(), &url, query, body)).await;
            let reason = match outcome {
                Ok(Ok(answer)) if !retryable(answer.status) => return Ok(answer),
                Ok(Ok(answer)) => format!("HTTP {}: {}", answer.status.as_u16(), answer.message()),
                Ok(Err(AttemptError::Http(error))) if error.is_connect() && self.bases.len() > 1 => {
                    let next = (index + 1) % self.bases.len();
                    // Another call may have moved on already; then keep its choice.
                    let _ = self
                        .current
                        .compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed);
                    if failed_over + 1 < self.bases.len() {
                        failed_over += 1;
                        tracing::warn!(
                            "{method} {path}: {} cannot be connected to ({}); trying {}",
                            self.bases[index],
                            describe(&error),
                            self.bases[next]
                        );
                        continue;
                    }
                    describe(&error)
                }
                Ok(Err(AttemptError::Http(error))) => describe(&error),
                Ok(Err(AttemptError::TooLarge)) => {
                    return Err(Error::AnswerTooLarge {
                        url: self.base().to_owned(),
                        method: method.to_string(),
                        path: path.to_owned(),
                        limit: self.max_response_bytes,
                    });
                }
                Err(_) => format!("no answer before the {} s deadline", self.deadline.as_secs_f64()),
            };
            let number = attempt + 1;
            let wait = self.backoff(attempt);
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if attempt >= self.max_retries || wait >= left {
                let why = if attempt >= self.max_retries {
                    "no retries left"
                } else {
                    "the deadline would pass before the next attempt"
                };
                tracing::warn!(
                    "{method} {path}: attempt {number} failed ({reason}); giving up: {why} ({:.1} s since the first attempt)",
                    started.elapsed().as_secs_f64()
                );
                return Err(Error::Unavailable {
                    url: self.base().to_owned(),
                    reason: format!(
                        "{reason} (after {number} attempts in {:.1} s; deadline {} s)",
                        started.elapsed().as_secs_f64(),
                        self.deadline.as_secs_f64()
                    ),
                });
            }
            tracing::warn!(
                "{method} {path}: attempt {number} failed ({reason}); attempt {} in {:.1} s, {:.1} s left before the deadline",
                number + 1,
                wait.as_secs_f64(),
                left.as_secs_f64()
            );
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// Sends a request and reads a 2xx JSON body; other answers become errors.
    ///
    /// # Errors
    /// As [`Transport::send`], and [`error_from`] for non-2xx answers.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
        about: About<'_>,
    ) -> Result<T, Error> {
        let answer = self.send(method, path, query, body).await?;
        self.decode(&answer, about)
    }

    /// Reads a 2xx JSON body, or turns the answer into an error.
    ///
    /// # Errors
    /// [`error_from`] for non-2xx answers; [`Error::Remote`] for a body that
    /// is not the expected JSON.
    pub fn decode<T: DeserializeOwned>(&self, answer: &Answer, about: About<'_>) -> Result<T, Error> {
        if !answer.status.is_success() {
            return Err(error_from(answer, about, self.base()));
        }
        serde_json::from_slice(&answer.body).map_err(|error| Error::Remote {
            status: 502,
            code: 502,
            message: format!("the registry answered with an unexpected body: {error}"),
        })
    }

    /// One request, its answer read in chunks up to the maximum size.
    async fn attempt(
        &self,
        method: Method,
        url: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, AttemptError> {
        let mut request = self.client.request(method, url).query(query);
        request = match &self.auth {
            ExternalAuth::None => request,
            ExternalAuth::Basic { user, password } => request.basic_auth(user, Some(password)),
            ExternalAuth::Bearer(token) => request.bearer_auth(token),
        };
        if let Some(body) = body {
            let bytes = serde_json::to_vec(body).unwrap_or_default();
            request = request.header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE).body(bytes);
        }
        let mut response = request.send().await.map_err(AttemptError::Http)?;
        let status = response.status();
        let limit = self.max_response_bytes;
        let announced = response.content_length().unwrap_or(0);
        if announced > limit {
            return Err(AttemptError::TooLarge);
        }
        // Never more than the limit, whatever the length header says.
        let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(0));
        while let Some(chunk) = response.chunk().await.map_err(AttemptError::Http)? {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(AttemptError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body })
    }

    /// `retry_backoff × 2^attempt`, capped, plus up to 10% jitter.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .retry_backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(ExternalConfig::MAX_BACKOFF);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.subsec_nanos())
            .unwrap_or(0);
        base + base.mul_f64(f64::from(nanos % 1000) / 10_000.0)
    }
}

/// Whether an answer is worth another attempt.
fn retryable(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT || status == StatusCode::TOO_MANY_REQUESTS
}

/// A reqwest error as a short reason, without the URL's query.
fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut chain = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        chain.push(inner.to_string());
        source = inner.source();
    }
    if chain.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {}", chain.join(": "))
    }
}

/// A non-2xx answer as an [`Error`], by Confluent error code first and HTTP status second.
pub fn error_from(answer: &Answer, about: About<'_>, base: &str) -> Error {
    let status = answer.status.as_u16();
    let message = answer.message();
    let code = answer.error_code().unwrap_or(u32::from(status));
    let subject = about.subject.cloned();
    let version_text = match about.version {
        Some(VersionSelector::Exact(version)) => version.to_string(),
        Some(VersionSelector::Latest) | None => "latest".to_owned(),
    };
    let exact_version: Option<Version> = match about.version {
        Some(VersionSelector::Exact(version)) => Some(version),
        _ => None,
    };
    let remote = || Error::Remote {
        status,
        code,
        message: message.clone(),
    };
    match (code, subject) {
        (_, _) if status == 401 => Error::Unauthorized { url: base.to_owned() },
        (_, _) if status == 403 => Error::Forbidden { url: base.to_owned() },
        (40401, Some(subject)) => Error::SubjectNotFound { subject },
        (40402, Some(subject)) => Error::VersionNotFound {
            subject,
            version: version_text,
        },
        (40403, _) => Error::SchemaNotFound { what: message },
        (40404, Some(subject)) => Error::SubjectSoftDeleted { subject },
        (40405, Some(subject)) => Error::SubjectNotSoftDeleted { subject },
        (40406, Some(subject)) => match exact_version {
            Some(version) => Error::VersionSoftDeleted { subject, version },
            None => remote(),
        },
        (40407, Some(subject)) => match exact_version {
            Some(version) => Error::VersionNotSoftDeleted { subject, version },
            None => remote(),
        },
        (40408, Some(subject)) => Error::SubjectCompatibilityNotConfigured { subject },
        (40409, Some(subject)) => Error::SubjectModeNotConfigured { subject },
        (409 | 40901, _) => Error::Rejected { message },
        (42201, _) => Error::InvalidSchema { reason: message },
        (42202, _) => Error::InvalidVersion { given: message },
        (42203, _) => Error::InvalidCompatibilityLevel { given: message },
        (42204, _) => Error::InvalidMode { given: message },
        (42205, _) => Error::NotPermitted { reason: message },
        (42206, Some(subject)) => Error::ReferencesExist {
            subject,
            version: exact_version.unwrap_or(Version::FIRST),
            referrers: Vec::new(),
        },
        (42208, Some(subject)) => Error::InvalidSubject {
            subject: subject.to_string(),
            problem: message,
        },
        // 409 without a Confluent body (e.g. a proxy) is still a refusal.
        (_, _) if status == 409 => Error::Rejected { message },
        _ => remote(),
    }
}

/// The rustls client configuration: ring, safe protocol versions, the CA
/// certificates (PEM text, else the file, else the system's roots), the name
/// the server's certificate is checked against (the server name, else the
/// URL's host), and the client identity (PEM text, else the files).
fn tls_config(config: &ExternalConfig) -> Result<rustls::ClientConfig, ConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    match (&config.ca_pem, &config.ca_file) {
        (Some(text), _) => tls::add_ca_pem(&mut roots, text)?,
        (None, Some(path)) => tls::add_ca_file(&mut roots, path)?,
        (None, None) => tls::add_system_roots(&mut roots),
    }
    let builder = match &config.server_name {
        Some(name) => {
            let name = rustls_pki_types::ServerName::try_from(name.clone())
                .map_err(|_| ConfigError::ServerName { name: name.clone() })?;
            tls::client_builder_verifying_as(roots, name).map_err(ConfigError::VerifyAs)?
        }
        None => tls::client_builder(roots).map_err(ConfigError::Tls)?,
    };
    if let Some((cert, key)) = &config.client_identity_pem {
        let (chain, key) = tls::parse_client_identity(cert, key)?;
        return builder.with_client_auth_cert(chain, key).map_err(ConfigError::Tls);
    }
    match (&config.client_cert_file, &config.client_key_file) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let (chain, key) = tls::read_client_identity(cert, key)?;
            builder.with_client_auth_cert(chain, key).map_err(ConfigError::Tls)
        }
        _ => Err(ConfigError::ClientIdentityIncomplete),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_with_slashes_and_spaces_stay_one_path_segment() {
        assert_eq!(segment("a/b c%d"), "a%2Fb%20c%25d");
        assert_eq!(segment("orders-value.v1_x~"), "orders-value.v1_x~");
        assert_eq!(segment("ü"), "%C3%BC");
    }

    #[test]
    fn backoff_doubles_from_the_first_wait_with_at_most_ten_percent_jitter_and_a_cap() {
        let mut config = ExternalConfig::new("http://127.0.0.1:1".parse().unwrap());
        config.retry_backoff = Duration::from_millis(100);
        let transport = Transport::new(&config).unwrap();
        for (attempt, base) in [(0, 100), (1, 200), (2, 400), (3, 800)] {
            let wait = transport.backoff(attempt);
            let base = Duration::from_millis(base);
            assert!(wait >= base && wait <= base + base / 10, "attempt {attempt}: {wait:?}");
        }
        assert!(transport.backoff(30) <= ExternalConfig::MAX_BACKOFF + ExternalConfig::MAX_BACKOFF / 10);
    }

    #[test]
    fn only_timeouts_throttling_and_server_errors_are_retried() {
        for status in [500, 502, 503, 504, 408, 429] {
            assert!(retryable(StatusCode::from_u16(status).unwrap()), "{status}");
        }
        for status in [200, 400, 401, 403, 404, 409, 422] {
            assert!(!retryable(StatusCode::from_u16(status).unwrap()), "{status}");
        }
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// Issue 38: Karapace's 422 carries pydantic's errors as a list, and
    /// was cut to 200 characters mid-word; its 405 body is a bare string.
    #[test]
    fn error_messages_are_kept_whole_or_cut_between_words_with_a_note() {
        let pydantic = r#"{"error_code":422,"message":[{"type":"missing","loc":["body","compatibility"],"msg":"Field required","input":{"compatibilityGroup":"application.major_version"}}]}"#;
        let message = answer(422, pydantic).message();
        for part in [
            r#""msg":"Field required""#,
            r#""loc":["body","compatibility"]"#,
            r#""input":{"compatibilityGroup":"application.major_version"}"#,
        ] {
            assert!(message.contains(part), "{part} is missing from {message}");
        }
        assert!(message.starts_with("[{") && message.ends_with("}]"), "{message}");
        assert_eq!(answer(405, r#""Method Not Allowed""#).message(), "Method Not Allowed");

        let long = format!(r#"{{"error_code":500,"message":"{}"}}"#, "word ".repeat(1000));
        let message = answer(500, &long).message();
        assert!(message.len() <= MAX_ERROR_MESSAGE_BYTES + 40, "{}", message.len());
        assert!(message.ends_with("more bytes left out)"), "{message}");
        assert!(message.contains("word … ("), "cut between words: {message}");
    }

    #[test]
    fn confluent_error_codes_become_variants_with_the_subject() {
        let subject = SubjectName::new("a/b").unwrap();
        let about = About {
            subject: Some(&subject),
            version: None,
        };
        let error = error_from(&answer(404, r#"{"error_code":40401,"message":"x"}"#), about, "u");
        assert!(matches!(error, Error::SubjectNotFound { .. }), "{error:?}");
        let error = error_from(&answer(409, r#"{"error_code":409,"message":"nope"}"#), about, "u");
        assert!(
            matches!(&error, Error::Rejected { message } if message == "nope"),
            "{error:?}"
        );
        let error = error_from(&answer(422, r#"{"error_code":42201,"message":"bad"}"#), about, "u");
        assert!(
            matches!(&error, Error::InvalidSchema { reason } if reason == "bad"),
            "{error:?}"
        );
        let error = error_from(&answer(401, "no"), about, "u");
        assert!(matches!(error, Error::Unauthorized { .. }) && !error.is_transient());
        let error = error_from(&answer(404, "<html>"), about, "u");
        assert!(matches!(error, Error::Remote { code: 404, .. }), "{error:?}");
        // A wrong URL's 404 page is no answer about the subject; 40401 is one.
        assert!(error.is_unanswered());
        let error = error_from(&answer(404, r#"{"error_code":40401,"message":"x"}"#), about, "u");
        assert!(!error.is_unanswered());
        assert!(error_from(&answer(403, "{}"), about, "u").is_unanswered());
    }
}

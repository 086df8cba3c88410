//! Optional authentication: HTTP basic or bearer credentials, with reads and
//! writes allowed separately. A refused request gets 401 before any handler
//! runs, so it never learns whether a subject exists.
//!
//! It fails closed: once any credential is configured, reads and writes both
//! need one. Writers may read; readers may make the read-only POSTs
//! (a lookup, `POST /subjects/{subject}`, and both compatibility tests); with
//! readers but no writers listed, no one writes. A list that was configured
//! but holds no credential is an error at start ([`load_credentials`]), not
//! an open door.
//!
//! In GitOps-only mode ([`RestWrites::GitOpsOnly`], the operator's default)
//! subjects, versions, levels and modes change only through Schema and
//! SubjectConfig resources: every REST write is refused with 403 (40301),
//! except one made with an admin credential, which is logged and counted.

use std::path::Path;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{ApiError, ApiState};
use crate::metrics::{MethodLabel, RestWriteCounters};

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// GET, HEAD, OPTIONS, and the POSTs that only read.
    Read,
    /// Everything else.
    Write,
}

impl Access {
    /// What a request with `method` to `path` does: the POSTs that look a
    /// schema up or test compatibility only read.
    pub fn of(method: &Method, path: &str) -> Self {
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            return Access::Read;
        }
        let segments: Vec<&str> = path.split('/').collect();
        let read_only_post = *method == Method::POST
            && match segments.as_slice() {
                ["", "subjects", subject] => !subject.is_empty(),
                ["", "compatibility", ..] => true,
                _ => false,
            };
        if read_only_post { Access::Read } else { Access::Write }
    }
}

/// Who may change the registry over REST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RestWrites {
    /// Writes go through Schema and SubjectConfig resources; over REST only
    /// an admin credential writes.
    #[value(name = "gitops-only")]
    GitOpsOnly,
    /// Write (and admin) credentials write; with no credential configured
    /// at all, anyone does.
    #[default]
    Open,
}

impl RestWrites {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            RestWrites::GitOpsOnly => "gitops-only",
            RestWrites::Open => "open",
        }
    }
}

/// One accepted credential.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// HTTP basic: `user:password`.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: String,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Basic { user, .. } => write!(f, "Basic({user}:***)"),
            Credential::Bearer(_) => f.write_str("Bearer(***)"),
        }
    }
}

impl Credential {
    /// Reads one credential line: `user:password` for basic, a token without
    /// `:` for bearer, or either spelled out as `basic user:password` or
    /// `bearer TOKEN` (the keyword in any case; such a token may hold `:`).
    /// `None` for a blank line or a `#` comment.
    pub fn parse(line: &str) -> Option<Self> {
        Self::parse_line(line).ok().flatten()
    }

    /// As [`Credential::parse`], with why a line is not a credential.
    fn parse_line(line: &str) -> Result<Option<Self>, &'static str> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let (keyword, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(keyword, rest)| (keyword, rest.trim()));
        let basic = |pair: &str| {
            pair.split_once(':')
                .filter(|(user, _)| !user.is_empty())
                .map(|(user, password)| Credential::Basic {
                    user: user.to_owned(),
                    password: password.to_owned(),
                })
                .ok_or("a basic credential is `user:password`")
        };
        if keyword.eq_ignore_ascii_case("bearer") && !rest.is_empty() {
            return Ok(Some(Credential::Bearer(rest.to_owned())));
        }
        if keyword.eq_ignore_ascii_case("basic") && !rest.is_empty() {
            return basic(rest).map(Some);
        }
        if line.contains(char::is_whitespace) {
            return Err("a credential has no spaces, unless it starts with `basic ` or `bearer `");
        }
        if line.contains(':') {
            return basic(line).map(Some);
        }
        Ok(Some(Credential::Bearer(line.to_owned())))
    }

    /// Whether `presented` is this credential.
    fn matches(&self, presented: &Presented) -> bool {
        match (self, presented) {
            (Credential::Basic { user, password }, Presented::Basic(pair)) => {
                same(format!("{user}:{password}").as_bytes(), pair)
            }
            (Credential::Bearer(token), Presented::Bearer(given)) => same(token.as_bytes(), given),
            _ => false,
        }
    }
}

/// Reads the credentials of one list from a file (one per line) or an inline
/// value (comma-separated); `origin` names the flag (and variable) they came
/// from in messages. No list configured is an empty one.
///
/// # Errors
/// When the file cannot be read, a line is not a credential, or a list that
/// was configured holds none: configured authentication never silently
/// turns into none.
pub fn load_credentials(file: Option<&Path>, inline: Option<&str>, origin: &str) -> Result<Vec<Credential>, String> {
    let (text, separator, source) = match (file, inline) {
        (Some(path), _) => (
            std::fs::read_to_string(path)
                .map_err(|error| format!("cannot read the credentials file {}: {error}", path.display()))?,
            '\n',
            format!("{origin} {}", path.display()),
        ),
        (None, Some(inline)) => (inline.to_owned(), ',', origin.to_owned()),
        (None, None) => return Ok(Vec::new()),
    };
    let mut credentials = Vec::new();
    for (index, line) in text.split(separator).enumerate() {
        match Credential::parse_line(line) {
            Ok(Some(credential)) => credentials.push(credential),
            Ok(None) => {}
            Err(reason) => {
                let place = if separator == '\n' { "line" } else { "entry" };
                return Err(format!("{source}: {place} {} is not a credential: {reason}", index + 1));
            }
        }
    }
    if credentials.is_empty() {
        return Err(format!(
            "{source} holds no credentials (only blank lines, separators or comments); \
             give at least one, or leave it out to turn authentication off"
        ));
    }
    Ok(credentials)
}

/// A credential as a request's `Authorization` header presents it.
enum Presented {
    /// The decoded `user:password` of a basic header.
    Basic(Vec<u8>),
    /// A bearer token.
    Bearer(Vec<u8>),
}

impl Presented {
    /// Who presented it, without the secret: a basic user name, or `bearer token`.
    fn who(&self) -> String {
        match self {
            Presented::Basic(pair) => {
                let user = pair.split(|byte| *byte == b':').next().unwrap_or_default();
                format!("user {}", String::from_utf8_lossy(user))
            }
            Presented::Bearer(_) => "a bearer token".to_owned(),
        }
    }

    /// Reads the header: the scheme in any case, then the credential.
    fn from_header(value: &HeaderValue) -> Option<Self> {
        let text = value.to_str().ok()?.trim();
        let (scheme, rest) = text.split_once([' ', '\t'])?;
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("basic") {
            STANDARD.decode(rest).ok().map(Presented::Basic)
        } else if scheme.eq_ignore_ascii_case("bearer") {
            Some(Presented::Bearer(rest.as_bytes().to_vec()))
        } else {
            None
        }
    }
}

/// Every credential list and the write mode: what [`Auth::from_policy`] builds from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessPolicy {
    /// Credentials allowed to read.
    pub readers: Vec<Credential>,
    /// Credentials allowed to write (and read) when writes are open.
    pub writers: Vec<Credential>,
    /// Credentials allowed to write in any mode (and read); their writes are logged and counted.
    pub admins: Vec<Credential>,
    /// Who may write over REST.
    pub writes: RestWrites,
}

/// Who may read and who may write. Writers and admins may also read. With
/// no reader listed, reads are open; with only readers listed, no one
/// writes; in GitOps-only mode only admins write.
#[derive(Debug, Default)]
pub struct Auth {
    readers: Vec<Credential>,
    writers: Vec<Credential>,
    admins: Vec<Credential>,
    writes: RestWrites,
    counters: RestWriteCounters,
}

/// What [`Auth::decide`] says of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let it through.
    Allow,
    /// Let it through: a write made with an admin credential, by `who`
    /// (the basic user name, or `bearer token`), to be logged and counted.
    AdminWrite {
        /// Who made it, without the secret.
        who: String,
    },
    /// 401: no credential, or one that does not allow this.
    Unauthenticated,
    /// 403: a write in GitOps-only mode without an admin credential.
    GitOpsOnly,
}

impl Auth {
    /// An access policy of readers and writers with writes open; `None`
    /// when neither list has a credential.
    pub fn new(readers: &[Credential], writers: &[Credential]) -> Option<Self> {
        Self::from_policy(AccessPolicy {
            readers: readers.to_vec(),
            writers: writers.to_vec(),
            ..AccessPolicy::default()
        })
    }

    /// The access `policy` describes; `None` when it lets anyone do
    /// anything (writes open and no credential at all).
    pub fn from_policy(policy: AccessPolicy) -> Option<Self> {
        let AccessPolicy {
            readers,
            writers,
            admins,
            writes,
        } = policy;
        if writes == RestWrites::Open && readers.is_empty() && writers.is_empty() && admins.is_empty() {
            return None;
        }
        Some(Self {
            readers,
            writers,
            admins,
            writes,
            counters: RestWriteCounters::default(),
        })
    }

    /// Counts admin writes and GitOps-only refusals into `counters` (the metrics' own).
    #[must_use]
    pub fn counting_into(mut self, counters: RestWriteCounters) -> Self {
        self.counters = counters;
        self
    }

    /// How requests are authenticated, in a sentence for the start log.
    pub fn describe(auth: Option<&Self>) -> String {
        let Some(auth) = auth else {
            return "authentication is off: anyone may read and write".to_owned();
        };
        let (readers, writers, admins) = (auth.readers.len(), auth.writers.len(), auth.admins.len());
        let reads = if readers == 0 {
            "reads are open".to_owned()
        } else {
            format!("reads need one of {readers} read, {writers} write or {admins} admin credentials")
        };
        let writes = match (auth.writes, writers + admins) {
            (RestWrites::GitOpsOnly, _) if admins == 0 => {
                "writes are GitOps-only: refused over REST (no admin credentials are configured)".to_owned()
            }
            (RestWrites::GitOpsOnly, _) => {
                format!("writes are GitOps-only: over REST only one of {admins} admin credentials writes (logged)")
            }
            (RestWrites::Open, 0) => "writes are refused (no write credentials are configured)".to_owned(),
            (RestWrites::Open, _) => format!("writes need one of {writers} write or {admins} admin credentials"),
        };
        format!("{reads}; {writes}")
    }

    /// Whether a request with this `Authorization` header may do `access`.
    pub fn allows(&self, authorization: Option<&HeaderValue>, access: Access) -> bool {
        matches!(
            self.decide(authorization, access),
            Decision::Allow | Decision::AdminWrite { .. }
        )
    }

    /// What to do with a request with this `Authorization` header that does `access`.
    pub fn decide(&self, authorization: Option<&HeaderValue>, access: Access) -> Decision {
        // Open reads (the lookup path) need no header parsed and no credential compared.
        if access == Access::Read && self.readers.is_empty() {
            return Decision::Allow;
        }
        let presented = authorization.and_then(Presented::from_header);
        // Every credential is compared, so the time taken does not tell which matched.
        let matches = |list: &[Credential]| {
            presented
                .as_ref()
                .is_some_and(|presented| list.iter().fold(false, |found, known| found | known.matches(presented)))
        };
        let (reader, writer, admin) = (matches(&self.readers), matches(&self.writers), matches(&self.admins));
        let may_read = self.readers.is_empty() | reader | writer | admin;
        match access {
            Access::Read if may_read => Decision::Allow,
            Access::Read => Decision::Unauthenticated,
            Access::Write if admin => Decision::AdminWrite {
                who: presented.as_ref().map_or_else(String::new, Presented::who),
            },
            Access::Write => match self.writes {
                RestWrites::Open if writer => Decision::Allow,
                RestWrites::Open => Decision::Unauthenticated,
                // Said to anyone who may read: it names no subject, and it tells
                // a producer with auto-registration on what to change.
                RestWrites::GitOpsOnly if may_read => Decision::GitOpsOnly,
                RestWrites::GitOpsOnly => Decision::Unauthenticated,
            },
        }
    }
}

/// Compares secrets in time that depends only on their lengths.
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.len() == given.len() && expected.iter().zip(given).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// The middleware: 401 unless the request's credential allows it, 403 for a
/// write in GitOps-only mode; an admin write is logged and counted.
pub(super) async fn check(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let Some(auth) = &state.auth else {
        return next.run(request).await;
    };
    let access = Access::of(request.method(), request.uri().path());
    match auth.decide(request.headers().get(header::AUTHORIZATION), access) {
        Decision::Allow => return next.run(request).await,
        Decision::AdminWrite { who } => {
            let method = request.method().clone();
            let path = request.uri().path().to_owned();
            let response = next.run(request).await;
            tracing::warn!(%method, %path, by = %who, status = response.status().as_u16(), "Admin write over REST");
            auth.counters
                .admin_writes
                .get_or_create(&MethodLabel {
                    method: crate::metrics::method_label(&method),
                })
                .inc();
            return response;
        }
        Decision::GitOpsOnly => {
            auth.counters.gitops_refusals.inc();
            return ApiError::gitops_only().into_response();
        }
        Decision::Unauthenticated => {}
    }
    let mut response = ApiError::unauthorized().into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"schemaops\", Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_may_read_and_readers_may_not_write() {
        let reader = Credential::parse("reader-token").unwrap();
        let writer = Credential::parse("ci:s3cret").unwrap();
        let auth = Auth::new(std::slice::from_ref(&reader), std::slice::from_ref(&writer)).unwrap();
        let header = |credential: &Credential| {
            let value = match credential {
                Credential::Basic { user, password } => {
                    format!("Basic {}", STANDARD.encode(format!("{user}:{password}")))
                }
                Credential::Bearer(token) => format!("Bearer {token}"),
            };
            HeaderValue::from_str(&value).unwrap()
        };
        assert!(auth.allows(Some(&header(&reader)), Access::Read));
        assert!(!auth.allows(Some(&header(&reader)), Access::Write));
        assert!(auth.allows(Some(&header(&writer)), Access::Read));
        assert!(auth.allows(Some(&header(&writer)), Access::Write));
        assert!(!auth.allows(None, Access::Read));
        assert!(!auth.allows(Some(&HeaderValue::from_static("Bearer wrong")), Access::Read));
    }

    #[test]
    fn credential_lines_name_their_kind_or_are_told_apart_by_a_colon() {
        assert_eq!(
            Credential::parse("bearer a:b"),
            Some(Credential::Bearer("a:b".to_owned()))
        );
        assert_eq!(
            Credential::parse("BEARER tok"),
            Some(Credential::Bearer("tok".to_owned()))
        );
        assert_eq!(Credential::parse("tok"), Some(Credential::Bearer("tok".to_owned())));
        let basic = Some(Credential::Basic {
            user: "u".to_owned(),
            password: "p:q".to_owned(),
        });
        assert_eq!(Credential::parse("Basic u:p:q"), basic);
        assert_eq!(Credential::parse("u:p:q"), basic);
        assert_eq!(Credential::parse("  # comment"), None);
        assert!(Credential::parse_line("basic nocolon").is_err());
        assert!(Credential::parse_line(":password").is_err());
        assert!(Credential::parse_line("two words").is_err());
    }

    #[test]
    fn a_bad_line_is_named_with_its_number_and_source() {
        let error = load_credentials(None, Some("ok, basic bad"), "--read-credentials").unwrap_err();
        assert!(error.contains("--read-credentials: entry 2"), "{error}");
    }

    #[test]
    fn only_the_post_lookup_and_compatibility_tests_are_read_only_posts() {
        let post = |path| Access::of(&Method::POST, path);
        assert_eq!(post("/subjects/s"), Access::Read);
        assert_eq!(post("/compatibility/subjects/s/versions/latest"), Access::Read);
        assert_eq!(post("/subjects/s/versions"), Access::Write);
        assert_eq!(post("/subjects/"), Access::Write);
        assert_eq!(post("/config"), Access::Write);
        assert_eq!(Access::of(&Method::DELETE, "/subjects/s"), Access::Write);
        assert_eq!(Access::of(&Method::PUT, "/compatibility/x"), Access::Write);
    }

    #[test]
    fn with_only_readers_listed_no_one_writes() {
        let reader = Credential::parse("r").unwrap();
        let auth = Auth::new(std::slice::from_ref(&reader), &[]).unwrap();
        let header = HeaderValue::from_static("Bearer r");
        assert!(auth.allows(Some(&header), Access::Read));
        assert!(!auth.allows(Some(&header), Access::Write));
        assert!(!auth.allows(None, Access::Write));
    }

    #[test]
    fn reads_are_open_when_only_writers_are_listed() {
        let auth = Auth::new(&[], &[Credential::parse("w").unwrap()]).unwrap();
        assert!(auth.allows(None, Access::Read));
        assert!(!auth.allows(None, Access::Write));
        assert!(Auth::new(&[], &[]).is_none());
    }

    #[test]
    fn credentials_never_print_their_secret() {
        let shown = format!("{:?}", Credential::parse("ci:s3cret").unwrap());
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}

//! Optional authentication: HTTP basic or bearer credentials, with reads and
//! writes allowed separately. A refused request gets 401 before any handler
//! runs, so it never learns whether a subject exists.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::{ApiError, ApiState, access_of};

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// GET, HEAD, OPTIONS.
    Read,
    /// Everything else.
    Write,
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
    /// Reads one credential: `user:password` for basic, anything else is a bearer token.
    pub fn parse(line: &str) -> Option<Self> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        Some(match line.split_once(':') {
            Some((user, password)) => Credential::Basic {
                user: user.to_owned(),
                password: password.to_owned(),
            },
            None => Credential::Bearer(line.to_owned()),
        })
    }

    /// The `Authorization` header value that carries this credential.
    fn header_value(&self) -> String {
        match self {
            Credential::Basic { user, password } => format!("Basic {}", STANDARD.encode(format!("{user}:{password}"))),
            Credential::Bearer(token) => format!("Bearer {token}"),
        }
    }
}

/// Who may read and who may write. Writers may also read; with no readers
/// listed, reads are open.
#[derive(Debug, Default)]
pub struct Auth {
    readers: Vec<String>,
    writers: Vec<String>,
}

impl Auth {
    /// An access policy; `None` when neither list has a credential.
    pub fn new(readers: &[Credential], writers: &[Credential]) -> Option<Self> {
        if readers.is_empty() && writers.is_empty() {
            return None;
        }
        Some(Self {
            readers: readers.iter().map(Credential::header_value).collect(),
            writers: writers.iter().map(Credential::header_value).collect(),
        })
    }

    /// Whether a request with this `Authorization` header may do `access`.
    pub fn allows(&self, authorization: Option<&HeaderValue>, access: Access) -> bool {
        let open = match access {
            Access::Read => self.readers.is_empty(),
            Access::Write => self.writers.is_empty(),
        };
        if open {
            return true;
        }
        let Some(given) = authorization.map(HeaderValue::as_bytes) else {
            return false;
        };
        let matches = |list: &[String]| {
            list.iter()
                .fold(false, |found, known| found | same(known.as_bytes(), given))
        };
        match access {
            Access::Read => matches(&self.readers) | matches(&self.writers),
            Access::Write => matches(&self.writers),
        }
    }
}

/// Compares secrets in time that depends only on their lengths.
fn same(expected: &[u8], given: &[u8]) -> bool {
    expected.len() == given.len() && expected.iter().zip(given).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// The middleware: 401 unless the request's credential allows it.
pub(super) async fn check(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let Some(auth) = &state.auth else {
        return next.run(request).await;
    };
    let access = access_of(request.method());
    if auth.allows(request.headers().get(header::AUTHORIZATION), access) {
        return next.run(request).await;
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
        let header = |credential: &Credential| HeaderValue::from_str(&credential.header_value()).unwrap();
        assert!(auth.allows(Some(&header(&reader)), Access::Read));
        assert!(!auth.allows(Some(&header(&reader)), Access::Write));
        assert!(auth.allows(Some(&header(&writer)), Access::Read));
        assert!(auth.allows(Some(&header(&writer)), Access::Write));
        assert!(!auth.allows(None, Access::Read));
        assert!(!auth.allows(Some(&HeaderValue::from_static("Bearer wrong")), Access::Read));
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

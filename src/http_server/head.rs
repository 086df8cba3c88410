//! The size limits on a request's head. A request target longer than
//! [`ServerLimits::max_uri_bytes`] is answered 414; header fields larger than
//! [`ServerLimits::max_header_bytes`] altogether, or more of them than
//! [`ServerLimits::max_header_fields`], are answered 431. Each answer carries
//! Confluent's error JSON (`{"error_code": 414, "message": …}`, as Confluent
//! puts the HTTP status in `error_code` for errors of its web server) and is
//! given before the router sees the request; the connection then closes.
//!
//! hyper has limits of its own while it reads a head: its read buffer, a
//! number of header fields, and a 65,534-byte request target. It answers
//! them itself, with an empty body. [`hyper_buffer`] and [`hyper_headers`]
//! set the first two above ours, so that any head within our limits is
//! read, and one a little over them reaches us and gets the JSON answer.
//! A head far beyond them (a target over 64 KiB, a head over
//! [`hyper_buffer`] bytes, more than [`hyper_headers`] fields), and one
//! hyper cannot parse at all (400), still gets hyper's answer, but the
//! connection puts [`hyper_refusal`]'s JSON answer in its place on the
//! socket, so every answer to a bad head carries the error JSON.

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, Uri};

use super::{ServerLimits, error_response};

/// hyper's request target limit (`MAX_URI_LEN`): no URI limit can be set above it.
pub(super) const HYPER_MAX_URI_BYTES: usize = 65_534;

/// hyper's own default read buffer (`8192 + 4096 * 100`), kept as the least.
const HYPER_DEFAULT_BUFFER: usize = 8192 + 4096 * 100;

/// The read buffer hyper may fill with one head: room for a head at both
/// of our limits, and never less than hyper's default.
pub(super) fn hyper_buffer(limits: &ServerLimits) -> usize {
    (limits.max_uri_bytes + limits.max_header_bytes + 16 * 1024).max(HYPER_DEFAULT_BUFFER)
}

/// The most header fields hyper reads in one head: twice our limit, so that
/// a head a little over it gets our JSON answer. hyper copies 64 bytes of
/// room per field it allows into every head it parses, so this is kept far
/// below the number of fields that fit in the byte limit (1,639 at the
/// default 8 KiB, which cost a tenth of the CPU of a lookup under load).
pub(super) fn hyper_headers(limits: &ServerLimits) -> usize {
    limits.max_header_fields.saturating_mul(2)
}

/// The 414 or 431 answer for a request whose head is over a limit.
pub(super) fn refusal<B>(request: &Request<B>, limits: &ServerLimits) -> Option<Response<Body>> {
    let target = target_bytes(request.uri());
    let bytes = header_bytes(request);
    let count = request.headers().len();
    let (status, message) = if target > limits.max_uri_bytes {
        let limit = limits.max_uri_bytes;
        let message = format!("the request URI is {target} bytes, over the limit of {limit} bytes");
        (StatusCode::URI_TOO_LONG, message)
    } else if bytes > limits.max_header_bytes {
        let limit = limits.max_header_bytes;
        let message = format!("the request's header fields are {bytes} bytes, over the limit of {limit} bytes");
        (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, message)
    } else if count > limits.max_header_fields {
        let limit = limits.max_header_fields;
        let message = format!("the request has {count} header fields, over the limit of {limit}");
        (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, message)
    } else {
        return None;
    };
    Some(error_response(status, message))
}

/// The answer to send instead of `written`, when `written` is hyper's own
/// refusal of a head (`HTTP/1.1 4xx`, `connection: close`, no body): the
/// same status with Confluent's error JSON naming the limit or the problem.
pub(super) fn hyper_refusal(written: &[u8], limits: &ServerLimits) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(written).ok()?;
    let head = text.strip_suffix("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let code: u16 = lines.next()?.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    let fields: Vec<String> = lines.map(str::to_ascii_lowercase).collect();
    let has = |field: &str| fields.iter().any(|line| line == field);
    if !(400..500).contains(&code) || !has("connection: close") || !has("content-length: 0") {
        return None;
    }
    let status = StatusCode::from_u16(code).ok()?;
    let message = match status {
        StatusCode::URI_TOO_LONG => format!("the request URI is over the limit of {} bytes", limits.max_uri_bytes),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => format!(
            "the request's header fields are over the limit of {} bytes or {} fields",
            limits.max_header_bytes, limits.max_header_fields
        ),
        StatusCode::BAD_REQUEST => {
            "the request is not valid HTTP/1.1: its request line or a header field cannot be parsed".to_owned()
        }
        other => other.canonical_reason().unwrap_or("the request was refused").to_owned(),
    };
    let body = serde_json::json!({"error_code": code, "message": message}).to_string();
    let reason = status.canonical_reason().unwrap_or("");
    Some(
        format!(
            "HTTP/1.1 {code} {reason}\r\ncontent-type: application/vnd.schemaregistry.v1+json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

/// The length of the request target as the client sent it.
fn target_bytes(uri: &Uri) -> usize {
    let scheme = uri.scheme_str().map_or(0, |scheme| scheme.len() + "://".len());
    let authority = uri.authority().map_or(0, |authority| authority.as_str().len());
    let path = uri.path_and_query().map_or(0, |path| path.as_str().len());
    scheme + authority + path
}

/// The header fields' size as sent: each `name: value` and its line end.
fn header_bytes<B>(request: &Request<B>) -> usize {
    request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + ": ".len() + value.len() + "\r\n".len())
        .sum()
}

#[cfg(test)]
mod tests {
    use axum::http::header;
    use http_body_util::BodyExt as _;

    use super::*;

    fn limits(uri: usize, header: usize) -> ServerLimits {
        ServerLimits {
            max_uri_bytes: uri,
            max_header_bytes: header,
            ..ServerLimits::DEFAULT
        }
    }

    async fn document(response: Response<Body>) -> serde_json::Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_target_over_the_limit_is_answered_414_with_confluent_error_json() {
        let request = Request::get(format!("/subjects/{}", "a".repeat(100))).body(()).unwrap();
        let response = refusal(&request, &limits(100, 1000)).unwrap();
        assert_eq!(response.status(), StatusCode::URI_TOO_LONG);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/vnd.schemaregistry.v1+json"
        );
        assert_eq!(response.headers()[header::CONNECTION], "close");
        let document = document(response).await;
        assert_eq!(document["error_code"], 414);
        assert_eq!(
            document["message"],
            "the request URI is 110 bytes, over the limit of 100 bytes"
        );
    }

    #[tokio::test]
    async fn header_fields_over_the_limit_are_answered_431_counting_names_values_and_line_ends() {
        // "x-a: " + 93 bytes + CRLF = 100 bytes.
        let request = Request::get("/").header("x-a", "v".repeat(93)).body(()).unwrap();
        assert!(refusal(&request, &limits(100, 100)).is_none(), "exactly at the limit");
        let response = refusal(&request, &limits(100, 99)).unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let document = document(response).await;
        assert_eq!(document["error_code"], 431);
        assert!(
            document["message"]
                .as_str()
                .unwrap()
                .contains("over the limit of 99 bytes"),
            "{document}"
        );
    }

    #[tokio::test]
    async fn more_header_fields_than_the_limit_are_answered_431_naming_it() {
        let request = Request::get("/").header("a", "1").header("b", "2").body(()).unwrap();
        let at_the_limit = ServerLimits {
            max_header_fields: 2,
            ..ServerLimits::DEFAULT
        };
        assert!(refusal(&request, &at_the_limit).is_none());
        let response = refusal(
            &request,
            &ServerLimits {
                max_header_fields: 1,
                ..ServerLimits::DEFAULT
            },
        )
        .unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let document = document(response).await;
        assert_eq!(
            document["message"],
            "the request has 2 header fields, over the limit of 1"
        );
    }

    #[test]
    fn only_hyper_s_own_bodiless_refusals_are_replaced() {
        let limits = ServerLimits::DEFAULT;
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\
                      date: Sun, 06 Dec 2026 03:26:45 GMT\r\n\r\n";
        let replaced = String::from_utf8(hyper_refusal(hyper, &limits).unwrap()).unwrap();
        let (head, body) = replaced.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let document: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(document["error_code"], 431);
        for other in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
        ] {
            assert!(
                hyper_refusal(other, &limits).is_none(),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn the_target_is_measured_as_sent_in_origin_and_absolute_form() {
        assert_eq!(target_bytes(&"/a/b?c=d".parse().unwrap()), 8);
        assert_eq!(target_bytes(&"http://host:1/a?b".parse().unwrap()), 17);
    }

    #[test]
    fn hyper_reads_more_than_our_limits_allow() {
        let defaults = ServerLimits::DEFAULT;
        assert!(hyper_buffer(&defaults) > defaults.max_uri_bytes + defaults.max_header_bytes);
        assert_eq!(hyper_headers(&defaults), 200);
        let large = limits(HYPER_MAX_URI_BYTES, 64 * 1024);
        assert!(hyper_buffer(&large) > HYPER_MAX_URI_BYTES + 64 * 1024);
    }
}

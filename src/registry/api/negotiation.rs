//! Content negotiation as Confluent's REST layer (Jersey) does it: the media
//! types a request body may have and an answer may be given in, `Accept`
//! honoured (406 when nothing it accepts is on offer; a range whose type is
//! `*` matches every type, as Jersey's `MediaType.isCompatible` has it), an unsupported request
//! `Content-Type` refused with 415, and a body in another charset (UTF-16,
//! Latin-1) decoded to UTF-8 before any handler reads it. A request without
//! `Content-Type` is read as JSON, as before. It runs only on a request
//! that matched a route and method (`Router::route_layer`): as in JAX-RS,
//! an unknown path answers 404 and a wrong method 405 whatever the headers.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiState;
use super::error::ApiError;
use super::wire::CONTENT_TYPE;

/// The media types a request body may be sent as.
const REQUEST_TYPES: [&str; 4] = [
    CONTENT_TYPE,
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
];

/// The media types an answer can be given in, the preferred one first.
const ANSWER_TYPES: [&str; 3] = [CONTENT_TYPE, "application/vnd.schemaregistry+json", "application/json"];

/// Negotiates the request's media types, then rewrites the answer's
/// `Content-Type` to the one the client asked for.
pub async fn negotiate(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let Some(answer_type) = answer_type(&accept) else {
        return ApiError::plain(StatusCode::NOT_ACCEPTABLE, "HTTP 406 Not Acceptable").into_response();
    };
    let request = match read_as_utf8(&state, request).await {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let mut response = next.run(request).await;
    let is_ours = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes() == CONTENT_TYPE.as_bytes());
    if is_ours && answer_type != CONTENT_TYPE {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(answer_type));
    }
    response
}

/// The answer type for an `Accept` header: the acceptable range of highest
/// quality that one of ours matches, the preferred one first. A lone `*`
/// is `*/*`.
fn answer_type(accept: &str) -> Option<&'static str> {
    if accept.trim().is_empty() {
        return Some(CONTENT_TYPE);
    }
    let mut ranges: Vec<(f32, String)> = accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            let quality = parts
                .filter_map(|parameter| parameter.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (!media.is_empty() && quality > 0.0).then_some((quality, media))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranges.iter().find_map(|(_, media)| {
        ANSWER_TYPES
            .iter()
            .copied()
            .find(|offered| range_matches(media, offered))
    })
}

/// Whether the media range `range` (lowercase) accepts `offered`: Jersey's
/// rule, where a `*` type matches any type whatever the subtype, and a `*`
/// subtype any subtype of the same type.
fn range_matches(range: &str, offered: &str) -> bool {
    let (range_type, range_subtype) = range.split_once('/').unwrap_or((range, "*"));
    let (offered_type, offered_subtype) = offered.split_once('/').unwrap_or((offered, ""));
    let (range_type, range_subtype) = (range_type.trim(), range_subtype.trim());
    range_type == "*" || (range_type == offered_type && (range_subtype == "*" || range_subtype == offered_subtype))
}

/// Checks a body's media type and decodes its charset to UTF-8.
async fn read_as_utf8(state: &ApiState, request: Request) -> Result<Request, ApiError> {
    if !matches!(*request.method(), Method::POST | Method::PUT) {
        return Ok(request);
    }
    let Some(content_type) = request
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().unwrap_or("\u{0}").to_ascii_lowercase())
        .filter(|value| !value.trim().is_empty())
    else {
        return Ok(request);
    };
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim().to_owned();
    if !REQUEST_TYPES.contains(&media.as_str()) {
        return Err(unsupported());
    }
    let charset = parts
        .filter_map(|parameter| parameter.trim().strip_prefix("charset="))
        .map(|value| value.trim_matches('"').to_owned())
        .next();
    let Some(charset) = charset.filter(|charset| !matches!(charset.as_str(), "utf-8" | "utf8" | "us-ascii")) else {
        return Ok(request);
    };
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, state.body_limit)
        .await
        .map_err(|_| ApiError::body_too_large(state.body_limit))?;
    let text = decode(&bytes, &charset)
        .ok_or_else(|| ApiError::bad_request(format!("the request body is not valid {charset}")))?;
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Request::from_parts(parts, Body::from(text)))
}

fn unsupported() -> ApiError {
    ApiError::plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "HTTP 415 Unsupported Media Type")
}

/// `bytes` in `charset` as UTF-8 text; `None` when they are not valid in it
/// or the charset is not one we read.
fn decode(bytes: &[u8], charset: &str) -> Option<String> {
    let units = |big_endian: bool, bytes: &[u8]| -> Option<String> {
        if !bytes.len().is_multiple_of(2) {
            return None;
        }
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|pair| {
                if big_endian {
                    u16::from_be_bytes([pair[0], pair[1]])
                } else {
                    u16::from_le_bytes([pair[0], pair[1]])
                }
            })
            .collect();
        String::from_utf16(&units).ok()
    };
    match charset {
        "utf-16be" => units(true, bytes),
        "utf-16le" => units(false, bytes),
        // A byte-order mark says which; without one, big-endian (RFC 2781).
        "utf-16" => match bytes {
            [0xFF, 0xFE, rest @ ..] => units(false, rest),
            [0xFE, 0xFF, rest @ ..] => units(true, rest),
            _ => units(true, bytes),
        },
        "iso-8859-1" | "latin1" => Some(bytes.iter().map(|&byte| char::from(byte)).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_picks_the_best_type_on_offer() {
        assert_eq!(answer_type(""), Some(CONTENT_TYPE));
        assert_eq!(answer_type("application/json"), Some("application/json"));
        assert_eq!(answer_type("text/html, */*;q=0.1"), Some(CONTENT_TYPE));
        assert_eq!(
            answer_type("application/json;q=0.5, application/vnd.schemaregistry+json"),
            Some("application/vnd.schemaregistry+json")
        );
        assert_eq!(answer_type("text/html"), None);
        assert_eq!(answer_type("application/json;q=0"), None);
    }

    #[test]
    fn a_wildcard_type_matches_every_subtype_as_in_jersey() {
        // Issue 39 item 2: `*` and `*/anything` are served, as Confluent serves them.
        assert_eq!(answer_type("*"), Some(CONTENT_TYPE));
        assert_eq!(answer_type("*/anything"), Some(CONTENT_TYPE));
        assert_eq!(answer_type("application/*"), Some(CONTENT_TYPE));
        assert_eq!(answer_type("text/*"), None);
        assert_eq!(answer_type("application/xml"), None);
    }

    #[test]
    fn bodies_in_other_charsets_are_decoded() {
        let text = "{\"schema\":\"Café\"}";
        let mut little: Vec<u8> = vec![0xFF, 0xFE];
        little.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode(&little, "utf-16").as_deref(), Some(text));
        let big: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode(&big, "utf-16be").as_deref(), Some(text));
        assert_eq!(decode(&[0x43, 0x61, 0x66, 0xE9], "iso-8859-1").as_deref(), Some("Café"));
        assert_eq!(decode(&[0x00], "utf-16"), None);
        assert_eq!(decode(b"x", "koi8-r"), None);
    }
}

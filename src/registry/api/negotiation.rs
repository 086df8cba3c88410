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
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::wire::CONTENT_TYPE;
use crate::http_server::hook::{After, Before, Hook};

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
/// `Content-Type` to the one the client asked for (a [`Hook`]: only a body
/// in another charset is read before the handler runs).
#[derive(Clone, Copy)]
pub struct Negotiate {
    /// The largest body read to decode its charset.
    pub body_limit: usize,
}

impl Hook for Negotiate {
    /// The answer's media type.
    type Carry = &'static str;

    fn before(&self, request: Request) -> Before<&'static str> {
        let accept = request
            .headers()
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let Some(answer_type) = answer_type(accept) else {
            return Before::Answer(
                ApiError::plain(StatusCode::NOT_ACCEPTABLE, "HTTP 406 Not Acceptable").into_response(),
            );
        };
        match body_charset(&request) {
            Ok(None) => Before::Pass(request, answer_type),
            Ok(Some(charset)) => {
                let body_limit = self.body_limit;
                Before::Prepare(Box::pin(async move {
                    match decoded(request, &charset, body_limit).await {
                        Ok(request) => Ok((request, answer_type)),
                        Err(error) => Err(error.into_response()),
                    }
                }))
            }
            Err(error) => Before::Answer(error.into_response()),
        }
    }

    fn after(&self, answer_type: &'static str, mut response: Response) -> After {
        let is_ours = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes() == CONTENT_TYPE.as_bytes());
        if is_ours && answer_type != CONTENT_TYPE {
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(answer_type));
        }
        After::Done(response)
    }
}

/// The answer type for an `Accept` header: the acceptable range of highest
/// quality that one of ours matches (the earlier range among equals), the
/// preferred one of ours first. A lone `*` is `*/*`.
fn answer_type(accept: &str) -> Option<&'static str> {
    if accept.trim().is_empty() {
        return Some(CONTENT_TYPE);
    }
    let mut best: Option<(f32, &'static str)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim();
        let quality = parts
            .filter_map(|parameter| parameter.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if media.is_empty() || quality <= 0.0 || best.is_some_and(|(held, _)| held >= quality) {
            continue;
        }
        if let Some(offered) = ANSWER_TYPES
            .iter()
            .copied()
            .find(|offered| range_matches(media, offered))
        {
            best = Some((quality, offered));
        }
    }
    best.map(|(_, offered)| offered)
}

/// Whether the media range `range` accepts `offered` (lowercase), ignoring
/// case: Jersey's rule, where a `*` type matches any type whatever the
/// subtype, and a `*` subtype any subtype of the same type.
fn range_matches(range: &str, offered: &str) -> bool {
    let (range_type, range_subtype) = range.split_once('/').unwrap_or((range, "*"));
    let (offered_type, offered_subtype) = offered.split_once('/').unwrap_or((offered, ""));
    let (range_type, range_subtype) = (range_type.trim(), range_subtype.trim());
    range_type == "*"
        || (range_type.eq_ignore_ascii_case(offered_type)
            && (range_subtype == "*" || range_subtype.eq_ignore_ascii_case(offered_subtype)))
}

/// Checks a write's body media type: the charset to decode it from, `None`
/// when it is UTF-8 already (or the request has no body to check).
fn body_charset(request: &Request) -> Result<Option<String>, ApiError> {
    if !matches!(*request.method(), Method::POST | Method::PUT) {
        return Ok(None);
    }
    let Some(content_type) = request
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().unwrap_or("\u{0}").to_ascii_lowercase())
        .filter(|value| !value.trim().is_empty())
    else {
        return Ok(None);
    };
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim();
    if !REQUEST_TYPES.contains(&media) {
        return Err(unsupported());
    }
    let charset = parts
        .filter_map(|parameter| parameter.trim().strip_prefix("charset="))
        .map(|value| value.trim_matches('"').to_owned())
        .next();
    Ok(charset.filter(|charset| !matches!(charset.as_str(), "utf-8" | "utf8" | "us-ascii")))
}

/// The request with its body, in `charset`, decoded to UTF-8.
async fn decoded(request: Request, charset: &str, body_limit: usize) -> Result<Request, ApiError> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, body_limit)
        .await
        .map_err(|_| ApiError::body_too_large(body_limit))?;
    let text = decode(&bytes, charset)
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

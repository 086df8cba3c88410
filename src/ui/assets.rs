//! The stylesheet and the script, compiled into the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("assets/ui.css");
const SCRIPT: &str = include_str!("assets/ui.js");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    super::layout::secure(headers);
    response
}

/// `GET /ui/assets/ui.css`.
pub(super) async fn stylesheet() -> Response {
    asset("text/css; charset=utf-8", STYLESHEET)
}

/// `GET /ui/assets/ui.js`.
pub(super) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

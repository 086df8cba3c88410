//! The frame every page shares: head, header with the navigation, main,
//! and the one script; and the response that carries it, with the
//! security headers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::html::{Html, segment};

/// The Content-Security-Policy of every page: only this origin's own
/// stylesheet and script, forms posting only here, no frames, no plugins,
/// no inline code, no requests anywhere else.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                                           connect-src 'self'; form-action 'self'; base-uri 'none'; \
                                           frame-ancestors 'none'";

/// A rendered page and its status.
#[derive(Debug)]
pub struct Page {
    /// The HTTP status.
    pub status: StatusCode,
    /// The whole document.
    pub body: String,
}

/// Where a page sits, for the header's navigation.
pub enum Place<'a> {
    /// The subject list.
    Subjects,
    /// A page of one subject.
    Subject(&'a str),
}

/// Wraps `content` in the shared frame, titled `title`.
pub fn page(status: StatusCode, title: &str, place: &Place<'_>, content: Html) -> Page {
    let mut html = Html::new();
    html.raw("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .raw("<title>")
        .text(title)
        .raw(" · schemaops</title><link rel=\"stylesheet\" href=\"/ui/assets/ui.css\">")
        .raw("<script src=\"/ui/assets/ui.js\" defer></script></head><body>")
        .raw("<a class=\"skip\" href=\"#main\">Skip to content</a>")
        .raw("<header><nav aria-label=\"Breadcrumb\"><a href=\"/ui/\">schemaops registry</a>");
    if let Place::Subject(subject) = place {
        html.raw(" <span aria-hidden=\"true\">/</span> ")
            .link(&format!("/ui/subjects/{}", segment(subject)), subject);
    }
    html.raw("</nav></header><main id=\"main\"><h1>")
        .text(title)
        .raw("</h1>")
        .append(content)
        .raw("</main></body></html>\n");
    Page {
        status,
        body: html.finish(),
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        secure(headers);
        response
    }
}

/// The headers every UI answer carries.
pub fn secure(headers: &mut axum::http::HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

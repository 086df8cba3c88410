//! One module per page, and what they share: the error page, verdict
//! badges, and reading a subject name from the path.

pub mod diff;
pub mod matrix;
pub mod sandbox;
pub mod search;
pub mod subject;
pub mod subjects;
pub mod version;

use axum::extract::{FromRequestParts, Path};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};

use super::html::Html;
use super::layout::{Place, page};
use crate::compat::Incompatibility;
use crate::registry::{Error, SubjectName};

/// A request the pages cannot answer, shown as a page that says why.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    title: &'static str,
    message: String,
}

impl Problem {
    /// A problem with the request itself.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            title: "Bad request",
            message: message.into(),
        }
    }
}

impl From<Error> for Problem {
    fn from(error: Error) -> Self {
        let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (title, message) = if status.is_server_error() {
            tracing::warn!(error = &error as &dyn std::error::Error, "A page could not be rendered");
            let message = if error.is_transient() {
                "the registry is unavailable just now; try again shortly"
            } else {
                "the registry failed to answer; the details are in its log"
            };
            ("Registry error", message.to_owned())
        } else if status == StatusCode::NOT_FOUND {
            ("Not found", error.to_string())
        } else {
            ("Cannot show this", error.to_string())
        };
        Self { status, title, message }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut content = Html::new();
        content
            .raw("<p class=\"error\" role=\"alert\">")
            .text(&self.message)
            .raw("</p><p><a href=\"/ui/\">All subjects</a></p>");
        page(self.status, self.title, &Place::Subjects, content).into_response()
    }
}

/// The subject named in the path of a page; a path that does not decode,
/// or a name that is not valid, is a page that says so.
pub struct SubjectPath(pub SubjectName);

impl<S: Send + Sync> FromRequestParts<S> for SubjectPath {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(name) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| Problem::bad_request(rejection.body_text()))?;
        Ok(SubjectPath(SubjectName::new(name)?))
    }
}

/// `GET /ui` goes to the list.
pub async fn redirect_to_list() -> Redirect {
    Redirect::permanent("/ui/")
}

/// Any other path under `/ui/`.
pub async fn not_found() -> Problem {
    Problem {
        status: StatusCode::NOT_FOUND,
        title: "Not found",
        message: "there is no such page".to_owned(),
    }
}

/// A badge: "breaks" or "compatible".
pub fn verdict(html: &mut Html, breaks: bool) {
    if breaks {
        html.raw("<span class=\"verdict breaks\">breaks</span>");
    } else {
        html.raw("<span class=\"verdict ok\">compatible</span>");
    }
}

/// A lineage: its value of the compatibility group's property, or that it sets none.
pub fn lineage(html: &mut Html, value: Option<&str>) {
    match value {
        Some(value) => html.raw("<code class=\"lineage\">").text(value).raw("</code>"),
        None => html.raw("<span class=\"muted\">unset</span>"),
    };
}

/// A list of the check's findings, each as its kind, place and message.
pub fn findings(html: &mut Html, found: &[Incompatibility]) {
    if found.is_empty() {
        return;
    }
    html.raw("<ul class=\"why\">");
    for finding in found {
        html.raw("<li><code>")
            .text(&finding.kind.to_string())
            .raw("</code> at <code>")
            .text(&finding.path.to_string())
            .raw("</code>: ")
            .text(&finding.message)
            .raw("</li>");
    }
    html.raw("</ul>");
}

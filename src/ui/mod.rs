//! The registry's web pages, under `/ui/`: the subjects, a subject's
//! history and references, one version's text and contract, a search
//! across every schema's fields and types, the semantic diff of two versions, the
//! compatibility matrix, and a draft sandbox that registers nothing.
//!
//! Rendered on the server ([`html`] escapes every piece of text that is
//! not markup written here); a little plain JavaScript filters lists; the
//! stylesheet and script are compiled into the binary. Every answer
//! carries a strict Content-Security-Policy ([`layout::CONTENT_SECURITY_POLICY`]),
//! so a page loads nothing from anywhere but its own origin. Pages need
//! the same read credentials as the REST API.
//!
//! Sits above [`crate::registry::api`]: it reads through the same
//! [`ApiState`] and the comparisons of [`crate::registry::api::history`].
//! Under the operator it also reads the operator's cache of Schema
//! objects ([`owners`]) to say which one holds each version.

mod assets;
pub mod html;
pub mod layout;
pub mod owners;
mod pages;
mod schema_text;
mod textdiff;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Request, State};
use axum::handler::Handler as _;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::http_server::hook::{After, Before, Hook, HookLayer};
use crate::registry::api::{Access, ApiState};

/// What the pages read: the registry as the API serves it, and, under the
/// operator, the Schema objects that manage each subject.
#[derive(Clone)]
pub struct UiState {
    api: ApiState,
    owners: Option<Arc<dyn owners::Owners>>,
}

impl FromRef<UiState> for ApiState {
    fn from_ref(state: &UiState) -> ApiState {
        state.api.clone()
    }
}

/// The pages' routes, to merge beside the REST API's; `owners` tells which
/// Schema objects manage a subject (the operator's cache), when known.
pub fn router(state: ApiState, owners: Option<Arc<dyn owners::Owners>>) -> Router {
    let gate = || axum::middleware::from_fn_with_state(state.admission.clone(), crate::registry::api::admission_gate);
    Router::new()
        .route("/ui", get(pages::redirect_to_list))
        .route("/ui/", get(pages::subjects::show))
        .route("/ui/search", get(pages::search::show))
        .route("/ui/subjects/{subject}", get(pages::subject::show))
        .route("/ui/subjects/{subject}/versions/{version}", get(pages::version::show))
        .route(
            "/ui/subjects/{subject}/versions/{version}/text",
            get(pages::version::download),
        )
        .route("/ui/subjects/{subject}/diff", get(pages::diff::show.layer(gate())))
        .route("/ui/subjects/{subject}/matrix", get(pages::matrix::show.layer(gate())))
        .route(
            "/ui/subjects/{subject}/sandbox",
            get(pages::sandbox::show).post(pages::sandbox::try_draft.layer(gate())),
        )
        .route("/ui/assets/ui.css", get(assets::stylesheet))
        .route("/ui/assets/ui.js", get(assets::script))
        .route("/ui/{*rest}", get(pages::not_found))
        .layer(axum::middleware::from_fn_with_state(state.clone(), readers_only))
        .with_state(UiState { api: state, owners })
}

/// The REST API's routes with the pages beside them, and a browser's visit
/// to `/` sent on to the pages (see [`SendBrowsersToPages`]).
pub fn beside_api(api: Router, state: ApiState, owners: Option<Arc<dyn owners::Owners>>) -> Router {
    api.merge(router(state, owners)).layer(HookLayer(SendBrowsersToPages))
}

/// The address where a server bound to `address` shows its pages; an
/// unspecified address (`0.0.0.0`, `::`) is shown as the loopback one.
pub fn pages_url(address: SocketAddr) -> String {
    let shown = if address.ip().is_unspecified() {
        let loopback = match address.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        SocketAddr::new(loopback, address.port())
    } else {
        address
    };
    format!("http://{shown}/ui/")
}

/// `GET /` from a browser (an `Accept` that prefers HTML to JSON) is
/// redirected to `/ui/`; every other request, API clients' included, goes
/// on to the REST API, which answers `{}` as Confluent's does.
#[derive(Clone, Copy)]
struct SendBrowsersToPages;

impl Hook for SendBrowsersToPages {
    type Carry = ();

    fn before(&self, request: Request) -> Before<()> {
        let is_root = request.uri().path() == "/" && matches!(*request.method(), Method::GET | Method::HEAD);
        let accept = || {
            request
                .headers()
                .get(header::ACCEPT)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
        };
        if is_root && prefers_html(accept()) {
            return Before::Answer(Redirect::to("/ui/").into_response());
        }
        Before::Pass(request, ())
    }

    fn after(&self, (): (), response: Response) -> After {
        After::Done(response)
    }
}

/// Whether an `Accept` header ranks HTML above every JSON type it names. A
/// wildcard `*/*` counts for neither: a browser sends it with a lower
/// quality after `text/html`, and `curl` sends it alone.
fn prefers_html(accept: &str) -> bool {
    let (mut html, mut json) = (0.0_f32, 0.0_f32);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|parameter| parameter.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "text/html" | "application/xhtml+xml" | "text/*" => html = html.max(quality),
            "application/*" | "*/json" | "application/json" => json = json.max(quality),
            other if other.starts_with("application/vnd.schemaregistry") => json = json.max(quality),
            _ => {}
        }
    }
    html > json
}

/// 401 with a basic-auth challenge unless the request may read.
async fn readers_only(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let allowed = state
        .auth
        .as_ref()
        .is_none_or(|auth| auth.allows(request.headers().get(header::AUTHORIZATION), Access::Read));
    if allowed {
        return next.run(request).await;
    }
    let mut response = (StatusCode::UNAUTHORIZED, "read credentials are needed").into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"schemaops\""),
    );
    layout::secure(headers);
    response
}

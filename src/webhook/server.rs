//! The webhook's HTTP side: an axum router with `POST /validate/schemas`,
//! and serving it over HTTPS through [`crate::http_server`].
//!
//! Bodies that are not AdmissionReviews get HTTP 400 with a plain message;
//! every review gets HTTP 200 with the verdict inside.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use super::review::{self, Admission};
use crate::http_server::{self, ServerLimits};

/// The path the `ValidatingWebhookConfiguration` names.
pub const VALIDATE_SCHEMAS_PATH: &str = "/validate/schemas";

/// The largest review accepted: an object and its old version, each up to
/// the API server's 1.5 MiB object limit, with room to spare.
const BODY_LIMIT: usize = 6 * 1024 * 1024;

/// The webhook's routes.
pub fn router(admission: Arc<Admission>) -> Router {
    Router::new()
        .route(VALIDATE_SCHEMAS_PATH, post(validate))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(admission)
}

async fn validate(State(admission): State<Arc<Admission>>, body: Bytes) -> Response {
    let request = match review::parse(&body) {
        Ok(request) => request,
        Err(error) => {
            tracing::debug!(error = &error as &dyn std::error::Error, "Bad admission review");
            return (StatusCode::BAD_REQUEST, error.to_string()).into_response();
        }
    };
    let response = admission.review(&request).await;
    tracing::debug!(
        uid = request.uid,
        name = request.name,
        allowed = response.allowed,
        code = response.result.code,
        "Admission reviewed"
    );
    axum::Json(review::into_review(response)).into_response()
}

/// Serves `router` over TLS on `listener`, with `limits` on its clients,
/// until `shutdown` resolves, then lets in-flight reviews finish for a few
/// seconds.
///
/// # Errors
/// The I/O error when the listener cannot be handed to the runtime.
pub async fn serve(
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    http_server::serve_tls(listener, tls, router, limits, shutdown).await;
    Ok(())
}

//! The webhook's HTTP side: an axum router with `POST /validate/schemas`,
//! and serving it over HTTPS with axum-server.
//!
//! Bodies that are not AdmissionReviews get HTTP 400 with a plain message;
//! every review gets HTTP 200 with the verdict inside.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum_server::tls_rustls::RustlsConfig;

use super::review::{self, Admission};

/// The path the `ValidatingWebhookConfiguration` names.
pub const VALIDATE_SCHEMAS_PATH: &str = "/validate/schemas";

/// The largest review accepted: an object and its old version, each up to
/// the API server's 1.5 MiB object limit, with room to spare.
const BODY_LIMIT: usize = 6 * 1024 * 1024;

/// How long in-flight reviews may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

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

/// Serves `router` over TLS on `listener` until `shutdown` resolves, then
/// lets in-flight reviews finish for a few seconds.
///
/// # Errors
/// The I/O error that stopped the server.
pub async fn serve(
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(Some(SHUTDOWN_GRACE));
    });
    axum_server::from_tcp_rustls(listener, RustlsConfig::from_config(tls))?
        .handle(handle)
        .serve(router.into_make_service())
        .await
}

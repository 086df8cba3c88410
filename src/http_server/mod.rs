//! Serving an axum [`Router`] over HTTP/1.1 with limits on slow and idle
//! clients: every HTTP server of `schemaops registry` and `schemaops
//! operator` (registry API, health and metrics, admission webhook) runs
//! through [`serve`] or [`serve_tls`].
//!
//! It owns the accept loop, the connection limit, the per-connection
//! timeouts and graceful shutdown. It knows nothing of the routes it serves.
//!
//! - `connection`: one connection's header and idle timeouts.
//! - `body`: the request-body deadline and its `408` reply.
//! - `head`: the limits on a request's target and header fields, and their
//!   `414` and `431` replies.
//! - [`args`]: the command-line flags that set [`ServerLimits`].
//! - [`hook`]: middleware without a box per request, for the routers served.
//!
//! # Guarantees
//! - At most [`ServerLimits::max_connections`] connections are open at once.
//!   At the limit no more are accepted: new clients wait in the kernel's
//!   listen backlog (their request is served once a slot frees) rather than
//!   being accepted and closed, which would turn a burst into errors. When
//!   the backlog is full too, the kernel drops new handshakes and clients
//!   retry them.
//! - Accept errors never spin the loop: running out of file descriptors
//!   (`EMFILE`, `ENFILE`) or memory pauses accepting for a second.
//! - On shutdown the listener closes, idle connections close, and in-flight
//!   requests may finish for up to ten seconds.
//!
//! # Caveats
//! HTTP/1.1 only. `axum::serve` also took HTTP/2 with prior knowledge
//! (`h2c`), but only through a hyper-util feature another crate turns on;
//! the registry's clients speak HTTP/1.1 on plain sockets and the webhook
//! offers only `http/1.1` over ALPN, and HTTP/2 would need limits of its
//! own (streams, resets, frame floods).

pub mod args;
mod body;
mod connection;
mod head;
pub mod hook;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// How long in-flight requests may take to finish after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long accepting pauses after an error that is not one client's fault.
const ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Limits on each client of a server.
///
/// The defaults suit a registry inside a cluster: requests are small JSON
/// documents from a few hundred clients at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// How long a client may take to send a request's line and headers,
    /// from its first byte (from the accept for a new connection).
    /// Default 10 s: a real client sends its head in one write; this only
    /// cuts off clients that trickle it (slowloris).
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may sit between requests. Default
    /// 60 s: longer than the usual pool timeouts of clients (Java's 5 s to
    /// 30 s, reqwest's 90 s is cut short harmlessly), so a busy client keeps
    /// its connection while a forgotten one frees its slot within a minute.
    pub idle_timeout: Duration,
    /// How long a request's body may take to arrive, from the end of its
    /// headers. Default 30 s: the largest body accepted (8 MiB) arrives in
    /// that time at about 2 Mbit/s, far slower than any network a registry
    /// client sits on.
    pub body_timeout: Duration,
    /// The most connections open at once, per server; at least 1. Default
    /// 512: half the usual 1,024-descriptor soft limit (`ulimit -n`), which
    /// leaves room for the store, the Kubernetes watches and outgoing
    /// connections. Raise the descriptor limit before raising this.
    pub max_connections: u32,
    /// The longest request target (path and query) accepted, in bytes; a
    /// longer one is answered 414. Default 8 KiB, the request-line room
    /// Confluent's server (Jetty) gives; at most 65,534, hyper's own limit.
    pub max_uri_bytes: usize,
    /// The most bytes of header fields a request may have, each counted as
    /// `name: value` and its line end; more is answered 431. Default 8 KiB,
    /// Jetty's (so Confluent's) default request header size.
    pub max_header_bytes: usize,
    /// The most header fields a request may have; more is answered 431.
    /// Default 100, as Apache httpd's and Tomcat's: a Kafka client sends
    /// fewer than ten. hyper copies room for twice this many fields into
    /// every head it parses (see `head::hyper_headers`), so a higher limit
    /// costs every request.
    pub max_header_fields: usize,
}

impl ServerLimits {
    /// The production defaults, explained on each field.
    pub const DEFAULT: Self = Self {
        header_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        body_timeout: Duration::from_secs(30),
        max_connections: 512,
        max_uri_bytes: 8 * 1024,
        max_header_bytes: 8 * 1024,
        max_header_fields: 100,
    };
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Serves `router` over plain HTTP/1.1 on `listener` until `shutdown`
/// resolves, then lets in-flight requests finish (see the module docs).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    accept_loop(listener, None, router, limits, shutdown).await;
}

/// Serves `router` over HTTPS (HTTP/1.1 over TLS with `tls`) as [`serve`]
/// does. The TLS handshake must finish within the header timeout.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    accept_loop(listener, Some(TlsAcceptor::from(tls)), router, limits, shutdown).await;
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    router: Router,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections as usize));
    let (stopping, stop) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // Take a slot before accepting, so that at the limit clients wait in the backlog.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) if is_one_client_failing(&error) => continue,
            Err(error) => {
                tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    "Accepting connections failed; pausing"
                );
                drop(slot);
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let router = router.clone();
        let stop = stop.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            connection::run(stream, tls, router, limits, stop).await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    // Every connection holds a slot until it ends: all slots back means all done.
    let all_slots = slots.acquire_many(limits.max_connections);
    if tokio::time::timeout(SHUTDOWN_GRACE, all_slots).await.is_err() {
        tracing::warn!("In-flight requests did not finish in time; stopping anyway");
    }
}

/// An error answered by the server itself rather than by the router:
/// Confluent's error JSON with the HTTP status as `error_code`, and
/// `Connection: close`, as the rest of the request may be unread.
fn error_response(status: StatusCode, message: String) -> Response<Body> {
    let document = serde_json::json!({"error_code": status.as_u16(), "message": message});
    let mut response = Response::new(Body::from(document.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/vnd.schemaregistry.v1+json"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whether an accept error concerns only the connection being accepted.
fn is_one_client_failing(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    )
}

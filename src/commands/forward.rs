//! Writes a follower of the Kafka store cannot make, sent on to the
//! elected leader, as Confluent's followers forward them (to the leader's
//! URL from the group assignment; 50004 when no leader is known, 50003
//! when forwarding fails).
//!
//! While the group elects (an instance joined or left), a write first
//! waits for a leader to be known, for at most twice the session timeout,
//! before any admission slot is taken. A write request is then answered
//! here as usual: only when the store
//! refused it because this instance does not lead (500, 50004) and a leader
//! is known is it sent again to the leader, with the caller's method, path,
//! query, headers (its `Authorization` among them) and body. So reads sent
//! as POST (lookups, compatibility checks) and writes that change nothing
//! never leave the follower, and the leader judges and decides everything
//! it writes. The leader answers after its own reader applied the write;
//! the follower then catches up with the topic (for at most
//! [`READ_YOUR_WRITES_WAIT`]) before it answers, so the caller reads its
//! write back from either instance.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::registry::Registry;
use crate::registry::api::ApiError;
use crate::registry::embedded::kafka::election::{Leadership, Role};

/// Marks a request one instance forwarded, so that it is never forwarded
/// again (two instances that disagree for a moment on who leads would
/// otherwise send it back and forth).
const FORWARDED: HeaderName = HeaderName::from_static("x-schemaops-forwarded");

/// How long a forwarded write may take at the leader.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the follower waits to read a forwarded write back.
pub const READ_YOUR_WRITES_WAIT: Duration = Duration::from_secs(5);

/// The largest answer read to tell why a write was refused.
const REFUSAL_BYTES: usize = 64 * 1024;

/// Confluent's error code for a write refused for want of a leader.
const UNKNOWN_LEADER: i64 = 50004;

/// What forwarding needs.
pub struct Forwarder {
    leadership: Arc<Leadership>,
    registry: Arc<dyn Registry>,
    client: reqwest::Client,
    body_limit: usize,
    election_wait: Duration,
}

impl Forwarder {
    /// A forwarder for this instance's `leadership`, which catches up
    /// `registry` after a forwarded write; writes wait for an election up
    /// to twice `session_timeout`.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(
        leadership: Arc<Leadership>,
        registry: Arc<dyn Registry>,
        body_limit: usize,
        session_timeout: Duration,
    ) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        crate::registry::tls::add_system_roots(&mut roots);
        let tls = crate::registry::tls::client_builder(roots)
            .map_err(|error| format!("cannot set up TLS for forwarding writes: {error}"))?
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(FORWARD_TIMEOUT)
            .user_agent(concat!("schemaops/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot build the client that forwards writes: {error}"))?;
        Ok(Self {
            leadership,
            registry,
            client,
            body_limit,
            election_wait: session_timeout * 2,
        })
    }
}

/// The middleware: answers here, and forwards writes the store refused for
/// want of leadership.
pub async fn forward_writes(State(forwarder): State<Arc<Forwarder>>, request: Request, next: Next) -> Response {
    if !matches!(*request.method(), Method::POST | Method::PUT | Method::DELETE)
        || request.headers().contains_key(&FORWARDED)
    {
        return next.run(request).await;
    }
    // One budget for all the waiting this request does.
    let deadline = tokio::time::Instant::now() + forwarder.election_wait;
    forwarder.wait_for_a_known_leader(deadline).await;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, forwarder.body_limit).await else {
        return ApiError::body_too_large(forwarder.body_limit).into_response();
    };
    let mut local = run_here(&next, &parts, &body).await;
    let leader_url = loop {
        let refusal = match refused_for_want_of_a_leader(local).await {
            Ok(refusal) => refusal,
            Err(answer) => return answer,
        };
        match forwarder.leadership.role() {
            Role::Follower { leader_url } => break leader_url,
            // The election moved on while the write ran (this instance was
            // voted out, or just elected): once it settles, answer again.
            Role::Unknown => {
                forwarder.wait_for_a_known_leader(deadline).await;
                if forwarder.leadership.role() == Role::Unknown {
                    return refusal;
                }
                local = run_here(&next, &parts, &body).await;
            }
            Role::Leader { .. } => return refusal,
        }
    };
    let uri = &parts.uri;
    let path = uri.path_and_query().map_or(uri.path(), |path| path.as_str());
    let url = format!("{}{path}", leader_url.trim_end_matches('/'));
    let mut roles = forwarder.leadership.subscribe();
    let sent = tokio::select! {
        sent = send(&forwarder.client, parts.method.clone(), &url, &parts.headers, body) => sent,
        // A leader that was voted out (paused, cut off) may never answer;
        // it cannot append either (its successor fenced it), so give up.
        _ = roles.wait_for(|role| !matches!(role, Role::Follower { leader_url: url } if *url == leader_url)) => {
            return forward_failed(&leader_url, "the leader changed while the write was forwarded");
        }
    };
    match sent {
        Ok(answer) => {
            if answer.status().is_success() {
                // Every read of the embedded registry catches up with the topic first.
                if tokio::time::timeout(READ_YOUR_WRITES_WAIT, forwarder.registry.max_schema_id())
                    .await
                    .is_err()
                {
                    tracing::warn!(%url, "A forwarded write was not read back in time");
                }
            }
            answer
        }
        Err(error) => {
            tracing::warn!(%url, error = &error as &dyn std::error::Error, "Could not forward a write to the leader");
            forward_failed(&leader_url, "the leader could not be reached")
        }
    }
}

impl Forwarder {
    /// Waits, until `deadline` at the latest, while no leader is known.
    async fn wait_for_a_known_leader(&self, deadline: tokio::time::Instant) {
        let mut roles = self.leadership.subscribe();
        let known = roles.wait_for(|role| *role != Role::Unknown);
        let _ = tokio::time::timeout_at(deadline, known).await;
    }
}

/// Answers the request on this instance.
async fn run_here(next: &Next, parts: &axum::http::request::Parts, body: &Bytes) -> Response {
    next.clone()
        .run(Request::from_parts(parts.clone(), Body::from(body.clone())))
        .await
}

/// `Ok` with the answer when it is the store's "not the leader" refusal
/// (500, 50004), `Err` with it otherwise: that one is final.
async fn refused_for_want_of_a_leader(answer: Response) -> Result<Response, Response> {
    if answer.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return Err(answer);
    }
    let (parts, body) = answer.into_parts();
    let body = axum::body::to_bytes(body, REFUSAL_BYTES).await.unwrap_or_default();
    let code = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|answer| answer.get("error_code").and_then(serde_json::Value::as_i64));
    let answer = Response::from_parts(parts, Body::from(body));
    if code == Some(UNKNOWN_LEADER) {
        Ok(answer)
    } else {
        Err(answer)
    }
}

/// Confluent's answer when forwarding failed: 500 with code 50003. The
/// write may or may not have been made; the caller may retry.
fn forward_failed(leader_url: &str, why: &str) -> Response {
    let body = serde_json::json!({
        "error_code": 50003,
        "message": format!("Error while forwarding the request to the leader at {leader_url}: {why}"),
    });
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

/// Sends the request to the leader and turns its answer into ours.
async fn send(
    client: &reqwest::Client,
    method: Method,
    url: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, reqwest::Error> {
    let mut request = client.request(method, url).body(body);
    for (name, value) in headers {
        if name != header::HOST && name != header::CONTENT_LENGTH && name != header::CONNECTION {
            request = request.header(name, value);
        }
    }
    let answer = request.header(FORWARDED, "1").send().await?;
    let status = answer.status();
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let bytes = answer.bytes().await?;
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    }
    Ok(response)
}

//! One admission gate for every request that parses or checks schemas
//! (compatibility tests, registrations and lookups, diffs, matrices, and
//! the pages that show them): at most [`AdmissionConfig::permits`] run at
//! once; a request that finds them all taken waits up to
//! [`AdmissionConfig::queue_wait`], then is answered 429 with `Retry-After`.
//!
//! Each admitted request gets a [`Budget`] (memory, time) that its parsing
//! and checking draw on; the budget is cancelled when the request's future
//! is dropped (the client went away), so its checks stop at their next
//! checkpoint instead of running on for nobody.
//!
//! The 429's `error_code` is 42901: Confluent's codes are the HTTP status
//! followed by two digits, and a client that reads only the status sees 429,
//! the status Confluent's own clients retry on.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Semaphore;

use super::error::ErrorBody;
use super::wire::json_response;
use crate::compat::budget::{Budget, BudgetLimits};
use crate::registry::request_budget;

/// The routes whose requests parse or check schemas, by method and template:
/// the handlers the routers put behind [`gate`], and the operations the
/// OpenAPI document says may answer 429 and 503. A test checks that each one
/// is gated.
pub(crate) const HEAVY_ROUTES: &[(Method, &str)] = &[
    (Method::POST, "/subjects/{subject}"),
    (Method::POST, "/subjects/{subject}/versions"),
    (Method::POST, "/compatibility/subjects/{subject}/versions"),
    (Method::POST, "/compatibility/subjects/{subject}/versions/{version}"),
    (Method::POST, "/compatibility/subjects/{subject}/matrix"),
    (
        Method::GET,
        "/compatibility/subjects/{subject}/versions/{version}/matrix",
    ),
    (Method::GET, "/subjects/{subject}/versions/{version}/diff/{other}"),
    (Method::GET, "/ui/subjects/{subject}/diff"),
    (Method::GET, "/ui/subjects/{subject}/matrix"),
    (Method::POST, "/ui/subjects/{subject}/sandbox"),
];

/// Whether requests of `method` to the route `template` go through the gate.
pub(crate) fn is_heavy(method: &Method, template: &str) -> bool {
    HEAVY_ROUTES
        .iter()
        .any(|(heavy_method, heavy)| heavy_method == method && *heavy == template)
}

/// How many checks may run at once, how long a request waits for a turn,
/// and each request's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Requests that parse or check at once.
    pub permits: usize,
    /// How long a request waits for a turn before it is answered 429.
    pub queue_wait: Duration,
    /// Each admitted request's memory and time.
    pub budget: BudgetLimits,
}

impl AdmissionConfig {
    /// The default memory budget per request: 1 GiB.
    pub const DEFAULT_MEMORY_MIB: usize = 1024;
    /// The default time budget per request: 30 s.
    pub const DEFAULT_CHECK_SECONDS: u64 = 30;
    /// The default queue wait: 2 s.
    pub const DEFAULT_QUEUE_MILLIS: u64 = 2_000;

    /// The default number of permits: the CPUs this process may use,
    /// at least 2 (a short check need not wait for a long one) and at most 4.
    pub fn default_permits() -> usize {
        std::thread::available_parallelism()
            .map_or(2, std::num::NonZero::get)
            .clamp(2, 4)
    }
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            permits: Self::default_permits(),
            queue_wait: Duration::from_millis(Self::DEFAULT_QUEUE_MILLIS),
            budget: BudgetLimits {
                memory_bytes: Self::DEFAULT_MEMORY_MIB * 1024 * 1024,
                time: Duration::from_secs(Self::DEFAULT_CHECK_SECONDS),
            },
        }
    }
}

/// The gauges and counters the gate keeps; cheap to clone, clones count
/// into the same metrics.
#[derive(Debug, Clone, Default)]
pub struct AdmissionMetrics {
    /// Requests answered 429 because every permit stayed taken.
    pub rejected: Counter,
    /// Requests holding a permit now.
    pub in_flight: Gauge,
}

/// The gate: shared by every route it guards.
#[derive(Debug)]
pub struct Admission {
    config: AdmissionConfig,
    permits: Semaphore,
    metrics: AdmissionMetrics,
}

impl Admission {
    /// A gate of `config` that counts into `metrics`.
    pub fn new(config: AdmissionConfig, metrics: AdmissionMetrics) -> Self {
        Self {
            permits: Semaphore::new(config.permits.max(1)),
            config,
            metrics,
        }
    }

    /// The 429 for a request that found no permit in time.
    fn busy(&self) -> Response {
        self.metrics.rejected.inc();
        let seconds = self.config.queue_wait.as_secs().max(1);
        let mut response = json_response(&ErrorBody {
            error_code: 42901,
            message: format!(
                "the registry is running as many schema checks as it allows ({}, --max-concurrent-checks); \
                 try again in {seconds} s",
                self.config.permits
            ),
            detail: None,
        });
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        response
    }
}

/// Cancels a request's budget and gives back its gauge when the request's
/// future ends, answered or dropped.
struct Admitted<'a> {
    budget: Budget,
    in_flight: &'a Gauge,
    /// Set once the response is ready; dropped before, the client went away.
    answered: bool,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.budget.cancel();
        self.in_flight.dec();
        if !self.answered {
            tracing::info!("A client went away before its answer; its check stops at the next checkpoint");
        }
    }
}

/// The most of a refused request's body read and dropped before the 429.
const MAX_DISCARDED_BYTES: usize = 64 * 1024 * 1024;

/// Reads a refused request's body and drops it, chunk by chunk, so that a
/// client still sending it reads the 429 instead of a broken pipe (the HTTP
/// server's body timeout bounds a client that never finishes).
async fn discard_body(request: Request) {
    use http_body_util::BodyExt as _;
    let mut body = request.into_body();
    let mut read = 0;
    while read < MAX_DISCARDED_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, axum::body::Bytes::len),
            Some(Err(_)) | None => break,
        }
    }
}

/// The middleware, layered on each heavy handler alone (so the requests of
/// every other route never pass it): admits the request through the gate
/// and runs it within its budget. Without a gate (`None`: a router built
/// without limits, as tests and tools build it) the request runs at once.
pub async fn gate(State(admission): State<Option<Arc<Admission>>>, request: Request, next: Next) -> Response {
    let Some(admission) = admission else {
        return next.run(request).await;
    };
    let Ok(Ok(_permit)) = tokio::time::timeout(admission.config.queue_wait, admission.permits.acquire()).await else {
        discard_body(request).await;
        return admission.busy().into_response();
    };
    admission.metrics.in_flight.inc();
    let mut admitted = Admitted {
        budget: Budget::new(admission.config.budget),
        in_flight: &admission.metrics.in_flight,
        answered: false,
    };
    let response = request_budget::scope(admitted.budget.clone(), next.run(request)).await;
    admitted.answered = true;
    drop(admitted);
    response
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;
    use crate::compat::Checker;
    use crate::registry::api::{ApiState, router};
    use crate::registry::embedded::EmbeddedRegistry;
    use crate::registry::embedded::sqlite::SqliteStore;

    /// A request to `template` with its parameters filled in and a small
    /// JSON body, as a client of that route sends it.
    fn request_to(method: &Method, template: &str) -> axum::http::Request<Body> {
        let path = template
            .replace("{subject}", "s")
            .replace("{version}", "1")
            .replace("{other}", "1");
        axum::http::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"schema":"\"int\""}"#))
            .unwrap()
    }

    /// Every route the OpenAPI document calls heavy is behind the gate (a
    /// full gate answers it 429), and a lookup by ID never meets the gate.
    #[tokio::test]
    async fn every_heavy_route_is_gated_and_lookups_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
        let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
        let config = AdmissionConfig {
            permits: 1,
            queue_wait: Duration::ZERO,
            ..AdmissionConfig::default()
        };
        let admission = Arc::new(Admission::new(config, AdmissionMetrics::default()));
        let state = ApiState {
            registry: Arc::new(registry),
            body_limit: 1 << 20,
            auth: None,
            policies: None,
            admission: Some(Arc::clone(&admission)),
        };
        let app = crate::ui::beside_api(router(state.clone()), state, None);
        let _all_taken = admission.permits.acquire().await.unwrap();
        for (method, template) in HEAVY_ROUTES {
            let response = app.clone().oneshot(request_to(method, template)).await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::TOO_MANY_REQUESTS,
                "{method} {template} is not behind the gate"
            );
        }
        for template in ["/schemas/ids/1", "/subjects/{subject}/versions/{version}", "/subjects"] {
            let response = app.clone().oneshot(request_to(&Method::GET, template)).await.unwrap();
            assert_ne!(response.status(), StatusCode::TOO_MANY_REQUESTS, "GET {template}");
        }
    }
}

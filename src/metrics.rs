//! Prometheus metrics: one [`Metrics`] value, built once per process and
//! shared as an `Arc`, rendered on `/metrics` in the text format.
//!
//! Every label comes from a bounded set: a kind, a result, a `Reason`, an
//! HTTP method and status, an axum route *template*, or the registry an
//! object lives in (`default`, or one of the registry connections, which
//! only their authors create). Subject names, IDs, raw paths and error text
//! never become labels. The reconcile core
//! (`controller::schema`) knows nothing of this module; the controller
//! wrapper and an HTTP middleware record.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use rustc_hash::FxHashMap;

use crate::crd::ResourceKind;
use crate::crd::conditions::Reason;
use crate::http_server::hook::{After, Before, Hook, HookLayer};
use crate::registry::Registry;
use crate::registry::api::AdmissionMetrics;
use crate::registry::embedded::kafka::election::{Leadership, Role};

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `endpoint` label of a request that matched no route.
pub const UNMATCHED_ENDPOINT: &str = "unmatched";

/// How one reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done; the next run is the periodic resync or a change.
    Ok,
    /// The reconcile returned an error (the error policy retries).
    Error,
    /// Not done yet, retried early (registry unavailable, a write conflict).
    Requeue,
}

impl ReconcileResult {
    /// The `result` label.
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Ok => "ok",
            ReconcileResult::Error => "error",
            ReconcileResult::Requeue => "requeue",
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    kind: &'static str,
    registry: String,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
    registry: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: String,
    action: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: String,
    method: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: String,
}

/// The `method` label of an admin write.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabel {
    /// The HTTP method.
    pub method: &'static str,
}

/// The counters of REST writes that the registry API's access check keeps:
/// admin writes by HTTP method, and writes refused because writes are
/// GitOps-only. Cheap to clone: clones count into the same metrics.
#[derive(Debug, Clone, Default)]
pub struct RestWriteCounters {
    /// Admin writes, by method.
    pub admin_writes: Family<MethodLabel, Counter>,
    /// Writes refused in GitOps-only mode.
    pub gitops_refusals: Counter,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 1 ms to about 16 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The process's metrics and the Prometheus registry that renders them.
#[derive(Debug)]
pub struct Metrics {
    registry: prometheus_client::registry::Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_duration: HistogramFamily<KindLabels>,
    rejections: Family<ReasonLabels, Counter>,
    policy_violations: Family<PolicyLabels, Counter>,
    requests: Family<RequestLabels, Counter>,
    request_duration: HistogramFamily<EndpointLabels>,
    rest_writes: RestWriteCounters,
    admission: AdmissionMetrics,
    /// The request metrics already created, by endpoint: a request finds
    /// its counter and histogram without building labels (strings) or
    /// locking the families.
    request_handles: RwLock<FxHashMap<String, Vec<RequestHandles>>>,
}

/// One endpoint's request metrics for a method and status.
#[derive(Debug)]
struct RequestHandles {
    method: &'static str,
    status: u16,
    count: Counter,
    duration: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Metrics {
    /// Registers every metric. With `store`, the store-size gauges are read
    /// from it at each scrape (a registry without [`Registry::stats`] shows none).
    pub fn new(store: Option<Arc<dyn Registry>>) -> Self {
        let mut registry = prometheus_client::registry::Registry::default();
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "schemaops_reconciles",
            "Reconciles by kind, registry and result",
            reconciles.clone(),
        );
        let reconcile_duration: HistogramFamily<KindLabels> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "schemaops_reconcile_duration_seconds",
            "How long a reconcile took, in seconds",
            reconcile_duration.clone(),
        );
        let rejections = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "schemaops_rejections",
            "Schemas newly stalled, by condition reason and registry",
            rejections.clone(),
        );
        let policy_violations = Family::<PolicyLabels, Counter>::default();
        registry.register(
            "schemaops_policy_violations",
            "SchemaPolicy violations found in new generations of Schemas and SubjectConfigs, by policy and action",
            policy_violations.clone(),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "schemaops_registry_requests",
            "Registry API requests by route template, method and status",
            requests.clone(),
        );
        let request_duration: HistogramFamily<EndpointLabels> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "schemaops_registry_request_duration_seconds",
            "Registry API request latency by route template, in seconds",
            request_duration.clone(),
        );
        let rest_writes = RestWriteCounters::default();
        registry.register(
            "schemaops_registry_admin_writes",
            "Registry API writes made with an admin credential, by method",
            rest_writes.admin_writes.clone(),
        );
        registry.register(
            "schemaops_registry_gitops_refusals",
            "Registry API writes refused because writes go through Schema and SubjectConfig resources",
            rest_writes.gitops_refusals.clone(),
        );
        let admission = AdmissionMetrics::default();
        registry.register(
            "schemaops_registry_checks_rejected",
            "Registry API requests that parse or check schemas answered 429 because every check slot stayed taken",
            admission.rejected.clone(),
        );
        registry.register(
            "schemaops_registry_checks_in_flight",
            "Registry API requests that parse or check schemas running now",
            admission.in_flight.clone(),
        );
        if let Some(store) = store {
            registry.register_collector(Box::new(StoreSize(store)));
        }
        Self {
            registry,
            reconciles,
            reconcile_duration,
            rejections,
            policy_violations,
            requests,
            request_duration,
            rest_writes,
            admission,
            request_handles: RwLock::default(),
        }
    }

    /// Adds the gauge `schemaops_registry_store_leader`: 1 while this
    /// instance leads the writers of its Kafka store, else 0 (following, or
    /// no leader known), read from `leadership` at each scrape.
    #[must_use]
    pub fn with_store_leadership(mut self, leadership: Arc<Leadership>) -> Self {
        self.registry.register_collector(Box::new(StoreLeader(leadership)));
        self
    }

    /// The REST write counters, for the registry API's access check.
    pub fn rest_write_counters(&self) -> RestWriteCounters {
        self.rest_writes.clone()
    }

    /// The admission gate's metrics, for [`crate::registry::api::Admission`].
    pub fn admission_metrics(&self) -> AdmissionMetrics {
        self.admission.clone()
    }

    /// Records one reconcile of `kind` in `registry` (a
    /// [`RegistryScope::label`](crate::connections::RegistryScope::label)) that took `elapsed`.
    pub fn reconciled(&self, kind: ResourceKind, registry: &str, result: ReconcileResult, elapsed: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                kind: kind.as_str(),
                registry: registry.to_owned(),
                result: result.as_str(),
            })
            .inc();
        self.reconcile_duration
            .get_or_create(&KindLabels { kind: kind.as_str() })
            .observe(elapsed.as_secs_f64());
    }

    /// Records a schema of `registry` newly stalled for `reason`.
    pub fn rejected(&self, registry: &str, reason: Reason) {
        self.rejections
            .get_or_create(&ReasonLabels {
                reason: reason.as_str(),
                registry: registry.to_owned(),
            })
            .inc();
    }

    /// Records a violation of `policy` whose action is `action` (Deny, Warn or Audit).
    pub fn policy_violation(&self, policy: &str, action: &'static str) {
        self.policy_violations
            .get_or_create(&PolicyLabels {
                policy: policy.to_owned(),
                action,
            })
            .inc();
    }

    /// Records one registry API request. `endpoint` is a route template
    /// (or [`UNMATCHED_ENDPOINT`]), never a raw path.
    pub fn request(&self, endpoint: &str, method: &axum::http::Method, status: StatusCode, elapsed: Duration) {
        let method = method_label(method);
        let status = status.as_u16();
        let elapsed = elapsed.as_secs_f64();
        let found = |handles: &FxHashMap<String, Vec<RequestHandles>>| {
            handles.get(endpoint).and_then(|handles| {
                handles
                    .iter()
                    .find(|handle| handle.method == method && handle.status == status)
                    .map(|handle| {
                        handle.count.inc();
                        handle.duration.observe(elapsed);
                    })
            })
        };
        if found(&self.request_handles.read().unwrap_or_else(PoisonError::into_inner)).is_some() {
            return;
        }
        let mut handles = self.request_handles.write().unwrap_or_else(PoisonError::into_inner);
        if found(&handles).is_some() {
            return;
        }
        let handle = RequestHandles {
            method,
            status,
            count: self.requests.get_or_create_owned(&RequestLabels {
                endpoint: endpoint.to_owned(),
                method: method.to_owned(),
                status,
            }),
            duration: self.request_duration.get_or_create_owned(&EndpointLabels {
                endpoint: endpoint.to_owned(),
            }),
        };
        handle.count.inc();
        handle.duration.observe(elapsed);
        handles.entry(endpoint.to_owned()).or_default().push(handle);
    }

    /// Everything, in the text exposition format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// The `method` label: the standard methods, anything else as `OTHER`, so a
/// client cannot grow the label set.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The `endpoint` label of a request: its matched route template.
pub fn endpoint_label(matched: Option<&MatchedPath>) -> &str {
    matched.map_or(UNMATCHED_ENDPOINT, MatchedPath::as_str)
}

/// The store-size gauges, read from the registry at each scrape.
struct StoreSize(Arc<dyn Registry>);

impl std::fmt::Debug for StoreSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSize").finish_non_exhaustive()
    }
}

impl Collector for StoreSize {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = self.0.stats() else {
            return Ok(());
        };
        let gauges = [
            (
                "schemaops_registry_schemas",
                "Schemas (distinct IDs) in the store",
                stats.schemas,
            ),
            ("schemaops_registry_subjects", "Subjects in the store", stats.subjects),
            (
                "schemaops_registry_versions",
                "Subject versions in the store",
                stats.versions,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            let metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric)?;
        }
        Ok(())
    }
}

/// Whether this instance leads its Kafka store's writers, read at each scrape.
#[derive(Debug)]
struct StoreLeader(Arc<Leadership>);

impl Collector for StoreLeader {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let gauge = ConstGauge::new(i64::from(matches!(self.0.role(), Role::Leader { .. })));
        let metric = encoder.encode_descriptor(
            "schemaops_registry_store_leader",
            "1 while this instance leads the writers of its Kafka store, else 0",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(metric)
    }
}

/// Counts and times each request under its route template (a [`Hook`]).
/// Added with `Router::layer` so that unmatched requests count too.
#[derive(Clone)]
struct TrackRequests(Arc<Metrics>);

impl Hook for TrackRequests {
    type Carry = (Instant, Method, Option<MatchedPath>);

    fn before(&self, request: Request) -> Before<Self::Carry> {
        let carry = (
            Instant::now(),
            request.method().clone(),
            request.extensions().get::<MatchedPath>().cloned(),
        );
        Before::Pass(request, carry)
    }

    fn after(&self, (started, method, matched): Self::Carry, response: Response) -> After {
        self.0.request(
            endpoint_label(matched.as_ref()),
            &method,
            response.status(),
            started.elapsed(),
        );
        After::Done(response)
    }
}

/// The `/metrics` handler.
pub async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> Response {
    let mut response = metrics.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// `router` with every request counted, and a `/metrics` route when
/// `serve` is true.
pub fn instrument(router: axum::Router, metrics: Arc<Metrics>, serve: bool) -> axum::Router {
    let router = if serve {
        axum::Router::new()
            .route("/metrics", axum::routing::get(serve_metrics))
            .with_state(Arc::clone(&metrics))
            .merge(router)
    } else {
        router
    };
    router.layer(HookLayer(TrackRequests(metrics)))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Method, Request};
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|line| line.starts_with(prefix))
    }

    #[tokio::test]
    async fn requests_are_labelled_with_the_route_template_not_the_path() {
        let metrics = Arc::new(Metrics::default());
        let api = axum::Router::new().route("/subjects/{subject}/versions", get(|| async { "[]" }));
        let app = instrument(api, Arc::clone(&metrics), true);
        for path in ["/subjects/a/versions", "/subjects/b/versions", "/nope/secret-subject"] {
            let request = Request::builder().uri(path).body(Body::empty()).unwrap();
            app.clone().oneshot(request).await.unwrap();
        }
        let text = metrics.render();
        assert!(
            line(
                &text,
                r#"schemaops_registry_requests_total{endpoint="/subjects/{subject}/versions",method="GET",status="200"} 2"#
            )
            .is_some(),
            "{text}"
        );
        assert!(
            line(
                &text,
                r#"schemaops_registry_requests_total{endpoint="unmatched",method="GET",status="404"} 1"#
            )
            .is_some(),
            "{text}"
        );
        assert!(!text.contains("secret-subject"), "{text}");
        assert!(!text.contains("/subjects/a"), "{text}");
    }

    #[test]
    fn unusual_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "OTHER");
    }

    #[test]
    fn reconciles_and_rejections_render_with_their_labels() {
        let metrics = Metrics::default();
        metrics.reconciled(
            ResourceKind::Schema,
            "default",
            ReconcileResult::Ok,
            Duration::from_millis(3),
        );
        metrics.reconciled(
            ResourceKind::SubjectConfig,
            "ClusterSchemaRegistry/shared",
            ReconcileResult::Requeue,
            Duration::from_millis(3),
        );
        metrics.rejected("SchemaRegistry/team-a/main", Reason::IncompatibleSchema);
        let text = metrics.render();
        for expected in [
            r#"schemaops_reconciles_total{kind="Schema",registry="default",result="ok"} 1"#,
            r#"schemaops_reconciles_total{kind="SubjectConfig",registry="ClusterSchemaRegistry/shared",result="requeue"} 1"#,
            r#"schemaops_reconcile_duration_seconds_count{kind="Schema"} 1"#,
            r#"schemaops_rejections_total{reason="IncompatibleSchema",registry="SchemaRegistry/team-a/main"} 1"#,
        ] {
            assert!(line(&text, expected).is_some(), "missing {expected} in\n{text}");
        }
    }
}

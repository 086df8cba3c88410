//! Scripted request/response tests of the Schema reconcile: a mock API
//! server (`tower_test`) answers the exact requests expected, in order.

use axum::http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::Handle;

use super::*;
use crate::crd::SchemaSpec;
use crate::registry::embedded::EmbeddedRegistry;
use crate::registry::embedded::sqlite::SqliteStore;
use crate::registry::{Registry, VersionFilter};

const NAME: &str = "orders";
const SUBJECT: &str = "orders-value";
const V1: &str =
    r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;
/// V1 with a required field without a default: not BACKWARD compatible.
const V2_INCOMPATIBLE: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"amount","type":"long"}]}"#;
const SCHEMAS: &str = "/apis/schemaops.dev/v1alpha1/namespaces/default/schemas";
const CONFIGS: &str = "/apis/schemaops.dev/v1alpha1/namespaces/default/subjectconfigs";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
/// How long a scenario waits for any request it does not expect.
const QUIET: Duration = Duration::from_millis(300);

#[test]
fn a_reconcile_counts_as_ok_error_or_requeue() {
    let resync = Duration::from_secs(300);
    let ok = |action| reconcile_result(&Ok(action), resync);
    assert_eq!(ok(Action::requeue(resync)), ReconcileResult::Ok);
    assert_eq!(ok(Action::await_change()), ReconcileResult::Ok);
    assert_eq!(ok(Action::requeue(Duration::from_secs(2))), ReconcileResult::Requeue);
    let failed = Err(Error::DeletionBlocked("referenced".to_owned()));
    assert_eq!(reconcile_result(&failed, resync), ReconcileResult::Error);
}

type Responder = Box<dyn FnOnce(&Value) -> Value + Send>;

/// One request the reconcile must make, and the answer it gets.
struct Expected {
    method: Method,
    path_and_query: String,
    content_type: Option<&'static str>,
    respond: Responder,
}

impl Expected {
    fn new(
        method: Method,
        path_and_query: impl Into<String>,
        content_type: Option<&'static str>,
        respond: impl FnOnce(&Value) -> Value + Send + 'static,
    ) -> Self {
        Self {
            method,
            path_and_query: path_and_query.into(),
            content_type,
            respond: Box::new(respond),
        }
    }
}

/// Answers the `expected` requests in order, asserting method, path and
/// query, and content type; then fails if another request arrives within
/// [`QUIET`] or before the client is dropped (the reconcile awaits every
/// answer, so a request it makes keeps the client alive until seen).
/// Resolves to the request bodies (JSON; `Null` when empty).
fn scenario(
    mut handle: Handle<Request<Body>, Response<Body>>,
    expected: Vec<Expected>,
) -> tokio::task::JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let mut bodies = Vec::new();
        for (index, expected) in expected.into_iter().enumerate() {
            let (request, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("request {index} never came: the client went away"));
            let path_and_query = request.uri().path_and_query().map(|p| p.as_str().to_owned());
            assert_eq!(request.method(), expected.method, "request {index}: {path_and_query:?}");
            assert_eq!(
                path_and_query.as_deref(),
                Some(expected.path_and_query.as_str()),
                "request {index}"
            );
            let content_type = request
                .headers()
                .get("content-type")
                .map(|value| value.to_str().unwrap().to_owned());
            assert_eq!(content_type.as_deref(), expected.content_type, "request {index}");
            let bytes = request.into_body().collect_bytes().await.unwrap();
            let body: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap()
            };
            let response = (expected.respond)(&body);
            send.send_response(
                Response::builder()
                    .status(if expected.method == Method::POST { 201 } else { 200 })
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&response).unwrap()))
                    .unwrap(),
            );
            bodies.push(body);
        }
        if let Ok(Some((request, _))) = tokio::time::timeout(QUIET, handle.next_request()).await {
            let (parts, body) = request.into_parts();
            let body = body.collect_bytes().await.unwrap_or_default();
            panic!(
                "unexpected request: {} {} {}",
                parts.method,
                parts.uri,
                String::from_utf8_lossy(&body)
            );
        }
        bodies
    })
}

/// Runs the reconcile of `schema` against `expected`, with `schema` alone
/// in the Schema cache; returns the reconcile's result and the bodies sent.
async fn run(
    registry: &Arc<EmbeddedRegistry>,
    schema: &Schema,
    expected: Vec<Expected>,
) -> (Result<Action, Error>, Vec<Value>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let registry: Arc<dyn Registry> = registry.clone();
    let context = Context::for_tests(client, registry, Checker::default(), std::slice::from_ref(schema));
    let server = scenario(handle, expected);
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        reconcile_schema(Arc::new(schema.clone()), Arc::new(context)),
    )
    .await
    .expect("the reconcile hung: a request was not answered");
    let bodies = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the scenario did not finish: an expected request never came")
        .expect("the scenario failed");
    (result, bodies)
}

async fn registry(folder: &tempfile::TempDir) -> Arc<EmbeddedRegistry> {
    let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
    Arc::new(
        EmbeddedRegistry::open(Arc::new(store), Checker::default())
            .await
            .unwrap(),
    )
}

async fn live_versions(registry: &EmbeddedRegistry) -> Vec<u64> {
    let subject = SubjectName::new(SUBJECT.to_owned()).unwrap();
    match registry.versions(&subject, VersionFilter::Live).await {
        Ok(versions) => versions,
        Err(crate::registry::Error::SubjectNotFound { .. }) => Vec::new(),
        Err(error) => panic!("{error}"),
    }
    .into_iter()
    .map(|version| u64::from(version.get()))
    .collect()
}

fn schema(text: &str, generation: i64, finalizer: bool) -> Schema {
    let mut schema = Schema::new(
        NAME,
        SchemaSpec {
            metadata: None,
            rule_set: None,
            subject: SUBJECT.to_owned(),
            registry_ref: None,
            schema_type: Default::default(),
            schema: Some(text.to_owned()),
            schema_from: None,
            references: Vec::new(),
            deletion_policy: Default::default(),
            management_policy: Default::default(),
        },
    );
    schema.metadata.namespace = Some("default".to_owned());
    schema.metadata.uid = Some("0d1e7a5e-0000-4000-8000-000000000001".to_owned());
    schema.metadata.resource_version = Some("1".to_owned());
    schema.metadata.generation = Some(generation);
    schema.metadata.creation_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    if finalizer {
        schema.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    }
    schema
}

fn empty_config_list() -> Expected {
    Expected::new(Method::GET, format!("{CONFIGS}?"), None, |_| {
        json!({
            "apiVersion": "schemaops.dev/v1alpha1",
            "kind": "SubjectConfigList",
            "metadata": {"resourceVersion": "1"},
            "items": [],
        })
    })
}

/// The status patch; answers with `schema` carrying the patched status.
fn status_patch(schema: &Schema) -> Expected {
    let object = serde_json::to_value(schema).unwrap();
    Expected::new(
        Method::PATCH,
        format!("{SCHEMAS}/{NAME}/status?&force=true&fieldManager=schemaops"),
        Some("application/apply-patch+yaml"),
        move |body| {
            let mut object = object;
            object["status"] = body["status"].clone();
            object
        },
    )
}

/// The event publisher's create; answers with the event as created.
fn event() -> Expected {
    Expected::new(Method::POST, format!("{EVENTS}?"), Some("application/json"), |body| {
        body.clone()
    })
}

fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|condition| condition["type"] == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {status}"))
}

fn assert_condition(status: &Value, type_: &str, value: &str, reason: Option<&str>, generation: i64) {
    let condition = condition(status, type_);
    assert_eq!(condition["status"], value, "{type_}: {condition}");
    assert_eq!(condition["observedGeneration"], generation, "{type_}: {condition}");
    assert!(condition["lastTransitionTime"].is_string(), "{type_}: {condition}");
    if let Some(reason) = reason {
        assert_eq!(condition["reason"], reason, "{type_}: {condition}");
    }
}

fn assert_event(event: &Value, reason: &str, type_: &str) {
    assert_eq!(event["apiVersion"], "events.k8s.io/v1", "{event}");
    assert_eq!(event["kind"], "Event", "{event}");
    assert_eq!(event["reason"], reason, "{event}");
    assert_eq!(event["type"], type_, "{event}");
    assert_eq!(event["action"], "Reconcile", "{event}");
    assert_eq!(event["reportingController"], "schemaops", "{event}");
    assert_eq!(event["metadata"]["namespace"], "default", "{event}");
    assert!(
        event["metadata"]["name"].as_str().unwrap().starts_with("orders."),
        "{event}"
    );
    assert!(event["eventTime"].is_string(), "{event}");
    let regarding = &event["regarding"];
    assert_eq!(regarding["apiVersion"], "schemaops.dev/v1alpha1", "{event}");
    assert_eq!(regarding["kind"], "Schema", "{event}");
    assert_eq!(regarding["name"], NAME, "{event}");
    assert_eq!(regarding["namespace"], "default", "{event}");
}

/// Scenario 1 against `registry`: registers V1, returns the status written.
async fn register_v1(registry: &Arc<EmbeddedRegistry>) -> Value {
    let schema = schema(V1, 1, true);
    let (result, bodies) = run(
        registry,
        &schema,
        vec![empty_config_list(), status_patch(&schema), event()],
    )
    .await;
    result.unwrap();
    assert_eq!(bodies[0], Value::Null, "a list has no body");
    let patch = &bodies[1];
    let keys: Vec<&String> = patch.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "status"], "{patch}");
    assert_eq!(patch["apiVersion"], "schemaops.dev/v1alpha1");
    assert_eq!(patch["kind"], "Schema");
    let status = &patch["status"];
    assert_eq!(status["observedGeneration"], 1, "{status}");
    assert_eq!(status["subject"], SUBJECT, "{status}");
    assert_eq!(status["version"], 1, "{status}");
    assert_eq!(status["id"], 1, "{status}");
    let fingerprint = status["fingerprint"].as_str().unwrap();
    assert!(
        fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()),
        "{fingerprint}"
    );
    assert_eq!(status["conditions"].as_array().unwrap().len(), 3, "{status}");
    assert_condition(status, "Ready", "True", Some("Registered"), 1);
    assert_eq!(
        condition(status, "Ready")["message"],
        "version 1 of subject `orders-value` holds this schema (ID 1)"
    );
    assert_condition(status, "Stalled", "False", None, 1);
    assert_condition(status, "Reconciling", "False", None, 1);
    assert_eq!(
        status["compatibility"],
        json!({"mode": "BACKWARD", "checkedVersions": [], "incompatibilities": [], "total": 0}),
        "{status}"
    );
    assert_event(&bodies[2], "Registered", "Normal");
    assert_eq!(bodies[2]["note"], condition(status, "Ready")["message"]);
    assert_eq!(live_versions(registry).await, [1]);
    status.clone()
}

#[tokio::test]
async fn a_new_schema_is_registered_and_its_status_written_once() {
    let folder = tempfile::tempdir().unwrap();
    let registry = registry(&folder).await;
    register_v1(&registry).await;
}

#[tokio::test]
async fn an_unchanged_schema_only_lists_the_subject_configs() {
    let folder = tempfile::tempdir().unwrap();
    let registry = registry(&folder).await;
    let status = register_v1(&registry).await;
    let mut schema = schema(V1, 1, true);
    schema.status = Some(serde_json::from_value(status).unwrap());
    // No status patch, no event: a reconcile woken by our own write is quiet.
    let (result, bodies) = run(&registry, &schema, vec![empty_config_list()]).await;
    result.unwrap();
    assert_eq!(bodies.len(), 1);
    assert_eq!(live_versions(&registry).await, [1]);
}

#[tokio::test]
async fn an_incompatible_edit_is_rejected_in_the_status_and_by_a_warning() {
    let folder = tempfile::tempdir().unwrap();
    let registry = registry(&folder).await;
    let registered = register_v1(&registry).await;
    let mut schema = schema(V2_INCOMPATIBLE, 2, true);
    schema.status = Some(serde_json::from_value(registered.clone()).unwrap());
    let (result, bodies) = run(
        &registry,
        &schema,
        vec![empty_config_list(), status_patch(&schema), event()],
    )
    .await;
    result.unwrap();
    let patch = &bodies[1];
    assert_eq!(patch["apiVersion"], "schemaops.dev/v1alpha1");
    assert_eq!(patch["kind"], "Schema");
    let status = &patch["status"];
    assert_eq!(status["observedGeneration"], 2, "{status}");
    assert_eq!(status["subject"], SUBJECT, "{status}");
    assert_eq!(status["version"], 1, "{status}");
    assert_eq!(status["id"], 1, "{status}");
    assert_eq!(status["fingerprint"], registered["fingerprint"], "{status}");
    assert_condition(status, "Ready", "False", Some("IncompatibleSchema"), 2);
    assert_condition(status, "Stalled", "True", Some("IncompatibleSchema"), 2);
    assert_condition(status, "Reconciling", "False", None, 2);
    let compatibility = &status["compatibility"];
    assert_eq!(compatibility["total"], 1, "{compatibility}");
    assert_eq!(compatibility["mode"], "BACKWARD", "{compatibility}");
    let incompatibilities = compatibility["incompatibilities"].as_array().unwrap();
    assert_eq!(incompatibilities.len(), 1, "{compatibility}");
    let incompatibility = &incompatibilities[0];
    assert_eq!(
        incompatibility["kind"], "READER_FIELD_MISSING_DEFAULT_VALUE",
        "{incompatibility}"
    );
    assert_eq!(incompatibility["path"], "/fields/1", "{incompatibility}");
    assert_eq!(incompatibility["version"], 1, "{incompatibility}");
    assert_event(&bodies[2], "Rejected", "Warning");
    let note = bodies[2]["note"].as_str().unwrap();
    assert!(note.starts_with("IncompatibleSchema: "), "{note}");
    assert_eq!(live_versions(&registry).await, [1]);
}

#[tokio::test]
async fn a_schema_without_the_finalizer_only_gets_the_finalizer() {
    let folder = tempfile::tempdir().unwrap();
    let registry = registry(&folder).await;
    let schema = schema(V1, 1, false);
    let mut patched = serde_json::to_value(&schema).unwrap();
    patched["metadata"]["finalizers"] = json!([FINALIZER]);
    let (result, bodies) = run(
        &registry,
        &schema,
        vec![Expected::new(
            Method::PATCH,
            format!("{SCHEMAS}/{NAME}?"),
            Some("application/json-patch+json"),
            move |_| patched,
        )],
    )
    .await;
    result.unwrap();
    assert_eq!(
        bodies[0],
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ])
    );
    assert!(
        live_versions(&registry).await.is_empty(),
        "nothing registered before the finalizer"
    );
}

//! `GET /schemaops/search` (issue 41 item 3) on the embedded registry with
//! no socket: a field found across Avro, JSON Schema and Protobuf with its
//! type and place, types and subjects by name, the index kept current as
//! versions are registered and deleted and rebuilt when the registry opens
//! its store again, the limits, and bad input answered with Confluent-style
//! error JSON. Every answer is checked against the OpenAPI document.

mod support;

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use schemaops::compat::Checker;
use schemaops::registry::api::{ApiState, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const VND: &str = "application/vnd.schemaregistry.v1+json";

async fn open(folder: &Path) -> Router {
    let store = Arc::new(SqliteStore::open(&folder.join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    router(ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    })
}

async fn call(app: &Router, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", VND)
        .body(body.map_or_else(Body::empty, |value| Body::from(value.to_string())))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response.headers().get("content-type").cloned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let content_type = content_type.as_ref().and_then(|value| value.to_str().ok());
    if let Err(problem) = support::openapi::check(method, uri, status.as_u16(), content_type, &bytes) {
        panic!("not in the OpenAPI document: {problem}");
    }
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

async fn register(app: &Router, subject: &str, schema: Value) -> Value {
    let (status, body) = call(app, "POST", &format!("/subjects/{subject}/versions"), Some(schema)).await;
    assert_eq!(status, StatusCode::OK, "{subject}: {body}");
    body
}

async fn search(app: &Router, query: &str) -> Value {
    let (status, body) = call(app, "GET", &format!("/schemaops/search?{query}"), None).await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

/// Each element hit as `subject vVERSION FORMAT kind name: type at path`.
fn hits(found: &Value) -> Vec<String> {
    found["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            format!(
                "{} v{} {} {} {}: {} at {}",
                hit["subject"].as_str().unwrap(),
                hit["version"],
                hit["schemaType"].as_str().unwrap(),
                hit["kind"].as_str().unwrap(),
                hit["name"].as_str().unwrap(),
                hit["type"].as_str().unwrap(),
                hit["path"].as_str().unwrap(),
            )
        })
        .collect()
}

const AVRO_ORDER: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
    {"name":"customer_id","type":["null","long"],"default":null},{"name":"total","type":"double"}]}"#;
const JSON_INVOICE: &str = r#"{"type":"object","properties":{
    "customer":{"type":"object","properties":{"customer_id":{"type":"string"}}},"amount":{"type":"number"}}}"#;
const PROTO_SHIPMENT: &str = "syntax = \"proto3\";\npackage shop;\n\
    message Shipment {\n  int64 customer_id = 1;\n  enum Carrier { CARRIER_UNSPECIFIED = 0; }\n  Carrier carrier = 2;\n}\n";

/// Three subjects, one per format, each with a `customer_id`.
async fn seed(app: &Router) {
    register(app, "orders-value", json!({"schema": AVRO_ORDER})).await;
    register(
        app,
        "invoices-value",
        json!({"schema": JSON_INVOICE, "schemaType": "JSON"}),
    )
    .await;
    register(
        app,
        "shipments-value",
        json!({"schema": PROTO_SHIPMENT, "schemaType": "PROTOBUF"}),
    )
    .await;
}

#[tokio::test]
async fn a_field_is_found_in_every_format_with_its_type_and_place() {
    let folder = tempfile::tempdir().unwrap();
    let app = open(folder.path()).await;
    seed(&app).await;
    let found = search(&app, "q=Customer_ID&kind=field").await;
    assert_eq!(
        hits(&found),
        [
            "shipments-value v1 PROTOBUF field customer_id: int64 at shop.Shipment.customer_id",
            "invoices-value v1 JSON field customer_id: string at #/properties/customer/properties/customer_id",
            "orders-value v1 AVRO field customer_id: null | long at shop.Order.customer_id",
        ],
        "newest schema first"
    );
    assert_eq!(found["more"], false);
    assert_eq!(found["subjects"], json!([]));
    // A part of a name; `field` is the default kind.
    let partial = search(&app, "q=custom").await;
    assert_eq!(hits(&partial).len(), 4, "customer and three customer_id: {partial}");
    assert!(
        hits(&partial)[0].starts_with("invoices-value v1 JSON field customer: object"),
        "{partial}"
    );
}

#[tokio::test]
async fn types_and_subjects_are_found_by_name() {
    let folder = tempfile::tempdir().unwrap();
    let app = open(folder.path()).await;
    seed(&app).await;
    let types = search(&app, "q=carrier&kind=type").await;
    assert_eq!(
        hits(&types),
        ["shipments-value v1 PROTOBUF enum Carrier: enum at shop.Shipment.Carrier"]
    );
    let records = search(&app, "q=order&kind=type").await;
    assert_eq!(
        hits(&records),
        ["orders-value v1 AVRO record Order: record at shop.Order"]
    );
    let subjects = search(&app, "q=VALUE&kind=subject").await;
    assert_eq!(
        subjects["subjects"],
        json!([
            {"subject": "invoices-value", "latestVersion": 1, "schemaType": "JSON"},
            {"subject": "orders-value", "latestVersion": 1, "schemaType": "AVRO"},
            {"subject": "shipments-value", "latestVersion": 1, "schemaType": "PROTOBUF"},
        ])
    );
    assert_eq!(subjects["elements"], json!([]));
}

#[tokio::test]
async fn the_index_follows_registrations_and_deletes_and_is_rebuilt_on_opening() {
    let folder = tempfile::tempdir().unwrap();
    let app = open(folder.path()).await;
    seed(&app).await;
    assert!(hits(&search(&app, "q=loyalty_tier").await).is_empty());

    // A registration is searchable at once.
    let v2 = AVRO_ORDER.replace(
        r#"{"name":"total","type":"double"}"#,
        r#"{"name":"total","type":"double"},{"name":"loyalty_tier","type":"string","default":"none"}"#,
    );
    register(&app, "orders-value", json!({"schema": v2})).await;
    assert_eq!(
        hits(&search(&app, "q=loyalty_tier").await),
        ["orders-value v2 AVRO field loyalty_tier: string at shop.Order.loyalty_tier"]
    );
    assert_eq!(
        hits(&search(&app, "q=customer_id").await).len(),
        4,
        "both versions of orders"
    );

    // A soft-deleted version drops out; a deleted subject too.
    let (status, body) = call(&app, "DELETE", "/subjects/orders-value/versions/2", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(hits(&search(&app, "q=loyalty_tier").await).is_empty());
    let (status, body) = call(&app, "DELETE", "/subjects/invoices-value", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(&app, "DELETE", "/subjects/invoices-value?permanent=true", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let left = search(&app, "q=customer_id").await;
    assert_eq!(
        hits(&left),
        [
            "shipments-value v1 PROTOBUF field customer_id: int64 at shop.Shipment.customer_id",
            "orders-value v1 AVRO field customer_id: null | long at shop.Order.customer_id",
        ]
    );
    let subjects = search(&app, "q=invoices&kind=subject").await;
    assert_eq!(subjects["subjects"], json!([]));

    // The same answers from a registry that loads the store afresh.
    drop(app);
    let reopened = open(folder.path()).await;
    assert_eq!(search(&reopened, "q=customer_id").await, left);
    // The same content registered again under a new subject is found there.
    register(&reopened, "archive-value", json!({"schema": v2})).await;
    assert_eq!(
        hits(&search(&reopened, "q=loyalty_tier").await),
        ["archive-value v1 AVRO field loyalty_tier: string at shop.Order.loyalty_tier"]
    );
}

#[tokio::test]
async fn answers_are_capped_and_say_there_is_more() {
    let folder = tempfile::tempdir().unwrap();
    let app = open(folder.path()).await;
    for index in 0..7 {
        let schema = format!(r#"{{"type":"record","name":"R{index}","fields":[{{"name":"event_id","type":"long"}}]}}"#);
        register(&app, &format!("events-{index}"), json!({"schema": schema})).await;
    }
    let capped = search(&app, "q=event_id&limit=5").await;
    assert_eq!(hits(&capped).len(), 5);
    assert_eq!(capped["more"], true);
    let all = search(&app, "q=event_id&limit=7").await;
    assert_eq!((hits(&all).len(), &all["more"]), (7, &json!(false)));
    let subjects = search(&app, "q=events&kind=subject&limit=2").await;
    assert_eq!(subjects["subjects"].as_array().unwrap().len(), 2);
    assert_eq!(subjects["more"], true);
    let longest = "x".repeat(100);
    assert_eq!(search(&app, &format!("q={longest}")).await["elements"], json!([]));
}

#[tokio::test]
async fn bad_queries_get_confluent_style_errors() {
    let folder = tempfile::tempdir().unwrap();
    let app = open(folder.path()).await;
    let too_long = "x".repeat(101);
    for (query, says) in [
        ("", "`q`"),
        ("q=", "empty"),
        ("q=%20%20", "empty"),
        (&format!("q={too_long}") as &str, "longer than 100"),
        ("q=a%00b", "control characters"),
        ("q=id&kind=column", "unknown kind"),
        ("q=id&limit=0", "between 1 and 500"),
        ("q=id&limit=501", "between 1 and 500"),
        ("q=id&limit=many", "between 1 and 500"),
    ] {
        let (status, body) = call(&app, "GET", &format!("/schemaops/search?{query}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error_code"], 400, "{query}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    let (status, body) = call(&app, "POST", "/schemaops/search?q=id", Some(json!({}))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    assert_eq!(body["error_code"], 405);
}

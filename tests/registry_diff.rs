//! The diff and matrix routes (issue 21), on the embedded registry with no
//! socket: the PlatonicSolid history, the verdict per change and direction,
//! a draft matrix that registers nothing, and the errors of bad input. Every
//! answer is checked against the OpenAPI document.

mod support;

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

fn solid(extra: &str) -> String {
    format!(
        r#"{{"type":"record","name":"PlatonicSolid","namespace":"dev.schemaops.examples","fields":[
        {{"name":"name","type":"string"}},{{"name":"faces","type":"int"}}{extra}]}}"#
    )
}

const VERTICES: &str = r#",{"name":"vertices","type":["null","int"],"default":null}"#;
const EDGES: &str = r#",{"name":"edges","type":"int"}"#;

async fn app() -> (Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
    let registry = EmbeddedRegistry::open(store, Checker::default()).await.unwrap();
    let state = ApiState {
        registry: Arc::new(registry),
        body_limit: 1 << 20,
        auth: None,
        policies: None,
        admission: None,
    };
    (router(state), dir)
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
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// v1, v2 (vertices with a default) under BACKWARD, then v3 (edges without
/// one) registered under NONE so the history holds the breaking step.
async fn platonic_history(app: &Router) {
    let subject = "/subjects/platonic-solid-value";
    for text in [solid(""), solid(VERTICES)] {
        let (status, _) = call(
            app,
            "POST",
            &format!("{subject}/versions"),
            Some(json!({ "schema": text })),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, _) = call(
        app,
        "PUT",
        "/config/platonic-solid-value",
        Some(json!({"compatibility": "NONE"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let v3 = solid(&format!("{VERTICES}{EDGES}"));
    let (status, _) = call(
        app,
        "POST",
        &format!("{subject}/versions"),
        Some(json!({ "schema": v3 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        app,
        "PUT",
        "/config/platonic-solid-value",
        Some(json!({"compatibility": "BACKWARD"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_diff_of_v2_and_v3_shows_edges_added_without_a_default_breaking_backward_only() {
    let (app, _dir) = app().await;
    platonic_history(&app).await;
    let (status, body) = call(&app, "GET", "/subjects/platonic-solid-value/versions/2/diff/3", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["from"]["version"], 2);
    assert_eq!(body["to"]["version"], 3);
    assert_eq!(
        body["compatible"],
        json!({"BACKWARD": false, "FORWARD": true, "FULL": false})
    );
    let changes = body["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{body:#}");
    let edges = &changes[0];
    assert_eq!(edges["kind"], "FIELD_ADDED_WITHOUT_DEFAULT");
    assert_eq!(edges["element"], "edges");
    assert_eq!(edges["path"], "/fields/3");
    assert_eq!(
        (edges["breaksBackward"].clone(), edges["breaksForward"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(edges["backward"][0]["kind"], "READER_FIELD_MISSING_DEFAULT_VALUE");
    assert!(
        edges["backward"][0]["message"].as_str().unwrap().contains("version 2"),
        "{edges}"
    );

    let (status, body) = call(
        &app,
        "GET",
        "/subjects/platonic-solid-value/versions/1/diff/latest",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let kinds: Vec<&str> = body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["FIELD_ADDED_WITH_DEFAULT", "FIELD_ADDED_WITHOUT_DEFAULT"]);
}

#[tokio::test]
async fn the_matrix_of_a_version_and_of_a_draft_judge_every_mode_and_register_nothing() {
    let (app, _dir) = app().await;
    platonic_history(&app).await;
    let (status, body) = call(
        &app,
        "GET",
        "/compatibility/subjects/platonic-solid-value/versions/3/matrix",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["level"], "BACKWARD");
    assert_eq!(body["rows"].as_array().unwrap().len(), 2);
    let mode = |name: &str| {
        body["modes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mode"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(mode("BACKWARD")["compatible"], false);
    assert_eq!(mode("BACKWARD")["checkedVersions"], json!([2]));
    assert_eq!(mode("FORWARD_TRANSITIVE")["compatible"], true);
    assert_eq!(mode("FULL_TRANSITIVE")["checkedVersions"], json!([2, 1]));
    assert_eq!(mode("NONE")["compatible"], true);

    let draft = json!({ "schema": solid(r#",{"name":"vertices","type":"string"}"#) });
    let (status, body) = call(
        &app,
        "POST",
        "/compatibility/subjects/platonic-solid-value/matrix",
        Some(draft),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.get("version").is_none());
    assert_eq!(body["rows"].as_array().unwrap().len(), 3);
    let (_, versions) = call(&app, "GET", "/subjects/platonic-solid-value/versions", None).await;
    assert_eq!(versions, json!([1, 2, 3]), "a draft is never registered");
}

#[tokio::test]
async fn bad_input_gets_confluents_errors() {
    let (app, _dir) = app().await;
    platonic_history(&app).await;
    let (status, body) = call(&app, "GET", "/subjects/nobody/versions/1/diff/2", None).await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (StatusCode::NOT_FOUND, json!(40401))
    );
    let (status, body) = call(&app, "GET", "/subjects/platonic-solid-value/versions/1/diff/9", None).await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (StatusCode::NOT_FOUND, json!(40402))
    );
    let (status, body) = call(&app, "GET", "/subjects/platonic-solid-value/versions/zero/diff/2", None).await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!(42202))
    );
    let draft = json!({ "schema": "{not avro" });
    let (status, body) = call(
        &app,
        "POST",
        "/compatibility/subjects/platonic-solid-value/matrix",
        Some(draft),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!(42201))
    );
}

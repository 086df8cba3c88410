//! The REST API over the embedded registry, called through the router with
//! no socket: every endpoint and every error code, once on a real SQLite file
//! and once on a real PostgreSQL database (see `on_every_store!` at the end).

mod support;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use schemaops::compat::json::JsonPolicy;
use schemaops::compat::{Checker, Limits};
use schemaops::registry::api::{ApiState, Auth, Credential, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::postgres::PostgresStore;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::embedded::store::Store;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// The store a test runs on.
#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

struct Api {
    router: Router,
    _dir: tempfile::TempDir,
}

const VND: &str = "application/vnd.schemaregistry.v1+json";

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"User","fields":[{fields}]}}"#)
}

fn v1() -> String {
    record(r#"{"name":"id","type":"long"}"#)
}

fn v2() -> String {
    record(r#"{"name":"id","type":"long"},{"name":"email","type":"string","default":""}"#)
}

fn breaking() -> String {
    record(r#"{"name":"id","type":"string"},{"name":"email","type":"string"}"#)
}

fn body(schema: &str) -> Value {
    json!({ "schema": schema })
}

impl Api {
    async fn new(backend: Backend) -> Self {
        Self::with(backend, |state| state).await
    }

    async fn with(backend: Backend, configure: impl FnOnce(ApiState) -> ApiState) -> Self {
        Self::build(backend, Checker::new(Limits::default()), configure).await
    }

    async fn build(backend: Backend, checker: Checker, configure: impl FnOnce(ApiState) -> ApiState) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = match backend {
            Backend::Sqlite => Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap()),
            Backend::Postgres => {
                let server = support::postgres::shared().expect("on_every_store! runs this only with PostgreSQL");
                Arc::new(PostgresStore::connect(&server.database().await).await.unwrap())
            }
        };
        let registry = EmbeddedRegistry::open(store, checker).await.unwrap();
        let state = configure(ApiState {
            registry: Arc::new(registry),
            body_limit: 64 * 1024,
            auth: None,
            policies: None,
            admission: None,
        });
        Self {
            router: router(state),
            _dir: dir,
        }
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let (method, uri) = (request.method().to_string(), request.uri().to_string());
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let content_type = response.headers().get("content-type").cloned();
        if status != StatusCode::UNAUTHORIZED {
            assert_eq!(
                response.headers()["content-type"],
                VND,
                "every reply has the registry media type"
            );
        }
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        // Every answer is one the OpenAPI document lists (issue 16).
        let content_type = content_type.as_ref().and_then(|value| value.to_str().ok());
        if let Err(problem) = support::openapi::check(&method, &uri, status.as_u16(), content_type, &bytes) {
            panic!("not in the OpenAPI document: {problem}");
        }
        let mut value =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        without_guid(&mut value);
        (status, value)
    }

    async fn call(&self, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        let body = match body {
            Some(value) => {
                request = request.header("content-type", VND);
                Body::from(value.to_string())
            }
            None => Body::empty(),
        };
        self.send(request.body(body).unwrap()).await
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call("GET", uri, None).await
    }

    async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.call("POST", uri, Some(body)).await
    }

    async fn put(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.call("PUT", uri, Some(body)).await
    }

    async fn delete(&self, uri: &str) -> (StatusCode, Value) {
        self.call("DELETE", uri, None).await
    }

    async fn register(&self, subject: &str, schema: &str) -> (StatusCode, Value) {
        self.post(&format!("/subjects/{subject}/versions"), body(schema)).await
    }
}

/// Removes the `guid` a schema answer carries (issue 19), after checking it
/// is a GUID, so the cases here compare the rest of each answer whole. The
/// GUID's value is checked against Confluent's in `tests/rest_fidelity/`.
fn without_guid(value: &mut Value) {
    if let Some(fields) = value.as_object_mut()
        && let Some(guid) = fields.remove("guid")
    {
        let text = guid.as_str().unwrap_or_default();
        assert!(
            text.parse::<schemaops::registry::Guid>().is_ok(),
            "`guid` is not a GUID: {guid}"
        );
    }
}

fn code(reply: &(StatusCode, Value)) -> i64 {
    reply.1["error_code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error body: {reply:?}"))
}

async fn registering_returns_an_id_and_the_same_schema_twice_creates_nothing(backend: Backend) {
    let api = Api::new(backend).await;
    assert_eq!(
        api.register("users-value", &v1()).await,
        (StatusCode::OK, json!({"id": 1}))
    );
    let reformatted = v1().replace(r#""type":"long""#, r#" "type" : {"type": "long"} "#);
    assert_eq!(
        api.register("users-value", &reformatted).await,
        (StatusCode::OK, json!({"id": 1}))
    );
    assert_eq!(
        api.get("/subjects/users-value/versions").await,
        (StatusCode::OK, json!([1]))
    );
    assert_eq!(
        api.register("other-value", &v1()).await.1,
        json!({"id": 1}),
        "one ID across subjects"
    );
    assert_eq!(api.register("users-value", &v2()).await.1, json!({"id": 2}));
    assert_eq!(api.get("/subjects/users-value/versions").await.1, json!([1, 2]));
}

async fn versions_and_schemas_read_back_in_confluent_shapes(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("users-value", &v1()).await;
    api.register("users-value", &v2()).await;
    let (status, latest) = api.get("/subjects/users-value/versions/latest").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        latest,
        json!({"subject": "users-value", "version": 2, "id": 2, "schema": v2()})
    );
    assert_eq!(api.get("/subjects/users-value/versions/-1").await.1["version"], 2);
    assert_eq!(api.get("/subjects/users-value/versions/1").await.1["id"], 1);
    assert_eq!(
        api.get("/subjects/users-value/versions/1/schema").await.1,
        serde_json::from_str::<Value>(&v1()).unwrap()
    );
    assert_eq!(
        api.get("/schemas/ids/2").await,
        (StatusCode::OK, json!({"schema": v2()}))
    );
    assert_eq!(
        api.get("/schemas/ids/2/schema").await.1,
        serde_json::from_str::<Value>(&v2()).unwrap()
    );
    assert_eq!(api.get("/schemas/ids/1/subjects").await.1, json!(["users-value"]));
    assert_eq!(
        api.get("/schemas/ids/1/versions").await.1,
        json!([{"subject": "users-value", "version": 1}])
    );
    assert_eq!(api.get("/schemas/types").await.1, json!(["JSON", "PROTOBUF", "AVRO"]));
    assert_eq!(api.get("/subjects").await.1, json!(["users-value"]));
    assert_eq!(api.get("/subjects?subjectPrefix=nope").await.1, json!([]));
    assert_eq!(api.get("/schemas").await.1.as_array().unwrap().len(), 2);
    assert_eq!(api.get("/schemas?latestOnly=true").await.1.as_array().unwrap().len(), 1);
    assert_eq!(
        api.get("/subjects/users-value/versions?offset=1&limit=1").await.1,
        json!([2])
    );
    assert_eq!(api.get("/").await, (StatusCode::OK, json!({})));
    assert_eq!(api.get("/contexts").await.1, json!(["."]));
}

async fn lookup_finds_the_version_holding_a_schema(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("users-value", &v1()).await;
    let (status, found) = api
        .post("/subjects/users-value?normalize=False&deleted=False", body(&v1()))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(found["version"], 1);
    assert_eq!(found["id"], 1);
    assert_eq!(code(&api.post("/subjects/users-value", body(&v2())).await), 40403);
    assert_eq!(code(&api.post("/subjects/nobody", body(&v1())).await), 40401);
}

async fn an_incompatible_schema_is_refused_with_409_listing_every_problem(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("users-value", &v1()).await;
    let reply = api.register("users-value", &breaking()).await;
    assert_eq!(reply.0, StatusCode::CONFLICT);
    assert_eq!(code(&reply), 409);
    let message = reply.1["message"].as_str().unwrap();
    assert!(message.contains("2 problems"), "{message}");
    assert!(message.contains("TYPE_MISMATCH at /fields/0/type"), "{message}");
    assert!(
        message.contains("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/1"),
        "{message}"
    );
    assert_eq!(
        api.get("/subjects/users-value/versions").await.1,
        json!([1]),
        "nothing was stored"
    );
}

async fn compatibility_checks_answer_with_and_without_verbose(backend: Backend) {
    let api = Api::new(backend).await;
    let (_, answer) = api
        .post("/compatibility/subjects/new/versions/latest", body(&v1()))
        .await;
    assert_eq!(
        answer,
        json!({"is_compatible": true}),
        "latest of a missing subject is compatible"
    );
    api.register("users-value", &v1()).await;
    let (_, answer) = api
        .post("/compatibility/subjects/users-value/versions", body(&v2()))
        .await;
    assert_eq!(answer, json!({"is_compatible": true}));
    let (_, answer) = api
        .post(
            "/compatibility/subjects/users-value/versions/1?verbose=True",
            body(&breaking()),
        )
        .await;
    assert_eq!(answer["is_compatible"], false);
    assert_eq!(answer["messages"].as_array().unwrap().len(), 2);
    assert!(
        answer["messages"][0]
            .as_str()
            .unwrap()
            .starts_with("[version 1] TYPE_MISMATCH")
    );
    assert_eq!(
        code(
            &api.post("/compatibility/subjects/users-value/versions/7", body(&v2()))
                .await
        ),
        40402
    );
    let (_, answer) = api
        .post(
            "/compatibility/subjects/users-value/versions?verbose=true",
            body("nope"),
        )
        .await;
    assert_eq!(
        answer["is_compatible"], false,
        "an invalid schema is not compatible when verbose"
    );
    assert_eq!(
        code(
            &api.post("/compatibility/subjects/users-value/versions", body("nope"))
                .await
        ),
        42201
    );
}

async fn transitive_levels_check_every_live_version(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("s", &v1()).await;
    api.register("s", &v2()).await;
    let needs_email = record(r#"{"name":"id","type":"long"},{"name":"email","type":"string"}"#);
    assert_eq!(
        api.register("s", &needs_email).await.1["id"],
        3,
        "BACKWARD checks only version 2"
    );
    api.put("/config/t", json!({"compatibility": "BACKWARD_TRANSITIVE"}))
        .await;
    api.register("t", &v1()).await;
    api.register("t", &v2()).await;
    let reply = api.register("t", &needs_email).await;
    assert_eq!(code(&reply), 409);
    assert!(
        reply.1["message"].as_str().unwrap().contains("[version 1]"),
        "{}",
        reply.1
    );
}

async fn config_is_global_with_subject_overrides(backend: Backend) {
    let api = Api::new(backend).await;
    assert_eq!(api.get("/config").await.1, json!({"compatibilityLevel": "BACKWARD"}));
    assert_eq!(
        api.put("/config", json!({"compatibility": "FULL"})).await.1,
        json!({"compatibility": "FULL"})
    );
    assert_eq!(code(&api.get("/config/s").await), 40408);
    assert_eq!(
        api.get("/config/s?defaultToGlobal=true").await.1,
        json!({"compatibilityLevel": "FULL"})
    );
    assert_eq!(
        api.put("/config/s", json!({"compatibility": "NONE"})).await.1,
        json!({"compatibility": "NONE"})
    );
    assert_eq!(api.get("/config/s").await.1, json!({"compatibilityLevel": "NONE"}));
    assert_eq!(api.delete("/config/s").await.1, json!({"compatibilityLevel": "NONE"}));
    // Nothing left to remove: Confluent's 40401, not the 40408 of a read (issue 39 item 4).
    assert_eq!(code(&api.delete("/config/s").await), 40401);
    assert_eq!(api.delete("/config").await.1, json!({"compatibilityLevel": "FULL"}));
    assert_eq!(api.get("/config").await.1, json!({"compatibilityLevel": "BACKWARD"}));
    let reply = api.put("/config", json!({"compatibility": "SIDEWAYS"})).await;
    assert_eq!((reply.0, code(&reply)), (StatusCode::UNPROCESSABLE_ENTITY, 42203));
}

async fn modes_guard_writes(backend: Backend) {
    let api = Api::new(backend).await;
    assert_eq!(api.get("/mode").await.1, json!({"mode": "READWRITE"}));
    assert_eq!(code(&api.get("/mode/s").await), 40409);
    assert_eq!(code(&api.put("/mode", json!({"mode": "SOMETIMES"})).await), 42204);
    api.put("/mode/s", json!({"mode": "READONLY"})).await;
    assert_eq!(code(&api.register("s", &v1()).await), 42205);
    assert_eq!(api.get("/subjects").await.1, json!([]));
    assert_eq!(api.delete("/mode/s").await.1, json!({"mode": "READONLY"}));
    api.register("s", &v1()).await;
    assert_eq!(
        code(&api.put("/mode", json!({"mode": "IMPORT"})).await),
        42205,
        "needs force"
    );
    assert_eq!(
        api.put("/mode?force=true", json!({"mode": "IMPORT"})).await.1,
        json!({"mode": "IMPORT"})
    );
    let imported = json!({"schema": breaking(), "id": 100, "version": 5});
    assert_eq!(
        api.post("/subjects/s/versions", imported).await.1,
        json!({"id": 100}),
        "IMPORT skips checks"
    );
    assert_eq!(api.get("/subjects/s/versions").await.1, json!([1, 5]));
    let clash = json!({"schema": v2(), "id": 100});
    // Confluent refuses an imported ID that names other content with 42205
    // (AbstractSchemaRegistry.checkIfSchemaWithIdExist).
    assert_eq!(code(&api.post("/subjects/s/versions", clash).await), 42205);
    api.put("/mode", json!({"mode": "READWRITE"})).await;
    let chosen = json!({"schema": v2(), "id": 200});
    assert_eq!(code(&api.post("/subjects/s/versions", chosen).await), 42205);
}

async fn import_never_reuses_a_version_or_an_id_nor_exhausts_them(backend: Backend) {
    let api = Api::new(backend).await;
    let doc = |text: &str| record(&format!(r#"{{"name":"id","type":"long","doc":"{text}"}}"#));
    // A subject with versions 1 and 2, version 2 then hard-deleted.
    api.register("kept", &doc("one")).await;
    api.register("kept", &doc("two")).await;
    api.delete("/subjects/kept/versions/2").await;
    assert_eq!(
        api.delete("/subjects/kept/versions/2?permanent=true").await.0,
        StatusCode::OK
    );
    api.put("/mode?force=true", json!({"mode": "IMPORT"})).await;
    let reused = api
        .post(
            "/subjects/kept/versions",
            json!({"schema": doc("other"), "version": 2, "id": 50}),
        )
        .await;
    assert_eq!(reused.0, StatusCode::UNPROCESSABLE_ENTITY, "{reused:?}");
    let message = reused.1["message"].as_str().unwrap();
    assert!(
        message.contains("version 2") && message.contains("never reused"),
        "{message}"
    );
    // The last version number is never given: the counter could not move past it.
    let last = api
        .post(
            "/subjects/top/versions",
            json!({"schema": doc("top"), "version": 2147483647, "id": 60}),
        )
        .await;
    assert_eq!(last.0, StatusCode::UNPROCESSABLE_ENTITY, "{last:?}");
    // The highest ID is fine to import, and leaves the automatic allocator a free ID.
    assert_eq!(
        api.post(
            "/subjects/high/versions",
            json!({"schema": doc("high"), "id": 2147483647, "version": 1})
        )
        .await
        .1,
        json!({"id": 2147483647})
    );
    api.put("/mode", json!({"mode": "READWRITE"})).await;
    let next = api.register("after", &doc("after")).await;
    assert_eq!(next.0, StatusCode::OK, "{next:?}");
    assert_eq!(next.1, json!({"id": 3}), "the smallest ID never used");
    let next = api.register("after2", &doc("after2")).await;
    assert_eq!(next.1, json!({"id": 4}));
    let again = api.register("kept", &doc("three")).await;
    assert_eq!(again.0, StatusCode::OK, "{again:?}");
    assert_eq!(api.get("/subjects/kept/versions").await.1, json!([1, 3]));
}

async fn custom_option_values_are_part_of_a_protobuf_schemas_identity(backend: Backend) {
    let api = Api::new(backend).await;
    let with = |level: &str, extra: &str| {
        let text = format!(
            "syntax = \"proto3\";\npackage shop;\nimport \"google/protobuf/descriptor.proto\";\n\
             extend google.protobuf.FieldOptions {{ string pii = 50001; }}\n\
             extend google.protobuf.MessageOptions {{ int32 tier = 50002; }}\n\
             message Customer {{\n  {extra}\n  string email = 1 [(pii) = \"{level}\"];\n}}\n"
        );
        json!({"schema": text, "schemaType": "PROTOBUF"})
    };
    assert_eq!(
        api.post("/subjects/c/versions", with("mask", "")).await.1,
        json!({"id": 1})
    );
    assert_eq!(
        api.post("/subjects/c/versions", with("mask", "")).await.1,
        json!({"id": 1}),
        "the same options are the same schema"
    );
    let plain = api.post("/subjects/c/versions", with("plain", "")).await;
    assert_eq!(plain.1, json!({"id": 2}), "another option value is another schema");
    let tiered = api
        .post("/subjects/c/versions", with("plain", "option (tier) = 3;"))
        .await;
    assert_eq!(tiered.1, json!({"id": 3}), "a message's custom option counts too");
    assert_eq!(api.get("/subjects/c/versions").await.1, json!([1, 2, 3]));
    let (_, stored) = api.get("/schemas/ids/2").await;
    assert!(stored["schema"].as_str().unwrap().contains("\"plain\""), "{stored}");
}

async fn a_check_too_complex_to_decide_says_so_and_referrers_are_listed_as_ids(backend: Backend) {
    let api = Api::with(backend, |state| ApiState {
        body_limit: 8 * 1024 * 1024,
        ..state
    })
    .await;
    // A chain of $refs deeper than the JSON Schema walk decides.
    let chain = |tail: &str| {
        let mut definitions: Vec<String> = (0..5_000)
            .map(|index| {
                format!(
                    r##""d{index}":{{"type":"object","properties":{{"next":{{"$ref":"#/definitions/d{}"}}}}}}"##,
                    index + 1
                )
            })
            .collect();
        definitions.push(format!(r#""d5000":{{"type":"{tail}"}}"#));
        let text = format!(
            r##"{{"$ref":"#/definitions/d0","definitions":{{{}}}}}"##,
            definitions.join(",")
        );
        json!({"schemaType": "JSON", "schema": text})
    };
    assert_eq!(
        api.post("/subjects/deep/versions", chain("string")).await.0,
        StatusCode::OK
    );
    let refused = api.post("/subjects/deep/versions", chain("integer")).await;
    assert_eq!((refused.0, code(&refused)), (StatusCode::UNPROCESSABLE_ENTITY, 42201));
    let message = refused.1["message"].as_str().unwrap();
    assert!(message.contains("too complex to decide"), "{message}");
    assert!(
        !message.contains("invalid schema"),
        "the schema is not invalid: {message}"
    );

    // A version other schemas refer to names them by ID.
    api.register("base", &v1()).await;
    let referring = json!({
        "schema": r#"{"type":"record","name":"Holder","fields":[{"name":"u","type":"User"}]}"#,
        "references": [{"name": "User", "subject": "base", "version": 1}]
    });
    let id = api.post("/subjects/holder/versions", referring).await.1["id"].clone();
    let refused = api.delete("/subjects/base/versions/1").await;
    assert_eq!(code(&refused), 42206);
    // Confluent's text in `message`, the referrers in `detail` (issue 39).
    let detail = refused.1["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("schema IDs {id}")), "{detail}");
    assert!(!detail.contains("SchemaId"), "{detail}");
}

async fn every_error_the_router_itself_answers_is_confluent_error_json(backend: Backend) {
    let api = Api::new(backend).await;
    for (method, uri, status) in [
        ("PUT", "/schemas/ids/1", StatusCode::METHOD_NOT_ALLOWED),
        ("PATCH", "/subjects", StatusCode::METHOD_NOT_ALLOWED),
        ("GET", "/subjects/%FF%FE/versions", StatusCode::BAD_REQUEST),
        ("GET", "/nowhere", StatusCode::NOT_FOUND),
    ] {
        let reply = api.call(method, uri, None).await;
        assert_eq!(reply.0, status, "{method} {uri}: {reply:?}");
        assert_eq!(
            reply.1["error_code"].as_u64(),
            Some(u64::from(status.as_u16())),
            "{method} {uri}: {reply:?}"
        );
        assert!(
            reply.1["message"].as_str().is_some_and(|message| !message.is_empty()),
            "{method} {uri}: {reply:?}"
        );
    }
}

async fn soft_then_hard_delete_follows_confluent_rules(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("s", &v1()).await;
    api.register("s", &v2()).await;
    assert_eq!(code(&api.delete("/subjects/s/versions/1?permanent=true").await), 40407);
    assert_eq!(api.delete("/subjects/s/versions/1").await.1, json!(1));
    assert_eq!(code(&api.delete("/subjects/s/versions/1").await), 40406);
    assert_eq!(api.get("/subjects/s/versions").await.1, json!([2]));
    assert_eq!(api.get("/subjects/s/versions?deleted=true").await.1, json!([1, 2]));
    assert_eq!(api.get("/subjects/s/versions?deletedOnly=true").await.1, json!([1]));
    assert_eq!(code(&api.get("/subjects/s/versions/1").await), 40402);
    assert_eq!(api.get("/subjects/s/versions/1?deleted=true").await.1["deleted"], true);
    assert_eq!(
        api.get("/schemas/ids/1").await.0,
        StatusCode::OK,
        "soft-deleted schemas stay readable by ID"
    );
    assert_eq!(api.delete("/subjects/s/versions/1?permanent=true").await.1, json!(1));
    assert_eq!(code(&api.get("/schemas/ids/1").await), 40403);
    assert_eq!(code(&api.delete("/subjects/s?permanent=true").await), 40405);
    assert_eq!(api.delete("/subjects/s").await.1, json!([2]));
    assert_eq!(code(&api.delete("/subjects/s").await), 40404);
    assert_eq!(api.get("/subjects").await.1, json!([]));
    assert_eq!(api.get("/subjects?deleted=true").await.1, json!(["s"]));
    assert_eq!(api.delete("/subjects/s?permanent=true").await.1, json!([2]));
    assert_eq!(code(&api.delete("/subjects/s").await), 40401);
    api.register("s", &v2()).await;
    assert_eq!(
        api.get("/subjects/s/versions").await.1,
        json!([3]),
        "versions are never reused"
    );
}

async fn a_referenced_version_cannot_be_deleted(backend: Backend) {
    let api = Api::new(backend).await;
    let address =
        r#"{"type":"record","name":"Address","namespace":"shared","fields":[{"name":"city","type":"string"}]}"#;
    api.register("address", address).await;
    let user = r#"{"type":"record","name":"User","fields":[{"name":"home","type":"shared.Address"}]}"#;
    let request =
        json!({"schema": user, "references": [{"name": "shared.Address", "subject": "address", "version": 1}]});
    assert_eq!(
        api.post("/subjects/user/versions", request.clone()).await.1,
        json!({"id": 2})
    );
    let (_, found) = api.get("/subjects/user/versions/1").await;
    assert_eq!(
        found["references"],
        json!([{"name": "shared.Address", "subject": "address", "version": 1}])
    );
    assert_eq!(api.get("/subjects/address/versions/1/referencedby").await.1, json!([2]));
    let reply = api.delete("/subjects/address/versions/1").await;
    assert_eq!(code(&reply), 42206);
    assert_eq!(code(&api.delete("/subjects/address").await), 42206);
    let dangling =
        json!({"schema": user, "references": [{"name": "shared.Address", "subject": "address", "version": 9}]});
    assert_eq!(code(&api.post("/subjects/user2/versions", dangling).await), 42201);

    // Issue 37 item 6: once the referrer is only soft-deleted, its ID is still served, so a hard
    // delete of what it refers to is refused too (it would leave the referrer unreadable); a soft
    // delete is allowed, as in Confluent.
    assert_eq!(api.delete("/subjects/user/versions/1").await.0, StatusCode::OK);
    assert_eq!(api.delete("/subjects/address/versions/1").await.0, StatusCode::OK);
    let hard = api.delete("/subjects/address/versions/1?permanent=true").await;
    assert_eq!(code(&hard), 42206, "{hard:?}");
    assert_eq!(code(&api.delete("/subjects/address?permanent=true").await), 42206);
    assert_eq!(api.get("/schemas/ids/2").await.0, StatusCode::OK);
    // With the referrer hard-deleted first, the version it referred to can go.
    assert_eq!(
        api.delete("/subjects/user/versions/1?permanent=true").await.0,
        StatusCode::OK
    );
    assert_eq!(
        api.delete("/subjects/address/versions/1?permanent=true").await.0,
        StatusCode::OK
    );
}

/// Issue 39, item 1: JSON Schema `$ref`s into referenced schemas are bounded. A chain of
/// references one level deeper than the registry follows is refused naming the limit (the
/// chain of the limit's length registers, each `$ref` naming the next reference), and `$ref`s that
/// only lead round to each other across two subjects are refused naming the cycle.
async fn json_schema_references_are_followed_within_bounds(backend: Backend) {
    /// How deep the registry follows references (`MAX_REFERENCE_DEPTH`).
    const FOLLOWED: usize = 32;
    let api = Api::new(backend).await;
    let leaf = json!({"schemaType": "JSON", "schema": r#"{"type":"string"}"#});
    assert_eq!(api.post("/subjects/link-0/versions", leaf).await.0, StatusCode::OK);
    for level in 1..=FOLLOWED + 1 {
        let linked = json!({
            "schemaType": "JSON",
            "schema": format!(r#"{{"type":"object","properties":{{"next":{{"$ref":"link-{}.json"}}}}}}"#, level - 1),
            "references": [{"name": format!("link-{}.json", level - 1), "subject": format!("link-{}", level - 1), "version": 1}],
        });
        let reply = api.post(&format!("/subjects/link-{level}/versions"), linked).await;
        if level <= FOLLOWED {
            assert_eq!(reply.0, StatusCode::OK, "level {level}: {reply:?}");
        } else {
            assert_eq!(code(&reply), 42201, "{reply:?}");
            let message = reply.1["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("more than {FOLLOWED} levels deep")),
                "{message}"
            );
        }
    }

    // `elsewhere` is never read on its own, so `b` registers; from `a`, whose `$id` it names,
    // it leads straight back.
    let b = json!({"schemaType": "JSON", "schema": r#"{"type":"object","x-elsewhere":{"$ref":"a.json"}}"#});
    assert_eq!(api.post("/subjects/b/versions", b).await.0, StatusCode::OK);
    let a = json!({
        "schemaType": "JSON",
        "schema": r#"{"$id":"a.json","$ref":"b.json#/x-elsewhere"}"#,
        "references": [{"name": "b.json", "subject": "b", "version": 1}],
    });
    let reply = api.post("/subjects/a/versions", a).await;
    assert_eq!(code(&reply), 42201, "{reply:?}");
    let message = reply.1["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cycle of references") && message.contains("b.json#/x-elsewhere"),
        "{message}"
    );
}

async fn bad_input_gets_confluent_codes_and_changes_nothing(backend: Backend) {
    let api = Api::new(backend).await;
    api.register("s", &v1()).await;
    let invalid = api
        .register(
            "s",
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"integer"}]}"#,
        )
        .await;
    assert_eq!((invalid.0, code(&invalid)), (StatusCode::UNPROCESSABLE_ENTITY, 42201));
    assert!(
        invalid.1["message"]
            .as_str()
            .unwrap()
            .contains("at /fields/0/type: unknown type `integer`")
    );
    let unknown_type = api
        .post("/subjects/s/versions", json!({"schema": "{}", "schemaType": "XML"}))
        .await;
    assert_eq!(code(&unknown_type), 42201);
    let request = Request::post("/subjects/s/versions")
        .body(Body::from("{not json"))
        .unwrap();
    let malformed = api.send(request).await;
    assert_eq!((malformed.0, code(&malformed)), (StatusCode::BAD_REQUEST, 400));
    for bad in ["0", "abc", "2147483648", "-2"] {
        assert_eq!(
            code(&api.get(&format!("/subjects/s/versions/{bad}")).await),
            42202,
            "{bad}"
        );
    }
    assert_eq!(code(&api.get("/subjects/s/versions/2").await), 40402);
    assert_eq!(code(&api.get("/subjects/nobody/versions").await), 40401);
    assert_eq!(code(&api.get("/schemas/ids/99").await), 40403);
    // Confluent's path parameter is an integer: other text matches no route (issue 16).
    assert_eq!(code(&api.get("/schemas/ids/zero").await), 404);
    assert_eq!(code(&api.get("/schemas/ids/0").await), 40403);
    let big = json!({"schema": format!(r#"{{"type":"string","doc":"{}"}}"#, "x".repeat(70 * 1024))});
    let too_large = api.post("/subjects/s/versions", big).await;
    assert_eq!((too_large.0, code(&too_large)), (StatusCode::PAYLOAD_TOO_LARGE, 42209));
    // JAX-RS reads a boolean with Boolean.valueOf and an int with
    // Integer.valueOf (issue 39): `maybe` is false, `x` matches no resource.
    assert_eq!(api.get("/subjects/s/versions?deleted=maybe").await.0, StatusCode::OK);
    assert_eq!(code(&api.get("/subjects?offset=x").await), 404);
    assert_eq!(
        api.get("/associations/resources/-/users?resourceType=topic").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        api.get("/subjects/s/versions").await.1,
        json!([1]),
        "nothing stored changed"
    );
    assert_eq!(api.get("/subjects").await.1, json!(["s"]));
}

async fn subject_names_are_percent_decoded_and_may_hold_any_character(backend: Backend) {
    let api = Api::new(backend).await;
    for (encoded, decoded) in [
        ("google%2Fprotobuf%2Ftimestamp.proto", "google/protobuf/timestamp.proto"),
        ("100%25", "100%"),
        ("%C3%BCn%C3%AFc%C3%B6d%C3%A9", "ünïcödé"),
    ] {
        assert_eq!(api.register(encoded, &v1()).await.0, StatusCode::OK, "{decoded}");
        assert_eq!(
            api.get(&format!("/subjects/{encoded}/versions/1")).await.1["subject"],
            decoded
        );
    }
    assert_eq!(api.get("/subjects").await.1.as_array().unwrap().len(), 3);
    assert_eq!(
        code(&api.register("tab%09inside", &v1()).await),
        42208,
        "control characters are refused"
    );
    assert_eq!(
        code(&api.register("", &v1()).await),
        42208,
        "an empty subject is refused"
    );
    assert_eq!(
        api.get("/subjects").await.1.as_array().unwrap().len(),
        3,
        "nothing stored changed"
    );
}

async fn requests_without_a_content_type_or_with_plain_json_are_accepted(backend: Backend) {
    let api = Api::new(backend).await;
    for content_type in [
        None,
        Some("application/json"),
        Some("application/vnd.schemaregistry+json"),
    ] {
        let mut request = Request::post("/subjects/s/versions");
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let reply = api
            .send(request.body(Body::from(body(&v1()).to_string())).unwrap())
            .await;
        assert_eq!(reply, (StatusCode::OK, json!({"id": 1})), "{content_type:?}");
    }
}

async fn unknown_request_fields_are_ignored(backend: Backend) {
    let api = Api::new(backend).await;
    let request =
        json!({"schema": v1(), "metadata": {"properties": {"owner": "team"}}, "ruleSet": {"domainRules": []}});
    assert_eq!(api.post("/subjects/s/versions", request).await.1, json!({"id": 1}));
}

async fn credentials_guard_reads_and_writes_separately_and_reveal_nothing(backend: Backend) {
    let readers = vec![Credential::parse("reader-token").unwrap()];
    let writers = vec![Credential::parse("ci:s3cret").unwrap()];
    let api = Api::with(backend, |state| ApiState {
        auth: Auth::new(&readers, &writers).map(Arc::new),
        ..state
    })
    .await;
    let request = |method: &str, uri: &str, authorization: Option<&str>| {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        let body = if method == "POST" {
            Body::from(body(&v1()).to_string())
        } else {
            Body::empty()
        };
        builder.body(body).unwrap()
    };
    let basic = "Basic Y2k6czNjcmV0"; // ci:s3cret
    assert_eq!(
        api.send(request("POST", "/subjects/s/versions", Some(basic))).await.0,
        StatusCode::OK
    );
    let denied = api
        .send(request("POST", "/subjects/s/versions", Some("Bearer reader-token")))
        .await;
    assert_eq!((denied.0, code(&denied)), (StatusCode::UNAUTHORIZED, 40101));
    assert_eq!(
        api.send(request("GET", "/subjects", Some("Bearer reader-token")))
            .await
            .0,
        StatusCode::OK
    );
    let existing = api.send(request("GET", "/subjects/s/versions", None)).await;
    let missing = api.send(request("GET", "/subjects/nobody/versions", None)).await;
    assert_eq!(
        existing, missing,
        "a refused request cannot tell whether a subject exists"
    );
}

async fn protobuf_text_is_served_as_a_descriptor_with_format_serialized(backend: Backend) {
    let api = Api::new(backend).await;
    let proto = "syntax = \"proto3\";\npackage shop;\nmessage Order {\n  string id = 1;\n  int64 cents = 2;\n}\n";
    let request = json!({"schema": proto, "schemaType": "PROTOBUF"});
    assert_eq!(
        api.post("/subjects/orders-value/versions", request).await.1,
        json!({"id": 1})
    );
    let (_, plain) = api.get("/schemas/ids/1").await;
    assert_eq!(plain, json!({"schema": proto, "schemaType": "PROTOBUF"}));
    let (_, serialized) = api.get("/schemas/ids/1?format=serialized").await;
    let descriptor = serialized["schema"].as_str().unwrap().to_owned();
    assert_ne!(descriptor, proto);
    assert!(
        descriptor
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)),
        "{descriptor}"
    );
    let (_, version) = api.get("/subjects/orders-value/versions/1?format=serialized").await;
    assert_eq!(version["schema"], json!(descriptor));
    let again = json!({"schema": descriptor, "schemaType": "PROTOBUF"});
    assert_eq!(
        api.post("/subjects/orders-copy/versions", again).await.1,
        json!({"id": 1}),
        "the descriptor is the same schema as the text"
    );
}

async fn json_schema_registrations_follow_the_content_model_rules(backend: Backend) {
    let api = Api::new(backend).await;
    let open = json!({"schemaType": "JSON", "schema": r#"{"type":"object","properties":{"a":{"type":"string"}}}"#});
    let added = json!({"schemaType": "JSON", "schema": r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}"#});
    assert_eq!(api.post("/subjects/j/versions", open).await.1, json!({"id": 1}));
    let reply = api.post("/subjects/j/versions", added).await;
    assert_eq!(
        code(&reply),
        409,
        "adding a property to an open model is not BACKWARD compatible"
    );
    assert!(
        reply.1["message"].as_str().unwrap().contains("/properties/b"),
        "{}",
        reply.1
    );
    let avro_after_json = api.register("j", &v1()).await;
    assert_eq!(code(&avro_after_json), 409, "a subject keeps its schema type");

    let lenient = Api::build(
        backend,
        Checker::new(Limits::default()).with_json_policy(JsonPolicy::Lenient),
        |s| s,
    )
    .await;
    assert_eq!(
        lenient.post("/subjects/j/versions", open_again()).await.1,
        json!({"id": 1})
    );
    assert_eq!(
        lenient.post("/subjects/j/versions", added_again()).await.1,
        json!({"id": 2}),
        "LENIENT accepts it"
    );
}

fn open_again() -> Value {
    json!({"schemaType": "JSON", "schema": r#"{"type":"object","properties":{"a":{"type":"string"}}}"#})
}

fn added_again() -> Value {
    json!({"schemaType": "JSON", "schema": r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}"#})
}

/// Runs every test above once per store: `sqlite::name` and `postgres::name`.
/// The PostgreSQL ones return early (after saying why) when PostgreSQL is not
/// installed, unless `SCHEMAOPS_REQUIRE_ALL=1`.
macro_rules! on_every_store {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test(super::Backend::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $test() {
                    if crate::support::postgres::shared().is_some() {
                        super::$test(super::Backend::Postgres).await;
                    }
                }
            )*
        }
    };
}

on_every_store!(
    registering_returns_an_id_and_the_same_schema_twice_creates_nothing,
    versions_and_schemas_read_back_in_confluent_shapes,
    lookup_finds_the_version_holding_a_schema,
    an_incompatible_schema_is_refused_with_409_listing_every_problem,
    compatibility_checks_answer_with_and_without_verbose,
    transitive_levels_check_every_live_version,
    config_is_global_with_subject_overrides,
    modes_guard_writes,
    import_never_reuses_a_version_or_an_id_nor_exhausts_them,
    custom_option_values_are_part_of_a_protobuf_schemas_identity,
    a_check_too_complex_to_decide_says_so_and_referrers_are_listed_as_ids,
    every_error_the_router_itself_answers_is_confluent_error_json,
    soft_then_hard_delete_follows_confluent_rules,
    a_referenced_version_cannot_be_deleted,
    json_schema_references_are_followed_within_bounds,
    bad_input_gets_confluent_codes_and_changes_nothing,
    subject_names_are_percent_decoded_and_may_hold_any_character,
    requests_without_a_content_type_or_with_plain_json_are_accepted,
    unknown_request_fields_are_ignored,
    credentials_guard_reads_and_writes_separately_and_reveal_nothing,
    protobuf_text_is_served_as_a_descriptor_with_format_serialized,
    json_schema_registrations_follow_the_content_model_rules,
);

//! SchemaPolicies at the embedded registry's REST API (issue 17): a write of
//! a compatibility level or a mode that a policy denies is refused with
//! Confluent's 422 (42203 for a level, 42204 for a mode) naming the policy,
//! and stores nothing; a Warn policy lets it through with a `Warning`
//! header; without a policy every answer is what it was before. Over real
//! HTTP, once on a SQLite file and once on a throwaway PostgreSQL database
//! (see `on_every_store!` at the end).

mod support;

use std::sync::Arc;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, WARNING};
use schemaops::compat::{Checker, Limits};
use schemaops::crd::SchemaPolicy;
use schemaops::policy::{PolicySet, SharedPolicies};
use schemaops::registry::api::{ApiState, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::postgres::PostgresStore;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::embedded::store::Store;
use serde_json::{Value, json};

/// The store a test runs on.
#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// The platform team's policy for production subjects. Its namespace
/// selector is not consulted at the REST API: the subject patterns are.
const PROD: &str = r#"
apiVersion: schemaops.dev/v1alpha1
kind: SchemaPolicy
metadata:
  name: prod
spec:
  match:
    namespaceSelector:
      matchLabels:
        env: prod
    subjects: ["prod-*"]
  rules:
    compatibility:
      minimum: BACKWARD_TRANSITIVE
    modes: [READWRITE, READONLY]
  validationActions: [Deny]
"#;

/// The same rules, rolled out as a warning first.
const PROD_WARN: &str = r#"
apiVersion: schemaops.dev/v1alpha1
kind: SchemaPolicy
metadata:
  name: prod-warn
spec:
  match:
    subjects: ["prod-*"]
  rules:
    compatibility:
      minimum: BACKWARD_TRANSITIVE
    modes: [READWRITE, READONLY]
  validationActions: [Warn]
"#;

/// The refusal of `NONE` for a prod subject.
const NONE_REFUSED: &str = "SchemaPolicy prod rule compatibility at compatibility: the level requested is NONE; \
                            the level must be one of BACKWARD_TRANSITIVE, FULL_TRANSITIVE";

/// The policies in `manifests`, compiled.
fn policies(manifests: &[&str]) -> PolicySet {
    let parsed: Vec<SchemaPolicy> = manifests
        .iter()
        .map(|text| serde_saphyr::from_str(text).expect("a SchemaPolicy manifest"))
        .collect();
    let set = PolicySet::compile(parsed.iter().map(|policy| {
        (
            policy.metadata.name.as_deref().expect("the policy has a name"),
            &policy.spec,
        )
    }));
    assert!(set.invalid().is_empty(), "{:?}", set.invalid());
    set
}

/// One answer: status, headers, JSON body.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    /// The `Warning` headers.
    fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all(WARNING)
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect()
    }

    /// Asserts a refusal by policy with `code` whose message is `message`.
    fn assert_refused(&self, code: u64, message: &str) {
        assert_eq!(self.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", self.body);
        assert_eq!(self.body, json!({ "error_code": code, "message": message }));
    }
}

/// The REST API over a fresh embedded registry, on a free loopback port.
struct Server {
    url: String,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(backend: Backend, policies: Option<SharedPolicies>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = match backend {
            Backend::Sqlite => Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap()),
            Backend::Postgres => {
                let server = support::postgres::shared().expect("on_every_store! runs this only with PostgreSQL");
                Arc::new(PostgresStore::connect(&server.database().await).await.unwrap())
            }
        };
        let registry = EmbeddedRegistry::open(store, Checker::new(Limits::default()))
            .await
            .unwrap();
        let app = router(ApiState {
            registry: Arc::new(registry),
            body_limit: 64 * 1024,
            auth: None,
            policies,
            admission: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("http://{address}"),
            client: support::http_client(),
            _dir: dir,
        }
    }

    /// A server judging writes against `manifests`.
    async fn with(backend: Backend, manifests: &[&str]) -> Self {
        Self::start(backend, Some(SharedPolicies::new(policies(manifests)))).await
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let content_type = headers.get("content-type").and_then(|value| value.to_str().ok());
        let bytes = response.bytes().await.unwrap();
        // Every answer, refusals included, is one the OpenAPI document lists.
        if let Err(problem) = support::openapi::check(method.as_str(), path, status.as_u16(), content_type, &bytes) {
            panic!("not in the OpenAPI document: {problem}");
        }
        Answer {
            status,
            headers,
            body: serde_json::from_slice(&bytes).unwrap(),
        }
    }

    async fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None).await
    }

    async fn put(&self, path: &str, body: Value) -> Answer {
        self.call("PUT", path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> Answer {
        self.call("DELETE", path, None).await
    }

    async fn set_level(&self, path: &str, level: &str) -> Answer {
        self.put(path, json!({ "compatibility": level })).await
    }

    async fn set_mode(&self, path: &str, mode: &str) -> Answer {
        self.put(path, json!({ "mode": mode })).await
    }
}

async fn a_forbidden_subject_level_is_refused_naming_the_policy_and_nothing_is_stored(backend: Backend) {
    let server = Server::with(backend, &[PROD]).await;
    let allowed = server.set_level("/config/prod-orders-value", "FULL_TRANSITIVE").await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_eq!(allowed.body, json!({ "compatibility": "FULL_TRANSITIVE" }));
    assert!(allowed.warnings().is_empty());

    server
        .set_level("/config/prod-orders-value", "NONE")
        .await
        .assert_refused(42203, NONE_REFUSED);
    // `compatibilityLevel`, the spelling GET answers with, is judged the same.
    server
        .put("/config/prod-orders-value", json!({ "compatibilityLevel": "none" }))
        .await
        .assert_refused(42203, NONE_REFUSED);
    let stored = server.get("/config/prod-orders-value").await;
    assert_eq!(stored.body, json!({ "compatibilityLevel": "FULL_TRANSITIVE" }));

    // Below the floor though not NONE.
    server
        .set_level("/config/prod-orders-value", "BACKWARD")
        .await
        .assert_refused(
            42203,
            "SchemaPolicy prod rule compatibility at compatibility: the level requested is BACKWARD; the level \
             must be one of BACKWARD_TRANSITIVE, FULL_TRANSITIVE",
        );
    // A name that is no level is still Confluent's plain 42203.
    let unknown = server.set_level("/config/prod-orders-value", "SIDEWAYS").await;
    assert_eq!(unknown.body["error_code"], 42203);
    assert!(!unknown.body["message"].as_str().unwrap().contains("SchemaPolicy"));
    // A subject the policy does not match may have any level.
    let other = server.set_level("/config/dev-orders-value", "NONE").await;
    assert_eq!(other.status, StatusCode::OK);
}

async fn the_global_level_is_judged_against_every_policy(backend: Backend) {
    let server = Server::with(backend, &[PROD]).await;
    server
        .set_level("/config", "NONE")
        .await
        .assert_refused(42203, NONE_REFUSED);
    assert_eq!(
        server.get("/config").await.body,
        json!({ "compatibilityLevel": "BACKWARD" })
    );
    let allowed = server.set_level("/config", "BACKWARD_TRANSITIVE").await;
    assert_eq!(allowed.status, StatusCode::OK);
    // Resetting it would leave BACKWARD, below the floor.
    server.delete("/config").await.assert_refused(
        42203,
        "removing the global level resets it to BACKWARD: SchemaPolicy prod rule compatibility: the level the \
         subject falls back to (the registry's global level) is BACKWARD; the level must be one of \
         BACKWARD_TRANSITIVE, FULL_TRANSITIVE",
    );
    assert_eq!(
        server.get("/config").await.body,
        json!({ "compatibilityLevel": "BACKWARD_TRANSITIVE" })
    );
}

async fn removing_a_subject_level_is_judged_by_the_global_level_it_falls_back_to(backend: Backend) {
    let server = Server::with(backend, &[PROD]).await;
    assert_eq!(
        server
            .set_level("/config/prod-orders-value", "FULL_TRANSITIVE")
            .await
            .status,
        StatusCode::OK
    );
    // The global level is the default, BACKWARD: below the floor.
    server.delete("/config/prod-orders-value").await.assert_refused(
        42203,
        // Issue 39 item 13: a REST removal names no Kubernetes field path (it named `spec.subject`).
        "SchemaPolicy prod rule compatibility: the level the subject falls back to (the registry's global \
         level) is BACKWARD; the level must be one of BACKWARD_TRANSITIVE, FULL_TRANSITIVE",
    );
    assert_eq!(
        server.get("/config/prod-orders-value").await.body,
        json!({ "compatibilityLevel": "FULL_TRANSITIVE" })
    );
    // A subject without a level of its own answers as Confluent does (issue 39 item 4: 40401).
    let nothing = server.delete("/config/prod-payments-value").await;
    assert_eq!(nothing.status, StatusCode::NOT_FOUND);
    assert_eq!(nothing.body["error_code"], 40401);

    // Once the global level clears the floor, the subject may fall back to it.
    assert_eq!(
        server.set_level("/config", "BACKWARD_TRANSITIVE").await.status,
        StatusCode::OK
    );
    let removed = server.delete("/config/prod-orders-value").await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(removed.body, json!({ "compatibilityLevel": "FULL_TRANSITIVE" }));
    assert_eq!(
        server.get("/config/prod-orders-value?defaultToGlobal=true").await.body,
        json!({ "compatibilityLevel": "BACKWARD_TRANSITIVE" })
    );
}

async fn a_forbidden_mode_is_refused_and_nothing_is_stored(backend: Backend) {
    let server = Server::with(backend, &[PROD]).await;
    let import_refused = "SchemaPolicy prod rule modes at mode: mode IMPORT is not allowed; use one of READWRITE, \
                          READONLY";
    server
        .set_mode("/mode/prod-orders-value", "IMPORT")
        .await
        .assert_refused(42204, import_refused);
    server
        .set_mode("/mode", "IMPORT")
        .await
        .assert_refused(42204, import_refused);
    assert_eq!(
        server.get("/mode/prod-orders-value?defaultToGlobal=true").await.body,
        json!({ "mode": "READWRITE" })
    );
    let allowed = server.set_mode("/mode/prod-orders-value", "READONLY").await;
    assert_eq!(allowed.status, StatusCode::OK);
    assert_eq!(allowed.body, json!({ "mode": "READONLY" }));
    // The global mode it falls back to, READWRITE, is allowed.
    let removed = server.delete("/mode/prod-orders-value").await;
    assert_eq!(removed.status, StatusCode::OK);
    assert_eq!(removed.body, json!({ "mode": "READONLY" }));
    // A subject the policy does not match may have any mode.
    let other = server.set_mode("/mode/dev-orders-value", "IMPORT").await;
    assert_eq!(other.status, StatusCode::OK);
}

async fn a_warn_policy_lets_the_write_through_with_a_warning_header(backend: Backend) {
    let server = Server::with(backend, &[PROD_WARN]).await;
    let written = server.set_level("/config/prod-orders-value", "NONE").await;
    assert_eq!(written.status, StatusCode::OK);
    assert_eq!(written.body, json!({ "compatibility": "NONE" }));
    assert_eq!(
        written.warnings(),
        [
            "299 - \"SchemaPolicy prod-warn rule compatibility at compatibility: the level requested is NONE; the \
             level must be one of BACKWARD_TRANSITIVE, FULL_TRANSITIVE\""
        ]
    );
    assert_eq!(
        server.get("/config/prod-orders-value").await.body,
        json!({ "compatibilityLevel": "NONE" })
    );
    let mode = server.set_mode("/mode/prod-orders-value", "IMPORT").await;
    assert_eq!(mode.status, StatusCode::OK);
    assert_eq!(mode.warnings().len(), 1);
    // An allowed write carries no warning.
    let clean = server.set_level("/config/prod-orders-value", "FULL_TRANSITIVE").await;
    assert!(clean.warnings().is_empty());
}

/// Every judged write, in an order that exercises each route, as
/// `(method, path, status, body)` lines.
async fn transcript(server: &Server) -> Vec<String> {
    let steps: [(&str, &str, Option<Value>); 12] = [
        (
            "PUT",
            "/config/prod-orders-value",
            Some(json!({ "compatibility": "NONE" })),
        ),
        ("PUT", "/config", Some(json!({ "compatibility": "NONE" }))),
        ("DELETE", "/config/prod-orders-value", None),
        ("DELETE", "/config/prod-orders-value", None),
        ("DELETE", "/config", None),
        ("PUT", "/config", Some(json!({ "compatibility": "SIDEWAYS" }))),
        ("PUT", "/mode/prod-orders-value", Some(json!({ "mode": "IMPORT" }))),
        ("PUT", "/mode", Some(json!({ "mode": "READONLY" }))),
        ("DELETE", "/mode/prod-orders-value", None),
        ("DELETE", "/mode/prod-orders-value", None),
        ("DELETE", "/mode", None),
        ("PUT", "/mode", Some(json!({ "mode": "SIDEWAYS" }))),
    ];
    let mut lines = Vec::new();
    for (method, path, body) in steps {
        let answer = server.call(method, path, body).await;
        assert!(answer.warnings().is_empty(), "{method} {path} warns");
        lines.push(format!("{method} {path}: {} {}", answer.status.as_u16(), answer.body));
    }
    lines
}

async fn without_a_policy_every_answer_is_as_before(backend: Backend) {
    let expected = [
        r#"PUT /config/prod-orders-value: 200 {"compatibility":"NONE"}"#,
        r#"PUT /config: 200 {"compatibility":"NONE"}"#,
        r#"DELETE /config/prod-orders-value: 200 {"compatibilityLevel":"NONE"}"#,
        r#"DELETE /config/prod-orders-value: 404 {"error_code":40401,"message":"Subject 'prod-orders-value' not found."}"#,
        r#"DELETE /config: 200 {"compatibilityLevel":"NONE"}"#,
        r#"PUT /config: 422 {"detail":"`SIDEWAYS` is not a compatibility level: use BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE or NONE","error_code":42203,"message":"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}"#,
        r#"PUT /mode/prod-orders-value: 200 {"mode":"IMPORT"}"#,
        r#"PUT /mode: 200 {"mode":"READONLY"}"#,
        r#"DELETE /mode/prod-orders-value: 200 {"mode":"IMPORT"}"#,
        r#"DELETE /mode/prod-orders-value: 404 {"error_code":40401,"message":"Subject 'prod-orders-value' not found."}"#,
        r#"DELETE /mode: 200 {"mode":"READONLY"}"#,
        r#"PUT /mode: 422 {"detail":"`SIDEWAYS` is not a mode: use READWRITE, READONLY, READONLY_OVERRIDE or IMPORT","error_code":42204,"message":"Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."}"#,
    ];
    // No policies at all, and a handle holding none: the same answers.
    for policies in [None, Some(SharedPolicies::default())] {
        let server = Server::start(backend, policies).await;
        assert_eq!(transcript(&server).await, expected);
    }
}

async fn policies_put_in_force_later_judge_the_next_write(backend: Backend) {
    let shared = SharedPolicies::default();
    let server = Server::start(backend, Some(shared.clone())).await;
    assert_eq!(
        server.set_level("/config/prod-orders-value", "NONE").await.status,
        StatusCode::OK
    );
    shared.replace(policies(&[PROD]));
    server
        .set_level("/config/prod-orders-value", "NONE")
        .await
        .assert_refused(42203, NONE_REFUSED);
    shared.replace(PolicySet::empty());
    assert_eq!(
        server.set_level("/config/prod-orders-value", "NONE").await.status,
        StatusCode::OK
    );
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
    a_forbidden_subject_level_is_refused_naming_the_policy_and_nothing_is_stored,
    the_global_level_is_judged_against_every_policy,
    removing_a_subject_level_is_judged_by_the_global_level_it_falls_back_to,
    a_forbidden_mode_is_refused_and_nothing_is_stored,
    a_warn_policy_lets_the_write_through_with_a_warning_header,
    without_a_policy_every_answer_is_as_before,
    policies_put_in_force_later_judge_the_next_write,
);

/// `schemaops registry --policy FILE` judges with the policies of the file:
/// the example's prod policy refuses NONE; an invalid policy stops the start.
#[tokio::test]
async fn the_registry_command_judges_with_its_policy_files() {
    let data = tempfile::tempdir().unwrap();
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/policy/01-policy.yaml");
    let registry =
        support::registry::RegistryProcess::start_with(data.path(), &["--policy", policy.to_str().unwrap()]).await;
    let client = support::http_client();
    let refused = client
        .put(format!("{}/config/team-a.orders-value", registry.url))
        .json(&json!({"compatibility": "NONE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error_code"], 42203, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("SchemaPolicy prod rule compatibility"),
        "{body}"
    );
    let allowed = client
        .put(format!("{}/config/team-a.orders-value", registry.url))
        .json(&json!({"compatibility": "FULL_TRANSITIVE"}))
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), StatusCode::OK);

    let broken = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(
        broken.path(),
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: broken\nspec:\n  rules:\n    subjects:\n      allowed: [\"{team}.*\"]\n",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path().join("other"))
        .arg("--policy")
        .arg(broken.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("SchemaPolicy broken is invalid: spec.rules.subjects.allowed[0]"),
        "{stderr}"
    );
}

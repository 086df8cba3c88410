//! The operator's registry API locked down as the chart installs it (issue
//! 35, item 2): `schemaops operator --rest-writes gitops-only
//! --admin-credentials-file FILE` (the chart's default arguments, which
//! `tests/helm_chart.rs` pins) against the test API server. Anonymous REST
//! writes are refused with Confluent's error JSON, producers and consumers
//! still look up and test compatibility, Schema resources still register,
//! and the admin credential writes, counted in a metric. And item 3: the
//! operator never lists or watches ConfigMaps; it reads those that Schemas
//! name and notices their edits by reading them again.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use apiserver::TestApiServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::operator::OperatorProcess;

const CONVERGE: Duration = Duration::from_secs(60);
const ADMIN_TOKEN: &str = "admin-token-0123456789";
const V1: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;
const V2: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"n","type":"int","default":0}]}"#;

fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs")
}

fn ok(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Sends `body` (JSON) with `method` to `url`; the status and the JSON answer.
async fn send(method: Method, url: &str, body: Option<Value>, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = support::http_client().request(method, url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(body.to_string());
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Whether kubectl runs here; a skip outside CI says why.
fn kubectl_runs() -> bool {
    let runs = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !runs {
        assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
        eprintln!("skipped: kubectl is not installed");
    }
    runs
}

/// Applies `manifest` with kubectl.
fn apply(kubeconfig: &Path, cache: &Path, manifest: &str) {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), manifest).unwrap();
    ok(
        &kubectl(kubeconfig, cache, &["apply", "-f", file.path().to_str().unwrap()]),
        "kubectl apply",
    );
}

/// The test API server with the CRDs and a namespace `shop`: the server, its kubeconfig,
/// kubectl's cache folder and a data folder for the operator.
fn cluster_with_namespace_shop() -> (TestApiServer, std::path::PathBuf, tempfile::TempDir, tempfile::TempDir) {
    let server = TestApiServer::start();
    let kubeconfig = server.kubeconfig().to_owned();
    let cache = tempfile::tempdir().unwrap();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    ok(
        &kubectl(&kubeconfig, cache.path(), &["apply", "-f", crds.to_str().unwrap()]),
        "apply the CRDs",
    );
    ok(
        &kubectl(&kubeconfig, cache.path(), &["create", "namespace", "shop"]),
        "create the namespace",
    );
    (server, kubeconfig, cache, tempfile::tempdir().unwrap())
}

#[tokio::test]
async fn rest_writes_need_the_admin_credential_while_reads_and_schema_resources_keep_working() {
    if !kubectl_runs() {
        return;
    }
    let (_server, kubeconfig, cache, data) = cluster_with_namespace_shop();
    let run = |args: &[&str]| kubectl(&kubeconfig, cache.path(), args);
    let secrets = tempfile::tempdir().unwrap();
    let admin_file = secrets.path().join("admin");
    std::fs::write(&admin_file, format!("{ADMIN_TOKEN}\n")).unwrap();
    let operator = OperatorProcess::start(
        &kubeconfig,
        data.path(),
        &[
            "--rest-writes=gitops-only",
            &format!("--admin-credentials-file={}", admin_file.display()),
        ],
    );
    operator.wait_ready(CONVERGE).await;
    let url = |path: &str| format!("{}{path}", operator.registry_url);

    // Anonymous writes of every kind are refused before anything changes.
    for (method, path, body) in [
        (
            Method::POST,
            "/subjects/orders-value/versions",
            Some(json!({"schema": V1})),
        ),
        (
            Method::PUT,
            "/config/orders-value",
            Some(json!({"compatibility": "NONE"})),
        ),
        (Method::PUT, "/config", Some(json!({"compatibility": "NONE"}))),
        (Method::PUT, "/mode/orders-value", Some(json!({"mode": "IMPORT"}))),
        (Method::DELETE, "/subjects/orders-value", None),
        (Method::DELETE, "/subjects/orders-value/versions/1?permanent=true", None),
    ] {
        let (status, answer) = send(method.clone(), &url(path), body, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "anonymous {method} {path}: {answer}");
        assert_eq!(answer["error_code"], 40301, "{answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("Schema and SubjectConfig resources"),
            "the refusal says where writes go: {message}"
        );
    }
    let (status, subjects) = send(Method::GET, &url("/subjects"), None, None).await;
    assert_eq!((status, subjects), (StatusCode::OK, json!([])), "nothing was written");

    // The GitOps path: a Schema resource registers through the operator.
    let manifest = format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: orders\n  namespace: shop\nspec:\n  subject: orders-value\n  schema: '{V1}'\n"
    );
    apply(&kubeconfig, cache.path(), &manifest);
    ok(
        &run(&[
            "wait",
            "--namespace=shop",
            "--for=condition=Ready",
            "schema/orders",
            &format!("--timeout={}s", CONVERGE.as_secs()),
        ]),
        "kubectl wait",
    );

    // Producers and consumers with auto-registration off: reads, lookups and compatibility tests.
    let (status, latest) = send(Method::GET, &url("/subjects/orders-value/versions/latest"), None, None).await;
    assert_eq!(status, StatusCode::OK, "{latest}");
    assert_eq!(latest["version"], 1);
    let (status, found) = send(
        Method::POST,
        &url("/subjects/orders-value"),
        Some(json!({"schema": V1})),
        None,
    )
    .await;
    assert_eq!((status, &found["id"]), (StatusCode::OK, &latest["id"]), "{found}");
    let (status, verdict) = send(
        Method::POST,
        &url("/compatibility/subjects/orders-value/versions/latest"),
        Some(json!({"schema": V2})),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{verdict}");
    assert_eq!(verdict["is_compatible"], true, "{verdict}");

    // A wrong token is no admin.
    let (status, _) = send(
        Method::POST,
        &url("/subjects/orders-value/versions"),
        Some(json!({"schema": V2})),
        Some("not-the-admin"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The admin credential writes (an emergency, an import), and each write is counted.
    let (status, registered) = send(
        Method::POST,
        &url("/subjects/payments-value/versions"),
        Some(json!({"schema": V1})),
        Some(ADMIN_TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{registered}");
    let (status, _) = send(
        Method::PUT,
        &url("/config/payments-value"),
        Some(json!({"compatibility": "FULL"})),
        Some(ADMIN_TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = support::http_client()
            .get(format!("{}/metrics", operator.health_url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let admin_posts = metrics.contains("schemaops_registry_admin_writes_total{method=\"POST\"} 1");
        let admin_puts = metrics.contains("schemaops_registry_admin_writes_total{method=\"PUT\"} 1");
        let refusals = metrics.contains("schemaops_registry_gitops_refusals_total 7");
        if admin_posts && admin_puts && refusals {
            break;
        }
        assert!(Instant::now() < deadline, "the writes are not counted:\n{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn configmaps_are_read_by_name_and_read_again_never_listed_or_watched() {
    if !kubectl_runs() {
        return;
    }
    let (server, kubeconfig, cache, data) = cluster_with_namespace_shop();
    let run = |args: &[&str]| kubectl(&kubeconfig, cache.path(), args);
    // A ConfigMap no Schema names: the operator must never read it.
    ok(
        &run(&[
            "-n",
            "shop",
            "create",
            "configmap",
            "unrelated",
            "--from-literal=password=hunter2",
        ]),
        "create the unrelated ConfigMap",
    );
    let operator = OperatorProcess::start(&kubeconfig, data.path(), &["--config-map-poll-seconds=1"]);
    operator.wait_ready(CONVERGE).await;
    let config_map = |text: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: order-text\n  namespace: shop\ndata:\n  order.avsc: '{text}'\n"
        )
    };
    apply(&kubeconfig, cache.path(), &config_map(V1));
    apply(
        &kubeconfig,
        cache.path(),
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: orders\n  namespace: shop\nspec:\n  subject: orders-value\n  schemaFrom:\n    configMapKeyRef: {name: order-text, key: order.avsc}\n",
    );
    let version = || -> Option<i64> {
        let object: Value = serde_json::from_str(&ok(
            &run(&["-n", "shop", "get", "schema", "orders", "-o", "json"]),
            "get",
        ))
        .unwrap();
        object["status"]["version"].as_i64()
    };
    let wait_version = |wanted: i64| {
        let deadline = Instant::now() + CONVERGE;
        while version() != Some(wanted) {
            assert!(Instant::now() < deadline, "the Schema never reached version {wanted}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_version(1);
    // An edit of the ConfigMap alone (the Schema object does not change) is registered.
    apply(&kubeconfig, cache.path(), &config_map(V2));
    wait_version(2);

    let lines = server.request_lines();
    // kubectl's own requests (it created and edited the ConfigMaps) are left out.
    let config_map_requests: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("/configmaps") && !line.contains(" kubectl/"))
        .collect();
    assert!(
        config_map_requests
            .iter()
            .any(|line| line.starts_with("GET /api/v1/namespaces/shop/configmaps/order-text")),
        "the named ConfigMap was read: {config_map_requests:#?}"
    );
    for line in &config_map_requests {
        let path = line.split(['?', ' ']).nth(1).unwrap_or_default();
        let named = path
            .split('/')
            .skip_while(|part| *part != "configmaps")
            .nth(1)
            .is_some();
        assert!(
            named && !line.contains("watch=") && !line.contains("/unrelated"),
            "the operator listed, watched or read an unnamed ConfigMap: {line}"
        );
    }
}

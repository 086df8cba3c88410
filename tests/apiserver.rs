//! Tests of the in-memory API server (`tests/support/apiserver/`) driven by real kubectl and kube-rs.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use apiserver::TestApiServer;
use serde_json::{Value, json};

const KUBECTL: &str = "/usr/bin/kubectl";

/// Whether kubectl is here; without it a test prints why and returns (or panics in CI).
fn have_kubectl() -> bool {
    if Path::new(KUBECTL).exists() {
        return true;
    }
    assert!(!support::require_all(), "{KUBECTL} is missing and SCHEMAOPS_REQUIRE_ALL=1");
    eprintln!("skipped: {KUBECTL} is missing");
    false
}

fn kubectl_output(server: &TestApiServer, args: &[&str]) -> Output {
    server.kubectl().args(args).output().expect("running kubectl")
}

/// Runs kubectl and returns its stdout, failing the test when it fails.
fn kubectl(server: &TestApiServer, args: &[&str]) -> String {
    let output = kubectl_output(server, args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kubectl {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

/// Runs kubectl with a manifest on stdin.
fn kubectl_stdin(server: &TestApiServer, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = server
        .kubectl()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running kubectl");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("writing stdin");
    let output = child.wait_with_output().expect("waiting for kubectl");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "kubectl {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn crds_dir() -> String {
    format!("{}/crds/", env!("CARGO_MANIFEST_DIR"))
}

fn schema_manifest(name: &str, schema: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1
kind: Schema
metadata:
  name: {name}
  namespace: default
spec:
  subject: {name}-value
  schemaType: AVRO
  schema: '{schema}'
"
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// A server with the repo's CRDs installed (through kubectl when it is here, else through HTTP).
fn server_with_crds() -> TestApiServer {
    let server = TestApiServer::start();
    let http = Http::new(&server);
    for (_, crd) in schemaops::crd::render::definitions() {
        let body = serde_json::to_value(&crd).expect("a CRD as JSON");
        let (code, response) = http.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &body);
        assert_eq!(code, 201, "{response}");
    }
    server
}

/// Raw HTTP against the server.
struct Http {
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Http {
    fn new(server: &TestApiServer) -> Http {
        Http { base: server.url().to_string(), client: reqwest::Client::new(), runtime: runtime() }
    }

    fn send(&self, method: &str, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
        self.runtime.block_on(async {
            let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
            let mut request = self.client.request(method, format!("{}{path}", self.base));
            if !body.is_null() {
                request = request.header("content-type", content_type).body(body.to_string());
            }
            let response = request.send().await.expect("a response");
            let code = response.status().as_u16();
            let text = response.text().await.expect("a body");
            (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
        })
    }

    fn get(&self, path: &str) -> (u16, Value) {
        self.send("GET", path, "", &Value::Null)
    }

    /// Reads a watch stream until it ends or `limit` events arrived.
    fn watch(&self, path: &str, limit: usize, within: Duration) -> Vec<Value> {
        self.runtime.block_on(async {
            let mut response = self.client.get(format!("{}{path}", self.base)).send().await.expect("a response");
            assert_eq!(response.status().as_u16(), 200);
            let mut events = Vec::new();
            let mut buffer = Vec::new();
            let deadline = tokio::time::Instant::now() + within;
            while events.len() < limit {
                let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
                    Ok(Ok(Some(chunk))) => chunk,
                    _ => break,
                };
                buffer.extend_from_slice(&chunk);
                while let Some(end) = buffer.iter().position(|byte| *byte == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    events.push(serde_json::from_slice(&line).expect("an event"));
                }
            }
            events
        })
    }
}

const SCHEMAS: &str = "/apis/schemaops.dev/v1alpha1/namespaces/default/schemas";

fn resource_version(object: &Value) -> String {
    object["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").to_string()
}

#[test]
fn kubectl_applies_the_crds_and_lists_their_resources() {
    if !have_kubectl() {
        return;
    }
    let server = TestApiServer::start();
    let applied = kubectl(&server, &["apply", "-f", &crds_dir()]);
    assert!(applied.contains("schemas.schemaops.dev created"), "{applied}");
    let resources = kubectl(&server, &["api-resources"]);
    assert!(resources.contains("schemas") && resources.contains("subjectconfigs"), "{resources}");
    assert!(resources.contains("sch"), "{resources}");
    let again = kubectl(&server, &["apply", "-f", &crds_dir()]);
    assert!(again.contains("unchanged"), "{again}");
    let crd = kubectl(&server, &["get", "crd", "schemas.schemaops.dev", "-o", "json"]);
    let crd: Value = serde_json::from_str(&crd).expect("JSON");
    let conditions = crd["status"]["conditions"].as_array().expect("conditions");
    assert!(conditions.iter().any(|condition| condition["type"] == "Established" && condition["status"] == "True"));
}

#[test]
fn kubectl_applies_gets_and_edits_a_schema() {
    if !have_kubectl() {
        return;
    }
    let server = TestApiServer::start();
    kubectl(&server, &["apply", "-f", &crds_dir()]);
    let manifest = schema_manifest("orders", r#"{"type":"string"}"#);
    let created = kubectl_stdin(&server, &["apply", "-f", "-"], &manifest);
    assert!(created.contains("schema.schemaops.dev/orders created"), "{created}");

    let table = kubectl(&server, &["get", "schemas"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "SUBJECT", "TYPE", "VERSION", "ID", "READY", "REASON", "AGE"] {
        assert!(header.contains(column), "{table}");
    }
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("orders") && row.contains("orders-value") && row.contains("AVRO"), "{table}");
    // The real server sends null for a column whose JSONPath finds nothing; kubectl prints it blank.
    assert_eq!(row.split_whitespace().count(), 4, "{table}");
    let age = row.split_whitespace().last().unwrap_or_default();
    assert!(matches!(age, "0s" | "1s" | "2s" | "3s"), "{table}");
    let single = kubectl(&server, &["get", "schema", "orders"]);
    assert!(single.contains("orders-value"), "{single}");

    let yaml = kubectl(&server, &["get", "schema", "orders", "-o", "yaml"]);
    assert!(yaml.contains("subject: orders-value") && yaml.contains("generation: 1"), "{yaml}");
    let before: Value = serde_json::from_str(&kubectl(&server, &["get", "schema", "orders", "-o", "json"])).unwrap();

    let again = kubectl_stdin(&server, &["apply", "-f", "-"], &manifest);
    assert!(again.contains("unchanged"), "{again}");
    let same: Value = serde_json::from_str(&kubectl(&server, &["get", "schema", "orders", "-o", "json"])).unwrap();
    assert_eq!(resource_version(&same), resource_version(&before));

    let edited = schema_manifest("orders", r#"{"type":"long"}"#);
    let configured = kubectl_stdin(&server, &["apply", "-f", "-"], &edited);
    assert!(configured.contains("configured"), "{configured}");
    let after: Value = serde_json::from_str(&kubectl(&server, &["get", "schema", "orders", "-o", "json"])).unwrap();
    assert_eq!(after["metadata"]["generation"], 2);
    assert_ne!(resource_version(&after), resource_version(&before));
    assert_eq!(after["spec"]["schema"], r#"{"type":"long"}"#);

    let server_side = kubectl_stdin(
        &server,
        &["apply", "--server-side", "-f", "-"],
        &schema_manifest("orders", r#"{"type":"int"}"#),
    );
    assert!(server_side.contains("serverside-applied"), "{server_side}");
    let applied: Value = serde_json::from_str(&kubectl(&server, &["get", "schema", "orders", "-o", "json"])).unwrap();
    assert_eq!(applied["spec"]["schema"], r#"{"type":"int"}"#);
    assert_eq!(applied["metadata"]["generation"], 3);
    let created = kubectl_stdin(&server, &["apply", "--server-side", "-f", "-"], &schema_manifest("payments", "{}"));
    assert!(created.contains("serverside-applied"), "{created}");
    kubectl(&server, &["get", "schema", "payments"]);
}

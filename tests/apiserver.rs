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
    assert!(
        !support::require_all(),
        "{KUBECTL} is missing and SCHEMAOPS_REQUIRE_ALL=1"
    );
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
    assert!(
        output.status.success(),
        "kubectl {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
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
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("writing stdin");
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
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A server with the repo's CRDs installed (through kubectl when it is here, else through HTTP).
fn server_with_crds() -> TestApiServer {
    let server = TestApiServer::start();
    let http = Http::new(&server);
    for (_, crd) in schemaops::crd::render::definitions() {
        let body = serde_json::to_value(&crd).expect("a CRD as JSON");
        let (code, response) = http.send(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "application/json",
            &body,
        );
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
        Http {
            base: server.url().to_string(),
            client: support::http_client(),
            runtime: runtime(),
        }
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
            let mut response = self
                .client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .expect("a response");
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
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_string()
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
    assert!(
        resources.contains("schemas") && resources.contains("subjectconfigs"),
        "{resources}"
    );
    assert!(resources.contains("sch"), "{resources}");
    let again = kubectl(&server, &["apply", "-f", &crds_dir()]);
    assert!(again.contains("unchanged"), "{again}");
    // An edited CRD is patched (kubectl sends a strategic merge patch for this built-in kind).
    let edited = std::fs::read_to_string(format!("{}schema.yaml", crds_dir()))
        .expect("crds/schema.yaml")
        .replace("    - sch\n", "    - sch\n    - kschema\n");
    let configured = kubectl_stdin(&server, &["apply", "-f", "-"], &edited);
    assert!(configured.contains("configured"), "{configured}");
    let resources = kubectl(&server, &["api-resources", "--api-group=schemaops.dev"]);
    assert!(resources.contains("kschema"), "{resources}");
    let crd = kubectl(&server, &["get", "crd", "schemas.schemaops.dev", "-o", "json"]);
    let crds = kubectl(&server, &["get", "crds"]);
    assert!(
        crds.starts_with("NAME") && crds.contains("CREATED AT") && crds.contains("subjectconfigs.schemaops.dev"),
        "{crds}"
    );
    let crd: Value = serde_json::from_str(&crd).expect("JSON");
    let conditions = crd["status"]["conditions"].as_array().expect("conditions");
    assert!(
        conditions
            .iter()
            .any(|condition| condition["type"] == "Established" && condition["status"] == "True")
    );
    assert_eq!(crd["metadata"]["generation"], 2);
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["sch", "kschema"]));
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
    assert!(
        row.starts_with("orders") && row.contains("orders-value") && row.contains("AVRO"),
        "{table}"
    );
    // The real server sends null for a column whose JSONPath finds nothing; kubectl prints it blank.
    assert_eq!(row.split_whitespace().count(), 4, "{table}");
    let age = row.split_whitespace().last().unwrap_or_default();
    assert!(matches!(age, "0s" | "1s" | "2s" | "3s"), "{table}");
    let category = kubectl(&server, &["get", "schemaops"]);
    assert!(category.contains("schema.schemaops.dev/orders"), "{category}");
    let short = kubectl(&server, &["get", "sch", "-o", "name"]);
    assert_eq!(short.trim(), "schema.schemaops.dev/orders");
    let single = kubectl(&server, &["get", "schema", "orders"]);
    assert!(single.contains("orders-value"), "{single}");

    let yaml = kubectl(&server, &["get", "schema", "orders", "-o", "yaml"]);
    assert!(
        yaml.contains("subject: orders-value") && yaml.contains("generation: 1"),
        "{yaml}"
    );
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
    let created = kubectl_stdin(
        &server,
        &["apply", "--server-side", "-f", "-"],
        &schema_manifest("payments", "{}"),
    );
    assert!(created.contains("serverside-applied"), "{created}");
    kubectl(&server, &["get", "schema", "payments"]);
}

fn create_schema(http: &Http, name: &str, finalizers: &[&str]) -> Value {
    let body = json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "Schema",
        "metadata": {"name": name, "finalizers": finalizers},
        "spec": {"subject": format!("{name}-value"), "schema": "{}"},
        "status": {"version": 99},
    });
    let (code, created) = http.send("POST", SCHEMAS, "application/json", &body);
    assert_eq!(code, 201, "{created}");
    created
}

fn ready_status(generation: i64, status: &str) -> Value {
    json!({"status": {"observedGeneration": generation, "conditions": [{
        "type": "Ready", "status": status, "reason": "Registered", "message": "registered as version 1",
        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation,
    }]}})
}

#[test]
fn status_writes_keep_generation_and_identical_writes_change_nothing() {
    let server = server_with_crds();
    let http = Http::new(&server);
    let created = create_schema(&http, "orders", &[]);
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(
        created.get("status").is_none(),
        "create drops status when it is a subresource: {created}"
    );
    assert_eq!(created["spec"]["schemaType"], "AVRO", "the CRD schema's defaults apply");
    assert_eq!(created["spec"]["deletionPolicy"], "Retain");

    let path = format!("{SCHEMAS}/orders/status");
    let (code, written) = http.send("PATCH", &path, "application/merge-patch+json", &ready_status(1, "True"));
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["metadata"]["generation"], 1);
    assert_eq!(written["status"]["conditions"][0]["status"], "True");
    assert_ne!(resource_version(&written), resource_version(&created));

    // The status subresource ignores everything but status.
    let mut sneaky = ready_status(1, "True");
    sneaky["spec"] = json!({"subject": "other"});
    let (code, again) = http.send("PATCH", &path, "application/merge-patch+json", &sneaky);
    assert_eq!(code, 200, "{again}");
    assert_eq!(again["spec"]["subject"], "orders-value");
    assert_eq!(
        resource_version(&again),
        resource_version(&written),
        "an identical status write is a no-op"
    );

    // The main resource ignores status.
    let (code, main) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/orders"),
        "application/merge-patch+json",
        &ready_status(1, "False"),
    );
    assert_eq!(code, 200, "{main}");
    assert_eq!(main["status"]["conditions"][0]["status"], "True");
    assert_eq!(resource_version(&main), resource_version(&written));

    let events = http.watch(
        &format!(
            "{SCHEMAS}?watch=true&resourceVersion={}&timeoutSeconds=1",
            resource_version(&written)
        ),
        10,
        Duration::from_secs(5),
    );
    assert!(events.is_empty(), "no-op writes emit no events: {events:?}");

    // PUT on /status changes only status too.
    let mut replaced = again.clone();
    replaced["status"]["version"] = json!(3);
    replaced["spec"]["subject"] = json!("ignored");
    let (code, put) = http.send("PUT", &path, "application/json", &replaced);
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["status"]["version"], 3);
    assert_eq!(put["spec"]["subject"], "orders-value");
    assert_eq!(put["metadata"]["generation"], 1);
}

#[test]
fn kubectl_wait_sees_the_ready_condition() {
    if !have_kubectl() {
        return;
    }
    let server = server_with_crds();
    let http = Http::new(&server);
    create_schema(&http, "orders", &[]);
    create_schema(&http, "never", &[]);
    let base = server.url().to_string();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        let body = ready_status(1, "True").to_string();
        runtime().block_on(async {
            support::http_client()
                .patch(format!("{base}{SCHEMAS}/orders/status"))
                .header("content-type", "application/merge-patch+json")
                .body(body)
                .send()
                .await
                .expect("a status patch")
                .status()
        })
    });
    let waited = kubectl(
        &server,
        &["wait", "--for=condition=Ready", "schema/orders", "--timeout=10s"],
    );
    assert!(waited.contains("condition met"), "{waited}");
    assert_eq!(writer.join().expect("the writer").as_u16(), 200);

    let timed_out = kubectl_output(
        &server,
        &["wait", "--for=condition=Ready", "schema/never", "--timeout=1s"],
    );
    assert!(!timed_out.status.success());
    assert!(
        String::from_utf8_lossy(&timed_out.stderr).contains("timed out"),
        "{timed_out:?}"
    );
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    if !have_kubectl() {
        return;
    }
    let server = server_with_crds();
    let http = Http::new(&server);
    create_schema(&http, "held", &["schemaops.dev/cleanup"]);
    let deleted = kubectl(&server, &["delete", "schema", "held", "--wait=false"]);
    assert!(deleted.contains("deleted"), "{deleted}");
    let (code, held) = http.get(&format!("{SCHEMAS}/held"));
    assert_eq!(code, 200, "{held}");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(held["metadata"]["generation"], 2);

    let (code, refused) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["schemaops.dev/cleanup", "other/new"]}}),
    );
    assert_eq!(code, 422, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no new finalizers"),
        "{refused}"
    );

    // kube-runtime's finalizer helper removes its finalizer with a test-guarded JSON patch.
    let (code, failed) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/held"),
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "someone-else"},
                {"op": "remove", "path": "/metadata/finalizers/0"}]),
    );
    assert_eq!(code, 422, "{failed}");
    assert_eq!(failed["reason"], "Invalid");
    let before = resource_version(&held);
    let (code, gone) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/held"),
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "schemaops.dev/cleanup"},
                {"op": "remove", "path": "/metadata/finalizers/0"}]),
    );
    assert_eq!(code, 200, "{gone}");
    let events = http.watch(
        &format!("{SCHEMAS}?watch=true&resourceVersion={before}"),
        1,
        Duration::from_secs(5),
    );
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "DELETED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "held");
    assert!(
        events[0]["object"]["metadata"].get("finalizers").is_none(),
        "empty finalizers are dropped"
    );
    assert_eq!(http.get(&format!("{SCHEMAS}/held")).0, 404);

    create_schema(&http, "plain", &[]);
    let deleted = kubectl(&server, &["delete", "schema", "plain"]);
    assert!(deleted.contains("deleted"), "{deleted}");
    assert_eq!(http.get(&format!("{SCHEMAS}/plain")).0, 404);
}

#[test]
fn a_stale_resource_version_is_a_conflict() {
    let server = server_with_crds();
    let http = Http::new(&server);
    let created = create_schema(&http, "orders", &[]);
    let mut first = created.clone();
    first["spec"]["schema"] = json!("{\"type\":\"int\"}");
    let (code, updated) = http.send("PUT", &format!("{SCHEMAS}/orders"), "application/json", &first);
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["metadata"]["generation"], 2);
    let mut stale = created.clone();
    stale["spec"]["schema"] = json!("{\"type\":\"long\"}");
    let (code, conflict) = http.send("PUT", &format!("{SCHEMAS}/orders"), "application/json", &stale);
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(conflict["kind"], "Status");
    assert_eq!(conflict["reason"], "Conflict");
    assert_eq!(conflict["details"]["name"], "orders");
    let (code, conflict) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/orders"),
        "application/merge-patch+json",
        &json!({"metadata": {"resourceVersion": resource_version(&created)}, "spec": {"schema": "x"}}),
    );
    assert_eq!(code, 409, "{conflict}");
    let mut unconditional = updated.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(
        http.send("PUT", &format!("{SCHEMAS}/orders"), "application/json", &unconditional)
            .0,
        422
    );
}

#[test]
fn watches_replay_from_a_resource_version_and_honour_their_parameters() {
    let server = server_with_crds();
    let http = Http::new(&server);
    let (code, list) = http.get(SCHEMAS);
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "SchemaList");
    let start = resource_version(&list);
    create_schema(&http, "orders", &[]);
    http.send(
        "PATCH",
        &format!("{SCHEMAS}/orders"),
        "application/merge-patch+json",
        &json!({"spec": {"schema": "1"}}),
    );
    http.send(
        "DELETE",
        &format!("{SCHEMAS}/orders"),
        "application/json",
        &json!({"propagationPolicy": "Background"}),
    );
    let events = http.watch(
        &format!("{SCHEMAS}?watch=true&resourceVersion={start}"),
        3,
        Duration::from_secs(5),
    );
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    assert_eq!(events[1]["object"]["spec"]["schema"], "1");
    assert_eq!(events[0]["object"]["kind"], "Schema");

    // A live watch is woken by a change.
    let base = server.url().to_string();
    let creator = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let http = Http {
            base,
            client: support::http_client(),
            runtime: runtime(),
        };
        create_schema(&http, "later", &[]);
    });
    let (_, now) = http.get(SCHEMAS);
    let live = http.watch(
        &format!("{SCHEMAS}?watch=1&resourceVersion={}", resource_version(&now)),
        1,
        Duration::from_secs(5),
    );
    creator.join().expect("the creator");
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["object"]["metadata"]["name"], "later");

    // No resourceVersion: the current objects first.
    let initial = http.watch(&format!("{SCHEMAS}?watch=true"), 1, Duration::from_secs(5));
    assert_eq!(initial[0]["type"], "ADDED");

    let expired = http.watch(
        &format!("{SCHEMAS}?watch=true&resourceVersion=1"),
        5,
        Duration::from_secs(5),
    );
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["type"], "ERROR");
    assert_eq!(expired[0]["object"]["code"], 410);
    assert_eq!(expired[0]["object"]["reason"], "Expired");

    let started = std::time::Instant::now();
    let (_, now) = http.get(SCHEMAS);
    let quiet = http.watch(
        &format!(
            "{SCHEMAS}?watch=true&resourceVersion={}&timeoutSeconds=1",
            resource_version(&now)
        ),
        10,
        Duration::from_secs(10),
    );
    assert!(quiet.is_empty(), "{quiet:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "timeoutSeconds ends the stream"
    );

    let bookmarks = http.watch(
        &format!(
            "{SCHEMAS}?watch=true&resourceVersion={}&allowWatchBookmarks=true&timeoutSeconds=5",
            resource_version(&now)
        ),
        1,
        Duration::from_secs(5),
    );
    assert_eq!(bookmarks.len(), 1, "{bookmarks:?}");
    assert_eq!(bookmarks[0]["type"], "BOOKMARK");
    assert_eq!(
        bookmarks[0]["object"]["metadata"]["resourceVersion"],
        json!(resource_version(&now))
    );
}

#[test]
fn lists_filter_by_label_and_field_selectors() {
    let server = TestApiServer::start();
    let http = Http::new(&server);
    let configmaps = "/api/v1/namespaces/default/configmaps";
    for (name, labels) in [
        ("a", json!({"app": "orders", "tier": "web"})),
        ("b", json!({"app": "orders", "tier": "db"})),
        ("c", json!({"app": "payments"})),
    ] {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}});
        assert_eq!(http.send("POST", configmaps, "application/json", &body).0, 201);
    }
    let names = |query: &str| -> Vec<String> {
        let (code, list) = http.get(&format!("{configmaps}?{query}"));
        assert_eq!(code, 200, "{query}: {list}");
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("labelSelector=app%3Dorders"), ["a", "b"]);
    assert_eq!(names("labelSelector=app%3D%3Dorders,tier!%3Ddb"), ["a"]);
    assert_eq!(names("labelSelector=tier%20in%20(web,db)"), ["a", "b"]);
    assert_eq!(names("labelSelector=app%20notin%20(orders)"), ["c"]);
    assert_eq!(names("labelSelector=tier"), ["a", "b"]);
    assert_eq!(names("labelSelector=!tier"), ["c"]);
    assert_eq!(names("fieldSelector=metadata.name%3Db"), ["b"]);
    assert_eq!(
        names("fieldSelector=metadata.name!%3Db,metadata.namespace%3D%3Ddefault"),
        ["a", "c"]
    );
    assert_eq!(names("limit=500&resourceVersion=0"), ["a", "b", "c"]);
    let (_, all) = http.get("/api/v1/configmaps?labelSelector=app%3Dpayments");
    assert_eq!(all["items"][0]["metadata"]["namespace"], "default");
    assert_eq!(all["items"][0]["kind"], "ConfigMap");

    // Custom resources are selectable by name and namespace only.
    let server = server_with_crds();
    let http = Http::new(&server);
    assert_eq!(http.get(&format!("{SCHEMAS}?fieldSelector=metadata.name%3Dx")).0, 200);
    let (code, refused) = http.get(&format!("{SCHEMAS}?fieldSelector=spec.subject%3Dx"));
    assert_eq!(
        (code, refused["message"].as_str()),
        (400, Some("field label not supported: spec.subject"))
    );
}

#[test]
fn server_side_apply_merges_conditions_by_type_per_manager() {
    let server = server_with_crds();
    let http = Http::new(&server);
    create_schema(&http, "orders", &[]);
    let condition = |kind: &str, status: &str| json!({"type": kind, "status": status, "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    let apply = |manager: &str, status: Value| {
        let body = json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {"name": "orders"}, "status": status});
        let (code, object) = http.send(
            "PATCH",
            &format!("{SCHEMAS}/orders/status?fieldManager={manager}&force=true"),
            "application/apply-patch+yaml",
            &body,
        );
        assert_eq!(code, 200, "{object}");
        object
    };
    let types = |object: &Value| -> Vec<String> {
        object["status"]["conditions"]
            .as_array()
            .map_or_else(Vec::new, |conditions| {
                conditions
                    .iter()
                    .map(|condition| condition["type"].as_str().unwrap().to_string())
                    .collect()
            })
    };
    let first = apply("a", json!({"conditions": [condition("Ready", "True")], "version": 1}));
    assert_eq!(types(&first), ["Ready"]);
    let second = apply("b", json!({"conditions": [condition("Synced", "True")]}));
    assert_eq!(types(&second), ["Ready", "Synced"]);
    assert_eq!(second["status"]["version"], 1);
    let third = apply("a", json!({"conditions": [condition("Ready", "False")]}));
    assert_eq!(types(&third), ["Ready", "Synced"]);
    assert_eq!(third["status"]["conditions"][0]["status"], "False");
    assert!(
        third["status"].get("version").is_none(),
        "a dropped field goes: {third}"
    );
    let fourth = apply("a", json!({"conditions": []}));
    assert_eq!(types(&fourth), ["Synced"]);
    assert_eq!(fourth["metadata"]["generation"], 1);
    // Without force, changing a field another manager applied is a conflict; with force it is taken over.
    let body = json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {"name": "orders"},
        "status": {"conditions": [condition("Synced", "False")]}});
    let (code, conflict) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/orders/status?fieldManager=c&force=false"),
        "application/apply-patch+yaml",
        &body,
    );
    assert_eq!(code, 409, "{conflict}");
    assert_eq!(conflict["reason"], "Conflict");
    assert!(
        conflict["message"].as_str().unwrap().contains(r#"conflict with "b""#),
        "{conflict}"
    );
    let taken = apply("c", json!({"conditions": [condition("Synced", "False")]}));
    assert_eq!(taken["status"]["conditions"][0]["status"], "False");
    let back = apply("b", json!({"conditions": []}));
    assert_eq!(types(&back), ["Synced"], "b no longer owns the condition c took over");
    let same = apply("c", json!({"conditions": [condition("Synced", "False")]}));
    assert_eq!(
        resource_version(&same),
        resource_version(&back),
        "an identical apply is a no-op"
    );

    // Apply creates a missing object (201), and YAML bodies work.
    let yaml = "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: fresh\nspec:\n  subject: fresh-value\n  schema: '{}'\n";
    let (code, created) = http.runtime.block_on(async {
        let response = http
            .client
            .patch(format!("{}{SCHEMAS}/fresh?fieldManager=me", http.base))
            .header("content-type", "application/apply-patch+yaml")
            .body(yaml)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    });
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["subject"], "fresh-value");
}

#[test]
fn errors_are_status_objects() {
    let server = server_with_crds();
    let http = Http::new(&server);
    let (code, missing) = http.get(&format!("{SCHEMAS}/nope"));
    assert_eq!(code, 404);
    assert_eq!(missing["reason"], "NotFound");
    assert_eq!(missing["message"], "schemas.schemaops.dev \"nope\" not found");
    assert_eq!(
        missing["details"],
        json!({"name": "nope", "group": "schemaops.dev", "kind": "schemas"})
    );
    assert_eq!(http.get("/apis/nothing.example/v1/things").0, 404);
    assert_eq!(http.get("/no/such/path").1["kind"], "Status");
    let (code, malformed) = http.runtime.block_on(async {
        let response = http
            .client
            .post(format!("{}{SCHEMAS}", http.base))
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    });
    assert_eq!((code, malformed["reason"].as_str()), (400, Some("BadRequest")));
    let wrong_kind =
        json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "SubjectConfig", "metadata": {"name": "x"}});
    assert_eq!(http.send("POST", SCHEMAS, "application/json", &wrong_kind).0, 400);
    let unnamed = json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {}});
    assert_eq!(http.send("POST", SCHEMAS, "application/json", &unnamed).0, 422);
    let generated =
        json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {"generateName": "gen-"}});
    let (code, object) = http.send("POST", SCHEMAS, "application/json", &generated);
    assert_eq!(code, 201);
    assert!(object["metadata"]["name"].as_str().unwrap().starts_with("gen-"));
    let elsewhere = json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {"name": "x"}});
    let (code, absent) = http.send(
        "POST",
        "/apis/schemaops.dev/v1alpha1/namespaces/team-a/schemas",
        "application/json",
        &elsewhere,
    );
    assert_eq!((code, absent["details"]["kind"].as_str()), (404, Some("namespaces")));
    let duplicate = create_schema(&http, "twice", &[]);
    let (code, exists) = http.send("POST", SCHEMAS, "application/json", &duplicate);
    assert_eq!((code, exists["reason"].as_str()), (409, Some("AlreadyExists")));

    // Owned objects are collected with their owner.
    let owner = create_schema(&http, "owner", &[]);
    let owned = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned", "ownerReferences": [{
        "apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "name": "owner", "uid": owner["metadata"]["uid"],
    }]}});
    assert_eq!(
        http.send(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            &owned
        )
        .0,
        201
    );
    assert_eq!(
        http.send("DELETE", &format!("{SCHEMAS}/owner"), "", &Value::Null).0,
        200
    );
    assert_eq!(http.get("/api/v1/namespaces/default/configmaps/owned").0, 404);

    // Custom resources take no strategic merge patch.
    let (code, unsupported) = http.send(
        "PATCH",
        &format!("{SCHEMAS}/twice"),
        "application/strategic-merge-patch+json",
        &json!({}),
    );
    assert_eq!(
        (code, unsupported["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );

    // Deleting a CRD removes its objects and its kind.
    assert_eq!(
        http.send(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/schemas.schemaops.dev",
            "",
            &Value::Null
        )
        .0,
        200
    );
    assert_eq!(http.get(SCHEMAS).0, 404);
}

#[test]
fn kubectl_creates_namespaces_and_objects_in_them() {
    if !have_kubectl() {
        return;
    }
    let server = server_with_crds();
    kubectl(&server, &["create", "namespace", "team-a"]);
    let manifest = schema_manifest("orders", "{}").replace("namespace: default", "namespace: team-a");
    kubectl_stdin(&server, &["apply", "-f", "-"], &manifest);
    let all = kubectl(&server, &["get", "schemas", "-A"]);
    assert!(all.contains("team-a") && all.contains("orders"), "{all}");
    let configmap = kubectl(
        &server,
        &["create", "configmap", "settings", "--from-literal=a=b", "-n", "team-a"],
    );
    assert!(configmap.contains("created"), "{configmap}");
    let listed = kubectl(&server, &["get", "configmaps", "-n", "team-a"]);
    assert!(listed.contains("settings") && listed.contains("DATA"), "{listed}");
    let data = kubectl(
        &server,
        &[
            "get",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.a}",
        ],
    );
    assert_eq!(data, "b");
    kubectl(
        &server,
        &[
            "create",
            "secret",
            "generic",
            "token",
            "--from-literal=key=s3cr3t",
            "-n",
            "team-a",
        ],
    );
    let secret = kubectl(
        &server,
        &["get", "secret", "token", "-n", "team-a", "-o", "jsonpath={.data.key}"],
    );
    assert_eq!(secret, "czNjcjN0");
    let labels = kubectl(
        &server,
        &["get", "namespace", "team-a", "-o", "jsonpath={.metadata.labels}"],
    );
    assert!(labels.contains("team-a"), "{labels}");
    let http = Http::new(&server);
    let uid = kubectl(
        &server,
        &[
            "get",
            "schema",
            "orders",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
    );
    let event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "orders.1", "namespace": "team-a"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "schemaops", "reportingInstance": "test",
        "action": "Register", "reason": "Registered", "type": "Normal", "note": "registered version 1",
        "regarding": {"kind": "Schema", "name": "orders", "namespace": "team-a", "apiVersion": "schemaops.dev/v1alpha1", "uid": uid},
    });
    let (code, created) = http.send(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/team-a/events",
        "application/json",
        &event,
    );
    assert_eq!(code, 201, "{created}");
    let events = kubectl(&server, &["get", "events", "-n", "team-a"]);
    assert!(
        events.contains("Registered") && events.contains("schema/orders") && events.contains("registered version 1"),
        "{events}"
    );
    let described = kubectl(&server, &["describe", "schema", "orders", "-n", "team-a"]);
    assert!(
        described.contains("Subject:") && described.contains("orders-value"),
        "{described}"
    );
    assert!(
        described.contains("Normal  Registered") && described.contains("registered version 1"),
        "{described}"
    );
    kubectl(&server, &["delete", "namespace", "team-a"]);
    let gone = kubectl_output(&server, &["get", "schemas", "-A"]);
    assert!(!String::from_utf8_lossy(&gone.stdout).contains("orders"));
}

mod kube_rs {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
    use kube::runtime::controller::{Action, Controller};
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    use kube::runtime::{finalizer, watcher};
    use kube::{Client, Resource, ResourceExt};
    use schemaops::controller::operator::events::Publisher;
    use schemaops::crd::{DeletionPolicy, Schema, SchemaSpec, SchemaType};
    use serde_json::json;

    use super::{runtime, server_with_crds};

    fn client(url: &str) -> Client {
        let mut config = kube::Config::new(url.parse().expect("a URL"));
        config.default_namespace = "default".into();
        Client::try_from(config).expect("a client")
    }

    fn schema(name: &str) -> Schema {
        Schema::new(
            name,
            SchemaSpec {
                metadata: None,
                rule_set: None,
                subject: format!("{name}-value"),
                registry_ref: None,
                schema_type: SchemaType::Avro,
                schema: Some("{\"type\":\"string\"}".into()),
                schema_from: None,
                references: Vec::new(),
                deletion_policy: DeletionPolicy::default(),
                management_policy: Default::default(),
            },
        )
    }

    fn ready(generation: i64) -> serde_json::Value {
        json!({
            "apiVersion": "schemaops.dev/v1alpha1",
            "kind": "Schema",
            "status": {"observedGeneration": generation, "conditions": [{
                "type": "Ready", "status": "True", "reason": "Registered", "message": "ok",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]},
        })
    }

    #[test]
    fn kube_client_crud_status_apply_watch_finalizer_configmaps_and_events() {
        let server = server_with_crds();
        runtime().block_on(async {
            let client = client(server.url());
            let schemas: Api<Schema> = Api::default_namespaced(client.clone());

            let created = schemas
                .create(&PostParams::default(), &schema("orders"))
                .await
                .expect("create");
            assert_eq!(created.metadata.generation, Some(1));
            assert!(created.uid().is_some());
            let fetched = schemas.get("orders").await.expect("get");
            assert_eq!(fetched.spec.subject, "orders-value");
            let listed = schemas.list(&ListParams::default()).await.expect("list");
            assert_eq!(listed.items.len(), 1);

            let mut events = watcher(schemas.clone(), watcher::Config::default()).boxed();
            let mut seen_initial = false;
            while let Some(event) = tokio::time::timeout(Duration::from_secs(5), events.next())
                .await
                .expect("an event")
            {
                if let watcher::Event::InitDone = event.expect("a watch event") {
                    seen_initial = true;
                    break;
                }
            }
            assert!(seen_initial);

            let params = PatchParams::apply("schemaops").force();
            let patched = schemas
                .patch_status("orders", &params, &Patch::Apply(ready(1)))
                .await
                .expect("patch_status");
            let status = patched.status.clone().expect("a status");
            assert_eq!(status.conditions[0].type_, "Ready");
            assert_eq!(patched.metadata.generation, Some(1));
            let again = schemas
                .patch_status("orders", &params, &Patch::Apply(ready(1)))
                .await
                .expect("patch_status");
            assert_eq!(again.resource_version(), patched.resource_version());

            let changed = loop {
                let event = tokio::time::timeout(Duration::from_secs(5), events.next())
                    .await
                    .expect("a change");
                if let Some(Ok(watcher::Event::Apply(object))) = event {
                    break object;
                }
            };
            assert_eq!(changed.resource_version(), patched.resource_version());
            assert!(changed.status.is_some());

            // kube-runtime's finalizer helper: add, then clean up on deletion.
            let current = Arc::new(schemas.get("orders").await.expect("get"));
            finalizer(&schemas, "schemaops.dev/cleanup", current, |_| async {
                Ok::<_, kube::Error>(Action::await_change())
            })
            .await
            .expect("adding the finalizer");
            let held = schemas.get("orders").await.expect("get");
            assert_eq!(held.finalizers(), ["schemaops.dev/cleanup"]);
            schemas
                .delete("orders", &DeleteParams::default())
                .await
                .expect("delete");
            let deleting = schemas.get("orders").await.expect("still there");
            assert!(deleting.metadata.deletion_timestamp.is_some());
            let cleaned = Arc::new(AtomicUsize::new(0));
            let counter = cleaned.clone();
            finalizer(
                &schemas,
                "schemaops.dev/cleanup",
                Arc::new(deleting),
                |event| async move {
                    if let finalizer::Event::Cleanup(_) = event {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<_, kube::Error>(Action::await_change())
                },
            )
            .await
            .expect("removing the finalizer");
            assert_eq!(cleaned.load(Ordering::SeqCst), 1);
            assert!(schemas.get_opt("orders").await.expect("get_opt").is_none());

            let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
            let mut configmap = ConfigMap::default();
            configmap.metadata.name = Some("settings".into());
            configmap.data = Some([("a".to_string(), "1".to_string())].into());
            configmaps
                .create(&PostParams::default(), &configmap)
                .await
                .expect("create configmap");
            let mut stored = configmaps.get("settings").await.expect("get configmap");
            stored.data = Some([("a".to_string(), "2".to_string())].into());
            let replaced = configmaps
                .replace("settings", &PostParams::default(), &stored)
                .await
                .expect("replace");
            assert_eq!(
                replaced
                    .data
                    .as_ref()
                    .and_then(|data| data.get("a"))
                    .map(String::as_str),
                Some("2")
            );
            configmaps
                .patch(
                    "settings",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"b": "3"}})),
                )
                .await
                .expect("merge patch");
            configmaps
                .delete("settings", &DeleteParams::default())
                .await
                .expect("delete configmap");
            assert!(configmaps.get_opt("settings").await.expect("get_opt").is_none());

            let subject = schemas
                .create(&PostParams::default(), &schema("payments"))
                .await
                .expect("create");
            let recorder = Recorder::new(
                client.clone(),
                Reporter {
                    controller: "schemaops".into(),
                    instance: Some("test".into()),
                },
            );
            let event = Event {
                type_: EventType::Normal,
                reason: "Registered".into(),
                note: Some("registered version 1".into()),
                action: "Register".into(),
                secondary: None,
            };
            let reference = subject.object_ref(&());
            recorder.publish(&event, &reference).await.expect("an event");
            recorder
                .publish(&event, &reference)
                .await
                .expect("the same event again, as a series");
            let recorded: Api<K8sEvent> = Api::default_namespaced(client.clone());
            let list = recorded.list(&ListParams::default()).await.expect("events");
            assert_eq!(list.items.len(), 1);
            assert_eq!(list.items[0].series.as_ref().map(|series| series.count), Some(2));
            assert_eq!(list.items[0].reason.as_deref(), Some("Registered"));
            assert_eq!(
                list.items[0]
                    .regarding
                    .as_ref()
                    .and_then(|regarding| regarding.name.as_deref()),
                Some("payments")
            );

            // The same Event read through the core API, as `kubectl describe` does.
            let core: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client.clone());
            let selected = core
                .list(&ListParams::default().fields("involvedObject.name=payments,involvedObject.kind=Schema"))
                .await
                .expect("core events");
            assert_eq!(selected.items.len(), 1);
            assert_eq!(selected.items[0].message.as_deref(), Some("registered version 1"));
            assert_eq!(selected.items[0].reporting_component.as_deref(), Some("schemaops"));
        });
    }

    /// The operator's own publisher (issue 20 replaced kube's `Recorder`):
    /// a repeat is a merge patch of the first Event's series, and a repeat
    /// whose Event is gone (the patch answers 404) starts a new Event.
    #[test]
    fn the_operators_events_repeat_as_a_series_and_start_again_when_their_event_is_gone() {
        let server = server_with_crds();
        runtime().block_on(async {
            let client = client(server.url());
            let schemas: Api<Schema> = Api::default_namespaced(client.clone());
            let subject = schemas
                .create(&PostParams::default(), &schema("payments"))
                .await
                .expect("create");
            let publisher = Publisher::with_instance(client.clone(), "schemaops", "test");
            let event = Event {
                type_: EventType::Warning,
                reason: "Rejected".into(),
                note: Some("field f0 changed type".into()),
                action: "Reconcile".into(),
                secondary: None,
            };
            let reference = subject.object_ref(&());
            for _ in 0..3 {
                publisher.publish(&event, &reference).await.expect("an event");
            }
            let recorded: Api<K8sEvent> = Api::default_namespaced(client.clone());
            let list = recorded.list(&ListParams::default()).await.expect("events");
            assert_eq!(list.items.len(), 1, "{list:?}");
            let first = &list.items[0];
            let series = first.series.as_ref().expect("a series");
            assert_eq!(series.count, 3);
            assert!(series.last_observed_time.0 >= first.event_time.as_ref().expect("an event time").0);
            assert_eq!(first.reporting_controller.as_deref(), Some("schemaops"));
            assert_eq!(first.reporting_instance.as_deref(), Some("test"));
            assert_eq!(first.reason.as_deref(), Some("Rejected"));
            assert_eq!(first.action.as_deref(), Some("Reconcile"));
            assert_eq!(first.note.as_deref(), Some("field f0 changed type"));
            assert_eq!(first.type_.as_deref(), Some("Warning"));
            assert_eq!(first.regarding.as_ref(), Some(&reference));

            // Events expire on a real server; the next repeat starts a new one.
            let gone = first.metadata.name.clone().expect("a name");
            recorded
                .delete(&gone, &DeleteParams::default())
                .await
                .expect("delete the event");
            publisher.publish(&event, &reference).await.expect("a new event");
            let list = recorded.list(&ListParams::default()).await.expect("events");
            assert_eq!(list.items.len(), 1, "{list:?}");
            let again = &list.items[0];
            assert_ne!(again.metadata.name.as_deref(), Some(gone.as_str()));
            assert_eq!(again.series, None);
            publisher.publish(&event, &reference).await.expect("a repeat");
            let repeated = recorded
                .get(again.metadata.name.as_deref().expect("a name"))
                .await
                .expect("the new event");
            assert_eq!(repeated.series.map(|series| series.count), Some(2));
        });
    }

    #[test]
    fn the_kubeconfig_works_for_kube_clients() {
        let server = server_with_crds();
        runtime().block_on(async {
            let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig");
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .expect("a config");
            assert_eq!(config.default_namespace, "default");
            assert_eq!(config.cluster_url.to_string().trim_end_matches('/'), server.url());
            let client = Client::try_from(config).expect("a client");
            let version = client.apiserver_version().await.expect("/version");
            assert_eq!(version.git_version, "v1.32.0");
            let schemas: Api<Schema> = Api::default_namespaced(client);
            assert!(
                schemas
                    .list(&ListParams::default())
                    .await
                    .expect("list")
                    .items
                    .is_empty()
            );
        });
    }

    #[test]
    fn the_metadata_api_and_metadata_watcher_work() {
        let server = server_with_crds();
        runtime().block_on(async {
            let client = client(server.url());
            let schemas: Api<Schema> = Api::default_namespaced(client.clone());
            schemas
                .create(&PostParams::default(), &schema("orders"))
                .await
                .expect("create");
            let metadata = schemas.get_metadata("orders").await.expect("get_metadata");
            assert_eq!(metadata.metadata.generation, Some(1));
            let listed = schemas
                .list_metadata(&ListParams::default())
                .await
                .expect("list_metadata");
            assert_eq!(listed.items.len(), 1);
            let metadata_api: Api<kube::core::PartialObjectMeta<Schema>> = Api::default_namespaced(client.clone());
            let mut stream = watcher(metadata_api, watcher::Config::default()).boxed();
            let mut names = Vec::new();
            loop {
                let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
                    .await
                    .expect("an event");
                match event.expect("a stream item").expect("a watch event") {
                    watcher::Event::InitApply(object) => names.push(object.name_any()),
                    watcher::Event::InitDone => break,
                    _ => {}
                }
            }
            assert_eq!(names, ["orders"]);
            schemas
                .patch(
                    "orders",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
                )
                .await
                .expect("label");
            let changed = loop {
                let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
                    .await
                    .expect("a change");
                if let Some(Ok(watcher::Event::Apply(object))) = event {
                    break object;
                }
            };
            assert_eq!(changed.labels().get("a").map(String::as_str), Some("b"));
        });
    }

    #[test]
    fn a_controller_settles_when_its_status_writes_change_nothing() {
        let server = server_with_crds();
        runtime().block_on(async {
            let client = client(server.url());
            let schemas: Api<Schema> = Api::default_namespaced(client.clone());
            schemas
                .create(&PostParams::default(), &schema("orders"))
                .await
                .expect("create");
            let reconciles = Arc::new(AtomicUsize::new(0));
            let context = Arc::new((schemas.clone(), reconciles.clone()));
            let controller = Controller::new(schemas.clone(), watcher::Config::default())
                .run(
                    |object: Arc<Schema>, context: Arc<(Api<Schema>, Arc<AtomicUsize>)>| async move {
                        context.1.fetch_add(1, Ordering::SeqCst);
                        let generation = object.metadata.generation.unwrap_or_default();
                        context
                            .0
                            .patch_status(
                                &object.name_any(),
                                &PatchParams::apply("schemaops").force(),
                                &Patch::Apply(ready(generation)),
                            )
                            .await?;
                        Ok::<_, kube::Error>(Action::await_change())
                    },
                    |_, _: &kube::Error, _| Action::requeue(Duration::from_secs(60)),
                    context,
                )
                .for_each(|_| async {});
            let running = tokio::spawn(controller);
            // Wait for the status to land, then give a looping controller time to show itself.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
            loop {
                let current = schemas.get("orders").await.expect("get");
                if current.status.and_then(|status| status.observed_generation) == Some(1) {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the controller never wrote a status"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(1500)).await;
            running.abort();
            let count = reconciles.load(Ordering::SeqCst);
            // Its own status write triggers one more reconcile, whose identical write changes nothing.
            assert!((1..=2).contains(&count), "the controller reconciled {count} times");
        });
    }
}

#[test]
fn kubectl_get_watch_prints_rows_as_they_change() {
    if !have_kubectl() {
        return;
    }
    let server = server_with_crds();
    let http = Http::new(&server);
    create_schema(&http, "orders", &[]);
    let child = server
        .kubectl()
        .args(["get", "schemas", "--watch", "--request-timeout=3s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get --watch");
    std::thread::sleep(Duration::from_millis(1200));
    http.send(
        "PATCH",
        &format!("{SCHEMAS}/orders/status"),
        "application/merge-patch+json",
        &ready_status(1, "True"),
    );
    create_schema(&http, "payments", &[]);
    let output = child.wait_with_output().expect("kubectl");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("READY"), "{stdout}");
    assert!(
        lines.iter().filter(|line| line.starts_with("NAME")).count() == 1,
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("orders") && line.contains("AVRO") && line.contains("True")),
        "{stdout}"
    );
    assert!(lines.iter().any(|line| line.starts_with("payments")), "{stdout}");
}

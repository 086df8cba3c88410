//! Data contracts end to end (issue 19): the test API server, `schemaops
//! operator` as a process, and the real `kubectl` applying
//! `examples/contracts/` one commit at a time: a PII-tagged schema with a CEL
//! rule, then the orders subject's major-version story under a
//! compatibility group, then a change of metadata alone.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use apiserver::TestApiServer;
use serde_json::Value;
use support::operator::OperatorProcess;

/// How long any one convergence may take.
const CONVERGE: Duration = Duration::from_secs(60);

/// The namespace the examples are applied to.
const NAMESPACE: &str = "shop";

struct Cluster {
    // Fields drop in order: the operator stops before the API server does.
    operator: OperatorProcess,
    _server: TestApiServer,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> Option<Cluster> {
        let kubectl_runs = std::process::Command::new("kubectl")
            .args(["version", "--client"])
            .output()
            .is_ok_and(|output| output.status.success());
        if !kubectl_runs {
            assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
            eprintln!("skipping: kubectl is not installed");
            return None;
        }
        let server = TestApiServer::start();
        let kubeconfig = server.kubeconfig().to_owned();
        let cache = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
        ok(
            &kubectl(&kubeconfig, cache.path(), &["apply", "-f", crds.to_str().unwrap()]),
            "apply the CRDs",
        );
        ok(
            &kubectl(&kubeconfig, cache.path(), &["create", "namespace", NAMESPACE]),
            "create the namespace",
        );
        let operator = OperatorProcess::start(&kubeconfig, data.path(), &[]);
        operator.wait_ready(CONVERGE).await;
        Some(Cluster {
            operator,
            _server: server,
            kubeconfig,
            cache,
            _data: data,
        })
    }

    fn kubectl(&self, args: &[&str]) -> String {
        let output = kubectl(&self.kubeconfig, self.cache.path(), args);
        ok(&output, &format!("kubectl {args:?}"));
        String::from_utf8(output.stdout).unwrap()
    }

    /// Applies one file of `examples/contracts/`.
    fn apply_example(&self, file: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/contracts")
            .join(file);
        self.kubectl(&["apply", "--namespace", NAMESPACE, "-f", path.to_str().unwrap()]);
    }

    fn get(&self, kind: &str, name: &str) -> Value {
        serde_json::from_str(&self.kubectl(&["get", kind, name, "--namespace", NAMESPACE, "-o", "json"])).unwrap()
    }

    /// Waits until the object's status describes its generation with this
    /// Ready condition, showing the object when it never does.
    fn wait_ready(&self, kind: &str, name: &str, ready: &str, reason: &str) -> Value {
        let deadline = Instant::now() + CONVERGE;
        loop {
            let object = self.get(kind, name);
            let generation = object["metadata"]["generation"].as_i64();
            let condition = object["status"]["conditions"]
                .as_array()
                .and_then(|list| list.iter().find(|c| c["type"] == "Ready"))
                .cloned();
            if generation.is_some()
                && object["status"]["observedGeneration"].as_i64() == generation
                && condition.is_some_and(|c| c["status"] == ready && c["reason"] == reason)
            {
                return object;
            }
            assert!(
                Instant::now() < deadline,
                "{kind} {name} never had Ready={ready} ({reason}): {object:#}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    async fn registry_json(&self, path: &str) -> Value {
        let response = support::http_client()
            .get(format!("{}{path}", self.operator.registry_url))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "GET {path}: {}", response.status());
        response.json().await.unwrap()
    }
}

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

fn ok(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn ready_message(object: &Value) -> String {
    object["status"]["conditions"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_contracts_examples_converge_through_the_operator() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };

    // A PII-tagged schema with a CEL rule: registered with its contract; the
    // status shows the GUID the registry gives it and the metadata it holds.
    cluster.apply_example("00-customers-pii.yaml");
    let customers = cluster.wait_ready("schema", "customers", "True", "Registered");
    let stored = cluster.registry_json("/subjects/customers-value/versions/1").await;
    assert_eq!(stored["metadata"]["tags"]["Customer.ssn"], serde_json::json!(["PII"]));
    assert_eq!(stored["ruleSet"]["domainRules"][0]["name"], "ageIsNotNegative");
    assert_eq!(stored["ruleSet"]["domainRules"][0]["kind"], "CONDITION");
    assert_eq!(customers["status"]["guid"], stored["guid"]);
    assert_eq!(customers["status"]["metadata"]["properties"]["owner"], "team-a");

    // The compatibility group is written to the registry.
    cluster.apply_example("10-orders-config.yaml");
    cluster.wait_ready("subjectconfig", "orders", "True", "Configured");
    let config = cluster.registry_json("/config/orders-value").await;
    assert_eq!(config["compatibilityGroup"], "application.major_version");
    assert_eq!(config["compatibilityLevel"], "BACKWARD");

    // Major version 2, then major version 3, which breaks it: a new lineage,
    // registered without checking any version of lineage 2.
    cluster.apply_example("11-orders-v2.yaml");
    let orders = cluster.wait_ready("schema", "orders", "True", "Registered");
    assert_eq!(orders["status"]["version"], 1);
    cluster.apply_example("12-orders-v3.yaml");
    let orders = cluster.wait_ready("schema", "orders", "True", "Registered");
    assert_eq!(orders["status"]["version"], 2, "{orders:#}");
    assert_eq!(
        orders["status"]["compatibility"]["checkedVersions"],
        serde_json::json!([]),
        "the first version of lineage 3 is checked against nothing: {orders:#}"
    );
    assert_eq!(
        orders["status"]["metadata"]["properties"]["application.major_version"],
        "3"
    );

    // A breaking change that claims lineage 2 is checked against version 1
    // alone and refused; version 2 stays the Schema's.
    cluster.apply_example("13-orders-v2-breaking.yaml");
    let orders = cluster.wait_ready("schema", "orders", "False", "IncompatibleSchema");
    assert_eq!(
        orders["status"]["compatibility"]["checkedVersions"],
        serde_json::json!([1])
    );
    assert!(ready_message(&orders).contains("checked version 1"), "{orders:#}");
    let versions = cluster.registry_json("/subjects/orders-value/versions").await;
    assert_eq!(versions, serde_json::json!([1, 2]));

    // Back to major version 3 with one more property: the same schema text,
    // other metadata, so a new version with a new ID, checked against version 2.
    let v3 =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/contracts/12-orders-v3.yaml"))
            .unwrap();
    let relabelled = v3.replace(
        "      application.major_version: \"3\"",
        "      application.major_version: \"3\"\n      owner: team-orders",
    );
    assert_ne!(relabelled, v3);
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), relabelled).unwrap();
    cluster.kubectl(&["apply", "--namespace", NAMESPACE, "-f", file.path().to_str().unwrap()]);
    let orders = cluster.wait_ready("schema", "orders", "True", "Registered");
    assert_eq!(orders["status"]["version"], 3, "{orders:#}");
    assert_eq!(
        orders["status"]["compatibility"]["checkedVersions"],
        serde_json::json!([2])
    );
    let third = cluster.registry_json("/subjects/orders-value/versions/3").await;
    let second = cluster.registry_json("/subjects/orders-value/versions/2").await;
    assert_eq!(third["schema"], second["schema"]);
    assert_ne!(third["id"], second["id"]);
    assert_eq!(third["metadata"]["properties"]["owner"], "team-orders");
}

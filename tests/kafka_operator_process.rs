//! `schemaops operator --store kafka://…` beside `schemaops registry` on
//! one topic (issue 43): the operator's embedded registry joins the topic's
//! leader election as the registry does. Whichever instance leads, a write
//! through either one lands once (the follower forwards it) and both
//! answer alike; the operator's reconciler writes the topic while its
//! instance leads. The operator runs against the test API server.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use apiserver::TestApiServer;
use serde_json::{Value, json};
use support::broker::Broker;
use support::operator::OperatorProcess;
use support::registry::RegistryProcess;

/// How long an election, a start or a reconcile may take.
const SETTLE: Duration = Duration::from_secs(30);

/// The store flags both processes take.
fn store_args(store: &str) -> Vec<&str> {
    vec![
        "--store",
        store,
        "--store-topic-replication-factor",
        "1",
        "--store-session-timeout-ms",
        "2000",
    ]
}

fn kubectl_missing() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|folder| Path::new(&folder).join("kubectl").exists()));
    if !found {
        assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
        println!("skipped: kubectl is not installed");
    }
    !found
}

fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) {
    let output = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn avro(name: &str) -> String {
    json!({"type": "record", "name": name, "fields": [{"name": "id", "type": "string"}]}).to_string()
}

/// Registers `schema` under `subject` through `base`, retrying while an
/// election settles (50004) or a forward failed (50003); the ID.
async fn register(base: &str, subject: &str, schema: &str) -> i64 {
    let client = support::http_client();
    let started = Instant::now();
    loop {
        let response = client
            .post(format!("{base}/subjects/{subject}/versions"))
            .json(&json!({ "schema": schema }))
            .timeout(Duration::from_secs(10))
            .send()
            .await;
        let (status, body) = match response {
            Ok(response) => (response.status().as_u16(), response.text().await.unwrap_or_default()),
            Err(error) => (0, error.to_string()),
        };
        if status == 200 {
            let body: Value = serde_json::from_str(&body).unwrap();
            return body["id"].as_i64().unwrap();
        }
        assert!(
            status != 200 && (status == 500 || status == 0) && started.elapsed() < SETTLE,
            "{base} did not take {subject}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every version `base` holds, soft-deleted ones included.
async fn everything(base: &str) -> Value {
    support::http_client()
        .get(format!("{base}/schemas?deleted=true"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `subject`'s versions at `base` as (version, ID).
async fn versions(base: &str, subject: &str) -> Vec<(i64, i64)> {
    let list: Vec<Value> = serde_json::from_value(everything(base).await).unwrap();
    list.iter()
        .filter(|entry| entry["subject"] == subject)
        .map(|entry| (entry["version"].as_i64().unwrap(), entry["id"].as_i64().unwrap()))
        .collect()
}

/// Whether the process whose `/metrics` is at `metrics_base` leads the store.
async fn leads(metrics_base: &str) -> bool {
    support::metric(&support::scrape(metrics_base).await, "schemaops_registry_store_leader") == Some(1.0)
}

async fn wait_until_leads(metrics_base: &str) {
    let started = Instant::now();
    while !leads(metrics_base).await {
        assert!(started.elapsed() < SETTLE, "{metrics_base} never led the store");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_and_a_registry_on_one_topic_elect_one_writer_and_forward_to_it() {
    if kubectl_missing() {
        return;
    }
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let test_started = Instant::now();
    let store = format!("kafka://{}/_schemas", broker.address);
    let server = TestApiServer::start();
    let cache = tempfile::tempdir().unwrap();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    kubectl(
        server.kubeconfig(),
        cache.path(),
        &["apply", "-f", crds.to_str().unwrap()],
    );
    kubectl(server.kubeconfig(), cache.path(), &["create", "namespace", "team"]);
    let (operator_data, registry_data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // REST writes open on the operator too, so that writes reach it both ways.
    let operator_args = [&store_args(&store)[..], &["--rest-writes", "open"]].concat();
    let mut operator = OperatorProcess::start(server.kubeconfig(), operator_data.path(), &operator_args);
    operator.wait_ready(SETTLE).await;
    // Alone in the group, the operator leads; the registry joins as a follower.
    wait_until_leads(&operator.health_url).await;
    let registry = RegistryProcess::start_with(registry_data.path(), &store_args(&store)).await;
    assert!(!leads(&registry.url).await, "a sitting leader keeps leading");

    // The same schema through both, and one of each's own: each lands once.
    let shared = avro("Shared");
    let through_operator = register(&operator.registry_url, "shared", &shared).await;
    let through_registry = register(&registry.url, "shared", &shared).await;
    assert_eq!(through_operator, through_registry, "one schema, one ID");
    let own = register(&registry.url, "via-registry", &avro("ViaRegistry")).await;
    assert_eq!(versions(&registry.url, "via-registry").await, vec![(1, own)]);
    assert_eq!(
        versions(&operator.registry_url, "shared").await,
        vec![(1, through_operator)]
    );

    // The reconciler writes the topic: its instance leads.
    let manifest = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(
        manifest.path(),
        format!(
            "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: orders\n  namespace: team\n\
             spec:\n  subject: orders-value\n  schema: '{}'\n",
            avro("Order")
        ),
    )
    .unwrap();
    kubectl(
        server.kubeconfig(),
        cache.path(),
        &["apply", "-f", manifest.path().to_str().unwrap()],
    );
    let started = Instant::now();
    while versions(&registry.url, "orders-value").await.is_empty() {
        assert!(started.elapsed() < SETTLE, "the operator never registered orders-value");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The operator goes away: the registry takes over; back, the operator
    // follows and forwards its REST writes to the registry.
    operator.kill();
    wait_until_leads(&registry.url).await;
    let during = register(&registry.url, "while-away", &avro("WhileAway")).await;
    let mut operator = OperatorProcess::start(server.kubeconfig(), operator_data.path(), &operator_args);
    operator.wait_ready(SETTLE).await;
    assert!(!leads(&operator.health_url).await, "the registry keeps leading");
    let forwarded = register(&operator.registry_url, "via-operator", &avro("ViaOperator")).await;
    assert_eq!(
        versions(&operator.registry_url, "via-operator").await,
        vec![(1, forwarded)]
    );
    assert_eq!(versions(&operator.registry_url, "while-away").await, vec![(1, during)]);
    let again = register(&operator.registry_url, "shared", &shared).await;
    assert_eq!(again, through_operator, "registered again: the same ID, no new version");

    let listed = everything(&registry.url).await;
    assert_eq!(everything(&operator.registry_url).await, listed, "both answer alike");
    let ids: Vec<i64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_i64().unwrap())
        .collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "one version per schema: {listed:#}");
    operator.kill();
    println!("the operator and registry test took {:?}", test_started.elapsed());
}

//! Issue 40 end to end: several registries from one operator. The test API
//! server, the real `kubectl`, one `schemaops operator` (its embedded
//! registry is the default) and two `schemaops registry` processes that take
//! writes only with their own password. Schemas in two namespaces name the
//! same subject, each bound to its namespace's SchemaRegistry, and land in
//! their own registries without a conflict; a ClusterSchemaRegistry refuses a
//! namespace it does not allow; a ref to a missing connection waits; a
//! password rotated in its Secret is used without a restart; a registry that
//! goes away makes only its own objects wait; a connection with objects bound
//! to it is not deleted from under them.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use apiserver::TestApiServer;
use base64::Engine as _;
use rustls_pki_types::pem::PemObject as _;
use serde_json::Value;
use support::operator::OperatorProcess;
use support::registry::RegistryProcess;
use support::registry_double::{Flavour, RegistryDouble};

/// How long any one convergence may take.
const CONVERGE: Duration = Duration::from_secs(60);

const ORDER_V1: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;
const PAYMENT_V1: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"long"}]}"#;

struct Cluster {
    // Fields drop in order: the operator stops before the API server does.
    operator: OperatorProcess,
    default_registry: String,
    health_url: String,
    _server: TestApiServer,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Cluster {
    /// The test API server with the CRDs and `namespaces`, and the operator
    /// (watching every namespace, with `extra` flags) ready against it.
    async fn start(namespaces: &[&str], extra: &[&str]) -> Self {
        let server = TestApiServer::start();
        let kubeconfig = server.kubeconfig().to_owned();
        let data = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let setup = |args: &[&str]| {
            let output = std::process::Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("--cache-dir")
                .arg(cache.path())
                .args(args)
                .env_remove("KUBECONFIG")
                .output()
                .unwrap();
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        };
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
        setup(&["apply", "-f", crds.to_str().unwrap()]);
        for namespace in namespaces {
            setup(&["create", "namespace", namespace]);
        }
        let operator = OperatorProcess::start(&kubeconfig, data.path(), extra);
        operator.wait_ready(CONVERGE).await;
        Self {
            default_registry: operator.registry_url.clone(),
            health_url: operator.health_url.clone(),
            operator,
            _server: server,
            kubeconfig,
            cache,
            _data: data,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs")
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        let output = self.kubectl(args);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    fn apply(&self, manifest: &str) {
        let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
        std::fs::write(file.path(), manifest).unwrap();
        self.kubectl_ok(&["apply", "-f", file.path().to_str().unwrap()]);
    }

    fn get(&self, namespace: Option<&str>, kind: &str, name: &str) -> Option<Value> {
        let mut args = vec!["get", kind, name, "-o", "json"];
        if let Some(namespace) = namespace {
            args.extend(["--namespace", namespace]);
        }
        let output = self.kubectl(&args);
        output
            .status
            .success()
            .then(|| serde_json::from_slice(&output.stdout).unwrap())
    }

    /// Waits until `kind/name`'s condition `type_` has `status` and `reason`
    /// for its current generation; returns the object.
    fn wait_condition(
        &self,
        namespace: Option<&str>,
        kind: &str,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
    ) -> Value {
        let deadline = Instant::now() + CONVERGE;
        loop {
            let object = self.get(namespace, kind, name).unwrap_or(Value::Null);
            let found = object["status"]["conditions"]
                .as_array()
                .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == type_));
            if let Some(condition) = found
                && condition["status"] == status
                && condition["reason"] == reason
                && object["status"]["observedGeneration"] == object["metadata"]["generation"]
            {
                return object;
            }
            assert!(
                Instant::now() < deadline,
                "{kind} {namespace:?}/{name} never had {type_}={status} ({reason}): {object:#}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn kubectl_missing() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|folder| Path::new(&folder).join("kubectl").exists()));
    if !found {
        assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
        eprintln!("skipping: kubectl is not installed");
    }
    !found
}

/// The registry's live versions of `subject` at `url` (empty when it has none).
async fn versions(url: &str, subject: &str) -> Vec<i64> {
    let response = support::http_client()
        .get(format!("{url}/subjects/{subject}/versions"))
        .send()
        .await
        .unwrap();
    if response.status() == 404 {
        return Vec::new();
    }
    response.json().await.unwrap()
}

/// The schema text of `subject`'s latest version at `url`.
async fn latest(url: &str, subject: &str) -> String {
    let body: Value = support::http_client()
        .get(format!("{url}/subjects/{subject}/versions/latest"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["schema"].as_str().unwrap_or_default().to_owned()
}

/// The subject's own compatibility level at `url`, if it has one.
async fn subject_level(url: &str, subject: &str) -> Option<String> {
    let response = support::http_client()
        .get(format!("{url}/config/{subject}"))
        .send()
        .await
        .unwrap();
    if !response.status().is_success() {
        return None;
    }
    let body: Value = response.json().await.unwrap();
    body["compatibilityLevel"].as_str().map(str::to_owned)
}

fn secret(namespace: &str, name: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(password);
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ntype: Opaque\ndata:\n  \
         password: {encoded}\n"
    )
}

/// Nothing listens there: connecting is refused at once.
const DEAD_URL: &str = "http://127.0.0.1:1";

fn schema_registry(namespace: &str, name: &str, urls: &[&str], secret: &str) -> String {
    schema_registry_with(namespace, name, urls, secret, "{attemptSeconds: 2, deadlineSeconds: 3}")
}

/// A SchemaRegistry with basic auth (user `ci`, the password in `secret`) and `timeouts`.
fn schema_registry_with(namespace: &str, name: &str, urls: &[&str], secret: &str, timeouts: &str) -> String {
    let urls = urls
        .iter()
        .map(|url| format!("\"{url}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaRegistry\nmetadata:\n  name: {name}\n  namespace: \
         {namespace}\nspec:\n  external:\n    urls: [{urls}]\n    auth:\n      basic:\n        username: ci\n        \
         passwordSecretRef: {{name: {secret}, key: password}}\n    timeouts: {timeouts}\n"
    )
}

fn schema(namespace: &str, name: &str, subject: &str, text: &str, registry_ref: Option<(&str, &str)>) -> String {
    let reference = registry_ref
        .map(|(kind, name)| format!("  registryRef: {{kind: {kind}, name: {name}}}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  \
         subject: {subject}\n  schema: '{text}'\n{reference}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_follow_their_registry_ref_with_per_registry_claims_and_live_rotation() {
    if kubectl_missing() {
        return;
    }
    let alpha_data = tempfile::tempdir().unwrap();
    let alpha = RegistryProcess::start_with(alpha_data.path(), &["--write-credentials", "ci:alpha-pw"]).await;
    let beta_data = tempfile::tempdir().unwrap();
    let beta = RegistryProcess::start_with(beta_data.path(), &["--write-credentials", "ci:beta-pw"]).await;

    // Every namespace watched; a short resync so connections are checked again within seconds.
    let cluster = Cluster::start(&["team-a", "team-b", "team-c"], &["--resync-seconds", "2"]).await;

    // team-a's connection has the right password; team-b's Secret holds a stale one for now.
    cluster.apply(&secret("team-a", "alpha-credentials", "alpha-pw"));
    cluster.apply(&secret("team-b", "beta-credentials", "stale-pw"));
    // team-a's first URL is dead: the connection fails over to alpha and reports it in use.
    cluster.apply(&schema_registry(
        "team-a",
        "team-registry",
        &[DEAD_URL, &alpha.url],
        "alpha-credentials",
    ));
    cluster.apply(&schema_registry(
        "team-b",
        "team-registry",
        &[&beta.url],
        "beta-credentials",
    ));
    cluster.apply(
        "apiVersion: schemaops.dev/v1alpha1\nkind: ClusterSchemaRegistry\nmetadata:\n  name: shared\nspec:\n  \
         embedded: {}\n  allowedNamespaces:\n    names: [team-a]\n",
    );
    let alpha_connection = cluster.wait_condition(
        Some("team-a"),
        "schemaregistry",
        "team-registry",
        "Ready",
        "True",
        "Ready",
    );
    assert_eq!(alpha_connection["status"]["endpoint"], alpha.url.as_str());
    cluster.wait_condition(None, "clusterschemaregistry", "shared", "Ready", "True", "Ready");

    // The same subject in two namespaces, each bound to its own namespace's connection.
    let ref_a = Some(("SchemaRegistry", "team-registry"));
    cluster.apply(&schema("team-a", "orders", "orders-value", ORDER_V1, ref_a));
    cluster.apply(&schema("team-b", "orders", "orders-value", PAYMENT_V1, ref_a));
    // Not allowed to use the shared registry; a ref to nothing; and no ref at all.
    let shared = Some(("ClusterSchemaRegistry", "shared"));
    cluster.apply(&schema("team-c", "outsider", "outsider-value", ORDER_V1, shared));
    cluster.apply(&schema(
        "team-a",
        "lost",
        "lost-value",
        ORDER_V1,
        Some(("SchemaRegistry", "missing")),
    ));
    cluster.apply(&schema("team-a", "plain", "plain-value", ORDER_V1, None));

    cluster.wait_condition(Some("team-a"), "schema", "orders", "Ready", "True", "Registered");
    assert_eq!(versions(&alpha.url, "orders-value").await, [1]);
    assert!(latest(&alpha.url, "orders-value").await.contains("Order"));
    assert!(
        versions(&cluster.default_registry, "orders-value").await.is_empty(),
        "a bound Schema never lands in the default registry"
    );
    cluster.wait_condition(Some("team-a"), "schema", "plain", "Ready", "True", "Registered");
    assert_eq!(versions(&cluster.default_registry, "plain-value").await, [1]);
    assert!(versions(&alpha.url, "plain-value").await.is_empty());

    // A SubjectConfig follows its ref too: the level is set in team-a's registry only.
    cluster.apply(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: orders\n  namespace: team-a\n\
         spec:\n  subject: orders-value\n  compatibility: FULL\n  registryRef: {kind: SchemaRegistry, name: \
         team-registry}\n",
    );
    cluster.wait_condition(Some("team-a"), "subjectconfig", "orders", "Ready", "True", "Configured");
    assert_eq!(subject_level(&alpha.url, "orders-value").await.as_deref(), Some("FULL"));
    assert_eq!(subject_level(&cluster.default_registry, "orders-value").await, None);

    // Metrics count reconciles by the registry each object lives in.
    let scrape = support::scrape(&cluster.health_url).await;
    for series in [
        r#"schemaops_reconciles_total{kind="Schema",registry="SchemaRegistry/team-a/team-registry",result="ok"}"#,
        r#"schemaops_reconciles_total{kind="SubjectConfig",registry="SchemaRegistry/team-a/team-registry",result="ok"}"#,
        r#"schemaops_reconciles_total{kind="Schema",registry="default",result="ok"}"#,
    ] {
        assert!(
            support::metric(&scrape, series).unwrap_or(0.0) > 0.0,
            "{series} in\n{scrape}"
        );
    }
    // Events of a bound object name its connection, in the note and as the related object.
    let events: Value =
        serde_json::from_str(&cluster.kubectl_ok(&["get", "events", "-n", "team-a", "-o", "json"])).unwrap();
    let registered = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["reason"] == "Registered" && event["involvedObject"]["name"] == "orders")
        .unwrap_or_else(|| panic!("a Registered event for team-a/orders: {events:#}"));
    assert!(
        registered["message"]
            .as_str()
            .unwrap_or_default()
            .ends_with("(registry SchemaRegistry/team-registry)"),
        "{registered:#}"
    );
    assert_eq!(registered["related"]["kind"], "SchemaRegistry", "{registered:#}");
    assert_eq!(registered["related"]["name"], "team-registry", "{registered:#}");
    assert_eq!(registered["related"]["namespace"], "team-a", "{registered:#}");

    let outsider = cluster.wait_condition(
        Some("team-c"),
        "schema",
        "outsider",
        "Ready",
        "False",
        "RegistryNotAllowed",
    );
    let message = outsider["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|condition| condition["type"] == "Ready")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("ClusterSchemaRegistry/shared does not allow namespace team-c"),
        "{message}"
    );
    cluster.wait_condition(
        Some("team-a"),
        "schema",
        "lost",
        "Reconciling",
        "True",
        "RegistryNotFound",
    );
    assert!(versions(&cluster.default_registry, "outsider-value").await.is_empty());
    assert!(versions(&cluster.default_registry, "lost-value").await.is_empty());

    // team-b's registry refuses the stale password: nothing lands anywhere yet.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(versions(&beta.url, "orders-value").await.is_empty());
    let waiting = cluster.get(Some("team-b"), "schema", "orders").unwrap();
    assert_ne!(
        waiting["status"]["conditions"]
            .as_array()
            .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == "Ready"))
            .map(|ready| ready["status"].clone()),
        Some(Value::from("True")),
        "{waiting:#}"
    );
    // Rotated in the Secret alone: the operator keeps running and uses the new password.
    cluster.apply(&secret("team-b", "beta-credentials", "beta-pw"));
    cluster.wait_condition(Some("team-b"), "schema", "orders", "Ready", "True", "Registered");
    assert_eq!(versions(&beta.url, "orders-value").await, [1]);
    assert!(latest(&beta.url, "orders-value").await.contains("Payment"));
    assert!(latest(&alpha.url, "orders-value").await.contains("Order"));

    // Each connection counts its own objects (team-a: the Schema and the SubjectConfig).
    let counted = |namespace: &str, bound: i64| {
        let deadline = Instant::now() + CONVERGE;
        loop {
            let object = cluster.get(Some(namespace), "schemaregistry", "team-registry").unwrap();
            if object["status"]["boundObjects"] == bound {
                break;
            }
            assert!(Instant::now() < deadline, "{object:#}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    counted("team-a", 2);
    counted("team-b", 1);

    // team-b's registry goes away: only team-b's connection and Schema wait, team-a's stay Ready.
    drop(beta);
    cluster.wait_condition(
        Some("team-b"),
        "schemaregistry",
        "team-registry",
        "Ready",
        "False",
        "RegistryUnavailable",
    );
    cluster.wait_condition(Some("team-b"), "schema", "orders", "Ready", "False", "RegistryNotReady");
    cluster.wait_condition(Some("team-a"), "schema", "orders", "Ready", "True", "Registered");
    cluster.wait_condition(Some("team-a"), "schema", "plain", "Ready", "True", "Registered");

    // A connection with a bound Schema is not deleted from under it; it goes once the Schema does.
    cluster.kubectl_ok(&[
        "delete",
        "schemaregistry",
        "team-registry",
        "--namespace",
        "team-a",
        "--wait=false",
    ]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let kept = cluster.get(Some("team-a"), "schemaregistry", "team-registry");
    assert!(
        kept.as_ref()
            .is_some_and(|object| object["metadata"]["deletionTimestamp"].is_string()),
        "{kept:?}"
    );
    // Objects bound to a connection being deleted still clean up through it.
    cluster.kubectl_ok(&[
        "delete",
        "subjectconfig",
        "orders",
        "--namespace",
        "team-a",
        "--timeout=60s",
    ]);
    assert_eq!(subject_level(&alpha.url, "orders-value").await, None);
    assert!(
        cluster.get(Some("team-a"), "schemaregistry", "team-registry").is_some(),
        "a Schema is still bound"
    );
    cluster.kubectl_ok(&["delete", "schema", "orders", "--namespace", "team-a", "--timeout=60s"]);
    let deadline = Instant::now() + CONVERGE;
    while cluster.get(Some("team-a"), "schemaregistry", "team-registry").is_some() {
        assert!(Instant::now() < deadline, "the connection stayed after its Schema went");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Retain (the default) left the subject in team-a's registry.
    assert_eq!(versions(&alpha.url, "orders-value").await, [1]);
}

fn subject_config(
    namespace: &str,
    name: &str,
    subject: &str,
    level: &str,
    mode: Option<&str>,
    registry_ref: (&str, &str),
) -> String {
    let mode = mode.map(|mode| format!("  mode: {mode}\n")).unwrap_or_default();
    let (kind, connection) = registry_ref;
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: {name}\n  namespace: \
         {namespace}\nspec:\n  subject: {subject}\n  compatibility: {level}\n{mode}  registryRef: {{kind: {kind}, \
         name: {connection}}}\n"
    )
}

/// The operator's admission webhook, reached over TLS with the CA it wrote out.
struct Webhook {
    url: String,
    client: reqwest::Client,
}

impl Webhook {
    fn of(cluster: &Cluster, bundle: &Path) -> Self {
        let encoded = std::fs::read_to_string(bundle).expect("the operator wrote its CA bundle");
        let pem = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .expect("a base64 CA bundle");
        let mut roots = rustls::RootCertStore::empty();
        for certificate in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            roots.add(certificate.unwrap()).unwrap();
        }
        let base = cluster
            .operator
            .webhook_url
            .clone()
            .expect("the operator serves its webhook");
        Self {
            // The certificate names `localhost`.
            url: format!("{}/validate/schemas", base.replace("127.0.0.1", "localhost")),
            client: support::http_client_trusting(roots),
        }
    }

    /// The webhook's `response` to creating the object in `manifest` (YAML).
    async fn review(&self, manifest: &str) -> Value {
        let object: Value = serde_saphyr::from_str(manifest).expect("a YAML manifest");
        let kind = object["kind"].as_str().unwrap().to_owned();
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "1b4f1d1e-4f7a-4d41-9c55-2a3f7b0c9e01",
                "kind": {"group": "schemaops.dev", "version": "v1alpha1", "kind": kind},
                "resource": {"group": "schemaops.dev", "version": "v1alpha1", "resource": format!("{}s", kind.to_lowercase())},
                "name": object["metadata"]["name"],
                "namespace": object["metadata"]["namespace"],
                "operation": "CREATE",
                "userInfo": {"username": "admin"},
                "object": object,
                "dryRun": false,
            }
        });
        let reply: Value = self
            .client
            .post(&self.url)
            .json(&review)
            .send()
            .await
            .expect("the webhook answers")
            .json()
            .await
            .expect("an AdmissionReview");
        reply["response"].clone()
    }
}

/// The message of `object`'s condition `type_`.
fn condition_message(object: &Value, type_: &str) -> String {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == type_))
        .and_then(|condition| condition["message"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A registry behind the registry double answering as Karapace, with its own
/// password: the connection says what Karapace lacks and is Ready; a Schema
/// bound to it lands there; a level-only SubjectConfig is configured there,
/// and one that asks for a per-subject mode gets its level while the mode is
/// reported unsupported: no mode write ever reaches the registry (Karapace
/// refuses them with 405). Then its password is rotated while reconciles
/// against it are in flight (the registry holds every request back): the
/// requests under way meet the new password and are refused, and the next
/// reconciles read the new Secret and use it, with no restart and no object
/// left failed. The resync is long, so it is the retry that recovers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_karapace_registry_reports_what_it_lacks_and_takes_a_password_rotated_mid_reconcile() {
    if kubectl_missing() {
        return;
    }
    let served = tempfile::tempdir().unwrap();
    let karapace = RegistryDouble::start(served.path()).await;
    karapace.set_flavour(Flavour::Karapace);
    karapace.require_password("karapace-pw");
    let bundle_folder = tempfile::tempdir().unwrap();
    let bundle = bundle_folder.path().join("ca-bundle");
    let cluster = Cluster::start(
        &["team-k"],
        &[
            "--resync-seconds",
            "300",
            "--webhook-listen",
            "127.0.0.1:0",
            "--webhook-ca-bundle-out",
            bundle.to_str().unwrap(),
        ],
    )
    .await;

    cluster.apply(&secret("team-k", "karapace-credentials", "karapace-pw"));
    cluster.apply(&schema_registry_with(
        "team-k",
        "karapace",
        &[&karapace.url],
        "karapace-credentials",
        "{attemptSeconds: 10, deadlineSeconds: 20}",
    ));
    let connection = cluster.wait_condition(Some("team-k"), "schemaregistry", "karapace", "Ready", "True", "Ready");
    assert_eq!(
        connection["status"]["endpoint"],
        karapace.url.as_str(),
        "{connection:#}"
    );
    // No subject modes, data contracts, contexts or GUIDs; `normalize` it takes.
    assert_eq!(
        connection["status"]["capabilities"],
        serde_json::json!({"subjectMode": false, "contracts": false, "contexts": false, "guids": false, "normalize": true}),
        "{connection:#}"
    );

    let bound = ("SchemaRegistry", "karapace");
    cluster.apply(&schema("team-k", "orders", "orders-value", ORDER_V1, Some(bound)));
    cluster.apply(&schema("team-k", "payments", "payments-value", PAYMENT_V1, Some(bound)));
    cluster.wait_condition(Some("team-k"), "schema", "orders", "Ready", "True", "Registered");
    cluster.wait_condition(Some("team-k"), "schema", "payments", "Ready", "True", "Registered");
    assert_eq!(versions(&karapace.backend_url, "orders-value").await, [1]);
    assert!(
        latest(&karapace.backend_url, "payments-value")
            .await
            .contains("Payment")
    );
    assert!(versions(&cluster.default_registry, "orders-value").await.is_empty());

    cluster.apply(&subject_config("team-k", "orders", "orders-value", "FULL", None, bound));
    cluster.wait_condition(Some("team-k"), "subjectconfig", "orders", "Ready", "True", "Configured");
    assert_eq!(
        subject_level(&karapace.backend_url, "orders-value").await.as_deref(),
        Some("FULL")
    );
    cluster.apply(&subject_config(
        "team-k",
        "payments",
        "payments-value",
        "FORWARD",
        Some("READONLY"),
        bound,
    ));
    let frozen = cluster.wait_condition(
        Some("team-k"),
        "subjectconfig",
        "payments",
        "Ready",
        "False",
        "ModeUnsupported",
    );
    assert!(
        condition_message(&frozen, "Ready").contains("cannot hold a per-subject mode"),
        "{frozen:#}"
    );
    assert_eq!(
        subject_level(&karapace.backend_url, "payments-value").await.as_deref(),
        Some("FORWARD")
    );
    assert_eq!(karapace.subject_mode_writes(), 0, "no mode write reached Karapace");
    assert_eq!(karapace.unauthorized(), 0, "every request carried the password");

    // The webhook refuses what it can know Karapace cannot hold: a managed SubjectConfig's mode.
    let webhook = Webhook::of(&cluster, &bundle);
    let with_mode = subject_config("team-k", "audit", "audit-value", "BACKWARD", Some("READWRITE"), bound);
    let reply = webhook.review(&with_mode).await;
    assert_eq!(reply["allowed"], false, "{reply:#}");
    assert_eq!(reply["status"]["code"], 422, "{reply:#}");
    assert!(
        reply["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("SchemaRegistry/karapace cannot hold a per-subject mode"),
        "{reply:#}"
    );
    let level_only = subject_config("team-k", "audit", "audit-value", "BACKWARD", None, bound);
    assert_eq!(webhook.review(&level_only).await["allowed"], true);
    let observed = format!("{with_mode}  managementPolicy: Observe\n");
    assert_eq!(webhook.review(&observed).await["allowed"], true);
    // Managed through a read-only connection: allowed, with a warning that it is only observed.
    cluster.apply(&format!(
        "{}  readOnly: true\n",
        schema_registry_with(
            "team-k",
            "karapace-observer",
            &[&karapace.url],
            "karapace-credentials",
            "{attemptSeconds: 10, deadlineSeconds: 20}",
        )
    ));
    let reply = webhook
        .review(&schema(
            "team-k",
            "watched",
            "orders-value",
            ORDER_V1,
            Some(("SchemaRegistry", "karapace-observer")),
        ))
        .await;
    assert_eq!(reply["allowed"], true, "{reply:#}");
    assert!(
        reply["warnings"]
            .to_string()
            .contains("SchemaRegistry/karapace-observer is readOnly"),
        "{reply:#}"
    );

    // Rotation under load: every request is held back, new Schemas start reconciles against it...
    karapace.faults.delay_ms.store(1_500, Ordering::SeqCst);
    let more = ["invoices", "refunds", "returns", "shipments"];
    for name in more {
        cluster.apply(&schema("team-k", name, &format!("{name}-value"), ORDER_V1, Some(bound)));
    }
    let deadline = Instant::now() + CONVERGE;
    while karapace.held() == 0 {
        assert!(Instant::now() < deadline, "no reconcile reached the registry");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...and the password changes at the registry and in the Secret while they wait.
    karapace.require_password("karapace-pw-2");
    cluster.apply(&secret("team-k", "karapace-credentials", "karapace-pw-2"));
    karapace.faults.delay_ms.store(0, Ordering::SeqCst);
    for name in more {
        cluster.wait_condition(Some("team-k"), "schema", name, "Ready", "True", "Registered");
        assert_eq!(versions(&karapace.backend_url, &format!("{name}-value")).await, [1]);
    }
    assert!(
        karapace.unauthorized() > 0,
        "a request in flight met the new password (else this test rotated between reconciles)"
    );
    // Nothing is left failed: the earlier objects and the connection are as they were.
    for name in ["orders", "payments"] {
        cluster.wait_condition(Some("team-k"), "schema", name, "Ready", "True", "Registered");
    }
    cluster.wait_condition(Some("team-k"), "subjectconfig", "orders", "Ready", "True", "Configured");
    cluster.wait_condition(Some("team-k"), "schemaregistry", "karapace", "Ready", "True", "Ready");
}

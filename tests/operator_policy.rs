//! Platform policy end to end (issue 17): the test API server, `schemaops
//! operator` as a process watching every namespace, and the real `kubectl`.
//! Two teams in namespaces labelled `env: prod`; a SchemaPolicy added after
//! their objects exist, first as Warn, then as Deny, then removed.

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

struct Cluster {
    // Fields drop in order: the operator stops before the API server does.
    operator: OperatorProcess,
    _server: TestApiServer,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Cluster {
    async fn start(test: &str) -> Option<Cluster> {
        Self::start_with(test, &[]).await
    }

    /// Starts the cluster with `before` (manifests) applied before the operator starts.
    async fn start_with(test: &str, before: &[&str]) -> Option<Cluster> {
        let kubectl_runs = std::process::Command::new("kubectl")
            .args(["version", "--client"])
            .output()
            .is_ok_and(|output| output.status.success());
        if !kubectl_runs {
            assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
            eprintln!("skipping {test}: kubectl is not installed");
            return None;
        }
        let server = TestApiServer::start();
        let kubeconfig = server.kubeconfig().to_owned();
        let cache = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
        let run = |args: &[&str]| kubectl(&kubeconfig, cache.path(), args);
        ok(&run(&["apply", "-f", crds.to_str().unwrap()]), "apply the CRDs");
        for team in ["team-a", "team-b"] {
            let namespace =
                format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {team}\n  labels:\n    env: prod\n");
            apply_with(&kubeconfig, cache.path(), &namespace);
        }
        for manifest in before {
            apply_with(&kubeconfig, cache.path(), manifest);
        }
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

    fn apply(&self, manifest: &str) {
        apply_with(&self.kubeconfig, self.cache.path(), manifest);
    }

    fn get(&self, namespace: &str, kind: &str, name: &str) -> Value {
        let mut args = vec!["get", kind, name, "-o", "json"];
        if !namespace.is_empty() {
            args.extend(["--namespace", namespace]);
        }
        serde_json::from_str(&self.kubectl(&args)).unwrap()
    }

    /// Waits until `check` holds for the object, showing it when it never does.
    fn wait_until(&self, namespace: &str, kind: &str, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + CONVERGE;
        loop {
            let object = self.get(namespace, kind, name);
            if check(&object) {
                return object;
            }
            assert!(
                Instant::now() < deadline,
                "{kind} {namespace}/{name} never {what}: {object:#}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_condition(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
    ) -> Value {
        self.wait_until(
            namespace,
            kind,
            name,
            &format!("had {type_}={status} ({reason})"),
            |object| {
                let generation = object["metadata"]["generation"].as_i64();
                let found = condition(object, type_);
                generation.is_some()
                    && object["status"]["observedGeneration"].as_i64() == generation
                    && found.is_some_and(|c| c["status"] == status && (reason.is_empty() || c["reason"] == reason))
            },
        )
    }

    async fn registry_json(&self, path: &str) -> (u16, Value) {
        let response = support::http_client()
            .get(format!("{}{path}", self.operator.registry_url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
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

fn apply_with(kubeconfig: &Path, cache: &Path, manifest: &str) {
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), manifest).unwrap();
    ok(
        &kubectl(kubeconfig, cache, &["apply", "-f", file.path().to_str().unwrap()]),
        "kubectl apply",
    );
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_)
}

fn message(object: &Value, type_: &str) -> String {
    condition(object, type_).map_or(String::new(), |c| c["message"].as_str().unwrap_or_default().to_owned())
}

fn schema(namespace: &str, name: &str, subject: &str, deletion: &str) -> String {
    format!(
        r#"apiVersion: schemaops.dev/v1alpha1
kind: Schema
metadata:
  name: {name}
  namespace: {namespace}
spec:
  subject: {subject}
  deletionPolicy: {deletion}
  schema: '{{"type":"record","name":"Order","namespace":"com.example","fields":[{{"name":"id","type":"string"}}]}}'
"#
    )
}

fn subject_config(namespace: &str, name: &str, subject: &str, level: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  subject: {subject}\n  compatibility: {level}\n"
    )
}

fn prod_policy(action: &str) -> String {
    format!(
        r#"apiVersion: schemaops.dev/v1alpha1
kind: SchemaPolicy
metadata:
  name: prod
spec:
  match:
    namespaceSelector:
      matchLabels:
        env: prod
  rules:
    subjects:
      allowed: ["{{namespace}}.*"]
    compatibility:
      minimum: BACKWARD_TRANSITIVE
    deletionPolicies: [Retain, SoftDelete]
    modes: [READWRITE, READONLY]
  validationActions: [{action}]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_added_later_warns_then_denies_without_touching_what_is_registered_and_its_removal_lets_objects_through()
 {
    let Some(cluster) = Cluster::start("policy").await else {
        return;
    };
    // Before any policy: team-a's subject, and team-b's HardDelete Schema, register.
    cluster.apply(&subject_config(
        "team-a",
        "orders",
        "team-a.orders-value",
        "BACKWARD_TRANSITIVE",
    ));
    cluster.apply(&schema("team-a", "orders", "team-a.orders-value", "Retain"));
    cluster.apply(&schema("team-b", "payments", "team-b.payments-value", "HardDelete"));
    cluster.wait_condition("team-a", "schema", "orders", "Ready", "True", "Registered");
    cluster.wait_condition("team-b", "schema", "payments", "Ready", "True", "Registered");

    // Warn: the change of policy reaches the objects without any edit of theirs.
    cluster.apply(&prod_policy("Warn"));
    let payments = cluster.wait_condition(
        "team-b",
        "schema",
        "payments",
        "PolicyWarning",
        "True",
        "PolicyViolation",
    );
    assert_eq!(condition(&payments, "Ready").unwrap()["status"], "True", "{payments:#}");
    assert!(
        message(&payments, "PolicyWarning").contains("SchemaPolicy prod rule deletionPolicies at spec.deletionPolicy"),
        "{payments:#}"
    );
    let policy = cluster.wait_until("", "schemapolicy", "prod", "counted", |policy| {
        policy["status"]["matched"] == 3 && policy["status"]["violations"] == 1
    });
    assert_eq!(condition(&policy, "Ready").unwrap()["status"], "True", "{policy:#}");

    // Deny: the violating Schema stalls; what it registered stays registered.
    cluster.apply(&prod_policy("Deny"));
    let payments = cluster.wait_condition("team-b", "schema", "payments", "Ready", "False", "PolicyViolation");
    assert_eq!(condition(&payments, "Stalled").unwrap()["status"], "True");
    assert!(
        message(&payments, "Ready").contains("SchemaPolicy prod rule deletionPolicies"),
        "{payments:#}"
    );
    assert_eq!(payments["status"]["version"], 1, "{payments:#}");
    let (status, versions) = cluster.registry_json("/subjects/team-b.payments-value/versions").await;
    assert_eq!((status, versions), (200, serde_json::json!([1])));
    let orders = cluster.wait_condition("team-a", "schema", "orders", "Ready", "True", "Registered");
    assert!(condition(&orders, "PolicyWarning").is_none(), "{orders:#}");

    // team-b claims team-a's subject and sets its own to NONE: refused, nothing written.
    cluster.apply(&schema("team-b", "steal", "team-a.orders-value", "Retain"));
    let steal = cluster.wait_condition("team-b", "schema", "steal", "Ready", "False", "SubjectNotAllowed");
    assert!(
        message(&steal, "Ready").contains("namespace team-b may not manage subject `team-a.orders-value`"),
        "{steal:#}"
    );
    cluster.apply(&subject_config("team-b", "payments", "team-b.payments-value", "NONE"));
    let none = cluster.wait_condition(
        "team-b",
        "subjectconfig",
        "payments",
        "Ready",
        "False",
        "PolicyViolation",
    );
    assert!(message(&none, "Ready").contains("the level set is NONE"), "{none:#}");
    let (status, _) = cluster.registry_json("/config/team-b.payments-value").await;
    assert_eq!(status, 404, "no level was written for team-b's subject");
    let (_, versions) = cluster.registry_json("/subjects/team-a.orders-value/versions").await;
    assert_eq!(versions, serde_json::json!([1]));

    let policy = cluster.wait_until("", "schemapolicy", "prod", "counted", |policy| {
        policy["status"]["matched"] == 5 && policy["status"]["violations"] == 3
    });
    assert_eq!(policy["status"]["observedGeneration"], policy["metadata"]["generation"]);

    // Loosened: without the policy, the objects go through on the next reconcile.
    cluster.kubectl(&["delete", "schemapolicy", "prod"]);
    cluster.wait_condition("team-b", "schema", "payments", "Ready", "True", "Registered");
    cluster.wait_condition("team-b", "subjectconfig", "payments", "Ready", "True", "Configured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_policy_is_not_ready_and_says_why() {
    let Some(cluster) = Cluster::start("invalid").await else {
        return;
    };
    cluster.apply(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: broken\nspec:\n  rules:\n    subjects:\n      allowed: [\"{team}.*\"]\n",
    );
    let policy = cluster.wait_until("", "schemapolicy", "broken", "judged", |policy| {
        condition(policy, "Ready").is_some_and(|ready| ready["status"] == "False")
    });
    let ready = condition(&policy, "Ready").unwrap();
    assert_eq!(ready["reason"], "InvalidPolicy", "{policy:#}");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("spec.rules.subjects.allowed[0]"),
        "{policy:#}"
    );
}

/// Issue 39 item 12: deleting the SubjectConfig that holds a subject at the floor removed the
/// subject's level, dropping it to the registry's global BACKWARD, which the policy forbids
/// (REST `DELETE /config/{subject}` was refused for the same reason). The operator keeps the
/// level now, says why in the status, and lets the object go once the policy allows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_subject_config_keeps_the_level_while_a_policy_forbids_the_fallback() {
    let Some(cluster) = Cluster::start("deletion").await else {
        return;
    };
    cluster.apply(&prod_policy("Deny"));
    cluster.apply(&subject_config(
        "team-a",
        "orders",
        "team-a.orders-value",
        "BACKWARD_TRANSITIVE",
    ));
    cluster.wait_condition("team-a", "subjectconfig", "orders", "Ready", "True", "Configured");
    let (_, level) = cluster.registry_json("/config/team-a.orders-value").await;
    assert_eq!(level["compatibilityLevel"], "BACKWARD_TRANSITIVE");

    cluster.kubectl(&[
        "delete",
        "subjectconfig",
        "orders",
        "--namespace",
        "team-a",
        "--wait=false",
    ]);
    let blocked = cluster.wait_until("team-a", "subjectconfig", "orders", "was kept", |object| {
        condition(object, "DeletionBlocked").is_some_and(|c| c["status"] == "True" && c["reason"] == "PolicyViolation")
    });
    assert!(
        message(&blocked, "DeletionBlocked").contains(
            "the subject's level stays: SchemaPolicy prod rule compatibility at spec.compatibility: once this \
             SubjectConfig is deleted, the subject falls back to the registry's global level, and it is BACKWARD"
        ),
        "{blocked:#}"
    );
    let (_, level) = cluster.registry_json("/config/team-a.orders-value").await;
    assert_eq!(level["compatibilityLevel"], "BACKWARD_TRANSITIVE", "the level stays");

    // Without the policy, the deletion completes and the level goes.
    cluster.kubectl(&["delete", "schemapolicy", "prod"]);
    let deadline = Instant::now() + CONVERGE;
    loop {
        let listed = cluster.kubectl(&["get", "subjectconfigs", "--namespace", "team-a", "-o", "name"]);
        if listed.trim().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "the SubjectConfig never went: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _) = cluster.registry_json("/config/team-a.orders-value").await;
    assert_eq!(status, 404, "the subject's level is removed with its SubjectConfig");
}

/// Issue 39 item 13: a policy's counts were taken when the policy changed and then every 30 s,
/// so after a start (before the caches held the objects, and before their reconciles wrote
/// violations into their status) and after any change of an object they stayed wrong for up
/// to 30 s. They follow the caches now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_counts_a_new_violation_within_seconds() {
    let naming = "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: naming\nspec:\n  \
                  rules:\n    naming:\n      avroNamespace: \"com.acme.*\"\n";
    let acme = |name: &str| {
        schema("team-a", name, &format!("team-a.{name}-value"), "Retain").replace("com.example", "com.acme.sales")
    };
    let Some(cluster) = Cluster::start_with("counts", &[naming, &acme("orders"), &acme("payments")]).await else {
        return;
    };
    let counted = |matched: i64, violations: i64, within: Duration| {
        let deadline = Instant::now() + within;
        loop {
            let policy = cluster.get("", "schemapolicy", "naming");
            if policy["status"]["matched"] == matched && policy["status"]["violations"] == violations {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the counts were not {matched} and {violations} within {within:?}: {:#}",
                policy["status"]
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    counted(2, 0, CONVERGE);
    // The violation is in the parsed schema: only the Schema's reconcile finds it, in its status.
    cluster.apply(&schema("team-a", "payments", "team-a.payments-value", "Retain"));
    cluster.wait_condition("team-a", "schema", "payments", "Ready", "False", "PolicyViolation");
    counted(2, 1, Duration::from_secs(10));
}

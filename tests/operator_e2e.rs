//! End to end (issues 6 and 7): the test API server (or the real cluster
//! named by `SCHEMAOPS_TEST_KUBECONFIG`), `schemaops operator` as a process,
//! and the real `kubectl` applying manifests and waiting on conditions. The
//! registry is checked over its own REST API. Every scenario runs twice: with
//! the operator's embedded registry, and with `--registry-url` pointing at a
//! separate `schemaops registry` process. Scenarios of issue 15 run against
//! the registry double (`support/registry_double.rs`): a registry electing
//! its leader, one without per-subject modes, one edited by hand.
//!
//! `SCHEMAOPS_TEST_REGISTRY_URL=URL` runs the external-registry scenarios
//! against a registry of your own (Confluent, Karapace, …) instead of a
//! `schemaops registry` process: every subject gets a suffix unique to the
//! run, so nothing already there is touched.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use apiserver::TestApiServer;
use serde_json::Value;
use support::operator::OperatorProcess;
use support::registry::RegistryProcess;
use support::registry_double::RegistryDouble;

/// How long any one convergence may take.
const CONVERGE: Duration = Duration::from_secs(60);

/// Which registry the operator manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// Its own, embedded one.
    Embedded,
    /// A separate `schemaops registry` process, through `--registry-url`.
    External,
    /// The same behind the fault-injecting registry double.
    Double,
}

/// The registry the operator is pointed at with `--registry-url`.
enum Remote {
    /// A `schemaops registry` process.
    Process(RegistryProcess),
    /// The registry double in front of one.
    Double(RegistryDouble),
    /// A registry of the user's, named by `SCHEMAOPS_TEST_REGISTRY_URL`.
    Url(String),
}

impl Remote {
    fn url(&self) -> String {
        match self {
            Remote::Process(process) => process.url.clone(),
            Remote::Double(double) => double.url.clone(),
            Remote::Url(url) => url.clone(),
        }
    }
}

/// A cluster to test against, with one namespace of its own, and an operator watching it.
struct Cluster {
    // Fields drop in order: the operator stops before the API server does.
    operator: Option<OperatorProcess>,
    external: Option<Remote>,
    _external_data: tempfile::TempDir,
    _server: Option<TestApiServer>,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    namespace: String,
    data: tempfile::TempDir,
    /// Appended to every subject: empty, or unique to the run when the
    /// registry is shared (`SCHEMAOPS_TEST_REGISTRY_URL`).
    subject_suffix: String,
}

impl Cluster {
    /// Starts the test API server (unless `SCHEMAOPS_TEST_KUBECONFIG` names a
    /// cluster), applies the CRDs, creates a namespace, and starts the operator.
    /// `None` (with the reason printed) when kubectl is missing and not every test is required.
    async fn start(test: &str, backend: Backend, operator_args: &[&str]) -> Option<Cluster> {
        if !Path::new("/usr/bin/kubectl").exists() && which("kubectl").is_none() {
            assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
            eprintln!("skipping {test}: kubectl is not installed");
            return None;
        }
        let (server, kubeconfig) = match std::env::var_os("SCHEMAOPS_TEST_KUBECONFIG") {
            Some(path) => (None, PathBuf::from(path)),
            None => {
                let server = TestApiServer::start();
                let kubeconfig = server.kubeconfig().to_owned();
                (Some(server), kubeconfig)
            }
        };
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos())
            ^ std::process::id();
        let external_data = tempfile::tempdir().unwrap();
        let user_registry = std::env::var("SCHEMAOPS_TEST_REGISTRY_URL")
            .ok()
            .filter(|url| !url.is_empty());
        let external = match backend {
            Backend::Embedded => None,
            Backend::External => Some(match &user_registry {
                Some(url) => Remote::Url(url.trim_end_matches('/').to_owned()),
                None => Remote::Process(RegistryProcess::start(external_data.path()).await),
            }),
            Backend::Double => Some(Remote::Double(RegistryDouble::start(external_data.path()).await)),
        };
        let test = format!("{test}-{}", if external.is_some() { "ext" } else { "emb" });
        let mut cluster = Cluster {
            external,
            _external_data: external_data,
            _server: server,
            kubeconfig,
            cache: tempfile::tempdir().unwrap(),
            namespace: format!("e2e-{}-{:x}", test.replace('_', "-"), suffix % 0xffff),
            data: tempfile::tempdir().unwrap(),
            operator: None,
            subject_suffix: match (&user_registry, backend) {
                (Some(_), Backend::External) => format!("-e2e{:x}", suffix),
                _ => String::new(),
            },
        };
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
        cluster.kubectl_ok(&["apply", "-f", crds.to_str().unwrap()]);
        cluster.kubectl_ok(&["create", "namespace", &cluster.namespace.clone()]);
        cluster.start_operator(operator_args).await;
        Some(cluster)
    }

    async fn start_operator(&mut self, extra: &[&str]) {
        // These tests play other clients writing to the registry by hand (drift), so REST
        // writes are open here; tests/operator_lockdown.rs covers the GitOps-only default.
        let mut args = vec![
            "--namespace".to_owned(),
            self.namespace.clone(),
            "--rest-writes=open".to_owned(),
        ];
        if let Some(external) = &self.external {
            args.extend(["--registry-url".to_owned(), external.url()]);
        }
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let operator = OperatorProcess::start(&self.kubeconfig, self.data.path(), &args);
        operator.wait_ready(CONVERGE).await;
        self.operator = Some(operator);
    }

    /// The registry double, for a test started with [`Backend::Double`].
    fn double(&self) -> &RegistryDouble {
        match &self.external {
            Some(Remote::Double(double)) => double,
            _ => panic!("the test runs against the registry double"),
        }
    }

    fn operator(&mut self) -> &mut OperatorProcess {
        self.operator.as_mut().expect("the operator runs")
    }

    /// The registry the operator manages: its own, or the external one.
    fn registry_url(&self) -> String {
        match &self.external {
            Some(external) => external.url(),
            None => self.operator.as_ref().expect("the operator runs").registry_url.clone(),
        }
    }

    /// Runs kubectl in the test's namespace.
    fn kubectl(&self, args: &[&str]) -> Output {
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(["--namespace", &self.namespace])
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs")
    }

    /// Runs kubectl, asserts it succeeded, and returns its stdout.
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

    /// The subject this run uses for `base` (see `subject_suffix`).
    fn subject(&self, base: &str) -> String {
        format!("{base}{}", self.subject_suffix)
    }

    /// A registry path with its subject segment made this run's.
    fn registry_path(&self, path: &str) -> String {
        if self.subject_suffix.is_empty() {
            return path.to_owned();
        }
        let segment = regex::Regex::new(r"^/(subjects|config|mode)/([^/?]+)").unwrap();
        segment
            .replace(path, |found: &regex::Captures<'_>| {
                format!("/{}/{}", &found[1], self.subject(&found[2]))
            })
            .into_owned()
    }

    /// Applies a manifest given as text (its subjects made this run's).
    fn apply_text(&self, manifest: &str) {
        let manifest = if self.subject_suffix.is_empty() {
            manifest.to_owned()
        } else {
            let line = regex::Regex::new(r"(?m)^(\s*(?:- )?subject:\s*)(\S+)\s*$").unwrap();
            line.replace_all(manifest, |found: &regex::Captures<'_>| {
                format!("{}{}", &found[1], self.subject(&found[2]))
            })
            .into_owned()
        };
        let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
        std::fs::write(file.path(), manifest).unwrap();
        self.kubectl_ok(&["apply", "-f", file.path().to_str().unwrap()]);
    }

    /// Applies one example file.
    fn apply_example(&self, name: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/evolution")
            .join(name);
        self.apply_text(&std::fs::read_to_string(path).unwrap());
    }

    fn get(&self, kind: &str, name: &str) -> Value {
        serde_json::from_str(&self.kubectl_ok(&["get", kind, name, "-o", "json"])).unwrap()
    }

    /// `kubectl wait --for=condition=TYPE` (which honours observedGeneration).
    fn wait_for(&self, kind: &str, name: &str, condition: &str) {
        let target = format!("{kind}/{name}");
        let output = self.kubectl(&[
            "wait",
            &format!("--for=condition={condition}"),
            &target,
            &format!("--timeout={}s", CONVERGE.as_secs()),
        ]);
        assert!(
            output.status.success(),
            "{target} never became {condition}: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.kubectl_ok(&["get", kind, name, "-o", "yaml"])
        );
    }

    /// Waits until the status describes the current generation and no retry is pending.
    fn wait_converged(&self, kind: &str, name: &str) -> Value {
        let deadline = Instant::now() + CONVERGE;
        loop {
            let object = self.get(kind, name);
            let generation = object["metadata"]["generation"].as_i64();
            let observed = object["status"]["observedGeneration"].as_i64();
            if generation.is_some() && generation == observed && condition(&object, "Reconciling") != Some("True") {
                return object;
            }
            assert!(Instant::now() < deadline, "{kind}/{name} did not converge: {object:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The registry's live versions of `subject` (empty when it has none).
    async fn versions(&self, subject: &str) -> Vec<i64> {
        let response = support::http_client()
            .get(format!(
                "{}/subjects/{}/versions",
                self.registry_url(),
                self.subject(subject)
            ))
            .send()
            .await
            .unwrap();
        if response.status() == 404 {
            return Vec::new();
        }
        let versions: Vec<i64> = response.json().await.unwrap();
        versions
    }

    async fn registry_json(&self, path: &str) -> (u16, Value) {
        let response = support::http_client()
            .get(format!("{}{}", self.registry_url(), self.registry_path(path)))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::env::var_os("SCHEMAOPS_TEST_KUBECONFIG").is_some() {
            let _ = self.kubectl(&["delete", "namespace", &self.namespace.clone(), "--wait=false"]);
        }
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|folder| Path::new(folder).join(program))
        .find(|candidate| candidate.exists())
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_)?["status"]
        .as_str()
}

fn condition_field<'a>(object: &'a Value, type_: &str, field: &str) -> &'a str {
    object["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|condition| condition["type"] == type_))
        .and_then(|condition| condition[field].as_str())
        .unwrap_or_default()
}

fn avro_schema(name: &str, subject: &str, policy: &str, fields: &str) -> String {
    format!(
        r#"apiVersion: schemaops.dev/v1alpha1
kind: Schema
metadata:
  name: {name}
spec:
  subject: {subject}
  deletionPolicy: {policy}
  schema: '{{"type":"record","name":"R","fields":[{fields}]}}'
"#
    )
}

async fn an_incompatible_edit_is_refused_with_its_explanation_and_a_fix_registers_the_next_version(backend: Backend) {
    let Some(cluster) = Cluster::start("evolution", backend, &[]).await else {
        return;
    };
    cluster.apply_example("00-platonic-solid-v1.yaml");
    cluster.wait_for("schema", "platonic-solid", "Ready");
    cluster.apply_example("01-platonic-solid-v2.yaml");
    cluster.wait_for("schema", "platonic-solid", "Ready");
    let object = cluster.get("schema", "platonic-solid");
    assert_eq!(object["status"]["version"], 2, "{object:#}");

    cluster.apply_example("02-platonic-solid-v3.yaml");
    cluster.wait_for("schema", "platonic-solid", "Stalled");
    let object = cluster.wait_converged("schema", "platonic-solid");
    assert_eq!(condition(&object, "Ready"), Some("False"));
    assert_eq!(condition_field(&object, "Ready", "reason"), "IncompatibleSchema");
    let yaml = cluster.kubectl_ok(&["get", "schema", "platonic-solid", "-o", "yaml"]);
    assert!(yaml.contains("READER_FIELD_MISSING_DEFAULT_VALUE"), "{yaml}");
    assert!(yaml.contains("edges"), "{yaml}");
    let table = cluster.kubectl_ok(&["get", "schemas"]);
    let header = table.lines().next().unwrap();
    for column in ["NAME", "SUBJECT", "TYPE", "VERSION", "ID", "READY", "REASON", "AGE"] {
        assert!(header.contains(column), "{table}");
    }
    let row = table.lines().find(|line| line.starts_with("platonic-solid")).unwrap();
    assert!(
        row.contains("False") && row.contains("IncompatibleSchema") && row.contains(" 2 "),
        "{table}"
    );
    assert_eq!(
        cluster.versions("platonic-solid-value").await,
        vec![1, 2],
        "nothing incompatible reached the registry"
    );
    if matches!(backend, Backend::Embedded) {
        // The operator's pages (issue 21) name the Schema object that holds
        // version 2 and say why it is stalled.
        let page = support::http_client()
            .get(format!(
                "{}/ui/subjects/{}",
                cluster.registry_url(),
                cluster.subject("platonic-solid-value")
            ))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(page.contains("<table id=\"owners\">"), "{page}");
        assert!(page.contains("/platonic-solid</td><td>2</td>"), "{page}");
        assert!(page.contains("Stalled</span> IncompatibleSchema"), "{page}");
        assert!(
            page.contains("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3"),
            "{page}"
        );
    }

    // The fix: the new field gets a default.
    cluster.apply_text(
        r#"apiVersion: schemaops.dev/v1alpha1
kind: Schema
metadata:
  name: platonic-solid
spec:
  subject: platonic-solid-value
  schema: |
    {"type": "record", "name": "PlatonicSolid", "namespace": "dev.schemaops.examples", "fields": [
      {"name": "name", "type": "string"}, {"name": "faces", "type": "int"},
      {"name": "vertices", "type": ["null", "int"], "default": null},
      {"name": "edges", "type": "int", "default": 0}]}
"#,
    );
    cluster.wait_for("schema", "platonic-solid", "Ready");
    let object = cluster.get("schema", "platonic-solid");
    assert_eq!(object["status"]["version"], 3, "{object:#}");
    assert_eq!(
        object["status"]["compatibility"]["total"], 0,
        "the old report is gone: {object:#}"
    );
    assert_eq!(cluster.versions("platonic-solid-value").await, vec![1, 2, 3]);
    let events = cluster.kubectl_ok(&["get", "events"]);
    assert!(events.contains("Registered") && events.contains("Rejected"), "{events}");

    // The operator's metrics, on its health port.
    let health_url = cluster.operator.as_ref().expect("the operator runs").health_url.clone();
    let scrape = support::scrape(&health_url).await;
    let value = |series: &str| support::metric(&scrape, series).unwrap_or(0.0);
    assert!(
        value(r#"schemaops_reconciles_total{kind="Schema",registry="default",result="ok"}"#) > 0.0,
        "{scrape}"
    );
    assert!(
        value(r#"schemaops_rejections_total{reason="IncompatibleSchema",registry="default"}"#) >= 1.0,
        "{scrape}"
    );
    assert!(
        value(r#"schemaops_reconcile_duration_seconds_count{kind="Schema"}"#) > 0.0,
        "{scrape}"
    );
    match backend {
        // The embedded registry's size; an external one's is not ours to report.
        Backend::Embedded => assert_eq!(value("schemaops_registry_versions"), 3.0, "{scrape}"),
        Backend::External | Backend::Double => {
            assert!(!scrape.contains("schemaops_registry_versions"), "{scrape}")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_external_registry_the_operator_registers_there_and_refuses_the_same_edit() {
    // `schemaops registry` stands in for the external registry, writes behind basic auth.
    let registry_data = tempfile::tempdir().unwrap();
    let registry = support::registry::RegistryProcess::start_with(
        registry_data.path(),
        &["--write-credentials", "operator:e2e-password"],
    )
    .await;
    let password = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(password.path(), "e2e-password\n").unwrap();
    let args = [
        "--registry-url",
        registry.url.as_str(),
        "--registry-username",
        "operator",
        "--registry-password-file",
        password.path().to_str().unwrap(),
    ];
    let Some(cluster) = Cluster::start("external", Backend::Embedded, &args).await else {
        return;
    };
    assert_eq!(cluster.registry_url(), registry.url, "no REST API of its own");
    cluster.apply_example("00-platonic-solid-v1.yaml");
    cluster.wait_for("schema", "platonic-solid", "Ready");
    cluster.apply_example("01-platonic-solid-v2.yaml");
    cluster.wait_for("schema", "platonic-solid", "Ready");
    assert_eq!(cluster.get("schema", "platonic-solid")["status"]["version"], 2);
    cluster.apply_example("02-platonic-solid-v3.yaml");
    cluster.wait_for("schema", "platonic-solid", "Stalled");
    let object = cluster.wait_converged("schema", "platonic-solid");
    assert_eq!(condition_field(&object, "Ready", "reason"), "IncompatibleSchema");
    assert_eq!(cluster.versions("platonic-solid-value").await, vec![1, 2]);
    assert!(
        !object.to_string().contains("e2e-password"),
        "the status never shows the password"
    );
}

async fn the_examples_end_as_schemaops_apply_leaves_them(backend: Backend) {
    let Some(cluster) = Cluster::start("examples", backend, &[]).await else {
        return;
    };
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/evolution");
    let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    // One commit at a time, as a GitOps tool would sync them.
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        cluster.apply_text(&text);
        for document in text.split("\n---") {
            let kind = if document.contains("kind: Schema\n") {
                "schema"
            } else if document.contains("kind: SubjectConfig") {
                "subjectconfig"
            } else {
                continue;
            };
            let name = document
                .lines()
                .find_map(|line| line.trim().strip_prefix("name: "))
                .unwrap()
                .to_owned();
            cluster.wait_converged(kind, &name);
        }
    }
    // The same files through `schemaops apply`.
    let data = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["apply", "-o", "json", "--data"])
        .arg(data.path())
        .arg(&folder)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let applied: Value = serde_json::from_slice(&output.stdout).unwrap();
    for item in applied["items"].as_array().unwrap() {
        let kind = item["kind"].as_str().unwrap().to_lowercase();
        let name = item["metadata"]["name"].as_str().unwrap();
        let live = cluster.get(&kind, name);
        for field in ["version", "id", "fingerprint", "compatibility"] {
            // IDs are global: a shared registry gives other ones than a fresh one.
            if field == "id" && !cluster.subject_suffix.is_empty() {
                continue;
            }
            assert_eq!(
                live["status"][field], item["status"][field],
                "{kind}/{name} {field}: {live:#}"
            );
        }
        assert_eq!(condition(&live, "Ready"), condition(item, "Ready"), "{kind}/{name}");
        assert_eq!(
            condition_field(&live, "Ready", "reason"),
            condition_field(item, "Ready", "reason"),
            "{kind}/{name}"
        );
    }
}

async fn a_level_change_and_a_schema_change_in_one_apply_are_judged_together(backend: Backend) {
    let Some(cluster) = Cluster::start("level", backend, &[]).await else {
        return;
    };
    let v1 = avro_schema(
        "rsvp",
        "rsvp-value",
        "Retain",
        r#"{"name":"event_id","type":"string"},{"name":"member_id","type":"long"}"#,
    );
    let v2 = avro_schema("rsvp", "rsvp-value", "Retain", r#"{"name":"member_id","type":"long"}"#);
    let config = |level: &str| {
        format!(
            "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: rsvp\nspec:\n  subject: rsvp-value\n  compatibility: {level}\n"
        )
    };
    cluster.apply_text(&format!("{}---\n{v1}", config("BACKWARD")));
    cluster.wait_for("schema", "rsvp", "Ready");
    // Tightened to FORWARD in the same apply that drops `event_id` (fine under BACKWARD, not under FORWARD).
    cluster.apply_text(&format!("{}---\n{v2}", config("FORWARD")));
    cluster.wait_for("schema", "rsvp", "Stalled");
    let object = cluster.wait_converged("schema", "rsvp");
    assert_eq!(object["status"]["compatibility"]["mode"], "FORWARD", "{object:#}");
    assert_eq!(cluster.versions("rsvp-value").await, vec![1]);
    let (_, level) = cluster.registry_json("/config/rsvp-value").await;
    assert_eq!(level["compatibilityLevel"], "FORWARD");

    // Loosened to NONE in the same apply: the change goes through.
    cluster.apply_text(&format!("{}---\n{v2}", config("NONE")));
    cluster.wait_for("schema", "rsvp", "Ready");
    assert_eq!(cluster.versions("rsvp-value").await, vec![1, 2]);
    let config = cluster.wait_converged("subjectconfig", "rsvp");
    assert_eq!(config["status"]["compatibility"], "NONE", "{config:#}");
    assert_eq!(config["status"]["compatibilitySource"], "subject");

    // Deleting the SubjectConfig reverts the subject to the global level.
    cluster.kubectl_ok(&["delete", "subjectconfig", "rsvp"]);
    let deadline = Instant::now() + CONVERGE;
    while cluster.registry_json("/config/rsvp-value").await.0 != 404 {
        assert!(Instant::now() < deadline, "the subject level was not removed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_second_schema_for_a_subject_is_a_conflict_until_the_first_goes(backend: Backend) {
    let Some(cluster) = Cluster::start("conflict", backend, &[]).await else {
        return;
    };
    cluster.apply_text(&avro_schema(
        "first",
        "shared-value",
        "Retain",
        r#"{"name":"a","type":"int"}"#,
    ));
    cluster.wait_for("schema", "first", "Ready");
    cluster.apply_text(&avro_schema(
        "second",
        "shared-value",
        "Retain",
        r#"{"name":"a","type":"long"}"#,
    ));
    cluster.wait_for("schema", "second", "Stalled");
    let second = cluster.get("schema", "second");
    assert_eq!(condition_field(&second, "Ready", "reason"), "SubjectConflict");
    assert!(
        condition_field(&second, "Ready", "message").contains("/first"),
        "{second:#}"
    );
    assert_eq!(cluster.versions("shared-value").await, vec![1]);

    cluster.kubectl_ok(&["delete", "schema", "first"]);
    cluster.wait_for("schema", "second", "Ready");
    assert_eq!(
        cluster.versions("shared-value").await,
        vec![1, 2],
        "int to long is BACKWARD compatible"
    );
}

async fn deletion_honours_each_policy_and_waits_for_referrers(backend: Backend) {
    let Some(cluster) = Cluster::start("deletion", backend, &[]).await else {
        return;
    };
    for (name, policy) in [("kept", "Retain"), ("soft", "SoftDelete"), ("hard", "HardDelete")] {
        cluster.apply_text(&avro_schema(
            name,
            &format!("{name}-value"),
            policy,
            r#"{"name":"a","type":"int"}"#,
        ));
    }
    for name in ["kept", "soft", "hard"] {
        cluster.wait_for("schema", name, "Ready");
    }
    cluster.kubectl_ok(&["delete", "schema", "kept", "soft", "hard"]);
    assert_eq!(cluster.versions("kept-value").await, vec![1]);
    assert_eq!(cluster.versions("soft-value").await, Vec::<i64>::new());
    let (status, deleted) = cluster
        .registry_json("/subjects/soft-value/versions?deleted=true")
        .await;
    assert_eq!((status, deleted), (200, serde_json::json!([1])));
    let (status, _) = cluster
        .registry_json("/subjects/hard-value/versions?deleted=true")
        .await;
    assert_eq!(status, 404, "a hard delete leaves nothing");

    // A subject another schema refers to is not deleted while it does.
    cluster.apply_example("30-money-proto.yaml");
    cluster.wait_for("schema", "shop-money", "Ready");
    cluster.kubectl_ok(&[
        "patch",
        "schema",
        "shop-money",
        "--type=merge",
        "-p",
        r#"{"spec":{"deletionPolicy":"HardDelete"}}"#,
    ]);
    cluster.wait_converged("schema", "shop-money");
    cluster.apply_example("31-order-proto-v1.yaml");
    cluster.wait_for("schema", "order-proto", "Ready");
    cluster.kubectl_ok(&["delete", "schema", "shop-money", "--wait=false"]);
    cluster.wait_for("schema", "shop-money", "DeletionBlocked");
    let blocked = cluster.get("schema", "shop-money");
    assert!(
        condition_field(&blocked, "DeletionBlocked", "message").contains("order-proto"),
        "{blocked:#}"
    );
    assert_eq!(cluster.versions("shop-money").await, vec![1]);
    // The referrer must leave the registry too, not only the cluster.
    cluster.kubectl_ok(&[
        "patch",
        "schema",
        "order-proto",
        "--type=merge",
        "-p",
        r#"{"spec":{"deletionPolicy":"HardDelete"}}"#,
    ]);
    cluster.wait_converged("schema", "order-proto");
    cluster.kubectl_ok(&["delete", "schema", "order-proto"]);
    let deadline = Instant::now() + CONVERGE;
    while !cluster
        .kubectl(&["get", "schema", "shop-money"])
        .stderr
        .windows(9)
        .any(|w| w == b"not found")
    {
        assert!(Instant::now() < deadline, "shop-money was never deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(cluster.versions("shop-money").await, Vec::<i64>::new());
}

async fn an_operator_restart_loses_nothing_and_registers_nothing_twice(backend: Backend) {
    let Some(mut cluster) = Cluster::start("restart", backend, &[]).await else {
        return;
    };
    let names: Vec<String> = (0..6).map(|index| format!("s{index}")).collect();
    let mut manifest = String::new();
    for name in &names {
        manifest.push_str(&avro_schema(
            name,
            &format!("{name}-value"),
            "Retain",
            r#"{"name":"a","type":"int"}"#,
        ));
        manifest.push_str("---\n");
    }
    cluster.apply_text(&manifest);
    // Killed while it works through them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.operator().kill();
    cluster.start_operator(&[]).await;
    let mut ids = Vec::new();
    for name in &names {
        cluster.wait_for("schema", name, "Ready");
        let object = cluster.get("schema", name);
        ids.push(object["status"]["id"].as_i64().unwrap());
        assert_eq!(
            cluster.versions(&format!("{name}-value")).await,
            vec![1],
            "{name} registered once"
        );
    }
    assert_eq!(
        ids.iter().collect::<std::collections::BTreeSet<_>>().len(),
        1,
        "one schema text, one ID: {ids:?}"
    );
}

async fn a_version_registered_by_hand_is_reported_as_drift_not_overwritten(backend: Backend) {
    let Some(cluster) = Cluster::start("drift", backend, &["--resync-seconds", "1"]).await else {
        return;
    };
    cluster.apply_text(&avro_schema(
        "orders",
        "orders-value",
        "Retain",
        r#"{"name":"a","type":"int"}"#,
    ));
    cluster.wait_for("schema", "orders", "Ready");
    let body = serde_json::json!({"schema": r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}"#});
    let response = support::http_client()
        .post(format!(
            "{}{}",
            cluster.registry_url(),
            cluster.registry_path("/subjects/orders-value/versions")
        ))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    cluster.wait_for("schema", "orders", "Drifted");
    let object = cluster.get("schema", "orders");
    assert_eq!(
        object["status"]["version"], 1,
        "the Schema still holds version 1: {object:#}"
    );
    assert_eq!(condition(&object, "Ready"), Some("True"));
    assert_eq!(
        cluster.versions("orders-value").await,
        vec![1, 2],
        "nothing was overwritten"
    );

    // The version holding the schema deleted by hand: reported, not recreated.
    let client = support::http_client();
    for path in [
        "/subjects/orders-value/versions/1",
        "/subjects/orders-value/versions/1?permanent=true",
    ] {
        let response = client
            .delete(format!("{}{}", cluster.registry_url(), cluster.registry_path(path)))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{path}");
    }
    let deadline = Instant::now() + CONVERGE;
    loop {
        let object = cluster.get("schema", "orders");
        if condition_field(&object, "Drifted", "reason") == "VersionDeletedOutsideSchemaops" {
            assert_eq!(condition(&object, "Ready"), Some("False"), "{object:#}");
            break;
        }
        assert!(Instant::now() < deadline, "the deletion was not reported: {object:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        cluster.versions("orders-value").await,
        vec![2],
        "schemaops recreated nothing"
    );
}

/// Issue 18 item 5: a subject with history brought under the operator.
/// Observed objects write nothing and say what Manage would do; switched to
/// Manage, a Schema equal to an existing version adopts it.
async fn observed_objects_write_nothing_and_a_managed_one_adopts_the_version_it_equals(backend: Backend) {
    let Some(cluster) = Cluster::start("observe", backend, &[]).await else {
        return;
    };
    let v1 = r#"{"name":"a","type":"int"}"#;
    let v2 = r#"{"name":"a","type":"int"},{"name":"b","type":"int","default":0}"#;
    let client = support::http_client();
    for fields in [v1, v2] {
        let body = serde_json::json!({"schema": format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#)});
        let response = client
            .post(format!(
                "{}{}",
                cluster.registry_url(),
                cluster.registry_path("/subjects/orders-value/versions")
            ))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }
    let observed =
        |fields: &str| avro_schema("orders", "orders-value", "Retain", fields) + "  managementPolicy: Observe\n";

    // Equal to version 1 (not the latest): observed, nothing written.
    cluster.apply_text(&observed(v1));
    let object = cluster.wait_converged("schema", "orders");
    assert_eq!(condition_field(&object, "Ready", "reason"), "Observed", "{object:#}");
    let observation = &object["status"]["observation"];
    assert_eq!(observation["registeredVersion"], 1, "{object:#}");
    assert_eq!(observation["latestVersion"], 2, "{object:#}");
    assert_eq!(observation["matchesLatest"], false, "{object:#}");

    // A breaking edit, observed: Manage would refuse it; the registry is untouched.
    cluster.apply_text(&observed(r#"{"name":"c","type":"string"}"#));
    let object = cluster.wait_converged("schema", "orders");
    let observation = &object["status"]["observation"];
    assert_eq!(observation["wouldBeCompatible"], false, "{object:#}");
    assert!(
        observation["manageWould"]
            .as_str()
            .unwrap()
            .starts_with("refuse it: incompatible"),
        "{object:#}"
    );
    assert_eq!(cluster.versions("orders-value").await, vec![1, 2]);

    // A SubjectConfig observed at NONE: the registry keeps its level.
    cluster.apply_text(&subject_config(
        "orders",
        "orders-value",
        "  compatibility: NONE\n  managementPolicy: Observe\n",
    ));
    let config = cluster.wait_converged("subjectconfig", "orders");
    assert_eq!(condition_field(&config, "Ready", "reason"), "Observed", "{config:#}");
    assert_eq!(config["status"]["observation"]["matches"], false, "{config:#}");
    let (status, _) = cluster.registry_json("/config/orders-value").await;
    assert_eq!(status, 404, "no level was written");

    // Deleting the observed SubjectConfig writes nothing either: a level set outside the operator
    // stays (its cleanup used to clear the subject's level even under Observe).
    let level = client
        .put(format!(
            "{}{}",
            cluster.registry_url(),
            cluster.registry_path("/config/orders-value")
        ))
        .json(&serde_json::json!({"compatibility": "FULL"}))
        .send()
        .await
        .unwrap();
    assert!(level.status().is_success());
    cluster.kubectl_ok(&["delete", "subjectconfig", "orders"]);
    let (status, level) = cluster.registry_json("/config/orders-value").await;
    assert_eq!(
        (status, &level["compatibilityLevel"]),
        (200, &serde_json::json!("FULL")),
        "{level}"
    );

    // Managed with the latest version's text: adopted, and nothing registered.
    cluster.apply_text(&avro_schema("orders", "orders-value", "Retain", v2));
    let object = cluster.wait_converged("schema", "orders");
    assert_eq!(condition_field(&object, "Ready", "reason"), "Adopted", "{object:#}");
    assert_eq!(object["status"]["version"], 2, "{object:#}");
    assert!(object["status"].get("observation").is_none(), "{object:#}");
    assert_eq!(cluster.versions("orders-value").await, vec![1, 2]);
}

/// Issue 8 item 2: two operators on one external registry with leader
/// election; only the Lease holder reconciles; when it is killed, the other
/// takes over within the lease time, and nothing is registered twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_leader_election_one_replica_reconciles_and_the_other_takes_over_when_it_dies() {
    const LEASE: &[&str] = &[
        "--leader-election",
        "--lease-duration-seconds",
        "3",
        "--renew-seconds",
        "1",
    ];
    let Some(mut cluster) = Cluster::start("leader", Backend::External, LEASE).await else {
        return;
    };
    let second_data = tempfile::tempdir().unwrap();
    let registry_url = cluster.registry_url();
    let namespace = cluster.namespace.clone();
    let kubeconfig = cluster.kubeconfig.clone();
    let mut args = vec![
        "--namespace",
        namespace.as_str(),
        "--registry-url",
        registry_url.as_str(),
    ];
    args.extend_from_slice(LEASE);
    let mut second = OperatorProcess::start(&kubeconfig, second_data.path(), &args);
    second.wait_ready(CONVERGE).await;

    cluster.apply_text(&avro_schema(
        "first",
        "first-value",
        "Retain",
        r#"{"name":"a","type":"long"}"#,
    ));
    cluster.wait_for("schema", "first", "Ready");
    let holder = |cluster: &Cluster| {
        let lease = cluster.get("lease", "schemaops-leader");
        lease["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned()
    };
    let first_pid = cluster.operator().pid();
    let leader = holder(&cluster);
    let first_leads = leader.ends_with(&format!("-{first_pid}"));
    assert!(
        first_leads || leader.ends_with(&format!("-{}", second.pid())),
        "the lease names one of the two operators: {leader}"
    );

    // Only the leader reconciled.
    let reconciles = |health_url: String| async move {
        let scrape = support::scrape(&health_url).await;
        support::metric(
            &scrape,
            r#"schemaops_reconciles_total{kind="Schema",registry="default",result="ok"}"#,
        )
        .unwrap_or(0.0)
    };
    let first_health = cluster.operator().health_url.clone();
    let (leader_health, follower_health) = if first_leads {
        (first_health, second.health_url.clone())
    } else {
        (second.health_url.clone(), first_health)
    };
    assert!(reconciles(leader_health).await > 0.0, "the leader reconciled");
    assert_eq!(reconciles(follower_health).await, 0.0, "the follower did not reconcile");

    // SIGKILL the leader: no release; the other waits out the lease.
    let killed = Instant::now();
    let survivor_pid = if first_leads {
        cluster.operator().kill();
        second.pid()
    } else {
        second.kill();
        first_pid
    };
    let deadline = killed + Duration::from_secs(15);
    loop {
        let now_holding = holder(&cluster);
        if now_holding.ends_with(&format!("-{survivor_pid}")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no takeover within 15 s; holder {now_holding}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = killed.elapsed();
    // The lease (3 s) plus a renew period (1 s) and scheduling slack.
    assert!(took < Duration::from_secs(8), "the takeover took {took:?}");

    cluster.apply_text(&avro_schema(
        "second",
        "second-value",
        "Retain",
        r#"{"name":"b","type":"long"}"#,
    ));
    cluster.wait_for("schema", "second", "Ready");
    assert_eq!(cluster.versions("first-value").await, vec![1]);
    assert_eq!(cluster.versions("second-value").await, vec![1]);

    // SIGTERM releases the lease at once, for a new candidate to take.
    let third_data = tempfile::tempdir().unwrap();
    let third = OperatorProcess::start(&kubeconfig, third_data.path(), &args);
    third.wait_ready(CONVERGE).await;
    let survivor = if first_leads { &mut second } else { cluster.operator() };
    assert_eq!(
        survivor.terminate(Duration::from_secs(20)),
        Some(0),
        "a clean exit on SIGTERM"
    );
    let after_exit = holder(&cluster);
    assert!(
        !after_exit.ends_with(&format!("-{survivor_pid}")),
        "the lease was released on SIGTERM, not left to expire: {after_exit}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !holder(&cluster).ends_with(&format!("-{}", third.pid())) {
        assert!(
            Instant::now() < deadline,
            "the new candidate never took the released lease"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    cluster.apply_text(&avro_schema(
        "third",
        "third-value",
        "Retain",
        r#"{"name":"c","type":"long"}"#,
    ));
    cluster.wait_for("schema", "third", "Ready");
    assert_eq!(cluster.versions("third-value").await, vec![1]);
}

fn subject_config(name: &str, subject: &str, extra: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: {name}\nspec:\n  subject: {subject}\n{extra}"
    )
}

/// Issue 15: a registry electing its leader answers every write with 500
/// while reads work. The Schema waits (Reconciling, RegistryUnavailable),
/// nothing is registered, and once writes work it is registered as version 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_registry_without_a_leader_the_schema_waits_then_registers() {
    let Some(cluster) = Cluster::start("no-leader", Backend::Double, &[]).await else {
        return;
    };
    let faults = &cluster.double().faults;
    faults.writes_fail.store(true, std::sync::atomic::Ordering::SeqCst);
    cluster.apply_text(&avro_schema(
        "orders",
        "orders-value",
        "Retain",
        r#"{"name":"a","type":"int"}"#,
    ));
    cluster.wait_for("schema", "orders", "Reconciling");
    let object = cluster.get("schema", "orders");
    assert_eq!(
        condition_field(&object, "Reconciling", "reason"),
        "RegistryUnavailable",
        "{object:#}"
    );
    assert_eq!(cluster.double().registrations(), 0);
    assert!(cluster.versions("orders-value").await.is_empty());

    faults.writes_fail.store(false, std::sync::atomic::Ordering::SeqCst);
    cluster.wait_for("schema", "orders", "Ready");
    let object = cluster.wait_converged("schema", "orders");
    assert_eq!(object["status"]["version"], 1, "{object:#}");
    assert_eq!(cluster.versions("orders-value").await, vec![1]);
}

/// Issue 15: a registry without per-subject modes (Karapace). A SubjectConfig
/// with only a level stays Ready over many resyncs; one asking for READONLY
/// is `ModeUnsupported` with its level in force and no protection claimed (a
/// Schema on its subject registers); no mode write or delete is ever sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_registry_without_subject_modes_no_mode_is_written_or_claimed() {
    let Some(cluster) = Cluster::start("no-modes", Backend::Double, &["--resync-seconds", "1"]).await else {
        return;
    };
    cluster
        .double()
        .faults
        .karapace_modes
        .store(true, std::sync::atomic::Ordering::SeqCst);
    cluster.apply_text(&subject_config("levels", "levels-value", "  compatibility: FORWARD\n"));
    cluster.apply_text(&subject_config(
        "locked",
        "locked-value",
        "  compatibility: FULL\n  mode: READONLY\n",
    ));
    cluster.apply_text(&avro_schema(
        "locked",
        "locked-value",
        "Retain",
        r#"{"name":"a","type":"int"}"#,
    ));
    cluster.wait_for("subjectconfig", "levels", "Ready");
    cluster.wait_for("schema", "locked", "Ready");
    let locked = cluster.wait_converged("subjectconfig", "locked");
    assert_eq!(condition(&locked, "Ready"), Some("False"), "{locked:#}");
    assert_eq!(condition_field(&locked, "Ready", "reason"), "ModeUnsupported");
    assert_eq!(locked["status"]["compatibility"], "FULL");
    assert_eq!(locked["status"]["mode"], "READWRITE");
    // Several resyncs later, still no mode write, and the level-only config is still Ready.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let levels = cluster.get("subjectconfig", "levels");
    assert_eq!(condition(&levels, "Ready"), Some("True"), "{levels:#}");
    assert_eq!(cluster.double().subject_mode_writes(), 0);
    let (_, level) = cluster.registry_json("/config/locked-value").await;
    assert_eq!(level["compatibilityLevel"], "FULL");
}

/// Issue 15: a version registered outside schemaops raises a Drifted
/// warning event, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_registered_outside_schemaops_raises_a_drifted_event() {
    let Some(cluster) = Cluster::start("drift-event", Backend::Double, &["--resync-seconds", "1"]).await else {
        return;
    };
    cluster.apply_text(&avro_schema(
        "orders",
        "orders-value",
        "Retain",
        r#"{"name":"a","type":"int"}"#,
    ));
    cluster.wait_for("schema", "orders", "Ready");
    let v2 =
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}"#;
    let (status, _) = cluster
        .double()
        .backend_post("/subjects/orders-value/versions", &serde_json::json!({ "schema": v2 }))
        .await;
    assert_eq!(status, 200);
    cluster.wait_for("schema", "orders", "Drifted");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = cluster.kubectl_ok(&["get", "events", "-o", "json"]);
    let events: Value = serde_json::from_str(&events).unwrap();
    let drifted: Vec<&Value> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["reason"] == "Drifted")
        .collect();
    assert_eq!(drifted.len(), 1, "one Drifted event: {events:#}");
    assert_eq!(drifted[0]["type"], "Warning");
    assert!(
        drifted[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("RegisteredOutsideSchemaops"),
        "{:#}",
        drifted[0]
    );
}

/// Each scenario against both registries.
macro_rules! on_both_registries {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn embedded_registry() {
                    super::$scenario(super::Backend::Embedded).await
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn external_registry() {
                    super::$scenario(super::Backend::External).await
                }
            }
        )*
    };
}

on_both_registries!(
    an_incompatible_edit_is_refused_with_its_explanation_and_a_fix_registers_the_next_version,
    the_examples_end_as_schemaops_apply_leaves_them,
    a_level_change_and_a_schema_change_in_one_apply_are_judged_together,
    a_second_schema_for_a_subject_is_a_conflict_until_the_first_goes,
    deletion_honours_each_policy_and_waits_for_referrers,
    an_operator_restart_loses_nothing_and_registers_nothing_twice,
    a_version_registered_by_hand_is_reported_as_drift_not_overwritten,
    observed_objects_write_nothing_and_a_managed_one_adopts_the_version_it_equals,
);

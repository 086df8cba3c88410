//! `apply` and `check` against an external registry that is electing its
//! leader, dies mid-run, lacks a feature, or stores what we refuse (issue
//! 15), through the registry double in `tests/support/registry_double.rs`:
//! a real `schemaops registry` behind a fault-injecting proxy.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::registry_double::{Flavour, RegistryDouble};

/// The double as each registry it models: as it starts (a current
/// Confluent), as Karapace and as Confluent 7.x (issue 38, item 6).
const FLAVOURS: [Option<Flavour>; 3] = [None, Some(Flavour::Karapace), Some(Flavour::Confluent7)];

/// A double over a fresh registry in `served`, answering as `flavour`.
async fn double_as(served: &Path, flavour: Option<Flavour>) -> RegistryDouble {
    let double = RegistryDouble::start(served).await;
    if let Some(flavour) = flavour {
        double.set_flavour(flavour);
    }
    eprintln!(
        "the registry double answers as {}",
        flavour.map_or("Confluent", Flavour::name)
    );
    double
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `schemaops COMMAND --data DATA ARGS…` off the async runtime, so the
/// double keeps serving while the command runs.
async fn run(command: &'static str, data: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--data", data.to_str().unwrap()];
    all.extend_from_slice(args);
    run_args(command, &all).await
}

/// Runs `schemaops COMMAND ARGS…` off the async runtime.
async fn run_args(command: &'static str, args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .arg(command)
            .args(&args)
            .env("RUST_LOG", "error")
            .output()
            .expect("the binary runs")
    })
    .await
    .unwrap()
}

fn record(name: &str, fields: &str) -> String {
    format!(r#"{{"type":"record","name":"{name}","fields":[{fields}]}}"#)
}

fn schema_manifest(name: &str, subject: &str, schema: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\nspec:\n  subject: {subject}\n  \
         schema: '{schema}'\n"
    )
}

fn config_manifest(name: &str, subject: &str, extra: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: {name}\nspec:\n  subject: {subject}\n{extra}"
    )
}

/// Writes `files` (name, text) into a new folder.
fn manifests(files: &[(&str, String)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let path = dir.path().to_owned();
    (dir, path)
}

/// A folder of `count` Schemas, `00-s.yaml`…, each the only version of its
/// own subject `sNN-value`.
fn numbered_schemas(count: usize) -> (tempfile::TempDir, PathBuf) {
    let files: Vec<(String, String)> = (0..count)
        .map(|i| {
            (
                format!("{i:02}-s.yaml"),
                schema_manifest(
                    &format!("s{i:02}"),
                    &format!("s{i:02}-value"),
                    &record("R", r#"{"name":"a","type":"string"}"#),
                ),
            )
        })
        .collect();
    let borrowed: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    manifests(&borrowed)
}

/// A SubjectConfig for `rsvp-value` with `settings`, and a Schema on it.
fn rsvp_with_config(settings: &str) -> (tempfile::TempDir, PathBuf) {
    manifests(&[
        ("a.yaml", config_manifest("rsvp", "rsvp-value", settings)),
        (
            "b.yaml",
            schema_manifest("rsvp", "rsvp-value", &record("R", r#"{"name":"a","type":"string"}"#)),
        ),
    ])
}

/// Three edits of one Schema: v1, a compatible v2, and an incompatible v3.
fn three_edits() -> Vec<(&'static str, String)> {
    let a = r#"{"name":"a","type":"string"}"#;
    let b = r#"{"name":"b","type":"int","default":0}"#;
    let c = r#"{"name":"c","type":"int"}"#;
    vec![
        ("1-solid.yaml", schema_manifest("solid", "solid-value", &record("S", a))),
        (
            "2-solid.yaml",
            schema_manifest("solid", "solid-value", &record("S", &format!("{a},{b}"))),
        ),
        (
            "3-solid.yaml",
            schema_manifest("solid", "solid-value", &record("S", &format!("{a},{b},{c}"))),
        ),
    ]
}

/// The objects printed with `-o json`.
fn items(output: &Output) -> Vec<Value> {
    let list: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("not JSON: {}", text(&output.stdout)));
    list["items"].as_array().unwrap().clone()
}

fn condition(object: &Value, kind: &str) -> (String, String, String) {
    let found = object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} condition in {object}"));
    (
        found["status"].as_str().unwrap().to_owned(),
        found["reason"].as_str().unwrap().to_owned(),
        found["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Karapace answers every write with 500 while it has no leader, then
/// elects one. The first edit of the Schema fails; no later edit of it may
/// be registered in that run (on main, edit 2 became version 1), and the
/// next run writes the history in order. On every flavour of the double.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_edit_stops_that_objects_history_in_the_run() {
    for flavour in FLAVOURS {
        let served = tempfile::tempdir().unwrap();
        let double = double_as(served.path(), flavour).await;
        let (_dir, folder) = manifests(&three_edits());
        let data = tempfile::tempdir().unwrap();
        // Four attempts of the first registration fail, then a leader is known.
        double.faults.failing_writes_left.store(4, Ordering::SeqCst);
        let first = run(
            "apply",
            data.path(),
            &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
        )
        .await;
        assert_eq!(first.status.code(), Some(2), "{}", text(&first.stderr));
        let (status, _) = double.backend_get("/subjects/solid-value/versions").await;
        assert_eq!(status, 404, "nothing was registered after the first edit failed");
        let stderr = text(&first.stderr);
        assert!(
            stderr.contains("1-solid.yaml") && stderr.contains("pending"),
            "names the pending edit: {stderr}"
        );
        assert!(stderr.contains("2-solid.yaml"), "names the edits not tried: {stderr}");
        let objects = items(&first);
        let solid = objects.iter().find(|o| o["metadata"]["name"] == "solid").unwrap();
        let (reconciling, reason, message) = condition(solid, "Reconciling");
        assert_eq!((reconciling.as_str(), reason.as_str()), ("True", "RegistryUnavailable"));
        assert!(
            message.contains("1-solid.yaml"),
            "the status names the pending edit: {message}"
        );

        // The next run, with the registry healthy, writes the history in order.
        let second = run(
            "apply",
            data.path(),
            &["--registry-url", &double.url, folder.to_str().unwrap()],
        )
        .await;
        assert_eq!(
            second.status.code(),
            Some(1),
            "edit 3 is refused: {}",
            text(&second.stdout)
        );
        let (_, versions) = double.backend_get("/subjects/solid-value/versions").await;
        assert_eq!(versions, serde_json::json!([1, 2]));
        let (_, first_version) = double.backend_get("/subjects/solid-value/versions/1").await;
        let text_v1: Value = serde_json::from_str(first_version["schema"].as_str().unwrap()).unwrap();
        assert_eq!(text_v1["fields"].as_array().unwrap().len(), 1, "version 1 is edit 1");
    }
}

/// The registry dies in the middle of a 60-Schema run, just after it stored
/// a registration it never answered. The run stops within seconds with exit
/// 2, says what was applied and what was not; the next run adopts the
/// registration that landed, without a duplicate. On every flavour of the
/// double.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_mid_run_stops_the_run_and_the_next_run_adopts_the_write_in_flight() {
    for flavour in FLAVOURS {
        let served = tempfile::tempdir().unwrap();
        let double = double_as(served.path(), flavour).await;
        let (_dir, folder) = numbered_schemas(60);
        let data = tempfile::tempdir().unwrap();
        *double.faults.die_after_registrations.lock().unwrap() = Some(9);
        let started = Instant::now();
        let first = run(
            "apply",
            data.path(),
            &["--registry-url", &double.url, folder.to_str().unwrap()],
        )
        .await;
        let took = started.elapsed();
        assert!(!double.is_up(), "the double died during the run");
        assert_eq!(first.status.code(), Some(2), "{}", text(&first.stdout));
        assert!(took < Duration::from_secs(10), "the run stopped in {took:?}");
        eprintln!("apply stopped {took:?} into a run whose registry died");
        let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
        assert!(stdout.contains("s08"), "the applied objects are listed: {stdout}");
        assert!(
            stderr.contains("s59") && stderr.contains("not tried"),
            "the objects not tried are listed: {stderr}"
        );
        assert_eq!(double.registrations(), 10, "the tenth registration landed");

        double.come_back();
        let second = run(
            "apply",
            data.path(),
            &["--registry-url", &double.url, folder.to_str().unwrap()],
        )
        .await;
        assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
        for i in 0..60 {
            let (_, versions) = double.backend_get(&format!("/subjects/s{i:02}-value/versions")).await;
            assert_eq!(versions, serde_json::json!([1]), "subject s{i:02}-value");
        }
    }
}

/// Two runs on one data folder hold one SubjectConfig and one Schema of the
/// same name: each object has its own `uid`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_and_a_subject_config_of_one_name_have_different_uids() {
    let (_dir, folder) = manifests(&[
        (
            "a.yaml",
            config_manifest("orders", "orders-value", "  compatibility: FULL\n"),
        ),
        (
            "b.yaml",
            schema_manifest(
                "orders",
                "orders-value",
                &record("O", r#"{"name":"a","type":"string"}"#),
            ),
        ),
    ]);
    let data = tempfile::tempdir().unwrap();
    let output = run("apply", data.path(), &["-o", "json", folder.to_str().unwrap()]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let uids: Vec<Value> = items(&output).iter().map(|o| o["metadata"]["uid"].clone()).collect();
    assert_eq!(uids.len(), 2);
    assert_ne!(uids[0], uids[1]);
}

/// Karapace has no per-subject mode: `PUT`/`DELETE /mode/{subject}` are 405
/// and `GET /mode/{subject}` answers the global mode for a subject it holds
/// and 404 (40401) for one it does not (issue 38: the probe took that 404
/// for "per-subject modes", so on main this failed again). A SubjectConfig
/// without a mode is Ready on every run and no mode write is ever sent (on
/// main the second run sent `DELETE /mode/…` and was `RegistryRejected`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_subject_modes_a_level_only_subject_config_stays_ready() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    double.faults.karapace_modes.store(true, Ordering::SeqCst);
    let (_dir, folder) = rsvp_with_config("  compatibility: FORWARD\n");
    let data = tempfile::tempdir().unwrap();
    for run_number in 1..=2 {
        let output = run(
            "apply",
            data.path(),
            &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
        )
        .await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "run {run_number}: {}",
            text(&output.stdout)
        );
        for object in items(&output) {
            assert_eq!(condition(&object, "Ready").0, "True", "run {run_number}: {object}");
        }
    }
    assert_eq!(double.subject_mode_writes(), 0, "no mode write or delete was sent");
    let (_, level) = double.backend_get("/config/rsvp-value").await;
    assert_eq!(level["compatibilityLevel"], "FORWARD");
}

/// A SubjectConfig asking for READONLY on a registry without subject modes:
/// `ModeUnsupported`, the level still applies, no protection is claimed (a
/// Schema on the subject registers), and `check` predicts exactly that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_subject_modes_a_mode_is_refused_and_the_level_applies() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    double.faults.karapace_modes.store(true, Ordering::SeqCst);
    let (_dir, folder) = rsvp_with_config("  compatibility: FORWARD\n  mode: READONLY\n");

    let predicted = run_args(
        "check",
        &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
    )
    .await;
    let data = tempfile::tempdir().unwrap();
    let applied = run(
        "apply",
        data.path(),
        &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
    )
    .await;
    assert_eq!(applied.status.code(), Some(1), "{}", text(&applied.stdout));
    let objects = items(&applied);
    let config = objects.iter().find(|o| o["kind"] == "SubjectConfig").unwrap();
    let (ready, reason, message) = condition(config, "Ready");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "ModeUnsupported"));
    assert!(message.contains("per-subject mode"), "{message}");
    assert_eq!(config["status"]["compatibility"], "FORWARD");
    assert_eq!(config["status"]["mode"], "READWRITE", "no READONLY is claimed");
    let schema = objects.iter().find(|o| o["kind"] == "Schema").unwrap();
    assert_eq!(
        condition(schema, "Ready").0,
        "True",
        "the subject is not read-only: {schema}"
    );
    let (_, level) = double.backend_get("/config/rsvp-value").await;
    assert_eq!(level["compatibilityLevel"], "FORWARD", "the level was written");
    assert_eq!(double.subject_mode_writes(), 0, "no mode write was sent");

    // check said the same before: the same exit status and outcomes.
    assert_eq!(
        predicted.status.code(),
        Some(1),
        "{}{}",
        text(&predicted.stdout),
        text(&predicted.stderr)
    );
    let report: Value = serde_json::from_slice(&predicted.stdout).unwrap();
    let outcomes: Vec<(String, String)> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("SubjectConfig".to_owned(), "rejected".to_owned()),
            ("Schema".to_owned(), "register".to_owned())
        ],
        "{report}"
    );
}

/// The `(kind, name, outcome)` of each object in `check -o json` output.
fn check_outcomes(output: &Output) -> Vec<(String, String, String, String)> {
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}{}", text(&output.stdout), text(&output.stderr)));
    report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap().to_owned(),
                o["name"].as_str().unwrap().to_owned(),
                o["outcome"].as_str().unwrap().to_owned(),
                o["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A registry that stored a version our engine refuses (Karapace keeps an
/// Avro int field with the default "x"): `apply` refuses the edit of that
/// subject as InvalidSchema naming the stored version and applies the rest;
/// `check` says the same per object (on main it aborted the whole run with
/// exit 2, blaming the candidate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_version_we_refuse_is_reported_per_object_by_check_and_apply() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let stored = record("B", r#"{"name":"a","type":"int","default":0}"#);
    let (status, _) = double
        .backend_post("/subjects/bad-value/versions", &serde_json::json!({ "schema": stored }))
        .await;
    assert_eq!(status, 200);
    double.faults.substitutes.lock().unwrap().push((
        "bad-value".to_owned(),
        1,
        record("B", r#"{"name":"a","type":"int","default":"x"}"#),
    ));
    let (_dir, folder) = manifests(&[
        (
            "a.yaml",
            schema_manifest(
                "bad",
                "bad-value",
                &record(
                    "B",
                    r#"{"name":"a","type":"int","default":0},{"name":"b","type":"int","default":1}"#,
                ),
            ),
        ),
        (
            "b.yaml",
            schema_manifest("good", "good-value", &record("G", r#"{"name":"a","type":"string"}"#)),
        ),
    ]);
    let predicted = run_args(
        "check",
        &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
    )
    .await;
    assert_eq!(
        predicted.status.code(),
        Some(1),
        "{}{}",
        text(&predicted.stdout),
        text(&predicted.stderr)
    );
    let data = tempfile::tempdir().unwrap();
    let applied = run(
        "apply",
        data.path(),
        &["--registry-url", &double.url, "-o", "json", folder.to_str().unwrap()],
    )
    .await;
    assert_eq!(applied.status.code(), Some(1), "{}", text(&applied.stdout));
    let objects = items(&applied);
    let bad = objects.iter().find(|o| o["metadata"]["name"] == "bad").unwrap();
    let (ready, reason, message) = condition(bad, "Ready");
    assert_eq!((ready.as_str(), reason.as_str()), ("False", "InvalidSchema"));
    assert!(message.contains("version 1"), "names the stored version: {message}");
    let good = objects.iter().find(|o| o["metadata"]["name"] == "good").unwrap();
    assert_eq!(condition(good, "Ready").0, "True");

    assert_eq!(
        check_outcomes(&predicted),
        vec![
            (
                "Schema".to_owned(),
                "bad".to_owned(),
                "rejected".to_owned(),
                "InvalidSchema".to_owned()
            ),
            (
                "Schema".to_owned(),
                "good".to_owned(),
                "register".to_owned(),
                String::new()
            ),
        ]
    );
    let report: Value = serde_json::from_slice(&predicted.stdout).unwrap();
    let message = report["objects"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("version 1"),
        "check names the stored version: {message}"
    );
}

/// A version registered outside schemaops shows where people look: the
/// `apply` table's REASON and a note under it, `check`'s result and a
/// GitHub warning. Drift is reported, not refused: the exit status stays 0.
/// The double returns stored texts canonicalized and answers compatibility
/// checks without `messages`, as Confluent and Karapace may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_shows_in_the_apply_table_and_in_check() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    double.faults.canonical_text.store(true, Ordering::SeqCst);
    double.faults.no_verbose.store(true, Ordering::SeqCst);
    let v1 = record("D", r#"{"name":"a","type":"string"}"#);
    let (_dir, folder) = manifests(&[("a.yaml", schema_manifest("drifty", "drifty-value", &v1))]);
    let data = tempfile::tempdir().unwrap();
    let first = run(
        "apply",
        data.path(),
        &["--registry-url", &double.url, folder.to_str().unwrap()],
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stdout));
    assert!(!text(&first.stdout).contains("drifted"), "{}", text(&first.stdout));

    let v2 = record(
        "D",
        r#"{"name":"a","type":"string"},{"name":"b","type":"int","default":0}"#,
    );
    let (status, _) = double
        .backend_post("/subjects/drifty-value/versions", &serde_json::json!({ "schema": v2 }))
        .await;
    assert_eq!(status, 200);

    let second = run(
        "apply",
        data.path(),
        &["--registry-url", &double.url, folder.to_str().unwrap()],
    )
    .await;
    assert_eq!(
        second.status.code(),
        Some(0),
        "drift is not a refusal: {}",
        text(&second.stdout)
    );
    let table = text(&second.stdout);
    let row: Vec<&str> = table
        .lines()
        .find(|line| line.split_whitespace().nth(2) == Some("drifty"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(row[6..], ["True", "RegisteredOutsideSchemaops"], "{table}");
    assert!(
        table.contains("Schema default/drifty has drifted (RegisteredOutsideSchemaops)"),
        "{table}"
    );
    assert!(
        table.contains("version 2"),
        "names the version registered outside: {table}"
    );

    let checked = run_args("check", &["--registry-url", &double.url, folder.to_str().unwrap()]).await;
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stderr));
    let table = text(&checked.stdout);
    assert!(table.contains("drifted (RegisteredOutsideSchemaops)"), "{table}");
    let github = run_args(
        "check",
        &["--registry-url", &double.url, "-o", "github", folder.to_str().unwrap()],
    )
    .await;
    assert!(
        text(&github.stdout).contains("::warning file="),
        "{}",
        text(&github.stdout)
    );
}

/// A registry that hangs, or resets every connection, is a run-level fact
/// too: `apply` exits 2 within seconds, nothing stored, the objects kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_or_resetting_registry_ends_the_run_with_exit_2_within_seconds() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let (_dir, folder) = manifests(&three_edits());
    for fault in ["hang", "reset"] {
        let data = tempfile::tempdir().unwrap();
        match fault {
            "hang" => double.faults.delay_ms.store(5_000, Ordering::SeqCst),
            _ => {
                double.faults.delay_ms.store(0, Ordering::SeqCst);
                double.faults.reset_connections.store(true, Ordering::SeqCst);
            }
        }
        let started = Instant::now();
        let output = run(
            "apply",
            data.path(),
            &[
                "--registry-url",
                &double.url,
                "--registry-timeout-seconds",
                "1",
                folder.to_str().unwrap(),
            ],
        )
        .await;
        let took = started.elapsed();
        assert_eq!(output.status.code(), Some(2), "{fault}: {}", text(&output.stderr));
        assert!(took < Duration::from_secs(10), "{fault}: the run took {took:?}");
        eprintln!("{fault}: apply ended in {took:?}");
        assert!(
            text(&output.stderr).contains("unavailable"),
            "{fault}: {}",
            text(&output.stderr)
        );
    }
    assert_eq!(double.registrations(), 0);
}

/// Karapace ignores data contracts: it takes `metadata` and `ruleSet` and
/// keeps neither, and answers a `PUT /config` without a level with 422 and
/// pydantic's errors (issue 38: on main that 422 made the SubjectConfig
/// `RegistryRejected`). A Schema with a contract and a SubjectConfig with a
/// compatibility group both say so with `ContractsUnsupported`, never Ready
/// as if the contract were in force.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_drops_data_contracts_is_named_not_trusted() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    double.faults.karapace_contracts.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let schema = format!(
        "{}  metadata:\n    properties:\n      owner: team-a\n",
        schema_manifest(
            "customers",
            "customers-value",
            &record("Customer", r#"{"name":"id","type":"string"}"#)
        )
    );
    std::fs::write(dir.path().join("10-customers.yaml"), schema).unwrap();
    std::fs::write(
        dir.path().join("20-orders-config.yaml"),
        config_manifest(
            "orders",
            "orders-value",
            "  compatibilityGroup: application.major_version\n",
        ),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    for run_number in 1..=2 {
        let applied = run(
            "apply",
            data.path(),
            &[
                "--registry-url",
                &double.url,
                "-o",
                "json",
                dir.path().to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(
            applied.status.code(),
            Some(1),
            "run {run_number}: {}",
            text(&applied.stdout)
        );
        for object in items(&applied) {
            let (ready, reason, message) = condition(&object, "Ready");
            assert_eq!(
                (ready.as_str(), reason.as_str()),
                ("False", "ContractsUnsupported"),
                "run {run_number}: {object:#}"
            );
            assert!(message.replace('-', " ").contains("data contract"), "{message}");
        }
    }
    // The version exists, without the metadata the registry dropped.
    let (_, stored) = double.backend_get("/subjects/customers-value/versions/1").await;
    assert!(stored.get("metadata").is_none(), "{stored}");
}

/// Issue 37, item 9: every command that talks to an external registry reads
/// answers up to `--registry-max-response-bytes` only. An answer longer
/// than that (here 1 MB, sent chunked, against a 4 KiB limit) ends `apply`,
/// `check` and `export` with exit 2 naming the request and the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_refuses_an_answer_over_the_size_limit_naming_it() {
    use support::registry_double::{Reply, ReplyBody};
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let huge = |path: &str| Reply {
        method: reqwest::Method::GET,
        path: path.to_owned(),
        status: 200,
        body: ReplyBody::Subjects {
            bytes: 1_000_000,
            announced: false,
        },
    };
    *double.faults.replies.lock().unwrap() = vec![huge("/subjects"), huge("/subjects/rsvp-value/versions")];
    let (_dir, folder) = manifests(&[(
        "a.yaml",
        schema_manifest("rsvp", "rsvp-value", &record("R", r#"{"name":"a","type":"string"}"#)),
    )]);
    let limit = ["--registry-url", &double.url, "--registry-max-response-bytes", "4096"];
    let out = tempfile::tempdir().unwrap();
    let export_to = out.path().join("export");
    let runs = [
        ("apply", [&limit[..], &[folder.to_str().unwrap()]].concat()),
        ("check", [&limit[..], &[folder.to_str().unwrap()]].concat()),
        ("export", [&limit[..], &["--out", export_to.to_str().unwrap()]].concat()),
    ];
    for (command, args) in runs {
        let data = tempfile::tempdir().unwrap();
        let output = if command == "export" {
            run_args(command, &args).await
        } else {
            run(command, data.path(), &args).await
        };
        let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(2), "{command}: {all}");
        assert!(
            all.contains("with more than 4096 bytes") && all.contains("GET /subjects"),
            "{command}: {all}"
        );
    }
    assert_eq!(double.registrations(), 0);
    assert!(!export_to.exists());
}

/// Runs `schemaops COMMAND ARGS…` off the async runtime with the default
/// log level, so the warning printed per failed attempt shows on stderr.
async fn run_with_warnings(command: &'static str, args: Vec<String>) -> (Output, Duration) {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .arg(command)
            .args(&args)
            .env_remove("RUST_LOG")
            .output()
            .expect("the binary runs");
        (output, started.elapsed())
    })
    .await
    .unwrap()
}

/// Issue 38, item 5: a registry that accepts connections and never answers
/// held `apply` for 41.5 s (four attempts of 10 s each). With the default
/// flags one request now has 12 s in all (`--registry-deadline-seconds`),
/// so `apply` and `check` exit 2 within 15 s, saying on stderr what each
/// attempt did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_accepts_and_never_answers_ends_apply_and_check_within_the_deadline() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accept every connection and hold it open, unanswered.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let (_dir, folder) = manifests(&three_edits());
    let data = tempfile::tempdir().unwrap();
    let args = |command: &str| {
        let mut args = vec!["--registry-url".to_owned(), url.clone(), folder.display().to_string()];
        if command == "apply" {
            args.extend(["--data".to_owned(), data.path().display().to_string()]);
        }
        args
    };
    let (apply, check) = tokio::join!(
        run_with_warnings("apply", args("apply")),
        run_with_warnings("check", args("check"))
    );
    for (command, (output, took)) in [("apply", apply), ("check", check)] {
        let stderr = text(&output.stderr);
        eprintln!("{command} against a silent registry ended in {took:?}");
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(took < Duration::from_secs(15), "{command} took {took:?}: {stderr}");
        assert!(took >= Duration::from_secs(11), "{command} gave up early, in {took:?}");
        assert!(
            stderr.contains("attempt 1 failed (timed out") && stderr.contains("attempt 2 in"),
            "{command}: says what the first attempt did and what comes next: {stderr}"
        );
        assert!(
            stderr.contains("attempt 2 failed (no answer before the 12 s deadline); giving up"),
            "{command}: says why it stops: {stderr}"
        );
    }
}

/// Issue 38, item 5: a registry that stops answering in the middle of a run
/// (connections accepted, nothing answered) ends the run as an outage does:
/// exit 2 within the deadline, the edits not made still pending; the next
/// run, with the registry answering again, makes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_stalls_mid_run_stops_the_run_like_an_outage() {
    let served = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(served.path()).await;
    let (_dir, folder) = numbered_schemas(10);
    let data = tempfile::tempdir().unwrap();
    *double.faults.stall_after_registrations.lock().unwrap() = Some(3);
    let args = vec![
        "--data".to_owned(),
        data.path().display().to_string(),
        "--registry-url".to_owned(),
        double.url.clone(),
        "--registry-deadline-seconds".to_owned(),
        "3".to_owned(),
        folder.display().to_string(),
    ];
    let (first, took) = run_with_warnings("apply", args.clone()).await;
    let stderr = text(&first.stderr);
    eprintln!("apply stopped {took:?} into a run whose registry stalled");
    assert!(double.faults.stalled.load(Ordering::SeqCst), "the double stalled");
    assert_eq!(first.status.code(), Some(2), "{stderr}");
    assert!(took < Duration::from_secs(8), "the run stopped in {took:?}");
    assert!(stderr.contains("giving up"), "{stderr}");
    assert!(
        stderr.contains("03-s.yaml") && stderr.contains("pending"),
        "names the pending edit: {stderr}"
    );
    assert_eq!(double.registrations(), 3);

    double.faults.stalled.store(false, Ordering::SeqCst);
    let (second, _) = run_with_warnings("apply", args).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    for i in 0..10 {
        let (_, versions) = double.backend_get(&format!("/subjects/s{i:02}-value/versions")).await;
        assert_eq!(versions, serde_json::json!([1]), "subject s{i:02}-value");
    }
}

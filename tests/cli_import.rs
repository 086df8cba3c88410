//! `schemaops import` as a user runs it (issue 18, item 3): a source
//! `schemaops registry` with non-contiguous IDs, soft-deleted versions,
//! references in all three formats (a JSON Schema `$ref` into another
//! subject among them, issue 39) and its own levels and modes, copied
//! into a fresh folder that then answers as the source did; a second run
//! changes nothing; a conflicting target is refused untouched; an
//! interrupted import finishes on the next run. A source that answers
//! another question than the one asked, or gives one ID with two schemas,
//! is refused before anything is written; an answer over the size limit is
//! refused naming it, with the memory of the run bounded (issue 37, items 8
//! and 9), through the registry double in `tests/support/registry_double.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

mod support;

use support::registry::RegistryProcess;
use support::registry_double::{RegistryDouble, Reply, ReplyBody};

/// One write to the source registry.
enum Step {
    /// `PUT path body`.
    Put(&'static str, Value),
    /// `POST /subjects/{subject}/versions body`.
    Register(&'static str, Value),
    /// `DELETE path`.
    Delete(&'static str),
}

fn avro(name: &str, fields: &str) -> String {
    format!(r#"{{"type":"record","name":"{name}","namespace":"com.acme","fields":[{fields}]}}"#)
}

/// Versions with IDs 7, 42, 1000…, references in every format, soft
/// deletes, a subject level and a subject mode. The first four steps make
/// a smaller registry of which the whole one is a continuation.
fn population() -> Vec<Step> {
    use Step::{Delete, Put, Register};
    let reference = |name: &str, subject: &str| json!({"name": name, "subject": subject, "version": 1});
    vec![
        Put("/mode", json!({"mode": "IMPORT"})),
        Register(
            "common-value",
            json!({"id": 7, "version": 1, "schema": avro("Common", r#"{"name":"id","type":"string"}"#)}),
        ),
        Register(
            "order-value",
            json!({"id": 42, "version": 1,
                   "schema": avro("Order", r#"{"name":"common","type":"com.acme.Common"}"#),
                   "references": [reference("com.acme.Common", "common-value")]}),
        ),
        Register(
            "order-value",
            json!({"id": 1000, "version": 3,
                   "schema": avro("Order", r#"{"name":"common","type":"com.acme.Common"},{"name":"note","type":["null","string"],"default":null}"#),
                   "references": [reference("com.acme.Common", "common-value")]}),
        ),
        Register(
            "address-json",
            json!({"id": 8, "version": 1, "schemaType": "JSON",
                   "schema": r#"{"type":"object","properties":{"street":{"type":"string"}}}"#}),
        ),
        Register(
            "customer-json",
            json!({"id": 43, "version": 1, "schemaType": "JSON",
                   // The `$ref`s name the reference (issue 39, item 1): the whole
                   // schema, and a property inside it.
                   "schema": r#"{"$id":"https://acme.example/customer.json","type":"object",
                       "properties":{"address":{"$ref":"address.json"},
                           "street":{"$ref":"address.json#/properties/street"}}}"#,
                   "references": [reference("address.json", "address-json")]}),
        ),
        Register(
            "money.proto",
            json!({"id": 9, "version": 1, "schemaType": "PROTOBUF",
                   "schema": "syntax = \"proto3\";\npackage acme;\n\nmessage Money {\n  int64 cents = 1;\n}\n"}),
        ),
        Register(
            "payment-value",
            json!({"id": 44, "version": 1, "schemaType": "PROTOBUF",
                   "schema": "syntax = \"proto3\";\npackage acme;\n\nimport \"money.proto\";\n\nmessage Payment {\n  Money amount = 1;\n}\n",
                   "references": [reference("money.proto", "money.proto")]}),
        ),
        Register(
            "legacy-value",
            json!({"id": 500, "version": 1, "schema": avro("Legacy", r#"{"name":"a","type":"int"}"#)}),
        ),
        Register(
            "legacy-value",
            json!({"id": 501, "version": 2, "schema": avro("Legacy", r#"{"name":"a","type":"long"}"#)}),
        ),
        Register(
            "gone-value",
            json!({"id": 600, "version": 1, "schema": avro("Gone", r#"{"name":"g","type":"int"}"#)}),
        ),
        Put("/mode", json!({"mode": "READWRITE"})),
        Delete("/subjects/legacy-value/versions/1"),
        Delete("/subjects/gone-value"),
        Put("/config", json!({"compatibility": "FORWARD"})),
        Put("/config/order-value", json!({"compatibility": "FULL"})),
        Put("/mode/legacy-value", json!({"mode": "READONLY"})),
    ]
}

async fn populate(url: &str, steps: &[Step]) {
    let client = support::http_client();
    for step in steps {
        let request = match step {
            Step::Put(path, body) => client.put(format!("{url}{path}")).json(body),
            Step::Register(subject, body) => client.post(format!("{url}/subjects/{subject}/versions")).json(body),
            Step::Delete(path) => client.delete(format!("{url}{path}")),
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        assert!(status.is_success(), "{status}: {}", response.text().await.unwrap());
    }
}

/// Every answer a client could compare: each ID, each subject's versions
/// (live and with `?deleted=true`), each version, levels and modes.
async fn snapshot(url: &str) -> BTreeMap<String, (u16, Value)> {
    let client = support::http_client();
    let get = |path: String| {
        let client = client.clone();
        async move {
            let response = client.get(format!("{url}{path}")).send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let mut answers = BTreeMap::new();
    for path in ["/subjects", "/subjects?deleted=true", "/config", "/mode"] {
        answers.insert(path.to_owned(), get(path.to_owned()).await);
    }
    let subjects = answers["/subjects?deleted=true"].1.as_array().unwrap().clone();
    let mut ids = Vec::new();
    for subject in subjects {
        let subject = subject.as_str().unwrap();
        for path in [
            format!("/subjects/{subject}/versions"),
            format!("/config/{subject}"),
            format!("/mode/{subject}"),
        ] {
            answers.insert(path.clone(), get(path).await);
        }
        let path = format!("/subjects/{subject}/versions?deleted=true");
        let versions = get(path.clone()).await;
        for version in versions.1.as_array().unwrap() {
            let path = format!("/subjects/{subject}/versions/{version}?deleted=true");
            let held = get(path.clone()).await;
            ids.push(held.1["id"].as_u64().unwrap());
            answers.insert(path, held);
        }
        answers.insert(path, versions);
    }
    for id in ids {
        let path = format!("/schemas/ids/{id}");
        answers.insert(path.clone(), get(path).await);
    }
    answers
}

fn import(from: &str, data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["import", "--from", from, "--data"])
        .arg(data)
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The snapshot of the registry served from `data`.
async fn served(data: &Path) -> BTreeMap<String, (u16, Value)> {
    let registry = RegistryProcess::start(data).await;
    snapshot(&registry.url).await
}

#[tokio::test]
async fn an_import_answers_for_every_id_version_level_and_mode_as_the_source_and_a_second_run_changes_nothing() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    populate(&source.url, &population()).await;
    let expected = snapshot(&source.url).await;
    for id in [7, 42, 1000, 8, 43, 9, 44, 500, 600] {
        assert_eq!(expected[&format!("/schemas/ids/{id}")].0, 200, "ID {id}");
    }
    assert_eq!(expected["/mode/legacy-value"].1, json!({"mode": "READONLY"}));

    let target = tempfile::tempdir().unwrap();
    let first = import(&source.url, target.path());
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).starts_with("10 versions copied, 0 already present, 2 soft-deleted"),
        "{}",
        text(&first.stdout)
    );
    assert!(
        text(&first.stderr).contains("10/10 versions copied"),
        "{}",
        text(&first.stderr)
    );
    assert_eq!(served(target.path()).await, expected);

    let second = import(&source.url, target.path());
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(
        text(&second.stdout),
        "0 versions copied, 10 already present, 0 soft-deleted, 0 levels and modes set; nothing changed\n"
    );
    assert_eq!(served(target.path()).await, expected);
}

#[tokio::test]
async fn a_target_holding_another_schema_under_a_source_id_is_refused_and_left_unchanged() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    populate(&source.url, &population()).await;
    let target = tempfile::tempdir().unwrap();
    {
        let registry = RegistryProcess::start(target.path()).await;
        populate(
            &registry.url,
            &[
                Step::Put("/mode", json!({"mode": "IMPORT"})),
                Step::Register(
                    "elsewhere",
                    json!({"id": 42, "version": 1, "schema": avro("Other", r#"{"name":"x","type":"int"}"#)}),
                ),
                Step::Put("/mode", json!({"mode": "READWRITE"})),
            ],
        )
        .await;
    }
    let before = served(target.path()).await;

    let refused = import(&source.url, target.path());
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stdout));
    let message = text(&refused.stderr);
    assert!(
        message.contains("schema ID 42 holds a different schema in the target")
            && message.contains("nothing was written"),
        "{message}"
    );
    assert_eq!(served(target.path()).await, before);
}

#[tokio::test]
async fn an_interrupted_import_finishes_on_the_next_run() {
    // The first run copies only what a smaller registry holds (the first
    // versions of the same history) and leaves the target in IMPORT mode, as
    // a run killed part-way would.
    let steps = population();
    let partial_data = tempfile::tempdir().unwrap();
    let partial = RegistryProcess::start(partial_data.path()).await;
    populate(&partial.url, &steps[..4]).await;
    let target = tempfile::tempdir().unwrap();
    let first = import(&partial.url, target.path());
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).starts_with("3 versions copied"),
        "{}",
        text(&first.stdout)
    );

    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    populate(&source.url, &steps).await;
    let next = import(&source.url, target.path());
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    assert!(
        text(&next.stdout).starts_with("7 versions copied, 3 already present, 2 soft-deleted"),
        "{}",
        text(&next.stdout)
    );
    assert_eq!(served(target.path()).await, snapshot(&source.url).await);
}

#[test]
fn an_unreachable_source_exits_2_and_creates_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let target = parent.path().join("target");
    let refused = import("http://127.0.0.1:1", &target);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("nothing was imported from http://127.0.0.1:1"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!target.exists());
}

/// Runs `schemaops import --from FROM --data DATA ARGS…` off the async
/// runtime (so the double keeps serving), under `ulimit -v` (4 GiB: a
/// runaway cannot take the machine down), and returns its output and its
/// peak resident memory in KiB, read from `/proc` while it runs.
async fn import_measured(from: &str, data: &Path, args: &[&str]) -> (Output, u64) {
    let mut all = vec![
        "--from".into(),
        from.into(),
        "--data".into(),
        data.as_os_str().to_owned(),
    ];
    all.extend(args.iter().map(Into::into));
    run_measured(all).await
}

/// Runs `schemaops import ARGS…` as [`import_measured`] does.
async fn run_measured(args: Vec<std::ffi::OsString>) -> (Output, u64) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"ulimit -v 4194304 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_schemaops"))
        .arg("import")
        .args(args)
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("the binary runs");
        let status = format!("/proc/{}/status", child.id());
        let mut peak_kib = 0;
        while child.try_wait().unwrap().is_none() {
            if let Some(hwm) = std::fs::read_to_string(&status).ok().and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("VmHWM:"))
                    .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            }) {
                peak_kib = peak_kib.max(hwm);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        (child.wait_with_output().unwrap(), peak_kib)
    })
    .await
    .unwrap()
}

/// Issue 37, item 8: a version answered as version 7 was imported as
/// version 7, an answer naming another subject was stored under it, and one
/// ID given with two texts was written partly before the import failed.
/// Each is now refused, naming what was asked and what the source said,
/// before the target is even created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_whose_answers_contradict_the_questions_is_refused_with_nothing_written() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryDouble::start(source_data.path()).await;
    populate(
        &source.url,
        &[
            Step::Register("a", json!({"schema": avro("A", r#"{"name":"x","type":"int"}"#)})),
            Step::Register("b", json!({"schema": avro("B", r#"{"name":"y","type":"int"}"#)})),
        ],
    )
    .await;
    let (_, a) = source.backend_get("/subjects/a/versions/1").await;
    let (_, b) = source.backend_get("/subjects/b/versions/1").await;
    assert_eq!((&a["id"], &b["id"]), (&json!(1), &json!(2)));
    let with = |answer: &Value, field: &str, value: Value| {
        let mut answer = answer.clone();
        answer[field] = value;
        answer
    };
    let cases = [
        (
            "/subjects/a/versions/1",
            with(&a, "version", json!(7)),
            "asked for subject `a` version 1, the source answered with version 7".to_owned(),
        ),
        (
            "/subjects/a/versions/1",
            with(&a, "subject", json!("b")),
            "asked for subject `a` version 1, the source answered for subject `b`".to_owned(),
        ),
        (
            "/subjects/b/versions/1",
            with(&b, "id", json!(1)),
            "schema ID 1 is given with 2 different schemas: first by subject `a` version 1; second by subject `b` \
             version 1; GET /schemas/ids/1 gives the schema of the first group"
                .to_owned(),
        ),
    ];
    for (path, lie, expected) in cases {
        *source.faults.replies.lock().unwrap() = vec![Reply::json(reqwest::Method::GET, path, 200, lie)];
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("target");
        let (refused, _) = import_measured(&source.url, &target, &[]).await;
        let message = text(&refused.stderr);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "{expected}: {}{message}",
            text(&refused.stdout)
        );
        assert!(
            message.contains(&expected) && message.contains("nothing was written"),
            "{expected}: {message}"
        );
        assert!(!target.exists(), "{expected}: nothing written");
    }
    // The same source, answering faithfully, imports.
    source.faults.replies.lock().unwrap().clear();
    let parent = tempfile::tempdir().unwrap();
    let (imported, _) = import_measured(&source.url, &parent.path().join("target"), &[]).await;
    assert_eq!(imported.status.code(), Some(0), "{}", text(&imported.stderr));
}

/// Issue 37, item 9: a 150 MB `/subjects` answer made `import` peak at
/// 791 MB. A 100 MB answer, generated while it is sent, is now refused once
/// the limit has arrived (64 MiB by default; less with the flag), naming the
/// request and the limit, with the process's memory bounded accordingly;
/// an answer announcing its length over the limit is refused unread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_size_limit_is_refused_naming_the_limit_with_memory_bounded() {
    const HUNDRED_MB: u64 = 100_000_000;
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryDouble::start(source_data.path()).await;
    let huge = |announced| {
        vec![Reply {
            method: reqwest::Method::GET,
            path: "/subjects".to_owned(),
            status: 200,
            body: ReplyBody::Subjects {
                bytes: HUNDRED_MB,
                announced,
            },
        }]
    };
    // (announced, flag, limit named, peak RSS allowed in MiB)
    let cases: [(bool, Option<&str>, &str, u64); 3] = [
        (false, None, "67108864", 250),
        (false, Some("1048576"), "1048576", 100),
        (true, Some("1048576"), "1048576", 100),
    ];
    for (announced, flag, limit, allowed_mib) in cases {
        *source.faults.replies.lock().unwrap() = huge(announced);
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("target");
        let args: Vec<&str> = flag
            .map(|bytes| vec!["--registry-max-response-bytes", bytes])
            .unwrap_or_default();
        let started = std::time::Instant::now();
        let (refused, peak_kib) = import_measured(&source.url, &target, &args).await;
        let message = text(&refused.stderr);
        eprintln!(
            "{limit}-byte limit, length announced {announced}: refused in {:?}, peak RSS {} MiB",
            started.elapsed(),
            peak_kib / 1024
        );
        assert_eq!(refused.status.code(), Some(2), "{message}");
        assert!(
            message.contains(&format!("answered GET /subjects with more than {limit} bytes"))
                && message.contains("--registry-max-response-bytes"),
            "{message}"
        );
        assert!(peak_kib > 0, "the peak was read");
        assert!(
            peak_kib / 1024 < allowed_mib,
            "peak RSS {} MiB over {allowed_mib} MiB",
            peak_kib / 1024
        );
        assert!(!target.exists());
    }
}

/// Issue 38, item 3: from a source that answers as Karapace does
/// (`deletedOnly` ignored, no `deleted` field in a version, a subject's
/// mode the global one), soft-deleted versions came back live and every
/// subject was pinned to READWRITE. Now the soft deletes are copied as
/// they are, and no subject holds a mode of its own, so a later global
/// READONLY freezes them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_from_a_karapace_like_source_keeps_soft_deletes_and_pins_no_subject_mode() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryDouble::start(source_data.path()).await;
    let mut steps = population();
    // Karapace cannot hold a subject mode.
    steps.retain(|step| !matches!(step, Step::Put(path, _) if path.starts_with("/mode/")));
    populate(&source.url, &steps).await;
    source.faults.karapace_deleted_only.store(true, Ordering::SeqCst);
    source.faults.karapace_modes.store(true, Ordering::SeqCst);

    let target = tempfile::tempdir().unwrap();
    let (imported, _) = import_measured(&source.url, target.path(), &[]).await;
    assert_eq!(imported.status.code(), Some(0), "{}", text(&imported.stderr));
    assert!(
        text(&imported.stdout).starts_with("10 versions copied, 0 already present, 2 soft-deleted"),
        "{}",
        text(&imported.stdout)
    );
    let registry = RegistryProcess::start(target.path()).await;
    let get = |path: &str| {
        let url = format!("{}{path}", registry.url);
        async move {
            let response = support::http_client().get(url).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(get("/subjects/legacy-value/versions").await, (200, json!([2])));
    assert_eq!(
        get("/subjects/legacy-value/versions?deleted=true").await,
        (200, json!([1, 2]))
    );
    let live = get("/subjects").await.1;
    assert!(!live.as_array().unwrap().contains(&json!("gone-value")), "{live}");
    let all = get("/subjects?deleted=true").await.1;
    assert!(all.as_array().unwrap().contains(&json!("gone-value")), "{all}");
    let subjects: Vec<String> = serde_json::from_value(all).unwrap();
    for subject in &subjects {
        let (status, body) = get(&format!("/mode/{subject}?defaultToGlobal=false")).await;
        assert_eq!(status, 404, "subject `{subject}` holds a mode of its own: {body}");
    }
    let frozen = support::http_client()
        .put(format!("{}/mode", registry.url))
        .json(&json!({"mode": "READONLY"}))
        .send()
        .await
        .unwrap();
    assert!(frozen.status().is_success());
    for subject in &subjects {
        let (_, body) = get(&format!("/mode/{subject}?defaultToGlobal=true")).await;
        assert_eq!(body, json!({"mode": "READONLY"}), "subject `{subject}`");
    }
}

/// Runs `schemaops import --from FROM --to-registry-url TO`.
fn import_into_registry(from: &str, to: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["import", "--from", from, "--to-registry-url", to])
        .output()
        .expect("the binary runs")
}

/// Issue 38, item 4: `import` could not target an external registry, so a
/// move to another registry got new IDs. Into a running `schemaops
/// registry` (IMPORT mode, as Confluent has), every ID, version, soft
/// delete, level and mode is kept; a second run changes nothing; an
/// interrupted run finishes on the next one.
#[tokio::test]
async fn an_import_into_a_running_registry_keeps_ids_versions_and_settings_and_resumes() {
    let steps = population();
    let partial_data = tempfile::tempdir().unwrap();
    let partial = RegistryProcess::start(partial_data.path()).await;
    populate(&partial.url, &steps[..4]).await;
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    populate(&source.url, &steps).await;
    let target_data = tempfile::tempdir().unwrap();
    let target = RegistryProcess::start(target_data.path()).await;

    // An interrupted run: only what the smaller registry holds.
    let first = import_into_registry(&partial.url, &target.url);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).starts_with("3 versions copied"),
        "{}",
        text(&first.stdout)
    );

    let next = import_into_registry(&source.url, &target.url);
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    assert!(
        text(&next.stdout).starts_with("7 versions copied, 3 already present, 2 soft-deleted"),
        "{}",
        text(&next.stdout)
    );
    assert!(
        text(&next.stderr).contains("7/7 versions copied"),
        "{}",
        text(&next.stderr)
    );
    assert_eq!(snapshot(&target.url).await, snapshot(&source.url).await);

    let again = import_into_registry(&source.url, &target.url);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(
        text(&again.stdout),
        "0 versions copied, 10 already present, 0 soft-deleted, 0 levels and modes set; nothing changed\n"
    );
}

/// Issue 38, item 4: a target without IMPORT mode (Karapace answers `PUT
/// /mode` with 405) cannot keep IDs; the import is refused at its first
/// write, saying so, with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_into_a_registry_without_import_mode_is_refused_with_nothing_written() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    populate(&source.url, &population()).await;
    let target_data = tempfile::tempdir().unwrap();
    let target = RegistryDouble::start(target_data.path()).await;
    *target.faults.replies.lock().unwrap() = vec![Reply::json(
        reqwest::Method::PUT,
        "/mode",
        405,
        json!({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}),
    )];
    let (refused, _) = run_measured(vec![
        "--from".into(),
        source.url.clone().into(),
        "--to-registry-url".into(),
        target.url.clone().into(),
    ])
    .await;
    let message = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{message}");
    assert!(
        message.contains("refused IMPORT mode") && message.contains("nothing was written"),
        "{message}"
    );
    assert_eq!(target.backend_get("/subjects?deleted=true").await.1, json!([]));
    assert_eq!(target.backend_get("/mode").await.1, json!({"mode": "READWRITE"}));
}

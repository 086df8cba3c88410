//! `schemaops export` as a user runs it (issue 18): a registry with
//! references in all three formats, subject levels and modes and a deleted
//! version, exported and applied into an empty registry, which then holds
//! the same subjects, texts, levels, modes and references; stable output;
//! object names; and an unreachable registry refused with nothing written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

mod support;

use support::registry::RegistryProcess;
use support::registry_double::RegistryDouble;

fn schemaops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .env("RUST_LOG", "error")
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .output()
        .expect("the schemaops binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Sends `body` with `method` to the registry and returns the answer's JSON.
async fn call(method: reqwest::Method, url: &str, route: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = support::http_client().request(method, format!("{url}{route}"));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .json(&body);
    }
    let answer = request.send().await.unwrap_or_else(|error| panic!("{route}: {error}"));
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap_or(Value::Null))
}

async fn register(url: &str, subject: &str, body: Value) {
    let route = format!("/subjects/{subject}/versions");
    let (status, answer) = call(reqwest::Method::POST, url, &route, Some(body)).await;
    assert_eq!(status, 200, "{subject}: {answer}");
}

async fn put(url: &str, route: &str, body: Value) {
    let (status, answer) = call(reqwest::Method::PUT, url, route, Some(body)).await;
    assert_eq!(status, 200, "{route}: {answer}");
}

async fn get(url: &str, route: &str) -> (u16, Value) {
    call(reqwest::Method::GET, url, route, None).await
}

fn money(extra_fields: &str) -> String {
    format!(
        r#"{{"type":"record","name":"Money","namespace":"com.acme","fields":[{{"name":"cents","type":"long"}}{extra_fields}]}}"#
    )
}

const PROTO_MONEY: &str = "syntax = \"proto3\";\npackage shop;\n\nmessage Money {\n  int64 cents = 1;\n}\n";
const PROTO_ORDER: &str = "syntax = \"proto3\";\npackage shop;\n\nimport \"shop/money.proto\";\n\nmessage Order {\n  string id = 1;\n  Money total = 2;\n}\n";

/// Fills a registry: Avro with a reference to a subject with a deleted
/// first version, JSON Schemas whose names collide, Protobuf with an
/// import, subject levels and a subject mode.
async fn fill(url: &str) {
    register(url, "com.acme.Money", json!({"schema": money("")})).await;
    let currency = r#",{"name":"currency","type":"string","default":"EUR"}"#;
    register(url, "com.acme.Money", json!({"schema": money(currency)})).await;
    let note = r#",{"name":"note","type":["null","string"],"default":null}"#;
    register(
        url,
        "com.acme.Money",
        json!({"schema": money(&format!("{currency}{note}"))}),
    )
    .await;
    let (status, _) = call(
        reqwest::Method::DELETE,
        url,
        "/subjects/com.acme.Money/versions/1",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let payment = r#"{"type":"record","name":"Payment","namespace":"com.acme","fields":[{"name":"id","type":"string"},{"name":"amount","type":"com.acme.Money"}]}"#;
    register(
        url,
        "payments-value",
        json!({"schema": payment, "references": [{"name": "com.acme.Money", "subject": "com.acme.Money", "version": 3}]}),
    )
    .await;
    put(url, "/config/payments-value", json!({"compatibility": "FULL"})).await;

    let order = r#"{"type":"object","properties":{"id":{"type":"string"}},"additionalProperties":false}"#;
    register(url, "Orders_Value", json!({"schemaType": "JSON", "schema": order})).await;
    let order2 = r#"{"type":"object","properties":{"id":{"type":"string"},"n":{"type":"integer"}},"additionalProperties":false}"#;
    register(url, "orders-value", json!({"schemaType": "JSON", "schema": order2})).await;
    put(url, "/config/Orders_Value", json!({"compatibility": "NONE"})).await;
    put(url, "/mode/orders-value", json!({"mode": "READWRITE"})).await;

    register(
        url,
        "proto-money",
        json!({"schemaType": "PROTOBUF", "schema": PROTO_MONEY}),
    )
    .await;
    register(
        url,
        "proto-order-value",
        json!({"schemaType": "PROTOBUF", "schema": PROTO_ORDER,
               "references": [{"name": "shop/money.proto", "subject": "proto-money", "version": 1}]}),
    )
    .await;
    put(
        url,
        "/config/proto-order-value",
        json!({"compatibility": "FULL_TRANSITIVE"}),
    )
    .await;
}

/// A subject's version as comparable values: type, text (parsed for Avro
/// and JSON), and references as (name, subject, referenced text).
async fn version_view(url: &str, subject: &str, version: &str) -> Value {
    let (status, answer) = get(url, &format!("/subjects/{subject}/versions/{version}")).await;
    assert_eq!(status, 200, "{subject} {version}: {answer}");
    let schema_type = answer["schemaType"].as_str().unwrap_or("AVRO").to_owned();
    let raw = answer["schema"].as_str().unwrap().to_owned();
    let schema = if schema_type == "PROTOBUF" {
        Value::String(raw)
    } else {
        serde_json::from_str(&raw).unwrap()
    };
    let mut references = Vec::new();
    for reference in answer["references"].as_array().cloned().unwrap_or_default() {
        let target = reference["subject"].as_str().unwrap().to_owned();
        let referenced = get(url, &format!("/subjects/{target}/versions/{}", reference["version"]))
            .await
            .1;
        references.push(json!([reference["name"], target, referenced["schema"]]));
    }
    json!({"schemaType": schema_type, "schema": schema, "references": references})
}

/// Everything the round trip keeps, per subject: latest version, every
/// live version in order, own level and own mode.
async fn snapshot(url: &str) -> BTreeMap<String, Value> {
    let subjects: Vec<String> = serde_json::from_value(get(url, "/subjects").await.1).unwrap();
    let mut view = BTreeMap::new();
    for subject in subjects {
        let versions: Vec<u64> =
            serde_json::from_value(get(url, &format!("/subjects/{subject}/versions")).await.1).unwrap();
        let mut history = Vec::new();
        for version in &versions {
            history.push(version_view(url, &subject, &version.to_string()).await);
        }
        let latest = version_view(url, &subject, "latest").await;
        let level = get(url, &format!("/config/{subject}")).await;
        let mode = get(url, &format!("/mode/{subject}")).await;
        view.insert(
            subject,
            json!({"latest": latest, "history": history, "level": [level.0, level.1["compatibilityLevel"]],
                   "mode": [mode.0, mode.1["mode"]]}),
        );
    }
    view
}

/// The round trip, with `--history`: every live version, in order (the
/// deleted first version of `com.acme.Money` leaves a gap the target
/// renumbers); without it, the latest versions and those referred to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_applied_to_an_empty_registry_gives_the_same_subjects_texts_levels_modes_and_references() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    fill(&source.url).await;
    let expected = snapshot(&source.url).await;
    assert_eq!(expected.len(), 6, "{expected:#?}");

    for history in [true, false] {
        let work = tempfile::tempdir().unwrap();
        let out = work.path().join("out");
        let mut args = vec!["export", "--registry-url", &source.url, "--out", path(&out)];
        if history {
            args.push("--history");
        }
        let exported = schemaops(&args);
        assert_eq!(exported.status.code(), Some(0), "{}", text(&exported.stderr));

        let index = std::fs::read_to_string(out.join("index.md")).unwrap();
        assert!(index.contains("Global compatibility level: BACKWARD"), "{index}");
        assert!(
            index.contains("| `com.acme.Money` | [com.acme.money.yaml](com.acme.money.yaml) |"),
            "{index}"
        );
        assert!(
            index.contains("| 2, 3 | 1, 2 | 2, 3 | 1 | - | - |") == history,
            "{index}"
        );

        let target = work.path().join("target");
        let applied = schemaops(&["apply", "--data", path(&target), path(&out)]);
        assert_eq!(
            applied.status.code(),
            Some(0),
            "{}{}",
            text(&applied.stdout),
            text(&applied.stderr)
        );
        let served = RegistryProcess::start(&target).await;
        let actual = snapshot(&served.url).await;
        for (subject, want) in &expected {
            let got = &actual[subject];
            assert_eq!(got["latest"], want["latest"], "{subject} (history {history})");
            assert_eq!(got["level"], want["level"], "{subject}");
            if subject == "orders-value" {
                // Its own READWRITE equals the global mode, so it is taken as
                // inherited and not exported (issue 38, item 3).
                assert_eq!(want["mode"], json!([200, "READWRITE"]));
                assert_eq!(got["mode"][0], 404, "{subject}: {}", got["mode"]);
            } else {
                assert_eq!(got["mode"], want["mode"], "{subject}");
            }
            if history {
                assert_eq!(got["history"], want["history"], "{subject}");
            }
        }
        assert_eq!(actual.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    }
}

/// Issue 38, item 3: from a registry that answers as Karapace does
/// (`deletedOnly` ignored, no `deleted` field, a subject's mode is the
/// global one), `index.md` lists as soft-deleted only the versions that
/// are, and no file pins a mode the source does not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_from_a_karapace_like_registry_lists_only_soft_deleted_versions_and_pins_no_mode() {
    let data = tempfile::tempdir().unwrap();
    let double = RegistryDouble::start(data.path()).await;
    fill(&double.url).await;
    double.faults.karapace_deleted_only.store(true, Ordering::SeqCst);
    double.faults.karapace_modes.store(true, Ordering::SeqCst);

    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let exported = schemaops(&[
        "export",
        "--registry-url",
        &double.url,
        "--history",
        "--out",
        path(&out),
    ]);
    assert_eq!(exported.status.code(), Some(0), "{}", text(&exported.stderr));
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    // live 2, 3; soft-deleted 1 only; no level; no mode of its own.
    assert!(index.contains("| 2, 3 | 1, 2 | 2, 3 | 1 | - | - |"), "{index}");
    for entry in std::fs::read_dir(&out).unwrap() {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|ext| ext != "yaml") {
            continue;
        }
        let file = std::fs::read_to_string(entry.path()).unwrap();
        assert!(!file.contains("mode: "), "{}: {file}", entry.path().display());
    }
    let payments = std::fs::read_to_string(out.join("payments-value.yaml")).unwrap();
    assert!(
        payments.contains("compatibility: FULL"),
        "levels are still exported: {payments}"
    );
}

/// Two exports of an unchanged registry are byte-identical; a second
/// export replaces the first; the colliding names get hash suffixes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_export_is_byte_identical_and_colliding_names_get_suffixes() {
    let data = tempfile::tempdir().unwrap();
    {
        let source = RegistryProcess::start(data.path()).await;
        fill(&source.url).await;
    }
    let work = tempfile::tempdir().unwrap();
    let first = work.path().join("first");
    let second = work.path().join("second");
    for out in [&first, &second, &first] {
        let exported = schemaops(&["export", "--data", path(data.path()), "--history", "--out", path(out)]);
        assert_eq!(exported.status.code(), Some(0), "{}", text(&exported.stderr));
    }
    let files = |folder: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                (
                    entry.file_name().to_string_lossy().into_owned(),
                    std::fs::read(entry.path()).unwrap(),
                )
            })
            .collect()
    };
    let names: Vec<String> = files(&first).into_keys().collect();
    assert_eq!(files(&first), files(&second));
    assert_eq!(names.len(), 7, "{names:?}");
    let suffixed: Vec<&String> = names.iter().filter(|name| name.starts_with("orders-value-")).collect();
    assert_eq!(suffixed.len(), 2, "{names:?}");
    let orders = std::fs::read_to_string(work.path().join("first").join(suffixed[0])).unwrap();
    assert!(orders.contains("subject: "), "{orders}");
    let money = std::fs::read_to_string(first.join("com.acme.money.yaml")).unwrap();
    assert_eq!(money.matches("kind: Schema").count(), 2, "two live versions: {money}");

    // `--subjects` globs, plus every subject the selected ones refer to.
    let some = work.path().join("some");
    let selected = schemaops(&[
        "export",
        "--data",
        path(data.path()),
        "--subjects",
        "payments-*",
        "--subjects",
        "proto-o?der-value",
        "--namespace",
        "team-a",
        "--out",
        path(&some),
    ]);
    assert_eq!(selected.status.code(), Some(0), "{}", text(&selected.stderr));
    let names: Vec<String> = files(&some).into_keys().collect();
    assert_eq!(
        names,
        [
            "com.acme.money.yaml",
            "index.md",
            "payments-value.yaml",
            "proto-money.yaml",
            "proto-order-value.yaml"
        ]
    );
    let index = std::fs::read_to_string(some.join("index.md")).unwrap();
    assert!(index.contains("| `proto-money` (referenced) |"), "{index}");
    let payments = std::fs::read_to_string(some.join("payments-value.yaml")).unwrap();
    assert!(payments.contains("namespace: team-a"), "{payments}");
    assert!(
        payments.contains("kind: SubjectConfig") && payments.contains("compatibility: FULL"),
        "{payments}"
    );
    assert!(
        payments.contains("subject: com.acme.Money\n    version: 1"),
        "version 3 of the source is the first exported: {payments}"
    );
}

/// An unreachable registry exits 2 naming it, and `--out` is not created;
/// an `--out` holding something else is refused and left alone.
#[test]
fn an_unreachable_registry_or_a_foreign_out_folder_is_refused_with_nothing_written() {
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let refused = schemaops(&[
        "export",
        "--registry-url",
        "http://127.0.0.1:9",
        "--registry-timeout-seconds",
        "1",
        "--out",
        path(&out),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("http://127.0.0.1:9"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "nothing written");

    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let data = work.path().join("data");
    let applied = schemaops(&["apply", "--data", path(&data), "examples/evolution/10-rsvp-config.yaml"]);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stderr));
    let foreign = schemaops(&["export", "--data", path(&data), "--out", path(&out)]);
    assert_eq!(foreign.status.code(), Some(2));
    assert!(text(&foreign.stderr).contains("notes.txt"), "{}", text(&foreign.stderr));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

/// Issue 37, item 7: `x`, `X` and `x-2d711642` gave 11 files for 12
/// subjects and exit 0 (one file overwrote another), and a 255-character
/// subject failed the whole export with "File name too long". Every subject
/// now has its own file (distinct even case-folded, at most 255 bytes),
/// `index.md` maps each subject to it, and `apply` of the folder gives back
/// every subject.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjects_whose_names_collide_or_are_too_long_for_a_file_each_get_a_file_of_their_own() {
    let source_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    fill(&source.url).await;
    let topic = "t".repeat(249);
    let long_value = format!("{topic}-value");
    let long_key = format!("{topic}-key");
    assert_eq!(long_value.len(), 255);
    let extra = ["x", "X", "x-2d711642", &long_value, &long_key, "aux"];
    for (n, subject) in extra.iter().enumerate() {
        let schema = format!(r#"{{"type":"record","name":"R{n}","fields":[{{"name":"f","type":"int"}}]}}"#);
        register(&source.url, subject, json!({ "schema": schema })).await;
    }
    let subjects: Vec<String> = serde_json::from_value(get(&source.url, "/subjects").await.1).unwrap();
    assert_eq!(subjects.len(), 12, "{subjects:?}");

    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let exported = schemaops(&["export", "--registry-url", &source.url, "--out", path(&out)]);
    assert_eq!(exported.status.code(), Some(0), "{}", text(&exported.stderr));
    assert!(
        text(&exported.stdout).starts_with("exported 12 subjects"),
        "{}",
        text(&exported.stdout)
    );

    let files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 13, "12 subjects and the index: {files:?}");
    let folded: std::collections::BTreeSet<String> = files.iter().map(|name| name.to_lowercase()).collect();
    assert_eq!(
        folded.len(),
        files.len(),
        "distinct on a case-insensitive file system: {files:?}"
    );
    assert!(files.iter().all(|name| name.len() <= 255), "{files:?}");

    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    let mut mapped = BTreeMap::new();
    for row in index.lines().filter(|line| line.starts_with("| `")) {
        let subject = row[3..].split('`').next().unwrap().to_owned();
        let file = row.split('[').nth(1).unwrap().split(']').next().unwrap().to_owned();
        mapped.insert(subject, file);
    }
    assert_eq!(
        mapped.keys().collect::<Vec<_>>(),
        subjects.iter().collect::<Vec<_>>(),
        "{index}"
    );
    for (subject, file) in &mapped {
        let manifest = std::fs::read_to_string(out.join(file)).unwrap_or_else(|error| panic!("{file}: {error}"));
        let documents: Vec<Value> = serde_saphyr::from_multiple(&manifest).unwrap();
        assert!(
            documents
                .iter()
                .all(|document| document["spec"]["subject"] == subject.as_str()),
            "{file} holds `{subject}`: {manifest}"
        );
    }
    assert!(
        mapped[&long_value].starts_with("tttttttttt"),
        "readable: {}",
        mapped[&long_value]
    );
    assert_ne!(mapped[&long_value], mapped[&long_key]);

    let target = work.path().join("target");
    let applied = schemaops(&["apply", "--data", path(&target), path(&out)]);
    assert_eq!(
        applied.status.code(),
        Some(0),
        "{}{}",
        text(&applied.stdout),
        text(&applied.stderr)
    );
    let served = RegistryProcess::start(&target).await;
    let restored: Vec<String> = serde_json::from_value(get(&served.url, "/subjects").await.1).unwrap();
    assert_eq!(restored, subjects);
}

//! `schemaops apply` as a user runs it (issue 6): the examples, edits across
//! runs, output formats, and bad manifests refused before anything is stored;
//! and with `--registry-url`, applied to a running registry over HTTP.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;

fn apply(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .arg("apply")
        .arg("--data")
        .arg(data)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn schema(name: &str, subject: &str, fields: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\nspec:\n  subject: {subject}\n  \
         schema: '{{\"type\":\"record\",\"name\":\"R\",\"fields\":[{fields}]}}'\n"
    )
}

/// The objects printed with `-o json`.
fn items(output: &Output) -> Vec<Value> {
    let list: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", text(&output.stdout)));
    list["items"].as_array().unwrap().clone()
}

fn ready(object: &Value) -> (String, String) {
    let condition = object["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    (
        condition["status"].as_str().unwrap().to_owned(),
        condition["reason"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn the_examples_register_what_is_compatible_and_explain_every_refusal() {
    let data = tempfile::tempdir().unwrap();
    let output = apply(data.path(), &["examples/evolution/"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    let row = |name: &str| {
        table
            .lines()
            .find(|line| line.split_whitespace().nth(2) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // KIND NAMESPACE NAME SUBJECT VERSION ID READY REASON
    assert_eq!(row("platonic-solid")[4..], ["2", "2", "False", "IncompatibleSchema"]);
    assert_eq!(
        row("rsvp")[6..],
        ["True", "Configured"],
        "the SubjectConfig row comes first"
    );
    assert_eq!(row("order-closed")[6..], ["True", "Registered"]);
    assert_eq!(row("shop-money")[6..], ["True", "Registered"]);
    for (name, explanation) in [
        ("platonic-solid", "READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3"),
        ("rsvp", "under FORWARD"),
        (
            "order-open",
            "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at /properties/venue",
        ),
        ("order-proto", "FIELD_SCALAR_KIND_CHANGED at /Order/7"),
    ] {
        assert!(
            table.contains(&format!("Schema default/{name} was not applied")),
            "{table}"
        );
        assert!(table.contains(explanation), "{explanation}:\n{table}");
    }
    // The registry the run wrote is the one `schemaops registry --data` serves.
    assert!(data.path().join("registry.db").exists() && data.path().join("objects.json").exists());
}

#[test]
fn a_later_run_is_an_edit_of_the_same_object() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("orders.yaml");
    std::fs::write(&file, schema("orders", "orders-value", r#"{"name":"a","type":"int"}"#)).unwrap();
    let first = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(items(&first)[0]["status"]["version"], 1);

    std::fs::write(&file, schema("orders", "orders-value", r#"{"name":"a","type":"long"}"#)).unwrap();
    let second = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    let object = &items(&second)[0];
    assert_eq!(object["metadata"]["generation"], 2);
    assert_eq!(object["status"]["version"], 2);
    assert_eq!(object["status"]["observedGeneration"], 2);

    // The same file again changes nothing: no new generation, no new version.
    let third = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    let object = &items(&third)[0];
    assert_eq!(
        (
            object["metadata"]["generation"].clone(),
            object["status"]["version"].clone()
        ),
        (2.into(), 2.into())
    );
}

#[test]
fn yaml_output_is_a_document_stream_of_whole_objects() {
    let data = tempfile::tempdir().unwrap();
    let output = apply(
        data.path(),
        &[
            "-o",
            "yaml",
            "examples/evolution/00-platonic-solid-v1.yaml",
            "examples/evolution/10-rsvp-config.yaml",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text(&output.stdout)).unwrap();
    assert_eq!(documents.len(), 2);
    for document in &documents {
        assert_eq!(document["apiVersion"], "schemaops.dev/v1alpha1");
        assert!(document["metadata"]["uid"].is_string() && document["metadata"]["creationTimestamp"].is_string());
        assert_eq!(ready(document).0, "True", "{document:#}");
    }
}

#[test]
fn an_invalid_schema_is_refused_with_the_parsers_position() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("bad.yaml");
    std::fs::write(&file, schema("bad", "bad-value", r#"{"name":"a","type":"integer"}"#)).unwrap();
    let output = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let object = &items(&output)[0];
    assert_eq!(ready(object), ("False".to_owned(), "InvalidSchema".to_owned()));
    let message = object["status"]["conditions"][0]["message"].as_str().unwrap();
    assert!(message.contains("/fields/0/type"), "{message}");
}

#[test]
fn a_bad_manifest_names_its_file_and_document_and_nothing_is_stored() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("two.yaml");
    let second =
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: broken\nspec:\n  schema: '\"int\"'\n";
    std::fs::write(
        &file,
        format!(
            "{}---\n{second}",
            schema("fine", "fine-value", r#"{"name":"a","type":"int"}"#)
        ),
    )
    .unwrap();
    let output = apply(data.path(), &[file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = text(&output.stderr);
    assert!(
        message.contains("two.yaml (document 2)") && message.contains("subject"),
        "{message}"
    );
    assert!(!data.path().join("objects.json").exists(), "nothing is stored");

    for (name, body, expected) in [
        (
            "kind.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
            "no manifests found in",
        ),
        (
            "typo.yaml",
            "apiVersion: schemaops.dev/v1alpha1\nkind: Shema\nmetadata:\n  name: s\n",
            "Shema is not a schemaops kind (did you mean Schema?)",
        ),
        (
            "both.yaml",
            "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: b\nspec:\n  subject: s\n  schema: x\n  schemaFrom:\n    configMapKeyRef: {name: c, key: k}\n",
            "exactly one of schema and schemaFrom",
        ),
        ("syntax.yaml", "kind: [unclosed\n", "is not valid YAML"),
    ] {
        let file = folder.path().join(name);
        std::fs::write(&file, body).unwrap();
        let output = apply(data.path(), &[file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        assert!(
            text(&output.stderr).contains(expected),
            "{name}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn the_subject_of_an_applied_schema_cannot_change() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("orders.yaml");
    std::fs::write(&file, schema("orders", "orders-value", r#"{"name":"a","type":"int"}"#)).unwrap();
    assert_eq!(apply(data.path(), &[file.to_str().unwrap()]).status.code(), Some(0));
    let before = std::fs::read(data.path().join("objects.json")).unwrap();
    std::fs::write(&file, schema("orders", "other-value", r#"{"name":"a","type":"int"}"#)).unwrap();
    let output = apply(data.path(), &[file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("spec.subject is immutable"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        std::fs::read(data.path().join("objects.json")).unwrap(),
        before,
        "nothing changed"
    );
}

#[test]
fn a_second_schema_for_one_subject_is_a_conflict_naming_the_first() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("both.yaml");
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            schema("a-first", "shared", r#"{"name":"a","type":"int"}"#),
            schema("b-second", "shared", r#"{"name":"a","type":"string"}"#)
        ),
    )
    .unwrap();
    let output = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let objects = items(&output);
    assert_eq!(ready(&objects[0]).0, "True");
    assert_eq!(ready(&objects[1]), ("False".to_owned(), "SubjectConflict".to_owned()));
    assert!(
        objects[1]["status"]["conditions"][0]["message"]
            .as_str()
            .unwrap()
            .contains("default/a-first")
    );
}

/// GET `path` on the registry as JSON.
async fn served(url: &str, path: &str) -> Value {
    let answer = support::http_client()
        .get(format!("{url}{path}"))
        .send()
        .await
        .unwrap_or_else(|error| panic!("GET {path}: {error}"));
    assert!(answer.status().is_success(), "GET {path}: {}", answer.status());
    answer.json().await.unwrap()
}

/// `--registry-url`: the examples applied to a running `schemaops registry`
/// give the verdicts they give on the embedded registry, and the registry
/// then serves exactly the versions, IDs and levels the objects report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_registry_url_the_examples_are_applied_to_that_registry() {
    let served_data = tempfile::tempdir().unwrap();
    let registry = support::registry::RegistryProcess::start(served_data.path()).await;
    let data = tempfile::tempdir().unwrap();
    let remote = apply(
        data.path(),
        &["-o", "json", "--registry-url", &registry.url, "examples/evolution/"],
    );
    assert_eq!(remote.status.code(), Some(1), "{}", text(&remote.stderr));
    let embedded_data = tempfile::tempdir().unwrap();
    let embedded = apply(embedded_data.path(), &["-o", "json", "examples/evolution/"]);
    let outcome = |object: &Value| {
        (
            object["kind"].clone(),
            object["metadata"]["name"].clone(),
            ready(object),
            object["status"]["version"].clone(),
        )
    };
    assert_eq!(
        items(&remote).iter().map(outcome).collect::<Vec<_>>(),
        items(&embedded).iter().map(outcome).collect::<Vec<_>>(),
        "the same verdicts as on the embedded registry"
    );
    assert!(data.path().join("objects.json").exists());
    assert!(
        !data.path().join("registry.db").exists(),
        "the data folder keeps only the objects"
    );

    // Every registered Schema is the latest version of its subject, with its ID;
    // and the registry holds no other subject.
    let mut expected = BTreeMap::new();
    for object in items(&remote).iter().filter(|o| o["kind"] == "Schema") {
        let subject = object["spec"]["subject"].as_str().unwrap().to_owned();
        let status = &object["status"];
        if let Some(version) = status["version"].as_u64() {
            expected.insert(subject, (version, status["id"].as_u64().unwrap()));
        }
    }
    assert!(expected.len() >= 5, "the examples register most subjects: {expected:?}");
    let mut subjects: Vec<String> = serde_json::from_value(served(&registry.url, "/subjects").await).unwrap();
    subjects.sort();
    assert_eq!(subjects, expected.keys().cloned().collect::<Vec<_>>());
    for (subject, (version, id)) in &expected {
        let versions = served(&registry.url, &format!("/subjects/{subject}/versions")).await;
        assert_eq!(
            versions.as_array().unwrap().last(),
            Some(&Value::from(*version)),
            "{subject}"
        );
        let latest = served(&registry.url, &format!("/subjects/{subject}/versions/latest")).await;
        assert_eq!(latest["id"], *id, "{subject}");
    }
    // The platonic solid's v2 is registered and its refused v3 is not.
    assert_eq!(
        served(&registry.url, "/subjects/platonic-solid-value/versions").await,
        serde_json::json!([1, 2])
    );
    let level = served(&registry.url, "/config/rsvp-value").await;
    assert_eq!(level["compatibilityLevel"], "FORWARD", "the SubjectConfig's level");
}

/// An unreachable `--registry-url` is an error naming it, and the objects
/// stored by earlier runs are left as they were.
#[test]
fn an_unreachable_registry_url_is_an_error_and_nothing_is_stored() {
    let data = tempfile::tempdir().unwrap();
    let first = apply(data.path(), &["examples/evolution/10-rsvp-config.yaml"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let before = std::fs::read(data.path().join("objects.json")).unwrap();
    // Port 9 (discard) has no listener on a test machine.
    let url = "http://127.0.0.1:9";
    let output = apply(
        data.path(),
        &[
            "--registry-url",
            url,
            "--registry-timeout-seconds",
            "1",
            "examples/evolution/11-rsvp-v1.yaml",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    let message = text(&output.stderr);
    assert!(
        message.contains(&format!("nothing was applied to {url}")) && message.contains("unavailable"),
        "{message}"
    );
    assert_eq!(std::fs::read(data.path().join("objects.json")).unwrap(), before);

    let fresh = tempfile::tempdir().unwrap();
    let folder = fresh.path().join("data");
    let output = apply(
        &folder,
        &[
            "--registry-url",
            url,
            "--registry-timeout-seconds",
            "1",
            "examples/evolution/",
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        !folder.exists(),
        "no data folder is made for a run that applied nothing"
    );
}

/// Issue 36 item 4: reverting a Schema in git to its v1 text after schemaops registered v2 for
/// it is a revert, not drift: v1 is found in the subject, v2 stays the latest, and both `check`
/// and `apply` say so (on today's main the second apply reported "version 2, registered outside
/// schemaops").
#[test]
fn a_revert_to_an_own_earlier_version_is_reported_as_a_revert_not_drift() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("orders.yaml");
    let v1 = r#"{"name":"a","type":"int"}"#;
    let v2 = r#"{"name":"a","type":"int"},{"name":"b","type":"int","default":0}"#;
    for fields in [v1, v2] {
        std::fs::write(&file, schema("orders", "orders-value", fields)).unwrap();
        let output = apply(data.path(), &[file.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    }
    std::fs::write(&file, schema("orders", "orders-value", v1)).unwrap();

    let check = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["check", "-o", "json", "--data"])
        .arg(data.path())
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(report["objects"][0]["outcome"], "revert", "{report:#}");
    assert_eq!(report["objects"][0]["drift"], Value::Null, "{report:#}");

    let table = apply(data.path(), &[file.to_str().unwrap()]);
    assert_eq!(table.status.code(), Some(0), "{}", text(&table.stderr));
    let printed = text(&table.stdout);
    assert!(!printed.contains("RegisteredOutsideSchemaops"), "{printed}");
    assert!(printed.contains("Reverted"), "{printed}");
    assert!(
        printed.contains("is a revert") && printed.contains("Version 2, also this Schema's"),
        "{printed}"
    );

    // A second run changes nothing, and still is no drift; the status keeps both versions as its own.
    let again = apply(data.path(), &["-o", "json", file.to_str().unwrap()]);
    let object = &items(&again)[0];
    assert_eq!(ready(object), ("True".to_owned(), "Reverted".to_owned()), "{object:#}");
    assert_eq!(object["status"]["version"], 1);
    assert_eq!(object["status"]["ownVersions"], serde_json::json!([1, 2]));
    assert!(
        !object["status"]["conditions"].to_string().contains("Drifted"),
        "{object:#}"
    );
}

/// `examples/json-references/` (issue 39, item 1): a JSON Schema whose
/// `$ref`s name `spec.references` registers; the same text moved to a newer
/// version of the referenced subject is refused for the change inside it,
/// with the path of the place that refers to it; `check` predicts the same.
#[test]
fn json_schema_references_in_manifests_are_followed_by_apply_and_check() {
    let data = tempfile::tempdir().unwrap();
    let output = apply(data.path(), &["examples/json-references/"]);
    let table = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{table}{}", text(&output.stderr));
    let row = |name: &str| {
        table
            .lines()
            .find(|line| line.starts_with("Schema ") && line.split_whitespace().nth(2) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(row("address")[4..], ["2", "2", "True", "Registered"]);
    assert_eq!(row("customer")[4..], ["1", "3", "False", "IncompatibleSchema"]);
    let breaking = "MAX_LENGTH_DECREASED at /properties/billing_zip/maxLength";
    assert!(table.contains(breaking), "{table}");

    let check = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["check", "examples/json-references/"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .output()
        .expect("the binary runs");
    let predicted = text(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{predicted}{}", text(&check.stderr));
    assert!(
        predicted.contains("would be rejected (IncompatibleSchema) after registering version 1"),
        "{predicted}"
    );
    assert!(predicted.contains(breaking), "{predicted}");
}

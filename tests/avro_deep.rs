//! Avro schemas nested deeper than serde_json's 128-level limit (issue 14):
//! hundreds of nested records register, check and give the right verdict
//! through the registry's HTTP API, `schemaops compat` and `schemaops
//! check`, on the 2 MiB stacks of tokio's threads (or a main thread cut to
//! 2 MiB), and a schema past the nesting limit is refused with 42201 /
//! exit 2 naming the limit, never a stack overflow.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use schemaops::compat::avro::{AvroSchema, MAX_NESTING};
use schemaops::compat::{Checker, Format, Limits, Mode, Reference, SchemaText, check};
use schemaops::registry::api::{ApiState, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::embedded::store::Store;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// A tokio worker's stack, and what the registry's blocking threads get.
const SMALL_STACK: usize = 2 * 1024 * 1024;

/// `depth` records, each holding the next in its field `next` (through a
/// union with `null` when `union` is set), the innermost with the fields
/// `innermost`. A record costs three levels of JSON nesting, four through
/// a union (the innermost one three).
fn nested(depth: usize, union: bool, innermost: &str) -> String {
    let mut text = format!(r#"{{"type":"record","name":"R{depth}","fields":[{innermost}]}}"#);
    for level in (1..depth).rev() {
        let field = if union {
            format!(r#"{{"name":"next","type":["null",{text}],"default":null}}"#)
        } else {
            format!(r#"{{"name":"next","type":{text}}}"#)
        };
        text = format!(r#"{{"type":"record","name":"R{level}","fields":[{field}]}}"#);
    }
    text
}

const V1: &str = r#"{"name":"a","type":"int"}"#;
/// A field with a default added: BACKWARD compatible.
const V2: &str = r#"{"name":"a","type":"int"},{"name":"b","type":"string","default":""}"#;
/// `int` to `string`: not BACKWARD compatible.
const BREAKING: &str = r#"{"name":"a","type":"string"}"#;

/// The deepest schema accepted: 333 records and `{"type":"int"}`, 1,000 levels.
fn deepest() -> String {
    let text = nested(333, false, r#"{"name":"a","type":{"type":"int"}}"#);
    assert_eq!(depth_of(&text), MAX_NESTING);
    text
}

/// 334 records: 1,002 levels.
fn too_deep() -> String {
    let text = nested(334, false, V1);
    assert!(depth_of(&text) > MAX_NESTING);
    text
}

/// The nesting depth of a JSON text without strings holding brackets.
fn depth_of(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for byte in text.bytes() {
        match byte {
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
    }
    deepest
}

/// Runs `test` on a thread with a 2 MiB stack, so that an overflow aborts the
/// test instead of hiding in the 8 MiB main thread.
fn on_small_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

struct Api {
    router: Router,
    _dir: tempfile::TempDir,
}

impl Api {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("registry.db")).unwrap());
        let registry = EmbeddedRegistry::open(store, Checker::new(Limits::default()))
            .await
            .unwrap();
        let state = ApiState {
            registry: Arc::new(registry),
            body_limit: 8 * 1024 * 1024,
            auth: None,
            policies: None,
            admission: None,
        };
        Self {
            router: router(state),
            _dir: dir,
        }
    }

    async fn post(&self, uri: &str, schema: &str) -> (StatusCode, Value) {
        let request = Request::builder()
            .method("POST")
            .uri(uri)
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(Body::from(json!({ "schema": schema }).to_string()))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }
}

/// A runtime whose every thread (the test's own, and the blocking pool the
/// registry parses and checks on) has a 2 MiB stack.
fn small_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_stack_size(SMALL_STACK)
        .build()
        .unwrap()
}

#[test]
fn two_hundred_nested_records_register_and_check_through_the_http_api() {
    on_small_stack(|| {
        small_runtime().block_on(async {
            let api = Api::new().await;
            for (subject, union) in [("plain-value", false), ("unions-value", true)] {
                let v1 = nested(200, union, V1);
                assert!(depth_of(&v1) > 590, "{}", depth_of(&v1));
                let registered = api.post(&format!("/subjects/{subject}/versions"), &v1).await;
                assert_eq!(registered.0, StatusCode::OK, "{subject}: {}", registered.1);

                let v2 = nested(200, union, V2);
                let check = format!("/compatibility/subjects/{subject}/versions/latest?verbose=true");
                let answer = api.post(&check, &v2).await;
                assert_eq!(answer.1["is_compatible"], true, "{subject}: {}", answer.1);
                let registered = api.post(&format!("/subjects/{subject}/versions"), &v2).await;
                assert_eq!(registered.0, StatusCode::OK, "{subject}: {}", registered.1);

                let breaking = nested(200, union, BREAKING);
                let answer = api.post(&check, &breaking).await;
                assert_eq!(answer.1["is_compatible"], false, "{subject}: {}", answer.1);
                let message = answer.1["messages"][0].as_str().unwrap();
                let expected = if union { "MISSING_UNION_BRANCH" } else { "TYPE_MISMATCH" };
                assert!(message.contains(expected), "{subject}: {message}");
                assert!(message.contains("R200"), "names the innermost record: {message}");
                // Not every one of the 200 unions explained, each with its path: linear, not quadratic.
                assert!(message.len() < 10_000, "{} bytes", message.len());
                let refused = api.post(&format!("/subjects/{subject}/versions"), &breaking).await;
                assert_eq!(refused.0, StatusCode::CONFLICT, "{subject}: {}", refused.1);
            }

            let deepest = api.post("/subjects/deepest-value/versions", &deepest()).await;
            assert_eq!(deepest.0, StatusCode::OK, "{}", deepest.1);
            let refused = api.post("/subjects/deep-value/versions", &too_deep()).await;
            assert_eq!(refused.0, StatusCode::UNPROCESSABLE_ENTITY);
            assert_eq!(refused.1["error_code"], 42201);
            let message = refused.1["message"].as_str().unwrap();
            assert!(message.contains("nests more than 1000 levels deep"), "{message}");
        });
    });
}

/// Runs the binary with its main thread's stack cut to 2 MiB (`ulimit -s`).
fn schemaops_on_small_stack(current_dir: &Path, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -s 2048 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(current_dir)
        .env_remove("SCHEMAOPS_DATA")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn schemaops_compat_gives_deep_schemas_their_verdicts_and_refuses_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, schema: String| {
        std::fs::write(dir.path().join(name), schema).unwrap();
        name.to_owned()
    };
    let files = [
        write("v1.avsc", nested(200, true, V1)),
        write("v2.avsc", nested(200, true, V2)),
        write("breaking.avsc", nested(200, true, BREAKING)),
        write("deepest.avsc", deepest()),
        write("too-deep.avsc", too_deep()),
    ];
    let compat = |previous: &str, candidate: &str| {
        schemaops_on_small_stack(
            dir.path(),
            &[
                "compat",
                "--mode",
                "FULL",
                "--previous",
                previous,
                "--candidate",
                candidate,
            ],
        )
    };
    let [v1, v2, breaking, deepest, too_deep] = &files;
    for (previous, candidate, expected) in [
        (v1, v2, 0),
        (v1, breaking, 1),
        (deepest, deepest, 0),
        (v1, too_deep, 2),
        (too_deep, v1, 2),
    ] {
        let output = compat(previous, candidate);
        assert_eq!(
            output.status.code(),
            Some(expected),
            "{previous} -> {candidate}: {}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
        if expected == 2 {
            assert!(
                text(&output.stderr).contains("nests more than 1000 levels deep"),
                "{}",
                text(&output.stderr)
            );
        }
    }
}

fn manifest(schema: &str) -> String {
    let quoted = serde_json::to_string(schema).unwrap();
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: deep\nspec:\n  subject: deep-value\n  \
         schema: {quoted}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemaops_check_against_a_registry_gives_deep_schemas_their_verdicts() {
    let data = tempfile::tempdir().unwrap();
    let registry = support::registry::RegistryProcess::start(data.path()).await;
    let registered = support::http_client()
        .post(format!("{}/subjects/deep-value/versions", registry.url))
        .json(&json!({ "schema": nested(200, true, V1) }))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), 200, "{}", registered.text().await.unwrap());

    let folder = tempfile::tempdir().unwrap();
    let manifest_file = folder.path().join("deep.yaml");
    let url = registry.url.clone();
    let check = move |schema: String| {
        std::fs::write(&manifest_file, manifest(&schema)).unwrap();
        schemaops_on_small_stack(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &["check", "--registry-url", &url, manifest_file.to_str().unwrap()],
        )
    };
    let check = Arc::new(check);
    for (schema, expected) in [
        (nested(200, true, V2), 0),
        (nested(200, true, BREAKING), 1),
        // `check` reports an invalid schema as a rejection, with the reason.
        (too_deep(), 1),
    ] {
        let check = Arc::clone(&check);
        let output = tokio::task::spawn_blocking(move || check(schema)).await.unwrap();
        let shown = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(expected), "{shown}");
        if expected == 1 {
            assert!(shown.contains("would be rejected"), "{shown}");
        }
    }
    let output = check(too_deep());
    let shown = text(&output.stdout);
    assert!(
        shown.contains("InvalidSchema") && shown.contains("nests more than 1000 levels deep"),
        "{shown}"
    );
}

/// A field default nested almost to the limit: its check against the type,
/// the canonical form and the drop of the parsed schema all go as deep.
#[test]
fn a_default_nested_to_the_limit_is_checked_and_written_canonically() {
    on_small_stack(|| {
        let levels = 497;
        let default = format!("{}{}", r#"{"c":["#.repeat(levels), "]}".repeat(levels));
        let tree = |default: &str| {
            format!(
                r#"{{"type":"record","name":"W","fields":[{{"name":"t","type":{{"type":"record","name":"T","fields":[{{"name":"c","type":{{"type":"array","items":"T"}},"default":[]}}]}},"default":{default}}}]}}"#
            )
        };
        let text = tree(&default);
        assert_eq!(depth_of(&text), 997);
        let schema = AvroSchema::parse(&SchemaText::new(text.clone())).unwrap();
        let canonical = schema.canonical();
        assert_eq!(
            AvroSchema::parse(&SchemaText::new(canonical.clone()))
                .unwrap()
                .canonical(),
            canonical
        );
        let report = check(
            Format::Avro,
            Mode::FullTransitive,
            &SchemaText::new(text),
            &[SchemaText::new(canonical)],
        )
        .unwrap();
        assert!(report.is_compatible());

        // The innermost array holding a number, not a `T`: refused, naming the field.
        let wrong = format!("{}1{}", r#"{"c":["#.repeat(levels), "]}".repeat(levels));
        let error = AvroSchema::parse(&SchemaText::new(tree(&wrong))).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("the default of field `t` does not match its type"),
            "{error}"
        );
    });
}

/// Named types that refer to each other lead a walk deeper than the JSON
/// nests: 20,000 records in a reference, each holding the one before, and a
/// schema of one field of the last. This aborted with a stack overflow
/// before each walk grew its stack (issue 14, item 2).
#[test]
fn a_chain_of_20_000_named_records_is_checked_without_overflowing() {
    on_small_stack(|| {
        let records = 20_000;
        let mut chain = vec![r#"{"type":"record","name":"C0","fields":[{"name":"x","type":"int"}]}"#.to_owned()];
        for k in 1..records {
            chain.push(format!(
                r#"{{"type":"record","name":"C{k}","fields":[{{"name":"p","type":"C{}"}}]}}"#,
                k - 1
            ));
        }
        let with_chain = |chain: &[String]| SchemaText {
            text: format!(
                r#"{{"type":"record","name":"Top","fields":[{{"name":"c","type":"C{}"}}]}}"#,
                records - 1
            ),
            references: vec![Reference {
                name: "chain".to_owned(),
                text: format!("[{}]", chain.join(",")),
            }],
        };
        let schema = with_chain(&chain);
        let report = check(
            Format::Avro,
            Mode::FullTransitive,
            &schema,
            std::slice::from_ref(&schema),
        )
        .unwrap();
        assert!(report.is_compatible());
        chain[0] = r#"{"type":"record","name":"C0","fields":[{"name":"x","type":"string"}]}"#.to_owned();
        let report = check(Format::Avro, Mode::Backward, &with_chain(&chain), &[schema]).unwrap();
        let paths: Vec<String> = report.incompatibilities.iter().map(|i| i.path.to_string()).collect();
        assert_eq!(paths.len(), 1, "{paths:?}");
        assert!(paths[0].ends_with("/fields/0/type"), "{paths:?}");
    });
}

//! `schemaops compat` as a user runs it: exit codes, stdout and stderr.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn schemaops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn the_readme_example_is_refused_with_every_reason_and_exit_1() {
    let output = schemaops(&[
        "compat",
        "--mode",
        "BACKWARD",
        "--previous",
        "examples/avro/rsvp-v1.avsc",
        "--candidate",
        "examples/avro/rsvp-v2-response.avsc",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("incompatible under BACKWARD: 3 problems"), "{text}");
    assert!(
        text.contains("READER_FIELD_MISSING_DEFAULT_VALUE at /fields/5"),
        "{text}"
    );
    assert!(
        text.contains(
            "field `response` of record `dev.schemaops.examples.Rsvp` (at /fields/5) was added without a default"
        ),
        "{text}"
    );
    assert!(text.contains("TYPE_MISMATCH at /fields/3/type"), "{text}");
    assert!(text.contains("field `country`"), "{text}");
}

#[test]
fn a_compatible_change_exits_0() {
    for candidate in [
        "examples/avro/rsvp-v2-response-default.avsc",
        "examples/avro/rsvp-v2-without-member.avsc",
    ] {
        let output = schemaops(&[
            "compat",
            "--previous",
            "examples/avro/rsvp-v1.avsc",
            "--candidate",
            candidate,
        ]);
        assert_eq!(output.status.code(), Some(0), "{candidate}: {}", stdout(&output));
        assert!(
            stdout(&output).starts_with("compatible under BACKWARD"),
            "{}",
            stdout(&output)
        );
    }
}

#[test]
fn json_output_lists_the_incompatibilities() {
    let output = schemaops(&[
        "compat",
        "--mode",
        "FORWARD",
        "-o",
        "json",
        "--previous",
        "examples/avro/rsvp-v1.avsc",
        "--candidate",
        "examples/avro/rsvp-v2-without-member.avsc",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["compatible"], false);
    assert_eq!(value["mode"], "FORWARD");
    // camelCase, as `check -o json` writes its keys (issue 36 item 6).
    assert_eq!(value["checkedVersions"], serde_json::json!([1]));
    assert_eq!(
        value["incompatibilities"][0]["directions"],
        serde_json::json!(["FORWARD"])
    );
    let found = &value["incompatibilities"][0];
    assert_eq!(found["kind"], "READER_FIELD_MISSING_DEFAULT_VALUE");
    assert_eq!(found["path"], "/fields/2");
    assert_eq!(found["version"], 1);
    assert!(found["message"].as_str().unwrap().contains("member_id"));
}

#[test]
fn an_invalid_schema_exits_2_with_the_reason_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.avsc",
        br#"{"type":"record","name":"R","fields":[{"name":"a","type":"integer"}]}"#,
    );
    let output = schemaops(&["compat", "--candidate", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("the candidate schema is not a valid Avro schema"),
        "{message}"
    );
    assert!(
        message.contains("at /fields/0/type: unknown type `integer`"),
        "{message}"
    );
    assert!(stdout(&output).is_empty());
}

#[test]
fn non_utf8_bytes_exit_2_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "latin1.avsc", b"{\"type\":\"string\",\"doc\":\"caf\xe9\"}");
    let output = schemaops(&["compat", "--candidate", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("is not UTF-8 text: the bytes at offset 27"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unreadable_file_exits_2_naming_it() {
    let output = schemaops(&["compat", "--candidate", "/nonexistent/schema.avsc"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("failed to read /nonexistent/schema.avsc"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_file_over_the_size_limit_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let big = write(
        dir.path(),
        "big.avsc",
        format!(r#"{{"type":"string","doc":"{}"}}"#, "x".repeat(500)).as_bytes(),
    );
    let output = schemaops(&[
        "compat",
        "--max-schema-bytes",
        "100",
        "--candidate",
        big.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("larger than the limit of 100 bytes"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &["compat"][..],
        &["compat", "--mode", "SIDEWAYS", "--candidate", "x.avsc"],
        &["compat", "--format", "xml", "--candidate", "x.avsc"],
        &["compat", "--cases", "a.jsonl", "--candidate", "x.avsc"],
    ] {
        let output = schemaops(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
    }
    let output = schemaops(&["compat", "--mode", "SIDEWAYS", "--candidate", "x.avsc"]);
    assert!(
        stderr(&output).contains("unknown compatibility mode `SIDEWAYS`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn cases_print_one_json_line_per_case() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/avro.jsonl");
    let output = schemaops(&["compat", "--cases", corpus.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 166);
    assert!(
        lines
            .iter()
            .all(|line| line["id"].is_string() && line["compatible"].is_boolean())
    );
    assert!(lines.iter().all(|line| line.get("error").is_none()));
}

#[test]
fn a_malformed_case_line_is_reported_in_place_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases = write(
        dir.path(),
        "cases.jsonl",
        br#"{"id":"ok","format":"AVRO","mode":"BACKWARD","previous":["\"int\""],"candidate":"\"long\""}
{"id":"broken","format":"AVRO"
{"id":"invalid","format":"AVRO","mode":"BACKWARD","previous":[],"candidate":"\"nope\""}
"#,
    );
    let output = schemaops(&["compat", "--cases", cases.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["compatible"], true);
    assert!(lines[1]["error"].as_str().unwrap().contains("line 2"), "{}", lines[1]);
    assert_eq!(lines[2]["compatible"], serde_json::Value::Null);
    assert!(
        lines[2]["error"].as_str().unwrap().contains("unknown type `nope`"),
        "{}",
        lines[2]
    );
}

#[test]
fn json_schema_adding_to_an_open_object_is_refused_and_lenient_accepts_it() {
    let args = [
        "compat",
        "--format",
        "json",
        "--previous",
        "examples/json/order-v1.json",
        "--candidate",
        "examples/json/order-v2-venue.json",
    ];
    let output = schemaops(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at /properties/venue"),
        "{text}"
    );
    assert!(text.contains("open (additional properties allowed)"), "{text}");

    let lenient = schemaops(&[&args[..], &["--json-policy", "lenient"]].concat());
    assert_eq!(lenient.status.code(), Some(0), "{}", stdout(&lenient));

    let from_env = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .env("SCHEMAOPS_JSON_POLICY", "LENIENT")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    assert_eq!(from_env.status.code(), Some(0), "{}", stdout(&from_env));
}

#[test]
fn json_schema_adding_to_a_closed_object_is_compatible() {
    let output = schemaops(&[
        "compat",
        "--format",
        "JSON",
        "--mode",
        "BACKWARD",
        "--previous",
        "examples/json/order-closed-v1.json",
        "--candidate",
        "examples/json/order-closed-v2-venue.json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn an_invalid_json_schema_exits_2_with_the_problem_and_its_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.json", br#"{"type": 5}"#);
    let output = schemaops(&["compat", "--format", "json", "--candidate", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let error = stderr(&output);
    assert!(
        error.contains("the candidate schema is not a valid JSON Schema"),
        "{error}"
    );
    assert!(error.contains("`type` must be a type name"), "{error}");
    assert!(error.contains("(at /type)"), "{error}");
    assert!(!error.contains("panicked"), "{error}");

    let dangling = write(
        dir.path(),
        "dangling.json",
        br##"{"properties":{"a":{"$ref":"#/definitions/nope"}}}"##,
    );
    let output = schemaops(&["compat", "--format", "json", "--candidate", dangling.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot resolve `$ref`"), "{}", stderr(&output));

    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep = write(dir.path(), "deep.json", nested.as_bytes());
    let output = schemaops(&["compat", "--format", "json", "--candidate", deep.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("nests more than 128 levels"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unknown_json_policy_is_bad_usage() {
    let output = schemaops(&[
        "compat",
        "--format",
        "json",
        "--json-policy",
        "sloppy",
        "--candidate",
        "examples/json/order-v1.json",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("STRICT, LENIENT"), "{}", stderr(&output));
}

#[test]
fn the_json_conformance_file_runs_through_cases() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/jsonschema.jsonl");
    let output = schemaops(&["compat", "--cases", corpus.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 280);
    assert!(lines.iter().all(|line| !line.contains("\"error\"")));
}

#[test]
fn protobuf_with_a_reference_exits_0_when_compatible_and_1_when_not() {
    let args = |candidate: &str| {
        vec![
            "compat".to_owned(),
            "--format".to_owned(),
            "protobuf".to_owned(),
            "--mode".to_owned(),
            "full".to_owned(),
            "--reference".to_owned(),
            "shop/money.proto=examples/protobuf/money.proto".to_owned(),
            "--previous".to_owned(),
            "examples/protobuf/order-v1.proto".to_owned(),
            "--candidate".to_owned(),
            format!("examples/protobuf/{candidate}"),
        ]
    };
    let run = |candidate: &str| {
        let owned = args(candidate);
        let borrowed: Vec<&str> = owned.iter().map(String::as_str).collect();
        schemaops(&borrowed)
    };
    let compatible = run("order-v2-wider-quantity.proto");
    assert_eq!(compatible.status.code(), Some(0), "{}", stderr(&compatible));
    let incompatible = run("order-v2-string-quantity.proto");
    assert_eq!(incompatible.status.code(), Some(1), "{}", stderr(&incompatible));
    let text = stdout(&incompatible);
    assert!(text.contains("FIELD_SCALAR_KIND_CHANGED at /Order/7"), "{text}");
    assert!(
        text.contains("field 7 (`quantity`) of `Order` changed from `int32` to `string`: existing bytes on the wire cannot be read"),
        "{text}"
    );
}

#[test]
fn a_protobuf_missing_import_exits_2_naming_the_import_and_line() {
    let output = schemaops(&[
        "compat",
        "--format",
        "protobuf",
        "--candidate",
        "examples/protobuf/order-v1.proto",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("schema.proto:5:1: import `shop/money.proto`"),
        "{message}"
    );
}

#[test]
fn a_bad_reference_argument_exits_2() {
    let output = schemaops(&[
        "compat",
        "--format",
        "protobuf",
        "--reference",
        "no-equals-sign",
        "--candidate",
        "examples/protobuf/money.proto",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("NAME=FILE"), "{}", stderr(&output));
}

#[test]
fn protobuf_cases_print_one_json_line_per_case() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/protobuf.jsonl");
    let output = schemaops(&["compat", "--cases", corpus.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 55);
    assert!(
        lines.iter().all(|line| line["error"].is_null()),
        "no case should fail to run"
    );
}

#[test]
fn crds_prints_the_checked_in_definitions() {
    let output = schemaops(&["crds"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let expected: String = schemaops::crd::render::definitions()
        .into_iter()
        .map(|(file, _)| format!("---\n{}", std::fs::read_to_string(dir.join(file)).unwrap()))
        .collect();
    assert!(expected.contains("kind: SchemaPolicy"), "{expected}");
    assert_eq!(stdout(&output), expected);
}

/// Issue 36 item 6: `compat --cases … | head` used to end with "error: Broken pipe" and exit 2.
/// A reader that has gone ends the run quietly, with the status a shell reports for SIGPIPE.
#[test]
fn a_closed_pipe_ends_quietly_with_the_sigpipe_status() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["compat", "--cases", "tests/conformance/avro.jsonl"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The reader goes before anything is written, as `head -0` would.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(141), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "nothing is said about the closed pipe");
}

/// Issue 37 item 1: a check lists at most 1,000 incompatibilities and counts the rest, so no
/// answer grows with the number of fields a hostile pair of schemas changes.
#[test]
fn a_check_with_thousands_of_problems_lists_a_thousand_and_counts_them_all() {
    let folder = tempfile::tempdir().unwrap();
    let record = |kind: &str| {
        let fields: Vec<String> = (0..1_500)
            .map(|index| format!(r#"{{"name":"f{index}","type":"{kind}"}}"#))
            .collect();
        format!(r#"{{"type":"record","name":"R","fields":[{}]}}"#, fields.join(","))
    };
    let previous = folder.path().join("previous.avsc");
    let candidate = folder.path().join("candidate.avsc");
    std::fs::write(&previous, record("string")).unwrap();
    std::fs::write(&candidate, record("boolean")).unwrap();
    let output = schemaops(&[
        "compat",
        "-o",
        "json",
        "--previous",
        previous.to_str().unwrap(),
        "--candidate",
        candidate.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["incompatibilitiesTotal"], 1_500);
    assert_eq!(value["incompatibilities"].as_array().unwrap().len(), 1_000);
}

//! Bad JSON Schema input gets a clear error that names the problem and its
//! place, never a panic, a hang, or a verdict (issue 3).

mod support;

use std::time::{Duration, Instant};

use schemaops::compat::json::{JsonPolicy, JsonSchema, TooComplex, differences};
use schemaops::compat::{CheckError, Checker, Format, Mode, SchemaRole, SchemaText, check, error_chain};

fn assert_refused(text: &str, expected: &[&str]) {
    support::refusal::assert_refused(Format::Json, &SchemaText::new(text), expected);
}

#[test]
fn malformed_json_is_refused_with_line_and_column() {
    assert_refused(
        "{\"type\":\n \"object\" \"properties\": {}}",
        &["not valid JSON", "line 2 column"],
    );
    assert_refused("", &["ends before the JSON document does"]);
    assert_refused("{} trailing", &["not valid JSON", "line 1"]);
}

#[test]
fn a_document_that_is_not_a_schema_is_refused_with_its_pointer() {
    assert_refused(
        r#"{"type": 5}"#,
        &["`type` must be a type name", "the number 5", "(at /type)"],
    );
    assert_refused(r#"{"type": "strin"}"#, &["unknown type `strin`", "(at /type)"]);
    assert_refused(r#"{"type": ["string", 3]}"#, &["(at /type/1)"]);
    assert_refused(
        r#"{"properties": {"age": {"type": "integer", "minimum": "ten"}}}"#,
        &["`minimum` must be a number", "(at /properties/age/minimum)"],
    );
    assert_refused(
        r#"{"properties": {"a": 3}}"#,
        &["must be an object or a boolean", "(at /properties/a)"],
    );
    assert_refused(
        r#"{"required": "a"}"#,
        &["`required` must be an array", "(at /required)"],
    );
    assert_refused(r#"{"anyOf": []}"#, &["`anyOf` must not be empty", "(at /anyOf)"]);
    assert_refused(
        r#"{"type": "string", "pattern": "(unclosed"}"#,
        &["not a valid regular expression", "(at /pattern)"],
    );
    assert_refused(r#"{"maxLength": -1}"#, &["non-negative integer", "(at /maxLength)"]);
    assert_refused("42", &["must be an object or a boolean", "(at /)"]);
    assert_refused(
        r#"{"$schema": "http://example.com/mine"}"#,
        &["unknown meta-schema", "(at /$schema)"],
    );
    assert_refused(
        r#"{"type": "object", "definitions": {"unused": {"type": 5}}}"#,
        &["`type` must be a type name", "(at /definitions/unused/type)"],
    );
    assert_refused(r#"{"$defs": {"a": {"minLength": "x"}}}"#, &["(at /$defs/a/minLength)"]);
}

#[test]
fn an_unresolvable_ref_is_an_error_not_a_verdict() {
    assert_refused(
        r##"{"properties": {"a": {"$ref": "#/definitions/missing"}}}"##,
        &[
            "cannot resolve `$ref` \"#/definitions/missing\"",
            "(at /properties/a/$ref)",
        ],
    );
    assert_refused(
        r#"{"properties": {"a": {"$ref": "https://schemas.example.com/other.json"}}}"#,
        &["remote schemas are not fetched"],
    );
    assert_refused(
        r##"{"items": {"$ref": "#no-such-anchor"}}"##,
        &["no schema in this document has that anchor"],
    );
}

#[test]
fn a_cycle_of_refs_is_refused() {
    assert_refused(
        r##"{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}"##,
        &["cycle of references"],
    );
    assert_refused(r##"{"$ref": "#"}"##, &["cycle of references"]);
}

#[test]
fn a_previous_version_that_is_invalid_is_named() {
    let error = check(
        Format::Json,
        Mode::Backward,
        &SchemaText::new(r#"{"type":"string"}"#),
        &[SchemaText::new(r#"{"type": 5}"#)],
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            CheckError::InvalidJson {
                role: SchemaRole::Previous(1),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error_chain(&error).starts_with("previous version 1 is not a valid JSON Schema"));
}

#[test]
fn nesting_100_000_deep_is_an_error_not_a_stack_overflow() {
    let depth = 100_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert_refused(&arrays, &["nests more than 128 levels"]);
    let items = format!("{}{{}}{}", r#"{"items":"#.repeat(depth), "}".repeat(depth));
    assert_refused(&items, &["nests more than 128 levels"]);
}

/// A schema whose root is the first of `count` definitions, each holding the next.
fn chain(count: usize) -> String {
    let mut definitions: Vec<String> = (0..count)
        .map(|index| {
            format!(
                r##""d{index}":{{"type":"object","properties":{{"next":{{"$ref":"#/definitions/d{}"}}}}}}"##,
                index + 1
            )
        })
        .collect();
    definitions.push(format!(r#""d{count}":{{"type":"string"}}"#));
    format!(
        r##"{{"$ref":"#/definitions/d0","definitions":{{{}}}}}"##,
        definitions.join(",")
    )
}

#[test]
fn a_chain_of_a_thousand_refs_is_decided() {
    let schema = chain(1_000);
    let report = check(
        Format::Json,
        Mode::Full,
        &SchemaText::new(&schema),
        &[SchemaText::new(&schema)],
    )
    .expect("decidable");
    assert!(report.is_compatible());
}

#[test]
fn a_chain_of_twenty_thousand_refs_is_too_complex_not_a_stack_overflow() {
    let schema = chain(20_000);
    let started = Instant::now();
    let error = check(
        Format::Json,
        Mode::Full,
        &SchemaText::new(&schema),
        &[SchemaText::new(&schema)],
    )
    .unwrap_err();
    assert!(matches!(error, CheckError::TooComplex { .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn huge_enums_are_fine() {
    let values: Vec<String> = (0..200_000).map(|index| format!("\"v{index}\"")).collect();
    let previous = format!(r#"{{"enum":[{}]}}"#, values.join(","));
    let candidate = format!(r#"{{"enum":[{}]}}"#, values[1..].join(","));
    let started = Instant::now();
    let report = check(
        Format::Json,
        Mode::Full,
        &SchemaText::new(&candidate),
        &[SchemaText::new(&previous)],
    )
    .expect("valid");
    let kinds: Vec<String> = report.incompatibilities.iter().map(|i| i.kind.to_string()).collect();
    assert_eq!(kinds, ["ENUM_ARRAY_NARROWED"]);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn exponential_matching_ends_in_too_complex_not_in_compatible() {
    let alternatives = |kind: &str| -> String {
        let items: Vec<String> = (0..60).map(|index| format!(r#"{{"const":"{kind}{index}"}}"#)).collect();
        format!(r#"{{"anyOf":[{}]}}"#, items.join(","))
    };
    let (previous, candidate) = (alternatives("a"), alternatives("b"));
    let error = Checker::default()
        .with_json_step_budget(1_000)
        .check(
            Format::Json,
            Mode::Backward,
            &SchemaText::new(&candidate),
            &[SchemaText::new(&previous)],
        )
        .unwrap_err();
    assert!(matches!(error, CheckError::TooComplex { version: 1, .. }), "{error:?}");
    let message = error_chain(&error);
    assert!(message.contains("too complex to decide"), "{message}");
    assert_eq!(error.reason(), "TooComplex");

    let parse = |text: &str| JsonSchema::parse(&SchemaText::new(text)).expect("valid");
    assert_eq!(
        differences(&parse(&previous), &parse(&candidate), JsonPolicy::Strict, 100),
        Err(TooComplex { budget: 100 })
    );
    // With the default budget the same check decides.
    assert!(
        !check(
            Format::Json,
            Mode::Backward,
            &SchemaText::new(&candidate),
            &[SchemaText::new(&previous)]
        )
        .expect("decidable")
        .is_compatible()
    );
}

/// `multipleOf` factors are compared as the decimals written, through
/// `schemaops compat` (issue 37, item 10): 1.0000000000000001 has more
/// significant digits than an `f64` keeps, and read as 1 it made 3 look like
/// a multiple of it, so FORWARD called the change compatible.
#[test]
fn multiple_of_is_compared_with_every_digit_written() {
    let folder = tempfile::tempdir().unwrap();
    let write = |name: &str, factor: &str| {
        let path = folder.path().join(name);
        std::fs::write(&path, format!(r#"{{"type":"number","multipleOf":{factor}}}"#)).unwrap();
        path
    };
    let compat = |mode: &str, previous: &std::path::Path, candidate: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args(["compat", "--format", "JSON", "--mode", mode, "-o", "json", "--previous"])
            .arg(previous)
            .arg("--candidate")
            .arg(candidate)
            .output()
            .unwrap()
    };
    let precise = write("precise.json", "1.0000000000000001");
    let three = write("three.json", "3");
    let output = compat("FORWARD", &precise, &three);
    let report = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert!(report.contains("MULTIPLE_OF_CHANGED"), "{report}");
    // The same number written otherwise is no change; a true multiple still is one.
    let same = write("same.json", "10000000000000001e-16");
    assert_eq!(compat("FULL", &precise, &same).status.code(), Some(0));
    let triple = write("triple.json", "3.0000000000000003");
    let output = compat("FORWARD", &precise, &triple);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

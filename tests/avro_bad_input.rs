//! Bad Avro input gets a clear error that names the problem and its place,
//! never a panic, a hang, or a verdict (issue 2).

mod support;

use schemaops::compat::avro::{AvroSchema, MAX_NESTING, Position};
use schemaops::compat::{CheckError, Checker, Format, Limits, Mode, SchemaRole, SchemaText, check, error_chain};

fn assert_refused(text: &str, expected: &[&str]) {
    support::refusal::assert_refused(Format::Avro, &SchemaText::new(text), expected);
}

#[test]
fn malformed_json_is_refused_with_line_and_column() {
    let error = AvroSchema::parse(&SchemaText::new(
        "{\"type\":\"record\",\n \"name\": \"R\" \"fields\": []}",
    ))
    .unwrap_err();
    assert_eq!(error.position, Position::Text { line: 2, column: 14 });
    assert!(error.to_string().contains("not valid JSON"), "{error}");
    assert_refused("", &["ends before the JSON document does"]);
    assert_refused("{\"type\": \"int\"} trailing", &["not valid JSON", "line 1"]);
}

#[test]
fn an_unknown_type_name_is_refused_with_its_path() {
    assert_refused(
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"integer"}]}"#,
        &["at /fields/1/type", "unknown type `integer`"],
    );
    assert_refused(r#"{"type":"strin"}"#, &["at /type", "unknown type `strin`"]);
    assert_refused("42", &["expected a type name", "a number 42"]);
}

#[test]
fn duplicate_field_names_and_enum_symbols_are_refused() {
    assert_refused(
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"long"}]}"#,
        &["at /fields/1/name", "already has a field `a`"],
    );
    assert_refused(
        r#"{"type":"enum","name":"E","symbols":["A","B","A"]}"#,
        &["at /symbols/2", "already has the symbol `A`"],
    );
    // Of a repeat and a symbol that is not a name, the earlier is reported.
    assert_refused(
        r#"{"type":"enum","name":"E","symbols":["A","A","not ok"]}"#,
        &["at /symbols/1", "already has the symbol `A` (at index 0)"],
    );
    assert_refused(
        r#"{"type":"enum","name":"E","symbols":["A","not ok","A"]}"#,
        &["at /symbols/1", "`not ok` is not a valid enum symbol"],
    );
    assert_refused(
        r#"{"type":"enum","name":"E","symbols":["A",7,"A"]}"#,
        &["at /symbols/1", "must be a string"],
    );
}

#[test]
fn invalid_names_are_refused() {
    assert_refused(
        r#"{"type":"record","name":"9lives","fields":[]}"#,
        &["at /name", "`9lives` is not a valid name"],
    );
    assert_refused(
        r#"{"type":"record","name":"R","fields":[{"name":"first-name","type":"string"}]}"#,
        &["at /fields/0/name", "`first-name` is not a valid field name"],
    );
    assert_refused(
        r#"{"type":"enum","name":"E","symbols":["ok","not ok"]}"#,
        &["at /symbols/1", "`not ok`"],
    );
    assert_refused(r#"{"type":"fixed","name":"int","size":4}"#, &["primitive type name"]);
    assert_refused(
        r#"{"type":"record","name":"R","namespace":"a..b","fields":[]}"#,
        &["`a..b.R` is not a valid name"],
    );
}

#[test]
fn a_type_defined_twice_is_refused() {
    assert_refused(
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"fixed","name":"F","size":1}},
            {"name":"b","type":{"type":"fixed","name":"F","size":2}}]}"#,
        &["at /fields/1/type", "`F` is already defined earlier in the schema"],
    );
}

#[test]
fn defaults_that_do_not_match_their_type_are_refused() {
    let field = |ty: &str, default: &str| {
        format!(r#"{{"type":"record","name":"R","fields":[{{"name":"f","type":{ty},"default":{default}}}]}}"#)
    };
    let cases = [
        (field(r#""int""#, r#""zero""#), "a whole number"),
        (field(r#""int""#, "2147483648"), "a whole number from -2147483648"),
        (field(r#""int""#, "1.5"), "a whole number"),
        (field(r#""string""#, "null"), "expected a string, found null"),
        (field(r#""boolean""#, "0"), "true or false"),
        (
            field(r#"{"type":"enum","name":"E","symbols":["A"]}"#, r#""B""#),
            "one of the symbols",
        ),
        (
            field(r#"{"type":"fixed","name":"F","size":2}"#, r#""abc""#),
            "exactly 2 characters",
        ),
        (
            field(r#"{"type":"array","items":"int"}"#, r#"[1,"x"]"#),
            "a whole number",
        ),
        (field(r#"["null","int"]"#, r#""x""#), "one of the union's branches"),
        (
            field(
                r#"{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}"#,
                "{}",
            ),
            "has no `x`",
        ),
    ];
    for (schema, expected) in cases {
        assert_refused(&schema, &["at /fields/0/default", "default of field `f`", expected]);
    }
    let enum_default = r#"{"type":"enum","name":"E","symbols":["A"],"default":"Z"}"#;
    assert_refused(enum_default, &["at /default", "not one of the symbols"]);
}

#[test]
fn a_union_directly_inside_a_union_is_refused() {
    assert_refused(
        r#"["null",["int","string"]]"#,
        &["at /1", "may not contain another union"],
    );
    assert_refused(r#"["int","string","int"]"#, &["at /2", "already has a `int` branch"]);
}

#[test]
fn attributes_of_the_wrong_shape_are_refused() {
    assert_refused(r#"{"type":"record","name":"R"}"#, &["needs a `fields` array"]);
    assert_refused(
        r#"{"type":"record","name":"R","fields":{}}"#,
        &["at /fields", "must be an array"],
    );
    assert_refused(
        r#"{"type":"fixed","name":"F","size":-1}"#,
        &["at /size", "whole number of bytes"],
    );
    assert_refused(r#"{"type":"array"}"#, &["needs an `items` attribute"]);
    assert_refused(r#"{"name":"R"}"#, &["needs a `type` attribute"]);
    assert_refused(
        r#"{"type":"record","name":"R","doc":7,"fields":[]}"#,
        &["at /doc", "must be a string"],
    );
    assert_refused(
        r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"up"}]}"#,
        &["at /fields/0/order"],
    );
}

#[test]
fn nesting_100_000_levels_deep_is_refused_without_overflowing_the_stack() {
    let depth = 100_000;
    let arrays = format!("{}\"int\"{}", "[".repeat(depth), "]".repeat(depth));
    assert_refused(&arrays, &[&format!("nests more than {MAX_NESTING} levels deep")]);
    let objects = format!(
        "{}\"int\"{}",
        r#"{"type":"array","items":"#.repeat(depth),
        "}".repeat(depth)
    );
    assert_refused(&objects, &["nests more than"]);
}

#[test]
fn nesting_within_the_limit_is_accepted() {
    let depth = 60;
    let nested = format!(
        "{}\"int\"{}",
        r#"{"type":"array","items":"#.repeat(depth),
        "}".repeat(depth)
    );
    let report = check(
        Format::Avro,
        Mode::Full,
        &SchemaText::new(nested.as_str()),
        &[SchemaText::new(nested.as_str())],
    );
    assert!(report.unwrap().is_compatible());
}

#[test]
fn a_schema_over_the_size_limit_is_refused_before_parsing() {
    let limits = Limits { max_schema_bytes: 64 };
    let big = format!(
        r#"{{"type":"record","name":"R","doc":"{}","fields":[]}}"#,
        "x".repeat(100)
    );
    let error = Checker::new(limits)
        .check(Format::Avro, Mode::Backward, &SchemaText::new(big.as_str()), &[])
        .unwrap_err();
    assert!(matches!(error, CheckError::TooLarge { limit: 64, .. }), "{error:?}");
    assert!(error.to_string().contains("over the limit of 64 bytes"), "{error}");

    let default_limit = Limits::default().max_schema_bytes;
    let huge = format!(r#"{{"type":"string","doc":"{}"}}"#, "x".repeat(default_limit));
    let error = check(Format::Avro, Mode::Backward, &SchemaText::new(huge), &[]).unwrap_err();
    assert!(matches!(error, CheckError::TooLarge { .. }), "{error:?}");
}

#[test]
fn an_invalid_earlier_version_is_an_error_that_names_the_version() {
    let good = SchemaText::new(r#""int""#);
    let bad = SchemaText::new(r#""integer""#);
    let error = check(
        Format::Avro,
        Mode::BackwardTransitive,
        &good,
        &[good.clone(), bad, good.clone()],
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            CheckError::InvalidAvro {
                role: SchemaRole::Previous(2),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error_chain(&error).starts_with("previous version 2 is not a valid Avro schema: at /: unknown type"));
}

#[test]
fn a_problem_in_a_reference_names_the_reference() {
    let schema = SchemaText {
        text: r#""shared.A""#.to_owned(),
        references: vec![schemaops::compat::Reference {
            name: "shared-a".to_owned(),
            text: r#"{"type":"record","name":"A","namespace":"shared","fields":[{"name":"x","type":"nope"}]}"#
                .to_owned(),
        }],
    };
    let error = AvroSchema::parse(&schema).unwrap_err();
    assert_eq!(error.reference.as_deref(), Some("shared-a"));
    assert!(
        error
            .to_string()
            .starts_with("in reference `shared-a`, at /fields/0/type"),
        "{error}"
    );
}

/// Issue 14: a union default is tried against each branch; with two record
/// branches that each hold the union again, every level of the default
/// doubled the work (20 levels: 1.2 s; 40 would take weeks). Answers are now
/// remembered per type and value.
#[test]
fn a_default_tried_against_unions_of_two_recursive_records_is_checked_in_linear_time() {
    let levels = 40;
    let value = format!("{}null{}", r#"{"x":"#.repeat(levels), "}".repeat(levels));
    let text = format!(
        r#"{{"type":"record","name":"W","fields":[{{"name":"w","type":{{"type":"record","name":"T1","fields":[{{"name":"x","type":["null","T1",{{"type":"record","name":"T2","fields":[{{"name":"x","type":["null","T1","T2"]}},{{"name":"r","type":"int"}}]}}]}},{{"name":"r","type":"int"}}]}},"default":{value}}}]}}"#
    );
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(AvroSchema::parse(&SchemaText::new(text)).map(|_| ()));
    });
    let error = receiver
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the default is checked within 10 s")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the default of field `w` does not match its type"),
        "{error}"
    );
}

//! Bad Protobuf input gets a clear error that names the problem and its
//! place, never a panic or a verdict (issue 4).

mod support;

use std::fmt::Write as _;

use schemaops::compat::protobuf::{ParseError, Position, ProtobufSchema};
use schemaops::compat::{CheckError, Checker, Format, Limits, Mode, Reference, SchemaText, check};

fn assert_refused(schema: &SchemaText, expected: &[&str]) {
    support::refusal::assert_refused(Format::Protobuf, schema, expected);
}

#[test]
fn a_syntax_error_is_refused_with_file_line_and_column() {
    let error = ProtobufSchema::parse(&SchemaText::new(
        "syntax = \"proto3\";\nmessage Order {\n  string id = 1\n}\n",
    ))
    .unwrap_err();
    let ParseError::Invalid { position, message } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(position.file, "schema.proto");
    assert_eq!((position.line, position.column), (4, 1));
    assert!(message.contains("expected"), "{message}");
    assert!(error.to_string().starts_with("schema.proto:4:1: "), "{error}");
}

#[test]
fn an_unknown_type_is_refused_with_its_place() {
    assert_refused(
        &SchemaText::new("syntax = \"proto3\";\nmessage Order {\n  strin id = 1;\n}\n"),
        &["schema.proto:3:3", "strin"],
    );
}

#[test]
fn a_missing_import_names_the_import_and_where_it_is() {
    let error = ProtobufSchema::parse(&SchemaText::new(
        "syntax = \"proto3\";\nimport \"shop/money.proto\";\nmessage Order { string id = 1; }\n",
    ))
    .unwrap_err();
    assert_eq!(
        error,
        ParseError::MissingImport {
            position: Position {
                file: "schema.proto".to_owned(),
                line: 2,
                column: 1
            },
            import: "shop/money.proto".to_owned(),
        }
    );
    assert!(
        error.to_string().contains("not among the schema's references"),
        "{error}"
    );
}

#[test]
fn an_error_inside_a_reference_names_the_reference() {
    let schema = SchemaText {
        text: "syntax = \"proto3\";\nimport \"money.proto\";\nmessage Order { Money total = 1; }\n".to_owned(),
        references: vec![Reference {
            name: "money.proto".to_owned(),
            text: "syntax = \"proto3\";\nmessage Money {\n  int64 units = 1\n}\n".to_owned(),
        }],
    };
    assert_refused(&schema, &["money.proto:4:1"]);
}

#[test]
fn an_import_cycle_is_refused_and_shows_the_loop() {
    let schema = SchemaText {
        text: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage Order { string id = 1; }\n".to_owned(),
        references: vec![
            Reference {
                name: "a.proto".to_owned(),
                text: "syntax = \"proto3\";\nimport \"b.proto\";\nmessage A {}\n".to_owned(),
            },
            Reference {
                name: "b.proto".to_owned(),
                text: "syntax = \"proto3\";\nimport \"a.proto\";\nmessage B {}\n".to_owned(),
            },
        ],
    };
    assert_refused(&schema, &["import cycle", "a.proto -> b.proto -> a.proto"]);
}

#[test]
fn invalid_base64_is_refused() {
    assert_refused(&SchemaText::new("Cg1leC91c2VyLnByb3Rv$$"), &["schema.proto"]);
    assert_refused(&SchemaText::new("Zm9vYmFy="), &["not valid base64"]);
}

#[test]
fn base64_that_is_not_a_descriptor_is_refused() {
    // "hello world" in base64: valid base64, not a FileDescriptorProto.
    assert_refused(
        &SchemaText::new("aGVsbG8gd29ybGQ="),
        &["not a serialized FileDescriptorProto"],
    );
}

#[test]
fn an_oversize_schema_is_refused_before_parsing() {
    let checker = Checker::new(Limits { max_schema_bytes: 64 });
    let text = format!(
        "syntax = \"proto3\";\nmessage Order {{ {} }}",
        "string a = 1; ".repeat(10)
    );
    let error = checker
        .check(Format::Protobuf, Mode::Backward, &SchemaText::new(text), &[])
        .unwrap_err();
    assert!(matches!(error, CheckError::TooLarge { .. }), "{error:?}");
}

#[test]
fn ten_thousand_messages_compile_and_compare() {
    let mut text = String::from("syntax = \"proto3\";\npackage big;\n");
    for index in 0..10_000 {
        let _ = writeln!(
            text,
            "message M{index} {{ string a = 1; int64 b = 2; M{} next = 3; }}",
            (index + 1) % 10_000
        );
    }
    let schema = SchemaText::new(text);
    let report = check(
        Format::Protobuf,
        Mode::FullTransitive,
        &schema,
        &[schema.clone(), schema.clone()],
    )
    .unwrap();
    assert!(report.is_compatible());
}

#[test]
fn garbage_never_panics() {
    for text in [
        "",
        "{",
        "}",
        "syntax",
        "syntax = \"proto4\";",
        "message {",
        "\u{0}\u{1}",
        "message A { A a = 1; }",
    ] {
        let _ = check(
            Format::Protobuf,
            Mode::Full,
            &SchemaText::new(text),
            &[SchemaText::new(text)],
        );
    }
}

#[test]
fn nesting_too_deep_is_refused_with_its_place_not_a_crash() {
    let depth = 2_000;
    let mut text = String::from("syntax = \"proto3\";\n");
    for level in 0..depth {
        let _ = writeln!(text, "message M{level} {{");
    }
    text.push_str("string x = 1;\n");
    text.push_str(&"}\n".repeat(depth));
    assert_refused(&SchemaText::new(text), &["schema.proto:", "recursion limit"]);
}

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
    assert_refused(
        &SchemaText::new(text),
        &["schema.proto:", "nests more than 64 levels deep"],
    );
}

/// A schema whose custom option value nests `body` inside itself `depth` times.
fn deep_option(depth: usize, open: &str, close: &str) -> String {
    format!(
        "syntax = \"proto2\";\nimport \"google/protobuf/descriptor.proto\";\n\
         message O {{ optional O o = 1; optional int32 v = 2; repeated O l = 3; }}\n\
         extend google.protobuf.MessageOptions {{ optional O opt = 50000; }}\n\
         message M {{ option (opt) = {{ {}v: 1{} }}; }}\n",
        open.repeat(depth),
        close.repeat(depth)
    )
}

/// Runs `work` on a thread with the 2 MiB stack of a tokio worker, where
/// the registry and the operator judge schemas.
fn on_a_worker_stack<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn_scoped(scope, work)
            .unwrap()
            .join()
            .unwrap()
    })
}

#[test]
fn deeply_nested_input_is_refused_before_any_recursive_walk() {
    let mut nested_messages = String::from("syntax = \"proto3\";\n");
    nested_messages.push_str(&"message N { ".repeat(1_000));
    nested_messages.push_str(&"}".repeat(1_000));
    let cases = [
        ("option message value", deep_option(1_000, "o { ", "} ")),
        ("option list value", deep_option(1_000, "l: [{ ", "}] ")),
        ("option value with colons", deep_option(1_000, "o: < ", "> ")),
        ("nested messages", nested_messages),
    ];
    for (what, text) in cases {
        on_a_worker_stack(|| {
            let message =
                support::refusal::assert_refused(Format::Protobuf, &SchemaText::new(text.as_str()), &["nest", "deep"]);
            assert!(message.contains("schema.proto:"), "{what}: {message}");
        });
    }
}

#[test]
fn nesting_a_real_schema_uses_is_accepted() {
    on_a_worker_stack(|| {
        for text in [deep_option(60, "o { ", "} "), deep_option(30, "l: [{ ", "}] ")] {
            let schema = SchemaText::new(text.as_str());
            let report = check(
                Format::Protobuf,
                Mode::FullTransitive,
                &schema,
                std::slice::from_ref(&schema),
            )
            .unwrap();
            assert!(report.is_compatible());
        }
        let mut nested = String::from("syntax = \"proto3\";\n");
        nested.push_str(&"message N { ".repeat(30));
        nested.push_str(&"}".repeat(30));
        ProtobufSchema::parse(&SchemaText::new(nested.as_str())).unwrap();
    });
}

/// A descriptor of `message Order { string id = 1; int64 cents = 2; }` in
/// package `shop`, changed by `edit`, as the base64 text a client sends.
fn descriptor(edit: impl FnOnce(&mut prost_types::FileDescriptorProto)) -> SchemaText {
    use base64::Engine as _;
    use prost::Message as _;
    use prost_types::field_descriptor_proto::{Label, Type};
    use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};
    let field = |name: &str, number: i32, kind: Type| FieldDescriptorProto {
        name: Some(name.to_owned()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(kind as i32),
        ..FieldDescriptorProto::default()
    };
    let mut file = FileDescriptorProto {
        name: Some("order.proto".to_owned()),
        package: Some("shop".to_owned()),
        syntax: Some("proto3".to_owned()),
        message_type: vec![DescriptorProto {
            name: Some("Order".to_owned()),
            field: vec![field("id", 1, Type::String), field("cents", 2, Type::Int64)],
            ..DescriptorProto::default()
        }],
        ..FileDescriptorProto::default()
    };
    edit(&mut file);
    SchemaText::new(base64::engine::general_purpose::STANDARD.encode(file.encode_to_vec()))
}

#[test]
fn the_unedited_descriptor_is_accepted() {
    ProtobufSchema::parse(&descriptor(|_| {})).unwrap();
}

#[test]
fn invalid_descriptors_are_refused_with_what_is_wrong_never_a_panic() {
    use prost_types::EnumDescriptorProto;
    use prost_types::descriptor_proto::ReservedRange;
    use prost_types::field_descriptor_proto::{Label, Type};
    type Edit = Box<dyn FnOnce(&mut prost_types::FileDescriptorProto)>;
    let cases: Vec<(&str, Edit, &[&str])> = vec![
        (
            "unknown syntax",
            Box::new(|file| file.syntax = Some("proto9".to_owned())),
            &["syntax", "proto9"],
        ),
        (
            "unknown field type",
            Box::new(|file| file.message_type[0].field[0].r#type = Some(99)),
            &["Order.id", "type 99"],
        ),
        (
            "unknown label",
            Box::new(|file| file.message_type[0].field[0].label = Some(7)),
            &["Order.id", "label 7"],
        ),
        (
            "empty field name",
            Box::new(|file| file.message_type[0].field[1].name = Some(String::new())),
            &["Order", "name"],
        ),
        (
            "empty message name",
            Box::new(|file| file.message_type[0].name = Some(String::new())),
            &["message", "name"],
        ),
        (
            "an enum type naming a message",
            Box::new(|file| {
                let field = &mut file.message_type[0].field[1];
                field.r#type = Some(Type::Enum as i32);
                field.type_name = Some(".shop.Order".to_owned());
            }),
            &["Order.cents", ".shop.Order"],
        ),
        (
            "required in proto3",
            Box::new(|file| file.message_type[0].field[0].label = Some(Label::Required as i32)),
            &["Order.id", "required", "proto3"],
        ),
        (
            "an inverted reserved range",
            Box::new(|file| {
                file.message_type[0].reserved_range = vec![ReservedRange {
                    start: Some(10),
                    end: Some(5),
                }]
            }),
            &["Order", "reserved", "10"],
        ),
        (
            "field number zero",
            Box::new(|file| file.message_type[0].field[0].number = Some(0)),
            &["Order.id", "number 0"],
        ),
        (
            "an enum without values",
            Box::new(|file| {
                file.enum_type = vec![EnumDescriptorProto {
                    name: Some("Empty".to_owned()),
                    ..EnumDescriptorProto::default()
                }]
            }),
            &["Empty", "value"],
        ),
    ];
    let mut wrong = Vec::new();
    for (what, edit, expected) in cases {
        let schema = descriptor(edit);
        let outcome =
            std::panic::catch_unwind(|| support::refusal::assert_refused(Format::Protobuf, &schema, expected));
        if outcome.is_err() {
            wrong.push(what);
        }
    }
    assert!(wrong.is_empty(), "not refused as they must be: {wrong:?}");
}

#[test]
fn a_package_of_thousands_of_parts_is_refused_before_the_pool_sees_it() {
    // 65 KB that would cost the descriptor pool about a gigabyte: an entry per prefix.
    let text = format!(
        "syntax = \"proto3\";\npackage {};\nmessage M {{ string a = 1; }}\n",
        vec!["p"; 32_768].join(".")
    );
    assert_refused(&SchemaText::new(text), &["schema.proto:2:9", "longer than 1024 bytes"]);
}

/// A descriptor whose `syntax` is the empty string, registered with a real
/// `schemaops registry`: read as proto2, as descriptor.proto says and
/// Confluent does, and no panic (caught or not) in the process's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_syntax_is_proto2_and_no_panic_is_logged() {
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("registry.log");
    let server = support::registry::RegistryProcess::start_logging_to(&data.path().join("store"), &[], &log).await;
    let client = support::http_client();
    let empty_syntax = descriptor(|file| file.syntax = Some(String::new()));
    let response = client
        .post(format!("{}/subjects/order-value/versions", server.url))
        .json(&serde_json::json!({ "schemaType": "PROTOBUF", "schema": empty_syntax.text }))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap();
    let proto2 = descriptor(|file| file.syntax = None);
    let lookup = client
        .post(format!("{}/subjects/order-value", server.url))
        .json(&serde_json::json!({ "schemaType": "PROTOBUF", "schema": proto2.text }))
        .send()
        .await
        .unwrap()
        .status();
    drop(server);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains("panicked"), "the registry logged a panic:\n{logged}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        lookup, 200,
        "the same descriptor without `syntax` is the version registered"
    );
}

//! The Protobuf wire rules a user meets, one story each (issue 4).

use base64::Engine as _;
use prost::Message as _;
use schemaops::compat::protobuf::{self, Kind, ProtobufSchema};
use schemaops::compat::{Checker, Format, Mode, ParsedSchema, Reference, SchemaRole, SchemaText, check};

fn proto(body: &str) -> SchemaText {
    SchemaText::new(format!("syntax = \"proto3\";\npackage shop;\n{body}"))
}

/// The (kind, path) pairs a BACKWARD check reports, as `/Order/7` paths.
fn backward(previous: &SchemaText, candidate: &SchemaText) -> Vec<(Kind, String)> {
    breaks(Mode::Backward, previous, candidate)
}

fn breaks(mode: Mode, previous: &SchemaText, candidate: &SchemaText) -> Vec<(Kind, String)> {
    let report = check(Format::Protobuf, mode, candidate, std::slice::from_ref(previous)).unwrap();
    report
        .incompatibilities
        .iter()
        .map(|incompatibility| match incompatibility.kind {
            schemaops::compat::Kind::Protobuf(kind) => (kind, incompatibility.path.to_string()),
            other => panic!("not a Protobuf kind: {other:?}"),
        })
        .collect()
}

/// Every difference, compatible ones included.
fn changes(previous: &SchemaText, candidate: &SchemaText) -> Vec<(Kind, String)> {
    let previous = ProtobufSchema::parse(previous).unwrap();
    let candidate = ProtobufSchema::parse(candidate).unwrap();
    protobuf::differences(&previous, &candidate)
        .into_iter()
        .map(|change| (change.kind, change.path.to_string()))
        .collect()
}

#[test]
fn renumbering_a_field_is_a_removal_and_an_addition_which_confluent_accepts() {
    let v1 = proto("message Order { string id = 1; int32 quantity = 7; }");
    let v2 = proto("message Order { string id = 1; int32 quantity = 8; }");
    let mut found = changes(&v1, &v2);
    found.sort();
    assert_eq!(
        found,
        [
            (Kind::FieldAdded, "/Order/8".to_owned()),
            (Kind::FieldRemoved, "/Order/7".to_owned())
        ]
    );
    assert!(backward(&v1, &v2).is_empty());
    assert!(breaks(Mode::Full, &v1, &v2).is_empty());
}

#[test]
fn widening_int32_to_int64_is_compatible_both_ways() {
    let v1 = proto("message Order { int32 quantity = 7; }");
    let v2 = proto("message Order { int64 quantity = 7; }");
    assert!(changes(&v1, &v2).is_empty());
    assert!(breaks(Mode::FullTransitive, &v1, &v2).is_empty());
}

#[test]
fn int32_to_string_is_not_compatible_and_says_why() {
    let v1 = proto("message Order { int32 quantity = 7; }");
    let v2 = proto("message Order { string quantity = 7; }");
    assert_eq!(
        backward(&v1, &v2),
        [(Kind::FieldScalarKindChanged, "/Order/7".to_owned())]
    );
    let report = check(Format::Protobuf, Mode::Backward, &v2, &[v1]).unwrap();
    let incompatibility = &report.incompatibilities[0];
    assert_eq!(incompatibility.path.to_confluent(), "#/Order/7");
    assert!(
        incompatibility.message.starts_with(
            "field 7 (`quantity`) of `Order` changed from `int32` to `string`: existing bytes on the wire cannot be read as the new type"
        ),
        "{}",
        incompatibility.message
    );
}

#[test]
fn moving_two_fields_into_a_new_oneof_is_not_compatible() {
    let v1 = proto("message Order { string card = 1; string iban = 2; }");
    let v2 = proto("message Order { oneof payment { string card = 1; string iban = 2; } }");
    assert_eq!(
        backward(&v1, &v2),
        [(Kind::MultipleFieldsMovedToOneof, "/Order/payment".to_owned())]
    );
}

#[test]
fn moving_one_field_into_a_new_oneof_is_compatible() {
    let v1 = proto("message Order { string card = 1; }");
    let v2 = proto("message Order { oneof payment { string card = 1; string iban = 2; } }");
    assert!(backward(&v1, &v2).is_empty());
}

#[test]
fn changing_the_package_is_not_compatible() {
    let v1 = proto("message Order { string id = 1; }");
    let v2 = SchemaText::new("syntax = \"proto3\";\npackage warehouse;\nmessage Order { string id = 1; }");
    assert_eq!(backward(&v1, &v2), [(Kind::PackageChanged, "/".to_owned())]);
    let report = check(Format::Protobuf, Mode::Backward, &v2, &[v1]).unwrap();
    assert!(
        report.incompatibilities[0]
            .message
            .contains("the package changed from `shop` to `warehouse`")
    );
}

#[test]
fn adding_an_enum_value_is_compatible_and_recorded() {
    let v1 = proto("enum Status { UNKNOWN = 0; PAID = 1; }\nmessage Order { Status status = 1; }");
    let v2 = proto("enum Status { UNKNOWN = 0; PAID = 1; SHIPPED = 2; }\nmessage Order { Status status = 1; }");
    assert_eq!(changes(&v1, &v2), [(Kind::EnumConstAdded, "/Status/2".to_owned())]);
    assert!(breaks(Mode::Full, &v1, &v2).is_empty());
}

#[test]
fn an_enum_field_reads_as_a_varint_like_int32() {
    let v1 = proto("message Order { int32 status = 1; }");
    let v2 = proto("enum Status { UNKNOWN = 0; }\nmessage Order { Status status = 1; }");
    assert_eq!(changes(&v1, &v2), [(Kind::EnumAdded, "/Status".to_owned())]);
}

#[test]
fn sint32_and_int32_are_different_wire_families() {
    let v1 = proto("message Order { int32 delta = 1; }");
    let v2 = proto("message Order { sint32 delta = 1; }");
    assert_eq!(
        backward(&v1, &v2),
        [(Kind::FieldScalarKindChanged, "/Order/1".to_owned())]
    );
}

#[test]
fn a_required_field_added_in_proto2_is_not_compatible() {
    let v1 = SchemaText::new("syntax = \"proto2\";\nmessage Order { optional string id = 1; }");
    let v2 =
        SchemaText::new("syntax = \"proto2\";\nmessage Order { optional string id = 1; required int32 count = 2; }");
    assert_eq!(backward(&v1, &v2), [(Kind::RequiredFieldAdded, "/Order/2".to_owned())]);
}

#[test]
fn a_syntax_change_is_recorded_and_compatible() {
    let v1 = SchemaText::new("syntax = \"proto2\";\nmessage Order { optional string id = 1; }");
    let v2 = SchemaText::new("syntax = \"proto3\";\nmessage Order { optional string id = 1; }");
    assert_eq!(changes(&v1, &v2), [(Kind::SyntaxVersionChanged, "/".to_owned())]);
    assert!(breaks(Mode::Full, &v1, &v2).is_empty());
}

#[test]
fn an_imported_message_is_compared_structurally_under_its_own_name() {
    let money = |units: &str| Reference {
        name: "shop/money.proto".to_owned(),
        text: format!("syntax = \"proto3\";\npackage shop;\nmessage Money {{ {units} units = 1; }}"),
    };
    let order = "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\nmessage Order { Money total = 1; }";
    let v1 = SchemaText {
        text: order.to_owned(),
        references: vec![money("int64")],
    };
    let v2 = SchemaText {
        text: order.to_owned(),
        references: vec![money("double")],
    };
    let mut found = backward(&v1, &v2);
    found.sort();
    assert_eq!(
        found,
        [
            (Kind::FieldScalarKindChanged, "/Money/1".to_owned()),
            (Kind::FieldNamedTypeChanged, "/Order/1".to_owned())
        ]
    );
}

#[test]
fn well_known_types_are_built_in() {
    let v1 = proto("import \"google/protobuf/timestamp.proto\";\nmessage Order { google.protobuf.Timestamp at = 1; }");
    let v2 = proto(
        "import \"google/protobuf/timestamp.proto\";\nimport \"google/protobuf/wrappers.proto\";\n\
         message Order { google.protobuf.Timestamp at = 1; google.protobuf.StringValue note = 2; }",
    );
    assert!(breaks(Mode::Full, &v1, &v2).is_empty());
}

#[test]
fn a_recursive_message_is_walked_once() {
    let v1 = proto("message Node { string name = 1; repeated Node children = 2; }");
    let v2 = proto("message Node { string name = 1; repeated Node children = 2; int32 depth = 3; }");
    assert_eq!(changes(&v1, &v2), [(Kind::FieldAdded, "/Node/3".to_owned())]);
}

#[test]
fn a_map_value_type_change_is_found_inside_the_map() {
    let v1 = proto("message Order { map<string, int32> counts = 1; }");
    let v2 = proto("message Order { map<string, string> counts = 1; }");
    assert_eq!(
        backward(&v1, &v2),
        [(Kind::FieldScalarKindChanged, "/Order/1".to_owned())]
    );
}

#[test]
fn forward_reports_what_the_old_schema_cannot_read() {
    let v1 = proto("message Order { string id = 1; }");
    let v2 = proto("message Order { string id = 1; }\nmessage Refund { string id = 1; }");
    assert!(backward(&v1, &v2).is_empty());
    assert_eq!(
        breaks(Mode::Forward, &v1, &v2),
        [(Kind::MessageRemoved, "/Refund".to_owned())]
    );
    let report = check(Format::Protobuf, Mode::Forward, &v2, &[v1]).unwrap();
    assert!(
        report.incompatibilities[0]
            .message
            .starts_with("message `Refund` was added"),
        "{}",
        report.incompatibilities[0].message
    );
}

#[test]
fn the_same_file_as_text_and_as_a_base64_descriptor_has_one_identity() {
    let text = "syntax = \"proto3\";\npackage shop;\nimport \"google/protobuf/timestamp.proto\";\n\
                // comment\nmessage Order {\n  string order_id = 1;\n  google.protobuf.Timestamp at = 2;\n\
                oneof payment { string card = 3; string iban = 4; }\n  map<string, int32> counts = 5;\n\
                optional string note = 6;\n  enum Status { UNKNOWN = 0; }\n  Status status = 7;\n}\n";
    let mut compiler = protox::Compiler::with_file_resolver(SingleFile(text.to_owned()));
    compiler.include_imports(false);
    compiler.open_file("order.proto").unwrap();
    let descriptor = compiler.file_descriptor_set().file.remove(0);
    let encoded = base64::engine::general_purpose::STANDARD.encode(descriptor.encode_to_vec());

    let checker = Checker::default();
    let from_text = checker
        .parse(Format::Protobuf, SchemaRole::Candidate, &SchemaText::new(text))
        .unwrap();
    let from_descriptor = checker
        .parse(
            Format::Protobuf,
            SchemaRole::Candidate,
            &SchemaText::new(encoded.clone()),
        )
        .unwrap();
    assert_eq!(from_text.canonical(), from_descriptor.canonical());
    assert_eq!(from_text.fingerprint(), from_descriptor.fingerprint());
    let (ParsedSchema::Protobuf(a), ParsedSchema::Protobuf(b)) = (&from_text, &from_descriptor) else {
        panic!("not Protobuf");
    };
    assert!(protobuf::differences(a, b).is_empty());
    assert!(
        check(
            Format::Protobuf,
            Mode::FullTransitive,
            &SchemaText::new(encoded),
            &[SchemaText::new(text)]
        )
        .unwrap()
        .is_compatible()
    );
}

#[test]
fn layout_comments_and_name_spelling_do_not_change_the_canonical_form() {
    let a = proto("message Order { Line line = 1; message Line { string sku = 1; } }");
    let b = proto(
        "// a comment\nmessage   Order {\n\n  .shop.Order.Line line = 1;\n  message Line {\n    string sku = 1; // trailing\n  }\n}\n",
    );
    let checker = Checker::default();
    let parse = |text: &SchemaText| checker.parse(Format::Protobuf, SchemaRole::Candidate, text).unwrap();
    assert_eq!(parse(&a).canonical(), parse(&b).canonical());
    let c = proto("message Order { Line line = 2; message Line { string sku = 1; } }");
    assert_ne!(parse(&a).fingerprint(), parse(&c).fingerprint());
}

/// Serves one file to protox, named `order.proto`, with the well-known types.
struct SingleFile(String);

impl protox::file::FileResolver for SingleFile {
    fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
        if name == "order.proto" {
            protox::file::File::from_source(name, &self.0)
        } else {
            protox::file::GoogleFileResolver::new().open_file(name)
        }
    }
}

#[test]
fn a_reference_may_itself_be_a_base64_descriptor() {
    let money = "syntax = \"proto3\";\npackage shop;\nmessage Money { int64 units = 1; }\n";
    let mut compiler = protox::Compiler::with_file_resolver(SingleFile(money.to_owned()));
    compiler.open_file("order.proto").unwrap();
    let descriptor = compiler.file_descriptor_set().file.remove(0);
    let encoded = base64::engine::general_purpose::STANDARD.encode(descriptor.encode_to_vec());
    let order = "syntax = \"proto3\";\npackage shop;\nimport \"shop/money.proto\";\nmessage Order { Money total = 1; }";
    let as_text = SchemaText {
        text: order.to_owned(),
        references: vec![Reference {
            name: "shop/money.proto".to_owned(),
            text: money.to_owned(),
        }],
    };
    let as_descriptor = SchemaText {
        text: order.to_owned(),
        references: vec![Reference {
            name: "shop/money.proto".to_owned(),
            text: encoded,
        }],
    };
    assert!(backward(&as_text, &as_descriptor).is_empty());
    assert!(breaks(Mode::Full, &as_descriptor, &as_text).is_empty());
}

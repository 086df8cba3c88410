//! The `.proto` text rendered from a compiled schema keeps its identity:
//! compiling the rendering gives the fingerprint of the original, for every
//! Protobuf schema of the conformance corpus (as sent, and sent again as a
//! base64 descriptor) and for generated schemas. A registry stores that
//! text for base64 registrations and for `?normalize=true`, so a lookup by
//! the stored text finds the same ID (issue 16 item 5).

#[allow(dead_code)] // Only the schema generator is used here.
#[path = "support/proto_gen.rs"]
mod proto_gen;
mod support;

use proptest::prelude::*;
use schemaops::compat::protobuf::ProtobufSchema;
use schemaops::compat::protobuf::render::Layout;
use schemaops::compat::{Format, SchemaText};

use support::corpus;

/// Schemas whose base64 descriptor compiles to another identity than their
/// text: a base64 descriptor is decoded into prost's types, which drop
/// custom (extension) options, so they are lost before anything is rendered.
const BASE64_LOSES_CUSTOM_OPTIONS: &[&str] = &["confluent-protobuf-meta-0000#0", "confluent-protobuf-meta-0000#1"];

/// Why rendering `schema` lost its identity, if it did; `None` when it kept it.
fn identity_lost(schema: &SchemaText) -> Option<String> {
    let original = ProtobufSchema::parse(schema).ok()?;
    let rendered = original
        .proto_text(Layout::Declared)
        .expect("the schema's own file is in its pool");
    let again = SchemaText {
        text: rendered.clone(),
        references: schema.references.clone(),
    };
    match ProtobufSchema::parse(&again) {
        Err(error) => Some(format!("the rendering does not compile: {error}\n{rendered}")),
        Ok(parsed) if parsed.fingerprint() != original.fingerprint() => Some(format!(
            "the rendering has another identity\n--- original canonical\n{}\n--- rendered\n{rendered}\n--- its canonical\n{}",
            original.canonical(),
            parsed.canonical()
        )),
        Ok(_) => None,
    }
}

/// `schema` sent as a base64 descriptor instead, when it compiles.
fn as_serialized(schema: &SchemaText) -> Option<SchemaText> {
    let original = ProtobufSchema::parse(schema).ok()?;
    Some(SchemaText {
        text: original.serialized()?,
        references: schema.references.clone(),
    })
}

#[test]
fn every_corpus_schema_renders_to_text_with_its_own_fingerprint() {
    let mut schemas = Vec::new();
    for case in corpus::load("protobuf.jsonl", 55) {
        assert_eq!(case.format, Format::Protobuf);
        let (candidate, previous) = case.schema_texts();
        for (index, schema) in std::iter::once(candidate).chain(previous).enumerate() {
            schemas.push((format!("{}#{index}", case.id), schema));
        }
    }
    let mut compiled = 0;
    let mut failures = Vec::new();
    let mut base64_differs: Vec<String> = Vec::new();
    let mut kept = 0;
    for (name, schema) in &schemas {
        if ProtobufSchema::parse(schema).is_err() {
            continue;
        }
        compiled += 1;
        if let Some(why) = identity_lost(schema) {
            failures.push(format!("{name} (text): {why}"));
        } else {
            kept += 1;
        }
        let serialized = as_serialized(schema).expect("a compiled schema serializes");
        let from_base64 = ProtobufSchema::parse(&serialized).expect("the serialized form compiles");
        let original = ProtobufSchema::parse(schema).expect("compiled above");
        if from_base64.fingerprint() != original.fingerprint() {
            // Its options messages are left empty, which no text writes
            // again; the registry stores such a schema as sent.
            base64_differs.push(name.clone());
        } else if let Some(why) = identity_lost(&serialized) {
            failures.push(format!("{name} (base64): {why}"));
        }
    }
    assert_eq!(
        base64_differs, BASE64_LOSES_CUSTOM_OPTIONS,
        "the schemas whose base64 form has another identity than their text changed"
    );
    println!(
        "{compiled} of {} corpus schemas compile; {kept} keep their fingerprint when rendered from text",
        schemas.len()
    );
    assert!(compiled >= 100, "only {compiled} corpus schemas compiled");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_schemas_render_to_text_with_their_own_fingerprint(history in proto_gen::history()) {
        for text in &history.texts {
            let schema = SchemaText::new(text.clone());
            prop_assert!(ProtobufSchema::parse(&schema).is_ok(), "{text}");
            if let Some(why) = identity_lost(&schema) {
                return Err(TestCaseError::fail(why));
            }
        }
    }
}

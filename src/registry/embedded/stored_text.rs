//! The text a registration stores, as Confluent stores it: an Avro schema
//! in compact JSON (no layout whitespace; keys and values as sent), so
//! `GET /schemas/ids/{id}` returns `{"type":"record","name":"user",…}`
//! whatever spacing the client used; a Protobuf schema sent as a base64
//! `FileDescriptorProto` as `.proto` text (Confluent stores
//! `canonicalString()`; the base64 form stays available with
//! `format=serialized`). With `?normalize=true`, the normalized text:
//! the canonical form for Avro and JSON Schema, the `.proto` text in
//! Confluent's normalized layout for Protobuf.
//!
//! Identity does not depend on it: IDs are keyed on the canonical form, and
//! the registry stores a rewritten text only after checking that it parses
//! back to the same identity ([`rewritten_texts`] proposes, the registry
//! checks). What REST answers give can differ again from what is stored
//! (an Avro schema is answered as Avro's `Schema.toString()` writes it): see
//! [`crate::registry::SchemaContent::answer_text`].

use crate::compat::protobuf::looks_like_base64;
use crate::compat::protobuf::render::Layout;
use crate::compat::{Format, ParsedSchema};

/// The text to store for a schema of `format` sent as `text`, without a
/// rewrite that would need checking: Avro compact, anything else as sent.
pub fn plain_text(format: Format, text: &str) -> String {
    match format {
        Format::Avro => compact_json(text),
        Format::Json | Format::Protobuf => text.to_owned(),
    }
}

/// The rewritten texts to store for `parsed`, sent as `text`, best first:
/// the registry stores the first that keeps the schema's identity, else the
/// plain text. Under `normalize`, the normalized text; for a base64 Protobuf
/// descriptor, `.proto` text in Confluent's declared layout (also after the
/// normalized one, for when sorting would change the identity). Empty when
/// the plain text is what is stored.
pub fn rewritten_texts(parsed: &ParsedSchema, text: &str, normalize: bool) -> Vec<String> {
    let mut texts = Vec::new();
    match parsed {
        ParsedSchema::Protobuf(schema) => {
            if normalize {
                texts.extend(schema.proto_text(Layout::Normalized));
            }
            if looks_like_base64(text) {
                texts.extend(schema.proto_text(Layout::Declared));
            }
        }
        ParsedSchema::Avro(_) | ParsedSchema::Json(_) if normalize => texts.push(parsed.canonical()),
        ParsedSchema::Avro(_) | ParsedSchema::Json(_) => {}
    }
    let plain = plain_text(parsed.format(), text);
    texts.retain(|rewritten| *rewritten != plain);
    texts.dedup();
    texts
}

/// `text` without the whitespace between JSON tokens; strings (and so the
/// spaces in them) are kept byte for byte.
fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for character in text.chars() {
        if in_string {
            out.push(character);
            match character {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if character == '"' {
            in_string = true;
            out.push(character);
        } else if !matches!(character, ' ' | '\t' | '\n' | '\r') {
            out.push(character);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avro_is_stored_compact_and_strings_keep_their_spaces() {
        let sent = "{\n  \"type\": \"record\",\n  \"name\": \"user\",\n  \"doc\": \"a \\\"quoted\\\" doc \",\n  \"fields\": [ ]\n}";
        assert_eq!(
            plain_text(Format::Avro, sent),
            r#"{"type":"record","name":"user","doc":"a \"quoted\" doc ","fields":[]}"#
        );
        assert_eq!(plain_text(Format::Avro, " \"int\" "), "\"int\"");
        assert_eq!(plain_text(Format::Json, "{ }"), "{ }");
    }

    fn parsed(format: Format, text: &str) -> ParsedSchema {
        crate::compat::Checker::default()
            .parse(
                format,
                crate::compat::SchemaRole::Candidate,
                &crate::compat::SchemaText::new(text),
            )
            .unwrap()
    }

    #[test]
    fn a_base64_descriptor_is_rewritten_as_proto_text_and_proto_text_only_under_normalize() {
        let text = "syntax = \"proto3\";\n// a comment\nmessage M { int32 a = 1; }\n";
        let schema = parsed(Format::Protobuf, text);
        let ParsedSchema::Protobuf(protobuf) = &schema else {
            unreachable!()
        };
        let base64 = protobuf.serialized().unwrap();
        let rendered = rewritten_texts(&parsed(Format::Protobuf, &base64), &base64, false);
        assert_eq!(rendered, ["syntax = \"proto3\";\n\nmessage M {\n  int32 a = 1;\n}\n"]);
        assert_eq!(rewritten_texts(&schema, text, false), Vec::<String>::new());
        assert_eq!(rewritten_texts(&schema, text, true), rendered);
    }

    #[test]
    fn normalize_rewrites_avro_and_json_schema_as_their_canonical_form() {
        let avro = "{\"type\": \"record\", \"namespace\": \"n\", \"name\": \"r\", \"fields\": []}";
        assert_eq!(
            rewritten_texts(&parsed(Format::Avro, avro), avro, false),
            Vec::<String>::new()
        );
        assert_eq!(
            rewritten_texts(&parsed(Format::Avro, avro), avro, true),
            ["{\"type\":\"record\",\"name\":\"n.r\",\"fields\":[]}"]
        );
        let json = "{\"type\": \"string\", \"maxLength\": 3}";
        assert_eq!(
            rewritten_texts(&parsed(Format::Json, json), json, true),
            ["{\"maxLength\":3,\"type\":\"string\"}"]
        );
    }
}

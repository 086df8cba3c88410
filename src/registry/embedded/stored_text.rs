//! The text a registration stores, as Confluent stores it: an Avro schema
//! in compact JSON (no layout whitespace; keys and values as sent), so
//! `GET /schemas/ids/{id}` returns `{"type":"record","name":"user",…}`
//! whatever spacing the client used; a Protobuf schema sent as a base64
//! `FileDescriptorProto` as `.proto` text (Confluent stores
//! `canonicalString()`; the base64 form stays available with
//! `format=serialized`). With `?normalize=true`, the normalized text:
//! the canonical form for Avro and JSON Schema, the rendered `.proto` text
//! for Protobuf.
//!
//! Identity does not depend on it: IDs are keyed on the canonical form, and
//! the registry stores a rewritten text only after checking that it parses
//! back to the same identity ([`stored_text`] proposes, the registry checks).

use crate::compat::protobuf::looks_like_base64;
use crate::compat::{Format, ParsedSchema};

/// The text to store for a schema of `format` sent as `text`, without a
/// rewrite that would need checking: Avro compact, anything else as sent.
pub fn plain_text(format: Format, text: &str) -> String {
    match format {
        Format::Avro => compact_json(text),
        Format::Json | Format::Protobuf => text.to_owned(),
    }
}

/// The rewritten text to store for `parsed`, sent as `text`, when there is
/// one: the normalized text under `normalize`, `.proto` text for a base64
/// Protobuf descriptor. `None` when the plain text is what is stored.
pub fn rewritten_text(parsed: &ParsedSchema, text: &str, normalize: bool) -> Option<String> {
    let rewritten = match parsed {
        ParsedSchema::Protobuf(schema) if normalize || looks_like_base64(text) => schema.proto_text(),
        ParsedSchema::Protobuf(_) => None,
        ParsedSchema::Avro(_) | ParsedSchema::Json(_) if normalize => Some(parsed.canonical()),
        ParsedSchema::Avro(_) | ParsedSchema::Json(_) => None,
    }?;
    (rewritten != plain_text(parsed.format(), text)).then_some(rewritten)
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
        let rendered = rewritten_text(&parsed(Format::Protobuf, &base64), &base64, false).unwrap();
        assert!(rendered.starts_with("syntax = \"proto3\";\n"), "{rendered}");
        assert_eq!(rewritten_text(&schema, text, false), None);
        assert_eq!(rewritten_text(&schema, text, true), Some(rendered));
    }

    #[test]
    fn normalize_rewrites_avro_and_json_schema_as_their_canonical_form() {
        let avro = "{\"type\": \"record\", \"namespace\": \"n\", \"name\": \"r\", \"fields\": []}";
        assert_eq!(rewritten_text(&parsed(Format::Avro, avro), avro, false), None);
        assert_eq!(
            rewritten_text(&parsed(Format::Avro, avro), avro, true).as_deref(),
            Some("{\"type\":\"record\",\"name\":\"n.r\",\"fields\":[]}")
        );
        let json = "{\"type\": \"string\", \"maxLength\": 3}";
        assert_eq!(
            rewritten_text(&parsed(Format::Json, json), json, true).as_deref(),
            Some("{\"maxLength\":3,\"type\":\"string\"}")
        );
    }
}

//! The text a registration stores, as Confluent stores it: an Avro schema
//! in compact JSON (no layout whitespace; keys and values as sent), so
//! `GET /schemas/ids/{id}` returns `{"type":"record","name":"user",…}`
//! whatever spacing the client used. Identity does not depend on it: IDs
//! are keyed on the canonical form.

use crate::compat::Format;

/// The text to store for a schema of `format` sent as `text`.
pub fn stored_text(format: Format, text: &str) -> String {
    match format {
        Format::Avro => compact_json(text),
        Format::Json | Format::Protobuf => text.to_owned(),
    }
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
            stored_text(Format::Avro, sent),
            r#"{"type":"record","name":"user","doc":"a \"quoted\" doc ","fields":[]}"#
        );
        assert_eq!(stored_text(Format::Avro, " \"int\" "), "\"int\"");
        assert_eq!(stored_text(Format::Json, "{ }"), "{ }");
    }
}

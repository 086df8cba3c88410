//! A schema's text laid out for reading. JSON (Avro, JSON Schema) is
//! re-spaced token by token, never parsed into a map, so keys stay in the
//! author's order and numbers as written; Protobuf is kept as written.
//! [`highlighted`] marks the tokens with classes the stylesheet colours:
//! no script, so the Content-Security-Policy stays strict.

use super::html::Html;
use crate::compat::Format;

/// The text indented two spaces a level: JSON re-spaced, Protobuf as is.
pub fn laid_out(format: Format, text: &str) -> String {
    match format {
        Format::Avro | Format::Json => indent_json(text),
        Format::Protobuf => text.to_owned(),
    }
}

/// `text` (laid out by [`laid_out`]) with its tokens marked by `<span class="tok-…">`.
pub fn highlighted(format: Format, text: &str) -> Html {
    match format {
        Format::Avro | Format::Json => highlight_json(text),
        Format::Protobuf => highlight_proto(text),
    }
}

/// The length in bytes of the JSON string starting at `text[0] == '"'`,
/// both quotes included (the rest of the text when it is not closed).
fn string_length(text: &str) -> usize {
    let mut escaped = false;
    for (index, character) in text.char_indices().skip(1) {
        match character {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return index + 1,
            _ => {}
        }
    }
    text.len()
}

fn indent_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut rest = text;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(character) = rest.chars().next() {
        match character {
            '"' => {
                let length = string_length(rest);
                out.push_str(&rest[..length]);
                rest = &rest[length..];
                continue;
            }
            '{' | '[' => {
                let close = if character == '{' { '}' } else { ']' };
                let after = rest[1..].trim_start();
                if after.starts_with(close) {
                    out.push(character);
                    out.push(close);
                    rest = &after[1..];
                    continue;
                }
                out.push(character);
                depth += 1;
                newline(&mut out, depth);
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(character);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            ' ' | '\t' | '\n' | '\r' => {}
            other => out.push(other),
        }
        rest = &rest[character.len_utf8()..];
    }
    out
}

fn highlight_json(text: &str) -> Html {
    let mut html = Html::new();
    let mut rest = text;
    while let Some(character) = rest.chars().next() {
        let length = match character {
            '"' => {
                let length = string_length(rest);
                let is_key = rest[length..].trim_start().starts_with(':');
                html.raw(if is_key {
                    "<span class=\"tok-key\">"
                } else {
                    "<span class=\"tok-string\">"
                })
                .text(&rest[..length])
                .raw("</span>");
                length
            }
            '-' | '0'..='9' => {
                let length = rest
                    .find(|c: char| !matches!(c, '-' | '+' | '.' | 'e' | 'E' | '0'..='9'))
                    .unwrap_or(rest.len());
                html.raw("<span class=\"tok-number\">")
                    .text(&rest[..length])
                    .raw("</span>");
                length
            }
            't' | 'f' | 'n' => {
                let length = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
                html.raw("<span class=\"tok-literal\">")
                    .text(&rest[..length])
                    .raw("</span>");
                length
            }
            other => {
                html.text(other.encode_utf8(&mut [0; 4]));
                other.len_utf8()
            }
        };
        rest = &rest[length..];
    }
    html
}

/// The words of the Protobuf language the highlighter marks.
const PROTO_KEYWORDS: &[&str] = &[
    "syntax",
    "edition",
    "package",
    "import",
    "public",
    "weak",
    "option",
    "message",
    "enum",
    "oneof",
    "map",
    "repeated",
    "optional",
    "required",
    "reserved",
    "extensions",
    "extend",
    "service",
    "rpc",
    "returns",
    "stream",
    "to",
    "max",
];

fn highlight_proto(text: &str) -> Html {
    let mut html = Html::new();
    let mut rest = text;
    while let Some(character) = rest.chars().next() {
        let length = if rest.starts_with("//") {
            let length = rest.find('\n').unwrap_or(rest.len());
            html.raw("<span class=\"tok-comment\">")
                .text(&rest[..length])
                .raw("</span>");
            length
        } else if character == '"' || character == '\'' {
            let length = rest[1..].find(character).map_or(rest.len(), |end| end + 2);
            html.raw("<span class=\"tok-string\">")
                .text(&rest[..length])
                .raw("</span>");
            length
        } else if character.is_ascii_alphanumeric() || character == '_' {
            let length = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            let word = &rest[..length];
            if PROTO_KEYWORDS.contains(&word) {
                html.raw("<span class=\"tok-key\">").text(word).raw("</span>");
            } else if word.starts_with(|c: char| c.is_ascii_digit()) {
                html.raw("<span class=\"tok-number\">").text(word).raw("</span>");
            } else {
                html.text(word);
            }
            length
        } else {
            html.text(character.encode_utf8(&mut [0; 4]));
            character.len_utf8()
        };
        rest = &rest[length..];
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_the_authors_key_order_and_numbers_as_written() {
        let text = r#"{"type":"record","name":"A","fields":[{"name":"x","type":"double","default":1.50}],"doc":"a, {b}: \"c\"","aliases":[]}"#;
        assert_eq!(
            laid_out(Format::Avro, text),
            "{\n  \"type\": \"record\",\n  \"name\": \"A\",\n  \"fields\": [\n    {\n      \"name\": \"x\",\n      \
             \"type\": \"double\",\n      \"default\": 1.50\n    }\n  ],\n  \"doc\": \"a, {b}: \\\"c\\\"\",\n  \"aliases\": []\n}"
        );
    }

    #[test]
    fn tokens_are_marked_and_escaped() {
        let marked = highlighted(
            Format::Json,
            "{\n  \"<b>\": \"</span>\",\n  \"n\": -2e3,\n  \"t\": true\n}",
        )
        .finish();
        assert!(
            marked.contains("<span class=\"tok-key\">&quot;&lt;b&gt;&quot;</span>"),
            "{marked}"
        );
        assert!(
            marked.contains("<span class=\"tok-string\">&quot;&lt;/span&gt;&quot;</span>"),
            "{marked}"
        );
        assert!(marked.contains("<span class=\"tok-number\">-2e3</span>"), "{marked}");
        assert!(marked.contains("<span class=\"tok-literal\">true</span>"), "{marked}");
        let proto = highlighted(Format::Protobuf, "message M { // <x>\n  string s = 1;\n}").finish();
        assert!(proto.contains("<span class=\"tok-key\">message</span>"), "{proto}");
        assert!(
            proto.contains("<span class=\"tok-comment\">// &lt;x&gt;</span>"),
            "{proto}"
        );
    }
}

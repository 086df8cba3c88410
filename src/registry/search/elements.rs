//! The named elements of a schema's text, per format, for the search index:
//! fields and named types with their place and type as written.
//!
//! Reads the text alone: references are not resolved (a referenced type is
//! named by the field's type, and indexed with the schema that defines it).
//! A text that does not parse yields nothing rather than an error: the index
//! must take whatever the store holds. Protobuf is read by a small tokenizer
//! (comments, strings, blocks), not the compiler, so start-up stays cheap and
//! a `.proto` whose imports are missing is still indexed; a schema stored as
//! a base64 descriptor yields nothing.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::compat::Format;

/// The most elements one schema contributes; the rest are not indexed.
pub const MAX_ELEMENTS_PER_SCHEMA: usize = 10_000;

/// What an element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ElementKind {
    /// An Avro or Protobuf field, or a JSON Schema property.
    Field,
    /// An Avro record (or error).
    Record,
    /// An Avro or Protobuf enum.
    Enum,
    /// An Avro fixed type.
    Fixed,
    /// A Protobuf message.
    Message,
    /// A JSON Schema definition (`$defs` or `definitions`).
    Definition,
}

impl ElementKind {
    /// Whether this is a named type rather than a field.
    pub fn is_type(self) -> bool {
        self != ElementKind::Field
    }

    /// The word shown for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ElementKind::Field => "field",
            ElementKind::Record => "record",
            ElementKind::Enum => "enum",
            ElementKind::Fixed => "fixed",
            ElementKind::Message => "message",
            ElementKind::Definition => "definition",
        }
    }
}

/// One named element of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    /// What it is.
    pub kind: ElementKind,
    /// Its name as written.
    pub name: String,
    /// Where it is (see [`super::ElementHit::path`]).
    pub path: String,
    /// Its type as written; for a named type, its kind.
    pub type_name: String,
}

/// The elements of `text`, a schema of `format`, at most
/// [`MAX_ELEMENTS_PER_SCHEMA`]: in the order they appear, but a JSON
/// Schema's properties and definitions by name (as parsed).
pub fn elements(format: Format, text: &str) -> Vec<Element> {
    let mut found = Found::default();
    match format {
        Format::Avro => {
            if let Ok(schema) = serde_json::from_str::<Value>(text) {
                avro(&schema, "", &mut found);
            }
        }
        Format::Json => {
            if let Ok(schema) = serde_json::from_str::<Value>(text) {
                json_schema(&schema, "#", &mut found);
            }
        }
        Format::Protobuf => protobuf(text, &mut found),
    }
    found.elements
}

/// The elements found so far, bounded.
#[derive(Default)]
struct Found {
    elements: Vec<Element>,
}

impl Found {
    fn push(&mut self, kind: ElementKind, name: &str, path: String, type_name: String) {
        if self.elements.len() < MAX_ELEMENTS_PER_SCHEMA {
            self.elements.push(Element {
                kind,
                name: name.to_owned(),
                path,
                type_name,
            });
        }
    }

    fn full(&self) -> bool {
        self.elements.len() >= MAX_ELEMENTS_PER_SCHEMA
    }
}

// Avro

/// `name` qualified by `namespace` unless it has a dot already.
fn full_name(name: &str, namespace: &str) -> String {
    if name.contains('.') || namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}.{name}")
    }
}

/// The namespace of a named type: its own, the one in its full name, or the enclosing one.
fn namespace_of<'a>(schema: &'a serde_json::Map<String, Value>, name: &'a str, enclosing: &'a str) -> &'a str {
    if let Some((space, _)) = name.rsplit_once('.') {
        return space;
    }
    schema.get("namespace").and_then(Value::as_str).unwrap_or(enclosing)
}

fn avro(schema: &Value, namespace: &str, found: &mut Found) {
    if found.full() {
        return;
    }
    match schema {
        Value::Array(branches) => branches.iter().for_each(|branch| avro(branch, namespace, found)),
        Value::Object(object) => {
            let kind = object.get("type");
            match kind.and_then(Value::as_str) {
                Some(word @ ("record" | "error" | "enum" | "fixed")) => {
                    let Some(name) = object.get("name").and_then(Value::as_str) else {
                        return;
                    };
                    let space = namespace_of(object, name, namespace);
                    let full = full_name(name, space);
                    let short = name.rsplit('.').next().unwrap_or(name);
                    let kind = match word {
                        "enum" => ElementKind::Enum,
                        "fixed" => ElementKind::Fixed,
                        _ => ElementKind::Record,
                    };
                    found.push(kind, short, full.clone(), word.to_owned());
                    let fields = object.get("fields").and_then(Value::as_array);
                    for field in fields.into_iter().flatten() {
                        let Some(field_name) = field.get("name").and_then(Value::as_str) else {
                            continue;
                        };
                        let field_type = field.get("type").unwrap_or(&Value::Null);
                        found.push(
                            ElementKind::Field,
                            field_name,
                            format!("{full}.{field_name}"),
                            avro_type(field_type),
                        );
                        avro(field_type, space, found);
                    }
                }
                Some("array") => avro(object.get("items").unwrap_or(&Value::Null), namespace, found),
                Some("map") => avro(object.get("values").unwrap_or(&Value::Null), namespace, found),
                _ => {
                    if let Some(nested @ (Value::Object(_) | Value::Array(_))) = kind {
                        avro(nested, namespace, found);
                    }
                }
            }
        }
        _ => {}
    }
}

/// An Avro type as a reader names it: `null | string`, `array<long>`,
/// `long (timestamp-millis)`, or a named type's name.
fn avro_type(schema: &Value) -> String {
    match schema {
        Value::String(name) => name.clone(),
        Value::Array(branches) => branches.iter().map(avro_type).collect::<Vec<_>>().join(" | "),
        Value::Object(object) => {
            let kind = object.get("type").unwrap_or(&Value::Null);
            let word = kind.as_str().unwrap_or_default();
            match word {
                "record" | "error" | "enum" | "fixed" => {
                    object.get("name").and_then(Value::as_str).unwrap_or(word).to_owned()
                }
                "array" => format!("array<{}>", avro_type(object.get("items").unwrap_or(&Value::Null))),
                "map" => format!("map<{}>", avro_type(object.get("values").unwrap_or(&Value::Null))),
                _ => {
                    let base = avro_type(kind);
                    match object.get("logicalType").and_then(Value::as_str) {
                        Some(logical) => format!("{base} ({logical})"),
                        None => base,
                    }
                }
            }
        }
        _ => "?".to_owned(),
    }
}

// JSON Schema

/// Keywords whose value is one subschema.
const ONE_SUBSCHEMA: [&str; 12] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
/// Keywords whose value is a list of subschemas.
const SUBSCHEMA_LISTS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names (not element names) to subschemas.
const SUBSCHEMA_MAPS: [&str; 3] = ["patternProperties", "dependentSchemas", "dependencies"];

/// A JSON Pointer step, escaped as RFC 6901 says.
fn step(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn json_schema(schema: &Value, pointer: &str, found: &mut Found) {
    let Value::Object(object) = schema else {
        return;
    };
    if found.full() {
        return;
    }
    for keyword in ["$defs", "definitions"] {
        let Some(Value::Object(definitions)) = object.get(keyword) else {
            continue;
        };
        let at = step(pointer, keyword);
        for (name, definition) in definitions {
            let place = step(&at, name);
            found.push(ElementKind::Definition, name, place.clone(), json_type(definition));
            json_schema(definition, &place, found);
        }
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        let at = step(pointer, "properties");
        for (name, property) in properties {
            let place = step(&at, name);
            found.push(ElementKind::Field, name, place.clone(), json_type(property));
            json_schema(property, &place, found);
        }
    }
    for keyword in ONE_SUBSCHEMA {
        if let Some(sub @ Value::Object(_)) = object.get(keyword) {
            json_schema(sub, &step(pointer, keyword), found);
        }
    }
    for keyword in SUBSCHEMA_LISTS {
        if let Some(Value::Array(list)) = object.get(keyword) {
            let at = step(pointer, keyword);
            for (index, sub) in list.iter().enumerate() {
                json_schema(sub, &step(&at, &index.to_string()), found);
            }
        }
    }
    for keyword in SUBSCHEMA_MAPS {
        if let Some(Value::Object(map)) = object.get(keyword) {
            let at = step(pointer, keyword);
            for (key, sub) in map {
                json_schema(sub, &step(&at, key), found);
            }
        }
    }
}

/// A JSON Schema's type as written: `string`, `integer | null`,
/// `array<string>`, a `$ref`, `enum`, a combination keyword, or `any`.
fn json_type(schema: &Value) -> String {
    let Value::Object(object) = schema else {
        return if schema == &Value::Bool(false) {
            "nothing"
        } else {
            "any"
        }
        .to_owned();
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        return reference.to_owned();
    }
    match object.get("type") {
        Some(Value::String(word)) if word == "array" => match object.get("items") {
            Some(items @ Value::Object(_)) => format!("array<{}>", json_type(items)),
            _ => "array".to_owned(),
        },
        Some(Value::String(word)) => word.clone(),
        Some(Value::Array(words)) => words.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
        _ => ["enum", "const", "oneOf", "anyOf", "allOf"]
            .into_iter()
            .find(|keyword| object.contains_key(*keyword))
            .unwrap_or("any")
            .to_owned(),
    }
}

// Protobuf

/// The tokens of `.proto` text: words (identifiers, dotted names,
/// numbers), string literals (as one token) and single punctuation marks;
/// comments dropped.
fn proto_tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii_whitespace() {
            at += 1;
        } else if text[at..].starts_with("//") {
            at = text[at..].find('\n').map_or(bytes.len(), |end| at + end);
        } else if text[at..].starts_with("/*") {
            at = text[at + 2..].find("*/").map_or(bytes.len(), |end| at + 2 + end + 2);
        } else if byte == b'"' || byte == b'\'' {
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != byte {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            let end = (end + 1).min(bytes.len());
            tokens.push(&text[at..end]);
            at = end;
        } else if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' {
            let end = text[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .map_or(bytes.len(), |end| at + end);
            tokens.push(&text[at..end]);
            at = end;
        } else {
            let width = text[at..].chars().next().map_or(1, char::len_utf8);
            tokens.push(&text[at..at + width]);
            at += width;
        }
    }
    tokens
}

/// A block being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// A message (or group): its fields are indexed.
    Message,
    /// A oneof: its fields belong to the enclosing message.
    Oneof,
    /// An enum: its constants are not indexed.
    Enum,
}

const FIELD_LABELS: [&str; 3] = ["optional", "required", "repeated"];

fn protobuf(text: &str, found: &mut Found) {
    let tokens = proto_tokens(text);
    let mut package = String::new();
    // Open blocks, each with the full name of the enclosing message.
    let mut open: Vec<(Block, String)> = Vec::new();
    let mut at = 0;
    while at < tokens.len() && !found.full() {
        let scope = open
            .last()
            .map_or(package.as_str(), |(_, name)| name.as_str())
            .to_owned();
        let qualify = |name: &str| {
            if scope.is_empty() {
                name.to_owned()
            } else {
                format!("{scope}.{name}")
            }
        };
        let in_enum = open.last().is_some_and(|(block, _)| *block == Block::Enum);
        match tokens[at] {
            "}" => {
                open.pop();
                at += 1;
            }
            ";" => at += 1,
            "package" if open.is_empty() => {
                package = tokens.get(at + 1).copied().unwrap_or_default().to_owned();
                at = skip_statement(&tokens, at);
            }
            "message" | "enum" if !in_enum && tokens.get(at + 2) == Some(&"{") => {
                let name = tokens[at + 1];
                let (kind, block) = if tokens[at] == "message" {
                    (ElementKind::Message, Block::Message)
                } else {
                    (ElementKind::Enum, Block::Enum)
                };
                let full = qualify(name);
                found.push(kind, name, full.clone(), tokens[at].to_owned());
                open.push((block, full));
                at += 3;
            }
            "oneof" if !in_enum && tokens.get(at + 2) == Some(&"{") => {
                open.push((Block::Oneof, scope.clone()));
                at += 3;
            }
            "syntax" | "edition" | "import" | "option" | "reserved" | "extensions" => {
                at = skip_statement(&tokens, at);
            }
            // Services and extensions of other messages name no element of this schema's types.
            "service" | "extend" => at = skip_statement(&tokens, at),
            _ if in_enum || open.is_empty() => at = skip_statement(&tokens, at),
            _ => at = proto_field(&tokens, at, &scope, &mut open, found),
        }
    }
}

/// Reads a field (or a group) at `at`, in the message `scope`; returns where
/// the next statement begins.
fn proto_field(
    tokens: &[&str],
    mut at: usize,
    scope: &str,
    open: &mut Vec<(Block, String)>,
    found: &mut Found,
) -> usize {
    let start = at;
    let label = FIELD_LABELS.contains(&tokens[at]).then(|| tokens[at]);
    if label.is_some() {
        at += 1;
    }
    let type_name = if tokens.get(at) == Some(&"map") && tokens.get(at + 1) == Some(&"<") {
        let close = tokens[at..].iter().position(|token| *token == ">").map(|end| at + end);
        let Some(close) = close else {
            return tokens.len();
        };
        let inner: Vec<&str> = tokens[at + 2..close]
            .iter()
            .filter(|token| **token != ",")
            .copied()
            .collect();
        at = close + 1;
        format!("map<{}>", inner.join(", "))
    } else {
        let Some(word) = tokens.get(at) else {
            return tokens.len();
        };
        at += 1;
        (*word).to_owned()
    };
    let (Some(name), Some(&"=")) = (tokens.get(at), tokens.get(at + 1)) else {
        return skip_statement(tokens, start);
    };
    let is_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !is_name {
        return skip_statement(tokens, start);
    }
    let shown = match label {
        Some("repeated") => format!("repeated {type_name}"),
        _ => type_name.clone(),
    };
    if type_name == "group" {
        // proto2: `repeated group Result = 1 { … }` is a message and a field named in lowercase.
        let full = format!("{scope}.{name}").trim_start_matches('.').to_owned();
        found.push(ElementKind::Message, name, full.clone(), "group".to_owned());
        let field = name.to_lowercase();
        found.push(
            ElementKind::Field,
            &field,
            format!("{scope}.{field}"),
            shown.replace("group", name),
        );
        let open_brace = tokens[at..].iter().position(|token| *token == "{" || *token == ";");
        return match open_brace.map(|offset| at + offset) {
            Some(brace) if tokens[brace] == "{" => {
                open.push((Block::Message, full));
                brace + 1
            }
            Some(end) => end + 1,
            None => tokens.len(),
        };
    }
    found.push(ElementKind::Field, name, format!("{scope}.{name}"), shown);
    skip_statement(tokens, start)
}

/// The index after the statement starting at `at`: after its `;`, or after
/// the block it opens, whichever comes first at depth zero.
fn skip_statement(tokens: &[&str], at: usize) -> usize {
    let mut depth = 0usize;
    let mut index = at;
    while index < tokens.len() {
        match tokens[index] {
            "{" | "[" | "(" => depth += 1,
            "}" | "]" | ")" if depth > 0 => {
                depth -= 1;
                if depth == 0 && tokens[index] == "}" {
                    return index + 1;
                }
            }
            // A stray `}` closes the enclosing block: leave it to the caller.
            "}" => return index,
            ";" if depth == 0 => return index + 1,
            _ => {}
        }
        index += 1;
    }
    tokens.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(format: Format, text: &str) -> Vec<String> {
        elements(format, text)
            .into_iter()
            .map(|element| {
                format!(
                    "{} {} at {}: {}",
                    element.kind.as_str(),
                    element.name,
                    element.path,
                    element.type_name
                )
            })
            .collect()
    }

    #[test]
    fn avro_records_fields_and_nested_types_are_named_with_their_full_names() {
        let text = r#"{"type":"record","name":"Order","namespace":"com.acme","fields":[
            {"name":"customer_id","type":["null","long"]},
            {"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
            {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
                {"name":"sku","type":"string"}]}}},
            {"name":"state","type":{"type":"enum","name":"other.State","symbols":["A"]}},
            {"name":"tags","type":{"type":"map","values":"string"}}]}"#;
        assert_eq!(
            described(Format::Avro, text),
            [
                "record Order at com.acme.Order: record",
                "field customer_id at com.acme.Order.customer_id: null | long",
                "field placed at com.acme.Order.placed: long (timestamp-millis)",
                "field lines at com.acme.Order.lines: array<Line>",
                "record Line at com.acme.Line: record",
                "field sku at com.acme.Line.sku: string",
                "field state at com.acme.Order.state: other.State",
                "enum State at other.State: enum",
                "field tags at com.acme.Order.tags: map<string>",
            ]
        );
    }

    #[test]
    fn json_schema_properties_and_definitions_are_placed_by_json_pointer() {
        let text = r##"{"type":"object","properties":{
            "customer_id":{"type":["integer","null"]},
            "a/b":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}}}},
            "address":{"$ref":"#/$defs/Address"}},
            "$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}}}},
            "oneOf":[{"properties":{"coupon":{"enum":["A"]}}}]}"##;
        assert_eq!(
            described(Format::Json, text),
            [
                "definition Address at #/$defs/Address: object",
                "field city at #/$defs/Address/properties/city: string",
                "field a/b at #/properties/a~1b: array<object>",
                "field sku at #/properties/a~1b/items/properties/sku: string",
                "field address at #/properties/address: #/$defs/Address",
                "field customer_id at #/properties/customer_id: integer | null",
                "field coupon at #/oneOf/0/properties/coupon: enum",
            ]
        );
    }

    #[test]
    fn protobuf_messages_enums_and_fields_are_read_without_the_compiler() {
        let text = r#"
            syntax = "proto3";
            package acme.orders; // the package
            import "customer.proto";
            option java_package = "x.y";
            /* a { block } comment */
            message Order {
              option (custom) = { a: 1 };
              int64 customer_id = 1 [json_name = "cid;"];
              repeated Line lines = 2;
              map<string, int64> counts = 3;
              oneof payment { string card = 4; acme.Voucher voucher = 5; }
              reserved 6, 7;
              message Line { string sku = 1; }
              enum State { STATE_UNSPECIFIED = 0; OPEN = 1 [deprecated = true]; }
            }
            service Orders { rpc Place (Order) returns (Order) { option idempotency_level = IDEMPOTENT; } }
            message Empty {}
        "#;
        assert_eq!(
            described(Format::Protobuf, text),
            [
                "message Order at acme.orders.Order: message",
                "field customer_id at acme.orders.Order.customer_id: int64",
                "field lines at acme.orders.Order.lines: repeated Line",
                "field counts at acme.orders.Order.counts: map<string, int64>",
                "field card at acme.orders.Order.card: string",
                "field voucher at acme.orders.Order.voucher: acme.Voucher",
                "message Line at acme.orders.Order.Line: message",
                "field sku at acme.orders.Order.Line.sku: string",
                "enum State at acme.orders.Order.State: enum",
                "message Empty at acme.orders.Empty: message",
            ]
        );
    }

    #[test]
    fn proto2_groups_are_a_message_and_a_field() {
        let text = "syntax = \"proto2\"; message Search { repeated group Result = 1 { required string url = 2; } }";
        assert_eq!(
            described(Format::Protobuf, text),
            [
                "message Search at Search: message",
                "message Result at Search.Result: group",
                "field result at Search.result: repeated Result",
                "field url at Search.Result.url: string",
            ]
        );
    }

    #[test]
    fn unreadable_texts_yield_nothing_and_huge_ones_are_capped() {
        assert!(elements(Format::Avro, "{not json").is_empty());
        assert!(elements(Format::Protobuf, "message { = ; } } {").is_empty());
        let fields: Vec<String> = (0..MAX_ELEMENTS_PER_SCHEMA + 10)
            .map(|index| format!(r#"{{"name":"f{index}","type":"int"}}"#))
            .collect();
        let text = format!(r#"{{"type":"record","name":"Wide","fields":[{}]}}"#, fields.join(","));
        assert_eq!(elements(Format::Avro, &text).len(), MAX_ELEMENTS_PER_SCHEMA);
    }
}

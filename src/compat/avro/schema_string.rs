//! An Avro schema's text as Avro Java's `Schema.toString()` writes it, which
//! is what Confluent stores and answers (`AvroSchema.canonicalString()`):
//! compact JSON with each kind's keys in Avro's order, custom properties
//! after the known keys in the order the author wrote them, names written
//! relative to the enclosing namespace, and the attributes Avro does not
//! keep (a primitive's `name`, an unknown key's twin in a reserved slot)
//! left out.
//!
//! The order per kind (Avro's `Schema.toJson`):
//! - record / error: `type`, `name`, `namespace` (only when it differs from
//!   the enclosing one; `""` for no namespace inside one), `doc`, `fields`,
//!   properties, `aliases`;
//! - field: `name`, `type`, `doc`, `default`, `order` (unless ascending),
//!   `aliases`, properties;
//! - enum: `type`, `name`, `namespace`, `doc`, `symbols`, `default`,
//!   properties, `aliases`; fixed: `type`, `name`, `namespace`, `doc`, `size`,
//!   properties, `aliases`;
//! - array: `type`, `items`, properties; map: `type`, `values`, properties;
//! - a primitive: its name, or `{"type": …, properties}` when it has any.
//!
//! Values are written as Jackson writes them: strings with `\uXXXX` escapes
//! (upper-case hex) for control characters without a short form, other
//! characters as they are; floating-point numbers as Java's
//! `Double.toString` (`1.0`, `1.0E7`).
//!
//! This is display only: identity is the canonical form
//! ([`super::canonical`]), which does not depend on key order or layout.

use std::fmt::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// `text` as Avro Java's `Schema.toString()` writes it; `None` when it is
/// not JSON of a shape Avro accepts, or nests deeper than `serde_json`'s
/// 128 levels (which also bounds the recursion here): the caller then keeps
/// the text as it is.
pub fn schema_string(text: &str) -> Option<String> {
    let value: Ordered = serde_json::from_str(text).ok()?;
    let mut out = String::with_capacity(text.len());
    write_schema(&mut out, &value, None)?;
    Some(out)
}

/// A JSON value whose objects keep the order of their keys.
#[derive(Debug, Clone, PartialEq)]
enum Ordered {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Ordered>),
    Object(Vec<(String, Ordered)>),
}

impl Ordered {
    /// The value of `key`; the last one when a key repeats, as Jackson reads it.
    fn get(&self, key: &str) -> Option<&Ordered> {
        match self {
            Ordered::Object(entries) => entries
                .iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    fn text(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Ordered::String(text)) => Some(text),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor;
        impl<'de> Visitor<'de> for OrderedVisitor {
            type Value = Ordered;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Ordered, E> {
                Ok(Ordered::Null)
            }
            fn visit_bool<E>(self, value: bool) -> Result<Ordered, E> {
                Ok(Ordered::Bool(value))
            }
            fn visit_i64<E>(self, value: i64) -> Result<Ordered, E> {
                Ok(Ordered::Number(value.into()))
            }
            fn visit_u64<E>(self, value: u64) -> Result<Ordered, E> {
                Ok(Ordered::Number(value.into()))
            }
            fn visit_f64<E>(self, value: f64) -> Result<Ordered, E> {
                Ok(serde_json::Number::from_f64(value).map_or(Ordered::Null, Ordered::Number))
            }
            fn visit_str<E>(self, value: &str) -> Result<Ordered, E> {
                Ok(Ordered::String(value.to_owned()))
            }
            fn visit_string<E>(self, value: String) -> Result<Ordered, E> {
                Ok(Ordered::String(value))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Ordered, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = items.next_element()? {
                    values.push(value);
                }
                Ok(Ordered::Array(values))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Ordered, A::Error> {
                let mut values: Vec<(String, Ordered)> = Vec::new();
                while let Some((key, value)) = entries.next_entry::<String, Ordered>()? {
                    // A repeated key keeps its first place and its last value (Jackson's tree).
                    match values.iter_mut().find(|(name, _)| *name == key) {
                        Some(slot) => slot.1 = value,
                        None => values.push((key, value)),
                    }
                }
                Ok(Ordered::Object(values))
            }
        }
        deserializer.deserialize_any(OrderedVisitor)
    }
}

const PRIMITIVES: &[&str] = &["null", "boolean", "int", "long", "float", "double", "bytes", "string"];
/// Avro's `Schema.Type` names: a name equal to one is always written in full.
const TYPE_NAMES: &[&str] = &[
    "record", "enum", "array", "map", "union", "fixed", "string", "bytes", "int", "long", "float", "double", "boolean",
    "null",
];
/// Keys a schema object does not carry as properties (Avro's `SCHEMA_RESERVED`).
const SCHEMA_RESERVED: &[&str] = &[
    "doc",
    "fields",
    "items",
    "name",
    "namespace",
    "size",
    "symbols",
    "values",
    "type",
    "aliases",
];
/// Keys a field does not carry as properties (Avro's `FIELD_RESERVED`).
const FIELD_RESERVED: &[&str] = &["default", "doc", "name", "order", "type", "aliases"];

/// A full name split as Avro's `Name` does: the part after the last dot,
/// and the namespace (`None` for none).
fn split_name(name: &str, enclosing: Option<&str>) -> (String, Option<String>) {
    match name.rsplit_once('.') {
        Some((space, simple)) => (
            simple.to_owned(),
            Some(space.to_owned()).filter(|space| !space.is_empty()),
        ),
        None => (
            name.to_owned(),
            enclosing.map(str::to_owned).filter(|space| !space.is_empty()),
        ),
    }
}

/// A name as Avro writes a reference to it from inside `namespace`: the
/// simple name when its namespace is that one (and it is not a type's name),
/// else the full name.
fn qualified(simple: &str, space: Option<&str>, namespace: Option<&str>) -> String {
    match space {
        Some(space) if Some(space) == namespace && !TYPE_NAMES.contains(&simple) => simple.to_owned(),
        Some(space) => format!("{space}.{simple}"),
        None => simple.to_owned(),
    }
}

/// Writes `schema`, found inside `namespace`; `None` when it is not a schema.
fn write_schema(out: &mut String, schema: &Ordered, namespace: Option<&str>) -> Option<()> {
    match schema {
        Ordered::String(name) if PRIMITIVES.contains(&name.as_str()) => write_string(out, name),
        Ordered::String(name) if name.contains('.') => {
            let (simple, space) = split_name(name, None);
            write_string(out, &qualified(&simple, space.as_deref(), namespace));
        }
        // A short name resolves in the enclosing namespace or in none; either way it is written as it is.
        Ordered::String(name) => write_string(out, name),
        Ordered::Array(branches) => {
            out.push('[');
            for (index, branch) in branches.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_schema(out, branch, namespace)?;
            }
            out.push(']');
        }
        Ordered::Object(_) => write_object(out, schema, namespace)?,
        _ => return None,
    }
    Some(())
}

fn write_object(out: &mut String, schema: &Ordered, namespace: Option<&str>) -> Option<()> {
    let kind = schema.text("type")?;
    if PRIMITIVES.contains(&kind) && properties(schema, SCHEMA_RESERVED).next().is_none() {
        write_string(out, kind);
        return Some(());
    }
    let mut writer = ObjectWriter::open(out);
    match kind {
        primitive if PRIMITIVES.contains(&primitive) => {
            writer.string("type", primitive);
            writer.properties(schema, SCHEMA_RESERVED);
        }
        "record" | "error" => {
            writer.string("type", kind);
            let space = writer.name(schema, namespace)?;
            writer.optional_string("doc", schema.text("doc"));
            let Some(Ordered::Array(fields)) = schema.get("fields") else {
                return None;
            };
            writer.key("fields");
            writer.out.push('[');
            for (index, field) in fields.iter().enumerate() {
                if index > 0 {
                    writer.out.push(',');
                }
                write_field(writer.out, field, space.as_deref())?;
            }
            writer.out.push(']');
            writer.properties(schema, SCHEMA_RESERVED);
            writer.aliases(schema, space.as_deref());
        }
        "enum" => {
            writer.string("type", kind);
            let space = writer.name(schema, namespace)?;
            writer.optional_string("doc", schema.text("doc"));
            writer.key("symbols");
            write_value(writer.out, schema.get("symbols")?);
            writer.optional_string("default", schema.text("default"));
            let reserved: Vec<&str> = SCHEMA_RESERVED.iter().copied().chain(["default"]).collect();
            writer.properties(schema, &reserved);
            writer.aliases(schema, space.as_deref());
        }
        "fixed" => {
            writer.string("type", kind);
            let space = writer.name(schema, namespace)?;
            writer.optional_string("doc", schema.text("doc"));
            writer.key("size");
            write_value(writer.out, schema.get("size")?);
            writer.properties(schema, SCHEMA_RESERVED);
            writer.aliases(schema, space.as_deref());
        }
        "array" | "map" => {
            let inner = if kind == "array" { "items" } else { "values" };
            writer.string("type", kind);
            writer.key(inner);
            write_schema(writer.out, schema.get(inner)?, namespace)?;
            writer.properties(schema, SCHEMA_RESERVED);
        }
        _ => return None,
    }
    writer.close();
    Some(())
}

fn write_field(out: &mut String, field: &Ordered, namespace: Option<&str>) -> Option<()> {
    let mut writer = ObjectWriter::open(out);
    writer.string("name", field.text("name")?);
    writer.key("type");
    let field_type = field.get("type")?;
    write_schema(writer.out, field_type, namespace)?;
    writer.optional_string("doc", field.text("doc"));
    if let Some(default) = field.get("default") {
        writer.key("default");
        match default {
            // A floating-point field's default given as text is read as a number.
            Ordered::String(text) if is_floating(field_type) => {
                writer.out.push_str(&java_double(text.trim().parse::<f64>().ok()?));
            }
            default => write_value(writer.out, default),
        }
    }
    if let Some(order) = field.text("order").map(str::to_ascii_lowercase)
        && order != "ascending"
    {
        writer.string("order", &order);
    }
    if let Some(aliases) = field.get("aliases") {
        writer.key("aliases");
        write_value(writer.out, aliases);
    }
    writer.properties(field, FIELD_RESERVED);
    writer.close();
    Some(())
}

fn is_floating(schema: &Ordered) -> bool {
    let kind = match schema {
        Ordered::String(kind) => kind.as_str(),
        schema => schema.text("type").unwrap_or_default(),
    };
    matches!(kind, "float" | "double")
}

/// The keys of `object` Avro keeps as properties, in the author's order.
fn properties<'a>(object: &'a Ordered, reserved: &'a [&'a str]) -> impl Iterator<Item = &'a (String, Ordered)> + 'a {
    let entries: &[(String, Ordered)] = match object {
        Ordered::Object(entries) => entries,
        _ => &[],
    };
    entries.iter().filter(move |(key, _)| !reserved.contains(&key.as_str()))
}

/// Writes one JSON object, key by key.
struct ObjectWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> ObjectWriter<'a> {
    fn open(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        write_string(self.out, key);
        self.out.push(':');
    }

    fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        write_string(self.out, value);
    }

    fn optional_string(&mut self, key: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.string(key, value);
        }
    }

    /// `name` and, when needed, `namespace` of a named type found inside
    /// `enclosing`; returns the type's own namespace.
    fn name(&mut self, schema: &Ordered, enclosing: Option<&str>) -> Option<Option<String>> {
        let written_space = match schema.get("namespace") {
            Some(Ordered::String(space)) => Some(space.as_str()),
            _ => enclosing,
        };
        let (simple, space) = split_name(schema.text("name")?, written_space);
        self.string("name", &simple);
        match (&space, enclosing.filter(|enclosing| !enclosing.is_empty())) {
            (Some(space), enclosing) if Some(space.as_str()) != enclosing => self.string("namespace", space),
            (None, Some(_)) => self.string("namespace", ""),
            _ => {}
        }
        Some(space)
    }

    /// A named type's aliases, each relative to the type's namespace.
    fn aliases(&mut self, schema: &Ordered, space: Option<&str>) {
        let Some(Ordered::Array(aliases)) = schema.get("aliases") else {
            return;
        };
        let mut written: Vec<String> = Vec::new();
        for alias in aliases {
            let Ordered::String(alias) = alias else { continue };
            let (simple, alias_space) = split_name(alias, space);
            let alias = qualified(&simple, alias_space.as_deref(), space);
            // Avro keeps aliases in a set.
            if !written.contains(&alias) {
                written.push(alias);
            }
        }
        if written.is_empty() {
            return;
        }
        self.key("aliases");
        self.out.push('[');
        for (index, alias) in written.iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            write_string(self.out, alias);
        }
        self.out.push(']');
    }

    fn properties(&mut self, object: &Ordered, reserved: &[&str]) {
        for (key, value) in properties(object, reserved) {
            self.key(key);
            write_value(self.out, value);
        }
    }

    fn close(self) {
        self.out.push('}');
    }
}

/// A JSON value as Jackson writes it.
fn write_value(out: &mut String, value: &Ordered) {
    match value {
        Ordered::Null => out.push_str("null"),
        Ordered::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Ordered::Number(number) => match number.as_f64().filter(|_| number.is_f64()) {
            Some(float) => out.push_str(&java_double(float)),
            None => {
                let _ = write!(out, "{number}");
            }
        },
        Ordered::String(text) => write_string(out, text),
        Ordered::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Ordered::Object(entries) => {
            out.push('{');
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Jackson writes it.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            character if u32::from(character) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", u32::from(character));
            }
            character => out.push(character),
        }
    }
    out.push('"');
}

/// A double as Java's `Double.toString` writes it: plain with at least one
/// decimal between 10⁻³ and 10⁷, else `d.dddE±n`.
fn java_double(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e7).contains(&magnitude) {
        let plain = format!("{value}");
        return if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        };
    }
    // Rust's `{:e}` gives the shortest digits that read back: `1.5e-4`, `1e7`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_of(text: &str) -> String {
        schema_string(text).unwrap_or_else(|| panic!("not rendered: {text}"))
    }

    #[test]
    fn a_record_comes_out_in_avro_key_order_with_properties_after_the_known_keys() {
        // Issue 39 item 8: the author's order is not what Confluent answers.
        let sent = r#"{"fields":[{"default":0,"type":"int","name":"id","doc":"the id","x-owner":"a"}],
            "doc":"an order","namespace":"shop","name":"Order","type":"record","x-team":"t"}"#;
        assert_eq!(
            string_of(sent),
            r#"{"type":"record","name":"Order","namespace":"shop","doc":"an order","fields":[{"name":"id","type":"int","doc":"the id","default":0,"x-owner":"a"}],"x-team":"t"}"#
        );
    }

    #[test]
    fn nested_names_are_written_relative_to_the_enclosing_namespace() {
        let sent = r#"{"type":"record","name":"shop.Order","fields":[
            {"name":"line","type":{"type":"record","name":"Line","namespace":"shop","fields":[]}},
            {"name":"again","type":"shop.Line"},
            {"name":"other","type":{"type":"enum","name":"other.Kind","symbols":["A"],"aliases":["other.Old","Older"]}},
            {"name":"bare","type":{"type":"fixed","name":"Bare","namespace":"","size":2}},
            {"name":"typed","type":"shop.record"}]}"#;
        assert_eq!(
            string_of(sent),
            r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"line","type":{"type":"record","name":"Line","fields":[]}},{"name":"again","type":"Line"},{"name":"other","type":{"type":"enum","name":"Kind","namespace":"other","symbols":["A"],"aliases":["Old","Older"]}},{"name":"bare","type":{"type":"fixed","name":"Bare","namespace":"","size":2}},{"name":"typed","type":"shop.record"}]}"#
        );
    }

    #[test]
    fn primitives_lose_reserved_attributes_and_keep_properties() {
        assert_eq!(string_of(r#"{"type":"int","name":"foo","doc":"d"}"#), r#""int""#);
        assert_eq!(
            string_of(r#"{"logicalType":"decimal","type":"bytes","scale":2,"precision":4}"#),
            r#"{"type":"bytes","logicalType":"decimal","scale":2,"precision":4}"#
        );
        assert_eq!(
            string_of(r#"[ "null", {"values":"long","type":"map"} ]"#),
            r#"["null",{"type":"map","values":"long"}]"#
        );
    }

    #[test]
    fn a_schema_nested_deeper_than_the_parser_allows_is_left_as_it_is() {
        let deep = format!(
            "{}\"int\"{}",
            "{\"type\":\"array\",\"items\":".repeat(300),
            "}".repeat(300)
        );
        assert_eq!(schema_string(&deep), None);
    }

    #[test]
    fn values_are_written_as_jackson_writes_them() {
        let sent = "{\"type\":\"record\",\"name\":\"R\",\"doc\":\"tab\\tbell\\u0007 é\",\"fields\":[\
            {\"name\":\"d\",\"type\":\"double\",\"default\":\"1e7\",\"order\":\"DESCENDING\"},\
            {\"name\":\"f\",\"type\":\"float\",\"default\":1.50,\"order\":\"ascending\"},\
            {\"name\":\"s\",\"type\":\"string\",\"default\":\"x\",\"aliases\":[\"t\"]}]}";
        assert_eq!(
            string_of(sent),
            "{\"type\":\"record\",\"name\":\"R\",\"doc\":\"tab\\tbell\\u0007 é\",\"fields\":[\
             {\"name\":\"d\",\"type\":\"double\",\"default\":1.0E7,\"order\":\"descending\"},\
             {\"name\":\"f\",\"type\":\"float\",\"default\":1.5},\
             {\"name\":\"s\",\"type\":\"string\",\"default\":\"x\",\"aliases\":[\"t\"]}]}"
        );
        assert_eq!(java_double(1.5e-4), "1.5E-4");
        assert_eq!(java_double(100.0), "100.0");
        assert_eq!(java_double(-0.001), "-0.001");
    }
}

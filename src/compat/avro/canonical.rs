//! The canonical text of an Avro schema, the identity a registry keys schema
//! IDs on: two texts that differ only in layout, in `{"type":"string"}`
//! against `"string"`, in key order, or in how names are qualified give the
//! same canonical text; any difference in doc, defaults, aliases, order or
//! custom attributes gives a different one. (Avro's Parsing Canonical Form
//! drops doc, defaults and aliases, so it cannot serve as the identity.)
//!
//! Every named type is written with its full name and no `namespace`, in
//! full where it first appears and by name afterwards; named types that come
//! from references are written by name only. Object keys are in a fixed
//! order, custom attributes sorted, and JSON values have sorted keys.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::model::{AvroSchema, Field, Name, NodeId, Type};
use crate::compat::stack::{deep, walk};

impl AvroSchema {
    /// The canonical text of this schema (see the module docs).
    pub fn canonical(&self) -> String {
        let mut writer = Writer {
            schema: self,
            written: HashSet::new(),
            out: String::new(),
        };
        walk(self.nesting, || writer.write_type(self.root));
        writer.out
    }

    /// The SHA-256 of the canonical text, in lowercase hex.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.canonical().as_bytes());
        digest.iter().fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
    }
}

struct Writer<'s> {
    schema: &'s AvroSchema,
    written: HashSet<NodeId>,
    out: String,
}

impl Writer<'_> {
    fn write_type(&mut self, id: NodeId) {
        deep(|| self.write_type_here(id));
    }

    fn write_type_here(&mut self, id: NodeId) {
        let types = &self.schema.types;
        let properties = types.properties(id);
        match types.ty(id) {
            Type::Primitive(primitive) if properties.is_empty() => write_string(&mut self.out, primitive.name()),
            Type::Primitive(primitive) => {
                self.out.push_str("{\"type\":");
                write_string(&mut self.out, primitive.name());
                self.write_properties(properties);
                self.out.push('}');
            }
            Type::Array(items) => {
                self.out.push_str("{\"type\":\"array\",\"items\":");
                self.write_type(*items);
                self.write_properties(properties);
                self.out.push('}');
            }
            Type::Map(values) => {
                self.out.push_str("{\"type\":\"map\",\"values\":");
                self.write_type(*values);
                self.write_properties(properties);
                self.out.push('}');
            }
            Type::Union(branches) => {
                self.out.push('[');
                for (index, branch) in branches.iter().enumerate() {
                    if index > 0 {
                        self.out.push(',');
                    }
                    self.write_type(*branch);
                }
                self.out.push(']');
            }
            Type::Record(record) => {
                if self.write_reference(id, &record.name) {
                    return;
                }
                self.write_name("record", &record.name);
                self.out.push_str(",\"fields\":[");
                for (index, field) in record.fields.iter().enumerate() {
                    if index > 0 {
                        self.out.push(',');
                    }
                    self.write_field(record.field_name(index), field);
                }
                self.out.push(']');
                self.write_properties(properties);
                self.out.push('}');
            }
            Type::Enum(enumeration) => {
                if self.write_reference(id, &enumeration.name) {
                    return;
                }
                self.write_name("enum", &enumeration.name);
                self.out.push_str(",\"symbols\":");
                write_strings(&mut self.out, &enumeration.symbols);
                if let Some(default) = &enumeration.default {
                    self.out.push_str(",\"default\":");
                    write_string(&mut self.out, default);
                }
                self.write_properties(properties);
                self.out.push('}');
            }
            Type::Fixed(fixed) => {
                if self.write_reference(id, &fixed.name) {
                    return;
                }
                self.write_name("fixed", &fixed.name);
                let _ = write!(self.out, ",\"size\":{}", fixed.size);
                self.write_properties(properties);
                self.out.push('}');
            }
        }
    }

    /// Writes a named type by name when it comes from a reference or was
    /// written already; returns whether it did.
    fn write_reference(&mut self, id: NodeId, name: &Name) -> bool {
        if id < self.schema.first_own_node || !self.written.insert(id) {
            write_string(&mut self.out, &name.full);
            return true;
        }
        false
    }

    fn write_name(&mut self, kind: &str, name: &Name) {
        self.out.push_str("{\"type\":");
        write_string(&mut self.out, kind);
        self.out.push_str(",\"name\":");
        write_string(&mut self.out, &name.full);
        if !name.aliases.is_empty() {
            self.out.push_str(",\"aliases\":");
            write_strings(&mut self.out, &name.aliases);
        }
        if let Some(doc) = &name.doc {
            self.out.push_str(",\"doc\":");
            write_string(&mut self.out, doc);
        }
    }

    fn write_field(&mut self, name: &str, field: &Field) {
        self.out.push_str("{\"name\":");
        write_string(&mut self.out, name);
        self.out.push_str(",\"type\":");
        self.write_type(field.ty);
        if let Some(doc) = field.doc() {
            self.out.push_str(",\"doc\":");
            write_string(&mut self.out, doc);
        }
        if let Some(default) = field.default() {
            self.out.push_str(",\"default\":");
            write_value(&mut self.out, default);
        }
        if let Some(order) = field.order() {
            self.out.push_str(",\"order\":");
            write_string(&mut self.out, order);
        }
        if !field.aliases().is_empty() {
            self.out.push_str(",\"aliases\":");
            write_strings(&mut self.out, field.aliases());
        }
        self.write_properties(field.properties());
        self.out.push('}');
    }

    fn write_properties(&mut self, properties: &BTreeMap<String, Value>) {
        for (key, value) in properties {
            self.out.push(',');
            write_string(&mut self.out, key);
            self.out.push(':');
            write_value(&mut self.out, value);
        }
    }
}

fn write_string(out: &mut String, text: &str) {
    out.push_str(&Value::from(text).to_string());
}

fn write_strings(out: &mut String, items: &[String]) {
    out.push('[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(out, item);
    }
    out.push(']');
}

/// JSON with object keys sorted, whatever order the parser kept.
fn write_value(out: &mut String, value: &Value) {
    deep(|| write_value_here(out, value));
}

fn write_value_here(out: &mut String, value: &Value) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(entries) => {
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &entries[key]);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use crate::compat::SchemaText;
    use crate::compat::avro::AvroSchema;

    fn canonical(text: &str) -> String {
        AvroSchema::parse(&SchemaText::new(text)).unwrap().canonical()
    }

    fn same_identity(a: &str, b: &str) -> bool {
        canonical(a) == canonical(b)
    }

    #[test]
    fn layout_key_order_and_the_long_primitive_form_do_not_change_the_identity() {
        let compact = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#;
        let spread = "{\n  \"fields\": [ { \"type\": {\"type\": \"string\"}, \"name\": \"a\" } ],\n  \"name\": \"R\",\n  \"type\": \"record\"\n}";
        assert!(same_identity(compact, spread));
        assert_eq!(
            canonical(compact),
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#
        );
    }

    #[test]
    fn a_namespace_written_either_way_gives_one_identity() {
        let split =
            r#"{"type":"record","name":"User","namespace":"ex","fields":[{"name":"next","type":["null","User"]}]}"#;
        let dotted = r#"{"type":"record","name":"ex.User","fields":[{"name":"next","type":["null","ex.User"]}]}"#;
        assert!(same_identity(split, dotted));
        assert_eq!(
            canonical(split),
            r#"{"type":"record","name":"ex.User","fields":[{"name":"next","type":["null","ex.User"]}]}"#
        );
    }

    #[test]
    fn doc_default_aliases_order_and_custom_attributes_do_change_the_identity() {
        let base = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
        let variants = [
            r#"{"type":"record","name":"R","doc":"d","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":1}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","aliases":["b"]}]}"#,
            r#"{"type":"record","name":"R","aliases":["Q"],"fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"descending"}]}"#,
            r#"{"type":"record","name":"R","connect.name":"x","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"int","logicalType":"date"}}]}"#,
        ];
        for variant in variants {
            assert!(!same_identity(base, variant), "{variant}");
        }
        let ascending = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","order":"ascending"}]}"#;
        assert!(same_identity(base, ascending), "ascending is the default order");
    }

    #[test]
    fn json_values_in_defaults_and_attributes_are_written_with_sorted_keys() {
        let a = r#"{"type":"record","name":"R","x":{"b":1,"a":2},"fields":[{"name":"m","type":{"type":"map","values":"int"},"default":{"z":1,"y":2}}]}"#;
        let b = r#"{"type":"record","name":"R","x":{"a":2,"b":1},"fields":[{"name":"m","type":{"type":"map","values":"int"},"default":{"y":2,"z":1}}]}"#;
        assert!(same_identity(a, b));
    }

    #[test]
    fn the_canonical_form_parses_back_to_itself() {
        let text = r#"{"type":"record","name":"R","namespace":"n","doc":"d","fields":[
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"],"default":"A"},"default":"B"},
            {"name":"f","type":{"type":"fixed","name":"F","size":2,"aliases":["G"]}},
            {"name":"again","type":["null","E","F"],"default":null},
            {"name":"l","type":{"type":"array","items":{"type":"map","values":"n.R"}},"doc":"x"}]}"#;
        let once = canonical(text);
        assert_eq!(canonical(&once), once);
        assert!(
            once.contains(r#""name":"n.E""#) && once.contains(r#"["null","n.E","n.F"]"#),
            "{once}"
        );
    }

    #[test]
    fn the_fingerprint_is_a_sha256_of_the_canonical_form() {
        let schema = AvroSchema::parse(&SchemaText::new(r#""string""#)).unwrap();
        // SHA-256 of the five bytes `"string"` with quotes, as `sha256sum` prints it.
        assert_eq!(
            schema.fingerprint(),
            "e9e5c1c9e4f6277339d1bcde0733a59bd42f8731f449da6dc13010a916930d48"
        );
    }
}

//! Whether a field's `default` is a value of the field's type, in Avro's JSON
//! encoding of defaults.

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::model::{NodeId, Primitive, Type, Types};
use crate::compat::stack::deep;

/// Checks `value` against the type `id`; the error says what was expected.
///
/// A union default may match any branch (Avro 1.12). A record default may
/// leave out fields that have defaults of their own. Recursion follows the
/// value, whose depth the JSON parser bounds, so recursive types terminate.
pub(crate) fn check(types: &Types, id: NodeId, value: &Value) -> Result<(), String> {
    Checker {
        types,
        answers: FxHashMap::default(),
    }
    .check(id, value)
}

/// Remembers the answer for each (type, array or object value) pair: a
/// union tries a value against each branch, and when two record branches
/// each hold the union again, every level would double the work (issue 14:
/// a 300-byte schema with a default 20 levels deep took 1.2 s, and 30
/// levels 20 minutes). With the answers kept, the work is at most the size
/// of the value times the number of types.
struct Checker<'t> {
    types: &'t Types,
    /// By type and the value's address: values are borrowed for the whole check.
    answers: FxHashMap<(NodeId, *const Value), Result<(), String>>,
}

impl Checker<'_> {
    fn check(&mut self, id: NodeId, value: &Value) -> Result<(), String> {
        if !(value.is_array() || value.is_object()) {
            return self.check_here(id, value);
        }
        let key = (id, std::ptr::from_ref(value));
        if let Some(answer) = self.answers.get(&key) {
            return answer.clone();
        }
        let answer = deep(|| self.check_here(id, value));
        self.answers.insert(key, answer.clone());
        answer
    }

    fn check_here(&mut self, id: NodeId, value: &Value) -> Result<(), String> {
        let types = self.types;
        let ok = match types.ty(id) {
            Type::Primitive(primitive) => matches_primitive(*primitive, value),
            Type::Enum(enumeration) => value
                .as_str()
                .is_some_and(|symbol| enumeration.symbols.iter().any(|s| s == symbol)),
            Type::Fixed(fixed) => value
                .as_str()
                .is_some_and(|text| is_byte_string(text) && text.chars().count() as u64 == fixed.size),
            Type::Array(items) => match value {
                Value::Array(elements) => {
                    for element in elements {
                        self.check(*items, element)?;
                    }
                    true
                }
                _ => false,
            },
            Type::Map(values) => match value {
                Value::Object(entries) => {
                    for entry in entries.values() {
                        self.check(*values, entry)?;
                    }
                    true
                }
                _ => false,
            },
            Type::Union(branches) => branches.iter().any(|branch| self.check(*branch, value).is_ok()),
            Type::Record(record) => match value {
                Value::Object(entries) => {
                    for (position, field) in record.fields.iter().enumerate() {
                        let name = record.field_name(position);
                        match entries.get(name) {
                            Some(entry) => self.check(field.ty, entry)?,
                            None if field.default().is_some() => {}
                            None => {
                                return Err(format!(
                                    "the value for record `{}` has no `{}`, and that field has no default",
                                    record.name.full, name
                                ));
                            }
                        }
                    }
                    true
                }
                _ => false,
            },
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "expected {}, found {}",
                expectation(types, id),
                describe(value)
            ))
        }
    }
}

fn matches_primitive(primitive: Primitive, value: &Value) -> bool {
    match primitive {
        Primitive::Null => value.is_null(),
        Primitive::Boolean => value.is_boolean(),
        Primitive::Int => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        Primitive::Long => value.is_i64(),
        Primitive::Float | Primitive::Double => value.is_number(),
        Primitive::Bytes => value.as_str().is_some_and(is_byte_string),
        Primitive::String => value.is_string(),
    }
}

/// Bytes and fixed defaults are strings whose code points 0–255 stand for bytes.
fn is_byte_string(text: &str) -> bool {
    text.chars().all(|c| u32::from(c) <= 0xFF)
}

fn expectation(types: &Types, id: NodeId) -> String {
    match types.ty(id) {
        Type::Primitive(Primitive::Null) => "null".to_owned(),
        Type::Primitive(Primitive::Boolean) => "true or false".to_owned(),
        Type::Primitive(Primitive::Int) => "a whole number from -2147483648 to 2147483647".to_owned(),
        Type::Primitive(Primitive::Long) => "a whole number that fits in 64 bits".to_owned(),
        Type::Primitive(Primitive::Float | Primitive::Double) => "a number".to_owned(),
        Type::Primitive(Primitive::Bytes) => "a string of characters \\u0000 to \\u00ff (one per byte)".to_owned(),
        Type::Primitive(Primitive::String) => "a string".to_owned(),
        Type::Enum(enumeration) => format!("one of the symbols {:?}", enumeration.symbols),
        Type::Fixed(fixed) => format!(
            "a string of exactly {} characters \\u0000 to \\u00ff (one per byte)",
            fixed.size
        ),
        Type::Array(_) => "a JSON array".to_owned(),
        Type::Map(_) => "a JSON object".to_owned(),
        Type::Union(branches) => {
            let names: Vec<String> = branches.iter().map(|branch| expectation(types, *branch)).collect();
            format!("a value of one of the union's branches ({})", names.join("; or "))
        }
        Type::Record(record) => format!("a JSON object with the fields of record `{}`", record.name.full),
    }
}

/// How a JSON value reads in a message: its kind and, when short, itself.
fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => return "an array".to_owned(),
        Value::Object(_) => return "an object".to_owned(),
    };
    let text = value.to_string();
    if text.len() <= 40 {
        format!("{kind} {text}")
    } else {
        kind.to_owned()
    }
}

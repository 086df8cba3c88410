//! Generated Avro schemas for property tests: a small universe (few field
//! names, named types named after their position) so that independently
//! drawn schemas are often related and both verdicts occur; and generated
//! values of a schema, as `apache-avro` values.

use std::collections::{BTreeMap, HashMap};

use apache_avro::types::Value as AvroValue;
use proptest::prelude::*;
use serde_json::{Value, json};

pub const FIELD_NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
pub const SYMBOLS: [&str; 4] = ["A", "B", "C", "D"];

/// The structure of a type; names of named types come from their position.
#[derive(Debug, Clone)]
pub enum Shape {
    Primitive(&'static str),
    Enum { symbols: Vec<usize>, default: bool },
    Fixed(u8),
    Array(Box<Shape>),
    Map(Box<Shape>),
    Union(Vec<Shape>),
    Record(Vec<FieldShape>),
}

#[derive(Debug, Clone)]
pub struct FieldShape {
    pub name: usize,
    pub shape: Shape,
    pub default: bool,
    /// Earlier names of the field, oldest first.
    pub aliases: Vec<usize>,
}

pub fn primitive() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just("null"),
        Just("boolean"),
        Just("int"),
        Just("long"),
        Just("float"),
        Just("double"),
        Just("bytes"),
        Just("string"),
    ]
    .prop_map(Shape::Primitive)
}

pub fn shape() -> impl Strategy<Value = Shape> {
    let leaf = prop_oneof![
        4 => primitive(),
        1 => (proptest::sample::subsequence((0..SYMBOLS.len()).collect::<Vec<_>>(), 1..=SYMBOLS.len()), any::<bool>())
            .prop_map(|(symbols, default)| Shape::Enum { symbols, default }),
        1 => (1u8..3).prop_map(Shape::Fixed),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| Shape::Array(Box::new(s))),
            inner.clone().prop_map(|s| Shape::Map(Box::new(s))),
            (
                proptest::sample::subsequence(vec!["null", "int", "long", "string", "boolean"], 1..=3),
                inner.clone()
            )
                .prop_map(|(names, extra)| {
                    let mut branches: Vec<Shape> = names.into_iter().map(Shape::Primitive).collect();
                    if matches!(extra, Shape::Record(_) | Shape::Enum { .. } | Shape::Fixed(_)) {
                        branches.push(extra);
                    }
                    Shape::Union(branches)
                }),
            fields(inner).prop_map(Shape::Record),
        ]
    })
}

pub fn fields(inner: impl Strategy<Value = Shape>) -> impl Strategy<Value = Vec<FieldShape>> {
    proptest::collection::vec(
        (
            inner,
            any::<bool>(),
            proptest::option::weighted(0.2, 0..FIELD_NAMES.len()),
        ),
        0..=FIELD_NAMES.len(),
    )
    .prop_flat_map(|drawn| {
        let count = drawn.len();
        (
            Just(drawn),
            proptest::sample::subsequence((0..FIELD_NAMES.len()).collect::<Vec<_>>(), count),
        )
    })
    .prop_map(|(drawn, names)| {
        // An alias names a field's old name, so it never names a sibling.
        let taken = names.clone();
        drawn
            .into_iter()
            .zip(names)
            .map(|((shape, default, alias), name)| FieldShape {
                name,
                shape,
                default,
                aliases: alias.filter(|alias| !taken.contains(alias)).into_iter().collect(),
            })
            .collect()
    })
}

/// A whole schema's shape: a record at the root.
pub fn root_shape() -> impl Strategy<Value = Shape> {
    fields(shape()).prop_map(Shape::Record)
}

/// Named types that evolution renamed: from a type's position name (the
/// name [`render`] derives from where it sits) to the name it has now and
/// the names it had before.
pub type TypeNames = BTreeMap<String, (String, Vec<String>)>;

/// The text of a root shape: a record named `R`.
pub fn root_text(shape: &Shape) -> String {
    root_text_named(shape, &TypeNames::new())
}

/// The text of a root shape whose named types may have been renamed.
pub fn root_text_named(shape: &Shape, names: &TypeNames) -> String {
    render_named(shape, "R", names).to_string()
}

/// The position names of the named types in `shape` (named `name`), in pre-order.
pub fn named_types(shape: &Shape, name: &str, into: &mut Vec<String>) {
    match shape {
        Shape::Primitive(_) => {}
        Shape::Enum { .. } | Shape::Fixed(_) => into.push(name.to_owned()),
        Shape::Array(items) => named_types(items, &format!("{name}_items"), into),
        Shape::Map(values) => named_types(values, &format!("{name}_values"), into),
        Shape::Union(branches) => branches.iter().for_each(|branch| named_types(branch, name, into)),
        Shape::Record(fields) => {
            into.push(name.to_owned());
            for field in fields {
                named_types(&field.shape, &format!("{name}_{}", FIELD_NAMES[field.name]), into);
            }
        }
    }
}

/// Gives the named type `value`, at position `name`, its current name and aliases.
fn name_type(value: &mut Value, name: &str, names: &TypeNames) {
    match names.get(name) {
        None => value["name"] = json!(name),
        Some((current, aliases)) => {
            value["name"] = json!(current);
            if !aliases.is_empty() {
                value["aliases"] = json!(aliases);
            }
        }
    }
}

/// A whole schema: a record named `R` at the root.
pub fn schema() -> impl Strategy<Value = String> {
    root_shape().prop_map(|shape| root_text(&shape))
}

/// A shape as Avro JSON, its named types named after their position `name`.
pub fn render(shape: &Shape, name: &str) -> Value {
    render_named(shape, name, &TypeNames::new())
}

fn render_named(shape: &Shape, name: &str, names: &TypeNames) -> Value {
    let mut value = match shape {
        Shape::Primitive(primitive) => return json!(primitive),
        Shape::Enum { symbols, default } => {
            let symbols: Vec<&str> = symbols.iter().map(|i| SYMBOLS[*i]).collect();
            let mut value = json!({"type": "enum", "symbols": symbols});
            if *default {
                value["default"] = json!(symbols[0]);
            }
            value
        }
        Shape::Fixed(size) => json!({"type": "fixed", "size": size}),
        Shape::Array(items) => {
            return json!({"type": "array", "items": render_named(items, &format!("{name}_items"), names)});
        }
        Shape::Map(values) => {
            return json!({"type": "map", "values": render_named(values, &format!("{name}_values"), names)});
        }
        // A union holds at most one named branch, which takes the union's
        // name, so making a field nullable keeps its named type's name.
        Shape::Union(branches) => {
            return Value::Array(
                branches
                    .iter()
                    .map(|branch| render_named(branch, name, names))
                    .collect(),
            );
        }
        Shape::Record(fields) => {
            let fields: Vec<Value> = fields
                .iter()
                .map(|field| {
                    let field_name = FIELD_NAMES[field.name];
                    let field_type = render_named(&field.shape, &format!("{name}_{field_name}"), names);
                    let mut value = json!({"name": field_name, "type": field_type});
                    if field.default {
                        value["default"] = default_for(&field.shape);
                    }
                    if !field.aliases.is_empty() {
                        let aliases: Vec<&str> = field.aliases.iter().map(|alias| FIELD_NAMES[*alias]).collect();
                        value["aliases"] = json!(aliases);
                    }
                    value
                })
                .collect();
            json!({"type": "record", "fields": fields})
        }
    };
    name_type(&mut value, name, names);
    value
}

pub fn default_for(shape: &Shape) -> Value {
    match shape {
        Shape::Primitive("null") => Value::Null,
        Shape::Primitive("boolean") => json!(false),
        Shape::Primitive("int" | "long") => json!(7),
        Shape::Primitive("float" | "double") => json!(1.5),
        Shape::Primitive(_) => json!("s"),
        Shape::Enum { symbols, .. } => json!(SYMBOLS[symbols[0]]),
        Shape::Fixed(size) => json!("x".repeat(usize::from(*size))),
        Shape::Array(_) => json!([]),
        Shape::Map(_) => json!({}),
        Shape::Union(branches) => default_for(&branches[0]),
        Shape::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|field| (FIELD_NAMES[field.name].to_owned(), default_for(&field.shape)))
                .collect(),
        ),
    }
}

/// Values of `shape`, as `apache-avro` writes them.
pub fn value(shape: &Shape) -> BoxedStrategy<AvroValue> {
    match shape {
        Shape::Primitive("null") => Just(AvroValue::Null).boxed(),
        Shape::Primitive("boolean") => any::<bool>().prop_map(AvroValue::Boolean).boxed(),
        Shape::Primitive("int") => any::<i32>().prop_map(AvroValue::Int).boxed(),
        Shape::Primitive("long") => any::<i64>().prop_map(AvroValue::Long).boxed(),
        Shape::Primitive("float") => (-1.0e6f32..1.0e6).prop_map(AvroValue::Float).boxed(),
        Shape::Primitive("double") => (-1.0e12f64..1.0e12).prop_map(AvroValue::Double).boxed(),
        // Bytes hold UTF-8 text: Avro promotes bytes to string, which only text survives.
        Shape::Primitive("bytes") => "[a-z]{0,6}"
            .prop_map(|text| AvroValue::Bytes(text.into_bytes()))
            .boxed(),
        Shape::Primitive(_) => "[a-z]{0,6}".prop_map(AvroValue::String).boxed(),
        Shape::Enum { symbols, .. } => {
            let names: Vec<&'static str> = symbols.iter().map(|i| SYMBOLS[*i]).collect();
            (0..names.len())
                .prop_map(move |i| AvroValue::Enum(i as u32, names[i].to_owned()))
                .boxed()
        }
        Shape::Fixed(size) => {
            let size = usize::from(*size);
            proptest::collection::vec(any::<u8>(), size)
                .prop_map(move |bytes| AvroValue::Fixed(size, bytes))
                .boxed()
        }
        Shape::Array(items) => proptest::collection::vec(value(items), 0..3)
            .prop_map(AvroValue::Array)
            .boxed(),
        Shape::Map(values) => proptest::collection::hash_map("[a-z]{1,3}", value(values), 0..3)
            .prop_map(|entries: HashMap<String, AvroValue>| AvroValue::Map(entries))
            .boxed(),
        Shape::Union(branches) => {
            let choices: Vec<BoxedStrategy<AvroValue>> = branches
                .iter()
                .enumerate()
                .map(|(index, branch)| {
                    value(branch)
                        .prop_map(move |inner| AvroValue::Union(index as u32, Box::new(inner)))
                        .boxed()
                })
                .collect();
            proptest::strategy::Union::new(choices).boxed()
        }
        Shape::Record(fields) => {
            let parts: Vec<BoxedStrategy<(String, AvroValue)>> = fields
                .iter()
                .map(|field| {
                    let name = FIELD_NAMES[field.name].to_owned();
                    value(&field.shape).prop_map(move |inner| (name.clone(), inner)).boxed()
                })
                .collect();
            parts.prop_map(AvroValue::Record).boxed()
        }
    }
}

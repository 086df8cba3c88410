//! Generated JSON Schema histories and instances for the soundness tests.
//!
//! A history starts from a generated object schema and grows one version
//! at a time by an evolution edit of the kind people make: add or remove a
//! property, require or stop requiring one, open or close an object, move a
//! bound, widen or narrow a type, add or drop an enum value, change a type
//! outright; anywhere in the tree, nested objects and array items included.
//! Property names come from a universe of five, so an edit often touches a
//! name an earlier version (or an earlier writer's undeclared property) used.
//!
//! Instances are generated from the same model, so each one is valid for
//! its schema by construction (the tests still confirm it with `jsonschema`).
//! With `extras`, open objects also carry undeclared properties, as
//! Confluent's STRICT policy assumes writers may write.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The property names every schema draws from.
pub const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];
/// Undeclared names no schema uses, written into open objects besides the unused `NAMES`.
const STRANGERS: [&str; 2] = ["x", "y"];
/// The values enums draw from.
pub const SYMBOLS: [&str; 4] = ["red", "green", "blue", "grey"];

/// A scalar JSON Schema type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    String,
    Integer,
    Number,
    Boolean,
}

impl Scalar {
    fn name(self) -> &'static str {
        match self {
            Scalar::String => "string",
            Scalar::Integer => "integer",
            Scalar::Number => "number",
            Scalar::Boolean => "boolean",
        }
    }

    fn bounded(self) -> bool {
        self != Scalar::Boolean
    }
}

/// The model of a generated schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    /// A scalar, optionally also `null` (`"type": [T, "null"]`). The bounds
    /// are `minLength`/`maxLength` for strings, `minimum`/`maximum` for
    /// numbers; always `lower <= upper` when both are set.
    Scalar {
        kind: Scalar,
        nullable: bool,
        lower: Option<i64>,
        upper: Option<i64>,
    },
    Null,
    /// `{}`: any value.
    Any,
    /// `enum` of some `SYMBOLS` (never empty).
    Enum(BTreeSet<usize>),
    Object(Object),
    Array {
        items: Box<Schema>,
        max_items: Option<i64>,
    },
}

/// An object schema: properties by index into `NAMES`.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    pub properties: BTreeMap<usize, Property>,
    pub additional: Additional,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub schema: Schema,
    pub required: bool,
    /// Whether the property carries a `default` (a valid value of its schema).
    pub default: bool,
    /// A `description`, by number: annotations that change no verdict on data.
    pub description: Option<u8>,
}

/// What `additionalProperties` says.
#[derive(Debug, Clone, PartialEq)]
pub enum Additional {
    Absent,
    True,
    False,
    Schema(Box<Schema>),
}

// ---------------------------------------------------------------- strategies

fn bounds(kind: Scalar) -> BoxedStrategy<(Option<i64>, Option<i64>)> {
    match kind {
        Scalar::Boolean => Just((None, None)).boxed(),
        Scalar::String => (
            proptest::option::weighted(0.3, 0i64..=2),
            proptest::option::weighted(0.4, 2i64..=8),
        )
            .boxed(),
        Scalar::Integer | Scalar::Number => (
            proptest::option::weighted(0.4, -5i64..=0),
            proptest::option::weighted(0.4, 1i64..=10),
        )
            .boxed(),
    }
}

/// A scalar schema, sometimes nullable, sometimes bounded.
pub fn scalar() -> impl Strategy<Value = Schema> {
    (
        prop_oneof![
            Just(Scalar::String),
            Just(Scalar::Integer),
            Just(Scalar::Number),
            Just(Scalar::Boolean)
        ],
        proptest::bool::weighted(0.2),
    )
        .prop_flat_map(|(kind, nullable)| {
            bounds(kind).prop_map(move |(lower, upper)| Schema::Scalar {
                kind,
                nullable,
                lower,
                upper,
            })
        })
}

fn enumeration() -> impl Strategy<Value = Schema> {
    proptest::sample::subsequence((0..SYMBOLS.len()).collect::<Vec<_>>(), 1..=3)
        .prop_map(|symbols| Schema::Enum(symbols.into_iter().collect()))
}

/// A schema that is not an object or array.
pub fn leaf() -> impl Strategy<Value = Schema> {
    prop_oneof![12 => scalar(), 2 => Just(Schema::Null), 1 => Just(Schema::Any), 4 => enumeration()]
}

fn additional() -> impl Strategy<Value = Additional> {
    prop_oneof![
        3 => Just(Additional::Absent),
        1 => Just(Additional::True),
        3 => Just(Additional::False),
        1 => prop_oneof![Just(Scalar::String), Just(Scalar::Integer)].prop_map(|kind| {
            Additional::Schema(Box::new(Schema::Scalar { kind, nullable: false, lower: None, upper: None }))
        }),
    ]
}

fn object(
    inner: impl Strategy<Value = Schema>,
    size: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Object> {
    (
        proptest::collection::btree_map(
            0..NAMES.len(),
            (
                inner,
                proptest::bool::weighted(0.4),
                proptest::option::weighted(0.2, 0u8..3),
            )
                .prop_map(|(schema, required, description)| Property {
                    schema,
                    required,
                    default: false,
                    description,
                }),
            size,
        ),
        additional(),
    )
        .prop_map(|(properties, additional)| Object { properties, additional })
}

/// Any schema: a leaf, or objects and arrays of them, two levels deep at most.
pub fn schema() -> impl Strategy<Value = Schema> {
    leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            object(inner.clone(), 0..=3).prop_map(Schema::Object),
            (inner, proptest::option::weighted(0.4, 1i64..=3)).prop_map(|(items, max_items)| Schema::Array {
                items: Box::new(items),
                max_items,
            }),
        ]
    })
}

/// A root schema: always an object.
pub fn root() -> impl Strategy<Value = Schema> {
    object(schema(), 1..=4).prop_map(Schema::Object)
}

/// The evolution edits, one per new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditKind {
    AddOptional,
    /// An optional property that takes any value (`{}`).
    AddFreeform,
    AddRequired,
    AddRequiredWithDefault,
    RemoveProperty,
    Require,
    Unrequire,
    SetAdditional,
    Tighten,
    Loosen,
    Widen,
    Narrow,
    EnumAdd,
    EnumRemove,
    ChangeType,
    Describe,
}

/// Every edit kind, in the order a kind with nowhere to apply gives way to the next.
const EDIT_KINDS: [EditKind; 16] = [
    EditKind::AddOptional,
    EditKind::AddFreeform,
    EditKind::AddRequired,
    EditKind::AddRequiredWithDefault,
    EditKind::RemoveProperty,
    EditKind::Require,
    EditKind::Unrequire,
    EditKind::SetAdditional,
    EditKind::Tighten,
    EditKind::Loosen,
    EditKind::Widen,
    EditKind::Narrow,
    EditKind::EnumAdd,
    EditKind::EnumRemove,
    EditKind::ChangeType,
    EditKind::Describe,
];

/// One edit: what it does, a number that picks where and how, and a fresh
/// schema for the edits that need one (an added property, a changed type).
#[derive(Debug, Clone)]
pub struct Edit {
    pub kind: EditKind,
    pub pick: u64,
    pub fresh: Schema,
}

fn edit() -> impl Strategy<Value = Edit> {
    use EditKind::*;
    let kind = prop_oneof![
        3 => Just(AddOptional),
        1 => Just(AddFreeform),
        2 => Just(AddRequired),
        1 => Just(AddRequiredWithDefault),
        3 => Just(RemoveProperty),
        2 => Just(Require),
        2 => Just(Unrequire),
        3 => Just(SetAdditional),
        2 => Just(Tighten),
        2 => Just(Loosen),
        2 => Just(Widen),
        2 => Just(Narrow),
        1 => Just(EnumAdd),
        1 => Just(EnumRemove),
        2 => Just(ChangeType),
        3 => Just(Describe),
    ];
    (kind, any::<u64>(), schema()).prop_map(|(kind, pick, fresh)| Edit { kind, pick, fresh })
}

/// A history v1..vn (n in 2..=4), each version the previous one with one edit applied.
pub fn history() -> impl Strategy<Value = Vec<Schema>> {
    (root(), proptest::collection::vec(edit(), 1..=3)).prop_map(|(base, edits)| {
        let mut versions = vec![base];
        for edit in &edits {
            let previous = versions.last().cloned().unwrap_or(Schema::Null);
            // An edit with nowhere to apply gives way to the next kind, so versions differ.
            let start = EDIT_KINDS.iter().position(|kind| *kind == edit.kind).unwrap_or(0);
            let mut next = previous.clone();
            for offset in 0..EDIT_KINDS.len() {
                next = previous.clone();
                let kind = EDIT_KINDS[(start + offset) % EDIT_KINDS.len()];
                apply(&mut next, &Edit { kind, ..edit.clone() });
                if next != previous {
                    break;
                }
            }
            versions.push(next);
        }
        versions
    })
}

// ---------------------------------------------------------------- edits

/// A tiny deterministic generator for the choices inside an edit.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn choose<T: Clone>(&mut self, from: &[T]) -> Option<T> {
        (!from.is_empty()).then(|| from[self.below(from.len())].clone())
    }
}

/// A step from a schema to one inside it.
#[derive(Debug, Clone, Copy)]
enum Step {
    Property(usize),
    Items,
}

/// The paths of every node of `schema` that `wanted` accepts.
fn paths(schema: &Schema, wanted: &dyn Fn(&Schema) -> bool) -> Vec<Vec<Step>> {
    fn walk(schema: &Schema, here: &mut Vec<Step>, wanted: &dyn Fn(&Schema) -> bool, out: &mut Vec<Vec<Step>>) {
        if wanted(schema) {
            out.push(here.clone());
        }
        match schema {
            Schema::Object(object) => {
                for (name, property) in &object.properties {
                    here.push(Step::Property(*name));
                    walk(&property.schema, here, wanted, out);
                    here.pop();
                }
            }
            Schema::Array { items, .. } => {
                here.push(Step::Items);
                walk(items, here, wanted, out);
                here.pop();
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), wanted, &mut out);
    out
}

fn at_mut<'s>(schema: &'s mut Schema, path: &[Step]) -> &'s mut Schema {
    let Some((first, rest)) = path.split_first() else {
        return schema;
    };
    let inner = match (schema, first) {
        (Schema::Object(object), Step::Property(name)) => {
            &mut object.properties.get_mut(name).expect("a path found by `paths`").schema
        }
        (Schema::Array { items, .. }, Step::Items) => items.as_mut(),
        _ => unreachable!("a path found by `paths`"),
    };
    at_mut(inner, rest)
}

/// The node a random path accepted by `wanted` leads to, if any.
fn pick<'s>(schema: &'s mut Schema, dice: &mut Dice, wanted: &dyn Fn(&Schema) -> bool) -> Option<&'s mut Schema> {
    let path = dice.choose(&paths(schema, wanted))?;
    Some(at_mut(schema, &path))
}

fn is_object(schema: &Schema) -> bool {
    matches!(schema, Schema::Object(_))
}

fn is_bounded(schema: &Schema) -> bool {
    matches!(schema, Schema::Scalar { kind, .. } if kind.bounded()) || matches!(schema, Schema::Array { .. })
}

/// Applies one edit; an edit with nowhere to apply leaves the schema as it is.
pub fn apply(schema: &mut Schema, edit: &Edit) {
    use EditKind::*;
    let dice = &mut Dice(edit.pick);
    match edit.kind {
        AddOptional | AddFreeform | AddRequired | AddRequiredWithDefault => {
            let Some(Schema::Object(object)) = pick(schema, dice, &is_object) else {
                return;
            };
            let free: Vec<usize> = (0..NAMES.len())
                .filter(|name| !object.properties.contains_key(name))
                .collect();
            if let Some(name) = dice.choose(&free) {
                object.properties.insert(
                    name,
                    Property {
                        schema: if edit.kind == AddFreeform {
                            Schema::Any
                        } else {
                            edit.fresh.clone()
                        },
                        required: !matches!(edit.kind, AddOptional | AddFreeform),
                        default: edit.kind == AddRequiredWithDefault,
                        description: None,
                    },
                );
            }
        }
        RemoveProperty => {
            let Some(Schema::Object(object)) = pick(
                schema,
                dice,
                &|s| matches!(s, Schema::Object(o) if !o.properties.is_empty()),
            ) else {
                return;
            };
            let names: Vec<usize> = object.properties.keys().copied().collect();
            if let Some(name) = dice.choose(&names) {
                object.properties.remove(&name);
            }
        }
        Require | Unrequire => {
            let wanted_required = edit.kind == Unrequire;
            let Some(Schema::Object(object)) = pick(
                schema,
                dice,
                &|s| matches!(s, Schema::Object(o) if o.properties.values().any(|p| p.required == wanted_required)),
            ) else {
                return;
            };
            let names: Vec<usize> = object
                .properties
                .iter()
                .filter(|(_, p)| p.required == wanted_required)
                .map(|(name, _)| *name)
                .collect();
            if let Some(name) = dice.choose(&names) {
                let property = object.properties.get_mut(&name).expect("a listed name");
                property.required = !wanted_required;
                if edit.kind == Require && dice.chance(25) {
                    property.default = true;
                }
            }
        }
        SetAdditional => {
            let Some(Schema::Object(object)) = pick(schema, dice, &is_object) else {
                return;
            };
            let choices = [
                Additional::Absent,
                Additional::True,
                Additional::False,
                Additional::Schema(Box::new(Schema::Scalar {
                    kind: Scalar::String,
                    nullable: false,
                    lower: None,
                    upper: None,
                })),
                Additional::Schema(Box::new(Schema::Scalar {
                    kind: Scalar::Integer,
                    nullable: false,
                    lower: None,
                    upper: None,
                })),
            ];
            let others: Vec<Additional> = choices.into_iter().filter(|c| *c != object.additional).collect();
            if let Some(next) = dice.choose(&others) {
                object.additional = next;
            }
        }
        Tighten | Loosen => {
            let Some(node) = pick(schema, dice, &is_bounded) else {
                return;
            };
            let tighten = edit.kind == Tighten;
            match node {
                Schema::Scalar { kind, lower, upper, .. } => {
                    // Lengths cannot go below zero; numbers may.
                    let floor = if *kind == Scalar::String { 0 } else { -100 };
                    if dice.chance(50) {
                        *upper = move_upper(*upper, *lower, tighten, floor, dice);
                    } else {
                        *lower = move_lower(*lower, *upper, tighten, floor, dice);
                    }
                }
                Schema::Array { max_items, .. } => *max_items = move_upper(*max_items, None, tighten, 0, dice),
                _ => {}
            }
        }
        Widen | Narrow => {
            let widen = edit.kind == Widen;
            let Some(Schema::Scalar { kind, nullable, .. }) = pick(schema, dice, &|s| match s {
                Schema::Scalar { kind, nullable, .. } => {
                    if widen {
                        !*nullable || *kind == Scalar::Integer
                    } else {
                        *nullable || *kind == Scalar::Number
                    }
                }
                _ => false,
            }) else {
                return;
            };
            let numeric = if widen { Scalar::Integer } else { Scalar::Number };
            let flag_can_move = *nullable != widen;
            if *kind == numeric && (!flag_can_move || dice.chance(50)) {
                *kind = if widen { Scalar::Number } else { Scalar::Integer };
            } else {
                *nullable = widen;
            }
        }
        EnumAdd | EnumRemove => {
            let add = edit.kind == EnumAdd;
            let Some(Schema::Enum(symbols)) = pick(schema, dice, &|s| match s {
                Schema::Enum(symbols) => {
                    if add {
                        symbols.len() < SYMBOLS.len()
                    } else {
                        symbols.len() > 1
                    }
                }
                _ => false,
            }) else {
                return;
            };
            if add {
                let free: Vec<usize> = (0..SYMBOLS.len()).filter(|s| !symbols.contains(s)).collect();
                symbols.extend(dice.choose(&free));
            } else {
                let present: Vec<usize> = symbols.iter().copied().collect();
                if let Some(symbol) = dice.choose(&present) {
                    symbols.remove(&symbol);
                }
            }
        }
        Describe => {
            let Some(Schema::Object(object)) = pick(
                schema,
                dice,
                &|s| matches!(s, Schema::Object(o) if !o.properties.is_empty()),
            ) else {
                return;
            };
            let names: Vec<usize> = object.properties.keys().copied().collect();
            if let Some(name) = dice.choose(&names) {
                let property = object.properties.get_mut(&name).expect("a listed name");
                property.description = Some(property.description.map_or(0, |d| d.wrapping_add(1)));
            }
        }
        ChangeType => {
            // Anything but the root, which stays an object.
            let inner: Vec<Vec<Step>> = paths(schema, &|_| true)
                .into_iter()
                .filter(|path| !path.is_empty())
                .collect();
            if let Some(path) = dice.choose(&inner) {
                *at_mut(schema, &path) = edit.fresh.clone();
            }
        }
    }
}

/// An upper bound moved in (`tighten`) or out, never below `lower` or `floor`.
fn move_upper(upper: Option<i64>, lower: Option<i64>, tighten: bool, floor: i64, dice: &mut Dice) -> Option<i64> {
    let least = lower.unwrap_or(floor).max(floor);
    let step = 1 + dice.below(3) as i64;
    match (upper, tighten) {
        (None, true) => Some((2 + dice.below(6) as i64).max(least)),
        (Some(upper), true) => Some((upper - step).max(least)),
        (Some(_), false) if dice.chance(40) => None,
        (Some(upper), false) => Some(upper + step),
        (None, false) => None,
    }
}

/// A lower bound moved in (`tighten`) or out, never above `upper` or below `floor`.
fn move_lower(lower: Option<i64>, upper: Option<i64>, tighten: bool, floor: i64, dice: &mut Dice) -> Option<i64> {
    let step = 1 + dice.below(3) as i64;
    let most = upper.unwrap_or(i64::MAX);
    match (lower, tighten) {
        (None, true) => Some((floor.max(0) + 1 + dice.below(3) as i64).min(most)),
        (Some(lower), true) => Some((lower + step).min(most)),
        (Some(_), false) if dice.chance(40) => None,
        (Some(lower), false) => Some((lower - step).max(floor)),
        (None, false) => None,
    }
}

// ---------------------------------------------------------------- rendering

/// The schema's JSON text.
pub fn text(schema: &Schema) -> String {
    render(schema).to_string()
}

/// The schema as a JSON document.
pub fn render(schema: &Schema) -> Value {
    match schema {
        Schema::Scalar {
            kind,
            nullable,
            lower,
            upper,
        } => {
            let mut out = Map::new();
            out.insert(
                "type".to_owned(),
                if *nullable {
                    json!([kind.name(), "null"])
                } else {
                    json!(kind.name())
                },
            );
            let (low, high) = if *kind == Scalar::String {
                ("minLength", "maxLength")
            } else {
                ("minimum", "maximum")
            };
            if let Some(lower) = lower {
                out.insert(low.to_owned(), json!(lower));
            }
            if let Some(upper) = upper {
                out.insert(high.to_owned(), json!(upper));
            }
            Value::Object(out)
        }
        Schema::Null => json!({"type": "null"}),
        Schema::Any => json!({}),
        Schema::Enum(symbols) => json!({"enum": symbols.iter().map(|s| SYMBOLS[*s]).collect::<Vec<_>>()}),
        Schema::Object(object) => {
            let properties: Map<String, Value> = object
                .properties
                .iter()
                .map(|(name, property)| {
                    let mut value = render(&property.schema);
                    if property.default {
                        value["default"] = default_value(&property.schema);
                    }
                    if let Some(description) = property.description {
                        value["description"] = json!(format!("note {description}"));
                    }
                    (NAMES[*name].to_owned(), value)
                })
                .collect();
            let mut out = json!({"type": "object", "properties": properties});
            let required: Vec<&str> = object
                .properties
                .iter()
                .filter(|(_, property)| property.required)
                .map(|(name, _)| NAMES[*name])
                .collect();
            if !required.is_empty() {
                out["required"] = json!(required);
            }
            match &object.additional {
                Additional::Absent => {}
                Additional::True => out["additionalProperties"] = json!(true),
                Additional::False => out["additionalProperties"] = json!(false),
                Additional::Schema(schema) => out["additionalProperties"] = render(schema),
            }
            out
        }
        Schema::Array { items, max_items } => {
            let mut out = json!({"type": "array", "items": render(items)});
            if let Some(max_items) = max_items {
                out["maxItems"] = json!(max_items);
            }
            out
        }
    }
}

/// A valid value of the schema, used as a property's `default`.
pub fn default_value(schema: &Schema) -> Value {
    match schema {
        Schema::Scalar { nullable: true, .. } | Schema::Null | Schema::Any => Value::Null,
        Schema::Scalar {
            kind: Scalar::String,
            lower,
            ..
        } => json!("s".repeat(lower.unwrap_or(0) as usize)),
        Schema::Scalar {
            kind: Scalar::Boolean, ..
        } => json!(false),
        Schema::Scalar { lower, upper, .. } => json!(0i64.clamp(lower.unwrap_or(i64::MIN), upper.unwrap_or(i64::MAX))),
        Schema::Enum(symbols) => json!(SYMBOLS[*symbols.iter().next().expect("enums are not empty")]),
        Schema::Object(object) => Value::Object(
            object
                .properties
                .iter()
                .filter(|(_, property)| property.required)
                .map(|(name, property)| (NAMES[*name].to_owned(), default_value(&property.schema)))
                .collect(),
        ),
        Schema::Array { .. } => json!([]),
    }
}

// ---------------------------------------------------------------- instances

/// Any small JSON value, for undeclared properties.
fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-20i64..20).prop_map(|n| json!(n)),
        (-20i64..20).prop_map(|n| json!(n as f64 + 0.5)),
        "[a-z]{0,10}".prop_map(Value::String),
        proptest::sample::select(SYMBOLS.to_vec()).prop_map(|s| json!(s)),
        proptest::collection::vec((-5i64..5).prop_map(|n| json!(n)), 0..3).prop_map(Value::Array),
        (-5i64..5).prop_map(|n| json!({"a": n})),
    ]
}

/// Values of `schema`; with `extras`, open objects also carry undeclared properties.
pub fn instance(schema: &Schema, extras: bool) -> BoxedStrategy<Value> {
    match schema {
        Schema::Scalar {
            kind,
            nullable,
            lower,
            upper,
        } => {
            let value = scalar_value(*kind, *lower, *upper);
            if *nullable {
                prop_oneof![1 => Just(Value::Null), 3 => value].boxed()
            } else {
                value
            }
        }
        Schema::Null => Just(Value::Null).boxed(),
        Schema::Any => any_json().boxed(),
        Schema::Enum(symbols) => proptest::sample::select(symbols.iter().map(|s| SYMBOLS[*s]).collect::<Vec<_>>())
            .prop_map(|s| json!(s))
            .boxed(),
        Schema::Object(object) => {
            let declared: Vec<BoxedStrategy<Option<(String, Value)>>> = object
                .properties
                .iter()
                .map(|(name, property)| {
                    let name = NAMES[*name].to_owned();
                    let value = instance(&property.schema, extras).prop_map(move |v| (name.clone(), v));
                    if property.required {
                        value.prop_map(Some).boxed()
                    } else {
                        proptest::option::weighted(0.75, value).boxed()
                    }
                })
                .collect();
            let undeclared: Vec<&'static str> = NAMES
                .iter()
                .enumerate()
                .filter(|(name, _)| !object.properties.contains_key(name))
                .map(|(_, name)| *name)
                .chain(STRANGERS)
                .collect();
            let extra_value = match &object.additional {
                _ if !extras => None,
                Additional::False => None,
                Additional::Absent | Additional::True => Some(any_json().boxed()),
                Additional::Schema(schema) => Some(instance(schema, extras)),
            };
            let extra = match extra_value {
                None => Just(BTreeMap::new()).boxed(),
                Some(value) => {
                    proptest::collection::btree_map(proptest::sample::select(undeclared), value, 0..=2).boxed()
                }
            };
            (declared, extra)
                .prop_map(|(declared, extra)| {
                    let mut out: Map<String, Value> = declared.into_iter().flatten().collect();
                    out.extend(extra.into_iter().map(|(name, value)| (name.to_owned(), value)));
                    Value::Object(out)
                })
                .boxed()
        }
        Schema::Array { items, max_items } => {
            let most = max_items.map_or(5, |m| m.min(5)) as usize;
            proptest::collection::vec(instance(items, extras), 0..=most)
                .prop_map(Value::Array)
                .boxed()
        }
    }
}

fn scalar_value(kind: Scalar, lower: Option<i64>, upper: Option<i64>) -> BoxedStrategy<Value> {
    match kind {
        Scalar::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
        Scalar::String => {
            let low = lower.unwrap_or(0).max(0) as usize;
            let high = upper.map_or(low + 10, |u| u.max(lower.unwrap_or(0)) as usize);
            proptest::collection::vec(proptest::sample::select(vec!['a', 'b', 'z']), low..=high)
                .prop_map(|chars| Value::String(chars.into_iter().collect()))
                .boxed()
        }
        Scalar::Integer | Scalar::Number => {
            let low = lower.unwrap_or(-30);
            let high = upper.unwrap_or(30).max(low);
            let whole = (low..=high).prop_map(|n| json!(n));
            if kind == Scalar::Integer || low == high {
                whole.boxed()
            } else {
                prop_oneof![whole, (low..high).prop_map(|n| json!(n as f64 + 0.5))].boxed()
            }
        }
    }
}

//! Generated proto3 schema histories and messages, for the Protobuf
//! soundness tests: a base schema of three messages and one enum over a
//! small universe of field names and numbers, evolved by the edits real
//! authors make, and random messages valid for any compiled version.
//!
//! The randomness behind a schema and a message comes from a 64-bit seed
//! (one [`Rng`] stream), so proptest draws and shrinks seeds and edit lists
//! while the shapes stay valid by construction.

use std::collections::HashMap;
use std::fmt::Write as _;

use proptest::prelude::*;
use prost::bytes::Bytes;
use prost_reflect::{Kind, MapKey, MessageDescriptor, Value};

/// A small deterministic generator (SplitMix64): enough for test data.
pub struct Rng(u64);

impl Rng {
    /// A stream started from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// The message whose records the tests write and read.
pub const ROOT: &str = "Order";
const PACKAGE: &str = "shop";
/// The messages, in declaration order; the root uses the other two.
const MESSAGES: [&str; 3] = ["Line", "Tag", ROOT];
const ROOT_INDEX: usize = 2;
const ENUM: &str = "Status";
const ENUM_VALUES: [(&str, i32); 5] = [
    ("STATUS_UNKNOWN", 0),
    ("STATUS_OPEN", 1),
    ("STATUS_PAID", 2),
    ("STATUS_SHIPPED", 3),
    ("STATUS_CLOSED", 4),
];
const FIELD_NAMES: [&str; 12] = [
    "id", "count", "note", "total", "at", "code", "flag", "item", "kind", "sum", "ref", "memo",
];
const MAX_NUMBER: u32 = 12;
const ONEOF: &str = "choice";

/// Every scalar keyword.
const SCALARS: [&str; 15] = [
    "int32", "int64", "uint32", "uint64", "bool", "sint32", "sint64", "fixed32", "sfixed32", "fixed64", "sfixed64",
    "float", "double", "string", "bytes",
];
const MAP_KEYS: [&str; 7] = ["int32", "int64", "uint32", "string", "bool", "sint32", "fixed32"];

/// The wire families Protobuf documents as reading each other's bytes;
/// `Status` stands for the enum.
const FAMILIES: [&[&str]; 5] = [
    &["int32", "int64", "uint32", "uint64", "bool", ENUM],
    &["sint32", "sint64"],
    &["fixed32", "sfixed32"],
    &["fixed64", "sfixed64"],
    &["string", "bytes"],
];

/// A field's type: a scalar keyword or `Status`, a message, or a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// A scalar keyword, or `Status` for the enum.
    Scalar(&'static str),
    /// One of the messages, by name.
    Message(&'static str),
    /// `map<key, value>`, the value a scalar keyword or `Status`.
    Map(&'static str, &'static str),
}

/// How a field is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// No label: proto3 implicit presence (and every oneof member and map).
    Implicit,
    /// `optional`.
    Optional,
    /// `repeated`.
    Repeated,
}

/// A field.
#[derive(Debug, Clone)]
pub struct Field {
    name: &'static str,
    number: u32,
    ty: Ty,
    label: Label,
    in_oneof: bool,
}

/// A message: its fields and the numbers it reserves.
#[derive(Debug, Clone)]
pub struct Msg {
    fields: Vec<Field>,
    reserved: Vec<u32>,
}

/// A whole schema: the enum's values and the three messages.
#[derive(Debug, Clone)]
pub struct Schema {
    enum_values: Vec<(&'static str, i32)>,
    messages: Vec<Msg>,
}

/// One evolution step; `pick` chooses what it applies to.
#[derive(Debug, Clone, Copy)]
pub struct Edit {
    /// Which kind of edit (see [`Schema::apply`]).
    pub op: u8,
    /// Drives every choice the edit makes.
    pub pick: u64,
}

/// A schema history, v1 first, as `.proto` texts, with the edits that made it.
#[derive(Debug, Clone)]
pub struct History {
    /// The versions' texts, oldest first.
    pub texts: Vec<String>,
    /// What each step did, for failure messages.
    pub steps: Vec<String>,
}

/// A history of 2 to 4 versions: a random base and 1 to 3 edits in turn.
pub fn history() -> impl Strategy<Value = History> {
    let edit = (0u8..16, any::<u64>()).prop_map(|(op, pick)| Edit { op, pick });
    (any::<u64>(), proptest::collection::vec(edit, 1..=3)).prop_map(|(seed, edits)| {
        let mut schema = Schema::base(&mut Rng::new(seed));
        let mut texts = vec![schema.text()];
        let mut steps = Vec::new();
        for edit in edits {
            steps.push(schema.apply(edit));
            texts.push(schema.text());
        }
        History { texts, steps }
    })
}

fn family_of(ty: &str) -> Option<&'static [&'static str]> {
    FAMILIES.into_iter().find(|family| family.contains(&ty))
}

impl Schema {
    /// A random base: two to five fields in the root, one to three in the others.
    pub fn base(rng: &mut Rng) -> Schema {
        let mut schema = Schema {
            enum_values: ENUM_VALUES[..2 + rng.below(3)].to_vec(),
            messages: MESSAGES
                .iter()
                .map(|_| Msg {
                    fields: Vec::new(),
                    reserved: Vec::new(),
                })
                .collect(),
        };
        for (index, count) in [
            (0, 1 + rng.below(3)),
            (1, 1 + rng.below(2)),
            (ROOT_INDEX, 2 + rng.below(4)),
        ] {
            for _ in 0..count {
                schema.add_field(index, rng);
            }
        }
        // A oneof in the base, often.
        if rng.percent(40) {
            let ty = Ty::Scalar(rng.pick(&["string", "int64", ENUM, "bytes"]));
            if let Some((name, number)) = schema.fresh(ROOT_INDEX, rng) {
                schema.messages[ROOT_INDEX].fields.push(Field {
                    name,
                    number,
                    ty,
                    label: Label::Implicit,
                    in_oneof: true,
                });
            }
        }
        schema
    }

    /// An unused name and an unused, unreserved number in message `index`.
    fn fresh(&self, index: usize, rng: &mut Rng) -> Option<(&'static str, u32)> {
        let message = &self.messages[index];
        let names: Vec<&'static str> = FIELD_NAMES
            .into_iter()
            .filter(|name| message.fields.iter().all(|field| field.name != *name))
            .collect();
        let numbers: Vec<u32> = (1..=MAX_NUMBER)
            .filter(|number| !message.reserved.contains(number))
            .filter(|number| message.fields.iter().all(|field| field.number != *number))
            .collect();
        if names.is_empty() || numbers.is_empty() {
            return None;
        }
        Some((rng.pick(&names), rng.pick(&numbers)))
    }

    fn random_type(index: usize, rng: &mut Rng) -> (Ty, Label) {
        let root = index == ROOT_INDEX;
        let roll = rng.below(if root { 10 } else { 7 });
        let ty = match roll {
            0..=5 => Ty::Scalar(rng.pick(&SCALARS)),
            6 => Ty::Scalar(ENUM),
            7 | 8 => Ty::Message(rng.pick(&MESSAGES[..2])),
            _ => {
                let value = if rng.percent(80) { rng.pick(&SCALARS) } else { ENUM };
                return (Ty::Map(rng.pick(&MAP_KEYS), value), Label::Implicit);
            }
        };
        let label = rng.pick(&[Label::Implicit, Label::Implicit, Label::Optional, Label::Repeated]);
        (ty, label)
    }

    fn add_field(&mut self, index: usize, rng: &mut Rng) -> String {
        let Some((name, number)) = self.fresh(index, rng) else {
            return "no room for a field".to_owned();
        };
        let (ty, label) = Self::random_type(index, rng);
        let field = Field {
            name,
            number,
            ty,
            label,
            in_oneof: false,
        };
        let said = format!("add {} {}", MESSAGES[index], describe(&field));
        self.messages[index].fields.push(field);
        said
    }

    /// Applies `edit`, or adds a field when it does not apply; says what it did.
    pub fn apply(&mut self, edit: Edit) -> String {
        let mut rng = Rng::new(edit.pick);
        // Mostly the root, whose fields reach every kind of type.
        let index = if rng.percent(70) { ROOT_INDEX } else { rng.below(2) };
        let done = match edit.op {
            0 => Some(self.add_field(index, &mut rng)),
            1 | 2 => self.remove_field(index, edit.op == 2, &mut rng),
            3 => self.rename_field(index, &mut rng),
            4 | 5 => self.retype_within_family(index, &mut rng),
            6 => self.retype_across_families(index, &mut rng),
            7 => self.toggle_repeated(index, &mut rng),
            8 => self.change_message_type(&mut rng),
            9 => self.move_into_oneof(&mut rng),
            10 => self.move_out_of_oneof(&mut rng),
            11 => self.add_enum_value(&mut rng),
            12 => self.remove_enum_value(&mut rng),
            13 => self.renumber(index, &mut rng),
            14 => self.change_kind(&mut rng),
            _ => self.move_two_into_oneof(&mut rng),
        };
        done.unwrap_or_else(|| self.add_field(index, &mut rng))
    }

    fn chosen(&mut self, index: usize, rng: &mut Rng, fits: impl Fn(&Field) -> bool) -> Option<&mut Field> {
        let positions: Vec<usize> = (0..self.messages[index].fields.len())
            .filter(|position| fits(&self.messages[index].fields[*position]))
            .collect();
        if positions.is_empty() {
            return None;
        }
        let position = rng.pick(&positions);
        Some(&mut self.messages[index].fields[position])
    }

    fn remove_field(&mut self, index: usize, reserve: bool, rng: &mut Rng) -> Option<String> {
        let fields = &mut self.messages[index].fields;
        if fields.is_empty() {
            return None;
        }
        let field = fields.remove(rng.below(fields.len()));
        if reserve {
            self.messages[index].reserved.push(field.number);
        }
        let how = if reserve { " reserving its number" } else { "" };
        Some(format!("remove {} {}{how}", MESSAGES[index], describe(&field)))
    }

    fn rename_field(&mut self, index: usize, rng: &mut Rng) -> Option<String> {
        let (name, _) = self.fresh(index, rng)?;
        let field = self.chosen(index, rng, |_| true)?;
        let said = format!("rename {} {} to {name}", MESSAGES[index], describe(field));
        field.name = name;
        Some(said)
    }

    fn retype_within_family(&mut self, index: usize, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(index, rng, |field| match &field.ty {
            Ty::Scalar(ty) => family_of(ty).is_some(),
            Ty::Map(key, value) => family_of(key).is_some() || family_of(value).is_some(),
            Ty::Message(_) => false,
        })?;
        let said = format!("retype within its family {}", describe(field));
        let sibling = |ty: &'static str, rng: &mut Rng, keys: bool| -> &'static str {
            let Some(family) = family_of(ty) else { return ty };
            let choices: Vec<&'static str> = family
                .iter()
                .copied()
                .filter(|other| *other != ty && (!keys || MAP_KEYS.contains(other)))
                .collect();
            if choices.is_empty() { ty } else { rng.pick(&choices) }
        };
        field.ty = match field.ty.clone() {
            Ty::Scalar(ty) => Ty::Scalar(sibling(ty, rng, false)),
            Ty::Map(key, value) if rng.percent(50) => Ty::Map(sibling(key, rng, true), value),
            Ty::Map(key, value) => Ty::Map(key, sibling(value, rng, false)),
            other => other,
        };
        Some(format!("{said} to {}", describe(field)))
    }

    fn retype_across_families(&mut self, index: usize, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(index, rng, |field| matches!(field.ty, Ty::Scalar(_)))?;
        let said = format!("retype {}", describe(field));
        let choices: Vec<&'static str> = SCALARS
            .iter()
            .copied()
            .chain([ENUM])
            .filter(|ty| Ty::Scalar(ty) != field.ty)
            .collect();
        field.ty = Ty::Scalar(rng.pick(&choices));
        Some(format!("{said} to {}", describe(field)))
    }

    fn toggle_repeated(&mut self, index: usize, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(index, rng, |field| !field.in_oneof && !matches!(field.ty, Ty::Map(..)))?;
        let said = format!("toggle repeated on {}", describe(field));
        field.label = match field.label {
            Label::Repeated => rng.pick(&[Label::Implicit, Label::Optional]),
            _ => Label::Repeated,
        };
        Some(said)
    }

    fn change_message_type(&mut self, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(ROOT_INDEX, rng, |field| matches!(field.ty, Ty::Message(_)))?;
        let said = format!("change the message of {}", describe(field));
        field.ty = match field.ty {
            Ty::Message("Line") => Ty::Message("Tag"),
            _ => Ty::Message("Line"),
        };
        Some(said)
    }

    /// Scalar, message and map fields turned into one another.
    fn change_kind(&mut self, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(ROOT_INDEX, rng, |_| true)?;
        let said = format!("change the kind of {}", describe(field));
        let scalar = Ty::Scalar(rng.pick(&SCALARS));
        let message = Ty::Message(rng.pick(&MESSAGES[..2]));
        let map = Ty::Map(rng.pick(&MAP_KEYS), rng.pick(&SCALARS));
        field.ty = match (&field.ty, rng.percent(50)) {
            (Ty::Scalar(_), true) | (Ty::Map(..), true) => message,
            (Ty::Message(_), true) | (Ty::Map(..), false) => scalar,
            _ if field.in_oneof => message,
            _ => map,
        };
        if matches!(field.ty, Ty::Map(..)) || matches!(field.ty, Ty::Message(_)) && field.label == Label::Optional {
            field.label = Label::Implicit;
        }
        Some(format!("{said} to {}", describe(field)))
    }

    fn move_into_oneof(&mut self, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(ROOT_INDEX, rng, |field| {
            !field.in_oneof && field.label != Label::Repeated && !matches!(field.ty, Ty::Map(..))
        })?;
        field.in_oneof = true;
        field.label = Label::Implicit;
        Some(format!("move into the oneof {}", describe(field)))
    }

    /// Two fields that could be set together join the oneof in one step.
    fn move_two_into_oneof(&mut self, rng: &mut Rng) -> Option<String> {
        let first = self.move_into_oneof(rng)?;
        Some(match self.move_into_oneof(rng) {
            Some(second) => format!("{first}; {second}"),
            None => first,
        })
    }

    fn move_out_of_oneof(&mut self, rng: &mut Rng) -> Option<String> {
        let field = self.chosen(ROOT_INDEX, rng, |field| field.in_oneof)?;
        field.in_oneof = false;
        if rng.percent(50) {
            field.label = Label::Optional;
        }
        Some(format!("move out of the oneof {}", describe(field)))
    }

    fn add_enum_value(&mut self, rng: &mut Rng) -> Option<String> {
        let missing: Vec<(&'static str, i32)> = ENUM_VALUES
            .into_iter()
            .filter(|value| !self.enum_values.contains(value))
            .collect();
        if missing.is_empty() {
            return None;
        }
        let value = rng.pick(&missing);
        self.enum_values.push(value);
        self.enum_values.sort_by_key(|(_, number)| *number);
        Some(format!("add enum value {} = {}", value.0, value.1))
    }

    fn remove_enum_value(&mut self, rng: &mut Rng) -> Option<String> {
        if self.enum_values.len() < 2 {
            return None;
        }
        // The zero value stays: proto3 needs it first.
        let (name, number) = self.enum_values.remove(1 + rng.below(self.enum_values.len() - 1));
        Some(format!("remove enum value {name} = {number}"))
    }

    fn renumber(&mut self, index: usize, rng: &mut Rng) -> Option<String> {
        let (_, number) = self.fresh(index, rng)?;
        let field = self.chosen(index, rng, |_| true)?;
        let said = format!("renumber {} {} to {number}", MESSAGES[index], describe(field));
        field.number = number;
        Some(said)
    }

    /// The `.proto` text.
    pub fn text(&self) -> String {
        let mut text = format!("syntax = \"proto3\";\npackage {PACKAGE};\n\nenum {ENUM} {{\n");
        for (name, number) in &self.enum_values {
            let _ = writeln!(text, "  {name} = {number};");
        }
        text.push_str("}\n");
        for (name, message) in MESSAGES.iter().zip(&self.messages) {
            let mut fields: Vec<&Field> = message.fields.iter().collect();
            fields.sort_by_key(|field| field.number);
            let _ = writeln!(text, "\nmessage {name} {{");
            for field in fields.iter().filter(|field| !field.in_oneof) {
                let _ = writeln!(text, "  {};", declaration(field));
            }
            if fields.iter().any(|field| field.in_oneof) {
                let _ = writeln!(text, "  oneof {ONEOF} {{");
                for field in fields.iter().filter(|field| field.in_oneof) {
                    let _ = writeln!(text, "    {};", declaration(field));
                }
                text.push_str("  }\n");
            }
            if !message.reserved.is_empty() {
                let numbers: Vec<String> = message.reserved.iter().map(u32::to_string).collect();
                let _ = writeln!(text, "  reserved {};", numbers.join(", "));
            }
            text.push_str("}\n");
        }
        text
    }
}

fn declaration(field: &Field) -> String {
    let label = match field.label {
        Label::Implicit => "",
        Label::Optional => "optional ",
        Label::Repeated => "repeated ",
    };
    let ty = match &field.ty {
        Ty::Scalar(ty) | Ty::Message(ty) => (*ty).to_owned(),
        Ty::Map(key, value) => format!("map<{key}, {value}>"),
    };
    format!("{label}{ty} {} = {}", field.name, field.number)
}

fn describe(field: &Field) -> String {
    let oneof = if field.in_oneof { " (in the oneof)" } else { "" };
    format!("`{}`{oneof}", declaration(field))
}

/// A random record of `message`: a random subset of its fields, at most
/// one member of each oneof, lists and maps of up to three entries,
/// nested messages two levels deep at most.
pub fn message(message: &MessageDescriptor, rng: &mut Rng) -> prost_reflect::DynamicMessage {
    random_message(message, rng, 0)
}

fn random_message(descriptor: &MessageDescriptor, rng: &mut Rng, depth: usize) -> prost_reflect::DynamicMessage {
    let mut record = prost_reflect::DynamicMessage::new(descriptor.clone());
    let mut oneofs_set = Vec::new();
    for field in descriptor.fields() {
        if !rng.percent(65) {
            continue;
        }
        if let Some(oneof) = field.containing_oneof() {
            if oneofs_set.contains(&oneof.name().to_owned()) {
                continue;
            }
            oneofs_set.push(oneof.name().to_owned());
        }
        let value = if field.is_map() {
            let Kind::Message(entry) = field.kind() else { continue };
            let (key_kind, value_kind) = (entry.map_entry_key_field().kind(), entry.map_entry_value_field().kind());
            let mut entries = HashMap::new();
            for _ in 0..1 + rng.below(3) {
                let key = match scalar(&key_kind, rng, depth) {
                    Value::Bool(v) => MapKey::Bool(v),
                    Value::I32(v) => MapKey::I32(v),
                    Value::I64(v) => MapKey::I64(v),
                    Value::U32(v) => MapKey::U32(v),
                    Value::U64(v) => MapKey::U64(v),
                    Value::String(v) => MapKey::String(v),
                    _ => continue,
                };
                entries.insert(key, scalar(&value_kind, rng, depth));
            }
            Value::Map(entries)
        } else if field.is_list() {
            Value::List(
                (0..1 + rng.below(3))
                    .map(|_| scalar(&field.kind(), rng, depth))
                    .collect(),
            )
        } else {
            scalar(&field.kind(), rng, depth)
        };
        record.set_field(&field, value);
    }
    record
}

const TEXTS: [&str; 6] = ["", "a", "order-17", "naïve café", "日本", "x y z"];

fn scalar(kind: &Kind, rng: &mut Rng, depth: usize) -> Value {
    let small_i32 = [0, 1, -1, 2, 127, 128, 300, i32::MAX, i32::MIN];
    let wide_i64 = [1 << 40, -(1 << 40), i64::MAX, i64::MIN, i64::from(i32::MAX) + 1];
    let wide_u32 = [0, 1, 2, 255, u32::MAX, 1 << 31];
    let wide_u64 = [u64::MAX, 1 << 40, 1 << 32];
    let random = rng.next();
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(if rng.percent(70) {
            rng.pick(&small_i32)
        } else {
            random as i32
        }),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(match rng.below(3) {
            0 => i64::from(rng.pick(&small_i32)),
            1 => rng.pick(&wide_i64),
            _ => random as i64,
        }),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(if rng.percent(70) {
            rng.pick(&wide_u32)
        } else {
            random as u32
        }),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(match rng.below(3) {
            0 => u64::from(rng.pick(&wide_u32)),
            1 => rng.pick(&wide_u64),
            _ => random,
        }),
        Kind::Bool => Value::Bool(rng.percent(50)),
        Kind::Float => Value::F32(rng.pick(&[0.0, 1.5, -2.25, 1e20, f32::MIN_POSITIVE])),
        Kind::Double => Value::F64(rng.pick(&[0.0, 1.5, -2.25, 1e300, f64::MIN_POSITIVE])),
        Kind::String => Value::String(rng.pick(&TEXTS).to_owned()),
        Kind::Bytes => Value::Bytes(if rng.percent(75) {
            Bytes::from(rng.pick(&TEXTS).as_bytes().to_vec())
        } else {
            // Not UTF-8: 0xFF never appears in UTF-8.
            Bytes::from(vec![0xFF, random as u8, 0x80])
        }),
        Kind::Enum(enumeration) => {
            let numbers: Vec<i32> = enumeration.values().map(|value| value.number()).collect();
            // Sometimes a number this version does not name: proto3 enums are open.
            Value::EnumNumber(if rng.percent(85) { rng.pick(&numbers) } else { 7 })
        }
        Kind::Message(nested) => Value::Message(if depth < 2 {
            random_message(nested, rng, depth + 1)
        } else {
            prost_reflect::DynamicMessage::new(nested.clone())
        }),
    }
}

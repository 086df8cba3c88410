//! Protobuf verdicts proven on data (issue 9, Protobuf part): for generated
//! schema histories the engine calls compatible, records encoded with the
//! writer's descriptor decode with the reader's, in every direction and
//! against every version the mode promises, and every field both define
//! keeps its value. For pairs it calls incompatible, the rate at which
//! generated records actually lose something is printed per kind.
//!
//! "Keeps its value" is judged against what the writer meant, not against
//! what the reader happens to produce: an `int32` 5 read as `int64` must be
//! 5, a singular value read as `repeated` must be a one-element list,
//! `string` read as `bytes` must be the same bytes. A reader that produces
//! anything else loses data. Where the engine (following Confluent and the
//! Protobuf documentation) accepts a change that loses data on some values,
//! the loss is listed in [`KNOWN_DIVERGENCES`], and the property tolerates
//! exactly that loss: the decoded value must then be what a Protobuf reader
//! produces from those bytes (modelled in [`read_wire`]), and the change must
//! be the one the entry names. Anything else fails the property.
//!
//! Records are encoded and decoded with `prost-reflect`, whose reader
//! refuses a field whose wire type differs from the one its descriptor
//! expects, and refuses a `string` that is not UTF-8. The seeds are fixed,
//! so every run checks the same cases.

#[path = "support/precision.rs"]
mod precision;
#[path = "support/proto_gen.rs"]
mod proto_gen;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use precision::Precision;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MapKey, MessageDescriptor, ReflectMessage as _, Value};
use proto_gen::{History, Rng, history};
use schemaops::compat::{Checker, Direction, Format, Mode, ParsedSchema, Report, SchemaRole, SchemaText};

/// Changes the engine accepts, as Confluent does, although some values do
/// not survive them: (the change, why it is accepted and what happens to data).
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[
    (
        VARINT,
        "One varint wire type, and the Protobuf language guide calls these types compatible, so Confluent \
         records no difference. A value outside the reader's range is cut to its low 32 bits (int64 or uint64 \
         read as int32, uint32 or an enum), changes sign (int32 -1 read as uint64 is 18446744073709551615, \
         uint32 above 2^31 read as int32 is negative), or becomes true (bool reads any non-zero number as true).",
    ),
    (
        ZIGZAG,
        "One zigzag varint wire type, compatible by the language guide. An sint64 outside the 32-bit range \
         read as sint32 keeps only the low 32 bits of its zigzag encoding: another number.",
    ),
    (
        FIXED,
        "One fixed-width wire type, compatible by the language guide. The reader reinterprets the same bits: \
         fixed32 above 2^31 read as sfixed32 is negative, a negative sfixed32 read as fixed32 is above 2^31 \
         (the same for the 64-bit pair).",
    ),
    (
        BYTES_TO_STRING,
        "One length-delimited wire type, compatible by the language guide. A bytes value that is not UTF-8 \
         makes the whole record fail to decode for a reader that checks strings (proto3 requires it).",
    ),
    (
        PACKED_LABEL,
        "Confluent compares labels only when both fields carry one, and a proto3 field without a label carries \
         none, so `int32 x = 1;` becoming `repeated int32 x = 1;` records no difference (written `optional`, \
         it would be FIELD_NUMERIC_LABEL_CHANGED). A singular value does read as a one-element list, but \
         proto3 packs repeated numbers into one length-delimited record: a reader of the singular field meets \
         the wrong wire type. prost refuses the whole record; Java keeps the bytes as an unknown field and \
         reads the default.",
    ),
    (
        STRING_LABEL,
        "Confluent judges FIELD_STRING_OR_BYTES_LABEL_CHANGED compatible (a singular value does read as a \
         one-element list). Read the other way, a reader of the singular field keeps only the last element.",
    ),
    (
        MESSAGE_LABEL,
        "Confluent compares no label on message-typed fields, so the change records no difference. A reader \
         of the singular field merges every element into one message: later scalars overwrite earlier ones, \
         repeated fields concatenate.",
    ),
];

const VARINT: &str = "int32, int64, uint32, uint64, bool and enum changed into one another";
const ZIGZAG: &str = "sint64 changed to sint32";
const FIXED: &str = "fixed32 <-> sfixed32, fixed64 <-> sfixed64";
const BYTES_TO_STRING: &str = "bytes changed to string";
const PACKED_LABEL: &str = "unlabelled numeric field changed to repeated (or back)";
const STRING_LABEL: &str = "repeated string or bytes changed to singular";
const MESSAGE_LABEL: &str = "repeated message field changed to singular";

/// The modes that check something; NONE promises nothing.
const MODES: [Mode; 6] = [
    Mode::Backward,
    Mode::BackwardTransitive,
    Mode::Forward,
    Mode::ForwardTransitive,
    Mode::Full,
    Mode::FullTransitive,
];

/// Records written per pair and direction.
const RECORDS: usize = 3;
const CASES: u32 = 2000;

/// One version of a history: the engine's parse and the root message's descriptor.
struct Version {
    parsed: ParsedSchema,
    root: MessageDescriptor,
}

thread_local! {
    /// Compiling with protox is the slow part of a case; bases repeat across shrinking.
    static COMPILED: RefCell<HashMap<String, Rc<Version>>> = RefCell::new(HashMap::new());
}

/// The version compiled from `text`: parsed by the engine, and its own
/// serialized descriptor loaded into a pool, so protox runs once.
fn compile(text: &str) -> Rc<Version> {
    if let Some(version) = COMPILED.with(|cache| cache.borrow().get(text).cloned()) {
        return version;
    }
    let parsed = Checker::default()
        .parse(Format::Protobuf, SchemaRole::Candidate, &SchemaText::new(text))
        .unwrap_or_else(|error| panic!("a generated schema compiles: {error:?}\n{text}"));
    let serialized = parsed.serialized().expect("a Protobuf schema has a descriptor");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(serialized)
        .expect("base64");
    let file = prost_types::FileDescriptorProto::decode(bytes.as_slice()).expect("a file descriptor");
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_proto(file).expect("the descriptor loads");
    let root = pool
        .get_message_by_name(&format!("shop.{}", proto_gen::ROOT))
        .expect("the root message");
    let version = Rc::new(Version { parsed, root });
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() > 4096 {
            cache.clear();
        }
        cache.insert(text.to_owned(), Rc::clone(&version));
    });
    version
}

/// What became of one record read by another version.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Every field both versions define kept its value.
    Kept,
    /// Values were lost, each loss exactly one of [`KNOWN_DIVERGENCES`].
    Diverged(Vec<&'static str>),
    /// A decode error or a changed value that no divergence explains.
    Broken(String),
}

/// One field that did not keep its value.
#[derive(Debug)]
struct Loss {
    /// `/number/number…` from the root.
    place: String,
    /// The documented divergence that explains it, if one does.
    divergence: Option<&'static str>,
    what: String,
}

impl Loss {
    fn line(&self) -> String {
        let why = self.divergence.unwrap_or("no documented divergence");
        format!("at {}: {} [{why}]", self.place, self.what)
    }
}

/// Encodes `record` with its own descriptor (the writer's) and reads it with `reader`.
fn flow(record: &DynamicMessage, reader: &MessageDescriptor) -> Outcome {
    let bytes = record.encode_to_vec();
    // Fields whose bytes a reader refuses by a documented divergence: the
    // record must fail, and the rest of it must keep its values.
    let mut refused = Vec::new();
    let mut rest = record.clone();
    for (field, value) in record.fields() {
        if let Some(divergence) = reader
            .get_field(field.number())
            .and_then(|read_field| unreadable_field(&field, value, &read_field))
        {
            refused.push(divergence);
            rest.clear_field(&field);
        }
    }
    match DynamicMessage::decode(reader.clone(), bytes.as_slice()) {
        Err(_) if !refused.is_empty() => match flow(&rest, reader) {
            Outcome::Kept => diverged(refused),
            Outcome::Diverged(more) => diverged(refused.into_iter().chain(more).collect()),
            broken @ Outcome::Broken(_) => broken,
        },
        Err(error) => Outcome::Broken(format!("decode error: {error}")),
        Ok(read) if !refused.is_empty() => {
            Outcome::Broken(format!("{refused:?} predicted a refusal, yet read {read:?}"))
        }
        Ok(read) => {
            let mut losses = Vec::new();
            compare_message(record, &read, "", &mut losses);
            let documented = |name| KNOWN_DIVERGENCES.iter().any(|(change, _)| *change == name);
            if losses.iter().any(|loss| !loss.divergence.is_some_and(documented)) {
                let lines: Vec<String> = losses.iter().map(Loss::line).collect();
                Outcome::Broken(lines.join("\n"))
            } else if losses.is_empty() {
                Outcome::Kept
            } else {
                diverged(losses.iter().filter_map(|loss| loss.divergence).collect())
            }
        }
    }
}

/// The outcome of losses to these divergences, each named once.
fn diverged(mut names: Vec<&'static str>) -> Outcome {
    names.sort_unstable();
    names.dedup();
    Outcome::Diverged(names)
}

/// The documented divergence that makes a reader of `read_field` refuse
/// the record because of `value` in `field`, if one does.
fn unreadable_field(
    field: &prost_reflect::FieldDescriptor,
    value: &Value,
    read_field: &prost_reflect::FieldDescriptor,
) -> Option<&'static str> {
    let packed = field.is_packed() && value.as_list().is_some_and(|items| !items.is_empty());
    if packed && !read_field.is_list() && same_family(&field.kind(), &read_field.kind()) {
        return Some(PACKED_LABEL);
    }
    unreadable_value(value, &field.kind(), &read_field.kind())
}

fn unreadable_value(value: &Value, kind: &Kind, read_kind: &Kind) -> Option<&'static str> {
    match (value, kind, read_kind) {
        (Value::Bytes(bytes), _, Kind::String) => std::str::from_utf8(bytes).is_err().then_some(BYTES_TO_STRING),
        (Value::List(items), _, _) => items.iter().find_map(|item| unreadable_value(item, kind, read_kind)),
        (Value::Message(message), _, Kind::Message(nested)) => message.fields().find_map(|(field, value)| {
            let read_field = nested.get_field(field.number())?;
            unreadable_field(&field, value, &read_field)
        }),
        (Value::Map(entries), Kind::Message(entry), Kind::Message(read_entry)) if read_entry.is_map_entry() => {
            let (value_kind, read_value_kind) = (
                entry.map_entry_value_field().kind(),
                read_entry.map_entry_value_field().kind(),
            );
            entries
                .values()
                .find_map(|item| unreadable_value(item, &value_kind, &read_value_kind))
        }
        _ => None,
    }
}

/// Whether two scalar kinds share a wire family (the same kind included).
fn same_family(kind: &Kind, read_kind: &Kind) -> bool {
    divergence(kind, read_kind).is_some()
        || matches!(
            (kind, read_kind),
            (Kind::Float, Kind::Float)
                | (Kind::Double, Kind::Double)
                | (Kind::String | Kind::Bytes, Kind::String | Kind::Bytes)
        )
}

/// Every field set in `written` that `read`'s message also defines, by number.
fn compare_message(written: &DynamicMessage, read: &DynamicMessage, place: &str, losses: &mut Vec<Loss>) {
    for (field, value) in written.fields() {
        let Some(read_field) = read.descriptor().get_field(field.number()) else {
            continue;
        };
        let here = format!("{place}/{}", field.number());
        let read_value = read.get_field(&read_field);
        compare_field(&field, value, &read_field, &read_value, &here, losses);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single,
    List,
    Map,
}

fn shape(field: &prost_reflect::FieldDescriptor) -> Shape {
    if field.is_map() {
        Shape::Map
    } else if field.is_list() {
        Shape::List
    } else {
        Shape::Single
    }
}

fn compare_field(
    field: &prost_reflect::FieldDescriptor,
    value: &Value,
    read_field: &prost_reflect::FieldDescriptor,
    read: &Value,
    place: &str,
    losses: &mut Vec<Loss>,
) {
    let (kind, read_kind) = (field.kind(), read_field.kind());
    let mut lost = |divergence: Option<&'static str>, what: String| {
        losses.push(Loss {
            place: place.to_owned(),
            divergence,
            what,
        });
    };
    match (shape(field), shape(read_field)) {
        (Shape::Single, Shape::Single) => compare_value(value, &kind, read, &read_kind, place, losses),
        (Shape::Single, Shape::List) => match read.as_list() {
            Some([only]) => compare_value(value, &kind, only, &read_kind, place, losses),
            _ => lost(None, format!("{value:?} read as the list {read:?}")),
        },
        (Shape::List, Shape::List) => {
            let (items, read_items) = (value.as_list().unwrap_or_default(), read.as_list().unwrap_or_default());
            if items.len() == read_items.len() {
                for (item, read_item) in items.iter().zip(read_items) {
                    compare_value(item, &kind, read_item, &read_kind, place, losses);
                }
            } else {
                lost(None, format!("{value:?} read as {read:?}"));
            }
        }
        (Shape::List, Shape::Single) => {
            let items = value.as_list().unwrap_or_default();
            match (&kind, &read_kind) {
                (Kind::String | Kind::Bytes, Kind::String | Kind::Bytes) => {
                    // The last element is the one read: it must keep its value, the others are gone.
                    if let Some(last) = items.last() {
                        compare_value(last, &kind, read, &read_kind, place, losses);
                    }
                    if items.len() > 1 {
                        losses.push(Loss {
                            place: place.to_owned(),
                            divergence: Some(STRING_LABEL),
                            what: format!("{value:?} read as {read:?}"),
                        });
                    }
                }
                (Kind::Message(message), Kind::Message(_)) => {
                    // A reader merges repeated occurrences of a singular message field:
                    // the merge, made in the writer's type, must keep its values.
                    let mut bytes = Vec::new();
                    for item in items {
                        if let Some(message) = item.as_message() {
                            bytes.extend(message.encode_to_vec());
                        }
                    }
                    match (items, DynamicMessage::decode(message.clone(), bytes.as_slice())) {
                        ([only], _) => compare_value(only, &kind, read, &read_kind, place, losses),
                        (_, Ok(merged)) => {
                            compare_value(&Value::Message(merged), &kind, read, &read_kind, place, losses);
                            losses.push(Loss {
                                place: place.to_owned(),
                                divergence: Some(MESSAGE_LABEL),
                                what: format!("{} messages read as one, merged", items.len()),
                            });
                        }
                        (_, Err(error)) => lost(None, format!("{value:?} does not merge: {error}")),
                    }
                }
                _ => lost(None, format!("the list {value:?} read as {read:?}")),
            }
        }
        (Shape::Map, Shape::Map) => compare_map(field, value, read_field, read, place, losses),
        _ => lost(None, format!("{value:?} read as {read:?}")),
    }
}

fn compare_map(
    field: &prost_reflect::FieldDescriptor,
    value: &Value,
    read_field: &prost_reflect::FieldDescriptor,
    read: &Value,
    place: &str,
    losses: &mut Vec<Loss>,
) {
    let (Kind::Message(entry), Kind::Message(read_entry)) = (field.kind(), read_field.kind()) else {
        return;
    };
    let (Some(entries), Some(read_entries)) = (value.as_map(), read.as_map()) else {
        return;
    };
    let (key_kind, read_key_kind) = (
        entry.map_entry_key_field().kind(),
        read_entry.map_entry_key_field().kind(),
    );
    let (value_kind, read_value_kind) = (
        entry.map_entry_value_field().kind(),
        read_entry.map_entry_value_field().kind(),
    );
    // Keys the reader sees, and how many written keys land on each.
    let mut landed: HashMap<MapKey, usize> = HashMap::new();
    let mut converted = Vec::new();
    for (key, item) in entries {
        let key_value = Value::from(key.clone());
        let read_key = read_wire(&key_value, &key_kind, &read_key_kind).and_then(|read| read.into_map_key());
        let Some(read_key) = read_key else {
            losses.push(Loss {
                place: place.to_owned(),
                divergence: None,
                what: format!("map key {key:?} cannot be read as {read_key_kind:?}"),
            });
            continue;
        };
        compare_value(
            &key_value,
            &key_kind,
            &Value::from(read_key.clone()),
            &read_key_kind,
            place,
            losses,
        );
        *landed.entry(read_key.clone()).or_default() += 1;
        converted.push((read_key, item));
    }
    for (read_key, item) in converted {
        match read_entries.get(&read_key) {
            // Several keys became one: the key's loss is recorded above, the values fought.
            Some(_) if landed[&read_key] > 1 => {}
            Some(read_item) => compare_value(item, &value_kind, read_item, &read_value_kind, place, losses),
            None => losses.push(Loss {
                place: place.to_owned(),
                divergence: None,
                what: format!("map entry {read_key:?} missing from {read:?}"),
            }),
        }
    }
    if read_entries.len() != landed.len() {
        losses.push(Loss {
            place: place.to_owned(),
            divergence: None,
            what: format!("{value:?} read as {read:?}"),
        });
    }
}

fn compare_value(value: &Value, kind: &Kind, read: &Value, read_kind: &Kind, place: &str, losses: &mut Vec<Loss>) {
    if let (Kind::Message(_), Kind::Message(_)) = (kind, read_kind) {
        if let (Some(written), Some(read)) = (value.as_message(), read.as_message()) {
            compare_message(written, read, place, losses);
        }
        return;
    }
    let mut lost = |divergence, what| {
        losses.push(Loss {
            place: place.to_owned(),
            divergence,
            what,
        });
    };
    match read_wire(value, kind, read_kind) {
        None => lost(
            None,
            format!("{value:?} ({kind:?}) cannot be read as {read_kind:?}, yet read {read:?}"),
        ),
        Some(expected) if *read != expected => lost(
            None,
            format!("{value:?} ({kind:?}) read as {read:?}, where a Protobuf reader gives {expected:?}"),
        ),
        Some(expected) if !same_value(value, &expected) => lost(
            divergence(kind, read_kind),
            format!("{value:?} ({kind:?}) read as {expected:?} ({read_kind:?})"),
        ),
        Some(_) => {}
    }
}

/// A scalar's bytes on the wire.
enum Wire {
    Varint(u64),
    Fixed32(u32),
    Fixed64(u64),
    Delimited(Vec<u8>),
}

/// What a Protobuf reader of `read_kind` gets from `value` written as
/// `kind`: `None` when the wire types differ or the bytes are not a string.
fn read_wire(value: &Value, kind: &Kind, read_kind: &Kind) -> Option<Value> {
    let wire = match (kind, value) {
        (Kind::Int32, Value::I32(v)) | (Kind::Enum(_), Value::EnumNumber(v)) => Wire::Varint(i64::from(*v) as u64),
        (Kind::Int64, Value::I64(v)) => Wire::Varint(*v as u64),
        (Kind::Uint32, Value::U32(v)) => Wire::Varint(u64::from(*v)),
        (Kind::Uint64, Value::U64(v)) => Wire::Varint(*v),
        (Kind::Bool, Value::Bool(v)) => Wire::Varint(u64::from(*v)),
        (Kind::Sint32, Value::I32(v)) => Wire::Varint(u64::from(((v << 1) ^ (v >> 31)) as u32)),
        (Kind::Sint64, Value::I64(v)) => Wire::Varint(((v << 1) ^ (v >> 63)) as u64),
        (Kind::Fixed32, Value::U32(v)) => Wire::Fixed32(*v),
        (Kind::Sfixed32, Value::I32(v)) => Wire::Fixed32(*v as u32),
        (Kind::Float, Value::F32(v)) => Wire::Fixed32(v.to_bits()),
        (Kind::Fixed64, Value::U64(v)) => Wire::Fixed64(*v),
        (Kind::Sfixed64, Value::I64(v)) => Wire::Fixed64(*v as u64),
        (Kind::Double, Value::F64(v)) => Wire::Fixed64(v.to_bits()),
        (Kind::String, Value::String(v)) => Wire::Delimited(v.as_bytes().to_vec()),
        (Kind::Bytes, Value::Bytes(v)) => Wire::Delimited(v.to_vec()),
        _ => return None,
    };
    Some(match (wire, read_kind) {
        (Wire::Varint(n), Kind::Int32) => Value::I32(n as i32),
        (Wire::Varint(n), Kind::Int64) => Value::I64(n as i64),
        (Wire::Varint(n), Kind::Uint32) => Value::U32(n as u32),
        (Wire::Varint(n), Kind::Uint64) => Value::U64(n),
        (Wire::Varint(n), Kind::Bool) => Value::Bool(n != 0),
        (Wire::Varint(n), Kind::Enum(_)) => Value::EnumNumber(n as i32),
        (Wire::Varint(n), Kind::Sint32) => {
            let n = n as u32;
            Value::I32(((n >> 1) as i32) ^ -((n & 1) as i32))
        }
        (Wire::Varint(n), Kind::Sint64) => Value::I64(((n >> 1) as i64) ^ -((n & 1) as i64)),
        (Wire::Fixed32(bits), Kind::Fixed32) => Value::U32(bits),
        (Wire::Fixed32(bits), Kind::Sfixed32) => Value::I32(bits as i32),
        (Wire::Fixed32(bits), Kind::Float) => Value::F32(f32::from_bits(bits)),
        (Wire::Fixed64(bits), Kind::Fixed64) => Value::U64(bits),
        (Wire::Fixed64(bits), Kind::Sfixed64) => Value::I64(bits as i64),
        (Wire::Fixed64(bits), Kind::Double) => Value::F64(f64::from_bits(bits)),
        (Wire::Delimited(bytes), Kind::String) => Value::String(String::from_utf8(bytes).ok()?),
        (Wire::Delimited(bytes), Kind::Bytes) => Value::Bytes(bytes.into()),
        _ => return None,
    })
}

/// Whether `read` is the value `written` meant: the same number, the same
/// floating-point bits, or the same bytes, whatever type holds it.
fn same_value(written: &Value, read: &Value) -> bool {
    fn integer(value: &Value) -> Option<i128> {
        Some(match value {
            Value::I32(v) | Value::EnumNumber(v) => i128::from(*v),
            Value::I64(v) => i128::from(*v),
            Value::U32(v) => i128::from(*v),
            Value::U64(v) => i128::from(*v),
            Value::Bool(v) => i128::from(*v),
            _ => return None,
        })
    }
    fn bytes(value: &Value) -> Option<&[u8]> {
        match value {
            Value::String(text) => Some(text.as_bytes()),
            Value::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
    match (written, read) {
        (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
        (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
        _ => match (integer(written), integer(read)) {
            (Some(a), Some(b)) => a == b,
            _ => bytes(written).is_some_and(|a| bytes(read) == Some(a)),
        },
    }
}

/// The documented divergence a lossy scalar change belongs to, if any.
fn divergence(kind: &Kind, read_kind: &Kind) -> Option<&'static str> {
    let varint = |kind: &Kind| {
        matches!(
            kind,
            Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Bool | Kind::Enum(_)
        )
    };
    let zigzag = |kind: &Kind| matches!(kind, Kind::Sint32 | Kind::Sint64);
    let fixed32 = |kind: &Kind| matches!(kind, Kind::Fixed32 | Kind::Sfixed32);
    let fixed64 = |kind: &Kind| matches!(kind, Kind::Fixed64 | Kind::Sfixed64);
    if varint(kind) && varint(read_kind) {
        Some(VARINT)
    } else if zigzag(kind) && zigzag(read_kind) {
        Some(ZIGZAG)
    } else if (fixed32(kind) && fixed32(read_kind)) || (fixed64(kind) && fixed64(read_kind)) {
        Some(FIXED)
    } else {
        None
    }
}

/// Random records of `writer`, from `seed`.
fn records(writer: &MessageDescriptor, seed: u64, count: usize) -> Vec<DynamicMessage> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| proto_gen::message(writer, &mut rng)).collect()
}

/// Every (writer, reader, earlier version's number, direction) a verdict
/// of `mode` on the last version of `versions` promises.
fn promised(mode: Mode, versions: &[Rc<Version>]) -> Vec<(Rc<Version>, Rc<Version>, usize, Direction)> {
    let (latest, earlier) = versions.split_last().expect("a history has versions");
    let mut flows = Vec::new();
    for number in mode.versions_to_check(earlier.len()) {
        let version = &earlier[number - 1];
        for direction in mode.directions() {
            let (writer, reader) = match direction {
                Direction::Backward => (version, latest),
                Direction::Forward => (latest, version),
            };
            flows.push((Rc::clone(writer), Rc::clone(reader), number, *direction));
        }
    }
    flows
}

fn verdict(mode: Mode, versions: &[Rc<Version>]) -> Report {
    let (latest, earlier) = versions.split_last().expect("a history has versions");
    let earlier: Vec<&ParsedSchema> = earlier.iter().map(|version| &version.parsed).collect();
    Checker::default()
        .check_parsed(mode, &latest.parsed, &earlier)
        .expect("a Protobuf check decides")
}

static RUNS: AtomicUsize = AtomicUsize::new(0);
static COMPATIBLE: AtomicUsize = AtomicUsize::new(0);
static INCOMPATIBLE: AtomicUsize = AtomicUsize::new(0);
static FLOWS: AtomicUsize = AtomicUsize::new(0);
/// How many records lost values to each documented divergence.
static DIVERGED: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());

fn explain(history: &History) -> String {
    let mut text = String::new();
    for (index, version) in history.texts.iter().enumerate() {
        text.push_str(&format!("--- v{}", index + 1));
        if index > 0 {
            text.push_str(&format!(" ({})", history.steps[index - 1]));
        }
        text.push('\n');
        text.push_str(version);
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        rng_seed: RngSeed::Fixed(9),
        // Shrunk failures are saved beside this file, and replayed first on every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Whenever the engine accepts vn under a mode, every flow of data the
    /// mode promises keeps every value, up to the documented divergences.
    #[test]
    fn records_keep_their_values_across_every_flow_a_compatible_verdict_promises(
        history in history(),
        seed in any::<u64>(),
    ) {
        let versions: Vec<Rc<Version>> = history.texts.iter().map(|text| compile(text)).collect();
        for mode in MODES {
            if !verdict(mode, &versions).is_compatible() {
                INCOMPATIBLE.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            COMPATIBLE.fetch_add(1, Ordering::Relaxed);
            for (writer, reader, number, direction) in promised(mode, &versions) {
                for record in records(&writer.root, seed ^ number as u64, RECORDS) {
                    FLOWS.fetch_add(1, Ordering::Relaxed);
                    match flow(&record, &reader.root) {
                        Outcome::Kept => {}
                        Outcome::Diverged(names) => {
                            let mut diverged = DIVERGED.lock().expect("the counts");
                            for name in names {
                                *diverged.entry(name).or_default() += 1;
                            }
                        }
                        Outcome::Broken(why) => prop_assert!(
                            false,
                            "{} accepts v{} but {:?} data between it and v{number} loses values:\n{why}\nrecord: {record:?}\n{}",
                            mode.as_str(),
                            versions.len(),
                            direction,
                            explain(&history)
                        ),
                    }
                }
            }
        }
        if RUNS.fetch_add(1, Ordering::Relaxed) + 1 == CASES as usize {
            let (compatible, incompatible) = (COMPATIBLE.load(Ordering::Relaxed), INCOMPATIBLE.load(Ordering::Relaxed));
            let flows = FLOWS.load(Ordering::Relaxed);
            let diverged = DIVERGED.lock().expect("the counts").clone();
            println!(
                "protobuf soundness over {CASES} histories x {} modes: {compatible} compatible verdicts, \
                 {incompatible} incompatible; {flows} records read where a verdict promised it",
                MODES.len()
            );
            for (change, records) in &diverged {
                println!("  {records:>5} records lost values as documented: {change}");
            }
            prop_assert!(compatible >= 2000 && incompatible >= 2000, "both verdicts occur: {compatible} / {incompatible}");
            prop_assert!(!diverged.is_empty(), "the documented divergences are exercised");
        }
    }
}

#[test]
fn incompatible_verdicts_are_often_borne_out_by_data() {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(2026),
        ..Config::default()
    });
    let mut precision = Precision::default();
    for _ in 0..2000 {
        let tree = (history(), any::<u64>()).new_tree(&mut runner).expect("a history");
        let (history, seed) = tree.current();
        let versions: Vec<Rc<Version>> = history.texts.iter().map(|text| compile(text)).collect();
        for pair in versions.windows(2) {
            let report = verdict(Mode::Backward, pair);
            if report.is_compatible() {
                precision.count_compatible();
                continue;
            }
            let failed = records(&pair[0].root, seed, 4)
                .iter()
                .any(|record| flow(record, &pair[1].root) != Outcome::Kept);
            precision.count_incompatible(&report, failed);
        }
    }
    precision.print("protobuf precision over the consecutive pairs of 2000 histories under BACKWARD");
    let (compatible, incompatible) = (precision.compatible, precision.incompatible);
    assert!(
        compatible >= 500 && incompatible >= 500,
        "the generator yields both verdicts: {compatible} / {incompatible}"
    );
}

/// A concrete record that loses data across a change the engine accepts.
struct Demo {
    divergence: &'static str,
    direction: Direction,
    /// The fields of `Order` in the earlier version and in the candidate.
    earlier: &'static str,
    candidate: &'static str,
    /// The field written and read, by name.
    field: &'static str,
    written: fn(&MessageDescriptor) -> Value,
    /// What the reader gets; `None` when it refuses the record.
    read: Option<fn(&MessageDescriptor) -> Value>,
}

fn line(root: &MessageDescriptor, id: i32, tags: &[&str]) -> Value {
    let descriptor = root.parent_pool().get_message_by_name("shop.Line").expect("Line");
    let mut line = DynamicMessage::new(descriptor);
    line.set_field_by_name("id", Value::I32(id));
    line.set_field_by_name(
        "tags",
        Value::List(tags.iter().map(|tag| Value::String((*tag).to_owned())).collect()),
    );
    Value::Message(line)
}

fn demos() -> Vec<Demo> {
    vec![
        Demo {
            divergence: VARINT,
            direction: Direction::Backward,
            earlier: "int64 total = 1;",
            candidate: "int32 total = 1;",
            field: "total",
            written: |_| Value::I64((1 << 40) + 5),
            read: Some(|_| Value::I32(5)),
        },
        Demo {
            divergence: VARINT,
            direction: Direction::Backward,
            earlier: "uint32 count = 1;",
            candidate: "bool count = 1;",
            field: "count",
            written: |_| Value::U32(2),
            read: Some(|_| Value::Bool(true)),
        },
        Demo {
            divergence: ZIGZAG,
            direction: Direction::Backward,
            earlier: "sint64 total = 1;",
            candidate: "sint32 total = 1;",
            field: "total",
            written: |_| Value::I64((1 << 40) + 5),
            read: Some(|_| Value::I32(5)),
        },
        Demo {
            divergence: FIXED,
            direction: Direction::Backward,
            earlier: "fixed32 total = 1;",
            candidate: "sfixed32 total = 1;",
            field: "total",
            written: |_| Value::U32(u32::MAX),
            read: Some(|_| Value::I32(-1)),
        },
        Demo {
            divergence: BYTES_TO_STRING,
            direction: Direction::Backward,
            earlier: "bytes note = 1;",
            candidate: "string note = 1;",
            field: "note",
            written: |_| Value::Bytes(vec![0xFF, 0x00].into()),
            read: None,
        },
        Demo {
            divergence: PACKED_LABEL,
            direction: Direction::Forward,
            earlier: "int32 count = 1;",
            candidate: "repeated int32 count = 1;",
            field: "count",
            written: |_| Value::List(vec![Value::I32(1), Value::I32(2)]),
            read: None,
        },
        Demo {
            divergence: STRING_LABEL,
            direction: Direction::Backward,
            earlier: "repeated string note = 1;",
            candidate: "string note = 1;",
            field: "note",
            written: |_| Value::List(vec![Value::String("a".into()), Value::String("b".into())]),
            read: Some(|_| Value::String("b".into())),
        },
        Demo {
            divergence: MESSAGE_LABEL,
            direction: Direction::Backward,
            earlier: "repeated Line line = 1;",
            candidate: "Line line = 1;",
            field: "line",
            written: |root| Value::List(vec![line(root, 1, &["x"]), line(root, 2, &["y"])]),
            read: Some(|root| line(root, 2, &["x", "y"])),
        },
    ]
}

/// Each documented divergence, shown on one record: the engine accepts the
/// change, and the record loses exactly what the entry says. An entry the
/// engine stops accepting, or whose loss stops happening, fails here.
#[test]
fn every_known_divergence_loses_data_on_a_concrete_record() {
    let schema = |fields: &str| {
        format!(
            "syntax = \"proto3\";\npackage shop;\n\nmessage Line {{\n  int32 id = 1;\n  repeated string tags = 2;\n}}\n\n\
             message Order {{\n  {fields}\n}}\n"
        )
    };
    for demo in demos() {
        let (earlier, candidate) = (compile(&schema(demo.earlier)), compile(&schema(demo.candidate)));
        let (mode, writer, reader) = match demo.direction {
            Direction::Backward => (Mode::Backward, &earlier, &candidate),
            Direction::Forward => (Mode::Forward, &candidate, &earlier),
        };
        let change = format!("`{}` -> `{}`", demo.earlier, demo.candidate);
        let report = verdict(mode, &[Rc::clone(&earlier), Rc::clone(&candidate)]);
        assert!(report.is_compatible(), "{} rejects {change}: {report:?}", mode.as_str());

        let mut record = DynamicMessage::new(writer.root.clone());
        record.set_field_by_name(demo.field, (demo.written)(&writer.root));
        assert_eq!(
            flow(&record, &reader.root),
            Outcome::Diverged(vec![demo.divergence]),
            "{change}"
        );
        let decoded = DynamicMessage::decode(reader.root.clone(), record.encode_to_vec().as_slice());
        match (demo.read, decoded) {
            (Some(expected), Ok(read)) => assert_eq!(
                *read.get_field_by_name(demo.field).expect("the field"),
                expected(&reader.root),
                "{change}"
            ),
            (None, Err(_)) => {}
            (expected, decoded) => panic!(
                "{change}: expected {:?}, got {decoded:?}",
                expected.map(|read| read(&reader.root))
            ),
        }
    }
    let mut shown: Vec<&str> = demos().iter().map(|demo| demo.divergence).collect();
    shown.dedup();
    let listed: Vec<&str> = KNOWN_DIVERGENCES.iter().map(|(change, _)| *change).collect();
    assert_eq!(
        shown, listed,
        "every known divergence has a demonstration, in the table's order"
    );
}

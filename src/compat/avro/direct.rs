//! The fast path of Avro parsing: a schema's bytes read straight into the
//! model in one pass, with no JSON tree between them, field names borrowed
//! from the text and no allocation per node beyond what the model keeps.
//!
//! It reads the schemas that are valid, and gives up at anything else: a
//! problem, a repeated key, a key in a place it does not expect. A type
//! object's `fields`, `items` or `values` that come before the members they
//! depend on (`type`, `name`; keys sorted alphabetically, as serde_json
//! writes them, put `fields` first) are skipped and read when the object
//! ends, within a budget of twice the text, so nesting cannot make it
//! quadratic. The root record's `fields`, most of the text, are not
//! skipped but read at once under the name that the end of the text gives
//! (`guess_root_record`); the record's real name is checked against it. The full parser (`parse.rs`) then reads the text again and names
//! the problem and its position, so every message and location stays the
//! full parser's. It must never accept a text the full parser rejects, and
//! must build the same model from any text it accepts (a test compares the
//! two on the conformance corpus and on generated schemas).

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashSet;
use serde_json::{Map, Number, Value};

use super::model::{
    AvroSchema, Enum, Field, FieldDetails, Fixed, Name, NodeId, Primitive, Record, RecordFields, Type, Types,
};
use super::parse::{is_valid_full_name, is_valid_name, primitive_node, primitive_types, qualify};
use crate::compat::SchemaText;
use crate::compat::json_tree::MAX_NESTING;
use crate::compat::stack::deep;

/// The fast path cannot take the text; the full parser decides.
struct GiveUp;

type Step<T> = Result<T, GiveUp>;

/// Parses `schema` and its references, or `None` when the full parser must.
pub(super) fn parse(schema: &SchemaText) -> Option<AvroSchema> {
    let mut parser = Direct::new();
    for reference in &schema.references {
        parser.document(&reference.text).ok()?;
    }
    let first_own_node = parser.types.len();
    let root = parser.document(&schema.text).ok()?;
    Some(AvroSchema::new(parser.types, root, first_own_node, parser.nesting))
}

struct Direct {
    types: Types,
    /// Named types by full name.
    names: rustc_hash::FxHashMap<String, NodeId>,
    /// Fields with defaults, checked once the document's types are complete: (record, field).
    defaults: Vec<(NodeId, usize)>,
    /// The deepest nesting of arrays and objects read so far.
    nesting: usize,
    /// How many more bytes of the document may be skipped to be read later.
    skip_budget: usize,
    /// The full name the document's root record probably has, when its
    /// `fields` come first (see [`guess_root_record`]).
    root_guess: Option<String>,
    /// The branches of the unions being read, innermost last: one buffer
    /// for all, so each union's branches are allocated once, at their size.
    branches: Vec<NodeId>,
    /// The fields of the records being read, innermost last, likewise.
    fields: RecordFields,
}

/// The text being read and the position in it.
struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl Direct {
    fn new() -> Self {
        Self {
            types: primitive_types(),
            names: rustc_hash::FxHashMap::default(),
            defaults: Vec::new(),
            nesting: 0,
            skip_budget: 0,
            root_guess: None,
            branches: Vec::new(),
            fields: RecordFields::with_capacity(0),
        }
    }

    fn document(&mut self, text: &str) -> Step<NodeId> {
        let mut reader = Reader { text, at: 0 };
        self.skip_budget = text.len().saturating_mul(2);
        self.root_guess = guess_root_record(text);
        let root = self.parse_type(&mut reader, "", 0)?;
        if reader.peek().is_some() {
            return Err(GiveUp);
        }
        for (record, index) in std::mem::take(&mut self.defaults) {
            let Type::Record(record) = self.types.ty(record) else {
                return Err(GiveUp);
            };
            let field = &record.fields[index];
            let default = field.default().ok_or(GiveUp)?;
            super::defaults::check(&self.types, field.ty, default).map_err(|_| GiveUp)?;
        }
        Ok(root)
    }

    /// Counts one more level of arrays or objects inside `depth`.
    fn enter(&mut self, depth: usize) -> Step<usize> {
        let inner = depth + 1;
        if inner > MAX_NESTING {
            return Err(GiveUp);
        }
        self.nesting = self.nesting.max(inner);
        Ok(inner)
    }

    /// A type at `depth` levels of arrays and objects.
    fn parse_type(&mut self, reader: &mut Reader<'_>, namespace: &str, depth: usize) -> Step<NodeId> {
        // Only a union or an object recurses, and needs the stack checked.
        match reader.peek() {
            Some(b'"') => {
                let name = reader.string()?;
                match Primitive::from_name(&name) {
                    Some(primitive) => Ok(primitive_node(primitive)),
                    None => self.lookup(&name, namespace),
                }
            }
            Some(b'[') => deep(|| self.parse_union(reader, namespace, depth)),
            Some(b'{') => deep(|| self.parse_object(reader, namespace, depth)),
            _ => Err(GiveUp),
        }
    }

    fn lookup(&self, name: &str, namespace: &str) -> Step<NodeId> {
        let qualified = qualify(name, namespace);
        self.names
            .get(&qualified)
            .or_else(|| (!name.contains('.')).then(|| self.names.get(name)).flatten())
            .copied()
            .ok_or(GiveUp)
    }

    fn parse_union(&mut self, reader: &mut Reader<'_>, namespace: &str, depth: usize) -> Step<NodeId> {
        let inner = self.enter(depth)?;
        reader.expect(b'[')?;
        let first = self.branches.len();
        if !reader.next_is(b']') {
            loop {
                let branch = self.parse_type(reader, namespace, inner)?;
                if matches!(self.types.ty(branch), Type::Union(_)) {
                    return Err(GiveUp);
                }
                self.branches.push(branch);
                if !reader.comma_or(b']')? {
                    break;
                }
            }
        }
        let branches: Box<[NodeId]> = self.branches[first..].into();
        self.branches.truncate(first);
        if self.repeats_a_branch(&branches) {
            return Err(GiveUp);
        }
        Ok(self.types.push(Type::Union(branches), BTreeMap::new()))
    }

    /// Whether two branches are the same type, or named types of one full name.
    fn repeats_a_branch(&self, branches: &[NodeId]) -> bool {
        let key = |id: NodeId| {
            let ty = self.types.ty(id);
            ty.name().map_or_else(|| ty.kind(), |name| name.full.as_str())
        };
        if branches.len() <= 8 {
            return branches
                .iter()
                .enumerate()
                .any(|(index, &branch)| branches[..index].iter().any(|&earlier| key(earlier) == key(branch)));
        }
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        !branches.iter().all(|&branch| seen.insert(key(branch)))
    }

    fn parse_object(&mut self, reader: &mut Reader<'_>, enclosing: &str, depth: usize) -> Step<NodeId> {
        let inner = self.enter(depth)?;
        reader.expect(b'{')?;
        let mut object = TypeObject::default();
        if !reader.next_is(b'}') {
            loop {
                let key = reader.key()?;
                self.type_member(reader, &mut object, &key, enclosing, inner)?;
                if !reader.comma_or(b'}')? {
                    break;
                }
            }
        }
        if let Some(deferred) = object.deferred.take() {
            let mut later = Reader {
                text: reader.text,
                at: deferred.start,
            };
            match deferred.member {
                Deferred::Fields if object.kind == Some(Kind::Record) => {
                    let full = qualify(
                        object.name.as_deref().ok_or(GiveUp)?,
                        &object_namespace(&object, enclosing),
                    );
                    object.record = Some(self.parse_fields(&mut later, full, inner)?);
                }
                Deferred::Items if object.kind == Some(Kind::Array) => {
                    object.child = Some(self.parse_type(&mut later, enclosing, inner)?);
                }
                Deferred::Values if object.kind == Some(Kind::Map) => {
                    object.child = Some(self.parse_type(&mut later, enclosing, inner)?);
                }
                // What was skipped was not checked, so the full parser must judge it.
                _ => return Err(GiveUp),
            }
            if later.at != deferred.end {
                return Err(GiveUp);
            }
        }
        self.finish_object(object, enclosing)
    }

    /// Skips the value at the reader, to be read when its object ends.
    fn defer(&mut self, reader: &mut Reader<'_>, object: &mut TypeObject<'_>, member: Deferred) -> Step<()> {
        if object.deferred.is_some() {
            return Err(GiveUp);
        }
        let (start, end) = reader.skip_structure()?;
        self.skip_budget = self.skip_budget.checked_sub(end - start).ok_or(GiveUp)?;
        object.deferred = Some(Deferral { member, start, end });
        Ok(())
    }

    /// Reads the value of `key` in a type object.
    fn type_member<'t>(
        &mut self,
        reader: &mut Reader<'t>,
        object: &mut TypeObject<'t>,
        key: &str,
        enclosing: &str,
        depth: usize,
    ) -> Step<()> {
        if object.kind == Some(Kind::Named) {
            // Avro reads `{"type": "a.Name", …}` as the name alone (unless
            // `type` is repeated: the last one would win).
            if key == "type" {
                return Err(GiveUp);
            }
            return reader.skip_value(self, depth);
        }
        match key {
            "type" => {
                once(&object.kind)?;
                let name = reader.string()?;
                object.kind = Some(match name.as_ref() {
                    "record" | "error" => Kind::Record,
                    "enum" => Kind::Enum,
                    "fixed" => Kind::Fixed,
                    "array" => Kind::Array,
                    "map" => Kind::Map,
                    other => match Primitive::from_name(other) {
                        Some(primitive) => Kind::Primitive(primitive),
                        None => {
                            object.named = Some(self.lookup(other, enclosing)?);
                            Kind::Named
                        }
                    },
                });
            }
            "name" => {
                once(&object.name)?;
                object.name = Some(reader.string()?);
            }
            "namespace" => {
                once(&object.namespace)?;
                object.namespace = Some(if reader.next_is_null()? {
                    None
                } else {
                    Some(reader.string()?)
                });
            }
            "aliases" => {
                once(&object.aliases)?;
                object.aliases = Some(reader.strings(self, depth)?);
            }
            "doc" => {
                once(&object.doc)?;
                object.doc = Some(reader.string()?.into_owned());
            }
            "symbols" => {
                once(&object.symbols)?;
                object.symbols = Some(reader.strings(self, depth)?);
            }
            "default" => {
                once(&object.default)?;
                object.default = Some(reader.value(self, depth)?);
            }
            "size" => {
                once(&object.size)?;
                object.size = Some(reader.number()?);
            }
            "fields" => {
                if object.record.is_some() {
                    return Err(GiveUp);
                }
                if object.kind.is_none() || object.name.is_none() {
                    // The root's fields are most of the text: read them now
                    // under the name the root will probably have, which
                    // `finish_object` checks, rather than skip them first.
                    if depth == 1
                        && let Some(full) = self.root_guess.take()
                    {
                        object.record = Some(self.parse_fields(reader, full, depth)?);
                        return Ok(());
                    }
                    return self.defer(reader, object, Deferred::Fields);
                }
                if object.kind != Some(Kind::Record) {
                    return Err(GiveUp);
                }
                let full = qualify(
                    object.name.as_deref().ok_or(GiveUp)?,
                    &object_namespace(object, enclosing),
                );
                object.record = Some(self.parse_fields(reader, full, depth)?);
            }
            "items" | "values" => {
                let (wanted, member) = if key == "items" {
                    (Kind::Array, Deferred::Items)
                } else {
                    (Kind::Map, Deferred::Values)
                };
                if object.kind.is_none() {
                    return self.defer(reader, object, member);
                }
                if object.kind != Some(wanted) || object.child.is_some() {
                    return Err(GiveUp);
                }
                object.child = Some(self.parse_type(reader, enclosing, depth)?);
            }
            _ => {
                let value = reader.value(self, depth)?;
                if object.properties.insert(key.to_owned(), value).is_some() {
                    return Err(GiveUp);
                }
            }
        }
        Ok(())
    }

    /// Defines the record `full` (so its fields may refer to it) and reads its fields.
    fn parse_fields(&mut self, reader: &mut Reader<'_>, full: String, depth: usize) -> Step<ParsedRecord> {
        if !is_valid_full_name(&full) || self.names.contains_key(&full) {
            return Err(GiveUp);
        }
        let placeholder = Record::new(Name::new(full.clone(), Vec::new(), None), Vec::new());
        let id = self.types.push(Type::Record(Box::new(placeholder)), BTreeMap::new());
        let namespace = full[..full.bytes().rposition(|byte| byte == b'.').unwrap_or(0)].to_owned();
        self.names.insert(full, id);
        let inner = self.enter(depth)?;
        reader.expect(b'[')?;
        let (first, names_from) = (self.fields.len(), self.fields.names_len());
        if !reader.next_is(b']') {
            loop {
                let (name, field) = self.parse_field(reader, &namespace, inner)?;
                if field.default().is_some() {
                    self.defaults.push((id, self.fields.len() - first));
                }
                self.fields.push(&name, field);
                if !reader.comma_or(b']')? {
                    break;
                }
            }
        }
        let fields = self.fields.split_off(first, names_from);
        Ok(ParsedRecord { id, fields })
    }

    fn parse_field<'t>(
        &mut self,
        reader: &mut Reader<'t>,
        namespace: &str,
        depth: usize,
    ) -> Step<(Cow<'t, str>, Field)> {
        let inner = self.enter(depth)?;
        reader.expect(b'{')?;
        let mut name: Option<Cow<'t, str>> = None;
        let mut ty: Option<NodeId> = None;
        let mut details: Option<FieldDetails> = None;
        let (mut aliases, mut doc, mut order, mut default) = (false, false, false, false);
        if !reader.next_is(b'}') {
            loop {
                let key = reader.key()?;
                match key.as_ref() {
                    "name" => {
                        once(&name)?;
                        name = Some(reader.string()?);
                    }
                    "type" => {
                        once(&ty)?;
                        ty = Some(self.parse_type(reader, namespace, inner)?);
                    }
                    "default" => {
                        seen_once(&mut default)?;
                        details.get_or_insert_default().default = Some(reader.value(self, inner)?);
                    }
                    "doc" => {
                        seen_once(&mut doc)?;
                        details.get_or_insert_default().doc = Some(reader.string()?.into_owned());
                    }
                    "aliases" => {
                        seen_once(&mut aliases)?;
                        details.get_or_insert_default().aliases = reader.strings(self, inner)?;
                    }
                    "order" => {
                        seen_once(&mut order)?;
                        match reader.string()?.as_ref() {
                            "ascending" => {}
                            kept @ ("descending" | "ignore") => {
                                details.get_or_insert_default().order = Some(kept.to_owned());
                            }
                            _ => return Err(GiveUp),
                        }
                    }
                    other => {
                        let value = reader.value(self, inner)?;
                        let properties = &mut details.get_or_insert_default().properties;
                        if properties.insert(other.to_owned(), value).is_some() {
                            return Err(GiveUp);
                        }
                    }
                }
                if !reader.comma_or(b'}')? {
                    break;
                }
            }
        }
        let name = name.filter(|name| is_valid_name(name)).ok_or(GiveUp)?;
        Ok((name, Field::with_details(ty.ok_or(GiveUp)?, details)))
    }

    /// The node of a type object whose members are all read.
    fn finish_object(&mut self, object: TypeObject<'_>, enclosing: &str) -> Step<NodeId> {
        let reserved_for_named =
            object.name.is_some() || object.namespace.is_some() || object.aliases.is_some() || object.doc.is_some();
        if object.record.is_some() && object.kind != Some(Kind::Record) {
            return Err(GiveUp);
        }
        match object.kind.ok_or(GiveUp)? {
            Kind::Named => object.named.ok_or(GiveUp),
            // Avro ignores its reserved attributes on a primitive.
            Kind::Primitive(primitive) if object.properties.is_empty() => Ok(primitive_node(primitive)),
            Kind::Primitive(primitive) => Ok(self.types.push(Type::Primitive(primitive), object.properties)),
            kind @ (Kind::Array | Kind::Map) => {
                if reserved_for_named || object.symbols.is_some() || object.default.is_some() || object.size.is_some() {
                    return Err(GiveUp);
                }
                let child = object.child.ok_or(GiveUp)?;
                let ty = if kind == Kind::Array {
                    Type::Array(child)
                } else {
                    Type::Map(child)
                };
                Ok(self.types.push(ty, object.properties))
            }
            Kind::Record => {
                if object.symbols.is_some() || object.default.is_some() || object.size.is_some() {
                    return Err(GiveUp);
                }
                let name = named(&object, enclosing)?;
                let ParsedRecord { id, fields } = object.record.ok_or(GiveUp)?;
                // The fields were read under this name: its namespace
                // qualified their types' names, and only it may be defined.
                if self.types.ty(id).name().map(|defined| &defined.full) != Some(&name.full) {
                    return Err(GiveUp);
                }
                let record = fields.finish(name);
                if record.repeated_field().is_some() {
                    return Err(GiveUp);
                }
                self.types.finish_record(id, record, object.properties);
                Ok(id)
            }
            Kind::Enum => {
                if object.size.is_some() {
                    return Err(GiveUp);
                }
                let name = named(&object, enclosing)?;
                let symbols = object.symbols.ok_or(GiveUp)?;
                let mut unique: FxHashSet<&str> = FxHashSet::default();
                if !symbols
                    .iter()
                    .all(|symbol| is_valid_name(symbol) && unique.insert(symbol))
                {
                    return Err(GiveUp);
                }
                let default = match object.default {
                    None => None,
                    Some(Value::String(symbol)) if unique.contains(symbol.as_str()) => Some(symbol),
                    Some(_) => return Err(GiveUp),
                };
                drop(unique);
                let enumeration = Enum { name, symbols, default };
                self.define(Type::Enum(Box::new(enumeration)), object.properties)
            }
            Kind::Fixed => {
                if object.symbols.is_some() || object.default.is_some() {
                    return Err(GiveUp);
                }
                let name = named(&object, enclosing)?;
                let size = object
                    .size
                    .and_then(|size| size.as_u64())
                    .filter(|size| *size <= i32::MAX as u64)
                    .ok_or(GiveUp)?;
                self.define(Type::Fixed(Box::new(Fixed { name, size })), object.properties)
            }
        }
    }

    fn define(&mut self, ty: Type, properties: BTreeMap<String, Value>) -> Step<NodeId> {
        let full = ty.name().map(|name| name.full.clone()).ok_or(GiveUp)?;
        if self.names.contains_key(&full) {
            return Err(GiveUp);
        }
        let id = self.types.push(ty, properties);
        self.names.insert(full, id);
        Ok(id)
    }
}

/// Where the string whose content starts at `start` ends (its closing
/// quote), and whether it has escapes. The strings of a schema are mostly
/// a few bytes long (names, types): eight bytes are tested at a time, with
/// no call to a vectorised search.
fn string_end(bytes: &[u8], start: usize) -> Step<(usize, bool)> {
    let mut at = start;
    let mut escaped = false;
    loop {
        while let Some(chunk) = bytes.get(at..at + 8) {
            let mask = special_bytes(u64::from_le_bytes(chunk.try_into().map_err(|_| GiveUp)?));
            if mask != 0 {
                at += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        match *bytes.get(at).ok_or(GiveUp)? {
            b'"' => return Ok((at, escaped)),
            b'\\' => {
                escaped = true;
                at += 2;
            }
            byte if byte < 0x20 => return Err(GiveUp),
            _ => at += 1,
        }
    }
}

/// The high bit of each byte of `word` (read little-endian) that is a quote,
/// a backslash or a control character. Bytes above the lowest one marked
/// may be marked wrongly (borrows carry upwards); the lowest one is exact.
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let below = |word: u64, limit: u8| word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGH_BITS;
    below(word ^ (ONES * u64::from(b'"')), 1) | below(word ^ (ONES * u64::from(b'\\')), 1) | below(word, 0x20)
}

/// The full name of the root record of `text` when its `fields` come first
/// and simple string members follow them, as when keys are sorted:
/// `{"fields":[…],"name":"R","namespace":"a.b","type":"record"}` gives
/// `a.b.R`. Only a guess, read backwards from the end; `None` at anything
/// unusual.
fn guess_root_record(text: &str) -> Option<String> {
    if !text.trim_start().starts_with("{\"fields\"") {
        return None;
    }
    let bytes = text.trim_end().as_bytes();
    let mut at = bytes.len().checked_sub(1)?;
    if bytes[at] != b'}' {
        return None;
    }
    // A string without escapes ending just before `end`, and where it starts.
    let string_before = |end: usize| -> Option<(&str, usize)> {
        let close = end.checked_sub(1)?;
        if bytes[close] != b'"' {
            return None;
        }
        let open = memchr::memrchr(b'"', &bytes[..close])?;
        let content = &bytes[open + 1..close];
        if content.contains(&b'\\') {
            return None;
        }
        Some((std::str::from_utf8(content).ok()?, open))
    };
    let (mut name, mut namespace, mut kind) = (None, None, None);
    loop {
        let (value, value_start) = string_before(at)?;
        if bytes.get(value_start.checked_sub(1)?) != Some(&b':') {
            return None;
        }
        let (key, key_start) = string_before(value_start - 1)?;
        match key {
            "name" => name = Some(value),
            "namespace" => namespace = Some(value),
            "type" => kind = Some(value),
            _ => {}
        }
        at = key_start.checked_sub(1)?;
        if bytes[at] != b',' {
            return None;
        }
        if bytes[at.checked_sub(1)?] == b']' {
            break;
        }
    }
    match kind {
        Some("record" | "error") => Some(qualify(name?, namespace.unwrap_or(""))),
        _ => None,
    }
}

/// The namespace a type object's name is qualified with: its own `namespace`, else the enclosing one.
fn object_namespace<'a>(object: &'a TypeObject<'_>, enclosing: &'a str) -> Cow<'a, str> {
    match &object.namespace {
        Some(Some(namespace)) => Cow::Borrowed(namespace.as_ref()),
        _ => Cow::Borrowed(enclosing),
    }
}

/// The checked name, aliases and doc of a record, enum or fixed type.
fn named(object: &TypeObject<'_>, enclosing: &str) -> Step<Name> {
    let name = object.name.as_deref().ok_or(GiveUp)?;
    let full = qualify(name, &object_namespace(object, enclosing));
    if !is_valid_full_name(&full) {
        return Err(GiveUp);
    }
    let mut name = Name::new(full, Vec::new(), object.doc.clone());
    if Primitive::from_name(name.simple()).is_some() {
        return Err(GiveUp);
    }
    if let Some(aliases) = &object.aliases {
        let aliases: Vec<String> = aliases.iter().map(|alias| qualify(alias, name.namespace())).collect();
        if !aliases.iter().all(|alias| is_valid_full_name(alias)) {
            return Err(GiveUp);
        }
        name.aliases = aliases;
    }
    Ok(name)
}

/// Gives up when a member is repeated (parsers differ on which one wins).
fn once<T>(slot: &Option<T>) -> Step<()> {
    if slot.is_some() { Err(GiveUp) } else { Ok(()) }
}

fn seen_once(seen: &mut bool) -> Step<()> {
    if std::mem::replace(seen, true) {
        Err(GiveUp)
    } else {
        Ok(())
    }
}

/// What a type object's `type` says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Primitive(Primitive),
    Record,
    Enum,
    Fixed,
    Array,
    Map,
    /// A named type defined earlier, by name.
    Named,
}

/// The members of a type object read so far.
#[derive(Default)]
struct TypeObject<'t> {
    kind: Option<Kind>,
    named: Option<NodeId>,
    name: Option<Cow<'t, str>>,
    /// `Some(None)` for `"namespace": null`.
    namespace: Option<Option<Cow<'t, str>>>,
    aliases: Option<Vec<String>>,
    doc: Option<String>,
    symbols: Option<Vec<String>>,
    default: Option<Value>,
    size: Option<Number>,
    /// The node of `items` or `values`.
    child: Option<NodeId>,
    record: Option<ParsedRecord>,
    properties: BTreeMap<String, Value>,
    /// A member skipped until the object ends.
    deferred: Option<Deferral>,
}

/// Which member of a type object was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deferred {
    Fields,
    Items,
    Values,
}

/// A skipped member and where its value lies in the text.
struct Deferral {
    member: Deferred,
    start: usize,
    end: usize,
}

/// A record's node (a placeholder until the object ends) and its fields.
struct ParsedRecord {
    id: NodeId,
    fields: RecordFields,
}

impl<'t> Reader<'t> {
    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not JSON whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    fn expect(&mut self, byte: u8) -> Step<()> {
        if self.next_is(byte) { Ok(()) } else { Err(GiveUp) }
    }

    /// Consumes `byte` if it comes next.
    fn next_is(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// After a member or element: `true` after a comma, `false` at `close`.
    fn comma_or(&mut self, close: u8) -> Step<bool> {
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                Ok(true)
            }
            Some(byte) if byte == close => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(GiveUp),
        }
    }

    /// Consumes `null` if it comes next.
    fn next_is_null(&mut self) -> Step<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal("null").map(|()| true)
    }

    fn literal(&mut self, word: &str) -> Step<()> {
        if self.bytes()[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// A string, borrowed from the text when it has no escapes.
    fn string(&mut self) -> Step<Cow<'t, str>> {
        self.expect(b'"')?;
        let start = self.at;
        let (at, escaped) = string_end(self.bytes(), start)?;
        self.at = at + 1;
        if escaped {
            // serde_json decodes escapes exactly as the full parser reads them.
            serde_json::from_str::<String>(&self.text[start - 1..=at])
                .map(Cow::Owned)
                .map_err(|_| GiveUp)
        } else {
            Ok(Cow::Borrowed(&self.text[start..at]))
        }
    }

    /// Skips a string, array or object without reading it (it is read
    /// later) and returns where it starts and ends.
    fn skip_structure(&mut self) -> Step<(usize, usize)> {
        let start = match self.peek() {
            Some(b'"') => {
                let start = self.at;
                self.string()?;
                return Ok((start, self.at));
            }
            Some(b'[' | b'{') => self.at,
            _ => return Err(GiveUp),
        };
        let bytes = self.bytes();
        let mut depth = 0usize;
        let mut at = start;
        while let Some(&byte) = bytes.get(at) {
            match byte {
                b'"' => at = string_end(bytes, at + 1)?.0,
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at = at + 1;
                        return Ok((start, self.at));
                    }
                }
                _ => {}
            }
            at += 1;
        }
        Err(GiveUp)
    }

    /// An object key and its colon. `"name":` and `"type":`, two of every
    /// field's keys, are recognised as one word each, without a scan, and
    /// `"default":` as a word and two bytes.
    fn key(&mut self) -> Step<Cow<'t, str>> {
        const SEVEN_BYTES: u64 = 0x00ff_ffff_ffff_ffff;
        const NAME: u64 = u64::from_le_bytes(*b"\"name\":\0");
        const TYPE: u64 = u64::from_le_bytes(*b"\"type\":\0");
        const DEFAULT: u64 = u64::from_le_bytes(*b"\"default");
        self.peek();
        if let Some(chunk) = self.bytes().get(self.at..self.at + 8) {
            let word = u64::from_le_bytes(chunk.try_into().map_err(|_| GiveUp)?);
            let known = match word & SEVEN_BYTES {
                NAME => Some(("name", 7)),
                TYPE => Some(("type", 7)),
                _ if word == DEFAULT && self.bytes().get(self.at + 8..self.at + 10) == Some(&b"\":"[..]) => {
                    Some(("default", 10))
                }
                _ => None,
            };
            if let Some((key, length)) = known {
                self.at += length;
                return Ok(Cow::Borrowed(key));
            }
        }
        let key = self.string()?;
        self.expect(b':')?;
        Ok(key)
    }

    /// A number, as serde_json reads it.
    fn number(&mut self) -> Step<Number> {
        let bytes = self.bytes();
        self.peek();
        let start = self.at;
        let mut at = start;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at - from
        };
        let integer_start = at;
        let integer_digits = digits(&mut at);
        if integer_digits == 0 || (integer_digits > 1 && bytes[integer_start] == b'0') {
            return Err(GiveUp);
        }
        let mut plain = true;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            plain = false;
            if digits(&mut at) == 0 {
                return Err(GiveUp);
            }
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            plain = false;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if digits(&mut at) == 0 {
                return Err(GiveUp);
            }
        }
        self.at = at;
        let literal = &self.text[start..at];
        if plain && start == integer_start && integer_digits <= 18 {
            return literal.parse::<u64>().map(Number::from).map_err(|_| GiveUp);
        }
        serde_json::from_str::<Number>(literal).map_err(|_| GiveUp)
    }

    /// An array of strings.
    fn strings(&mut self, direct: &mut Direct, depth: usize) -> Step<Vec<String>> {
        direct.enter(depth)?;
        self.expect(b'[')?;
        let mut items = Vec::new();
        if !self.next_is(b']') {
            loop {
                items.push(self.string()?.into_owned());
                if !self.comma_or(b']')? {
                    break;
                }
            }
        }
        Ok(items)
    }

    /// Any JSON value, as `serde_json::Value` (defaults and custom attributes).
    fn value(&mut self, direct: &mut Direct, depth: usize) -> Step<Value> {
        // Only an array or an object recurses, and needs the stack checked.
        match self.peek().ok_or(GiveUp)? {
            b'"' => Ok(Value::String(self.string()?.into_owned())),
            b'n' => self.literal("null").map(|()| Value::Null),
            b't' => self.literal("true").map(|()| Value::Bool(true)),
            b'f' => self.literal("false").map(|()| Value::Bool(false)),
            b'[' | b'{' => deep(|| self.structure(direct, depth)),
            _ => self.number().map(Value::Number),
        }
    }

    /// An array or an object, as `serde_json::Value`.
    fn structure(&mut self, direct: &mut Direct, depth: usize) -> Step<Value> {
        match self.peek().ok_or(GiveUp)? {
            b'[' => {
                let inner = direct.enter(depth)?;
                self.at += 1;
                let mut items = Vec::new();
                if !self.next_is(b']') {
                    loop {
                        items.push(self.value(direct, inner)?);
                        if !self.comma_or(b']')? {
                            break;
                        }
                    }
                }
                Ok(Value::Array(items))
            }
            b'{' => {
                let inner = direct.enter(depth)?;
                self.at += 1;
                let mut members = Map::new();
                if !self.next_is(b'}') {
                    loop {
                        let key = self.key()?.into_owned();
                        let value = self.value(direct, inner)?;
                        // The last of repeated keys wins, as in the full parser.
                        members.insert(key, value);
                        if !self.comma_or(b'}')? {
                            break;
                        }
                    }
                }
                Ok(Value::Object(members))
            }
            _ => Err(GiveUp),
        }
    }

    /// A JSON value read and dropped.
    fn skip_value(&mut self, direct: &mut Direct, depth: usize) -> Step<()> {
        self.value(direct, depth).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::Reference;
    use crate::compat::cases::Case;

    /// Every node, its custom attributes, the root and the nesting, as text.
    fn model(schema: &AvroSchema) -> String {
        let mut text = format!(
            "root {} own {} nesting {}\n",
            schema.root, schema.first_own_node, schema.nesting
        );
        for id in 0..schema.types.len() {
            text.push_str(&format!(
                "{id}: {:?} {:?}\n",
                schema.ty(id),
                schema.types.properties(id)
            ));
        }
        text
    }

    /// Whether the fast path agrees with the full parser on `schema`: the
    /// same model when it takes the text, and only texts the full parser takes.
    /// Returns whether the fast path took it.
    fn agrees(schema: &SchemaText) -> bool {
        let full = AvroSchema::parse_in_full(schema);
        match (parse(schema), full) {
            (None, _) => false,
            (Some(fast), Ok(full)) => {
                assert_eq!(model(&fast), model(&full), "different models for {schema:?}");
                true
            }
            (Some(_), Err(error)) => panic!("the fast path took a text the full parser rejects ({error}): {schema:?}"),
        }
    }

    fn corpus() -> Vec<SchemaText> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/avro.jsonl");
        let lines = std::fs::read_to_string(path).expect("the vendored Avro corpus");
        let mut texts = Vec::new();
        for line in lines.lines().filter(|line| !line.trim().is_empty()) {
            let case: Case = serde_json::from_str(line).expect("a case line");
            let references = |list: &[crate::compat::cases::CaseReference]| -> Vec<Reference> {
                list.iter()
                    .filter_map(|reference| {
                        Some(Reference {
                            name: reference.name.clone(),
                            text: reference.schema.clone()?,
                        })
                    })
                    .collect()
            };
            texts.push(SchemaText {
                text: case.candidate.clone(),
                references: references(&case.references),
            });
            for (index, previous) in case.previous.iter().enumerate() {
                texts.push(SchemaText {
                    text: previous.clone(),
                    references: case
                        .previous_references
                        .get(index)
                        .map(|list| references(list))
                        .unwrap_or_default(),
                });
            }
        }
        texts
    }

    #[test]
    fn the_fast_path_builds_the_full_parsers_model_on_the_conformance_corpus() {
        let texts = corpus();
        let taken = texts.iter().filter(|schema| agrees(schema)).count();
        assert!(texts.len() > 300, "only {} texts in the corpus", texts.len());
        eprintln!("the fast path took {taken} of {} texts", texts.len());
        // Most valid schemas are written in the usual order.
        assert!(
            taken * 2 > texts.len(),
            "the fast path took only {taken} of {} texts",
            texts.len()
        );
    }

    #[test]
    fn the_fast_path_never_takes_a_cut_or_altered_text_the_full_parser_rejects() {
        for schema in corpus().iter().filter(|schema| schema.text.len() < 2_000) {
            let text = &schema.text;
            for cut in (0..text.len()).filter(|at| text.is_char_boundary(*at)) {
                let shorter = SchemaText {
                    text: text[..cut].to_owned(),
                    references: schema.references.clone(),
                };
                agrees(&shorter);
            }
            for (at, byte) in text.bytes().enumerate().filter(|(_, byte)| byte.is_ascii_punctuation()) {
                for replacement in [b'"', b',', b'}', b']', b' '] {
                    if replacement != byte {
                        let mut altered = text.clone().into_bytes();
                        altered[at] = replacement;
                        if let Ok(altered) = String::from_utf8(altered) {
                            agrees(&SchemaText {
                                text: altered,
                                references: schema.references.clone(),
                            });
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_fast_path_agrees_on_unusual_shapes() {
        let texts = [
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"name":"R","type":"record","namespace":"x.y","doc":"d","aliases":["Q","z.W"],"fields":[{"type":"int","name":"a","default":1,"order":"descending","aliases":["b"],"doc":"f","x-p":{"k":[1,2.5,-3,null,true]}}],"custom":"v"}"#,
            r#"{"fields":[],"type":"record","name":"R"}"#,
            r#"{"type":"record","name":"R","fields":[],"namespace":"late"}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"long"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","name":"b"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"n\u0061me","type":"string","default":"\u00e9\n"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"r","type":["null","R"],"default":null}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"r","type":"R","default":{}}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"],"default":"B"},"default":"A"}]}"#,
            r#"{"type":"enum","name":"E","symbols":["A","A"]}"#,
            r#"{"type":"enum","name":"E","symbols":["A"],"default":"C"}"#,
            r#"{"type":"fixed","name":"F","size":16,"logicalType":"decimal","precision":4}"#,
            r#"{"type":"fixed","name":"F","size":16.0}"#,
            r#"{"type":"fixed","name":"int","size":1}"#,
            r#"{"type":"array","items":{"type":"map","values":"long"},"name":"kept"}"#,
            r#"{"type":"array","items":"string","x":1,"x":2}"#,
            r#"{"type":"string","logicalType":"uuid"}"#,
            r#"{"type":"int","name":"ignored","fields":5}"#,
            r#"["null",{"type":"string","logicalType":"uuid"},"string"]"#,
            r#"["null",["int"]]"#,
            r#"[]"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":2}},{"name":"g","type":{"type":"F","anything":[1]}}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":2}},{"name":"g","type":{"type":"F","type":"int"}}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":"int","default":01}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":"double","default":-0}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":"double","default":1e400}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":"long","default":123456789012345678901}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"f","type":"string","default":"\ud800"}]}"#,
            "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"f\",\"type\":\"string\",\"default\":\"a\tb\"}]}",
            "\u{feff}\"int\"",
            " \"int\" ",
            "\"int\" x",
            r#"{"type":"record","name":"a.b.R","namespace":"c","fields":[{"name":"n","type":{"type":"record","name":"N","fields":[]}},{"name":"m","type":"a.b.N"}]}"#,
            r#"{"type":"record","name":"R","namespace":null,"fields":[]}"#,
            r#"{"type":"record","name":"R","aliases":["1bad"],"fields":[]}"#,
        ];
        for text in texts {
            agrees(&SchemaText::new(text));
        }
        let with_reference = SchemaText {
            text: r#"{"type":"record","name":"R","fields":[{"name":"m","type":"com.x.Money"}]}"#.to_owned(),
            references: vec![Reference {
                name: "money".to_owned(),
                text:
                    r#"{"type":"record","name":"Money","namespace":"com.x","fields":[{"name":"units","type":"long"}]}"#
                        .to_owned(),
            }],
        };
        assert!(agrees(&with_reference), "the fast path reads references");
    }

    #[test]
    fn strings_end_at_the_first_unescaped_quote_eight_bytes_at_a_time_or_not() {
        let plain = |bytes: &[u8], start: usize| -> Option<(usize, bool)> {
            let mut at = start;
            let mut escaped = false;
            loop {
                match *bytes.get(at)? {
                    b'"' => return Some((at, escaped)),
                    b'\\' => {
                        escaped = true;
                        at += 2;
                    }
                    byte if byte < 0x20 => return None,
                    _ => at += 1,
                }
            }
        };
        let pieces: [&[u8]; 8] = [
            b"a",
            b"field_",
            b"\"",
            b"\\",
            b"\n",
            "\u{e9}".as_bytes(),
            b"\x01",
            b"\x7f ~!",
        ];
        // Every string of up to four pieces, at every offset within a word.
        let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = texts
                .iter()
                .flat_map(|text| pieces.iter().map(move |piece| [text.as_slice(), piece].concat()))
                .collect();
            texts = longer;
            for text in &texts {
                for padding in 0..8 {
                    let bytes = [vec![b' '; padding], text.clone()].concat();
                    assert_eq!(string_end(&bytes, padding).ok(), plain(&bytes, padding), "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn the_root_records_name_is_guessed_from_the_end_of_the_text() {
        let guess = |text: &str| guess_root_record(text);
        assert_eq!(
            guess(r#"{"fields":[{"name":"a","type":"int"}],"name":"R","namespace":"a.b","type":"record"}"#).as_deref(),
            Some("a.b.R")
        );
        assert_eq!(
            guess(r#"{"fields":[],"name":"R","type":"error"} "#).as_deref(),
            Some("R")
        );
        assert_eq!(
            guess(r#"{"fields":[],"name":"x.R","namespace":"a","type":"record"}"#).as_deref(),
            Some("x.R")
        );
        for unusual in [
            r#"{"type":"record","name":"R","fields":[]}"#,
            r#"{"fields":[],"name":"R","type":"enum"}"#,
            r#"{"fields":[],"name":"R","namespace":null,"type":"record"}"#,
            r#"{"fields":[],"doc":"a\"b","name":"R","type":"record"}"#,
            r#"{"fields":[],"name":"R"}"#,
            r#"{"fields":[] , "name" : "R", "type" : "record"}"#,
            r#"{"fields":[],"name":"R","type":"record""#,
            r#""}"#,
        ] {
            assert_eq!(guess(unusual), None, "{unusual}");
        }
    }

    #[test]
    fn a_wrong_guess_at_the_root_records_name_changes_nothing() {
        let taken = [
            r#"{"fields":[{"name":"n","type":{"fields":[],"name":"N","type":"record"}},{"name":"m","type":"a.b.N"}],"name":"R","namespace":"a.b","type":"record"}"#,
            r#"{"fields":[{"name":"r","type":["null","a.b.R"],"default":null}],"name":"R","namespace":"a.b","type":"record"}"#,
        ];
        for text in taken {
            assert!(agrees(&SchemaText::new(text)), "the fast path takes {text}");
        }
        // The members the guess reads are not the whole story: the full parser decides.
        for text in [
            r#"{"fields":[{"name":"n","type":{"fields":[],"name":"N","type":"record"}}],"namespace":"n","x":["a"],"name":"R","type":"record"}"#,
            r#"{"fields":[{"name":"n","type":"int"}],"name":"R","type":"record","namespace":"n"}"#,
            r#"{"fields":[{"name":"n","type":"int"}],"name":"R","type":"enum","symbols":["A"]}"#,
            r#"{"fields":[{"name":"n","type":"int"}],"name":"R","type":"array","items":"int"}"#,
            r#"{"fields":[{"name":"n","type":"int"},{"name":"n","type":"int"}],"name":"R","type":"record"}"#,
        ] {
            agrees(&SchemaText::new(text));
        }
    }

    #[test]
    fn the_fast_path_reads_keys_in_alphabetical_order() {
        // serde_json writes a `Value`'s keys sorted: `fields` and `items` before `type`.
        let sorted = [
            r#"{"fields":[{"name":"a","type":{"items":{"fields":[{"name":"x","type":"int"}],"name":"I","type":"record"},"type":"array"}},{"default":null,"name":"b","type":["null","I"]}],"name":"R","namespace":"n.s","type":"record"}"#,
            r#"{"items":{"type":"map","values":"long"},"type":"array"}"#,
            r#"{"symbols":["A"],"name":"E","type":"enum"}"#,
        ];
        for text in sorted {
            assert!(agrees(&SchemaText::new(text)), "the fast path takes {text}");
        }
        for text in [
            r#"{"items":"int","type":"map"}"#,
            r#"{"fields":[}],"name":"R","type":"record"}"#,
            r#"{"fields":[],"name":"R","type":"int"}"#,
            r#"{"fields":[{"name":"a","type":"int"}],"type":"record"}"#,
            r#"{"fields":[{"name":"a","type":"int"}] ,"name":"R","type":"record","fields":[]}"#,
            r#"{"fields":"x","name":"R","type":"record"}"#,
            r#"{"fields":["x\"],"name":"R","type":"record"}"#,
        ] {
            agrees(&SchemaText::new(text));
        }
        let bench_shape = serde_json::json!({"type": "record", "name": "B", "namespace": "n", "fields": [
            {"name": "f", "type": {"type": "array", "items": {"type": "record", "name": "I", "fields": [
                {"name": "sku", "type": "string"}]}}},
            {"name": "g", "type": "string", "default": ""},
        ]})
        .to_string();
        assert!(agrees(&SchemaText::new(bench_shape)));
    }

    #[test]
    fn the_fast_path_gives_up_at_the_nesting_limit() {
        let deep = |levels: usize| format!("{}\"int\"{}", "[".repeat(levels), "]".repeat(levels));
        let within = "{\"type\":\"array\",\"items\":".repeat(MAX_NESTING) + "\"int\"" + &"}".repeat(MAX_NESTING);
        assert!(agrees(&SchemaText::new(within)));
        let beyond =
            "{\"type\":\"array\",\"items\":".repeat(MAX_NESTING + 1) + "\"int\"" + &"}".repeat(MAX_NESTING + 1);
        assert!(!agrees(&SchemaText::new(beyond)));
        agrees(&SchemaText::new(deep(3)));
    }
}

//! The parsed form of an Avro schema: an arena of type nodes in which a named
//! type is one node that every use points to, so recursion needs no special case.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::digest::Digest;

/// Index of a node in [`Types`].
pub(crate) type NodeId = usize;

/// A parsed, validated Avro schema, with the named types of its references.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    pub(crate) types: Types,
    pub(crate) root: NodeId,
    /// Nodes below this index came from references, not from the schema itself.
    pub(crate) first_own_node: NodeId,
    /// How deep the JSON of the schema and its references nests: about as
    /// deep as a walk over the types goes, unless named types lead further.
    pub(crate) nesting: usize,
    /// Each node's digest, where it has one (see `digest.rs`).
    digests: Vec<Option<Digest>>,
}

/// The arena of type nodes, and the attributes Avro does not interpret
/// (`logicalType`, `connect.name`, …), kept for the canonical form, of the
/// few nodes that have any. Nodes are small and contiguous: the
/// compatibility walk reads them all, and cache misses are its main cost.
#[derive(Debug, Clone, Default)]
pub(crate) struct Types {
    nodes: Vec<Type>,
    properties: FxHashMap<NodeId, BTreeMap<String, Value>>,
}

static NO_PROPERTIES: BTreeMap<String, Value> = BTreeMap::new();

impl Types {
    /// Adds a node.
    pub(crate) fn push(&mut self, ty: Type, properties: BTreeMap<String, Value>) -> NodeId {
        self.nodes.push(ty);
        let id = self.nodes.len() - 1;
        self.set_properties(id, properties);
        id
    }

    /// Fills in the record `id`, a placeholder until its fields were read,
    /// in the box the placeholder already has.
    pub(crate) fn finish_record(&mut self, id: NodeId, record: Record, properties: BTreeMap<String, Value>) {
        match &mut self.nodes[id] {
            Type::Record(placeholder) => **placeholder = record,
            other => *other = Type::Record(Box::new(record)),
        }
        self.set_properties(id, properties);
    }

    fn set_properties(&mut self, id: NodeId, properties: BTreeMap<String, Value>) {
        if properties.is_empty() {
            self.properties.remove(&id);
        } else {
            self.properties.insert(id, properties);
        }
    }

    /// The number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn ty(&self, id: NodeId) -> &Type {
        &self.nodes[id]
    }

    pub(crate) fn properties(&self, id: NodeId) -> &BTreeMap<String, Value> {
        self.properties.get(&id).unwrap_or(&NO_PROPERTIES)
    }

    /// A short description of a type for messages: `int`, `array of long`, `record Foo`.
    pub(crate) fn describe(&self, id: NodeId) -> String {
        match self.ty(id) {
            Type::Primitive(primitive) => primitive.name().to_owned(),
            Type::Array(items) => format!("array of {}", self.describe_shallow(*items)),
            Type::Map(values) => format!("map of {}", self.describe_shallow(*values)),
            Type::Union(branches) => {
                let names: Vec<String> = branches.iter().map(|b| self.describe_shallow(*b)).collect();
                format!("union [{}]", names.join(", "))
            }
            Type::Record(record) => format!("record {}", record.name.full),
            Type::Enum(enumeration) => format!("enum {}", enumeration.name.full),
            Type::Fixed(fixed) => format!("fixed {} ({} bytes)", fixed.name.full, fixed.size),
        }
    }

    fn describe_shallow(&self, id: NodeId) -> String {
        let ty = self.ty(id);
        ty.name().map_or_else(|| ty.kind().to_owned(), |name| name.full.clone())
    }
}

/// The shape of a node.
#[derive(Debug, Clone)]
pub(crate) enum Type {
    Primitive(Primitive),
    Array(NodeId),
    Map(NodeId),
    Union(Box<[NodeId]>),
    Record(Box<Record>),
    Enum(Box<Enum>),
    Fixed(Box<Fixed>),
}

impl Type {
    /// The name of a record, enum or fixed type.
    pub(crate) fn name(&self) -> Option<&Name> {
        match self {
            Type::Record(record) => Some(&record.name),
            Type::Enum(enumeration) => Some(&enumeration.name),
            Type::Fixed(fixed) => Some(&fixed.name),
            Type::Primitive(_) | Type::Array(_) | Type::Map(_) | Type::Union(_) => None,
        }
    }

    /// The type's kind as Avro writes it: `int`, `array`, `record`, …
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Type::Primitive(primitive) => primitive.name(),
            Type::Array(_) => "array",
            Type::Map(_) => "map",
            Type::Union(_) => "union",
            Type::Record(_) => "record",
            Type::Enum(_) => "enum",
            Type::Fixed(_) => "fixed",
        }
    }
}

/// Avro's eight primitive types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Primitive {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
}

impl Primitive {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Primitive::Null,
            "boolean" => Primitive::Boolean,
            "int" => Primitive::Int,
            "long" => Primitive::Long,
            "float" => Primitive::Float,
            "double" => Primitive::Double,
            "bytes" => Primitive::Bytes,
            "string" => Primitive::String,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Primitive::Null => "null",
            Primitive::Boolean => "boolean",
            Primitive::Int => "int",
            Primitive::Long => "long",
            Primitive::Float => "float",
            Primitive::Double => "double",
            Primitive::Bytes => "bytes",
            Primitive::String => "string",
        }
    }
}

/// What records, enums and fixed types share: a full name, aliases and a doc.
#[derive(Debug, Clone)]
pub(crate) struct Name {
    /// `namespace.name`, or just `name` in the null namespace.
    pub(crate) full: String,
    /// Where the simple name starts in `full` (after the last dot).
    simple_start: usize,
    /// Fully qualified alias names.
    pub(crate) aliases: Vec<String>,
    pub(crate) doc: Option<String>,
}

impl Name {
    pub(crate) fn new(full: String, aliases: Vec<String>, doc: Option<String>) -> Self {
        let simple_start = full.bytes().rposition(|byte| byte == b'.').map_or(0, |dot| dot + 1);
        Self {
            full,
            simple_start,
            aliases,
            doc,
        }
    }

    /// The name without its namespace, which is what Avro compares.
    pub(crate) fn simple(&self) -> &str {
        &self.full[self.simple_start..]
    }

    /// The namespace, empty for the null namespace.
    pub(crate) fn namespace(&self) -> &str {
        &self.full[..self.simple_start.saturating_sub(1)]
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) name: Name,
    pub(crate) fields: Vec<Field>,
    /// Every field name, one after another, so that a walk over the fields
    /// reads one block of memory.
    names: String,
    /// An open-addressing table of field positions by the hash of their
    /// names (position + 1; 0 is an empty slot), for lookups by name
    /// without a map per record. Its length is a power of two; it is empty
    /// for records of few fields, which are searched in order.
    slots: Vec<u32>,
    /// The first two positions that share a name, if any do.
    repeated: Option<(usize, usize)>,
}

impl Record {
    /// A record of `fields`, each given with its name.
    pub(crate) fn new(name: Name, fields: Vec<(Cow<'_, str>, Field)>) -> Self {
        let mut builder = RecordFields::with_capacity(fields.len());
        for (field_name, field) in fields {
            builder.push(&field_name, field);
        }
        builder.finish(name)
    }

    /// A record of the fields in `builder`.
    fn build(name: Name, RecordFields { fields, names }: RecordFields) -> Self {
        let mut record = Self {
            name,
            fields,
            names,
            slots: Vec::new(),
            repeated: None,
        };
        let count = record.fields.len();
        if count <= FEW_FIELDS {
            let repeated = (1..count).any(|later| {
                let name = record.field_name(later);
                (0..later).any(|earlier| record.field_name(earlier) == name)
            });
            if repeated {
                record.repeated = record.first_repeated_pair();
            }
            return record;
        }
        record.slots = vec![0; (2 * count).next_power_of_two()];
        let mut repeated = false;
        for position in 0..count {
            let slot = record.slot_of(record.field_name(position));
            if record.slots[slot] == 0 {
                record.slots[slot] = offset(position + 1);
            } else {
                repeated = true;
            }
        }
        if repeated {
            record.repeated = record.first_repeated_pair();
        }
        record
    }

    /// The end of the run of positions from `start` at which this record and
    /// `other` have fields of the same names whose types `same_type` says
    /// are the same; the names of the whole run are compared at once.
    pub(crate) fn same_fields_until(
        &self,
        other: &Record,
        start: usize,
        mut same_type: impl FnMut(NodeId, NodeId) -> bool,
    ) -> usize {
        let limit = self.fields.len().min(other.fields.len());
        let mut end = start;
        while end < limit {
            let (mine, theirs) = (&self.fields[end], &other.fields[end]);
            if mine.name_end - mine.name_start != theirs.name_end - theirs.name_start || !same_type(mine.ty, theirs.ty)
            {
                break;
            }
            end += 1;
        }
        if end == start {
            return start;
        }
        fn block(record: &Record, start: usize, end: usize) -> &str {
            &record.names[record.fields[start].name_start as usize..record.fields[end - 1].name_end as usize]
        }
        if block(self, start, end) == block(other, start, end) {
            return end;
        }
        (start..end)
            .find(|&position| self.field_name(position) != other.field_name(position))
            .unwrap_or(end)
    }

    /// The name of the field at `position`.
    pub(crate) fn field_name(&self, position: usize) -> &str {
        let field = &self.fields[position];
        &self.names[field.name_start as usize..field.name_end as usize]
    }

    /// The slot that holds the field called `name`, or the empty slot where it would go.
    fn slot_of(&self, name: &str) -> usize {
        let mask = self.slots.len() - 1;
        let mut slot = hash_name(name) as usize & mask;
        loop {
            match self.slots[slot] {
                0 => return slot,
                taken if self.field_name(taken as usize - 1) == name => return slot,
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// The position of the field called `name` (the first, when it is repeated).
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return (0..self.fields.len()).find(|&position| self.field_name(position) == name);
        }
        match self.slots[self.slot_of(name)] {
            0 => None,
            taken => Some(taken as usize - 1),
        }
    }

    /// The first two positions that share a name, if any do: of the repeated
    /// names the smallest, at its first two positions.
    pub(crate) fn repeated_field(&self) -> Option<(usize, usize)> {
        self.repeated
    }

    /// Sorts the positions by name to find [`Record::repeated_field`]; run
    /// only for records that repeat a name, which no valid schema has.
    fn first_repeated_pair(&self) -> Option<(usize, usize)> {
        let mut index: Vec<usize> = (0..self.fields.len()).collect();
        index.sort_by(|a, b| self.field_name(*a).cmp(self.field_name(*b)));
        index
            .windows(2)
            .map(|pair| (pair[0], pair[1]))
            .find(|(a, b)| self.field_name(*a) == self.field_name(*b))
            .map(|(a, b)| (a.min(b), a.max(b)))
    }
}

/// A record's fields and their names, gathered one by one.
#[derive(Debug)]
pub(crate) struct RecordFields {
    fields: Vec<Field>,
    names: String,
}

impl RecordFields {
    pub(crate) fn with_capacity(fields: usize) -> Self {
        Self {
            fields: Vec::with_capacity(fields),
            // Most field names are short.
            names: String::with_capacity(fields * 8),
        }
    }

    /// Adds the field called `name`.
    pub(crate) fn push(&mut self, name: &str, mut field: Field) {
        field.name_start = offset(self.names.len());
        self.names.push_str(name);
        field.name_end = offset(self.names.len());
        self.fields.push(field);
    }

    /// The number of fields so far.
    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    /// The length of the names so far.
    pub(crate) fn names_len(&self) -> usize {
        self.names.len()
    }

    /// Moves the fields from position `first` (whose names start at
    /// `names_from`) into a gathering of their own, allocated at its size:
    /// a parser gathers the fields of nested records in one buffer, the
    /// innermost record's last, and takes each record's out when it ends.
    pub(crate) fn split_off(&mut self, first: usize, names_from: usize) -> RecordFields {
        if first == 0 && names_from == 0 {
            // The outermost record, often most of the text: no copy.
            return std::mem::replace(self, RecordFields::with_capacity(0));
        }
        let rebase = offset(names_from);
        let fields = self
            .fields
            .drain(first..)
            .map(|mut field| {
                field.name_start -= rebase;
                field.name_end -= rebase;
                field
            })
            .collect();
        let names = self.names[names_from..].to_owned();
        self.names.truncate(names_from);
        RecordFields { fields, names }
    }

    pub(crate) fn finish(self, name: Name) -> Record {
        Record::build(name, self)
    }
}

/// The hash of a field name for [`Record`]'s table.
fn hash_name(name: &str) -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = rustc_hash::FxBuildHasher.build_hasher();
    hasher.write(name.as_bytes());
    hasher.finish()
}

/// Records of at most this many fields have no table of their names.
const FEW_FIELDS: usize = 8;

/// A length or offset as stored: schemas are limited far below 4 GiB.
fn offset(length: usize) -> u32 {
    u32::try_from(length).unwrap_or(u32::MAX)
}

/// A record field; its name is kept by its [`Record`]. The attributes the
/// compatibility walk rarely reads are boxed, so the walk over a record's
/// fields touches few cache lines.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    name_start: u32,
    name_end: u32,
    pub(crate) ty: NodeId,
    details: Details,
}

/// A field's attributes beyond its name and type, as kept: a field whose
/// only attribute is one of the commonest defaults (`null`, `""`) takes
/// no allocation.
#[derive(Debug, Clone)]
enum Details {
    None,
    NullDefault,
    EmptyStringDefault,
    Boxed(Box<FieldDetails>),
}

static NULL: Value = Value::Null;
static EMPTY_STRING: Value = Value::String(String::new());

/// A field's attributes beyond its name and type.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldDetails {
    pub(crate) aliases: Vec<String>,
    pub(crate) default: Option<Value>,
    pub(crate) doc: Option<String>,
    /// `ascending` is the default and is not stored.
    pub(crate) order: Option<String>,
    pub(crate) properties: BTreeMap<String, Value>,
}

impl Field {
    pub(crate) fn new(ty: NodeId, details: FieldDetails) -> Self {
        Self::with_details(ty, Some(details))
    }

    /// A field with `details`, if it has any beyond its name and type.
    pub(crate) fn with_details(ty: NodeId, details: Option<FieldDetails>) -> Self {
        let details = match details {
            None => Details::None,
            Some(details) => {
                let only_default = details.aliases.is_empty()
                    && details.doc.is_none()
                    && details.order.is_none()
                    && details.properties.is_empty();
                match &details.default {
                    _ if !only_default => Details::Boxed(Box::new(details)),
                    None => Details::None,
                    Some(Value::Null) => Details::NullDefault,
                    Some(Value::String(text)) if text.is_empty() => Details::EmptyStringDefault,
                    Some(_) => Details::Boxed(Box::new(details)),
                }
            }
        };
        Self {
            name_start: 0,
            name_end: 0,
            ty,
            details,
        }
    }

    /// The attributes kept in a box, if any are.
    fn boxed(&self) -> Option<&FieldDetails> {
        match &self.details {
            Details::Boxed(details) => Some(details),
            Details::None | Details::NullDefault | Details::EmptyStringDefault => None,
        }
    }

    pub(crate) fn aliases(&self) -> &[String] {
        self.boxed().map_or(&[], |details| &details.aliases)
    }

    pub(crate) fn default(&self) -> Option<&Value> {
        match &self.details {
            Details::None => None,
            Details::NullDefault => Some(&NULL),
            Details::EmptyStringDefault => Some(&EMPTY_STRING),
            Details::Boxed(details) => details.default.as_ref(),
        }
    }

    pub(crate) fn doc(&self) -> Option<&str> {
        self.boxed().and_then(|details| details.doc.as_deref())
    }

    pub(crate) fn order(&self) -> Option<&str> {
        self.boxed().and_then(|details| details.order.as_deref())
    }

    pub(crate) fn properties(&self) -> &BTreeMap<String, Value> {
        self.boxed().map_or(&NO_PROPERTIES, |details| &details.properties)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Enum {
    pub(crate) name: Name,
    pub(crate) symbols: Vec<String>,
    pub(crate) default: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    pub(crate) name: Name,
    pub(crate) size: u64,
}

impl AvroSchema {
    /// A schema of the finished `types`, with their digests.
    pub(crate) fn new(types: Types, root: NodeId, first_own_node: NodeId, nesting: usize) -> Self {
        let digests = super::digest::digests(&types, root);
        Self {
            types,
            root,
            first_own_node,
            nesting,
            digests,
        }
    }

    /// Whether the subtrees at `id` here and at `other_id` in `other` are
    /// known to be the same to schema resolution (equal digests).
    pub(crate) fn same_as(&self, id: NodeId, other: &AvroSchema, other_id: NodeId) -> bool {
        matches!((self.digests[id], other.digests[other_id]), (Some(mine), Some(theirs)) if mine == theirs)
    }

    pub(crate) fn ty(&self, id: NodeId) -> &Type {
        self.types.ty(id)
    }

    pub(crate) fn describe(&self, id: NodeId) -> String {
        self.types.describe(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(names: &[&str]) -> Record {
        let fields = names
            .iter()
            .enumerate()
            .map(|(position, name)| (Cow::Borrowed(*name), Field::new(position, FieldDetails::default())))
            .collect();
        Record::new(Name::new("R".to_owned(), Vec::new(), None), fields)
    }

    #[test]
    fn fields_are_found_by_name() {
        let names: Vec<String> = (0..300).map(|index| format!("field_{index}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let record = record(&names);
        for (position, name) in names.iter().enumerate() {
            assert_eq!(record.position(name), Some(position));
        }
        assert_eq!(record.position("field_300"), None);
        assert_eq!(record.position(""), None);
        assert_eq!(record.repeated_field(), None);
        assert_eq!(self::record(&[]).position("a"), None);
    }

    #[test]
    fn the_repeated_field_is_the_smallest_repeated_name_at_its_first_two_positions() {
        assert_eq!(record(&["b", "a", "b", "a", "a"]).repeated_field(), Some((1, 3)));
        assert_eq!(record(&["x", "c", "y", "c"]).repeated_field(), Some((1, 3)));
        assert_eq!(record(&["a", "b", "c"]).repeated_field(), None);
        let mut many: Vec<String> = (0..12).map(|index| format!("f{index}")).collect();
        many.extend(["f7".to_owned(), "f3".to_owned(), "f3".to_owned()]);
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(record(&many).repeated_field(), Some((3, 13)));
        assert_eq!(record(&many).position("f3"), Some(3));
    }

    #[test]
    fn a_run_of_same_fields_ends_at_the_first_difference() {
        let same_types = |_: NodeId, _: NodeId| true;
        let before = record(&["a", "bb", "c", "d"]);
        assert_eq!(
            before.same_fields_until(&record(&["a", "bb", "c", "d", "e"]), 0, same_types),
            4
        );
        assert_eq!(
            before.same_fields_until(&record(&["a", "bx", "c", "d"]), 0, same_types),
            1
        );
        assert_eq!(
            before.same_fields_until(&record(&["a", "bx", "c", "d"]), 1, same_types),
            1
        );
        assert_eq!(
            before.same_fields_until(&record(&["a", "bx", "c", "d"]), 2, same_types),
            4
        );
        assert_eq!(
            before.same_fields_until(&record(&["a", "b", "c", "d"]), 0, same_types),
            1
        );
        assert_eq!(
            before.same_fields_until(&record(&["ab", "b", "c", "d"]), 0, same_types),
            0
        );
        // Types 0..4: a different type at position 2 ends the run there.
        assert_eq!(before.same_fields_until(&before, 0, |mine, _| mine != 2), 2);
    }
}

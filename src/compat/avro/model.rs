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

    /// Replaces a placeholder node with the finished type.
    pub(crate) fn replace(&mut self, id: NodeId, ty: Type, properties: BTreeMap<String, Value>) {
        self.nodes[id] = ty;
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
        let simple_start = full.rfind('.').map_or(0, |dot| dot + 1);
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
    /// Field positions sorted by field name (stable, so repeated names keep
    /// their order), for lookups by name without a map per record.
    index: Vec<u32>,
}

impl Record {
    /// A record of `fields`, each given with its name.
    pub(crate) fn new(name: Name, fields: Vec<(Cow<'_, str>, Field)>) -> Self {
        let mut names = String::with_capacity(fields.iter().map(|(field_name, _)| field_name.len()).sum());
        let fields: Vec<Field> = fields
            .into_iter()
            .map(|(field_name, mut field)| {
                field.name_start = offset(names.len());
                names.push_str(&field_name);
                field.name_end = offset(names.len());
                field
            })
            .collect();
        let mut record = Self {
            name,
            fields,
            names,
            index: Vec::new(),
        };
        let mut index: Vec<u32> = (0..offset(record.fields.len())).collect();
        index.sort_by(|a, b| record.field_name(*a as usize).cmp(record.field_name(*b as usize)));
        record.index = index;
        record
    }

    /// The name of the field at `position`.
    pub(crate) fn field_name(&self, position: usize) -> &str {
        let field = &self.fields[position];
        &self.names[field.name_start as usize..field.name_end as usize]
    }

    /// The position of the field called `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.index
            .binary_search_by(|position| self.field_name(*position as usize).cmp(name))
            .ok()
            .map(|found| self.index[found] as usize)
    }

    /// The first two positions that share a name, if any do.
    pub(crate) fn repeated_field(&self) -> Option<(usize, usize)> {
        self.index
            .windows(2)
            .map(|pair| (pair[0] as usize, pair[1] as usize))
            .find(|(a, b)| self.field_name(*a) == self.field_name(*b))
            .map(|(a, b)| (a.min(b), a.max(b)))
    }
}

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
    details: Option<Box<FieldDetails>>,
}

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
        let empty = details.aliases.is_empty()
            && details.default.is_none()
            && details.doc.is_none()
            && details.order.is_none()
            && details.properties.is_empty();
        Self {
            name_start: 0,
            name_end: 0,
            ty,
            details: (!empty).then(|| Box::new(details)),
        }
    }

    pub(crate) fn aliases(&self) -> &[String] {
        self.details.as_ref().map_or(&[], |details| &details.aliases)
    }

    pub(crate) fn default(&self) -> Option<&Value> {
        self.details.as_ref().and_then(|details| details.default.as_ref())
    }

    pub(crate) fn doc(&self) -> Option<&str> {
        self.details.as_ref().and_then(|details| details.doc.as_deref())
    }

    pub(crate) fn order(&self) -> Option<&str> {
        self.details.as_ref().and_then(|details| details.order.as_deref())
    }

    pub(crate) fn properties(&self) -> &BTreeMap<String, Value> {
        self.details
            .as_ref()
            .map_or(&NO_PROPERTIES, |details| &details.properties)
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

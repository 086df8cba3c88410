//! The parsed form of an Avro schema: an arena of type nodes in which a named
//! type is one node that every use points to, so recursion needs no special case.

use std::collections::BTreeMap;

use serde_json::Value;

/// Index of a node in [`AvroSchema::nodes`].
pub(crate) type NodeId = usize;

/// A parsed, validated Avro schema, with the named types of its references.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
    /// Nodes below this index came from references, not from the schema itself.
    pub(crate) first_own_node: NodeId,
}

/// One type in the arena, with the attributes Avro does not interpret
/// (`logicalType`, `connect.name`, …) kept for the canonical form.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) ty: Type,
    pub(crate) properties: BTreeMap<String, Value>,
}

/// The shape of a node.
#[derive(Debug, Clone)]
pub(crate) enum Type {
    Primitive(Primitive),
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
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
    /// Field positions sorted by field name (stable, so repeated names keep
    /// their order), for lookups by name without a map per record.
    pub(crate) index: Vec<usize>,
}

impl Record {
    /// The sorted index of `fields`.
    pub(crate) fn index_of(fields: &[Field]) -> Vec<usize> {
        let mut index: Vec<usize> = (0..fields.len()).collect();
        index.sort_by(|a, b| fields[*a].name.cmp(&fields[*b].name));
        index
    }

    /// The position of the field called `name`.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.index
            .binary_search_by(|position| self.fields[*position].name.as_str().cmp(name))
            .ok()
            .map(|found| self.index[found])
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) aliases: Vec<String>,
    pub(crate) ty: NodeId,
    pub(crate) default: Option<Value>,
    pub(crate) doc: Option<String>,
    /// `ascending` is the default and is not stored.
    pub(crate) order: Option<String>,
    pub(crate) properties: BTreeMap<String, Value>,
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
    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    pub(crate) fn ty(&self, id: NodeId) -> &Type {
        &self.nodes[id].ty
    }

    /// A short description of a type for messages: `int`, `array`, `record Foo`.
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
        match self.ty(id) {
            Type::Primitive(primitive) => primitive.name().to_owned(),
            Type::Array(_) => "array".to_owned(),
            Type::Map(_) => "map".to_owned(),
            Type::Union(_) => "union".to_owned(),
            Type::Record(record) => record.name.full.clone(),
            Type::Enum(enumeration) => enumeration.name.full.clone(),
            Type::Fixed(fixed) => fixed.name.full.clone(),
        }
    }
}

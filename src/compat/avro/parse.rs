//! Reading Avro schema text into an [`AvroSchema`], with every rule of the
//! specification checked and every problem located by a JSON Pointer.
//!
//! Follows Java Avro's parser where the specification is silent: an
//! unqualified name that is not found in the enclosing namespace is looked up
//! in the null namespace, `error` is a record, and a union default may match
//! any branch (the Avro 1.12 rule). An empty union is valid, as in Java
//! (no value can be written with it, so anything reads it).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::model::{AvroSchema, Enum, Field, FieldDetails, Fixed, Name, NodeId, Primitive, Record, Type, Types};
use crate::compat::json_tree::{Attributes, Json, Members, SyntaxError, nesting};
use crate::compat::stack::{deep, walk};
use crate::compat::{Location, SchemaPath, SchemaText};

/// Why a schema text is not a valid Avro schema, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{position}: {problem}", in_reference(.reference))]
pub struct ParseError {
    /// The reference the problem is in, when it is not in the schema itself.
    pub reference: Option<String>,
    /// Where the problem is.
    pub position: Position,
    /// What is wrong, as a sentence fragment.
    pub problem: String,
}

fn in_reference(reference: &Option<String>) -> String {
    reference
        .as_ref()
        .map_or_else(String::new, |name| format!("in reference `{name}`, "))
}

/// Where in a schema text a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// A place in the text, for JSON syntax errors (1-based).
    Text {
        /// Line number.
        line: usize,
        /// Column number.
        column: usize,
    },
    /// A place in the JSON document.
    Pointer(SchemaPath),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Text { line, column } => write!(f, "at line {line}, column {column}"),
            Position::Pointer(path) => write!(f, "at {path}"),
        }
    }
}

/// A problem found while walking the JSON document.
struct Problem {
    path: SchemaPath,
    message: String,
}

impl Problem {
    fn at(location: &Location<'_>, message: impl Into<String>) -> Self {
        Self {
            path: location.to_path(),
            message: message.into(),
        }
    }
}

type Parsed<T> = Result<T, Problem>;

impl AvroSchema {
    /// Parses a schema and its references.
    ///
    /// References are read first, in order; the named types they define can
    /// then be used by full name in the later references and in the schema.
    ///
    /// # Errors
    /// [`ParseError`] naming the first problem and its position.
    pub fn parse(schema: &SchemaText) -> Result<Self, ParseError> {
        // Most schemas take the one-pass reader; the rest, and every invalid
        // one, the full parser, which names the problem and its position.
        if let Some(parsed) = super::direct::parse(schema) {
            return Ok(parsed);
        }
        Self::parse_in_full(schema)
    }

    /// Parses a schema and its references with the full parser: the JSON
    /// tree first, then every rule checked on it in document order.
    pub(super) fn parse_in_full(schema: &SchemaText) -> Result<Self, ParseError> {
        let mut parser = Parser::new();
        for reference in &schema.references {
            parser.parse_document(&reference.text).map_err(|error| ParseError {
                reference: Some(reference.name.clone()),
                ..error
            })?;
        }
        let first_own_node = parser.types.len();
        let root = parser.parse_document(&schema.text)?;
        Ok(AvroSchema::new(parser.types, root, first_own_node, parser.nesting))
    }
}

/// The attributes of a type object that Avro interprets; any other is a
/// custom attribute, kept for the canonical form.
static TYPE_KEYS: [&str; 11] = [
    "type",
    "name",
    "namespace",
    "aliases",
    "doc",
    "fields",
    "symbols",
    "default",
    "size",
    "items",
    "values",
];

/// The attributes of a record field that Avro interprets.
static FIELD_KEYS: [&str; 6] = ["name", "type", "default", "doc", "order", "aliases"];

type TypeAttributes<'a> = Attributes<'a, 11>;

struct Parser {
    types: Types,
    /// Named types by full name.
    names: FxHashMap<String, NodeId>,
    /// Fields with defaults, checked once every type is complete: (record, field, path of the default).
    defaults: Vec<(NodeId, usize, SchemaPath)>,
    /// The deepest nesting of the documents read so far.
    nesting: usize,
}

/// The node of each plain primitive, shared by every use: primitives have no identity.
pub(super) const PRIMITIVES: [Primitive; 8] = [
    Primitive::Null,
    Primitive::Boolean,
    Primitive::Int,
    Primitive::Long,
    Primitive::Float,
    Primitive::Double,
    Primitive::Bytes,
    Primitive::String,
];

/// An arena holding the [`PRIMITIVES`] nodes first, at their positions in it.
pub(super) fn primitive_types() -> Types {
    let mut types = Types::default();
    for primitive in PRIMITIVES {
        types.push(Type::Primitive(primitive), BTreeMap::new());
    }
    types
}

impl Parser {
    fn new() -> Self {
        Self {
            types: primitive_types(),
            names: FxHashMap::default(),
            defaults: Vec::new(),
            nesting: 0,
        }
    }

    fn parse_document(&mut self, text: &str) -> Result<NodeId, ParseError> {
        let nesting = nesting(text);
        self.nesting = self.nesting.max(nesting);
        walk(nesting, || {
            let value = Json::parse_in_walk(text).map_err(syntax_error)?;
            let root = self.parse_type(value, "", &Location::ROOT).map_err(problem_error)?;
            self.check_defaults().map_err(problem_error)?;
            Ok(root)
        })
    }

    fn push(&mut self, ty: Type, properties: BTreeMap<String, Value>) -> NodeId {
        self.types.push(ty, properties)
    }

    /// One level of the walk over the document; every nested type comes back here.
    fn parse_type(&mut self, value: Json<'_>, namespace: &str, location: &Location<'_>) -> Parsed<NodeId> {
        deep(|| self.parse_type_here(value, namespace, location))
    }

    fn parse_type_here(&mut self, value: Json<'_>, namespace: &str, location: &Location<'_>) -> Parsed<NodeId> {
        match value {
            Json::String(name) => match Primitive::from_name(&name) {
                Some(primitive) => Ok(primitive_node(primitive)),
                None => self.lookup(&name, namespace, location),
            },
            Json::Array(branches) => self.parse_union(branches, namespace, location),
            Json::Object(members) => self.parse_object(members, namespace, location),
            other => Err(Problem::at(
                location,
                format!(
                    "expected a type name, a type object or a union array, found {}",
                    other.describe()
                ),
            )),
        }
    }

    fn lookup(&self, name: &str, namespace: &str, location: &Location<'_>) -> Parsed<NodeId> {
        let qualified = qualify(name, namespace);
        let found = self
            .names
            .get(&qualified)
            .or_else(|| (!name.contains('.')).then(|| self.names.get(name)).flatten());
        match found {
            Some(id) => Ok(*id),
            None => Err(Problem::at(
                location,
                format!(
                    "unknown type `{name}`: it is not a primitive type and no named type `{qualified}` is defined \
                     before this point (define it earlier in the schema, or supply it as a reference)"
                ),
            )),
        }
    }

    fn parse_union(&mut self, branches: Vec<Json<'_>>, namespace: &str, location: &Location<'_>) -> Parsed<NodeId> {
        let mut ids: Vec<NodeId> = Vec::with_capacity(branches.len());
        let mut seen: FxHashMap<String, usize> = FxHashMap::default();
        for (index, branch) in branches.into_iter().enumerate() {
            let branch_location = location.index(index);
            let id = self.parse_type(branch, namespace, &branch_location)?;
            if matches!(self.types.ty(id), Type::Union(_)) {
                return Err(Problem::at(
                    &branch_location,
                    "a union may not contain another union directly; list its branches in the outer union",
                ));
            }
            let key = self.branch_key(id);
            if let Some(first) = seen.get(key) {
                return Err(Problem::at(
                    &branch_location,
                    format!("the union already has a `{key}` branch (at index {first}); each type may appear once"),
                ));
            }
            seen.insert(key.to_owned(), index);
            ids.push(id);
        }
        Ok(self.push(Type::Union(ids.into_boxed_slice()), BTreeMap::new()))
    }

    /// What makes two union branches the same: the type, or the full name of a named type.
    fn branch_key(&self, id: NodeId) -> &str {
        let ty = self.types.ty(id);
        match ty.name() {
            Some(name) => &name.full,
            None => ty.kind(),
        }
    }

    fn parse_object(&mut self, members: Members<'_>, namespace: &str, location: &Location<'_>) -> Parsed<NodeId> {
        let mut object = Attributes::sort(members, &TYPE_KEYS);
        let type_location = location.key("type");
        let type_name = match object.take("type") {
            Some(Json::String(name)) => name,
            Some(other) => {
                return Err(Problem::at(
                    &type_location,
                    format!("`type` must be a string naming the type, found {}", other.describe()),
                ));
            }
            None => return Err(Problem::at(location, "a type object needs a `type` attribute")),
        };
        if let Some(primitive) = Primitive::from_name(&type_name) {
            // Avro ignores its reserved attributes on a primitive: `{"type":
            // "int", "name": "foo"}` is `"int"` (Confluent finds one by the other).
            let properties = custom_properties(object);
            if properties.is_empty() {
                return Ok(primitive_node(primitive));
            }
            return Ok(self.push(Type::Primitive(primitive), properties));
        }
        match type_name.as_ref() {
            "record" | "error" => self.parse_record(object, namespace, location),
            "enum" => self.parse_enum(object, namespace, location),
            "fixed" => self.parse_fixed(object, namespace, location),
            "array" => {
                let items = required(&mut object, "items", location, "an array")?;
                let items = self.parse_type(items, namespace, &location.key("items"))?;
                Ok(self.push(Type::Array(items), properties(object)))
            }
            "map" => {
                let values = required(&mut object, "values", location, "a map")?;
                let values = self.parse_type(values, namespace, &location.key("values"))?;
                Ok(self.push(Type::Map(values), properties(object)))
            }
            other => self.lookup(other, namespace, &type_location),
        }
    }

    /// Reads the attributes every named type shares.
    fn parse_name(
        &self,
        object: &mut TypeAttributes<'_>,
        enclosing_namespace: &str,
        location: &Location<'_>,
        what: &str,
    ) -> Parsed<Name> {
        let name = match object.take("name") {
            Some(Json::String(name)) => name,
            Some(other) => {
                return Err(Problem::at(
                    &location.key("name"),
                    format!("`name` must be a string, found {}", other.describe()),
                ));
            }
            None => return Err(Problem::at(location, format!("{what} needs a `name`"))),
        };
        let namespace = match object.take("namespace") {
            None | Some(Json::Null) => Cow::Borrowed(enclosing_namespace),
            Some(Json::String(namespace)) => namespace,
            Some(other) => {
                return Err(Problem::at(
                    &location.key("namespace"),
                    format!("`namespace` must be a string, found {}", other.describe()),
                ));
            }
        };
        let full = qualify(&name, &namespace);
        if !is_valid_full_name(&full) {
            return Err(Problem::at(
                &location.key("name"),
                format!(
                    "`{full}` is not a valid name: each dot-separated part must start with a letter or `_` \
                     and contain only letters, digits and `_`"
                ),
            ));
        }
        let simple = full.rsplit('.').next().unwrap_or(&full);
        if Primitive::from_name(simple).is_some() {
            return Err(Problem::at(
                &location.key("name"),
                format!("`{simple}` is a primitive type name and cannot name {what}"),
            ));
        }
        let own_namespace = full.rsplit_once('.').map_or("", |(namespace, _)| namespace);
        let aliases = string_list(object.take("aliases"), "aliases", location)?
            .into_iter()
            .map(|alias| qualify(&alias, own_namespace))
            .collect::<Vec<_>>();
        if let Some(alias) = aliases.iter().find(|alias| !is_valid_full_name(alias)) {
            return Err(Problem::at(
                &location.key("aliases"),
                format!("alias `{alias}` is not a valid name"),
            ));
        }
        let doc = optional_string(object.take("doc"), "doc", location)?;
        Ok(Name::new(full, aliases, doc))
    }

    /// Adds a named type's node and reserves its full name, so later uses
    /// (and a record's own fields) can refer to it.
    fn define(&mut self, ty: Type, properties: BTreeMap<String, Value>, location: &Location<'_>) -> Parsed<NodeId> {
        let full_name = ty.name().map(|name| name.full.clone()).unwrap_or_default();
        if self.names.contains_key(&full_name) {
            return Err(Problem::at(
                location,
                format!(
                    "the type `{full_name}` is already defined earlier in the schema; define a named type once \
                     and refer to it by name"
                ),
            ));
        }
        let id = self.push(ty, properties);
        self.names.insert(full_name, id);
        Ok(id)
    }

    fn parse_record(
        &mut self,
        mut object: TypeAttributes<'_>,
        namespace: &str,
        location: &Location<'_>,
    ) -> Parsed<NodeId> {
        let name = self.parse_name(&mut object, namespace, location, "a record")?;
        let fields_location = location.key("fields");
        let fields = required_array(&mut object, "fields", location, &format!("record `{}`", name.full))?;
        // The record's own fields may refer to it: the node exists, with its
        // name, before they are read.
        let placeholder = Record::new(name.clone(), Vec::new());
        let id = self.define(Type::Record(Box::new(placeholder)), BTreeMap::new(), location)?;
        let mut parsed: Vec<(Cow<'_, str>, Field)> = Vec::with_capacity(fields.len());
        for (index, field) in fields.into_iter().enumerate() {
            let field_location = fields_location.index(index);
            let (field_name, field) = self.parse_field(field, name.namespace(), &field_location)?;
            if field.default().is_some() {
                self.defaults.push((id, index, field_location.key("default").to_path()));
            }
            parsed.push((field_name, field));
        }
        let record = Record::new(name, parsed);
        if let Some((first, second)) = record.repeated_field() {
            return Err(Problem::at(
                &fields_location.index(second).key("name"),
                format!(
                    "record `{}` already has a field `{}` (at index {first})",
                    record.name.full,
                    record.field_name(second)
                ),
            ));
        }
        self.types.finish_record(id, record, properties(object));
        Ok(id)
    }

    fn parse_field<'j>(
        &mut self,
        field: Json<'j>,
        namespace: &str,
        location: &Location<'_>,
    ) -> Parsed<(Cow<'j, str>, Field)> {
        let Json::Object(members) = field else {
            return Err(Problem::at(
                location,
                format!("a field must be an object, found {}", field.describe()),
            ));
        };
        let mut object = Attributes::sort(members, &FIELD_KEYS);
        let name = match object.take("name") {
            Some(Json::String(name)) if is_valid_name(&name) => name,
            Some(Json::String(name)) => {
                return Err(Problem::at(
                    &location.key("name"),
                    format!(
                        "`{name}` is not a valid field name: it must start with a letter or `_` \
                         and contain only letters, digits and `_`"
                    ),
                ));
            }
            Some(other) => {
                return Err(Problem::at(
                    &location.key("name"),
                    format!("`name` must be a string, found {}", other.describe()),
                ));
            }
            None => return Err(Problem::at(location, "a field needs a `name`")),
        };
        let Some(ty) = object.take("type") else {
            return Err(Problem::at(location, format!("field `{name}` needs a `type`")));
        };
        let ty = self.parse_type(ty, namespace, &location.key("type"))?;
        let aliases = string_list(object.take("aliases"), "aliases", location)?;
        let doc = optional_string(object.take("doc"), "doc", location)?;
        let order = match object.take("order") {
            None => None,
            Some(Json::String(order)) if order == "ascending" => None,
            Some(Json::String(order)) if order == "descending" || order == "ignore" => Some(order.into_owned()),
            Some(other) => {
                return Err(Problem::at(
                    &location.key("order"),
                    format!(
                        "`order` must be \"ascending\", \"descending\" or \"ignore\", found {}",
                        other.describe()
                    ),
                ));
            }
        };
        let details = FieldDetails {
            aliases,
            default: object.take("default").map(Json::into_value),
            doc,
            order,
            properties: properties(object),
        };
        Ok((name, Field::new(ty, details)))
    }

    fn parse_enum(
        &mut self,
        mut object: TypeAttributes<'_>,
        namespace: &str,
        location: &Location<'_>,
    ) -> Parsed<NodeId> {
        let name = self.parse_name(&mut object, namespace, location, "an enum")?;
        let symbols_location = location.key("symbols");
        let symbols = required_array(&mut object, "symbols", location, &format!("enum `{}`", name.full))?;
        let names = enum_symbols(symbols, &symbols_location, &name.full)?;
        let default = match object.take("default") {
            None => None,
            Some(Json::String(symbol)) if names.iter().any(|name| *name == symbol) => Some(symbol.into_owned()),
            Some(other) => {
                return Err(Problem::at(
                    &location.key("default"),
                    format!(
                        "the enum default {} is not one of the symbols of `{}`",
                        other.describe(),
                        name.full
                    ),
                ));
            }
        };
        let enumeration = Enum {
            name,
            symbols: names,
            default,
        };
        self.define(Type::Enum(Box::new(enumeration)), properties(object), location)
    }

    fn parse_fixed(
        &mut self,
        mut object: TypeAttributes<'_>,
        namespace: &str,
        location: &Location<'_>,
    ) -> Parsed<NodeId> {
        let name = self.parse_name(&mut object, namespace, location, "a fixed type")?;
        let size = match object.take("size") {
            Some(Json::Number(size)) if size.as_u64().is_some_and(|size| size <= i32::MAX as u64) => {
                size.as_u64().unwrap_or_default()
            }
            Some(other) => {
                return Err(Problem::at(
                    &location.key("size"),
                    format!(
                        "`size` must be a whole number of bytes from 0 to 2147483647, found {}",
                        other.describe()
                    ),
                ));
            }
            None => return Err(Problem::at(location, format!("fixed `{}` needs a `size`", name.full))),
        };
        self.define(
            Type::Fixed(Box::new(Fixed { name, size })),
            properties(object),
            location,
        )
    }

    fn check_defaults(&mut self) -> Parsed<()> {
        for (record, index, path) in std::mem::take(&mut self.defaults) {
            let Type::Record(record) = self.types.ty(record) else {
                continue;
            };
            let field = &record.fields[index];
            let Some(default) = field.default() else {
                continue;
            };
            if let Err(mismatch) = super::defaults::check(&self.types, field.ty, default) {
                return Err(Problem {
                    path,
                    message: format!(
                        "the default of field `{}` does not match its type: {mismatch}",
                        record.field_name(index)
                    ),
                });
            }
        }
        Ok(())
    }
}

fn required<'a, const N: usize>(
    object: &mut Attributes<'a, N>,
    key: &str,
    location: &Location<'_>,
    what: &str,
) -> Parsed<Json<'a>> {
    object
        .take(key)
        .ok_or_else(|| Problem::at(location, format!("{what} needs an `{key}` attribute")))
}

/// An enum's symbols in order, each a valid name used once. The problem
/// reported is the earliest in the list: symbols are checked for repeats
/// only up to the first one that is not a valid name.
fn enum_symbols(symbols: Vec<Json<'_>>, location: &Location<'_>, owner: &str) -> Parsed<Vec<String>> {
    let mut names: Vec<String> = Vec::with_capacity(symbols.len());
    let mut not_a_name: Option<Problem> = None;
    for (index, symbol) in symbols.into_iter().enumerate() {
        match symbol {
            Json::String(symbol) if is_valid_name(&symbol) => names.push(symbol.into_owned()),
            Json::String(symbol) => {
                not_a_name = Some(Problem::at(
                    &location.index(index),
                    format!(
                        "`{symbol}` is not a valid enum symbol: it must start with a letter or `_` \
                         and contain only letters, digits and `_`"
                    ),
                ));
                break;
            }
            _ => {
                not_a_name = Some(Problem::at(&location.index(index), "an enum symbol must be a string"));
                break;
            }
        }
    }
    let mut first_at: FxHashMap<&str, usize> = FxHashMap::with_capacity_and_hasher(names.len(), Default::default());
    for (index, symbol) in names.iter().enumerate() {
        if let Some(first) = first_at.insert(symbol, index) {
            return Err(Problem::at(
                &location.index(index),
                format!("enum `{owner}` already has the symbol `{symbol}` (at index {first})"),
            ));
        }
    }
    match not_a_name {
        Some(problem) => Err(problem),
        None => Ok(names),
    }
}

/// The array under `key`, which `owner` (`record \`x.R\``) must have.
fn required_array<'a>(
    object: &mut TypeAttributes<'a>,
    key: &str,
    location: &Location<'_>,
    owner: &str,
) -> Parsed<Vec<Json<'a>>> {
    match object.take(key) {
        Some(Json::Array(items)) => Ok(items),
        Some(other) => Err(Problem::at(
            &location.key(key),
            format!("`{key}` must be an array, found {}", other.describe()),
        )),
        None => Err(Problem::at(location, format!("{owner} needs a `{key}` array"))),
    }
}

fn optional_string(value: Option<Json<'_>>, key: &str, location: &Location<'_>) -> Parsed<Option<String>> {
    match value {
        None => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.into_owned())),
        Some(other) => Err(Problem::at(
            &location.key(key),
            format!("`{key}` must be a string, found {}", other.describe()),
        )),
    }
}

fn string_list(value: Option<Json<'_>>, key: &str, location: &Location<'_>) -> Parsed<Vec<String>> {
    let wrong = || Problem::at(&location.key(key), format!("`{key}` must be an array of strings"));
    match value {
        None => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Json::String(text) => Ok(text.into_owned()),
                _ => Err(wrong()),
            })
            .collect(),
        Some(_) => Err(wrong()),
    }
}

/// The attributes Avro does not interpret, kept for the canonical form.
fn properties<const N: usize>(object: Attributes<'_, N>) -> BTreeMap<String, Value> {
    object
        .into_rest()
        .map(|(key, value)| (key.into_owned(), value.into_value()))
        .collect()
}

/// The attributes that are not Avro's reserved ones (reserved ones an
/// object's type does not use are dropped, as Avro does).
fn custom_properties<const N: usize>(object: Attributes<'_, N>) -> BTreeMap<String, Value> {
    object
        .into_rest()
        .filter(|(key, _)| !TYPE_KEYS.contains(&key.as_ref()))
        .map(|(key, value)| (key.into_owned(), value.into_value()))
        .collect()
}

/// The node of the plain primitive `primitive` (the first nodes of every schema).
pub(super) fn primitive_node(primitive: Primitive) -> NodeId {
    PRIMITIVES
        .iter()
        .position(|known| *known == primitive)
        .unwrap_or_default()
}

/// The full name of `name` written inside `namespace`.
pub(super) fn qualify(name: &str, namespace: &str) -> String {
    // Names are short: a byte loop and two copies, not a search and `format!`.
    if name.as_bytes().contains(&b'.') || namespace.is_empty() {
        name.to_owned()
    } else {
        let mut full = String::with_capacity(namespace.len() + 1 + name.len());
        full.push_str(namespace);
        full.push('.');
        full.push_str(name);
        full
    }
}

pub(super) fn is_valid_name(name: &str) -> bool {
    // Every valid name is ASCII, so bytes say as much as chars.
    let bytes = name.as_bytes();
    bytes
        .first()
        .is_some_and(|first| first.is_ascii_alphabetic() || *first == b'_')
        && bytes[1..]
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_')
}

pub(super) fn is_valid_full_name(full: &str) -> bool {
    // Each dot-separated part is a valid name: one pass over the bytes.
    let mut part_start = true;
    for &byte in full.as_bytes() {
        part_start = match byte {
            b'.' if part_start => return false,
            b'.' => true,
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => false,
            b'0'..=b'9' if !part_start => false,
            _ => return false,
        };
    }
    !part_start
}

fn syntax_error(error: SyntaxError) -> ParseError {
    ParseError {
        reference: None,
        position: Position::Text {
            line: error.line,
            column: error.column,
        },
        problem: error.problem,
    }
}

fn problem_error(problem: Problem) -> ParseError {
    ParseError {
        reference: None,
        position: Position::Pointer(problem.path),
        problem: problem.message,
    }
}

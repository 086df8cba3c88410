//! The compiled schema in the shape the difference walk needs: messages and
//! enums in arenas, every field's type resolved to a scalar, a map, or a
//! named type by its fully-qualified name, and each type's file and package.
//!
//! Map entry messages are folded into their map fields and synthetic oneofs
//! (proto3 `optional`) into their fields, as a `.proto` author writes them.

use std::sync::Arc;

use prost_reflect::DescriptorPool;
use prost_types::field_descriptor_proto::{Label as DescriptorLabel, Type as DescriptorType};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto};
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::cache;
use super::parse::{self, Compiled, ParseError};
use crate::compat::SchemaText;

/// A compiled Protobuf schema, with the files it imports.
///
/// Immutable and shared: clones are cheap, and [`ProtobufSchema::parse`]
/// answers a text it has compiled before from the process-wide cache
/// (see `cache`).
#[derive(Debug, Clone)]
pub struct ProtobufSchema(Arc<Model>);

impl std::ops::Deref for ProtobufSchema {
    type Target = Model;

    fn deref(&self) -> &Model {
        &self.0
    }
}

/// What a [`ProtobufSchema`] holds.
#[derive(Debug)]
pub struct Model {
    pub(crate) messages: Vec<Message>,
    pub(crate) enums: Vec<Enum>,
    pub(crate) files: Vec<FileInfo>,
    /// Fully-qualified name (no leading dot) to type.
    pub(crate) types: FxHashMap<String, TypeId>,
    /// The schema's own file.
    pub(crate) main: usize,
    /// The compiled files, for the canonical form.
    pub(crate) pool: DescriptorPool,
    /// How many fields the schema and its imports declare.
    pub(crate) field_count: usize,
    /// Custom options no extension defines, kept as written for identity.
    pub(crate) unresolved_options: Vec<String>,
}

/// One compiled file.
#[derive(Debug, Clone)]
pub(crate) struct FileInfo {
    pub(crate) package: String,
    pub(crate) syntax: String,
    /// Top-level messages (map entries excluded) and enums, in declaration order.
    pub(crate) messages: Vec<usize>,
    pub(crate) enums: Vec<usize>,
    /// Identifies the file's content: two imports with the same identity
    /// need no comparison.
    pub(crate) identity: [u8; 32],
}

/// A message or an enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeId {
    Message(usize),
    Enum(usize),
}

/// A message.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub(crate) full_name: String,
    pub(crate) file: usize,
    pub(crate) fields: Vec<Field>,
    /// Real oneofs by name, in declaration order; fields point into this list.
    pub(crate) oneofs: Vec<String>,
    /// Nested messages (map entries excluded) and enums, in declaration order.
    pub(crate) messages: Vec<usize>,
    pub(crate) enums: Vec<usize>,
    /// Positions in `fields`, by field number.
    pub(crate) by_number: Vec<usize>,
    /// A digest of everything the difference walk reads in this message and
    /// below it: two messages with equal digests have no differences.
    pub(crate) digest: [u8; 32],
    /// A digest of the nested messages and enums alone.
    pub(crate) nested_digest: [u8; 32],
}

/// An enum.
#[derive(Debug, Clone)]
pub(crate) struct Enum {
    pub(crate) full_name: String,
    pub(crate) values: Vec<(i32, String)>,
    /// A digest of the name and the constants.
    pub(crate) digest: [u8; 32],
}

/// A field of a message.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) number: i32,
    /// The label as written; `None` for proto3 singular fields, map fields
    /// and oneof members, which carry none.
    pub(crate) label: Option<Label>,
    pub(crate) ty: FieldType,
    /// Index into the message's real oneofs.
    pub(crate) oneof: Option<usize>,
}

/// A label written on a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    Optional,
    Required,
    Repeated,
}

/// A field's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldType {
    /// A scalar, by its `.proto` keyword.
    Scalar(&'static str),
    /// A message or enum, by fully-qualified name (no leading dot), and
    /// what that name resolves to.
    Named(String, Option<TypeId>),
    /// `map<key, value>`.
    Map(Box<FieldType>, Box<FieldType>),
}

impl FieldType {
    /// The type as a `.proto` author writes it.
    pub(crate) fn describe(&self) -> String {
        match self {
            FieldType::Scalar(name) => (*name).to_owned(),
            FieldType::Named(name, _) => name.clone(),
            FieldType::Map(key, value) => format!("map<{}, {}>", key.describe(), value.describe()),
        }
    }
}

impl Model {
    /// Feeds what the walk compares about a field type: scalars by name;
    /// named types by kind, name without package, and the file they come
    /// from (the schema's own, or an import by its content).
    fn hash_type(&self, hasher: &mut Sha256, ty: &FieldType) {
        match ty {
            FieldType::Scalar(name) => {
                hasher.update(b"s");
                hash_str(hasher, name);
            }
            FieldType::Map(key, value) => {
                hasher.update(b"m");
                self.hash_type(hasher, key);
                self.hash_type(hasher, value);
            }
            FieldType::Named(name, target) => {
                let (tag, file) = match target {
                    Some(TypeId::Message(id)) => (b"M", Some(self.messages[*id].file)),
                    Some(TypeId::Enum(_)) => (b"E", None),
                    None => (b"U", None),
                };
                hasher.update(tag);
                match file {
                    Some(file) if file != self.main => {
                        hash_str(hasher, local(name, &self.files[file].package));
                        hasher.update(self.files[file].identity);
                    }
                    Some(file) => {
                        hash_str(hasher, local(name, &self.files[file].package));
                        hasher.update(b"own");
                    }
                    None => hash_str(hasher, name),
                }
            }
        }
    }
}

impl ProtobufSchema {
    /// Parses and compiles `schema`: `.proto` text or a base64
    /// `FileDescriptorProto`, with its references.
    ///
    /// # Errors
    /// [`ParseError`] when the schema or a file it imports cannot be read,
    /// an import is missing, a type is unknown, or imports form a cycle.
    pub fn parse(schema: &SchemaText) -> Result<Self, ParseError> {
        let key = cache::key(schema);
        if let Some(cached) = cache::get(&key) {
            return Ok(cached);
        }
        let built = ProtobufSchema(Arc::new(Builder::build(parse::compile(schema)?)));
        cache::put(key, &built);
        Ok(built)
    }

    /// The descriptor of the schema's own file.
    pub(crate) fn descriptor(&self) -> Option<prost_reflect::FileDescriptor> {
        self.pool.files().nth(self.main)
    }

    /// The schema's own file as a base64-encoded serialized
    /// `FileDescriptorProto`: what Confluent's `format=serialized` returns.
    pub fn serialized(&self) -> Option<String> {
        use base64::Engine as _;
        // The pool's encoding keeps custom options, which the prost types drop.
        let descriptor = self.descriptor()?;
        Some(base64::engine::general_purpose::STANDARD.encode(descriptor.encode_to_vec()))
    }

    /// The package of the schema's own file.
    pub(crate) fn main_file(&self) -> &FileInfo {
        &self.files[self.main]
    }

    /// How many messages, enums and fields the schema and its imports have.
    pub fn size(&self) -> usize {
        self.messages.len() + self.enums.len() + self.field_count
    }
}

struct Builder {
    schema: Model,
    /// Map entry messages by full name: (key type name, value type name) to resolve later.
    map_entries: FxHashMap<String, (FieldType, FieldType)>,
}

/// A field whose type still names a map entry, before entries are folded in.
struct Pending {
    message: usize,
    field: usize,
}

impl Builder {
    fn build(compiled: Compiled) -> Model {
        let Compiled {
            pool,
            main,
            sources,
            unresolved_options,
        } = compiled;
        let mut builder = Builder {
            schema: Model {
                messages: Vec::new(),
                enums: Vec::new(),
                files: Vec::new(),
                types: FxHashMap::default(),
                main,
                pool: pool.clone(),
                field_count: 0,
                unresolved_options,
            },
            map_entries: FxHashMap::default(),
        };
        let mut pending = Vec::new();
        for (index, handle) in pool.files().enumerate() {
            let file = handle.file_descriptor_proto();
            let identity = match sources.get(index).and_then(Option::as_ref) {
                Some(text) => Sha256::digest(text.as_bytes()).into(),
                None => Sha256::digest(file.name().as_bytes()).into(),
            };
            let package = file.package().to_owned();
            let mut info = FileInfo {
                package: package.clone(),
                syntax: syntax_of(file),
                messages: Vec::new(),
                enums: Vec::new(),
                identity,
            };
            let proto3 = info.syntax == "proto3";
            for message in &file.message_type {
                if let Some(id) = builder.add_message(message, &package, index, proto3, &mut pending) {
                    info.messages.push(id);
                }
            }
            for enumeration in &file.enum_type {
                info.enums.push(builder.add_enum(enumeration, &package));
            }
            builder.schema.files.push(info);
        }
        for Pending { message, field } in pending {
            let field = &mut builder.schema.messages[message].fields[field];
            if let FieldType::Named(entry, _) = &field.ty
                && let Some((key, value)) = builder.map_entries.get(entry)
            {
                field.ty = FieldType::Map(Box::new(key.clone()), Box::new(value.clone()));
                field.label = None;
            }
        }
        builder.resolve_targets();
        builder.digest_types();
        builder.schema
    }

    /// Records what each named field type resolves to, so the walk need not look it up.
    fn resolve_targets(&mut self) {
        let Model { messages, types, .. } = &mut self.schema;
        for message in messages {
            for field in &mut message.fields {
                resolve(&mut field.ty, types);
            }
        }
    }

    /// Fills in the digests, children before parents (a nested message always
    /// comes after its parent in the arena).
    fn digest_types(&mut self) {
        for enumeration in &mut self.schema.enums {
            let mut hasher = Sha256::new();
            hash_str(&mut hasher, simple_name(&enumeration.full_name));
            for (number, name) in &enumeration.values {
                hasher.update(number.to_le_bytes());
                hash_str(&mut hasher, name);
            }
            enumeration.digest = hasher.finalize().into();
        }
        for id in (0..self.schema.messages.len()).rev() {
            let schema = &self.schema;
            let message = &schema.messages[id];
            let mut hasher = Sha256::new();
            hash_str(&mut hasher, simple_name(&message.full_name));
            for oneof in &message.oneofs {
                hash_str(&mut hasher, oneof);
            }
            for field in &message.fields {
                hasher.update(field.number.to_le_bytes());
                hash_str(&mut hasher, &field.name);
                hasher.update([match field.label {
                    None => 0,
                    Some(Label::Optional) => 1,
                    Some(Label::Required) => 2,
                    Some(Label::Repeated) => 3,
                }]);
                hasher.update(field.oneof.map_or(0, |index| index + 1).to_le_bytes());
                schema.hash_type(&mut hasher, &field.ty);
            }
            let mut nested_hasher = Sha256::new();
            for &nested in &message.messages {
                nested_hasher.update(schema.messages[nested].digest);
            }
            nested_hasher.update(b"enums");
            for &nested in &message.enums {
                nested_hasher.update(schema.enums[nested].digest);
            }
            let nested_digest: [u8; 32] = nested_hasher.finalize().into();
            hasher.update(nested_digest);
            let entry = &mut self.schema.messages[id];
            entry.digest = hasher.finalize().into();
            entry.nested_digest = nested_digest;
        }
    }

    /// Adds a message and everything nested in it; `None` for a map entry,
    /// which is remembered for its field instead.
    fn add_message(
        &mut self,
        message: &DescriptorProto,
        scope: &str,
        file: usize,
        proto3: bool,
        pending: &mut Vec<Pending>,
    ) -> Option<usize> {
        let full_name = qualify(scope, message.name());
        if message.options.as_ref().is_some_and(|options| options.map_entry()) {
            let type_of = |name: &str| {
                message
                    .field
                    .iter()
                    .find(|field| field.name() == name)
                    .map_or(FieldType::Scalar("bytes"), field_type)
            };
            self.map_entries.insert(full_name, (type_of("key"), type_of("value")));
            return None;
        }
        let id = self.schema.messages.len();
        self.schema.types.insert(full_name.clone(), TypeId::Message(id));
        // Real oneofs keep their names; synthetic ones (proto3 `optional`) vanish.
        // One pass over the fields: per oneof, (has members, every member is proto3 `optional`).
        let mut members = vec![(false, true); message.oneof_decl.len()];
        for field in &message.field {
            let slot = field
                .oneof_index
                .and_then(|index| usize::try_from(index).ok())
                .and_then(|index| members.get_mut(index));
            if let Some((any, all_optional)) = slot {
                *any = true;
                *all_optional &= field.proto3_optional();
            }
        }
        let synthetic: Vec<bool> = members.iter().map(|&(any, all_optional)| any && all_optional).collect();
        let mut oneofs = Vec::new();
        let mut oneof_slot = Vec::new();
        for (index, oneof) in message.oneof_decl.iter().enumerate() {
            if synthetic[index] {
                oneof_slot.push(None);
            } else {
                oneof_slot.push(Some(oneofs.len()));
                oneofs.push(oneof.name().to_owned());
            }
        }
        let fields: Vec<Field> = message
            .field
            .iter()
            .map(|field| {
                let oneof = field
                    .oneof_index
                    .and_then(|index| usize::try_from(index).ok())
                    .and_then(|index| oneof_slot.get(index).copied().flatten());
                let label = match field.label() {
                    DescriptorLabel::Repeated => Some(Label::Repeated),
                    DescriptorLabel::Required => Some(Label::Required),
                    DescriptorLabel::Optional if oneof.is_some() => None,
                    DescriptorLabel::Optional if proto3 && !field.proto3_optional() => None,
                    DescriptorLabel::Optional => Some(Label::Optional),
                };
                Field {
                    name: field.name().to_owned(),
                    number: field.number(),
                    label,
                    ty: field_type(field),
                    oneof,
                }
            })
            .collect();
        self.schema.field_count += fields.len();
        for (index, field) in fields.iter().enumerate() {
            if field.label == Some(Label::Repeated) && matches!(field.ty, FieldType::Named(..)) {
                pending.push(Pending {
                    message: id,
                    field: index,
                });
            }
        }
        let mut by_number: Vec<usize> = (0..fields.len()).collect();
        by_number.sort_by_key(|&index| fields[index].number);
        self.schema.messages.push(Message {
            full_name: full_name.clone(),
            file,
            fields,
            oneofs,
            messages: Vec::new(),
            enums: Vec::new(),
            by_number,
            digest: [0; 32],
            nested_digest: [0; 32],
        });
        let mut nested_messages = Vec::new();
        for nested in &message.nested_type {
            if let Some(nested_id) = self.add_message(nested, &full_name, file, proto3, pending) {
                nested_messages.push(nested_id);
            }
        }
        let nested_enums = message
            .enum_type
            .iter()
            .map(|enumeration| self.add_enum(enumeration, &full_name))
            .collect();
        let entry = &mut self.schema.messages[id];
        entry.messages = nested_messages;
        entry.enums = nested_enums;
        Some(id)
    }

    fn add_enum(&mut self, enumeration: &EnumDescriptorProto, scope: &str) -> usize {
        let id = self.schema.enums.len();
        let full_name = qualify(scope, enumeration.name());
        self.schema.types.insert(full_name.clone(), TypeId::Enum(id));
        self.schema.enums.push(Enum {
            digest: [0; 32],
            full_name,
            values: enumeration
                .value
                .iter()
                .map(|value| (value.number(), value.name().to_owned()))
                .collect(),
        });
        id
    }
}

fn resolve(ty: &mut FieldType, types: &FxHashMap<String, TypeId>) {
    match ty {
        FieldType::Scalar(_) => {}
        FieldType::Named(name, target) => *target = types.get(name.as_str()).copied(),
        FieldType::Map(key, value) => {
            resolve(key, types);
            resolve(value, types);
        }
    }
}

/// Feeds a string with its length, so that concatenations cannot collide.
fn hash_str(hasher: &mut Sha256, text: &str) {
    hasher.update(text.len().to_le_bytes());
    hasher.update(text.as_bytes());
}

fn simple_name(full_name: &str) -> &str {
    full_name.rsplit('.').next().unwrap_or(full_name)
}

/// `full_name` without its package.
pub(crate) fn local<'n>(full_name: &'n str, package: &str) -> &'n str {
    if package.is_empty() {
        return full_name;
    }
    full_name
        .strip_prefix(package)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(full_name)
}

fn syntax_of(file: &FileDescriptorProto) -> String {
    match file.syntax() {
        "" => "proto2".to_owned(),
        other => other.to_owned(),
    }
}

fn qualify(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

/// A descriptor field's type; named types lose the leading dot.
fn field_type(field: &prost_types::FieldDescriptorProto) -> FieldType {
    let scalar = match field.r#type() {
        DescriptorType::Double => "double",
        DescriptorType::Float => "float",
        DescriptorType::Int64 => "int64",
        DescriptorType::Uint64 => "uint64",
        DescriptorType::Int32 => "int32",
        DescriptorType::Fixed64 => "fixed64",
        DescriptorType::Fixed32 => "fixed32",
        DescriptorType::Bool => "bool",
        DescriptorType::String => "string",
        DescriptorType::Bytes => "bytes",
        DescriptorType::Uint32 => "uint32",
        DescriptorType::Sfixed32 => "sfixed32",
        DescriptorType::Sfixed64 => "sfixed64",
        DescriptorType::Sint32 => "sint32",
        DescriptorType::Sint64 => "sint64",
        DescriptorType::Group | DescriptorType::Message | DescriptorType::Enum => {
            return FieldType::Named(field.type_name().trim_start_matches('.').to_owned(), None);
        }
    };
    FieldType::Scalar(scalar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_name_drops_only_a_whole_package_prefix() {
        assert_eq!(local("shop.Order.Line", "shop"), "Order.Line");
        assert_eq!(local("shopping.Order", "shop"), "shopping.Order");
        assert_eq!(local("Order", ""), "Order");
    }

    #[test]
    fn map_fields_and_proto3_optional_look_as_written() {
        let schema = ProtobufSchema::parse(&SchemaText::new(
            "syntax = \"proto3\";\nmessage A { map<string, int32> m = 1; optional string o = 2; \
             repeated int64 r = 3; string s = 4; oneof c { bool b = 5; } }",
        ))
        .unwrap();
        let message = &schema.messages[0];
        assert!(message.messages.is_empty(), "the map entry is folded into its field");
        assert_eq!(message.oneofs, ["c"], "the synthetic oneof of `o` is gone");
        let labels: Vec<Option<Label>> = message.fields.iter().map(|field| field.label).collect();
        assert_eq!(labels, [None, Some(Label::Optional), Some(Label::Repeated), None, None]);
        assert_eq!(message.fields[0].ty.describe(), "map<string, int32>");
    }
}

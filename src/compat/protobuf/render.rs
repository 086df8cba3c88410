//! `.proto` source text from a compiled file: what a registry stores and
//! returns for a schema sent as a base64 `FileDescriptorProto`, as
//! Confluent returns `ProtobufSchema.canonicalString()`, and the normalized
//! text `?normalize=true` stores.
//!
//! The text compiles back to a file with the same canonical form
//! ([`super::canonical`]), so storing it keeps the schema's identity. To get
//! there the declarations come out in the order the descriptor lists them:
//! a map field or a group is written where its generated entry message sits
//! among the nested messages, so the compiler lists them in the same order
//! again. Type names are written fully qualified (`.pkg.Outer.Inner`),
//! which resolves to the same type wherever it is written.
//!
//! Options are written from the compiled options messages, standard and
//! custom alike: `option java_package = "…";`, `[deprecated = true]`,
//! `option (my.ext) = { a: 1 };`. Not written: the options of extension
//! ranges, option fields the pool has no extension for (which the
//! canonical form does not see either), groups declared in an `extend`
//! block, and custom options no extension defines (kept only as written in
//! the text they came in; see [`super::unresolved_options`]). Editions
//! files are not compiled at all, so not rendered either.

use std::fmt::Write as _;

use prost_reflect::{DescriptorPool, DynamicMessage, FieldDescriptor, FileDescriptor, Kind, MapKey, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, ServiceDescriptorProto};

use super::canonical::default_json_name;

impl super::ProtobufSchema {
    /// The schema's own file as `.proto` text (see the module docs): what
    /// is stored for a schema sent as a base64 descriptor, and for
    /// `?normalize=true`. `None` when the pool has no such file.
    pub fn proto_text(&self) -> Option<String> {
        self.descriptor().map(|file| render(&file))
    }
}

/// The field number of `uninterpreted_option` in every options message.
const UNINTERPRETED_OPTION: u32 = 999;

/// `file` as `.proto` source text.
pub(crate) fn render(file: &FileDescriptor) -> String {
    let proto = file.file_descriptor_proto();
    let mut writer = Writer {
        pool: file.parent_pool(),
        proto3: proto.syntax() == "proto3",
        out: String::new(),
    };
    writer.file(file, proto);
    writer.out
}

struct Writer<'a> {
    pool: &'a DescriptorPool,
    proto3: bool,
    out: String,
}

/// What a message's body holds, in the order it is written.
enum Item<'a> {
    /// A field outside any oneof, with the nested message it brings (map
    /// entry or group), if any.
    Field(&'a FieldDescriptorProto),
    /// A oneof, by its index, written where its first member is.
    Oneof(usize),
}

fn qualify(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

impl Writer<'_> {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn file(&mut self, file: &FileDescriptor, proto: &prost_types::FileDescriptorProto) {
        let syntax = if proto.syntax().is_empty() {
            "proto2"
        } else {
            proto.syntax()
        };
        self.line(0, &format!("syntax = \"{syntax}\";"));
        if !proto.package().is_empty() {
            self.line(0, &format!("package {};", proto.package()));
        }
        for (index, name) in proto.dependency.iter().enumerate() {
            let index = i32::try_from(index).unwrap_or(i32::MAX);
            let modifier = if proto.public_dependency.contains(&index) {
                "public "
            } else if proto.weak_dependency.contains(&index) {
                "weak "
            } else {
                ""
            };
            self.line(0, &format!("import {modifier}{};", quote(name)));
        }
        self.option_statements(0, &file.options());
        let package = proto.package();
        for message in &proto.message_type {
            self.out.push('\n');
            self.message(message, package, 0);
        }
        for enumeration in &proto.enum_type {
            self.out.push('\n');
            self.enumeration(enumeration, package, 0);
        }
        if !proto.extension.is_empty() {
            self.out.push('\n');
            self.extensions(&proto.extension, package, 0);
        }
        for service in &proto.service {
            self.out.push('\n');
            self.service(service, package);
        }
    }

    /// `option name = value;` for every option set in `options`.
    fn option_statements(&mut self, depth: usize, options: &DynamicMessage) {
        for (name, value) in option_assignments(options) {
            self.line(depth, &format!("option {name} = {value};"));
        }
    }

    fn message(&mut self, message: &DescriptorProto, scope: &str, depth: usize) {
        self.line(depth, &format!("message {} {{", message.name()));
        self.message_body(message, scope, depth + 1);
        self.line(depth, "}");
    }

    /// Everything inside a message's braces (also a group's).
    fn message_body(&mut self, message: &DescriptorProto, scope: &str, depth: usize) {
        let full_name = qualify(scope, message.name());
        let descriptor = self.pool.get_message_by_name(&full_name);
        if let Some(descriptor) = &descriptor {
            self.option_statements(depth, &descriptor.options());
        }
        // The nested message each field brings with it (map entry or group).
        let owner_of = |nested: &DescriptorProto| -> Option<usize> {
            let type_name = format!(".{full_name}.{}", nested.name());
            let map_entry = nested.options.as_ref().is_some_and(|options| options.map_entry());
            message.field.iter().position(|field| {
                field.type_name() == type_name
                    && ((map_entry && field.r#type() == Type::Message && field.label() == Label::Repeated)
                        || (!map_entry && field.r#type() == Type::Group))
            })
        };
        let mut items: Vec<(usize, Item<'_>)> = Vec::new();
        let mut oneof_seen = vec![false; message.oneof_decl.len()];
        for (position, field) in message.field.iter().enumerate() {
            match real_oneof(message, field) {
                None => items.push((position, Item::Field(field))),
                Some(index) if !oneof_seen[index] => {
                    oneof_seen[index] = true;
                    items.push((position, Item::Oneof(index)));
                }
                Some(_) => {}
            }
        }
        // Fields (and oneofs) first, nested messages after them, as people
        // write them; but a nested message a field brings (map entry, group)
        // sits among the nested messages where the compiler put it, so the
        // nested messages listed before it are written before its field.
        let mut next_item = 0;
        let mut pending: Vec<&DescriptorProto> = Vec::new();
        for nested in &message.nested_type {
            let Some(owner) = owner_of(nested) else {
                pending.push(nested);
                continue;
            };
            let holder = items.iter().position(|(position, item)| match item {
                Item::Field(_) => *position == owner,
                Item::Oneof(index) => real_oneof(message, &message.field[owner]) == Some(*index),
            });
            let Some(holder) = holder.filter(|holder| *holder >= next_item) else {
                continue;
            };
            while next_item < holder {
                self.item(message, &items[next_item].1, &full_name, depth);
                next_item += 1;
            }
            for plain in pending.drain(..) {
                self.message(plain, &full_name, depth);
            }
            self.item(message, &items[holder].1, &full_name, depth);
            next_item = holder + 1;
        }
        while next_item < items.len() {
            self.item(message, &items[next_item].1, &full_name, depth);
            next_item += 1;
        }
        for plain in pending {
            self.message(plain, &full_name, depth);
        }
        for enumeration in &message.enum_type {
            self.enumeration(enumeration, &full_name, depth);
        }
        for range in &message.extension_range {
            let end = range.end() - 1;
            if end == range.start() {
                self.line(depth, &format!("extensions {};", range.start()));
            } else {
                self.line(depth, &format!("extensions {} to {end};", range.start()));
            }
        }
        if !message.extension.is_empty() {
            self.extensions(&message.extension, &full_name, depth);
        }
        for range in &message.reserved_range {
            let end = range.end() - 1;
            if end == range.start() {
                self.line(depth, &format!("reserved {};", range.start()));
            } else {
                self.line(depth, &format!("reserved {} to {end};", range.start()));
            }
        }
        for name in &message.reserved_name {
            self.line(depth, &format!("reserved {};", quote(name)));
        }
    }

    fn item(&mut self, message: &DescriptorProto, item: &Item<'_>, full_name: &str, depth: usize) {
        match item {
            Item::Field(field) => self.field(message, field, full_name, depth, false),
            Item::Oneof(index) => {
                let oneof = &message.oneof_decl[*index];
                self.line(depth, &format!("oneof {} {{", oneof.name()));
                if let Some(descriptor) = self.pool.get_message_by_name(full_name)
                    && let Some(oneof) = descriptor.oneofs().nth(*index)
                {
                    self.option_statements(depth + 1, &oneof.options());
                }
                for field in message
                    .field
                    .iter()
                    .filter(|field| real_oneof(message, field) == Some(*index))
                {
                    self.field(message, field, full_name, depth + 1, true);
                }
                self.line(depth, "}");
            }
        }
    }

    /// A field of `message` (named `full_name`), with the map entry or group it brings.
    fn field(
        &mut self,
        message: &DescriptorProto,
        field: &FieldDescriptorProto,
        full_name: &str,
        depth: usize,
        in_oneof: bool,
    ) {
        let nested = field
            .type_name()
            .strip_prefix(&format!(".{full_name}."))
            .and_then(|name| message.nested_type.iter().find(|nested| nested.name() == name));
        let options = self
            .pool
            .get_message_by_name(full_name)
            .and_then(|descriptor| descriptor.get_field(u32::try_from(field.number()).ok()?))
            .map(|descriptor| descriptor.options());
        let map_entry = nested.filter(|nested| {
            field.label() == Label::Repeated
                && field.r#type() == Type::Message
                && nested.options.as_ref().is_some_and(|options| options.map_entry())
        });
        if let Some(entry) = map_entry {
            let type_of = |number: i32| {
                entry
                    .field
                    .iter()
                    .find(|field| field.number() == number)
                    .map_or_else(|| "bytes".to_owned(), type_name)
            };
            let head = format!(
                "map<{}, {}> {} = {}",
                type_of(1),
                type_of(2),
                field.name(),
                field.number()
            );
            self.line(depth, &format!("{head}{};", brackets(field, options.as_ref())));
            return;
        }
        let label = self.label(field, in_oneof);
        match nested.filter(|_| field.r#type() == Type::Group) {
            Some(group) => {
                let head = format!("{label}group {} = {}", group.name(), field.number());
                self.line(depth, &format!("{head}{} {{", brackets(field, options.as_ref())));
                self.message_body(group, full_name, depth + 1);
                self.line(depth, "}");
            }
            None => {
                let head = format!("{label}{} {} = {}", type_name(field), field.name(), field.number());
                self.line(depth, &format!("{head}{};", brackets(field, options.as_ref())));
            }
        }
    }

    fn label(&self, field: &FieldDescriptorProto, in_oneof: bool) -> &'static str {
        match field.label() {
            _ if in_oneof => "",
            Label::Repeated => "repeated ",
            Label::Required => "required ",
            Label::Optional if !self.proto3 || field.proto3_optional() => "optional ",
            Label::Optional => "",
        }
    }

    /// `extend` blocks, one for each run of extensions of one type.
    fn extensions(&mut self, extensions: &[FieldDescriptorProto], scope: &str, depth: usize) {
        let mut open: Option<&str> = None;
        for extension in extensions {
            if open != Some(extension.extendee()) {
                if open.is_some() {
                    self.line(depth, "}");
                }
                self.line(depth, &format!("extend {} {{", extension.extendee()));
                open = Some(extension.extendee());
            }
            let options = self
                .pool
                .get_extension_by_name(&qualify(scope, extension.name()))
                .map(|descriptor| descriptor.options());
            let label = self.label(extension, false);
            let head = format!(
                "{label}{} {} = {}",
                type_name(extension),
                extension.name(),
                extension.number()
            );
            self.line(depth + 1, &format!("{head}{};", brackets(extension, options.as_ref())));
        }
        if open.is_some() {
            self.line(depth, "}");
        }
    }

    fn enumeration(&mut self, enumeration: &EnumDescriptorProto, scope: &str, depth: usize) {
        let full_name = qualify(scope, enumeration.name());
        let descriptor = self.pool.get_enum_by_name(&full_name);
        self.line(depth, &format!("enum {} {{", enumeration.name()));
        if let Some(descriptor) = &descriptor {
            self.option_statements(depth + 1, &descriptor.options());
        }
        for (index, value) in enumeration.value.iter().enumerate() {
            let options = descriptor
                .as_ref()
                .and_then(|descriptor| descriptor.values().nth(index))
                .map(|value| option_assignments(&value.options()))
                .unwrap_or_default();
            let attributes = bracket_list(options.into_iter().map(|(name, value)| format!("{name} = {value}")));
            self.line(
                depth + 1,
                &format!("{} = {}{attributes};", value.name(), value.number()),
            );
        }
        for range in &enumeration.reserved_range {
            if range.start() == range.end() {
                self.line(depth + 1, &format!("reserved {};", range.start()));
            } else {
                self.line(depth + 1, &format!("reserved {} to {};", range.start(), range.end()));
            }
        }
        for name in &enumeration.reserved_name {
            self.line(depth + 1, &format!("reserved {};", quote(name)));
        }
        self.line(depth, "}");
    }

    fn service(&mut self, service: &ServiceDescriptorProto, scope: &str) {
        let descriptor = self.pool.get_service_by_name(&qualify(scope, service.name()));
        self.line(0, &format!("service {} {{", service.name()));
        if let Some(descriptor) = &descriptor {
            self.option_statements(1, &descriptor.options());
        }
        for (index, method) in service.method.iter().enumerate() {
            let head = format!(
                "rpc {}({}{}) returns ({}{})",
                method.name(),
                if method.client_streaming() { "stream " } else { "" },
                method.input_type(),
                if method.server_streaming() { "stream " } else { "" },
                method.output_type(),
            );
            let options = descriptor
                .as_ref()
                .and_then(|descriptor| descriptor.methods().nth(index))
                .map(|method| method.options());
            match options.filter(|options| !option_assignments(options).is_empty()) {
                Some(options) => {
                    self.line(1, &format!("{head} {{"));
                    self.option_statements(2, &options);
                    self.line(1, "}");
                }
                None => self.line(1, &format!("{head};")),
            }
        }
        self.line(0, "}");
    }
}

/// The index of the real (not synthetic) oneof a field belongs to.
fn real_oneof(message: &DescriptorProto, field: &FieldDescriptorProto) -> Option<usize> {
    if field.proto3_optional() {
        return None;
    }
    let index = usize::try_from(field.oneof_index?).ok()?;
    (index < message.oneof_decl.len()).then_some(index)
}

/// A field's type as written: a scalar keyword or the type's full name.
fn type_name(field: &FieldDescriptorProto) -> String {
    match field.r#type() {
        Type::Message | Type::Enum | Type::Group => field.type_name().to_owned(),
        other => other.as_str_name().trim_start_matches("TYPE_").to_ascii_lowercase(),
    }
}

/// ` [default = …, json_name = "…", option = …]`, or nothing.
fn brackets(field: &FieldDescriptorProto, options: Option<&DynamicMessage>) -> String {
    let mut attributes = Vec::new();
    if let Some(default) = &field.default_value {
        attributes.push(format!("default = {}", default_literal(field, default)));
    }
    if let Some(json_name) = &field.json_name
        && *json_name != default_json_name(field.name())
    {
        attributes.push(format!("json_name = {}", quote(json_name)));
    }
    if let Some(options) = options {
        attributes.extend(
            option_assignments(options)
                .into_iter()
                .map(|(name, value)| format!("{name} = {value}")),
        );
    }
    bracket_list(attributes.into_iter())
}

fn bracket_list(attributes: impl Iterator<Item = String>) -> String {
    let attributes: Vec<String> = attributes.collect();
    if attributes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", attributes.join(", "))
    }
}

/// A default value as the descriptor holds it, written as a literal that
/// compiles back to it.
fn default_literal(field: &FieldDescriptorProto, default: &str) -> String {
    match field.r#type() {
        Type::String => quote(default),
        // Already C-escaped in the descriptor.
        Type::Bytes => format!("\"{default}\""),
        _ => default.to_owned(),
    }
}

/// Every option set in `options` as (name, value) pairs: standard options by
/// name, then custom ones as `(full.name)`; a repeated option once per value.
fn option_assignments(options: &DynamicMessage) -> Vec<(String, String)> {
    let mut assignments = Vec::new();
    let mut add = |name: String, field: &FieldDescriptor, value: &Value| match value {
        Value::List(items) => {
            for item in items {
                assignments.push((name.clone(), literal(field, item)));
            }
        }
        value => assignments.push((name, literal(field, value))),
    };
    for (field, value) in options.fields() {
        // Map entries are implied by `map<…>`; uninterpreted options are compiler input.
        if field.number() == UNINTERPRETED_OPTION || (field.name() == "map_entry" && field.number() == 7) {
            continue;
        }
        add(field.name().to_owned(), &field, value);
    }
    for (extension, value) in options.extensions() {
        let name = format!("({})", extension.full_name());
        // An extension's value is read as the field it declares.
        let mut items = Vec::new();
        match value {
            Value::List(values) => items.extend(values.iter()),
            value => items.push(value),
        }
        for item in items {
            assignments.push((name.clone(), literal_of_kind(&extension.kind(), false, item)));
        }
    }
    assignments
}

/// One (non-list) value of `field`, as an option value.
fn literal(field: &FieldDescriptor, value: &Value) -> String {
    literal_of_kind(&field.kind(), field.is_group(), value)
}

fn literal_of_kind(kind: &Kind, _group: bool, value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, kind, value);
    out
}

/// A value in text format: scalars as literals, enums by name, messages as
/// `{ name: value … }`.
fn write_value(out: &mut String, kind: &Kind, value: &Value) {
    match value {
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::I32(number) => push_display(out, number),
        Value::I64(number) => push_display(out, number),
        Value::U32(number) => push_display(out, number),
        Value::U64(number) => push_display(out, number),
        Value::F32(number) => push_float(out, f64::from(*number), number.to_string()),
        Value::F64(number) => push_float(out, *number, number.to_string()),
        Value::String(text) => out.push_str(&quote(text)),
        Value::Bytes(bytes) => out.push_str(&quote_bytes(bytes)),
        Value::EnumNumber(number) => match kind {
            Kind::Enum(enumeration) => match enumeration.get_value(*number) {
                Some(value) => out.push_str(value.name()),
                None => push_display(out, number),
            },
            _ => push_display(out, number),
        },
        Value::Message(message) => write_message_literal(out, message),
        Value::List(items) => {
            // Only inside a message literal; the caller writes the field name per item.
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_value(out, kind, item);
            }
        }
        Value::Map(_) => out.push_str("{}"),
    }
}

fn write_message_literal(out: &mut String, message: &DynamicMessage) {
    out.push('{');
    for (field, value) in message.fields() {
        let name = if field.is_group() {
            match field.kind() {
                Kind::Message(group) => group.name().to_owned(),
                _ => field.name().to_owned(),
            }
        } else {
            field.name().to_owned()
        };
        write_entries(out, &name, &field.kind(), value);
    }
    for (extension, value) in message.extensions() {
        write_entries(out, &format!("[{}]", extension.full_name()), &extension.kind(), value);
    }
    out.push_str(" }");
}

/// `name: value` (or `name { … }`) once per value of a field in a message literal.
fn write_entries(out: &mut String, name: &str, kind: &Kind, value: &Value) {
    match value {
        Value::List(items) => {
            for item in items {
                write_entries(out, name, kind, item);
            }
        }
        Value::Map(entries) => {
            let Kind::Message(entry) = kind else { return };
            let (Some(key_field), Some(value_field)) = (entry.get_field(1), entry.get_field(2)) else {
                return;
            };
            let mut sorted: Vec<(&MapKey, &Value)> = entries.iter().collect();
            sorted.sort_by_key(|&(key, _)| key);
            for (key, item) in sorted {
                let _ = write!(out, " {name} {{");
                write_entries(out, "key", &key_field.kind(), &Value::from(key.clone()));
                write_entries(out, "value", &value_field.kind(), item);
                out.push_str(" }");
            }
        }
        Value::Message(message) => {
            let _ = write!(out, " {name} ");
            write_message_literal(out, message);
        }
        value => {
            let _ = write!(out, " {name}: ");
            write_value(out, kind, value);
        }
    }
}

fn push_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

/// A float: `inf`, `-inf`, `nan`, or its shortest decimal form.
fn push_float(out: &mut String, value: f64, shortest: String) {
    if value.is_nan() {
        out.push_str("nan");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "inf" } else { "-inf" });
    } else {
        out.push_str(&shortest);
    }
}

/// A string literal: quotes, backslashes and control characters escaped,
/// other characters (UTF-8 included) as they are.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            character if u32::from(character) < 0x20 || character == '\u{7f}' => {
                let _ = write!(out, "\\{:03o}", u32::from(character));
            }
            character => out.push(character),
        }
    }
    out.push('"');
    out
}

/// A bytes literal: printable ASCII as it is, every other byte as an octal escape.
fn quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &byte in bytes {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\{byte:03o}");
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use crate::compat::SchemaText;
    use crate::compat::protobuf::ProtobufSchema;

    /// Renders `text` and checks the rendering compiles to the same identity.
    fn round_trip(text: &str) -> String {
        let original = ProtobufSchema::parse(&SchemaText::new(text)).unwrap();
        let rendered = original.proto_text().unwrap();
        let again = ProtobufSchema::parse(&SchemaText::new(rendered.clone()))
            .unwrap_or_else(|error| panic!("{error}\n{rendered}"));
        assert_eq!(original.canonical(), again.canonical(), "rendered:\n{rendered}");
        rendered
    }

    #[test]
    fn a_proto3_file_renders_to_text_with_the_same_identity() {
        let rendered = round_trip(
            "syntax = \"proto3\";\npackage shop.v1;\noption java_package = \"com.shop\";\noption go_package = \"shop/v1\";\n\
             import \"google/protobuf/timestamp.proto\";\n\
             message Order {\n  message Line { string sku = 1; }\n  map<string, Line> lines = 2;\n  string id = 1 [json_name = \"ID\", deprecated = true];\n\
               optional int32 priority = 3;\n  oneof payment { string card = 4; string iban = 5; }\n  repeated int64 ids = 6 [packed = false];\n\
               google.protobuf.Timestamp at = 7;\n  reserved 10 to 12, 20;\n  reserved \"old\";\n  enum State { option allow_alias = true; NEW = 0; FRESH = 0; DONE = 1; reserved 5 to 7; }\n}\n\
             service Shop { rpc Place(Order) returns (stream Order); }\n",
        );
        assert!(
            rendered.contains("map<string, .shop.v1.Order.Line> lines = 2;"),
            "{rendered}"
        );
        assert!(rendered.contains("optional int32 priority = 3;"), "{rendered}");
        assert!(rendered.contains("option java_package = \"com.shop\";"), "{rendered}");
    }

    #[test]
    fn a_proto2_file_with_defaults_groups_and_extensions_renders_with_the_same_identity() {
        round_trip(
            "syntax = \"proto2\";\npackage p;\n\
             message M {\n  optional string s = 1 [default = \"a \\\"q\\\" \\n\"];\n  optional bytes b = 2 [default = \"\\001x\"];\n\
               optional double d = 3 [default = -inf];\n  optional E e = 4 [default = TWO];\n  required int32 r = 5;\n\
               optional group Grp = 6 { optional int32 x = 1; }\n  extensions 100 to 199, 1000 to max;\n}\n\
             enum E { ONE = 1; TWO = 2; }\n\
             extend M { optional int32 ext = 100; repeated string tags = 101; }\n",
        );
    }

    #[test]
    fn custom_options_render_with_their_values() {
        let rendered = round_trip(
            "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\n\
             message Rule { string name = 1; map<string, int32> weights = 2; repeated int32 levels = 3; }\n\
             extend google.protobuf.FieldOptions { string pii = 50001; Rule rule = 50003; }\n\
             extend google.protobuf.MessageOptions { repeated int32 tier = 50002; }\n\
             message M {\n  option (tier) = 1;\n  option (tier) = 2;\n\
               string email = 1 [(pii) = \"mask\", (rule) = { name: \"r\" weights { key: \"a\" value: 1 } levels: 1 levels: 2 }];\n}\n",
        );
        assert!(rendered.contains("(pii) = \"mask\""), "{rendered}");
    }
}

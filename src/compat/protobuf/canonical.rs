//! The canonical form of a Protobuf schema: a deterministic `.proto`-like
//! rendering of the compiled descriptor of the schema's own file.
//!
//! Comments, layout and the order of imports do not count; type names are
//! fully qualified (`.pkg.Outer.Inner`), so `Inner`, `Outer.Inner` and
//! `.pkg.Outer.Inner` written in the same place are one schema; options are
//! written field by field in one fixed order, whatever order the text gave
//! them in; imports are sorted; a field's `json_name` counts
//! only when it differs from the one Protobuf derives from the field's name.
//! The same file sent as text or as a serialized descriptor therefore has one
//! canonical form. Custom options follow, one sorted line each
//! ([`super::custom_options`]): their values are part of the schema; so
//! are custom options no extension defines, as written
//! ([`super::unresolved_options`]).

use std::fmt::Write as _;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto};
use sha2::{Digest, Sha256};

use super::model::ProtobufSchema;

impl ProtobufSchema {
    /// The canonical text of this schema (see the module docs).
    pub fn canonical(&self) -> String {
        let mut out = String::new();
        if let Some(descriptor) = self.descriptor() {
            write_file(&mut out, descriptor.file_descriptor_proto());
            for line in super::custom_options::custom_option_lines(&descriptor) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        for written in &self.unresolved_options {
            let _ = writeln!(out, "unresolved {written}");
        }
        out
    }

    /// The SHA-256 of the canonical text, in lowercase hex.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.canonical().as_bytes());
        digest.iter().fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
    }
}

fn write_file(out: &mut String, file: &FileDescriptorProto) {
    let syntax = if file.syntax().is_empty() {
        "proto2"
    } else {
        file.syntax()
    };
    let _ = writeln!(out, "syntax = \"{syntax}\";");
    if !file.package().is_empty() {
        let _ = writeln!(out, "package {};", file.package());
    }
    let mut imports: Vec<String> = file
        .dependency
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let index = i32::try_from(index).unwrap_or(i32::MAX);
            let modifier = if file.public_dependency.contains(&index) {
                "public "
            } else if file.weak_dependency.contains(&index) {
                "weak "
            } else {
                ""
            };
            format!("import {modifier}\"{name}\";")
        })
        .collect();
    imports.sort();
    for import in imports {
        let _ = writeln!(out, "{import}");
    }
    if let Some(options) = &file.options {
        let _ = writeln!(out, "option {options:?};");
    }
    for message in &file.message_type {
        write_message(out, message, 0);
    }
    for enumeration in &file.enum_type {
        write_enum(out, enumeration, 0);
    }
    for extension in &file.extension {
        let _ = writeln!(out, "extend {} {{", extension.extendee());
        write_field(out, extension, 1, None);
        out.push_str("}\n");
    }
    for service in &file.service {
        let _ = writeln!(out, "service {} {{", service.name());
        if let Some(options) = &service.options {
            let _ = writeln!(out, "  option {options:?};");
        }
        for method in &service.method {
            let _ = writeln!(
                out,
                "  rpc {}({}{}) returns ({}{}){};",
                method.name(),
                if method.client_streaming() { "stream " } else { "" },
                method.input_type(),
                if method.server_streaming() { "stream " } else { "" },
                method.output_type(),
                method
                    .options
                    .as_ref()
                    .map_or(String::new(), |options| format!(" {options:?}"))
            );
        }
        out.push_str("}\n");
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_message(out: &mut String, message: &DescriptorProto, depth: usize) {
    indent(out, depth);
    let _ = writeln!(out, "message {} {{", message.name());
    if let Some(options) = &message.options {
        indent(out, depth + 1);
        let _ = writeln!(out, "option {options:?};");
    }
    for field in message
        .field
        .iter()
        .filter(|field| real_oneof(message, field).is_none())
    {
        write_field(out, field, depth + 1, None);
    }
    // Each oneof's members, in field order, gathered in one pass.
    let mut members_of: Vec<Vec<&FieldDescriptorProto>> = vec![Vec::new(); message.oneof_decl.len()];
    for field in &message.field {
        if let Some(members) = real_oneof(message, field).and_then(|index| members_of.get_mut(index)) {
            members.push(field);
        }
    }
    for (oneof, members) in message.oneof_decl.iter().zip(members_of) {
        if members.is_empty() {
            continue;
        }
        indent(out, depth + 1);
        let _ = writeln!(out, "oneof {} {{", oneof.name());
        if let Some(options) = &oneof.options {
            indent(out, depth + 2);
            let _ = writeln!(out, "option {options:?};");
        }
        for field in members {
            write_field(out, field, depth + 2, Some(()));
        }
        indent(out, depth + 1);
        out.push_str("}\n");
    }
    for nested in &message.nested_type {
        write_message(out, nested, depth + 1);
    }
    for enumeration in &message.enum_type {
        write_enum(out, enumeration, depth + 1);
    }
    for range in &message.extension_range {
        indent(out, depth + 1);
        let _ = writeln!(out, "extensions {} to {};", range.start(), range.end() - 1);
    }
    for extension in &message.extension {
        indent(out, depth + 1);
        let _ = writeln!(out, "extend {} {{", extension.extendee());
        write_field(out, extension, depth + 2, None);
        indent(out, depth + 1);
        out.push_str("}\n");
    }
    for range in &message.reserved_range {
        indent(out, depth + 1);
        let _ = writeln!(out, "reserved {} to {};", range.start(), range.end() - 1);
    }
    let mut reserved_names = message.reserved_name.clone();
    reserved_names.sort();
    for name in reserved_names {
        indent(out, depth + 1);
        let _ = writeln!(out, "reserved \"{name}\";");
    }
    indent(out, depth);
    out.push_str("}\n");
}

/// The index of the real (not synthetic) oneof a field belongs to.
fn real_oneof(message: &DescriptorProto, field: &FieldDescriptorProto) -> Option<usize> {
    if field.proto3_optional() {
        return None;
    }
    let index = usize::try_from(field.oneof_index?).ok()?;
    (index < message.oneof_decl.len()).then_some(index)
}

fn write_field(out: &mut String, field: &FieldDescriptorProto, depth: usize, in_oneof: Option<()>) {
    indent(out, depth);
    let label = match (in_oneof, field.label()) {
        (Some(()), _) => "",
        (None, Label::Repeated) => "repeated ",
        (None, Label::Required) => "required ",
        (None, Label::Optional) if field.proto3_optional() => "optional ",
        (None, Label::Optional) => "",
    };
    let ty = match field.r#type() {
        Type::Message | Type::Enum | Type::Group => field.type_name().to_owned(),
        other => other.as_str_name().trim_start_matches("TYPE_").to_ascii_lowercase(),
    };
    let _ = write!(out, "{label}{ty} {} = {}", field.name(), field.number());
    let mut attributes = Vec::new();
    if let Some(default) = &field.default_value {
        attributes.push(format!("default = {default:?}"));
    }
    if let Some(json_name) = &field.json_name
        && *json_name != default_json_name(field.name())
    {
        attributes.push(format!("json_name = {json_name:?}"));
    }
    if let Some(options) = &field.options {
        attributes.push(format!("{options:?}"));
    }
    if !attributes.is_empty() {
        let _ = write!(out, " [{}]", attributes.join(", "));
    }
    out.push_str(";\n");
}

fn write_enum(out: &mut String, enumeration: &EnumDescriptorProto, depth: usize) {
    indent(out, depth);
    let _ = writeln!(out, "enum {} {{", enumeration.name());
    if let Some(options) = &enumeration.options {
        indent(out, depth + 1);
        let _ = writeln!(out, "option {options:?};");
    }
    for value in &enumeration.value {
        indent(out, depth + 1);
        let _ = write!(out, "{} = {}", value.name(), value.number());
        if let Some(options) = &value.options {
            let _ = write!(out, " [{options:?}]");
        }
        out.push_str(";\n");
    }
    for range in &enumeration.reserved_range {
        indent(out, depth + 1);
        let _ = writeln!(out, "reserved {} to {};", range.start(), range.end());
    }
    indent(out, depth);
    out.push_str("}\n");
}

/// The JSON name Protobuf derives from a field name: underscores dropped,
/// the letter after each one upper-cased.
pub(super) fn default_json_name(name: &str) -> String {
    let mut json = String::with_capacity(name.len());
    let mut upper = false;
    for character in name.chars() {
        if character == '_' {
            upper = true;
        } else if upper {
            json.extend(character.to_uppercase());
            upper = false;
        } else {
            json.push(character);
        }
    }
    json
}

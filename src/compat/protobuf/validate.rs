//! Checks on a `FileDescriptorProto` a client sent as base64, before the
//! descriptor pool sees it: the pool trusts its input (an unknown `syntax`
//! makes it index out of bounds) and takes some nonsense as it comes (field
//! type 99, empty names, `required` in proto3, inverted reserved ranges).
//! `.proto` text needs none of this: protox checks what it parses.
//!
//! [`check_type_kinds`] checks what needs all the descriptors at once: that
//! a field declared as an enum names an enum, and a message field a message.

use std::collections::HashSet;

use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto};

/// The largest field number Protobuf allows.
const MAX_FIELD_NUMBER: i32 = 536_870_911;
/// Field numbers Protobuf keeps for itself.
const RESERVED_NUMBERS: std::ops::RangeInclusive<i32> = 19_000..=19_999;

/// Checks every declaration of `file`; the message names the first problem
/// and the declaration it is in.
pub(crate) fn check_descriptor(file: &FileDescriptorProto) -> Result<(), String> {
    let proto3 = match file.syntax.as_deref().unwrap_or("") {
        "" | "proto2" => false,
        "proto3" => true,
        other => {
            return Err(format!(
                "syntax `{other}` is not one schemaops reads (it reads `proto2` and `proto3`)"
            ));
        }
    };
    let package = file.package.as_deref().unwrap_or("");
    if !package.is_empty() && !package.split('.').all(is_identifier) {
        return Err(format!("package `{package}` is not a dotted name"));
    }
    if package.len() > super::nesting::MAX_NAME_BYTES {
        return Err(format!(
            "the package name is longer than {} bytes; schemaops refuses longer names",
            super::nesting::MAX_NAME_BYTES
        ));
    }
    let scope = package.to_owned();
    for message in &file.message_type {
        check_message(message, &scope, proto3)?;
    }
    for enumeration in &file.enum_type {
        check_enum(enumeration, &scope, proto3)?;
    }
    for extension in &file.extension {
        check_field(extension, &format!("extension in `{}`", display(&scope)), proto3, 0)?;
    }
    for service in &file.service {
        let name = service.name();
        if !is_identifier(name) {
            return Err(format!(
                "a service in `{}` has no valid name (`{name}`)",
                display(&scope)
            ));
        }
        for method in &service.method {
            if !is_identifier(method.name()) || method.input_type().is_empty() || method.output_type().is_empty() {
                return Err(format!(
                    "method `{}` of service `{name}` needs a name, an input type and an output type",
                    method.name()
                ));
            }
        }
    }
    Ok(())
}

fn check_message(message: &DescriptorProto, scope: &str, proto3: bool) -> Result<(), String> {
    let name = message.name();
    if !is_identifier(name) {
        return Err(format!(
            "a message in `{}` has no valid name (`{name}`)",
            display(scope)
        ));
    }
    let full = qualified(scope, name);
    for field in &message.field {
        check_field(
            field,
            &format!("field {full}.{}", field.name()),
            proto3,
            message.oneof_decl.len(),
        )?;
    }
    for extension in &message.extension {
        check_field(extension, &format!("extension {full}.{}", extension.name()), proto3, 0)?;
    }
    for oneof in &message.oneof_decl {
        if !is_identifier(oneof.name()) {
            return Err(format!(
                "a oneof in message {full} has no valid name (`{}`)",
                oneof.name()
            ));
        }
    }
    for range in &message.reserved_range {
        let (start, end) = (range.start(), range.end());
        if start < 1 || start >= end {
            return Err(format!(
                "message {full}: reserved range {start} to {end} (end exclusive) is empty or starts below 1"
            ));
        }
    }
    for range in &message.extension_range {
        let (start, end) = (range.start(), range.end());
        if start < 1 || start >= end || end > MAX_FIELD_NUMBER + 1 {
            return Err(format!(
                "message {full}: extension range {start} to {end} (end exclusive) is empty or out of bounds"
            ));
        }
    }
    for nested in &message.nested_type {
        check_message(nested, &full, proto3)?;
    }
    for enumeration in &message.enum_type {
        check_enum(enumeration, &full, proto3)?;
    }
    Ok(())
}

fn check_field(field: &FieldDescriptorProto, what: &str, proto3: bool, oneofs: usize) -> Result<(), String> {
    if !is_identifier(field.name()) {
        return Err(format!("{what}: a field needs a valid name (`{}`)", field.name()));
    }
    let number = field.number();
    if !(1..=MAX_FIELD_NUMBER).contains(&number) || RESERVED_NUMBERS.contains(&number) {
        return Err(format!(
            "{what}: field number {number} is outside 1 to {MAX_FIELD_NUMBER} or among the reserved 19000 to 19999"
        ));
    }
    if let Some(label) = field.label {
        match Label::try_from(label) {
            Ok(Label::Required) if proto3 => return Err(format!("{what}: `required` does not exist in proto3")),
            Ok(_) => {}
            Err(_) => return Err(format!("{what}: label {label} is not a Protobuf label")),
        }
    }
    let kind = match field.r#type {
        Some(kind) => {
            Some(Type::try_from(kind).map_err(|_| format!("{what}: type {kind} is not a Protobuf field type"))?)
        }
        None => None,
    };
    let names_a_type = matches!(kind, None | Some(Type::Message | Type::Enum | Type::Group));
    if names_a_type && field.type_name().is_empty() {
        return Err(format!("{what}: a message or enum field needs a type name"));
    }
    if proto3 && kind == Some(Type::Group) {
        return Err(format!("{what}: groups do not exist in proto3"));
    }
    if let Some(index) = field.oneof_index
        && usize::try_from(index).map_or(true, |index| index >= oneofs)
    {
        return Err(format!("{what}: oneof index {index} names no oneof of its message"));
    }
    Ok(())
}

fn check_enum(enumeration: &EnumDescriptorProto, scope: &str, proto3: bool) -> Result<(), String> {
    let name = enumeration.name();
    if !is_identifier(name) {
        return Err(format!("an enum in `{}` has no valid name (`{name}`)", display(scope)));
    }
    let full = qualified(scope, name);
    let Some(first) = enumeration.value.first() else {
        return Err(format!("enum {full} needs at least one value"));
    };
    if proto3 && first.number() != 0 {
        return Err(format!("enum {full}: the first value of a proto3 enum must be 0"));
    }
    if let Some(value) = enumeration.value.iter().find(|value| !is_identifier(value.name())) {
        return Err(format!("enum {full}: a value has no valid name (`{}`)", value.name()));
    }
    for range in &enumeration.reserved_range {
        let (start, end) = (range.start(), range.end());
        if start > end {
            return Err(format!(
                "enum {full}: reserved range {start} to {end} (end inclusive) is inverted"
            ));
        }
    }
    Ok(())
}

/// Checks that every field of `files` declared as an enum and naming a type
/// by its full name (`.pkg.Name`) that one of them defines names an enum,
/// and every message field a message. (The compiler would otherwise take
/// the type the name resolves to, silently changing the field.)
pub(crate) fn check_type_kinds<'a>(
    files: impl Iterator<Item = &'a FileDescriptorProto> + Clone,
) -> Result<(), (String, String)> {
    let mut enums = HashSet::new();
    let mut messages = HashSet::new();
    for file in files.clone() {
        let scope = file.package().to_owned();
        collect_names(&file.message_type, &file.enum_type, &scope, &mut messages, &mut enums);
    }
    for file in files {
        let mut pending: Vec<(String, &DescriptorProto)> = file
            .message_type
            .iter()
            .map(|message| (file.package().to_owned(), message))
            .collect();
        let mut fields: Vec<(String, &FieldDescriptorProto)> = file
            .extension
            .iter()
            .map(|field| (file.package().to_owned(), field))
            .collect();
        while let Some((scope, message)) = pending.pop() {
            let full = qualified(&scope, message.name());
            fields.extend(
                message
                    .field
                    .iter()
                    .chain(&message.extension)
                    .map(|field| (full.clone(), field)),
            );
            pending.extend(message.nested_type.iter().map(|nested| (full.clone(), nested)));
        }
        for (scope, field) in fields {
            let Some(target) = field.type_name().strip_prefix('.') else {
                continue;
            };
            let wrong = match field.r#type.and_then(|declared| Type::try_from(declared).ok()) {
                Some(Type::Enum) => messages.contains(target).then_some("an enum"),
                Some(Type::Message | Type::Group) => enums.contains(target).then_some("a message"),
                _ => None,
            };
            if let Some(wanted) = wrong {
                return Err((
                    file.name().to_owned(),
                    format!(
                        "field {}.{}: `.{target}` is not {wanted}, as the field's type says",
                        scope,
                        field.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn collect_names(
    messages: &[DescriptorProto],
    enums: &[EnumDescriptorProto],
    scope: &str,
    message_names: &mut HashSet<String>,
    enum_names: &mut HashSet<String>,
) {
    for enumeration in enums {
        enum_names.insert(qualified(scope, enumeration.name()));
    }
    for message in messages {
        let full = qualified(scope, message.name());
        collect_names(
            &message.nested_type,
            &message.enum_type,
            &full,
            message_names,
            enum_names,
        );
        message_names.insert(full);
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn qualified(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

fn display(scope: &str) -> &str {
    if scope.is_empty() { "(the file)" } else { scope }
}

//! Custom (extension) options in the canonical form: `[(pii) = "mask"]`
//! and `option (tier) = 3;` change what a schema means to the code that
//! reads them, so two schemas differing only there are two schemas, as they
//! are for Confluent, which keeps them in the schema text.
//!
//! The descriptor types the rest of the canonical form is written from have
//! no room for extensions; the compiled pool keeps them. Each element's
//! custom options are written as one line, `custom <element> (<option>) =
//! <value>`, the lines sorted, so neither the order they were written in
//! nor the layout of their values counts. Values are rendered field by
//! field in number order, map entries by key.

use std::fmt::Write as _;

use prost_reflect::{DynamicMessage, FileDescriptor, MessageDescriptor, Value};

/// The custom-option lines of `file` and of everything declared in it, sorted.
pub(crate) fn custom_option_lines(file: &FileDescriptor) -> Vec<String> {
    let mut lines = Vec::new();
    let mut add = |element: &str, options: DynamicMessage| {
        for (extension, value) in options.extensions() {
            let mut line = format!("custom {element} ({}) = ", extension.full_name());
            render(&mut line, value);
            lines.push(line);
        }
    };
    add(&format!("file {}", file.name()), file.options());
    let mut messages: Vec<MessageDescriptor> = file.messages().collect();
    while let Some(message) = messages.pop() {
        add(&format!("message {}", message.full_name()), message.options());
        for field in message.fields() {
            add(&format!("field {}", field.full_name()), field.options());
        }
        for oneof in message.oneofs() {
            add(&format!("oneof {}", oneof.full_name()), oneof.options());
        }
        for extension in message.child_extensions() {
            add(&format!("extension {}", extension.full_name()), extension.options());
        }
        for enumeration in message.child_enums() {
            add_enum(&mut add, &enumeration);
        }
        messages.extend(message.child_messages());
    }
    for enumeration in file.enums() {
        add_enum(&mut add, &enumeration);
    }
    for extension in file.extensions() {
        add(&format!("extension {}", extension.full_name()), extension.options());
    }
    for service in file.services() {
        add(&format!("service {}", service.full_name()), service.options());
        for method in service.methods() {
            add(&format!("method {}", method.full_name()), method.options());
        }
    }
    lines.sort();
    lines
}

fn add_enum(add: &mut impl FnMut(&str, DynamicMessage), enumeration: &prost_reflect::EnumDescriptor) {
    add(&format!("enum {}", enumeration.full_name()), enumeration.options());
    for value in enumeration.values() {
        add(&format!("enum value {}", value.full_name()), value.options());
    }
}

/// Writes `value` deterministically. Option values nest no deeper than the
/// text's nesting limit allows, so the recursion is bounded.
fn render(out: &mut String, value: &Value) {
    match value {
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::I32(number) | Value::EnumNumber(number) => write_display(out, number),
        Value::I64(number) => write_display(out, number),
        Value::U32(number) => write_display(out, number),
        Value::U64(number) => write_display(out, number),
        Value::F32(number) => write_display(out, number),
        Value::F64(number) => write_display(out, number),
        Value::String(text) => write_debug(out, text),
        Value::Bytes(bytes) => write_debug(out, &bytes.as_ref()),
        Value::Message(message) => {
            out.push('{');
            for (field, value) in message.fields() {
                let _ = write!(out, " {}: ", field.number());
                render(out, value);
            }
            for (extension, value) in message.extensions() {
                let _ = write!(out, " ({}): ", extension.full_name());
                render(out, value);
            }
            out.push_str(" }");
        }
        Value::List(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                render(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by_key(|&(key, _)| key);
            out.push('{');
            for (key, value) in sorted {
                out.push(' ');
                render(out, &Value::from(key.clone()));
                out.push_str(": ");
                render(out, value);
            }
            out.push_str(" }");
        }
    }
}

fn write_display(out: &mut String, value: &impl std::fmt::Display) {
    let _ = write!(out, "{value}");
}

fn write_debug(out: &mut String, value: &impl std::fmt::Debug) {
    let _ = write!(out, "{value:?}");
}

#[cfg(test)]
mod tests {
    use crate::compat::SchemaText;
    use crate::compat::protobuf::ProtobufSchema;

    fn canonical(options: &str) -> String {
        let text = format!(
            "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\n\
             message Rule {{ string name = 1; map<string, int32> weights = 2; }}\n\
             extend google.protobuf.FieldOptions {{ string pii = 50001; int32 level = 50002; Rule rule = 50003; }}\n\
             message M {{ string email = 1 [{options}]; }}\n"
        );
        ProtobufSchema::parse(&SchemaText::new(text)).unwrap().canonical()
    }

    #[test]
    fn the_order_and_layout_of_custom_options_do_not_count_their_values_do() {
        let one = canonical(
            "(pii) = \"mask\", (level) = 2, (rule) = { name: \"r\" weights { key: \"a\" value: 1 } weights { key: \"b\" value: 2 } }",
        );
        let reordered = canonical(
            "(rule) = { weights { key: \"b\" value: 2 } name: \"r\"  weights { key: \"a\" value: 1 } }, (level) = 2, (pii) = \"mask\"",
        );
        assert_eq!(one, reordered);
        assert!(one.contains("custom field M.email (pii) = \"mask\""), "{one}");
        let other = canonical(
            "(pii) = \"mask\", (level) = 3, (rule) = { name: \"r\" weights { key: \"a\" value: 1 } weights { key: \"b\" value: 2 } }",
        );
        assert_ne!(one, other);
    }
}

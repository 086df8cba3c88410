//! `.proto` source text from a compiled file, laid out as Confluent's
//! formatter lays it out (`ProtobufSchemaUtils.toString`, which
//! `ProtobufSchema.canonicalString()` uses, and `toNormalizedString`, which
//! `ProtobufSchema.normalize()` uses): what a registry stores and returns for
//! a schema sent as a base64 `FileDescriptorProto`, and the normalized text
//! `?normalize=true` stores.
//!
//! The layout: `syntax` and `package`, then one blank line before each of
//! these groups that is not empty: imports, file options, the top-level
//! messages followed by the top-level enums (no blank line between them),
//! `extend` blocks, services. Inside a message the groups are: `reserved`,
//! options, fields, oneofs, extension ranges, `extend` blocks, nested
//! messages followed by nested enums, with one blank line (indented as the
//! message's own line) between groups. A declaration with several bracketed
//! options lists them one per line. An rpc is `rpc Name (.In) returns (.Out);`.
//! Normalized ([`Layout::Normalized`]) also sorts: imports, options by name,
//! fields and oneof members by number, oneofs by their first number, enum
//! values by number then name, reserved and extension ranges by start; and
//! leaves out `syntax` unless it is proto3.
//!
//! Where the text differs from Confluent's, identity wins: the text must
//! compile back to a file with the same canonical form ([`super::canonical`]),
//! which the registry checks before storing it. So a map field is written as
//! `map<K, V>` (Confluent writes its generated entry message with
//! `option map_entry = true`, which compilers refuse), and where its entry
//! message follows a nested message in the descriptor, the map field is
//! written among the nested messages, where that entry sits, so that the
//! compiler lists the nested messages in the same order again; groups are
//! kept (Confluent's descriptor reader drops them); `json_name` is written
//! only when it differs from the derived one; a sort that would change the
//! canonical form (fields not declared in number order, say) makes the
//! registry fall back to the unsorted layout. Type names are written fully
//! qualified (`.pkg.Outer.Inner`), as Confluent does.
//!
//! Options are written from the compiled options messages, standard and
//! custom alike: `option java_package = "…";`, `[deprecated = true]`,
//! `option (my.ext) = {…};`. Not written: the options of extension
//! ranges, option fields the pool has no extension for (which the
//! canonical form does not see either), groups declared in an `extend`
//! block, and custom options no extension defines (kept only as written in
//! the text they came in; see [`super::unresolved_options`]). Editions
//! files are not compiled at all, so not rendered either.

use std::fmt::Write as _;

use prost_reflect::{DescriptorPool, DynamicMessage, FileDescriptor, Kind, MapKey, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, ServiceDescriptorProto};

use super::canonical::default_json_name;

/// Which of Confluent's two layouts to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// As declared: `ProtobufSchemaUtils.toString`, what Confluent stores
    /// for a schema sent as a descriptor.
    Declared,
    /// Sorted: `ProtobufSchemaUtils.toNormalizedString`, for `?normalize=true`.
    Normalized,
}

impl super::ProtobufSchema {
    /// The schema's own file as `.proto` text in `layout` (see the module
    /// docs). `None` when the pool has no such file.
    pub fn proto_text(&self, layout: Layout) -> Option<String> {
        self.descriptor().map(|file| render(&file, layout))
    }
}

/// The field number of `uninterpreted_option` in every options message.
const UNINTERPRETED_OPTION: u32 = 999;
/// The largest field number: a range ending there is written `to max`.
const MAX_FIELD_NUMBER: i32 = 536_870_911;
/// The file options in the order Confluent's descriptor reader lists them;
/// any other comes after these, by number.
const FILE_OPTION_ORDER: &[&str] = &[
    "java_package",
    "java_outer_classname",
    "java_multiple_files",
    "java_generate_equals_and_hash",
    "java_string_check_utf8",
    "optimize_for",
    "go_package",
    "cc_generic_services",
    "java_generic_services",
    "py_generic_services",
    "deprecated",
    "cc_enable_arenas",
    "objc_class_prefix",
    "csharp_namespace",
    "swift_prefix",
    "php_class_prefix",
    "php_namespace",
    "php_metadata_namespace",
    "ruby_package",
];

/// `file` as `.proto` source text.
pub(crate) fn render(file: &FileDescriptor, layout: Layout) -> String {
    let proto = file.file_descriptor_proto();
    let mut writer = Writer {
        pool: file.parent_pool(),
        proto3: proto.syntax() == "proto3",
        normalize: layout == Layout::Normalized,
        out: String::new(),
    };
    writer.file(file, proto);
    writer.out
}

struct Writer<'a> {
    pool: &'a DescriptorPool,
    proto3: bool,
    normalize: bool,
    out: String,
}

/// An open `{ … }` block: its depth and how many groups it has written.
struct Block {
    depth: usize,
    groups: usize,
}

/// One option as written: its name (`deprecated`, `(my.ext)`) and value.
struct Assignment {
    name: String,
    value: String,
}

impl Assignment {
    /// What normalized text sorts options by: the name without parentheses.
    fn sort_key(&self) -> &str {
        self.name.trim_start_matches('(').trim_end_matches(')')
    }
}

fn qualify(scope: &str, name: &str) -> String {
    if scope.is_empty() {
        name.to_owned()
    } else {
        format!("{scope}.{name}")
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

impl Writer<'_> {
    /// `text` (which may hold several lines) indented by `depth`.
    fn line(&mut self, depth: usize, text: &str) {
        for line in text.split('\n') {
            indent(&mut self.out, depth);
            self.out.push_str(line);
            self.out.push('\n');
        }
    }

    /// `header {`, left open for groups.
    fn open(&mut self, depth: usize, header: &str) -> Block {
        indent(&mut self.out, depth);
        self.out.push_str(header);
        self.out.push_str(" {");
        Block { depth, groups: 0 }
    }

    /// Starts a group in `block`: the first ends the header's line, each
    /// later one leaves a blank line (indented as the header).
    fn group(&mut self, block: &mut Block) {
        if block.groups > 0 {
            indent(&mut self.out, block.depth);
        }
        self.out.push('\n');
        block.groups += 1;
    }

    fn close(&mut self, block: Block) {
        if block.groups > 0 {
            indent(&mut self.out, block.depth);
        }
        self.out.push_str("}\n");
    }

    fn file(&mut self, file: &FileDescriptor, proto: &prost_types::FileDescriptorProto) {
        let syntax = if proto.syntax().is_empty() {
            "proto2"
        } else {
            proto.syntax()
        };
        if !self.normalize || syntax == "proto3" {
            self.line(0, &format!("syntax = \"{syntax}\";"));
        }
        if !proto.package().is_empty() {
            self.line(0, &format!("package {};", proto.package()));
        }
        let mut imports: [Vec<&String>; 3] = Default::default();
        for (index, name) in proto.dependency.iter().enumerate() {
            let index = i32::try_from(index).unwrap_or(i32::MAX);
            let kind = if proto.public_dependency.contains(&index) {
                1
            } else if proto.weak_dependency.contains(&index) {
                2
            } else {
                0
            };
            imports[kind].push(name);
        }
        if imports.iter().any(|names| !names.is_empty()) {
            self.out.push('\n');
            for (names, modifier) in imports.iter_mut().zip(["", "public ", "weak "]) {
                if self.normalize {
                    names.sort();
                    names.dedup();
                }
                for name in names.iter() {
                    self.line(0, &format!("import {modifier}{};", quote(name)));
                }
            }
        }
        let mut options = self.option_list(&file.options());
        if !self.normalize {
            let rank = |name: &str| FILE_OPTION_ORDER.iter().position(|known| *known == name);
            options.sort_by_key(|option| rank(&option.name).map_or(usize::MAX, |rank| rank));
        }
        if !options.is_empty() {
            self.out.push('\n');
            for option in &options {
                self.line(0, &format!("option {} = {};", option.name, option.value));
            }
        }
        let package = proto.package();
        if !proto.message_type.is_empty() || !proto.enum_type.is_empty() {
            self.out.push('\n');
            for message in &proto.message_type {
                self.message(message, package, 0);
            }
            for enumeration in &proto.enum_type {
                self.enumeration(enumeration, package, 0);
            }
        }
        if !proto.extension.is_empty() {
            self.out.push('\n');
            self.extensions(&proto.extension, package, 0);
        }
        if !proto.service.is_empty() {
            self.out.push('\n');
            for service in &proto.service {
                self.service(service, package);
            }
        }
    }

    /// The options set in `options`, sorted by name when normalizing.
    fn option_list(&self, options: &DynamicMessage) -> Vec<Assignment> {
        let mut list = option_assignments(options);
        if self.normalize {
            list.sort_by(|left, right| left.sort_key().cmp(right.sort_key()));
        }
        list
    }

    /// `option name = value;` for every option set in `options`, as a group of `block`.
    fn option_group(&mut self, block: &mut Block, options: &DynamicMessage) {
        let options = self.option_list(options);
        if options.is_empty() {
            return;
        }
        self.group(block);
        for option in options {
            self.line(block.depth + 1, &format!("option {} = {};", option.name, option.value));
        }
    }

    fn message(&mut self, message: &DescriptorProto, scope: &str, depth: usize) {
        let mut block = self.open(depth, &format!("message {}", message.name()));
        self.message_body(message, scope, &mut block);
        self.close(block);
    }

    /// Everything inside a message's braces (also a group's).
    fn message_body(&mut self, message: &DescriptorProto, scope: &str, block: &mut Block) {
        let depth = block.depth + 1;
        let full_name = qualify(scope, message.name());
        let descriptor = self.pool.get_message_by_name(&full_name);
        self.reserved_group(block, message);
        if let Some(descriptor) = &descriptor {
            self.option_group(block, &descriptor.options());
        }
        // The field that brings each nested message (map entry or group), if any.
        let brought_by: Vec<Option<usize>> = message
            .nested_type
            .iter()
            .map(|nested| {
                let type_name = format!(".{full_name}.{}", nested.name());
                let map_entry = nested.options.as_ref().is_some_and(|options| options.map_entry());
                message.field.iter().position(|field| {
                    field.type_name() == type_name
                        && ((map_entry && field.r#type() == Type::Message && field.label() == Label::Repeated)
                            || (!map_entry && field.r#type() == Type::Group))
                })
            })
            .collect();
        // The fields outside oneofs, by position. From the first one whose
        // nested message follows a plain nested message on, they are written
        // among the nested messages (see the module docs), so that both the
        // fields and the nested messages compile in the same order again.
        let first_plain = brought_by.iter().position(Option::is_none);
        let late = |position: usize| {
            brought_by
                .iter()
                .position(|owner| *owner == Some(position))
                .zip(first_plain)
                .is_some_and(|(index, first)| index > first)
        };
        let plain_fields: Vec<usize> = (0..message.field.len())
            .filter(|position| real_oneof(message, &message.field[*position]).is_none())
            .collect();
        let split = plain_fields
            .iter()
            .position(|position| late(*position))
            .unwrap_or(plain_fields.len());
        let (mut early_fields, late_fields) = (plain_fields[..split].to_vec(), &plain_fields[split..]);
        if self.normalize {
            early_fields.sort_by_key(|position| message.field[*position].number());
        }
        if !early_fields.is_empty() {
            self.group(block);
            for position in early_fields {
                self.field(message, &message.field[position], &full_name, depth, false);
            }
        }
        let mut oneofs: Vec<(usize, Vec<&FieldDescriptorProto>)> = (0..message.oneof_decl.len())
            .map(|index| {
                let members = message
                    .field
                    .iter()
                    .filter(|field| real_oneof(message, field) == Some(index))
                    .collect();
                (index, members)
            })
            .filter(|(_, members): &(usize, Vec<&FieldDescriptorProto>)| !members.is_empty())
            .collect();
        if self.normalize {
            for (_, members) in &mut oneofs {
                members.sort_by_key(|field| field.number());
            }
            oneofs.sort_by_key(|(_, members)| members.first().map(|field| field.number()));
        }
        if !oneofs.is_empty() {
            self.group(block);
            for (index, members) in oneofs {
                self.oneof(message, index, &members, &full_name, depth);
            }
        }
        let ranges: Vec<(i32, i32)> = message
            .extension_range
            .iter()
            .map(|range| (range.start(), range.end() - 1))
            .collect();
        self.ranges_group(block, "extensions", ranges);
        if !message.extension.is_empty() {
            self.group(block);
            self.extensions(&message.extension, &full_name, depth);
        }
        let nested_written = |owner: &Option<usize>| owner.is_none_or(|owner| late_fields.contains(&owner));
        if brought_by.iter().any(nested_written) || !message.enum_type.is_empty() {
            self.group(block);
            let mut late_fields = late_fields.iter().peekable();
            for (nested, owner) in message.nested_type.iter().zip(&brought_by) {
                match owner {
                    None => self.message(nested, &full_name, depth),
                    Some(owner) if late_fields.peek().is_some_and(|first| *first <= owner) => {
                        while let Some(position) = late_fields.next_if(|position| *position <= owner) {
                            self.field(message, &message.field[*position], &full_name, depth, false);
                        }
                    }
                    // Written with its field, among the fields or in a oneof.
                    Some(_) => {}
                }
            }
            for position in late_fields {
                self.field(message, &message.field[*position], &full_name, depth, false);
            }
            for enumeration in &message.enum_type {
                self.enumeration(enumeration, &full_name, depth);
            }
        }
    }

    /// A message's `reserved` ranges and names, one per line.
    fn reserved_group(&mut self, block: &mut Block, message: &DescriptorProto) {
        let ranges: Vec<(i32, i32)> = message
            .reserved_range
            .iter()
            .map(|range| (range.start(), range.end() - 1))
            .collect();
        self.reserved_lines(block, ranges, &message.reserved_name);
    }

    fn reserved_lines(&mut self, block: &mut Block, mut ranges: Vec<(i32, i32)>, names: &[String]) {
        if ranges.is_empty() && names.is_empty() {
            return;
        }
        let mut names: Vec<&String> = names.iter().collect();
        if self.normalize {
            ranges.sort_unstable();
            names.sort();
        }
        self.group(block);
        for (start, end) in ranges {
            self.line(block.depth + 1, &format!("reserved {};", range_text(start, end)));
        }
        for name in names {
            self.line(block.depth + 1, &format!("reserved {};", quote(name)));
        }
    }

    /// `keyword a to b;` for each inclusive range, as a group of `block`.
    fn ranges_group(&mut self, block: &mut Block, keyword: &str, mut ranges: Vec<(i32, i32)>) {
        if ranges.is_empty() {
            return;
        }
        if self.normalize {
            ranges.sort_unstable();
        }
        self.group(block);
        for (start, end) in ranges {
            self.line(block.depth + 1, &format!("{keyword} {};", range_text(start, end)));
        }
    }

    fn oneof(
        &mut self,
        message: &DescriptorProto,
        index: usize,
        members: &[&FieldDescriptorProto],
        full_name: &str,
        depth: usize,
    ) {
        let mut block = self.open(depth, &format!("oneof {}", message.oneof_decl[index].name()));
        if let Some(descriptor) = self.pool.get_message_by_name(full_name)
            && let Some(oneof) = descriptor.oneofs().nth(index)
        {
            self.option_group(&mut block, &oneof.options());
        }
        self.group(&mut block);
        for field in members {
            self.field(message, field, full_name, depth + 1, true);
        }
        self.close(block);
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
            let brackets = self.brackets(field, options.as_ref());
            self.line(depth, &format!("{head}{brackets};"));
            return;
        }
        let label = self.label(field, in_oneof);
        let brackets = self.brackets(field, options.as_ref());
        match nested.filter(|_| field.r#type() == Type::Group) {
            Some(group) => {
                let head = format!("{label}group {} = {}{brackets}", group.name(), field.number());
                let mut block = self.open(depth, &head);
                self.message_body(group, full_name, &mut block);
                self.close(block);
            }
            None => {
                let head = format!("{label}{} {} = {}", type_name(field), field.name(), field.number());
                self.line(depth, &format!("{head}{brackets};"));
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

    /// ` [option = …, default = …, json_name = "…"]`, or nothing.
    fn brackets(&self, field: &FieldDescriptorProto, options: Option<&DynamicMessage>) -> String {
        let mut attributes = options.map(option_assignments).unwrap_or_default();
        if let Some(default) = &field.default_value {
            attributes.push(Assignment {
                name: "default".to_owned(),
                value: default_literal(field, default),
            });
        }
        if let Some(json_name) = &field.json_name
            && *json_name != default_json_name(field.name())
        {
            attributes.push(Assignment {
                name: "json_name".to_owned(),
                value: quote(json_name),
            });
        }
        if self.normalize {
            attributes.sort_by(|left, right| left.sort_key().cmp(right.sort_key()));
        }
        bracket_list(&attributes)
    }

    /// `extend` blocks, one for each run of extensions of one type.
    fn extensions(&mut self, extensions: &[FieldDescriptorProto], scope: &str, depth: usize) {
        let mut runs: Vec<(&str, Vec<&FieldDescriptorProto>)> = Vec::new();
        for extension in extensions {
            match runs.last_mut() {
                Some((extendee, members)) if *extendee == extension.extendee() => members.push(extension),
                _ => runs.push((extension.extendee(), vec![extension])),
            }
        }
        for (extendee, members) in runs {
            let mut block = self.open(depth, &format!("extend {extendee}"));
            self.group(&mut block);
            for extension in members {
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
                let brackets = self.brackets(extension, options.as_ref());
                self.line(depth + 1, &format!("{head}{brackets};"));
            }
            self.close(block);
        }
    }

    fn enumeration(&mut self, enumeration: &EnumDescriptorProto, scope: &str, depth: usize) {
        let full_name = qualify(scope, enumeration.name());
        let descriptor = self.pool.get_enum_by_name(&full_name);
        let mut block = self.open(depth, &format!("enum {}", enumeration.name()));
        // Confluent's enum: reserved, options and values with no blank line between them.
        let ranges: Vec<(i32, i32)> = enumeration
            .reserved_range
            .iter()
            .map(|range| (range.start(), range.end()))
            .collect();
        self.reserved_lines(&mut block, ranges, &enumeration.reserved_name);
        let options = descriptor
            .as_ref()
            .map(|descriptor| self.option_list(&descriptor.options()))
            .unwrap_or_default();
        let mut values: Vec<(usize, &prost_types::EnumValueDescriptorProto)> =
            enumeration.value.iter().enumerate().collect();
        if self.normalize {
            values.sort_by(|(_, left), (_, right)| (left.number(), left.name()).cmp(&(right.number(), right.name())));
        }
        if block.groups == 0 && (!options.is_empty() || !values.is_empty()) {
            self.group(&mut block);
        }
        for option in options {
            self.line(depth + 1, &format!("option {} = {};", option.name, option.value));
        }
        for (index, value) in values {
            let mut options = descriptor
                .as_ref()
                .and_then(|descriptor| descriptor.values().nth(index))
                .map(|value| option_assignments(&value.options()))
                .unwrap_or_default();
            if self.normalize {
                options.sort_by(|left, right| left.sort_key().cmp(right.sort_key()));
            }
            let attributes = bracket_list(&options);
            self.line(
                depth + 1,
                &format!("{} = {}{attributes};", value.name(), value.number()),
            );
        }
        self.close(block);
    }

    fn service(&mut self, service: &ServiceDescriptorProto, scope: &str) {
        let descriptor = self.pool.get_service_by_name(&qualify(scope, service.name()));
        let mut block = self.open(0, &format!("service {}", service.name()));
        if let Some(descriptor) = &descriptor {
            self.option_group(&mut block, &descriptor.options());
        }
        if !service.method.is_empty() {
            self.group(&mut block);
        }
        for (index, method) in service.method.iter().enumerate() {
            let head = format!(
                "rpc {} ({}{}) returns ({}{})",
                method.name(),
                if method.client_streaming() { "stream " } else { "" },
                method.input_type(),
                if method.server_streaming() { "stream " } else { "" },
                method.output_type(),
            );
            let options = descriptor
                .as_ref()
                .and_then(|descriptor| descriptor.methods().nth(index))
                .map(|method| self.option_list(&method.options()))
                .unwrap_or_default();
            if options.is_empty() {
                self.line(1, &format!("{head};"));
            } else {
                self.line(1, &format!("{head} {{"));
                for option in options {
                    self.line(2, &format!("option {} = {};", option.name, option.value));
                }
                self.line(1, "};");
            }
        }
        self.close(block);
    }
}

/// An inclusive range as `reserved` and `extensions` write it.
fn range_text(start: i32, end: i32) -> String {
    if start == end {
        start.to_string()
    } else if end >= MAX_FIELD_NUMBER {
        format!("{start} to max")
    } else {
        format!("{start} to {end}")
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

/// ` [a = 1]` for one attribute; for several, one per line as Confluent
/// writes them (` [`, `  a = 1,`, `  b = 2`, `]`); nothing for none.
fn bracket_list(attributes: &[Assignment]) -> String {
    match attributes {
        [] => String::new(),
        [single] => format!(" [{} = {}]", single.name, single.value),
        several => {
            let lines: Vec<String> = several
                .iter()
                .map(|attribute| indented(&format!("{} = {}", attribute.name, attribute.value)))
                .collect();
            format!(" [\n{}\n]", lines.join(",\n"))
        }
    }
}

/// `text` with every line indented one level.
fn indented(text: &str) -> String {
    text.split('\n')
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
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

/// Every option set in `options`: standard options by name, then custom
/// ones as `(full.name)`; a repeated option once per value.
fn option_assignments(options: &DynamicMessage) -> Vec<Assignment> {
    let mut assignments = Vec::new();
    for (field, value) in options.fields() {
        // Map entries are implied by `map<…>`; uninterpreted options are compiler input.
        if field.number() == UNINTERPRETED_OPTION || (field.name() == "map_entry" && field.number() == 7) {
            continue;
        }
        push_assignments(&mut assignments, field.name().to_owned(), &field.kind(), value);
    }
    for (extension, value) in options.extensions() {
        push_assignments(
            &mut assignments,
            format!("({})", extension.full_name()),
            &extension.kind(),
            value,
        );
    }
    assignments
}

fn push_assignments(assignments: &mut Vec<Assignment>, name: String, kind: &Kind, value: &Value) {
    match value {
        Value::List(items) => {
            for item in items {
                assignments.push(Assignment {
                    name: name.clone(),
                    value: option_value(kind, item),
                });
            }
        }
        value => assignments.push(Assignment {
            name,
            value: option_value(kind, value),
        }),
    }
}

/// One value as Confluent writes an option value: scalars as literals,
/// enums by name, messages as `{` then `name: value` one per line with
/// commas, then `}`; a repeated field in a message as `[` one value per
/// line `]`.
fn option_value(kind: &Kind, value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::I32(number) => push_display(&mut out, number),
        Value::I64(number) => push_display(&mut out, number),
        Value::U32(number) => push_display(&mut out, number),
        Value::U64(number) => push_display(&mut out, number),
        Value::F32(number) => push_float(&mut out, f64::from(*number), number.to_string()),
        Value::F64(number) => push_float(&mut out, *number, number.to_string()),
        Value::String(text) => out.push_str(&quote(text)),
        Value::Bytes(bytes) => out.push_str(&quote_bytes(bytes)),
        Value::EnumNumber(number) => match kind {
            Kind::Enum(enumeration) => match enumeration.get_value(*number) {
                Some(value) => out.push_str(value.name()),
                None => push_display(&mut out, number),
            },
            _ => push_display(&mut out, number),
        },
        Value::Message(message) => out.push_str(&message_literal(message)),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(|item| indented(&option_value(kind, item))).collect();
            let _ = write!(out, "[\n{}\n]", items.join(",\n"));
        }
        Value::Map(entries) => {
            // A map field in an option message: a list of `{key, value}` entries.
            let Kind::Message(entry) = kind else {
                return out;
            };
            let (Some(key_field), Some(value_field)) = (entry.get_field(1), entry.get_field(2)) else {
                return out;
            };
            let mut sorted: Vec<(&MapKey, &Value)> = entries.iter().collect();
            sorted.sort_by_key(|&(key, _)| key);
            let items: Vec<String> = sorted
                .into_iter()
                .map(|(key, item)| {
                    let key = option_value(&key_field.kind(), &Value::from(key.clone()));
                    let item = option_value(&value_field.kind(), item);
                    indented(&format!(
                        "{{\n{},\n{}\n}}",
                        indented(&format!("key: {key}")),
                        indented(&format!("value: {item}"))
                    ))
                })
                .collect();
            let _ = write!(out, "[\n{}\n]", items.join(",\n"));
        }
    }
    out
}

/// A message value: `{`, its set fields one per line (`name: value`,
/// extensions as `[full.name]: value`) separated by commas, `}`.
fn message_literal(message: &DynamicMessage) -> String {
    let mut entries: Vec<String> = Vec::new();
    for (field, value) in message.fields() {
        let name = if field.is_group() {
            match field.kind() {
                Kind::Message(group) => group.name().to_owned(),
                _ => field.name().to_owned(),
            }
        } else {
            field.name().to_owned()
        };
        entries.push(format!("{name}: {}", option_value(&field.kind(), value)));
    }
    for (extension, value) in message.extensions() {
        entries.push(format!(
            "[{}]: {}",
            extension.full_name(),
            option_value(&extension.kind(), value)
        ));
    }
    let body: Vec<String> = entries.iter().map(|entry| indented(entry)).collect();
    format!("{{\n{}\n}}", body.join(",\n"))
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
            '\'' => out.push_str("\\'"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
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
        let rendered = original.proto_text(super::Layout::Declared).unwrap();
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

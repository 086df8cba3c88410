//! The difference walk: every change from an original schema to an updated
//! one, each a [`Change`] with its kind and its place, as Confluent's
//! Protobuf `SchemaDiff` records them. It judges nothing; [`super::is_compatible`] does.
//!
//! Messages and enums are matched by name, fields and enum constants by
//! number, oneofs by name. A field whose type is a message from another file
//! is compared with the same type on the other side, structurally, and its
//! changes are placed under that type's name.
//!
//! Each message and enum carries a digest of everything this walk reads in
//! it and below it (see the model); two with equal digests have no
//! differences and are not walked, so a check costs in proportion to what
//! changed plus one pass over the fields of the messages that did.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet;

use super::Kind;
use super::model::{FieldType, Label, Message, ProtobufSchema, TypeId, local};
use crate::compat::SchemaPath;

/// One difference between the original and the updated schema.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    /// What changed.
    pub kind: Kind,
    /// Where: message names, oneof names and numbers, as in `/Order/7`.
    pub path: SchemaPath,
    /// The facts a message needs.
    pub detail: Detail,
}

/// What the sentence describing a [`Change`] needs to name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Detail {
    /// The thing before the change (a type, a name, a package), when there was one.
    pub before: Option<String>,
    /// The thing after the change, when there is one.
    pub after: Option<String>,
    /// The name of the field the change is in, for changes inside one.
    pub field: Option<String>,
}

/// A step of the place being walked.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Name(&'a str),
    Number(i32),
}

/// Every difference from `original` to `update`.
pub fn differences(original: &ProtobufSchema, update: &ProtobufSchema) -> Vec<Change> {
    let mut walk = Walk {
        original,
        update,
        path: Vec::new(),
        open: FxHashSet::default(),
        field: None,
        changes: Vec::new(),
    };
    let (before, after) = (original.main_file(), update.main_file());
    if before.package != after.package {
        walk.record(
            Kind::PackageChanged,
            Detail {
                before: Some(before.package.clone()),
                after: Some(after.package.clone()),
                field: None,
            },
        );
    }
    if before.syntax != after.syntax {
        walk.record(
            Kind::SyntaxVersionChanged,
            Detail {
                before: Some(before.syntax.clone()),
                after: Some(after.syntax.clone()),
                field: None,
            },
        );
    }
    walk.types(&before.messages, &before.enums, &after.messages, &after.enums);
    walk.changes
}

struct Walk<'a> {
    original: &'a ProtobufSchema,
    update: &'a ProtobufSchema,
    path: Vec<Step<'a>>,
    /// Original messages whose fields are being compared: a recursive type is walked once.
    open: FxHashSet<usize>,
    /// The field whose types are being compared (its name in the update).
    field: Option<&'a str>,
    changes: Vec<Change>,
}

/// A field as the walk sees it: the field and the name of its oneof.
#[derive(Clone, Copy)]
struct Member<'a> {
    field: &'a super::model::Field,
    oneof: Option<&'a str>,
}

impl<'a> Walk<'a> {
    fn record(&mut self, kind: Kind, mut detail: Detail) {
        if detail.field.is_none() {
            detail.field = self.field.map(str::to_owned);
        }
        let mut path = SchemaPath::root();
        for step in &self.path {
            path = match *step {
                Step::Name(name) => path.key(name),
                Step::Number(number) => match usize::try_from(number) {
                    Ok(index) => path.index(index),
                    Err(_) => path.key(&number.to_string()),
                },
            };
        }
        self.changes.push(Change { kind, path, detail });
    }

    fn record_at(&mut self, steps: &[Step<'a>], kind: Kind, detail: Detail) {
        let depth = self.path.len();
        self.path.extend_from_slice(steps);
        self.record(kind, detail);
        self.path.truncate(depth);
    }

    fn within<R>(&mut self, steps: &[Step<'a>], body: impl FnOnce(&mut Self) -> R) -> R {
        let depth = self.path.len();
        self.path.extend_from_slice(steps);
        let result = body(self);
        self.path.truncate(depth);
        result
    }

    /// Compares two lists of messages and enums declared side by side.
    fn types(
        &mut self,
        original_messages: &[usize],
        original_enums: &[usize],
        update_messages: &[usize],
        update_enums: &[usize],
    ) {
        let (original, update) = (self.original, self.update);
        let by_name = |schema: &'a ProtobufSchema, ids: &[usize]| -> BTreeMap<&'a str, (usize, usize)> {
            ids.iter()
                .enumerate()
                .map(|(position, &id)| (simple_name(&schema.messages[id].full_name), (id, position)))
                .collect()
        };
        let before = by_name(original, original_messages);
        let after = by_name(update, update_messages);
        let names: BTreeSet<&str> = before.keys().chain(after.keys()).copied().collect();
        for name in names {
            match (before.get(name), after.get(name)) {
                (Some(_), None) => self.record_at(&[Step::Name(name)], Kind::MessageRemoved, Detail::default()),
                (None, Some(_)) => self.record_at(&[Step::Name(name)], Kind::MessageAdded, Detail::default()),
                (Some(&(old, old_position)), Some(&(new, new_position))) => self.within(&[Step::Name(name)], |walk| {
                    walk.message(old, new);
                    if old_position != new_position {
                        walk.record(
                            Kind::MessageMoved,
                            Detail {
                                before: Some(old_position.to_string()),
                                after: Some(new_position.to_string()),
                                field: None,
                            },
                        );
                    }
                }),
                (None, None) => {}
            }
        }
        let enum_names = |schema: &'a ProtobufSchema, ids: &[usize]| -> BTreeMap<&'a str, usize> {
            ids.iter().map(|&id| (simple_name(enum_name(schema, id)), id)).collect()
        };
        let before = enum_names(original, original_enums);
        let after = enum_names(update, update_enums);
        let names: BTreeSet<&str> = before.keys().chain(after.keys()).copied().collect();
        for name in names {
            match (before.get(name), after.get(name)) {
                (Some(_), None) => self.record_at(&[Step::Name(name)], Kind::EnumRemoved, Detail::default()),
                (None, Some(_)) => self.record_at(&[Step::Name(name)], Kind::EnumAdded, Detail::default()),
                (Some(&old), Some(&new)) => self.within(&[Step::Name(name)], |walk| walk.enumeration(old, new)),
                (None, None) => {}
            }
        }
    }

    fn enumeration(&mut self, old: usize, new: usize) {
        if self.original.enums[old].digest == self.update.enums[new].digest {
            return;
        }
        let before: BTreeMap<i32, &str> = self.original.enums[old]
            .values
            .iter()
            .map(|(number, name)| (*number, name.as_str()))
            .collect();
        let after: BTreeMap<i32, &str> = self.update.enums[new]
            .values
            .iter()
            .map(|(number, name)| (*number, name.as_str()))
            .collect();
        let numbers: BTreeSet<i32> = before.keys().chain(after.keys()).copied().collect();
        for number in numbers {
            let step = [Step::Number(number)];
            match (before.get(&number), after.get(&number)) {
                (Some(name), None) => self.record_at(&step, Kind::EnumConstRemoved, named(Some(name), None)),
                (None, Some(name)) => self.record_at(&step, Kind::EnumConstAdded, named(None, Some(name))),
                (Some(old_name), Some(new_name)) if old_name != new_name => {
                    self.record_at(&step, Kind::EnumConstChanged, named(Some(old_name), Some(new_name)));
                }
                _ => {}
            }
        }
    }

    /// Compares two messages of the same name: fields, oneofs, then nested types.
    fn message(&mut self, old: usize, new: usize) {
        let (before, after) = (&self.original.messages[old], &self.update.messages[new]);
        if before.digest == after.digest {
            return;
        }
        if self.open.insert(old) {
            self.fields(before, after);
            self.open.remove(&old);
        }
        if before.nested_digest != after.nested_digest {
            self.types(&before.messages, &before.enums, &after.messages, &after.enums);
        }
    }

    fn fields(&mut self, before: &'a Message, after: &'a Message) {
        let old_fields = members(before);
        let new_fields = members(after);
        let same_oneofs = before.oneofs == after.oneofs;
        let (old_oneofs, new_oneofs): (BTreeSet<&str>, BTreeSet<&str>) = if same_oneofs {
            (BTreeSet::new(), BTreeSet::new())
        } else {
            (
                before.oneofs.iter().map(String::as_str).collect(),
                after.oneofs.iter().map(String::as_str).collect(),
            )
        };
        let new_by_oneof = numbers_by_oneof(after);

        // A oneof gone by name with none of its members left anywhere was deleted whole.
        let deleted_whole: BTreeSet<&str> = if same_oneofs {
            BTreeSet::new()
        } else {
            before
                .oneofs
                .iter()
                .zip(numbers_by_oneof(before))
                .filter(|(name, _)| !new_oneofs.contains(name.as_str()))
                .filter(|(_, numbers)| !numbers.iter().any(|number| new_fields.contains_key(number)))
                .map(|(name, _)| name.as_str())
                .collect()
        };

        // Fields that could be set together before and are now in one oneof.
        for (oneof, numbers) in after.oneofs.iter().zip(&new_by_oneof) {
            let mut first_origin: Option<Origin<'_>> = None;
            let mut several_origins = false;
            let mut moved_from_top_level = 0;
            for number in numbers {
                let origin = match old_fields.get(number) {
                    Some(Member {
                        oneof: Some(old_oneof), ..
                    }) => Origin::Oneof(old_oneof),
                    Some(Member { oneof: None, .. }) => {
                        moved_from_top_level += 1;
                        Origin::Field(*number)
                    }
                    None => continue,
                };
                match first_origin {
                    None => first_origin = Some(origin),
                    Some(first) => several_origins |= first != origin,
                }
            }
            if several_origins {
                let kind = if moved_from_top_level > 1 {
                    Kind::MultipleFieldsMovedToOneof
                } else {
                    Kind::FieldMovedToExistingOneof
                };
                self.record_at(&[Step::Name(oneof)], kind, Detail::default());
            }
        }

        for name in old_oneofs.union(&new_oneofs).copied() {
            if !new_oneofs.contains(name) {
                self.record_at(&[Step::Name(name)], Kind::OneofRemoved, Detail::default());
            } else if !old_oneofs.contains(name) {
                self.record_at(&[Step::Name(name)], Kind::OneofAdded, Detail::default());
            }
        }

        for (number, old, new) in old_fields.merge(&new_fields) {
            match (old, new) {
                (Some(old), None) => match old.oneof {
                    Some(oneof) if deleted_whole.contains(oneof) => {}
                    Some(oneof) => self.record_at(
                        &[Step::Name(oneof), Step::Number(number)],
                        Kind::OneofFieldRemoved,
                        named(Some(&old.field.name), None),
                    ),
                    None => {
                        let kind = if old.field.label == Some(Label::Required) {
                            Kind::RequiredFieldRemoved
                        } else {
                            Kind::FieldRemoved
                        };
                        self.record_at(&[Step::Number(number)], kind, named(Some(&old.field.name), None));
                    }
                },
                (None, Some(new)) => match new.oneof {
                    Some(oneof) => self.record_at(
                        &[Step::Name(oneof), Step::Number(number)],
                        Kind::OneofFieldAdded,
                        named(None, Some(&new.field.name)),
                    ),
                    None => {
                        let kind = if new.field.label == Some(Label::Required) {
                            Kind::RequiredFieldAdded
                        } else {
                            Kind::FieldAdded
                        };
                        self.record_at(&[Step::Number(number)], kind, named(None, Some(&new.field.name)));
                    }
                },
                (Some(old), Some(new)) => {
                    if old.oneof.is_some() && new.oneof.is_none() {
                        self.record_at(
                            &[Step::Number(number)],
                            Kind::OneofFieldMovedToTopLevel,
                            named(old.oneof, None),
                        );
                    }
                    let (in_oneof, top_level);
                    let place: &[Step<'a>] = match new.oneof {
                        Some(oneof) => {
                            in_oneof = [Step::Name(oneof), Step::Number(number)];
                            &in_oneof
                        }
                        None => {
                            top_level = [Step::Number(number)];
                            &top_level
                        }
                    };
                    self.within(place, |walk| walk.field(old, new));
                }
                (None, None) => {}
            }
        }
    }

    fn field(&mut self, old: &Member<'a>, new: &Member<'a>) {
        if old.field.name != new.field.name {
            self.record(
                Kind::FieldNameChanged,
                named(Some(&old.field.name), Some(&new.field.name)),
            );
        }
        let outer = self.field.replace(&new.field.name);
        self.labels_and_types(old.field.label, new.field.label, &old.field.ty, &new.field.ty);
        self.field = outer;
    }

    fn labels_and_types(
        &mut self,
        old_label: Option<Label>,
        new_label: Option<Label>,
        old: &'a FieldType,
        new: &'a FieldType,
    ) {
        let types = || Detail {
            before: Some(old.describe()),
            after: Some(new.describe()),
            field: None,
        };
        match (Self::category(old), Self::category(new)) {
            (Category::Scalar(old_family), Category::Scalar(new_family)) => {
                if old_family != new_family {
                    self.record(Kind::FieldScalarKindChanged, types());
                } else if let (Some(before), Some(after)) = (old_label, new_label)
                    && before != after
                {
                    let kind = if old_family == Family::StringOrBytes {
                        Kind::FieldStringOrBytesLabelChanged
                    } else {
                        Kind::FieldNumericLabelChanged
                    };
                    self.record(
                        kind,
                        Detail {
                            before: Some(label_name(before).to_owned()),
                            after: Some(label_name(after).to_owned()),
                            field: None,
                        },
                    );
                }
            }
            (Category::Message(old_name, old_id), Category::Message(new_name, new_id)) => {
                self.message_types(old_name, old_id, new_name, new_id);
            }
            (Category::Map(old_key, old_value), Category::Map(new_key, new_value)) => {
                self.labels_and_types(None, None, old_key, new_key);
                self.labels_and_types(None, None, old_value, new_value);
            }
            _ => self.record(Kind::FieldKindChanged, types()),
        }
    }

    /// Two fields of message type: the same type if their names match once
    /// each loses its package; a type from an import is compared structurally.
    fn message_types(&mut self, old_name: &'a str, old: Option<usize>, new_name: &'a str, new: Option<usize>) {
        let (original, update) = (self.original, self.update);
        let (Some(old), Some(new)) = (old, new) else {
            if old_name != new_name {
                self.record(Kind::FieldNamedTypeChanged, named(Some(old_name), Some(new_name)));
            }
            return;
        };
        let (before, after) = (&original.messages[old], &update.messages[new]);
        let old_local = local(old_name, &original.files[before.file].package);
        let new_local = local(new_name, &update.files[after.file].package);
        if old_local != new_local {
            self.record(Kind::FieldNamedTypeChanged, named(Some(old_name), Some(new_name)));
            return;
        }
        let both_own = before.file == original.main && after.file == update.main;
        let same_import = before.file != original.main
            && after.file != update.main
            && original.files[before.file].identity == update.files[after.file].identity;
        if both_own || same_import {
            return;
        }
        // Compared on its own, placed under its name, as a separate walk would.
        let saved_path = std::mem::take(&mut self.path);
        let first_change = self.changes.len();
        self.path = old_local.split('.').map(Step::Name).collect();
        self.message(old, new);
        self.path = saved_path;
        let broken = self.changes[first_change..]
            .iter()
            .any(|change| !super::is_compatible(change.kind));
        if broken {
            // Same type by name, different definition: no "before" name to show.
            self.record(Kind::FieldNamedTypeChanged, named(None, Some(new_name)));
        }
    }

    fn category(ty: &'a FieldType) -> Category<'a> {
        match ty {
            FieldType::Scalar(name) => Category::Scalar(family(name)),
            FieldType::Map(key, value) => Category::Map(key, value),
            FieldType::Named(name, target) => match target {
                Some(TypeId::Enum(_)) => Category::Scalar(Family::GeneralNumber),
                Some(TypeId::Message(id)) => Category::Message(name, Some(*id)),
                None => Category::Message(name, None),
            },
        }
    }
}

/// How Confluent groups field types before comparing them.
enum Category<'a> {
    Scalar(Family),
    Message(&'a str, Option<usize>),
    Map(&'a FieldType, &'a FieldType),
}

/// Scalars that read each other's bytes (enums count as varints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    GeneralNumber,
    SignedNumber,
    StringOrBytes,
    Fixed32,
    Fixed64,
    Float,
    Double,
}

fn family(scalar: &str) -> Family {
    match scalar {
        "sint32" | "sint64" => Family::SignedNumber,
        "string" | "bytes" => Family::StringOrBytes,
        "fixed32" | "sfixed32" => Family::Fixed32,
        "fixed64" | "sfixed64" => Family::Fixed64,
        "float" => Family::Float,
        "double" => Family::Double,
        _ => Family::GeneralNumber,
    }
}

fn label_name(label: Label) -> &'static str {
    match label {
        Label::Optional => "optional",
        Label::Required => "required",
        Label::Repeated => "repeated",
    }
}

fn named(before: Option<&str>, after: Option<&str>) -> Detail {
    Detail {
        before: before.map(str::to_owned),
        after: after.map(str::to_owned),
        field: None,
    }
}

/// Every field of a message in number order, with its oneof's name.
fn members(message: &Message) -> Members<'_> {
    Members(
        message
            .by_number
            .iter()
            .map(|&index| {
                let field = &message.fields[index];
                let oneof = field
                    .oneof
                    .and_then(|index| message.oneofs.get(index))
                    .map(String::as_str);
                (field.number, Member { field, oneof })
            })
            .collect(),
    )
}

/// The fields of a message sorted by number, found by binary search.
struct Members<'a>(Vec<(i32, Member<'a>)>);

impl<'a> Members<'a> {
    fn get(&self, number: &i32) -> Option<&Member<'a>> {
        self.0
            .binary_search_by_key(number, |(key, _)| *key)
            .ok()
            .map(|position| &self.0[position].1)
    }

    fn contains_key(&self, number: &i32) -> bool {
        self.get(number).is_some()
    }

    /// Every number of either list, in order, with the member of each list.
    fn merge<'m>(&'m self, other: &'m Members<'a>) -> Merge<'m, 'a> {
        Merge {
            left: &self.0,
            right: &other.0,
        }
    }
}

/// The merge of two [`Members`] lists by number.
struct Merge<'m, 'a> {
    left: &'m [(i32, Member<'a>)],
    right: &'m [(i32, Member<'a>)],
}

impl<'m, 'a> Iterator for Merge<'m, 'a> {
    type Item = (i32, Option<&'m Member<'a>>, Option<&'m Member<'a>>);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.left.split_first(), self.right.split_first()) {
            (None, None) => None,
            (Some(((number, member), rest)), None) => {
                self.left = rest;
                Some((*number, Some(member), None))
            }
            (None, Some(((number, member), rest))) => {
                self.right = rest;
                Some((*number, None, Some(member)))
            }
            (Some(((left_number, left), left_rest)), Some(((right_number, right), right_rest))) => {
                match left_number.cmp(right_number) {
                    std::cmp::Ordering::Less => {
                        self.left = left_rest;
                        Some((*left_number, Some(left), None))
                    }
                    std::cmp::Ordering::Greater => {
                        self.right = right_rest;
                        Some((*right_number, None, Some(right)))
                    }
                    std::cmp::Ordering::Equal => {
                        self.left = left_rest;
                        self.right = right_rest;
                        Some((*left_number, Some(left), Some(right)))
                    }
                }
            }
        }
    }
}

/// Where a field of a oneof was before: in a oneof, or on its own.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin<'a> {
    Oneof(&'a str),
    Field(i32),
}

/// The field numbers of each real oneof of a message, in the oneofs' order.
fn numbers_by_oneof(message: &Message) -> Vec<Vec<i32>> {
    let mut numbers = vec![Vec::new(); message.oneofs.len()];
    for field in &message.fields {
        if let Some(members) = field.oneof.and_then(|index| numbers.get_mut(index)) {
            members.push(field.number);
        }
    }
    numbers
}

fn simple_name(full_name: &str) -> &str {
    full_name.rsplit('.').next().unwrap_or(full_name)
}

fn enum_name(schema: &ProtobufSchema, id: usize) -> &str {
    &schema.enums[id].full_name
}

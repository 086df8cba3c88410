//! The structural difference walk for Avro: the earlier schema and the
//! candidate side by side, fields matched by name (or by an alias naming
//! the old field), union branches by name or kind, every change recorded
//! with its place in both schemas. It judges nothing: whether a change
//! breaks is the resolution check's finding, attached by [`super::attach`].
//!
//! Each pair of records is walked once, so recursive schemas end, and the
//! walk stops recording after [`MAX_CHANGES`] changes.

use std::fmt;

use rustc_hash::FxHashSet;
use serde::Serialize;
use serde_json::Value;

use super::Located;
use crate::compat::avro::AvroSchema;
use crate::compat::avro::model::{Name, NodeId, Record, Type};
use crate::compat::stack::{deep, walk};
use crate::compat::{Direction, SchemaPath};

/// The most changes one walk records; a pair of schemas that differ more
/// than this is shown in part (the verdicts still come from the full check).
pub const MAX_CHANGES: usize = 10_000;

/// The kinds of change between two Avro schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AvroChange {
    /// A field the earlier schema lacks, with a default.
    FieldAddedWithDefault,
    /// A field the earlier schema lacks, without a default.
    FieldAddedWithoutDefault,
    /// A field of the earlier schema that had a default is gone.
    FieldRemovedWithDefault,
    /// A field of the earlier schema that had no default is gone.
    FieldRemovedWithoutDefault,
    /// A field now has another name and an alias naming the old one.
    FieldRenamedWithAlias,
    /// A field moved to another position in its record.
    FieldMoved,
    /// A field gained a default.
    FieldDefaultAdded,
    /// A field lost its default.
    FieldDefaultRemoved,
    /// A field's default changed.
    FieldDefaultChanged,
    /// A field's aliases changed.
    FieldAliasesChanged,
    /// A field's `doc` changed.
    FieldDocChanged,
    /// A field's sort `order` changed.
    FieldOrderChanged,
    /// A primitive type widened as Avro promotes it (`int` to `long`).
    TypePromoted,
    /// A primitive type narrowed: the reverse of a promotion (`long` to `int`).
    TypeNarrowed,
    /// A type was replaced by an unrelated one.
    TypeChanged,
    /// A type became a union holding it.
    TypeWidenedToUnion,
    /// A union became one of its branches.
    UnionNarrowedToType,
    /// A union gained a branch.
    UnionBranchAdded,
    /// A union lost a branch.
    UnionBranchRemoved,
    /// A named type's name changed.
    NameChanged,
    /// A named type gained an alias.
    AliasAdded,
    /// A named type lost an alias.
    AliasRemoved,
    /// A named type's `doc` changed.
    DocChanged,
    /// An enum gained a symbol.
    SymbolAdded,
    /// An enum lost a symbol.
    SymbolRemoved,
    /// An enum's default symbol changed, appeared or disappeared.
    EnumDefaultChanged,
    /// A fixed type's size changed.
    FixedSizeChanged,
    /// A type's `logicalType` or other extra attributes changed.
    PropertiesChanged,
}

impl AvroChange {
    /// The name, in the style of the other formats' catalogues.
    pub fn as_str(self) -> &'static str {
        match self {
            AvroChange::FieldAddedWithDefault => "FIELD_ADDED_WITH_DEFAULT",
            AvroChange::FieldAddedWithoutDefault => "FIELD_ADDED_WITHOUT_DEFAULT",
            AvroChange::FieldRemovedWithDefault => "FIELD_REMOVED_WITH_DEFAULT",
            AvroChange::FieldRemovedWithoutDefault => "FIELD_REMOVED_WITHOUT_DEFAULT",
            AvroChange::FieldRenamedWithAlias => "FIELD_RENAMED_WITH_ALIAS",
            AvroChange::FieldMoved => "FIELD_MOVED",
            AvroChange::FieldDefaultAdded => "FIELD_DEFAULT_ADDED",
            AvroChange::FieldDefaultRemoved => "FIELD_DEFAULT_REMOVED",
            AvroChange::FieldDefaultChanged => "FIELD_DEFAULT_CHANGED",
            AvroChange::FieldAliasesChanged => "FIELD_ALIASES_CHANGED",
            AvroChange::FieldDocChanged => "FIELD_DOC_CHANGED",
            AvroChange::FieldOrderChanged => "FIELD_ORDER_CHANGED",
            AvroChange::TypePromoted => "TYPE_PROMOTED",
            AvroChange::TypeNarrowed => "TYPE_NARROWED",
            AvroChange::TypeChanged => "TYPE_CHANGED",
            AvroChange::TypeWidenedToUnion => "TYPE_WIDENED_TO_UNION",
            AvroChange::UnionNarrowedToType => "UNION_NARROWED_TO_TYPE",
            AvroChange::UnionBranchAdded => "UNION_BRANCH_ADDED",
            AvroChange::UnionBranchRemoved => "UNION_BRANCH_REMOVED",
            AvroChange::NameChanged => "NAME_CHANGED",
            AvroChange::AliasAdded => "ALIAS_ADDED",
            AvroChange::AliasRemoved => "ALIAS_REMOVED",
            AvroChange::DocChanged => "DOC_CHANGED",
            AvroChange::SymbolAdded => "SYMBOL_ADDED",
            AvroChange::SymbolRemoved => "SYMBOL_REMOVED",
            AvroChange::EnumDefaultChanged => "ENUM_DEFAULT_CHANGED",
            AvroChange::FixedSizeChanged => "FIXED_SIZE_CHANGED",
            AvroChange::PropertiesChanged => "PROPERTIES_CHANGED",
        }
    }

    /// Whether a break in `direction` is more likely this change's doing
    /// than another's at the same place: used only to choose between
    /// changes when attaching a finding, never to decide a verdict.
    pub(crate) fn suspect(self, direction: Direction) -> bool {
        use AvroChange::*;
        match direction {
            Direction::Backward => matches!(
                self,
                FieldAddedWithoutDefault
                    | FieldDefaultRemoved
                    | TypeNarrowed
                    | TypeChanged
                    | UnionNarrowedToType
                    | UnionBranchRemoved
                    | NameChanged
                    | SymbolRemoved
                    | EnumDefaultChanged
                    | FixedSizeChanged
            ),
            Direction::Forward => matches!(
                self,
                FieldRemovedWithoutDefault
                    | FieldRenamedWithAlias
                    | TypePromoted
                    | TypeChanged
                    | TypeWidenedToUnion
                    | UnionBranchAdded
                    | NameChanged
                    | SymbolAdded
                    | EnumDefaultChanged
                    | FixedSizeChanged
            ),
        }
    }
}

impl fmt::Display for AvroChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every change from `previous` to `candidate`, in walk order.
pub(crate) fn changes(previous: &AvroSchema, candidate: &AvroSchema) -> Vec<Located<AvroChange>> {
    let mut walker = Walker {
        old: previous,
        new: candidate,
        walked: FxHashSet::default(),
        found: Vec::new(),
    };
    walk(previous.nesting + candidate.nesting, || {
        walker.compare(previous.root, candidate.root, &SchemaPath::root(), &SchemaPath::root());
    });
    walker.found
}

struct Walker<'a> {
    old: &'a AvroSchema,
    new: &'a AvroSchema,
    /// Record pairs already walked (or being walked).
    walked: FxHashSet<(NodeId, NodeId)>,
    found: Vec<Located<AvroChange>>,
}

impl Walker<'_> {
    fn record(
        &mut self,
        kind: AvroChange,
        element: &str,
        old: Option<&SchemaPath>,
        new: Option<&SchemaPath>,
        detail: String,
    ) {
        if self.found.len() < MAX_CHANGES {
            self.found.push(Located {
                kind,
                element: element.to_owned(),
                previous_path: old.cloned(),
                candidate_path: new.cloned(),
                detail,
            });
        }
    }

    fn compare(&mut self, old: NodeId, new: NodeId, old_path: &SchemaPath, new_path: &SchemaPath) {
        if self.found.len() >= MAX_CHANGES {
            return;
        }
        deep(|| self.compare_here(old, new, old_path, new_path));
    }

    fn compare_here(&mut self, old: NodeId, new: NodeId, old_path: &SchemaPath, new_path: &SchemaPath) {
        let (old_schema, new_schema) = (self.old, self.new);
        self.compare_properties(old, new, old_path, new_path);
        match (old_schema.ty(old), new_schema.ty(new)) {
            (Type::Primitive(before), Type::Primitive(after)) => {
                if before != after {
                    let kind = if promotes(before.name(), after.name()) {
                        AvroChange::TypePromoted
                    } else if promotes(after.name(), before.name()) {
                        AvroChange::TypeNarrowed
                    } else {
                        AvroChange::TypeChanged
                    };
                    let detail = format!("`{}` to `{}`", before.name(), after.name());
                    self.record(kind, before.name(), Some(old_path), Some(new_path), detail);
                }
            }
            (Type::Array(before), Type::Array(after)) => {
                self.compare(
                    *before,
                    *after,
                    &old_path.clone().key("items"),
                    &new_path.clone().key("items"),
                );
            }
            (Type::Map(before), Type::Map(after)) => {
                self.compare(
                    *before,
                    *after,
                    &old_path.clone().key("values"),
                    &new_path.clone().key("values"),
                );
            }
            (Type::Union(before), Type::Union(after)) => self.compare_unions(before, after, old_path, new_path),
            (Type::Union(before), _) => match self.closest(before, self.old, new, self.new) {
                Some(index) => {
                    let detail = format!("`{}` to `{}`", old_schema.describe(old), new_schema.describe(new));
                    let element = new_schema.ty(new).kind();
                    self.record(
                        AvroChange::UnionNarrowedToType,
                        element,
                        Some(old_path),
                        Some(new_path),
                        detail,
                    );
                    self.compare(before[index], new, &old_path.clone().index(index), new_path);
                }
                None => self.type_changed(old, new, old_path, new_path),
            },
            (_, Type::Union(after)) => match self.closest(after, self.new, old, self.old) {
                Some(index) => {
                    let detail = format!("`{}` to `{}`", old_schema.describe(old), new_schema.describe(new));
                    let element = old_schema.ty(old).kind();
                    self.record(
                        AvroChange::TypeWidenedToUnion,
                        element,
                        Some(old_path),
                        Some(new_path),
                        detail,
                    );
                    self.compare(old, after[index], old_path, &new_path.clone().index(index));
                }
                None => self.type_changed(old, new, old_path, new_path),
            },
            (Type::Record(before), Type::Record(after)) => {
                if self.walked.insert((old, new)) {
                    self.compare_names(&before.name, &after.name, old_path, new_path);
                    self.compare_fields(before, after, old_path, new_path);
                }
            }
            (Type::Enum(before), Type::Enum(after)) => {
                self.compare_names(&before.name, &after.name, old_path, new_path);
                let (old_symbols, new_symbols) = (old_path.clone().key("symbols"), new_path.clone().key("symbols"));
                for symbol in after.symbols.iter().filter(|s| !before.symbols.contains(s)) {
                    let detail = format!("`{symbol}` added to enum `{}`", after.name.full);
                    self.record(
                        AvroChange::SymbolAdded,
                        symbol,
                        Some(&old_symbols),
                        Some(&new_symbols),
                        detail,
                    );
                }
                for symbol in before.symbols.iter().filter(|s| !after.symbols.contains(s)) {
                    let detail = format!("`{symbol}` removed from enum `{}`", after.name.full);
                    self.record(
                        AvroChange::SymbolRemoved,
                        symbol,
                        Some(&old_symbols),
                        Some(&new_symbols),
                        detail,
                    );
                }
                if before.default != after.default {
                    let detail = format!(
                        "{} to {}",
                        quoted_or_none(before.default.as_deref()),
                        quoted_or_none(after.default.as_deref())
                    );
                    let element = after.name.simple().to_owned();
                    self.record(
                        AvroChange::EnumDefaultChanged,
                        &element,
                        Some(old_path),
                        Some(new_path),
                        detail,
                    );
                }
            }
            (Type::Fixed(before), Type::Fixed(after)) => {
                self.compare_names(&before.name, &after.name, old_path, new_path);
                if before.size != after.size {
                    let detail = format!("{} to {} bytes", before.size, after.size);
                    let element = after.name.simple().to_owned();
                    self.record(
                        AvroChange::FixedSizeChanged,
                        &element,
                        Some(old_path),
                        Some(new_path),
                        detail,
                    );
                }
            }
            _ => self.type_changed(old, new, old_path, new_path),
        }
    }

    fn type_changed(&mut self, old: NodeId, new: NodeId, old_path: &SchemaPath, new_path: &SchemaPath) {
        let detail = format!("`{}` to `{}`", self.old.describe(old), self.new.describe(new));
        let element = self.new.ty(new).kind();
        self.record(AvroChange::TypeChanged, element, Some(old_path), Some(new_path), detail);
    }

    /// The branch of `branches` (a union in `owner`) that is the same thing
    /// as `other` (in `other_schema`): the same name, else the same kind.
    fn closest(
        &self,
        branches: &[NodeId],
        owner: &AvroSchema,
        other: NodeId,
        other_schema: &AvroSchema,
    ) -> Option<usize> {
        let other_type = other_schema.ty(other);
        branches
            .iter()
            .position(|&branch| same_name(owner.ty(branch), other_type))
            .or_else(|| {
                branches
                    .iter()
                    .position(|&branch| other_type.name().is_none() && owner.ty(branch).kind() == other_type.kind())
            })
    }

    fn compare_unions(&mut self, before: &[NodeId], after: &[NodeId], old_path: &SchemaPath, new_path: &SchemaPath) {
        let mut matched_old = vec![false; before.len()];
        let mut pairs = Vec::new();
        for (new_index, &branch) in after.iter().enumerate() {
            let branch_type = self.new.ty(branch);
            let found = before.iter().enumerate().position(|(old_index, &candidate)| {
                let candidate_type = self.old.ty(candidate);
                !matched_old[old_index]
                    && (same_name(candidate_type, branch_type)
                        || (branch_type.name().is_none()
                            && candidate_type.name().is_none()
                            && candidate_type.kind() == branch_type.kind()))
            });
            match found {
                Some(old_index) => {
                    matched_old[old_index] = true;
                    pairs.push((old_index, new_index));
                }
                None => {
                    let detail = format!("`{}` added", self.new.describe(branch));
                    let element = branch_type.kind();
                    let at = new_path.clone().index(new_index);
                    self.record(AvroChange::UnionBranchAdded, element, Some(old_path), Some(&at), detail);
                }
            }
        }
        for (old_index, &branch) in before.iter().enumerate() {
            if !matched_old[old_index] {
                let detail = format!("`{}` removed", self.old.describe(branch));
                let element = self.old.ty(branch).kind();
                let at = old_path.clone().index(old_index);
                self.record(
                    AvroChange::UnionBranchRemoved,
                    element,
                    Some(&at),
                    Some(new_path),
                    detail,
                );
            }
        }
        for (old_index, new_index) in pairs {
            self.compare(
                before[old_index],
                after[new_index],
                &old_path.clone().index(old_index),
                &new_path.clone().index(new_index),
            );
        }
    }

    fn compare_names(&mut self, before: &Name, after: &Name, old_path: &SchemaPath, new_path: &SchemaPath) {
        let element = after.simple().to_owned();
        if before.full != after.full {
            let detail = format!("`{}` to `{}`", before.full, after.full);
            let (old_name, new_name) = (old_path.clone().key("name"), new_path.clone().key("name"));
            self.record(
                AvroChange::NameChanged,
                &element,
                Some(&old_name),
                Some(&new_name),
                detail,
            );
        }
        for alias in after.aliases.iter().filter(|a| !before.aliases.contains(a)) {
            let detail = format!("`{alias}` on `{}`", after.full);
            self.record(AvroChange::AliasAdded, &element, Some(old_path), Some(new_path), detail);
        }
        for alias in before.aliases.iter().filter(|a| !after.aliases.contains(a)) {
            let detail = format!("`{alias}` on `{}`", after.full);
            self.record(
                AvroChange::AliasRemoved,
                &element,
                Some(old_path),
                Some(new_path),
                detail,
            );
        }
        if before.doc != after.doc {
            self.record(
                AvroChange::DocChanged,
                &element,
                Some(old_path),
                Some(new_path),
                String::new(),
            );
        }
    }

    fn compare_fields(&mut self, before: &Record, after: &Record, old_path: &SchemaPath, new_path: &SchemaPath) {
        let (old_fields, new_fields) = (old_path.clone().key("fields"), new_path.clone().key("fields"));
        let mut matched_old = vec![false; before.fields.len()];
        let mut pairs = Vec::new();
        for (new_index, field) in after.fields.iter().enumerate() {
            let name = after.field_name(new_index);
            let at = new_fields.clone().index(new_index);
            let by_name = before.position(name).filter(|&old_index| !matched_old[old_index]);
            let by_alias = || {
                field
                    .aliases()
                    .iter()
                    .find_map(|alias| before.position(alias).filter(|&old_index| !matched_old[old_index]))
            };
            match by_name
                .map(|index| (index, false))
                .or_else(|| by_alias().map(|index| (index, true)))
            {
                Some((old_index, renamed)) => {
                    matched_old[old_index] = true;
                    let old_at = old_fields.clone().index(old_index);
                    if renamed {
                        let detail = format!("`{}` to `{name}`", before.field_name(old_index));
                        self.record(
                            AvroChange::FieldRenamedWithAlias,
                            name,
                            Some(&old_at),
                            Some(&at),
                            detail,
                        );
                    }
                    pairs.push((old_index, new_index));
                }
                None => {
                    let (kind, detail) = match field.default() {
                        Some(default) => (AvroChange::FieldAddedWithDefault, format!("default {default}")),
                        None => (AvroChange::FieldAddedWithoutDefault, String::new()),
                    };
                    self.record(kind, name, None, Some(&at), detail);
                }
            }
        }
        for (old_index, field) in before.fields.iter().enumerate() {
            if !matched_old[old_index] {
                let kind = if field.default().is_some() {
                    AvroChange::FieldRemovedWithDefault
                } else {
                    AvroChange::FieldRemovedWithoutDefault
                };
                let at = old_fields.clone().index(old_index);
                self.record(kind, before.field_name(old_index), Some(&at), None, String::new());
            }
        }
        for (old_index, new_index) in pairs {
            let (old_field, new_field) = (&before.fields[old_index], &after.fields[new_index]);
            let name = after.field_name(new_index);
            let (old_at, new_at) = (old_fields.clone().index(old_index), new_fields.clone().index(new_index));
            if old_index != new_index {
                let detail = format!("position {old_index} to {new_index}");
                self.record(AvroChange::FieldMoved, name, Some(&old_at), Some(&new_at), detail);
            }
            self.compare_defaults(old_field.default(), new_field.default(), name, &old_at, &new_at);
            if old_field.aliases() != new_field.aliases() {
                let detail = format!("{:?} to {:?}", old_field.aliases(), new_field.aliases());
                self.record(
                    AvroChange::FieldAliasesChanged,
                    name,
                    Some(&old_at),
                    Some(&new_at),
                    detail,
                );
            }
            if old_field.doc() != new_field.doc() {
                self.record(
                    AvroChange::FieldDocChanged,
                    name,
                    Some(&old_at),
                    Some(&new_at),
                    String::new(),
                );
            }
            if old_field.order() != new_field.order() {
                let detail = format!(
                    "{} to {}",
                    quoted_or_none(old_field.order()),
                    quoted_or_none(new_field.order())
                );
                self.record(
                    AvroChange::FieldOrderChanged,
                    name,
                    Some(&old_at),
                    Some(&new_at),
                    detail,
                );
            }
            self.compare(old_field.ty, new_field.ty, &old_at.key("type"), &new_at.key("type"));
        }
    }

    fn compare_defaults(
        &mut self,
        before: Option<&Value>,
        after: Option<&Value>,
        name: &str,
        old_at: &SchemaPath,
        new_at: &SchemaPath,
    ) {
        let (kind, detail) = match (before, after) {
            (None, Some(after)) => (AvroChange::FieldDefaultAdded, format!("default {after}")),
            (Some(before), None) => (AvroChange::FieldDefaultRemoved, format!("default was {before}")),
            (Some(before), Some(after)) if before != after => {
                (AvroChange::FieldDefaultChanged, format!("{before} to {after}"))
            }
            _ => return,
        };
        self.record(kind, name, Some(old_at), Some(new_at), detail);
    }

    fn compare_properties(&mut self, old: NodeId, new: NodeId, old_path: &SchemaPath, new_path: &SchemaPath) {
        let (before, after) = (self.old.types.properties(old), self.new.types.properties(new));
        if before != after {
            let changed: Vec<&String> = before
                .keys()
                .chain(after.keys())
                .filter(|key| before.get(*key) != after.get(*key))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let names: Vec<String> = changed.iter().map(|key| format!("`{key}`")).collect();
            let element = self.new.ty(new).kind();
            self.record(
                AvroChange::PropertiesChanged,
                element,
                Some(old_path),
                Some(new_path),
                names.join(", "),
            );
        }
    }
}

/// Two named types of the same kind whose simple names match, or one named
/// by an alias of the other.
fn same_name(a: &Type, b: &Type) -> bool {
    match (a.name(), b.name()) {
        (Some(a_name), Some(b_name)) if a.kind() == b.kind() => {
            a_name.simple() == b_name.simple()
                || a_name.aliases.contains(&b_name.full)
                || b_name.aliases.contains(&a_name.full)
        }
        _ => false,
    }
}

/// Avro's promotions, by primitive name: data of `writer` read as `reader`.
fn promotes(writer: &str, reader: &str) -> bool {
    matches!(
        (writer, reader),
        ("int", "long" | "float" | "double")
            | ("long", "float" | "double")
            | ("float", "double")
            | ("string", "bytes")
            | ("bytes", "string")
    )
}

fn quoted_or_none(value: Option<&str>) -> String {
    value.map_or_else(|| "none".to_owned(), |value| format!("`{value}`"))
}

//! Avro schema histories made the way teams evolve schemas: a generated
//! first version, then edits applied one after another (add or remove a
//! field, add or drop a default, promote or demote a primitive, rename with
//! an alias, make a field nullable, add or remove an enum symbol or a union
//! branch, resize a fixed type, rename a named type with or without an
//! alias, replace a type outright).
//!
//! Edits carry indices, not names, and each picks its target modulo what
//! the schema holds at that point, so every edit applies to every schema
//! and shrinking keeps histories valid. An edit that finds nothing to act
//! on (a promotion of a record, say) leaves the schema as it is.

use proptest::prelude::*;
use proptest::sample::Index;

use super::avro_gen::{
    FIELD_NAMES, FieldShape, SYMBOLS, Shape, TypeNames, named_types, root_shape, root_text_named, shape,
};

/// One version of a history: its shape, and the named types renamed so far.
#[derive(Debug, Clone)]
pub struct Version {
    /// The schema's structure.
    pub shape: Shape,
    /// Named types that no longer have their position's name.
    pub names: TypeNames,
}

impl Version {
    /// The schema as Avro JSON text.
    pub fn text(&self) -> String {
        root_text_named(&self.shape, &self.names)
    }
}

/// One change to a schema. `record` picks a record of the schema (in
/// pre-order, the root first) and `field` one of its fields.
#[derive(Debug, Clone)]
pub enum Edit {
    /// A new field, with or without a default.
    AddField {
        record: Index,
        name: Index,
        shape: Shape,
        default: bool,
    },
    /// A field removed.
    RemoveField { record: Index, field: Index },
    /// A default added where there was none, or removed.
    ToggleDefault { record: Index, field: Index },
    /// A primitive widened along one of Avro's promotions.
    Promote { record: Index, field: Index, to: Index },
    /// A primitive narrowed: a promotion undone.
    Demote { record: Index, field: Index, to: Index },
    /// A field's type replaced by an unrelated one.
    ChangeType { record: Index, field: Index, shape: Shape },
    /// A field renamed, keeping its old name as an alias.
    Rename { record: Index, field: Index, name: Index },
    /// `T` becomes `["null", T]`, or `["null", T]` becomes `T`.
    ToggleNullable { record: Index, field: Index },
    /// A symbol added to an enum in the field, or removed when it is there.
    ToggleSymbol { record: Index, field: Index, symbol: Index },
    /// A primitive branch added to a union in the field, or removed when it is there.
    ToggleBranch { record: Index, field: Index, branch: Index },
    /// A fixed type in the field given another size.
    ResizeFixed { record: Index, field: Index },
    /// A named type (record, enum or fixed; the root too) renamed, with or
    /// without its old name as an alias.
    RenameType { target: Index, alias: bool },
}

/// Avro's promotions: what a writer's type may be read as.
const PROMOTIONS: [(&str, &[&str]); 5] = [
    ("int", &["long", "float", "double"]),
    ("long", &["float", "double"]),
    ("float", &["double"]),
    ("string", &["bytes"]),
    ("bytes", &["string"]),
];

/// Branches an edit may add to or remove from a union.
const BRANCHES: [&str; 5] = ["null", "int", "long", "string", "boolean"];

/// One edit, weighted towards the changes teams make most.
pub fn edit() -> impl Strategy<Value = Edit> {
    let at = || (any::<Index>(), any::<Index>());
    prop_oneof![
        3 => (any::<Index>(), any::<Index>(), shape(), any::<bool>())
            .prop_map(|(record, name, shape, default)| Edit::AddField { record, name, shape, default }),
        2 => at().prop_map(|(record, field)| Edit::RemoveField { record, field }),
        2 => at().prop_map(|(record, field)| Edit::ToggleDefault { record, field }),
        2 => (at(), any::<Index>()).prop_map(|((record, field), to)| Edit::Promote { record, field, to }),
        1 => (at(), any::<Index>()).prop_map(|((record, field), to)| Edit::Demote { record, field, to }),
        1 => (at(), shape()).prop_map(|((record, field), shape)| Edit::ChangeType { record, field, shape }),
        2 => (at(), any::<Index>()).prop_map(|((record, field), name)| Edit::Rename { record, field, name }),
        2 => at().prop_map(|(record, field)| Edit::ToggleNullable { record, field }),
        1 => (at(), any::<Index>()).prop_map(|((record, field), symbol)| Edit::ToggleSymbol { record, field, symbol }),
        1 => (at(), any::<Index>()).prop_map(|((record, field), branch)| Edit::ToggleBranch { record, field, branch }),
        1 => at().prop_map(|(record, field)| Edit::ResizeFixed { record, field }),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(target, alias)| Edit::RenameType { target, alias }),
    ]
}

/// A history of 2 to 4 versions, oldest first, each made from the one
/// before by one or two edits.
pub fn history() -> impl Strategy<Value = Vec<Version>> {
    (
        root_shape(),
        proptest::collection::vec(proptest::collection::vec(edit(), 1..=2), 1..=3),
    )
        .prop_map(|(first, steps)| {
            let mut versions = vec![Version {
                shape: first,
                names: TypeNames::new(),
            }];
            for edits in steps {
                let mut next = versions.last().expect("the first version").clone();
                for edit in &edits {
                    apply(&mut next, edit);
                }
                versions.push(next);
            }
            versions
        })
}

/// Applies `edit` to `version`.
pub fn apply(version: &mut Version, edit: &Edit) {
    let record = match edit {
        Edit::RenameType { target, alias } => return rename_type(version, *target, *alias),
        Edit::AddField { record, .. }
        | Edit::RemoveField { record, .. }
        | Edit::ToggleDefault { record, .. }
        | Edit::Promote { record, .. }
        | Edit::Demote { record, .. }
        | Edit::ChangeType { record, .. }
        | Edit::Rename { record, .. }
        | Edit::ToggleNullable { record, .. }
        | Edit::ToggleSymbol { record, .. }
        | Edit::ToggleBranch { record, .. }
        | Edit::ResizeFixed { record, .. } => record,
    };
    let count = count_records(&version.shape);
    let mut target = record.index(count);
    if let Some(fields) = nth_record(&mut version.shape, &mut target) {
        edit_record(fields, edit);
    }
}

/// Renames the `target`-th named type, keeping its old name as an alias when `alias`.
fn rename_type(version: &mut Version, target: Index, alias: bool) {
    let mut named = Vec::new();
    named_types(&version.shape, "R", &mut named);
    let position = named[target.index(named.len())].clone();
    let (current, aliases) = version
        .names
        .entry(position.clone())
        .or_insert_with(|| (position, Vec::new()));
    // Position names join single-letter field names with `_`, so a trailing
    // `x` never makes another type's name.
    let renamed = format!("{current}x");
    if alias {
        aliases.push(std::mem::replace(current, renamed));
    } else {
        *current = renamed;
    }
}

fn count_records(shape: &Shape) -> usize {
    match shape {
        Shape::Record(fields) => 1 + fields.iter().map(|field| count_records(&field.shape)).sum::<usize>(),
        Shape::Array(inner) | Shape::Map(inner) => count_records(inner),
        Shape::Union(branches) => branches.iter().map(count_records).sum(),
        _ => 0,
    }
}

/// The fields of the `target`-th record in pre-order; `target` counts down.
fn nth_record<'a>(shape: &'a mut Shape, target: &mut usize) -> Option<&'a mut Vec<FieldShape>> {
    match shape {
        Shape::Record(fields) => {
            if *target == 0 {
                return Some(fields);
            }
            *target -= 1;
            fields.iter_mut().find_map(|field| nth_record(&mut field.shape, target))
        }
        Shape::Array(inner) | Shape::Map(inner) => nth_record(inner, target),
        Shape::Union(branches) => branches.iter_mut().find_map(|branch| nth_record(branch, target)),
        _ => None,
    }
}

/// Names a new field or a rename may take: neither a field's name nor an alias.
fn free_names(fields: &[FieldShape]) -> Vec<usize> {
    (0..FIELD_NAMES.len())
        .filter(|name| {
            fields
                .iter()
                .all(|field| field.name != *name && !field.aliases.contains(name))
        })
        .collect()
}

fn edit_record(fields: &mut Vec<FieldShape>, edit: &Edit) {
    if let Edit::AddField {
        name, shape, default, ..
    } = edit
    {
        let free = free_names(fields);
        if !free.is_empty() {
            fields.push(FieldShape {
                name: free[name.index(free.len())],
                shape: shape.clone(),
                default: *default,
                aliases: Vec::new(),
            });
        }
        return;
    }
    if fields.is_empty() {
        return;
    }
    let chosen = match edit {
        Edit::RemoveField { field, .. }
        | Edit::ToggleDefault { field, .. }
        | Edit::Promote { field, .. }
        | Edit::Demote { field, .. }
        | Edit::ChangeType { field, .. }
        | Edit::Rename { field, .. }
        | Edit::ToggleNullable { field, .. }
        | Edit::ToggleSymbol { field, .. }
        | Edit::ToggleBranch { field, .. }
        | Edit::ResizeFixed { field, .. } => field.index(fields.len()),
        Edit::AddField { .. } | Edit::RenameType { .. } => unreachable!("handled above"),
    };
    match edit {
        Edit::RemoveField { .. } => {
            fields.remove(chosen);
        }
        Edit::ToggleDefault { .. } => fields[chosen].default = !fields[chosen].default,
        Edit::Promote { to, .. } => {
            let promotable = |shape: &Shape| promotions(shape).is_some();
            if let Some(at) = first_from(fields, chosen, promotable)
                && let Some(targets) = promotions(&fields[at].shape)
            {
                fields[at].shape = Shape::Primitive(targets[to.index(targets.len())]);
            }
        }
        Edit::Demote { to, .. } => {
            if let Some(at) = first_from(fields, chosen, |shape| !demotions(shape).is_empty()) {
                let sources = demotions(&fields[at].shape);
                fields[at].shape = Shape::Primitive(sources[to.index(sources.len())]);
            }
        }
        Edit::ChangeType { shape, .. } => fields[chosen].shape = shape.clone(),
        Edit::Rename { name, .. } => rename(fields, chosen, *name),
        Edit::ToggleNullable { .. } => toggle_nullable(&mut fields[chosen].shape),
        Edit::ToggleSymbol { symbol, .. } => {
            let at = first_from(fields, chosen, has_enum).unwrap_or(chosen);
            if let Some(symbols) = first_enum(&mut fields[at].shape) {
                let symbol = symbol.index(SYMBOLS.len());
                match symbols.iter().position(|present| *present == symbol) {
                    Some(at) if symbols.len() > 1 => {
                        symbols.remove(at);
                    }
                    Some(_) => {}
                    None => symbols.push(symbol),
                }
            }
        }
        Edit::ToggleBranch { branch, .. } => {
            let at = first_from(fields, chosen, |shape| matches!(shape, Shape::Union(_))).unwrap_or(chosen);
            if let Shape::Union(branches) = &mut fields[at].shape {
                let branch = BRANCHES[branch.index(BRANCHES.len())];
                match branches
                    .iter()
                    .position(|present| matches!(present, Shape::Primitive(name) if *name == branch))
                {
                    Some(at) if branches.len() > 1 => {
                        branches.remove(at);
                    }
                    Some(_) => {}
                    None => branches.push(Shape::Primitive(branch)),
                }
            }
        }
        Edit::ResizeFixed { .. } => {
            let at = first_from(fields, chosen, has_fixed).unwrap_or(chosen);
            if let Some(size) = first_fixed(&mut fields[at].shape) {
                *size = if *size == 1 { 2 } else { 1 };
            }
        }
        Edit::AddField { .. } | Edit::RenameType { .. } => unreachable!("handled above"),
    }
}

/// The first field, from `start` on and wrapping round, whose type satisfies `wanted`.
fn first_from(fields: &[FieldShape], start: usize, wanted: impl Fn(&Shape) -> bool) -> Option<usize> {
    (0..fields.len())
        .map(|offset| (start + offset) % fields.len())
        .find(|at| wanted(&fields[*at].shape))
}

/// The types a primitive may be promoted to, if any.
fn promotions(shape: &Shape) -> Option<&'static [&'static str]> {
    let Shape::Primitive(from) = shape else { return None };
    PROMOTIONS
        .iter()
        .find(|(name, _)| name == from)
        .map(|(_, targets)| *targets)
}

/// The types that promote to this primitive.
fn demotions(shape: &Shape) -> Vec<&'static str> {
    let Shape::Primitive(to) = shape else { return Vec::new() };
    PROMOTIONS
        .iter()
        .filter(|(_, targets)| targets.contains(to))
        .map(|(source, _)| *source)
        .collect()
}

fn has_enum(shape: &Shape) -> bool {
    match shape {
        Shape::Enum { .. } => true,
        Shape::Array(inner) | Shape::Map(inner) => has_enum(inner),
        Shape::Union(branches) => branches.iter().any(has_enum),
        _ => false,
    }
}

/// Renames a field whose type holds no named type (a named type inside
/// takes its name from the field's, so the rename would rename it too),
/// keeping the old name as an alias.
fn rename(fields: &mut [FieldShape], chosen: usize, name: Index) {
    if has_named_type(&fields[chosen].shape) {
        return;
    }
    let free = free_names(fields);
    if free.is_empty() {
        return;
    }
    let field = &mut fields[chosen];
    field.aliases.push(field.name);
    field.name = free[name.index(free.len())];
}

fn has_named_type(shape: &Shape) -> bool {
    match shape {
        Shape::Record(_) | Shape::Enum { .. } | Shape::Fixed(_) => true,
        Shape::Array(inner) | Shape::Map(inner) => has_named_type(inner),
        Shape::Union(branches) => branches.iter().any(has_named_type),
        Shape::Primitive(_) => false,
    }
}

/// `T` to `["null", T]`; `["null", T]` back to `T`. Other unions and
/// `null` itself stay as they are.
fn toggle_nullable(shape: &mut Shape) {
    match shape {
        Shape::Union(branches) => {
            if branches.len() == 2 && matches!(branches[0], Shape::Primitive("null")) {
                *shape = branches.remove(1);
            }
        }
        Shape::Primitive("null") => {}
        other => {
            let inner = std::mem::replace(other, Shape::Primitive("null"));
            *other = Shape::Union(vec![Shape::Primitive("null"), inner]);
        }
    }
}

fn has_fixed(shape: &Shape) -> bool {
    match shape {
        Shape::Fixed(_) => true,
        Shape::Array(inner) | Shape::Map(inner) => has_fixed(inner),
        Shape::Union(branches) => branches.iter().any(has_fixed),
        _ => false,
    }
}

/// The size of the first fixed type in `shape`, looking through collections and unions.
fn first_fixed(shape: &mut Shape) -> Option<&mut u8> {
    match shape {
        Shape::Fixed(size) => Some(size),
        Shape::Array(inner) | Shape::Map(inner) => first_fixed(inner),
        Shape::Union(branches) => branches.iter_mut().find_map(first_fixed),
        _ => None,
    }
}

/// The symbols of the first enum in `shape`, looking through collections and unions.
fn first_enum(shape: &mut Shape) -> Option<&mut Vec<usize>> {
    match shape {
        Shape::Enum { symbols, .. } => Some(symbols),
        Shape::Array(inner) | Shape::Map(inner) => first_enum(inner),
        Shape::Union(branches) => branches.iter_mut().find_map(first_enum),
        _ => None,
    }
}

//! Messages: what a breaking difference means, in a sentence naming the
//! content model in plain words and which readers break.

use super::Kind;
use crate::compat::sides::Sides;
use crate::compat::{SchemaPath, Segment};

/// The last key of a path: the property or keyword a change is about.
fn last_name(path: &SchemaPath) -> String {
    match path.segments().last() {
        Some(Segment::Key(key)) => key.clone(),
        Some(Segment::Index(index)) => index.to_string(),
        None => "/".to_owned(),
    }
}

/// `at /p` with, when the path lies inside a property, which one:
/// "of property `email` (at /properties/email/type)".
fn place(path: &SchemaPath) -> String {
    let segments = path.segments();
    let property = segments.windows(2).rev().find_map(|pair| match pair {
        [Segment::Key(keyword), Segment::Key(name)] if keyword == "properties" => Some(name.clone()),
        _ => None,
    });
    match property {
        Some(name) => format!("of property `{name}` (at {path})"),
        None => format!("at {path}"),
    }
}

/// What changed at `path`, in a sentence, without the consequence.
pub(crate) fn explain(kind: Kind, path: &SchemaPath, sides: &Sides) -> String {
    let (writer, reader) = (sides.writer(), sides.reader());
    let name = last_name(path);
    match kind {
        Kind::OptionalPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyAddedToOpenContentModel
        | Kind::RequiredPropertyWithDefaultAddedToOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {reader} but not by {writer}, whose object is open \
             (additional properties allowed), so data written with {writer} may already carry a `{name}` of \
             another type; close the object in {writer} (`additionalProperties: false`) or leave the property out"
        ),
        Kind::RequiredPropertyAddedToUnopenContentModel => format!(
            "property `{name}` (at {path}) is required by {reader} without a default, but {writer}'s object is \
             closed or partially open and does not declare it, so its data lacks `{name}`"
        ),
        Kind::PropertyRemovedFromClosedContentModel => format!(
            "property `{name}` (at {path}) is declared by {writer} but not by {reader}, whose object is closed \
             (`additionalProperties: false`), so data carrying `{name}` is refused"
        ),
        Kind::PropertyAddedNotCoveredByPartiallyOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {reader} with a schema that does not accept what \
             {writer}'s partially open object (patternProperties or an additionalProperties schema) allowed under that name"
        ),
        Kind::PropertyRemovedNotCoveredByPartiallyOpenContentModel => format!(
            "property `{name}` (at {path}) is declared by {writer} but not by {reader}, whose partially open \
             object (patternProperties or an additionalProperties schema) does not accept its values"
        ),
        Kind::AdditionalPropertiesRemoved | Kind::UnevaluatedPropertiesRemoved => format!(
            "the object at {} is open in {writer} but closed in {reader}, so properties {writer} allowed \
             beyond the declared ones are refused; an open object can never be closed compatibly",
            parent(path)
        ),
        Kind::AdditionalPropertiesNarrowed | Kind::UnevaluatedPropertiesNarrowed => format!(
            "the object at {} allows any additional property in {writer} but only ones matching a schema in \
             {reader} (open to partially open)",
            parent(path)
        ),
        Kind::ItemAddedToOpenContentModel => format!(
            "item {name} (at {path}) is constrained by {reader}, but {writer}'s array allows any additional item there"
        ),
        Kind::ItemRemovedFromClosedContentModel => {
            format!("item {name} (at {path}) exists in {writer} but {reader}'s array allows no additional items")
        }
        Kind::ItemAddedNotCoveredByPartiallyOpenContentModel
        | Kind::ItemRemovedNotCoveredByPartiallyOpenContentModel => format!(
            "item {name} (at {path}) has a schema that does not accept what the other version's additional items allow"
        ),
        Kind::TypeChanged => format!("the type {} differs between {writer} and {reader}", place(path)),
        Kind::TypeNarrowed => format!(
            "the type {} was narrowed from number to integer in {reader}",
            place(path)
        ),
        Kind::SchemaAdded => format!("{reader} adds a schema at {path} where {writer} had none"),
        Kind::RequiredAttributeAdded => {
            format!("property `{name}` (at {path}) is required by {reader} without a default, but optional in {writer}")
        }
        Kind::EnumArrayNarrowed => format!("the enum {} lost values that {writer} allows", place(path)),
        Kind::EnumArrayChanged => format!(
            "the allowed values {} differ between {writer} and {reader}",
            place(path)
        ),
        Kind::CombinedTypeChanged => format!(
            "the combination at {path} changed between allOf, anyOf and oneOf in a way that rejects data {writer} allows"
        ),
        Kind::CombinedTypeSubschemasChanged => {
            format!("the subschemas at {path} cannot be matched one to one between {writer} and {reader}")
        }
        Kind::SumTypeNarrowed => format!("the anyOf/oneOf at {path} has fewer alternatives in {reader}"),
        Kind::ProductTypeExtended => format!("the allOf at {path} has more subschemas in {reader}"),
        Kind::NotTypeExtended => format!("the `not` at {path} forbids more in {reader} than in {writer}"),
        Kind::DependencyArrayAdded
        | Kind::DependencyArrayExtended
        | Kind::DependencyArrayChanged
        | Kind::DependencySchemaAdded => {
            format!("the dependency of `{name}` (at {path}) demands more in {reader} than in {writer}")
        }
        Kind::AdditionalItemsRemoved
        | Kind::AdditionalItemsNarrowed
        | Kind::UnevaluatedItemsRemoved
        | Kind::UnevaluatedItemsNarrowed => format!(
            "the array at {} allows fewer additional items in {reader} than in {writer}",
            parent(path)
        ),
        other => format!(
            "`{name}` {} is stricter in {reader} than in {writer} ({})",
            place(path),
            other.as_str().to_ascii_lowercase().replace('_', " ")
        ),
    }
}

fn parent(path: &SchemaPath) -> SchemaPath {
    let mut parent = SchemaPath::root();
    let segments = path.segments();
    for segment in &segments[..segments.len().saturating_sub(1)] {
        parent = match segment {
            Segment::Key(key) => parent.key(key),
            Segment::Index(index) => parent.index(*index),
        };
    }
    parent
}

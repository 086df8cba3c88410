//! Protobuf: parsing `.proto` text or base64 descriptors, the canonical
//! form, and compatibility as Confluent judges it: diff first, then judge.
//!
//! [`differences`] walks the original and the updated schema and records
//! every [`Change`] with Confluent's difference names and `#/Message/number`
//! places; [`is_compatible`] then judges each kind, in one exhaustive
//! `match`. BACKWARD diffs the earlier version (original) against the
//! candidate (update); FORWARD diffs the other way round.
//!
//! Scalars are compatible within the wire families Protobuf documents
//! (`int32`/`uint32`/`int64`/`uint64`/`bool` and enums; `sint32`/`sint64`;
//! `fixed32`/`sfixed32`; `fixed64`/`sfixed64`; `string`/`bytes`; `float`;
//! `double`). A message type from an import is compared structurally with
//! the type of the same name on the other side; its changes are placed under
//! its name (`/GoogleHome/1`), and the field that uses it gets a
//! `FIELD_NAMED_TYPE_CHANGED` when any of them breaks.
//!
//! Where we knowingly differ from Confluent:
//! - We also record `SYNTAX_VERSION_CHANGED` (proto2 ↔ proto3), judged
//!   compatible because the wire format is the same; Confluent records nothing.
//! - Two imports are skipped when their texts are identical; Confluent skips
//!   them when they name the same subject and version. An import whose text
//!   changed between two versions is compared either way.
//! - Custom (extension) options are part of the canonical form (so of a
//!   schema's identity), as Confluent keeps them in the schema text; like
//!   Confluent's diff, compatibility ignores them.

mod bundled;
pub mod cache;
mod canonical;
mod custom_options;
mod diff;
mod imports;
mod model;
mod nesting;
mod parse;
pub mod render;
mod unresolved_options;
mod validate;

use std::fmt;

use serde::Serialize;

pub use diff::{Change, Detail, differences};
pub use model::ProtobufSchema;
pub use parse::{ParseError, Position, looks_like_base64};

use super::{Direction, Incompatibility, SchemaPath};

/// The kinds of Protobuf difference, with Confluent's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Kind {
    /// The file's package changed.
    PackageChanged,
    /// The file's syntax changed (proto2 ↔ proto3). Not reported by Confluent.
    SyntaxVersionChanged,
    /// A message was added.
    MessageAdded,
    /// A message was removed.
    MessageRemoved,
    /// A message moved to another position among its siblings.
    MessageMoved,
    /// An enum was added.
    EnumAdded,
    /// An enum was removed.
    EnumRemoved,
    /// An enum constant number was added.
    EnumConstAdded,
    /// The name of an enum constant number changed.
    EnumConstChanged,
    /// An enum constant number was removed.
    EnumConstRemoved,
    /// A field number was added.
    FieldAdded,
    /// A field number was removed.
    FieldRemoved,
    /// The name of a field number changed.
    FieldNameChanged,
    /// A field changed between scalar (or enum), message and map.
    FieldKindChanged,
    /// A scalar field changed to a scalar of another wire family.
    FieldScalarKindChanged,
    /// A message-typed field now names another message, or its message changed incompatibly.
    FieldNamedTypeChanged,
    /// A numeric field changed label (`optional` ↔ `repeated`).
    FieldNumericLabelChanged,
    /// A string or bytes field changed label (`optional` ↔ `repeated`).
    FieldStringOrBytesLabelChanged,
    /// A `required` field was added.
    RequiredFieldAdded,
    /// A `required` field was removed.
    RequiredFieldRemoved,
    /// A oneof was added.
    OneofAdded,
    /// A oneof was removed.
    OneofRemoved,
    /// A field was added to a oneof.
    OneofFieldAdded,
    /// A field was removed from a oneof.
    OneofFieldRemoved,
    /// A field left its oneof for the top level of the message.
    OneofFieldMovedToTopLevel,
    /// Several fields that could all be set are now in one oneof.
    MultipleFieldsMovedToOneof,
    /// A field joined a oneof that holds fields it could be set together with.
    FieldMovedToExistingOneof,
}

impl Kind {
    /// Every kind, in Confluent's catalogue order (ours last).
    pub const ALL: [Kind; 27] = [
        Kind::PackageChanged,
        Kind::MessageAdded,
        Kind::MessageRemoved,
        Kind::MessageMoved,
        Kind::EnumAdded,
        Kind::EnumRemoved,
        Kind::EnumConstAdded,
        Kind::EnumConstChanged,
        Kind::EnumConstRemoved,
        Kind::FieldAdded,
        Kind::FieldRemoved,
        Kind::FieldNameChanged,
        Kind::FieldKindChanged,
        Kind::FieldScalarKindChanged,
        Kind::FieldNamedTypeChanged,
        Kind::FieldNumericLabelChanged,
        Kind::FieldStringOrBytesLabelChanged,
        Kind::RequiredFieldAdded,
        Kind::RequiredFieldRemoved,
        Kind::OneofAdded,
        Kind::OneofRemoved,
        Kind::OneofFieldAdded,
        Kind::OneofFieldRemoved,
        Kind::OneofFieldMovedToTopLevel,
        Kind::MultipleFieldsMovedToOneof,
        Kind::FieldMovedToExistingOneof,
        Kind::SyntaxVersionChanged,
    ];

    /// The kind with Confluent's name `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Confluent's name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PackageChanged => "PACKAGE_CHANGED",
            Kind::SyntaxVersionChanged => "SYNTAX_VERSION_CHANGED",
            Kind::MessageAdded => "MESSAGE_ADDED",
            Kind::MessageRemoved => "MESSAGE_REMOVED",
            Kind::MessageMoved => "MESSAGE_MOVED",
            Kind::EnumAdded => "ENUM_ADDED",
            Kind::EnumRemoved => "ENUM_REMOVED",
            Kind::EnumConstAdded => "ENUM_CONST_ADDED",
            Kind::EnumConstChanged => "ENUM_CONST_CHANGED",
            Kind::EnumConstRemoved => "ENUM_CONST_REMOVED",
            Kind::FieldAdded => "FIELD_ADDED",
            Kind::FieldRemoved => "FIELD_REMOVED",
            Kind::FieldNameChanged => "FIELD_NAME_CHANGED",
            Kind::FieldKindChanged => "FIELD_KIND_CHANGED",
            Kind::FieldScalarKindChanged => "FIELD_SCALAR_KIND_CHANGED",
            Kind::FieldNamedTypeChanged => "FIELD_NAMED_TYPE_CHANGED",
            Kind::FieldNumericLabelChanged => "FIELD_NUMERIC_LABEL_CHANGED",
            Kind::FieldStringOrBytesLabelChanged => "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
            Kind::RequiredFieldAdded => "REQUIRED_FIELD_ADDED",
            Kind::RequiredFieldRemoved => "REQUIRED_FIELD_REMOVED",
            Kind::OneofAdded => "ONEOF_ADDED",
            Kind::OneofRemoved => "ONEOF_REMOVED",
            Kind::OneofFieldAdded => "ONEOF_FIELD_ADDED",
            Kind::OneofFieldRemoved => "ONEOF_FIELD_REMOVED",
            Kind::OneofFieldMovedToTopLevel => "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
            Kind::MultipleFieldsMovedToOneof => "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
            Kind::FieldMovedToExistingOneof => "FIELD_MOVED_TO_EXISTING_ONEOF",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether data keeps flowing across a change of this kind, from a writer
/// using the original schema to a reader using the updated one.
pub fn is_compatible(kind: Kind) -> bool {
    match kind {
        Kind::SyntaxVersionChanged
        | Kind::MessageAdded
        | Kind::MessageMoved
        | Kind::EnumAdded
        | Kind::EnumRemoved
        | Kind::EnumConstAdded
        | Kind::EnumConstChanged
        | Kind::EnumConstRemoved
        | Kind::FieldAdded
        | Kind::FieldRemoved
        | Kind::FieldNameChanged
        | Kind::FieldStringOrBytesLabelChanged
        | Kind::OneofAdded
        | Kind::OneofRemoved
        | Kind::OneofFieldAdded
        | Kind::OneofFieldMovedToTopLevel => true,
        Kind::PackageChanged
        | Kind::MessageRemoved
        | Kind::FieldKindChanged
        | Kind::FieldScalarKindChanged
        | Kind::FieldNamedTypeChanged
        | Kind::FieldNumericLabelChanged
        | Kind::RequiredFieldAdded
        | Kind::RequiredFieldRemoved
        | Kind::OneofFieldRemoved
        | Kind::MultipleFieldsMovedToOneof
        | Kind::FieldMovedToExistingOneof => false,
    }
}

/// Every incompatibility between `candidate` and the earlier version at
/// 1-based position `version`, in one `direction`.
pub(crate) fn check(
    candidate: &ProtobufSchema,
    earlier: &ProtobufSchema,
    direction: Direction,
    version: usize,
) -> Vec<Incompatibility> {
    let (original, update) = match direction {
        Direction::Backward => (earlier, candidate),
        Direction::Forward => (candidate, earlier),
    };
    differences(original, update)
        .into_iter()
        .filter(|change| !is_compatible(change.kind))
        .map(|change| Incompatibility {
            kind: super::Kind::Protobuf(change.kind),
            message: format!(
                "{}: {}",
                describe_for(&change, direction, version),
                consequence(change.kind, direction, version)
            ),
            path: change.path,
            version,
            directions: vec![direction],
        })
        .collect()
}

/// The change told from the earlier version to the candidate, whichever
/// way the diff ran: a FORWARD diff runs from the candidate to the earlier
/// version, so what it calls added the candidate removed, and so on.
fn describe_for(change: &Change, direction: Direction, version: usize) -> String {
    match direction {
        Direction::Backward => describe(change.kind, &change.path, &change.detail),
        Direction::Forward => {
            let detail = Detail {
                before: change.detail.after.clone(),
                after: change.detail.before.clone(),
                field: change.detail.field.clone(),
            };
            match change.kind {
                Kind::MultipleFieldsMovedToOneof | Kind::FieldMovedToExistingOneof => {
                    let (owner, last) = split_path(&change.path);
                    format!(
                        "oneof `{last}` of `{owner}` in version {version} holds fields that the new schema lets be set together"
                    )
                }
                kind => describe(reverse(kind), &change.path, &detail),
            }
        }
    }
}

/// The kind a change has when the diff runs the other way.
fn reverse(kind: Kind) -> Kind {
    match kind {
        Kind::MessageAdded => Kind::MessageRemoved,
        Kind::MessageRemoved => Kind::MessageAdded,
        Kind::EnumAdded => Kind::EnumRemoved,
        Kind::EnumRemoved => Kind::EnumAdded,
        Kind::EnumConstAdded => Kind::EnumConstRemoved,
        Kind::EnumConstRemoved => Kind::EnumConstAdded,
        Kind::FieldAdded => Kind::FieldRemoved,
        Kind::FieldRemoved => Kind::FieldAdded,
        Kind::RequiredFieldAdded => Kind::RequiredFieldRemoved,
        Kind::RequiredFieldRemoved => Kind::RequiredFieldAdded,
        Kind::OneofAdded => Kind::OneofRemoved,
        Kind::OneofRemoved => Kind::OneofAdded,
        Kind::OneofFieldAdded => Kind::OneofFieldRemoved,
        Kind::OneofFieldRemoved => Kind::OneofFieldAdded,
        other => other,
    }
}

/// What changed and where, in the old → new direction of the diff.
fn describe(kind: Kind, path: &SchemaPath, detail: &Detail) -> String {
    let before = detail.before.as_deref().unwrap_or("?");
    let after = detail.after.as_deref().unwrap_or("?");
    let (owner, last) = split_path(path);
    // "field 7 (`total`)" when the field's name is known.
    let about_a_field = matches!(
        kind,
        Kind::FieldKindChanged
            | Kind::FieldScalarKindChanged
            | Kind::FieldNamedTypeChanged
            | Kind::FieldNumericLabelChanged
            | Kind::FieldStringOrBytesLabelChanged
    );
    let last = match &detail.field {
        Some(name) if about_a_field => format!("{last} (`{name}`)"),
        _ => last,
    };
    match kind {
        Kind::PackageChanged => format!("the package changed from `{before}` to `{after}`"),
        Kind::SyntaxVersionChanged => format!("the syntax changed from `{before}` to `{after}`"),
        Kind::MessageAdded => format!("message `{}` was added", dotted(path)),
        Kind::MessageRemoved => format!("message `{}` was removed", dotted(path)),
        Kind::MessageMoved => format!("message `{}` moved from position {before} to {after}", dotted(path)),
        Kind::EnumAdded => format!("enum `{}` was added", dotted(path)),
        Kind::EnumRemoved => format!("enum `{}` was removed", dotted(path)),
        Kind::EnumConstAdded => format!("value {last} (`{after}`) was added to enum `{owner}`"),
        Kind::EnumConstChanged => format!("value {last} of enum `{owner}` was renamed from `{before}` to `{after}`"),
        Kind::EnumConstRemoved => format!("value {last} (`{before}`) was removed from enum `{owner}`"),
        Kind::FieldAdded => format!("field {last} (`{after}`) was added to `{owner}`"),
        Kind::FieldRemoved => format!("field {last} (`{before}`) was removed from `{owner}`"),
        Kind::FieldNameChanged => format!("field {last} of `{owner}` was renamed from `{before}` to `{after}`"),
        Kind::FieldKindChanged | Kind::FieldScalarKindChanged => {
            format!("field {last} of `{owner}` changed from `{before}` to `{after}`")
        }
        Kind::FieldNamedTypeChanged => {
            if detail.before.is_none() || detail.after.is_none() {
                let name = detail.after.as_deref().or(detail.before.as_deref()).unwrap_or("?");
                format!("field {last} of `{owner}` uses `{name}`, whose definition changed incompatibly")
            } else {
                format!("field {last} of `{owner}` changed from message `{before}` to `{after}`")
            }
        }
        Kind::FieldNumericLabelChanged | Kind::FieldStringOrBytesLabelChanged => {
            format!("field {last} of `{owner}` changed from `{before}` to `{after}`")
        }
        Kind::RequiredFieldAdded => format!("required field {last} (`{after}`) was added to `{owner}`"),
        Kind::RequiredFieldRemoved => format!("required field {last} (`{before}`) was removed from `{owner}`"),
        Kind::OneofAdded => format!("oneof `{last}` was added to `{owner}`"),
        Kind::OneofRemoved => format!("oneof `{last}` was removed from `{owner}`"),
        Kind::OneofFieldAdded => format!("field {last} (`{after}`) was added to oneof `{owner}`"),
        Kind::OneofFieldRemoved => format!("field {last} (`{before}`) was removed from oneof `{owner}`"),
        Kind::OneofFieldMovedToTopLevel => format!("field {last} of `{owner}` left oneof `{before}`"),
        Kind::MultipleFieldsMovedToOneof => {
            format!("several fields of `{owner}` that could be set together were moved into the new oneof `{last}`")
        }
        Kind::FieldMovedToExistingOneof => {
            format!("oneof `{last}` of `{owner}` now holds fields that could be set together before")
        }
    }
}

/// Who breaks, and why, for an incompatible kind.
fn consequence(kind: Kind, direction: Direction, version: usize) -> String {
    let readers = match direction {
        Direction::Backward => {
            format!("consumers using the new schema cannot read records written with version {version}")
        }
        Direction::Forward => {
            format!("consumers still using version {version} cannot read records written with the new schema")
        }
    };
    let why = match kind {
        Kind::FieldScalarKindChanged | Kind::FieldKindChanged | Kind::FieldNumericLabelChanged => {
            "existing bytes on the wire cannot be read as the new type"
        }
        Kind::FieldNamedTypeChanged => "the message on the wire is not the one the reader expects",
        Kind::PackageChanged => "every message's full name changes",
        Kind::MessageRemoved => "a message that data may use no longer exists",
        Kind::RequiredFieldAdded => "records without the field fail to parse",
        Kind::RequiredFieldRemoved => "readers of the old schema require the field",
        Kind::OneofFieldRemoved => "a value set in that case of the oneof would be lost",
        Kind::MultipleFieldsMovedToOneof | Kind::FieldMovedToExistingOneof => {
            "a record with more than one of them set would silently keep only one"
        }
        _ => "the change loses data",
    };
    format!("{why}; {readers}")
}

/// (the message or oneof the last step belongs to, the last step).
fn split_path(path: &SchemaPath) -> (String, String) {
    let text = path.to_string();
    let mut parts: Vec<&str> = text.trim_start_matches('/').split('/').collect();
    let last = parts.pop().unwrap_or_default().to_owned();
    (parts.join("."), last)
}

fn dotted(path: &SchemaPath) -> String {
    path.to_string().trim_start_matches('/').replace('/', ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_confluent_name() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        assert_eq!(Kind::from_name("NOT_A_KIND"), None);
    }

    #[test]
    fn the_table_accepts_exactly_confluents_compatible_changes_and_ours() {
        let accepted: Vec<&str> = Kind::ALL
            .into_iter()
            .filter(|kind| is_compatible(*kind))
            .map(Kind::as_str)
            .collect();
        assert_eq!(
            accepted,
            [
                "MESSAGE_ADDED",
                "MESSAGE_MOVED",
                "ENUM_ADDED",
                "ENUM_REMOVED",
                "ENUM_CONST_ADDED",
                "ENUM_CONST_CHANGED",
                "ENUM_CONST_REMOVED",
                "FIELD_ADDED",
                "FIELD_REMOVED",
                "FIELD_NAME_CHANGED",
                "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
                "ONEOF_ADDED",
                "ONEOF_REMOVED",
                "ONEOF_FIELD_ADDED",
                "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
                "SYNTAX_VERSION_CHANGED",
            ]
        );
    }

    #[test]
    fn a_forward_description_tells_the_change_from_old_to_new() {
        let change = Change {
            kind: Kind::FieldScalarKindChanged,
            path: SchemaPath::root().key("Order").index(7),
            detail: Detail {
                before: Some("string".to_owned()),
                after: Some("int32".to_owned()),
                field: Some("total".to_owned()),
            },
        };
        assert_eq!(
            describe_for(&change, Direction::Forward, 1),
            "field 7 (`total`) of `Order` changed from `int32` to `string`"
        );
    }
}

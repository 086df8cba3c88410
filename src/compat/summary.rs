//! A parsed schema's names, for rules that look inside a schema (a
//! platform policy's naming and documentation rules): the schema type, the
//! top-level name and namespace, the Protobuf package, the JSON `$id`, and
//! the Avro record fields with whether each has a `doc`. Read from the
//! parsed form, so no walk here recurses.

use serde::Serialize;

use super::ParsedSchema;
use super::avro::model::Type;

/// What a policy may ask of a schema's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SchemaSummary {
    /// The schema type as Confluent names it: `AVRO`, `JSON` or `PROTOBUF`.
    #[serde(rename = "type")]
    pub schema_type: &'static str,
    /// The top-level type's name without its namespace (Avro named types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The top-level Avro type's namespace (empty for the null namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Avro named types at the top: the top-level type when it is a
    /// record, enum or fixed, or the named branches of a top-level union
    /// (`["null", "com.acme.Order"]`). Empty for a primitive, an array, a
    /// map or a union of those: such a schema has no name to judge.
    #[serde(skip)]
    pub top_level_types: Vec<NamedType>,
    /// The Protobuf package (empty when the file declares none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The JSON Schema's root `$id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Every field of every Avro record the schema itself declares (not its references).
    pub fields: Vec<FieldSummary>,
}

/// An Avro record, enum or fixed type, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedType {
    /// The full name, `com.acme.Order`.
    pub full_name: String,
    /// The namespace, `com.acme` (empty for the null namespace).
    pub namespace: String,
}

/// One Avro record field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldSummary {
    /// The record's full name.
    pub record: String,
    /// The field's name.
    pub name: String,
    /// Whether the field has a non-empty `doc`.
    pub documented: bool,
}

impl ParsedSchema {
    /// The schema's names (see [`SchemaSummary`]).
    pub fn summary(&self) -> SchemaSummary {
        match self {
            ParsedSchema::Avro(schema) => {
                let types = &schema.types;
                let root = types.ty(schema.root).name();
                let named = |id: &usize| {
                    types.ty(*id).name().map(|name| NamedType {
                        full_name: name.full.clone(),
                        namespace: name.namespace().to_owned(),
                    })
                };
                let top_level_types = match types.ty(schema.root) {
                    Type::Union(branches) => branches.iter().filter_map(named).collect(),
                    _ => named(&schema.root).into_iter().collect(),
                };
                let mut fields = Vec::new();
                for id in schema.first_own_node..types.len() {
                    if let Type::Record(record) = types.ty(id) {
                        for (position, field) in record.fields.iter().enumerate() {
                            fields.push(FieldSummary {
                                record: record.name.full.clone(),
                                name: record.field_name(position).to_owned(),
                                documented: field.doc().is_some_and(|doc| !doc.trim().is_empty()),
                            });
                        }
                    }
                }
                SchemaSummary {
                    schema_type: "AVRO",
                    name: root.map(|name| name.simple().to_owned()),
                    namespace: root.map(|name| name.namespace().to_owned()),
                    top_level_types,
                    fields,
                    ..SchemaSummary::default()
                }
            }
            ParsedSchema::Protobuf(schema) => SchemaSummary {
                schema_type: "PROTOBUF",
                package: schema.files.get(schema.main).map(|file| file.package.clone()),
                ..SchemaSummary::default()
            },
            ParsedSchema::Json(schema) => SchemaSummary {
                schema_type: "JSON",
                id: schema.root_id(),
                ..SchemaSummary::default()
            },
        }
    }
}

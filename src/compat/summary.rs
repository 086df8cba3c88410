//! A parsed schema's names, for rules that look inside a schema (a
//! platform policy's naming and documentation rules): the top-level name and
//! namespace, the Protobuf package, the JSON `$id`, and the Avro record
//! fields with whether each has a `doc`. Read from the parsed form, so no
//! walk here recurses.

use serde::Serialize;

use super::ParsedSchema;
use super::avro::model::Type;

/// What a policy may ask of a schema's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SchemaSummary {
    /// The top-level type's name without its namespace (Avro named types).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The top-level Avro type's namespace (empty for the null namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Protobuf package (empty when the file declares none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// The JSON Schema's root `$id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Every field of every Avro record the schema itself declares (not its references).
    pub fields: Vec<FieldSummary>,
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
                    name: root.map(|name| name.simple().to_owned()),
                    namespace: root.map(|name| name.namespace().to_owned()),
                    fields,
                    ..SchemaSummary::default()
                }
            }
            ParsedSchema::Protobuf(schema) => SchemaSummary {
                package: schema.files.get(schema.main).map(|file| file.package.clone()),
                ..SchemaSummary::default()
            },
            ParsedSchema::Json(schema) => SchemaSummary {
                id: schema.root_id(),
                ..SchemaSummary::default()
            },
        }
    }
}

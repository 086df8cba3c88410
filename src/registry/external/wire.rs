//! The JSON a remote registry sends and receives, and its conversion into
//! the registry's domain types. Unknown fields are ignored.

use serde::Deserialize;

use crate::compat::{Format, Mode};
use crate::registry::contract::{Contract, ContractConfig, Metadata, RuleSet};
use crate::registry::{
    Error, NewSchema, RegisterOptions, RegistryMode, SchemaContent, SchemaId, SchemaReference, SubjectName, Version,
    VersionedSchema,
};

/// The body of a lookup, registration or compatibility check: `schemaType`
/// only for JSON and Protobuf, `references` only when there are some.
pub fn schema_body(schema: &NewSchema, options: RegisterOptions) -> serde_json::Value {
    let mut body = serde_json::json!({ "schema": schema.text });
    if schema.format != Format::Avro {
        body["schemaType"] = schema.format.as_str().into();
    }
    if !schema.references.is_empty() {
        body["references"] = serde_json::to_value(&schema.references).unwrap_or_default();
    }
    if let Some(metadata) = &schema.contract.metadata {
        body["metadata"] = serde_json::to_value(metadata).unwrap_or_default();
    }
    if let Some(rules) = &schema.contract.rule_set {
        body["ruleSet"] = serde_json::to_value(rules).unwrap_or_default();
    }
    if let Some(id) = options.id {
        body["id"] = id.get().into();
    }
    if let Some(version) = options.version {
        body["version"] = version.get().into();
    }
    body
}

/// A version of a subject (`GET /subjects/{s}/versions/{v}`, lookup).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaReply {
    subject: Option<String>,
    version: i64,
    id: i64,
    #[serde(default)]
    schema_type: Option<String>,
    schema: String,
    #[serde(default)]
    references: Vec<SchemaReference>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    rule_set: Option<RuleSet>,
    #[serde(default)]
    deleted: bool,
}

impl SchemaReply {
    /// The version, for `subject` when the reply does not name it.
    ///
    /// # Errors
    /// [`Error::Remote`] when a number or type is out of range.
    pub fn into_versioned(self, subject: &SubjectName) -> Result<VersionedSchema, Error> {
        let subject = match self.subject {
            Some(name) => SubjectName::new(name).unwrap_or_else(|_| subject.clone()),
            None => subject.clone(),
        };
        Ok(VersionedSchema {
            subject,
            version: Version::new(self.version).map_err(|_| malformed(format!("version {}", self.version)))?,
            id: schema_id(self.id)?,
            format: format(self.schema_type.as_deref())?,
            text: self.schema,
            answer_text: None,
            references: self.references,
            contract: Contract {
                metadata: self.metadata.map(Box::new),
                rule_set: self.rule_set.map(Box::new),
            }
            .normalized(),
            deleted: self.deleted,
        })
    }
}

/// `GET /schemas/ids/{id}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentReply {
    #[serde(default)]
    schema_type: Option<String>,
    /// The schema text (or its serialized form when asked for).
    pub schema: String,
    #[serde(default)]
    references: Vec<SchemaReference>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    rule_set: Option<RuleSet>,
}

impl ContentReply {
    /// The content.
    ///
    /// # Errors
    /// [`Error::Remote`] for an unknown schema type.
    pub fn into_content(self) -> Result<SchemaContent, Error> {
        Ok(SchemaContent {
            format: format(self.schema_type.as_deref())?,
            text: self.schema,
            answer_text: None,
            references: self.references,
            contract: Contract {
                metadata: self.metadata.map(Box::new),
                rule_set: self.rule_set.map(Box::new),
            }
            .normalized(),
        })
    }
}

/// One entry of `GET /schemas/guids/{guid}/ids`.
#[derive(Debug, Deserialize)]
pub struct ContextIdReply {
    #[serde(default)]
    context: Option<String>,
    id: i64,
}

/// The ID a GUID has in the default context, from that listing.
pub fn default_context_id(ids: &[ContextIdReply]) -> Option<SchemaId> {
    ids.iter()
        .find(|entry| {
            entry
                .context
                .as_deref()
                .is_none_or(|context| context == "." || context.is_empty())
        })
        .and_then(|entry| SchemaId::new(entry.id))
}

/// `POST /subjects/{s}/versions`: `{"id"}`, and on newer servers the version.
#[derive(Debug, Deserialize)]
pub struct RegisterReply {
    /// The schema ID.
    pub id: i64,
    /// The version (Confluent 8 and later).
    #[serde(default)]
    pub version: Option<i64>,
}

/// `GET /config[/{s}]` (`compatibilityLevel`) or the echo of a PUT (`compatibility`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReply {
    #[serde(default)]
    compatibility_level: Option<String>,
    #[serde(default)]
    compatibility: Option<String>,
    /// The data-contract settings it carries (none from a registry without them).
    #[serde(flatten)]
    pub settings: ContractConfig,
}

impl ConfigReply {
    /// Whether it names a level at all (a subject with only data-contract
    /// settings has a configuration without one).
    pub fn has_level(&self) -> bool {
        self.compatibility_level.is_some() || self.compatibility.is_some()
    }

    /// The level it names.
    ///
    /// # Errors
    /// [`Error::Remote`] when it names none or an unknown one.
    pub fn level(&self) -> Result<Mode, Error> {
        let name = self
            .compatibility_level
            .as_deref()
            .or(self.compatibility.as_deref())
            .ok_or_else(|| malformed("a config without a compatibility level".to_owned()))?;
        name.parse::<Mode>()
            .map_err(|_| malformed(format!("compatibility level `{name}`")))
    }
}

/// `GET /mode[/{s}]`.
#[derive(Debug, Deserialize)]
pub struct ModeReply {
    mode: String,
}

impl ModeReply {
    /// The mode it names.
    ///
    /// # Errors
    /// [`Error::Remote`] for an unknown mode.
    pub fn mode(&self) -> Result<RegistryMode, Error> {
        self.mode
            .parse::<RegistryMode>()
            .map_err(|_| malformed(format!("mode `{}`", self.mode)))
    }
}

/// `POST /compatibility/...`.
#[derive(Debug, Deserialize)]
pub struct CheckReply {
    /// The verdict.
    pub is_compatible: bool,
    /// With `verbose=true` on servers that support it: one entry per problem.
    #[serde(default)]
    pub messages: Option<Vec<serde_json::Value>>,
}

/// `GET /schemas/ids/{id}/versions`.
#[derive(Debug, Deserialize)]
pub struct SubjectVersionReply {
    /// The subject.
    pub subject: SubjectName,
    /// The version.
    pub version: Version,
}

/// A schema ID from the wire.
///
/// # Errors
/// [`Error::Remote`] outside 1 to 2³¹−1.
pub fn schema_id(id: i64) -> Result<SchemaId, Error> {
    SchemaId::new(id).ok_or_else(|| malformed(format!("schema ID {id}")))
}

fn format(schema_type: Option<&str>) -> Result<Format, Error> {
    match schema_type {
        None => Ok(Format::Avro),
        Some(name) => name
            .parse::<Format>()
            .map_err(|_| malformed(format!("schema type `{name}`"))),
    }
}

fn malformed(what: String) -> Error {
    Error::Remote {
        status: 502,
        code: 502,
        message: format!("the registry answered with an unexpected {what}"),
    }
}

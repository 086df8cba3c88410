//! The JSON shapes of the Confluent REST API, and how requests are read:
//! bodies as bytes (any or no Content-Type), query parameters as JAX-RS reads them.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::ApiError;
use crate::compat::Format;
use crate::registry::contract::{Contract, Metadata, RuleSet};
use crate::registry::{
    NewSchema, Registry, SchemaContent, SchemaReference, SubjectName, Version, VersionSelector, VersionedSchema,
};

/// The media type of every response.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// A JSON response with the registry's media type.
pub fn json_response<T: Serialize>(value: &T) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// The body of a registration, lookup or compatibility request. Unknown
/// fields are accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({"schema": "{\"type\":\"record\",\"name\":\"User\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"}))]
#[serde(rename_all = "camelCase")]
pub struct SchemaRequest {
    /// The schema text; absent or empty is Confluent's "Empty schema".
    #[serde(default)]
    pub schema: Option<String>,
    /// AVRO when absent.
    #[serde(default)]
    pub schema_type: Option<String>,
    /// References to other subjects' versions; `null` is an empty list.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub references: Vec<ReferenceRequest>,
    /// IMPORT mode: the ID to use.
    #[serde(default)]
    pub id: Option<i64>,
    /// IMPORT mode: the version to use (-1 or absent: the next).
    #[serde(default)]
    pub version: Option<i64>,
    /// Data-contract metadata: tags, properties, sensitive names.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// Data-contract rules.
    #[serde(default)]
    pub rule_set: Option<RuleSet>,
}

/// A reference as a request names it: `version` -1 means the latest
/// version of the subject at the time of the request (Confluent's
/// `SchemaReference` with `version: -1`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReferenceRequest {
    /// The name the referring schema uses.
    pub name: String,
    /// The referenced subject.
    pub subject: String,
    /// The referenced version, or -1 for the latest.
    #[schema(minimum = -1, maximum = 2147483647)]
    pub version: i64,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

impl SchemaRequest {
    /// Reads a request body.
    ///
    /// # Errors
    /// 400 for malformed JSON.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("malformed request body: {error}")))
    }

    /// The schema it carries, its references resolved against `registry`
    /// (a version of -1 becomes the subject's latest).
    ///
    /// # Errors
    /// 42201 for an empty schema or an unknown schema type; 42210 for a rule
    /// set that is not valid; the registry's error when a referenced subject
    /// or version is invalid or missing.
    pub async fn new_schema(&self, registry: &dyn Registry) -> Result<NewSchema, ApiError> {
        if let Some(rules) = &self.rule_set {
            rules.validate().map_err(crate::registry::Error::from)?;
        }
        let text = match &self.schema {
            Some(text) if !text.is_empty() => text.clone(),
            _ => return Err(ApiError::empty_schema()),
        };
        let mut references = Vec::with_capacity(self.references.len());
        for reference in &self.references {
            let subject = SubjectName::new(reference.subject.clone())?;
            let version = match reference.version {
                -1 => {
                    registry
                        .version(&subject, VersionSelector::Latest, false)
                        .await?
                        .version
                }
                number => Version::new(number)?,
            };
            references.push(SchemaReference {
                name: reference.name.clone(),
                subject,
                version,
            });
        }
        let format = match &self.schema_type {
            None => Format::Avro,
            Some(name) => name.parse::<Format>().map_err(|error| {
                ApiError::from(crate::registry::Error::InvalidSchema {
                    reason: error.to_string(),
                })
            })?,
        };
        Ok(NewSchema {
            format,
            text,
            references,
            contract: Contract {
                metadata: self.metadata.clone().map(Box::new),
                rule_set: self.rule_set.clone().map(Box::new),
            }
            .normalized(),
        })
    }
}

/// A version of a subject, as `GET /subjects/{s}/versions/{v}` returns it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaResponse<'a> {
    /// The subject.
    subject: &'a str,
    /// The version number.
    #[schema(value_type = crate::registry::Version)]
    version: u32,
    /// The schema's global ID.
    #[schema(value_type = crate::registry::SchemaId)]
    id: u32,
    /// The schema type; absent for Avro.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = super::openapi::SchemaType, required = false)]
    schema_type: Option<&'static str>,
    /// The schemas it refers to; absent when none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    references: &'a [SchemaReference],
    /// The schema text.
    schema: &'a str,
    /// Data-contract metadata; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    /// Data-contract rules; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_set: Option<&'a RuleSet>,
    /// The schema's GUID, as Confluent computes it.
    #[schema(value_type = String, pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    guid: String,
    /// Present (true) only for a soft-deleted version (with `deleted=true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

impl<'a> From<&'a VersionedSchema> for SchemaResponse<'a> {
    fn from(schema: &'a VersionedSchema) -> Self {
        Self {
            subject: schema.subject.as_str(),
            version: schema.version.get(),
            id: schema.id.get(),
            schema_type: schema_type(schema.format),
            references: &schema.references,
            schema: &schema.text,
            metadata: schema.contract.metadata.as_deref(),
            rule_set: schema.contract.rule_set.as_deref(),
            guid: schema.guid().to_string(),
            deleted: schema.deleted,
        }
    }
}

/// The body of `GET /schemas/ids/{id}`, Confluent's `SchemaString`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaByIdResponse<'a> {
    /// With `subject`: the subject of the version found (that subject's own
    /// version when it holds the ID, else one in its context).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, required = false)]
    pub subject: Option<&'a str>,
    /// With `subject`: the number of the version found.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::registry::Version>, required = false)]
    pub version: Option<u32>,
    /// The schema text (with `format=serialized`, a Protobuf schema's base64 descriptor).
    pub schema: &'a str,
    /// The schema type; absent for Avro.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = super::openapi::SchemaType, required = false)]
    schema_type: Option<&'static str>,
    /// The schemas it refers to; absent when none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    references: &'a [SchemaReference],
    /// Data-contract metadata; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    /// Data-contract rules; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_set: Option<&'a RuleSet>,
    /// The schema's GUID, as Confluent computes it.
    #[schema(value_type = String, pattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
    guid: String,
    /// With `fetchMaxId=true`: the highest schema ID given so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::registry::SchemaId>, required = false)]
    pub max_id: Option<u32>,
    /// With `subject`: whether the version found is soft-deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub deleted: Option<bool>,
}

impl<'a> From<&'a SchemaContent> for SchemaByIdResponse<'a> {
    fn from(content: &'a SchemaContent) -> Self {
        Self {
            subject: None,
            version: None,
            max_id: None,
            deleted: None,
            schema: &content.text,
            schema_type: schema_type(content.format),
            references: &content.references,
            metadata: content.contract.metadata.as_deref(),
            rule_set: content.contract.rule_set.as_deref(),
            guid: content.guid().to_string(),
        }
    }
}

/// `schemaType` as responses carry it: omitted for Avro, as Confluent does.
pub fn schema_type(format: Format) -> Option<&'static str> {
    match format {
        Format::Avro => None,
        other => Some(other.as_str()),
    }
}

/// A request's query parameters.
#[derive(Debug, Default)]
pub struct QueryParams(HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|Query(params)| Self(params))
            .map_err(|error| ApiError::bad_request(format!("malformed query string: {error}")))
    }
}

impl QueryParams {
    /// A boolean flag as JAX-RS reads Confluent's `boolean` query
    /// parameters (`Boolean.valueOf`): `true` in any case is true; absent,
    /// empty and anything else (`1`, `yes`) is false. Never an error.
    ///
    /// # Errors
    /// None today; the `Result` keeps call sites unchanged.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        Ok(self.0.get(name).is_some_and(|value| value.eq_ignore_ascii_case("true")))
    }

    /// Whether the request has no query parameters at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A text parameter.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A whole-number parameter (`offset`, `limit`), read as JAX-RS reads
    /// Confluent's `int` query parameters (`Integer.valueOf`): empty is
    /// absent; text that is not a 32-bit integer matches no resource, so
    /// the answer is Jersey's plain 404.
    ///
    /// # Errors
    /// 404 when the value is not a 32-bit integer.
    pub fn number(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.0
            .get(name)
            .filter(|value| !value.trim().is_empty())
            .map(|value| {
                value.parse::<i32>().map(i64::from).map_err(|_| {
                    ApiError::plain(axum::http::StatusCode::NOT_FOUND, "HTTP 404 Not Found").with_detail(format!(
                        "query parameter `{name}` must be a whole number from -2147483648 to 2147483647, not `{value}`"
                    ))
                })
            })
            .transpose()
    }

    /// Applies `offset` and `limit` (0 or negative: all) to a listing.
    ///
    /// # Errors
    /// 404 when either is not a 32-bit integer (see [`QueryParams::number`]).
    pub fn page<T>(&self, items: Vec<T>) -> Result<Vec<T>, ApiError> {
        let offset = usize::try_from(self.number("offset")?.unwrap_or(0).max(0)).unwrap_or(0);
        let limit = self.number("limit")?.unwrap_or(-1);
        let items = items.into_iter().skip(offset);
        Ok(match usize::try_from(limit) {
            Ok(limit) if limit > 0 => items.take(limit).collect(),
            _ => items.collect(),
        })
    }
}

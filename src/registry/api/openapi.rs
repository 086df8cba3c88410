//! The OpenAPI 3.1 document of the REST API, served at `GET /openapi.json`.
//!
//! It is generated from the code: each handler in `mod.rs` carries a
//! `#[utoipa::path]` annotation (its path, parameters, body and every status
//! it answers), the wire types derive `ToSchema`, and [`ApiDoc`] gathers them.
//! This module adds what the handlers share, in one place ([`Conventions`]):
//! the media types every JSON body may have, the 401 every route answers once
//! credentials are configured, the 406 of content negotiation, and the
//! 408/413/415 every route with a body can answer before its handler runs. The bodies that handlers build with
//! `serde_json::json!` are described here by small structs of the same shape;
//! `tests/openapi_contract.rs` runs schemathesis against a live registry to
//! check that the answers match.

use std::sync::LazyLock;

use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, Ref, RefOr};
use utoipa::{IntoParams, Modify, OpenApi, PartialSchema, ToSchema};

use super::error::ErrorBody;
use super::wire::{CONTENT_TYPE, SchemaByIdResponse, SchemaRequest, SchemaResponse};
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, SubjectVersion, Version};

/// Where the document is served.
pub const PATH: &str = "/openapi.json";

/// The media types a JSON answer may have, as Confluent lists them: the
/// registry's own first (`negotiation.rs` picks one by `Accept`).
pub const JSON_MEDIA_TYPES: [&str; 3] = [CONTENT_TYPE, "application/vnd.schemaregistry+json", "application/json"];

/// The media types a request body may be sent as (`negotiation.rs`; a body
/// without `Content-Type` is read as JSON too): the JSON ones, and
/// `application/octet-stream`, as Confluent accepts them.
pub const REQUEST_MEDIA_TYPES: [&str; 4] = [
    CONTENT_TYPE,
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
];

/// The document, assembled from the annotations.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "schemaops registry",
        description = "The Confluent Schema Registry REST API as the embedded registry of schemaops \
                       (`schemaops registry`) serves it. Every error answer has the body \
                       `{\"error_code\": int, \"message\": string}`: `error_code` is Confluent's \
                       code (the HTTP status, or the status followed by two digits), `message` \
                       Confluent's exact text where it has a fixed one; schemaops' own explanation, \
                       when it has one, is in a third field, `detail`. A route that takes a body \
                       answers an empty one with 422 (code 422), as Confluent does. \
                       Every route is also served under `/contexts/{context}/` (Confluent's schema \
                       contexts): a subject there is put in that context (`payments` becomes \
                       `:.ctx:payments`), a bare `/config` or `/mode` names the context's own setting, and \
                       the `subject`/`subjectPrefix` query parameters are scoped the same way. \
                       Authentication is optional: once read or write credentials are configured, \
                       every route needs HTTP basic or bearer credentials and answers 401 (40101) \
                       without them. When writes are GitOps-only (`--rest-writes gitops-only`, the \
                       operator's default), every write but an admin credential's answers 403 \
                       (40301): subjects, versions, levels and modes change through Schema and \
                       SubjectConfig resources.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    paths(
        super::root,
        serve,
        super::schema_types,
        super::list_schemas,
        super::schema_by_id,
        super::raw_schema_by_id,
        super::subjects_of_id,
        super::versions_of_id,
        super::contracts::schema_by_guid,
        super::contracts::ids_of_guid,
        super::contracts::latest_with_metadata,
        super::list_subjects,
        super::lookup,
        super::delete_subject,
        super::list_versions,
        super::register,
        super::get_version,
        super::delete_version,
        super::raw_version,
        super::referenced_by,
        super::check_all,
        super::check_one,
        super::diff::diff_versions,
        super::diff::version_matrix,
        super::diff::draft_matrix,
        get_global_config,
        put_global_config,
        delete_global_config,
        super::config::get_config,
        super::config::put_config,
        super::config::delete_config,
        get_global_mode,
        put_global_mode,
        delete_global_mode,
        super::mode::get_mode,
        super::mode::put_mode,
        super::mode::delete_mode,
        super::contexts::list,
        super::contexts::delete,
        super::search::search,
    ),
    components(schemas(
        ErrorBody,
        SchemaRequest,
        SchemaResponse,
        SchemaByIdResponse,
        SchemaReference,
        SubjectName,
        SubjectVersion,
        Version,
        SchemaId,
        RegistryMode,
        CompatibilityLevel,
        SchemaType,
        VersionParam,
    )),
    modifiers(&Conventions),
    tags(
        (name = "schemas", description = "Schemas by global ID"),
        (name = "subjects", description = "Subjects and their versions"),
        (name = "compatibility", description = "Testing a schema against a subject's versions"),
        (name = "config", description = "Compatibility levels, global and per subject"),
        (name = "mode", description = "Registry and subject modes"),
        (name = "server", description = "The server itself"),
        (name = "search", description = "Search across subjects and schemas (our extension)"),
    )
)]
pub struct ApiDoc;

/// The document as JSON text, built once.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    ApiDoc::openapi()
        .to_json()
        .expect("the OpenAPI document serializes to JSON")
});

/// The document as JSON text.
pub fn document() -> &'static str {
    &DOCUMENT
}

/// Serves the document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "server",
    summary = "This document",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of this API", body = serde_json::Value,
         content_type = "application/json"),
    )
)]
pub(super) async fn serve() -> Response {
    let mut response = document().to_owned().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

// Descriptions of the statuses most routes share.

/// 400: a query string, path or JSON body that does not parse.
pub const BAD_REQUEST: &str = "400: a query string or path that does not decode, or a body that is not the JSON \
                               object described (or not valid in its charset)";
/// 404: a number query parameter that is not a 32-bit integer, which
/// JAX-RS answers as a resource not found.
pub const NOT_A_NUMBER: &str = "404: `offset` or `limit` is not a 32-bit integer (Jersey answers a query parameter \
                                it cannot convert as a resource not found)";
/// 500: the store failed; the details are in the registry's log.
pub const STORE_FAILED: &str = "50001: the store failed (details in the registry's log, never in the answer)";

// The bodies handlers build with `serde_json::json!`.

/// An empty JSON object.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// The ID a registration was given (or already had).
#[derive(Debug, Serialize, ToSchema)]
pub struct RegisteredId {
    /// The schema's global ID.
    pub id: SchemaId,
    /// The schema's GUID, as Confluent computes it.
    pub guid: String,
}

/// The verdict of a compatibility test.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompatibilityVerdict {
    /// Whether the schema is compatible under the subject's level.
    pub is_compatible: bool,
    /// With `verbose=true`: every incompatibility (`[version N] KIND at PATH: message`),
    /// or why the schema could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<String>>,
}

/// A configuration as `/config` answers it: the level, then the
/// data-contract settings that are set.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigBody {
    /// The level, as `GET` and `DELETE` name it; absent when a subject has
    /// settings but no level of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility_level: Option<CompatibilityLevel>,
    /// The level set, as `PUT` names it; absent when only settings were changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityLevel>,
    /// The data-contract settings.
    #[serde(flatten)]
    pub settings: ContractConfig,
}

/// A change of configuration: a level (`compatibilityLevel` is read when
/// `compatibility` is absent), data-contract settings, or both. A setting
/// left out keeps its value; `null` clears it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"compatibility": "FULL"}))]
pub struct ConfigUpdate {
    /// The level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<CompatibilityLevel>,
    /// The level, as `GET /config` spells the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility_level: Option<CompatibilityLevel>,
    /// The data-contract settings to change.
    #[serde(flatten)]
    pub settings: ConfigPatch,
}

/// A registry or subject mode.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"mode": "READWRITE"}))]
pub struct ModeBody {
    /// The mode; null clears a subject's mode, and answers a removal of a
    /// mode that was not set (recursive only).
    #[schema(required)]
    pub mode: Option<RegistryMode>,
}

// `compat::Mode` as the API spells it; the tests keep the two equal.
/// A compatibility level.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompatibilityLevel {
    /// The candidate reads the latest version's data.
    Backward,
    /// The candidate reads every version's data.
    BackwardTransitive,
    /// The latest version reads the candidate's data.
    Forward,
    /// Every version reads the candidate's data.
    ForwardTransitive,
    /// Backward and forward against the latest version.
    Full,
    /// Backward and forward against every version.
    FullTransitive,
    /// No check.
    None,
}

/// A schema language, as `GET /schemas/types` lists it and `schemaType` names it
/// (AVRO when absent; requests may use any case, and `JSONSCHEMA` or `PROTO`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum SchemaType {
    /// Apache Avro.
    Avro,
    /// JSON Schema.
    Json,
    /// Protocol Buffers.
    Protobuf,
}

// The registry's number and name types, with the bounds their constructors
// check (`SubjectName::new`, `Version::new`, `SchemaId::new`).

/// A schema from its JSON form.
fn schema_of(value: serde_json::Value) -> RefOr<Schema> {
    RefOr::T(serde_json::from_value(value).expect("a valid Schema Object"))
}

impl PartialSchema for SubjectName {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "string",
            "description": format!(
                "A subject name: any non-empty text without control characters, at most {} bytes of UTF-8 \
                 (checked where a name is written; a read of any other name finds nothing)",
                SubjectName::MAX_LEN
            ),
            "minLength": 1,
            "maxLength": SubjectName::MAX_LEN,
            "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
            "example": "orders-value",
        }))
    }
}

impl ToSchema for SubjectName {}

impl PartialSchema for Version {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "integer",
            "format": "int32",
            "description": "A version number of a subject",
            "minimum": 1,
            "maximum": i32::MAX,
            "example": 1,
        }))
    }
}

impl ToSchema for Version {}

impl PartialSchema for SchemaId {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "type": "integer",
            "format": "int32",
            "description": "A global schema ID",
            "minimum": 1,
            "maximum": i32::MAX,
            "example": 1,
        }))
    }
}

impl ToSchema for SchemaId {}

/// The `{version}` of a path: a version number, `-1` or `latest` (any case),
/// as `VersionSelector::from_str` reads it.
pub struct VersionParam;

impl PartialSchema for VersionParam {
    fn schema() -> RefOr<Schema> {
        schema_of(json!({
            "description": "A version number, or `latest` (any case) or -1 for the latest version",
            "anyOf": [
                {"type": "integer", "format": "int32", "minimum": 1, "maximum": i32::MAX},
                {"type": "integer", "enum": [-1]},
                {"type": "string", "enum": ["latest"]},
            ],
            "example": "latest",
        }))
    }
}

impl ToSchema for VersionParam {}

// Query parameters several routes share.

/// `offset` and `limit` of a listing.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// Items to skip (negative: none).
    pub offset: Option<i64>,
    /// Items to return at most (0 or negative: all).
    pub limit: Option<i64>,
}

/// `deleted`: also soft-deleted items.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Deleted {
    /// Include soft-deleted items (`true` or `false`, any case; empty means true).
    pub deleted: Option<bool>,
}

/// `deletedOnly` (or `deleted_only`): only soft-deleted items.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeletedOnly {
    /// Only soft-deleted items.
    #[param(rename = "deletedOnly")]
    pub deleted_only_camel: Option<bool>,
    /// Only soft-deleted items (the spelling older clients send).
    pub deleted_only: Option<bool>,
}

/// `subjectPrefix`: only subjects whose names start with it.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubjectPrefix {
    /// Only subjects whose names start with this text.
    #[param(rename = "subjectPrefix")]
    pub subject_prefix: Option<String>,
}

/// `format`: `serialized` asks for a Protobuf schema as a base64 `FileDescriptorProto`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SerializedFormat {
    /// `serialized` (any case): a Protobuf schema as its base64 serialized descriptor;
    /// other values and other schema types: the text.
    pub format: Option<String>,
}

/// `defaultToGlobal`: fall back to the global setting.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DefaultToGlobal {
    /// Answer the global setting when the subject has none of its own (instead of 404).
    #[param(rename = "defaultToGlobal")]
    pub default_to_global: Option<bool>,
}

// The global `/config` and `/mode` routes share their handlers with the
// per-subject ones; a path annotation names one path, so these stand in
// for the global routes in the document. They are never called.

#[utoipa::path(
    get,
    path = "/config",
    tag = "config",
    summary = "The global configuration: compatibility level and data-contract settings",
    params(DefaultToGlobal),
    responses(
        (status = 200, description = "The level (BACKWARD unless set)", body = ConfigBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn get_global_config() {}

#[utoipa::path(
    put,
    path = "/config",
    tag = "config",
    summary = "Change the global configuration",
    request_body = ConfigUpdate,
    responses(
        (status = 200, description = "The level set", body = ConfigBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 422, description = "42203: not a compatibility level (or neither a level nor a setting was \
                                      given), or one a SchemaPolicy forbids (the global level is judged against \
                                      every policy); 42210: a default or override rule set is not valid",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn put_global_config() {}

#[utoipa::path(
    delete,
    path = "/config",
    tag = "config",
    summary = "Reset the global compatibility level to the default (BACKWARD)",
    responses(
        (status = 200, description = "The level in force before", body = ConfigBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 422, description = "42203: a SchemaPolicy forbids BACKWARD, the level it resets to",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn delete_global_config() {}

#[utoipa::path(
    get,
    path = "/mode",
    tag = "mode",
    summary = "The global mode",
    params(DefaultToGlobal),
    responses(
        (status = 200, description = "The mode (READWRITE unless set)", body = ModeBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn get_global_mode() {}

#[utoipa::path(
    put,
    path = "/mode",
    tag = "mode",
    summary = "Set the global mode",
    params(("force" = Option<bool>, Query, description = "Allow IMPORT on a registry that holds versions")),
    request_body = ModeBody,
    responses(
        (status = 200, description = "The mode set", body = ModeBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 422, description = "42204: not a mode, or one a SchemaPolicy forbids (the global mode is \
                                      judged against every policy); 42205: IMPORT on a registry that holds \
                                      versions, without force=true", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn put_global_mode() {}

#[utoipa::path(
    delete,
    path = "/mode",
    tag = "mode",
    summary = "Reset the global mode to READWRITE",
    params(("recursive" = Option<bool>, Query, description = "Also remove every subject's mode")),
    responses(
        (status = 200, description = "The mode in force before", body = ModeBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 422, description = "42204: a SchemaPolicy forbids READWRITE, the mode it resets to",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
#[allow(dead_code)]
fn delete_global_mode() {}

/// What every operation shares, added after the annotations are read.
pub struct Conventions;

impl Modify for Conventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("basic", SecurityScheme::Http(Http::new(HttpAuthScheme::Basic)));
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        let error = |description: &str| {
            let mut response = ResponseBuilder::new().description(description).build();
            for media_type in JSON_MEDIA_TYPES {
                response.content.insert(
                    media_type.to_owned(),
                    RefOr::T(Content::new(Some(Ref::from_schema_name("ErrorBody")))),
                );
            }
            response
        };
        components.responses.insert(
            "Unauthorized".to_owned(),
            RefOr::T(error(
                "40101: credentials are configured and the request has none that allow it \
                 (a reader's credentials on a write count as none)",
            )),
        );
        components.responses.insert(
            "BodyTooLarge".to_owned(),
            RefOr::T(error(
                "42209: the request body is larger than the limit (`--max-body-bytes`, 8 MiB by default)",
            )),
        );
        components.responses.insert(
            "NotAcceptable".to_owned(),
            RefOr::T(error(
                "406: nothing the `Accept` header allows is on offer (the JSON media types listed)",
            )),
        );
        components.responses.insert(
            "UnsupportedMediaType".to_owned(),
            RefOr::T(error(
                "415: the body's `Content-Type` is none of the request media types listed",
            )),
        );
        components
            .responses
            .insert("NotANumber".to_owned(), RefOr::T(error(NOT_A_NUMBER)));
        components.responses.insert(
            "EmptyBody".to_owned(),
            RefOr::T(error(
                "422: the request has no body (Confluent's body parameters are `@NotNull`: code 422)",
            )),
        );
        components.responses.insert(
            "BodyTimeout".to_owned(),
            RefOr::T(error(
                "408: the request body took longer than `--body-timeout-seconds` to arrive",
            )),
        );
        components.responses.insert(
            "ChecksBusy".to_owned(),
            RefOr::T(error(
                "42901: every check slot stayed taken for `--check-queue-millis` (`--max-concurrent-checks` run at \
                 once); `Retry-After` says when to try again",
            )),
        );
        components.responses.insert(
            "CheckStopped".to_owned(),
            RefOr::T(error(
                "50301: the check was stopped because the registry is shutting down",
            )),
        );
        // No credentials, basic or bearer: authentication is optional.
        openapi.security = Some(vec![
            SecurityRequirement::default(),
            SecurityRequirement::new("basic", Vec::<String>::new()),
            SecurityRequirement::new("bearer", Vec::<String>::new()),
        ]);
        for (path, item) in &mut openapi.paths.paths {
            let operations = [
                (Method::GET, &mut item.get),
                (Method::PUT, &mut item.put),
                (Method::POST, &mut item.post),
                (Method::DELETE, &mut item.delete),
                (Method::PATCH, &mut item.patch),
                (Method::HEAD, &mut item.head),
                (Method::OPTIONS, &mut item.options),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                if super::admission::is_heavy(&method, path) {
                    let responses = &mut operation.responses.responses;
                    responses.insert("429".to_owned(), RefOr::Ref(Ref::from_response_name("ChecksBusy")));
                    responses.insert("503".to_owned(), RefOr::Ref(Ref::from_response_name("CheckStopped")));
                }
                if path != PATH {
                    json_media_types(operation);
                }
                let pages = operation
                    .parameters
                    .iter()
                    .flatten()
                    .any(|parameter| matches!(parameter, RefOr::T(parameter) if parameter.name == "offset"));
                let responses = &mut operation.responses.responses;
                if pages {
                    responses
                        .entry("404".to_owned())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name("NotANumber")));
                }
                responses.insert("401".to_owned(), RefOr::Ref(Ref::from_response_name("Unauthorized")));
                responses.insert("406".to_owned(), RefOr::Ref(Ref::from_response_name("NotAcceptable")));
                if operation.request_body.is_some() {
                    responses.insert("408".to_owned(), RefOr::Ref(Ref::from_response_name("BodyTimeout")));
                    responses.insert("413".to_owned(), RefOr::Ref(Ref::from_response_name("BodyTooLarge")));
                    responses
                        .entry("422".to_owned())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name("EmptyBody")));
                    responses.insert(
                        "415".to_owned(),
                        RefOr::Ref(Ref::from_response_name("UnsupportedMediaType")),
                    );
                }
            }
        }
    }
}

/// Offers every JSON body of `operation` under each of [`JSON_MEDIA_TYPES`],
/// or [`REQUEST_MEDIA_TYPES`] for a request body (the annotations say
/// `application/json`).
fn json_media_types(operation: &mut Operation) {
    if let Some(RefOr::T(body)) = &mut operation.request_body
        && let Some(json) = body.content.remove("application/json")
    {
        for media_type in REQUEST_MEDIA_TYPES {
            body.content.insert(media_type.to_owned(), json.clone());
        }
    }
    for response in operation.responses.responses.values_mut() {
        if let RefOr::T(response) = response
            && let Some(json) = response.content.shift_remove("application/json")
        {
            for media_type in JSON_MEDIA_TYPES {
                response.content.insert(media_type.to_owned(), json.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::*;
    use crate::compat::{Format, Mode};

    fn document() -> Value {
        serde_json::from_str(super::document()).expect("the document is JSON")
    }

    /// Every (method, path) the router registers, read from `router()`'s
    /// source: `.route("/path", get(..).post(..))`. A route added there
    /// without an annotation, or an annotation whose path or method is
    /// wrong, fails `every_route_of_the_router_is_in_the_document`.
    fn routes_in_router_source() -> BTreeSet<(String, String)> {
        let source = include_str!("mod.rs");
        let start = source.find("pub fn router(").expect("mod.rs defines router()");
        let end = start + source[start..].find("\n}\n").expect("router() ends");
        let body = &source[start..end];
        let mut routes = BTreeSet::new();
        for call in body.split(".route(").skip(1) {
            let path = call
                .trim_start()
                .strip_prefix('"')
                .and_then(|rest| rest.split('"').next())
                .expect("a route's path is a string literal");
            // The method router: up to the `)` that closes `.route(`.
            let mut depth = 1;
            let mut methods = String::new();
            for character in call.chars() {
                match character {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                methods.push(character);
            }
            let methods = methods.split_once(',').map_or("", |(_, rest)| rest);
            for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
                let called = methods.match_indices(method).any(|(at, _)| {
                    let before = methods[..at].chars().next_back();
                    let after = methods[at + method.len()..].chars().next();
                    after == Some('(') && !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if called {
                    routes.insert((method.to_owned(), path.to_owned()));
                }
            }
        }
        routes
    }

    fn routes_in_document(document: &Value) -> BTreeSet<(String, String)> {
        let mut routes = BTreeSet::new();
        for (path, item) in document["paths"].as_object().expect("paths is an object") {
            for method in item.as_object().expect("a path item is an object").keys() {
                routes.insert((method.clone(), path.clone()));
            }
        }
        routes
    }

    #[test]
    fn every_route_of_the_router_is_in_the_document() {
        let in_router = routes_in_router_source();
        assert!(
            in_router.len() >= 32,
            "the router's routes were not all read from mod.rs: {in_router:?}"
        );
        let in_document = routes_in_document(&document());
        let missing: Vec<_> = in_router.difference(&in_document).collect();
        let stale: Vec<_> = in_document.difference(&in_router).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "routes without a #[utoipa::path] in ApiDoc: {missing:?}; documented routes the router lacks: {stale:?}"
        );
    }

    #[test]
    fn every_operation_lists_its_errors_with_the_confluent_error_body() {
        let document = document();
        let error_body = "#/components/schemas/ErrorBody";
        let mut checked = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let responses = operation["responses"].as_object().unwrap();
                assert!(
                    responses.contains_key("200") || responses.contains_key("204"),
                    "{method} {path} documents its success"
                );
                assert!(responses.contains_key("401"), "{method} {path} documents 401");
                assert!(responses.contains_key("406"), "{method} {path} documents 406");
                for (status, response) in responses {
                    if status.starts_with('2') {
                        continue;
                    }
                    checked += 1;
                    let response = match response.get("$ref").and_then(Value::as_str) {
                        Some(name) => &document["components"]["responses"][name.rsplit('/').next().unwrap()],
                        None => response,
                    };
                    let content = response["content"].as_object().unwrap_or_else(|| {
                        panic!("{method} {path} {status} has a body");
                    });
                    let types: BTreeSet<&str> = content.keys().map(String::as_str).collect();
                    assert_eq!(types, BTreeSet::from(JSON_MEDIA_TYPES), "{method} {path} {status}");
                    for media in content.values() {
                        assert_eq!(media["schema"]["$ref"], error_body, "{method} {path} {status}");
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} error responses were checked");
        let schema = &document["components"]["schemas"]["ErrorBody"];
        assert_eq!(schema["required"], serde_json::json!(["error_code", "message"]));
        assert_eq!(schema["additionalProperties"], false);
    }

    /// The rules of OpenAPI 3.1 that a JSON Schema of the document cannot
    /// state; `tests/openapi_contract.rs` validates it against the official
    /// meta-schema (shipped with schemathesis) as well.
    #[test]
    fn the_document_is_openapi_3_1_with_every_reference_resolved() {
        let text = super::document();
        let document = document();
        assert_eq!(document["openapi"], "3.1.0");
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = reference.split('"').next().unwrap();
            let pointer = target.strip_prefix('#').expect("references are local");
            assert!(document.pointer(pointer).is_some(), "{target} does not resolve");
        }
        let mut operation_ids = BTreeSet::new();
        for (path, item) in document["paths"].as_object().unwrap() {
            let templated: BTreeSet<&str> = path
                .split('{')
                .skip(1)
                .map(|rest| rest.split('}').next().unwrap())
                .collect();
            for (method, operation) in item.as_object().unwrap() {
                let id = operation["operationId"].as_str().expect("every operation has an ID");
                assert!(operation_ids.insert(id.to_owned()), "operationId {id} is used twice");
                let declared: BTreeSet<&str> = operation["parameters"]
                    .as_array()
                    .map(|parameters| {
                        parameters
                            .iter()
                            .filter(|parameter| parameter["in"] == "path")
                            .map(|parameter| {
                                assert_eq!(
                                    parameter["required"], true,
                                    "{method} {path}: path parameters are required"
                                );
                                parameter["name"].as_str().unwrap()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(declared, templated, "{method} {path} declares its path parameters");
                for (status, response) in operation["responses"].as_object().unwrap() {
                    assert!(
                        response.get("$ref").is_some()
                            || response["description"].as_str().is_some_and(|d| !d.is_empty()),
                        "{method} {path} {status} has a description"
                    );
                }
            }
        }
    }

    /// The documented level of each engine mode; a new mode fails to compile here.
    fn documented_level(mode: Mode) -> CompatibilityLevel {
        match mode {
            Mode::Backward => CompatibilityLevel::Backward,
            Mode::BackwardTransitive => CompatibilityLevel::BackwardTransitive,
            Mode::Forward => CompatibilityLevel::Forward,
            Mode::ForwardTransitive => CompatibilityLevel::ForwardTransitive,
            Mode::Full => CompatibilityLevel::Full,
            Mode::FullTransitive => CompatibilityLevel::FullTransitive,
            Mode::None => CompatibilityLevel::None,
        }
    }

    /// The documented type of each format; a new format fails to compile here.
    fn documented_type(format: Format) -> SchemaType {
        match format {
            Format::Avro => SchemaType::Avro,
            Format::Json => SchemaType::Json,
            Format::Protobuf => SchemaType::Protobuf,
        }
    }

    #[test]
    fn the_documented_levels_and_types_are_the_engines() {
        let document = document();
        let enumerated = |name: &str| -> BTreeSet<String> {
            document["components"]["schemas"][name]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{name} is an enum"))
                .iter()
                .map(|value| value.as_str().unwrap().to_owned())
                .collect()
        };
        let levels: BTreeSet<String> = Mode::ALL
            .iter()
            .map(|mode| {
                let spelled = serde_json::to_value(mode).unwrap();
                assert_eq!(spelled, serde_json::to_value(documented_level(*mode)).unwrap());
                spelled.as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(levels, enumerated("CompatibilityLevel"));
        let types: BTreeSet<String> = [Format::Avro, Format::Json, Format::Protobuf]
            .into_iter()
            .map(|format| {
                assert_eq!(serde_json::to_value(documented_type(format)).unwrap(), format.as_str());
                format.as_str().to_owned()
            })
            .collect();
        assert_eq!(types, enumerated("SchemaType"));
    }
}

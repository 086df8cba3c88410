//! The Confluent Schema Registry REST API over any [`Registry`], as an axum
//! [`Router`]. Handlers translate HTTP to registry calls and back; every
//! rule lives in the registry.

mod admission;
mod auth;
mod bodies;
mod config;
mod contexts;
mod contracts;
mod diff;
mod error;
pub mod history;
mod mode;
mod negotiation;
pub mod openapi;
mod policy_gate;
pub mod search;
mod wire;
mod wording;

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::handler::Handler as _;
use axum::http::{Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};

pub use admission::{Admission, AdmissionConfig, AdmissionMetrics, gate as admission_gate};
pub use auth::{Access, AccessPolicy, Auth, Credential, Decision, RestWrites, load_credentials};
pub use error::ApiError;
use error::ErrorBody;
use openapi::{
    BAD_REQUEST, CompatibilityVerdict, Deleted, DeletedOnly, Empty, Paging, RegisteredId, STORE_FAILED, SchemaType,
    SerializedFormat, SubjectPrefix, VersionParam,
};
use wire::{QueryParams, SchemaRequest, SchemaResponse, json_response};

use crate::http_server::hook::{After, Before, Hook, HookLayer};
use crate::policy::SharedPolicies;
use crate::registry::{
    Error, RegisterOptions, Registry, SchemaId, SubjectFilter, SubjectName, Version, VersionFilter, VersionSelector,
};

/// What the router needs.
#[derive(Clone)]
pub struct ApiState {
    /// The registry served.
    pub registry: Arc<dyn Registry>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Who may read and write; `None` lets everyone.
    pub auth: Option<Arc<Auth>>,
    /// The SchemaPolicies that judge writes of compatibility levels and
    /// modes; `None` judges nothing.
    pub policies: Option<SharedPolicies>,
    /// The gate the routes that parse or check schemas admit their requests
    /// through; `None` runs them at once with the default budget.
    pub admission: Option<Arc<Admission>>,
}

/// The default request body limit: 8 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

type Reply = Result<Response, ApiError>;

/// The REST API's routes.
pub fn router(state: ApiState) -> Router {
    let bodies = Arc::new(bodies::Bodies::default());
    let by_id = {
        let bodies = Arc::clone(&bodies);
        move |state, id, query| schema_by_id(state, id, query, bodies)
    };
    let one_version = move |state, path, query| get_version(state, path, query, bodies);
    let gate = || axum::middleware::from_fn_with_state(state.admission.clone(), admission::gate);
    let routes = Router::new()
        .route("/", get(root))
        .route("/schemas/types", get(schema_types))
        .route("/schemas", get(list_schemas))
        .route("/schemas/ids/{id}", get(by_id))
        .route("/schemas/ids/{id}/schema", get(raw_schema_by_id))
        .route("/schemas/ids/{id}/subjects", get(subjects_of_id))
        .route("/schemas/ids/{id}/versions", get(versions_of_id))
        .route("/schemas/guids/{guid}", get(contracts::schema_by_guid))
        .route("/schemas/guids/{guid}/ids", get(contracts::ids_of_guid))
        .route("/subjects", get(list_subjects))
        .route("/subjects/{subject}", post(lookup.layer(gate())).delete(delete_subject))
        .route("/subjects/{subject}/metadata", get(contracts::latest_with_metadata))
        .route(
            "/subjects/{subject}/versions",
            get(list_versions).post(register.layer(gate())),
        )
        .route(
            "/subjects/{subject}/versions/{version}",
            get(one_version).delete(delete_version),
        )
        .route("/subjects/{subject}/versions/{version}/schema", get(raw_version))
        .route(
            "/subjects/{subject}/versions/{version}/referencedby",
            get(referenced_by),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(check_all.layer(gate())),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(check_one.layer(gate())),
        )
        .route(
            "/subjects/{subject}/versions/{version}/diff/{other}",
            get(diff::diff_versions.layer(gate())),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}/matrix",
            get(diff::version_matrix.layer(gate())),
        )
        .route(
            "/compatibility/subjects/{subject}/matrix",
            post(diff::draft_matrix.layer(gate())),
        )
        .route(
            "/config",
            get(config::get_config)
                .put(config::put_config)
                .delete(config::delete_config),
        )
        .route(
            "/config/{subject}",
            get(config::get_config)
                .put(config::put_config)
                .delete(config::delete_config),
        )
        .route(
            "/mode",
            get(mode::get_mode).put(mode::put_mode).delete(mode::delete_mode),
        )
        .route(
            "/mode/{subject}",
            get(mode::get_mode).put(mode::put_mode).delete(mode::delete_mode),
        )
        .route("/contexts", get(contexts::list))
        .route("/contexts/{context}", delete(contexts::delete))
        .route("/openapi.json", get(openapi::serve))
        .route("/schemaops/search", get(search::search))
        .fallback(not_found);
    // Negotiation runs only once a route and method matched, as in JAX-RS:
    // an unknown path is 404 and a wrong method 405 whatever the headers.
    // The 405 fallback is set after the route layer so that it stays outside it.
    let routes = routes
        .route_layer(HookLayer(negotiation::Negotiate {
            body_limit: state.body_limit,
        }))
        .method_not_allowed_fallback(method_not_allowed);
    let routes = if state.auth.is_some() {
        routes.layer(axum::middleware::from_fn_with_state(state.clone(), auth::check))
    } else {
        routes
    };
    let api = routes.layer(HookLayer(ConfluentErrors)).with_state(state);
    contexts::with_context_prefix(api)
}

/// The longest framework error text kept as the message.
const MAX_PLAIN_ERROR_BYTES: usize = 4 * 1024;

/// Turns an error the framework answered itself (a method the route lacks,
/// a path or query that does not decode) into Confluent's error JSON, so
/// every error a client sees has the same shape; JSON answers pass as they are.
#[derive(Clone, Copy)]
struct ConfluentErrors;

impl Hook for ConfluentErrors {
    type Carry = ();

    fn before(&self, request: axum::extract::Request) -> Before<()> {
        Before::Pass(request, ())
    }

    fn after(&self, (): (), response: Response) -> After {
        let status = response.status();
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.contains("json"));
        if !(status.is_client_error() || status.is_server_error()) || is_json {
            return After::Done(response);
        }
        After::Later(Box::pin(as_confluent_error(response)))
    }
}

/// A plain-text error answer as Confluent's error JSON with its text as the message.
async fn as_confluent_error(response: Response) -> Response {
    let status = response.status();
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = axum::body::to_bytes(response.into_body(), MAX_PLAIN_ERROR_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        text
    };
    let mut response = ApiError::plain(status, message).into_response();
    if let Some(allow) = allow {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::not_found(uri.path())
}

/// A method the path does not serve (the router adds `Allow`).
async fn method_not_allowed() -> ApiError {
    ApiError::plain(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "HTTP 405 Method Not Allowed",
    )
}

/// Reads a request body, refusing it once it passes the limit without
/// buffering the rest. An empty body is refused as Confluent refuses it
/// (its body parameters are `@NotNull`): 422 with code 422.
async fn read_body(state: &ApiState, body: Body) -> Result<Bytes, ApiError> {
    let bytes = axum::body::to_bytes(body, state.body_limit)
        .await
        .map_err(|_| ApiError::body_too_large(state.body_limit))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::missing_body());
    }
    Ok(bytes)
}

/// A subject named in a path, to read or delete: any name. Like Confluent,
/// only writes check names; reading a name that could never be written
/// finds nothing (40401).
fn subject(name: String) -> Result<SubjectName, ApiError> {
    Ok(SubjectName::to_look_up(name))
}

/// A subject named in a path, to write (a registration, a level, a mode):
/// 42208 when the name is not valid.
fn writable_subject(name: String) -> Result<SubjectName, ApiError> {
    Ok(SubjectName::new(name)?)
}

fn version(text: &str) -> Result<VersionSelector, ApiError> {
    Ok(text.parse::<VersionSelector>()?)
}

/// A schema ID from the path. Like Confluent (whose path parameter is an
/// integer), text that is not a number matches no route: plain 404.
fn schema_id(text: &str) -> Result<SchemaId, ApiError> {
    let number = text.parse::<i64>().map_err(|_| {
        ApiError::plain(axum::http::StatusCode::NOT_FOUND, "HTTP 404 Not Found")
            .with_detail(format!("{text:?} is not a schema ID"))
    })?;
    SchemaId::new(number).ok_or_else(|| {
        ApiError::from(Error::SchemaNotFound {
            what: format!("with ID {number}"),
        })
    })
}

#[utoipa::path(
    get,
    path = "/",
    tag = "server",
    summary = "The API root",
    responses((status = 200, description = "An empty object", body = Empty))
)]
async fn root() -> Response {
    json_response(&serde_json::json!({}))
}

#[utoipa::path(
    get,
    path = "/schemas/types",
    tag = "schemas",
    summary = "The schema types the registry accepts",
    responses((status = 200, description = "The types", body = Vec<SchemaType>))
)]
async fn schema_types(State(state): State<ApiState>) -> Response {
    let names: Vec<&str> = state
        .registry
        .schema_types()
        .into_iter()
        .map(|format| format.as_str())
        .collect();
    json_response(&names)
}

#[utoipa::path(
    get,
    path = "/schemas/ids/{id}",
    tag = "schemas",
    summary = "The schema a global ID names",
    params(
        ("id" = SchemaId, Path, description = "The schema's global ID"),
        SerializedFormat,
        ("subject" = Option<String>, Query,
         description = "Also answer `subject`, `version` and `deleted` of a version holding the ID: this \
                        subject's own, else one in its context (Confluent's `SchemaString`)"),
        ("fetchMaxId" = Option<bool>, Query, description = "Also answer `maxId`, the highest schema ID given"),
    ),
    responses(
        (status = 200, description = "The schema", body = wire::SchemaByIdResponse),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40403: no schema has this ID (or, with `subject`, none in the subject's \
                                      context); 404: text that is not a number", body = ErrorBody),
        (status = 422, description = "42201: a stored Protobuf schema has no descriptor to serialize",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn schema_by_id(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    query: QueryParams,
    bodies: Arc<bodies::Bodies>,
) -> Reply {
    let id = schema_id(&id)?;
    let found = state.registry.schema_by_id(id).await?;
    // The serializers' hot path: a body built once per ID.
    if query.is_empty() {
        return Ok(bodies.by_id(id, &found));
    }
    let serialized = serialized_requested(&query, found.format);
    let fetch_max_id = query.flag("fetchMaxId")?;
    let requested_subject = query.text("subject");
    if !serialized && !fetch_max_id && requested_subject.is_none() {
        return Ok(bodies.by_id(id, &found));
    }
    let text = if serialized {
        Some(state.registry.serialized_by_id(id).await?)
    } else {
        None
    };
    let holder = match requested_subject {
        Some(requested) => Some(holder_for(&state, id, requested).await?),
        None => None,
    };
    let max_id = if fetch_max_id {
        state.registry.max_schema_id().await?.map(SchemaId::get)
    } else {
        None
    };
    let mut body = wire::SchemaByIdResponse::from(found.as_ref());
    if let Some(text) = &text {
        body.schema = text;
    }
    if let Some(holder) = &holder {
        body.subject = Some(holder.subject.as_str());
        body.version = Some(holder.version.get());
        body.deleted = Some(holder.deleted);
    }
    body.max_id = max_id;
    Ok(json_response(&body))
}

/// The version `GET /schemas/ids/{id}?subject=` reports, found as Confluent's
/// `getSchemaKeyUsingContexts` finds it: the requested subject's own version
/// holding the ID, else a version in the subject's context, else (for a
/// subject of the default context) a version in any context; soft-deleted
/// versions count, live ones first.
///
/// # Errors
/// 40403 when no version qualifies.
async fn holder_for(
    state: &ApiState,
    id: SchemaId,
    requested: &str,
) -> Result<crate::registry::VersionedSchema, ApiError> {
    use crate::registry::context::{DEFAULT_CONTEXT, context_of};
    let wanted_context = context_of(requested);
    let mut best: Option<(u8, crate::registry::VersionedSchema)> = None;
    for held in state.registry.versions_of_id(id, true).await? {
        let rank = if held.subject.as_str() == requested {
            0
        } else if context_of(held.subject.as_str()) == wanted_context {
            2
        } else if wanted_context == DEFAULT_CONTEXT {
            4
        } else {
            continue;
        };
        let version = state
            .registry
            .version(&held.subject, VersionSelector::Exact(held.version), true)
            .await?;
        let rank = rank + u8::from(version.deleted);
        if best.as_ref().is_none_or(|(best_rank, _)| rank < *best_rank) {
            best = Some((rank, version));
        }
    }
    best.map(|(_, version)| version).ok_or_else(|| {
        ApiError::from(Error::SchemaNotFound {
            what: format!("with ID {id}"),
        })
    })
}

/// Whether a request asks for Protobuf's serialized form of a `format` schema.
fn serialized_requested(query: &QueryParams, format: crate::compat::Format) -> bool {
    format == crate::compat::Format::Protobuf && asks_serialized(query)
}

/// Whether a request carries `format=serialized`, whatever the schema's format.
fn asks_serialized(query: &QueryParams) -> bool {
    query
        .text("format")
        .is_some_and(|value| value.eq_ignore_ascii_case("serialized"))
}

#[utoipa::path(
    get,
    path = "/schemas/ids/{id}/schema",
    tag = "schemas",
    summary = "The text of the schema a global ID names",
    params(("id" = SchemaId, Path, description = "The schema's global ID")),
    responses(
        (status = 200, description = "The schema text as registered: JSON for Avro and JSON Schema, \
                                      `.proto` text for Protobuf", body = serde_json::Value),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40403: no schema has this ID; 404: text that is not a number", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn raw_schema_by_id(State(state): State<ApiState>, Path(id): Path<String>) -> Reply {
    let found = state.registry.schema_by_id(schema_id(&id)?).await?;
    Ok(raw(found.answered_text().to_owned()))
}

fn raw(text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(wire::CONTENT_TYPE),
    );
    response
}

#[utoipa::path(
    get,
    path = "/schemas/ids/{id}/subjects",
    tag = "schemas",
    summary = "The subjects that hold the schema a global ID names",
    params(("id" = SchemaId, Path, description = "The schema's global ID"), Deleted, Paging),
    responses(
        (status = 200, description = "The subjects", body = Vec<SubjectName>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40403: no schema has this ID; 404: text that is not a number", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn subjects_of_id(State(state): State<ApiState>, Path(id): Path<String>, query: QueryParams) -> Reply {
    let holders = state
        .registry
        .versions_of_id(schema_id(&id)?, query.flag("deleted")?)
        .await?;
    let mut subjects: Vec<String> = holders.into_iter().map(|holder| holder.subject.to_string()).collect();
    subjects.dedup();
    Ok(json_response(&query.page(subjects)?))
}

#[utoipa::path(
    get,
    path = "/schemas/ids/{id}/versions",
    tag = "schemas",
    summary = "The subject versions that hold the schema a global ID names",
    params(("id" = SchemaId, Path, description = "The schema's global ID"), Deleted, Paging),
    responses(
        (status = 200, description = "The (subject, version) pairs", body = Vec<crate::registry::SubjectVersion>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40403: no schema has this ID; 404: text that is not a number", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn versions_of_id(State(state): State<ApiState>, Path(id): Path<String>, query: QueryParams) -> Reply {
    let holders = state
        .registry
        .versions_of_id(schema_id(&id)?, query.flag("deleted")?)
        .await?;
    Ok(json_response(&query.page(holders)?))
}

#[utoipa::path(
    get,
    path = "/schemas",
    tag = "schemas",
    summary = "Every version of every subject, or of those with a prefix",
    params(
        SubjectPrefix,
        Deleted,
        ("latestOnly" = Option<bool>, Query, description = "Only each subject's latest version"),
        Paging,
    ),
    responses(
        (status = 200, description = "The versions", body = Vec<wire::SchemaResponse>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn list_schemas(State(state): State<ApiState>, query: QueryParams) -> Reply {
    let include_deleted = query.flag("deleted")?;
    let filter = SubjectFilter {
        prefix: query.text("subjectPrefix").map(str::to_owned),
        include_deleted,
        deleted_only: false,
    };
    let latest_only = query.flag("latestOnly")?;
    let versions_filter = if include_deleted {
        VersionFilter::All
    } else {
        VersionFilter::Live
    };
    let mut found = Vec::new();
    for subject in state.registry.subjects(&filter).await? {
        let mut versions = state
            .registry
            .versions(&subject, versions_filter)
            .await
            .unwrap_or_default();
        if latest_only {
            versions = versions.split_off(versions.len().saturating_sub(1));
        }
        for number in versions {
            found.push(
                state
                    .registry
                    .version(&subject, VersionSelector::Exact(number), include_deleted)
                    .await?,
            );
        }
    }
    let page = query.page(found)?;
    let bodies: Vec<SchemaResponse<'_>> = page.iter().map(SchemaResponse::from).collect();
    Ok(json_response(&bodies))
}

#[utoipa::path(
    get,
    path = "/subjects",
    tag = "subjects",
    summary = "The subjects",
    params(SubjectPrefix, Deleted, DeletedOnly, Paging),
    responses(
        (status = 200, description = "The subject names", body = Vec<SubjectName>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn list_subjects(State(state): State<ApiState>, query: QueryParams) -> Reply {
    let filter = SubjectFilter {
        prefix: query.text("subjectPrefix").map(str::to_owned),
        include_deleted: query.flag("deleted")?,
        deleted_only: query.flag("deletedOnly")? || query.flag("deleted_only")?,
    };
    let names: Vec<String> = state
        .registry
        .subjects(&filter)
        .await?
        .into_iter()
        .map(String::from)
        .collect();
    Ok(json_response(&query.page(names)?))
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/versions",
    tag = "subjects",
    summary = "A subject's version numbers",
    params(("subject" = SubjectName, Path, description = "The subject"), Deleted, DeletedOnly, Paging),
    responses(
        (status = 200, description = "The version numbers, oldest first", body = Vec<Version>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject (or none of its versions is live)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn list_versions(State(state): State<ApiState>, Path(name): Path<String>, query: QueryParams) -> Reply {
    let filter = if query.flag("deletedOnly")? || query.flag("deleted_only")? {
        VersionFilter::DeletedOnly
    } else if query.flag("deleted")? {
        VersionFilter::All
    } else {
        VersionFilter::Live
    };
    let versions = state.registry.versions(&subject(name)?, filter).await?;
    Ok(json_response(&query.page(versions)?))
}

#[utoipa::path(
    post,
    path = "/subjects/{subject}/versions",
    tag = "subjects",
    summary = "Register a schema under a subject (or find it there)",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        (
            "normalize" = Option<bool>,
            Query,
            description = "Store the normalized text (the schema's identity, and so its ID, is the same either way)"
        ),
    ),
    request_body = SchemaRequest,
    responses(
        (status = 200, description = "The schema's global ID", body = RegisteredId),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401 or 40402: a reference with version -1 names a subject without live \
                                      versions",
         body = ErrorBody),
        (status = 409, description = "409: incompatible with the subject's versions under its level (the \
                                      message lists every incompatibility), or of another schema type",
         body = ErrorBody),
        (status = 422, description = "42201: an empty or missing schema, an unknown schema type, not a valid \
                                      schema, a reference to a version that does not exist, or a check too \
                                      complex to decide; 42202: a reference's version is not valid; 42208: the \
                                      subject's or a reference's subject name is not valid; 42209: the schema is \
                                      over the size limit; 42210: its rule set is not valid; 42202 also: `version` is not valid; 42205: the \
                                      subject or registry is read-only, or an ID is given outside IMPORT mode, \
                                      or the ID is not valid; 42201 also: outside IMPORT mode, a `version` other \
                                      than the subject's next; 42207: the ID names another schema",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn register(State(state): State<ApiState>, Path(name): Path<String>, query: QueryParams, body: Body) -> Reply {
    let subject = writable_subject(name)?;
    let request = SchemaRequest::parse(&read_body(&state, body).await?)?;
    let schema = request.new_schema(state.registry.as_ref()).await?;
    let options = RegisterOptions {
        // A negative ID or a version below 1 chooses none, as Confluent reads them.
        id: match request.id {
            None => None,
            Some(id) if id < 0 => None,
            Some(id) => Some(SchemaId::new(id).ok_or_else(|| {
                ApiError::from(Error::NotPermitted {
                    reason: format!("{id} is not a valid schema ID"),
                })
            })?),
        },
        version: match request.version {
            None => None,
            Some(number) if number <= 0 => None,
            Some(number) => Some(Version::new(number)?),
        },
        normalize: query.flag("normalize")?,
    };
    let registered = state.registry.register(&subject, &schema, options).await?;
    let guid = state.registry.schema_by_id(registered.id).await?.guid();
    Ok(json_response(&serde_json::json!({ "id": registered.id, "guid": guid })))
}

#[utoipa::path(
    post,
    path = "/subjects/{subject}",
    tag = "subjects",
    summary = "Find the version of a subject that holds a schema",
    params(("subject" = SubjectName, Path, description = "The subject"), Deleted),
    request_body = SchemaRequest,
    responses(
        (status = 200, description = "The version that holds it", body = wire::SchemaResponse),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40403: the subject does not hold the schema; 40401 \
                                      or 40402: a reference with version -1 names a subject without live \
                                      versions",
         body = ErrorBody),
        (status = 422, description = "42201: an empty or missing schema, an unknown schema type, not a valid \
                                      schema, a reference to a version that does not exist, or a check too \
                                      complex to decide; 42202: a reference's version is not valid; 42208: the \
                                      subject's or a reference's subject name is not valid; 42209: the schema is \
                                      over the size limit; 42210: its rule set is not valid",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn lookup(State(state): State<ApiState>, Path(name): Path<String>, query: QueryParams, body: Body) -> Reply {
    let subject = subject(name)?;
    let request = SchemaRequest::parse(&read_body(&state, body).await?)?;
    let found = state
        .registry
        .lookup(
            &subject,
            &request.new_schema(state.registry.as_ref()).await?,
            query.flag("deleted")?,
        )
        .await?;
    Ok(json_response(&SchemaResponse::from(&found)))
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/versions/{version}",
    tag = "subjects",
    summary = "A version of a subject",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "A version number, `latest` or -1"),
        Deleted,
        SerializedFormat,
    ),
    responses(
        (status = 200, description = "The version", body = wire::SchemaResponse),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version", body = ErrorBody),
        (status = 422, description = "42201: a stored Protobuf schema has no descriptor to serialize; 42202: \
                                      not a valid version", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn get_version(
    State(state): State<ApiState>,
    Path((name, number)): Path<(String, String)>,
    query: QueryParams,
    bodies: Arc<bodies::Bodies>,
) -> Reply {
    let subject = subject(name)?;
    let (selector, include_deleted) = (version(&number)?, query.flag("deleted")?);
    if asks_serialized(&query) {
        let mut found = state.registry.version(&subject, selector, include_deleted).await?;
        if found.format == crate::compat::Format::Protobuf {
            found.text = state.registry.serialized_by_id(found.id).await?;
            found.answer_text = None;
        }
        return Ok(json_response(&SchemaResponse::from(&found)));
    }
    let found = state
        .registry
        .shared_version(&subject, selector, include_deleted)
        .await?;
    Ok(bodies.version(&subject, &found))
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/versions/{version}/schema",
    tag = "subjects",
    summary = "The schema text of a version of a subject",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "A version number, `latest` or -1"),
    ),
    responses(
        (status = 200, description = "The schema text as registered: JSON for Avro and JSON Schema, \
                                      `.proto` text for Protobuf", body = serde_json::Value),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version", body = ErrorBody),
        (status = 422, description = "42202: not a valid version",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn raw_version(State(state): State<ApiState>, Path((name, number)): Path<(String, String)>) -> Reply {
    let found = state
        .registry
        .version(&subject(name)?, version(&number)?, false)
        .await?;
    Ok(raw(found.answered_text().to_owned()))
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/versions/{version}/referencedby",
    tag = "subjects",
    summary = "The schemas that refer to a version of a subject",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "A version number, `latest` or -1"),
    ),
    responses(
        (status = 200, description = "Their global IDs", body = Vec<SchemaId>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version", body = ErrorBody),
        (status = 422, description = "42202: not a valid version",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn referenced_by(State(state): State<ApiState>, Path((name, number)): Path<(String, String)>) -> Reply {
    let ids = state.registry.referenced_by(&subject(name)?, version(&number)?).await?;
    Ok(json_response(&ids))
}

#[utoipa::path(
    delete,
    path = "/subjects/{subject}/versions/{version}",
    tag = "subjects",
    summary = "Delete a version of a subject: soft, or with permanent=true for good",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "A version number, `latest` or -1"),
        ("permanent" = Option<bool>, Query, description = "Remove the soft-deleted version for good"),
    ),
    responses(
        (status = 200, description = "The version deleted", body = Version),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version; 40406: already \
                                      soft-deleted (use permanent=true); 40407: permanent=true before a soft \
                                      delete", body = ErrorBody),
        (status = 422, description = "42202: not a valid version; 42205: the subject or registry is \
                                      read-only; 42206: another schema refers to the version", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn delete_version(
    State(state): State<ApiState>,
    Path((name, number)): Path<(String, String)>,
    query: QueryParams,
) -> Reply {
    let deleted = state
        .registry
        .delete_version(&subject(name)?, version(&number)?, query.flag("permanent")?)
        .await?;
    Ok(json_response(&deleted))
}

#[utoipa::path(
    delete,
    path = "/subjects/{subject}",
    tag = "subjects",
    summary = "Delete a subject: soft, or with permanent=true for good",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("permanent" = Option<bool>, Query, description = "Remove the soft-deleted versions for good"),
    ),
    responses(
        (status = 200, description = "The versions deleted", body = Vec<Version>),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40404: already soft-deleted (use \
                                      permanent=true); 40405: permanent=true before a soft delete",
         body = ErrorBody),
        (status = 422, description = "42205: the subject or registry is read-only; 42206: another schema \
                                      refers to one of its versions",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn delete_subject(State(state): State<ApiState>, Path(name): Path<String>, query: QueryParams) -> Reply {
    let deleted = state
        .registry
        .delete_subject(&subject(name)?, query.flag("permanent")?)
        .await?;
    Ok(json_response(&deleted))
}

#[utoipa::path(
    post,
    path = "/compatibility/subjects/{subject}/versions",
    tag = "compatibility",
    summary = "Test a schema against a subject's versions under its level",
    params(
        ("subject" = SubjectName, Path, description = "The subject (one without versions is compatible)"),
        ("verbose" = Option<bool>, Query, description = "List every incompatibility in `messages`"),
    ),
    request_body = SchemaRequest,
    responses(
        (status = 200, description = "The verdict", body = CompatibilityVerdict),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401 or 40402: a reference with version -1 names a subject without live \
                                      versions",
         body = ErrorBody),
        (status = 409, description = "409: the subject's versions are of another schema type", body = ErrorBody),
        (status = 422, description = "42201: an empty or missing schema, an unknown schema type, not a valid \
                                      schema, a reference to a version that does not exist, or a check too \
                                      complex to decide; 42202: a reference's version is not valid; 42208: the \
                                      subject's or a reference's subject name is not valid; 42209: the schema is \
                                      over the size limit; 42210: its rule set is not valid (with verbose=true, an invalid schema, a missing \
                                      referenced version, a check too complex and a schema over the limit answer \
                                      200 with is_compatible false instead)",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn check_all(state: State<ApiState>, Path(name): Path<String>, query: QueryParams, body: Body) -> Reply {
    check(state, name, None, query, body).await
}

#[utoipa::path(
    post,
    path = "/compatibility/subjects/{subject}/versions/{version}",
    tag = "compatibility",
    summary = "Test a schema against one version of a subject",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        (
            "version" = VersionParam,
            Path,
            description = "A version number, `latest` or -1 (`latest` of a subject without versions is compatible)"
        ),
        ("verbose" = Option<bool>, Query, description = "List every incompatibility in `messages`"),
    ),
    request_body = SchemaRequest,
    responses(
        (status = 200, description = "The verdict", body = CompatibilityVerdict),
        (status = 404, description = "40401: no such subject; 40402: no such version; 40401 or 40402: a \
                                      reference with version -1 names a subject without live versions",
         body = ErrorBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 409, description = "409: the subject's versions are of another schema type", body = ErrorBody),
        (status = 422, description = "42201: an empty or missing schema, an unknown schema type, not a valid \
                                      schema, a reference to a version that does not exist, or a check too \
                                      complex to decide; 42202: a reference's version is not valid; 42208: the \
                                      subject's or a reference's subject name is not valid; 42209: the schema is \
                                      over the size limit; 42210: its rule set is not valid; 42202 also: the path's version is not valid (with \
                                      verbose=true, an invalid schema, a missing referenced version, a check too \
                                      complex and a schema over the limit answer 200 with is_compatible false \
                                      instead)",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
async fn check_one(
    state: State<ApiState>,
    Path((name, number)): Path<(String, String)>,
    query: QueryParams,
    body: Body,
) -> Reply {
    let selector = version(&number)?;
    check(state, name, Some(selector), query, body).await
}

async fn check(
    State(state): State<ApiState>,
    name: String,
    against: Option<VersionSelector>,
    query: QueryParams,
    body: Body,
) -> Reply {
    let verbose = query.flag("verbose")?;
    let subject = subject(name)?;
    let request = SchemaRequest::parse(&read_body(&state, body).await?)?;
    let schema = request.new_schema(state.registry.as_ref()).await?;
    match state.registry.check(&subject, &schema, against).await {
        Ok(result) => {
            let mut body = serde_json::json!({ "is_compatible": result.report.is_compatible() });
            if verbose {
                let messages: Vec<String> = result
                    .report
                    .incompatibilities
                    .iter()
                    .map(|i| format!("[version {}] {} at {}: {}", i.version, i.kind, i.path, i.message))
                    .collect();
                body["messages"] = messages.into();
            }
            Ok(json_response(&body))
        }
        Err(error @ (Error::InvalidSchema { .. } | Error::TooComplex { .. } | Error::SchemaTooLarge { .. }))
            if verbose =>
        {
            Ok(json_response(
                &serde_json::json!({ "is_compatible": false, "messages": [error.to_string()] }),
            ))
        }
        Err(error) => Err(error.into()),
    }
}

/// The subject of a `/config` or `/mode` path to read or delete; `None` for the registry.
fn optional_subject(name: Option<Path<String>>) -> Result<Option<SubjectName>, ApiError> {
    name.map(|Path(name)| subject(name)).transpose()
}

/// The subject of a `/config` or `/mode` path to write; `None` for the registry.
fn optional_writable_subject(name: Option<Path<String>>) -> Result<Option<SubjectName>, ApiError> {
    name.map(|Path(name)| writable_subject(name)).transpose()
}

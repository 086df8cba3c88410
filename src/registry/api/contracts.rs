//! Routes of Confluent's data-contract surface: schemas by GUID (what the
//! newest serializers' header IDs name) and the newest version of a
//! subject with given metadata (serializers' `use.latest.with.metadata`).

use axum::extract::{Path, Query, State};
use axum::http::Uri;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::openapi::{BAD_REQUEST, Deleted, STORE_FAILED};
use super::wire::{QueryParams, SchemaByIdResponse, SchemaResponse, json_response};
use super::{ApiState, Reply, subject};
use crate::registry::{Error, Guid, SchemaId};

/// The context every schema of this registry is in.
const DEFAULT_CONTEXT: &str = ".";

/// A schema ID within a context, as `GET /schemas/guids/{guid}/ids` lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextId {
    /// The context (`.` is the default one).
    pub context: String,
    /// The schema's ID in that context.
    pub id: SchemaId,
}

fn guid(text: &str) -> Result<Guid, ApiError> {
    text.parse::<Guid>().map_err(|error| {
        ApiError::from(Error::SchemaNotFound {
            what: format!("with GUID `{}` ({error})", error.given),
        })
    })
}

#[utoipa::path(
    get,
    path = "/schemas/guids/{guid}",
    tag = "schemas",
    summary = "A schema by its GUID",
    params(("guid" = String, Path, description = "The schema's GUID")),
    responses(
        (status = 200, description = "The schema", body = SchemaByIdResponse),
        (status = 404, description = "40403: no schema has this GUID (or it is not a GUID)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn schema_by_guid(State(state): State<ApiState>, Path(text): Path<String>) -> Reply {
    let (_, content) = state.registry.schema_by_guid(guid(&text)?).await?;
    Ok(json_response(&SchemaByIdResponse::from(content.as_ref())))
}

#[utoipa::path(
    get,
    path = "/schemas/guids/{guid}/ids",
    tag = "schemas",
    summary = "The IDs a schema's GUID stands for, one per context",
    params(("guid" = String, Path, description = "The schema's GUID")),
    responses(
        (status = 200, description = "Its ID in each context that holds it", body = Vec<ContextId>),
        (status = 404, description = "40403: no schema has this GUID (or it is not a GUID)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn ids_of_guid(State(state): State<ApiState>, Path(text): Path<String>) -> Reply {
    let (id, _) = state.registry.schema_by_guid(guid(&text)?).await?;
    Ok(json_response(&[ContextId {
        context: DEFAULT_CONTEXT.to_owned(),
        id,
    }]))
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/metadata",
    tag = "subjects",
    summary = "The newest version of a subject whose metadata holds the given properties",
    params(
        ("subject" = crate::registry::SubjectName, Path, description = "The subject"),
        ("key" = Option<Vec<String>>, Query, description = "A property name; repeat it with `value`, paired in order"),
        ("value" = Option<Vec<String>>, Query, description = "The value the `key` at the same position must have"),
        Deleted,
    ),
    responses(
        (status = 200, description = "The version", body = SchemaResponse),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40403: no version has that metadata", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn latest_with_metadata(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    query: QueryParams,
    uri: Uri,
) -> Reply {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map_err(|error| ApiError::bad_request(format!("malformed query string: {error}")))?;
    let keys = pairs.iter().filter(|(name, _)| name == "key").map(|(_, key)| key);
    let values = pairs.iter().filter(|(name, _)| name == "value").map(|(_, value)| value);
    let properties: Vec<(String, String)> = keys.zip(values).map(|(k, v)| (k.clone(), v.clone())).collect();
    let found = state
        .registry
        .latest_with_metadata(&subject(name)?, &properties, query.flag("deleted")?)
        .await?;
    Ok(json_response(&SchemaResponse::from(&found)))
}

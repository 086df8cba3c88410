//! Our extension of the REST API: `GET /schemaops/search`, subjects by name
//! and schemas by the names of their fields and types (see
//! [`crate::registry::search`]).
//!
//! The path is outside Confluent's namespace on purpose: Confluent's routes
//! are top-level nouns (`/subjects`, `/schemas`, `/config`, `/mode`,
//! `/contexts`, `/exporters`, `/dek-registry`…), and a route of ours among
//! them could one day collide with one Confluent adds, or be taken by a
//! client for a Confluent feature. Under `/schemaops/` it cannot.

use axum::extract::State;
use utoipa::IntoParams;

use super::error::ErrorBody;
use super::openapi::STORE_FAILED;
use super::wire::{QueryParams, json_response};
use super::{ApiError, ApiState, Reply};
use crate::registry::search::{Found, Query};

/// The query parameters of a search.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// The text to look for (1 to 100 characters; case is ignored): a part of the names looked at.
    #[param(min_length = 1, max_length = 100)]
    pub q: String,
    /// What to look for: `field` (Avro and Protobuf fields, JSON Schema properties; the default), `type`
    /// (Avro records, enums and fixed types, Protobuf messages and enums, JSON Schema definitions) or `subject`.
    #[param(value_type = Option<String>, pattern = "^(field|type|subject)$")]
    pub kind: Option<String>,
    /// The most hits answered, 1 to 500 (default 50); `more` says whether there were others.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/schemaops/search",
    tag = "search",
    summary = "Subjects by name, or every live version defining a field or type by that name (our extension)",
    description = "Served from an index the embedded registry keeps as versions are registered and deleted. \
                   Names match when they contain `q`, ignoring case; for fields and types, names equal to `q` \
                   come first, then the others by name, and within a name the newest schemas first. \
                   Under `/contexts/{context}/` the search still covers every context.",
    params(SearchParams),
    responses(
        (status = 200, description = "The hits", body = Found),
        (status = 400, description = "400: `q` missing, empty, longer than 100 characters or holding control \
                                      characters; an unknown `kind`; a `limit` that is not 1 to 500; or a query \
                                      string that does not decode",
         body = ErrorBody),
        (status = 405, description = "405: the registry keeps no index (an external registry)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn search(State(state): State<ApiState>, params: QueryParams) -> Reply {
    let query = Query::from_params(params.text("q"), params.text("kind"), params.text("limit"))
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    let found = state.registry.search(&query).await?;
    Ok(json_response(&found))
}

//! Schema contexts at the REST API: `GET /contexts`, `DELETE
//! /contexts/{context}`, and every route again under `/contexts/{context}/…`,
//! its subjects put in that context (see [`crate::registry::context`]).

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{Extensions, Request, StatusCode, Uri};
use axum::response::IntoResponse;
use tower::ServiceExt as _;

use super::error::ErrorBody;
use super::openapi::{NOT_A_NUMBER, Paging, STORE_FAILED};
use super::wire::{QueryParams, json_response};
use super::{ApiState, Reply};
use crate::registry::context::{self, DEFAULT_CONTEXT};
use crate::registry::{Error, SubjectFilter};

/// `api` with every route also served under `/contexts/{context}/`.
pub(super) fn with_context_prefix(api: Router) -> Router {
    let scoped = api.clone().map_request(into_context);
    api.route_service("/contexts/{context}/{*rest}", scoped)
}

/// A request under `/contexts/{context}/` as the route without the prefix
/// takes it. The prefix route's own path parameters are left behind: the
/// routes inside match the rewritten path afresh.
fn into_context(request: Request<Body>) -> Request<Body> {
    let (mut parts, body) = request.into_parts();
    parts.extensions = Extensions::new();
    if let Some((path, query)) = context::rewrite(parts.uri.path(), parts.uri.query()) {
        let path_and_query = match query {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        if let Ok(rewritten) = path_and_query.parse::<Uri>() {
            parts.uri = rewritten;
        }
    }
    Request::from_parts(parts, body)
}

/// The contexts that hold subjects (soft-deleted ones included), the default
/// one among them if it does, sorted and without repeats.
async fn contexts_holding_subjects(state: &ApiState) -> Result<Vec<String>, Error> {
    let filter = SubjectFilter {
        include_deleted: true,
        ..SubjectFilter::default()
    };
    let mut names: Vec<String> = state
        .registry
        .subjects(&filter)
        .await?
        .iter()
        .map(|subject| context::context_of(subject.as_str()).to_owned())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The contexts that hold subjects, the default first whether it holds any or not.
async fn contexts_in_use(state: &ApiState) -> Result<Vec<String>, Error> {
    let mut names = contexts_holding_subjects(state).await?;
    names.retain(|name| name != DEFAULT_CONTEXT);
    names.insert(0, DEFAULT_CONTEXT.to_owned());
    Ok(names)
}

#[utoipa::path(
    get,
    path = "/contexts",
    tag = "server",
    summary = "The contexts: the default one (`.`), then every context that holds subjects",
    params(
        ("contextPrefix" = Option<String>, Query,
         description = "Only contexts whose names (`.`, `.orders`) start with this text, as Confluent's \
                        `ContextsResource` filters them"),
        Paging,
    ),
    responses(
        (status = 200, description = "The contexts, e.g. `[\".\", \".orders\"]`", body = Vec<String>),
        (status = 404, description = NOT_A_NUMBER, body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn list(State(state): State<ApiState>, query: QueryParams) -> Reply {
    let mut names = contexts_in_use(&state).await?;
    if let Some(prefix) = query.text("contextPrefix").filter(|prefix| !prefix.is_empty()) {
        names.retain(|name| name.starts_with(prefix));
    }
    Ok(json_response(&query.page(names)?))
}

#[utoipa::path(
    delete,
    path = "/contexts/{context}",
    tag = "server",
    summary = "Delete a context that holds no subject (the default context `.` included, as Confluent does)",
    params(("context" = crate::registry::SubjectName, Path, description = "The context: `.orders`, `orders` or `:.orders:`")),
    responses(
        (status = 204, description = "Deleted (a context without subjects holds nothing else)"),
        (status = 422, description = "42211: the context still holds subjects (soft-deleted ones too)",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn delete(State(state): State<ApiState>, Path(given): Path<String>) -> Reply {
    let name = context::name(&given);
    if contexts_holding_subjects(&state).await?.contains(&name) {
        return Err(Error::ContextNotEmpty { context: name }.into());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

//! `/mode` and `/mode/{subject}`: the registry's and each subject's mode
//! (READWRITE, READONLY, READONLY_OVERRIDE, IMPORT).

use axum::body::Body;
use axum::extract::{Path, State};

use super::error::{ApiError, ErrorBody};
use super::openapi::{BAD_REQUEST, DefaultToGlobal, ModeBody, STORE_FAILED};
use super::wire::{QueryParams, json_response};
use super::{ApiState, Reply, optional_subject, optional_writable_subject, policy_gate, read_body};
use crate::registry::context;
use crate::registry::{Error, RegistryMode, SubjectName};

#[utoipa::path(
    get,
    path = "/mode/{subject}",
    tag = "mode",
    summary = "A subject's mode",
    params(("subject" = SubjectName, Path, description = "The subject"), DefaultToGlobal),
    responses(
        (status = 200, description = "The mode", body = ModeBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40409: the subject has no mode of its own (and defaultToGlobal is not \
                                      true)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn get_mode(State(state): State<ApiState>, name: Option<Path<String>>, query: QueryParams) -> Reply {
    let subject = optional_subject(name)?;
    let mode = state
        .registry
        .mode(subject.as_ref(), query.flag("defaultToGlobal")?)
        .await?;
    Ok(json_response(&serde_json::json!({ "mode": mode })))
}

#[utoipa::path(
    put,
    path = "/mode/{subject}",
    tag = "mode",
    summary = "Set a subject's mode",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("force" = Option<bool>, Query, description = "Allow IMPORT on a subject that holds versions"),
    ),
    request_body = ModeBody,
    responses(
        (status = 200, description = "The mode set; `{\"mode\": null}` clears the subject's mode and answers \
                                      null", body = ModeBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 422, description = "42204: not a mode, or one a SchemaPolicy forbids for the subject; 42205: \
                                      IMPORT on a subject that holds versions, without force=true; 42208: not a \
                                      valid subject name", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn put_mode(
    State(state): State<ApiState>,
    name: Option<Path<String>>,
    query: QueryParams,
    body: Body,
) -> Reply {
    let subject = optional_writable_subject(name)?;
    let body: serde_json::Value = serde_json::from_slice(&read_body(&state, body).await?)
        .map_err(|error| ApiError::bad_request(format!("malformed request body: {error}")))?;
    // `{"mode": null}` clears the mode, as Confluent's `setMode` stores no mode.
    if body.get("mode").is_some_and(serde_json::Value::is_null) {
        let passed = policy_gate::mode_removal(&state, subject.as_ref()).await?;
        remove_own_mode(&state, subject.as_ref()).await?;
        return Ok(passed.answer(json_response(&serde_json::json!({ "mode": null }))));
    }
    let given = body.get("mode").and_then(serde_json::Value::as_str).unwrap_or_default();
    let mode = given.parse::<RegistryMode>()?;
    let force = query.flag("force")?;
    let passed = policy_gate::mode(&state, subject.as_ref(), mode)?;
    let mode = state.registry.set_mode(subject.as_ref(), mode, force).await?;
    Ok(passed.answer(json_response(&serde_json::json!({ "mode": mode }))))
}

#[utoipa::path(
    delete,
    path = "/mode/{subject}",
    tag = "mode",
    summary = "Remove a subject's own mode",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("recursive" = Option<bool>, Query, description = "On a context (`:.ctx:`), also remove the modes of its \
                                                           subjects"),
    ),
    responses(
        (status = 200, description = "The mode it had (null when, with recursive=true, it had none)",
         body = ModeBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: the subject has no mode of its own (and recursive is not true)",
         body = ErrorBody),
        (status = 422, description = "42204: a SchemaPolicy forbids the global mode the subject would fall back \
                                      to", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn delete_mode(
    State(state): State<ApiState>,
    name: Option<Path<String>>,
    query: QueryParams,
) -> Reply {
    let subject = optional_subject(name)?;
    // Recursive applies to the registry (every subject) and to a context
    // (`:.ctx:`, its subjects), as Confluent's `ModeResource` reads it.
    let under = match &subject {
        None => Some(String::new()),
        Some(named) if context::prefix(named.as_str()) == named.as_str() => Some(named.as_str().to_owned()),
        Some(_) => None,
    };
    let recursive = query.flag("recursive")?.then_some(under).flatten();
    let mut passed = policy_gate::mode_removal(&state, subject.as_ref()).await?;
    let Some(prefix) = recursive else {
        let old = state
            .registry
            .delete_mode(subject.as_ref())
            .await
            .map_err(nothing_to_remove)?;
        return Ok(passed.answer(json_response(&serde_json::json!({ "mode": old }))));
    };
    // Every removal is judged before any is made.
    let mut below = state.registry.subjects_with_mode(&prefix).await?;
    below.retain(|other| Some(other) != subject.as_ref());
    for other in &below {
        passed = passed.and(policy_gate::mode_removal(&state, Some(other)).await?);
    }
    let old = remove_own_mode(&state, subject.as_ref()).await?;
    for other in &below {
        remove_own_mode(&state, Some(other)).await?;
    }
    Ok(passed.answer(json_response(&serde_json::json!({ "mode": old }))))
}

/// Removes the mode `subject` has of its own (or resets the global one);
/// returns the mode it had, `None` when it had none.
async fn remove_own_mode(state: &ApiState, subject: Option<&SubjectName>) -> Result<Option<RegistryMode>, ApiError> {
    match state.registry.delete_mode(subject).await {
        Ok(old) => Ok(Some(old)),
        Err(Error::SubjectModeNotConfigured { .. }) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Removing a mode a subject does not have is Confluent's 40401, not the 40409 of a read.
fn nothing_to_remove(error: Error) -> Error {
    match error {
        Error::SubjectModeNotConfigured { subject } => Error::SubjectNotFound { subject },
        other => other,
    }
}

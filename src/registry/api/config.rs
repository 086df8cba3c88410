//! `/config` and `/config/{subject}`: a subject's (or the registry's)
//! compatibility level and data-contract settings, as one configuration.

use axum::body::Body;
use axum::extract::{Path, State};

use super::error::{ApiError, ErrorBody};
use super::openapi::{BAD_REQUEST, ConfigBody, ConfigUpdate, DefaultToGlobal, STORE_FAILED};
use super::wire::{QueryParams, json_response};
use super::{ApiState, Reply, optional_subject, optional_writable_subject, policy_gate, read_body};
use crate::compat::Mode;
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::{Error, Registry, SubjectName};

/// A configuration as `GET`, `PUT` and `DELETE` answer it: the level under
/// `level_field`, then the data-contract settings that are set.
fn config_json(level_field: &str, level: Option<Mode>, config: &ContractConfig) -> serde_json::Value {
    let mut body = serde_json::to_value(config).unwrap_or_else(|_| serde_json::json!({}));
    if let (Some(level), Some(fields)) = (level, body.as_object_mut()) {
        fields.insert(level_field.to_owned(), serde_json::Value::from(level.as_str()));
    }
    body
}

#[utoipa::path(
    get,
    path = "/config/{subject}",
    tag = "config",
    summary = "A subject's configuration: its compatibility level and data-contract settings",
    params(("subject" = SubjectName, Path, description = "The subject"), DefaultToGlobal),
    responses(
        (status = 200, description = "The configuration", body = ConfigBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40408: the subject has no configuration of its own (and defaultToGlobal \
                                      is not true)", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn get_config(State(state): State<ApiState>, name: Option<Path<String>>, query: QueryParams) -> Reply {
    let subject = optional_subject(name)?;
    let fallback = query.flag("defaultToGlobal")?;
    let registry = state.registry.as_ref();
    let own = registry.contract_config(subject.as_ref()).await?;
    let Some(named) = subject.as_ref() else {
        let level = registry.compatibility(None, true).await?;
        return Ok(json_response(&config_json("compatibilityLevel", Some(level), &own)));
    };
    let level = match registry.compatibility(Some(named), false).await {
        Ok(level) => Some(level),
        Err(Error::SubjectCompatibilityNotConfigured { .. }) if !own.is_empty() => None,
        Err(Error::SubjectCompatibilityNotConfigured { .. }) if fallback => {
            // The configuration in force: its context's, `:.__GLOBAL:`'s, or the global one.
            let level = registry.compatibility(Some(named), true).await?;
            let settings = registry.contract_config_in_scope(named).await?;
            return Ok(json_response(&config_json(
                "compatibilityLevel",
                Some(level),
                &settings,
            )));
        }
        Err(error) => return Err(error.into()),
    };
    let level = match level {
        None if fallback => Some(registry.compatibility(Some(named), true).await?),
        level => level,
    };
    Ok(json_response(&config_json("compatibilityLevel", level, &own)))
}

#[utoipa::path(
    put,
    path = "/config/{subject}",
    tag = "config",
    summary = "Change a subject's configuration: its level and data-contract settings",
    params(("subject" = SubjectName, Path, description = "The subject")),
    request_body = ConfigUpdate,
    responses(
        (status = 200, description = "The configuration after the update: the level (the subject's own, or the \
                                      registry's in force) and the data-contract settings", body = ConfigBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 422, description = "42203: not a compatibility level, or a level a SchemaPolicy forbids for \
                                      the subject; 42208: not a valid subject name to write; 42210: a default or \
                                      override rule set is not valid",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn put_config(State(state): State<ApiState>, name: Option<Path<String>>, body: Body) -> Reply {
    let subject = optional_writable_subject(name)?;
    let body: serde_json::Value = serde_json::from_slice(&read_body(&state, body).await?)
        .map_err(|error| ApiError::bad_request(format!("malformed request body: {error}")))?;
    let patch: ConfigPatch = serde_json::from_value(body.clone())
        .map_err(|error| ApiError::bad_request(format!("malformed request body: {error}")))?;
    patch.apply(&ContractConfig::default()).map_err(Error::from)?;
    // A level left out (or null) keeps the one set: `{}` is an empty update,
    // as Confluent's `ConfigResource` takes it.
    let given = body
        .get("compatibility")
        .or_else(|| body.get("compatibilityLevel"))
        .filter(|value| !value.is_null());
    let level = match given {
        None => None,
        Some(given) => {
            let text = given.as_str().unwrap_or_default();
            Some(
                text.parse::<Mode>()
                    .map_err(|_| ApiError::from(Error::InvalidCompatibilityLevel { given: text.to_owned() }))?,
            )
        }
    };
    let passed = match level {
        Some(level) => Some(policy_gate::level(&state, subject.as_ref(), level)?),
        None => None,
    };
    let registry = state.registry.as_ref();
    let level = match level {
        Some(level) => Some(registry.set_compatibility(subject.as_ref(), level).await?),
        None => own_level(registry, subject.as_ref()).await?,
    };
    let config = if patch.is_empty() {
        registry.contract_config(subject.as_ref()).await?
    } else {
        registry.update_contract_config(subject.as_ref(), &patch).await?
    };
    // The whole configuration after the update, as Confluent answers it.
    let response = json_response(&config_json("compatibility", level, &config));
    Ok(match passed {
        Some(passed) => passed.answer(response),
        None => response,
    })
}

/// The level `subject` has of its own (`None` when it has none), or the
/// registry's level in force.
async fn own_level(registry: &dyn Registry, subject: Option<&SubjectName>) -> Result<Option<Mode>, ApiError> {
    match registry.compatibility(subject, subject.is_none()).await {
        Ok(level) => Ok(Some(level)),
        Err(Error::SubjectCompatibilityNotConfigured { .. }) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

#[utoipa::path(
    delete,
    path = "/config/{subject}",
    tag = "config",
    summary = "Remove a subject's own configuration: its level and data-contract settings",
    params(("subject" = SubjectName, Path, description = "The subject")),
    responses(
        (status = 200, description = "The configuration it had", body = ConfigBody,
         headers(("Warning" = String, description = "299: a violation of a SchemaPolicy that warns, one header each"))),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: the subject has no configuration of its own", body = ErrorBody),
        (status = 422, description = "42203: a SchemaPolicy forbids the global level the subject would fall back \
                                      to", body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn delete_config(State(state): State<ApiState>, name: Option<Path<String>>) -> Reply {
    let subject = optional_subject(name)?;
    let passed = policy_gate::level_removal(&state, subject.as_ref()).await?;
    let own = state.registry.contract_config(subject.as_ref()).await?;
    // Nothing to remove is Confluent's 40401, not the 40408 of a read.
    let old = state
        .registry
        .delete_compatibility(subject.as_ref())
        .await
        .map_err(|error| match error {
            Error::SubjectCompatibilityNotConfigured { subject } => Error::SubjectNotFound { subject },
            other => other,
        })?;
    Ok(passed.answer(json_response(&config_json("compatibilityLevel", Some(old), &own))))
}

//! What a remote registry supports beyond the endpoints every
//! Confluent-compatible server has, found out once per registry by
//! harmless requests: reads, on a subject the registry holds when it holds
//! one and on one it does not, and compatibility checks and lookups that
//! store nothing. Servers differ in how they answer the same question
//! (Karapace answers `GET /mode/{s}` for a subject it holds with the global
//! mode, Confluent with the subject's own or 40409), so every capability is
//! reasoned from answers that mean one thing on every server.
//!
//! Data-contract settings are told apart by reads only when one is in use
//! (Confluent omits unset settings, so its `GET /config` looks like
//! Karapace's); else they are probed apart, only when something needs them,
//! by [`probe_data_contracts`]: a `PUT /config` without a level on a subject
//! that does not exist, which a server without them refuses before writing
//! and which is always removed from a server that keeps it.

use reqwest::{Method, StatusCode};

use super::transport::{Answer, Transport, segment};
use crate::registry::Error;

/// The subject the probes name. It is never registered to; only the
/// data-contract probe may give it a configuration, and always removes it.
pub const PROBE_SUBJECT: &str = "schemaops-capability-probe-does-not-exist";

/// The compatibility group the data-contract probe sets on [`PROBE_SUBJECT`].
const PROBE_GROUP: &str = "schemaops.capability-probe";

/// A GUID no schema has, for asking whether `/schemas/guids` exists.
const PROBE_GUID: &str = "00000000-0000-0000-0000-000000000000";

/// The optional features of a remote registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `POST /compatibility/subjects/{s}/versions` (no version): a check
    /// against every version the level implies. Karapace and Redpanda lack it.
    pub check_all_versions: bool,
    /// `verbose=true` on compatibility checks returns `messages`.
    pub verbose: bool,
    /// `GET /mode` answers, so modes can be read (Karapace: GET only).
    pub mode: bool,
    /// A subject can hold a mode of its own. Confluent answers `GET
    /// /mode/{s}?defaultToGlobal=true` with the mode in force even for a
    /// subject it does not hold, and `?defaultToGlobal=false` with 40409 for
    /// a subject without a mode of its own. Karapace has no subject modes:
    /// it answers 404 (40401) for a subject it does not hold and 200 with the
    /// global mode for one it does, whatever `defaultToGlobal` says, and
    /// refuses `PUT`/`DELETE /mode/{s}` with 405.
    pub subject_mode: bool,
    /// `normalize=true` is accepted on lookups and registrations.
    pub normalize: bool,
    /// `deletedOnly=true` on `/subjects` (and on a subject's versions) lists
    /// soft-deleted entries only. Karapace ignores the parameter and lists
    /// the live ones; without it, soft-deleted entries are `deleted=true`
    /// minus the live list. Known only when the registry holds a live
    /// subject (with none, taken as missing, which is always safe).
    pub deleted_only: bool,
    /// `GET /contexts` answers (schema contexts; Karapace has none).
    pub contexts: bool,
    /// `/schemas/guids/{guid}` exists (Confluent 8; not Karapace, not
    /// Confluent 7.x): schemas have GUIDs the registry gives out. Without
    /// it, a Schema's GUID is derived by schemaops and differs from what
    /// another registry would give.
    pub guids: bool,
}

/// Whether data-contract settings (compatibility groups, default and
/// override metadata and rule sets) and the `metadata` and `ruleSet` of
/// registrations are kept, as [`probe_data_contracts`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataContracts(pub bool);

impl Capabilities {
    /// Probes the registry.
    ///
    /// # Errors
    /// A transient [`Error`] when the registry cannot be reached, and
    /// [`Error::Unauthorized`] / [`Error::Forbidden`] when the credentials are refused;
    /// these are not cached, so the next call probes again.
    pub(super) async fn probe(transport: &Transport) -> Result<Self, Error> {
        let subject = segment(PROBE_SUBJECT);
        let avro = serde_json::json!({ "schema": "\"string\"" });
        let invalid = serde_json::json!({ "schema": "{\"type\": \"no-such-avro-type\"}" });

        // A valid schema against every version of a missing subject: a server
        // with the endpoint answers 200 (nothing to break) or 40401.
        let all = transport
            .send(
                Method::POST,
                &format!("/compatibility/subjects/{subject}/versions"),
                &[],
                Some(&avro),
            )
            .await?;
        refuse_credentials(&all, transport)?;
        let check_all_versions = all.status.is_success() || matches!(all.error_code(), Some(40401 | 40402));

        // An invalid schema with verbose=true: servers that know the flag
        // answer with a `messages` list (Confluent: why it is invalid, or an
        // empty list when a missing subject short-cuts the check); others
        // answer 42201 or omit `messages`.
        let verbose_answer = transport
            .send(
                Method::POST,
                &format!("/compatibility/subjects/{subject}/versions/latest"),
                &[("verbose", "true".to_owned())],
                Some(&invalid),
            )
            .await?;
        let verbose = verbose_answer.status.is_success()
            && serde_json::from_slice::<serde_json::Value>(&verbose_answer.body)
                .ok()
                .is_some_and(|body| body.get("messages").is_some_and(serde_json::Value::is_array));

        // One live subject is enough (`limit` is Confluent's; servers
        // without it list them all). A list too long to read is as good as
        // none: the probes then reason from a missing subject alone.
        let live: Vec<String> = match transport.send(Method::GET, "/subjects", &first_only(), None).await {
            Ok(answer) if answer.status.is_success() => serde_json::from_slice(&answer.body).unwrap_or_default(),
            Ok(answer) => {
                refuse_credentials(&answer, transport)?;
                Vec::new()
            }
            Err(Error::AnswerTooLarge { .. }) => Vec::new(),
            Err(error) => return Err(error),
        };
        let existing = live.first().map(|name| segment(name));

        let mode_answer = transport.send(Method::GET, "/mode", &[], None).await?;
        let mode = mode_answer.status.is_success();
        let subject_mode = mode && probe_subject_mode(transport, existing.as_deref()).await?;

        // A lookup on a missing subject: 404 (40401/40403) means the query
        // was accepted; a server that refuses unknown parameters says 400/422.
        let lookup = transport
            .send(
                Method::POST,
                &format!("/subjects/{subject}"),
                &[("normalize", "true".to_owned())],
                Some(&avro),
            )
            .await?;
        let normalize = !matches!(
            lookup.status,
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY
        );

        let deleted_only = probe_deleted_only(transport, &live).await?;
        let contexts = transport.send(Method::GET, "/contexts", &[], None).await?;
        let contexts = contexts.status.is_success()
            && serde_json::from_slice::<serde_json::Value>(&contexts.body).is_ok_and(|body| body.is_array());
        // Confluent answers a GUID it does not know with 40403; a server
        // without the route answers a plain 404 ("Not Found" from Karapace,
        // "HTTP 404 Not Found" from Confluent 7.x).
        let guid = transport
            .send(Method::GET, &format!("/schemas/guids/{PROBE_GUID}"), &[], None)
            .await?;
        let guids = guid.status.is_success() || guid.error_code() == Some(40403);

        let found = Self {
            check_all_versions,
            verbose,
            mode,
            subject_mode,
            normalize,
            deleted_only,
            contexts,
            guids,
        };
        tracing::info!(
            url = transport.base(),
            check_all_versions,
            verbose,
            mode,
            subject_mode,
            normalize,
            deleted_only,
            contexts,
            guids,
            "Probed the registry's capabilities"
        );
        Ok(found)
    }
}

/// Whether subjects can hold a mode of their own, from reads only.
///
/// A subject the registry holds, asked for its own mode: 404 (40409, or
/// 40401 from servers before 7.0) can only come from a server that keeps a
/// subject's mode apart from the global one. A 200 may be the subject's own
/// mode (Confluent) or the global one (Karapace), so a subject the registry
/// does not hold decides: asked with `defaultToGlobal=true`, a server with
/// subject modes answers the mode in force (200); Karapace checks that the
/// subject exists first (404, 40401).
async fn probe_subject_mode(transport: &Transport, existing: Option<&str>) -> Result<bool, Error> {
    if let Some(existing) = existing {
        let own = transport
            .send(
                Method::GET,
                &format!("/mode/{existing}"),
                &[("defaultToGlobal", "false".to_owned())],
                None,
            )
            .await?;
        if own.status == StatusCode::NOT_FOUND && matches!(own.error_code(), Some(40401 | 40409)) {
            return Ok(true);
        }
    }
    let missing = transport
        .send(
            Method::GET,
            &format!("/mode/{}", segment(PROBE_SUBJECT)),
            &[("defaultToGlobal", "true".to_owned())],
            None,
        )
        .await?;
    Ok(missing.status.is_success())
}

/// The query that asks `/subjects` for one entry.
fn first_only() -> Vec<(&'static str, String)> {
    vec![("limit", "1".to_owned())]
}

/// Whether `deletedOnly=true` is honoured: a server that ignores it answers
/// with the live list itself. With no live subject the answers cannot
/// differ, and the parameter is taken as unknown to the server.
async fn probe_deleted_only(transport: &Transport, live: &[String]) -> Result<bool, Error> {
    if live.is_empty() {
        return Ok(false);
    }
    let mut query = first_only();
    query.push(("deletedOnly", "true".to_owned()));
    let answer = match transport.send(Method::GET, "/subjects", &query, None).await {
        Ok(answer) if answer.status.is_success() => answer,
        Ok(_) | Err(Error::AnswerTooLarge { .. }) => return Ok(false),
        Err(error) => return Err(error),
    };
    let deleted: Vec<String> = serde_json::from_slice(&answer.body).unwrap_or_default();
    let mut deleted_sorted = deleted;
    deleted_sorted.sort();
    let mut live_sorted = live.to_vec();
    live_sorted.sort();
    Ok(deleted_sorted != live_sorted)
}

/// The data-contract fields only a registry that keeps them returns.
const CONTRACT_SETTINGS: [&str; 5] = [
    "compatibilityGroup",
    "defaultMetadata",
    "overrideMetadata",
    "defaultRuleSet",
    "overrideRuleSet",
];

/// Whether reads alone show data contracts kept: a contract setting in the
/// global configuration, or `metadata` or a `ruleSet` on the newest version
/// of a subject the registry holds. Servers without them never return
/// these, so a "yes" needs no write; a "no" proves nothing (Confluent
/// leaves unset settings out).
async fn contracts_seen(transport: &Transport) -> Result<bool, Error> {
    let has_any = |answer: &Answer, fields: &[&str]| {
        answer.status.is_success()
            && serde_json::from_slice::<serde_json::Value>(&answer.body).is_ok_and(|body| {
                fields
                    .iter()
                    .any(|field| body.get(*field).is_some_and(|v| !v.is_null()))
            })
    };
    let global = transport.send(Method::GET, "/config", &[], None).await?;
    if has_any(&global, &CONTRACT_SETTINGS) {
        return Ok(true);
    }
    let live: Vec<String> = match transport.send(Method::GET, "/subjects", &first_only(), None).await {
        Ok(answer) if answer.status.is_success() => serde_json::from_slice(&answer.body).unwrap_or_default(),
        Ok(_) | Err(Error::AnswerTooLarge { .. }) => Vec::new(),
        Err(error) => return Err(error),
    };
    let Some(existing) = live.first() else {
        return Ok(false);
    };
    let latest = transport
        .send(
            Method::GET,
            &format!("/subjects/{}/versions/latest", segment(existing)),
            &[],
            None,
        )
        .await?;
    Ok(has_any(&latest, &["metadata", "ruleSet"]))
}

/// Whether the registry keeps data-contract settings: seen by reads when
/// they show one in use (see [`contracts_seen`]), else found by `PUT
/// /config/{probe}` with a compatibility group and no level, on a subject
/// that does not exist:
/// - Karapace refuses it with 422 (its `CompatibilityRequest` requires
///   `compatibility`), Confluent before data contracts with 42203; nothing
///   is written, and the answer is "no".
/// - A server that accepts it is asked for the group back (a server that
///   accepts and drops it also says "no"), and the probe's configuration is
///   removed at once (`DELETE /config/{probe}`), whatever the answer.
///
/// # Errors
/// A transient error when the registry cannot be reached; the caller does
/// not cache it. Refused credentials (a token that may only read) make the
/// answer "no", logged: nothing is then claimed that may not hold.
pub(super) async fn probe_data_contracts(transport: &Transport) -> Result<DataContracts, Error> {
    if contracts_seen(transport).await? {
        tracing::info!(
            url = transport.base(),
            data_contracts = true,
            "Probed the registry's data-contract support"
        );
        return Ok(DataContracts(true));
    }
    let path = format!("/config/{}", segment(PROBE_SUBJECT));
    let body = serde_json::json!({ "compatibilityGroup": PROBE_GROUP });
    let answer = transport.send(Method::PUT, &path, &[], Some(&body)).await?;
    let kept = if answer.status.is_success() {
        let read = transport.send(Method::GET, &path, &[], None).await;
        let removed = transport.send(Method::DELETE, &path, &[], None).await;
        if let Err(error) = &removed {
            tracing::warn!(
                url = transport.base(),
                subject = PROBE_SUBJECT,
                error = error as &dyn std::error::Error,
                "Could not remove the capability probe's configuration"
            );
        }
        let read = read?;
        read.status.is_success()
            && serde_json::from_slice::<serde_json::Value>(&read.body)
                .ok()
                .and_then(|config| config.get("compatibilityGroup").cloned())
                .is_some_and(|group| group == PROBE_GROUP)
    } else {
        if matches!(answer.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            tracing::warn!(
                url = transport.base(),
                status = answer.status.as_u16(),
                "The credentials may not write configurations; data-contract settings are taken as unsupported"
            );
        }
        false
    };
    tracing::info!(
        url = transport.base(),
        data_contracts = kept,
        "Probed the registry's data-contract support"
    );
    Ok(DataContracts(kept))
}

fn refuse_credentials(answer: &Answer, transport: &Transport) -> Result<(), Error> {
    match answer.status {
        StatusCode::UNAUTHORIZED => Err(Error::Unauthorized {
            url: transport.base().to_owned(),
        }),
        StatusCode::FORBIDDEN => Err(Error::Forbidden {
            url: transport.base().to_owned(),
        }),
        _ => Ok(()),
    }
}

//! What a remote registry supports beyond the endpoints every
//! Confluent-compatible server has, found out once by harmless requests
//! (reads, and compatibility checks against a subject that does not exist;
//! nothing is written).

use reqwest::{Method, StatusCode};

use super::transport::{Answer, Transport, segment};
use crate::registry::Error;

/// The subject the probes name. Nothing is ever written to it.
pub const PROBE_SUBJECT: &str = "schemaops-capability-probe-does-not-exist";

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
    /// A subject can hold a mode of its own: `GET /mode/{subject}` for a
    /// subject without one answers 404 (Confluent: 40409, older servers
    /// 40401). Karapace answers 200 with the global mode, and refuses
    /// `PUT`/`DELETE /mode/{subject}` with 405.
    pub subject_mode: bool,
    /// `normalize=true` is accepted on lookups and registrations.
    pub normalize: bool,
}

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

        let mode_answer = transport.send(Method::GET, "/mode", &[], None).await?;
        let mode = mode_answer.status.is_success();
        let subject_mode = mode && {
            let answer = transport
                .send(
                    Method::GET,
                    &format!("/mode/{subject}"),
                    &[("defaultToGlobal", "false".to_owned())],
                    None,
                )
                .await?;
            answer.status == StatusCode::NOT_FOUND && matches!(answer.error_code(), Some(40401 | 40409))
        };

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

        let found = Self {
            check_all_versions,
            verbose,
            mode,
            subject_mode,
            normalize,
        };
        tracing::info!(
            url = transport.base(),
            check_all_versions,
            verbose,
            mode,
            subject_mode,
            normalize,
            "Probed the registry's capabilities"
        );
        Ok(found)
    }
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

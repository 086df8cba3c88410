//! [`ApiError`]: every failure as Confluent's `{"error_code", "message"}`
//! body with the matching HTTP status. `message` is Confluent's exact text
//! wherever Confluent has a fixed one (clients and test suites compare it);
//! what schemaops adds goes in a third field, `detail`, which Confluent's
//! Java client (`ErrorMessage` ignores unknown properties since 6.1.2) and
//! its Python client (reads `error_code` and `message` by key) pass over.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::wire::json_response;
use crate::registry::Error;

/// An error response of the REST API.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: u32,
    message: String,
    detail: Option<String>,
}

impl ApiError {
    /// A request the API itself refuses (bad JSON, bad query), with HTTP 400
    /// or another status and Confluent-style code.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: 400,
            message: message.into(),
            detail: None,
        }
    }

    /// A request without a schema text: Confluent's 42201 "Empty schema".
    pub fn empty_schema() -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: 42201,
            message: "Empty schema".to_owned(),
            detail: None,
        }
    }

    /// An unknown path: Jersey's text, as Confluent answers it.
    pub fn not_found(path: &str) -> Self {
        Self::plain(StatusCode::NOT_FOUND, "HTTP 404 Not Found").with_detail(format!("no such endpoint: {path}"))
    }

    /// A request without the body the route needs: Confluent's bean
    /// validation of its `@NotNull` body parameter (422, code 422).
    pub fn missing_body() -> Self {
        Self::plain(StatusCode::UNPROCESSABLE_ENTITY, "request must not be null (was null)")
            .with_detail("the request body is empty; send a JSON object")
    }

    /// A request body over the size limit.
    pub fn body_too_large(limit: usize) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: 42209,
            message: format!("the request body is larger than the limit of {limit} bytes"),
            detail: None,
        }
    }

    /// A request without valid credentials. Says nothing about what exists.
    pub fn unauthorized() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: 40101,
            message: "authentication required".to_owned(),
            detail: None,
        }
    }

    /// A REST write in GitOps-only mode without an admin credential: 403
    /// with Confluent's code for a denied operation (40301).
    pub fn gitops_only() -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            code: 40301,
            message: "this registry is managed through GitOps: subjects, versions, compatibility levels and modes \
                      change only through Schema and SubjectConfig resources (REST writes need an admin credential)"
                .to_owned(),
            detail: None,
        }
    }

    /// A write a SchemaPolicy refuses: HTTP 422 with `code`, Confluent's
    /// code for the setting refused (42203 for a compatibility level, 42204
    /// for a mode), and the policy's explanation.
    pub fn refused_by_policy(code: u32, message: String) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code,
            message,
            detail: None,
        }
    }

    /// An error with no code of its own (a wrong method, an unreadable
    /// path): the HTTP status is the code, as Confluent answers them.
    pub fn plain(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code: u32::from(status.as_u16()),
            message: message.into(),
            detail: None,
        }
    }

    /// The same error with schemaops' own explanation beside Confluent's text.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Confluent's error code.
    pub fn code(&self) -> u32 {
        self.code
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let wording = match &error {
            Error::Store { source, .. } if source.is::<crate::registry::embedded::store::NoLeader>() => {
                super::wording::Wording {
                    message: "no leader of the registry's store is known to this instance; retry the write shortly"
                        .to_owned(),
                    detail: None,
                }
            }
            Error::Store { source, .. } if source.is::<crate::registry::embedded::store::ReadOnlyStore>() => {
                super::wording::Wording {
                    message: "this registry instance is a read-only follower and cannot forward the write; \
                              send it to the instance that writes the store"
                        .to_owned(),
                    detail: None,
                }
            }
            // Never show internals: the chain goes to the log.
            Error::Store { .. } => {
                tracing::error!(error = &error as &dyn std::error::Error, "Registry store failed");
                super::wording::Wording {
                    message: "the registry could not complete the request; see its log".to_owned(),
                    detail: None,
                }
            }
            other => super::wording::wording(other),
        };
        Self {
            status,
            code: error.code(),
            message: wording.message,
            detail: wording.detail,
        }
    }
}

/// The body of every error response: Confluent's two fields, and
/// schemaops' `detail` when it has more to say.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"error_code": 40402, "message": "Version 15 not found.",
                          "detail": "version 15 of subject `orders-value` not found"}))]
pub struct ErrorBody {
    /// Confluent's error code: the HTTP status, or the status followed by two digits (40401).
    pub error_code: u32,
    /// What went wrong: Confluent's exact text where Confluent has a fixed one.
    pub message: String,
    /// schemaops' own explanation (which subject, which value, what to do);
    /// absent when the message says it all. Confluent sends no such field.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub detail: Option<String>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error_code: self.code,
            message: self.message,
            detail: self.detail,
        };
        let mut response = json_response(&body);
        *response.status_mut() = self.status;
        response
    }
}

//! [`ApiError`]: every failure as Confluent's `{"error_code", "message"}`
//! body with the matching HTTP status.

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
}

impl ApiError {
    /// A request the API itself refuses (bad JSON, bad query), with HTTP 400
    /// or another status and Confluent-style code.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: 400,
            message: message.into(),
        }
    }

    /// A request without a schema text: Confluent's 42201 "Empty schema".
    pub fn empty_schema() -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: 42201,
            message: "Empty schema".to_owned(),
        }
    }

    /// An unknown path.
    pub fn not_found(path: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: 404,
            message: format!("no such endpoint: {path}"),
        }
    }

    /// A request body over the size limit.
    pub fn body_too_large(limit: usize) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            code: 42209,
            message: format!("the request body is larger than the limit of {limit} bytes"),
        }
    }

    /// A request without valid credentials. Says nothing about what exists.
    pub fn unauthorized() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: 40101,
            message: "authentication required".to_owned(),
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
        }
    }

    /// An error with no code of its own (a wrong method, an unreadable
    /// path): the HTTP status is the code, as Confluent answers them.
    pub fn plain(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code: u32::from(status.as_u16()),
            message: message.into(),
        }
    }

    /// Confluent's error code.
    pub fn code(&self) -> u32 {
        self.code
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = match &error {
            // Never show internals: the chain goes to the log.
            Error::Store { .. } => {
                tracing::error!(error = &error as &dyn std::error::Error, "Registry store failed");
                "the registry could not complete the request; see its log".to_owned()
            }
            other => super::wording::message(other),
        };
        Self {
            status,
            code: error.code(),
            message,
        }
    }
}

/// The body of every error response, as Confluent sends it: exactly these
/// two fields.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"error_code": 40401, "message": "Subject 'orders-value' not found."}))]
pub struct ErrorBody {
    /// Confluent's error code: the HTTP status, or the status followed by two digits (40401).
    pub error_code: u32,
    /// What went wrong, for a person.
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error_code: self.code,
            message: self.message,
        };
        let mut response = json_response(&body);
        *response.status_mut() = self.status;
        response
    }
}

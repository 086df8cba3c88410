//! Errors as Kubernetes `Status` objects.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A failed request: the HTTP code, the `reason`, a message, and what it was about.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    /// The machine-readable reason, e.g. `NotFound`.
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// `details` of the Status (name, group, kind), when known.
    pub details: Option<Value>,
}

impl ApiError {
    /// A Status with no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// Adds `details` naming the object: its name, API group and plural.
    pub fn about(mut self, name: &str, group: &str, plural: &str) -> ApiError {
        let mut details = json!({"group": group, "kind": plural});
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        self.details = Some(details);
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 404 for a path the server does not serve.
    pub fn no_route() -> ApiError {
        ApiError::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 422 Invalid.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(422, "Invalid", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(code, &self.to_status())
    }
}

/// A JSON response with `Content-Type: application/json`.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    (
        code,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

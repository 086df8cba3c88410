//! Reading request bodies (JSON, YAML for apply, protobuf for a few kinds) and small object accessors.

use axum::http::header::CONTENT_TYPE;
use serde_json::{Value, json};

use super::handlers::Call;
use super::protobuf;
use super::resources::Resource;
use super::status::ApiError;

type Result<T> = std::result::Result<T, ApiError>;

/// Any JSON body; malformed JSON is a 400.
pub(super) fn parse_json(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("json parse error: {error}")))
}

/// A request body: JSON, or the protobuf kubectl's typed commands send.
pub(super) fn parse_body(call: &Call) -> Result<Value> {
    if call.header(CONTENT_TYPE).starts_with(protobuf::CONTENT_TYPE) {
        return protobuf::decode(call.body).ok_or_else(|| {
            ApiError::new(
                415,
                "UnsupportedMediaType",
                "this test server reads protobuf only for namespaces, configmaps and secrets",
            )
        });
    }
    parse_object(call.body)
}

/// A JSON object body.
pub(super) fn parse_object(body: &[u8]) -> Result<Value> {
    let value = parse_json(body)?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    Ok(value)
}

/// Rejects a body whose apiVersion or kind disagree with the URL, and fills them in when absent.
pub(super) fn check_type(object: &mut Value, resource: &Resource) -> Result<()> {
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(api_version) if api_version != resource.api_version() => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                resource.api_version()
            )));
        }
        _ => {}
    }
    match object.get("kind").and_then(Value::as_str) {
        Some(kind) if kind != resource.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                resource.kind
            )));
        }
        _ => {}
    }
    object["apiVersion"] = json!(resource.api_version());
    object["kind"] = json!(resource.kind);
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    Ok(())
}

/// An apply configuration: JSON first, then YAML.
pub(super) fn parse_apply_body(body: &[u8]) -> Result<Value> {
    let value = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value,
        Err(_) => {
            let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the apply body is not UTF-8"))?;
            serde_saphyr::from_str::<Value>(text)
                .map_err(|error| ApiError::bad_request(format!("yaml parse error: {error}")))?
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the apply body must be an object"));
    }
    Ok(value)
}

/// The DeleteOptions of a DELETE (an empty body means none).
pub(super) fn delete_options(body: &[u8]) -> Result<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    parse_json(body)
}

/// A non-empty string at a JSON pointer.
pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// `metadata.finalizers`, empty when absent.
pub(super) fn finalizers(object: &Value) -> Vec<Value> {
    object["metadata"]["finalizers"].as_array().cloned().unwrap_or_default()
}

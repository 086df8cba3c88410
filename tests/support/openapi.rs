//! Checks an answer of the REST API against the OpenAPI document it serves
//! (`schemaops::registry::api::openapi`): the operation exists, lists the
//! status, lists the media type for it, and the body fits the schema. The
//! router tests call it on every answer, so each scenario they play (every
//! endpoint, every error code) also checks that the document lists what
//! happened; `tests/openapi_contract.rs` adds schemathesis' generated requests.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(schemaops::registry::api::openapi::document()).expect("the document is JSON")
});

/// Compiled validators by JSON pointer of the schema.
static VALIDATORS: LazyLock<Mutex<HashMap<String, jsonschema::Validator>>> = LazyLock::new(Default::default);

/// The path template of the documented operation `method path` names, the
/// one with the most literal segments when several match.
fn template(method: &str, path: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = method.to_ascii_lowercase();
    DOCUMENT["paths"]
        .as_object()?
        .iter()
        .filter(|(_, item)| item.get(&method).is_some())
        .filter_map(|(template, _)| {
            let parts: Vec<&str> = template.trim_start_matches('/').split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literal = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                // A parameter takes any segment, even an empty one (`/subjects//versions`).
                if !part.starts_with('{') {
                    if part != segment {
                        return None;
                    }
                    literal += 1;
                }
            }
            Some((literal, template.clone()))
        })
        .max()
        .map(|(_, template)| template)
}

/// `value`, or what it refers to.
fn resolve(value: &Value) -> &Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(target) => resolve(
            DOCUMENT
                .pointer(target.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("{target} resolves")),
        ),
        None => value,
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Whether `body` fits the schema at `pointer` of the document.
fn check_body(pointer: &str, body: &Value) -> Result<(), String> {
    let mut validators = VALIDATORS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !validators.contains_key(pointer) {
        // The schema with the document's components beside it, so its
        // `#/components/...` references resolve.
        let mut root = DOCUMENT
            .pointer(pointer)
            .cloned()
            .unwrap_or_else(|| panic!("{pointer} exists"));
        root["components"] = DOCUMENT["components"].clone();
        let validator = jsonschema::validator_for(&root).map_err(|error| format!("{pointer}: {error}"))?;
        validators.insert(pointer.to_owned(), validator);
    }
    let errors: Vec<String> = validators[pointer]
        .iter_errors(body)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Checks one answer; `uri` may carry a query string. An error names what
/// the document does not list.
pub fn check(method: &str, uri: &str, status: u16, content_type: Option<&str>, body: &[u8]) -> Result<(), String> {
    let path = uri.split('?').next().unwrap_or_default();
    let what = format!("{method} {uri} answered {status}");
    // Every route is served again under `/contexts/{context}/` (the
    // document says so once): such a path answers as the route it names.
    let path = match path.strip_prefix("/contexts/").and_then(|rest| rest.split_once('/')) {
        Some((_, rest)) => format!("/{rest}"),
        None => path.to_owned(),
    };
    let path = path.as_str();
    let Some(template) = template(method, path) else {
        // No such operation: the fallback's 404, or 405 for a method the path lacks.
        if status != 404 && status != 405 {
            return Err(format!("{what}, but the document has no such operation"));
        }
        let body: Value = serde_json::from_slice(body).map_err(|_| format!("{what} without a JSON body"))?;
        return check_body("/components/schemas/ErrorBody", &body).map_err(|error| format!("{what}: {error}"));
    };
    let operation = &DOCUMENT["paths"][&template][method.to_ascii_lowercase()];
    let Some(response) = operation["responses"].get(status.to_string()) else {
        return Err(format!("{what}, which {method} {template} does not list"));
    };
    let response = resolve(response);
    if response.get("content").is_none() && body.is_empty() {
        // An answer without content (204), as the document lists it.
        return Ok(());
    }
    let media = content_type
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let Some(content) = response["content"].get(&media) else {
        return Err(format!("{what} as {media:?}, not a media type listed for it"));
    };
    let schema = &content["schema"];
    let body: Value = match serde_json::from_slice(body) {
        Ok(body) => body,
        // Only a schema that allows anything may come as text that is not JSON
        // (the raw schema routes: `.proto` text).
        Err(_) if schema.as_object().is_some_and(serde_json::Map::is_empty) => return Ok(()),
        Err(_) => return Err(format!("{what} with a body that is not JSON")),
    };
    let pointer = format!(
        "/paths/{}/{}/responses/{status}/content/{}/schema",
        escape(&template),
        method.to_ascii_lowercase(),
        escape(&media)
    );
    let pointer = match operation["responses"][status.to_string()]
        .get("$ref")
        .and_then(Value::as_str)
    {
        Some(target) => format!("{}/content/{}/schema", target.trim_start_matches('#'), escape(&media)),
        None => pointer,
    };
    check_body(&pointer, &body).map_err(|error| format!("{what}: {error}"))
}

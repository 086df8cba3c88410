//! Routing: which resource and objects a request names, and the shape of the answer.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::resources::{self, Resource};
use super::status::{ApiError, json_response};
use super::store::ObjectKey;
use super::verbs::{create, delete, delete_collection, get, list, patch_object, update};
use super::{App, discovery, events, openapi, table};

type Result<T> = std::result::Result<T, ApiError>;

/// Every request goes through here.
pub async fn handle(State(app): State<App>, request: Request) -> Response {
    app.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    app.record(&request);
    let (parts, body) = request.into_parts();
    let response = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(body) => {
            let query = parse_query(parts.uri.query().unwrap_or_default());
            let call = Call {
                app: &app,
                method: &parts.method,
                query: &query,
                headers: &parts.headers,
                body: &body,
            };
            route(&call, parts.uri.path()).unwrap_or_else(IntoResponse::into_response)
        }
        Err(error) => ApiError::bad_request(format!("reading the body: {error}")).into_response(),
    };
    if app.log {
        let content_type = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("-");
        let accept = parts
            .headers
            .get(ACCEPT)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("-");
        eprintln!(
            "apiserver: {} {} [{content_type}] [{accept}] -> {}",
            parts.method,
            parts.uri,
            response.status().as_u16()
        );
    }
    response
}

/// One request: the state, method, query parameters, headers and body.
pub(super) struct Call<'a> {
    pub(super) app: &'a App,
    pub(super) method: &'a Method,
    pub(super) query: &'a HashMap<String, String>,
    pub(super) headers: &'a HeaderMap,
    pub(super) body: &'a Bytes,
}

impl Call<'_> {
    pub(super) fn header(&self, name: axum::http::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// Percent-decodes a query component (`+` is a space).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%' && index + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[index + 1..index + 3]).ok())
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[index], escaped) {
            (_, Some(byte)) => {
                out.push(byte);
                index += 2;
            }
            (b'+', None) => out.push(b' '),
            (byte, None) => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query parameters (the last of repeated names wins).
fn parse_query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

/// A 200 JSON response.
pub(super) fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

/// Dispatches on the path: version and health, discovery, OpenAPI, resources.
fn route(call: &Call, path: &str) -> Result<Response> {
    let segments: Vec<&str> = path.split('/').filter(|segment| !segment.is_empty()).collect();
    let discovery_only = |response: Result<Response>| {
        if *call.method == Method::GET {
            response
        } else {
            Err(ApiError::method_not_allowed())
        }
    };
    match segments.as_slice() {
        ["version"] => discovery_only(Ok(ok(&json!({
            "major": "1", "minor": "32", "gitVersion": "v1.32.0", "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.3",
            "compiler": "gc", "platform": "linux/amd64",
        })))),
        ["healthz" | "readyz" | "livez"] => Ok((StatusCode::OK, "ok").into_response()),
        ["api"] => discovery_only(Ok(ok(&discovery::core_versions(&call.app.address)))),
        ["apis"] => discovery_only(Ok(ok(&discovery::group_list(&call.app.lock())))),
        ["openapi", "v3"] => discovery_only(Ok(ok(&openapi::index(&call.app.lock())))),
        ["openapi", "v3", rest @ ..] => discovery_only(
            openapi::document(&call.app.lock(), &rest.join("/"))
                .map(|document| ok(&document))
                .ok_or_else(ApiError::no_route),
        ),
        ["api", "v1"] => discovery_only(
            discovery::resource_list(&call.app.lock(), "", "v1")
                .map(|list| ok(&list))
                .ok_or_else(ApiError::no_route),
        ),
        ["apis", group] => discovery_only(
            discovery::group(&call.app.lock(), group)
                .map(|document| ok(&document))
                .ok_or_else(ApiError::no_route),
        ),
        ["apis", group, version] => discovery_only(
            discovery::resource_list(&call.app.lock(), group, version)
                .map(|list| ok(&list))
                .ok_or_else(ApiError::no_route),
        ),
        ["api", "v1", rest @ ..] => resource_request(call, "", "v1", rest),
        ["apis", group, version, rest @ ..] => resource_request(call, group, version, rest),
        _ => Err(ApiError::no_route()),
    }
}

/// A request on one resource: which objects it names.
pub(super) struct Target {
    pub(super) resource: Resource,
    /// The namespace of the path; "" for cluster-scoped objects and all-namespace lists.
    pub(super) namespace: String,
    pub(super) all_namespaces: bool,
    pub(super) name: Option<String>,
    pub(super) status: bool,
}

impl Target {
    pub(super) fn key(&self, name: &str) -> ObjectKey {
        ObjectKey {
            group: self.resource.storage_group().to_string(),
            plural: self.resource.plural.clone(),
            namespace: self.namespace.clone(),
            name: name.to_string(),
        }
    }

    pub(super) fn not_found(&self, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", self.resource.qualified()),
        )
        .about(name, &self.resource.group, &self.resource.plural)
    }

    pub(super) fn conflict(&self, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
                self.resource.qualified()
            ),
        )
        .about(name, &self.resource.group, &self.resource.plural)
    }

    pub(super) fn invalid(&self, name: &str, message: &str) -> ApiError {
        let kind = if self.resource.group.is_empty() {
            self.resource.kind.clone()
        } else {
            format!("{}.{}", self.resource.kind, self.resource.group)
        };
        ApiError::invalid(format!("{kind} {name:?} is invalid: {message}")).about(
            name,
            &self.resource.group,
            &self.resource.plural,
        )
    }
}

/// Parses `[namespaces/{ns}/]{plural}[/{name}[/status]]` and dispatches on the method.
fn resource_request(call: &Call, group: &str, version: &str, rest: &[&str]) -> Result<Response> {
    let (namespace, tail) = if rest.len() >= 3 && rest[0] == "namespaces" && !matches!(rest[2], "status" | "finalize") {
        (Some(rest[1]), &rest[2..])
    } else {
        (None, rest)
    };
    let (plural, name, subresource) = match tail {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, subresource] => (*plural, Some(*name), Some(*subresource)),
        _ => return Err(ApiError::no_route()),
    };
    let resource = resources::find(&call.app.lock(), group, version, plural).ok_or_else(ApiError::no_route)?;
    if namespace.is_some() && !resource.namespaced {
        return Err(ApiError::no_route());
    }
    if namespace.is_none() && resource.namespaced && name.is_some() {
        return Err(ApiError::no_route());
    }
    let status = match subresource {
        None => false,
        Some("status") if resource.status_subresource => true,
        Some(_) => return Err(ApiError::no_route()),
    };
    let target = Target {
        all_namespaces: resource.namespaced && namespace.is_none(),
        namespace: namespace.unwrap_or_default().to_string(),
        name: name.map(String::from),
        status,
        resource,
    };
    match (&target.name, call.method.clone()) {
        (None, Method::GET) => list(call, &target),
        (None, Method::POST) if !target.all_namespaces => create(call, &target),
        (None, Method::DELETE) if !target.all_namespaces => delete_collection(call, &target),
        (Some(name), Method::GET) => get(call, &target, name),
        (Some(name), Method::PUT) => update(call, &target, name),
        (Some(name), Method::PATCH) => patch_object(call, &target, name),
        (Some(name), Method::DELETE) if !target.status => delete(call, &target, name),
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The shape a client asked for in its Accept header.
#[derive(Debug, Clone)]
pub enum Shape {
    /// The objects themselves.
    Full,
    /// `meta.k8s.io/v1` PartialObjectMetadata (kube's metadata API).
    Metadata,
    /// A `meta.k8s.io/v1` Table, with `includeObject`.
    Table(String),
}

impl Shape {
    pub(super) fn of(call: &Call) -> Shape {
        let accept = call.header(ACCEPT);
        let first = accept.split(',').next().unwrap_or_default();
        if first.contains("as=PartialObjectMetadata") {
            Shape::Metadata
        } else if table::wants_table(accept) {
            Shape::Table(call.param("includeObject").unwrap_or("Metadata").to_string())
        } else {
            Shape::Full
        }
    }

    /// One object in this shape.
    pub fn one(&self, object: Value, resource: &Resource) -> Value {
        match self {
            Shape::Full => object,
            Shape::Metadata => metadata_only(&object),
            Shape::Table(include) => table::table(resource, &[object], None, include),
        }
    }
}

/// An object as PartialObjectMetadata.
pub fn metadata_only(object: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"].clone()})
}

/// A written object in the shape the client asked for (Tables only for reads).
pub(super) fn respond(call: &Call, code: StatusCode, object: Value, resource: &Resource) -> Response {
    let shaped = match Shape::of(call) {
        Shape::Table(_) => object,
        shape => shape.one(object, resource),
    };
    json_response(code, &shaped)
}

/// An object as it leaves the server, labelled with the version it was asked for.
pub fn present(mut object: Value, resource: &Resource) -> Value {
    if resource.group == events::GROUP {
        object = events::to_events(object);
    }
    object["apiVersion"] = json!(resource.api_version());
    object["kind"] = json!(resource.kind);
    object
}

/// An object written through `resource` in the shape it is stored in.
pub(super) fn to_storage(object: Value, resource: &Resource) -> Value {
    if resource.group == events::GROUP {
        events::to_core(object)
    } else {
        object
    }
}

/// Whether the request asks for a dry run (nothing is stored).
pub(super) fn dry_run(call: &Call) -> bool {
    call.param("dryRun").is_some_and(|value| !value.is_empty())
}

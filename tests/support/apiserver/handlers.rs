//! Routing and the verbs: get, list, create, update, patch, delete, on main resources and `/status`.

use std::collections::{BTreeSet, HashMap};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::apply::{self, FieldPath, ListMaps, Segment};
use super::resources::{self, Resource};
use super::selectors::Selectors;
use super::status::{ApiError, json_response};
use super::store::{ObjectKey, Store, namespace_key};
use super::{App, discovery, events, openapi, patch, protobuf, table, time, watch};

type Result<T> = std::result::Result<T, ApiError>;

/// Every request goes through here.
pub async fn handle(State(app): State<App>, request: Request) -> Response {
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

struct Call<'a> {
    app: &'a App,
    method: &'a Method,
    query: &'a HashMap<String, String>,
    headers: &'a HeaderMap,
    body: &'a Bytes,
}

impl Call<'_> {
    fn header(&self, name: axum::http::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

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

fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

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
struct Target {
    resource: Resource,
    /// The namespace of the path; "" for cluster-scoped objects and all-namespace lists.
    namespace: String,
    all_namespaces: bool,
    name: Option<String>,
    status: bool,
}

impl Target {
    fn key(&self, name: &str) -> ObjectKey {
        ObjectKey {
            group: self.resource.storage_group().to_string(),
            plural: self.resource.plural.clone(),
            namespace: self.namespace.clone(),
            name: name.to_string(),
        }
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", self.resource.qualified()),
        )
        .about(name, &self.resource.group, &self.resource.plural)
    }

    fn conflict(&self, name: &str) -> ApiError {
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

    fn invalid(&self, name: &str, message: &str) -> ApiError {
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
    fn of(call: &Call) -> Shape {
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

fn respond(call: &Call, code: StatusCode, object: Value, resource: &Resource) -> Response {
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
fn to_storage(object: Value, resource: &Resource) -> Value {
    if resource.group == events::GROUP {
        events::to_core(object)
    } else {
        object
    }
}

fn parse_json(body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body).map_err(|error| ApiError::bad_request(format!("json parse error: {error}")))
}

/// A request body: JSON, or the protobuf kubectl's typed commands send.
fn parse_body(call: &Call) -> Result<Value> {
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

/// Drops empty metadata lists and maps (finalizers, labels, annotations, owner references), as the
/// real server's round trip through `ObjectMeta` (`omitempty`) does. kube-runtime's finalizer helper
/// relies on it: it tests `/metadata/finalizers` for null when there are none.
fn normalize_metadata(object: &mut Value) {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.retain(|name, value| {
            let empty = match value {
                Value::Array(items) => items.is_empty(),
                Value::Object(fields) => fields.is_empty(),
                Value::Null => true,
                _ => false,
            };
            !(empty
                && matches!(
                    name.as_str(),
                    "finalizers"
                        | "labels"
                        | "annotations"
                        | "ownerReferences"
                        | "managedFields"
                        | "generateName"
                        | "creationTimestamp"
                ))
        });
    }
}

/// Moves a Secret's write-only `stringData` into `data`, base64-encoded.
fn fold_string_data(object: &mut Value, resource: &Resource) {
    use base64::Engine;
    if !(resource.group.is_empty() && resource.plural == "secrets") {
        return;
    }
    let Some(string_data) = object.as_object_mut().and_then(|fields| fields.remove("stringData")) else {
        return;
    };
    if let Some(entries) = string_data.as_object() {
        let data = object
            .as_object_mut()
            .expect("an object")
            .entry("data")
            .or_insert_with(|| json!({}));
        for (key, value) in entries {
            let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default());
            data[key] = json!(encoded);
        }
    }
}

fn parse_object(body: &[u8]) -> Result<Value> {
    let value = parse_json(body)?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    Ok(value)
}

/// Rejects a body whose apiVersion or kind disagree with the URL, and fills them in when absent.
fn check_type(object: &mut Value, resource: &Resource) -> Result<()> {
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

fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

fn finalizers(object: &Value) -> Vec<Value> {
    object["metadata"]["finalizers"].as_array().cloned().unwrap_or_default()
}

fn get(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let store = call.app.lock();
    let object = store.get(&target.key(name)).ok_or_else(|| target.not_found(name))?;
    let object = present(object.clone(), &target.resource);
    Ok(ok(&Shape::of(call).one(object, &target.resource)))
}

fn list(call: &Call, target: &Target) -> Result<Response> {
    if target.status {
        return Err(ApiError::method_not_allowed());
    }
    let selectors = Selectors::from_query(call.query, target.resource.custom)?;
    let namespace = (!target.all_namespaces && target.resource.namespaced).then_some(target.namespace.as_str());
    if matches!(call.param("watch"), Some("true" | "1")) {
        return watch::serve(
            call.app.clone(),
            target.resource.clone(),
            namespace.map(String::from),
            selectors,
            Shape::of(call),
            call.query,
        );
    }
    let store = call.app.lock();
    let items: Vec<Value> = store
        .list(target.resource.storage_group(), &target.resource.plural, namespace)
        .into_iter()
        .filter(|object| selectors.matches(object))
        .map(|object| present(object.clone(), &target.resource))
        .collect();
    let revision = store.revision();
    match Shape::of(call) {
        Shape::Table(include) => return Ok(ok(&table::table(&target.resource, &items, Some(revision), &include))),
        Shape::Metadata => {
            return Ok(ok(&json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": revision.to_string()},
                "items": items.iter().map(metadata_only).collect::<Vec<_>>(),
            })));
        }
        Shape::Full => {}
    }
    Ok(ok(&json!({
        "kind": format!("{}List", target.resource.kind),
        "apiVersion": target.resource.api_version(),
        "metadata": {"resourceVersion": revision.to_string()},
        "items": items,
    })))
}

fn random_suffix(store: &mut Store) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut seed = store
        .new_uid()
        .bytes()
        .fold(0u64, |hash, byte| hash.wrapping_mul(31).wrapping_add(u64::from(byte)));
    (0..5)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ALPHABET[((seed >> 33) % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

fn dry_run(call: &Call) -> bool {
    call.param("dryRun").is_some_and(|value| !value.is_empty())
}

fn create(call: &Call, target: &Target) -> Result<Response> {
    if target.status {
        return Err(ApiError::method_not_allowed());
    }
    let mut object = parse_body(call)?;
    check_type(&mut object, &target.resource)?;
    let object = to_storage(object, &target.resource);
    let mut store = call.app.lock();
    let created = insert_new(&mut store, target, object, dry_run(call))?;
    call.app.notify(&store);
    Ok(respond(
        call,
        StatusCode::CREATED,
        present(created, &target.resource),
        &target.resource,
    ))
}

/// Stores a new object: checks its namespace and name, sets the server-owned metadata.
fn insert_new(store: &mut Store, target: &Target, mut object: Value, dry_run: bool) -> Result<Value> {
    let resource = &target.resource;
    if resource.namespaced {
        if let Some(namespace) = text(&object, "/metadata/namespace")
            && namespace != target.namespace
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        object["metadata"]["namespace"] = json!(target.namespace);
        if store.get(&namespace_key(&target.namespace)).is_none() {
            return Err(
                ApiError::new(404, "NotFound", format!("namespaces {:?} not found", target.namespace)).about(
                    &target.namespace,
                    "",
                    "namespaces",
                ),
            );
        }
    } else if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("namespace");
    }
    let name = match (text(&object, "/metadata/name"), text(&object, "/metadata/generateName")) {
        (Some(name), _) => name.to_string(),
        (None, Some(prefix)) => {
            let prefix = prefix.to_string();
            loop {
                let candidate = format!("{prefix}{}", random_suffix(store));
                if store.get(&target.key(&candidate)).is_none() {
                    break candidate;
                }
            }
        }
        (None, None) => {
            return Err(target.invalid("", "metadata.name: Required value: name or generateName is required"));
        }
    };
    if let Some(same) = target.name.as_deref()
        && same != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({same})"
        )));
    }
    let key = target.key(&name);
    if store.get(&key).is_some() {
        return Err(ApiError::new(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", resource.qualified()),
        )
        .about(&name, &resource.group, &resource.plural));
    }
    if resource.is_crd() {
        let expected = format!(
            "{}.{}",
            object["spec"]["names"]["plural"].as_str().unwrap_or_default(),
            object["spec"]["group"].as_str().unwrap_or_default()
        );
        if name != expected {
            return Err(target.invalid(
                &name,
                &format!("metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            ));
        }
    }
    fold_string_data(&mut object, resource);
    normalize_metadata(&mut object);
    if let Some(schema) = &resource.schema {
        resources::apply_defaults(&mut object, schema);
    }
    let now = time::now_rfc3339();
    let uid = store.new_uid();
    {
        let metadata = object["metadata"].as_object_mut().expect("metadata is an object");
        metadata.insert("name".into(), json!(name));
        for server_owned in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            metadata.remove(server_owned);
        }
        metadata.insert("uid".into(), json!(uid));
        metadata.insert("creationTimestamp".into(), json!(now));
        if resource.custom || resource.is_crd() {
            metadata.insert("generation".into(), json!(1));
        } else {
            metadata.remove("generation");
        }
    }
    if resource.custom
        && resource.status_subresource
        && let Some(fields) = object.as_object_mut()
    {
        fields.remove("status");
    }
    if resource.is_crd() {
        object["status"] = resources::crd_status(&object, &now, None);
    }
    if resource.is_namespace() {
        object["spec"] = json!({"finalizers": ["kubernetes"]});
        object["status"] = json!({"phase": "Active"});
        let labels = object["metadata"]
            .as_object_mut()
            .expect("metadata is an object")
            .entry("labels")
            .or_insert_with(|| json!({}));
        labels["kubernetes.io/metadata.name"] = json!(name);
    }
    if dry_run {
        return Ok(object);
    }
    let revision = store.next_revision();
    object["metadata"]["resourceVersion"] = json!(revision.to_string());
    store.put(key, object.clone(), revision);
    Ok(object)
}

/// What generation compares: everything but metadata (and status, when it is a subresource).
fn spec_part(object: &Value, resource: &Resource) -> Value {
    let mut part = object.clone();
    if let Some(fields) = part.as_object_mut() {
        for name in ["metadata", "apiVersion", "kind"] {
            fields.remove(name);
        }
        if resource.status_subresource {
            fields.remove("status");
        }
    }
    part
}

/// Finishes a write to an existing object: keeps what the client may not change, bumps generation
/// and resourceVersion only on a real change, and removes the object when its last finalizer goes
/// during deletion. Returns the stored (or last) object.
fn finish_write(
    store: &mut Store,
    target: &Target,
    name: &str,
    old: &Value,
    candidate: Value,
    dry_run: bool,
) -> Result<Value> {
    let resource = &target.resource;
    let mut new = if target.status {
        let mut new = old.clone();
        match candidate.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(fields) = new.as_object_mut() {
                    fields.remove("status");
                }
            }
        }
        new
    } else {
        let mut new = candidate;
        if !new.is_object() {
            return Err(ApiError::bad_request("the object must be a JSON object"));
        }
        if !new["metadata"].is_object() {
            new["metadata"] = json!({});
        }
        if let Some(other) = text(&new, "/metadata/name")
            && other != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({other}) does not match the name on the URL ({name})"
            )));
        }
        if resource.namespaced
            && let Some(other) = text(&new, "/metadata/namespace")
            && other != target.namespace
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        if resource.status_subresource {
            match old.get("status") {
                Some(status) => new["status"] = status.clone(),
                None => {
                    if let Some(fields) = new.as_object_mut() {
                        fields.remove("status");
                    }
                }
            }
        }
        let old_metadata = old["metadata"].as_object().cloned().unwrap_or_default();
        let metadata = new["metadata"].as_object_mut().expect("metadata is an object");
        for server_owned in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
            "selfLink",
        ] {
            match old_metadata.get(server_owned) {
                Some(value) => metadata.insert(server_owned.into(), value.clone()),
                None => metadata.remove(server_owned),
            };
        }
        metadata.remove("managedFields");
        new
    };
    new["apiVersion"] = old["apiVersion"].clone();
    new["kind"] = old["kind"].clone();
    fold_string_data(&mut new, resource);
    normalize_metadata(&mut new);
    if resource.is_namespace() {
        // A namespace's finalizers change through `/finalize` only.
        new["spec"] = old["spec"].clone();
    }
    if let Some(schema) = &resource.schema {
        resources::apply_defaults(&mut new, schema);
    }
    if resource.is_crd() {
        let now = time::now_rfc3339();
        new["status"] = resources::crd_status(&new, &now, old.get("status"));
    }
    if old["metadata"].get("deletionTimestamp").is_some() {
        let before = finalizers(old);
        let added: Vec<Value> = finalizers(&new)
            .into_iter()
            .filter(|item| !before.contains(item))
            .collect();
        if !added.is_empty() {
            return Err(target.invalid(
                name,
                &format!(
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    Value::Array(added)
                ),
            ));
        }
    }
    if let Some(generation) = old["metadata"]["generation"].as_i64()
        && spec_part(old, resource) != spec_part(&new, resource)
    {
        new["metadata"]["generation"] = json!(generation + 1);
    }
    if new == *old || dry_run {
        return Ok(if dry_run { new } else { old.clone() });
    }
    let key = target.key(name);
    if new["metadata"].get("deletionTimestamp").is_some() && finalizers(&new).is_empty() {
        return Ok(remove_object(store, &key, &new));
    }
    let revision = store.next_revision();
    new["metadata"]["resourceVersion"] = json!(revision.to_string());
    store.put(key, new.clone(), revision);
    Ok(new)
}

/// Removes an object for good (a DELETED event with a new resourceVersion), with what depends on it:
/// a CRD's objects, a namespace's objects.
fn remove_object(store: &mut Store, key: &ObjectKey, last: &Value) -> Value {
    let mut dependents = Vec::new();
    if key.group == resources::CRD_GROUP && key.plural == resources::CRD_PLURAL {
        let group = last["spec"]["group"].as_str().unwrap_or_default().to_string();
        let plural = last["spec"]["names"]["plural"].as_str().unwrap_or_default().to_string();
        dependents = store.keys_where(|other, _| other.group == group && other.plural == plural);
    } else if key.group.is_empty() && key.plural == "namespaces" {
        dependents = store.keys_where(|other, _| other.namespace == key.name);
    }
    for dependent in dependents {
        if let Some(object) = store.get(&dependent).cloned() {
            remove_object(store, &dependent, &object);
        }
    }
    let revision = store.next_revision();
    let mut last = last.clone();
    last["metadata"]["resourceVersion"] = json!(revision.to_string());
    store.remove(key, last.clone(), revision);
    // The garbage collector, done at once: objects owned by this one go too (background propagation).
    if let Some(uid) = text(&last, "/metadata/uid") {
        let owned = store.keys_where(|_, object| {
            object["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|owners| owners.iter().any(|owner| owner["uid"] == uid))
        });
        for dependent in owned {
            if let Some(object) = store.get(&dependent).cloned() {
                delete_object(store, &dependent, &object);
            }
        }
    }
    last
}

fn check_revision(target: &Target, name: &str, old: &Value, candidate: &Value) -> Result<()> {
    if let Some(wanted) = text(candidate, "/metadata/resourceVersion")
        && Some(wanted) != text(old, "/metadata/resourceVersion")
    {
        return Err(target.conflict(name));
    }
    Ok(())
}

fn update(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let mut candidate = parse_body(call)?;
    check_type(&mut candidate, &target.resource)?;
    let candidate = to_storage(candidate, &target.resource);
    let mut store = call.app.lock();
    let old = store
        .get(&target.key(name))
        .cloned()
        .ok_or_else(|| target.not_found(name))?;
    if text(&candidate, "/metadata/resourceVersion").is_none() && (target.resource.custom || target.resource.is_crd()) {
        return Err(target.invalid(
            name,
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
        ));
    }
    check_revision(target, name, &old, &candidate)?;
    let written = finish_write(&mut store, target, name, &old, candidate, dry_run(call))?;
    call.app.notify(&store);
    Ok(respond(
        call,
        StatusCode::OK,
        present(written, &target.resource),
        &target.resource,
    ))
}

fn patch_object(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let content_type = call
        .header(CONTENT_TYPE)
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if content_type == "application/apply-patch+yaml" {
        return apply_patch(call, target, name);
    }
    let body = parse_json(call.body)?;
    let mut store = call.app.lock();
    let old = store
        .get(&target.key(name))
        .cloned()
        .ok_or_else(|| target.not_found(name))?;
    let view = present(old.clone(), &target.resource);
    let candidate = match content_type.as_str() {
        "application/merge-patch+json" => {
            let mut candidate = view.clone();
            patch::merge_patch(&mut candidate, &body);
            candidate
        }
        "application/strategic-merge-patch+json" if target.resource.custom => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        "application/strategic-merge-patch+json" => {
            let mut candidate = view.clone();
            patch::strategic_merge_patch(&mut candidate, &body);
            candidate
        }
        "application/json-patch+json" => patch::json_patch(&view, &body).map_err(|error| match error {
            patch::JsonPatchError::Malformed(message) => ApiError::bad_request(message),
            patch::JsonPatchError::Failed(message) => ApiError::invalid(message),
        })?,
        other => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format: {other}"),
            ));
        }
    };
    let mut candidate = candidate;
    check_type(&mut candidate, &target.resource)?;
    let candidate = to_storage(candidate, &target.resource);
    check_revision(target, name, &old, &candidate)?;
    let written = finish_write(&mut store, target, name, &old, candidate, dry_run(call))?;
    call.app.notify(&store);
    Ok(respond(
        call,
        StatusCode::OK,
        present(written, &target.resource),
        &target.resource,
    ))
}

fn parse_apply_body(body: &[u8]) -> Result<Value> {
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

fn apply_patch(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let mut config = parse_apply_body(call.body)?;
    if text(&config, "/apiVersion").is_none() || text(&config, "/kind").is_none() {
        return Err(ApiError::bad_request(
            "apiVersion and kind must be set in an apply configuration",
        ));
    }
    check_type(&mut config, &target.resource)?;
    let manager = call
        .param("fieldManager")
        .filter(|manager| !manager.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            )
        })?;
    if let Some(other) = text(&config, "/metadata/name")
        && other != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({other}) does not match the name on the URL ({name})"
        )));
    }
    let list_maps = ListMaps::from_schema(target.resource.schema.as_ref());
    let subresource = if target.status { "status" } else { "" }.to_string();
    let status_field = Segment::Field("status".into());
    let status = target.status;
    let status_is_subresource = target.resource.status_subresource;
    let in_scope = move |path: &FieldPath| {
        let under_status = path.first() == Some(&status_field);
        if status {
            under_status
        } else {
            !(status_is_subresource && under_status)
        }
    };
    let key = target.key(name);
    let manager_key = (key.clone(), manager.to_string(), subresource);
    let mut store = call.app.lock();
    let Some(old) = store.get(&key).cloned() else {
        if target.status {
            return Err(target.not_found(name));
        }
        let mut base = json!({"apiVersion": config["apiVersion"], "kind": config["kind"], "metadata": {"name": name}});
        if target.resource.namespaced {
            base["metadata"]["namespace"] = json!(target.namespace);
        }
        let (object, paths) = apply::apply(&base, &config, &list_maps, &BTreeSet::new(), &[], in_scope);
        let object = to_storage(object, &target.resource);
        let created = insert_new(&mut store, target, object, dry_run(call))?;
        if !dry_run(call) {
            store.managers.insert(manager_key, paths);
        }
        call.app.notify(&store);
        return Ok(respond(
            call,
            StatusCode::CREATED,
            present(created, &target.resource),
            &target.resource,
        ));
    };
    check_revision(target, name, &old, &config)?;
    let previous = store.managers.get(&manager_key).cloned().unwrap_or_default();
    let mut others: Vec<((ObjectKey, String, String), BTreeSet<FieldPath>)> = store
        .managers
        .iter()
        .filter(|((object, manager, subresource), _)| {
            *object == key && !(manager == &manager_key.1 && subresource == &manager_key.2)
        })
        .map(|(owner, paths)| (owner.clone(), paths.clone()))
        .collect();
    let view = present(old.clone(), &target.resource);
    // Fields another apply manager owns with a different value conflict, unless forced; forcing
    // takes them over.
    let force = call.param("force") == Some("true");
    let mut conflicts = Vec::new();
    for path in apply::leaf_paths(&config, &list_maps)
        .into_iter()
        .filter(|path| in_scope(path))
    {
        for ((_, owner, _), owned) in &mut others {
            let contested: Vec<FieldPath> = owned
                .iter()
                .filter(|other| apply::overlaps(&path, other))
                .cloned()
                .collect();
            for other in contested {
                if apply::lookup(&view, &other) != apply::lookup(&config, &other) {
                    conflicts.push((owner.clone(), apply::display(&other)));
                    owned.remove(&other);
                }
            }
        }
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort();
        conflicts.dedup();
        let listed: Vec<String> = conflicts
            .iter()
            .map(|(owner, field)| format!("conflict with {owner:?}: {field}"))
            .collect();
        let count = conflicts.len();
        let mut error = ApiError::new(
            409,
            "Conflict",
            format!(
                "Apply failed with {count} conflict{}: {}",
                if count == 1 { "" } else { "s" },
                listed.join("\n")
            ),
        )
        .about(name, &target.resource.group, &target.resource.plural);
        if let Some(details) = error.details.as_mut() {
            details["causes"] = Value::Array(
                conflicts
                    .iter()
                    .map(|(owner, field)| {
                        json!({"type": "FieldManagerConflict", "message": format!("conflict with {owner:?}"), "field": field})
                    })
                    .collect(),
            );
        }
        return Err(error);
    }
    let other_sets: Vec<&BTreeSet<FieldPath>> = others.iter().map(|(_, paths)| paths).collect();
    let (candidate, paths) = apply::apply(&view, &config, &list_maps, &previous, &other_sets, in_scope);
    let candidate = to_storage(candidate, &target.resource);
    let written = finish_write(&mut store, target, name, &old, candidate, dry_run(call))?;
    if !dry_run(call) && store.get(&key).is_some() {
        store.managers.insert(manager_key, paths);
        for (owner, owned) in others {
            store.managers.insert(owner, owned);
        }
    }
    call.app.notify(&store);
    Ok(respond(
        call,
        StatusCode::OK,
        present(written, &target.resource),
        &target.resource,
    ))
}

fn delete_options(body: &[u8]) -> Result<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    parse_json(body)
}

fn delete(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let options = delete_options(call.body)?;
    let mut store = call.app.lock();
    let key = target.key(name);
    let old = store.get(&key).cloned().ok_or_else(|| target.not_found(name))?;
    if let Some(uid) = text(&options, "/preconditions/uid")
        && Some(uid) != text(&old, "/metadata/uid")
    {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                text(&old, "/metadata/uid").unwrap_or_default()
            ),
        )
        .about(name, &target.resource.group, &target.resource.plural));
    }
    if let Some(revision) = text(&options, "/preconditions/resourceVersion")
        && Some(revision) != text(&old, "/metadata/resourceVersion")
    {
        return Err(target.conflict(name));
    }
    let result = remove_or_mark(&mut store, &key, &old, dry_run(call));
    call.app.notify(&store);
    Ok(respond(
        call,
        StatusCode::OK,
        present(result, &target.resource),
        &target.resource,
    ))
}

/// Deletes an object, or, when it has finalizers, marks it with a deletionTimestamp (once).
fn remove_or_mark(store: &mut Store, key: &ObjectKey, old: &Value, dry_run: bool) -> Value {
    if dry_run {
        old.clone()
    } else {
        delete_object(store, key, old)
    }
}

/// Deletes an object, or marks it with a deletionTimestamp (once) when it has finalizers; the mark
/// bumps generation, as the real server does.
fn delete_object(store: &mut Store, key: &ObjectKey, old: &Value) -> Value {
    if finalizers(old).is_empty() {
        return remove_object(store, key, old);
    }
    if old["metadata"].get("deletionTimestamp").is_some() {
        return old.clone();
    }
    let mut marked = old.clone();
    marked["metadata"]["deletionTimestamp"] = json!(time::now_rfc3339());
    marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    if let Some(generation) = old["metadata"]["generation"].as_i64() {
        marked["metadata"]["generation"] = json!(generation + 1);
    }
    let revision = store.next_revision();
    marked["metadata"]["resourceVersion"] = json!(revision.to_string());
    store.put(key.clone(), marked.clone(), revision);
    marked
}

fn delete_collection(call: &Call, target: &Target) -> Result<Response> {
    let selectors = Selectors::from_query(call.query, target.resource.custom)?;
    let mut store = call.app.lock();
    let namespace = target.resource.namespaced.then_some(target.namespace.as_str());
    let doomed: Vec<Value> = store
        .list(target.resource.storage_group(), &target.resource.plural, namespace)
        .into_iter()
        .filter(|object| selectors.matches(object))
        .cloned()
        .collect();
    let mut items = Vec::new();
    for object in doomed {
        let key = target.key(object["metadata"]["name"].as_str().unwrap_or_default());
        items.push(present(
            remove_or_mark(&mut store, &key, &object, dry_run(call)),
            &target.resource,
        ));
    }
    call.app.notify(&store);
    Ok(ok(&json!({
        "kind": format!("{}List", target.resource.kind),
        "apiVersion": target.resource.api_version(),
        "metadata": {"resourceVersion": store.revision().to_string()},
        "items": items,
    })))
}

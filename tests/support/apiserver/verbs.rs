//! The verbs: get, list (and watch), create, update, patch (merge, JSON, strategic, apply), delete.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use serde_json::{Value, json};

use super::apply::{self, FieldPath, ListMaps, Segment};
use super::body::{check_type, delete_options, parse_apply_body, parse_body, parse_json, text};
use super::handlers::{Call, Shape, Target, dry_run, metadata_only, ok, present, respond, to_storage};
use super::selectors::Selectors;
use super::status::ApiError;
use super::store::ObjectKey;
use super::write::{check_revision, finish_write, insert_new, remove_or_mark};
use super::{patch, table, watch};

type Result<T> = std::result::Result<T, ApiError>;

/// GET one object (or its status).
pub(super) fn get(call: &Call, target: &Target, name: &str) -> Result<Response> {
    let store = call.app.lock();
    let object = store.get(&target.key(name)).ok_or_else(|| target.not_found(name))?;
    let object = present(object.clone(), &target.resource);
    Ok(ok(&Shape::of(call).one(object, &target.resource)))
}

/// GET a collection: a list, a Table, PartialObjectMetadata, or a watch.
pub(super) fn list(call: &Call, target: &Target) -> Result<Response> {
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
    // Rendering a large list needs no lock: other requests go on meanwhile.
    drop(store);
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

/// POST: creates an object (201).
pub(super) fn create(call: &Call, target: &Target) -> Result<Response> {
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

/// PUT: replaces an object or its status; a resourceVersion is required for custom resources.
pub(super) fn update(call: &Call, target: &Target, name: &str) -> Result<Response> {
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

/// PATCH with a merge, JSON, strategic merge or apply patch.
pub(super) fn patch_object(call: &Call, target: &Target, name: &str) -> Result<Response> {
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

/// Server-side apply (`application/apply-patch+yaml`); creates the object when missing.
pub(super) fn apply_patch(call: &Call, target: &Target, name: &str) -> Result<Response> {
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
    let list_maps = ListMaps::from_schema(target.resource.schema.as_deref());
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
        .managers_of(&key)
        .filter(|((_, manager, subresource), _)| !(manager == &manager_key.1 && subresource == &manager_key.2))
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

/// DELETE: removes an object, or marks it for deletion when it has finalizers.
pub(super) fn delete(call: &Call, target: &Target, name: &str) -> Result<Response> {
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

/// DELETE on a collection: every object matching the selectors.
pub(super) fn delete_collection(call: &Call, target: &Target) -> Result<Response> {
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

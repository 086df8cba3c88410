//! The write rules every verb shares: server-owned metadata, generation, no-op writes,
//! resourceVersion, finalizers and deletion (with CRD, namespace and owner cascades).

use serde_json::{Value, json};

use super::body::{finalizers, text};
use super::handlers::Target;
use super::resources::{self, Resource};
use super::status::ApiError;
use super::store::{ObjectKey, Store, namespace_key};
use super::time;

type Result<T> = std::result::Result<T, ApiError>;

/// Drops empty metadata lists and maps (finalizers, labels, annotations, owner references), as the
/// real server's round trip through `ObjectMeta` (`omitempty`) does. kube-runtime's finalizer helper
/// relies on it: it tests `/metadata/finalizers` for null when there are none.
pub(super) fn normalize_metadata(object: &mut Value) {
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
pub(super) fn fold_string_data(object: &mut Value, resource: &Resource) {
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

/// Five characters for `generateName`, from the alphabet the real server uses.
pub(super) fn random_suffix(store: &mut Store) -> String {
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

/// Stores a new object: checks its namespace and name, sets the server-owned metadata.
pub(super) fn insert_new(store: &mut Store, target: &Target, mut object: Value, dry_run: bool) -> Result<Value> {
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
pub(super) fn spec_part(object: &Value, resource: &Resource) -> Value {
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
pub(super) fn finish_write(
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
pub(super) fn remove_object(store: &mut Store, key: &ObjectKey, last: &Value) -> Value {
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

/// A 409 Conflict when the body names a resourceVersion other than the stored one.
pub(super) fn check_revision(target: &Target, name: &str, old: &Value, candidate: &Value) -> Result<()> {
    if let Some(wanted) = text(candidate, "/metadata/resourceVersion")
        && Some(wanted) != text(old, "/metadata/resourceVersion")
    {
        return Err(target.conflict(name));
    }
    Ok(())
}

/// Deletes an object, or, when it has finalizers, marks it with a deletionTimestamp (once).
pub(super) fn remove_or_mark(store: &mut Store, key: &ObjectKey, old: &Value, dry_run: bool) -> Value {
    if dry_run {
        old.clone()
    } else {
        delete_object(store, key, old)
    }
}

/// Deletes an object, or marks it with a deletionTimestamp (once) when it has finalizers; the mark
/// bumps generation, as the real server does.
pub(super) fn delete_object(store: &mut Store, key: &ObjectKey, old: &Value) -> Value {
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

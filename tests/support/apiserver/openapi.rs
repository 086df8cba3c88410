//! A minimal OpenAPI v3: an index of group-versions, and per group-version documents that only
//! declare the `fieldValidation` parameter, so kubectl's default `--validate=strict` leaves
//! validation to the server (which does not validate CRD schemas here).

use serde_json::{Value, json};

use super::resources::{self, Resource};
use super::store::Store;

fn group_version_path(resource: &Resource) -> String {
    if resource.group.is_empty() {
        format!("api/{}", resource.version)
    } else {
        format!("apis/{}/{}", resource.group, resource.version)
    }
}

/// `GET /openapi/v3`.
pub fn index(store: &Store) -> Value {
    let mut paths = serde_json::Map::new();
    // Custom resources are left out as on the tested recipe: kubectl checks a CRD's kind
    // against the Namespace entry of `api/v1`.
    for resource in resources::all(store).into_iter().filter(|resource| !resource.custom) {
        let path = group_version_path(&resource);
        let url = format!("/openapi/v3/{path}?hash=0");
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/group/version}`.
pub fn document(store: &Store, path: &str) -> Option<Value> {
    let served: Vec<Resource> = resources::all(store)
        .into_iter()
        .filter(|resource| group_version_path(resource) == path)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    for resource in &served {
        let prefix = format!("/{}", group_version_path(resource));
        let url = if resource.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", resource.plural)
        } else {
            format!("{prefix}/{}/{{name}}", resource.plural)
        };
        paths.insert(
            url,
            json!({
                "patch": {
                    "x-kubernetes-group-version-kind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
                    "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                    "responses": {},
                }
            }),
        );
    }
    Some(
        json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}, "paths": paths, "components": {"schemas": {}}}),
    )
}

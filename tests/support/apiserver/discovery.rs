//! Legacy discovery: `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
//! kubectl asks for aggregated discovery but accepts these plain documents.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::resources::{self, Resource};
use super::store::Store;

/// `GET /api`.
pub fn core_versions(address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    })
}

fn group_versions(store: &Store) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for resource in resources::all(store) {
        if resource.group.is_empty() {
            continue;
        }
        let versions = groups.entry(resource.group.clone()).or_default();
        if !versions.contains(&resource.version) {
            versions.push(resource.version.clone());
        }
    }
    groups
}

fn group_document(name: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|version| json!({"groupVersion": format!("{name}/{version}"), "version": version}))
        .collect();
    json!({"name": name, "versions": entries, "preferredVersion": entries.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis`.
pub fn group_list(store: &Store) -> Value {
    let groups: Vec<Value> = group_versions(store)
        .iter()
        .map(|(name, versions)| group_document(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`.
pub fn group(store: &Store, name: &str) -> Option<Value> {
    let groups = group_versions(store);
    let versions = groups.get(name)?;
    let mut document = group_document(name, versions);
    document["kind"] = json!("APIGroup");
    document["apiVersion"] = json!("v1");
    Some(document)
}

fn entries(resource: &Resource) -> Vec<Value> {
    let mut main = json!({
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": resource.verbs(),
    });
    if !resource.short_names.is_empty() {
        main["shortNames"] = json!(resource.short_names);
    }
    if !resource.categories.is_empty() {
        main["categories"] = json!(resource.categories);
    }
    let mut list = vec![main];
    if resource.status_subresource {
        list.push(json!({
            "name": format!("{}/status", resource.plural),
            "singularName": "",
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    list
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`; `None` when nothing is served there.
pub fn resource_list(store: &Store, group: &str, version: &str) -> Option<Value> {
    let served: Vec<Resource> = resources::all(store)
        .into_iter()
        .filter(|resource| resource.group == group && resource.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let list: Vec<Value> = served.iter().flat_map(entries).collect();
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list}))
}

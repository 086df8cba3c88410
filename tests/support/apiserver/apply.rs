//! Server-side apply, approximated: each manager owns the leaf field paths it last applied.
//! A new apply removes the fields the manager applied before and no longer sends (unless another
//! manager owns them too), then merges the configuration: maps merge, list-maps (`conditions` by
//! `type`, and lists marked `x-kubernetes-list-type: map` in a CRD schema) merge by key, other lists
//! are replaced.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// A field of a map.
    Field(String),
    /// An item of a list-map, named by its key fields (as a JSON object text).
    Item(String),
}

/// A path from the object's root to a field.
pub type FieldPath = Vec<Segment>;

/// Which lists are list-maps, and their keys. Paths are field names from the root (list items add nothing).
#[derive(Debug, Clone, Default)]
pub struct ListMaps {
    declared: Vec<(Vec<String>, Vec<String>)>,
}

impl ListMaps {
    /// The list-maps a CRD version's `openAPIV3Schema` declares.
    pub fn from_schema(schema: Option<&Value>) -> ListMaps {
        let mut declared = Vec::new();
        if let Some(schema) = schema {
            walk_schema(schema, &mut Vec::new(), &mut declared);
        }
        ListMaps { declared }
    }

    /// The keys of the list at `names`, if it is a list-map.
    pub fn keys(&self, names: &[String]) -> Option<Vec<String>> {
        if let Some((_, keys)) = self.declared.iter().find(|(path, _)| path.as_slice() == names) {
            return Some(keys.clone());
        }
        (names.last().map(String::as_str) == Some("conditions")).then(|| vec!["type".to_string()])
    }
}

fn walk_schema(schema: &Value, names: &mut Vec<String>, declared: &mut Vec<(Vec<String>, Vec<String>)>) {
    if schema["x-kubernetes-list-type"] == "map"
        && let Some(keys) = schema["x-kubernetes-list-map-keys"].as_array()
    {
        declared.push((
            names.clone(),
            keys.iter().filter_map(|key| key.as_str().map(String::from)).collect(),
        ));
    }
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            names.push(name.clone());
            walk_schema(property, names, declared);
            names.pop();
        }
    }
    if let Some(items) = schema.get("items") {
        walk_schema(items, names, declared);
    }
}

/// Fields an apply configuration names without managing them.
fn ignored(path: &[Segment]) -> bool {
    let field = |index: usize| match path.get(index) {
        Some(Segment::Field(name)) => Some(name.as_str()),
        _ => None,
    };
    matches!(
        (field(0), field(1)),
        (Some("apiVersion" | "kind"), _)
            | (
                Some("metadata"),
                Some(
                    "name"
                        | "namespace"
                        | "resourceVersion"
                        | "uid"
                        | "creationTimestamp"
                        | "generation"
                        | "managedFields"
                        | "deletionTimestamp"
                        | "selfLink",
                ),
            )
    )
}

/// The leaf paths an apply configuration sets.
pub fn leaf_paths(config: &Value, list_maps: &ListMaps) -> BTreeSet<FieldPath> {
    let mut paths = BTreeSet::new();
    collect(config, &mut Vec::new(), &mut Vec::new(), list_maps, &mut paths);
    paths.retain(|path| !ignored(path));
    paths
}

fn collect(
    value: &Value,
    path: &mut FieldPath,
    names: &mut Vec<String>,
    list_maps: &ListMaps,
    paths: &mut BTreeSet<FieldPath>,
) {
    match value {
        Value::Object(fields) if !fields.is_empty() => {
            for (name, field) in fields {
                path.push(Segment::Field(name.clone()));
                names.push(name.clone());
                collect(field, path, names, list_maps, paths);
                names.pop();
                path.pop();
            }
        }
        Value::Array(items) if list_maps.keys(names).is_some() => {
            let keys = list_maps.keys(names).unwrap_or_default();
            for item in items {
                path.push(Segment::Item(item_key(item, &keys)));
                collect(item, path, names, list_maps, paths);
                path.pop();
            }
        }
        _ => {
            if !path.is_empty() {
                paths.insert(path.clone());
            }
        }
    }
}

fn item_key(item: &Value, keys: &[String]) -> String {
    let mut key = Map::new();
    for name in keys {
        key.insert(name.clone(), item.get(name).cloned().unwrap_or(Value::Null));
    }
    Value::Object(key).to_string()
}

fn matches_key(item: &Value, key: &Map<String, Value>) -> bool {
    key.iter()
        .all(|(name, value)| item.get(name).unwrap_or(&Value::Null) == value)
}

/// Merges an apply configuration into an object.
pub fn merge(target: &mut Value, config: &Value, names: &mut Vec<String>, list_maps: &ListMaps) {
    match (target, config) {
        (Value::Object(fields), Value::Object(config_fields)) => {
            for (name, value) in config_fields {
                if value.is_null() {
                    fields.remove(name);
                    continue;
                }
                names.push(name.clone());
                let slot = fields.entry(name.clone()).or_insert(Value::Null);
                if slot.is_null() {
                    *slot = empty_like(value);
                }
                merge(slot, value, names, list_maps);
                names.pop();
            }
        }
        (Value::Array(items), Value::Array(config_items)) if list_maps.keys(names).is_some() => {
            let keys = list_maps.keys(names).unwrap_or_default();
            for config_item in config_items {
                let key: Map<String, Value> = serde_json::from_str(&item_key(config_item, &keys)).unwrap_or_default();
                match items.iter_mut().find(|item| matches_key(item, &key)) {
                    Some(item) => merge(item, config_item, names, list_maps),
                    None => items.push(config_item.clone()),
                }
            }
        }
        (target, config) => *target = config.clone(),
    }
}

fn empty_like(value: &Value) -> Value {
    match value {
        Value::Object(_) => Value::Object(Map::new()),
        Value::Array(_) => Value::Array(Vec::new()),
        _ => Value::Null,
    }
}

/// Removes the field at `path`, pruning maps it leaves empty and list-map items left with only their keys.
/// Returns whether `value` itself is now empty.
pub fn remove(value: &mut Value, path: &[Segment]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match (value, first) {
        (Value::Object(fields), Segment::Field(name)) => {
            if rest.is_empty() {
                fields.remove(name);
            } else if let Some(child) = fields.get_mut(name)
                && remove(child, rest)
            {
                fields.remove(name);
            }
            fields.is_empty()
        }
        (Value::Array(items), Segment::Item(key)) => {
            let key: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
            if let Some(index) = items.iter().position(|item| matches_key(item, &key)) {
                let drop = if rest.is_empty() {
                    true
                } else {
                    remove(&mut items[index], rest);
                    items[index]
                        .as_object()
                        .is_none_or(|fields| fields.keys().all(|name| key.contains_key(name)))
                };
                if drop {
                    items.remove(index);
                }
            }
            items.is_empty()
        }
        _ => false,
    }
}

/// Whether a path is shared with a path of another manager (equal, or one inside the other).
pub fn overlaps(path: &[Segment], other: &[Segment]) -> bool {
    path.starts_with(other) || other.starts_with(path)
}

/// The object after `manager` applies `config`: fields it applied last time and no longer sends are
/// removed (when no one else owns them), then the configuration is merged. `in_scope` limits which
/// paths this apply manages (the status subresource manages `status` only). Returns the new object and
/// the manager's new set of paths.
pub fn apply(
    current: &Value,
    config: &Value,
    list_maps: &ListMaps,
    previous: &BTreeSet<FieldPath>,
    others: &[&BTreeSet<FieldPath>],
    in_scope: impl Fn(&FieldPath) -> bool,
) -> (Value, BTreeSet<FieldPath>) {
    let mut applied = leaf_paths(config, list_maps);
    applied.retain(|path| in_scope(path));
    let mut object = current.clone();
    for path in previous.difference(&applied) {
        let shared = others.iter().any(|set| set.iter().any(|other| overlaps(path, other)))
            || applied.iter().any(|now| overlaps(path, now));
        if !shared {
            remove(&mut object, path);
        }
    }
    merge(&mut object, config, &mut Vec::new(), list_maps);
    (object, applied)
}

/// The value at a field path.
pub fn lookup<'a>(value: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(value);
    };
    let next = match (value, first) {
        (Value::Object(fields), Segment::Field(name)) => fields.get(name)?,
        (Value::Array(items), Segment::Item(key)) => {
            let key: Map<String, Value> = serde_json::from_str(key).ok()?;
            items.iter().find(|item| matches_key(item, &key))?
        }
        _ => return None,
    };
    lookup(next, rest)
}

/// A field path as Kubernetes prints it in conflicts: `.spec.schema`, `.status.conditions[type="Ready"]`.
pub fn display(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Field(name) => {
                text.push('.');
                text.push_str(name);
            }
            Segment::Item(key) => {
                let key: Map<String, Value> = serde_json::from_str(key).unwrap_or_default();
                let parts: Vec<String> = key.iter().map(|(name, value)| format!("{name}={value}")).collect();
                text.push_str(&format!("[{}]", parts.join(",")));
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn apply_as(
        object: &Value,
        config: &Value,
        previous: &BTreeSet<FieldPath>,
        others: &[&BTreeSet<FieldPath>],
    ) -> (Value, BTreeSet<FieldPath>) {
        apply(object, config, &ListMaps::default(), previous, others, |_| true)
    }

    #[test]
    fn conditions_merge_by_type_and_dropped_fields_go() {
        let object = json!({"status": {"conditions": [{"type": "Synced", "status": "True"}]}});
        let config = json!({"status": {"version": 1, "conditions": [{"type": "Ready", "status": "True"}]}});
        let (object, first) = apply_as(&object, &config, &BTreeSet::new(), &[]);
        assert_eq!(object["status"]["conditions"].as_array().map(Vec::len), Some(2));
        let config = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let (object, _) = apply_as(&object, &config, &first, &[]);
        assert_eq!(
            object,
            json!({"status": {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}})
        );
    }

    #[test]
    fn fields_another_manager_owns_stay() {
        let object = json!({"spec": {"a": 1, "b": 2}});
        let mine: BTreeSet<FieldPath> = [vec![Segment::Field("spec".into()), Segment::Field("a".into())]].into();
        let theirs = mine.clone();
        let (object, _) = apply_as(&object, &json!({"spec": {"b": 2}}), &mine, &[&theirs]);
        assert_eq!(object, json!({"spec": {"a": 1, "b": 2}}));
        let (object, _) = apply_as(&object, &json!({"spec": {"b": 2}}), &mine, &[]);
        assert_eq!(object, json!({"spec": {"b": 2}}));
    }

    #[test]
    fn list_maps_come_from_the_crd_schema() {
        let schema = json!({"properties": {"spec": {"properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object"},
        }}}}});
        let list_maps = ListMaps::from_schema(Some(&schema));
        assert_eq!(
            list_maps.keys(&["spec".into(), "ports".into()]),
            Some(vec!["port".to_string()])
        );
        assert_eq!(list_maps.keys(&["spec".into(), "other".into()]), None);
        assert_eq!(
            list_maps.keys(&["status".into(), "conditions".into()]),
            Some(vec!["type".to_string()])
        );
        assert_eq!(
            display(&[Segment::Field("spec".into()), Segment::Item(r#"{"port":80}"#.into())]),
            ".spec[port=80]"
        );
    }
}

//! JSON merge patch (RFC 7386), JSON patch (RFC 6902) and the strategic merge patch subset kubectl sends.

use serde_json::{Map, Value};

/// Applies an RFC 7386 merge patch in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(fields) = target else { return };
    for (name, value) in patch {
        if value.is_null() {
            fields.remove(name);
        } else {
            merge_patch(fields.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Applies a strategic merge patch as a merge patch, dropping the `$…` directives kubectl adds
/// (`$setElementOrder/…`, `$retainKeys`, `$patch`) and honouring `$deleteFromPrimitiveList/…`.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(fields) = target else { return };
    for (name, value) in patch {
        if let Some(list) = name.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Some(remove)) = (fields.get_mut(list), value.as_array()) {
                items.retain(|item| !remove.contains(item));
            }
        } else if name.starts_with('$') {
            continue;
        } else if value.is_null() {
            fields.remove(name);
        } else {
            strategic_merge_patch(fields.entry(name.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Why a JSON patch did not apply.
#[derive(Debug)]
pub enum JsonPatchError {
    /// The patch document is not a list of operations.
    Malformed(String),
    /// An operation failed (a `test` did not match, a path is missing).
    Failed(String),
}

/// Applies an RFC 6902 JSON patch, returning the patched copy.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let operations = patch
        .as_array()
        .ok_or_else(|| JsonPatchError::Malformed("a JSON patch must be a list".into()))?;
    let mut document = target.clone();
    for operation in operations {
        let op = operation["op"]
            .as_str()
            .ok_or_else(|| JsonPatchError::Malformed("operation without op".into()))?;
        let path = operation["path"]
            .as_str()
            .ok_or_else(|| JsonPatchError::Malformed("operation without path".into()))?;
        let path = parse_pointer(path)?;
        let value = || {
            operation
                .get("value")
                .cloned()
                .ok_or_else(|| JsonPatchError::Malformed(format!("{op} without value")))
        };
        let from = || -> Result<Vec<String>, JsonPatchError> {
            parse_pointer(
                operation["from"]
                    .as_str()
                    .ok_or_else(|| JsonPatchError::Malformed(format!("{op} without from")))?,
            )
        };
        match op {
            "add" => add(&mut document, &path, value()?)?,
            "remove" => {
                remove(&mut document, &path)?;
            }
            "replace" => {
                remove(&mut document, &path)?;
                add(&mut document, &path, value()?)?;
            }
            "move" => {
                let moved = remove(&mut document, &from()?)?;
                add(&mut document, &path, moved)?;
            }
            "copy" => {
                let copied = lookup(&document, &from()?)
                    .cloned()
                    .ok_or_else(|| JsonPatchError::Failed("copy from a missing path".into()))?;
                add(&mut document, &path, copied)?;
            }
            "test" => {
                let expected = value()?;
                let actual = lookup(&document, &path);
                // Like the API server's json-patch library: testing for null passes on a missing path.
                let passes = match actual {
                    Some(actual) => *actual == expected,
                    None => expected.is_null(),
                };
                if !passes {
                    return Err(JsonPatchError::Failed(format!(
                        "testing value {} failed: test failed",
                        operation["path"].as_str().unwrap_or_default()
                    )));
                }
            }
            other => return Err(JsonPatchError::Malformed(format!("unknown operation {other:?}"))),
        }
    }
    Ok(document)
}

fn parse_pointer(pointer: &str) -> Result<Vec<String>, JsonPatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| JsonPatchError::Malformed(format!("bad JSON pointer {pointer:?}")))?;
    Ok(rest
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn lookup<'a>(document: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(document, |value, token| match value {
        Value::Object(fields) => fields.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|index| items.get(index)),
        _ => None,
    })
}

fn parent<'a>(document: &'a mut Value, path: &[String]) -> Result<&'a mut Value, JsonPatchError> {
    let mut value = document;
    for token in path {
        value = match value {
            Value::Object(fields) => fields.get_mut(token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|index| items.get_mut(index)),
            _ => None,
        }
        .ok_or_else(|| JsonPatchError::Failed(format!("missing path /{}", path.join("/"))))?;
    }
    Ok(value)
}

fn add(document: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let Some((last, init)) = path.split_last() else {
        *document = value;
        return Ok(());
    };
    match parent(document, init)? {
        Value::Object(fields) => {
            fields.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| JsonPatchError::Failed(format!("bad index {last:?}")))?
            };
            if index > items.len() {
                return Err(JsonPatchError::Failed(format!("index {index} out of bounds")));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(JsonPatchError::Failed(format!(
            "cannot add below a scalar at /{}",
            path.join("/")
        ))),
    }
}

fn remove(document: &mut Value, path: &[String]) -> Result<Value, JsonPatchError> {
    let missing = || JsonPatchError::Failed(format!("missing path /{}", path.join("/")));
    let Some((last, init)) = path.split_last() else {
        return Ok(std::mem::take(document));
    };
    match parent(document, init)? {
        Value::Object(fields) => fields.remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let index = last.parse::<usize>().map_err(|_| missing())?;
            if index >= items.len() {
                return Err(missing());
            }
            Ok(items.remove(index))
        }
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]});
        merge_patch(
            &mut target,
            &json!({"a": "z", "c": {"f": null}, "list": [3], "new": {"x": 1}}),
        );
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}, "list": [3], "new": {"x": 1}}));
    }

    #[test]
    fn strategic_merge_patch_drops_directives() {
        let mut target = json!({"metadata": {"finalizers": ["a", "b"]}, "data": {"k": "v"}});
        let patch = json!({"$setElementOrder/data": [], "data": {"k2": "v2"}, "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}});
        strategic_merge_patch(&mut target, &patch);
        assert_eq!(
            target,
            json!({"metadata": {"finalizers": ["b"]}, "data": {"k": "v", "k2": "v2"}})
        );
    }

    #[test]
    fn json_patch_operations_apply_in_order() {
        let target = json!({"metadata": {"name": "x"}, "spec": {"list": [1, 2]}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
            {"op": "add", "path": "/spec/list/-", "value": 3},
            {"op": "replace", "path": "/spec/list/0", "value": 0},
            {"op": "copy", "from": "/metadata/name", "path": "/spec/name"},
            {"op": "move", "from": "/spec/name", "path": "/spec/renamed"},
            {"op": "remove", "path": "/spec/list/1"},
        ]);
        let patched = json_patch(&target, &patch).expect("a patch that applies");
        assert_eq!(
            patched,
            json!({"metadata": {"name": "x", "finalizers": ["f"]}, "spec": {"list": [0, 3], "renamed": "x"}})
        );
    }

    #[test]
    fn failed_json_patch_tests_and_missing_paths_are_failures() {
        let target = json!({"metadata": {"finalizers": ["mine"]}});
        let wrong = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "theirs"}]);
        assert!(matches!(json_patch(&target, &wrong), Err(JsonPatchError::Failed(_))));
        let present = json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]);
        assert!(matches!(json_patch(&target, &present), Err(JsonPatchError::Failed(_))));
        let missing = json!([{"op": "remove", "path": "/spec/nothing"}]);
        assert!(matches!(json_patch(&target, &missing), Err(JsonPatchError::Failed(_))));
        assert!(matches!(
            json_patch(&target, &json!({"op": "add"})),
            Err(JsonPatchError::Malformed(_))
        ));
    }
}

//! `meta.k8s.io/v1` Table output (what `kubectl get` asks for), with the simple JSONPath forms
//! CRD printer columns use.

use serde_json::{Value, json};

use super::events;
use super::resources::Resource;
use super::time;

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Whether the Accept header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| first.contains("as=Table"))
}

#[derive(Debug)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter(String, Value),
}

fn parse_path(path: &str) -> Option<Vec<Step>> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut steps = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end > 0 {
                steps.push(Step::Field(after[..end].to_string()));
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = after[..end].trim();
            rest = &after[end + 1..];
            if inner == "*" {
                steps.push(Step::All);
            } else if let Some(filter) = inner.strip_prefix("?(").and_then(|filter| filter.strip_suffix(')')) {
                let (left, right) = filter.split_once("==")?;
                let field = left.trim().strip_prefix("@.")?.to_string();
                let right = right.trim();
                let value = if let Some(text) = right.strip_prefix('"').and_then(|text| text.strip_suffix('"')) {
                    Value::String(text.to_string())
                } else if let Some(text) = right.strip_prefix('\'').and_then(|text| text.strip_suffix('\'')) {
                    Value::String(text.to_string())
                } else {
                    serde_json::from_str(right).ok()?
                };
                steps.push(Step::Filter(field, value));
            } else {
                steps.push(Step::Index(inner.parse().ok()?));
            }
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            steps.push(Step::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    Some(steps)
}

/// Evaluates a printer-column JSONPath; every match, in order.
pub fn evaluate(object: &Value, path: &str) -> Vec<Value> {
    let Some(steps) = parse_path(path) else {
        return Vec::new();
    };
    let mut current = vec![object.clone()];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match &step {
                Step::Field(name) => next.extend(value.get(name).cloned()),
                Step::Index(index) => next.extend(value.get(*index).cloned()),
                Step::All => match value {
                    Value::Array(items) => next.extend(items),
                    Value::Object(fields) => next.extend(fields.into_iter().map(|(_, field)| field)),
                    _ => {}
                },
                Step::Filter(field, expected) => {
                    if let Value::Array(items) = value {
                        next.extend(items.into_iter().filter(|item| {
                            field.split('.').try_fold(item, |value, name| value.get(name)) == Some(expected)
                        }));
                    }
                }
            }
        }
        current = next;
    }
    current
}

fn column(name: &str, kind: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

fn age(object: &Value, now: i64) -> Value {
    match object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(time::parse_rfc3339)
    {
        Some(created) => Value::String(time::human_duration(now - created)),
        None => Value::String("<unknown>".into()),
    }
}

fn cell(object: &Value, definition: &Value, now: i64) -> Value {
    let path = definition["jsonPath"].as_str().unwrap_or_default();
    let values = evaluate(object, path);
    let Some(first) = values.first() else {
        return Value::Null;
    };
    if definition["type"] == "date" {
        return match first.as_str().and_then(time::parse_rfc3339) {
            Some(then) => Value::String(time::human_duration(now - then)),
            None => Value::Null,
        };
    }
    match first {
        Value::Object(_) | Value::Array(_) => Value::String(first.to_string()),
        scalar => scalar.clone(),
    }
}

fn builtin_columns(resource: &Resource) -> Vec<Value> {
    let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION, 0)];
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "namespaces") => columns.push(column("Status", "string", "", "The status of the namespace", 0)),
        ("", "configmaps") => columns.push(column(
            "Data",
            "integer",
            "",
            "Data contains the configuration data.",
            0,
        )),
        ("", "secrets") => {
            columns.push(column("Type", "string", "", "The type of the secret", 0));
            columns.push(column("Data", "integer", "", "Data contains the secret data.", 0));
        }
        ("coordination.k8s.io", "leases") => columns.push(column("Holder", "string", "", "The holder of the lease", 0)),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            return vec![
                column("Name", "string", "name", NAME_DESCRIPTION, 0),
                column("Created At", "date", "", AGE_DESCRIPTION, 0),
            ];
        }
        (_, "events") => {
            return vec![
                column("Last Seen", "string", "", "When the event was last seen", 0),
                column("Type", "string", "", "The type of the event: Normal or Warning", 0),
                column("Reason", "string", "", "Why the event happened", 0),
                column("Object", "string", "", "The object the event is about", 0),
                column("Message", "string", "", "What happened", 0),
            ];
        }
        _ => {}
    }
    columns.push(column("Age", "string", "", AGE_DESCRIPTION, 0));
    columns
}

fn builtin_cells(resource: &Resource, object: &Value, now: i64) -> Vec<Value> {
    let mut cells = vec![object["metadata"]["name"].clone()];
    let count = |value: &Value| value.as_object().map_or(0, |fields| fields.len());
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "namespaces") => cells.push(object["status"]["phase"].as_str().unwrap_or("Active").into()),
        ("", "configmaps") => cells.push(json!(count(&object["data"]) + count(&object["binaryData"]))),
        ("", "secrets") => {
            cells.push(object["type"].as_str().unwrap_or("Opaque").into());
            cells.push(json!(count(&object["data"])));
        }
        ("coordination.k8s.io", "leases") => cells.push(object["spec"]["holderIdentity"].clone()),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            cells.push(object["metadata"]["creationTimestamp"].clone());
            return cells;
        }
        (_, "events") => {
            let seen = events::last_seen(object).and_then(time::parse_rfc3339);
            let about = if object["regarding"].is_object() {
                &object["regarding"]
            } else {
                &object["involvedObject"]
            };
            let message = if object["note"].is_string() {
                &object["note"]
            } else {
                &object["message"]
            };
            return vec![
                json!(seen.map_or_else(|| "<unknown>".to_string(), |seen| time::human_duration(now - seen))),
                object["type"].clone(),
                object["reason"].clone(),
                json!(format!(
                    "{}/{}",
                    about["kind"].as_str().unwrap_or_default().to_lowercase(),
                    about["name"].as_str().unwrap_or_default()
                )),
                message.clone(),
            ];
        }
        _ => {}
    }
    cells.push(age(object, now));
    cells
}

/// How one object's row cells are computed.
type CellsOf = Box<dyn Fn(&Value) -> Vec<Value>>;

/// The Table for some objects of one resource. `include_object` is the `includeObject` parameter.
pub fn table(resource: &Resource, objects: &[Value], list_revision: Option<u64>, include_object: &str) -> Value {
    let now = time::now_seconds();
    let (columns, cells): (Vec<Value>, CellsOf) = if resource.custom {
        let definitions: Vec<Value> = if resource.printer_columns.is_empty() {
            vec![
                json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": AGE_DESCRIPTION}),
            ]
        } else {
            resource.printer_columns.clone()
        };
        let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION, 0)];
        for definition in &definitions {
            columns.push(column(
                definition["name"].as_str().unwrap_or_default(),
                definition["type"].as_str().unwrap_or("string"),
                definition["format"].as_str().unwrap_or_default(),
                definition["description"].as_str().unwrap_or_default(),
                definition["priority"].as_i64().unwrap_or(0),
            ));
        }
        let cells = move |object: &Value| {
            let mut cells = vec![object["metadata"]["name"].clone()];
            cells.extend(definitions.iter().map(|definition| cell(object, definition, now)));
            cells
        };
        (columns, Box::new(cells))
    } else {
        let resource = resource.clone();
        (
            builtin_columns(&resource),
            Box::new(move |object: &Value| builtin_cells(&resource, object, now)),
        )
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let embedded = match include_object {
                "None" => Value::Null,
                "Object" => object.clone(),
                _ => json!({
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": object["metadata"].clone(),
                }),
            };
            json!({"cells": cells(object), "object": embedded})
        })
        .collect();
    let mut metadata = json!({});
    if let Some(revision) = list_revision {
        metadata["resourceVersion"] = json!(revision.to_string());
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn printer_column_paths_evaluate() {
        let object = json!({
            "spec": {"subject": "orders-value"},
            "status": {"version": 3, "conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True", "reason": "Registered"},
            ]},
        });
        assert_eq!(evaluate(&object, ".spec.subject"), [json!("orders-value")]);
        assert_eq!(evaluate(&object, ".status.version"), [json!(3)]);
        assert_eq!(
            evaluate(&object, r#".status.conditions[?(@.type=="Ready")].status"#),
            [json!("True")]
        );
        assert_eq!(
            evaluate(&object, ".status.conditions[?(@.type=='Ready')].reason"),
            [json!("Registered")]
        );
        assert_eq!(evaluate(&object, ".status.conditions[0].type"), [json!("Synced")]);
        assert_eq!(
            evaluate(&object, ".status.conditions[*].type"),
            [json!("Synced"), json!("Ready")]
        );
        assert!(evaluate(&object, ".status.id").is_empty());
    }

    #[test]
    fn accept_headers_asking_for_tables_are_recognized() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
        assert!(!wants_table(
            "application/json, application/json;as=Table;v=v1;g=meta.k8s.io"
        ));
    }
}

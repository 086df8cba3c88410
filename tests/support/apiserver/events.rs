//! Core `v1` Events and `events.k8s.io/v1` Events are one kind stored once (as the real server
//! does): kept in the core shape, converted when read or written through `events.k8s.io/v1`.

use serde_json::{Value, json};

/// The API group of the newer Event API.
pub const GROUP: &str = "events.k8s.io";

/// `events.k8s.io/v1` field names and their core `v1` counterparts.
const RENAMES: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(mut object: Value, forward: bool, api_version: &str) -> Value {
    if let Some(fields) = object.as_object_mut() {
        for (newer, core) in RENAMES {
            let (from, to) = if forward { (newer, core) } else { (core, newer) };
            if let Some(value) = fields.remove(from) {
                fields.insert(to.to_string(), value);
            }
        }
    }
    object["apiVersion"] = json!(api_version);
    object
}

/// An `events.k8s.io/v1` Event in the core shape it is stored in.
pub fn to_core(object: Value) -> Value {
    rename(object, true, "v1")
}

/// A stored (core) Event as `events.k8s.io/v1` shows it.
pub fn to_events(object: Value) -> Value {
    rename(object, false, "events.k8s.io/v1")
}

/// When an Event (either shape) was last seen, for `kubectl get events`.
pub fn last_seen(object: &Value) -> Option<&str> {
    [
        "/series/lastObservedTime",
        "/lastTimestamp",
        "/deprecatedLastTimestamp",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|pointer| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    })
}

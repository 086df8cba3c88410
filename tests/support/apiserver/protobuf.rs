//! Just enough of the Kubernetes protobuf encoding to read what kubectl's typed commands POST
//! (`kubectl create namespace|configmap|secret` send `application/vnd.kubernetes.protobuf`):
//! the `k8s\0` envelope (`runtime.Unknown`), ObjectMeta, Namespace, ConfigMap and Secret.
//! Responses are JSON, which kubectl also accepts.

use base64::Engine;
use serde_json::{Map, Value, json};

/// The content type of protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// One field of a protobuf message: its number and its payload.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(data: &[u8], position: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data.get(*position)?;
        *position += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn fields(data: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut position = 0;
    let mut out = Vec::new();
    while position < data.len() {
        let tag = varint(data, &mut position)?;
        let field = match tag & 7 {
            0 => Field::Varint(varint(data, &mut position)?),
            1 => {
                position += 8;
                Field::Fixed
            }
            2 => {
                let length = usize::try_from(varint(data, &mut position)?).ok()?;
                let bytes = data.get(position..position.checked_add(length)?)?;
                position += length;
                Field::Bytes(bytes)
            }
            5 => {
                position += 4;
                Field::Fixed
            }
            _ => return None,
        };
        out.push((tag >> 3, field));
    }
    (position == data.len()).then_some(out)
}

fn text(bytes: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(bytes).into_owned())
}

fn base64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A `map<string, V>` entry (key = 1, value = 2).
fn map_entry(bytes: &[u8], value: fn(&[u8]) -> Value) -> Option<(String, Value)> {
    let mut key = String::new();
    let mut entry_value = value(&[]);
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(bytes)) => key = String::from_utf8_lossy(bytes).into_owned(),
            (2, Field::Bytes(bytes)) => entry_value = value(bytes),
            _ => {}
        }
    }
    Some((key, entry_value))
}

fn insert_entry(object: &mut Map<String, Value>, name: &str, bytes: &[u8], value: fn(&[u8]) -> Value) -> Option<()> {
    let (key, entry) = map_entry(bytes, value)?;
    object.entry(name).or_insert_with(|| json!({}))[key] = entry;
    Some(())
}

fn push(object: &mut Map<String, Value>, name: &str, value: Value) {
    if let Value::Array(items) = object.entry(name).or_insert_with(|| json!([])) {
        items.push(value);
    }
}

fn object_meta(bytes: &[u8]) -> Option<Value> {
    let mut meta = Map::new();
    for (number, field) in fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(bytes)) => _ = meta.insert("name".into(), text(bytes)),
            (2, Field::Bytes(bytes)) => _ = meta.insert("generateName".into(), text(bytes)),
            (3, Field::Bytes(bytes)) => _ = meta.insert("namespace".into(), text(bytes)),
            (5, Field::Bytes(bytes)) => _ = meta.insert("uid".into(), text(bytes)),
            (6, Field::Bytes(bytes)) => _ = meta.insert("resourceVersion".into(), text(bytes)),
            (11, Field::Bytes(bytes)) => insert_entry(&mut meta, "labels", bytes, text)?,
            (12, Field::Bytes(bytes)) => insert_entry(&mut meta, "annotations", bytes, text)?,
            (14, Field::Bytes(bytes)) => push(&mut meta, "finalizers", text(bytes)),
            _ => {}
        }
    }
    Some(Value::Object(meta))
}

/// Decodes a protobuf body of one of the kinds kubectl creates with typed clients, as JSON.
pub fn decode(body: &[u8]) -> Option<Value> {
    let envelope = body.strip_prefix(b"k8s\0")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (number, field) in fields(envelope)? {
        match (number, field) {
            (1, Field::Bytes(type_meta)) => {
                for (number, field) in fields(type_meta)? {
                    match (number, field) {
                        (1, Field::Bytes(bytes)) => api_version = String::from_utf8_lossy(bytes).into_owned(),
                        (2, Field::Bytes(bytes)) => kind = String::from_utf8_lossy(bytes).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(bytes)) => raw = bytes,
            _ => {}
        }
    }
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    for (number, field) in fields(raw)? {
        let Field::Bytes(bytes) = field else {
            if let (4, "ConfigMap", Field::Varint(flag)) | (5, "Secret", Field::Varint(flag)) =
                (number, kind.as_str(), field)
            {
                object.insert("immutable".into(), json!(flag != 0));
            }
            continue;
        };
        match (kind.as_str(), number) {
            (_, 1) => _ = object.insert("metadata".into(), object_meta(bytes)?),
            ("Namespace", 2) => {
                let mut spec = Map::new();
                for (number, field) in fields(bytes)? {
                    if let (1, Field::Bytes(bytes)) = (number, field) {
                        push(&mut spec, "finalizers", text(bytes));
                    }
                }
                object.insert("spec".into(), Value::Object(spec));
            }
            ("ConfigMap", 2) => insert_entry(&mut object, "data", bytes, text)?,
            ("ConfigMap", 3) => insert_entry(&mut object, "binaryData", bytes, base64)?,
            ("Secret", 2) => insert_entry(&mut object, "data", bytes, base64)?,
            ("Secret", 3) => _ = object.insert("type".into(), text(bytes)),
            ("Secret", 4) => insert_entry(&mut object, "stringData", bytes, text)?,
            _ => {}
        }
    }
    Some(Value::Object(object))
}

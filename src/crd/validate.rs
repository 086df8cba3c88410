//! A manifest judged as the API server judges it under `fieldValidation=Strict`:
//! every field against the CRD's own structural schema (the one
//! [`super::render::definitions`] renders and the cluster stores, so the two
//! cannot drift), and `metadata` against the common fields of ObjectMeta.
//!
//! Unknown fields at any depth, values of the wrong type, enum values not
//! allowed, missing required fields and the simple limits (`minimum`,
//! `maxItems`, …) are [`Violation`]s, each with the field's path
//! (`spec.references[0].version`) and, for a misspelled name, the closest
//! name the schema allows there. CEL rules (`x-kubernetes-validations`) are
//! left to the callers that already check them.
//!
//! Pure: no I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

use super::API_VERSION;

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A field of an object with fixed fields: `.name`.
    Field(String),
    /// An entry of a map (`labels`, `properties`): `[key]`.
    Key(String),
    /// An item of a list: `[0]`.
    Index(usize),
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The schema has no such field here (the API server would refuse it
    /// under strict field validation, or silently drop it otherwise).
    UnknownField {
        /// The closest field name allowed at this level, when one is close.
        suggestion: Option<String>,
    },
    /// The value has the wrong JSON type.
    WrongType {
        /// The type the schema asks for.
        expected: String,
        /// The type found.
        found: &'static str,
    },
    /// The value is not one of the enum's.
    Unsupported {
        /// The value, as JSON.
        value: String,
        /// The values allowed, as JSON.
        allowed: Vec<String>,
        /// The closest allowed value, when one is close.
        suggestion: Option<String>,
    },
    /// A required field is missing.
    Required,
    /// A limit of the schema (`minimum`, `maxItems`, `maxLength`…) is broken.
    Limit(String),
}

/// One field that breaks the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Where: the path from the document's root.
    pub path: Vec<Segment>,
    /// What.
    pub problem: Problem,
}

impl Violation {
    /// Whether this is an unknown field (the one violation `--lenient` lets through).
    pub fn is_unknown_field(&self) -> bool {
        matches!(self.problem, Problem::UnknownField { .. })
    }

    /// The path as Kubernetes writes it: `spec.references[0].version`, `metadata.labels[app]`.
    pub fn field_path(&self) -> String {
        let mut text = String::new();
        for segment in &self.path {
            match segment {
                Segment::Field(name) if text.is_empty() => text.push_str(name),
                Segment::Field(name) => {
                    text.push('.');
                    text.push_str(name);
                }
                Segment::Key(key) => {
                    text.push('[');
                    text.push_str(key);
                    text.push(']');
                }
                Segment::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.field_path())?;
        match &self.problem {
            Problem::UnknownField { suggestion: Some(name) } => write!(f, "unknown field (did you mean {name}?)"),
            Problem::UnknownField { suggestion: None } => f.write_str("unknown field"),
            Problem::WrongType { expected, found } => write!(f, "must be of type {expected}, not {found}"),
            Problem::Unsupported {
                value,
                allowed,
                suggestion,
            } => {
                write!(f, "unsupported value {value}; supported values: {}", allowed.join(", "))?;
                match suggestion {
                    Some(close) => write!(f, " (did you mean {close}?)"),
                    None => Ok(()),
                }
            }
            Problem::Required => f.write_str("required value"),
            Problem::Limit(message) => f.write_str(message),
        }
    }
}

/// The violations of a document of a schemaops `kind`, in document order;
/// `None` when `kind` is not a kind schemaops serves.
pub fn validate(kind: &str, document: &Value) -> Option<Vec<Violation>> {
    let root = SCHEMAS.kinds.get(kind)?;
    let mut walk = Walk::default();
    walk.root(root, document);
    Some(walk.violations)
}

/// The kinds schemaops serves, for a did-you-mean on a misspelled kind.
pub fn kinds() -> impl Iterator<Item = &'static str> {
    SCHEMAS.kinds.keys().map(String::as_str)
}

/// The closest of `candidates` to `wrong`, when it is close enough to be a
/// typo: at most a third of its length in edits, and at least one.
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let budget = (wrong.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|candidate| {
            let distance = strsim::levenshtein(&wrong.to_lowercase(), &candidate.to_lowercase());
            (distance, candidate)
        })
        .filter(|(distance, _)| *distance <= budget)
        .min()
        .map(|(_, candidate)| candidate)
}

/// The structural schema of each kind, read once.
struct Schemas {
    /// The CRD's `openAPIV3Schema` of the served version, by kind.
    kinds: BTreeMap<String, JSONSchemaProps>,
    /// What `metadata` may hold.
    object_meta: JSONSchemaProps,
}

static SCHEMAS: LazyLock<Schemas> = LazyLock::new(|| {
    let kinds = super::render::definitions()
        .into_iter()
        .filter_map(|(_, crd)| {
            let version = crd.spec.versions.into_iter().find(|v| v.name == API_VERSION)?;
            Some((crd.spec.names.kind, version.schema?.open_api_v3_schema?))
        })
        .collect();
    Schemas {
        kinds,
        object_meta: object_meta(),
    }
});

/// The common fields of ObjectMeta, as the API server knows them; anything
/// else under `metadata` is unknown.
fn object_meta() -> JSONSchemaProps {
    let string = serde_json::json!({"type": "string"});
    let integer = serde_json::json!({"type": "integer", "format": "int64"});
    let time = serde_json::json!({"type": "string", "format": "date-time"});
    let map = serde_json::json!({"type": "object", "additionalProperties": {"type": "string"}});
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": string, "generateName": string, "namespace": string, "selfLink": string,
            "uid": string, "resourceVersion": string, "generation": integer,
            "creationTimestamp": time, "deletionTimestamp": time,
            "deletionGracePeriodSeconds": integer,
            "labels": map, "annotations": map,
            "finalizers": {"type": "array", "items": string},
            "ownerReferences": {"type": "array", "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": string, "kind": string, "name": string, "uid": string,
                    "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"}
                }
            }},
            "managedFields": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "apiVersion": string, "fieldsType": string, "manager": string,
                    "operation": string, "subresource": string, "time": time,
                    "fieldsV1": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }
            }}
        }
    });
    serde_json::from_value(schema).expect("the ObjectMeta schema is a JSONSchemaProps")
}

/// The walk over one document: the path so far and what was found.
#[derive(Default)]
struct Walk {
    path: Vec<Segment>,
    violations: Vec<Violation>,
}

impl Walk {
    fn report(&mut self, problem: Problem) {
        self.violations.push(Violation {
            path: self.path.clone(),
            problem,
        });
    }

    fn within(&mut self, segment: Segment, step: impl FnOnce(&mut Self)) {
        self.path.push(segment);
        step(self);
        self.path.pop();
    }

    /// The root: `apiVersion`, `kind` and `metadata`, which every object has
    /// and no CRD schema lists, then the CRD's own fields.
    fn root(&mut self, schema: &JSONSchemaProps, document: &Value) {
        let Some(object) = document.as_object() else {
            self.report(wrong_type("object", document));
            return;
        };
        let empty = BTreeMap::new();
        let properties = schema.properties.as_ref().unwrap_or(&empty);
        let string = JSONSchemaProps {
            type_: Some("string".to_owned()),
            ..Default::default()
        };
        for (name, value) in object {
            let field = match name.as_str() {
                "apiVersion" | "kind" => Some(&string),
                "metadata" => Some(&SCHEMAS.object_meta),
                _ => properties.get(name),
            };
            self.within(Segment::Field(name.clone()), |walk| match field {
                Some(field) => walk.value(field, value),
                None => {
                    let known = ["apiVersion", "kind", "metadata"]
                        .into_iter()
                        .chain(properties.keys().map(String::as_str));
                    walk.report(Problem::UnknownField {
                        suggestion: closest(name, known).map(str::to_owned),
                    });
                }
            });
        }
        self.required(schema, object);
    }

    fn value(&mut self, schema: &JSONSchemaProps, value: &Value) {
        // The API server prunes a null it would not keep, and keeps one it
        // would: a null is never wrong.
        if value.is_null() {
            return;
        }
        if schema.x_kubernetes_int_or_string == Some(true) {
            if !(value.is_string() || is_integer(value)) {
                self.report(wrong_type("integer or string", value));
            }
            return;
        }
        let expected = match schema.type_.as_deref() {
            Some("object") => value.as_object().map(|object| self.object(schema, object)).is_some(),
            Some("array") => value.as_array().map(|items| self.array(schema, items)).is_some(),
            Some("string") => value.as_str().map(|text| self.string(schema, text)).is_some(),
            Some("integer") => is_integer(value) && self.number(schema, value),
            Some("number") => value.is_number() && self.number(schema, value),
            Some("boolean") => value.is_boolean(),
            // Untyped: only `x-kubernetes-preserve-unknown-fields` allows it in a structural schema.
            _ => true,
        };
        if !expected {
            let expected = schema.type_.clone().unwrap_or_default();
            self.report(wrong_type(&expected, value));
            return;
        }
        if let Some(allowed) = &schema.enum_
            && !allowed.iter().any(|allowed| allowed.0 == *value)
        {
            self.unsupported(allowed.iter().map(|allowed| &allowed.0), value);
        }
    }

    fn object(&mut self, schema: &JSONSchemaProps, object: &serde_json::Map<String, Value>) {
        let preserve = schema.x_kubernetes_preserve_unknown_fields == Some(true);
        for (name, value) in object {
            if let Some(field) = schema.properties.as_ref().and_then(|properties| properties.get(name)) {
                self.within(Segment::Field(name.clone()), |walk| walk.value(field, value));
                continue;
            }
            match &schema.additional_properties {
                Some(JSONSchemaPropsOrBool::Schema(entry)) => {
                    self.within(Segment::Key(name.clone()), |walk| walk.value(entry, value));
                }
                Some(JSONSchemaPropsOrBool::Bool(true)) => {}
                _ if preserve => {}
                _ => self.within(Segment::Field(name.clone()), |walk| {
                    let known = schema.properties.iter().flat_map(|properties| properties.keys());
                    walk.report(Problem::UnknownField {
                        suggestion: closest(name, known.map(String::as_str)).map(str::to_owned),
                    });
                }),
            }
        }
        self.required(schema, object);
        let count = object.len() as f64;
        self.limit(schema.min_properties, |min| count < min as f64, "fields", "at least");
        self.limit(schema.max_properties, |max| count > max as f64, "fields", "at most");
    }

    fn array(&mut self, schema: &JSONSchemaProps, items: &[Value]) {
        match &schema.items {
            Some(JSONSchemaPropsOrArray::Schema(item)) => {
                for (index, value) in items.iter().enumerate() {
                    self.within(Segment::Index(index), |walk| walk.value(item, value));
                }
            }
            Some(JSONSchemaPropsOrArray::Schemas(tuple)) => {
                for (index, (item, value)) in tuple.iter().zip(items).enumerate() {
                    self.within(Segment::Index(index), |walk| walk.value(item, value));
                }
            }
            None => {}
        }
        let count = items.len() as f64;
        self.limit(schema.min_items, |min| count < min as f64, "items", "at least");
        self.limit(schema.max_items, |max| count > max as f64, "items", "at most");
    }

    fn string(&mut self, schema: &JSONSchemaProps, text: &str) {
        let count = text.chars().count() as f64;
        self.limit(schema.min_length, |min| count < min as f64, "characters", "at least");
        self.limit(schema.max_length, |max| count > max as f64, "characters", "at most");
        // A pattern the regex crate cannot compile is left to the API server.
        if let Some(pattern) = &schema.pattern
            && let Ok(compiled) = regex::Regex::new(pattern)
            && !compiled.is_match(text)
        {
            self.report(Problem::Limit(format!("must match the pattern {pattern}")));
        }
    }

    /// Checks `minimum` and `maximum`; always true (the value is a number).
    fn number(&mut self, schema: &JSONSchemaProps, value: &Value) -> bool {
        let Some(number) = value.as_f64() else { return true };
        let exclusive = |flag: Option<bool>| flag == Some(true);
        if let Some(minimum) = schema.minimum {
            let below = if exclusive(schema.exclusive_minimum) {
                number <= minimum
            } else {
                number < minimum
            };
            if below {
                let relation = if exclusive(schema.exclusive_minimum) {
                    "greater than"
                } else {
                    "at least"
                };
                self.report(Problem::Limit(format!("must be {relation} {minimum}, not {value}")));
            }
        }
        if let Some(maximum) = schema.maximum {
            let above = if exclusive(schema.exclusive_maximum) {
                number >= maximum
            } else {
                number > maximum
            };
            if above {
                let relation = if exclusive(schema.exclusive_maximum) {
                    "less than"
                } else {
                    "at most"
                };
                self.report(Problem::Limit(format!("must be {relation} {maximum}, not {value}")));
            }
        }
        true
    }

    /// Reports a broken count limit: "must have at most 3 items".
    fn limit(&mut self, bound: Option<i64>, broken: impl Fn(i64) -> bool, unit: &str, relation: &str) {
        if let Some(bound) = bound
            && broken(bound)
        {
            self.report(Problem::Limit(format!("must have {relation} {bound} {unit}")));
        }
    }

    fn required(&mut self, schema: &JSONSchemaProps, object: &serde_json::Map<String, Value>) {
        for name in schema.required.iter().flatten() {
            if object.get(name).is_none_or(Value::is_null) {
                self.within(Segment::Field(name.clone()), |walk| walk.report(Problem::Required));
            }
        }
    }

    fn unsupported<'a>(&mut self, allowed: impl Iterator<Item = &'a Value>, value: &Value) {
        let allowed: Vec<&Value> = allowed.collect();
        let suggestion = value.as_str().and_then(|text| {
            closest(text, allowed.iter().filter_map(|allowed| allowed.as_str())).map(|close| format!("\"{close}\""))
        });
        self.report(Problem::Unsupported {
            value: value.to_string(),
            allowed: allowed.iter().map(ToString::to_string).collect(),
            suggestion,
        });
    }
}

/// An integer, as Kubernetes reads JSON: a number with no fraction (`1.0` is one).
fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|number| number.fract() == 0.0)
}

fn wrong_type(expected: &str, found: &Value) -> Problem {
    Problem::WrongType {
        expected: expected.to_owned(),
        found: match found {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) if is_integer(found) => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(kind: &str, document: Value) -> Vec<String> {
        validate(kind, &document)
            .expect("a schemaops kind")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn schema(spec: Value) -> Value {
        json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "Schema", "metadata": {"name": "orders"}, "spec": spec})
    }

    #[test]
    fn a_valid_schema_has_no_violations() {
        let document = schema(json!({
            "subject": "orders-value", "schemaType": "AVRO", "schema": "\"long\"",
            "references": [{"name": "a.B", "subject": "b-value", "version": 1}],
            "metadata": {"properties": {"owner": "team-a"}, "tags": {"Order.card": ["PII"]}}
        }));
        assert_eq!(messages("Schema", document), Vec::<String>::new());
    }

    #[test]
    fn a_misspelled_field_names_its_path_and_the_field_meant() {
        let document = schema(json!({"subject": "s", "schema": "\"long\"", "schemaTyp": "PROTOBUF"}));
        assert_eq!(
            messages("Schema", document),
            ["spec.schemaTyp: unknown field (did you mean schemaType?)"]
        );
    }

    #[test]
    fn unknown_fields_are_found_at_any_depth_with_list_indices() {
        let document = schema(json!({
            "subject": "s", "schema": "x",
            "references": [{"name": "a", "subject": "b", "version": 1}, {"name": "a", "subjct": "b", "version": 1}]
        }));
        assert_eq!(
            messages("Schema", document),
            [
                "spec.references[1].subjct: unknown field (did you mean subject?)",
                "spec.references[1].subject: required value"
            ]
        );
    }

    #[test]
    fn a_far_off_name_gets_no_suggestion() {
        let document = schema(json!({"subject": "s", "schema": "x", "owner": "me"}));
        assert_eq!(messages("Schema", document), ["spec.owner: unknown field"]);
    }

    #[test]
    fn map_fields_take_any_key_but_check_their_values() {
        let document = schema(json!({
            "subject": "s", "schema": "x",
            "metadata": {"properties": {"anything.at/all": "ok", "number": 1}}
        }));
        assert_eq!(
            messages("Schema", document),
            ["spec.metadata.properties[number]: must be of type string, not integer"]
        );
    }

    #[test]
    fn enum_values_are_checked_with_a_suggestion() {
        let document = schema(json!({"subject": "s", "schema": "x", "schemaType": "PROTOBUFF"}));
        assert_eq!(
            messages("Schema", document),
            [
                "spec.schemaType: unsupported value \"PROTOBUFF\"; supported values: \"AVRO\", \"JSON\", \"PROTOBUF\" \
                 (did you mean \"PROTOBUF\"?)"
            ]
        );
    }

    #[test]
    fn wrong_types_and_limits_are_violations() {
        let document = schema(json!({
            "subject": ["s"], "schema": "x",
            "references": [{"name": "a", "subject": "b", "version": 0}, {"name": "a", "subject": "b", "version": "2"}]
        }));
        assert_eq!(
            messages("Schema", document),
            [
                "spec.references[0].version: must be at least 1, not 0",
                "spec.references[1].version: must be of type integer, not string",
                "spec.subject: must be of type string, not array"
            ]
        );
        let policy = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SchemaPolicy", "metadata": {"name": "p"},
            "spec": {"validationActions": ["Deny", "Audit", "Deny", "Audit"]}
        });
        assert_eq!(
            messages("SchemaPolicy", policy),
            ["spec.validationActions: must have at most 3 items"]
        );
    }

    #[test]
    fn nulls_are_never_wrong_and_whole_numbers_are_integers() {
        let document = schema(json!({
            "subject": "s", "schema": "x", "schemaFrom": null,
            "references": [{"name": "a", "subject": "b", "version": 2.0}]
        }));
        assert_eq!(messages("Schema", document), Vec::<String>::new());
    }

    #[test]
    fn metadata_is_checked_as_object_meta() {
        let document = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SubjectConfig",
            "metadata": {
                "name": "c", "creationTimestamp": null, "labels": {"app": "x", "tier": 1},
                "anotations": {"a": "b"}, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n"}]
            },
            "spec": {"subject": "s", "compatibility": "FULL"}
        });
        assert_eq!(
            messages("SubjectConfig", document),
            [
                "metadata.anotations: unknown field (did you mean annotations?)",
                "metadata.labels[tier]: must be of type string, not integer",
                "metadata.ownerReferences[0].uid: required value"
            ]
        );
    }

    #[test]
    fn root_and_deep_typos_in_each_kind() {
        let config = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SubjectConfig", "metadata": {"name": "c"},
            "spec": {"subject": "s", "compatibilty": "FULL"}, "specs": {}
        });
        assert_eq!(
            messages("SubjectConfig", config),
            [
                "spec.compatibilty: unknown field (did you mean compatibility?)",
                "specs: unknown field (did you mean spec?)"
            ]
        );
        let policy = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SchemaPolicy", "metadata": {"name": "p"},
            "spec": {"rules": {"naming": {"avroNamespce": "com.acme.*"}}}
        });
        assert_eq!(
            messages("SchemaPolicy", policy),
            ["spec.rules.naming.avroNamespce: unknown field (did you mean avroNamespace?)"]
        );
    }

    #[test]
    fn a_registry_url_must_match_its_pattern() {
        let connection = json!({
            "apiVersion": "schemaops.dev/v1alpha1", "kind": "SchemaRegistry",
            "metadata": {"name": "r", "namespace": "a"},
            "spec": {"external": {"urls": ["https://ok.example", "ftp://no.example"]}}
        });
        assert_eq!(
            messages("SchemaRegistry", connection),
            ["spec.external.urls[1]: must match the pattern ^https?://"]
        );
    }

    #[test]
    fn only_schemaops_kinds_are_validated() {
        assert!(validate("Deployment", &json!({})).is_none());
        assert_eq!(
            kinds().collect::<Vec<_>>(),
            [
                "ClusterSchemaRegistry",
                "Schema",
                "SchemaPolicy",
                "SchemaRegistry",
                "SubjectConfig"
            ]
        );
    }

    /// The walk understands every keyword the CRDs use; a new one (a
    /// `oneOf`, a `multipleOf`) fails here until the walk learns it.
    #[test]
    fn the_crds_use_no_keyword_the_walk_ignores() {
        fn visit(schema: &JSONSchemaProps, path: &str) {
            let ignored = [
                ("allOf", schema.all_of.is_some()),
                ("anyOf", schema.any_of.is_some()),
                ("oneOf", schema.one_of.is_some()),
                ("not", schema.not.is_some()),
                ("patternProperties", schema.pattern_properties.is_some()),
                ("multipleOf", schema.multiple_of.is_some()),
                ("uniqueItems", schema.unique_items.is_some()),
                ("$ref", schema.ref_path.is_some()),
            ];
            for (keyword, used) in ignored {
                assert!(!used, "{path} uses {keyword}, which the strict walk ignores");
            }
            for (name, property) in schema.properties.iter().flatten() {
                visit(property, &format!("{path}.{name}"));
            }
            if let Some(JSONSchemaPropsOrBool::Schema(entry)) = &schema.additional_properties {
                visit(entry, &format!("{path}[*]"));
            }
            if let Some(JSONSchemaPropsOrArray::Schema(item)) = &schema.items {
                visit(item, &format!("{path}[]"));
            }
        }
        for (kind, schema) in &SCHEMAS.kinds {
            visit(schema, kind);
        }
    }

    #[test]
    fn closest_takes_small_edits_only() {
        assert_eq!(closest("schemaTyp", ["schema", "schemaType"]), Some("schemaType"));
        assert_eq!(closest("SCHEMA", ["schema"]), Some("schema"));
        assert_eq!(closest("x", ["schema"]), None);
    }
}

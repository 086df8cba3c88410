//! Upgrades (issue 8, item 6): objects stored by an older schemaops, or by a newer one during a
//! rollback, must still deserialize into today's types. Kubernetes keeps the stored JSON as it was
//! written, so a field added to a spec reaches us absent (serde defaults fill it in) and a field
//! we no longer know reaches us present (it must be ignored, never an error: a Schema that fails
//! to deserialize can neither reconcile nor be deleted through its finalizer).
//! The fixtures in `tests/fixtures/upgrades/` are objects as the API server returns them.

use std::path::Path;

use schemaops::crd::{CompatibilityLevel, DeletionPolicy, Schema, SchemaType, SubjectConfig};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upgrades")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn a_schema_written_by_this_version_reads_back_unchanged() {
    let stored = fixture("schema-v0.1.0.json");
    let schema: Schema = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(schema.spec.deletion_policy, DeletionPolicy::SoftDelete);
    assert_eq!(schema.spec.references.len(), 1);
    let status = schema.status.as_ref().unwrap();
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(status.conditions[0].type_, "Ready");
    // What we write is what we read: no field is lost or renamed on the way through.
    let written = serde_json::to_value(&schema).unwrap();
    assert_eq!(written["spec"], stored["spec"]);
    assert_eq!(written["status"], stored["status"]);
}

#[test]
fn fields_added_since_an_object_was_stored_take_their_defaults() {
    let schema: Schema = serde_json::from_value(fixture("schema-without-optional-fields.json")).unwrap();
    assert_eq!(schema.spec.schema_type, SchemaType::Avro);
    assert_eq!(schema.spec.deletion_policy, DeletionPolicy::Retain);
    assert!(schema.spec.references.is_empty());
    assert!(
        schema.spec.registry_ref.is_none(),
        "an object without a ref uses the default registry"
    );
    assert!(schema.spec.schema.is_none());
    assert!(schema.status.is_none());
    assert_eq!(schema.spec.schema_from.unwrap().config_map_key_ref.key, "payment.avsc");
}

#[test]
fn fields_from_a_newer_version_are_ignored() {
    let schema: Schema = serde_json::from_value(fixture("schema-from-a-newer-version.json")).unwrap();
    assert_eq!(schema.spec.subject, "orders-value");
    assert_eq!(schema.spec.schema_type, SchemaType::Json);
    assert_eq!(schema.status.unwrap().observed_generation, Some(4));

    let config: SubjectConfig = serde_json::from_value(fixture("subjectconfig-from-a-newer-version.json")).unwrap();
    assert_eq!(config.spec.subject, "orders-value");
    assert!(config.spec.compatibility.is_none());
}

#[test]
fn a_subject_config_written_by_this_version_reads_back_unchanged() {
    let stored = fixture("subjectconfig-v0.1.0.json");
    let config: SubjectConfig = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(config.spec.compatibility, Some(CompatibilityLevel::BackwardTransitive));
    assert_eq!(config.spec.contract.normalize, Some(true));
    assert!(config.spec.mode.is_none());
    assert_eq!(serde_json::to_value(&config).unwrap()["spec"], stored["spec"]);
}

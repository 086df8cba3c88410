//! Policy evaluation (issue 17): 100 SchemaPolicies over 1,000 objects
//! (Schemas and SubjectConfigs in 20 labelled namespaces), judged as the
//! reconcile judges them. Prints the cost per object against the target
//! (under 50 µs), with and without CEL validations, and the cost of one
//! ownership check (`may_claim`), which every view of a subject makes per claim.
//!
//! `cargo bench --bench policy`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemaops::compat::{FieldSummary, NamedType, SchemaSummary};
use schemaops::controller::judge::{NamespaceLabels, PolicyContext};
use schemaops::crd::{ResourceKind, Schema, SchemaPolicySpec, SubjectConfig};
use schemaops::policy::{LevelOrigin, PolicySet, ProposedLevel};
use serde_json::json;

const POLICIES: usize = 100;
const OBJECTS: usize = 1_000;
const NAMESPACES: usize = 20;
const TARGET: Duration = Duration::from_micros(50);

/// The `index`th policy: each team's own floor and subjects, and a few
/// cluster-wide ones, so that every object is matched by several.
fn policy(index: usize, cel: bool) -> (String, SchemaPolicySpec) {
    let team = index % NAMESPACES;
    let mut rules = json!({
        "subjects": {"allowed": ["{namespace}.*", format!("shared-{team}-*")]},
        "compatibility": {"minimum": "BACKWARD", "allowed": ["BACKWARD", "BACKWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]},
        "deletionPolicies": ["Retain", "SoftDelete"],
        "modes": ["READWRITE", "READONLY"],
        "naming": {"avroNamespace": "com.acme.*"},
        "requireFieldDocs": index.is_multiple_of(10),
    });
    if cel && index.is_multiple_of(10) {
        rules["validations"] = json!([{"expression": "object.metadata.name.size() < 64", "message": "short names"}]);
    }
    let spec = json!({
        "match": {
            "namespaceSelector": {"matchLabels": {"tier": if index.is_multiple_of(4) { "gold" } else { "silver" }}},
            "subjects": if index.is_multiple_of(5) { json!([]) } else { json!(["team-*", "shared-*"]) },
        },
        "rules": rules,
        "validationActions": [if index.is_multiple_of(3) { "Warn" } else { "Deny" }],
    });
    (format!("policy-{index:03}"), serde_json::from_value(spec).unwrap())
}

fn namespaces() -> NamespaceLabels {
    (0..NAMESPACES)
        .map(|team| {
            let tier = if team.is_multiple_of(2) { "gold" } else { "silver" };
            (
                format!("team-{team}"),
                BTreeMap::from([
                    ("tier".to_owned(), tier.to_owned()),
                    ("env".to_owned(), "prod".to_owned()),
                ]),
            )
        })
        .collect()
}

fn schema(index: usize) -> Schema {
    let team = index % NAMESPACES;
    serde_json::from_value(json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "Schema",
        "metadata": {"name": format!("event-{index}"), "namespace": format!("team-{team}")},
        "spec": {"subject": format!("team-{team}.event-{index}-value"), "schema": "{}", "deletionPolicy": "Retain"},
    }))
    .unwrap()
}

fn subject_config(index: usize) -> SubjectConfig {
    let team = index % NAMESPACES;
    serde_json::from_value(json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "SubjectConfig",
        "metadata": {"name": format!("event-{index}"), "namespace": format!("team-{team}")},
        "spec": {"subject": format!("team-{team}.event-{index}-value"), "compatibility": "FULL", "mode": "READWRITE"},
    }))
    .unwrap()
}

fn summary() -> SchemaSummary {
    SchemaSummary {
        schema_type: "AVRO",
        name: Some("Event".to_owned()),
        namespace: Some("com.acme.events".to_owned()),
        top_level_types: vec![NamedType {
            full_name: "com.acme.events.Event".to_owned(),
            namespace: "com.acme.events".to_owned(),
        }],
        fields: (0..20)
            .map(|field| FieldSummary {
                record: "com.acme.events.Event".to_owned(),
                name: format!("f{field}"),
                documented: true,
            })
            .collect(),
        ..SchemaSummary::default()
    }
}

/// Judges every object once as the reconcile does; the time per object.
fn per_object(context: &PolicyContext, schemas: &[Schema], configs: &[SubjectConfig]) -> (Duration, usize) {
    let summary = summary();
    let level = ProposedLevel {
        level: schemaops::crd::CompatibilityLevel::Full,
        origin: LevelOrigin::Global,
    };
    let mut violations = 0;
    let started = Instant::now();
    for schema in schemas {
        // The reconcile judges a Schema twice: on its spec, then with the parsed schema and level.
        violations += black_box(context.judge_schema(schema, None, None, None))
            .violations
            .len();
        violations += black_box(context.judge_schema(schema, None, Some(&summary), Some(&level)))
            .violations
            .len();
    }
    for config in configs {
        violations += black_box(context.judge_subject_config(config, None, None))
            .violations
            .len();
    }
    (started.elapsed() / (schemas.len() + configs.len()) as u32, violations)
}

fn main() {
    let schemas: Vec<Schema> = (0..OBJECTS / 2).map(schema).collect();
    let configs: Vec<SubjectConfig> = (0..OBJECTS / 2).map(subject_config).collect();
    let labels = Arc::new(namespaces());
    for cel in [false, true] {
        let specs: Vec<(String, SchemaPolicySpec)> = (0..POLICIES).map(|index| policy(index, cel)).collect();
        let compile_started = Instant::now();
        let set = PolicySet::compile(specs.iter().map(|(name, spec)| (name.as_str(), spec)));
        let compiled = compile_started.elapsed();
        assert!(set.invalid().is_empty(), "{:?}", set.invalid());
        let context = PolicyContext::new(Arc::new(set), Arc::clone(&labels));
        // Warm up, then take the best of five passes.
        let mut best = Duration::MAX;
        let mut violations = 0;
        for _ in 0..6 {
            let (cost, found) = per_object(&context, &schemas, &configs);
            best = best.min(cost);
            violations = found;
        }
        println!(
            "{POLICIES} policies{} over {OBJECTS} objects: {:.1} µs per object ({violations} violations found), \
             compiled in {compiled:.2?} (target under 50 µs: {})",
            if cel { " (10 with CEL)" } else { "" },
            best.as_secs_f64() * 1e6,
            if best < TARGET { "met" } else { "MISSED" }
        );
    }
    let context = PolicyContext::new(
        Arc::new(PolicySet::compile(
            (0..POLICIES)
                .map(|index| policy(index, false))
                .collect::<Vec<_>>()
                .iter()
                .map(|(name, spec)| (name.as_str(), spec)),
        )),
        labels,
    );
    let started = Instant::now();
    let mut allowed = 0;
    for schema in &schemas {
        let key = schemaops::controller::view::ObjectKey::of(&schema.metadata);
        let claimant = schemaops::controller::view::Claimant {
            kind: ResourceKind::Schema,
            key: &key,
            schema_type: Some(schema.spec.schema_type),
        };
        allowed += usize::from(context.may_claim(&claimant, &schema.spec.subject));
    }
    println!(
        "may_claim: {:.1} µs per claim ({allowed} of {} allowed)",
        started.elapsed().as_secs_f64() * 1e6 / schemas.len() as f64,
        schemas.len()
    );
}

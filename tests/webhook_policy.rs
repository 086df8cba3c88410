//! The admission webhook judges Schemas and SubjectConfigs against the
//! platform's SchemaPolicies (issue 17): AdmissionReviews through the router,
//! with no socket; the denial names the policy, the rule, the field path and
//! the remedy; a Warn policy's violation comes back as a warning.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use schemaops::compat::Checker;
use schemaops::controller::judge::PolicySource;
use schemaops::crd::SchemaPolicySpec;
use schemaops::policy::PolicySet;
use schemaops::webhook::{Admission, FixedConfigMaps, FixedView, server};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const ORDERS: &str =
    r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"}]}"#;

fn prod_policy(actions: &[&str]) -> SchemaPolicySpec {
    serde_json::from_value(json!({
        "match": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        "rules": {
            "subjects": {"allowed": ["{namespace}.*"]},
            "compatibility": {"minimum": "BACKWARD_TRANSITIVE"},
            "deletionPolicies": ["Retain", "SoftDelete"],
            "modes": ["READWRITE", "READONLY"],
        },
        "validationActions": actions,
    }))
    .unwrap()
}

fn policies(spec: Option<SchemaPolicySpec>) -> PolicySource {
    let set = match &spec {
        Some(spec) => PolicySet::compile([("prod", spec)]),
        None => PolicySet::empty(),
    };
    let prod = BTreeMap::from([("env".to_owned(), "prod".to_owned())]);
    PolicySource::new(
        set,
        BTreeMap::from([("team-a".to_owned(), prod.clone()), ("team-b".to_owned(), prod)]),
    )
}

async fn admission(folder: &std::path::Path, policies: PolicySource) -> Arc<Admission> {
    admission_with(folder, policies, FixedView::default()).await
}

async fn admission_with(folder: &std::path::Path, policies: PolicySource, view: FixedView) -> Arc<Admission> {
    let registry = schemaops::commands::registry::open_registry(&folder.join("registry.db"), None, Checker::default())
        .await
        .unwrap();
    Arc::new(Admission {
        registry: Arc::new(registry),
        connections: None,
        checker: Checker::default(),
        view: Arc::new(view),
        config_maps: Arc::new(FixedConfigMaps::default()),
        namespace: None,
        policies,
    })
}

fn review(kind: &str, namespace: &str, spec: Value) -> String {
    let resource = if kind == "Schema" { "schemas" } else { "subjectconfigs" };
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "schemaops.dev", "version": "v1alpha1", "kind": kind},
            "resource": {"group": "schemaops.dev", "version": "v1alpha1", "resource": resource},
            "name": "orders",
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "team-member"},
            "object": {
                "apiVersion": "schemaops.dev/v1alpha1",
                "kind": kind,
                "metadata": {"name": "orders", "namespace": namespace, "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": spec,
            },
            "oldObject": null,
            "dryRun": false
        }
    })
    .to_string()
}

/// The `response` of the review of `body`.
async fn post(admission: Arc<Admission>, body: String) -> Value {
    let response = server::router(admission)
        .oneshot(
            Request::post(server::VALIDATE_SCHEMAS_PATH)
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice::<Value>(&bytes).unwrap()["response"].clone()
}

fn assert_denied(response: &Value, expected: &str) {
    assert_eq!(response["allowed"], false, "{response:#}");
    assert_eq!(response["status"]["code"], 403, "{response:#}");
    assert_eq!(response["status"]["reason"], "Forbidden", "{response:#}");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains(expected), "{message}");
}

#[tokio::test]
async fn team_b_is_refused_each_time_with_the_explanation() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(folder.path(), policies(Some(prod_policy(&["Deny"])))).await;

    let claim = review(
        "Schema",
        "team-b",
        json!({"subject": "team-a.orders-value", "schema": ORDERS}),
    );
    assert_denied(
        &post(Arc::clone(&admission), claim).await,
        "SchemaPolicy prod rule subjects.allowed at spec.subject: namespace team-b may not manage subject \
         `team-a.orders-value`; use a subject matching `team-b.*`",
    );

    let none = review(
        "SubjectConfig",
        "team-b",
        json!({"subject": "team-b.payments-value", "compatibility": "NONE"}),
    );
    assert_denied(
        &post(Arc::clone(&admission), none).await,
        "SchemaPolicy prod rule compatibility at spec.compatibility: the level set is NONE; the level must be one \
         of BACKWARD_TRANSITIVE, FULL_TRANSITIVE",
    );

    let hard_delete = review(
        "Schema",
        "team-b",
        json!({"subject": "team-b.payments-value", "schema": ORDERS, "deletionPolicy": "HardDelete"}),
    );
    assert_denied(
        &post(Arc::clone(&admission), hard_delete).await,
        "SchemaPolicy prod rule deletionPolicies at spec.deletionPolicy: deletionPolicy HardDelete is not allowed; \
         use one of Retain, SoftDelete",
    );

    // Without a level of its own, the subject falls back to the registry's global BACKWARD.
    let fallback = review("SubjectConfig", "team-b", json!({"subject": "team-b.payments-value"}));
    assert_denied(
        &post(Arc::clone(&admission), fallback).await,
        "SchemaPolicy prod rule compatibility at spec.compatibility: without a level set, the registry's global \
         level applies, and it is BACKWARD",
    );

    // A Schema is checked under the level in force: with no SubjectConfig,
    // the global BACKWARD, which is below the floor.
    let own = review(
        "Schema",
        "team-a",
        json!({"subject": "team-a.orders-value", "schema": ORDERS}),
    );
    assert_denied(
        &post(Arc::clone(&admission), own.clone()).await,
        // Issue 39 item 13: the fix is in a SubjectConfig, not at the Schema's `spec.subject`.
        "SchemaPolicy prod rule compatibility at a SubjectConfig's spec.compatibility: the level the subject falls \
         back to (the registry's global level) is BACKWARD",
    );
    let level = review(
        "SubjectConfig",
        "team-a",
        json!({"subject": "team-a.orders-value", "compatibility": "FULL_TRANSITIVE"}),
    );
    assert_eq!(post(admission, level).await["allowed"], true);

    // With team-a's SubjectConfig at BACKWARD_TRANSITIVE, team-a's Schema passes.
    let config: schemaops::crd::SubjectConfig = serde_json::from_value(json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "SubjectConfig",
        "metadata": {"name": "orders", "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"subject": "team-a.orders-value", "compatibility": "BACKWARD_TRANSITIVE"},
    }))
    .unwrap();
    let view = FixedView {
        schemas: Vec::new(),
        subject_configs: vec![config],
    };
    let admission = admission_with(folder.path(), policies(Some(prod_policy(&["Deny"]))), view).await;
    let response = post(admission, own).await;
    assert_eq!(response["allowed"], true, "{response:#}");
}

#[tokio::test]
async fn a_warn_policy_lets_the_change_through_with_a_warning() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(folder.path(), policies(Some(prod_policy(&["Warn"])))).await;
    let none = review(
        "SubjectConfig",
        "team-b",
        json!({"subject": "team-b.payments-value", "compatibility": "NONE"}),
    );
    let response = post(admission, none).await;
    assert_eq!(response["allowed"], true, "{response:#}");
    let warnings = response["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{response:#}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("SchemaPolicy prod rule compatibility"),
        "{response:#}"
    );
}

#[tokio::test]
async fn without_a_policy_subject_configs_are_allowed_as_before() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(folder.path(), policies(None)).await;
    let none = review(
        "SubjectConfig",
        "team-b",
        json!({"subject": "team-a.orders-value", "compatibility": "NONE"}),
    );
    let response = post(Arc::clone(&admission), none).await;
    assert_eq!(response["allowed"], true, "{response:#}");
    assert!(response.get("warnings").is_none_or(Value::is_null), "{response:#}");
    let claim = review(
        "Schema",
        "team-b",
        json!({"subject": "team-a.orders-value", "schema": ORDERS, "deletionPolicy": "HardDelete"}),
    );
    assert_eq!(post(admission, claim).await["allowed"], true);
}

/// A policy whose only rule is the CEL expression `expression`, for every
/// namespace.
fn validation_policy(expression: &str) -> SchemaPolicySpec {
    serde_json::from_value(json!({
        "rules": {"validations": [{"expression": expression}]},
        "validationActions": ["Deny"],
    }))
    .unwrap()
}

/// Issue 37, item 3: a 4 KiB chain with no brackets parsed into a tree
/// 2,047 levels deep and overflowed a 2 MiB stack (a test thread's, a
/// tokio worker's), aborting the process. It is an invalid policy now,
/// naming the limit and the depth, and applies to nothing.
#[tokio::test]
async fn a_cel_chain_thousands_deep_is_an_invalid_policy_not_a_crash() {
    for chain in [
        vec!["1"; 2046].join("+") + " > 0",
        vec!["1"; 2046].join("*") + " > 0",
        "object".to_owned() + &"[0]".repeat(1350),
    ] {
        let spec = validation_policy(&chain);
        let set = PolicySet::compile([("deep", &spec)]);
        assert!(set.is_empty());
        let problems = &set.invalid()[0].problems;
        assert!(
            problems[0].starts_with("spec.rules.validations[0].expression: the expression is ")
                && problems[0].ends_with(" levels deep; the limit is 64"),
            "{problems:?}"
        );
    }
}

/// Issue 37, item 4: a field-uniqueness rule is quadratic; on 2,000 fields
/// it took 25 s per review. It runs out of its budget now, and that is a
/// denial that says so (never a pass).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cel_rule_over_its_budget_denies_saying_so() {
    let folder = tempfile::tempdir().unwrap();
    // `schema` is null while the Schema is judged on its spec alone.
    let unique = "schema == null || schema.fields.all(f, schema.fields.filter(g, g.name == f.name).size() == 1)";
    let admission = admission(folder.path(), policies(Some(validation_policy(unique)))).await;
    let record = |count: usize| {
        let fields: Vec<Value> = (0..count)
            .map(|i| json!({"name": format!("f{i}"), "type": "int"}))
            .collect();
        json!({"type": "record", "name": "Wide", "namespace": "com.example", "fields": fields}).to_string()
    };
    let wide = review(
        "Schema",
        "team-a",
        json!({"subject": "team-a.wide-value", "schema": record(2_000)}),
    );
    assert_denied(
        &post(Arc::clone(&admission), wide).await,
        "ran out of its evaluation budget (100000 steps / 250 ms)",
    );
    let narrow = review(
        "Schema",
        "team-a",
        json!({"subject": "team-a.wide-value", "schema": record(10)}),
    );
    let response = post(admission, narrow).await;
    assert_eq!(response["allowed"], true, "{response:#}");
}

/// Issue 39 item 9: a policy matching only Protobuf Schemas in `analytics` refused the
/// only claimant of `analytics.avro-value`, an Avro Schema, as a subject conflict; judged
/// with its type, the claim is allowed, and a later claim from another namespace is the
/// conflict.
#[tokio::test]
async fn a_policy_for_protobuf_only_does_not_take_a_subject_from_an_avro_schema() {
    let folder = tempfile::tempdir().unwrap();
    let spec: SchemaPolicySpec = serde_json::from_value(json!({
        "match": {"namespaces": ["analytics"], "schemaTypes": ["PROTOBUF"]},
        "rules": {"subjects": {"allowed": ["{namespace}.proto.*"]}},
    }))
    .unwrap();
    let source = || {
        PolicySource::new(
            PolicySet::compile([("proto", &spec)]),
            BTreeMap::from([
                ("analytics".to_owned(), BTreeMap::new()),
                ("ads".to_owned(), BTreeMap::new()),
            ]),
        )
    };
    let claim = |namespace: &str| {
        review(
            "Schema",
            namespace,
            json!({"subject": "analytics.avro-value", "schema": ORDERS}),
        )
    };
    let admission = admission(folder.path(), source()).await;
    let response = post(admission, claim("analytics")).await;
    assert_eq!(response["allowed"], true, "{response:#}");

    let holder: schemaops::crd::Schema = serde_json::from_value(json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "Schema",
        "metadata": {"name": "orders", "namespace": "analytics", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"subject": "analytics.avro-value", "schema": ORDERS},
        "status": {"subject": "analytics.avro-value"},
    }))
    .unwrap();
    let view = FixedView {
        schemas: vec![holder],
        subject_configs: Vec::new(),
    };
    let admission = admission_with(folder.path(), source(), view).await;
    assert_denied(
        &post(admission, claim("ads")).await,
        "subject `analytics.avro-value` is managed by Schema analytics/orders",
    );
}

/// A DELETE review of the SubjectConfig `config` (the API server sends the object as `oldObject`).
fn deletion_review(config: &Value) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800003",
            "kind": {"group": "schemaops.dev", "version": "v1alpha1", "kind": "SubjectConfig"},
            "resource": {"group": "schemaops.dev", "version": "v1alpha1", "resource": "subjectconfigs"},
            "name": config["metadata"]["name"],
            "namespace": config["metadata"]["namespace"],
            "operation": "DELETE",
            "userInfo": {"username": "team-member"},
            "object": null,
            "oldObject": config,
            "dryRun": false
        }
    })
    .to_string()
}

/// Issue 39 item 12: REST `DELETE /config/{subject}` was refused by the floor, but deleting
/// the SubjectConfig that sets the level was allowed (the webhook never judged DELETE), and
/// the subject fell to the registry's global BACKWARD. The DELETE is judged now, by the level
/// the subject falls back to; a SubjectConfig that does not manage the subject goes freely.
#[tokio::test]
async fn deleting_the_subject_config_that_holds_the_floor_is_denied_while_the_fallback_is_below_it() {
    let folder = tempfile::tempdir().unwrap();
    let config = |name: &str, holds: bool| {
        let mut config = json!({
            "apiVersion": "schemaops.dev/v1alpha1",
            "kind": "SubjectConfig",
            "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"subject": "team-a.orders-value", "compatibility": "BACKWARD_TRANSITIVE"},
        });
        if holds {
            config["status"] = json!({"subject": "team-a.orders-value"});
        }
        config
    };
    let view = FixedView {
        schemas: Vec::new(),
        subject_configs: vec![serde_json::from_value(config("orders", true)).unwrap()],
    };
    let admission = admission_with(folder.path(), policies(Some(prod_policy(&["Deny"]))), view).await;
    assert_denied(
        &post(Arc::clone(&admission), deletion_review(&config("orders", true))).await,
        "SchemaPolicy prod rule compatibility at spec.compatibility: once this SubjectConfig is deleted, the subject \
         falls back to the registry's global level, and it is BACKWARD; the level must be one of \
         BACKWARD_TRANSITIVE, FULL_TRANSITIVE",
    );
    // A second SubjectConfig for the subject manages nothing: its deletion changes no level.
    let response = post(Arc::clone(&admission), deletion_review(&config("orders-copy", false))).await;
    assert_eq!(response["allowed"], true, "{response:#}");

    // With the global level at the floor, the fallback is allowed.
    admission
        .registry
        .set_compatibility(None, schemaops::compat::Mode::FullTransitive)
        .await
        .unwrap();
    let response = post(admission, deletion_review(&config("orders", true))).await;
    assert_eq!(response["allowed"], true, "{response:#}");
}

/// Issue 39 item 13: a warning was cut at 256 bytes, losing the remedy at its end. The API
/// server keeps warnings of up to 256 characters whole, so a longer one comes in numbered
/// parts that together hold all of it.
#[tokio::test]
async fn a_long_warning_comes_whole_in_parts_the_api_server_keeps() {
    let folder = tempfile::tempdir().unwrap();
    let patterns: Vec<String> = (0..12).map(|i| format!("{{namespace}}.stream-{i:02}.*")).collect();
    let spec: SchemaPolicySpec = serde_json::from_value(json!({
        "rules": {"subjects": {"allowed": patterns}},
        "validationActions": ["Warn"],
    }))
    .unwrap();
    let source = PolicySource::new(PolicySet::compile([("streams", &spec)]), BTreeMap::new());
    let admission = admission(folder.path(), source).await;
    let claim = review(
        "Schema",
        "team-a",
        json!({"subject": "team-a.orders-value", "schema": ORDERS}),
    );
    let response = post(admission, claim).await;
    assert_eq!(response["allowed"], true, "{response:#}");
    let warnings: Vec<&str> = response["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|warning| warning.as_str().unwrap())
        .collect();
    assert!(warnings.len() > 1, "{warnings:#?}");
    assert!(
        warnings.iter().all(|warning| warning.chars().count() <= 256),
        "{warnings:#?}"
    );
    let count = warnings.len();
    let whole: Vec<&str> = warnings
        .iter()
        .enumerate()
        .map(|(index, warning)| {
            warning
                .strip_prefix(&format!("({}/{count}) ", index + 1))
                .unwrap_or_else(|| panic!("{warning}"))
        })
        .collect();
    let whole = whole.join(" ");
    assert!(
        whole.starts_with("SchemaPolicy streams rule subjects.allowed at spec.subject: namespace team-a may not")
            && whole.ends_with("`team-a.stream-10.*`, `team-a.stream-11.*`"),
        "{whole}"
    );
}

/// Issue 39 item 13: a Schema checked under a level its SubjectConfig sets below the floor was
/// refused "at spec.subject"; the refusal names the SubjectConfig, where the level is fixed.
#[tokio::test]
async fn a_schema_under_a_level_below_the_floor_is_pointed_at_the_subject_config_that_sets_it() {
    let folder = tempfile::tempdir().unwrap();
    let config: schemaops::crd::SubjectConfig = serde_json::from_value(json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "SubjectConfig",
        "metadata": {"name": "orders", "namespace": "team-a", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"subject": "team-a.orders-value", "compatibility": "BACKWARD"},
        "status": {"subject": "team-a.orders-value"},
    }))
    .unwrap();
    let view = FixedView {
        schemas: Vec::new(),
        subject_configs: vec![config],
    };
    let admission = admission_with(folder.path(), policies(Some(prod_policy(&["Deny"]))), view).await;
    let schema = review(
        "Schema",
        "team-a",
        json!({"subject": "team-a.orders-value", "schema": ORDERS}),
    );
    assert_denied(
        &post(admission, schema).await,
        "SchemaPolicy prod rule compatibility at SubjectConfig team-a/orders spec.compatibility: the level \
         SubjectConfig team-a/orders sets for the subject is BACKWARD",
    );
}

/// Issue 40: a policy restricts the registries a namespace may use; the webhook refuses a
/// Schema or SubjectConfig bound to another one, and lets those bound to an allowed one through.
#[tokio::test]
async fn a_registry_the_namespace_may_not_use_is_refused_at_admission() {
    let folder = tempfile::tempdir().unwrap();
    let spec: SchemaPolicySpec = serde_json::from_value(json!({
        "match": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        "rules": {"registries": {"allowed": [{"kind": "ClusterSchemaRegistry", "name": "shared"}]}},
    }))
    .unwrap();
    let admission = admission(folder.path(), policies(Some(spec))).await;
    let bound = review(
        "Schema",
        "team-b",
        json!({"subject": "orders-value", "schema": ORDERS, "registryRef": {"kind": "SchemaRegistry", "name": "team-b-main"}}),
    );
    assert_denied(
        &post(Arc::clone(&admission), bound).await,
        "SchemaPolicy prod rule registries.allowed at spec.registryRef: namespace team-b may not use \
         SchemaRegistry/team-b-main; use one of ClusterSchemaRegistry/shared",
    );
    let unbound = review(
        "SubjectConfig",
        "team-b",
        json!({"subject": "orders-value", "compatibility": "FULL"}),
    );
    assert_denied(
        &post(Arc::clone(&admission), unbound).await,
        "namespace team-b may not use the default registry",
    );
    let allowed = review(
        "SubjectConfig",
        "team-b",
        json!({"subject": "orders-value", "compatibility": "FULL", "registryRef": {"kind": "ClusterSchemaRegistry", "name": "shared"}}),
    );
    let response = post(admission, allowed).await;
    assert_eq!(response["allowed"], true, "{response:#}");
}

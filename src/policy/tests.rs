//! Evaluation: every rule, the combination of policies, each action.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::compat::{FieldSummary, NamedType, SchemaSummary};
use crate::crd::{CompatibilityLevel, DeletionPolicy, ModeName, SchemaType};

fn policy(name: &str, spec: serde_json::Value) -> (String, SchemaPolicySpec) {
    (name.to_owned(), serde_json::from_value(spec).unwrap())
}

fn set(policies: &[(String, SchemaPolicySpec)]) -> PolicySet {
    let set = PolicySet::compile(policies.iter().map(|(name, spec)| (name.as_str(), spec)));
    assert!(set.invalid().is_empty(), "{:?}", set.invalid());
    set
}

fn prod() -> (String, SchemaPolicySpec) {
    policy(
        "prod",
        json!({
            "match": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
            "rules": {
                "subjects": {"allowed": ["{namespace}.*"]},
                "compatibility": {"minimum": "BACKWARD_TRANSITIVE"},
                "deletionPolicies": ["Retain", "SoftDelete"],
                "modes": ["READWRITE", "READONLY"],
            },
        }),
    )
}

fn labels(env: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("env".to_owned(), env.to_owned())])
}

fn schema_in<'a>(namespace: &'a str, labels: &'a BTreeMap<String, String>, subject: &'a str) -> Proposal<'a> {
    Proposal {
        namespace: Some(NamespaceFacts {
            name: namespace,
            labels,
        }),
        subject: Some(subject),
        schema_type: Some(SchemaType::Avro),
        deletion_policy: Some(DeletionPolicy::Retain),
        ..Proposal::new(Target::Schema)
    }
}

#[test]
fn without_a_policy_everything_is_allowed() {
    let prod = labels("prod");
    let verdict = PolicySet::empty().evaluate(&schema_in("team-a", &prod, "anything"));
    assert_eq!(verdict, Verdict::default());
}

#[test]
fn a_subject_outside_the_allowed_patterns_is_refused_naming_policy_rule_path_and_remedy() {
    let set = set(&[prod()]);
    let prod = labels("prod");
    assert!(
        !set.evaluate(&schema_in("team-a", &prod, "team-a.orders-value"))
            .is_denied()
    );
    let verdict = set.evaluate(&schema_in("team-b", &prod, "team-a.orders-value"));
    assert!(verdict.subject_not_allowed());
    assert_eq!(
        verdict.denial_message().unwrap(),
        "SchemaPolicy prod rule subjects.allowed at spec.subject: namespace team-b may not manage subject \
         `team-a.orders-value`; use a subject matching `team-b.*`"
    );
}

#[test]
fn a_policy_applies_only_to_the_namespaces_it_matches() {
    let set = set(&[prod()]);
    let dev = labels("dev");
    assert!(!set.evaluate(&schema_in("sandbox", &dev, "sandbox-orders")).is_denied());
    let by_name = self::set(&[policy(
        "named",
        json!({"match": {"namespaces": ["team-a"]}, "rules": {"deletionPolicies": ["Retain"]}}),
    )]);
    let mut proposal = schema_in("team-b", &dev, "x");
    proposal.deletion_policy = Some(DeletionPolicy::HardDelete);
    assert!(!by_name.evaluate(&proposal).is_denied());
    proposal.namespace = Some(NamespaceFacts {
        name: "team-a",
        labels: &dev,
    });
    assert!(by_name.evaluate(&proposal).is_denied());
}

#[test]
fn a_subject_kept_for_a_matched_namespace_cannot_be_claimed_from_an_unmatched_one() {
    let set = set(&[prod()]);
    let (prod, dev) = (labels("prod"), labels("dev"));
    let known = [
        NamespaceFacts {
            name: "team-a",
            labels: &prod,
        },
        NamespaceFacts {
            name: "sandbox",
            labels: &dev,
        },
    ];
    let mut proposal = schema_in("sandbox", &dev, "team-a.orders-value");
    proposal.known_namespaces = &known;
    let verdict = set.evaluate(&proposal);
    assert!(verdict.subject_not_allowed(), "{verdict:?}");
    assert!(verdict.denial_message().unwrap().contains("kept for namespace team-a"));
    assert!(!set.may_claim(&proposal));
    proposal.subject = Some("sandbox.orders-value");
    assert!(set.may_claim(&proposal));
}

#[test]
fn the_compatibility_floor_names_the_levels_that_satisfy_it() {
    let set = set(&[prod()]);
    let prod = labels("prod");
    for (level, denied) in [
        (CompatibilityLevel::None, true),
        (CompatibilityLevel::Backward, true),
        (CompatibilityLevel::Full, true),
        (CompatibilityLevel::ForwardTransitive, true),
        (CompatibilityLevel::BackwardTransitive, false),
        (CompatibilityLevel::FullTransitive, false),
    ] {
        let proposed = ProposedLevel {
            level,
            origin: LevelOrigin::Spec,
        };
        let proposal = Proposal {
            namespace: Some(NamespaceFacts {
                name: "team-a",
                labels: &prod,
            }),
            subject: Some("team-a.orders-value"),
            level: Some(&proposed),
            ..Proposal::new(Target::SubjectConfig)
        };
        let verdict = set.evaluate(&proposal);
        assert_eq!(verdict.is_denied(), denied, "{level:?}: {verdict:?}");
        if denied {
            let violation = verdict.denials().next().unwrap();
            assert_eq!(violation.rule, Rule::Compatibility);
            assert_eq!(violation.path, "spec.compatibility");
            assert_eq!(
                violation.remedy,
                "the level must be one of BACKWARD_TRANSITIVE, FULL_TRANSITIVE"
            );
        }
    }
}

#[test]
fn allowed_levels_and_a_minimum_combine_and_an_impossible_pair_is_invalid() {
    let never_none = set(&[policy(
        "never-none",
        json!({"rules": {"compatibility": {"allowed": ["BACKWARD", "FULL", "FULL_TRANSITIVE"], "minimum": "BACKWARD"}}}),
    )]);
    let level = |level| ProposedLevel {
        level,
        origin: LevelOrigin::Global,
    };
    let judge = |proposed: &ProposedLevel| {
        never_none.evaluate(&Proposal {
            subject: Some("s"),
            level: Some(proposed),
            ..Proposal::new(Target::Registry)
        })
    };
    assert!(!judge(&level(CompatibilityLevel::Full)).is_denied());
    let verdict = judge(&level(CompatibilityLevel::BackwardTransitive));
    assert!(verdict.is_denied(), "not in the allowed list");
    assert!(
        verdict
            .denial_message()
            .unwrap()
            .contains("the registry's global level")
    );
    assert!(judge(&level(CompatibilityLevel::Forward)).is_denied());

    let impossible = policy(
        "impossible",
        json!({"rules": {"compatibility": {"allowed": ["FORWARD"], "minimum": "BACKWARD"}}}),
    );
    let set = PolicySet::compile([(impossible.0.as_str(), &impossible.1)]);
    assert!(set.is_empty());
    assert!(
        set.invalid()[0]
            .to_string()
            .contains("no level is both in `allowed` and at least `minimum`")
    );
}

#[test]
fn deletion_policies_modes_and_schema_types_are_checked() {
    let set = set(&[prod(), policy("avro-only", json!({"rules": {"schemaTypes": ["AVRO"]}}))]);
    let prod = labels("prod");
    let mut proposal = schema_in("team-a", &prod, "team-a.x");
    proposal.deletion_policy = Some(DeletionPolicy::HardDelete);
    proposal.schema_type = Some(SchemaType::Protobuf);
    let verdict = set.evaluate(&proposal);
    let rules: Vec<Rule> = verdict.denials().map(|violation| violation.rule).collect();
    assert_eq!(
        rules,
        [Rule::SchemaTypes, Rule::DeletionPolicies],
        "policies in name order"
    );
    assert!(!verdict.subject_not_allowed());

    let config = Proposal {
        namespace: Some(NamespaceFacts {
            name: "team-a",
            labels: &prod,
        }),
        subject: Some("team-a.x"),
        mode: Some(ProposedMode {
            mode: ModeName::Import,
            path: "spec.mode",
        }),
        ..Proposal::new(Target::SubjectConfig)
    };
    let verdict = set.evaluate(&config);
    assert_eq!(
        verdict.denial_message().unwrap(),
        "SchemaPolicy prod rule modes at spec.mode: mode IMPORT is not allowed; use one of READWRITE, READONLY"
    );
}

#[test]
fn naming_and_field_docs_look_inside_the_schema() {
    let set = set(&[policy(
        "names",
        json!({"rules": {
            "naming": {"avroNamespace": "com.acme.*", "protobufPackage": "acme.*", "jsonId": "https://acme.example/*"},
            "requireFieldDocs": true,
        }}),
    )]);
    let no_labels = BTreeMap::new();
    let summary = SchemaSummary {
        name: Some("Order".to_owned()),
        namespace: Some("org.other".to_owned()),
        top_level_types: vec![NamedType {
            full_name: "org.other.Order".to_owned(),
            namespace: "org.other".to_owned(),
        }],
        fields: (0..7)
            .map(|i| FieldSummary {
                record: "org.other.Order".to_owned(),
                name: format!("f{i}"),
                documented: i == 0,
            })
            .collect(),
        ..SchemaSummary::default()
    };
    let mut proposal = schema_in("team-a", &no_labels, "s");
    proposal.summary = Some(&summary);
    let verdict = set.evaluate(&proposal);
    let messages: Vec<String> = verdict.denials().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains(
            "naming.avroNamespace at spec.schema: the Avro namespace is `org.other`; it must match `com.acme.*`"
        ),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("6 field(s) have no doc: org.other.Order.f1,"),
        "{messages:?}"
    );
    assert!(messages[1].contains("and 1 more"), "{messages:?}");

    let package = SchemaSummary {
        package: Some("acme.orders".to_owned()),
        ..SchemaSummary::default()
    };
    proposal.summary = Some(&package);
    proposal.schema_type = Some(SchemaType::Protobuf);
    assert!(!set.evaluate(&proposal).is_denied());
}

#[test]
fn warn_and_audit_let_the_change_through_and_the_strictest_outcome_wins() {
    let warn = policy(
        "warn",
        json!({"rules": {"deletionPolicies": ["Retain"]}, "validationActions": ["Warn"]}),
    );
    let audit = policy(
        "audit",
        json!({"rules": {"deletionPolicies": ["Retain"]}, "validationActions": ["Audit"]}),
    );
    let deny = policy("deny", json!({"rules": {"deletionPolicies": ["Retain", "SoftDelete"]}}));
    let no_labels = BTreeMap::new();
    let mut proposal = schema_in("team-a", &no_labels, "s");
    proposal.deletion_policy = Some(DeletionPolicy::SoftDelete);
    let verdict = set(&[warn.clone(), audit.clone(), deny.clone()]).evaluate(&proposal);
    assert!(!verdict.is_denied());
    assert_eq!(verdict.warnings().count(), 1);
    assert_eq!(verdict.audits().count(), 1);
    assert!(
        verdict
            .warning_message()
            .unwrap()
            .starts_with("SchemaPolicy warn rule deletionPolicies")
    );

    proposal.deletion_policy = Some(DeletionPolicy::HardDelete);
    let verdict = set(&[warn, audit, deny]).evaluate(&proposal);
    assert!(verdict.is_denied(), "Deny wins over Warn and Audit");
    assert_eq!(verdict.denials().count(), 1);
    assert_eq!(verdict.warnings().count(), 1);
}

#[test]
fn invalid_policies_name_every_problem() {
    let bad = policy(
        "bad",
        json!({
            "match": {"subjects": [""], "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Between"}]}},
            "rules": {"subjects": {"allowed": ["{team}.*"]}, "validations": [{"expression": "object."}]},
            "validationActions": ["Deny", "Warn"],
        }),
    );
    let set = PolicySet::compile([(bad.0.as_str(), &bad.1)]);
    let problems = &set.invalid()[0].problems;
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("spec.match.subjects[0]: the pattern is empty")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("spec.rules.subjects.allowed[0]")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("spec.match.namespaceSelector")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("spec.rules.validations[0].expression")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("Deny and Warn cannot be combined")),
        "{problems:?}"
    );
    let none = policy("none", json!({"validationActions": []}));
    assert!(!PolicySet::compile([(none.0.as_str(), &none.1)]).invalid().is_empty());
}

#[test]
fn cel_validations_see_the_object_and_the_schema_summary() {
    let set = set(&[policy(
        "cel",
        json!({"rules": {"validations": [
            {"expression": "object.metadata.name.startsWith('orders')", "message": "names start with orders"},
            {"expression": "schema.namespace == 'com.acme'"},
        ]}}),
    )]);
    let no_labels = BTreeMap::new();
    let object = json!({"metadata": {"name": "payments"}});
    let summary = SchemaSummary {
        namespace: Some("com.acme".to_owned()),
        ..SchemaSummary::default()
    };
    let mut proposal = schema_in("team-a", &no_labels, "s");
    proposal.object = Some(&object);
    proposal.summary = Some(&summary);
    let verdict = set.evaluate(&proposal);
    let messages: Vec<String> = verdict.denials().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "SchemaPolicy cel rule validations[0] at metadata: names start with orders; the object must satisfy \
          `object.metadata.name.startsWith('orders')`"
        ]
    );
    assert!(set.needs_object());
}

#[test]
fn at_the_registry_only_levels_and_modes_are_judged_and_namespaces_are_not_consulted() {
    let set = set(&[prod()]);
    let proposed = ProposedLevel {
        level: CompatibilityLevel::None,
        origin: LevelOrigin::Request,
    };
    let proposal = Proposal {
        subject: Some("prod-orders-value"),
        level: Some(&proposed),
        ..Proposal::new(Target::Registry)
    };
    let verdict = set.evaluate(&proposal);
    let rules: Vec<Rule> = verdict.denials().map(|violation| violation.rule).collect();
    assert_eq!(rules, [Rule::Compatibility]);
    let global = Proposal {
        subject: None,
        ..proposal
    };
    assert!(
        set.evaluate(&global).is_denied(),
        "the global level is every subject's fallback"
    );
}

/// Issue 39 item 10: `naming.avroNamespace` judged every Avro schema by its
/// top-level namespace, so a plain `"string"` key (no name at all) and a
/// `[record, "null"]` union failed with "the Avro namespace is ``".
#[test]
fn the_avro_namespace_rule_judges_the_named_types_at_the_top_and_passes_a_primitive() {
    let set = set(&[policy(
        "names",
        json!({"rules": {"naming": {"avroNamespace": "com.acme.*"}}}),
    )]);
    let no_labels = BTreeMap::new();
    let summary_of = |text: &str| {
        let text = crate::compat::SchemaText::new(text);
        let role = crate::compat::SchemaRole::Candidate;
        let parsed = crate::compat::Checker::default().parse(crate::compat::Format::Avro, role, &text);
        parsed.unwrap().summary()
    };
    let judged = |text: &str| {
        let summary = summary_of(text);
        let mut proposal = schema_in("team-a", &no_labels, "s");
        proposal.summary = Some(&summary);
        set.evaluate(&proposal)
            .denials()
            .map(|violation| violation.problem.clone())
            .collect::<Vec<_>>()
    };
    let order =
        |namespace: &str| format!(r#"{{"type":"record","name":"Order","namespace":"{namespace}","fields":[]}}"#);
    assert_eq!(judged(r#""string""#), Vec::<String>::new());
    assert_eq!(judged(r#"{"type":"array","items":"long"}"#), Vec::<String>::new());
    assert_eq!(
        judged(&format!(r#"[{}, "null"]"#, order("com.acme.sales"))),
        Vec::<String>::new()
    );
    assert_eq!(
        judged(&format!(r#"["null", {}]"#, order("org.other"))),
        ["the Avro namespace of `org.other.Order` in the top-level union is `org.other`"]
    );
    assert_eq!(judged(&order("org.other")), ["the Avro namespace is `org.other`"]);
    assert_eq!(summary_of(r#""string""#).schema_type, "AVRO");
}

#[test]
fn a_registries_rule_refuses_a_connection_the_namespace_may_not_use_and_matches_by_registry() {
    use crate::crd::{RegistryKind, RegistryRef};
    let set = set(&[
        policy(
            "registries",
            json!({
                "match": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                "rules": {"registries": {"allowed": [
                    {"kind": "SchemaRegistry", "name": "{namespace}-*"},
                    {"kind": "ClusterSchemaRegistry", "name": "shared"},
                ]}},
            }),
        ),
        // Applies only to objects bound to the shared registry.
        policy(
            "shared-types",
            json!({
                "match": {"registries": [{"kind": "ClusterSchemaRegistry", "name": "shared"}]},
                "rules": {"schemaTypes": ["PROTOBUF"]},
            }),
        ),
    ]);
    let prod = labels("prod");
    let bound = |kind, name: &str| RegistryRef {
        kind,
        name: name.to_owned(),
    };
    let own = bound(RegistryKind::SchemaRegistry, "team-a-main");
    let other = bound(RegistryKind::SchemaRegistry, "team-b-main");
    let shared = bound(RegistryKind::ClusterSchemaRegistry, "shared");
    let in_registry = |registry| Proposal {
        registry: Some(registry),
        ..schema_in("team-a", &prod, "orders-value")
    };
    assert!(
        set.evaluate(&in_registry(ProposedRegistry::Connection(&own)))
            .violations
            .is_empty()
    );
    let verdict = set.evaluate(&in_registry(ProposedRegistry::Connection(&other)));
    assert_eq!(
        verdict.denial_message().unwrap(),
        "SchemaPolicy registries rule registries.allowed at spec.registryRef: namespace team-a may not use \
         SchemaRegistry/team-b-main; use one of SchemaRegistry/{namespace}-*, ClusterSchemaRegistry/shared"
    );
    // Without Default among the allowed, the default registry is refused too.
    let verdict = set.evaluate(&in_registry(ProposedRegistry::Default));
    assert!(
        verdict
            .denial_message()
            .unwrap()
            .contains("namespace team-a may not use the default registry"),
        "{verdict:?}"
    );
    // The shared registry is allowed, and the policy matched by registry applies there only.
    let verdict = set.evaluate(&in_registry(ProposedRegistry::Connection(&shared)));
    assert_eq!(verdict.violations.len(), 1, "{verdict:?}");
    assert_eq!(verdict.violations[0].policy, "shared-types");
    assert_eq!(verdict.violations[0].rule, Rule::SchemaTypes);
    // At the REST API the registry is not known: neither the rule nor the match is consulted.
    let rest = Proposal {
        subject: Some("orders-value"),
        ..Proposal::new(Target::Registry)
    };
    assert!(set.evaluate(&rest).violations.is_empty());
}

#[test]
fn a_registry_without_the_name_its_kind_needs_makes_the_policy_invalid() {
    let (name, spec) = policy(
        "broken",
        json!({"rules": {"registries": {"allowed": [{"kind": "SchemaRegistry"}, {"kind": "Default", "name": "x"}]}}}),
    );
    let set = PolicySet::compile([(name.as_str(), &spec)]);
    assert_eq!(
        set.invalid()[0].problems,
        [
            "spec.rules.registries.allowed[0]: name is required",
            "spec.rules.registries.allowed[1]: a Default registry has no name"
        ]
    );
}

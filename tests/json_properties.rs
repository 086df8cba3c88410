//! Algebraic properties of the JSON Schema checker over generated schemas
//! (issue 3), under both policies: every schema is compatible with itself,
//! FULL = BACKWARD ∧ FORWARD, BACKWARD(a, b) = FORWARD(b, a), a transitive
//! verdict implies the non-transitive one, and the canonical form is a
//! fixed point.
//!
//! Schemas come from a small universe (three property names, a few types
//! and bounds) so that independently drawn schemas are often related and
//! both verdicts occur.

mod support;

use proptest::prelude::*;
use schemaops::compat::json::{JsonPolicy, JsonSchema};
use schemaops::compat::{Checker, Format, Mode, Report, SchemaText};
use serde_json::{Value, json};
use support::laws::Laws;

const NAMES: [&str; 3] = ["a", "b", "c"];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        (1u64..4).prop_map(|max| json!({"type": "string", "maxLength": max * 5})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "number"})),
        (0i64..3).prop_map(|min| json!({"type": "number", "minimum": min})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["string", "null"]})),
        proptest::sample::subsequence(vec!["x", "y", "z"], 1..=3).prop_map(|values| json!({"enum": values})),
        Just(json!({})),
        Just(json!(true)),
    ]
}

fn additional() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(json!(true))),
        2 => Just(Some(json!(false))),
        1 => Just(Some(json!({"type": "string"}))),
    ]
}

fn schema_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 20, 3, |inner| {
        prop_oneof![
            (
                proptest::collection::btree_map(proptest::sample::select(NAMES.to_vec()), inner.clone(), 0..=3),
                proptest::sample::subsequence(NAMES.to_vec(), 0..=2),
                additional(),
            )
                .prop_map(|(properties, required, additional)| {
                    let mut object = json!({"type": "object", "properties": properties});
                    let required: Vec<&str> = required
                        .into_iter()
                        .filter(|name| object["properties"].get(name).is_some())
                        .collect();
                    if !required.is_empty() {
                        object["required"] = json!(required);
                    }
                    if let Some(additional) = additional {
                        object["additionalProperties"] = additional;
                    }
                    object
                }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items})),
            (
                proptest::collection::vec(inner.clone(), 1..=3),
                proptest::sample::select(vec!["anyOf", "oneOf", "allOf"])
            )
                .prop_map(|(subschemas, keyword)| json!({ keyword: subschemas })),
            inner.prop_map(|negated| json!({"not": negated})),
        ]
    })
}

fn schema() -> impl Strategy<Value = String> {
    schema_value().prop_map(|value| value.to_string())
}

fn policy() -> impl Strategy<Value = JsonPolicy> {
    prop_oneof![Just(JsonPolicy::Strict), Just(JsonPolicy::Lenient)]
}

fn laws(policy: JsonPolicy) -> Laws {
    Laws {
        checker: Checker::default().with_json_policy(policy),
        format: Format::Json,
    }
}

fn run(policy: JsonPolicy, mode: Mode, previous: &[&str], candidate: &str) -> Report {
    laws(policy).run(mode, previous, candidate)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_schema_is_compatible_with_itself_at_every_mode(a in schema(), policy in policy()) {
        laws(policy).self_compatible(&a)?;
    }

    #[test]
    fn full_is_backward_and_forward(a in schema(), b in schema(), policy in policy()) {
        laws(policy).full_is_backward_and_forward(&a, &b)?;
    }

    #[test]
    fn backward_of_a_over_b_is_forward_of_b_over_a(a in schema(), b in schema(), policy in policy()) {
        laws(policy).backward_is_swapped_forward(&a, &b)?;
    }

    #[test]
    fn a_transitive_verdict_implies_the_latest_only_verdict(
        history in proptest::collection::vec(schema(), 1..3), c in schema(), policy in policy()
    ) {
        laws(policy).transitive_implies_latest(&history, &c)?;
    }

    #[test]
    fn lenient_accepts_everything_strict_accepts(a in schema(), b in schema()) {
        if run(JsonPolicy::Strict, Mode::Backward, &[&a], &b).is_compatible() {
            prop_assert!(run(JsonPolicy::Lenient, Mode::Backward, &[&a], &b).is_compatible());
        }
    }

    #[test]
    fn the_canonical_form_is_a_fixed_point_and_ignores_layout(a in schema()) {
        let parsed = JsonSchema::parse(&SchemaText::new(&a)).expect("valid");
        let again = JsonSchema::parse(&SchemaText::new(parsed.canonical())).expect("valid");
        prop_assert_eq!(parsed.canonical(), again.canonical());
        let value: Value = serde_json::from_str(&a).expect("json");
        let pretty = serde_json::to_string_pretty(&value).expect("json");
        let relaid = JsonSchema::parse(&SchemaText::new(pretty)).expect("valid");
        prop_assert_eq!(parsed.fingerprint(), relaid.fingerprint());
    }
}

#[test]
fn the_generator_yields_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut compatible, mut incompatible) = (0, 0);
    for _ in 0..200 {
        let a = schema().new_tree(&mut runner).expect("tree").current();
        let b = schema().new_tree(&mut runner).expect("tree").current();
        if run(JsonPolicy::Strict, Mode::Backward, &[&a], &b).is_compatible() {
            compatible += 1;
        } else {
            incompatible += 1;
        }
    }
    assert!(
        compatible >= 10 && incompatible >= 10,
        "{compatible} compatible, {incompatible} incompatible"
    );
}

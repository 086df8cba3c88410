//! Algebraic properties of the Avro checker over generated schemas (issue 2):
//! every schema is compatible with itself, FULL = BACKWARD ∧ FORWARD,
//! BACKWARD(a, b) = FORWARD(b, a), a transitive verdict implies the
//! non-transitive one, and the canonical form is a fixed point.
//!
//! Schemas are drawn from a small universe (few field names, named types
//! named after their position) so that independently drawn schemas are
//! often related, and both verdicts occur.

mod support;

use proptest::prelude::*;
use schemaops::compat::avro::AvroSchema;
use schemaops::compat::{Checker, Format, Mode, Report, SchemaText};
use serde_json::Value;
use support::avro_gen::schema;
use support::laws::Laws;

fn laws() -> Laws {
    Laws {
        checker: Checker::default(),
        format: Format::Avro,
    }
}

fn run(mode: Mode, previous: &[&str], candidate: &str) -> Report {
    laws().run(mode, previous, candidate)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_schema_is_compatible_with_itself_at_every_mode(a in schema()) {
        laws().self_compatible(&a)?;
    }

    #[test]
    fn full_is_backward_and_forward(a in schema(), b in schema()) {
        laws().full_is_backward_and_forward(&a, &b)?;
    }

    #[test]
    fn backward_of_a_over_b_is_forward_of_b_over_a(a in schema(), b in schema()) {
        laws().backward_is_swapped_forward(&a, &b)?;
    }

    #[test]
    fn a_transitive_verdict_implies_the_latest_only_verdict(
        history in proptest::collection::vec(schema(), 1..4),
        candidate in schema(),
    ) {
        laws().transitive_implies_latest(&history, &candidate)?;
    }

    #[test]
    fn checks_are_deterministic(a in schema(), b in schema()) {
        laws().deterministic(&a, &b)?;
    }

    #[test]
    fn the_canonical_form_is_a_fixed_point_and_ignores_layout(a in schema()) {
        let parsed = AvroSchema::parse(&SchemaText::new(a.as_str())).unwrap();
        let canonical = parsed.canonical();
        let reparsed = AvroSchema::parse(&SchemaText::new(canonical.as_str())).unwrap();
        prop_assert_eq!(reparsed.canonical(), canonical.clone());
        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(&a).unwrap()).unwrap();
        let from_pretty = AvroSchema::parse(&SchemaText::new(pretty)).unwrap();
        prop_assert_eq!(from_pretty.canonical(), canonical);
        let report = run(Mode::Full, &[&a], &reparsed.canonical());
        prop_assert!(report.is_compatible(), "a schema and its canonical form are the same schema");
    }
}

#[test]
fn the_generator_yields_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut compatible, mut incompatible) = (0, 0);
    for _ in 0..200 {
        let a = schema().new_tree(&mut runner).unwrap().current();
        let b = schema().new_tree(&mut runner).unwrap().current();
        if run(Mode::Backward, &[&b], &a).is_compatible() {
            compatible += 1;
        } else {
            incompatible += 1;
        }
    }
    assert!(
        compatible >= 10 && incompatible >= 10,
        "compatible {compatible}, incompatible {incompatible}"
    );
}

//! Algebraic properties of the Avro checker over generated schemas (issue 2):
//! every schema is compatible with itself, FULL = BACKWARD ∧ FORWARD,
//! BACKWARD(a, b) = FORWARD(b, a), a transitive verdict implies the
//! non-transitive one, and the canonical form is a fixed point.
//!
//! Schemas are drawn from a small universe (few field names, named types
//! named after their position) so that independently drawn schemas are
//! often related, and both verdicts occur.

use std::collections::BTreeSet;

mod support;

use proptest::prelude::*;
use schemaops::compat::avro::AvroSchema;
use schemaops::compat::{Format, Mode, Report, SchemaText, check};
use serde_json::Value;
use support::avro_gen::schema;

fn run(mode: Mode, previous: &[&str], candidate: &str) -> Report {
    let previous: Vec<SchemaText> = previous.iter().map(|text| SchemaText::new(*text)).collect();
    check(Format::Avro, mode, &SchemaText::new(candidate), &previous).expect("generated schemas are valid")
}

/// (version, kind, path) of each incompatibility: what a finding is, without its wording.
fn places(report: &Report) -> BTreeSet<(usize, String, String)> {
    report
        .incompatibilities
        .iter()
        .map(|i| (i.version, i.kind.to_string(), i.path.to_string()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_schema_is_compatible_with_itself_at_every_mode(a in schema()) {
        for mode in Mode::ALL {
            let report = run(mode, &[&a, &a], &a);
            prop_assert!(report.is_compatible(), "{mode}: {:#?}", report.incompatibilities);
        }
    }

    #[test]
    fn full_is_backward_and_forward(a in schema(), b in schema()) {
        let backward = run(Mode::Backward, &[&b], &a);
        let forward = run(Mode::Forward, &[&b], &a);
        let full = run(Mode::Full, &[&b], &a);
        prop_assert_eq!(full.is_compatible(), backward.is_compatible() && forward.is_compatible());
        let mut both: Vec<_> = backward.incompatibilities.clone();
        both.extend(forward.incompatibilities.clone());
        let expected: BTreeSet<_> = both.iter().map(|i| (i.path.to_string(), i.message.clone())).collect();
        let found: BTreeSet<_> = full.incompatibilities.iter().map(|i| (i.path.to_string(), i.message.clone())).collect();
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn backward_of_a_over_b_is_forward_of_b_over_a(a in schema(), b in schema()) {
        let backward = run(Mode::Backward, &[&b], &a);
        let forward = run(Mode::Forward, &[&a], &b);
        prop_assert_eq!(backward.is_compatible(), forward.is_compatible());
        prop_assert_eq!(places(&backward), places(&forward));
    }

    #[test]
    fn a_transitive_verdict_implies_the_latest_only_verdict(
        history in proptest::collection::vec(schema(), 1..4),
        candidate in schema(),
    ) {
        let previous: Vec<&str> = history.iter().map(String::as_str).collect();
        for (latest, transitive) in [
            (Mode::Backward, Mode::BackwardTransitive),
            (Mode::Forward, Mode::ForwardTransitive),
            (Mode::Full, Mode::FullTransitive),
        ] {
            let latest_report = run(latest, &previous, &candidate);
            let transitive_report = run(transitive, &previous, &candidate);
            if transitive_report.is_compatible() {
                prop_assert!(latest_report.is_compatible());
            }
            prop_assert!(places(&latest_report).is_subset(&places(&transitive_report)));
        }
    }

    #[test]
    fn checks_are_deterministic(a in schema(), b in schema()) {
        prop_assert_eq!(run(Mode::FullTransitive, &[&b, &a], &a), run(Mode::FullTransitive, &[&b, &a], &a));
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

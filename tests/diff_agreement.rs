//! The semantic diff agrees with the check (issue 21), for all three
//! formats, over generated schema histories: for every pair of versions
//! (earlier, later), the pair is compatible under BACKWARD (FORWARD, FULL)
//! exactly when no change of the diff breaks that direction (either), and
//! the reasons the changes carry are, message for message, the check's
//! findings. A schema compared with itself has no breaking change.

#[path = "support/json_gen.rs"]
#[allow(dead_code)] // Only the history generator is used here.
mod json_gen;
#[path = "support/proto_gen.rs"]
#[allow(dead_code)] // Only the history generator is used here.
mod proto_gen;
mod support;

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schemaops::compat::diff::{Change, diff};
use schemaops::compat::{Checker, Direction, Format, Mode, ParsedSchema, SchemaRole, SchemaText};

fn parse(checker: &Checker, format: Format, text: &str) -> Result<ParsedSchema, TestCaseError> {
    checker
        .parse(format, SchemaRole::Candidate, &SchemaText::new(text))
        .map_err(|error| TestCaseError::fail(format!("a generated schema does not parse: {error}\n{text}")))
}

/// The messages of the check's findings for `later` against `earlier`.
fn messages(checker: &Checker, mode: Mode, later: &ParsedSchema, earlier: &ParsedSchema) -> BTreeSet<String> {
    let report = checker
        .check_parsed(mode, later, &[earlier])
        .expect("the check decides generated pairs");
    report
        .incompatibilities
        .iter()
        .flat_map(|i| i.per_direction())
        .map(|i| i.message)
        .collect()
}

fn reasons(changes: &[Change], directions: &[Direction]) -> BTreeSet<String> {
    changes
        .iter()
        .flat_map(|change| directions.iter().flat_map(|&d| change.breaks_in(d)))
        .map(|reason| reason.message.clone())
        .collect()
}

/// The agreement for every pair of a history, oldest first.
fn agrees(format: Format, texts: &[String]) -> Result<(), TestCaseError> {
    let checker = Checker::default();
    let parsed = texts
        .iter()
        .map(|text| parse(&checker, format, text))
        .collect::<Result<Vec<_>, _>>()?;
    for (later_index, later) in parsed.iter().enumerate() {
        let same = diff(&checker, later, later, 1).expect("a schema diffs with itself");
        prop_assert!(
            same.iter()
                .all(|change| change.backward.is_empty() && change.forward.is_empty()),
            "a schema breaks against itself: {same:?}"
        );
        for earlier in &parsed[..later_index] {
            let changes = diff(&checker, earlier, later, 1).expect("generated pairs diff");
            for (mode, directions) in [
                (Mode::Backward, &[Direction::Backward][..]),
                (Mode::Forward, &[Direction::Forward][..]),
                (Mode::Full, &[Direction::Backward, Direction::Forward][..]),
            ] {
                let checked = messages(&checker, mode, later, earlier);
                let breaks = changes
                    .iter()
                    .any(|change| directions.iter().any(|&d| change.breaks(d)));
                prop_assert_eq!(
                    checked.is_empty(),
                    !breaks,
                    "{} disagrees:\nearlier: {}\nlater: {}\nchanges: {:#?}",
                    mode,
                    texts[parsed.iter().position(|p| std::ptr::eq(p, earlier)).unwrap_or(0)],
                    texts[later_index],
                    changes
                );
                prop_assert_eq!(reasons(&changes, directions), checked, "{} reasons differ", mode);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn avro_pairs_are_compatible_exactly_when_no_change_breaks(history in support::avro_evolution::history()) {
        let texts: Vec<String> = history.iter().map(support::avro_evolution::Version::text).collect();
        agrees(Format::Avro, &texts)?;
    }

    #[test]
    fn json_pairs_are_compatible_exactly_when_no_change_breaks(history in json_gen::history()) {
        let texts: Vec<String> = history.iter().map(json_gen::text).collect();
        agrees(Format::Json, &texts)?;
    }

    #[test]
    fn protobuf_pairs_are_compatible_exactly_when_no_change_breaks(history in proto_gen::history()) {
        agrees(Format::Protobuf, &history.texts)?;
    }
}

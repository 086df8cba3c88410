//! Runs every case of `tests/conformance/protobuf.jsonl` through the
//! engine and compares verdicts (exactly) and kinds with locations (as
//! multisets) with the reference's. All failures are printed together before
//! one panic. (`tests/conformance.rs` runs the Avro and JSON Schema files.)
//!
//! The Protobuf cases are BACKWARD only. Each one also runs mirrored: as a
//! FORWARD case with the two schemas (and their references) swapped, which
//! must give the same verdict and the same incompatible differences, and as a
//! FULL case, which must break exactly where BACKWARD or FORWARD does.
//! Protobuf kinds are compared over the whole difference list, compatible
//! changes included, and locations in Confluent's `#/Message/7` form.
//!
//! `CONFORMANCE=protobuf,-oneof` keeps the cases whose `file/id` name contains
//! any plain term and none of the `-` terms.

mod support;

use std::collections::BTreeSet;

use schemaops::compat::cases::{Case, CaseOutcome};
use schemaops::compat::protobuf::{self, ProtobufSchema};
use schemaops::compat::{Checker, Mode};

/// The corpus files this engine covers, with the number of cases each must have.
const FILES: &[(&str, usize)] = &[("protobuf.jsonl", 55)];

/// Cases where we believe the reference is wrong, each with the reason. A
/// listed case that starts passing fails the run, so the list stays true.
/// A mirrored Protobuf run is listed as `id@forward` or `id@full`.
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[];

/// A (kind, location) pair as the reference writes it.
type Located = (String, String);

#[test]
fn verdicts_match_the_reference_corpus() {
    let filter = support::corpus::Filter::from_env();
    let checker = Checker::default();
    let divergent: BTreeSet<&str> = KNOWN_DIVERGENCES.iter().map(|(id, _)| *id).collect();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (file, expected_count) in FILES {
        let cases = support::corpus::load(file, *expected_count);
        for case in &cases {
            let name = format!("{}/{}", file.trim_end_matches(".jsonl"), case.id);
            if !filter.keeps(&name) {
                continue;
            }
            ran += 1;
            let outcome = case.run(&checker);
            match (
                protobuf_disagreement(case, &outcome),
                divergent.contains(case.id.as_str()),
            ) {
                (Some(why), false) => failures.push(format!("{name}: {why}")),
                (None, true) => failures.push(format!("{name}: listed in KNOWN_DIVERGENCES but now agrees; remove it")),
                _ => {}
            }
        }
    }
    if !filter.is_active() {
        let total: usize = FILES.iter().map(|(_, count)| count).sum();
        assert_eq!(ran, total, "every case should run");
    }
    println!("conformance: {ran} cases run, {} disagree", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {ran} cases disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The reference's (kind, location) pairs, sorted.
fn expected_pairs(case: &Case) -> Option<Vec<Located>> {
    let (kinds, locations) = (case.expected_kinds.as_ref()?, case.expected_locations.as_ref()?);
    let mut pairs: Vec<Located> = kinds.iter().cloned().zip(locations.iter().cloned()).collect();
    pairs.sort();
    Some(pairs)
}

/// The incompatibilities of an outcome as sorted (kind, `#/...` location) pairs.
fn found_pairs(outcome: &CaseOutcome) -> Vec<Located> {
    let mut pairs: Vec<Located> = outcome
        .incompatibilities
        .iter()
        .map(|i| (i.kind.to_string(), i.path.to_confluent()))
        .collect();
    pairs.sort();
    pairs.dedup();
    pairs
}

/// Protobuf: the verdict, then the whole difference list of the BACKWARD
/// diff (previous → candidate), compatible changes included.
fn protobuf_disagreement(case: &Case, outcome: &CaseOutcome) -> Option<String> {
    if let Some(error) = &outcome.error {
        return Some(format!("could not decide: {error}"));
    }
    if outcome.compatible != case.compatible {
        return Some(format!(
            "verdict {:?}, reference {:?}; found {:?}",
            outcome.compatible,
            case.compatible,
            found_pairs(outcome)
        ));
    }
    let expected = expected_pairs(case)?;
    let (candidate, previous) = case.schema_texts();
    let parsed = |text| ProtobufSchema::parse(text).map_err(|error| error.to_string());
    let (candidate, original) = match (parsed(&candidate), previous.last().map(parsed)) {
        (Ok(candidate), Some(Ok(original))) => (candidate, original),
        (Err(error), _) | (_, Some(Err(error))) => return Some(format!("could not parse: {error}")),
        (_, None) => return Some("no previous version".to_owned()),
    };
    let mut found: Vec<Located> = protobuf::differences(&original, &candidate)
        .into_iter()
        .map(|change| (change.kind.to_string(), change.path.to_confluent()))
        .collect();
    found.sort();
    (expected != found).then(|| format!("differences {found:?}, reference {expected:?}"))
}

/// The case with its two schemas and their references swapped, under `mode`.
fn swapped(case: &Case, mode: Mode) -> Case {
    let mut mirror = case.clone();
    let last = case.previous.len() - 1;
    mirror.previous = vec![case.candidate.clone()];
    mirror.candidate = case.previous[last].clone();
    mirror.references = case.previous_references.get(last).cloned().unwrap_or_default();
    mirror.previous_references = vec![case.references.clone()];
    mirror.mode = mode;
    mirror
}

/// The reference's incompatible differences, from its full difference list.
fn expected_incompatible(case: &Case) -> Option<Vec<Located>> {
    let pairs = expected_pairs(case)?;
    Some(
        pairs
            .into_iter()
            .filter(|(kind, _)| protobuf::Kind::from_name(kind).is_some_and(|kind| !protobuf::is_compatible(kind)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    )
}

/// FORWARD with the schemas swapped asks what BACKWARD asked: same verdict,
/// same incompatible differences.
fn forward_mirror_disagreement(case: &Case, checker: &Checker) -> Option<String> {
    let outcome = swapped(case, Mode::Forward).run(checker);
    if let Some(error) = &outcome.error {
        return Some(format!("could not decide: {error}"));
    }
    if outcome.compatible != case.compatible {
        return Some(format!(
            "verdict {:?}, reference {:?}",
            outcome.compatible, case.compatible
        ));
    }
    let expected = expected_incompatible(case)?;
    let found = found_pairs(&outcome);
    (expected != found).then(|| format!("incompatibilities {found:?}, reference {expected:?}"))
}

/// FULL breaks exactly where the reference's BACKWARD verdict breaks plus
/// where the reverse diff breaks.
fn full_mirror_disagreement(case: &Case, checker: &Checker) -> Option<String> {
    let mut full = case.clone();
    full.mode = Mode::Full;
    let outcome = full.run(checker);
    let reverse = swapped(case, Mode::Backward).run(checker);
    if let Some(error) = outcome.error.as_ref().or(reverse.error.as_ref()) {
        return Some(format!("could not decide: {error}"));
    }
    let expected_verdict = case
        .compatible
        .zip(reverse.compatible)
        .map(|(there, back)| there && back);
    if outcome.compatible != expected_verdict {
        return Some(format!(
            "verdict {:?}, expected {expected_verdict:?}",
            outcome.compatible
        ));
    }
    let mut expected: BTreeSet<Located> = expected_incompatible(case)?.into_iter().collect();
    expected.extend(found_pairs(&reverse));
    let expected: Vec<Located> = expected.into_iter().collect();
    let found = found_pairs(&outcome);
    (expected != found).then(|| format!("incompatibilities {found:?}, expected {expected:?}"))
}

#[test]
fn protobuf_cases_hold_mirrored_for_forward_and_full() {
    let filter = support::corpus::Filter::from_env();
    let checker = Checker::default();
    let divergent: BTreeSet<&str> = KNOWN_DIVERGENCES.iter().map(|(id, _)| *id).collect();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in support::corpus::load("protobuf.jsonl", 55) {
        assert!(
            case.mode == Mode::Backward,
            "{}: mirroring assumes BACKWARD cases",
            case.id
        );
        for (label, check) in [
            (
                "forward",
                forward_mirror_disagreement as fn(&Case, &Checker) -> Option<String>,
            ),
            ("full", full_mirror_disagreement),
        ] {
            let name = format!("protobuf-{label}/{}", case.id);
            if !filter.keeps(&name) {
                continue;
            }
            ran += 1;
            let key = format!("{}@{label}", case.id);
            match (check(&case, &checker), divergent.contains(key.as_str())) {
                (Some(why), false) => failures.push(format!("{name}: {why}")),
                (None, true) => failures.push(format!("{name}: listed in KNOWN_DIVERGENCES but now agrees; remove it")),
                _ => {}
            }
        }
    }
    if !filter.is_active() {
        assert_eq!(ran, 110, "every Protobuf case should run mirrored twice");
    }
    println!("conformance (mirrored): {ran} cases run, {} disagree", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {ran} mirrored cases disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

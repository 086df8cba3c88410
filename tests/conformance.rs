//! Runs every case of `tests/conformance/` through the engine and compares
//! verdicts (exactly) and kinds with locations (as multisets) with the
//! reference's. All failures are printed together before one panic.
//!
//! `CONFORMANCE=avro,-recursive` keeps the cases whose `file/id` name contains
//! any plain term and none of the `-` terms.

mod support;

use std::collections::BTreeSet;

use schemaops::compat::cases::{Case, CaseOutcome};
use schemaops::compat::json::{self, JsonPolicy, JsonSchema};
use schemaops::compat::{Checker, Format, Mode, SchemaText};

/// The corpus files this engine covers, with the number of cases each must have.
const FILES: &[(&str, usize)] = &[("avro.jsonl", 166), ("jsonschema.jsonl", 280)];

/// Cases where we believe the reference is wrong, each with the reason. A
/// listed case that starts passing fails the run, so the list stays true.
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[];

/// Every difference Confluent's `SchemaDiff` would list for a JSON case, as
/// (kind, `#/…` path) pairs, or why they could not be computed.
fn json_differences(case: &Case) -> Result<Vec<(String, String)>, String> {
    let parse = |text: &str| JsonSchema::parse(&SchemaText::new(text)).map_err(|error| error.to_string());
    let original = parse(case.previous.last().ok_or("no previous schema")?)?;
    let update = parse(&case.candidate)?;
    let changes = json::differences(&original, &update, JsonPolicy::Strict, json::DEFAULT_STEP_BUDGET)
        .map_err(|error| error.to_string())?;
    Ok(changes
        .into_iter()
        .map(|change| (change.kind.to_string(), change.path.to_confluent()))
        .collect())
}

/// The JSON-specific checks of one case: the LENIENT verdict, and the full
/// list of differences (compatible ones included) as a multiset.
fn json_disagreement(case: &Case, lenient: &Checker) -> Option<String> {
    let expected_lenient = case.compatible_lenient.or(case.compatible);
    let outcome = case.run(lenient);
    if let Some(error) = &outcome.error {
        return Some(format!("LENIENT could not decide: {error}"));
    }
    if outcome.compatible != expected_lenient {
        return Some(format!(
            "LENIENT verdict {:?}, reference {expected_lenient:?}; found {:?}",
            outcome.compatible,
            outcome
                .incompatibilities
                .iter()
                .map(|i| (i.kind.to_string(), i.path.to_confluent()))
                .collect::<Vec<_>>()
        ));
    }
    let (Some(kinds), Some(locations)) = (&case.expected_kinds, &case.expected_locations) else {
        return None;
    };
    let mut expected: Vec<(String, String)> = kinds.iter().cloned().zip(locations.iter().cloned()).collect();
    let mut found = match json_differences(case) {
        Ok(found) => found,
        Err(error) => return Some(format!("differences could not be computed: {error}")),
    };
    expected.sort();
    found.sort();
    (expected != found).then(|| format!("differences {found:?}, reference {expected:?}"))
}

/// A JSON case turned around: FORWARD with the two schemas swapped must give
/// the same verdict as the reference's BACKWARD one.
fn mirrored(case: &Case, mode: Mode) -> Case {
    let mut mirror = case.clone();
    mirror.mode = mode;
    if let Some(previous) = case.previous.last() {
        mirror.previous = vec![case.candidate.clone()];
        mirror.candidate = previous.clone();
    }
    mirror
}

/// Why a case's outcome differs from the reference, or `None` when it agrees.
fn disagreement(case: &Case, outcome: &CaseOutcome) -> Option<String> {
    if let Some(error) = &outcome.error {
        return Some(format!("could not decide: {error}"));
    }
    if outcome.compatible != case.compatible {
        return Some(format!(
            "verdict {:?}, reference {:?}; found {:?}",
            outcome.compatible,
            case.compatible,
            outcome
                .incompatibilities
                .iter()
                .map(|i| (i.kind.to_string(), i.path.to_string()))
                .collect::<Vec<_>>()
        ));
    }
    let (Some(kinds), Some(locations)) = (&case.expected_kinds, &case.expected_locations) else {
        return None;
    };
    let mut expected: Vec<(String, String)> = kinds.iter().cloned().zip(locations.iter().cloned()).collect();
    let mut found: Vec<(String, String)> = outcome
        .incompatibilities
        .iter()
        .map(|i| (i.kind.to_string(), i.path.to_string()))
        .collect();
    expected.sort();
    found.sort();
    (expected != found).then(|| format!("kinds and locations {found:?}, reference {expected:?}"))
}

#[test]
fn verdicts_match_the_reference_corpus() {
    let filter = support::corpus::Filter::from_env();
    let checker = Checker::default();
    let lenient = Checker::default().with_json_policy(JsonPolicy::Lenient);
    let mut mirrors = Mirrors::default();
    let divergent: BTreeSet<&str> = KNOWN_DIVERGENCES.iter().map(|(id, _)| *id).collect();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (file, expected_count) in FILES {
        let cases = support::corpus::load(file, *expected_count);
        let pairs = verdicts_by_pair(&cases);
        for case in &cases {
            let name = format!("{}/{}", file.trim_end_matches(".jsonl"), case.id);
            if !filter.keeps(&name) {
                continue;
            }
            ran += 1;
            let outcome = case.run(&checker);
            let why = if case.format == Format::Json {
                disagreement_json(case, &outcome, &lenient, &pairs, &mut mirrors)
            } else {
                disagreement(case, &outcome)
            };
            match (why, divergent.contains(case.id.as_str())) {
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
    println!(
        "conformance: JSON mirrored FORWARD {} agree, FULL {} agree ({} of them with the reverse pair's verdict from the corpus)",
        mirrors.forward, mirrors.full, mirrors.full_from_corpus
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} cases disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// How many mirrored JSON checks agreed.
#[derive(Default)]
struct Mirrors {
    forward: usize,
    full: usize,
    full_from_corpus: usize,
}

/// The reference's STRICT verdict for each (previous, candidate) pair of texts in the file.
fn verdicts_by_pair(cases: &[Case]) -> std::collections::HashMap<(String, String), bool> {
    cases
        .iter()
        .filter_map(|case| {
            let previous = case.previous.last()?.clone();
            Some(((previous, case.candidate.clone()), case.compatible?))
        })
        .collect()
}

/// A JSON case: STRICT and LENIENT verdicts, the differences, and the mirrored
/// FORWARD and FULL checks. FULL must equal BACKWARD ∧ the reverse pair's
/// BACKWARD verdict, taken from the corpus when it holds that pair and from
/// the engine otherwise.
fn disagreement_json(
    case: &Case,
    outcome: &CaseOutcome,
    lenient: &Checker,
    pairs: &std::collections::HashMap<(String, String), bool>,
    mirrors: &mut Mirrors,
) -> Option<String> {
    if let Some(error) = &outcome.error {
        return Some(format!("could not decide: {error}"));
    }
    if outcome.compatible != case.compatible {
        return Some(format!(
            "STRICT verdict {:?}, reference {:?}; found {:?}",
            outcome.compatible,
            case.compatible,
            outcome
                .incompatibilities
                .iter()
                .map(|i| (i.kind.to_string(), i.path.to_confluent()))
                .collect::<Vec<_>>()
        ));
    }
    if let Some(why) = json_disagreement(case, lenient) {
        return Some(why);
    }
    let strict = Checker::default();
    let forward = mirrored(case, Mode::Forward).run(&strict);
    if forward.compatible != case.compatible {
        return Some(format!(
            "mirrored FORWARD verdict {:?}, reference BACKWARD {:?}",
            forward.compatible, case.compatible
        ));
    }
    mirrors.forward += 1;
    let previous = case.previous.last().cloned().unwrap_or_default();
    let reverse_key = (case.candidate.clone(), previous);
    let reverse = match pairs.get(&reverse_key) {
        Some(verdict) => {
            mirrors.full_from_corpus += 1;
            Some(*verdict)
        }
        None => {
            let mut reverse = case.clone();
            reverse.previous = vec![reverse_key.0.clone()];
            reverse.candidate = reverse_key.1.clone();
            reverse.run(&strict).compatible
        }
    };
    let mut full = case.clone();
    full.mode = Mode::Full;
    let full = full.run(&strict);
    let expected = case
        .compatible
        .zip(reverse)
        .map(|(backward, forward)| backward && forward);
    if full.compatible != expected {
        return Some(format!("FULL verdict {:?}, expected {expected:?}", full.compatible));
    }
    mirrors.full += 1;
    None
}

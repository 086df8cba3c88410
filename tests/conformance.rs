//! Runs every case of `../shared/conformance/` through the engine and compares
//! verdicts (exactly) and kinds with locations (as multisets) with the
//! reference's. All failures are printed together before one panic.
//!
//! `CONFORMANCE=avro,-recursive` keeps the cases whose `file/id` name contains
//! any plain term and none of the `-` terms.

use std::collections::BTreeSet;
use std::path::PathBuf;

use schemaops::compat::Checker;
use schemaops::compat::cases::{Case, CaseOutcome};

/// The corpus files this engine covers, with the number of cases each must have.
const FILES: &[(&str, usize)] = &[("avro.jsonl", 166)];

/// Cases where we believe the reference is wrong, each with the reason. A
/// listed case that starts passing fails the run, so the list stays true.
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance")
}

struct Filter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl Filter {
    fn from_env() -> Self {
        let spec = std::env::var("CONFORMANCE").unwrap_or_default();
        let terms = spec.split(',').map(str::trim).filter(|term| !term.is_empty());
        let (exclude, include): (Vec<&str>, Vec<&str>) = terms.partition(|term| term.starts_with('-'));
        Self {
            include: include.into_iter().map(str::to_owned).collect(),
            exclude: exclude.into_iter().map(|term| term[1..].to_owned()).collect(),
        }
    }

    fn is_active(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|term| name.contains(term.as_str())))
            && !self.exclude.iter().any(|term| name.contains(term.as_str()))
    }
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
    let filter = Filter::from_env();
    let checker = Checker::default();
    let divergent: BTreeSet<&str> = KNOWN_DIVERGENCES.iter().map(|(id, _)| *id).collect();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (file, expected_count) in FILES {
        let path = corpus_dir().join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read the conformance corpus at {}: {error}", path.display()));
        let cases: Vec<Case> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .enumerate()
            .map(|(index, line)| {
                serde_json::from_str(line).unwrap_or_else(|error| panic!("{file} line {}: {error}", index + 1))
            })
            .collect();
        assert_eq!(
            cases.len(),
            *expected_count,
            "{file} should hold {expected_count} cases"
        );
        for case in &cases {
            let name = format!("{}/{}", file.trim_end_matches(".jsonl"), case.id);
            if !filter.keeps(&name) {
                continue;
            }
            ran += 1;
            let outcome = case.run(&checker);
            match (disagreement(case, &outcome), divergent.contains(case.id.as_str())) {
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

//! The laws every format's checker obeys, shared by the property tests of
//! each format: a schema is compatible with itself at every mode, FULL is
//! BACKWARD and FORWARD together, BACKWARD(a, b) is FORWARD(b, a), and a
//! transitive verdict implies the latest-only one.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schemaops::compat::{Checker, Format, Mode, Report, SchemaText};

/// A checker and the format its generated schemas are in.
pub struct Laws {
    /// The checker under test.
    pub checker: Checker,
    /// The format of the schema texts.
    pub format: Format,
}

/// What a finding is, without its wording: (version, kind, path).
pub fn places(report: &Report) -> BTreeSet<(usize, String, String)> {
    report
        .incompatibilities
        .iter()
        .map(|i| (i.version, i.kind.to_string(), i.path.to_string()))
        .collect()
}

/// Every finding in full: (version, kind, path, message).
fn findings(report: &Report) -> BTreeSet<(usize, String, String, String)> {
    report
        .incompatibilities
        .iter()
        .flat_map(|i| i.per_direction())
        .map(|i| (i.version, i.kind.to_string(), i.path.to_string(), i.message))
        .collect()
}

impl Laws {
    /// Checks `candidate` against `previous` (oldest first).
    pub fn run(&self, mode: Mode, previous: &[&str], candidate: &str) -> Report {
        let previous: Vec<SchemaText> = previous.iter().map(|text| SchemaText::new(*text)).collect();
        self.checker
            .check(self.format, mode, &SchemaText::new(candidate), &previous)
            .expect("generated schemas are valid and decidable")
    }

    /// A schema is compatible with itself at every mode.
    pub fn self_compatible(&self, a: &str) -> Result<(), TestCaseError> {
        for mode in Mode::ALL {
            let report = self.run(mode, &[a, a], a);
            prop_assert!(report.is_compatible(), "{mode}: {:#?}", report.incompatibilities);
        }
        Ok(())
    }

    /// FULL finds exactly what BACKWARD and FORWARD find.
    pub fn full_is_backward_and_forward(&self, a: &str, b: &str) -> Result<(), TestCaseError> {
        let backward = self.run(Mode::Backward, &[b], a);
        let forward = self.run(Mode::Forward, &[b], a);
        let full = self.run(Mode::Full, &[b], a);
        prop_assert_eq!(
            full.is_compatible(),
            backward.is_compatible() && forward.is_compatible()
        );
        let both: BTreeSet<_> = findings(&backward).union(&findings(&forward)).cloned().collect();
        prop_assert_eq!(findings(&full), both);
        Ok(())
    }

    /// BACKWARD with `a` new over `b` is FORWARD with `b` new over `a`.
    pub fn backward_is_swapped_forward(&self, a: &str, b: &str) -> Result<(), TestCaseError> {
        let backward = self.run(Mode::Backward, &[b], a);
        let forward = self.run(Mode::Forward, &[a], b);
        prop_assert_eq!(backward.is_compatible(), forward.is_compatible());
        prop_assert_eq!(places(&backward), places(&forward));
        Ok(())
    }

    /// A transitive verdict implies the latest-only one, and finds at least as much.
    pub fn transitive_implies_latest(&self, history: &[String], candidate: &str) -> Result<(), TestCaseError> {
        let previous: Vec<&str> = history.iter().map(String::as_str).collect();
        for (latest, transitive) in [
            (Mode::Backward, Mode::BackwardTransitive),
            (Mode::Forward, Mode::ForwardTransitive),
            (Mode::Full, Mode::FullTransitive),
        ] {
            let latest_report = self.run(latest, &previous, candidate);
            let transitive_report = self.run(transitive, &previous, candidate);
            if transitive_report.is_compatible() {
                prop_assert!(latest_report.is_compatible());
            }
            prop_assert!(places(&latest_report).is_subset(&places(&transitive_report)));
        }
        Ok(())
    }

    /// The same inputs give the same report.
    pub fn deterministic(&self, a: &str, b: &str) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            self.run(Mode::FullTransitive, &[b, a], a),
            self.run(Mode::FullTransitive, &[b, a], a)
        );
        Ok(())
    }
}

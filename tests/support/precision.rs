//! How often an "incompatible" verdict is borne out by generated data, per
//! kind of incompatibility: the tally the soundness tests print.

use std::collections::BTreeMap;

use schemaops::compat::Report;

/// Verdicts counted, and per kind: (pairs reported with it, pairs where some
/// generated data actually failed).
#[derive(Debug, Default)]
pub struct Precision {
    /// Pairs the engine called compatible.
    pub compatible: usize,
    /// Pairs the engine called incompatible.
    pub incompatible: usize,
    by_kind: BTreeMap<String, (usize, usize)>,
}

impl Precision {
    /// Counts a pair the engine called compatible.
    pub fn count_compatible(&mut self) {
        self.compatible += 1;
    }

    /// Counts an incompatible `report`, once under each kind it names, and
    /// whether generated data `failed` across the pair.
    pub fn count_incompatible(&mut self, report: &Report, failed: bool) {
        self.incompatible += 1;
        let mut kinds: Vec<String> = report
            .incompatibilities
            .iter()
            .map(|found| found.kind.to_string())
            .collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let entry = self.by_kind.entry(kind).or_default();
            entry.0 += 1;
            entry.1 += usize::from(failed);
        }
    }

    /// Prints `title`, the verdict counts, and one line per kind.
    pub fn print(&self, title: &str) {
        println!(
            "{title} ({} compatible, {} incompatible):",
            self.compatible, self.incompatible
        );
        let width = self.by_kind.keys().map(String::len).max().unwrap_or(0);
        for (kind, (pairs, failing)) in &self.by_kind {
            println!(
                "  {kind:<width$} {failing:>4} of {pairs:>4} pairs had data that failed ({:.0} %)",
                100.0 * *failing as f64 / *pairs as f64
            );
        }
    }
}

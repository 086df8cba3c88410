//! The vendored conformance corpus in `tests/conformance/`: where it is, loading
//! a file with a check on its size, and the `CONFORMANCE` name filter.

use std::path::PathBuf;

use schemaops::compat::cases::Case;

/// The corpus folder (a copy of `../shared` kept in step by `.ci/run`).
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// Every case of `file`, which must hold `expected` of them.
pub fn load(file: &str, expected: usize) -> Vec<Case> {
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
    assert_eq!(cases.len(), expected, "{file} should hold {expected} cases");
    cases
}

/// `CONFORMANCE=avro,-recursive` keeps the cases whose `file/id` name
/// contains any plain term and none of the `-` terms.
pub struct Filter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl Filter {
    /// The filter in `CONFORMANCE`, or none.
    pub fn from_env() -> Self {
        let spec = std::env::var("CONFORMANCE").unwrap_or_default();
        let terms = spec.split(',').map(str::trim).filter(|term| !term.is_empty());
        let (exclude, include): (Vec<&str>, Vec<&str>) = terms.partition(|term| term.starts_with('-'));
        Self {
            include: include.into_iter().map(str::to_owned).collect(),
            exclude: exclude.into_iter().map(|term| term[1..].to_owned()).collect(),
        }
    }

    /// Whether any term is set.
    pub fn is_active(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    /// Whether the case called `name` runs.
    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|term| name.contains(term.as_str())))
            && !self.exclude.iter().any(|term| name.contains(term.as_str()))
    }
}

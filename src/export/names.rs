//! Object names for exported subjects: valid DNS-1123 subdomain names
//! (lowercase `[a-z0-9.-]`, at most 253 characters, each dot-separated
//! label starting and ending alphanumeric), derived from the subject, with
//! collisions resolved the same way on every run.
//!
//! Knows nothing of registries or files.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The longest name Kubernetes accepts for these objects.
const MAX_NAME: usize = 253;

/// The name used when nothing of the subject survives (e.g. `ü`).
const FALLBACK: &str = "subject";

/// The object name of each subject. A subject whose derived name is shared
/// with another gets `-` and the first 8 hex digits of the SHA-256 of its
/// subject appended, so every name is unique and stable.
pub fn object_names<'a>(subjects: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut by_base: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for subject in subjects {
        by_base.entry(base_name(subject)).or_default().push(subject);
    }
    let mut names = BTreeMap::new();
    for (base, subjects) in by_base {
        if let [subject] = subjects.as_slice() {
            names.insert((*subject).to_owned(), base);
            continue;
        }
        for subject in subjects {
            let digest = Sha256::digest(subject.as_bytes());
            let suffix: String = digest.iter().take(4).map(|byte| format!("{byte:02x}")).collect();
            let stem = trim(&base[..base.len().min(MAX_NAME - suffix.len() - 1)]);
            names.insert(subject.to_owned(), format!("{stem}-{suffix}"));
        }
    }
    names
}

/// Whether `file` could be a manifest file of an export: an object name and `.yaml`.
pub fn is_manifest_file(file: &str) -> bool {
    file.strip_suffix(".yaml").is_some_and(|name| {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    })
}

/// The name derived from a subject alone: lowercased, every character
/// outside `[a-z0-9.-]` turned into `-`, each label trimmed of `-`, empty
/// labels dropped, cut to 253 characters.
fn base_name(subject: &str) -> String {
    let mapped: String = subject
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            lower @ ('a'..='z' | '0'..='9' | '.' | '-') => lower,
            _ => '-',
        })
        .collect();
    let labels: Vec<&str> = mapped
        .split('.')
        .map(|label| label.trim_matches('-'))
        .filter(|label| !label.is_empty())
        .collect();
    let joined = labels.join(".");
    let name = trim(&joined[..joined.len().min(MAX_NAME)]);
    if name.is_empty() {
        FALLBACK.to_owned()
    } else {
        name.to_owned()
    }
}

/// `name` without leading or trailing `-` and `.` (ASCII only, so any cut is a char boundary).
fn trim(name: &str) -> &str {
    name.trim_matches(['-', '.'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_dns_subdomain(name: &str) -> bool {
        name.len() <= MAX_NAME
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && label.ends_with(|c: char| c.is_ascii_alphanumeric())
            })
    }

    #[test]
    fn subjects_become_lowercase_names_with_dashes_for_other_characters() {
        let names = object_names(["Orders-Value", "com.acme/Payment_Event", "-.x..y.-", "ü"]);
        assert_eq!(names["Orders-Value"], "orders-value");
        assert_eq!(names["com.acme/Payment_Event"], "com.acme-payment-event");
        assert_eq!(names["-.x..y.-"], "x.y");
        assert_eq!(names["ü"], "subject");
        assert!(names.values().all(|name| is_dns_subdomain(name)), "{names:?}");
    }

    #[test]
    fn colliding_names_all_get_a_hash_suffix_and_stay_stable() {
        let names = object_names(["a_b", "a-b", "A/B", "c"]);
        assert_eq!(names["c"], "c");
        let suffixed: Vec<&String> = ["a_b", "a-b", "A/B"].iter().map(|s| &names[*s]).collect();
        for name in &suffixed {
            assert!(name.starts_with("a-b-") && name.len() == "a-b-".len() + 8, "{name}");
        }
        assert_eq!(names.values().collect::<std::collections::BTreeSet<_>>().len(), 4);
        assert_eq!(names, object_names(["c", "A/B", "a-b", "a_b"]), "order does not matter");
    }

    #[test]
    fn long_subjects_are_cut_to_253_characters() {
        let long = "x".repeat(300);
        let other = format!("{}_", "x".repeat(300));
        let single = object_names([long.as_str()]);
        assert_eq!(single[&long].len(), MAX_NAME);
        let both = object_names([long.as_str(), other.as_str()]);
        assert!(both.values().all(|name| is_dns_subdomain(name)), "{both:?}");
        assert_ne!(both[&long], both[&other]);
    }
}

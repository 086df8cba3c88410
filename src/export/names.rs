//! Object names for exported subjects, which are also the stems of their
//! files: valid DNS-1123 subdomain names (lowercase `[a-z0-9.-]`, each
//! dot-separated label starting and ending alphanumeric), derived from the
//! subject, unique, and chosen the same way on every run.
//!
//! # Guarantees
//! - Every subject gets its own name, also when names are compared
//!   case-folded (a case-insensitive file system) and when a name already
//!   carries a digest suffix another subject would get (`x-2d711642`).
//! - `<name>.yaml` fits in [`MAX_FILE_NAME`] bytes: names are ASCII, and a
//!   subject whose name would be longer keeps a readable prefix plus a
//!   digest of the whole subject.
//! - No name is a device name Windows reserves (`con`, `nul`, `com1`, …),
//!   so an export committed to git can be checked out anywhere.
//!
//! Knows nothing of registries or files.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// The longest file name common file systems take (ext4, APFS, NTFS), in bytes.
pub const MAX_FILE_NAME: usize = 255;

/// The extension of a manifest file.
pub const EXTENSION: &str = ".yaml";

/// The longest name: what leaves room for [`EXTENSION`] in a file name
/// (Kubernetes itself would take 253).
const MAX_NAME: usize = MAX_FILE_NAME - EXTENSION.len();

/// Hex digits of the subject's SHA-256 in a digest suffix.
const DIGEST_HEX: usize = 8;

/// The name used when nothing of the subject survives (e.g. `ü`).
const FALLBACK: &str = "subject";

/// Names Windows reserves for devices, whatever the extension.
const WINDOWS_DEVICES: [&str; 4] = ["con", "prn", "aux", "nul"];

/// The object name of each subject.
///
/// A subject keeps its derived name when no other subject derives the same
/// one and the name is short enough and not reserved; otherwise it gets `-`
/// and the first 8 hex digits of the SHA-256 of its subject (the name cut
/// to make room), and, in the unlikely case that this is taken too, a
/// counter (`-2`, `-3`, … in subject order).
pub fn object_names<'a>(subjects: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let subjects: BTreeSet<&str> = subjects.into_iter().collect();
    let mut by_base: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for subject in &subjects {
        by_base.entry(folded(&base_name(subject))).or_default().push(subject);
    }
    let mut names = BTreeMap::new();
    let mut taken = BTreeSet::new();
    let mut suffixed = BTreeSet::new();
    for (base, group) in by_base {
        match group.as_slice() {
            [subject] if base.len() <= MAX_NAME && !is_reserved(&base) => {
                taken.insert(base.clone());
                names.insert((*subject).to_owned(), base);
            }
            _ => suffixed.extend(group),
        }
    }
    // Derived names are settled first, so a subject that is literally
    // another's derived name plus its digest keeps its own name.
    for subject in suffixed {
        let base = base_name(subject);
        let digest = digest(subject);
        let mut name = with_suffix(&base, &format!("-{digest}"));
        let mut counter = 1u32;
        while taken.contains(&folded(&name)) {
            counter += 1;
            name = with_suffix(&base, &format!("-{digest}-{counter}"));
        }
        taken.insert(folded(&name));
        names.insert(subject.to_owned(), name);
    }
    names
}

/// The file holding the manifests of the object `name`.
pub fn file_name(name: &str) -> String {
    format!("{name}{EXTENSION}")
}

/// Whether `file` could be a manifest file of an export: an object name and `.yaml`.
pub fn is_manifest_file(file: &str) -> bool {
    file.strip_suffix(EXTENSION).is_some_and(|name| {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    })
}

/// A name as a case-insensitive file system compares it.
pub fn folded(name: &str) -> String {
    name.to_lowercase()
}

/// The name derived from a subject alone: lowercased, every character
/// outside `[a-z0-9.-]` turned into `-`, each label trimmed of `-`, empty
/// labels dropped. Not cut: [`object_names`] shortens long names with a digest.
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
    if joined.is_empty() { FALLBACK.to_owned() } else { joined }
}

/// `base` cut so that `suffix` fits within [`MAX_NAME`], then `suffix`.
/// `suffix` starts with `-` and a hex digit, so the result stays a valid name.
fn with_suffix(base: &str, suffix: &str) -> String {
    let stem = trim(&base[..base.len().min(MAX_NAME - suffix.len())]);
    if stem.is_empty() {
        suffix[1..].to_owned()
    } else {
        format!("{stem}{suffix}")
    }
}

/// The first [`DIGEST_HEX`] hex digits of the SHA-256 of `subject`.
fn digest(subject: &str) -> String {
    let digest = Sha256::digest(subject.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    hex[..DIGEST_HEX].to_owned()
}

/// Whether Windows reserves the name's first label (`nul.yaml` and
/// `nul.x.yaml` both name the device).
fn is_reserved(name: &str) -> bool {
    let first = name.split('.').next().unwrap_or(name);
    WINDOWS_DEVICES.contains(&first)
        || ["com", "lpt"].iter().any(|device| {
            first
                .strip_prefix(device)
                .is_some_and(|rest| rest.len() == 1 && rest.as_bytes()[0].is_ascii_digit())
        })
}

/// `name` without leading or trailing `-` and `.` (ASCII only, so any cut is a char boundary).
fn trim(name: &str) -> &str {
    name.trim_matches(['-', '.'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_dns_subdomain(name: &str) -> bool {
        name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && label.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && label.ends_with(|c: char| c.is_ascii_alphanumeric())
            })
    }

    fn assert_portable(names: &BTreeMap<String, String>) {
        let files: BTreeSet<String> = names.values().map(|name| folded(&file_name(name))).collect();
        assert_eq!(files.len(), names.len(), "unique case-folded: {names:?}");
        for name in names.values() {
            assert!(is_dns_subdomain(name), "{name}");
            assert!(file_name(name).len() <= MAX_FILE_NAME, "{name}");
            assert!(is_manifest_file(&file_name(name)), "{name}");
        }
    }

    #[test]
    fn subjects_become_lowercase_names_with_dashes_for_other_characters() {
        let names = object_names(["Orders-Value", "com.acme/Payment_Event", "-.x..y.-", "ü"]);
        assert_eq!(names["Orders-Value"], "orders-value");
        assert_eq!(names["com.acme/Payment_Event"], "com.acme-payment-event");
        assert_eq!(names["-.x..y.-"], "x.y");
        assert_eq!(names["ü"], "subject");
        assert_portable(&names);
    }

    #[test]
    fn colliding_names_all_get_a_hash_suffix_and_stay_stable() {
        let names = object_names(["a_b", "a-b", "A/B", "c"]);
        assert_eq!(names["c"], "c");
        let suffixed: Vec<&String> = ["a_b", "a-b", "A/B"].iter().map(|s| &names[*s]).collect();
        for name in &suffixed {
            assert!(name.starts_with("a-b-") && name.len() == "a-b-".len() + 8, "{name}");
        }
        assert_portable(&names);
        assert_eq!(names, object_names(["c", "A/B", "a-b", "a_b"]), "order does not matter");
    }

    // Issue 37, item 7: `x` and `X` both became `x-2d711642`, the name of the
    // third subject, and one file overwrote another.
    #[test]
    fn a_subject_named_like_another_subjects_suffixed_name_keeps_it_and_the_others_move() {
        assert_eq!(digest("x"), "2d711642");
        let names = object_names(["x", "X", "x-2d711642"]);
        assert_eq!(names["x-2d711642"], "x-2d711642");
        assert_eq!(names["x"], "x-2d711642-2");
        assert!(names["X"].starts_with("x-") && names["X"] != names["x"], "{names:?}");
        assert_portable(&names);
        let again = object_names(["x-2d711642", "X", "x"]);
        assert_eq!(names, again);
    }

    // Issue 37, item 7: a 249-character topic plus `-value` failed the whole
    // export with "File name too long".
    #[test]
    fn long_subjects_keep_a_readable_prefix_and_a_digest_within_255_bytes() {
        let topic = "t".repeat(249);
        let long = format!("{topic}-value");
        let other = format!("{topic}-key");
        let names = object_names([long.as_str(), other.as_str()]);
        assert_portable(&names);
        assert_eq!(file_name(&names[&long]).len(), MAX_FILE_NAME);
        assert!(names[&long].starts_with(&"t".repeat(200)), "{}", names[&long]);
        assert!(names[&long].ends_with(&format!("-{}", digest(&long))));
        assert_ne!(names[&long], names[&other]);
        // Exactly at the limit: no digest needed.
        let fits = "f".repeat(MAX_NAME);
        assert_eq!(object_names([fits.as_str()])[&fits], fits);
    }

    #[test]
    fn multi_byte_subjects_become_ascii_names_that_fit() {
        let wide = "aü".repeat(200);
        let names = object_names([wide.as_str(), "日本"]);
        assert_portable(&names);
        assert!(names[&wide].starts_with("a-a-a-"), "{}", names[&wide]);
        assert_eq!(names["日本"], "subject");
    }

    #[test]
    fn names_windows_reserves_for_devices_get_a_digest() {
        let names = object_names(["NUL", "aux.value", "com1", "com10", "console"]);
        assert!(names["NUL"].starts_with("nul-"), "{names:?}");
        assert!(names["aux.value"].starts_with("aux.value-"), "{names:?}");
        assert!(names["com1"].starts_with("com1-"), "{names:?}");
        assert_eq!(names["com10"], "com10");
        assert_eq!(names["console"], "console");
        assert_portable(&names);
    }

    #[test]
    fn many_similar_subjects_never_share_a_name() {
        let subjects: Vec<String> = (0..300)
            .flat_map(|n| [format!("s{n}"), format!("S{n}"), format!("s_{n}"), format!("s-{n}")])
            .chain(std::iter::once(format!("s0-{}", digest("s0"))))
            .collect();
        let names = object_names(subjects.iter().map(String::as_str));
        assert_eq!(names.len(), subjects.len());
        assert_portable(&names);
    }
}

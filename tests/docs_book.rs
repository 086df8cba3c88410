//! The book under `docs/` (issue 42): its reference pages are generated from
//! the code and must equal the checked-in ones (`UPDATE_EXPECT=1 cargo test
//! --test docs_book` rewrites them), every page is in `SUMMARY.md`, and every
//! link in the book, the README and CONTRIBUTING.md leads somewhere that
//! exists (a file, and a heading when the link names one).

mod docs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn book() -> PathBuf {
    root().join("docs/src")
}

#[test]
fn generated_references_match_the_code() {
    let update = std::env::var("UPDATE_EXPECT").is_ok_and(|value| value == "1");
    let mut stale = Vec::new();
    for (file, expected) in docs::reference::pages() {
        let path = book().join("reference").join(file);
        if update {
            std::fs::write(&path, &expected).unwrap();
            continue;
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != expected {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from the code; run `UPDATE_EXPECT=1 cargo test --test docs_book` and commit"
    );
}

/// Every Markdown file under `folder`, recursively, in name order.
fn markdown_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "md") {
            files.push(path);
        }
    }
    files
}

#[test]
fn every_page_is_in_the_summary_and_every_entry_is_a_page() {
    let summary_path = book().join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    let listed: BTreeSet<PathBuf> = docs::links::of(&summary)
        .into_iter()
        .map(|link| book().join(link.target))
        .collect();
    let pages: BTreeSet<PathBuf> = markdown_files(&book())
        .into_iter()
        .filter(|path| *path != summary_path)
        .collect();
    let unlisted: Vec<_> = pages.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&pages).collect();
    assert!(unlisted.is_empty(), "pages not in SUMMARY.md: {unlisted:?}");
    assert!(missing.is_empty(), "SUMMARY.md entries with no page: {missing:?}");
}

#[test]
fn every_link_resolves() {
    let mut files = markdown_files(&book());
    files.push(root().join("README.md"));
    files.push(root().join("CONTRIBUTING.md"));
    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let inside_book = file.starts_with(book());
        for link in docs::links::of(&text) {
            if link.target.contains("://") || link.target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.target.split_once('#').unwrap_or((&link.target, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                normalize(&file.parent().unwrap().join(path))
            };
            let problem = if !target.exists() {
                Some("no such file".to_owned())
            } else if inside_book && !target.starts_with(book()) {
                // The rendered book holds only docs/src: such a link would break there.
                Some("leaves the book (name repository files as code, not links)".to_owned())
            } else if !anchor.is_empty() {
                let known = anchors
                    .entry(target.clone())
                    .or_insert_with(|| docs::links::heading_ids(&std::fs::read_to_string(&target).unwrap_or_default()));
                (!known.contains(anchor)).then(|| format!("no heading with the id `{anchor}`"))
            } else {
                None
            };
            if let Some(problem) = problem {
                let shown = file.strip_prefix(root()).unwrap_or(file).display().to_string();
                broken.push(format!("{shown}:{}: {}: {problem}", link.line, link.target));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} broken links:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// `path` with its `.` and `..` steps taken (the file need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

//! `schemaops export`: a registry (embedded under `--data`, or external)
//! written as manifests into `--out`.
//!
//! # Guarantees
//! Nothing is written unless the whole export was read and rendered: the
//! files go into a temporary folder next to `--out`, which then takes its
//! place. `--out` must be missing, empty, or hold only an earlier export
//! (an `index.md` written by export and `.yaml` files, nothing else),
//! which is replaced whole; anything else is refused. Before the folder
//! takes `--out`'s place, it is read back: every subject read must have its
//! own file (names compared case-folded) holding what was rendered for it,
//! or nothing is replaced and the lost subjects are named.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Verdict;
use crate::cli::{ExportConfig, ExportSource};
use crate::export::render::{INDEX_FILE, INDEX_TITLE, RenderError, Rendered, render};
use crate::export::{collect, names};
use crate::registry::Registry;
use crate::registry::external::ExternalRegistry;

/// Why `export` stopped (nothing was written).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The embedded registry could not be opened.
    #[error(transparent)]
    Registry(#[from] super::registry::Error),
    /// The registry client could not be configured.
    #[error("failed to configure the registry client")]
    ExternalRegistry(#[source] crate::registry::external::ConfigError),
    /// The registry named by `--registry-url` did not answer.
    #[error("nothing was exported: the registry {url} did not answer")]
    Unreachable {
        /// The registry's base URL.
        url: String,
        /// Why.
        #[source]
        source: crate::registry::Error,
    },
    /// A read failed part way.
    #[error("nothing was exported")]
    Collect(#[source] crate::export::Error),
    /// The manifests could not be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// `--out` holds something other than an earlier export.
    #[error("--out {} is not empty and holds more than an earlier export ({found}); nothing was written", path.display())]
    OutNotEmpty {
        /// The folder.
        path: PathBuf,
        /// The first entry that is not part of an export.
        found: String,
    },
    /// A file or folder could not be written.
    #[error("failed to write {}", path.display())]
    Write {
        /// The path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The folder written did not hold a file of its own for every subject
    /// read (a name collision, or a file system that folds names); `--out`
    /// was left as it was.
    #[error(
        "nothing was exported: {written} files were written for {subjects} subjects and the index, and {} lost \
         (missing, or overwritten by another subject's file): {}; --out was left as it was",
        lost.len(),
        subject_list(lost)
    )]
    LostSubjects {
        /// Files found in the folder written.
        written: usize,
        /// Subjects read.
        subjects: usize,
        /// The subjects without a file of their own.
        lost: Vec<String>,
    },
    /// The summary could not be printed.
    #[error("failed to write the output")]
    Print(#[source] std::io::Error),
}

/// Exports the registry into `--out` and prints a one-line summary.
///
/// # Errors
/// [`Error`] when the registry cannot be read or `--out` cannot be
/// (re)placed; then nothing was written.
pub async fn run(config: &ExportConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    check_out(&config.out)?;
    let registry = open(config).await?;
    let export = collect(registry.as_ref(), &config.selection)
        .await
        .map_err(Error::Collect)?;
    let rendered = render(&export, &config.namespace, config.registry_ref.as_ref())?;
    let subjects: Vec<&str> = export.subjects.iter().map(|s| s.subject.as_str()).collect();
    replace(&config.out, &rendered, &subjects)?;
    let documents: usize = export.subjects.iter().map(|s| s.documents.len()).sum();
    writeln!(
        out,
        "exported {} subjects ({documents} schema versions) to {}",
        export.subjects.len(),
        config.out.display()
    )
    .map_err(Error::Print)?;
    Ok(Verdict::Compatible)
}

/// The registry to read, after it answered.
async fn open(config: &ExportConfig) -> Result<Box<dyn Registry>, Error> {
    match &config.source {
        ExportSource::Data(data) => {
            let database = data.join("registry.db");
            Ok(Box::new(
                super::registry::open_registry(&database, None, config.checker).await?,
            ))
        }
        ExportSource::Registry(external) => {
            let client = ExternalRegistry::new(external, config.checker).map_err(Error::ExternalRegistry)?;
            client.capabilities().await.map_err(|source| Error::Unreachable {
                url: external.display_url(),
                source,
            })?;
            Ok(Box::new(client))
        }
    }
}

/// Refuses an `--out` that holds anything but an earlier export.
fn check_out(path: &Path) -> Result<(), Error> {
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(Error::Write {
                path: path.to_owned(),
                source,
            });
        }
    };
    let refuse = |found: String| Error::OutNotEmpty {
        path: path.to_owned(),
        found,
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Write {
            path: path.to_owned(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !is_file || !(name == INDEX_FILE || names::is_manifest_file(&name)) {
            return Err(refuse(name));
        }
        names.push(name);
    }
    if names.is_empty() {
        return Ok(());
    }
    let index = std::fs::read_to_string(path.join(INDEX_FILE)).unwrap_or_default();
    if !index.starts_with(INDEX_TITLE) {
        return Err(refuse(format!("no {INDEX_FILE} written by export")));
    }
    Ok(())
}

/// Writes the files into a fresh folder next to `out`, checks that every
/// subject has its file there, then puts the folder in `out`'s place (the
/// earlier export, if any, is removed).
fn replace(out: &Path, rendered: &Rendered, subjects: &[&str]) -> Result<(), Error> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Write { path, source }
    };
    let parent = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(failed(&parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".schemaops-export-")
        .tempdir_in(&parent)
        .map_err(failed(&parent))?;
    for (name, text) in &rendered.files {
        let path = staging.path().join(name);
        std::fs::write(&path, text).map_err(failed(&path))?;
    }
    check_written(staging.path(), rendered, subjects)?;
    // Kept only while the earlier export is out of the way; removed when dropped.
    let previous = if out.exists() {
        let previous = tempfile::Builder::new()
            .prefix(".schemaops-export-old-")
            .tempdir_in(&parent)
            .map_err(failed(&parent))?;
        let old = previous.path().join("export");
        std::fs::rename(out, &old).map_err(failed(out))?;
        Some((previous, old))
    } else {
        None
    };
    let written = staging.keep();
    if let Err(source) = std::fs::rename(&written, out) {
        // Put the earlier export back; drop what was written.
        if let Some((_, old)) = &previous {
            let _ = std::fs::rename(old, out);
        }
        let _ = std::fs::remove_dir_all(&written);
        return Err(failed(out)(source));
    }
    Ok(())
}

/// Reads `folder` back: each subject must have a file of its own (no other
/// subject's file has the same name, case-folded) holding as many bytes as
/// were rendered for it, and the folder holds nothing else but the index.
///
/// # Errors
/// [`Error::LostSubjects`] naming every subject without its file;
/// [`Error::Write`] when the folder cannot be read.
fn check_written(folder: &Path, rendered: &Rendered, subjects: &[&str]) -> Result<(), Error> {
    let unreadable = |source| Error::Write {
        path: folder.to_owned(),
        source,
    };
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    for entry in std::fs::read_dir(folder).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let size = entry.metadata().map_err(unreadable)?.len();
        sizes.insert(entry.file_name().to_string_lossy().into_owned(), size);
    }
    let holds = |file: &str| {
        let expected = rendered.files.get(file).map(|text| text.len() as u64);
        expected.is_some() && sizes.get(file).copied() == expected
    };
    let mut claimed = BTreeSet::new();
    let mut claimed_twice = BTreeSet::new();
    for subject in subjects {
        if let Some(file) = rendered.subject_files.get(*subject)
            && !claimed.insert(names::folded(file))
        {
            claimed_twice.insert(names::folded(file));
        }
    }
    let lost: Vec<String> = subjects
        .iter()
        .filter(|subject| {
            rendered
                .subject_files
                .get(**subject)
                .is_none_or(|file| claimed_twice.contains(&names::folded(file)) || !holds(file))
        })
        .map(|subject| (*subject).to_owned())
        .collect();
    if !lost.is_empty() || sizes.len() != subjects.len() + 1 || !holds(INDEX_FILE) {
        return Err(Error::LostSubjects {
            written: sizes.len(),
            subjects: subjects.len(),
            lost,
        });
    }
    Ok(())
}

/// Subjects as `` `a`, `b` ``, at most 20 of them, then how many more.
fn subject_list(subjects: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut text = subjects
        .iter()
        .take(SHOWN)
        .map(|subject| format!("`{subject}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if subjects.len() > SHOWN {
        text.push_str(&format!(" and {} more", subjects.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(subject_files: &[(&str, &str)]) -> Rendered {
        let mut files: BTreeMap<String, String> = subject_files
            .iter()
            .map(|(subject, file)| ((*file).to_owned(), format!("subject: {subject}\n")))
            .collect();
        files.insert(INDEX_FILE.to_owned(), INDEX_TITLE.to_owned());
        Rendered {
            files,
            subject_files: subject_files
                .iter()
                .map(|(subject, file)| ((*subject).to_owned(), (*file).to_owned()))
                .collect(),
        }
    }

    fn write(folder: &Path, rendered: &Rendered) {
        for (name, text) in &rendered.files {
            std::fs::write(folder.join(name), text).unwrap();
        }
    }

    #[test]
    fn a_folder_with_every_subjects_file_passes() {
        let folder = tempfile::tempdir().unwrap();
        let rendered = rendered(&[("a", "a.yaml"), ("B", "b.yaml")]);
        write(folder.path(), &rendered);
        check_written(folder.path(), &rendered, &["a", "B"]).unwrap();
    }

    // Issue 37, item 7: a collision overwrote one subject's file and the export still exited 0.
    #[test]
    fn two_subjects_whose_files_differ_only_in_case_are_both_named_as_lost() {
        let folder = tempfile::tempdir().unwrap();
        let rendered = rendered(&[("x", "x.yaml"), ("X", "X.yaml"), ("y", "y.yaml")]);
        write(folder.path(), &rendered);
        let error = check_written(folder.path(), &rendered, &["X", "x", "y"]).unwrap_err();
        let Error::LostSubjects { lost, .. } = &error else {
            panic!("{error}");
        };
        assert_eq!(lost, &["X", "x"]);
        assert!(error.to_string().contains("2 lost"), "{error}");
    }

    #[test]
    fn a_missing_or_overwritten_file_and_a_subject_without_a_file_are_named() {
        let folder = tempfile::tempdir().unwrap();
        let rendered = rendered(&[("a", "a.yaml"), ("b", "b.yaml")]);
        write(folder.path(), &rendered);
        std::fs::remove_file(folder.path().join("a.yaml")).unwrap();
        std::fs::write(folder.path().join("b.yaml"), "subject: somebody else\n").unwrap();
        let error = check_written(folder.path(), &rendered, &["a", "b", "c"]).unwrap_err();
        let Error::LostSubjects {
            lost,
            written,
            subjects,
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(lost, &["a", "b", "c"]);
        assert_eq!((*written, *subjects), (2, 3));
        let message = error.to_string();
        assert!(
            message.contains("`a`, `b`, `c`") && message.contains("--out was left as it was"),
            "{message}"
        );
    }
}

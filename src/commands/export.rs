//! `schemaops export`: a registry (embedded under `--data`, or external)
//! written as manifests into `--out`.
//!
//! # Guarantees
//! Nothing is written unless the whole export was read and rendered: the
//! files go into a temporary folder next to `--out`, which then takes its
//! place. `--out` must be missing, empty, or hold only an earlier export
//! (an `index.md` written by export and `.yaml` files, nothing else),
//! which is replaced whole; anything else is refused.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Verdict;
use crate::cli::{ExportConfig, ExportSource};
use crate::export::render::{INDEX_FILE, INDEX_TITLE, RenderError, render};
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
    let files = render(&export, &config.namespace)?;
    replace(&config.out, &files)?;
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

/// Writes `files` into a fresh folder next to `out`, then puts it in
/// `out`'s place (the earlier export, if any, is removed).
fn replace(out: &Path, files: &std::collections::BTreeMap<String, String>) -> Result<(), Error> {
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
    for (name, text) in files {
        let path = staging.path().join(name);
        std::fs::write(&path, text).map_err(failed(&path))?;
    }
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

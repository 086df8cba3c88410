//! The subcommands: each reads its inputs, calls the library, and prints.
//! Business rules live in the library, not here.

pub mod apply;
pub mod check;
pub mod compat;
pub mod crds;
pub mod export;
pub mod forward;
pub mod import;
pub mod operator;
pub mod registry;

/// How a command ended, mapped to the process exit status by `main`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Compatible, or the job ran to completion: exit 0.
    Compatible,
    /// Incompatible: exit 1.
    Incompatible,
    /// Some input could not be used; details were printed: exit 2.
    Failed,
}

/// Reads the manifests as `command` (`check` or `apply`) does, and tells on
/// standard error what reading let through or passed over: each
/// `--lenient` warning, and each skipped kustomization or chart with the
/// command that reads what it renders (also when nothing else was found).
fn read_manifests(
    command: &str,
    paths: &[std::path::PathBuf],
    strictness: crate::local::manifests::Strictness,
) -> Result<crate::local::manifests::Loaded, crate::local::manifests::ManifestError> {
    use crate::local::manifests::{self, ManifestError};

    let loaded = manifests::read(paths, strictness);
    let (warnings, skipped) = match &loaded {
        Ok(loaded) => (loaded.warnings.as_slice(), loaded.skipped.as_slice()),
        Err(ManifestError::Empty { skipped, .. }) => (&[][..], skipped.as_slice()),
        Err(_) => (&[][..], &[][..]),
    };
    for warning in warnings {
        eprintln!("schemaops: warning: {warning}");
    }
    for note in skipped.iter().filter_map(|skipped| skipped.note(command)) {
        eprintln!("schemaops: note: {note}");
    }
    loaded
}

/// Writes the count of what was skipped (when anything was) to `table`,
/// the end of a table, or for output meant for machines to standard error.
fn report_skipped(skipped: Option<&str>, table: Option<&mut dyn std::io::Write>) -> std::io::Result<()> {
    match (skipped, table) {
        (Some(skipped), Some(out)) => writeln!(out, "{skipped}"),
        (Some(skipped), None) => {
            eprintln!("schemaops: note: {skipped}");
            Ok(())
        }
        (None, _) => Ok(()),
    }
}

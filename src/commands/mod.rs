//! The subcommands: each reads its inputs, calls the library, and prints.
//! Business rules live in the library, not here.

pub mod apply;
pub mod check;
pub mod compat;
pub mod crds;
pub mod export;
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

/// Tells on standard error what reading the manifests let through or
/// passed over: each `--lenient` warning and each skipped kustomization or
/// chart, with the command (`check` or `apply`) that reads what it renders.
fn report_reading(command: &str, loaded: &crate::local::manifests::Loaded) {
    for warning in &loaded.warnings {
        eprintln!("schemaops: warning: {warning}");
    }
    for note in loaded.skipped.iter().filter_map(|skipped| skipped.note(command)) {
        eprintln!("schemaops: note: {note}");
    }
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

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

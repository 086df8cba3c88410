//! `schemaops apply` without a cluster: manifests from files are the source,
//! the objects (with their status) are kept in a file beside the embedded
//! registry, and the controller's reconcile core judges and registers.

pub mod check;
pub mod connections;
pub mod lock;
pub mod manifests;
pub mod objects;
pub mod policies;
pub mod run;
pub mod scratch;
pub mod unstorable;

//! The reconcile core shared by `schemaops operator` (the API server as the
//! source) and `schemaops apply` (a folder as the source).
//!
//! Each kind follows read → decide → act → status: [`schema::read`] gathers
//! plain values (the spec, who else claims the subject, what the registry
//! holds), [`schema::decide`] is pure and chooses a plan, [`schema::act`]
//! carries the plan out through a [`Registry`](crate::registry::Registry),
//! and [`schema::status`] renders the status without reading the clock.
//! Nothing here touches `kube::Api`; the operator wiring lives in
//! [`operator`].

pub mod judge;
pub mod leader;
pub mod level;
pub mod operator;
pub mod policy_watch;
pub mod schema;
pub mod subject_config;
pub mod view;

/// The field manager of every status write.
pub const FIELD_MANAGER: &str = "schemaops";

/// The finalizer that lets schemaops clean up the registry before a resource goes.
pub const FINALIZER: &str = "schemaops.dev/cleanup";

/// The most incompatibilities listed in a status; `total` counts them all.
pub const MAX_LISTED_INCOMPATIBILITIES: usize = 20;

//! Reconciling one `Schema`: read, decide, act, status; and the cleanup
//! its finalizer runs on deletion.

pub mod act;
pub mod cleanup;
pub mod decide;
pub mod read;
pub mod status;

use crate::compat::Checker;
use crate::registry::Registry;

pub use act::Outcome;
pub use decide::{Candidate, Plan, SchemaInputs};
pub use read::RegistrySubject;

/// Decides and acts on gathered inputs, then renders the new status.
///
/// # Errors
/// The registry's error when it fails transiently while acting; the caller
/// reports it with [`status::render_unavailable`] and retries.
pub async fn reconcile(
    inputs: &SchemaInputs,
    checker: &Checker,
    registry: &dyn Registry,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Result<crate::crd::SchemaStatus, crate::registry::Error> {
    let plan = decide::decide(inputs, checker);
    tracing::debug!(plan = plan.name(), "Decided");
    let outcome = act::act(&plan, registry).await?;
    Ok(status::render(inputs, &plan, &outcome, now))
}

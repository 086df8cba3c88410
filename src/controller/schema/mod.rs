//! Reconciling one `Schema`: read, decide, act, status; and the cleanup
//! its finalizer runs on deletion.

pub mod act;
pub mod cleanup;
pub mod decide;
pub mod observe;
pub mod read;
pub mod status;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::compat::Checker;
use crate::controller::judge::PolicyContext;
use crate::controller::view::{ObjectKey, SubjectView};
use crate::crd::{Schema, SchemaStatus};
use crate::policy::Verdict;
use crate::registry::Registry;

pub use act::Outcome;
pub use decide::{Candidate, Decision, Plan, PolicyInputs, SchemaInputs};
pub use read::RegistrySubject;

/// The outcome of reconciling one Schema.
#[derive(Debug)]
pub struct Reconciled {
    /// The status to write.
    pub status: SchemaStatus,
    /// The plan that was carried out (`None` when the registry could not be read).
    pub plan: Option<Plan>,
    /// The transient error that stopped the reconcile: retry later.
    pub retry: Option<crate::registry::Error>,
    /// The policies' verdict (its audits are for the caller to record).
    pub verdict: Verdict,
}

/// Reconciles one Schema: read (the caller passes the ConfigMap data its
/// `schemaFrom` names, and the view of its subject), decide, act, and
/// render the status. A registry outage becomes `Reconciling=True` with
/// what was in force kept, and [`Reconciled::retry`] set.
pub async fn reconcile(
    schema: &Schema,
    view: &SubjectView,
    config_map: Option<&BTreeMap<String, String>>,
    registry: &dyn Registry,
    checker: &Checker,
    policy: &PolicyContext,
    now: &Time,
) -> Reconciled {
    let key = ObjectKey::of(&schema.metadata);
    let owner = view.schema_owner.as_ref() == Some(&key);
    let text = read::schema_text(&schema.spec, config_map);
    let mut inputs = SchemaInputs {
        key,
        generation: schema.metadata.generation,
        subject: schema.spec.subject.clone(),
        status: schema.status.clone(),
        view: view.clone(),
        candidate: Candidate::NotOwner,
        policy: PolicyInputs {
            context: policy.clone(),
            object: Some(Arc::new(schema.clone())),
            old_object: None,
        },
        observe: schema.spec.management_policy == crate::crd::ManagementPolicy::Observe,
    };
    let unavailable = |inputs: &SchemaInputs, error: crate::registry::Error| Reconciled {
        status: status::render_unavailable(inputs, &error.to_string(), now),
        plan: None,
        retry: Some(error),
        verdict: Verdict::default(),
    };
    inputs.candidate = match read::read_candidate(owner, &schema.spec, text, view, registry).await {
        Ok(candidate) => candidate,
        Err(error) => return unavailable(&inputs, error),
    };
    let Decision { plan, verdict } = decide::judge(&inputs, checker);
    tracing::debug!(plan = plan.name(), "Decided");
    match act::act(&plan, registry).await {
        Ok(outcome) => {
            let mut status = status::render(&inputs, &plan, &outcome, now);
            status::note_policy_warnings(&mut status, &verdict, now);
            Reconciled {
                status,
                plan: Some(plan),
                retry: None,
                verdict,
            }
        }
        Err(error) => unavailable(&inputs, error),
    }
}

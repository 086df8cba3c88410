//! Platform policy, evaluated purely: which namespace may manage which
//! subject, the compatibility floor, and the allowed deletion policies,
//! modes, schema types and names (the `SchemaPolicy` resource).
//!
//! One evaluation serves four places: `check` and `apply`, the admission
//! webhook, the reconcile, and the embedded registry's REST writes. Each
//! builds a [`Proposal`] of plain facts and asks a [`PolicySet`] for a
//! [`Verdict`]: every violation of every policy that applies, with what its
//! policy does about it (Deny, Warn, Audit). The strictest outcome wins.
//!
//! Knows nothing of I/O, Kubernetes clients or HTTP.

mod cel;
mod compile;
mod evaluate;
pub mod level;
pub mod pattern;
mod proposal;
mod selector;
mod shared;
mod verdict;

use std::sync::Arc;

pub use compile::{CompiledPolicy, InvalidPolicy};
pub use proposal::{LevelOrigin, NamespaceFacts, Proposal, ProposedLevel, ProposedMode, ProposedRegistry, Target};
pub use selector::Selector;
pub use shared::SharedPolicies;
pub use verdict::{Actions, Rule, Verdict, Violation};

use crate::crd::SchemaPolicySpec;

/// The policies in force, compiled, in name order; the invalid ones are
/// kept apart (they apply to nothing, and their status says why).
#[derive(Debug, Default, Clone)]
pub struct PolicySet {
    policies: Vec<Arc<CompiledPolicy>>,
    invalid: Vec<InvalidPolicy>,
}

impl PolicySet {
    /// No policy: everything is allowed, as without the feature.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Compiles every `(name, spec)`.
    pub fn compile<'a>(specs: impl IntoIterator<Item = (&'a str, &'a SchemaPolicySpec)>) -> Self {
        let mut policies = Vec::new();
        let mut invalid = Vec::new();
        for (name, spec) in specs {
            match CompiledPolicy::compile(name, spec) {
                Ok(policy) => policies.push(Arc::new(policy)),
                Err(problems) => invalid.push(problems),
            }
        }
        Self::from_compiled(policies, invalid)
    }

    /// A set of policies compiled already (a cache keeps them between changes).
    pub fn from_compiled(mut policies: Vec<Arc<CompiledPolicy>>, mut invalid: Vec<InvalidPolicy>) -> Self {
        policies.sort_by(|a, b| a.name().cmp(b.name()));
        invalid.sort_by(|a, b| a.policy.cmp(&b.policy));
        Self { policies, invalid }
    }

    /// Whether no valid policy is in force.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// The valid policies, in name order.
    pub fn policies(&self) -> &[Arc<CompiledPolicy>] {
        &self.policies
    }

    /// The policies that cannot be used, with why.
    pub fn invalid(&self) -> &[InvalidPolicy] {
        &self.invalid
    }

    /// Whether some policy has CEL validations, which need the object as JSON.
    pub fn needs_object(&self) -> bool {
        self.policies.iter().any(|policy| policy.has_validations())
    }

    /// Judges `proposal` against every policy.
    pub fn evaluate(&self, proposal: &Proposal<'_>) -> Verdict {
        let judge = || {
            let mut violations = Vec::new();
            let mut bindings = None;
            for policy in &self.policies {
                policy.judge(proposal, &mut bindings, &mut violations);
            }
            Verdict { violations }
        };
        // Every CEL evaluation of the judgement on one stack with room for it.
        if self.needs_object() && proposal.object.is_some() {
            cel::on_evaluation_stack(judge)
        } else {
            judge()
        }
    }

    /// Whether an object in `namespace` may claim `subject` as far as the
    /// subject rules go: a claim that some policy denies does not count when
    /// the oldest claim wins a subject.
    pub fn may_claim(&self, proposal: &Proposal<'_>) -> bool {
        !self
            .evaluate(proposal)
            .denials()
            .any(|violation| violation.rule == Rule::Subjects)
    }
}

#[cfg(test)]
mod tests;

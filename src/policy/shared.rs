//! The policies in force, shared between the parts of one process that judge
//! changes (the reconcile, the webhook, the registry's REST API) and the one
//! that keeps them current (a watch on the SchemaPolicies, or files read at
//! start-up). A reader takes the set as it is at that moment and keeps it
//! for one judgement; a writer swaps in a new set.

use std::sync::{Arc, RwLock};

use super::PolicySet;

/// A handle on the policies in force; clones share one set.
#[derive(Debug, Clone, Default)]
pub struct SharedPolicies(Arc<RwLock<Arc<PolicySet>>>);

impl SharedPolicies {
    /// A handle holding `set`.
    pub fn new(set: PolicySet) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(set))))
    }

    /// The set in force now.
    pub fn current(&self) -> Arc<PolicySet> {
        Arc::clone(&self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Puts `set` in force.
    pub fn replace(&self, set: PolicySet) {
        *self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(set);
    }
}

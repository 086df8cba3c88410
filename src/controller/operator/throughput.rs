//! How the controllers keep up with many resources at once.
//!
//! kube-runtime polls every reconcile in flight each time any of them wakes
//! (its `FutureHashMap` scans them all), and by default it starts one for
//! every object queued. With 10,000 Schemas queued at once, each wake-up then
//! scans thousands of tasks, and each task holds its requests and buffers
//! until it ends: the time grows with the square of the queue and the memory
//! with the queue. A bounded number of reconciles in flight keeps both flat;
//! the rest wait in the controller's queue, deduplicated by object.

use kube::runtime::controller;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::crd::Schema;

/// Reconciles in flight per controller. Each mostly waits on the API server
/// or the registry, so a few dozen keep two cores busy.
pub(super) const CONCURRENCY: u16 = 32;

/// The settings every controller runs with.
pub(super) fn controller_config() -> controller::Config {
    controller::Config::default().concurrency(CONCURRENCY)
}

/// The cached Schemas `wanted` selects, as references to reconcile. Only
/// those are copied out of the cache, not every one.
pub(super) fn schemas_where(store: &Store<Schema>, wanted: impl Fn(&Schema) -> bool) -> Vec<ObjectRef<Schema>> {
    store
        .state_filter(wanted)
        .iter()
        .map(|schema| ObjectRef::from_obj(schema.as_ref()))
        .collect()
}

//! The budget of the request a task serves ([`crate::compat::budget`]),
//! carried from the request's future onto the blocking threads that parse
//! and check for it.

use std::future::Future;

use crate::compat::budget::{self, Budget};

tokio::task_local! {
    static CURRENT: Budget;
}

/// Runs `work` (a request's handling) with `budget` as its budget.
pub async fn scope<T>(budget: Budget, work: impl Future<Output = T>) -> T {
    CURRENT.scope(budget, work).await
}

/// Runs CPU-heavy `work` on a blocking thread, under the budget of the
/// request this task serves (none outside a request).
///
/// # Errors
/// The blocking task panicked or the runtime is shutting down.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let current = CURRENT.try_with(Budget::clone).ok();
    tokio::task::spawn_blocking(move || budget::run_under(current.as_ref(), work)).await
}

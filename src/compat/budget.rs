//! The budget of one request's parsing and checking: memory estimated
//! before the work is done, a wall-clock limit, and cancellation (the client
//! went away, or the process is shutting down).
//!
//! A [`Budget`] is installed on the thread that does the work with
//! [`Budget::run`]; the engine calls [`charge`] before it parses a schema or
//! compares two, and [`checkpoint`] in its loops. Without a budget installed
//! (the CLI, the operator's own checks) only shutdown stops a check.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::Format;

/// Set once the process begins to shut down; every check stops at its next checkpoint.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

thread_local! {
    static CURRENT: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Stops every check in this process at its next checkpoint.
pub fn shut_down() {
    SHUTTING_DOWN.store(true, Ordering::Relaxed);
}

/// Memory a parse needs, per byte of schema text (the text and its
/// references): the peak resident size of `schemaops compat` parsing a
/// 7.5 MB schema of each format (records of many fields, objects of many
/// properties, messages of 40 fields) was 11, 14 and 40 times its size.
fn parse_bytes_per_text_byte(format: Format) -> usize {
    match format {
        Format::Avro => 12,
        Format::Json => 16,
        Format::Protobuf => 40,
    }
}

/// Memory one comparison needs per node (message, field, type) of the two
/// schemas compared: the walk's state and its findings. Charges add up over
/// a request (a matrix charges every comparison), so the estimate is an
/// upper bound of what the request holds at once.
const CHECK_BYTES_PER_NODE: usize = 64;

/// What a budget allows one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// The memory its parsing and checking may be estimated to need, in bytes.
    pub memory_bytes: usize,
    /// How long its checks may run.
    pub time: Duration,
}

/// Why work stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    /// The work would need more memory than allowed.
    #[error("this check would need about {} MiB of memory; the limit is {} MiB", mib(*needed), mib(*limit))]
    Memory {
        /// The estimate, in bytes (what was charged before, plus this step).
        needed: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The work ran longer than allowed.
    #[error("the check ran longer than its limit of {} s", limit.as_secs())]
    Time {
        /// The limit.
        limit: Duration,
    },
    /// The client that asked went away.
    #[error("the check was cancelled: its client went away")]
    Cancelled,
    /// The process is shutting down.
    #[error("the check was stopped: the registry is shutting down")]
    ShuttingDown,
}

/// Bytes as whole MiB, rounded up.
fn mib(bytes: usize) -> usize {
    bytes.div_ceil(1024 * 1024)
}

/// One request's budget; clones share it.
#[derive(Debug, Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    limits: BudgetLimits,
    started: Instant,
    charged: AtomicUsize,
    cancelled: AtomicBool,
}

impl Budget {
    /// A budget of `limits`, its time counted from now.
    pub fn new(limits: BudgetLimits) -> Self {
        Self {
            inner: Arc::new(Inner {
                limits,
                started: Instant::now(),
                charged: AtomicUsize::new(0),
                cancelled: AtomicBool::new(false),
            }),
        }
    }

    /// Stops the work under this budget at its next checkpoint.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Relaxed);
    }

    /// Runs `work` on this thread with this budget installed.
    pub fn run<T>(&self, work: impl FnOnce() -> T) -> T {
        /// Puts back the budget installed before, even if `work` panics.
        struct Restore(Option<Budget>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|current| *current.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|current| current.borrow_mut().replace(self.clone())));
        work()
    }

    fn checkpoint(&self) -> Result<(), Exceeded> {
        if self.inner.cancelled.load(Ordering::Relaxed) {
            return Err(Exceeded::Cancelled);
        }
        if self.inner.started.elapsed() > self.inner.limits.time {
            return Err(Exceeded::Time {
                limit: self.inner.limits.time,
            });
        }
        Ok(())
    }

    fn charge(&self, bytes: usize) -> Result<(), Exceeded> {
        let before = self.inner.charged.fetch_add(bytes, Ordering::Relaxed);
        let needed = before.saturating_add(bytes);
        if needed > self.inner.limits.memory_bytes {
            return Err(Exceeded::Memory {
                needed,
                limit: self.inner.limits.memory_bytes,
            });
        }
        Ok(())
    }
}

/// The budget installed on this thread, to carry onto threads the work starts.
pub fn current() -> Option<Budget> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Runs `work` under `budget` when there is one.
pub fn run_under<T>(budget: Option<&Budget>, work: impl FnOnce() -> T) -> T {
    match budget {
        Some(budget) => budget.run(work),
        None => work(),
    }
}

/// Whether the work on this thread may go on.
///
/// # Errors
/// [`Exceeded`] when the process is shutting down, or the installed budget
/// was cancelled or has run out of time.
pub fn checkpoint() -> Result<(), Exceeded> {
    if SHUTTING_DOWN.load(Ordering::Relaxed) {
        return Err(Exceeded::ShuttingDown);
    }
    CURRENT.with(|current| current.borrow().as_ref().map_or(Ok(()), Budget::checkpoint))
}

/// Charges the memory a parse of `text_bytes` of `format` needs to the
/// installed budget, before the parse.
///
/// # Errors
/// [`Exceeded`] when the budget cannot afford it (or as [`checkpoint`]).
pub fn charge_parse(format: Format, text_bytes: usize) -> Result<(), Exceeded> {
    charge(parse_estimate(format, text_bytes))
}

/// The memory a parse of `text_bytes` of `format` is estimated to need (an
/// upper bound of what the parsed schema keeps).
pub fn parse_estimate(format: Format, text_bytes: usize) -> usize {
    text_bytes.saturating_mul(parse_bytes_per_text_byte(format))
}

/// Charges the memory comparing two schemas of `nodes` nodes in all needs.
///
/// # Errors
/// As [`charge_parse`].
pub fn charge_check(nodes: usize) -> Result<(), Exceeded> {
    charge(nodes.saturating_mul(CHECK_BYTES_PER_NODE))
}

fn charge(bytes: usize) -> Result<(), Exceeded> {
    checkpoint()?;
    CURRENT.with(|current| current.borrow().as_ref().map_or(Ok(()), |budget| budget.charge(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(memory_bytes: usize) -> BudgetLimits {
        BudgetLimits {
            memory_bytes,
            time: Duration::from_secs(60),
        }
    }

    #[test]
    fn charges_add_up_to_the_limit_then_refuse_naming_both() {
        let budget = Budget::new(limits(100 * 1024 * 1024));
        budget.run(|| {
            assert_eq!(charge_parse(Format::Protobuf, 1024 * 1024), Ok(()));
            let refused = charge_parse(Format::Protobuf, 2 * 1024 * 1024).unwrap_err();
            assert_eq!(
                refused.to_string(),
                "this check would need about 120 MiB of memory; the limit is 100 MiB"
            );
        });
        // Outside `run` nothing is charged.
        assert_eq!(charge_parse(Format::Protobuf, usize::MAX / 64), Ok(()));
    }

    #[test]
    fn a_cancelled_budget_stops_at_the_next_checkpoint_on_any_thread_running_it() {
        let budget = Budget::new(limits(usize::MAX));
        assert_eq!(budget.run(checkpoint), Ok(()));
        budget.cancel();
        let carried = budget.clone();
        let seen = std::thread::spawn(move || carried.run(checkpoint)).join().unwrap();
        assert_eq!(seen, Err(Exceeded::Cancelled));
    }

    #[test]
    fn time_runs_out() {
        let budget = Budget::new(BudgetLimits {
            memory_bytes: usize::MAX,
            time: Duration::ZERO,
        });
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(budget.run(checkpoint), Err(Exceeded::Time { limit: Duration::ZERO }));
    }
}

//! Shared catch-ups: reads that must see every write committed before they
//! arrived (by this process or another) share one store round trip instead
//! of making one each.
//!
//! A caller needs a catch-up that *started* after it arrived: one that was
//! already in flight may have read the store before a write the caller
//! already knows about. So a caller notes how many catch-ups had started
//! when it arrived, then either finds a later one finished, waits for the
//! one in flight to end, or runs the next one itself. Under load every
//! caller waits for at most two round trips, and the store sees at most one
//! catch-up at a time, however many requests are waiting.
//!
//! # Guarantees
//! - [`Coalesced::run`] returns `Ok` only after a catch-up that began after
//!   the call began has succeeded, so a write committed before the call is
//!   in memory when it returns.
//! - A failed catch-up fails its own runner; callers waiting on it try again
//!   (one of them runs the next), so one failure is never taken for success.
//! - A runner dropped mid-flight (its request cancelled) counts as failed:
//!   waiters are woken, never left hanging.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Mutex, MutexGuard, watch};

use crate::registry::Error;

/// What became of the catch-ups that ended.
#[derive(Debug, Clone, Copy, Default)]
struct Ended {
    /// How many ended, whatever their outcome: waiters wake on each.
    count: u64,
    /// The number of the newest one that succeeded (0: none yet).
    succeeded: u64,
}

/// Catch-ups shared between concurrent callers (see the module docs).
#[derive(Debug)]
pub(crate) struct Coalesced {
    /// How many catch-ups have started; the newest one's number.
    started: AtomicU64,
    /// Held by the one caller running a catch-up.
    running: Mutex<()>,
    ended: watch::Sender<Ended>,
}

impl Default for Coalesced {
    fn default() -> Self {
        Self {
            started: AtomicU64::new(0),
            running: Mutex::new(()),
            ended: watch::Sender::new(Ended::default()),
        }
    }
}

/// The right to run a catch-up; when dropped, frees it, then reports the
/// catch-up's end (failed unless marked otherwise). In that order: a waiter
/// woken by the report must find the right free, or it would wait for a
/// report that never comes.
struct Ending<'a> {
    running: Option<MutexGuard<'a, ()>>,
    ended: &'a watch::Sender<Ended>,
    number: u64,
    succeeded: bool,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        drop(self.running.take());
        let (number, succeeded) = (self.number, self.succeeded);
        self.ended.send_modify(|ended| {
            ended.count += 1;
            if succeeded {
                ended.succeeded = ended.succeeded.max(number);
            }
        });
    }
}

impl Coalesced {
    /// Returns once a catch-up that started after this call has succeeded:
    /// another caller's, or `catch_up` run here when none is in flight.
    ///
    /// # Errors
    /// `catch_up`'s error, when this caller ran it and it failed.
    pub(crate) async fn run<F, Fut>(&self, catch_up: F) -> Result<(), Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), Error>>,
    {
        // Every catch-up numbered above `arrived` starts after this point.
        let arrived = self.started.load(Ordering::SeqCst);
        let mut ended = self.ended.subscribe();
        let mut catch_up = Some(catch_up);
        loop {
            if ended.borrow_and_update().succeeded > arrived {
                return Ok(());
            }
            if let Ok(running) = self.running.try_lock() {
                let mut ending = Ending {
                    running: Some(running),
                    ended: &self.ended,
                    number: self.started.fetch_add(1, Ordering::SeqCst) + 1,
                    succeeded: false,
                };
                // A caller runs at most once: it returns with that run's outcome.
                let Some(catch_up) = catch_up.take() else {
                    return Err(Error::Store {
                        action: "read other processes' writes",
                        source: "a catch-up ran twice for one caller".into(),
                    });
                };
                catch_up().await?;
                ending.succeeded = true;
                return Ok(());
            }
            // One is in flight: wait for it (or any later one) to end.
            if ended.changed().await.is_err() {
                // The sender lives as long as `self`; this cannot happen.
                return Err(Error::Store {
                    action: "read other processes' writes",
                    source: "the catch-up channel closed".into(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn concurrent_callers_share_round_trips_but_each_gets_one_that_started_after_it() {
        let coalesced = Arc::new(Coalesced::default());
        let trips = Arc::new(AtomicUsize::new(0));
        let mut callers = Vec::new();
        for _ in 0..50 {
            let (coalesced, trips) = (Arc::clone(&coalesced), Arc::clone(&trips));
            callers.push(tokio::spawn(async move {
                coalesced
                    .run(|| async {
                        trips.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Ok(())
                    })
                    .await
            }));
        }
        for caller in callers {
            caller.await.unwrap().unwrap();
        }
        let trips = trips.load(Ordering::SeqCst);
        assert!((1..=3).contains(&trips), "{trips} round trips for 50 callers");
    }

    /// Callers arriving without pause on several threads: a waiter woken by
    /// a catch-up's end must find the right to run the next one free.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_on_several_threads_never_hang() {
        let coalesced = Arc::new(Coalesced::default());
        let mut callers = Vec::new();
        for _ in 0..16 {
            let coalesced = Arc::clone(&coalesced);
            callers.push(tokio::spawn(async move {
                for _ in 0..300 {
                    coalesced
                        .run(|| async {
                            tokio::task::yield_now().await;
                            Ok(())
                        })
                        .await
                        .unwrap();
                }
            }));
        }
        let all = async {
            for caller in callers {
                caller.await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(20), all)
            .await
            .expect("every caller finishes");
    }

    #[tokio::test]
    async fn a_caller_never_takes_a_catch_up_already_in_flight_when_it_arrived() {
        let coalesced = Arc::new(Coalesced::default());
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let first = {
            let coalesced = Arc::clone(&coalesced);
            tokio::spawn(async move {
                coalesced
                    .run(|| async {
                        let _ = wait.await;
                        Ok(())
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let ran_second = Arc::new(AtomicUsize::new(0));
        let second = {
            let (coalesced, ran_second) = (Arc::clone(&coalesced), Arc::clone(&ran_second));
            tokio::spawn(async move {
                coalesced
                    .run(|| async {
                        ran_second.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.send(()).unwrap();
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
        assert_eq!(ran_second.load(Ordering::SeqCst), 1, "the second caller ran its own");
    }

    #[tokio::test]
    async fn a_failure_fails_its_runner_and_waiters_try_again() {
        let coalesced = Arc::new(Coalesced::default());
        let failing = {
            let coalesced = Arc::clone(&coalesced);
            tokio::spawn(async move {
                coalesced
                    .run(|| async {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        Err(Error::Store {
                            action: "test",
                            source: "down".into(),
                        })
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiting = coalesced.run(|| async { Ok(()) }).await;
        assert!(waiting.is_ok(), "the waiter ran its own after the failure");
        assert!(failing.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn a_cancelled_runner_wakes_its_waiters() {
        let coalesced = Arc::new(Coalesced::default());
        let runner = {
            let coalesced = Arc::clone(&coalesced);
            tokio::spawn(async move { coalesced.run(std::future::pending::<Result<(), Error>>).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiter = {
            let coalesced = Arc::clone(&coalesced);
            tokio::spawn(async move { coalesced.run(|| async { Ok(()) }).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        runner.abort();
        let outcome = tokio::time::timeout(Duration::from_secs(2), waiter).await;
        assert!(outcome.expect("the waiter is not left hanging").unwrap().is_ok());
    }
}

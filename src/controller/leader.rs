//! Leader election on a `coordination.k8s.io/v1` Lease: only the holder runs
//! the controllers; every replica serves the registry API and health.
//!
//! [`decide`] is pure: given what the Lease says, the time and who we are, it
//! says whether to acquire, renew or wait. [`LeaderElection`] carries that
//! out with optimistic concurrency: every write sends the `resourceVersion`
//! it read, so of two candidates racing for a free Lease one gets 409 and
//! waits. This module knows nothing of the controllers.
//!
//! # Caveats
//! Expiry compares the holder's `renewTime` with our own clock, so clocks
//! must agree to well within the lease duration (as on any Kubernetes node).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::PostParams;

/// What the Lease says, as far as the decision goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// `holderIdentity`; `None` (or empty) when released.
    pub holder: Option<String>,
    /// `renewTime`.
    pub renewed: Option<Timestamp>,
    /// `leaseDurationSeconds`.
    pub duration: Duration,
}

/// What a candidate should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Take the Lease: it is absent, released, or expired.
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds it and it has not expired.
    Wait,
}

/// Decides from the Lease (`None`: absent), the time and our identity.
pub fn decide(lease: Option<&Held>, now: Timestamp, identity: &str) -> Decision {
    let Some(lease) = lease else {
        return Decision::Acquire;
    };
    match lease.holder.as_deref() {
        None | Some("") => Decision::Acquire,
        Some(holder) if holder == identity => Decision::Renew,
        Some(_) => {
            let duration = SignedDuration::try_from(lease.duration).unwrap_or(SignedDuration::MAX);
            let expired = lease
                .renewed
                .is_none_or(|renewed| renewed.checked_add(duration).is_ok_and(|expiry| expiry < now));
            if expired { Decision::Acquire } else { Decision::Wait }
        }
    }
}

/// How the election is run.
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace.
    pub lease_namespace: String,
    /// Who we are (the pod name, or hostname and PID).
    pub identity: String,
    /// How long a Lease holds without renewal.
    pub lease_duration: Duration,
    /// How often the holder renews (and a candidate retries).
    pub renew_period: Duration,
}

/// Why leadership ended.
#[derive(Debug, thiserror::Error)]
pub enum Lost {
    /// Another candidate holds the Lease now.
    #[error("another replica took the lease {lease}")]
    TakenOver {
        /// The Lease's name.
        lease: String,
    },
    /// Renewal kept failing until the deadline.
    #[error("failed to renew the lease {lease} before its deadline")]
    RenewalFailed {
        /// The Lease's name.
        lease: String,
        /// The last failure.
        #[source]
        source: kube::Error,
    },
}

/// A candidate for one Lease.
pub struct LeaderElection {
    api: Api<Lease>,
    config: ElectionConfig,
}

impl LeaderElection {
    /// A candidate on `client`.
    pub fn new(client: kube::Client, config: ElectionConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.lease_namespace),
            config,
        }
    }

    /// Our identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Reads the Lease, decides, and writes: `Ok(true)` when we hold it
    /// afterwards, `Ok(false)` when someone else does (a 409 included).
    ///
    /// # Errors
    /// The API server could not be read or written.
    async fn attempt(&self) -> Result<bool, kube::Error> {
        let name = &self.config.lease_name;
        let current = self.api.get_opt(name).await?;
        let held = current.as_ref().map(held);
        let now = Timestamp::now();
        let decision = decide(held.as_ref(), now, &self.config.identity);
        tracing::trace!(?decision, lease = %name, "Leader election");
        let write = match (decision, current) {
            (Decision::Wait, _) => return Ok(false),
            (_, None) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.config.lease_namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(now, None)),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            (decision, Some(mut lease)) => {
                let previous = lease.spec.take().unwrap_or_default();
                lease.spec = Some(match decision {
                    Decision::Renew => LeaseSpec {
                        renew_time: Some(MicroTime(now)),
                        lease_duration_seconds: Some(seconds(self.config.lease_duration)),
                        ..previous
                    },
                    _ => self.spec(now, Some(&previous)),
                });
                // Keeps the resourceVersion read: a concurrent write makes this a 409.
                self.api.replace(name, &PostParams::default(), &lease).await
            }
        };
        match write {
            Ok(_) => {
                if decision == Decision::Acquire {
                    tracing::info!(lease = %name, identity = %self.config.identity, "Acquired the leader lease");
                }
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// A fresh holding by us, counting one more transition than `previous`.
    fn spec(&self, now: Timestamp, previous: Option<&LeaseSpec>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(seconds(self.config.lease_duration)),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(
                previous
                    .and_then(|spec| spec.lease_transitions)
                    .map_or(0, |transitions| transitions.saturating_add(1)),
            ),
            ..LeaseSpec::default()
        }
    }

    /// Waits until we hold the Lease.
    pub async fn acquire(&self) {
        loop {
            match self.attempt().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    "Cannot read or write the leader lease; retrying"
                ),
            }
            tokio::time::sleep(self.config.renew_period).await;
        }
    }

    /// Renews the Lease every renew period; returns when leadership is lost:
    /// someone else holds it, or renewal failed for longer than the lease
    /// duration less one renew period (so we stop before it can expire).
    pub async fn hold(&self) -> Lost {
        let deadline = self.config.lease_duration.saturating_sub(self.config.renew_period);
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.config.renew_period).await;
            match self.attempt().await {
                Ok(true) => renewed = tokio::time::Instant::now(),
                Ok(false) => {
                    return Lost::TakenOver {
                        lease: self.config.lease_name.clone(),
                    };
                }
                Err(source) if renewed.elapsed() >= deadline => {
                    return Lost::RenewalFailed {
                        lease: self.config.lease_name.clone(),
                        source,
                    };
                }
                Err(error) => tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    "Cannot renew the leader lease; retrying"
                ),
            }
        }
    }

    /// Gives the Lease up (clears `holderIdentity`) if we hold it, so a
    /// successor takes over at once rather than after expiry.
    pub async fn release(&self) {
        let name = &self.config.lease_name;
        let result = async {
            let Some(mut lease) = self.api.get_opt(name).await? else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            self.api.replace(name, &PostParams::default(), &lease).await.map(|_| ())
        }
        .await;
        match result {
            Ok(()) => tracing::info!(lease = %name, "Released the leader lease"),
            Err(error) => tracing::warn!(
                error = &error as &dyn std::error::Error,
                "Could not release the leader lease; it expires on its own"
            ),
        }
    }
}

fn held(lease: &Lease) -> Held {
    let spec = lease.spec.clone().unwrap_or_default();
    Held {
        holder: spec.holder_identity,
        renewed: spec.renew_time.map(|time| time.0),
        duration: Duration::from_secs(spec.lease_duration_seconds.map_or(0, |s| u64::try_from(s).unwrap_or(0))),
    }
}

fn seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)
}

/// Our identity: `POD_NAME` (the downward API), else the hostname and PID.
pub fn default_identity() -> String {
    if let Some(pod) = std::env::var("POD_NAME").ok().filter(|name| !name.is_empty()) {
        return pod;
    }
    let hostname = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "schemaops".to_owned());
    format!("{hostname}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn held_by(holder: Option<&str>, renewed: Option<i64>) -> Held {
        Held {
            holder: holder.map(str::to_owned),
            renewed: renewed.map(at),
            duration: Duration::from_secs(15),
        }
    }

    #[test]
    fn an_absent_lease_is_acquired() {
        assert_eq!(decide(None, at(1000), "me"), Decision::Acquire);
    }

    #[test]
    fn a_released_lease_is_acquired_at_once() {
        assert_eq!(
            decide(Some(&held_by(None, Some(999))), at(1000), "me"),
            Decision::Acquire
        );
        assert_eq!(
            decide(Some(&held_by(Some(""), Some(999))), at(1000), "me"),
            Decision::Acquire
        );
    }

    #[test]
    fn our_own_lease_is_renewed_even_when_expired() {
        assert_eq!(
            decide(Some(&held_by(Some("me"), Some(999))), at(1000), "me"),
            Decision::Renew
        );
        assert_eq!(
            decide(Some(&held_by(Some("me"), Some(0))), at(1000), "me"),
            Decision::Renew
        );
    }

    #[test]
    fn another_holders_lease_is_waited_for_until_it_expires() {
        let lease = held_by(Some("other"), Some(1000));
        assert_eq!(decide(Some(&lease), at(1010), "me"), Decision::Wait);
        assert_eq!(decide(Some(&lease), at(1015), "me"), Decision::Wait, "expiry is strict");
        assert_eq!(decide(Some(&lease), at(1016), "me"), Decision::Acquire);
    }

    #[test]
    fn a_held_lease_never_renewed_counts_as_expired() {
        assert_eq!(
            decide(Some(&held_by(Some("other"), None)), at(1000), "me"),
            Decision::Acquire
        );
    }
}

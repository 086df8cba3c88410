//! Kubernetes Events about the objects the controllers reconcile, written as
//! kube-runtime's `Recorder` writes them (`events.k8s.io/v1`; a repeat within
//! six minutes counts on the first Event's `series`), in bounded memory.
//!
//! kube's `Recorder` keeps every Event of the last six minutes, whole, and
//! sweeps them all on each publish: with 10,000 Schemas that is tens of
//! megabytes, and each publish costs as much as the cache holds. A repeat only
//! needs where the first Event is and how often it was seen, so that is all
//! [`Publisher`] keeps, under a 128-bit digest of the event's identity, for
//! at most [`CAPACITY`] series; the series first seen longest ago gives way
//! to a new one. A forgotten series costs a new Event where a count would
//! have gone up, no more.
//!
//! This module knows how to write Events, not when: the controllers decide that.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash as _;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use siphasher::sip128::{Hasher128 as _, SipHasher13};

/// How long after its last sighting a repeat still counts on an Event
/// (kube's `Recorder` and client-go use six minutes as well).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// The most series remembered at once.
pub const CAPACITY: usize = 4_096;

/// Publishes Events for one reporting controller; cheap to share behind an `Arc`.
pub struct Publisher {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<Series>,
}

impl Publisher {
    /// A publisher reporting as `controller`, from this host (the pod's name
    /// in a cluster), as kube's `Recorder` does.
    pub fn new(client: Client, controller: &str) -> Self {
        let instance = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| controller.to_owned());
        Self::with_instance(client, controller, &instance)
    }

    /// A publisher reporting as `controller` from `instance`.
    pub fn with_instance(client: Client, controller: &str, instance: &str) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: instance.to_owned(),
            series: Mutex::new(Series::default()),
        }
    }

    /// Publishes `event` about `regarding`: a new Event, or, when the same
    /// event was published within six minutes, one more in that Event's
    /// series (a merge patch of `series.count` and `series.lastObservedTime`).
    ///
    /// # Errors
    ///
    /// The API server's refusal of the create or patch. A series whose
    /// Event is gone (404) is not an error: a new Event starts it again.
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = Key::of(event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events = Api::<K8sEvent>::namespaced(self.client.clone(), namespace);
        let repeat = self.lock().repeat(key, now);
        if let Some(repeat) = repeat {
            let patch = serde_json::json!({
                "series": {"count": repeat.count, "lastObservedTime": MicroTime(now)},
            });
            match events
                .patch(&repeat.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.lock().seen(key, &repeat.name, repeat.count, now);
                    return Ok(());
                }
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        let created = events
            .create(&PostParams::default(), &self.new_event(event, regarding, now))
            .await?;
        let name = created.metadata.name.unwrap_or_default();
        self.lock().seen(key, &name, 1, now);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The Event that starts a series, with the fields kube's `Recorder` sets.
    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let name = regarding.name.as_deref().unwrap_or(&self.controller);
        K8sEvent {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: regarding.namespace.clone(),
                ..ObjectMeta::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            type_: Some(type_name(event.type_).to_owned()),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..K8sEvent::default()
        }
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// A 128-bit digest of what makes two events the same: the object they
/// regard (not its resourceVersion, which every status write changes), the
/// related object, reason, action, note and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key(u128);

impl Key {
    fn of(event: &Event, regarding: &ObjectReference) -> Self {
        let mut hasher = SipHasher13::new();
        for reference in [Some(regarding), event.secondary.as_ref()] {
            reference
                .map(|reference| {
                    (
                        &reference.api_version,
                        &reference.kind,
                        &reference.namespace,
                        &reference.name,
                        &reference.uid,
                        &reference.field_path,
                    )
                })
                .hash(&mut hasher);
        }
        (&event.reason, &event.action, &event.note, type_name(event.type_)).hash(&mut hasher);
        Self(hasher.finish128().as_u128())
    }
}

/// Where a series' Event is and how often it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sighting {
    name: String,
    count: i32,
    last: Timestamp,
}

/// The next occurrence of a series: its Event's name and the count to write.
#[derive(Debug, PartialEq, Eq)]
struct Repeat {
    name: String,
    count: i32,
}

/// The series remembered, at most [`CAPACITY`], with the order they were
/// first seen in (a repeat does not touch the order, so it never grows).
#[derive(Debug, Default)]
struct Series {
    by_key: HashMap<Key, Sighting>,
    first_seen: VecDeque<Key>,
}

impl Series {
    /// The repeat `key` would be at `now`, if its series is remembered and
    /// was last seen within the window.
    fn repeat(&self, key: Key, now: Timestamp) -> Option<Repeat> {
        let sighting = self.by_key.get(&key)?;
        (now.duration_since(sighting.last) < SERIES_WINDOW).then(|| Repeat {
            name: sighting.name.clone(),
            count: sighting.count.saturating_add(1),
        })
    }

    /// Records that the series `key` is Event `name`, seen `count` times, last at `now`.
    fn seen(&mut self, key: Key, name: &str, count: i32, now: Timestamp) {
        if let Some(sighting) = self.by_key.get_mut(&key) {
            if sighting.name != name {
                name.clone_into(&mut sighting.name);
            }
            sighting.count = count;
            sighting.last = now;
            return;
        }
        if self.first_seen.len() >= CAPACITY
            && let Some(oldest) = self.first_seen.pop_front()
        {
            self.by_key.remove(&oldest);
        }
        self.first_seen.push_back(key);
        self.by_key.insert(
            key,
            Sighting {
                name: name.to_owned(),
                count,
                last: now,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("schemaops.dev/v1alpha1".to_owned()),
            kind: Some("Schema".to_owned()),
            namespace: Some("default".to_owned()),
            name: Some(name.to_owned()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.to_owned(),
            note: Some(note.to_owned()),
            action: "Reconcile".to_owned(),
            secondary: None,
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn key(index: usize) -> Key {
        Key::of(
            &event("Registered", "version 1"),
            &reference(&format!("schema-{index}")),
        )
    }

    #[test]
    fn the_same_event_about_the_same_object_has_the_same_key_whatever_its_resource_version() {
        let mut later = reference("orders");
        later.resource_version = Some("42".to_owned());
        let registered = event("Registered", "version 1");
        assert_eq!(Key::of(&registered, &reference("orders")), Key::of(&registered, &later));
    }

    #[test]
    fn another_object_reason_note_action_or_type_is_another_series() {
        let base = Key::of(&event("Registered", "version 1"), &reference("orders"));
        let mut warning = event("Registered", "version 1");
        warning.type_ = EventType::Warning;
        let mut action = event("Registered", "version 1");
        action.action = "Delete".to_owned();
        let mut recreated = reference("orders");
        recreated.uid = Some("another".to_owned());
        let others = [
            Key::of(&event("Registered", "version 1"), &reference("payments")),
            Key::of(&event("Rejected", "version 1"), &reference("orders")),
            Key::of(&event("Registered", "version 2"), &reference("orders")),
            Key::of(&warning, &reference("orders")),
            Key::of(&action, &reference("orders")),
            Key::of(&event("Registered", "version 1"), &recreated),
        ];
        for other in others {
            assert_ne!(other, base);
        }
    }

    #[test]
    fn a_repeat_within_six_minutes_counts_on_the_first_event() {
        let mut series = Series::default();
        assert_eq!(series.repeat(key(0), at(0)), None);
        series.seen(key(0), "orders.1", 1, at(0));
        let second = series.repeat(key(0), at(60)).unwrap();
        assert_eq!(
            second,
            Repeat {
                name: "orders.1".to_owned(),
                count: 2
            }
        );
        series.seen(key(0), &second.name, second.count, at(60));
        // The window runs from the last sighting, not the first.
        let third = series.repeat(key(0), at(60 + 359)).unwrap();
        assert_eq!(third.count, 3);
        assert_eq!(series.repeat(key(0), at(60 + 360)), None);
        assert_eq!(series.repeat(key(1), at(60)), None);
    }

    #[test]
    fn a_series_started_again_points_at_its_new_event() {
        let mut series = Series::default();
        series.seen(key(0), "orders.1", 5, at(0));
        series.seen(key(0), "orders.2", 1, at(1_000));
        assert_eq!(
            series.repeat(key(0), at(1_001)),
            Some(Repeat {
                name: "orders.2".to_owned(),
                count: 2
            })
        );
        assert_eq!(series.first_seen.len(), 1);
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity_and_forgets_the_oldest_series_first() {
        let mut series = Series::default();
        for index in 0..CAPACITY + 100 {
            series.seen(key(index), "event", 1, at(0));
            // Repeats neither add series nor grow the age queue.
            series.seen(key(index), "event", 2, at(1));
        }
        assert_eq!(series.by_key.len(), CAPACITY);
        assert_eq!(series.first_seen.len(), CAPACITY);
        assert_eq!(series.repeat(key(99), at(2)), None, "among the first 100: forgotten");
        assert!(series.repeat(key(100), at(2)).is_some());
        assert!(series.repeat(key(CAPACITY + 99), at(2)).is_some());
    }
}

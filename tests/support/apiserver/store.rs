//! One generic store for every kind, keyed by (group, plural, namespace, name), with a
//! global resourceVersion counter and a bounded history of changes for watches.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Value, json};

use super::apply::FieldPath;
use super::time;

/// How many changes watches can replay.
pub const HISTORY: usize = 10_000;

/// Where an object is kept. Versions of one kind share storage.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The API group ("" for core).
    pub group: String,
    /// The plural.
    pub plural: String,
    /// The namespace ("" for cluster-scoped objects).
    pub namespace: String,
    /// The name.
    pub name: String,
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

impl ChangeKind {
    /// The watch event type.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One change, as watches replay it.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion the change made.
    pub revision: u64,
    /// Added, modified or deleted.
    pub kind: ChangeKind,
    /// Which object.
    pub key: ObjectKey,
    /// The object after the change (the last state for a deletion).
    pub object: Value,
    /// The object before the change, for a modification.
    pub previous: Option<Value>,
}

/// Every object, the global resourceVersion and the change history.
#[derive(Debug)]
pub struct Store {
    objects: BTreeMap<ObjectKey, Value>,
    revision: u64,
    history: VecDeque<Change>,
    /// The newest revision no longer in the history: watches from before it are expired.
    compacted: u64,
    /// Field paths each apply manager last applied, by (object, manager, subresource).
    pub managers: BTreeMap<(ObjectKey, String, String), BTreeSet<FieldPath>>,
    next_uid: u64,
}

impl Store {
    /// A store holding the namespaces `default` and `kube-system`.
    pub fn new() -> Store {
        let mut store = Store {
            objects: BTreeMap::new(),
            revision: 0,
            history: VecDeque::new(),
            compacted: 0,
            managers: BTreeMap::new(),
            next_uid: 0,
        };
        for name in ["default", "kube-system", "kube-public"] {
            let revision = store.next_revision();
            let uid = store.new_uid();
            let namespace = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "uid": uid,
                    "resourceVersion": revision.to_string(),
                    "creationTimestamp": time::now_rfc3339(),
                    "labels": {"kubernetes.io/metadata.name": name},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            store.objects.insert(namespace_key(name), namespace);
        }
        store.compacted = store.revision;
        store
    }

    /// The current global resourceVersion.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Takes the next resourceVersion.
    pub fn next_revision(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }

    /// A new, unique uid shaped like a UUID.
    pub fn new_uid(&mut self) -> String {
        self.next_uid += 1;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or(0);
        let mixed = nanos ^ self.next_uid.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (mixed >> 32) as u32,
            (mixed >> 16) as u16,
            (mixed & 0xfff) as u16,
            (self.next_uid & 0xfff) as u16,
            self.next_uid & 0xffff_ffff_ffff
        )
    }

    /// The object at `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Every object of one kind, in one namespace or all, in (namespace, name) order.
    pub fn list(&self, group: &str, plural: &str, namespace: Option<&str>) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|(key, _)| {
                key.group == group
                    && key.plural == plural
                    && namespace.is_none_or(|namespace| key.namespace == namespace)
            })
            .map(|(_, object)| object)
            .collect()
    }

    /// The keys of the objects that pass `keep`.
    pub fn keys_where(&self, keep: impl Fn(&ObjectKey, &Value) -> bool) -> Vec<ObjectKey> {
        self.objects
            .iter()
            .filter(|(key, object)| keep(key, object))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Stores an object and records the change. The object must carry `revision`.
    pub fn put(&mut self, key: ObjectKey, object: Value, revision: u64) {
        let previous = self.objects.insert(key.clone(), object.clone());
        let kind = if previous.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        self.record(Change {
            revision,
            kind,
            key,
            object,
            previous,
        });
    }

    /// Removes an object; `last` is its final state (with the deletion's resourceVersion).
    pub fn remove(&mut self, key: &ObjectKey, last: Value, revision: u64) {
        let previous = self.objects.remove(key);
        self.managers.retain(|(object, _, _), _| object != key);
        self.record(Change {
            revision,
            kind: ChangeKind::Deleted,
            key: key.clone(),
            object: last,
            previous,
        });
    }

    fn record(&mut self, change: Change) {
        self.history.push_back(change);
        while self.history.len() > HISTORY {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.revision;
            }
        }
    }

    /// The changes after `revision`, or `None` when the history no longer reaches back that far.
    pub fn changes_since(&self, revision: u64) -> Option<Vec<Change>> {
        if revision < self.compacted {
            return None;
        }
        let start = self.history.partition_point(|change| change.revision <= revision);
        Some(self.history.iter().skip(start).cloned().collect())
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

/// The key of a namespace object.
pub fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        plural: "namespaces".into(),
        namespace: String::new(),
        name: name.into(),
    }
}

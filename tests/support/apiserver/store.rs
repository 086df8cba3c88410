//! One generic store for every kind, keyed by (group, plural, namespace, name), with a
//! global resourceVersion counter and a bounded history of changes for watches.
//!
//! Lists read one key range (not every object), and the history holds shared changes, so a
//! watch that wakes takes references rather than copies: at 10,000 objects and tens of thousands
//! of changes, neither a list nor a watch costs in proportion to the whole store.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use super::apply::FieldPath;
use super::resources::{self, CRD_GROUP, CRD_PLURAL, Resource};
use super::time;

/// How many changes watches can replay. A real API server keeps about five minutes of etcd
/// history; a burst of 10,000 objects (each created, finalized, given a status and an event)
/// makes more than 40,000 changes in well under that, so the window is larger than that.
pub const HISTORY: usize = 200_000;

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
    history: VecDeque<Arc<Change>>,
    /// The newest revision no longer in the history: watches from before it are expired.
    compacted: u64,
    /// Field paths each apply manager last applied, by (object, manager, subresource).
    pub managers: BTreeMap<(ObjectKey, String, String), BTreeSet<FieldPath>>,
    next_uid: u64,
    /// The resources the CRDs define, rebuilt when a CRD changes: every request looks its
    /// resource up, and reading it from the CRD each time would copy the CRD's schema.
    crd_resources: Vec<Resource>,
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
            crd_resources: Vec::new(),
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
        // Keys sort by (group, plural, namespace, name): one kind, or one kind in one namespace,
        // is a contiguous range starting at the empty name.
        let start = ObjectKey {
            group: group.to_owned(),
            plural: plural.to_owned(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(|(key, _)| {
                key.group == group
                    && key.plural == plural
                    && namespace.is_none_or(|namespace| key.namespace == namespace)
            })
            .map(|(_, object)| object)
            .collect()
    }

    /// The resources the CRDs define, in CRD name order.
    pub fn crd_resources(&self) -> &[Resource] {
        &self.crd_resources
    }

    /// The apply managers of one object: ((object, manager, subresource), owned paths).
    pub fn managers_of<'a>(
        &'a self,
        key: &'a ObjectKey,
    ) -> impl Iterator<Item = (&'a (ObjectKey, String, String), &'a BTreeSet<FieldPath>)> + 'a {
        self.managers
            .range((key.clone(), String::new(), String::new())..)
            .take_while(move |((object, _, _), _)| object == key)
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
        let managers: Vec<_> = self.managers_of(key).map(|(owner, _)| owner.clone()).collect();
        for owner in managers {
            self.managers.remove(&owner);
        }
        self.record(Change {
            revision,
            kind: ChangeKind::Deleted,
            key: key.clone(),
            object: last,
            previous,
        });
    }

    fn record(&mut self, change: Change) {
        if change.key.group == CRD_GROUP && change.key.plural == CRD_PLURAL {
            self.crd_resources = self
                .list(CRD_GROUP, CRD_PLURAL, None)
                .into_iter()
                .flat_map(resources::from_crd)
                .collect();
        }
        self.history.push_back(Arc::new(change));
        while self.history.len() > HISTORY {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.revision;
            }
        }
    }

    /// The changes after `revision` that pass `keep`, or `None` when the history no longer
    /// reaches back that far.
    pub fn changes_since(&self, revision: u64, keep: impl Fn(&Change) -> bool) -> Option<Vec<Arc<Change>>> {
        if revision < self.compacted {
            return None;
        }
        let start = self.history.partition_point(|change| change.revision <= revision);
        Some(
            self.history
                .range(start..)
                .filter(|change| keep(change))
                .cloned()
                .collect(),
        )
    }

    /// The newest revision in the history after `revision` (`revision` when there is none).
    pub fn last_change_after(&self, revision: u64) -> u64 {
        self.history
            .back()
            .map_or(revision, |change| change.revision.max(revision))
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

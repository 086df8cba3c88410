//! Which Schemas claim which subject, kept from the watch that wakes a
//! Schema's rivals and referrers when it changes.
//!
//! That watch used to scan every cached Schema for each change it saw: with
//! 10,000 Schemas and several changes each, the scans were most of the
//! operator's work. The index answers from the few Schemas that name the
//! subjects involved. It is fed by that watch alone, so it has seen every
//! Schema the watch has reported; a Schema gone without the finalizer may
//! linger in it, which costs no more than a wasted wake-up (the controller
//! skips references to objects it does not hold).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::ResourceExt as _;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::crd::Schema;

/// The Schemas by the subject they claim, and by the subjects their references name.
///
/// Kept small, as it holds an entry for every Schema: the references are
/// bare (namespace and name, without the resourceVersion and UID the watch
/// gives), and a subject's Schemas are a `Vec`, as most subjects have one
/// (a one-element `HashSet` of references took half a kilobyte).
#[derive(Debug, Default)]
pub(super) struct Claims {
    by_subject: HashMap<String, Vec<ObjectRef<Schema>>>,
    subject_of: HashMap<ObjectRef<Schema>, String>,
    referrers: HashMap<String, Vec<ObjectRef<Schema>>>,
    references_of: HashMap<ObjectRef<Schema>, Vec<String>>,
}

/// Adds `key` to the Schemas listed under `subject`, once.
fn list_under(index: &mut HashMap<String, Vec<ObjectRef<Schema>>>, subject: &str, key: &ObjectRef<Schema>) {
    match index.get_mut(subject) {
        Some(listed) if !listed.contains(key) => listed.push(key.clone()),
        Some(_) => {}
        // Room for one: a first push would make room for four.
        None => {
            index.insert(subject.to_owned(), vec![key.clone()]);
        }
    }
}

/// Removes `key` from the Schemas listed under `subject`, and the subject when none is left.
fn unlist_under(index: &mut HashMap<String, Vec<ObjectRef<Schema>>>, subject: &str, key: &ObjectRef<Schema>) {
    if let Some(listed) = index.get_mut(subject) {
        listed.retain(|listed| listed != key);
        if listed.is_empty() {
            index.remove(subject);
        }
    }
}

/// The bare reference to `schema`: namespace and name.
fn bare_ref(schema: &Schema) -> ObjectRef<Schema> {
    let key = ObjectRef::<Schema>::new(&schema.name_any());
    match schema.namespace() {
        Some(namespace) => key.within(&namespace),
        None => key,
    }
}

/// The cached Schemas that claim `subject` or refer to it: what a view of
/// the subject reads. Taken from the index when it holds as many Schemas as
/// the cache (it has seen the initial list, and no deletion it missed makes
/// it lag), else from a scan of the whole cache, as before the index; a
/// Schema the index has not seen yet is one the cache may lack as well, and
/// its arrival wakes its rivals again.
pub(super) fn schemas_naming(store: &Store<Schema>, claims: &Mutex<Claims>, subject: &str) -> Vec<Arc<Schema>> {
    let keys = {
        let claims = claims.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (claims.subject_of.len() == store.len()).then(|| claims.naming(subject))
    };
    match keys {
        Some(keys) => keys.iter().filter_map(|key| store.get(key)).collect(),
        None => store.state_filter(|schema| {
            schema.spec.subject == subject
                || schema
                    .spec
                    .references
                    .iter()
                    .any(|reference| reference.subject == subject)
        }),
    }
}

impl Claims {
    /// The Schemas that claim `subject` or whose references name it.
    fn naming(&self, subject: &str) -> Vec<ObjectRef<Schema>> {
        let mut keys: Vec<ObjectRef<Schema>> = [&self.by_subject, &self.referrers]
            .into_iter()
            .filter_map(|index| index.get(subject))
            .flatten()
            .cloned()
            .collect();
        keys.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        keys.dedup();
        keys
    }

    /// Records `changed` (or its deletion) and returns the other Schemas to
    /// wake: those claiming its subject, and those claiming a subject its
    /// references name.
    pub(super) fn observe(&mut self, changed: &Schema) -> Vec<ObjectRef<Schema>> {
        let key = bare_ref(changed);
        // Deleted: marked for deletion with no finalizer left (the last state a watch reports).
        let deleted = changed.metadata.deletion_timestamp.is_some() && changed.finalizers().is_empty();
        let claimed = (!deleted).then_some(changed.spec.subject.as_str());
        if self.subject_of.get(&key).map(String::as_str) != claimed {
            if let Some(previous) = self.subject_of.remove(&key) {
                unlist_under(&mut self.by_subject, &previous, &key);
            }
            if let Some(subject) = claimed {
                list_under(&mut self.by_subject, subject, &key);
                self.subject_of.insert(key.clone(), subject.to_owned());
            }
        }
        let referenced: Vec<String> = if deleted {
            Vec::new()
        } else {
            changed
                .spec
                .references
                .iter()
                .map(|reference| reference.subject.clone())
                .collect()
        };
        if self.references_of.get(&key).map_or(&[][..], Vec::as_slice) != referenced.as_slice() {
            for previous in self.references_of.remove(&key).unwrap_or_default() {
                unlist_under(&mut self.referrers, &previous, &key);
            }
            for subject in &referenced {
                list_under(&mut self.referrers, subject, &key);
            }
            if !referenced.is_empty() {
                self.references_of.insert(key.clone(), referenced);
            }
        }
        let mut subjects: Vec<&str> = vec![changed.spec.subject.as_str()];
        subjects.extend(
            changed
                .spec
                .references
                .iter()
                .map(|reference| reference.subject.as_str()),
        );
        subjects.sort_unstable();
        subjects.dedup();
        subjects
            .into_iter()
            .filter_map(|subject| self.by_subject.get(subject))
            .flatten()
            .filter(|other| **other != key)
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{SchemaReferenceSpec, SchemaSpec};

    fn schema(name: &str, subject: &str, references: &[&str]) -> Schema {
        let mut schema = Schema::new(
            name,
            SchemaSpec {
                metadata: None,
                rule_set: None,
                subject: subject.to_owned(),
                registry_ref: None,
                schema_type: Default::default(),
                schema: Some("\"string\"".to_owned()),
                schema_from: None,
                references: references
                    .iter()
                    .map(|subject| SchemaReferenceSpec {
                        name: format!("{subject}.avsc"),
                        subject: (*subject).to_owned(),
                        version: 1,
                    })
                    .collect(),
                deletion_policy: Default::default(),
                management_policy: Default::default(),
            },
        );
        schema.metadata.namespace = Some("default".to_owned());
        schema
    }

    fn names(mut refs: Vec<ObjectRef<Schema>>) -> Vec<String> {
        refs.sort_by(|a, b| a.name.cmp(&b.name));
        refs.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn a_change_wakes_the_rivals_for_its_subject_and_the_owners_of_what_it_refers_to() {
        let mut claims = Claims::default();
        assert!(claims.observe(&schema("a", "s", &[])).is_empty());
        assert_eq!(names(claims.observe(&schema("b", "s", &[]))), ["a"]);
        assert!(claims.observe(&schema("t", "t", &[])).is_empty());
        assert_eq!(
            names(claims.observe(&schema("user", "u", &["s", "t"]))),
            ["a", "b", "t"]
        );
        // Itself never, however often it changes.
        assert_eq!(names(claims.observe(&schema("a", "s", &[]))), ["b"]);
    }

    #[test]
    fn naming_a_subject_are_its_claimants_and_referrers() {
        let mut claims = Claims::default();
        claims.observe(&schema("a", "s", &[]));
        claims.observe(&schema("user", "u", &["s"]));
        claims.observe(&schema("other", "t", &[]));
        assert_eq!(names(claims.naming("s")), ["a", "user"]);
        claims.observe(&schema("user", "u", &[]));
        assert_eq!(names(claims.naming("s")), ["a"]);
        assert!(claims.naming("nothing").is_empty());
    }

    #[test]
    fn a_subject_referred_to_twice_lists_its_referrer_once_and_drops_it_once() {
        let mut claims = Claims::default();
        claims.observe(&schema("user", "u", &["s", "s"]));
        assert_eq!(names(claims.naming("s")), ["user"]);
        assert_eq!(claims.referrers["s"].len(), 1);
        claims.observe(&schema("user", "u", &[]));
        assert!(claims.naming("s").is_empty());
        assert!(claims.referrers.is_empty());
    }

    #[test]
    fn a_schema_that_moves_or_goes_stops_claiming() {
        let mut claims = Claims::default();
        claims.observe(&schema("a", "s", &[]));
        claims.observe(&schema("b", "other", &[]));
        claims.observe(&schema("b", "s", &[]));
        claims.observe(&schema("b", "moved", &[]));
        assert!(claims.observe(&schema("c", "s", &[])).iter().all(|r| r.name == "a"));
        let mut gone = schema("a", "s", &[]);
        gone.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert_eq!(names(claims.observe(&gone)), ["c"]);
        assert_eq!(names(claims.observe(&schema("d", "s", &[]))), ["c"]);
        assert!(claims.observe(&schema("e", "other", &[])).is_empty());
    }
}

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

use std::collections::{HashMap, HashSet};

use kube::ResourceExt as _;
use kube::runtime::reflector::ObjectRef;

use crate::crd::Schema;

/// The Schemas by the subject they claim.
#[derive(Debug, Default)]
pub(super) struct Claims {
    by_subject: HashMap<String, HashSet<ObjectRef<Schema>>>,
    subject_of: HashMap<ObjectRef<Schema>, String>,
}

impl Claims {
    /// Records `changed` (or its deletion) and returns the other Schemas to
    /// wake: those claiming its subject, and those claiming a subject its
    /// references name.
    pub(super) fn observe(&mut self, changed: &Schema) -> Vec<ObjectRef<Schema>> {
        let key = ObjectRef::from_obj(changed);
        // Deleted: marked for deletion with no finalizer left (the last state a watch reports).
        let deleted = changed.metadata.deletion_timestamp.is_some() && changed.finalizers().is_empty();
        let claimed = (!deleted).then(|| changed.spec.subject.clone());
        if self.subject_of.get(&key) != claimed.as_ref() {
            if let Some(previous) = self.subject_of.remove(&key)
                && let Some(claimants) = self.by_subject.get_mut(&previous)
            {
                claimants.remove(&key);
                if claimants.is_empty() {
                    self.by_subject.remove(&previous);
                }
            }
            if let Some(subject) = claimed {
                self.by_subject.entry(subject.clone()).or_default().insert(key.clone());
                self.subject_of.insert(key.clone(), subject);
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

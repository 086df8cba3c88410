//! Which `Schema` objects manage a subject, and their state, when the
//! operator serves the pages: read from the operator's cache of Schema
//! objects, never from the API server, so a page costs no Kubernetes call.
//! `schemaops registry --data` on a folder `apply` wrote reads the objects
//! `apply` kept there ([`AppliedObjects`]); otherwise it shows none.

use std::path::PathBuf;

use kube::ResourceExt as _;
use kube::runtime::reflector::Store;

use crate::crd::Schema;

/// The Schema objects of a subject, as some cache knows them.
pub trait Owners: Send + Sync {
    /// Every Schema object whose spec names `subject`, sorted by namespace and name.
    fn of_subject(&self, subject: &str) -> Vec<Owner>;
}

/// One Schema object and what its status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `namespace/name`.
    pub object: String,
    /// The version of the subject its status says holds its schema.
    pub version: Option<u32>,
    /// Ready, Stalled or neither yet.
    pub state: OwnerState,
    /// The incompatibilities of its last check, each as `KIND at PATH (version N): message`.
    pub incompatibilities: Vec<String>,
    /// How many incompatibilities there are in all (the status keeps at most 20).
    pub total: usize,
    /// What a SchemaPolicy whose action is Warn found (its `PolicyWarning`
    /// condition), when one did; a refusing policy makes the object Stalled.
    pub policy_warning: Option<String>,
}

/// The state a Schema object's conditions give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerState {
    /// `Ready=True`.
    Ready,
    /// `Stalled=True`, with the condition's reason and message.
    Stalled {
        /// The condition's reason, e.g. `IncompatibleSchema`.
        reason: String,
        /// The condition's message.
        message: String,
    },
    /// Neither: not yet reconciled, or being reconciled.
    Pending,
}

/// What one Schema object says about `subject`, if its spec names it.
pub fn owner(schema: &Schema, subject: &str) -> Option<Owner> {
    // A Schema bound to a registry connection lives in that registry, not in the one these pages show.
    if schema.spec.subject != subject || schema.spec.registry_ref.is_some() {
        return None;
    }
    let status = schema.status.clone().unwrap_or_default();
    let condition = |wanted: &str| {
        status
            .conditions
            .iter()
            .find(|condition| condition.type_ == wanted && condition.status == "True")
    };
    let state = if condition("Ready").is_some() {
        OwnerState::Ready
    } else if let Some(stalled) = condition("Stalled") {
        OwnerState::Stalled {
            reason: stalled.reason.clone(),
            message: stalled.message.clone(),
        }
    } else {
        OwnerState::Pending
    };
    let compatibility = status.compatibility.unwrap_or_default();
    Some(Owner {
        object: format!("{}/{}", schema.namespace().unwrap_or_default(), schema.name_any()),
        version: status
            .version
            .filter(|_| status.subject.as_deref() == Some(subject))
            .and_then(|version| u32::try_from(version).ok()),
        state,
        incompatibilities: compatibility
            .incompatibilities
            .iter()
            .map(|found| {
                format!(
                    "{} at {} (version {}): {}",
                    found.kind, found.path, found.version, found.message
                )
            })
            .collect(),
        total: usize::try_from(compatibility.total).unwrap_or(0),
        policy_warning: condition("PolicyWarning").map(|warning| warning.message.clone()),
    })
}

/// The Schema objects `apply` kept in a data folder (its `objects.json`),
/// read afresh for each page, so a later `apply` shows without a restart.
#[derive(Debug, Clone)]
pub struct AppliedObjects {
    folder: PathBuf,
}

impl AppliedObjects {
    /// The objects of `folder`, when `apply` left any there.
    pub fn in_folder(folder: impl Into<PathBuf>) -> Option<Self> {
        let folder = folder.into();
        folder
            .join(crate::local::objects::FILE_NAME)
            .is_file()
            .then_some(Self { folder })
    }
}

impl Owners for AppliedObjects {
    fn of_subject(&self, subject: &str) -> Vec<Owner> {
        let objects = match crate::local::objects::Objects::load(&self.folder) {
            Ok(objects) => objects,
            Err(error) => {
                tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    "The applied objects cannot be read"
                );
                return Vec::new();
            }
        };
        let mut found: Vec<Owner> = objects
            .schemas
            .iter()
            .filter_map(|schema| owner(schema, subject))
            .collect();
        found.sort_by(|a, b| a.object.cmp(&b.object));
        found
    }
}

impl Owners for Store<Schema> {
    fn of_subject(&self, subject: &str) -> Vec<Owner> {
        let mut found: Vec<Owner> = self
            .state()
            .iter()
            .filter_map(|schema| owner(schema, subject))
            .collect();
        found.sort_by(|a, b| a.object.cmp(&b.object));
        found
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    use super::*;
    use crate::crd::{CompatibilityStatus, IncompatibilityStatus, SchemaStatus};

    fn schema(subject: &str, status: SchemaStatus) -> Schema {
        let mut schema: Schema = serde_json::from_value(serde_json::json!({
            "apiVersion": "schemaops.dev/v1alpha1",
            "kind": "Schema",
            "metadata": {"name": "platonic-solid", "namespace": "default"},
            "spec": {"subject": subject, "schemaType": "AVRO", "schema": "\"int\""},
        }))
        .expect("a Schema");
        schema.status = Some(status);
        schema
    }

    fn condition(kind: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: kind.to_owned(),
            status: "True".to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: Time(Default::default()),
            observed_generation: None,
        }
    }

    #[test]
    fn a_stalled_schema_says_which_version_it_holds_and_why_it_is_stalled() {
        let status = SchemaStatus {
            subject: Some("platonic-solid-value".to_owned()),
            version: Some(2),
            conditions: vec![condition("Stalled", "IncompatibleSchema", "refused under BACKWARD")],
            compatibility: Some(CompatibilityStatus {
                mode: "BACKWARD".to_owned(),
                checked_versions: vec![2],
                incompatibilities: vec![IncompatibilityStatus {
                    kind: "READER_FIELD_MISSING_DEFAULT_VALUE".to_owned(),
                    path: "/fields/3".to_owned(),
                    version: 2,
                    message: "field `edges` was added without a default".to_owned(),
                }],
                total: 1,
            }),
            ..SchemaStatus::default()
        };
        let found = owner(&schema("platonic-solid-value", status), "platonic-solid-value").unwrap();
        assert_eq!(found.object, "default/platonic-solid");
        assert_eq!(found.version, Some(2));
        assert_eq!(
            found.state,
            OwnerState::Stalled {
                reason: "IncompatibleSchema".to_owned(),
                message: "refused under BACKWARD".to_owned()
            }
        );
        assert_eq!(
            found.incompatibilities,
            ["READER_FIELD_MISSING_DEFAULT_VALUE at /fields/3 (version 2): field `edges` was added without a default"]
        );
    }

    #[test]
    fn a_schema_of_another_subject_or_registry_is_not_an_owner_and_a_new_one_is_pending() {
        assert!(owner(&schema("other", SchemaStatus::default()), "platonic-solid-value").is_none());
        let mut elsewhere = schema("s", SchemaStatus::default());
        elsewhere.spec.registry_ref = Some(crate::crd::RegistryRef {
            kind: crate::crd::RegistryKind::SchemaRegistry,
            name: "team-registry".to_owned(),
        });
        assert!(
            owner(&elsewhere, "s").is_none(),
            "issue 40: it lives in another registry"
        );
        let fresh = owner(&schema("s", SchemaStatus::default()), "s").unwrap();
        assert_eq!((fresh.version, fresh.state), (None, OwnerState::Pending));
        let ready = SchemaStatus {
            subject: Some("s".to_owned()),
            version: Some(1),
            conditions: vec![condition("Ready", "Registered", "")],
            ..SchemaStatus::default()
        };
        assert_eq!(owner(&schema("s", ready), "s").unwrap().state, OwnerState::Ready);
    }
}

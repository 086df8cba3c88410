//! Who manages a subject: among the Schemas (and the SubjectConfigs) that
//! name it, the one that already holds it keeps it; when none holds it yet,
//! the oldest wins. The holder is recorded in the resource's own status
//! (`status.subject`), so ownership survives restarts of the operator.

use std::fmt;

use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;

use crate::crd::{ResourceKind, Schema, SchemaType, SubjectConfig, SubjectConfigSpec};

/// A namespaced resource's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a resource from its metadata.
    pub fn of(metadata: &ObjectMeta) -> Self {
        Self {
            namespace: metadata.namespace.clone().unwrap_or_default(),
            name: metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A resource that names a subject, as the rules on who may claim it see it.
#[derive(Debug, Clone, Copy)]
pub struct Claimant<'a> {
    /// Its kind.
    pub kind: ResourceKind,
    /// Its namespace and name.
    pub key: &'a ObjectKey,
    /// A Schema's type; `None` for a SubjectConfig, which has none. A
    /// policy that matches only some schema types judges only their claims.
    pub schema_type: Option<SchemaType>,
}

/// One resource's claim on a subject.
#[derive(Debug, Clone)]
struct Claim {
    key: ObjectKey,
    holds: bool,
    created: Option<Timestamp>,
}

/// The claim that manages the subject: a holder first (the oldest if, after
/// a race, several hold it), then the oldest claim; ties by namespace/name.
fn winner(claims: Vec<Claim>) -> Option<ObjectKey> {
    claims
        .into_iter()
        .min_by(|a, b| {
            (!a.holds, a.created.is_none(), a.created, &a.key).cmp(&(!b.holds, b.created.is_none(), b.created, &b.key))
        })
        .map(|claim| claim.key)
}

fn created(metadata: &ObjectMeta) -> Option<Timestamp> {
    metadata.creation_timestamp.as_ref().map(|time| time.0)
}

/// What the rest of the cluster says about one subject.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubjectView {
    /// The Schema that manages the subject's versions.
    pub schema_owner: Option<ObjectKey>,
    /// The SubjectConfig that manages the subject's settings.
    pub config_owner: Option<ObjectKey>,
    /// That SubjectConfig's spec.
    pub config: Option<SubjectConfigSpec>,
    /// The Schemas whose references name the subject, sorted.
    pub referrers: Vec<ObjectKey>,
}

impl SubjectView {
    /// Gathers the view of `subject` from every Schema and SubjectConfig known.
    pub fn of<'a>(
        subject: &str,
        schemas: impl IntoIterator<Item = &'a Schema>,
        configs: impl IntoIterator<Item = &'a SubjectConfig>,
    ) -> Self {
        Self::of_claimable(subject, schemas, configs, |_| true)
    }

    /// [`of`](Self::of), counting only the claims `may_claim` accepts: a
    /// resource a policy forbids the subject never manages it, however old
    /// its claim.
    pub fn of_claimable<'a>(
        subject: &str,
        schemas: impl IntoIterator<Item = &'a Schema>,
        configs: impl IntoIterator<Item = &'a SubjectConfig>,
        may_claim: impl Fn(&Claimant<'_>) -> bool,
    ) -> Self {
        let mut schema_claims = Vec::new();
        let mut referrers = Vec::new();
        for schema in schemas {
            // Most resources name another subject: their keys are not built (this runs over
            // every Schema known, for each reconcile).
            if schema.spec.subject == subject {
                let key = ObjectKey::of(&schema.metadata);
                let claimant = Claimant {
                    kind: ResourceKind::Schema,
                    key: &key,
                    schema_type: Some(schema.spec.schema_type),
                };
                if may_claim(&claimant) {
                    schema_claims.push(Claim {
                        key,
                        holds: schema.status.as_ref().and_then(|s| s.subject.as_deref()) == Some(subject),
                        created: created(&schema.metadata),
                    });
                }
            }
            if schema
                .spec
                .references
                .iter()
                .any(|reference| reference.subject == subject)
            {
                referrers.push(ObjectKey::of(&schema.metadata));
            }
        }
        referrers.sort();
        let mut config_claims = Vec::new();
        let mut specs = Vec::new();
        for config in configs {
            if config.spec.subject != subject {
                continue;
            }
            let key = ObjectKey::of(&config.metadata);
            let claimant = Claimant {
                kind: ResourceKind::SubjectConfig,
                key: &key,
                schema_type: None,
            };
            if may_claim(&claimant) {
                config_claims.push(Claim {
                    key: key.clone(),
                    holds: config.status.as_ref().and_then(|s| s.subject.as_deref()) == Some(subject),
                    created: created(&config.metadata),
                });
                specs.push((key, config.spec.clone()));
            }
        }
        let config_owner = winner(config_claims);
        let config = config_owner
            .as_ref()
            .and_then(|owner| specs.into_iter().find(|(key, _)| key == owner).map(|(_, spec)| spec));
        Self {
            schema_owner: winner(schema_claims),
            config_owner,
            config,
            referrers,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::crd::{SchemaReferenceSpec, SchemaSpec, SchemaStatus};

    fn schema(namespace: &str, name: &str, subject: &str, created_at: i64, holds: bool) -> Schema {
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
                references: Vec::new(),
                deletion_policy: Default::default(),
                management_policy: Default::default(),
            },
        );
        schema.metadata.namespace = Some(namespace.to_owned());
        schema.metadata.creation_timestamp = Some(Time(Timestamp::from_second(created_at).unwrap()));
        if holds {
            schema.status = Some(SchemaStatus {
                subject: Some(subject.to_owned()),
                ..Default::default()
            });
        }
        schema
    }

    fn key(namespace: &str, name: &str) -> ObjectKey {
        ObjectKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    #[test]
    fn the_oldest_claim_wins_when_nobody_holds_the_subject() {
        let schemas = [
            schema("b", "late", "s", 20, false),
            schema("a", "early", "s", 10, false),
        ];
        let view = SubjectView::of("s", &schemas, []);
        assert_eq!(view.schema_owner, Some(key("a", "early")));
    }

    #[test]
    fn the_holder_keeps_the_subject_even_when_an_older_claim_appears() {
        let schemas = [
            schema("b", "holder", "s", 20, true),
            schema("a", "older", "s", 10, false),
        ];
        let view = SubjectView::of("s", &schemas, []);
        assert_eq!(view.schema_owner, Some(key("b", "holder")));
    }

    #[test]
    fn ties_are_broken_by_namespace_and_name() {
        let schemas = [schema("b", "x", "s", 10, false), schema("a", "x", "s", 10, false)];
        assert_eq!(SubjectView::of("s", &schemas, []).schema_owner, Some(key("a", "x")));
    }

    #[test]
    fn referrers_are_the_schemas_whose_references_name_the_subject() {
        let mut referring = schema("a", "user", "t", 10, true);
        referring.spec.references.push(SchemaReferenceSpec {
            name: "com.example.Address".to_owned(),
            subject: "s".to_owned(),
            version: 1,
        });
        let schemas = [schema("a", "owner", "s", 5, true), referring];
        let view = SubjectView::of("s", &schemas, []);
        assert_eq!(view.referrers, vec![key("a", "user")]);
        assert_eq!(view.schema_owner, Some(key("a", "owner")));
    }
}

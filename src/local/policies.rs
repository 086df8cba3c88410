//! The policies `apply` and `check` judge with: the stored SchemaPolicies,
//! those of `--policy` files (in force for one run, never stored), and the
//! namespaces they may select, gathered into one [`PolicyContext`].

use std::path::PathBuf;
use std::sync::Arc;

use super::manifests::{self, Manifest, ManifestError, Origin};
use super::objects::Objects;
use crate::controller::judge::{NamespaceLabels, PolicyContext};
use crate::crd::SchemaPolicy;
use crate::policy::{InvalidPolicy, PolicySet};

/// Why the policies of a run cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// A `--policy` path could not be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// A `--policy` document is not a SchemaPolicy.
    #[error("{origin}: a --policy file holds SchemaPolicy documents only, not {kind}")]
    NotAPolicy {
        /// Where it is.
        origin: Origin,
        /// Its kind.
        kind: &'static str,
    },
    /// Some policy cannot be used: nothing is judged with a policy set that
    /// silently lost a rule.
    #[error("{}", invalid.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// Every invalid policy with its problems.
        invalid: Vec<InvalidPolicy>,
    },
}

/// Reads the SchemaPolicies of `paths` (files or folders).
///
/// # Errors
/// [`PolicyError`] when a path is unreadable or holds another kind.
pub fn load(paths: &[PathBuf]) -> Result<Vec<SchemaPolicy>, PolicyError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    manifests::load(paths)?
        .into_iter()
        .map(|(origin, manifest)| match manifest {
            Manifest::SchemaPolicy(policy) => Ok(*policy),
            Manifest::Schema(_) => Err(not_a_policy(origin, "Schema")),
            Manifest::SubjectConfig(_) => Err(not_a_policy(origin, "SubjectConfig")),
            Manifest::ConfigMap(_) => Err(not_a_policy(origin, "ConfigMap")),
            Manifest::Namespace(_) => Err(not_a_policy(origin, "Namespace")),
        })
        .collect()
}

fn not_a_policy(origin: Origin, kind: &'static str) -> PolicyError {
    PolicyError::NotAPolicy { origin, kind }
}

/// The policies in force over `objects`: the stored ones, replaced by name
/// by those of `extra`; and every namespace known, with its labels (a
/// namespace of a stored object without a Namespace has none).
///
/// # Errors
/// [`PolicyError::Invalid`] naming every invalid policy and its problems.
pub fn context(objects: &Objects, extra: &[SchemaPolicy]) -> Result<PolicyContext, PolicyError> {
    let name = |policy: &SchemaPolicy| policy.metadata.name.clone().unwrap_or_default();
    let stored = objects
        .schema_policies
        .iter()
        .filter(|policy| extra.iter().all(|other| name(other) != name(policy)));
    let specs: Vec<(String, &SchemaPolicy)> = stored.chain(extra).map(|policy| (name(policy), policy)).collect();
    let set = PolicySet::compile(specs.iter().map(|(name, policy)| (name.as_str(), &policy.spec)));
    if !set.invalid().is_empty() {
        return Err(PolicyError::Invalid {
            invalid: set.invalid().to_vec(),
        });
    }
    Ok(PolicyContext::new(Arc::new(set), Arc::new(namespaces(objects))))
}

/// Every namespace known: the Namespaces with their labels, then the
/// namespaces of the stored objects.
fn namespaces(objects: &Objects) -> NamespaceLabels {
    let mut known: NamespaceLabels = objects
        .namespaces
        .iter()
        .map(|namespace| {
            (
                namespace.metadata.name.clone().unwrap_or_default(),
                namespace.metadata.labels.clone().unwrap_or_default(),
            )
        })
        .collect();
    let used = objects
        .schemas
        .iter()
        .map(|schema| &schema.metadata)
        .chain(objects.subject_configs.iter().map(|config| &config.metadata))
        .chain(objects.config_maps.iter().map(|config_map| &config_map.metadata))
        .filter_map(|metadata| metadata.namespace.clone());
    for namespace in used {
        known.entry(namespace).or_default();
    }
    known
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::ObjectMeta;

    use super::*;
    use crate::crd::{SchemaPolicySpec, SubjectConfig, SubjectConfigSpec};

    fn policy(name: &str, spec: SchemaPolicySpec) -> SchemaPolicy {
        let mut policy = SchemaPolicy::new(name, spec);
        policy.metadata.namespace = None;
        policy
    }

    #[test]
    fn namespaces_of_objects_without_a_namespace_manifest_are_known_without_labels() {
        let mut objects = Objects::default();
        objects.namespaces.push(Namespace {
            metadata: ObjectMeta {
                name: Some("team-a".to_owned()),
                labels: Some([("env".to_owned(), "prod".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        });
        let mut config = SubjectConfig::new(
            "c",
            SubjectConfigSpec {
                subject: "team-b.c".to_owned(),
                compatibility: None,
                contract: Default::default(),
                mode: None,
                management_policy: Default::default(),
            },
        );
        config.metadata.namespace = Some("team-b".to_owned());
        objects.subject_configs.push(config);
        let known = namespaces(&objects);
        assert_eq!(known["team-a"]["env"], "prod");
        assert!(known["team-b"].is_empty());
    }

    #[test]
    fn an_invalid_policy_is_an_error_naming_it_and_its_problems() {
        let spec = SchemaPolicySpec {
            validation_actions: Vec::new(),
            ..SchemaPolicySpec::default()
        };
        let error = context(&Objects::default(), &[policy("empty", spec)]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "SchemaPolicy empty is invalid: spec.validationActions: name at least one of Deny, Warn, Audit"
        );
    }

    #[test]
    fn a_policy_file_replaces_the_stored_policy_of_the_same_name() {
        let invalid = SchemaPolicySpec {
            validation_actions: Vec::new(),
            ..SchemaPolicySpec::default()
        };
        let mut objects = Objects::default();
        objects.schema_policies.push(policy("prod", invalid));
        let valid = policy(
            "prod",
            SchemaPolicySpec {
                validation_actions: vec![crate::crd::ValidationAction::Deny],
                ..SchemaPolicySpec::default()
            },
        );
        let context = context(&objects, &[valid]).unwrap();
        assert_eq!(context.policies.policies().len(), 1);
    }
}

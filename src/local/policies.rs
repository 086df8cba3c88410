//! The policies `apply` and `check` judge with: the stored SchemaPolicies,
//! those of `--policy` files (in force for one run, never stored), and the
//! namespaces they may select, gathered into one [`PolicyContext`]. The
//! namespaces' labels come from Namespace manifests (among the manifests or
//! in `--policy` files, e.g. `kubectl get namespaces -o yaml` saved from the
//! cluster) and `--namespace-labels`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;

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
    /// A `--policy` document is not a SchemaPolicy or a Namespace.
    #[error("{origin}: a --policy file holds SchemaPolicy and Namespace documents only, not {kind}")]
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

/// What a run judges with besides the stored objects: the policies of
/// `--policy` files and the namespaces whose labels were given (in those
/// files or with `--namespace-labels`). None of it is stored.
#[derive(Debug, Clone, Default)]
pub struct RunPolicies {
    /// The SchemaPolicies.
    pub policies: Vec<SchemaPolicy>,
    /// The Namespaces, with their labels.
    pub namespaces: Vec<Namespace>,
    /// Whether objects of a namespace whose labels are unknown to a policy
    /// that selects by label are an error (`--require-namespace-labels`)
    /// rather than a warning.
    pub require_namespace_labels: bool,
}

/// Reads the SchemaPolicies and Namespaces of `paths` (files or folders),
/// then adds the namespaces of `labels` (`--namespace-labels`).
///
/// # Errors
/// [`PolicyError`] when a path is unreadable or holds another kind.
pub fn load(paths: &[PathBuf], labels: &[NamespaceLabelsArg]) -> Result<RunPolicies, PolicyError> {
    load_with(paths, labels, false)
}

/// [`load`], refusing unknown namespace labels when `require_namespace_labels`.
///
/// # Errors
/// As [`load`].
pub fn load_with(
    paths: &[PathBuf],
    labels: &[NamespaceLabelsArg],
    require_namespace_labels: bool,
) -> Result<RunPolicies, PolicyError> {
    let mut run = RunPolicies {
        require_namespace_labels,
        ..RunPolicies::default()
    };
    if !paths.is_empty() {
        for (origin, manifest) in manifests::load(paths)? {
            match manifest {
                Manifest::SchemaPolicy(policy) => run.policies.push(*policy),
                Manifest::Namespace(namespace) => run.namespaces.push(*namespace),
                Manifest::Schema(_) => return Err(not_a_policy(origin, "Schema")),
                Manifest::SubjectConfig(_) => return Err(not_a_policy(origin, "SubjectConfig")),
                Manifest::ConfigMap(_) => return Err(not_a_policy(origin, "ConfigMap")),
                Manifest::SchemaRegistry(_) => return Err(not_a_policy(origin, "SchemaRegistry")),
                Manifest::ClusterSchemaRegistry(_) => return Err(not_a_policy(origin, "ClusterSchemaRegistry")),
            }
        }
    }
    run.namespaces
        .extend(labels.iter().map(NamespaceLabelsArg::to_namespace));
    Ok(run)
}

/// One `--namespace-labels NAMESPACE:KEY=VALUE,KEY=VALUE`: the labels a
/// namespace has in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceLabelsArg {
    /// The namespace.
    pub namespace: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl std::str::FromStr for NamespaceLabelsArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (namespace, pairs) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}` is not NAMESPACE:KEY=VALUE[,KEY=VALUE…]"))?;
        if namespace.is_empty() {
            return Err(format!("`{text}` names no namespace before the `:`"));
        }
        let mut labels = BTreeMap::new();
        for pair in pairs.split(',').filter(|pair| !pair.trim().is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` in `{text}` is not KEY=VALUE"))?;
            labels.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        Ok(Self {
            namespace: namespace.to_owned(),
            labels,
        })
    }
}

impl NamespaceLabelsArg {
    /// The Namespace object these labels describe.
    fn to_namespace(&self) -> Namespace {
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(self.namespace.clone());
        namespace.metadata.labels = Some(self.labels.clone());
        namespace
    }
}

fn not_a_policy(origin: Origin, kind: &'static str) -> PolicyError {
    PolicyError::NotAPolicy { origin, kind }
}

/// The policies in force over `objects`: the stored ones, replaced by name
/// by those of `extra`; and every namespace known, with its labels (those of
/// `extra` win; a namespace of a stored object without a Namespace has none).
///
/// # Errors
/// [`PolicyError::Invalid`] naming every invalid policy and its problems.
pub fn context(objects: &Objects, extra: &RunPolicies) -> Result<PolicyContext, PolicyError> {
    let name = |policy: &SchemaPolicy| policy.metadata.name.clone().unwrap_or_default();
    let stored = objects
        .schema_policies
        .iter()
        .filter(|policy| extra.policies.iter().all(|other| name(other) != name(policy)));
    let specs: Vec<(String, &SchemaPolicy)> = stored
        .chain(&extra.policies)
        .map(|policy| (name(policy), policy))
        .collect();
    let set = PolicySet::compile(specs.iter().map(|(name, policy)| (name.as_str(), &policy.spec)));
    if !set.invalid().is_empty() {
        return Err(PolicyError::Invalid {
            invalid: set.invalid().to_vec(),
        });
    }
    Ok(PolicyContext::new(
        Arc::new(set),
        Arc::new(namespaces(objects, &extra.namespaces)),
    ))
}

/// The namespaces of `judged` whose labels are unknown (no Namespace
/// manifest, in the objects or in `extra`, names them), when some policy in
/// `context` selects namespaces by label: such a policy cannot be judged for
/// them as the cluster would, so the caller warns (or refuses, when asked to).
/// Each with the names of those policies.
pub fn unlabelled<'a>(
    context: &PolicyContext,
    objects: &Objects,
    extra: &RunPolicies,
    judged: impl IntoIterator<Item = &'a str>,
) -> Vec<(String, Vec<String>)> {
    let selecting: Vec<String> = context
        .policies
        .policies()
        .iter()
        .filter(|policy| policy.selects_namespaces_by_label())
        .map(|policy| policy.name().to_owned())
        .collect();
    if selecting.is_empty() {
        return Vec::new();
    }
    let labelled: BTreeSet<&str> = objects
        .namespaces
        .iter()
        .chain(&extra.namespaces)
        .filter_map(|namespace| namespace.metadata.name.as_deref())
        .collect();
    let unknown: BTreeSet<&str> = judged.into_iter().filter(|name| !labelled.contains(name)).collect();
    unknown
        .into_iter()
        .map(|name| (name.to_owned(), selecting.clone()))
        .collect()
}

/// Every namespace known: the Namespaces with their labels (`extra`'s
/// replacing stored ones of the same name), then the namespaces of the
/// stored objects.
pub(crate) fn namespaces(objects: &Objects, extra: &[Namespace]) -> NamespaceLabels {
    let mut known: NamespaceLabels = objects
        .namespaces
        .iter()
        .chain(extra)
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
                registry_ref: None,
                compatibility: None,
                contract: Default::default(),
                mode: None,
                management_policy: Default::default(),
            },
        );
        config.metadata.namespace = Some("team-b".to_owned());
        objects.subject_configs.push(config);
        let known = namespaces(&objects, &[]);
        assert_eq!(known["team-a"]["env"], "prod");
        assert!(known["team-b"].is_empty());
    }

    #[test]
    fn an_invalid_policy_is_an_error_naming_it_and_its_problems() {
        let spec = SchemaPolicySpec {
            validation_actions: Vec::new(),
            ..SchemaPolicySpec::default()
        };
        let run = RunPolicies {
            policies: vec![policy("empty", spec)],
            ..RunPolicies::default()
        };
        let error = context(&Objects::default(), &run).unwrap_err();
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
        let run = RunPolicies {
            policies: vec![valid],
            ..RunPolicies::default()
        };
        let context = context(&objects, &run).unwrap();
        assert_eq!(context.policies.policies().len(), 1);
    }
}

//! `check`: what applying the manifests would do, found by applying them to
//! a scratch registry and objects folder ([`super::scratch`]) and comparing
//! each object's status and its subject's versions and settings before and
//! after. [`render`] prints the result as a table, a JSON document, or
//! GitHub Actions workflow commands.
//!
//! Classification and rendering are pure; only [`check`] and the subject
//! observations read the scratch registry. Nothing here writes anywhere but
//! the scratch.

mod classify;
pub mod render;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;

use super::manifests::{Manifest, Origin};
use super::objects::Objects;
use super::policies::RunPolicies;
use super::run::{Applied, ApplyError, Registries, config_scope, schema_scope};
use crate::compat::{Checker, Mode};
use crate::connections::RegistryScope;
use crate::controller::view::ObjectKey;
use crate::crd::{IncompatibilityStatus, ResourceKind};
pub use classify::{classify_schema, classify_subject_config};
use classify::{drift_of, new_versions, policy_warning_of};
pub use render::{escape_data, escape_property, render_github, render_json, render_table, tally};

use crate::registry::{Error as RegistryError, Registry, RegistryMode, SubjectName, VersionFilter};

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The manifests could not be applied to the scratch copy.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The scratch registry failed while the manifests were applied to it.
    #[error("the scratch registry failed at {pending}: {error}")]
    Interrupted {
        /// The edit being applied.
        pending: String,
        /// What the registry said.
        error: String,
    },
    /// The scratch registry could not be read.
    #[error("failed to read subject `{subject}` from the scratch registry")]
    Observe {
        /// The subject.
        subject: String,
        /// What the registry said.
        #[source]
        source: RegistryError,
    },
}

/// A subject as the registry holds it: its live versions and its own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectState {
    /// The live version numbers, ascending.
    pub versions: Vec<u32>,
    /// The subject's own compatibility level.
    pub compatibility: Option<Mode>,
    /// The subject's own mode.
    pub mode: Option<RegistryMode>,
}

/// A setting a SubjectConfig would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingChange {
    /// `compatibility` or `mode`.
    pub setting: &'static str,
    /// The subject's own value now (`None`: it has none; the global one applies).
    pub from: Option<String>,
    /// The value it would have.
    pub to: Option<String>,
}

impl SettingChange {
    /// "would set compatibility FORWARD", or "would remove compatibility".
    pub fn describe(&self) -> String {
        match &self.to {
            Some(value) => format!("would set {} {value}", self.setting),
            None => format!("would remove {}", self.setting),
        }
    }
}

/// What applying one object would do.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing: the subject already holds exactly this schema, or these settings are in force.
    Unchanged,
    /// The spec equals an earlier version the Schema registered itself (a
    /// git revert): nothing is registered, and a later version stays the
    /// subject's latest.
    Revert {
        /// The earlier version the spec equals.
        version: u32,
        /// The subject's latest version, which stays.
        latest: u32,
    },
    /// The schema would become this new version of its subject.
    Register {
        /// The version.
        version: u32,
    },
    /// The SubjectConfig would change the subject's settings.
    Configure {
        /// The changes.
        changes: Vec<SettingChange>,
    },
    /// The object would not be applied: Ready would be False.
    Rejected {
        /// The Ready condition's reason, e.g. `IncompatibleSchema`.
        reason: String,
        /// The Ready condition's message (it names every incompatibility).
        message: String,
        /// The incompatibilities in the status (at most 20 are listed there).
        incompatibilities: Vec<IncompatibilityStatus>,
        /// How many incompatibilities there are in all.
        total: usize,
    },
    /// The scratch run could not decide (Ready is Unknown or missing).
    Undecided {
        /// The reason given, or `NotReconciled`.
        reason: String,
        /// The message given.
        message: String,
    },
}

impl Outcome {
    /// A word for machines: unchanged, revert, register, configure, rejected, undecided.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Unchanged => "unchanged",
            Outcome::Revert { .. } => "revert",
            Outcome::Register { .. } => "register",
            Outcome::Configure { .. } => "configure",
            Outcome::Rejected { .. } => "rejected",
            Outcome::Undecided { .. } => "undecided",
        }
    }
}

/// One object's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Schema or SubjectConfig.
    pub kind: ResourceKind,
    /// Its namespace and name.
    pub key: ObjectKey,
    /// The manifest document that last set it.
    pub origin: Origin,
    /// Its subject.
    pub subject: String,
    /// The version holding the schema after the run (Schemas only).
    pub version: Option<u32>,
    /// The version its status named before the run (Schemas only).
    pub previous_version: Option<u32>,
    /// Versions of the subject the run would create (several when one run
    /// holds successive edits of the Schema), ascending.
    pub new_versions: Vec<u32>,
    /// What would happen.
    pub outcome: Outcome,
    /// The subject holds versions registered outside schemaops after this
    /// Schema's (or lost the one holding it): the Drifted condition.
    pub drift: Option<Drift>,
    /// What a Warn policy says of the object (its `PolicyWarning=True`
    /// condition): reported, not a refusal.
    pub policy_warning: Option<String>,
}

/// A Schema's `Drifted=True` condition: reported, not a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// `RegisteredOutsideSchemaops` or `VersionDeletedOutsideSchemaops`.
    pub reason: String,
    /// What changed outside schemaops.
    pub message: String,
}

impl Checked {
    /// The result in a few words: `would register as version 3`.
    pub fn summary(&self) -> String {
        match &self.outcome {
            Outcome::Unchanged => match (self.version, self.previous_version) {
                (Some(version), Some(previous)) if previous != version => {
                    format!("unchanged (version {version}; the Schema was on version {previous})")
                }
                (Some(version), _) => format!("unchanged (version {version})"),
                (None, _) => "unchanged".to_owned(),
            },
            Outcome::Revert { version, latest } => {
                format!("would revert to version {version}; version {latest} stays the subject's latest")
            }
            Outcome::Register { version } => {
                let earlier: Vec<u32> = self.new_versions.iter().copied().filter(|v| v != version).collect();
                if earlier.is_empty() {
                    format!("would register as version {version}")
                } else {
                    format!(
                        "would register as version {version} (after {})",
                        versions_phrase(&earlier)
                    )
                }
            }
            Outcome::Configure { changes } => changes
                .iter()
                .map(SettingChange::describe)
                .collect::<Vec<_>>()
                .join(", "),
            Outcome::Rejected { reason, .. } if self.new_versions.is_empty() => format!("would be rejected ({reason})"),
            Outcome::Rejected { reason, .. } => format!(
                "would be rejected ({reason}) after registering {}",
                versions_phrase(&self.new_versions)
            ),
            Outcome::Undecided { reason, .. } => format!("could not be checked ({reason})"),
        }
    }
}

/// "version 1" or "versions 1, 2".
fn versions_phrase(versions: &[u32]) -> String {
    let list: Vec<String> = versions.iter().map(u32::to_string).collect();
    let noun = if versions.len() == 1 { "version" } else { "versions" };
    format!("{noun} {}", list.join(", "))
}

/// How a whole check ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every object would be accepted.
    Accepted,
    /// Some object would be rejected.
    Rejected,
    /// Some object could not be judged.
    Undecided,
}

/// The verdict over every object: undecided wins over rejected.
pub fn verdict(checked: &[Checked]) -> Verdict {
    if checked.iter().any(|c| matches!(c.outcome, Outcome::Undecided { .. })) {
        Verdict::Undecided
    } else if checked.iter().any(|c| matches!(c.outcome, Outcome::Rejected { .. })) {
        Verdict::Rejected
    } else {
        Verdict::Accepted
    }
}

/// The subjects the Schemas and SubjectConfigs of `loaded` in the registry
/// `scope` name (valid names only), sorted.
///
/// These are the subjects a scratch registry seeded from that registry needs.
pub fn subjects_of(loaded: &[(Origin, Manifest)], scope: &RegistryScope) -> Vec<SubjectName> {
    subject_names(loaded)
        .iter()
        .filter(|(of, _)| of == scope)
        .filter_map(|(_, subject)| SubjectName::new(subject.as_str()).ok())
        .collect()
}

/// Whether a Schema of `loaded` carries metadata or a rule set, or a
/// SubjectConfig data-contract settings.
pub fn uses_contracts(loaded: &[(Origin, Manifest)]) -> bool {
    loaded.iter().any(|(_, manifest)| match manifest {
        Manifest::Schema(schema) => schema.spec.metadata.is_some() || schema.spec.rule_set.is_some(),
        Manifest::SubjectConfig(config) => !config.spec.contract.is_empty(),
        _ => false,
    })
}

/// The subjects the Schemas and SubjectConfigs of `loaded` name, as
/// written, each with its registry scope, sorted.
fn subject_names(loaded: &[(Origin, Manifest)]) -> Vec<(RegistryScope, String)> {
    let mut subjects: Vec<(RegistryScope, String)> = loaded
        .iter()
        .filter_map(|(_, manifest)| match manifest {
            Manifest::Schema(schema) => Some((schema_scope(schema), schema.spec.subject.clone())),
            Manifest::SubjectConfig(config) => Some((config_scope(config), config.spec.subject.clone())),
            _ => None,
        })
        .collect();
    subjects.sort();
    subjects.dedup();
    subjects
}

/// A subject as `registry` holds it; an unknown subject has no versions and no settings.
///
/// # Errors
/// [`CheckError::Observe`] when the registry fails otherwise.
pub async fn observe(registry: &dyn Registry, subject: &str) -> Result<SubjectState, CheckError> {
    let Ok(name) = SubjectName::new(subject) else {
        return Ok(SubjectState::default());
    };
    let failed = |source| CheckError::Observe {
        subject: subject.to_owned(),
        source,
    };
    let versions = match registry.versions(&name, VersionFilter::Live).await {
        Ok(versions) => versions.into_iter().map(|version| version.get()).collect(),
        Err(RegistryError::SubjectNotFound { .. }) => Vec::new(),
        Err(error) => return Err(failed(error)),
    };
    let compatibility = match registry.compatibility(Some(&name), false).await {
        Ok(level) => Some(level),
        Err(RegistryError::SubjectCompatibilityNotConfigured { .. } | RegistryError::SubjectNotFound { .. }) => None,
        Err(error) => return Err(failed(error)),
    };
    let mode = match registry.mode(Some(&name), false).await {
        Ok(mode) => Some(mode),
        Err(RegistryError::SubjectModeNotConfigured { .. } | RegistryError::SubjectNotFound { .. }) => None,
        Err(error) => return Err(failed(error)),
    };
    Ok(SubjectState {
        versions,
        compatibility,
        mode,
    })
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct CheckRun {
    /// Each Schema and SubjectConfig with what applying it would do, in the order `apply` reports them.
    pub checked: Vec<Checked>,
    /// Namespaces whose labels are unknown to a policy that selects by label, each with those policies.
    pub unlabelled: Vec<(String, Vec<String>)>,
}

/// The state of `subject` in the registry of `scope`, as far as this run can see it.
async fn observe_in(
    registries: &Registries<'_>,
    scope: &RegistryScope,
    subject: &str,
) -> Result<SubjectState, CheckError> {
    match registries.of(scope) {
        Some(bound) => observe(bound.registry, subject).await,
        None => Ok(SubjectState::default()),
    }
}

/// Applies the manifests `loaded` to the scratch objects in `data` and the
/// scratch `registries` (one per registry scope), and says what each Schema
/// and SubjectConfig would do, in the order `apply` reports them, judged by
/// the stored policies and `policies`.
///
/// # Errors
/// [`CheckError`] when a manifest is refused, or the scratch fails.
pub async fn check(
    loaded: &[(Origin, Manifest)],
    policies: &RunPolicies,
    data: &std::path::Path,
    registries: &Registries<'_>,
    checker: &Checker,
    now: &Time,
) -> Result<CheckRun, CheckError> {
    let objects_before = Objects::load(data).map_err(ApplyError::from)?;
    let subjects = subject_names(loaded);
    let mut before = Vec::with_capacity(subjects.len());
    for (scope, subject) in &subjects {
        before.push(observe_in(registries, scope, subject).await?);
    }
    let outcome = super::run::apply_loaded(loaded.to_vec(), policies, data, registries, checker, now).await?;
    if let Some(interruption) = outcome.interrupted {
        return Err(CheckError::Interrupted {
            pending: interruption.pending.to_string(),
            error: interruption.error,
        });
    }
    let applied = outcome.applied;
    let unlabelled = outcome.unlabelled;
    let mut after = Vec::with_capacity(subjects.len());
    for (scope, subject) in &subjects {
        after.push(observe_in(registries, scope, subject).await?);
    }
    let state = |states: &[SubjectState], scope: &RegistryScope, subject: &str| {
        subjects
            .iter()
            .position(|(in_scope, known)| in_scope == scope && known == subject)
            .map(|index| states[index].clone())
            .unwrap_or_default()
    };
    let origin_of = |kind: ResourceKind, key: &ObjectKey| {
        loaded
            .iter()
            .rev()
            .find(|(_, manifest)| match (kind, manifest) {
                (ResourceKind::Schema, Manifest::Schema(schema)) => ObjectKey::of(&schema.metadata) == *key,
                (ResourceKind::SubjectConfig, Manifest::SubjectConfig(config)) => {
                    ObjectKey::of(&config.metadata) == *key
                }
                _ => false,
            })
            .map(|(origin, _)| origin.clone())
            .expect("every applied object comes from a loaded manifest")
    };
    let mut checked = Vec::with_capacity(applied.len());
    for object in &applied {
        checked.push(match object {
            Applied::Schema(schema) => {
                let key = ObjectKey::of(&schema.metadata);
                let subject = schema.spec.subject.clone();
                let scope = schema_scope(schema);
                let (before_subject, after_subject) =
                    (state(&before, &scope, &subject), state(&after, &scope, &subject));
                let status = schema.status.as_ref();
                let previous = objects_before
                    .schemas
                    .iter()
                    .find(|stored| ObjectKey::of(&stored.metadata) == key)
                    .and_then(|stored| stored.status.as_ref()?.version);
                Checked {
                    kind: ResourceKind::Schema,
                    origin: origin_of(ResourceKind::Schema, &key),
                    outcome: classify_schema(status, &before_subject, &after_subject),
                    version: status.and_then(|s| s.version).and_then(|v| u32::try_from(v).ok()),
                    previous_version: previous.and_then(|v| u32::try_from(v).ok()),
                    new_versions: new_versions(&before_subject, &after_subject),
                    drift: drift_of(status),
                    policy_warning: status.and_then(|s| policy_warning_of(&s.conditions)),
                    key,
                    subject,
                }
            }
            Applied::SubjectConfig(config) => {
                let key = ObjectKey::of(&config.metadata);
                let subject = config.spec.subject.clone();
                let scope = config_scope(config);
                Checked {
                    kind: ResourceKind::SubjectConfig,
                    origin: origin_of(ResourceKind::SubjectConfig, &key),
                    outcome: classify_subject_config(
                        config.status.as_ref(),
                        &state(&before, &scope, &subject),
                        &state(&after, &scope, &subject),
                    ),
                    version: None,
                    previous_version: None,
                    new_versions: Vec::new(),
                    drift: None,
                    policy_warning: config.status.as_ref().and_then(|s| policy_warning_of(&s.conditions)),
                    key,
                    subject,
                }
            }
        });
    }
    Ok(CheckRun { checked, unlabelled })
}
#[cfg(test)]
pub(crate) mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    /// A Schema's result with `outcome`, for the renderers' tests too.
    pub(crate) fn checked(outcome: Outcome) -> Checked {
        Checked {
            kind: ResourceKind::Schema,
            key: ObjectKey {
                namespace: "default".to_owned(),
                name: "orders".to_owned(),
            },
            origin: Origin {
                path: "manifests/orders, v2.yaml".into(),
                document: 2,
                line: 14,
            },
            subject: "orders-value".to_owned(),
            version: Some(1),
            previous_version: Some(1),
            new_versions: Vec::new(),
            outcome,
            drift: None,
            policy_warning: None,
        }
    }

    #[test]
    fn the_verdict_is_undecided_over_rejected_over_accepted() {
        let rejected = checked(Outcome::Rejected {
            reason: "IncompatibleSchema".to_owned(),
            message: String::new(),
            incompatibilities: Vec::new(),
            total: 0,
        });
        let undecided = checked(Outcome::Undecided {
            reason: "RegistryUnavailable".to_owned(),
            message: String::new(),
        });
        let accepted = [checked(Outcome::Unchanged), checked(Outcome::Register { version: 2 })];
        assert_eq!(verdict(&accepted), Verdict::Accepted);
        assert_eq!(verdict(&[accepted[0].clone(), rejected.clone()]), Verdict::Rejected);
        assert_eq!(verdict(&[rejected, undecided]), Verdict::Undecided);
    }

    /// What `--registry-url` will do, with an embedded registry standing in
    /// for the remote one: seed a scratch from it, check, leave it untouched.
    #[tokio::test]
    async fn a_check_seeded_from_another_registry_numbers_versions_as_that_registry_would() {
        use std::sync::Arc;

        use crate::local::scratch::Scratch;
        use crate::registry::embedded::EmbeddedRegistry;
        use crate::registry::embedded::sqlite::SqliteStore;
        use crate::registry::{NewSchema, RegisterOptions, Version};

        let folder = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
        let source = EmbeddedRegistry::open(Arc::new(store), Checker::default())
            .await
            .unwrap();
        let subject = SubjectName::new("orders-value").unwrap();
        source.set_mode(None, RegistryMode::Import, true).await.unwrap();
        let v5 = NewSchema {
            contract: Default::default(),
            format: crate::compat::Format::Avro,
            text: r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#.to_owned(),
            references: Vec::new(),
        };
        let options = RegisterOptions {
            id: crate::registry::SchemaId::new(100),
            version: Some(Version::new(5).unwrap()),
            ..RegisterOptions::default()
        };
        source.register(&subject, &v5, options).await.unwrap();
        source.set_mode(None, RegistryMode::ReadWrite, true).await.unwrap();

        let manifests = folder.path().join("orders.yaml");
        let manifest = |name: &str, fields: &str| {
            format!(
                "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\nspec:\n  \
                 subject: orders-value\n  schema: '{{\"type\":\"record\",\"name\":\"R\",\"fields\":[{fields}]}}'\n"
            )
        };
        std::fs::write(
            &manifests,
            manifest(
                "orders",
                r#"{"name":"a","type":"int"},{"name":"b","type":"int","default":0}"#,
            ),
        )
        .unwrap();
        let loaded = super::super::manifests::load(std::slice::from_ref(&manifests)).unwrap();
        let scratch = Scratch::seeded(
            &source,
            &subjects_of(&loaded, &RegistryScope::Default),
            false,
            Checker::default(),
        )
        .await
        .unwrap();
        let now = Time(Timestamp::now());
        let view = scratch.view();
        let registries = Registries::single(&view);
        let checked = check(
            &loaded,
            &RunPolicies::default(),
            scratch.data(),
            &registries,
            &Checker::default(),
            &now,
        )
        .await
        .unwrap()
        .checked;
        assert_eq!(checked[0].outcome, Outcome::Register { version: 6 });
        assert_eq!(
            observe(&source, "orders-value").await.unwrap().versions,
            [5],
            "the source is only read"
        );
    }
}

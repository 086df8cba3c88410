//! One `apply` run: manifests into the stored objects (all or nothing),
//! then every SubjectConfig and Schema reconciled against the registry.

use std::path::PathBuf;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::manifests::{self, Manifest, ManifestError, Origin};
use super::objects::{Objects, ObjectsError};
use crate::compat::Checker;
use crate::controller::view::{ObjectKey, SubjectView};
use crate::controller::{schema, subject_config};
use crate::crd::{Schema, SubjectConfig};
use crate::registry::Registry;

/// How many passes over the Schemas at most: a Schema whose references name
/// a subject registered later in the same run succeeds on the next pass.
const MAX_PASSES: usize = 3;

/// Why a run stopped before reconciling.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The manifests could not be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// The stored objects could not be read or written.
    #[error(transparent)]
    Objects(#[from] ObjectsError),
    /// A manifest is an edit the API server would refuse.
    #[error("{origin}: {problem}")]
    Refused {
        /// Where it is.
        origin: Origin,
        /// Why.
        problem: String,
    },
}

/// An object this run applied, as it ended.
#[derive(Debug, Clone)]
pub enum Applied {
    /// A Schema.
    Schema(Box<Schema>),
    /// A SubjectConfig.
    SubjectConfig(Box<SubjectConfig>),
}

/// Loads `paths`, applies them to the objects kept in `data` and
/// reconciles, saves, and returns the applied objects in manifest order.
///
/// ConfigMaps and SubjectConfigs go first (so a level change applies to the
/// schemas of the same run); then each Schema manifest is applied and
/// reconciled in turn, so successive edits of one Schema in one run are
/// judged one after the other, as the operator would see them arrive.
///
/// # Errors
/// [`ApplyError`] when a manifest is unreadable or refused (then nothing is
/// stored or registered), or the objects file cannot be used.
pub async fn apply(
    paths: &[PathBuf],
    data: &std::path::Path,
    registry: &dyn Registry,
    checker: &Checker,
    now: &Time,
) -> Result<Vec<Applied>, ApplyError> {
    let loaded = manifests::load(paths)?;
    apply_loaded(loaded, data, registry, checker, now).await
}

/// [`apply`] with the manifests already loaded (`check` keeps their origins).
///
/// # Errors
/// As [`apply`], except that the manifests are not read here.
pub async fn apply_loaded(
    loaded: Vec<(Origin, Manifest)>,
    data: &std::path::Path,
    registry: &dyn Registry,
    checker: &Checker,
    now: &Time,
) -> Result<Vec<Applied>, ApplyError> {
    let mut objects = Objects::load(data)?;
    // Every edit must be acceptable before anything is stored or registered.
    let mut trial = objects.clone();
    for (origin, manifest) in &loaded {
        trial
            .apply(manifest.clone(), now)
            .map_err(|problem| ApplyError::Refused {
                origin: origin.clone(),
                problem,
            })?;
    }
    let (schemas, settings): (Vec<_>, Vec<_>) = loaded
        .into_iter()
        .map(|(_, manifest)| manifest)
        .partition(|manifest| matches!(manifest, Manifest::Schema(_)));
    let mut applied_keys = Vec::new();
    for manifest in settings {
        if let Manifest::SubjectConfig(config) = &manifest {
            remember(&mut applied_keys, (false, ObjectKey::of(&config.metadata)));
        }
        objects.apply(manifest, now).map_err(internal)?;
    }
    reconcile_configs(&mut objects, registry, now).await;
    for manifest in schemas {
        let Manifest::Schema(schema) = &manifest else { continue };
        let key = ObjectKey::of(&schema.metadata);
        remember(&mut applied_keys, (true, key.clone()));
        objects.apply(manifest, now).map_err(internal)?;
        if let Some(index) = objects.schemas.iter().position(|s| ObjectKey::of(&s.metadata) == key) {
            reconcile_schema(&mut objects, index, registry, checker, now).await;
        }
    }
    settle(&mut objects, registry, checker, now).await;
    objects.save(data)?;
    Ok(applied_keys
        .into_iter()
        .filter_map(|(is_schema, key)| {
            if is_schema {
                objects
                    .schemas
                    .iter()
                    .find(|s| ObjectKey::of(&s.metadata) == key)
                    .map(|schema| Applied::Schema(Box::new(schema.clone())))
            } else {
                objects
                    .subject_configs
                    .iter()
                    .find(|s| ObjectKey::of(&s.metadata) == key)
                    .map(|config| Applied::SubjectConfig(Box::new(config.clone())))
            }
        })
        .collect())
}

fn remember(keys: &mut Vec<(bool, ObjectKey)>, key: (bool, ObjectKey)) {
    if !keys.contains(&key) {
        keys.push(key);
    }
}

/// The trial run accepted every edit, so the real one cannot refuse any.
fn internal(problem: String) -> ApplyError {
    ApplyError::Refused {
        origin: Origin {
            path: PathBuf::new(),
            document: 0,
            line: 0,
        },
        problem,
    }
}

async fn reconcile_configs(objects: &mut Objects, registry: &dyn Registry, now: &Time) {
    for index in 0..objects.subject_configs.len() {
        let config = &objects.subject_configs[index];
        let view = SubjectView::of(&config.spec.subject, &objects.schemas, &objects.subject_configs);
        match subject_config::reconcile(config, &view, registry, now).await {
            Ok(status) => objects.subject_configs[index].status = Some(status),
            Err(error) => tracing::warn!(error = %error, "The registry failed; the SubjectConfig keeps its status"),
        }
    }
}

/// Reconciles one stored Schema; true when its status changed.
async fn reconcile_schema(
    objects: &mut Objects,
    index: usize,
    registry: &dyn Registry,
    checker: &Checker,
    now: &Time,
) -> bool {
    let schema = &objects.schemas[index];
    let view = SubjectView::of(&schema.spec.subject, &objects.schemas, &objects.subject_configs);
    let namespace = schema.metadata.namespace.as_deref().unwrap_or_default();
    let config_map = schema
        .spec
        .schema_from
        .as_ref()
        .and_then(|from| objects.config_map_data(namespace, &from.config_map_key_ref.name));
    let reconciled = schema::reconcile(schema, &view, config_map, registry, checker, now).await;
    let changed = schema::status::changed(schema.status.as_ref(), &reconciled.status);
    objects.schemas[index].status = Some(reconciled.status);
    changed
}

/// Passes over every stored Schema until nothing changes: a Schema whose
/// references name a subject registered later in the run succeeds now.
async fn settle(objects: &mut Objects, registry: &dyn Registry, checker: &Checker, now: &Time) {
    for _ in 0..MAX_PASSES {
        let mut changed = false;
        for index in 0..objects.schemas.len() {
            changed |= reconcile_schema(objects, index, registry, checker, now).await;
        }
        if !changed {
            break;
        }
    }
}

//! `schemaops export`: a registry read through the [`Registry`] trait and
//! turned into Schema and SubjectConfig manifests, one file per subject,
//! plus an `index.md`.
//!
//! [`collect`] walks the registry (selected subjects, then every subject
//! and version they refer to); [`render`] turns the result into file
//! texts. Neither writes files: the command does, all at once. Knows
//! nothing of Kubernetes clients; the manifests are plain text.
//!
//! # Version numbers
//! `apply` registers the documents of a subject in order, so the target
//! numbers them from 1. References are rewritten to those numbers: a
//! reference to source version 5 of a subject whose exported versions are
//! 2 and 5 becomes a reference to version 2.

pub mod names;
mod pretty;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};

use crate::compat::Mode;
use crate::policy::pattern::Pattern;
use crate::registry::contract::ContractConfig;
use crate::registry::{
    Error as RegistryError, Registry, RegistryMode, SchemaReference, SubjectFilter, SubjectName, Version,
    VersionFilter, VersionSelector, VersionedSchema, held,
};

/// Which subjects and versions to export.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Subject patterns (`*`, `?`); empty means every subject.
    pub subjects: Vec<Pattern>,
    /// Every live version, not only the latest.
    pub history: bool,
}

/// What was read from the registry, sorted by subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The exported subjects.
    pub subjects: Vec<SubjectExport>,
    /// Subjects matching the selection whose versions are all soft-deleted (not exported).
    pub deleted_subjects: Vec<SubjectName>,
    /// The registry's global compatibility level.
    pub global_level: Mode,
    /// The registry's global mode.
    pub global_mode: RegistryMode,
}

/// One exported subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectExport {
    /// The subject.
    pub subject: SubjectName,
    /// Whether it matched `--subjects` (otherwise it is here because another refers to it).
    pub selected: bool,
    /// The versions written, oldest first, with references renumbered.
    pub documents: Vec<VersionedSchema>,
    /// The subject's live versions in the registry.
    pub live: Vec<Version>,
    /// The subject's soft-deleted versions (not exported): those listed with
    /// `?deleted=true` but not live.
    pub deleted: Vec<Version>,
    /// The subject's own compatibility level.
    pub level: Option<Mode>,
    /// The subject's own mode (see [`held::own_subject_mode`]).
    pub mode: Option<RegistryMode>,
    /// The subject's own data-contract settings.
    pub settings: ContractConfig,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The registry failed to answer a read.
    #[error("failed to read {what} from the registry")]
    Read {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: RegistryError,
    },
}

/// Reads the selected subjects, and every subject version they refer to,
/// from `registry`.
///
/// # Errors
/// [`Error::Read`] naming the read that failed.
pub async fn collect(registry: &dyn Registry, selection: &Selection) -> Result<Export, Error> {
    let read = |what: String| move |source| Error::Read { what, source };
    let all = registry
        .subjects(&SubjectFilter::default())
        .await
        .map_err(read("the subjects".to_owned()))?;
    let matches = |subject: &SubjectName| {
        selection.subjects.is_empty()
            || selection
                .subjects
                .iter()
                .any(|pattern| pattern.matches(subject.as_str(), None))
    };
    let selected: BTreeSet<SubjectName> = all.into_iter().filter(|s| matches(s)).collect();
    let deleted_subjects: Vec<SubjectName> = held::soft_deleted_subjects(registry)
        .await
        .map_err(read("the soft-deleted subjects".to_owned()))?
        .into_iter()
        .filter(|s| matches(s) && !selected.contains(s))
        .collect();
    let global_mode = registry
        .mode(None, false)
        .await
        .map_err(read("the global mode".to_owned()))?;
    let mut live: BTreeMap<SubjectName, Vec<Version>> = BTreeMap::new();
    let mut wanted: BTreeMap<SubjectName, BTreeSet<Version>> = BTreeMap::new();
    for subject in &selected {
        let versions = live_versions(registry, subject).await?;
        let chosen: Vec<Version> = if selection.history {
            versions.clone()
        } else {
            versions.last().copied().into_iter().collect()
        };
        wanted.entry(subject.clone()).or_default().extend(chosen);
        live.insert(subject.clone(), versions);
    }
    // Fetch every wanted version; references add more until none are new.
    let mut fetched: BTreeMap<(SubjectName, Version), VersionedSchema> = BTreeMap::new();
    let mut pending: Vec<(SubjectName, Version)> = wanted
        .iter()
        .flat_map(|(subject, versions)| versions.iter().map(|v| (subject.clone(), *v)))
        .collect();
    while let Some((subject, version)) = pending.pop() {
        if fetched.contains_key(&(subject.clone(), version)) {
            continue;
        }
        let schema = registry
            .version(&subject, VersionSelector::Exact(version), true)
            .await
            .map_err(read(format!("version {version} of subject `{subject}`")))?;
        for reference in &schema.references {
            wanted
                .entry(reference.subject.clone())
                .or_default()
                .insert(reference.version);
            pending.push((reference.subject.clone(), reference.version));
        }
        fetched.insert((subject, version), schema);
    }
    // Target numbers: the position among the subject's exported versions.
    let renumber = |reference: &SchemaReference| -> SchemaReference {
        let position = wanted
            .get(&reference.subject)
            .and_then(|versions| versions.iter().position(|v| *v == reference.version));
        let version = position
            .and_then(|index| Version::new(i64::try_from(index).unwrap_or(i64::MAX).saturating_add(1)).ok())
            .unwrap_or(reference.version);
        SchemaReference {
            version,
            ..reference.clone()
        }
    };
    let mut subjects = Vec::with_capacity(wanted.len());
    for (subject, versions) in &wanted {
        let documents = versions
            .iter()
            .filter_map(|version| fetched.get(&(subject.clone(), *version)))
            .map(|schema| VersionedSchema {
                references: schema.references.iter().map(renumber).collect(),
                ..schema.clone()
            })
            .collect();
        let live = match live.remove(subject) {
            Some(versions) => versions,
            None => live_versions(registry, subject).await?,
        };
        let deleted = held::soft_deleted_versions(registry, subject)
            .await
            .map_err(read(format!("the deleted versions of subject `{subject}`")))?;
        let level = match registry.compatibility(Some(subject), false).await {
            Ok(level) => Some(level),
            Err(RegistryError::SubjectCompatibilityNotConfigured { .. } | RegistryError::SubjectNotFound { .. }) => {
                None
            }
            Err(source) => return Err(read(format!("the compatibility level of subject `{subject}`"))(source)),
        };
        let mode = held::own_subject_mode(registry, subject, global_mode)
            .await
            .map_err(read(format!("the mode of subject `{subject}`")))?;
        let settings = registry
            .contract_config(Some(subject))
            .await
            .map_err(read(format!("the data-contract settings of subject `{subject}`")))?;
        subjects.push(SubjectExport {
            subject: subject.clone(),
            selected: selected.contains(subject),
            documents,
            live,
            deleted,
            level,
            mode,
            settings,
        });
    }
    let global_level = registry
        .compatibility(None, false)
        .await
        .map_err(read("the global compatibility level".to_owned()))?;
    Ok(Export {
        subjects,
        deleted_subjects,
        global_level,
        global_mode,
    })
}

/// The live versions of a subject; none when it has no live version left.
async fn live_versions(registry: &dyn Registry, subject: &SubjectName) -> Result<Vec<Version>, Error> {
    match registry.versions(subject, VersionFilter::Live).await {
        Ok(versions) => Ok(versions),
        Err(RegistryError::SubjectNotFound { .. }) => Ok(Vec::new()),
        Err(source) => Err(Error::Read {
            what: format!("the versions of subject `{subject}`"),
            source,
        }),
    }
}

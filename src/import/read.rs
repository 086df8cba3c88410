//! Reads what an import needs: every version the source holds (soft-deleted
//! ones included) with its settings, and what the target already holds
//! under the same IDs, subject versions and subjects.
//!
//! # Guarantees
//! The source's answers are checked against the questions before anything
//! is planned: each version must be the subject and version asked for, and
//! one schema ID must not come with two schemas (the ID is then read again
//! to report which one it holds). Any contradiction refuses the import.

use std::collections::{BTreeMap, HashMap};

use super::{Contradiction, IdAnswer, ImportError, Settings};
use crate::compat::Format;
use crate::registry::{
    Error, Registry, RegistryMode, SchemaContent, SchemaId, SchemaReference, SubjectFilter, SubjectName, Version,
    VersionFilter, VersionSelector, VersionedSchema, held,
};

/// What the source registry holds.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// Every version of every subject, soft-deleted ones included, by subject then version.
    pub versions: Vec<VersionedSchema>,
    /// The global settings first, then each subject's, by subject.
    pub settings: Vec<Settings>,
}

/// What the target holds of the source's IDs, versions and subjects.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The content of each source ID the target holds.
    pub ids: HashMap<SchemaId, SchemaContent>,
    /// The ID and soft-deleted state of each source subject version the target holds.
    pub versions: HashMap<(SubjectName, Version), (SchemaId, bool)>,
    /// The target's settings, in the order of the source's.
    pub settings: Vec<Settings>,
}

/// Reads every subject, version and setting of the source.
///
/// # Errors
/// [`ImportError::Source`] naming what could not be read.
pub async fn source(registry: &dyn Registry) -> Result<Source, ImportError> {
    let failed = |what: String| move |source| ImportError::Source { what, source };
    let filter = SubjectFilter {
        include_deleted: true,
        ..SubjectFilter::default()
    };
    let subjects = registry
        .subjects(&filter)
        .await
        .map_err(failed("the subjects".to_owned()))?;
    let mut read = Source {
        versions: Vec::new(),
        settings: vec![
            settings(registry, None, None)
                .await
                .map_err(failed("the global settings".to_owned()))?,
        ],
    };
    let global_mode = read.settings[0].mode;
    let mut contradictions = Vec::new();
    for subject in subjects {
        let versions = registry
            .versions(&subject, VersionFilter::All)
            .await
            .map_err(failed(format!("the versions of subject `{subject}`")))?;
        // Derived, not asked with `deletedOnly` or read from the version's
        // `deleted` field: Karapace ignores the one and omits the other.
        let soft_deleted = held::soft_deleted_versions(registry, &subject)
            .await
            .map_err(failed(format!("the soft-deleted versions of subject `{subject}`")))?;
        for version in versions {
            let mut held = registry
                .version(&subject, VersionSelector::Exact(version), true)
                .await
                .map_err(failed(format!("subject `{subject}` version {version}")))?;
            if held.subject != subject {
                contradictions.push(Contradiction::Subject {
                    subject: subject.clone(),
                    version,
                    answered: held.subject.clone(),
                });
            }
            if held.version != version {
                contradictions.push(Contradiction::Version {
                    subject: subject.clone(),
                    version,
                    answered: held.version,
                });
            }
            held.deleted = soft_deleted.contains(&version);
            read.versions.push(held);
        }
        let own = settings(registry, Some(&subject), global_mode)
            .await
            .map_err(failed(format!("the settings of subject `{subject}`")))?;
        read.settings.push(own);
    }
    for (id, claims) in ids_with_several_schemas(&read.versions) {
        let by_id = match registry.schema_by_id(id).await {
            Ok(content) => claims
                .iter()
                .position(|group| schema_of(&read.versions[group[0]]) == content_key(&content))
                .map_or(IdAnswer::Another, IdAnswer::Claim),
            Err(error) => IdAnswer::Failed(error.to_string()),
        };
        let claims = claims
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|&index| (read.versions[index].subject.clone(), read.versions[index].version))
                    .collect()
            })
            .collect();
        contradictions.push(Contradiction::Id { id, claims, by_id });
    }
    if !contradictions.is_empty() {
        return Err(ImportError::Contradictions(contradictions));
    }
    Ok(read)
}

/// Each ID that versions give with more than one schema, with the versions
/// (indexes into `versions`) grouped by the schema they give, in order.
fn ids_with_several_schemas(versions: &[VersionedSchema]) -> Vec<(SchemaId, Vec<Vec<usize>>)> {
    let mut by_id: BTreeMap<SchemaId, Vec<Vec<usize>>> = BTreeMap::new();
    for (index, held) in versions.iter().enumerate() {
        let groups = by_id.entry(held.id).or_default();
        match groups
            .iter_mut()
            .find(|group| schema_of(&versions[group[0]]) == schema_of(held))
        {
            Some(group) => group.push(index),
            None => groups.push(vec![index]),
        }
    }
    by_id.into_iter().filter(|(_, groups)| groups.len() > 1).collect()
}

/// What an ID names, as the plan compares it with the target: type, text, references.
type SchemaKey<'a> = (Format, &'a str, &'a [SchemaReference]);

fn schema_of(held: &VersionedSchema) -> SchemaKey<'_> {
    (held.format, &held.text, &held.references)
}

fn content_key(content: &SchemaContent) -> SchemaKey<'_> {
    (content.format, &content.text, &content.references)
}

/// Reads what the target holds of `source`.
///
/// # Errors
/// [`ImportError::Target`] when the target cannot be read.
pub async fn target(registry: &dyn Registry, source: &Source) -> Result<Target, ImportError> {
    let failed = |action: String| move |source| ImportError::Target { action, source };
    let mut read = Target::default();
    let mut soft_deleted: HashMap<&SubjectName, Vec<Version>> = HashMap::new();
    for held in &source.versions {
        if !read.ids.contains_key(&held.id)
            && let Some(content) = absent_as_none(registry.schema_by_id(held.id).await)
                .map_err(failed(format!("read schema ID {}", held.id)))?
        {
            read.ids.insert(held.id, content.as_ref().clone());
        }
        let found = absent_as_none(
            registry
                .version(&held.subject, VersionSelector::Exact(held.version), true)
                .await,
        )
        .map_err(failed(format!(
            "read subject `{}` version {}",
            held.subject, held.version
        )))?;
        if let Some(found) = found {
            if !soft_deleted.contains_key(&held.subject) {
                let versions = held::soft_deleted_versions(registry, &held.subject)
                    .await
                    .map_err(failed(format!(
                        "read the soft-deleted versions of subject `{}`",
                        held.subject
                    )))?;
                soft_deleted.insert(&held.subject, versions);
            }
            let deleted = soft_deleted[&held.subject].contains(&held.version);
            read.versions
                .insert((held.subject.clone(), held.version), (found.id, deleted));
        }
    }
    let global_mode = registry
        .mode(None, false)
        .await
        .map_err(failed("read the global mode".to_owned()))?;
    for wanted in &source.settings {
        let own = settings(registry, wanted.subject.as_ref(), Some(global_mode))
            .await
            .map_err(failed("read the levels and modes".to_owned()))?;
        read.settings.push(own);
    }
    Ok(read)
}

/// The level and mode a registry holds for `subject` (or globally) of its
/// own; a subject's mode only as [`held::own_subject_mode`] tells it, given
/// the global mode (`None` when the registry has none).
///
/// # Errors
/// The registry's error when it cannot be asked.
async fn settings(
    registry: &dyn Registry,
    subject: Option<&SubjectName>,
    global_mode: Option<RegistryMode>,
) -> Result<Settings, Error> {
    let level = match registry.compatibility(subject, false).await {
        Ok(level) => Some(level),
        Err(Error::SubjectCompatibilityNotConfigured { .. } | Error::SubjectNotFound { .. }) => None,
        Err(error) => return Err(error),
    };
    let mode = match (subject, global_mode) {
        (None, _) => Some(registry.mode(None, false).await?),
        (Some(subject), Some(global)) => held::own_subject_mode(registry, subject, global).await?,
        (Some(_), None) => None,
    };
    Ok(Settings {
        subject: subject.cloned(),
        level,
        mode,
    })
}

/// `None` for an answer that says the thing asked for does not exist.
fn absent_as_none<T>(answer: Result<T, Error>) -> Result<Option<T>, Error> {
    match answer {
        Ok(found) => Ok(Some(found)),
        Err(Error::SubjectNotFound { .. } | Error::VersionNotFound { .. } | Error::SchemaNotFound { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(subject: &str, id: i64, text: &str) -> VersionedSchema {
        VersionedSchema {
            contract: Default::default(),
            subject: SubjectName::new(subject).unwrap(),
            version: Version::FIRST,
            id: SchemaId::new(id).unwrap(),
            format: Format::Avro,
            text: text.to_owned(),
            answer_text: None,
            references: Vec::new(),
            deleted: false,
        }
    }

    #[test]
    fn one_id_with_one_schema_under_several_subjects_is_no_contradiction() {
        let versions = [
            version("a", 1, "\"int\""),
            version("b", 1, "\"int\""),
            version("c", 2, "\"long\""),
        ];
        assert!(ids_with_several_schemas(&versions).is_empty());
    }

    // Issue 37, item 8: one ID claimed for two texts was written partly before it failed.
    #[test]
    fn one_id_given_with_two_schemas_is_found_with_its_claims_grouped() {
        let versions = [
            version("a", 1, "\"int\""),
            version("b", 1, "\"long\""),
            version("c", 1, "\"int\""),
            version("d", 2, "\"int\""),
        ];
        assert_eq!(
            ids_with_several_schemas(&versions),
            vec![(SchemaId::new(1).unwrap(), vec![vec![0, 2], vec![1]])]
        );
    }
}

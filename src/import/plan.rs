//! Decides what an import writes, without I/O: which versions to register
//! (each after the versions its references name), which to soft-delete
//! (referrers first), which settings to change, and what is already
//! present. Refuses, naming every conflict, when the target holds other
//! content under a source ID or subject version.

use std::collections::{BTreeSet, HashMap};

use super::read::{Source, Target};
use super::{Conflict, ImportError, Settings};
use crate::registry::{SubjectName, Version, VersionedSchema};

/// What an import writes, as indexes into [`Source::versions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Versions to register, each after the versions its references name.
    pub register: Vec<usize>,
    /// Versions to soft-delete once registered, referrers first.
    pub soft_delete: Vec<usize>,
    /// How many source versions the target already holds as the source does.
    pub present: usize,
    /// The settings to write: the source's, where the target's differ.
    pub settings: Vec<Settings>,
}

impl Plan {
    /// Whether the import has nothing to write.
    pub fn is_empty(&self) -> bool {
        self.register.is_empty() && self.soft_delete.is_empty() && self.settings.is_empty()
    }
}

/// Plans the copy of `source` into a target holding `target`.
///
/// # Errors
/// [`ImportError::Conflicts`] listing every conflict;
/// [`ImportError::Unimportable`] when a reference names a version the
/// source does not hold, or references form a cycle.
pub fn plan(source: &Source, target: &Target) -> Result<Plan, ImportError> {
    let mut conflicts = Vec::new();
    let mut checked_ids = BTreeSet::new();
    for held in &source.versions {
        if checked_ids.insert(held.id)
            && let Some(content) = target.ids.get(&held.id)
            && (content.format != held.format
                || content.answered_text() != held.answered_text()
                || content.references != held.references)
        {
            conflicts.push(Conflict::Id { id: held.id });
        }
    }
    let mut needs_register = vec![false; source.versions.len()];
    let mut needs_delete = vec![false; source.versions.len()];
    let mut present = 0;
    for (index, held) in source.versions.iter().enumerate() {
        match target.versions.get(&(held.subject.clone(), held.version)) {
            None => {
                needs_register[index] = true;
                needs_delete[index] = held.deleted;
            }
            Some((id, _)) if *id != held.id => conflicts.push(Conflict::Version {
                subject: held.subject.clone(),
                version: held.version,
                target: *id,
                source_id: held.id,
            }),
            Some((_, true)) if !held.deleted => conflicts.push(Conflict::Deleted {
                subject: held.subject.clone(),
                version: held.version,
            }),
            Some((_, deleted)) => {
                needs_delete[index] = held.deleted && !deleted;
                if !needs_delete[index] {
                    present += 1;
                }
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(ImportError::Conflicts(conflicts));
    }
    let order = dependency_order(&source.versions)?;
    let mut soft_delete: Vec<usize> = order.iter().copied().filter(|&index| needs_delete[index]).collect();
    soft_delete.reverse();
    let settings = source
        .settings
        .iter()
        .zip(&target.settings)
        .filter(|(wanted, held)| wanted != held)
        .map(|(wanted, _)| wanted.clone())
        .collect();
    Ok(Plan {
        register: order.into_iter().filter(|&index| needs_register[index]).collect(),
        soft_delete,
        present,
        settings,
    })
}

/// Every version's index, each after those its references name (Kahn's
/// algorithm; ties in source order).
fn dependency_order(versions: &[VersionedSchema]) -> Result<Vec<usize>, ImportError> {
    let index: HashMap<(&SubjectName, Version), usize> = versions
        .iter()
        .enumerate()
        .map(|(at, held)| ((&held.subject, held.version), at))
        .collect();
    let mut waiting_on = vec![0usize; versions.len()];
    let mut referrers: Vec<Vec<usize>> = vec![Vec::new(); versions.len()];
    for (at, held) in versions.iter().enumerate() {
        for reference in &held.references {
            let Some(&named) = index.get(&(&reference.subject, reference.version)) else {
                return Err(ImportError::Unimportable(format!(
                    "subject `{}` version {} refers to subject `{}` version {}, which the source does not hold",
                    held.subject, held.version, reference.subject, reference.version
                )));
            };
            waiting_on[at] += 1;
            referrers[named].push(at);
        }
    }
    let mut ready: BTreeSet<usize> = (0..versions.len()).filter(|&at| waiting_on[at] == 0).collect();
    let mut order = Vec::with_capacity(versions.len());
    while let Some(at) = ready.pop_first() {
        order.push(at);
        for &referrer in &referrers[at] {
            waiting_on[referrer] -= 1;
            if waiting_on[referrer] == 0 {
                ready.insert(referrer);
            }
        }
    }
    if let Some(stuck) = (0..versions.len()).find(|&at| waiting_on[at] > 0) {
        let held = &versions[stuck];
        return Err(ImportError::Unimportable(format!(
            "the references of subject `{}` version {} form a cycle",
            held.subject, held.version
        )));
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::Format;
    use crate::registry::{SchemaContent, SchemaId, SchemaReference};

    fn version(subject: &str, number: i64, id: i64, references: &[(&str, i64)]) -> VersionedSchema {
        VersionedSchema {
            contract: Default::default(),
            subject: SubjectName::new(subject).unwrap(),
            version: Version::new(number).unwrap(),
            id: SchemaId::new(id).unwrap(),
            format: Format::Avro,
            text: format!("\"schema{id}\""),
            answer_text: None,
            references: references
                .iter()
                .map(|(subject, number)| SchemaReference {
                    name: (*subject).to_owned(),
                    subject: SubjectName::new(*subject).unwrap(),
                    version: Version::new(*number).unwrap(),
                })
                .collect(),
            deleted: false,
        }
    }

    fn source(versions: Vec<VersionedSchema>) -> Source {
        Source {
            versions,
            settings: Vec::new(),
        }
    }

    #[test]
    fn a_version_is_registered_after_the_versions_it_refers_to() {
        let source = source(vec![version("a", 1, 7, &[("z", 1)]), version("z", 1, 42, &[])]);
        let plan = plan(&source, &Target::default()).unwrap();
        assert_eq!(plan.register, vec![1, 0]);
    }

    #[test]
    fn soft_deletes_come_referrers_first() {
        let mut versions = vec![version("a", 1, 7, &[("z", 1)]), version("z", 1, 42, &[])];
        versions[0].deleted = true;
        versions[1].deleted = true;
        let plan = plan(&source(versions), &Target::default()).unwrap();
        assert_eq!(plan.soft_delete, vec![0, 1]);
    }

    #[test]
    fn a_reference_cycle_is_refused_rather_than_looped_on() {
        let source = source(vec![version("a", 1, 7, &[("b", 1)]), version("b", 1, 8, &[("a", 1)])]);
        let error = plan(&source, &Target::default()).unwrap_err();
        assert!(error.to_string().contains("form a cycle"), "{error}");
    }

    #[test]
    fn a_reference_to_a_version_the_source_lacks_is_refused() {
        let source = source(vec![version("a", 1, 7, &[("b", 3)])]);
        let error = plan(&source, &Target::default()).unwrap_err();
        assert!(error.to_string().contains("`b` version 3"), "{error}");
    }

    #[test]
    fn versions_the_target_holds_alike_are_counted_present_and_not_written() {
        let held = version("a", 1, 7, &[]);
        let mut target = Target::default();
        target
            .versions
            .insert((held.subject.clone(), held.version), (held.id, false));
        let plan = plan(&source(vec![held]), &target).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.present, 1);
    }

    #[test]
    fn an_id_the_target_holds_in_the_authors_text_is_the_same_schema_as_the_text_the_source_answers() {
        // Issue 39 item 8: a source answers Avro's text; a target that
        // registered the same schema keeps the author's text beside it.
        let held = version("a", 1, 42, &[]);
        let mut target = Target::default();
        target.ids.insert(
            held.id,
            SchemaContent {
                contract: Default::default(),
                format: Format::Avro,
                text: "{ \"type\": \"string\" }".to_owned(),
                answer_text: Some(held.text.clone()),
                references: Vec::new(),
            },
        );
        assert!(plan(&source(vec![held]), &target).is_ok());
    }

    #[test]
    fn every_conflict_is_named_before_anything_is_written() {
        let first = version("a", 1, 42, &[]);
        let second = version("b", 2, 43, &[]);
        let mut target = Target::default();
        target.ids.insert(
            first.id,
            SchemaContent {
                contract: Default::default(),
                format: Format::Avro,
                text: "\"other\"".to_owned(),
                answer_text: None,
                references: Vec::new(),
            },
        );
        target.versions.insert(
            (second.subject.clone(), second.version),
            (SchemaId::new(9).unwrap(), false),
        );
        let ImportError::Conflicts(conflicts) = plan(&source(vec![first, second]), &target).unwrap_err() else {
            panic!("expected conflicts");
        };
        let text: Vec<String> = conflicts.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            vec![
                "schema ID 42 holds a different schema in the target",
                "subject `b` version 2 holds schema ID 9 in the target, 43 in the source",
            ]
        );
    }
}

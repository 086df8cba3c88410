//! Carries out a [`Plan`] against the target registry (embedded or
//! external) with IMPORT semantics: the target (and each subject written that has a mode of its
//! own) is put in IMPORT mode, each version is registered with its source
//! ID and version number, soft-deleted versions are then soft-deleted, the
//! modes are restored, and finally the source's levels and modes are set.
//!
//! # Guarantees
//! Each registration commits on its own, so a run stopped part-way leaves
//! whole versions only, and the next run skips them. When a write fails,
//! the modes held before the run are restored before the error is returned.
//!
//! # Caveats
//! A process killed part-way cannot restore anything: the target stays in
//! IMPORT mode until the next run finishes.

use std::collections::BTreeSet;

use super::plan::Plan;
use super::read::Source;
use super::{ImportError, Settings};
use crate::registry::{Error, NewSchema, RegisterOptions, Registry, RegistryMode, SubjectName, VersionSelector};

/// What a copy wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Versions registered.
    pub copied: usize,
    /// Versions soft-deleted.
    pub soft_deleted: usize,
    /// Versions the target already held as the source does.
    pub present: usize,
    /// Subjects (or the registry) whose level or mode was set.
    pub settings: usize,
}

/// Writes `plan` into `target`; `progress` hears (versions registered, versions to register).
///
/// # Errors
/// [`ImportError::Target`] naming the write that failed (after the modes were restored).
pub async fn copy(
    source: &Source,
    plan: &Plan,
    target: &dyn Registry,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, ImportError> {
    let mut summary = Summary {
        present: plan.present,
        ..Summary::default()
    };
    if plan.is_empty() {
        return Ok(summary);
    }
    if !(plan.register.is_empty() && plan.soft_delete.is_empty()) {
        let held = enter_import_mode(source, plan, target).await?;
        let written = write_versions(source, plan, target, &mut summary, progress).await;
        let restored = restore_modes(&held, target).await;
        if let Err(error) = written {
            if let Err(restore) = restored {
                tracing::error!(
                    error = &restore as &dyn std::error::Error,
                    "Could not restore the modes"
                );
            }
            return Err(error);
        }
        restored?;
    }
    for wanted in &plan.settings {
        write_settings(wanted, target).await?;
        summary.settings += 1;
    }
    Ok(summary)
}

/// A mode held before the import, to restore.
type HeldMode = (Option<SubjectName>, RegistryMode);

/// Puts the registry, and each subject written that has a mode other than
/// IMPORT, in IMPORT mode; returns the modes to restore.
async fn enter_import_mode(source: &Source, plan: &Plan, target: &dyn Registry) -> Result<Vec<HeldMode>, ImportError> {
    let failed = |action: String| move |source| ImportError::Target { action, source };
    let global = target
        .mode(None, false)
        .await
        .map_err(failed("read the global mode".to_owned()))?;
    let mut held = vec![(None, global)];
    let subjects: BTreeSet<&SubjectName> = plan
        .register
        .iter()
        .chain(&plan.soft_delete)
        .map(|&index| &source.versions[index].subject)
        .collect();
    for subject in subjects {
        match target.mode(Some(subject), false).await {
            Ok(RegistryMode::Import) | Err(Error::SubjectModeNotConfigured { .. } | Error::SubjectNotFound { .. }) => {}
            Ok(mode) => held.push((Some(subject.clone()), mode)),
            Err(source) => return Err(failed(format!("read the mode of subject `{subject}`"))(source)),
        }
    }
    let mut entered = Vec::with_capacity(held.len());
    for (subject, mode) in &held {
        if let Err(source) = target.set_mode(subject.as_ref(), RegistryMode::Import, true).await {
            // A registry without IMPORT mode refuses the first write, the
            // global one: Karapace with 405 (it routes `GET /mode` only);
            // an invalid-mode or not-permitted answer refuses it alike.
            let refused = matches!(
                source,
                Error::Remote { status: 405, .. }
                    | Error::Unsupported { .. }
                    | Error::InvalidMode { .. }
                    | Error::NotPermitted { .. }
            );
            if entered.is_empty() && refused {
                return Err(ImportError::NoImportMode(source));
            }
            // Undo the modes already changed before giving up.
            let _ = restore_modes(&entered, target).await;
            return Err(failed("enter IMPORT mode".to_owned())(source));
        }
        entered.push((subject.clone(), *mode));
    }
    Ok(held)
}

/// Sets each held mode back.
async fn restore_modes(held: &[HeldMode], target: &dyn Registry) -> Result<(), ImportError> {
    for (subject, mode) in held {
        target
            .set_mode(subject.as_ref(), *mode, true)
            .await
            .map_err(|source| ImportError::Target {
                action: format!("restore the mode {}", mode.as_str()),
                source,
            })?;
    }
    Ok(())
}

/// Registers, then soft-deletes, what the plan says.
async fn write_versions(
    source: &Source,
    plan: &Plan,
    target: &dyn Registry,
    summary: &mut Summary,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), ImportError> {
    for &index in &plan.register {
        let held = &source.versions[index];
        let failed = |source| ImportError::Target {
            action: format!(
                "register subject `{}` version {} as ID {}",
                held.subject, held.version, held.id
            ),
            source,
        };
        let schema = NewSchema {
            format: held.format,
            text: held.text.clone(),
            references: held.references.clone(),
            contract: held.contract.clone(),
        };
        let options = RegisterOptions {
            id: Some(held.id),
            version: Some(held.version),
            normalize: false,
        };
        let registered = target.register(&held.subject, &schema, options).await.map_err(failed)?;
        if registered.id != held.id || registered.version != held.version {
            return Err(failed(Error::IdMismatch { id: held.id }));
        }
        summary.copied += 1;
        progress(summary.copied, plan.register.len());
    }
    for &index in &plan.soft_delete {
        let held = &source.versions[index];
        target
            .delete_version(&held.subject, VersionSelector::Exact(held.version), false)
            .await
            .map_err(|source| ImportError::Target {
                action: format!("soft-delete subject `{}` version {}", held.subject, held.version),
                source,
            })?;
        summary.soft_deleted += 1;
    }
    Ok(())
}

/// Sets (or removes) a level and a mode as the source holds them.
async fn write_settings(wanted: &Settings, target: &dyn Registry) -> Result<(), ImportError> {
    let subject = wanted.subject.as_ref();
    let name = subject.map_or_else(|| "the registry".to_owned(), |s| format!("subject `{s}`"));
    let failed = |action: &str| {
        let action = format!("{action} of {name}");
        move |source| ImportError::Target { action, source }
    };
    match wanted.level {
        Some(level) => target.set_compatibility(subject, level).await.map(drop),
        None => match target.delete_compatibility(subject).await {
            Err(Error::SubjectCompatibilityNotConfigured { .. }) => Ok(()),
            other => other.map(drop),
        },
    }
    .map_err(failed("set the level"))?;
    match wanted.mode {
        Some(mode) => target.set_mode(subject, mode, true).await.map(drop),
        // A target without subject modes holds none to remove.
        None => match target.delete_mode(subject).await {
            Err(Error::SubjectModeNotConfigured { .. } | Error::Unsupported { .. }) => Ok(()),
            other => other.map(drop),
        },
    }
    .map_err(failed("set the mode"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::compat::{Checker, Format};
    use crate::registry::embedded::EmbeddedRegistry;
    use crate::registry::embedded::sqlite::SqliteStore;
    use crate::registry::{SchemaId, Version, VersionedSchema};

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

    #[tokio::test]
    async fn a_copy_that_fails_part_way_restores_the_modes_and_keeps_what_it_wrote() {
        let folder = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
        let target = EmbeddedRegistry::open(Arc::new(store), Checker::default())
            .await
            .unwrap();
        let frozen = SubjectName::new("frozen").unwrap();
        target
            .set_mode(Some(&frozen), RegistryMode::ReadOnly, false)
            .await
            .unwrap();
        let source = Source {
            versions: vec![version("frozen", 7, "\"int\""), version("broken", 42, "{not avro")],
            settings: Vec::new(),
        };
        let plan = Plan {
            register: vec![0, 1],
            ..Plan::default()
        };
        let error = copy(&source, &plan, &target, &mut |_, _| {}).await.unwrap_err();
        assert!(
            error.to_string().contains("subject `broken` version 1 as ID 42"),
            "{error}"
        );
        assert_eq!(target.mode(None, false).await.unwrap(), RegistryMode::ReadWrite);
        assert_eq!(target.mode(Some(&frozen), false).await.unwrap(), RegistryMode::ReadOnly);
        let kept = target.schema_by_id(SchemaId::new(7).unwrap()).await.unwrap();
        assert_eq!(kept.text, "\"int\"");
    }
}

//! The settings of the registry and of each subject: compatibility
//! level, mode and data-contract configuration, read, set and removed.

use super::store::{self, Change};
use super::{EmbeddedRegistry, state};
use crate::compat::Mode;
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::{Error, Registry, RegistryMode, SubjectName};

impl EmbeddedRegistry {
    pub(super) async fn own_compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        self.catch_up().await?;
        let state = self.read();
        let global = state.compatibility.unwrap_or(state::DEFAULT_COMPATIBILITY);
        match subject {
            None => Ok(global),
            Some(subject) => match state.subjects.get(subject).and_then(|s| s.compatibility) {
                Some(level) => Ok(level),
                None if fallback => Ok(state.effective_compatibility(subject)),
                None => Err(Error::SubjectCompatibilityNotConfigured {
                    subject: subject.clone(),
                }),
            },
        }
    }

    pub(super) async fn store_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        self.write(move |decided_on| async move {
            let change = self.setting_change(subject, Setting::Compatibility(Some(level)));
            self.commit("store the compatibility level", decided_on, vec![change])
                .await?;
            Ok(level)
        })
        .await
    }

    pub(super) async fn remove_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        self.write(move |decided_on| async move {
            let has_settings = subject.is_some_and(|subject| {
                self.read()
                    .subjects
                    .get(subject)
                    .is_some_and(|own| !own.config.is_empty())
            });
            let old = match self.compatibility(subject, has_settings).await {
                Ok(old) => old,
                Err(error) => return Err(error),
            };
            let changes = match subject {
                None => vec![
                    Change::SetGlobalCompatibility(None),
                    Change::SetGlobalConfig(ContractConfig::default()),
                ],
                Some(subject) => {
                    let mut row = self.subject_row(subject);
                    row.compatibility = None;
                    row.config = ContractConfig::default();
                    vec![Change::PutSubject(row)]
                }
            };
            self.commit("remove the compatibility level", decided_on, changes)
                .await?;
            Ok(old)
        })
        .await
    }

    pub(super) async fn own_contract_config(&self, subject: Option<&SubjectName>) -> Result<ContractConfig, Error> {
        self.catch_up().await?;
        let state = self.read();
        Ok(match subject {
            None => state.config.clone(),
            Some(subject) => state
                .subjects
                .get(subject)
                .map(|own| own.config.clone())
                .unwrap_or_default(),
        })
    }

    pub(super) async fn contract_config_of_scope(&self, subject: &SubjectName) -> Result<ContractConfig, Error> {
        self.catch_up().await?;
        Ok(self.read().config_in_scope(subject).clone())
    }

    pub(super) async fn patch_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error> {
        if !self.has_data_contracts() {
            return Err(Error::Unsupported {
                url: "the scratch registry".to_owned(),
                feature: "data-contract settings",
            });
        }
        self.write(move |decided_on| async move {
            let current = self.contract_config(subject).await?;
            let updated = patch.apply(&current)?;
            let change = self.setting_change(subject, Setting::Contract(Box::new(updated.clone())));
            self.commit("store the data-contract settings", decided_on, vec![change])
                .await?;
            Ok(updated)
        })
        .await
    }

    pub(super) async fn own_mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        self.catch_up().await?;
        let state = self.read();
        let global = state.mode.unwrap_or(RegistryMode::ReadWrite);
        match subject {
            None => Ok(global),
            Some(_) if !self.has_subject_modes() && fallback => Ok(global),
            Some(subject) if !self.has_subject_modes() => Err(Error::SubjectModeNotConfigured {
                subject: subject.clone(),
            }),
            Some(subject) => match state.subjects.get(subject).and_then(|s| s.mode) {
                Some(mode) => Ok(mode),
                None if fallback => Ok(state.effective_mode(subject)),
                None => Err(Error::SubjectModeNotConfigured {
                    subject: subject.clone(),
                }),
            },
        }
    }

    pub(super) async fn store_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject)?;
        self.write(move |decided_on| async move {
            if mode == RegistryMode::Import && !force {
                let state = self.read();
                let has_versions = match subject {
                    None => state.subjects.values().any(|s| !s.versions.is_empty()),
                    Some(subject) => state.subjects.get(subject).is_some_and(|s| !s.versions.is_empty()),
                };
                if has_versions {
                    return Err(Error::NotPermitted {
                        reason: "IMPORT mode on a registry or subject that holds versions needs force=true".to_owned(),
                    });
                }
            }
            let change = self.setting_change(subject, Setting::Mode(Some(mode)));
            self.commit("store the mode", decided_on, vec![change]).await?;
            Ok(mode)
        })
        .await
    }

    pub(super) async fn remove_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject)?;
        self.write(move |decided_on| async move {
            let old = self.mode(subject, false).await?;
            let change = self.setting_change(subject, Setting::Mode(None));
            self.commit("remove the mode", decided_on, vec![change]).await?;
            Ok(old)
        })
        .await
    }

    pub(super) async fn subjects_with_own_mode(&self, prefix: &str) -> Result<Vec<SubjectName>, Error> {
        self.catch_up().await?;
        Ok(self
            .read()
            .subjects
            .iter()
            .filter(|(name, own)| own.mode.is_some() && name.as_str().starts_with(prefix))
            .map(|(name, _)| name.clone())
            .collect())
    }

    pub(super) fn refuse_subject_mode(&self, subject: Option<&SubjectName>) -> Result<(), Error> {
        if subject.is_some() && !self.has_subject_modes() {
            return Err(Error::Unsupported {
                url: "the scratch registry".to_owned(),
                feature: "a per-subject mode",
            });
        }
        Ok(())
    }
}

/// A setting of a subject or of the whole registry; `None` (or empty) clears it.
enum Setting {
    Compatibility(Option<Mode>),
    Mode(Option<RegistryMode>),
    Contract(Box<ContractConfig>),
}

impl EmbeddedRegistry {
    /// The change that applies `setting` to `subject`, or globally.
    fn setting_change(&self, subject: Option<&SubjectName>, setting: Setting) -> Change {
        match (subject, setting) {
            (None, Setting::Compatibility(level)) => Change::SetGlobalCompatibility(level),
            (None, Setting::Mode(mode)) => Change::SetGlobalMode(mode),
            (None, Setting::Contract(config)) => Change::SetGlobalConfig(*config),
            (Some(subject), setting) => {
                let mut row = self.subject_row(subject);
                match setting {
                    Setting::Compatibility(level) => row.compatibility = level,
                    Setting::Mode(mode) => row.mode = mode,
                    Setting::Contract(config) => row.config = *config,
                }
                Change::PutSubject(row)
            }
        }
    }

    /// The stored row of a subject, or a new one.
    fn subject_row(&self, subject: &SubjectName) -> store::SubjectRow {
        self.read().subject_row(subject)
    }
}

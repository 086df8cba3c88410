//! Registering a schema under a subject: the compatibility check on
//! what the subject holds, then the ID and version it gets, committed
//! only if the subject still holds what the check saw.

use std::sync::Arc;

use super::schemas::candidate;
use super::state;
use super::store::{Change, SchemaRow, StaleRevision, VersionRow};
use super::{EmbeddedRegistry, MAX_WRITE_ATTEMPTS};
use crate::registry::{
    CompatibilityResult, Error, NewSchema, RegisterOptions, Registered, RegistryMode, SubjectName, VersionSelector,
};

impl EmbeddedRegistry {
    pub(super) async fn register_version(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
    ) -> Result<Registered, Error> {
        // Parsing and the compatibility check run without the write lock, on
        // what the subject holds then; under the lock, the registration goes
        // ahead only if that is still what it holds, else it is decided again.
        let without_contract;
        let schema = if self.has_data_contracts() {
            schema
        } else {
            without_contract = NewSchema {
                contract: crate::registry::contract::Contract::default(),
                ..schema.clone()
            };
            &without_contract
        };
        self.catch_up().await?;
        let (parsed, canonical) = self.parse_new(schema).await?;
        let submitted = candidate(schema, &canonical);
        // Worked out once, and only when the registry may store new content.
        let mut stored: Option<String> = None;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            self.catch_up().await?;
            let (decided, fingerprint) = self.read().registration_inputs(subject, &submitted);
            Self::refuse_writes_in(decided.mode, subject)?;
            let importing = decided.mode == RegistryMode::Import;
            if !importing && options.id.is_some() {
                return Err(Error::NotPermitted {
                    reason: "an ID can be chosen only in IMPORT mode".to_owned(),
                });
            }
            // Outside IMPORT mode a chosen version is always a new one (the
            // subject's next), as in Confluent's `KafkaSchemaRegistry.register`.
            if let (Some(id), Some(version)) = (decided.known_id, decided.existing)
                && options.version.is_none_or(|wanted| importing && wanted == version)
            {
                return Ok(Registered {
                    id,
                    version,
                    created: false,
                });
            }
            if !importing {
                let report = self
                    .compare(decided.level, Arc::clone(&parsed), decided.live.clone())
                    .await?;
                if !report.is_compatible() {
                    return Err(Error::Incompatible { report });
                }
            }
            // Content stored already (under another subject) keeps its text.
            if decided.known_id.is_none() && stored.is_none() {
                // A configuration in scope with `normalize: true` normalizes
                // every registration, as `?normalize=true` does.
                let normalize = options.normalize || decided.config.normalize == Some(true);
                stored = Some(self.stored_text(schema, &parsed, &canonical, normalize).await?);
            }
            let text = stored.as_deref().unwrap_or(&schema.text);
            let registered = self
                .write(|decided_on| {
                    let (submitted, decided, fingerprint) = (&submitted, &decided, &fingerprint);
                    async move {
                        if self.read().registration_inputs(subject, submitted).0 != *decided {
                            return Ok(None);
                        }
                        self.store_registration(subject, schema, options, decided, fingerprint, text, decided_on)
                            .await
                            .map(Some)
                    }
                })
                .await?;
            if let Some(registered) = registered {
                self.parsed.insert(registered.id, parsed, schema.text.len());
                return Ok(registered);
            }
        }
        Err(Error::Store {
            action: "register while other writers keep changing the subject",
            source: Box::new(StaleRevision),
        })
    }

    pub(super) async fn check_candidate(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        self.catch_up().await?;
        let (parsed, canonical) = self.parse_new(schema).await?;
        let (level, versions) = {
            let state = self.read();
            let level = state.effective_compatibility(subject);
            match against {
                None => (level, state.versions_to_check(subject, &candidate(schema, &canonical))),
                Some(selector) => match state.select(subject, selector, false) {
                    Ok((version, entry)) => (level.against_one_version(), vec![(version, entry.id)]),
                    // No live version: against latest, nothing to break
                    // (Confluent's CompatibilityResource); a numbered
                    // version of such a subject is a missing version.
                    Err(Error::SubjectNotFound { .. }) if selector == VersionSelector::Latest => (level, Vec::new()),
                    Err(Error::SubjectNotFound { .. }) => {
                        return Err(Error::VersionNotFound {
                            subject: subject.clone(),
                            version: selector.to_string(),
                        });
                    }
                    Err(error) => return Err(error),
                },
            }
        };
        let report = self.compare(level, parsed, versions).await?;
        Ok(CompatibilityResult { level, report })
    }

    /// Allocates the ID and version of a registration decided on `decided`
    /// and commits it on top of revision `decided_on`; runs under the write lock.
    #[allow(clippy::too_many_arguments)]
    async fn store_registration(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
        decided: &state::RegistrationInputs,
        fingerprint: &str,
        stored: &str,
        decided_on: u64,
    ) -> Result<Registered, Error> {
        let (id, version, changes) = {
            let state = self.read();
            let id = match (options.id, decided.known_id) {
                (Some(wanted), Some(known)) if wanted != known => return Err(Error::IdMismatch { id: wanted }),
                (Some(wanted), None) if state.schemas.contains_key(&wanted) => {
                    return Err(state.id_in_use(wanted, subject));
                }
                (Some(wanted), _) => wanted,
                (None, Some(known)) => known,
                (None, None) => state.next_free_id().ok_or_else(|| Error::NotPermitted {
                    reason: "the registry has used every schema ID".to_owned(),
                })?,
            };
            let mut subject_row = state.subject_row(subject);
            let held = state.subjects.get(subject);
            let version = match options.version {
                Some(wanted) if decided.mode != RegistryMode::Import && wanted != subject_row.next_version => {
                    return Err(Error::VersionNotNext {
                        subject: subject.clone(),
                        wanted,
                        next: subject_row.next_version,
                    });
                }
                Some(wanted) if held.is_some_and(|s| s.versions.contains_key(&wanted)) => {
                    return Err(Error::NotPermitted {
                        reason: format!("version {wanted} of subject `{subject}` already exists"),
                    });
                }
                Some(wanted) if held.is_some_and(|s| s.retired.contains(&wanted)) => {
                    return Err(Error::NotPermitted {
                        reason: format!(
                            "version {wanted} of subject `{subject}` was hard-deleted; version numbers are never \
                             reused, so schemas referring to it cannot come to mean other content"
                        ),
                    });
                }
                Some(wanted) => wanted,
                None => subject_row.next_version,
            };
            if version == version.next() {
                return Err(Error::NotPermitted {
                    reason: format!(
                        "version {version} is the last version number; subject `{subject}` could take no \
                         version after it, so it is never given"
                    ),
                });
            }
            subject_row.next_version = subject_row.next_version.max(version.next());
            let mut changes = Vec::with_capacity(3);
            if !state.schemas.contains_key(&id) {
                changes.push(Change::PutSchema(SchemaRow {
                    id,
                    format: schema.format,
                    text: stored.to_owned(),
                    fingerprint: fingerprint.to_owned(),
                    references: schema.references.clone(),
                    contract: decided.contract.clone(),
                }));
            }
            changes.push(Change::PutSubject(subject_row));
            changes.push(Change::PutVersion(VersionRow {
                subject: subject.clone(),
                version,
                id,
                deleted: false,
            }));
            (id, version, changes)
        };
        self.commit("store the registration", decided_on, changes).await?;
        tracing::info!(subject = %subject, version = version.get(), id = id.get(), "Registered schema");
        Ok(Registered {
            id,
            version,
            created: true,
        })
    }

    pub(super) fn refuse_writes_in(mode: RegistryMode, subject: &SubjectName) -> Result<(), Error> {
        match mode {
            RegistryMode::ReadOnly | RegistryMode::ReadOnlyOverride => Err(Error::NotPermitted {
                reason: format!("subject `{subject}` is in {} mode", mode.as_str()),
            }),
            RegistryMode::ReadWrite | RegistryMode::Import => Ok(()),
        }
    }
}

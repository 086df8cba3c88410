//! [`ExternalRegistry`]: the [`Registry`] trait over HTTP, for any
//! Confluent-compatible server (Confluent, Karapace, Apicurio's `ccompat`
//! API, Redpanda).
//!
//! Owns the wire format and the differences between servers; knows nothing
//! of Kubernetes. Compatibility verdicts that the controller acts on come
//! from our own engine ([`crate::compat::Checker`]) over versions fetched
//! from the registry, so they do not depend on what the server implements.
//!
//! # Caveats
//! - Servers without `/mode` are treated as READWRITE. Servers without
//!   per-subject modes (Karapace) report the global mode for every subject;
//!   a subject mode write or delete there is [`Error::Unsupported`] and is
//!   never sent.
//! - Data-contract settings are never sent to a server without them
//!   (Karapace, Confluent before 7.4): [`Error::Unsupported`] instead.
//! - `register` reports `created: false` when a lookup finds the schema
//!   before the write; two writers racing may both see `created: true`.

mod capabilities;
mod config;
mod engine;
mod transport;
mod wire;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Method;
use tokio::sync::OnceCell;

pub use capabilities::{Capabilities, DataContracts, PROBE_SUBJECT};
pub use config::{ExternalAuth, ExternalConfig, PemText};
pub use engine::reference_texts;
pub use transport::ConfigError;
use transport::{About, Transport, segment};

use crate::compat::{Checker, Format, Mode};
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::{
    CompatibilityResult, Error, Guid, NewSchema, RegisterOptions, Registered, Registry, RegistryMode, SchemaContent,
    SchemaId, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter, VersionSelector, VersionedSchema,
};

/// A remote Confluent-compatible registry.
pub struct ExternalRegistry {
    transport: Transport,
    checker: Checker,
    capabilities: OnceCell<Capabilities>,
    data_contracts: OnceCell<DataContracts>,
}

impl std::fmt::Debug for ExternalRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalRegistry")
            .field("url", &self.transport.base())
            .field("capabilities", &self.capabilities.get())
            .field("data_contracts", &self.data_contracts.get())
            .finish_non_exhaustive()
    }
}

impl ExternalRegistry {
    /// A client for the registry `config` names; `checker` judges
    /// compatibility where the registry cannot (or to explain its verdict).
    /// Nothing is sent until the first call.
    ///
    /// # Errors
    /// [`ConfigError`] when a certificate or key file cannot be read or used.
    pub fn new(config: &ExternalConfig, checker: Checker) -> Result<Self, ConfigError> {
        Ok(Self {
            transport: Transport::new(config)?,
            checker,
            capabilities: OnceCell::new(),
            data_contracts: OnceCell::new(),
        })
    }

    /// The base URL in use: the first of the configured URLs, or the
    /// fallback the last connection failure moved on to.
    pub fn endpoint(&self) -> &str {
        self.transport.base()
    }

    /// What the registry supports, probed on first use and then cached.
    ///
    /// # Errors
    /// A transient error when the registry cannot be reached (not cached),
    /// or an authorization error.
    pub async fn capabilities(&self) -> Result<Capabilities, Error> {
        self.capabilities
            .get_or_try_init(|| Capabilities::probe(&self.transport))
            .await
            .copied()
    }

    /// Whether the registry keeps data-contract settings and the metadata
    /// and rule sets of registrations: probed when first asked (the probe
    /// may write a configuration to a scratch subject, and removes it; see
    /// [`capabilities`]), then cached.
    ///
    /// # Errors
    /// A transient error when the registry cannot be reached (not cached).
    pub async fn data_contracts(&self) -> Result<bool, Error> {
        self.data_contracts
            .get_or_try_init(|| capabilities::probe_data_contracts(&self.transport))
            .await
            .map(|found| found.0)
    }

    fn contracts_unsupported(&self) -> Error {
        Error::Unsupported {
            url: self.transport.base().to_owned(),
            feature: "data-contract settings",
        }
    }

    /// [`Error::Unsupported`], before anything is sent, for a subject mode
    /// write on a server that cannot hold one.
    async fn refuse_subject_mode(&self, subject: Option<&SubjectName>) -> Result<(), Error> {
        if subject.is_some() && !self.capabilities().await?.subject_mode {
            return Err(Error::Unsupported {
                url: self.transport.base().to_owned(),
                feature: "a per-subject mode",
            });
        }
        Ok(())
    }

    async fn normalize_query(&self) -> Result<Vec<(&'static str, String)>, Error> {
        Ok(if self.capabilities().await?.normalize {
            vec![("normalize", "true".to_owned())]
        } else {
            Vec::new()
        })
    }

    /// The registry's own verdict on `schema`, when it has the endpoint.
    async fn registry_verdict(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<Option<wire::CheckReply>, Error> {
        let capabilities = self.capabilities().await?;
        let path = match against {
            None if !capabilities.check_all_versions => return Ok(None),
            None => format!("/compatibility/subjects/{}/versions", segment(subject.as_str())),
            Some(selector) => format!(
                "/compatibility/subjects/{}/versions/{}",
                segment(subject.as_str()),
                selector
            ),
        };
        let mut query = self.normalize_query().await?;
        if capabilities.verbose {
            query.push(("verbose", "true".to_owned()));
        }
        let body = wire::schema_body(schema, RegisterOptions::default());
        let about = About {
            subject: Some(subject),
            version: against,
        };
        self.transport
            .json(Method::POST, &path, &query, Some(&body), about)
            .await
            .map(Some)
    }
}

fn subject_path(prefix: &str, subject: Option<&SubjectName>) -> String {
    match subject {
        Some(subject) => format!("{prefix}/{}", segment(subject.as_str())),
        None => prefix.to_owned(),
    }
}

fn flag(name: &'static str, value: bool) -> (&'static str, String) {
    (name, value.to_string())
}

/// Whether an answer means "this server has no such endpoint" rather than a
/// Confluent error about the subject.
fn endpoint_missing(error: &Error) -> bool {
    matches!(error, Error::Remote { status: 404 | 405, .. })
}

#[async_trait]
impl Registry for ExternalRegistry {
    async fn schema_by_id(&self, id: SchemaId) -> Result<Arc<SchemaContent>, Error> {
        let reply: wire::ContentReply = self
            .transport
            .json(Method::GET, &format!("/schemas/ids/{id}"), &[], None, About::default())
            .await?;
        Ok(Arc::new(reply.into_content()?))
    }

    async fn schema_by_guid(&self, guid: Guid) -> Result<(SchemaId, Arc<SchemaContent>), Error> {
        let content: wire::ContentReply = self
            .transport
            .json(
                Method::GET,
                &format!("/schemas/guids/{guid}"),
                &[],
                None,
                About::default(),
            )
            .await?;
        let ids: Vec<wire::ContextIdReply> = self
            .transport
            .json(
                Method::GET,
                &format!("/schemas/guids/{guid}/ids"),
                &[],
                None,
                About::default(),
            )
            .await?;
        let id = wire::default_context_id(&ids).ok_or_else(|| Error::SchemaNotFound {
            what: format!("with GUID {guid} in the default context"),
        })?;
        Ok((id, Arc::new(content.into_content()?)))
    }

    async fn serialized_by_id(&self, id: SchemaId) -> Result<String, Error> {
        let reply: wire::ContentReply = self
            .transport
            .json(
                Method::GET,
                &format!("/schemas/ids/{id}"),
                &[("format", "serialized".to_owned())],
                None,
                About::default(),
            )
            .await?;
        Ok(reply.schema)
    }

    async fn versions_of_id(&self, id: SchemaId, include_deleted: bool) -> Result<Vec<SubjectVersion>, Error> {
        let reply: Vec<wire::SubjectVersionReply> = self
            .transport
            .json(
                Method::GET,
                &format!("/schemas/ids/{id}/versions"),
                &[flag("deleted", include_deleted)],
                None,
                About::default(),
            )
            .await?;
        let mut found: Vec<SubjectVersion> = reply
            .into_iter()
            .map(|held| SubjectVersion {
                subject: held.subject,
                version: held.version,
            })
            .collect();
        found.sort();
        Ok(found)
    }

    async fn subjects(&self, filter: &SubjectFilter) -> Result<Vec<SubjectName>, Error> {
        let mut query = vec![
            flag("deleted", filter.include_deleted),
            flag("deletedOnly", filter.deleted_only),
        ];
        if let Some(prefix) = &filter.prefix {
            query.push(("subjectPrefix", prefix.clone()));
        }
        let mut names: Vec<SubjectName> = self
            .transport
            .json(Method::GET, "/subjects", &query, None, About::default())
            .await?;
        names.sort();
        Ok(names)
    }

    async fn versions(&self, subject: &SubjectName, filter: VersionFilter) -> Result<Vec<Version>, Error> {
        let query = match filter {
            VersionFilter::Live => vec![],
            VersionFilter::All => vec![flag("deleted", true)],
            VersionFilter::DeletedOnly => vec![flag("deletedOnly", true)],
        };
        let about = About {
            subject: Some(subject),
            version: None,
        };
        let mut versions: Vec<Version> = self
            .transport
            .json(
                Method::GET,
                &format!("/subjects/{}/versions", segment(subject.as_str())),
                &query,
                None,
                about,
            )
            .await?;
        versions.sort();
        Ok(versions)
    }

    async fn version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        let about = About {
            subject: Some(subject),
            version: Some(version),
        };
        let reply: wire::SchemaReply = self
            .transport
            .json(
                Method::GET,
                &format!("/subjects/{}/versions/{}", segment(subject.as_str()), version),
                &[flag("deleted", include_deleted)],
                None,
                about,
            )
            .await?;
        reply.into_versioned(subject)
    }

    async fn lookup(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        let mut query = self.normalize_query().await?;
        query.push(flag("deleted", include_deleted));
        let body = wire::schema_body(schema, RegisterOptions::default());
        let about = About {
            subject: Some(subject),
            version: None,
        };
        let reply: wire::SchemaReply = self
            .transport
            .json(
                Method::POST,
                &format!("/subjects/{}", segment(subject.as_str())),
                &query,
                Some(&body),
                about,
            )
            .await?;
        reply.into_versioned(subject)
    }

    async fn register(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
    ) -> Result<Registered, Error> {
        // An IMPORT registration (an explicit ID) stores the text exactly as
        // given: no `normalize`, and no lookup that could match another
        // text normalized alike.
        let importing = options.id.is_some();
        if !importing {
            match self.lookup(subject, schema, false).await {
                Ok(found) => {
                    return Ok(Registered {
                        id: found.id,
                        version: found.version,
                        created: false,
                    });
                }
                Err(Error::SubjectNotFound { .. } | Error::SchemaNotFound { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        let body = wire::schema_body(schema, options);
        let about = About {
            subject: Some(subject),
            version: None,
        };
        let reply: wire::RegisterReply = self
            .transport
            .json(
                Method::POST,
                &format!("/subjects/{}/versions", segment(subject.as_str())),
                &if importing {
                    Vec::new()
                } else {
                    self.normalize_query().await?
                },
                Some(&body),
                about,
            )
            .await?;
        let id = wire::schema_id(reply.id)?;
        let version = match (reply.version.map(Version::new), options.version) {
            (Some(Ok(version)), _) => version,
            // Confluent answers an IMPORT registration with the ID only.
            (_, Some(version)) if importing => version,
            _ => self.lookup(subject, schema, false).await?.version,
        };
        tracing::info!(subject = %subject, %id, %version, "Registered schema in the external registry");
        Ok(Registered {
            id,
            version,
            created: true,
        })
    }

    async fn check(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        let level = self.compatibility(Some(subject), true).await?;
        let live = match self.versions(subject, VersionFilter::Live).await {
            Ok(live) => live,
            Err(Error::SubjectNotFound { .. }) => Vec::new(),
            Err(error) => return Err(error),
        };
        let (level, chosen) = match against {
            None => {
                let mut positions = level.versions_to_check(live.len());
                positions.sort_unstable();
                (
                    level,
                    positions.into_iter().map(|position| live[position - 1]).collect(),
                )
            }
            Some(VersionSelector::Latest) => (level.against_one_version(), live.last().copied().into_iter().collect()),
            Some(VersionSelector::Exact(version)) => {
                if !live.contains(&version) {
                    return Err(Error::VersionNotFound {
                        subject: subject.clone(),
                        version: version.to_string(),
                    });
                }
                (level.against_one_version(), vec![version])
            }
        };
        let report = engine::check(self, self.checker, subject, schema, level, &chosen).await?;
        // A second opinion: the registry may know rules we do not (a
        // registry-side rule set, another JSON Schema policy). When it
        // refuses what our engine accepts, its message is the report.
        // An endpoint the server answers oddly does not spoil our verdict;
        // being unreachable or refused does.
        let verdict = if report.is_compatible() && level != Mode::None {
            match self.registry_verdict(subject, schema, against).await {
                Ok(verdict) => verdict,
                Err(error) if error.is_unanswered() && !matches!(error, Error::Remote { .. }) => return Err(error),
                Err(error) => {
                    tracing::debug!(subject = %subject, error = &error as &dyn std::error::Error, "The registry's own check failed; keeping ours");
                    None
                }
            }
        } else {
            None
        };
        if let Some(verdict) = verdict
            && !verdict.is_compatible
        {
            let messages: Vec<String> = verdict
                .messages
                .unwrap_or_default()
                .iter()
                .map(|message| match message {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect();
            let message = if messages.is_empty() {
                "the registry judged the schema incompatible without saying why".to_owned()
            } else {
                messages.join("; ")
            };
            return Err(Error::Rejected { message });
        }
        Ok(CompatibilityResult { level, report })
    }

    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        let about = About { subject, version: None };
        let query = if subject.is_some() {
            vec![flag("defaultToGlobal", fallback)]
        } else {
            vec![]
        };
        let reply: Result<wire::ConfigReply, Error> = self
            .transport
            .json(Method::GET, &subject_path("/config", subject), &query, None, about)
            .await;
        match (reply, subject) {
            (Ok(reply), Some(subject)) if !reply.has_level() && !fallback => {
                Err(Error::SubjectCompatibilityNotConfigured {
                    subject: subject.clone(),
                })
            }
            (Ok(reply), Some(_)) if !reply.has_level() => self.compatibility(None, false).await,
            (Ok(reply), _) => reply.level(),
            // Servers before 7.0 say 40401 for "no level of its own".
            (Err(Error::SubjectNotFound { .. }), Some(subject)) if !fallback => {
                Err(Error::SubjectCompatibilityNotConfigured {
                    subject: subject.clone(),
                })
            }
            (Err(Error::SubjectNotFound { .. }), Some(_)) => self.compatibility(None, false).await,
            (Err(error), _) => Err(error),
        }
    }

    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        let about = About { subject, version: None };
        let body = serde_json::json!({ "compatibility": level.as_str() });
        let reply: wire::ConfigReply = self
            .transport
            .json(Method::PUT, &subject_path("/config", subject), &[], Some(&body), about)
            .await?;
        reply.level().or(Ok(level))
    }

    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        let about = About { subject, version: None };
        let reply: Result<wire::ConfigReply, Error> = self
            .transport
            .json(Method::DELETE, &subject_path("/config", subject), &[], None, about)
            .await;
        match (reply, subject) {
            (Ok(reply), _) => reply.level(),
            (Err(Error::SubjectNotFound { .. }), Some(subject)) => Err(Error::SubjectCompatibilityNotConfigured {
                subject: subject.clone(),
            }),
            (Err(error), _) => Err(error),
        }
    }

    async fn contract_config(&self, subject: Option<&SubjectName>) -> Result<ContractConfig, Error> {
        let about = About { subject, version: None };
        let reply: Result<wire::ConfigReply, Error> = self
            .transport
            .json(Method::GET, &subject_path("/config", subject), &[], None, about)
            .await;
        match reply {
            Ok(reply) => Ok(reply.settings),
            Err(Error::SubjectNotFound { .. } | Error::SubjectCompatibilityNotConfigured { .. }) => {
                Ok(ContractConfig::default())
            }
            Err(error) => Err(error),
        }
    }

    /// Sends the patch as Confluent's `PUT /config` takes it, then reads the
    /// settings back: a registry that drops them (Karapace ignores fields it
    /// does not know) is [`Error::Unsupported`], never a silent success.
    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error> {
        // Never sent to a registry that would refuse it (Karapace: 422) or
        // take it and keep nothing.
        if !self.data_contracts().await? {
            return Err(self.contracts_unsupported());
        }
        let about = About { subject, version: None };
        let body = serde_json::to_value(patch).unwrap_or_default();
        let sent: Result<wire::ConfigReply, Error> = self
            .transport
            .json(Method::PUT, &subject_path("/config", subject), &[], Some(&body), about)
            .await;
        match sent {
            Ok(_) => {}
            // A registry that wants a level in every configuration (Karapace,
            // Confluent before data contracts) has none of these settings.
            Err(
                Error::InvalidCompatibilityLevel { .. }
                | Error::Remote {
                    status: 422, code: 422, ..
                },
            ) => {
                return Err(self.contracts_unsupported());
            }
            Err(error) => return Err(error),
        }
        let held = self.contract_config(subject).await?;
        if patch.apply(&held)? != held {
            return Err(self.contracts_unsupported());
        }
        Ok(held)
    }

    async fn mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        let capabilities = self.capabilities().await?;
        if !capabilities.mode {
            return match subject {
                Some(subject) if !fallback => Err(Error::SubjectModeNotConfigured {
                    subject: subject.clone(),
                }),
                _ => Ok(RegistryMode::ReadWrite),
            };
        }
        // A server without subject modes answers for a subject with the
        // global mode: never take that for the subject's own.
        if let Some(subject) = subject
            && !capabilities.subject_mode
        {
            return if fallback {
                self.mode(None, false).await
            } else {
                Err(Error::SubjectModeNotConfigured {
                    subject: subject.clone(),
                })
            };
        }
        let about = About { subject, version: None };
        let query = if subject.is_some() {
            vec![flag("defaultToGlobal", fallback)]
        } else {
            vec![]
        };
        let reply: Result<wire::ModeReply, Error> = self
            .transport
            .json(Method::GET, &subject_path("/mode", subject), &query, None, about)
            .await;
        match (reply, subject) {
            (Ok(reply), _) => reply.mode(),
            // Karapace serves `GET /mode` only: subjects have no mode of their
            // own, and the global one is in force.
            (Err(error), Some(_)) if fallback && endpoint_missing(&error) => self.mode(None, false).await,
            (Err(error), Some(subject)) if endpoint_missing(&error) => Err(Error::SubjectModeNotConfigured {
                subject: subject.clone(),
            }),
            (Err(Error::SubjectNotFound { .. }), Some(_)) if fallback => self.mode(None, false).await,
            (Err(Error::SubjectNotFound { .. }), Some(subject)) => Err(Error::SubjectModeNotConfigured {
                subject: subject.clone(),
            }),
            (Err(error), _) => Err(error),
        }
    }

    async fn set_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject).await?;
        let about = About { subject, version: None };
        let body = serde_json::json!({ "mode": mode.as_str() });
        let reply: wire::ModeReply = self
            .transport
            .json(
                Method::PUT,
                &subject_path("/mode", subject),
                &[flag("force", force)],
                Some(&body),
                about,
            )
            .await?;
        reply.mode()
    }

    async fn delete_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.refuse_subject_mode(subject).await?;
        let about = About { subject, version: None };
        let reply: Result<wire::ModeReply, Error> = self
            .transport
            .json(Method::DELETE, &subject_path("/mode", subject), &[], None, about)
            .await;
        match (reply, subject) {
            (Ok(reply), _) => reply.mode(),
            // Confluent answers 40401 for a subject without a mode of its own.
            (Err(Error::SubjectNotFound { .. }), Some(subject)) => Err(Error::SubjectModeNotConfigured {
                subject: subject.clone(),
            }),
            (Err(error), _) => Err(error),
        }
    }

    async fn supports_subject_mode(&self) -> Result<bool, Error> {
        Ok(self.capabilities().await?.subject_mode)
    }

    async fn supports_data_contracts(&self) -> Result<bool, Error> {
        self.data_contracts().await
    }

    async fn delete_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        permanent: bool,
    ) -> Result<Version, Error> {
        let about = About {
            subject: Some(subject),
            version: Some(version),
        };
        let number: i64 = self
            .transport
            .json(
                Method::DELETE,
                &format!("/subjects/{}/versions/{}", segment(subject.as_str()), version),
                &[flag("permanent", permanent)],
                None,
                about,
            )
            .await?;
        Version::new(number)
    }

    async fn delete_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
        let about = About {
            subject: Some(subject),
            version: None,
        };
        let mut deleted: Vec<Version> = self
            .transport
            .json(
                Method::DELETE,
                &format!("/subjects/{}", segment(subject.as_str())),
                &[flag("permanent", permanent)],
                None,
                about,
            )
            .await?;
        deleted.sort();
        Ok(deleted)
    }

    async fn referenced_by(&self, subject: &SubjectName, version: VersionSelector) -> Result<Vec<SchemaId>, Error> {
        let about = About {
            subject: Some(subject),
            version: Some(version),
        };
        let mut ids: Vec<SchemaId> = self
            .transport
            .json(
                Method::GET,
                &format!(
                    "/subjects/{}/versions/{}/referencedby",
                    segment(subject.as_str()),
                    version
                ),
                &[],
                None,
                about,
            )
            .await?;
        ids.sort();
        Ok(ids)
    }

    /// Refused: the remote registry has no search, and indexing it would
    /// mean reading every version of every subject.
    async fn search(&self, _query: &crate::registry::search::Query) -> Result<crate::registry::search::Found, Error> {
        Err(Error::Unsupported {
            url: self.transport.base().to_owned(),
            feature: "a search index (search needs the embedded registry)",
        })
    }

    /// All three: our engine checks every format, whatever the server
    /// stores (in `GET /schemas/types` order, as the embedded registry).
    fn schema_types(&self) -> Vec<Format> {
        vec![Format::Json, Format::Protobuf, Format::Avro]
    }
}

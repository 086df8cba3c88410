//! The schema registry: the [`Registry`] trait that the REST API and the
//! controller call, its domain types, and its errors with Confluent's codes.
//!
//! Knows nothing of Kubernetes. `embedded` stores versions itself; `external`
//! talks to a remote Confluent-compatible registry; `api`
//! serves the Confluent REST API over any `Registry`; `tls` builds the
//! rustls client configurations of the connections the registry opens.

pub mod api;
pub mod context;
pub mod contract;
pub mod embedded;
mod error;
pub mod external;
mod guid;
pub mod held;
pub mod request_budget;
pub mod search;
pub mod tls;
mod types;

use std::sync::Arc;

use async_trait::async_trait;

pub use error::Error;
pub use guid::{Guid, InvalidGuid};
pub use types::{
    CompatibilityResult, NewSchema, RegisterOptions, Registered, RegistryMode, SchemaContent, SchemaId,
    SchemaReference, SharedVersion, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter,
    VersionSelector, VersionedSchema,
};

use crate::compat::{Format, Mode};
use contract::{ConfigPatch, ContractConfig};

/// A Confluent-compatible schema registry.
///
/// Subjects hold versions 1, 2, 3…; a version is immutable. A schema ID is
/// global and names the schema's content: the same schema under two
/// subjects has one ID, and an ID is never given to other content.
#[async_trait]
pub trait Registry: Send + Sync {
    /// The schema with this ID, while some version (even soft-deleted) holds it.
    async fn schema_by_id(&self, id: SchemaId) -> Result<Arc<SchemaContent>, Error>;

    /// The schema with this ID as Confluent's `format=serialized` returns it:
    /// a base64 `FileDescriptorProto` for Protobuf, the text for other formats.
    async fn serialized_by_id(&self, id: SchemaId) -> Result<String, Error>;

    /// Every (subject, version) that holds the schema with this ID.
    async fn versions_of_id(&self, id: SchemaId, include_deleted: bool) -> Result<Vec<SubjectVersion>, Error>;

    /// The subjects that match `filter`, sorted.
    async fn subjects(&self, filter: &SubjectFilter) -> Result<Vec<SubjectName>, Error>;

    /// The versions of a subject that match `filter`, ascending.
    async fn versions(&self, subject: &SubjectName, filter: VersionFilter) -> Result<Vec<Version>, Error>;

    /// One version of a subject.
    async fn version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error>;

    /// One version of a subject as [`Registry::version`] finds it, its
    /// content shared rather than copied where the registry holds it in
    /// memory. By default a copy made through [`Registry::version`].
    async fn shared_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<SharedVersion, Error> {
        Ok(SharedVersion::from(
            self.version(subject, version, include_deleted).await?,
        ))
    }

    /// The version of `subject` that holds `schema`, if any (no write).
    async fn lookup(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error>;

    /// Registers `schema` under `subject` if the subject's compatibility
    /// level allows it; returns the existing version when the subject
    /// already holds the schema.
    async fn register(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
    ) -> Result<Registered, Error>;

    /// Whether `schema` could be registered under `subject`: against one
    /// version (`Some`), or against the versions the level implies (`None`).
    async fn check(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error>;

    /// The compatibility level of a subject (`Some`) or the global one
    /// (`None`). With `fallback`, a subject without its own level gets the global one.
    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error>;

    /// Sets a subject's (or the global) compatibility level.
    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error>;

    /// Removes a subject's level (or resets the global one); returns the old
    /// level. A subject's data-contract settings go with it, as Confluent
    /// removes a subject's whole configuration.
    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error>;

    /// The ID and content of the schema with this GUID, while some version
    /// (even soft-deleted) holds it.
    ///
    /// # Errors
    /// [`Error::SchemaNotFound`]; [`Error::Unsupported`] from a registry that
    /// cannot look schemas up by GUID.
    async fn schema_by_guid(&self, guid: Guid) -> Result<(SchemaId, Arc<SchemaContent>), Error>;

    /// A subject's own (or the global) data-contract settings: empty when it has none.
    ///
    /// # Errors
    /// A transient error when the registry cannot be asked.
    async fn contract_config(&self, subject: Option<&SubjectName>) -> Result<ContractConfig, Error>;

    /// The data-contract settings registrations to `subject` are under: the
    /// first configuration found on the subject itself, then on the subjects
    /// it falls back to (its context's, then `:.__GLOBAL:`), else the global
    /// settings — Confluent takes a whole configuration in scope. A subject
    /// has a configuration when it has a level or any setting of its own.
    ///
    /// # Errors
    /// A transient error when the registry cannot be asked.
    async fn contract_config_in_scope(&self, subject: &SubjectName) -> Result<ContractConfig, Error> {
        let mut chain = vec![subject.clone()];
        for fallback in context::fallbacks(subject.as_str()) {
            chain.push(SubjectName::new(fallback)?);
        }
        for candidate in &chain {
            let settings = self.contract_config(Some(candidate)).await?;
            let has_level = match self.compatibility(Some(candidate), false).await {
                Ok(_) => true,
                Err(error) if error.is_unanswered() => return Err(error),
                Err(_) => false,
            };
            if has_level || !settings.is_empty() {
                return Ok(settings);
            }
        }
        self.contract_config(None).await
    }

    /// Applies `patch` to a subject's own (or the global) data-contract
    /// settings; returns them as they are now.
    ///
    /// # Errors
    /// [`Error::InvalidRuleSet`] for a rule set that is not valid;
    /// [`Error::Unsupported`] from a registry without data contracts.
    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error>;

    /// The newest version of `subject` whose metadata holds every
    /// `(key, value)` property (with none: the newest version that has
    /// metadata), as Confluent's `GET /subjects/{s}/metadata` finds it.
    ///
    /// # Errors
    /// [`Error::SubjectNotFound`]; [`Error::SchemaNotFound`] when no version matches.
    async fn latest_with_metadata(
        &self,
        subject: &SubjectName,
        properties: &[(String, String)],
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        let filter = if include_deleted {
            VersionFilter::All
        } else {
            VersionFilter::Live
        };
        let versions = self.versions(subject, filter).await?;
        for number in versions.into_iter().rev() {
            let version = self
                .version(subject, VersionSelector::Exact(number), include_deleted)
                .await?;
            let Some(metadata) = &version.contract.metadata else {
                continue;
            };
            let holds = properties
                .iter()
                .all(|(key, value)| metadata.properties.get(key) == Some(value));
            if holds {
                return Ok(version);
            }
        }
        Err(Error::SchemaNotFound {
            what: format!("with the given metadata under subject `{subject}`"),
        })
    }

    /// The mode of a subject (`Some`) or the global one (`None`).
    async fn mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error>;

    /// Sets a subject's (or the global) mode.
    async fn set_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error>;

    /// Removes a subject's mode (or resets the global one); returns the old mode.
    async fn delete_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error>;

    /// The subjects (and contexts, as `:.ctx:`) that have a mode of their
    /// own whose names start with `prefix`: what `DELETE /mode?recursive=true`
    /// removes.
    ///
    /// # Errors
    /// [`Error::Unsupported`] from a registry that cannot list them.
    async fn subjects_with_mode(&self, prefix: &str) -> Result<Vec<SubjectName>, Error> {
        let _ = prefix;
        Err(Error::Unsupported {
            url: "this registry".to_owned(),
            feature: "listing the subjects that have a mode",
        })
    }

    /// Whether a subject can hold a mode of its own. Karapace cannot: it
    /// serves `GET /mode` only, and answers for a subject with the global
    /// mode. Without it, subject modes are never written, deleted or claimed.
    ///
    /// # Errors
    /// A transient error when the registry cannot be asked.
    async fn supports_subject_mode(&self) -> Result<bool, Error> {
        Ok(true)
    }

    /// Whether data-contract settings (compatibility groups, default and
    /// override metadata and rule sets) and the `metadata` and `ruleSet` of
    /// registrations are kept. Karapace and Confluent before 7.4 keep none:
    /// there, no such setting is written or taken as in force.
    ///
    /// # Errors
    /// A transient error when the registry cannot be asked.
    async fn supports_data_contracts(&self) -> Result<bool, Error> {
        Ok(true)
    }

    /// Soft-deletes (or, with `permanent`, hard-deletes a soft-deleted) version.
    async fn delete_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        permanent: bool,
    ) -> Result<Version, Error>;

    /// Soft-deletes every version of a subject (or, with `permanent`,
    /// removes a soft-deleted subject); returns the versions deleted.
    async fn delete_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error>;

    /// The IDs of the schemas whose references name this version.
    async fn referenced_by(&self, subject: &SubjectName, version: VersionSelector) -> Result<Vec<SchemaId>, Error>;

    /// How many referrers the live versions of `subject` have, summed over
    /// the versions (the subject list's "Referenced by"). The default asks
    /// [`Registry::referenced_by`] once per version; a registry that keeps
    /// an index answers in one look.
    async fn referrer_count(&self, subject: &SubjectName) -> Result<usize, Error> {
        let mut count = 0;
        for version in self.versions(subject, VersionFilter::Live).await? {
            count += self
                .referenced_by(subject, VersionSelector::Exact(version))
                .await?
                .len();
        }
        Ok(count)
    }

    /// The highest schema ID given so far (Confluent's `maxId` of
    /// `GET /schemas/ids/{id}?fetchMaxId=true`); `None` when the registry
    /// cannot tell (the default) or has given none.
    ///
    /// # Errors
    /// A transient error when the registry cannot be asked.
    async fn max_schema_id(&self) -> Result<Option<SchemaId>, Error> {
        Ok(None)
    }

    /// Subjects by name, or the elements of live versions by name (see
    /// [`search`]). The default, for a registry that keeps no index (an
    /// external one), is [`Error::Unsupported`].
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the registry cannot search.
    async fn search(&self, _query: &search::Query) -> Result<search::Found, Error> {
        Err(Error::Unsupported {
            url: "the connected registry".to_owned(),
            feature: "a search index (search needs the embedded registry)",
        })
    }

    /// The schema types this registry can check and store.
    fn schema_types(&self) -> Vec<Format>;

    /// How much the store holds, cheaply (for metrics); `None` when the
    /// registry cannot tell without remote calls (an external registry).
    fn stats(&self) -> Option<Stats> {
        None
    }
}

/// The size of a registry's store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Distinct schemas (IDs).
    pub schemas: usize,
    /// Subjects, soft-deleted ones included.
    pub subjects: usize,
    /// Subject versions, soft-deleted ones included.
    pub versions: usize,
}

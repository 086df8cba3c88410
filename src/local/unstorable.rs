//! A scratch registry seen together with the versions its source holds but
//! the scratch cannot store: texts our engine refuses, which a more lenient
//! registry accepted (Karapace stores an Avro `int` field with the default
//! `"x"`, and a Protobuf message with a duplicate field number).
//!
//! Reads see those versions where the source has them, so `check` decides
//! about each object exactly as `apply` against the source would: an object
//! whose decision reads such a version is `InvalidSchema`, naming that
//! stored version, and the others are judged as usual.
//!
//! # Caveats
//! A registration on a subject holding such versions is numbered by the
//! scratch, after the versions it stores; it only happens under NONE (every
//! other level reads the latest version).

use std::sync::Arc;

use async_trait::async_trait;

use crate::compat::{Format, Mode};
use crate::registry::contract::{ConfigPatch, ContractConfig};
use crate::registry::embedded::EmbeddedRegistry;
use crate::registry::{
    CompatibilityResult, Error, Guid, NewSchema, RegisterOptions, Registered, Registry, RegistryMode, SchemaContent,
    SchemaId, Stats, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter, VersionSelector,
    VersionedSchema,
};

/// Whether the scratch refused a version for its content (so the source
/// stores something our engine cannot read), rather than failing.
pub fn refused_as_unreadable(error: &Error) -> bool {
    matches!(
        error,
        Error::InvalidSchema { .. } | Error::TooComplex { .. } | Error::SchemaTooLarge { .. }
    )
}

/// The scratch registry with the source's unstorable versions laid over it.
#[derive(Debug)]
pub struct WithUnstorable<'a> {
    /// The scratch registry.
    pub scratch: &'a EmbeddedRegistry,
    /// The live versions the source holds and the scratch could not store.
    pub unstorable: &'a [VersionedSchema],
}

impl WithUnstorable<'_> {
    fn unstorable_of<'s>(&'s self, subject: &'s SubjectName) -> impl Iterator<Item = &'s VersionedSchema> + 's {
        self.unstorable.iter().filter(move |held| held.subject == *subject)
    }
}

#[async_trait]
impl Registry for WithUnstorable<'_> {
    async fn schema_by_id(&self, id: SchemaId) -> Result<Arc<SchemaContent>, Error> {
        self.scratch.schema_by_id(id).await
    }

    async fn serialized_by_id(&self, id: SchemaId) -> Result<String, Error> {
        self.scratch.serialized_by_id(id).await
    }

    async fn versions_of_id(&self, id: SchemaId, include_deleted: bool) -> Result<Vec<SubjectVersion>, Error> {
        self.scratch.versions_of_id(id, include_deleted).await
    }

    async fn subjects(&self, filter: &SubjectFilter) -> Result<Vec<SubjectName>, Error> {
        let mut names = self.scratch.subjects(filter).await?;
        if !filter.deleted_only {
            let prefix = filter.prefix.as_deref().unwrap_or_default();
            names.extend(
                self.unstorable
                    .iter()
                    .map(|held| held.subject.clone())
                    .filter(|subject| subject.as_str().starts_with(prefix)),
            );
            names.sort();
            names.dedup();
        }
        Ok(names)
    }

    async fn versions(&self, subject: &SubjectName, filter: VersionFilter) -> Result<Vec<Version>, Error> {
        let stored = self.scratch.versions(subject, filter).await;
        let extra: Vec<Version> = match filter {
            VersionFilter::DeletedOnly => Vec::new(),
            VersionFilter::Live | VersionFilter::All => self.unstorable_of(subject).map(|held| held.version).collect(),
        };
        let mut versions = match stored {
            Ok(versions) => versions,
            Err(Error::SubjectNotFound { .. }) if !extra.is_empty() => Vec::new(),
            Err(error) => return Err(error),
        };
        versions.extend(extra);
        versions.sort();
        versions.dedup();
        Ok(versions)
    }

    async fn version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        let number = match version {
            VersionSelector::Exact(number) => number,
            VersionSelector::Latest => match self.versions(subject, VersionFilter::Live).await?.last() {
                Some(newest) => *newest,
                None => return self.scratch.version(subject, version, include_deleted).await,
            },
        };
        match self.unstorable_of(subject).find(|held| held.version == number) {
            Some(held) => Ok(held.clone()),
            None => {
                self.scratch
                    .version(subject, VersionSelector::Exact(number), include_deleted)
                    .await
            }
        }
    }

    async fn lookup(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        include_deleted: bool,
    ) -> Result<VersionedSchema, Error> {
        self.scratch.lookup(subject, schema, include_deleted).await
    }

    async fn register(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        options: RegisterOptions,
    ) -> Result<Registered, Error> {
        self.scratch.register(subject, schema, options).await
    }

    async fn check(
        &self,
        subject: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        self.scratch.check(subject, schema, against).await
    }

    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        self.scratch.compatibility(subject, fallback).await
    }

    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        self.scratch.set_compatibility(subject, level).await
    }

    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        self.scratch.delete_compatibility(subject).await
    }

    async fn schema_by_guid(&self, guid: Guid) -> Result<(SchemaId, Arc<SchemaContent>), Error> {
        self.scratch.schema_by_guid(guid).await
    }

    async fn contract_config(&self, subject: Option<&SubjectName>) -> Result<ContractConfig, Error> {
        self.scratch.contract_config(subject).await
    }

    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &ConfigPatch,
    ) -> Result<ContractConfig, Error> {
        self.scratch.update_contract_config(subject, patch).await
    }

    async fn mode(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        self.scratch.mode(subject, fallback).await
    }

    async fn set_mode(
        &self,
        subject: Option<&SubjectName>,
        mode: RegistryMode,
        force: bool,
    ) -> Result<RegistryMode, Error> {
        self.scratch.set_mode(subject, mode, force).await
    }

    async fn delete_mode(&self, subject: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.scratch.delete_mode(subject).await
    }

    async fn supports_subject_mode(&self) -> Result<bool, Error> {
        self.scratch.supports_subject_mode().await
    }

    async fn supports_data_contracts(&self) -> Result<bool, Error> {
        self.scratch.supports_data_contracts().await
    }

    async fn delete_version(
        &self,
        subject: &SubjectName,
        version: VersionSelector,
        permanent: bool,
    ) -> Result<Version, Error> {
        self.scratch.delete_version(subject, version, permanent).await
    }

    async fn delete_subject(&self, subject: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
        self.scratch.delete_subject(subject, permanent).await
    }

    async fn referenced_by(&self, subject: &SubjectName, version: VersionSelector) -> Result<Vec<SchemaId>, Error> {
        self.scratch.referenced_by(subject, version).await
    }

    fn schema_types(&self) -> Vec<Format> {
        self.scratch.schema_types()
    }

    fn stats(&self) -> Option<Stats> {
        self.scratch.stats()
    }
}

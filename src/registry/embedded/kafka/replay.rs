//! Turns the topic's records, oldest first, into the store's model: the
//! [`Change`]s each record makes, and the [`Snapshot`] of everything read.
//!
//! Pure: no I/O. The schema identity (fingerprint) is computed by the
//! caller's function, so this module needs no schema parser.
//!
//! What a record means follows Confluent's `KafkaStoreMessageHandler`: a
//! `SCHEMA` value adds a version or rewrites it (soft delete), its tombstone
//! removes it; `DELETE_SUBJECT` soft-deletes every version up to its
//! number; `CLEAR_SUBJECT` removes a subject's soft-deleted versions;
//! `CONFIG` and `MODE` set a subject's (or, without a subject, the global)
//! settings and their tombstones clear them. Removed versions stay retired:
//! the next version of a subject is one past the highest it ever had.
//!
//! # Caveats
//! Confluent counts schema IDs per context; the store's IDs are global, so
//! a topic with subjects or settings outside the default context is
//! refused ([`ReplayError::Context`]) rather than served with IDs that
//! might clash.

use std::collections::{BTreeMap, BTreeSet};

use crate::compat::{Format, Mode, Reference};
use crate::registry::context::{DEFAULT_CONTEXT, context_of};
use crate::registry::contract::{CompatibilityPolicy, Contract, ContractConfig};
use crate::registry::embedded::store::{Change, SchemaRow, Snapshot, StoreError, SubjectRow, VersionRow};
use crate::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

use serde_json::value::RawValue;

use super::format::{ConfigValue, Decoded, Encoded, Record, ReferenceValue, SchemaValue, encode};
use super::reader::Entry;

/// Computes a schema's identity from its format, text, references, the
/// texts of the schemas they name (each after those it refers to, as the
/// registry reads them; `None` when one is not in the topic) and contract
/// (the registry's fingerprint).
pub type Fingerprint<'a> = dyn Fn(Format, &str, &[SchemaReference], Option<&[Reference]>, &Contract) -> Result<String, StoreError>
    + Send
    + Sync
    + 'a;

/// Why a record cannot be taken into the model.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The record is in a context other than the default one.
    #[error(
        "the record at offset {offset} is in context {context} (subject {subject}); the Kafka store serves the default context only"
    )]
    Context {
        /// The record's offset.
        offset: i64,
        /// The subject.
        subject: String,
        /// Its context.
        context: String,
    },
    /// A field does not read as the registry's type.
    #[error("the record at offset {offset} has an invalid {field}: {problem}")]
    Invalid {
        /// The record's offset.
        offset: i64,
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A schema ID holds two different schemas.
    #[error("the record at offset {offset} gives schema ID {id} to another schema than it holds")]
    IdClash {
        /// The record's offset.
        offset: i64,
        /// The ID.
        id: SchemaId,
    },
    /// The caller's fingerprint failed.
    #[error("the schema at offset {offset} has no fingerprint")]
    Fingerprint {
        /// The record's offset.
        offset: i64,
        /// Why.
        #[source]
        source: StoreError,
    },
}

/// A subject's settings and the highest version it ever had.
#[derive(Debug, Clone, Default)]
struct SubjectState {
    highest_version: u32,
    compatibility: Option<Mode>,
    mode: Option<RegistryMode>,
    config: ContractConfig,
}

/// Everything read from the topic so far.
#[derive(Debug, Default)]
pub struct Replay {
    schemas: BTreeMap<SchemaId, SchemaRow>,
    /// The MD5 digests writers recorded, by schema, written back when a
    /// version is rewritten.
    digests: BTreeMap<SchemaId, String>,
    subjects: BTreeMap<SubjectName, SubjectState>,
    versions: BTreeMap<(SubjectName, Version), VersionRow>,
    retired: BTreeSet<(SubjectName, Version)>,
    compatibility: Option<Mode>,
    mode: Option<RegistryMode>,
    config: ContractConfig,
    /// The offset after the last entry applied.
    position: u64,
}

impl Replay {
    /// Applies one entry and returns what it changed, in the store's terms.
    ///
    /// # Errors
    /// [`ReplayError`] when the record cannot be represented; nothing of it
    /// is applied.
    pub fn apply(&mut self, entry: &Entry, fingerprint: &Fingerprint<'_>) -> Result<Vec<Change>, ReplayError> {
        let offset = entry.offset;
        let changes = match &entry.decoded {
            Decoded::Skipped { .. } | Decoded::Record(Record::Noop | Record::Context { .. }) => Vec::new(),
            Decoded::Record(Record::Schema {
                subject,
                version,
                value,
            }) => {
                let subject = subject_name(offset, subject)?;
                let version = version_number(offset, i64::from(*version))?;
                match value {
                    Some(value) => self.put_version(offset, subject, version, value, fingerprint)?,
                    None => self.remove_versions(&subject, |number, _| number == version),
                }
            }
            Decoded::Record(Record::DeleteSubject { subject, version }) => {
                let subject = subject_name(offset, subject)?;
                let last = i64::from(*version);
                let deleted: Vec<Version> = self
                    .versions_of(&subject)
                    .filter(|row| !row.deleted && i64::from(row.version.get()) <= last)
                    .map(|row| row.version)
                    .collect();
                deleted
                    .into_iter()
                    .map(|version| {
                        if let Some(row) = self.versions.get_mut(&(subject.clone(), version)) {
                            row.deleted = true;
                        }
                        Change::SoftDeleteVersion {
                            subject: subject.clone(),
                            version,
                        }
                    })
                    .collect()
            }
            Decoded::Record(Record::ClearSubject { subject }) => {
                let subject = subject_name(offset, subject)?;
                self.remove_versions(&subject, |_, row| row.deleted)
            }
            Decoded::Record(Record::Config { subject: None, value }) => {
                let (compatibility, config) = config_settings(offset, value.as_deref())?;
                self.compatibility = compatibility;
                self.config = config.clone();
                vec![
                    Change::SetGlobalCompatibility(compatibility),
                    Change::SetGlobalConfig(config),
                ]
            }
            Decoded::Record(Record::Config {
                subject: Some(subject),
                value,
            }) => {
                let subject = subject_name(offset, subject)?;
                let (compatibility, config) = config_settings(offset, value.as_deref())?;
                let state = self.subjects.entry(subject.clone()).or_default();
                state.compatibility = compatibility;
                state.config = config;
                vec![self.subject_change(&subject)]
            }
            Decoded::Record(Record::Mode { subject: None, mode }) => {
                self.mode = registry_mode(offset, mode.as_deref())?;
                vec![Change::SetGlobalMode(self.mode)]
            }
            Decoded::Record(Record::Mode {
                subject: Some(subject),
                mode,
            }) => {
                let subject = subject_name(offset, subject)?;
                let mode = registry_mode(offset, mode.as_deref())?;
                self.subjects.entry(subject.clone()).or_default().mode = mode;
                vec![self.subject_change(&subject)]
            }
        };
        self.position = u64::try_from(offset + 1).unwrap_or(0).max(self.position);
        Ok(changes)
    }

    fn versions_of<'a>(&'a self, subject: &'a SubjectName) -> impl Iterator<Item = &'a VersionRow> + 'a {
        self.versions
            .range((subject.clone(), Version::FIRST)..)
            .take_while(move |((name, _), _)| name == subject)
            .map(|(_, row)| row)
    }

    /// The texts of the schemas `references` name, each after those it
    /// refers to, deduplicated by name (as the registry reads them before
    /// parsing); `None` when one is not held (a hard-deleted version).
    fn reference_texts(&self, references: &[SchemaReference]) -> Option<Vec<Reference>> {
        let mut walk = ReferenceWalk::default();
        self.walk_references(references, 0, &mut walk).then_some(walk.texts)
    }

    fn walk_references(&self, references: &[SchemaReference], depth: usize, walk: &mut ReferenceWalk) -> bool {
        if depth > crate::registry::embedded::schemas::MAX_REFERENCE_DEPTH {
            return false;
        }
        for reference in references {
            if !walk.visited.insert((reference.subject.clone(), reference.version)) {
                continue;
            }
            let Some(schema) = self
                .versions
                .get(&(reference.subject.clone(), reference.version))
                .and_then(|row| self.schemas.get(&row.id))
            else {
                return false;
            };
            if !self.walk_references(&schema.references, depth + 1, walk) {
                return false;
            }
            if walk.names.insert(reference.name.clone()) {
                walk.texts.push(Reference {
                    name: reference.name.clone(),
                    text: schema.text.clone(),
                });
            }
        }
        true
    }

    fn put_version(
        &mut self,
        offset: i64,
        subject: SubjectName,
        version: Version,
        value: &SchemaValue,
        fingerprint: &Fingerprint<'_>,
    ) -> Result<Vec<Change>, ReplayError> {
        let id = SchemaId::new(i64::from(value.id)).ok_or_else(|| invalid(offset, "id", value.id.to_string()))?;
        let references = schema_references(offset, value)?;
        let referenced = self.reference_texts(&references);
        let schema = schema_row(offset, id, value, references, referenced.as_deref(), fingerprint)?;
        if let Some(md5) = &value.md5 {
            self.digests.entry(id).or_insert_with(|| md5.clone());
        }
        let mut changes = Vec::new();
        match self.schemas.get(&id) {
            Some(held) if held.fingerprint != schema.fingerprint => return Err(ReplayError::IdClash { offset, id }),
            Some(_) => {}
            None => {
                self.schemas.insert(id, schema.clone());
                changes.push(Change::PutSchema(schema));
            }
        }
        let key = (subject.clone(), version);
        match self.versions.get_mut(&key) {
            Some(row) if row.id == id => {
                if value.deleted && !row.deleted {
                    row.deleted = true;
                    changes.push(Change::SoftDeleteVersion { subject, version });
                }
                return Ok(changes);
            }
            Some(_) => {
                // The same version with another schema: only an IMPORT can
                // write that, and the store has no change for it; the later
                // record wins, as in Confluent's cache.
                changes.push(Change::RemoveVersion {
                    subject: subject.clone(),
                    version,
                });
            }
            None => {}
        }
        let row = VersionRow {
            subject: subject.clone(),
            version,
            id,
            deleted: value.deleted,
        };
        self.versions.insert(key, row.clone());
        let state = self.subjects.entry(subject.clone()).or_default();
        let grew = version.get() > state.highest_version;
        state.highest_version = state.highest_version.max(version.get());
        if grew {
            changes.push(self.subject_change(&subject));
        }
        changes.push(Change::PutVersion(row));
        Ok(changes)
    }

    /// Removes the subject's versions that `matches` picks; they stay retired.
    fn remove_versions(
        &mut self,
        subject: &SubjectName,
        matches: impl Fn(Version, &VersionRow) -> bool,
    ) -> Vec<Change> {
        let removed: Vec<Version> = self
            .versions_of(subject)
            .filter(|row| matches(row.version, row))
            .map(|row| row.version)
            .collect();
        removed
            .into_iter()
            .map(|version| {
                self.versions.remove(&(subject.clone(), version));
                self.retired.insert((subject.clone(), version));
                Change::RemoveVersion {
                    subject: subject.clone(),
                    version,
                }
            })
            .collect()
    }

    fn subject_row(&self, subject: &SubjectName, state: &SubjectState) -> SubjectRow {
        SubjectRow {
            subject: subject.clone(),
            next_version: Version::new(i64::from(state.highest_version) + 1).unwrap_or(Version::FIRST),
            compatibility: state.compatibility,
            mode: state.mode,
            config: state.config.clone(),
        }
    }

    fn subject_change(&self, subject: &SubjectName) -> Change {
        let state = self.subjects.get(subject).cloned().unwrap_or_default();
        Change::PutSubject(self.subject_row(subject, &state))
    }

    /// Everything read so far, with the offset after the last entry as its revision.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            schemas: self.schemas.values().cloned().collect(),
            subjects: self
                .subjects
                .iter()
                .map(|(subject, state)| self.subject_row(subject, state))
                .collect(),
            versions: self.versions.values().cloned().collect(),
            retired: self.retired.iter().cloned().collect(),
            compatibility: self.compatibility,
            mode: self.mode,
            config: self.config.clone(),
            revision: self.position,
        }
    }
}

fn invalid(offset: i64, field: &'static str, problem: String) -> ReplayError {
    ReplayError::Invalid { offset, field, problem }
}

/// A subject of the default context.
fn subject_name(offset: i64, subject: &str) -> Result<SubjectName, ReplayError> {
    let context = context_of(subject);
    if context != DEFAULT_CONTEXT {
        return Err(ReplayError::Context {
            offset,
            subject: subject.to_owned(),
            context: context.to_owned(),
        });
    }
    SubjectName::new(subject).map_err(|error| invalid(offset, "subject", error.to_string()))
}

fn version_number(offset: i64, version: i64) -> Result<Version, ReplayError> {
    Version::new(version).map_err(|error| invalid(offset, "version", error.to_string()))
}

/// The references of a `SCHEMA` value, in the registry's types.
fn schema_references(offset: i64, value: &SchemaValue) -> Result<Vec<SchemaReference>, ReplayError> {
    value
        .references
        .iter()
        .map(|reference| {
            Ok(SchemaReference {
                name: reference.name.clone(),
                subject: subject_name(offset, &reference.subject)?,
                version: version_number(offset, i64::from(reference.version))?,
            })
        })
        .collect()
}

fn schema_row(
    offset: i64,
    id: SchemaId,
    value: &SchemaValue,
    references: Vec<SchemaReference>,
    referenced: Option<&[Reference]>,
    fingerprint: &Fingerprint<'_>,
) -> Result<SchemaRow, ReplayError> {
    let format: Format = value
        .schema_type
        .parse()
        .map_err(|error: crate::compat::UnknownName| invalid(offset, "schemaType", error.to_string()))?;
    let contract = Contract {
        metadata: raw_json(offset, "metadata", value.metadata.as_deref())?.map(Box::new),
        rule_set: raw_json(offset, "ruleSet", value.rule_set.as_deref())?.map(Box::new),
    };
    let fingerprint = fingerprint(format, &value.schema, &references, referenced, &contract)
        .map_err(|source| ReplayError::Fingerprint { offset, source })?;
    Ok(SchemaRow {
        id,
        format,
        text: value.schema.clone(),
        fingerprint,
        references,
        contract,
    })
}

/// Where a reference walk has been, and what it found.
#[derive(Default)]
struct ReferenceWalk {
    visited: BTreeSet<(SubjectName, Version)>,
    names: BTreeSet<String>,
    texts: Vec<Reference>,
}

fn raw_json<T: serde::de::DeserializeOwned>(
    offset: i64,
    field: &'static str,
    raw: Option<&serde_json::value::RawValue>,
) -> Result<Option<T>, ReplayError> {
    raw.map(|raw| serde_json::from_str(raw.get()).map_err(|error| invalid(offset, field, error.to_string())))
        .transpose()
}

/// A `CONFIG` value as the level and the data-contract settings; a
/// tombstone clears both.
fn config_settings(offset: i64, value: Option<&ConfigValue>) -> Result<(Option<Mode>, ContractConfig), ReplayError> {
    let Some(value) = value else {
        return Ok((None, ContractConfig::default()));
    };
    let compatibility = value
        .compatibility_level
        .as_deref()
        .map(|level| {
            level
                .parse::<Mode>()
                .map_err(|error| invalid(offset, "compatibilityLevel", error.to_string()))
        })
        .transpose()?;
    let config = ContractConfig {
        compatibility_group: value.compatibility_group.clone(),
        default_metadata: raw_json(offset, "defaultMetadata", value.default_metadata.as_deref())?,
        override_metadata: raw_json(offset, "overrideMetadata", value.override_metadata.as_deref())?,
        default_rule_set: raw_json(offset, "defaultRuleSet", value.default_rule_set.as_deref())?,
        override_rule_set: raw_json(offset, "overrideRuleSet", value.override_rule_set.as_deref())?,
        normalize: value.normalize,
        alias: value.alias.clone(),
        alias_for_deks: value.alias_for_deks.clone(),
        validate_fields: value.validate_fields,
        validate_new_schemas: value.validate_new_schemas,
        validate_rules: value.validate_rules,
        // A name outside Confluent's three reads as none, as its `forName` does.
        compatibility_policy: value
            .compatibility_policy
            .as_deref()
            .and_then(CompatibilityPolicy::by_name),
    };
    Ok((compatibility, config))
}

fn registry_mode(offset: i64, mode: Option<&str>) -> Result<Option<RegistryMode>, ReplayError> {
    mode.map(|mode| {
        mode.parse()
            .map_err(|error: crate::registry::Error| invalid(offset, "mode", error.to_string()))
    })
    .transpose()
}

/// Why a batch of changes cannot be written as records.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// A change names a version or schema the model does not hold.
    #[error("the change names {what}, which the topic does not hold")]
    Unknown {
        /// What is missing.
        what: String,
    },
    /// A contract does not serialize.
    #[error("a contract does not serialize")]
    Contract(#[source] serde_json::Error),
}

impl Replay {
    /// The offset after the last entry applied: the store's revision.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The records that make `changes` on top of what was read, in
    /// Confluent's format: a version is a `SCHEMA` record (rewritten with
    /// `deleted: true` for a soft delete, a tombstone when removed), a
    /// subject's level and contract settings a `CONFIG` record, its mode a
    /// `MODE` record (tombstones when cleared), and the global settings the
    /// same without a subject. A subject's version counter has no record:
    /// readers derive it from the versions.
    ///
    /// # Errors
    /// [`EncodeError`] when a change names a version or schema that neither
    /// the topic nor the batch holds.
    pub fn encode_changes(&self, changes: &[Change]) -> Result<Vec<Encoded>, EncodeError> {
        let mut schemas: BTreeMap<SchemaId, &SchemaRow> = BTreeMap::new();
        let mut versions: BTreeMap<(SubjectName, Version), VersionRow> = BTreeMap::new();
        let mut records = Vec::new();
        let (mut global_compatibility, mut global_config) = (self.compatibility, self.config.clone());
        for change in changes {
            match change {
                Change::PutSchema(row) => {
                    schemas.insert(row.id, row);
                }
                Change::PutVersion(row) => {
                    let schema = schemas
                        .get(&row.id)
                        .copied()
                        .or_else(|| self.schemas.get(&row.id))
                        .ok_or_else(|| unknown(format!("schema ID {}", row.id)))?;
                    records.push(schema_record(row, schema, self.digests.get(&row.id))?);
                    versions.insert((row.subject.clone(), row.version), row.clone());
                }
                Change::SoftDeleteVersion { subject, version } => {
                    let key = (subject.clone(), *version);
                    let mut row = versions
                        .get(&key)
                        .or_else(|| self.versions.get(&key))
                        .cloned()
                        .ok_or_else(|| unknown(format!("version {version} of {subject}")))?;
                    row.deleted = true;
                    let schema = schemas
                        .get(&row.id)
                        .copied()
                        .or_else(|| self.schemas.get(&row.id))
                        .ok_or_else(|| unknown(format!("schema ID {}", row.id)))?;
                    records.push(schema_record(&row, schema, self.digests.get(&row.id))?);
                    versions.insert(key, row);
                }
                Change::RemoveVersion { subject, version } => records.push(encode(&Record::Schema {
                    subject: subject.as_str().to_owned(),
                    version: i32::try_from(version.get()).unwrap_or(i32::MAX),
                    value: None,
                })),
                Change::PutSubject(row) => {
                    let held = self.subjects.get(&row.subject).cloned().unwrap_or_default();
                    let subject = Some(row.subject.as_str().to_owned());
                    if held.compatibility != row.compatibility || held.config != row.config {
                        records.push(config_record(subject.clone(), row.compatibility, &row.config)?);
                    }
                    if held.mode != row.mode {
                        records.push(encode(&Record::Mode {
                            subject,
                            mode: row.mode.map(|mode| mode.as_str().to_owned()),
                        }));
                    }
                }
                Change::SetGlobalCompatibility(compatibility) => global_compatibility = *compatibility,
                Change::SetGlobalConfig(config) => global_config = config.clone(),
                Change::SetGlobalMode(mode) => records.push(encode(&Record::Mode {
                    subject: None,
                    mode: mode.map(|mode| mode.as_str().to_owned()),
                })),
            }
        }
        if global_compatibility != self.compatibility || global_config != self.config {
            records.push(config_record(None, global_compatibility, &global_config)?);
        }
        Ok(records)
    }
}

fn unknown(what: String) -> EncodeError {
    EncodeError::Unknown { what }
}

fn schema_record(row: &VersionRow, schema: &SchemaRow, md5: Option<&String>) -> Result<Encoded, EncodeError> {
    let metadata = raw_json_of(schema.contract.metadata.as_deref()).map_err(EncodeError::Contract)?;
    let rule_set = raw_json_of(schema.contract.rule_set.as_deref()).map_err(EncodeError::Contract)?;
    let subject = row.subject.as_str().to_owned();
    let version = i32::try_from(row.version.get()).unwrap_or(i32::MAX);
    Ok(encode(&Record::Schema {
        subject: subject.clone(),
        version,
        value: Some(Box::new(SchemaValue {
            subject,
            version,
            id: i32::try_from(row.id.get()).unwrap_or(i32::MAX),
            md5: md5.cloned(),
            schema_type: schema.format.as_str().to_owned(),
            references: schema
                .references
                .iter()
                .map(|reference| ReferenceValue {
                    name: reference.name.clone(),
                    subject: reference.subject.as_str().to_owned(),
                    version: i32::try_from(reference.version.get()).unwrap_or(i32::MAX),
                })
                .collect(),
            metadata,
            rule_set,
            schema: schema.text.clone(),
            deleted: row.deleted,
        })),
    }))
}

/// A `CONFIG` record, or its tombstone when nothing is set.
fn config_record(
    subject: Option<String>,
    compatibility: Option<Mode>,
    config: &ContractConfig,
) -> Result<Encoded, EncodeError> {
    let raw = |value| raw_json_of(value).map_err(EncodeError::Contract);
    let value = if compatibility.is_none() && config.is_empty() {
        None
    } else {
        Some(Box::new(ConfigValue {
            subject: subject.clone(),
            alias: config.alias.clone(),
            alias_for_deks: config.alias_for_deks.clone(),
            normalize: config.normalize,
            validate_fields: config.validate_fields,
            validate_new_schemas: config.validate_new_schemas,
            validate_rules: config.validate_rules,
            compatibility_level: compatibility.map(|level| level.as_str().to_owned()),
            compatibility_policy: config.compatibility_policy.map(policy_name),
            compatibility_group: config.compatibility_group.clone(),
            default_metadata: raw(config.default_metadata.as_ref())?,
            override_metadata: raw(config.override_metadata.as_ref())?,
            default_rule_set: raw_json_of(config.default_rule_set.as_ref()).map_err(EncodeError::Contract)?,
            override_rule_set: raw_json_of(config.override_rule_set.as_ref()).map_err(EncodeError::Contract)?,
        }))
    };
    Ok(encode(&Record::Config { subject, value }))
}

/// A compatibility policy as Confluent's `CompatibilityPolicy` names it.
fn policy_name(policy: CompatibilityPolicy) -> String {
    match policy {
        CompatibilityPolicy::Logical => "LOGICAL",
        CompatibilityPolicy::Strict => "STRICT",
        CompatibilityPolicy::Lenient => "LENIENT",
    }
    .to_owned()
}

/// A value as raw JSON.
fn raw_json_of<T: serde::Serialize + ?Sized>(value: Option<&T>) -> Result<Option<Box<RawValue>>, serde_json::Error> {
    value.map(serde_json::value::to_raw_value).transpose()
}

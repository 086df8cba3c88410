//! The throwaway registry and objects folder `check` applies to, so that
//! nothing real is written: a copy of a data folder, an empty one, or one
//! seeded from any [`Registry`] with [`seed_scratch`].
//!
//! Knows the embedded registry's files and the `Registry` trait; knows
//! nothing of manifests, the controller or the output.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::unstorable::{WithUnstorable, refused_as_unreadable};
use crate::compat::Checker;
use crate::registry::contract::ConfigPatch;
use crate::registry::embedded::EmbeddedRegistry;
use crate::registry::embedded::sqlite::{SqliteStore, snapshot_into};
use crate::registry::{
    Error as RegistryError, NewSchema, RegisterOptions, Registry, RegistryMode, SubjectName, VersionFilter,
    VersionSelector, VersionedSchema,
};

/// The registry's file inside a data folder.
pub const DATABASE_FILE: &str = "registry.db";

/// Why the scratch copy could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// The temporary folder could not be created.
    #[error("failed to create a temporary folder for the scratch registry")]
    CreateDir(#[source] std::io::Error),
    /// The data folder given does not exist or is not a folder.
    #[error("the data folder {} does not exist", path.display())]
    MissingData {
        /// The folder.
        path: PathBuf,
    },
    /// A file of the data folder could not be copied.
    #[error("failed to copy {} to the scratch folder", path.display())]
    Copy {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The scratch registry could not be opened.
    #[error("failed to open the scratch copy of {}", path.display())]
    Open {
        /// The registry file the copy was made from (or the scratch file).
        path: PathBuf,
        /// What the store said.
        #[source]
        source: crate::registry::embedded::store::StoreError,
    },
    /// The scratch registry could not be loaded.
    #[error("failed to load the scratch registry")]
    Load(#[source] RegistryError),
    /// Copying from the source registry failed.
    #[error(transparent)]
    Seed(#[from] SeedError),
}

/// Why [`seed_scratch`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The source registry could not be read.
    #[error("failed to read {what} from the source registry")]
    Read {
        /// What was being read, naming the subject and version.
        what: String,
        /// What the registry said.
        #[source]
        source: RegistryError,
    },
    /// The scratch registry refused a write.
    #[error("failed to copy {what} into the scratch registry")]
    Write {
        /// What was being written, naming the subject and version.
        what: String,
        /// What the scratch registry said.
        #[source]
        source: RegistryError,
    },
    /// Versions refer to versions the source registry does not list as live.
    #[error("versions refer to versions that are not live in the source registry: {}", versions.join(", "))]
    Unresolved {
        /// `subject` version `n`, for each version that could not be copied.
        versions: Vec<String>,
    },
}

/// A scratch data folder (removed when dropped) and its open registry.
#[derive(Debug)]
pub struct Scratch {
    folder: tempfile::TempDir,
    /// The scratch registry: `check` applies to it and reads it.
    pub registry: EmbeddedRegistry,
    /// Live versions of the source that the scratch could not store (see
    /// [`super::unstorable`]); empty unless seeded.
    pub unstorable: Vec<VersionedSchema>,
}

impl Scratch {
    /// The registry `check` applies to: the scratch, with the source's
    /// unstorable versions laid over it.
    pub fn view(&self) -> WithUnstorable<'_> {
        WithUnstorable {
            scratch: &self.registry,
            unstorable: &self.unstorable,
        }
    }

    /// The scratch data folder (holds `registry.db` and `objects.json`).
    pub fn data(&self) -> &Path {
        self.folder.path()
    }

    /// An empty registry and no objects.
    ///
    /// # Errors
    /// [`ScratchError`] when the temporary folder or registry cannot be created.
    pub async fn empty(checker: Checker) -> Result<Self, ScratchError> {
        let folder = tempfile::tempdir().map_err(ScratchError::CreateDir)?;
        Self::open(folder, checker).await
    }

    /// A copy of the data folder `data` (its registry files and objects);
    /// `data` itself is only read.
    ///
    /// # Errors
    /// [`ScratchError`] when `data` is not a folder or a file cannot be copied.
    pub async fn copy_of(data: &Path, checker: Checker) -> Result<Self, ScratchError> {
        if !data.is_dir() {
            return Err(ScratchError::MissingData { path: data.to_owned() });
        }
        let folder = tempfile::tempdir().map_err(ScratchError::CreateDir)?;
        // The registry as of one moment (a registry or an apply may be
        // writing to it now), then the objects, which apply replaces whole.
        let database = data.join(DATABASE_FILE);
        if database.exists() {
            snapshot_into(&database, &folder.path().join(DATABASE_FILE))
                .map_err(|source| ScratchError::Open { path: database, source })?;
        }
        let scratch = Self::open(folder, checker).await?;
        scratch.take_objects_of(data)?;
        Ok(scratch)
    }

    /// An empty scratch registry seeded with `subjects` (and the subjects
    /// their versions refer to) from `source`, lacking the per-subject modes
    /// `source` lacks, and its data contracts when `contracts_used` (only
    /// then is `source` asked, as that probe may write; see
    /// [`Registry::supports_data_contracts`]). No objects.
    ///
    /// # Errors
    /// [`ScratchError`] when the scratch cannot be made or [`seed_scratch`] fails.
    pub async fn seeded(
        source: &dyn Registry,
        subjects: &[SubjectName],
        contracts_used: bool,
        checker: Checker,
    ) -> Result<Self, ScratchError> {
        let mut scratch = Self::empty(checker).await?;
        scratch.unstorable = seed_scratch(source, subjects, &scratch.registry).await?;
        let subject_modes = source.supports_subject_mode().await.map_err(|source| SeedError::Read {
            what: "whether the registry has per-subject modes".to_owned(),
            source,
        })?;
        if !subject_modes {
            scratch.registry.emulate_no_subject_modes();
        }
        if contracts_used {
            let contracts = source
                .supports_data_contracts()
                .await
                .map_err(|source| SeedError::Read {
                    what: "whether the registry keeps data contracts".to_owned(),
                    source,
                })?;
            if !contracts {
                scratch.registry.emulate_no_data_contracts();
            }
        }
        Ok(scratch)
    }

    /// Copies the objects `apply` kept in `data` (its `objects.json`, when it
    /// has one) into this scratch, beside a registry seeded from elsewhere;
    /// `data` is only read.
    ///
    /// # Errors
    /// [`ScratchError`] when `data` is not a folder or the file cannot be copied.
    pub fn take_objects_of(&self, data: &Path) -> Result<(), ScratchError> {
        if !data.is_dir() {
            return Err(ScratchError::MissingData { path: data.to_owned() });
        }
        let objects = data.join(super::objects::FILE_NAME);
        match std::fs::copy(&objects, self.folder.path().join(super::objects::FILE_NAME)) {
            Ok(_) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(ScratchError::Copy { path: objects, source }),
        }
    }

    async fn open(folder: tempfile::TempDir, checker: Checker) -> Result<Self, ScratchError> {
        let path = folder.path().join(DATABASE_FILE);
        let store = SqliteStore::open(&path).map_err(|source| ScratchError::Open { path, source })?;
        let registry = EmbeddedRegistry::open(Arc::new(store), checker)
            .await
            .map_err(ScratchError::Load)?;
        Ok(Self {
            folder,
            registry,
            unstorable: Vec::new(),
        })
    }
}

/// Copies `subjects` from `source` into `scratch`: every live version with
/// its schema ID, version number, text and references (and, first, the
/// subjects those references name), each subject's own compatibility level
/// and mode, and the global level and mode.
///
/// Versions are written in IMPORT mode, in an order where each version's
/// references exist before it. A version the scratch refuses for its content
/// (the source accepted a text our engine cannot read), and every version
/// referring to one, is returned instead of written: see
/// [`super::unstorable`]. Otherwise the global mode is then set to the source's
/// (READWRITE when the source is itself in IMPORT mode, so the scratch
/// judges registrations as an ordinary registry does).
///
/// # Caveats
/// Soft-deleted versions are not copied, and a subject's version counter is
/// not either: where the source has deleted its latest versions, the scratch
/// numbers the next version lower than the source would. A subject missing
/// from `source` is skipped.
///
/// # Errors
/// [`SeedError`] when the source cannot be read or the scratch fails a write.
pub async fn seed_scratch(
    source: &dyn Registry,
    subjects: &[SubjectName],
    scratch: &EmbeddedRegistry,
) -> Result<Vec<VersionedSchema>, SeedError> {
    let read = |what: String| move |source| SeedError::Read { what, source };
    let write = |what: String| move |source| SeedError::Write { what, source };
    // The subjects asked for, then those their versions refer to.
    let mut wanted: Vec<SubjectName> = Vec::new();
    for subject in subjects {
        if !wanted.contains(subject) {
            wanted.push(subject.clone());
        }
    }
    let mut present = Vec::new();
    let mut pending: Vec<VersionedSchema> = Vec::new();
    let mut next = 0;
    while next < wanted.len() {
        let subject = wanted[next].clone();
        next += 1;
        let numbers = match source.versions(&subject, VersionFilter::Live).await {
            Ok(numbers) => numbers,
            Err(RegistryError::SubjectNotFound { .. }) => continue,
            Err(error) => return Err(read(format!("the versions of subject `{subject}`"))(error)),
        };
        present.push(subject.clone());
        for number in numbers {
            let version = source
                .version(&subject, VersionSelector::Exact(number), false)
                .await
                .map_err(read(format!("version {number} of subject `{subject}`")))?;
            for reference in &version.references {
                if !wanted.contains(&reference.subject) {
                    wanted.push(reference.subject.clone());
                }
            }
            pending.push(version);
        }
    }

    scratch
        .set_mode(None, RegistryMode::Import, true)
        .await
        .map_err(write("IMPORT mode".to_owned()))?;
    // Each pass writes the versions whose references are all written.
    let mut written = HashSet::new();
    let mut unstorable: Vec<VersionedSchema> = Vec::new();
    while !pending.is_empty() {
        let before = pending.len();
        let mut waiting = Vec::new();
        for version in pending {
            let refers_to_unstorable = version.references.iter().any(|reference| {
                unstorable
                    .iter()
                    .any(|held| held.subject == reference.subject && held.version == reference.version)
            });
            if refers_to_unstorable {
                unstorable.push(version);
                continue;
            }
            let ready = version
                .references
                .iter()
                .all(|reference| written.contains(&(reference.subject.clone(), reference.version)));
            if !ready {
                waiting.push(version);
                continue;
            }
            match import(scratch, &version).await {
                Ok(()) => {
                    written.insert((version.subject.clone(), version.version));
                }
                Err(error) if refused_as_unreadable(&error) => {
                    tracing::info!(subject = %version.subject, version = %version.version, error = %error, "The source holds a version the scratch cannot store");
                    unstorable.push(version);
                }
                Err(error) => {
                    return Err(write(format!(
                        "version {} of subject `{}`",
                        version.version, version.subject
                    ))(error));
                }
            }
        }
        pending = waiting;
        if pending.len() == before {
            return Err(SeedError::Unresolved {
                versions: pending
                    .iter()
                    .map(|version| format!("`{}` version {}", version.subject, version.version))
                    .collect(),
            });
        }
    }

    for subject in &present {
        match source.compatibility(Some(subject), false).await {
            Ok(level) => {
                scratch
                    .set_compatibility(Some(subject), level)
                    .await
                    .map_err(write(format!("the compatibility level of subject `{subject}`")))?;
            }
            Err(RegistryError::SubjectCompatibilityNotConfigured { .. } | RegistryError::SubjectNotFound { .. }) => {}
            Err(error) => return Err(read(format!("the compatibility level of subject `{subject}`"))(error)),
        }
        let settings = source
            .contract_config(Some(subject))
            .await
            .map_err(read(format!("the data-contract settings of subject `{subject}`")))?;
        if !settings.is_empty() {
            scratch
                .update_contract_config(Some(subject), &ConfigPatch::replacing_with(&settings))
                .await
                .map_err(write(format!("the data-contract settings of subject `{subject}`")))?;
        }
        match source.mode(Some(subject), false).await {
            Ok(mode) => {
                scratch
                    .set_mode(Some(subject), mode, true)
                    .await
                    .map_err(write(format!("the mode of subject `{subject}`")))?;
            }
            Err(RegistryError::SubjectModeNotConfigured { .. } | RegistryError::SubjectNotFound { .. }) => {}
            Err(error) => return Err(read(format!("the mode of subject `{subject}`"))(error)),
        }
    }
    let level = source
        .compatibility(None, true)
        .await
        .map_err(read("the global compatibility level".to_owned()))?;
    scratch
        .set_compatibility(None, level)
        .await
        .map_err(write("the global compatibility level".to_owned()))?;
    let settings = source
        .contract_config(None)
        .await
        .map_err(read("the global data-contract settings".to_owned()))?;
    if !settings.is_empty() {
        scratch
            .update_contract_config(None, &ConfigPatch::replacing_with(&settings))
            .await
            .map_err(write("the global data-contract settings".to_owned()))?;
    }
    let mode = match source
        .mode(None, true)
        .await
        .map_err(read("the global mode".to_owned()))?
    {
        RegistryMode::Import => RegistryMode::ReadWrite,
        mode => mode,
    };
    scratch
        .set_mode(None, mode, true)
        .await
        .map_err(write("the global mode".to_owned()))?;
    Ok(unstorable)
}

/// Writes one version with its ID and number. Should the scratch registry
/// already know the content under another ID (the source judged two texts
/// different that the scratch judges the same), it keeps its own ID.
async fn import(scratch: &EmbeddedRegistry, version: &VersionedSchema) -> Result<(), RegistryError> {
    let schema = NewSchema {
        format: version.format,
        text: version.text.clone(),
        references: version.references.clone(),
        contract: version.contract.clone(),
    };
    let options = RegisterOptions {
        id: Some(version.id),
        version: Some(version.version),
        ..RegisterOptions::default()
    };
    match scratch.register(&version.subject, &schema, options).await {
        Err(RegistryError::IdMismatch { .. } | RegistryError::IdInUse { .. }) => {
            let options = RegisterOptions {
                id: None,
                version: Some(version.version),
                ..RegisterOptions::default()
            };
            scratch.register(&version.subject, &schema, options).await.map(drop)
        }
        other => other.map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::{Format, Mode};
    use crate::registry::{SchemaId, SchemaReference, Version};

    fn subject(name: &str) -> SubjectName {
        SubjectName::new(name).unwrap()
    }

    fn record(name: &str, fields: &str) -> NewSchema {
        NewSchema {
            contract: Default::default(),
            format: Format::Avro,
            text: format!(r#"{{"type":"record","name":"{name}","fields":[{fields}]}}"#),
            references: Vec::new(),
        }
    }

    async fn registry() -> (tempfile::TempDir, EmbeddedRegistry) {
        let folder = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&folder.path().join(DATABASE_FILE)).unwrap();
        let registry = EmbeddedRegistry::open(Arc::new(store), Checker::default())
            .await
            .unwrap();
        (folder, registry)
    }

    /// A source whose IDs and version numbers a fresh registry would not
    /// reproduce: an unrelated subject took ID 1, and `orders` was imported
    /// with chosen IDs and versions.
    async fn source() -> (tempfile::TempDir, EmbeddedRegistry) {
        let (folder, source) = registry().await;
        let register = |subject: &'static str, schema: NewSchema| {
            let source = &source;
            async move {
                source
                    .register(&self::subject(subject), &schema, RegisterOptions::default())
                    .await
                    .unwrap()
            }
        };
        register("unrelated", record("Unrelated", r#"{"name":"u","type":"int"}"#)).await;
        register("money", record("Money", r#"{"name":"units","type":"long"}"#)).await;
        source.set_mode(None, RegistryMode::Import, true).await.unwrap();
        for (id, version, fields) in [
            (40, 3, r#"{"name":"a","type":"int"}"#),
            (
                41,
                7,
                r#"{"name":"a","type":"int"},{"name":"b","type":"string","default":""}"#,
            ),
        ] {
            let mut schema = record("Order", fields);
            schema.references = vec![SchemaReference {
                name: "money".to_owned(),
                subject: subject("money"),
                version: Version::new(1).unwrap(),
            }];
            source
                .register(
                    &subject("orders"),
                    &schema,
                    RegisterOptions {
                        id: SchemaId::new(id),
                        version: Some(Version::new(version).unwrap()),
                        ..RegisterOptions::default()
                    },
                )
                .await
                .unwrap();
        }
        source.set_mode(None, RegistryMode::ReadWrite, true).await.unwrap();
        source
            .set_compatibility(Some(&subject("orders")), Mode::ForwardTransitive)
            .await
            .unwrap();
        source
            .set_mode(Some(&subject("orders")), RegistryMode::ReadOnly, true)
            .await
            .unwrap();
        source.set_compatibility(None, Mode::Full).await.unwrap();
        (folder, source)
    }

    #[tokio::test]
    async fn seeding_copies_ids_versions_references_and_settings_of_the_subjects_asked_for() {
        let (_source_folder, source) = source().await;
        let (_folder, scratch) = registry().await;
        seed_scratch(&source, &[subject("orders")], &scratch).await.unwrap();

        let versions = scratch.versions(&subject("orders"), VersionFilter::Live).await.unwrap();
        assert_eq!(versions.iter().map(|v| v.get()).collect::<Vec<_>>(), [3, 7]);
        for number in [3, 7] {
            let selector = VersionSelector::Exact(Version::new(number).unwrap());
            let copied = scratch.version(&subject("orders"), selector, false).await.unwrap();
            let original = source.version(&subject("orders"), selector, false).await.unwrap();
            assert_eq!(
                (copied.id, &copied.text, &copied.references),
                (original.id, &original.text, &original.references)
            );
        }
        // The referenced subject came along; the unrelated one did not.
        let money = scratch
            .version(
                &subject("money"),
                VersionSelector::Exact(Version::new(1).unwrap()),
                false,
            )
            .await
            .unwrap();
        assert_eq!(money.id, SchemaId::new(2).unwrap());
        assert!(
            scratch
                .versions(&subject("unrelated"), VersionFilter::Live)
                .await
                .is_err()
        );

        assert_eq!(
            scratch.compatibility(Some(&subject("orders")), false).await.unwrap(),
            Mode::ForwardTransitive
        );
        assert_eq!(
            scratch.mode(Some(&subject("orders")), false).await.unwrap(),
            RegistryMode::ReadOnly
        );
        assert!(scratch.compatibility(Some(&subject("money")), false).await.is_err());
        assert_eq!(scratch.compatibility(None, true).await.unwrap(), Mode::Full);
        assert_eq!(scratch.mode(None, true).await.unwrap(), RegistryMode::ReadWrite);
    }

    #[tokio::test]
    async fn the_seeded_scratch_judges_the_next_version_as_the_source_would() {
        let (_source_folder, source) = source().await;
        source.delete_mode(Some(&subject("orders"))).await.unwrap();
        let (_folder, scratch) = registry().await;
        seed_scratch(&source, &[subject("orders")], &scratch).await.unwrap();
        let money = vec![SchemaReference {
            name: "money".to_owned(),
            subject: subject("money"),
            version: Version::new(1).unwrap(),
        }];
        // FORWARD_TRANSITIVE: dropping `b`'s default is fine, a new required field is not.
        let mut incompatible = record("Order", r#"{"name":"c","type":"int"}"#);
        incompatible.references = money.clone();
        let mut compatible = record("Order", r#"{"name":"a","type":"int"},{"name":"b","type":"string"}"#);
        compatible.references = money;
        for schema in [&incompatible, &compatible] {
            let expected = source.check(&subject("orders"), schema, None).await.unwrap();
            let actual = scratch.check(&subject("orders"), schema, None).await.unwrap();
            assert_eq!(actual.report.is_compatible(), expected.report.is_compatible());
        }
        let registered = scratch
            .register(&subject("orders"), &compatible, RegisterOptions::default())
            .await
            .unwrap();
        assert_eq!(registered.version.get(), 8);
    }

    #[tokio::test]
    async fn a_missing_subject_is_skipped() {
        let (_source_folder, source) = source().await;
        let (_folder, scratch) = registry().await;
        seed_scratch(&source, &[subject("absent")], &scratch).await.unwrap();
        assert!(scratch.subjects(&Default::default()).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_copied_data_folder_leaves_the_original_untouched() {
        let (source_folder, source) = source().await;
        drop(source);
        let before = std::fs::read(source_folder.path().join(DATABASE_FILE)).unwrap();
        let scratch = Scratch::copy_of(source_folder.path(), Checker::default())
            .await
            .unwrap();
        scratch
            .registry
            .register(
                &subject("new"),
                &record("New", r#"{"name":"n","type":"int"}"#),
                RegisterOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(std::fs::read(source_folder.path().join(DATABASE_FILE)).unwrap(), before);
        assert_eq!(
            scratch
                .registry
                .versions(&subject("orders"), VersionFilter::Live)
                .await
                .unwrap()
                .len(),
            2
        );
    }
}

//! The registry's domain values: names, numbers and the records it returns.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Error;
use super::contract::Contract;
use crate::compat::{Format, Mode, Report};

/// A subject name: any non-empty text without control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SubjectName(String);

impl SubjectName {
    /// The longest subject name accepted, in bytes.
    pub const MAX_LEN: usize = 4096;

    /// Checks and wraps a subject name.
    ///
    /// # Errors
    /// [`Error::InvalidSubject`] when it is empty, too long or holds control characters.
    pub fn new(name: impl Into<String>) -> Result<Self, Error> {
        let name = name.into();
        let problem = if name.is_empty() {
            Some("it is empty")
        } else if name.len() > Self::MAX_LEN {
            Some("it is longer than 4096 bytes")
        } else if name.chars().any(char::is_control) {
            Some("it contains control characters")
        } else {
            None
        };
        match problem {
            Some(problem) => Err(Error::InvalidSubject {
                subject: name,
                problem: problem.to_owned(),
            }),
            None => Ok(Self(name)),
        }
    }

    /// A name to look up, unchecked: reads and deletes take any name, as
    /// Confluent's do (it checks names only when they are written), and a
    /// name that [`SubjectName::new`] refuses is simply never found.
    pub fn to_look_up(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SubjectName {
    type Error = Error;
    fn try_from(name: String) -> Result<Self, Error> {
        Self::new(name)
    }
}

impl From<SubjectName> for String {
    fn from(name: SubjectName) -> String {
        name.0
    }
}

impl fmt::Display for SubjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A version number of a subject: 1 to 2³¹−1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(u32);

impl Version {
    /// The first version of a subject.
    pub const FIRST: Version = Version(1);

    /// Wraps a version number.
    ///
    /// # Errors
    /// [`Error::InvalidVersion`] outside 1 to 2³¹−1.
    pub fn new(number: i64) -> Result<Self, Error> {
        u32::try_from(number)
            .ok()
            .filter(|n| (1..=i32::MAX as u32).contains(n))
            .map(Version)
            .ok_or_else(|| Error::InvalidVersion {
                given: number.to_string(),
            })
    }

    /// The number.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The version after this one.
    pub fn next(self) -> Version {
        Version(self.0.saturating_add(1).min(i32::MAX as u32))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Which version a request names: a number, or the latest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSelector {
    /// The newest version (`latest` or `-1`).
    Latest,
    /// A version number.
    Exact(Version),
}

impl fmt::Display for VersionSelector {
    /// `latest`, or the number: as a path segment names it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionSelector::Latest => f.write_str("latest"),
            VersionSelector::Exact(version) => write!(f, "{version}"),
        }
    }
}

impl FromStr for VersionSelector {
    type Err = Error;

    /// Parses `latest`, `-1` or 1 to 2³¹−1.
    fn from_str(text: &str) -> Result<Self, Error> {
        if text.eq_ignore_ascii_case("latest") || text == "-1" {
            return Ok(VersionSelector::Latest);
        }
        let invalid = || Error::InvalidVersion { given: text.to_owned() };
        let number: i64 = text.parse().map_err(|_| invalid())?;
        Version::new(number).map(VersionSelector::Exact).map_err(|_| invalid())
    }
}

/// A global schema ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SchemaId(u32);

impl SchemaId {
    /// Wraps an ID: 1 to 2³¹−1.
    pub fn new(id: i64) -> Option<Self> {
        u32::try_from(id)
            .ok()
            .filter(|n| (1..=i32::MAX as u32).contains(n))
            .map(SchemaId)
    }

    /// The number.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for SchemaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A reference from one schema to a version of another subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SchemaReference {
    /// The name the referring schema uses (an Avro full name, a .proto import path, a JSON `$ref`).
    pub name: String,
    /// The referenced subject.
    pub subject: SubjectName,
    /// The referenced version.
    pub version: Version,
}

/// A schema as a client submits it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchema {
    /// Its language.
    pub format: Format,
    /// Its text.
    pub text: String,
    /// The schemas it refers to.
    pub references: Vec<SchemaReference>,
    /// Its metadata and rules as sent (before the subject's configured
    /// defaults and overrides are merged in).
    pub contract: Contract,
}

/// The content a schema ID names: what `GET /schemas/ids/{id}` returns.
/// It never changes for an ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaContent {
    /// The schema language.
    pub format: Format,
    /// The text as first registered.
    pub text: String,
    /// The text REST answers give instead of `text`, when they differ: an
    /// Avro schema as Confluent answers it (Avro's `Schema.toString()`, see
    /// [`crate::compat::avro::schema_string`]). `text` stays the author's.
    pub answer_text: Option<String>,
    /// The schemas it refers to.
    pub references: Vec<SchemaReference>,
    /// Its metadata and rules.
    pub contract: Contract,
}

impl SchemaContent {
    /// Its GUID, as Confluent computes it: over the text it answers.
    pub fn guid(&self) -> super::Guid {
        super::Guid::of(self.answered_text(), &self.references, &self.contract)
    }

    /// The text REST answers carry (see [`Self::answer_text`]).
    pub fn answered_text(&self) -> &str {
        self.answer_text.as_deref().unwrap_or(&self.text)
    }
}

/// A stored version, as the API returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedSchema {
    /// The subject.
    pub subject: SubjectName,
    /// The version within the subject.
    pub version: Version,
    /// The global ID of the schema.
    pub id: SchemaId,
    /// The schema language.
    pub format: Format,
    /// The text as first registered.
    pub text: String,
    /// See [`SchemaContent::answer_text`].
    pub answer_text: Option<String>,
    /// The schemas it refers to.
    pub references: Vec<SchemaReference>,
    /// Its metadata and rules.
    pub contract: Contract,
    /// Whether the version is soft-deleted.
    pub deleted: bool,
}

impl VersionedSchema {
    /// Its GUID, as Confluent computes it: over the text it answers.
    pub fn guid(&self) -> super::Guid {
        super::Guid::of(self.answered_text(), &self.references, &self.contract)
    }

    /// The text REST answers carry (see [`SchemaContent::answer_text`]).
    pub fn answered_text(&self) -> &str {
        self.answer_text.as_deref().unwrap_or(&self.text)
    }
}

/// One version of a subject with its content shared with the registry's
/// memory instead of copied: what a lookup answered from prepared bodies
/// needs (see [`super::Registry::shared_version`]).
#[derive(Debug, Clone)]
pub struct SharedVersion {
    /// The version within the subject.
    pub version: Version,
    /// The global ID of the schema.
    pub id: SchemaId,
    /// Whether the version is soft-deleted.
    pub deleted: bool,
    /// What the ID names.
    pub content: std::sync::Arc<SchemaContent>,
}

impl From<VersionedSchema> for SharedVersion {
    fn from(found: VersionedSchema) -> Self {
        Self {
            version: found.version,
            id: found.id,
            deleted: found.deleted,
            content: std::sync::Arc::new(SchemaContent {
                format: found.format,
                text: found.text,
                answer_text: found.answer_text,
                references: found.references,
                contract: found.contract,
            }),
        }
    }
}

/// A (subject, version) pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, utoipa::ToSchema)]
pub struct SubjectVersion {
    /// The subject.
    pub subject: SubjectName,
    /// The version.
    pub version: Version,
}

/// Which subjects a listing returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectFilter {
    /// Only subjects whose names start with this.
    pub prefix: Option<String>,
    /// Also subjects whose versions are all soft-deleted.
    pub include_deleted: bool,
    /// Only subjects whose versions are all soft-deleted.
    pub deleted_only: bool,
}

/// Which versions of a subject a listing returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VersionFilter {
    /// Live versions only.
    #[default]
    Live,
    /// Live and soft-deleted versions.
    All,
    /// Soft-deleted versions only.
    DeletedOnly,
}

/// Options of a registration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisterOptions {
    /// The ID to use (IMPORT mode only).
    pub id: Option<SchemaId>,
    /// The version to use (IMPORT mode only).
    pub version: Option<Version>,
    /// Store the normalized text (`?normalize=true`); the schema's identity,
    /// and so its ID, is the same either way.
    pub normalize: bool,
}

/// What a registration produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    /// The schema's global ID.
    pub id: SchemaId,
    /// The version under the subject.
    pub version: Version,
    /// False when the subject already held the schema and nothing was written.
    pub created: bool,
}

/// The outcome of a compatibility check, with registry version numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompatibilityResult {
    /// The level checked.
    pub level: Mode,
    /// The engine's report; each incompatibility's `version` is a registry version number.
    pub report: Report,
}

/// A registry or subject mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum RegistryMode {
    /// Reads and writes.
    ReadWrite,
    /// Reads only; writes get 42205.
    ReadOnly,
    /// Reads only, overriding subject modes.
    #[serde(rename = "READONLY_OVERRIDE")]
    ReadOnlyOverride,
    /// Writes with client-chosen IDs and versions, without compatibility checks.
    Import,
}

impl RegistryMode {
    /// Confluent's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RegistryMode::ReadWrite => "READWRITE",
            RegistryMode::ReadOnly => "READONLY",
            RegistryMode::ReadOnlyOverride => "READONLY_OVERRIDE",
            RegistryMode::Import => "IMPORT",
        }
    }
}

impl FromStr for RegistryMode {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self, Error> {
        match text.to_ascii_uppercase().as_str() {
            "READWRITE" => Ok(RegistryMode::ReadWrite),
            "READONLY" => Ok(RegistryMode::ReadOnly),
            "READONLY_OVERRIDE" => Ok(RegistryMode::ReadOnlyOverride),
            "IMPORT" => Ok(RegistryMode::Import),
            _ => Err(Error::InvalidMode { given: text.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_confluent_accepts_them() {
        assert_eq!("latest".parse::<VersionSelector>().unwrap(), VersionSelector::Latest);
        assert_eq!("-1".parse::<VersionSelector>().unwrap(), VersionSelector::Latest);
        assert_eq!(
            "7".parse::<VersionSelector>().unwrap(),
            VersionSelector::Exact(Version(7))
        );
        for bad in ["0", "abc", "2147483648", "-2", ""] {
            let error = bad.parse::<VersionSelector>().unwrap_err();
            assert_eq!(error.code(), 42202, "{bad}");
        }
    }

    #[test]
    fn subject_names_may_hold_slashes_percent_and_unicode_but_not_be_empty() {
        for good in ["a/b", "100%", "ünïcödé-value", "google/protobuf/timestamp.proto"] {
            assert!(SubjectName::new(good).is_ok(), "{good}");
        }
        for bad in ["", "tab\there", "nul\0"] {
            assert_eq!(SubjectName::new(bad).unwrap_err().code(), 42208, "{bad:?}");
        }
    }
}

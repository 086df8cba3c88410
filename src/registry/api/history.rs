//! A subject's history read for comparison: the semantic diff of two
//! stored versions, and the matrix of one schema (a stored version or a
//! draft) against every earlier version under every mode. Shared by the
//! JSON routes ([`super::diff`]) and the web pages (`crate::ui`).
//!
//! Reads through any [`Registry`]; parses and compares on a blocking
//! thread, with the default [`Checker`] (the STRICT JSON Schema policy).

use crate::compat::diff::{Change, diff};
use crate::compat::{
    Checker, Direction, Format, Incompatibility, Mode, ParsedSchema, Report, SchemaRole, SchemaText, error_chain,
};
use crate::registry::external::reference_texts;
use crate::registry::{
    Error, NewSchema, Registry, SchemaId, SubjectName, Version, VersionFilter, VersionSelector, VersionedSchema,
};

/// The most earlier versions a matrix compares with: the newest ones.
pub const MATRIX_VERSIONS: usize = 100;

/// Two stored versions and the changes from the first to the second.
#[derive(Debug, Clone)]
pub struct VersionDiff {
    /// The earlier side.
    pub from: VersionedSchema,
    /// The later side.
    pub to: VersionedSchema,
    /// Every change, with the check's findings per direction.
    pub changes: Vec<Change>,
}

/// What one earlier version says about the schema under test, per direction.
#[derive(Debug, Clone)]
pub struct MatrixRow {
    /// The earlier version.
    pub version: Version,
    /// Its schema ID.
    pub id: SchemaId,
    /// Why the schema cannot read that version's data (empty: it can).
    pub backward: Vec<Incompatibility>,
    /// Why that version cannot read the schema's data (empty: it can).
    pub forward: Vec<Incompatibility>,
}

/// The verdict of one mode, assembled from the rows it reads.
#[derive(Debug, Clone)]
pub struct ModeVerdict {
    /// The mode.
    pub mode: Mode,
    /// The versions it checks, newest first.
    pub checked: Vec<Version>,
    /// The findings against them: every one, or the first [`Report::MAX_LISTED`].
    pub incompatibilities: Vec<Incompatibility>,
    /// How many findings there are in all, listed or not.
    pub total: usize,
}

/// A schema against every earlier version and every mode.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The subject's compatibility level in force.
    pub level: Mode,
    /// One row per earlier live version, oldest first.
    pub rows: Vec<MatrixRow>,
    /// One verdict per mode, in [`Mode::ALL`] order.
    pub modes: Vec<ModeVerdict>,
    /// True when the subject has more earlier versions than [`MATRIX_VERSIONS`].
    pub truncated: bool,
}

/// A stored version and the text (with references) the engine reads.
async fn read(
    registry: &dyn Registry,
    subject: &SubjectName,
    selector: VersionSelector,
) -> Result<(VersionedSchema, SchemaText), Error> {
    let stored = registry.version(subject, selector, true).await?;
    let text = SchemaText {
        text: stored.text.clone(),
        references: reference_texts(registry, &stored.references).await?,
    };
    Ok((stored, text))
}

/// Parses a stored version; a failure names the version.
fn parse_stored(checker: &Checker, stored: &VersionedSchema, text: &SchemaText) -> Result<ParsedSchema, Error> {
    checker
        .parse(stored.format, SchemaRole::Previous(stored.version.get() as usize), text)
        .map_err(|error| Error::InvalidSchema {
            reason: format!(
                "version {} of subject `{}` cannot be read: {}",
                stored.version,
                stored.subject,
                error_chain(&error)
            ),
        })
}

/// Runs CPU-bound work off the async runtime.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    crate::registry::request_budget::blocking(work)
        .await
        .map_err(|error| Error::Store {
            action: "compare schemas",
            source: Box::new(error),
        })?
}

/// The changes from version `from` to version `to` of `subject`
/// (soft-deleted versions included).
///
/// # Errors
/// Not-found errors for the subject or a version; [`Error::InvalidSchema`]
/// when a stored version cannot be read; [`Error::SchemaTypeChanged`] for
/// versions of two formats.
pub async fn diff_versions(
    registry: &dyn Registry,
    subject: &SubjectName,
    from: VersionSelector,
    to: VersionSelector,
) -> Result<VersionDiff, Error> {
    let (from, from_text) = read(registry, subject, from).await?;
    let (to, to_text) = read(registry, subject, to).await?;
    blocking(move || {
        let checker = Checker::default();
        let previous = parse_stored(&checker, &from, &from_text)?;
        let candidate = parse_stored(&checker, &to, &to_text)?;
        let changes = diff(&checker, &previous, &candidate, from.version.get() as usize)
            .map_err(|error| Error::from_check(&error))?;
        Ok(VersionDiff { from, to, changes })
    })
    .await
}

/// Stored version `version` of `subject` against every earlier live version.
///
/// # Errors
/// As [`diff_versions`].
pub async fn matrix_of_version(
    registry: &dyn Registry,
    subject: &SubjectName,
    version: VersionSelector,
) -> Result<(VersionedSchema, Matrix), Error> {
    let (stored, text) = read(registry, subject, version).await?;
    let matrix = matrix(registry, subject, stored.format, text, Some(stored.version)).await?;
    Ok((stored, matrix))
}

/// A draft (never registered) against every live version of `subject`.
///
/// # Errors
/// [`Error::InvalidSchema`] when the draft does not parse; otherwise as
/// [`diff_versions`].
pub async fn matrix_of_draft(
    registry: &dyn Registry,
    subject: &SubjectName,
    draft: &NewSchema,
) -> Result<Matrix, Error> {
    let text = SchemaText {
        text: draft.text.clone(),
        references: reference_texts(registry, &draft.references).await?,
    };
    matrix(registry, subject, draft.format, text, None).await
}

/// A draft without references, given as its format and text, against
/// every live version of `subject`.
///
/// # Errors
/// As [`matrix_of_draft`].
pub async fn matrix_of_text(
    registry: &dyn Registry,
    subject: &SubjectName,
    format: Format,
    text: &str,
) -> Result<Matrix, Error> {
    matrix(registry, subject, format, SchemaText::new(text), None).await
}

async fn matrix(
    registry: &dyn Registry,
    subject: &SubjectName,
    format: Format,
    text: SchemaText,
    before: Option<Version>,
) -> Result<Matrix, Error> {
    let level = registry.compatibility(Some(subject), true).await?;
    let mut versions = match registry.versions(subject, VersionFilter::Live).await {
        Ok(versions) => versions,
        // A draft for a subject that does not exist yet has nothing to break.
        Err(Error::SubjectNotFound { .. }) if before.is_none() => Vec::new(),
        Err(error) => return Err(error),
    };
    versions.retain(|version| before.is_none_or(|before| *version < before));
    let truncated = versions.len() > MATRIX_VERSIONS;
    let versions = versions.split_off(versions.len().saturating_sub(MATRIX_VERSIONS));
    let mut earlier = Vec::with_capacity(versions.len());
    for version in versions {
        earlier.push(read(registry, subject, VersionSelector::Exact(version)).await?);
    }
    blocking(move || {
        let checker = Checker::default();
        let candidate = checker
            .parse(format, SchemaRole::Candidate, &text)
            .map_err(|error| Error::from_check(&error))?;
        let mut rows = Vec::with_capacity(earlier.len());
        for (stored, text) in &earlier {
            if stored.format != format {
                return Err(Error::SchemaTypeChanged {
                    earlier: stored.format,
                    candidate: format,
                });
            }
            let parsed = parse_stored(&checker, stored, text)?;
            let number = stored.version.get() as usize;
            let one = |mode: Mode| {
                checker
                    .check_numbered(mode, &candidate, &[(number, &parsed)])
                    .map(|report| report.incompatibilities)
                    .map_err(|error| Error::from_check(&error))
            };
            rows.push(MatrixRow {
                version: stored.version,
                id: stored.id,
                backward: one(Mode::Backward)?,
                forward: one(Mode::Forward)?,
            });
        }
        let modes = Mode::ALL.iter().map(|&mode| verdict(mode, &rows)).collect();
        Ok(Matrix {
            level,
            rows,
            modes,
            truncated,
        })
    })
    .await
}

/// A mode's verdict from the rows: the rows it reads, the directions it checks.
fn verdict(mode: Mode, rows: &[MatrixRow]) -> ModeVerdict {
    let positions = mode.versions_to_check(rows.len());
    let mut incompatibilities = Vec::new();
    let mut total = 0;
    for &position in &positions {
        let row = &rows[position - 1];
        for direction in mode.directions() {
            let found = match direction {
                Direction::Backward => &row.backward,
                Direction::Forward => &row.forward,
            };
            total += found.len();
            // Listed up to the same bound as a report; the rest only counted.
            let room = Report::MAX_LISTED.saturating_sub(incompatibilities.len());
            incompatibilities.extend(found.iter().take(room).cloned());
        }
    }
    ModeVerdict {
        mode,
        checked: positions.iter().map(|&position| rows[position - 1].version).collect(),
        incompatibilities,
        total,
    }
}

//! A subject's history read for comparison: the semantic diff of two
//! stored versions, and the matrix of one schema (a stored version or a
//! draft) against every earlier version under every mode. Shared by the
//! JSON routes ([`super::diff`]) and the web pages (`crate::ui`).
//!
//! Reads through any [`Registry`]; parses and compares on a blocking
//! thread, with the default [`Checker`] (the STRICT JSON Schema policy).
//!
//! With a compatibility group in force, a matrix judges the schema only
//! against the versions of its own lineage, as a registration would: the
//! rows of other lineages are listed, marked, and left unchecked.

use crate::compat::diff::{Change, diff};
use crate::compat::{
    Checker, Direction, Format, Incompatibility, Mode, ParsedSchema, Report, SchemaRole, SchemaText, error_chain,
};
use crate::registry::contract::{Contract, ContractConfig};
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
    /// The metadata property naming lineages, when the subject has a compatibility group.
    pub compatibility_group: Option<String>,
}

impl VersionDiff {
    /// Whether the registry checks one side against the other: always
    /// without a compatibility group, else when both are of one lineage.
    pub fn same_lineage(&self) -> bool {
        lineage(self.compatibility_group.as_deref(), &self.from.contract)
            == lineage(self.compatibility_group.as_deref(), &self.to.contract)
    }
}

/// The lineage a version with `contract` belongs to under `group`: the
/// value of the group's metadata property (`None` without a group, or unset).
pub fn lineage<'a>(group: Option<&str>, contract: &'a Contract) -> Option<&'a str> {
    group.and_then(|group| contract.property(group))
}

/// What one earlier version says about the schema under test, per direction.
#[derive(Debug, Clone)]
pub struct MatrixRow {
    /// The earlier version.
    pub version: Version,
    /// Its schema ID.
    pub id: SchemaId,
    /// Its lineage: the value of the compatibility group's property.
    pub lineage: Option<String>,
    /// True when it is of another lineage than the schema under test, and
    /// so not checked (both lists empty).
    pub other_lineage: bool,
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
    /// The metadata property naming lineages, when the subject has a compatibility group.
    pub compatibility_group: Option<String>,
    /// The lineage of the schema under test (its merged contract's value of that property).
    pub lineage: Option<String>,
    /// One row per earlier live version, oldest first.
    pub rows: Vec<MatrixRow>,
    /// One verdict per mode, in [`Mode::ALL`] order, each over the rows of the schema's lineage.
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
    let compatibility_group = registry.contract_config_in_scope(subject).await?.compatibility_group;
    blocking(move || {
        let checker = Checker::default();
        let previous = parse_stored(&checker, &from, &from_text)?;
        let candidate = parse_stored(&checker, &to, &to_text)?;
        let changes = diff(&checker, &previous, &candidate, from.version.get() as usize)
            .map_err(|error| Error::from_check(&error))?;
        Ok(VersionDiff {
            from,
            to,
            changes,
            compatibility_group,
        })
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
    let tested = Tested::Stored(stored.version, stored.contract.clone());
    let matrix = matrix(registry, subject, stored.format, text, tested).await?;
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
    let tested = Tested::Draft(draft.contract.clone());
    matrix(registry, subject, draft.format, text, tested).await
}

/// The schema a matrix tests, and the contract that places it in a lineage.
enum Tested {
    /// A stored version, with its contract as registered.
    Stored(Version, Contract),
    /// A draft, with its contract as sent: merged with the subject's
    /// defaults, overrides and latest version as a registration would be.
    Draft(Contract),
}

impl Tested {
    /// The version the earlier rows come before (none for a draft: every version).
    fn before(&self) -> Option<Version> {
        match self {
            Tested::Stored(version, _) => Some(*version),
            Tested::Draft(_) => None,
        }
    }

    /// The contract whose group property is its lineage.
    fn contract(self, config: &ContractConfig, latest: Option<&Contract>) -> Contract {
        match self {
            Tested::Stored(_, contract) => contract,
            Tested::Draft(asked) => config.merge(&asked.or_inherited(latest)),
        }
    }
}

async fn matrix(
    registry: &dyn Registry,
    subject: &SubjectName,
    format: Format,
    text: SchemaText,
    tested: Tested,
) -> Result<Matrix, Error> {
    let before = tested.before();
    let level = registry.compatibility(Some(subject), true).await?;
    let config = registry.contract_config_in_scope(subject).await?;
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
    let mine = tested.contract(&config, earlier.last().map(|(stored, _)| &stored.contract));
    let group = config.compatibility_group.clone();
    let owned_lineage = |contract: &Contract| lineage(group.as_deref(), contract).map(str::to_owned);
    let tested_lineage = owned_lineage(&mine);
    let earlier: Vec<_> = earlier
        .into_iter()
        .map(|(stored, text)| {
            let other_lineage = !config.same_lineage(&mine, &stored.contract);
            (owned_lineage(&stored.contract), other_lineage, stored, text)
        })
        .collect();
    blocking(move || {
        let checker = Checker::default();
        let candidate = checker
            .parse(format, SchemaRole::Candidate, &text)
            .map_err(|error| Error::from_check(&error))?;
        let mut rows = Vec::with_capacity(earlier.len());
        for (lineage, other_lineage, stored, text) in earlier {
            if other_lineage {
                rows.push(MatrixRow {
                    version: stored.version,
                    id: stored.id,
                    lineage,
                    other_lineage,
                    backward: Vec::new(),
                    forward: Vec::new(),
                });
                continue;
            }
            if stored.format != format {
                return Err(Error::SchemaTypeChanged {
                    earlier: stored.format,
                    candidate: format,
                });
            }
            let parsed = parse_stored(&checker, &stored, &text)?;
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
                lineage,
                other_lineage,
                backward: one(Mode::Backward)?,
                forward: one(Mode::Forward)?,
            });
        }
        let own: Vec<&MatrixRow> = rows.iter().filter(|row| !row.other_lineage).collect();
        let modes = Mode::ALL.iter().map(|&mode| verdict(mode, &own)).collect();
        Ok(Matrix {
            level,
            compatibility_group: group,
            lineage: tested_lineage,
            rows,
            modes,
            truncated,
        })
    })
    .await
}

/// A mode's verdict from the rows of the schema's lineage: the rows it
/// reads, the directions it checks.
fn verdict(mode: Mode, rows: &[&MatrixRow]) -> ModeVerdict {
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

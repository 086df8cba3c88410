//! Our extension of the REST API: the semantic diff of two versions of a
//! subject, and the compatibility matrix of a version or a draft against
//! every earlier version under every mode. The work is in
//! [`super::history`]; this module turns it into JSON.

use axum::body::Body;
use axum::extract::{Path, State};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ErrorBody;
use super::history::{self, Matrix, VersionDiff};
use super::openapi::{BAD_REQUEST, STORE_FAILED, VersionParam};
use super::wire::{SchemaRequest, json_response};
use super::{ApiState, Reply, read_body, subject, version};
use crate::compat::diff::Change;
use crate::compat::{Direction, Incompatibility};
use crate::registry::{SubjectName, VersionedSchema};

/// A version as the diff and the matrix name it.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionRef {
    /// The version number.
    pub version: u32,
    /// The global schema ID.
    pub id: u32,
    /// Whether the version is soft-deleted.
    pub deleted: bool,
}

impl VersionRef {
    fn of(stored: &VersionedSchema) -> Self {
        Self {
            version: stored.version.get(),
            id: stored.id.get(),
            deleted: stored.deleted,
        }
    }
}

/// One finding of the check.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckFinding {
    /// The earlier version it breaks against.
    pub version: u32,
    /// The format's kind (`READER_FIELD_MISSING_DEFAULT_VALUE`, …).
    pub kind: String,
    /// A JSON Pointer into the reading schema.
    pub path: String,
    /// The check's message.
    pub message: String,
}

impl CheckFinding {
    fn of(incompatibility: &Incompatibility) -> Self {
        Self {
            version: u32::try_from(incompatibility.version).unwrap_or(u32::MAX),
            kind: incompatibility.kind.to_string(),
            path: incompatibility.path.to_string(),
            message: incompatibility.message.clone(),
        }
    }
}

/// One change between the two versions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeBody {
    /// The format's name for the change (`FIELD_ADDED_WITHOUT_DEFAULT`, Confluent's JSON and Protobuf names).
    pub kind: String,
    /// A JSON Pointer into the later version, or the earlier one for what only it has.
    pub path: String,
    /// The field, type or symbol changed.
    pub element: String,
    /// Before and after, when the kind does not say.
    pub detail: String,
    /// Whether readers on the later version can no longer read the earlier version's data.
    pub breaks_backward: bool,
    /// Whether readers on the earlier version can no longer read the later version's data.
    pub breaks_forward: bool,
    /// Why it breaks BACKWARD.
    pub backward: Vec<CheckFinding>,
    /// Why it breaks FORWARD.
    pub forward: Vec<CheckFinding>,
}

impl ChangeBody {
    fn of(change: &Change, version: u32) -> Self {
        let findings = |direction| {
            change
                .breaks_in(direction)
                .iter()
                .map(|reason| CheckFinding {
                    version,
                    kind: reason.kind.to_string(),
                    path: reason.path.to_string(),
                    message: reason.message.clone(),
                })
                .collect()
        };
        Self {
            kind: change.kind.to_string(),
            path: change.path.to_string(),
            element: change.element.clone(),
            detail: change.detail.clone(),
            breaks_backward: change.breaks(Direction::Backward),
            breaks_forward: change.breaks(Direction::Forward),
            backward: findings(Direction::Backward),
            forward: findings(Direction::Forward),
        }
    }
}

/// Whether the later version is compatible with the earlier one, per mode.
#[derive(Debug, Serialize, ToSchema)]
#[allow(clippy::upper_case_acronyms)]
pub struct PairVerdict {
    /// BACKWARD: no change breaks backward.
    #[serde(rename = "BACKWARD")]
    pub backward: bool,
    /// FORWARD: no change breaks forward.
    #[serde(rename = "FORWARD")]
    pub forward: bool,
    /// FULL: neither.
    #[serde(rename = "FULL")]
    pub full: bool,
}

/// The semantic diff of two versions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffBody {
    /// The subject.
    pub subject: String,
    /// The schema type.
    pub schema_type: String,
    /// The earlier side.
    pub from: VersionRef,
    /// The later side.
    pub to: VersionRef,
    /// The later version against the earlier one.
    pub compatible: PairVerdict,
    /// True when the subject has a compatibility group and the two versions
    /// are of different lineages: the registry never checks one against the
    /// other, so `compatible` only says what would break if one read the other's data.
    pub other_lineage: bool,
    /// The changes, compatible or not: every one, or the first 1,000 (`changesTotal` counts them all).
    pub changes: Vec<ChangeBody>,
    /// How many changes there are in all, listed or not.
    pub changes_total: usize,
}

impl DiffBody {
    fn of(found: &VersionDiff) -> Self {
        let backward = !found.changes.iter().any(|change| change.breaks(Direction::Backward));
        let forward = !found.changes.iter().any(|change| change.breaks(Direction::Forward));
        let changes: Vec<ChangeBody> = found
            .changes
            .iter()
            .take(crate::compat::Report::MAX_LISTED)
            .map(|change| ChangeBody::of(change, found.from.version.get()))
            .collect();
        Self {
            subject: found.from.subject.to_string(),
            schema_type: found.from.format.to_string(),
            from: VersionRef::of(&found.from),
            to: VersionRef::of(&found.to),
            compatible: PairVerdict {
                backward,
                forward,
                full: backward && forward,
            },
            other_lineage: !found.same_lineage(),
            changes,
            changes_total: found.changes.len(),
        }
    }
}

/// One earlier version's row of the matrix.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixRowBody {
    /// The earlier version.
    pub version: u32,
    /// Its schema ID.
    pub id: u32,
    /// Its lineage (its value of the compatibility group's property), when the subject has a group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage: Option<String>,
    /// True when it is of another lineage than the schema tested: not checked, and in no mode's verdict.
    pub other_lineage: bool,
    /// Why the schema cannot read its data.
    pub backward: Vec<CheckFinding>,
    /// Why it cannot read the schema's data.
    pub forward: Vec<CheckFinding>,
}

/// One mode's verdict.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixMode {
    /// The mode.
    pub mode: String,
    /// Whether the schema passes it.
    pub compatible: bool,
    /// How many incompatibilities there are in all; at most 1,000 are listed.
    pub incompatibilities_total: usize,
    /// The versions it checks, newest first.
    pub checked_versions: Vec<u32>,
    /// Every finding against them.
    pub incompatibilities: Vec<CheckFinding>,
}

/// A schema against every earlier version and mode.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixBody {
    /// The subject.
    pub subject: String,
    /// The version tested; absent for a draft.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionRef>,
    /// The subject's level in force.
    pub level: String,
    /// The metadata property naming lineages, when the subject has a compatibility group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility_group: Option<String>,
    /// The tested schema's lineage (its value of that property), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage: Option<String>,
    /// True when only the newest 100 earlier versions were compared.
    pub truncated: bool,
    /// One row per earlier live version, oldest first.
    pub rows: Vec<MatrixRowBody>,
    /// One verdict per mode.
    pub modes: Vec<MatrixMode>,
}

impl MatrixBody {
    fn of(subject: &SubjectName, version: Option<&VersionedSchema>, matrix: &Matrix) -> Self {
        let findings = |list: &[Incompatibility]| list.iter().map(CheckFinding::of).collect();
        Self {
            subject: subject.to_string(),
            version: version.map(VersionRef::of),
            level: matrix.level.to_string(),
            compatibility_group: matrix.compatibility_group.clone(),
            lineage: matrix.lineage.clone(),
            truncated: matrix.truncated,
            rows: matrix
                .rows
                .iter()
                .map(|row| MatrixRowBody {
                    version: row.version.get(),
                    id: row.id.get(),
                    lineage: row.lineage.clone(),
                    other_lineage: row.other_lineage,
                    backward: findings(&row.backward),
                    forward: findings(&row.forward),
                })
                .collect(),
            modes: matrix
                .modes
                .iter()
                .map(|verdict| MatrixMode {
                    mode: verdict.mode.to_string(),
                    compatible: verdict.incompatibilities.is_empty(),
                    incompatibilities_total: verdict.total,
                    checked_versions: verdict.checked.iter().map(|v| v.get()).collect(),
                    incompatibilities: findings(&verdict.incompatibilities),
                })
                .collect(),
        }
    }
}

#[utoipa::path(
    get,
    path = "/subjects/{subject}/versions/{version}/diff/{other}",
    tag = "subjects",
    summary = "Every change from one version of a subject to another, with its verdict per direction (our extension)",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "The earlier side: a version number, `latest` or -1"),
        ("other" = VersionParam, Path, description = "The later side: a version number, `latest` or -1"),
    ),
    responses(
        (status = 200, description = "The changes", body = DiffBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version", body = ErrorBody),
        (status = 409, description = "409: the two versions are of different schema types", body = ErrorBody),
        (status = 422, description = "42201: a stored version cannot be read, or the comparison is too complex; \
                                      42202: not a valid version",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn diff_versions(
    State(state): State<ApiState>,
    Path((name, from, to)): Path<(String, String, String)>,
) -> Reply {
    let (subject, from, to) = (subject(name)?, version(&from)?, version(&to)?);
    let found = history::diff_versions(state.registry.as_ref(), &subject, from, to).await?;
    Ok(json_response(&DiffBody::of(&found)))
}

#[utoipa::path(
    get,
    path = "/compatibility/subjects/{subject}/versions/{version}/matrix",
    tag = "compatibility",
    summary = "A version against every earlier version under every mode (our extension)",
    params(
        ("subject" = SubjectName, Path, description = "The subject"),
        ("version" = VersionParam, Path, description = "A version number, `latest` or -1"),
    ),
    responses(
        (status = 200, description = "The matrix", body = MatrixBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401: no such subject; 40402: no such version", body = ErrorBody),
        (status = 409, description = "409: the subject's versions are of different schema types", body = ErrorBody),
        (status = 422, description = "42201: a stored version cannot be read, or a check is too complex; \
                                      42202: not a valid version",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn version_matrix(
    State(state): State<ApiState>,
    Path((name, number)): Path<(String, String)>,
) -> Reply {
    let subject = subject(name)?;
    let (stored, matrix) = history::matrix_of_version(state.registry.as_ref(), &subject, version(&number)?).await?;
    Ok(json_response(&MatrixBody::of(&subject, Some(&stored), &matrix)))
}

#[utoipa::path(
    post,
    path = "/compatibility/subjects/{subject}/matrix",
    tag = "compatibility",
    summary = "A draft schema against every version of a subject under every mode; nothing is registered (our extension)",
    params(
        ("subject" = SubjectName, Path, description = "The subject (one without versions has an empty matrix)"),
    ),
    request_body = SchemaRequest,
    responses(
        (status = 200, description = "The matrix", body = MatrixBody),
        (status = 400, description = BAD_REQUEST, body = ErrorBody),
        (status = 404, description = "40401 or 40402: a reference with version -1 names a subject without live \
                                      versions",
         body = ErrorBody),
        (status = 409, description = "409: the subject's versions are of another schema type", body = ErrorBody),
        (status = 422, description = "42201: an empty or missing schema, an unknown schema type, not a valid \
                                      schema, a reference to a version that does not exist, or a check too \
                                      complex to decide; 42202: a reference's version is not valid; 42208: the \
                                      subject's or a reference's subject name is not valid; 42209: the schema is \
                                      over the size limit",
         body = ErrorBody),
        (status = 500, description = STORE_FAILED, body = ErrorBody),
    )
)]
pub(super) async fn draft_matrix(State(state): State<ApiState>, Path(name): Path<String>, body: Body) -> Reply {
    let subject = subject(name)?;
    let request = SchemaRequest::parse(&read_body(&state, body).await?)?;
    let draft = request.new_schema(state.registry.as_ref()).await?;
    let matrix = history::matrix_of_draft(state.registry.as_ref(), &subject, &draft).await?;
    Ok(json_response(&MatrixBody::of(&subject, None, &matrix)))
}

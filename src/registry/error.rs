//! Registry errors, each with Confluent's error code and HTTP status.

use crate::compat::budget::Exceeded;
use crate::compat::{CheckError, Format, Report, error_chain};

use super::{SchemaId, SubjectName, Version};

/// Why a registry call failed. [`Error::code`] gives Confluent's code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 40401.
    #[error("subject `{subject}` not found")]
    SubjectNotFound {
        /// The subject asked for.
        subject: SubjectName,
    },
    /// 40402.
    #[error("version {version} of subject `{subject}` not found")]
    VersionNotFound {
        /// The subject.
        subject: SubjectName,
        /// The version asked for (`latest` when the subject has none).
        version: String,
    },
    /// 40403.
    #[error("schema {what} not found")]
    SchemaNotFound {
        /// What was looked for: an ID, or "under subject `s`".
        what: String,
    },
    /// 40404.
    #[error("subject `{subject}` was soft-deleted; use permanent=true to remove it for good")]
    SubjectSoftDeleted {
        /// The subject.
        subject: SubjectName,
    },
    /// 40405.
    #[error("subject `{subject}` must be soft-deleted before it can be deleted permanently")]
    SubjectNotSoftDeleted {
        /// The subject.
        subject: SubjectName,
    },
    /// 40406.
    #[error("version {version} of subject `{subject}` was soft-deleted; use permanent=true to remove it for good")]
    VersionSoftDeleted {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
    },
    /// 40407.
    #[error("version {version} of subject `{subject}` must be soft-deleted before it can be deleted permanently")]
    VersionNotSoftDeleted {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
    },
    /// 40408.
    #[error("subject `{subject}` has no compatibility level of its own")]
    SubjectCompatibilityNotConfigured {
        /// The subject.
        subject: SubjectName,
    },
    /// 40409.
    #[error("subject `{subject}` has no mode of its own")]
    SubjectModeNotConfigured {
        /// The subject.
        subject: SubjectName,
    },
    /// 409: the schema breaks compatibility. The message lists every incompatibility.
    #[error("{}", incompatible_message(report))]
    Incompatible {
        /// Every incompatibility, with registry version numbers.
        report: Report,
    },
    /// 409: the subject's versions are of another schema type.
    #[error("the subject holds {earlier} schemas; a {candidate} schema cannot be checked against them")]
    SchemaTypeChanged {
        /// The type of the subject's versions.
        earlier: Format,
        /// The type submitted.
        candidate: Format,
    },
    /// 42201.
    #[error("invalid schema: {reason}")]
    InvalidSchema {
        /// What is wrong and where.
        reason: String,
    },
    /// 42201 as well (Confluent has no closer code): the schema is valid,
    /// but comparing it with an earlier version needs more work than allowed.
    #[error("the compatibility check was not decided: {reason}")]
    TooComplex {
        /// Which comparison and why.
        reason: String,
    },
    /// The request's check budget ran out or the check was stopped: 42209
    /// for memory (the work is refused before it is done, as a schema over
    /// the size limit is), 42201 for time (too complex to decide in time),
    /// 50301 when cancelled or shutting down (trying later may succeed).
    #[error("{exceeded}{}", budget_flag(exceeded))]
    CheckStopped {
        /// Which budget, and by how much.
        exceeded: Exceeded,
    },
    /// 42202.
    #[error("the version `{given}` is not valid: use a number from 1 to 2147483647, `latest` or -1")]
    InvalidVersion {
        /// What was given.
        given: String,
    },
    /// 42203.
    #[error(
        "`{given}` is not a compatibility level: use BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, \
         FULL, FULL_TRANSITIVE or NONE"
    )]
    InvalidCompatibilityLevel {
        /// What was given.
        given: String,
    },
    /// 42204.
    #[error("`{given}` is not a mode: use READWRITE, READONLY, READONLY_OVERRIDE or IMPORT")]
    InvalidMode {
        /// What was given.
        given: String,
    },
    /// 42205.
    #[error("operation not permitted: {reason}")]
    NotPermitted {
        /// Why.
        reason: String,
    },
    /// 42206.
    #[error(
        "version {version} of subject `{subject}` is referenced by schema IDs {} and cannot be deleted",
        id_list(referrers)
    )]
    ReferencesExist {
        /// The subject.
        subject: SubjectName,
        /// The version.
        version: Version,
        /// The schemas that refer to it.
        referrers: Vec<SchemaId>,
    },
    /// 42210: a rule set (of a schema, or a configured default or override) is not valid.
    #[error("{reason}")]
    InvalidRuleSet {
        /// Every problem, each naming its rule.
        reason: String,
    },
    /// 42211: a context that still holds subjects cannot be deleted.
    #[error("The specified context '{context}' is not empty.")]
    ContextNotEmpty {
        /// The context.
        context: String,
    },
    /// 42201: outside IMPORT mode, a registration chose a version other than
    /// the subject's next one (Confluent's "Version is not one more than
    /// previous version").
    #[error("version {wanted} of subject `{subject}` is not its next version ({next})")]
    VersionNotNext {
        /// The subject.
        subject: SubjectName,
        /// The version asked for.
        wanted: Version,
        /// The version the subject takes next.
        next: Version,
    },
    /// 42207: the schema already has another ID than the one asked for.
    #[error("schema ID {id} already names a different schema")]
    IdMismatch {
        /// The ID asked for.
        id: SchemaId,
    },
    /// 42205 (Confluent's code for overwriting an ID): an ID chosen in
    /// IMPORT mode already names other content. schemaops has one ID space
    /// for every context, so the holder may be in another context than the
    /// registration, where Confluent (one space per context) would accept it.
    #[error(
        "schema ID {id} already names another schema, held by {holder}; IDs are one space across every \
         context in schemaops, so an imported ID must be unused in all of them"
    )]
    IdInUse {
        /// The ID asked for.
        id: SchemaId,
        /// The context of the registration.
        context: String,
        /// Who holds the ID: subject, version and context.
        holder: String,
    },
    /// 42208.
    #[error("invalid subject name {subject:?}: {problem}")]
    InvalidSubject {
        /// What was given.
        subject: String,
        /// Why it is refused.
        problem: String,
    },
    /// 42209.
    #[error("the schema is {size} bytes, over the limit of {limit} bytes")]
    SchemaTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// 409 from a remote registry: it refused the schema as incompatible.
    /// The message is the registry's own.
    #[error("the registry refused the schema as incompatible: {message}")]
    Rejected {
        /// The registry's message.
        message: String,
    },
    /// 401 from a remote registry: the credentials are missing or wrong.
    #[error("the registry at {url} did not accept the credentials (HTTP 401)")]
    Unauthorized {
        /// The registry's base URL.
        url: String,
    },
    /// 403 from a remote registry: the credentials may not do this.
    #[error("the registry at {url} refused access (HTTP 403)")]
    Forbidden {
        /// The registry's base URL.
        url: String,
    },
    /// A remote registry could not be reached, timed out, or kept failing
    /// (5xx, 408, 429) after every retry. Trying later may succeed.
    #[error("the registry at {url} is unavailable: {reason}")]
    Unavailable {
        /// The registry's base URL.
        url: String,
        /// What went wrong on the last attempt.
        reason: String,
    },
    /// A remote registry's answer was longer than the client reads; what
    /// arrived was dropped. Not retried: the same request gets the same answer.
    #[error(
        "the registry at {url} answered {method} {path} with more than {limit} bytes, the most this client reads \
         (--registry-max-response-bytes)"
    )]
    AnswerTooLarge {
        /// The registry's base URL.
        url: String,
        /// The request's method.
        method: String,
        /// The request's path under the base URL, without the query.
        path: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A remote registry's error that has no variant of its own, with its code.
    #[error("the registry answered HTTP {status} with error code {code}: {message}")]
    Remote {
        /// The HTTP status.
        status: u16,
        /// The registry's `error_code` (the HTTP status when the body had none).
        code: u32,
        /// The registry's message.
        message: String,
    },
    /// 405: the registry lacks a feature (Karapace has no per-subject mode).
    /// Nothing was sent.
    #[error("the registry at {url} cannot hold {feature}")]
    Unsupported {
        /// The registry's base URL.
        url: String,
        /// The missing feature, e.g. "a per-subject mode".
        feature: &'static str,
    },
    /// 50001: the store failed; details are logged, not shown to clients.
    /// 50004 when the store is one this process only reads ([`ReadOnlyStore`](crate::registry::embedded::store::ReadOnlyStore)).
    #[error("failed to {action}")]
    Store {
        /// What the registry was doing.
        action: &'static str,
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn incompatible_message(report: &Report) -> String {
    let mut text = format!(
        "schema being registered is incompatible with an earlier schema under {} ({}): ",
        report.mode,
        report.count_phrase()
    );
    let items: Vec<String> = report
        .incompatibilities
        .iter()
        .map(|i| format!("[version {}] {} at {}: {}", i.version, i.kind, i.path, i.message))
        .collect();
    text.push_str(&items.join("; "));
    text
}

impl Error {
    /// True when trying again later may succeed: the store (or, for a
    /// remote registry, the connection) failed, not the request.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Store { .. } | Error::Unavailable { .. })
    }

    /// True when the registry gave no answer about what was asked: it failed
    /// transiently, refused the credentials, or answered with something that
    /// is not a Confluent error (a wrong URL's 404 page). Callers that read
    /// "not found" as "absent" must not read these that way.
    pub fn is_unanswered(&self) -> bool {
        match self {
            Error::Unauthorized { .. } | Error::Forbidden { .. } | Error::AnswerTooLarge { .. } => true,
            Error::Remote { status, code, .. } => *status >= 500 || *code < 10_000,
            other => other.is_transient(),
        }
    }

    /// Confluent's error code.
    pub fn code(&self) -> u32 {
        match self {
            Error::SubjectNotFound { .. } => 40401,
            Error::VersionNotFound { .. } => 40402,
            Error::SchemaNotFound { .. } => 40403,
            Error::SubjectSoftDeleted { .. } => 40404,
            Error::SubjectNotSoftDeleted { .. } => 40405,
            Error::VersionSoftDeleted { .. } => 40406,
            Error::VersionNotSoftDeleted { .. } => 40407,
            Error::SubjectCompatibilityNotConfigured { .. } => 40408,
            Error::SubjectModeNotConfigured { .. } => 40409,
            Error::Incompatible { .. } | Error::SchemaTypeChanged { .. } | Error::Rejected { .. } => 409,
            Error::Unauthorized { .. } => 40101,
            Error::Forbidden { .. } => 40301,
            Error::Unavailable { .. } => 50301,
            Error::AnswerTooLarge { .. } => 502,
            Error::Remote { code, .. } => *code,
            Error::InvalidSchema { .. } | Error::TooComplex { .. } => 42201,
            Error::CheckStopped { exceeded } => match exceeded {
                Exceeded::Memory { .. } => 42209,
                Exceeded::Time { .. } => 42201,
                Exceeded::Cancelled | Exceeded::ShuttingDown => 50301,
            },
            Error::InvalidVersion { .. } => 42202,
            Error::InvalidCompatibilityLevel { .. } => 42203,
            Error::InvalidMode { .. } => 42204,
            Error::NotPermitted { .. } | Error::IdInUse { .. } => 42205,
            Error::ReferencesExist { .. } => 42206,
            Error::VersionNotNext { .. } => 42201,
            Error::IdMismatch { .. } => 42207,
            Error::InvalidSubject { .. } => 42208,
            Error::SchemaTooLarge { .. } => 42209,
            Error::InvalidRuleSet { .. } => 42210,
            Error::ContextNotEmpty { .. } => 42211,
            Error::Store { source, .. } if crate::registry::embedded::store::is_unknown_leader(source.as_ref()) => {
                50004
            }
            Error::Store { .. } => 50001,
            Error::Unsupported { .. } => 405,
        }
    }

    /// The HTTP status: the first three digits of the code.
    pub fn http_status(&self) -> u16 {
        let code = self.code();
        if let Error::Remote { status, .. } = self {
            return *status;
        }
        let status = if code >= 10_000 { code / 100 } else { code };
        u16::try_from(status).unwrap_or(500)
    }

    /// A short PascalCase name for the failure, from a bounded set.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::SubjectNotFound { .. } => "SubjectNotFound",
            Error::VersionNotFound { .. } => "VersionNotFound",
            Error::SchemaNotFound { .. } => "SchemaNotFound",
            Error::SubjectSoftDeleted { .. } => "SubjectSoftDeleted",
            Error::SubjectNotSoftDeleted { .. } => "SubjectNotSoftDeleted",
            Error::VersionSoftDeleted { .. } => "VersionSoftDeleted",
            Error::VersionNotSoftDeleted { .. } => "VersionNotSoftDeleted",
            Error::SubjectCompatibilityNotConfigured { .. } => "SubjectCompatibilityNotConfigured",
            Error::SubjectModeNotConfigured { .. } => "SubjectModeNotConfigured",
            Error::Incompatible { .. } => "Incompatible",
            Error::SchemaTypeChanged { .. } => "SchemaTypeChanged",
            Error::InvalidSchema { .. } => "InvalidSchema",
            Error::TooComplex { .. } => "TooComplex",
            Error::CheckStopped { .. } => "CheckStopped",
            Error::InvalidVersion { .. } => "InvalidVersion",
            Error::InvalidCompatibilityLevel { .. } => "InvalidCompatibilityLevel",
            Error::InvalidMode { .. } => "InvalidMode",
            Error::NotPermitted { .. } => "NotPermitted",
            Error::ReferencesExist { .. } => "ReferencesExist",
            Error::VersionNotNext { .. } => "VersionNotNext",
            Error::IdMismatch { .. } => "IdMismatch",
            Error::IdInUse { .. } => "IdInUse",
            Error::InvalidSubject { .. } => "InvalidSubject",
            Error::SchemaTooLarge { .. } => "SchemaTooLarge",
            Error::InvalidRuleSet { .. } => "InvalidRuleSet",
            Error::ContextNotEmpty { .. } => "ContextNotEmpty",
            Error::Rejected { .. } => "RegistryRejected",
            Error::Unauthorized { .. } => "RegistryUnauthorized",
            Error::Forbidden { .. } => "RegistryForbidden",
            Error::Unavailable { .. } => "RegistryUnavailable",
            Error::AnswerTooLarge { .. } => "RegistryAnswerTooLarge",
            Error::Remote { .. } => "RegistryError",
            Error::Store { .. } => "StoreFailed",
            Error::Unsupported { .. } => "Unsupported",
        }
    }

    /// The error for a schema the engine cannot read.
    pub fn from_check(error: &CheckError) -> Self {
        match error {
            CheckError::TooLarge { size, limit, .. } => Error::SchemaTooLarge {
                size: *size,
                limit: *limit,
            },
            CheckError::FormatMismatch { candidate, earlier } => Error::SchemaTypeChanged {
                earlier: *earlier,
                candidate: *candidate,
            },
            CheckError::TooComplex { .. } => Error::TooComplex {
                reason: error_chain(error),
            },
            CheckError::Stopped(exceeded) => Error::CheckStopped {
                exceeded: exceeded.clone(),
            },
            other => Error::InvalidSchema {
                reason: error_chain(other),
            },
        }
    }
}

impl From<super::contract::InvalidRuleSet> for Error {
    fn from(invalid: super::contract::InvalidRuleSet) -> Self {
        Error::InvalidRuleSet {
            reason: invalid.to_string(),
        }
    }
}

/// The `schemaops registry` flag that sets the budget `exceeded` ran out of.
fn budget_flag(exceeded: &Exceeded) -> &'static str {
    match exceeded {
        Exceeded::Memory { .. } => " (--max-check-memory-mib)",
        Exceeded::Time { .. } => " (--max-check-seconds)",
        Exceeded::Cancelled | Exceeded::ShuttingDown => "",
    }
}

/// IDs as `5, 7, 9`.
fn id_list(ids: &[SchemaId]) -> String {
    ids.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

//! The compatibility engine: can a candidate schema replace the earlier
//! versions of a subject under a mode, and if not, every reason why.
//!
//! Pure: no I/O, no async, no Kubernetes, no HTTP. Callers hand in text and
//! get back a [`Report`] or a [`CheckError`].
//!
//! There are three outcomes, and only three:
//!
//! A compatible change: adding a field with a default is BACKWARD compatible.
//! ```
//! use schemaops::compat::{check, Format, Mode, SchemaText};
//! let v1 = SchemaText::new(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#);
//! let v2 = SchemaText::new(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},
//!                                {"name":"b","type":"string","default":""}]}"#);
//! let report = check(Format::Avro, Mode::Backward, &v2, &[v1]).unwrap();
//! assert!(report.is_compatible());
//! ```
//!
//! An incompatible change: the report lists every break with its path.
//! ```
//! use schemaops::compat::{check, Format, Mode, SchemaText};
//! let v1 = SchemaText::new(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#);
//! let v2 = SchemaText::new(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"boolean"},
//!                                {"name":"b","type":"string"}]}"#);
//! let report = check(Format::Avro, Mode::Backward, &v2, &[v1]).unwrap();
//! let paths: Vec<String> = report.incompatibilities.iter().map(|i| i.path.to_string()).collect();
//! assert_eq!(paths, ["/fields/0/type", "/fields/1"]);
//! ```
//!
//! Undecidable: an invalid schema is an error, never "incompatible".
//! ```
//! use schemaops::compat::{check, Format, Mode, SchemaText};
//! let broken = SchemaText::new(r#"{"type":"record","name":"R","fields":[{"name":"a","type":"integer"}]}"#);
//! assert!(check(Format::Avro, Mode::Backward, &broken, &[]).is_err());
//! ```
//!
//! Where we knowingly differ from Confluent, the format module says so
//! ([`avro`] for Avro, [`protobuf`] for Protobuf).

pub mod avro;
pub mod budget;
pub mod cases;
pub mod diff;
pub mod json;
mod json_tree;
mod mode;
mod path;
pub mod protobuf;
mod report;
mod sides;
mod stack;
mod summary;

use std::fmt;

pub use mode::{Direction, Format, Mode, Scope, UnknownName};
pub use path::{Location, SchemaPath, Segment};
pub use report::{Incompatibility, Kind, Report};
pub use summary::{FieldSummary, NamedType, SchemaSummary};

/// A schema as stored: its text and the texts of the schemas it refers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaText {
    /// The schema document.
    pub text: String,
    /// Schemas this one refers to, in the order they must be read.
    pub references: Vec<Reference>,
}

impl SchemaText {
    /// A schema with no references.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            references: Vec::new(),
        }
    }
}

/// A schema that another one refers to (Confluent's schema references).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The name the referring schema uses: an import path for Protobuf, a
    /// `$ref` URI for JSON Schema, the referenced subject (informational) for
    /// Avro, whose named types are found by their full names.
    pub name: String,
    /// The referenced schema's text.
    pub text: String,
}

/// Limits that keep a hostile or mistaken input from costing unbounded time or memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest schema text accepted, in bytes, references counted separately.
    pub max_schema_bytes: usize,
}

impl Limits {
    /// The default size limit: 8 MiB.
    pub const DEFAULT_MAX_SCHEMA_BYTES: usize = 8 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_schema_bytes: Self::DEFAULT_MAX_SCHEMA_BYTES,
        }
    }
}

/// Which of the inputs to a check a problem is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaRole {
    /// The schema being proposed.
    Candidate,
    /// An earlier version, by its 1-based position in `previous`.
    Previous(usize),
}

impl fmt::Display for SchemaRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaRole::Candidate => f.write_str("the candidate schema"),
            SchemaRole::Previous(version) => write!(f, "previous version {version}"),
        }
    }
}

/// Why a check could not decide. Never means "incompatible".
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A schema text is larger than [`Limits::max_schema_bytes`].
    #[error("{role} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Which input.
        role: SchemaRole,
        /// Its size in bytes.
        size: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A schema text is not a valid Avro schema.
    #[error("{role} is not a valid Avro schema")]
    InvalidAvro {
        /// Which input.
        role: SchemaRole,
        /// What is wrong and where.
        #[source]
        source: avro::ParseError,
    },
    /// A schema text is not a valid JSON Schema.
    #[error("{role} is not a valid JSON Schema")]
    InvalidJson {
        /// Which input.
        role: SchemaRole,
        /// What is wrong and where.
        #[source]
        source: json::ParseError,
    },
    /// A schema text is not a valid Protobuf schema, or its imports cannot be resolved.
    #[error("{role} is not a valid Protobuf schema")]
    InvalidProtobuf {
        /// Which input.
        role: SchemaRole,
        /// What is wrong and where.
        #[source]
        source: protobuf::ParseError,
    },
    /// The comparison with one earlier version needed more work than allowed.
    #[error("cannot check against previous version {version}")]
    TooComplex {
        /// The 1-based position of the earlier version.
        version: usize,
        /// The budget that ran out.
        #[source]
        source: json::TooComplex,
    },
    /// The request's budget ran out, or the check was cancelled.
    #[error(transparent)]
    Stopped(#[from] budget::Exceeded),
    /// A parsed candidate and an earlier version are in different formats.
    #[error("the candidate is {candidate} but the earlier version is {earlier}")]
    FormatMismatch {
        /// The candidate's format.
        candidate: Format,
        /// The earlier version's format.
        earlier: Format,
    },
}

impl CheckError {
    /// A short PascalCase name for the failure, from a bounded set.
    pub fn reason(&self) -> &'static str {
        match self {
            CheckError::TooLarge { .. } => "SchemaTooLarge",
            CheckError::InvalidAvro { .. } | CheckError::InvalidJson { .. } | CheckError::InvalidProtobuf { .. } => {
                "InvalidSchema"
            }
            CheckError::TooComplex { .. } => "TooComplex",
            CheckError::Stopped(_) => "OverBudget",
            CheckError::FormatMismatch { .. } => "FormatMismatch",
        }
    }
}

/// Renders an error and its chain of sources on one line: `outer: inner: innermost`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Checks `candidate` against `previous` (oldest first) under `mode`, with
/// the default [`Limits`].
///
/// # Errors
/// [`CheckError`] when a schema that the mode needs cannot be read.
pub fn check(
    format: Format,
    mode: Mode,
    candidate: &SchemaText,
    previous: &[SchemaText],
) -> Result<Report, CheckError> {
    Checker::default().check(format, mode, candidate, previous)
}

/// A schema parsed and validated once, to be checked many times: a registry
/// keeps these for its stored versions, which never change, so a check
/// parses only the candidate.
#[derive(Debug, Clone)]
pub enum ParsedSchema {
    /// An Avro schema.
    Avro(avro::AvroSchema),
    /// A JSON Schema.
    Json(json::JsonSchema),
    /// A Protobuf schema, compiled with its imports.
    Protobuf(protobuf::ProtobufSchema),
}

impl ParsedSchema {
    /// The schema language.
    pub fn format(&self) -> Format {
        match self {
            ParsedSchema::Avro(_) => Format::Avro,
            ParsedSchema::Json(_) => Format::Json,
            ParsedSchema::Protobuf(_) => Format::Protobuf,
        }
    }

    /// The canonical text: the schema's identity, independent of layout.
    pub fn canonical(&self) -> String {
        match self {
            ParsedSchema::Avro(schema) => schema.canonical(),
            ParsedSchema::Json(schema) => schema.canonical(),
            ParsedSchema::Protobuf(schema) => schema.canonical(),
        }
    }

    /// SHA-256 of the canonical text, in lowercase hex.
    pub fn fingerprint(&self) -> String {
        match self {
            ParsedSchema::Avro(schema) => schema.fingerprint(),
            ParsedSchema::Json(schema) => schema.fingerprint(),
            ParsedSchema::Protobuf(schema) => schema.fingerprint(),
        }
    }

    /// The schema in Confluent's `format=serialized` form: a base64
    /// `FileDescriptorProto` for Protobuf; `None` for formats without one.
    pub fn serialized(&self) -> Option<String> {
        match self {
            ParsedSchema::Protobuf(schema) => schema.serialized(),
            ParsedSchema::Avro(_) | ParsedSchema::Json(_) => None,
        }
    }

    /// How many type nodes the schema has: a measure of the cost of checking it.
    pub fn size(&self) -> usize {
        match self {
            ParsedSchema::Avro(schema) => schema.types.len(),
            ParsedSchema::Json(schema) => schema.size(),
            ParsedSchema::Protobuf(schema) => schema.size(),
        }
    }
}

/// Checks an already parsed `candidate` against already parsed `previous`
/// versions (oldest first) under `mode`; the same rules as [`check`].
///
/// Transitive checks against many versions of a large schema run on every
/// core: the versions are independent, and the report's order does not
/// depend on which finishes first.
///
/// # Errors
/// [`CheckError::TooComplex`] when comparing with some version needs more
/// work than a check may take (JSON Schema with deeply combined schemas).
pub fn check_parsed(mode: Mode, candidate: &ParsedSchema, previous: &[&ParsedSchema]) -> Result<Report, CheckError> {
    Checker::default().check_parsed(mode, candidate, previous)
}

/// Runs `work` for every version, spread over the machine's cores when the
/// whole job is large enough to repay starting threads (many versions of a
/// schema of `size` nodes). Results come back in the order of `versions`.
fn for_each_version<T: Send>(versions: &[usize], size: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    /// Below this many nodes times versions, one thread is faster.
    const PARALLEL_WORK: usize = 50_000;
    if size.saturating_mul(versions.len()) < PARALLEL_WORK {
        return versions.iter().map(|&version| work(version)).collect();
    }
    let threads = cores().min(versions.len() / 4);
    if threads < 2 {
        return versions.iter().map(|&version| work(version)).collect();
    }
    let work = &work;
    // The request's budget goes with the work onto each thread.
    let budget = budget::current();
    let budget = budget.as_ref();
    std::thread::scope(|scope| {
        let handles: Vec<_> = versions
            .chunks(versions.len().div_ceil(threads))
            .map(|part| {
                scope.spawn(move || {
                    budget::run_under(budget, || part.iter().map(|&version| work(version)).collect::<Vec<T>>())
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// How many threads this process may run at once, read once: the standard
/// library reads the cgroup's CPU quota from files on every call, which cost
/// more than a whole check of a small schema.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Every incompatibility between `candidate` and one earlier version, in
/// each direction of `mode`.
fn compare(
    mode: Mode,
    candidate: &ParsedSchema,
    earlier: &ParsedSchema,
    version: usize,
    checker: &Checker,
) -> Result<Vec<Incompatibility>, CheckError> {
    budget::charge_check(candidate.size().saturating_add(earlier.size()))?;
    match (candidate, earlier) {
        (ParsedSchema::Avro(candidate), ParsedSchema::Avro(earlier)) => Ok(mode
            .directions()
            .iter()
            .flat_map(|&direction| avro::resolve(candidate, earlier, direction, version))
            .collect()),
        (ParsedSchema::Json(candidate), ParsedSchema::Json(earlier)) => {
            let mut found = Vec::new();
            for &direction in mode.directions() {
                found.extend(
                    json::check(
                        candidate,
                        earlier,
                        direction,
                        version,
                        checker.json_policy,
                        checker.json_step_budget,
                    )
                    .map_err(|source| stopped_or_too_complex(version, source))?,
                );
            }
            Ok(found)
        }
        (ParsedSchema::Protobuf(candidate), ParsedSchema::Protobuf(earlier)) => Ok(mode
            .directions()
            .iter()
            .flat_map(|&direction| protobuf::check(candidate, earlier, direction, version))
            .collect()),
        (candidate, earlier) => Err(CheckError::FormatMismatch {
            candidate: candidate.format(),
            earlier: earlier.format(),
        }),
    }
}

/// A JSON Schema walk that gave up: stopped by the request's budget (the
/// walk gives up at a checkpoint as when it runs out of steps), or too complex.
fn stopped_or_too_complex(version: usize, source: json::TooComplex) -> CheckError {
    match budget::checkpoint() {
        Err(exceeded) => CheckError::Stopped(exceeded),
        Ok(()) => CheckError::TooComplex { version, source },
    }
}

/// Runs checks under chosen [`Limits`].
#[derive(Debug, Clone, Copy)]
pub struct Checker {
    limits: Limits,
    json_policy: json::JsonPolicy,
    json_step_budget: usize,
}

impl Default for Checker {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl Checker {
    /// A checker that enforces `limits`, with the STRICT JSON Schema policy.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            json_policy: json::JsonPolicy::default(),
            json_step_budget: json::DEFAULT_STEP_BUDGET,
        }
    }

    /// The same checker, giving up on a JSON Schema comparison as too complex
    /// to decide after `steps` node comparisons.
    #[must_use]
    pub fn with_json_step_budget(mut self, steps: usize) -> Self {
        self.json_step_budget = steps;
        self
    }

    /// The same checker, judging JSON Schema differences with `policy`.
    #[must_use]
    pub fn with_json_policy(mut self, policy: json::JsonPolicy) -> Self {
        self.json_policy = policy;
        self
    }

    /// The policy that judges JSON Schema differences.
    pub fn json_policy(&self) -> json::JsonPolicy {
        self.json_policy
    }

    /// Checks an already parsed `candidate` against already parsed
    /// `previous` versions (oldest first) under `mode`; see [`check_parsed`].
    ///
    /// # Errors
    /// [`CheckError`] when a comparison is too complex to decide or the
    /// formats differ.
    pub fn check_parsed(
        &self,
        mode: Mode,
        candidate: &ParsedSchema,
        previous: &[&ParsedSchema],
    ) -> Result<Report, CheckError> {
        let numbered: Vec<(usize, &ParsedSchema)> = previous
            .iter()
            .enumerate()
            .map(|(i, schema)| (i + 1, *schema))
            .collect();
        self.check_numbered(mode, candidate, &numbered)
    }

    /// As [`Checker::check_parsed`], with each earlier version (oldest first)
    /// given with the number that reports and messages call it by, such as a
    /// registry's version number.
    ///
    /// # Errors
    /// As [`Checker::check_parsed`].
    pub fn check_numbered(
        &self,
        mode: Mode,
        candidate: &ParsedSchema,
        previous: &[(usize, &ParsedSchema)],
    ) -> Result<Report, CheckError> {
        let positions = mode.versions_to_check(previous.len());
        let found = for_each_version(&positions, candidate.size(), |position| {
            let (number, earlier) = previous[position - 1];
            compare(mode, candidate, earlier, number, self)
        });
        let found = found.into_iter().collect::<Result<Vec<_>, CheckError>>()?;
        let numbers = positions.iter().map(|position| previous[position - 1].0).collect();
        Ok(Report::new(mode, numbers, found.into_iter().flatten().collect()))
    }

    /// Checks `candidate` against `previous` (oldest first) under `mode`.
    ///
    /// The candidate is always parsed, so an invalid schema is refused even
    /// under NONE. Non-transitive modes read only the newest earlier version;
    /// transitive ones read every version, newest first, and the report lists
    /// every incompatibility against every version it breaks.
    ///
    /// # Errors
    /// [`CheckError`] when a schema that the mode needs is too large, invalid,
    /// or in a format without a checker.
    pub fn check(
        &self,
        format: Format,
        mode: Mode,
        candidate: &SchemaText,
        previous: &[SchemaText],
    ) -> Result<Report, CheckError> {
        let candidate = self.parse(format, SchemaRole::Candidate, candidate)?;
        let versions = mode.versions_to_check(previous.len());
        let found = for_each_version(&versions, candidate.size(), |version| {
            let earlier = self.parse(format, SchemaRole::Previous(version), &previous[version - 1])?;
            compare(mode, &candidate, &earlier, version, self)
        });
        let found = found.into_iter().collect::<Result<Vec<_>, CheckError>>()?;
        Ok(Report::new(mode, versions, found.into_iter().flatten().collect()))
    }

    /// Parses and validates one schema, for [`check_parsed`].
    ///
    /// # Errors
    /// [`CheckError`] when the text is too large, invalid, or in a format
    /// without a checker; `role` says which input it was.
    pub fn parse(&self, format: Format, role: SchemaRole, schema: &SchemaText) -> Result<ParsedSchema, CheckError> {
        self.check_size(&role, &schema.text)?;
        for reference in &schema.references {
            self.check_size(&role, &reference.text)?;
        }
        let text_bytes = schema.references.iter().fold(schema.text.len(), |bytes, reference| {
            bytes.saturating_add(reference.text.len())
        });
        budget::charge_parse(format, text_bytes)?;
        match format {
            Format::Avro => avro::AvroSchema::parse(schema)
                .map(ParsedSchema::Avro)
                .map_err(|source| CheckError::InvalidAvro { role, source }),
            Format::Json => json::JsonSchema::parse(schema)
                .map(ParsedSchema::Json)
                .map_err(|source| CheckError::InvalidJson { role, source }),
            Format::Protobuf => protobuf::ProtobufSchema::parse(schema)
                .map(ParsedSchema::Protobuf)
                .map_err(|source| CheckError::InvalidProtobuf { role, source }),
        }
    }

    fn check_size(&self, role: &SchemaRole, text: &str) -> Result<(), CheckError> {
        if text.len() > self.limits.max_schema_bytes {
            return Err(CheckError::TooLarge {
                role: role.clone(),
                size: text.len(),
                limit: self.limits.max_schema_bytes,
            });
        }
        Ok(())
    }
}

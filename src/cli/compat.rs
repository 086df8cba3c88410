//! Arguments of `schemaops compat`: schema files checked by the engine alone.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::compat::json::JsonPolicy;
use crate::compat::{Format, Limits, Mode};

/// What `schemaops compat` does, in one line (the list of commands and `-h`).
pub const COMPAT_ABOUT: &str = "Check schema files for compatibility with the compatibility engine";

/// What `schemaops compat` does, in full (`--help`).
pub const COMPAT_LONG_ABOUT: &str = "Check schema files for compatibility with the compatibility engine.\n\n\
     Exit status: 0 compatible, 1 incompatible, 2 error (bad usage, or a schema that cannot be \
     read or is invalid).";

/// Arguments of `schemaops compat`.
#[derive(Debug, Args)]
#[command(about = COMPAT_ABOUT, long_about = COMPAT_LONG_ABOUT)]
pub struct CompatArgs {
    /// Schema language of the files.
    #[arg(long, env = "SCHEMAOPS_FORMAT", default_value = "AVRO")]
    pub format: Format,

    /// Compatibility mode: BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE or NONE.
    #[arg(long, env = "SCHEMAOPS_MODE", default_value = "BACKWARD")]
    pub mode: Mode,

    /// An earlier version of the schema; repeat it, oldest first.
    #[arg(long = "previous", value_name = "FILE")]
    pub previous: Vec<PathBuf>,

    /// The new schema.
    #[arg(long, value_name = "FILE", required_unless_present = "cases")]
    pub candidate: Option<PathBuf>,

    /// A schema the others import or refer to, as NAME=FILE (for Protobuf, NAME
    /// is the import path, e.g. `common/money.proto=./money.proto`); repeat it.
    /// Every schema of the check sees the same references.
    #[arg(long = "reference", value_name = "NAME=FILE", conflicts_with = "cases")]
    pub references: Vec<String>,

    /// Run every case of a conformance JSON Lines file and print one JSON line per case.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["candidate", "previous"])]
    pub cases: Option<PathBuf>,

    /// How to print the result of a single check.
    #[arg(short = 'o', long, value_enum, env = "SCHEMAOPS_OUTPUT", default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// How JSON Schema differences are judged: STRICT (Confluent's default) or LENIENT.
    #[arg(long, env = "SCHEMAOPS_JSON_POLICY", default_value = "strict")]
    pub json_policy: JsonPolicy,

    /// The largest schema file accepted, in bytes.
    #[arg(long, env = "SCHEMAOPS_MAX_SCHEMA_BYTES", default_value_t = Limits::DEFAULT_MAX_SCHEMA_BYTES)]
    pub max_schema_bytes: usize,
}

/// How a single check's result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Sentences for a person.
    Text,
    /// One JSON object.
    Json,
}

/// What `schemaops compat` will do, checked and typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompatConfig {
    /// Size limits for every schema read.
    pub limits: Limits,
    /// The policy that judges JSON Schema differences.
    pub json_policy: JsonPolicy,
    /// A single check, or a file of cases.
    pub job: CompatJob,
}

/// The two jobs of `schemaops compat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompatJob {
    /// Check one candidate against earlier versions.
    Pair {
        /// Schema language.
        format: Format,
        /// Compatibility mode.
        mode: Mode,
        /// Earlier versions, oldest first.
        previous: Vec<PathBuf>,
        /// The new schema.
        candidate: PathBuf,
        /// Referenced schemas: the name used to refer to each, and its file.
        references: Vec<(String, PathBuf)>,
        /// How to print the result.
        output: OutputFormat,
    },
    /// Run every case of a conformance file.
    Cases {
        /// The JSON Lines file.
        path: PathBuf,
    },
}

impl CompatArgs {
    /// Resolves the arguments into a configuration.
    ///
    /// # Errors
    /// A message naming the argument when the combination makes no sense.
    pub fn into_config(self) -> Result<CompatConfig, String> {
        if self.max_schema_bytes == 0 {
            return Err("--max-schema-bytes must be at least 1".to_owned());
        }
        let limits = Limits {
            max_schema_bytes: self.max_schema_bytes,
        };
        let job = match (self.cases, self.candidate) {
            (Some(path), _) => CompatJob::Cases { path },
            (None, Some(candidate)) => CompatJob::Pair {
                format: self.format,
                mode: self.mode,
                previous: self.previous,
                candidate,
                references: self
                    .references
                    .iter()
                    .map(|spec| match spec.split_once('=') {
                        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
                            Ok((name.to_owned(), PathBuf::from(path)))
                        }
                        _ => Err(format!("--reference `{spec}` should be NAME=FILE")),
                    })
                    .collect::<Result<_, _>>()?,
                output: self.output,
            },
            (None, None) => return Err("give --candidate FILE (with --previous FILE…), or --cases FILE".to_owned()),
        };
        Ok(CompatConfig {
            limits,
            json_policy: self.json_policy,
            job,
        })
    }
}

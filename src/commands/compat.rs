//! `schemaops compat`: the engine on plain schema files, or on a file of
//! conformance cases.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::Verdict;
use crate::cli::{CompatConfig, CompatJob, OutputFormat};
use crate::compat::cases::Case;
use crate::compat::{CheckError, Checker, Format, Limits, Mode, Reference, Report, SchemaText};

/// Why `schemaops compat` could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read.
    #[error("failed to read {}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A schema file is larger than the limit.
    #[error("{} is larger than the limit of {limit} bytes (see --max-schema-bytes)", path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in force.
        limit: usize,
    },
    /// A schema file is not UTF-8 text.
    #[error("{} is not UTF-8 text: the bytes at offset {offset} are not valid UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The engine could not decide.
    #[error("cannot check {}", path.display())]
    Check {
        /// The candidate file.
        path: PathBuf,
        /// Why.
        #[source]
        source: CheckError,
    },
    /// Writing the result failed.
    #[error("failed to write the result")]
    WriteOutput(#[source] io::Error),
}

/// Runs the command, printing to `out`.
///
/// # Errors
/// [`Error`] when an input cannot be read or checked; malformed case lines are
/// reported in the output instead and give [`Verdict::Failed`].
pub fn run(config: &CompatConfig, out: &mut dyn Write) -> Result<Verdict, Error> {
    let checker = Checker::new(config.limits).with_json_policy(config.json_policy);
    match &config.job {
        CompatJob::Pair {
            format,
            mode,
            previous,
            candidate,
            references,
            output,
        } => {
            let references = references
                .iter()
                .map(|(name, path)| {
                    read_schema(path, &config.limits).map(|text| Reference {
                        name: name.clone(),
                        text,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let with_references = |text| SchemaText {
                text,
                references: references.clone(),
            };
            let candidate_text = with_references(read_schema(candidate, &config.limits)?);
            let previous_texts = previous
                .iter()
                .map(|path| read_schema(path, &config.limits).map(with_references))
                .collect::<Result<Vec<_>, _>>()?;
            let report = checker
                .check(*format, *mode, &candidate_text, &previous_texts)
                .map_err(|source| Error::Check {
                    path: candidate.clone(),
                    source,
                })?;
            let rendered = match output {
                OutputFormat::Text => render_text(&report, *format, previous),
                OutputFormat::Json => render_json(&report),
            };
            out.write_all(rendered.as_bytes()).map_err(Error::WriteOutput)?;
            Ok(if report.is_compatible() {
                Verdict::Compatible
            } else {
                Verdict::Incompatible
            })
        }
        CompatJob::Cases { path } => run_cases(path, &checker, out),
    }
}

/// Reads a schema file, refusing it before reading further than the limit.
fn read_schema(path: &Path, limits: &Limits) -> Result<String, Error> {
    let read_error = |source| Error::ReadFile {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    let limit = limits.max_schema_bytes as u64;
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(Error::FileTooLarge {
            path: path.to_owned(),
            limit: limits.max_schema_bytes,
        });
    }
    String::from_utf8(bytes).map_err(|error| Error::NotUtf8 {
        path: path.to_owned(),
        offset: error.utf8_error().valid_up_to(),
    })
}

fn run_cases(path: &Path, checker: &Checker, out: &mut dyn Write) -> Result<Verdict, Error> {
    let file = File::open(path).map_err(|source| Error::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    let mut verdict = Verdict::Compatible;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| Error::ReadFile {
            path: path.to_owned(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let rendered = match serde_json::from_str::<Case>(&line) {
            Ok(case) => serde_json::to_string(&case.run(checker)),
            Err(error) => {
                verdict = Verdict::Failed;
                serde_json::to_string(&serde_json::json!({
                    "id": null,
                    "compatible": null,
                    "incompatibilities": [],
                    "error": format!("line {} of {} is not a valid case: {error}", index + 1, path.display()),
                }))
            }
        };
        let rendered = rendered.map_err(|error| Error::WriteOutput(error.into()))?;
        writeln!(out, "{rendered}").map_err(Error::WriteOutput)?;
    }
    Ok(verdict)
}

fn render_json(report: &Report) -> String {
    let value = serde_json::json!({
        "compatible": report.is_compatible(),
        "mode": report.mode,
        "checkedVersions": report.checked_versions,
        "incompatibilities": report.incompatibilities,
        "incompatibilitiesTotal": report.total,
    });
    format!("{value}\n")
}

fn render_text(report: &Report, format: Format, previous: &[PathBuf]) -> String {
    let mut text = String::new();
    let versions: Vec<String> = report
        .checked_versions
        .iter()
        .map(|version| format!("version {version} = {}", previous[version - 1].display()))
        .collect();
    if report.is_compatible() {
        let _ = match (report.mode, versions.is_empty()) {
            (Mode::None, _) => writeln!(
                text,
                "compatible: mode NONE checks nothing; the candidate is a valid {format} schema"
            ),
            (_, true) => writeln!(text, "compatible: there are no earlier versions to check against"),
            (mode, false) => writeln!(
                text,
                "compatible under {mode} (checked against {})",
                versions.join(", ")
            ),
        };
        return text;
    }
    let _ = writeln!(
        text,
        "incompatible under {}: {} (checked against {})",
        report.mode,
        report.count_phrase(),
        versions.join(", ")
    );
    for incompatibility in &report.incompatibilities {
        let _ = writeln!(
            text,
            "\n{} at {} (against version {}):\n  {}",
            incompatibility.kind, incompatibility.path, incompatibility.version, incompatibility.message
        );
    }
    text
}

//! Our compatibility engine over versions fetched from a remote registry:
//! the texts a schema's references name, then [`Checker::check_numbered`]
//! with the registry's version numbers.

use std::collections::BTreeSet;

use crate::compat::{Checker, Mode, Reference, Report, SchemaRole, SchemaText};
use crate::registry::{Error, NewSchema, Registry, SchemaReference, SubjectName, Version, VersionSelector};

/// How deep references may nest before the schema is refused.
const MAX_REFERENCE_DEPTH: usize = 32;

/// The texts `references` name, each after the ones it refers to itself.
///
/// # Errors
/// [`Error::InvalidSchema`] for a reference to a version that does not
/// exist or nesting too deep; transient errors as they come.
pub async fn reference_texts(registry: &dyn Registry, references: &[SchemaReference]) -> Result<Vec<Reference>, Error> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    collect(registry, references, 0, &mut out, &mut seen).await?;
    Ok(out)
}

async fn collect(
    registry: &dyn Registry,
    references: &[SchemaReference],
    depth: usize,
    out: &mut Vec<Reference>,
    seen: &mut BTreeSet<String>,
) -> Result<(), Error> {
    if depth > MAX_REFERENCE_DEPTH {
        return Err(Error::InvalidSchema {
            reason: format!("references nest more than {MAX_REFERENCE_DEPTH} levels deep"),
        });
    }
    for reference in references {
        if seen.contains(&reference.name) {
            continue;
        }
        let stored = match registry
            .version(&reference.subject, VersionSelector::Exact(reference.version), true)
            .await
        {
            Ok(stored) => stored,
            Err(error) if error.is_transient() => return Err(error),
            Err(_) => {
                return Err(Error::InvalidSchema {
                    reason: format!(
                        "reference `{}` names version {} of subject `{}`, which does not exist",
                        reference.name, reference.version, reference.subject
                    ),
                });
            }
        };
        Box::pin(collect(registry, &stored.references, depth + 1, out, seen)).await?;
        if seen.insert(reference.name.clone()) {
            out.push(Reference {
                name: reference.name.clone(),
                text: stored.text,
            });
        }
    }
    Ok(())
}

/// Checks `schema` against `versions` (ascending registry version numbers,
/// already the ones `level` reads) of `subject` with our engine.
///
/// # Errors
/// [`Error::InvalidSchema`] (or another [`Error::from_check`] error) when
/// the candidate cannot be read; transient errors while fetching.
pub async fn check(
    registry: &dyn Registry,
    checker: Checker,
    subject: &SubjectName,
    schema: &NewSchema,
    level: Mode,
    versions: &[Version],
) -> Result<Report, Error> {
    let candidate = SchemaText {
        text: schema.text.clone(),
        references: reference_texts(registry, &schema.references).await?,
    };
    let mut previous = Vec::with_capacity(versions.len());
    for version in versions {
        let stored = registry
            .version(subject, VersionSelector::Exact(*version), false)
            .await?;
        if stored.format != schema.format {
            return Err(Error::SchemaTypeChanged {
                earlier: stored.format,
                candidate: schema.format,
            });
        }
        let text = SchemaText {
            text: stored.text,
            references: reference_texts(registry, &stored.references).await?,
        };
        previous.push((*version, text));
    }
    let format = schema.format;
    let subject = subject.clone();
    tokio::task::spawn_blocking(move || {
        let candidate = checker
            .parse(format, SchemaRole::Candidate, &candidate)
            .map_err(|error| Error::from_check(&error))?;
        let mut parsed = Vec::with_capacity(previous.len());
        for (version, text) in &previous {
            let earlier = checker
                .parse(format, SchemaRole::Previous(version.get() as usize), text)
                .map_err(|error| Error::InvalidSchema {
                    reason: format!(
                        "version {version} of subject `{subject}` cannot be read: {}",
                        crate::compat::error_chain(&error)
                    ),
                })?;
            parsed.push((version.get() as usize, earlier));
        }
        let numbered: Vec<(usize, &crate::compat::ParsedSchema)> =
            parsed.iter().map(|(number, schema)| (*number, schema)).collect();
        checker
            .check_numbered(level, &candidate, &numbered)
            .map_err(|error| Error::from_check(&error))
    })
    .await
    .map_err(|error| Error::Store {
        action: "run a schema check",
        source: Box::new(error),
    })?
}

//! The read step: the schema text, and what the registry holds for the
//! subject, gathered into plain values for [`decide`](super::decide).

use std::collections::BTreeMap;

use crate::compat::{Format, Mode, Reference, SchemaText};
use crate::crd::{SchemaSpec, SchemaType};
use crate::registry::contract::{Contract, ContractConfig};
use crate::registry::{
    Error, NewSchema, Registry, RegistryMode, SchemaReference, SubjectName, Version, VersionFilter, VersionSelector,
    VersionedSchema,
};

use super::decide::{Candidate, Unusable};
use crate::controller::level;
use crate::controller::view::SubjectView;
use crate::crd::conditions::Reason;

/// How deep references may nest before the read gives up.
const MAX_REFERENCE_DEPTH: usize = 32;

/// What the registry holds for one subject, as far as a decision needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistrySubject {
    /// The level the subject falls back to without one of its own: the
    /// registry's global level (or its context's, when it has one).
    pub global_level: Mode,
    /// The subject's own level, if it has one.
    pub subject_level: Option<Mode>,
    /// The subject's mode in force (its own, or the global one).
    pub mode: RegistryMode,
    /// Whether the registry can hold a subject's own mode; without it, a
    /// SubjectConfig's mode is not in force.
    pub subject_mode_supported: bool,
    /// The version that already holds the candidate, if any.
    pub holding: Option<VersionedSchema>,
    /// The subject's live versions, ascending.
    pub live_versions: Vec<Version>,
    /// The versions the desired level reads, oldest first, with their
    /// formats and texts (references resolved).
    pub previous: Vec<(Version, Format, SchemaText)>,
    /// The texts the candidate's references name, or why one cannot be read.
    pub references: Result<Vec<Reference>, String>,
}

/// The schema language of a spec.
pub fn format_of(schema_type: SchemaType) -> Format {
    match schema_type {
        SchemaType::Avro => Format::Avro,
        SchemaType::Json => Format::Json,
        SchemaType::Protobuf => Format::Protobuf,
    }
}

/// The schema text of `spec`: inline, or the ConfigMap key it names
/// (`config_map` is that ConfigMap's data, `None` when it does not exist).
///
/// # Errors
/// A message naming the missing ConfigMap or key.
pub fn schema_text(spec: &SchemaSpec, config_map: Option<&BTreeMap<String, String>>) -> Result<String, String> {
    if let Some(text) = &spec.schema {
        return Ok(text.clone());
    }
    let Some(from) = &spec.schema_from else {
        return Err("the spec sets neither schema nor schemaFrom".to_owned());
    };
    let reference = &from.config_map_key_ref;
    let data = config_map.ok_or_else(|| format!("ConfigMap `{}` does not exist", reference.name))?;
    data.get(&reference.key)
        .cloned()
        .ok_or_else(|| format!("ConfigMap `{}` has no key `{}`", reference.name, reference.key))
}

/// Checks the spec and, when it is usable and this Schema owns the subject,
/// reads the registry.
///
/// # Errors
/// The registry's error when it cannot be reached (the caller retries).
pub async fn read_candidate(
    owner: bool,
    spec: &SchemaSpec,
    text: Result<String, String>,
    view: &SubjectView,
    registry: &dyn Registry,
) -> Result<Candidate, Error> {
    if !owner {
        return Ok(Candidate::NotOwner);
    }
    let (subject, schema) = match prepare(spec, text) {
        Ok(prepared) => prepared,
        Err(unusable) => return Ok(Candidate::Unusable(unusable)),
    };
    let registry_subject = read_registry(registry, &subject, &schema, view).await?;
    Ok(Candidate::Usable {
        subject,
        schema,
        registry: Box::new(registry_subject),
    })
}

/// The subject and the schema to register, or why the spec cannot give them.
fn prepare(spec: &SchemaSpec, text: Result<String, String>) -> Result<(SubjectName, NewSchema), Unusable> {
    let subject = SubjectName::new(spec.subject.clone()).map_err(|error| Unusable {
        reason: Reason::InvalidSpec,
        message: format!("spec.subject: {error}"),
    })?;
    let text = text.map_err(|message| Unusable {
        reason: Reason::SchemaSourceNotFound,
        message,
    })?;
    let mut references = Vec::with_capacity(spec.references.len());
    for (index, reference) in spec.references.iter().enumerate() {
        let invalid = |problem: String| Unusable {
            reason: Reason::InvalidSpec,
            message: format!("spec.references[{index}]: {problem}"),
        };
        references.push(SchemaReference {
            name: reference.name.clone(),
            subject: SubjectName::new(reference.subject.clone()).map_err(|error| invalid(error.to_string()))?,
            version: Version::new(i64::from(reference.version)).map_err(|error| invalid(error.to_string()))?,
        });
    }
    Ok((
        subject,
        NewSchema {
            format: format_of(spec.schema_type),
            text,
            references,
            contract: Contract {
                metadata: spec.metadata.clone().map(Box::new),
                rule_set: spec.rule_set.clone().map(Box::new),
            }
            .normalized(),
        },
    ))
}

/// Reads the subject's settings, the version holding `schema` (if any), and
/// the earlier versions the desired level reads.
///
/// # Errors
/// The registry's error when it fails transiently.
pub async fn read_registry(
    registry: &dyn Registry,
    subject: &SubjectName,
    schema: &NewSchema,
    view: &SubjectView,
) -> Result<RegistrySubject, Error> {
    let subject_level = absent_if_missing(registry.compatibility(Some(subject), false).await)?;
    // What the subject falls back to without a level of its own: its
    // context's, `:.__GLOBAL:`'s, or the registry's global level.
    let global_level = match subject_level {
        None => registry.compatibility(Some(subject), true).await?,
        Some(_) => registry.compatibility(None, true).await?,
    };
    let mode = registry.mode(Some(subject), true).await?;
    let subject_mode_supported = registry.supports_subject_mode().await?;
    let (level, _) = level::desired(view.config.as_ref(), global_level, subject_level);
    let holding = absent_if_missing(registry.lookup(subject, schema, false).await)?;
    let live_versions = absent_if_missing(registry.versions(subject, VersionFilter::Live).await)?.unwrap_or_default();
    let settings = settings_in_scope(registry, subject, view).await?;
    let lineage = lineage(registry, subject, &settings, &schema.contract, &live_versions).await?;
    let mut previous = Vec::new();
    for position in sorted(level.versions_to_check(lineage.len())) {
        let version = lineage[position - 1];
        let stored = registry
            .version(subject, VersionSelector::Exact(version), false)
            .await?;
        let references = match reference_texts(registry, &stored.references).await? {
            Ok(texts) => texts,
            Err(message) => {
                return Err(Error::InvalidSchema {
                    reason: format!("version {version} of subject `{subject}` cannot be read: {message}"),
                });
            }
        };
        previous.push((
            version,
            stored.format,
            SchemaText {
                text: stored.text,
                references,
            },
        ));
    }
    let references = reference_texts(registry, &schema.references).await?;
    Ok(RegistrySubject {
        global_level,
        subject_level,
        mode,
        subject_mode_supported,
        holding,
        live_versions,
        previous,
        references,
    })
}

/// The data-contract settings registrations to `subject` are under: the
/// managing SubjectConfig's when it configures the subject, else those in
/// scope in the registry (the subject's own, its context's, `:.__GLOBAL:`'s,
/// or the global ones).
///
/// # Errors
/// The registry's error when it fails transiently.
async fn settings_in_scope(
    registry: &dyn Registry,
    subject: &SubjectName,
    view: &SubjectView,
) -> Result<ContractConfig, Error> {
    match &view.config {
        // A registry without data contracts holds none of the SubjectConfig's
        // settings: judging as if it did would claim a group it does not keep.
        Some(config) if !config.contract.is_empty() && !registry.supports_data_contracts().await? => {
            registry.contract_config_in_scope(subject).await
        }
        Some(config) if config.compatibility.is_some() || !config.contract.is_empty() => Ok(config.contract.clone()),
        _ => registry.contract_config_in_scope(subject).await,
    }
}

/// The live versions a new version with contract `asked` is checked
/// against: all of them, or with a compatibility group only those of its
/// lineage (its merged contract's value of the group's property).
///
/// # Errors
/// The registry's error when it fails transiently.
async fn lineage(
    registry: &dyn Registry,
    subject: &SubjectName,
    settings: &ContractConfig,
    asked: &Contract,
    live_versions: &[Version],
) -> Result<Vec<Version>, Error> {
    if settings.compatibility_group.is_none() {
        return Ok(live_versions.to_vec());
    }
    let mut contracts = Vec::with_capacity(live_versions.len());
    for version in live_versions {
        let stored = registry
            .version(subject, VersionSelector::Exact(*version), false)
            .await?;
        contracts.push((*version, stored.contract));
    }
    let mine = settings.merge(&asked.or_inherited(contracts.last().map(|(_, contract)| contract)));
    Ok(contracts
        .into_iter()
        .filter(|(_, theirs)| settings.same_lineage(&mine, theirs))
        .map(|(version, _)| version)
        .collect())
}

fn sorted(mut positions: Vec<usize>) -> Vec<usize> {
    positions.sort_unstable();
    positions
}

/// `None` for the "not found" and "not configured" answers, the value otherwise.
fn absent_if_missing<T>(result: Result<T, Error>) -> Result<Option<T>, Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(error) if error.is_unanswered() => Err(error),
        // Not found, not configured, or a schema the registry cannot parse:
        // nothing is held; the decision explains an invalid schema itself.
        Err(_) => Ok(None),
    }
}

/// The texts `references` name, each after the ones it refers to itself.
///
/// # Errors
/// The outer error when the registry fails transiently; the inner one names
/// a reference that does not exist.
async fn reference_texts(
    registry: &dyn Registry,
    references: &[SchemaReference],
) -> Result<Result<Vec<Reference>, String>, Error> {
    let mut out = Vec::new();
    let mut pending: Vec<(SchemaReference, usize, bool)> = references
        .iter()
        .rev()
        .map(|reference| (reference.clone(), 0, false))
        .collect();
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    // Depth-first, post-order: a reference's own references come before it.
    while let Some((reference, depth, expanded)) = pending.pop() {
        if expanded {
            if !out.iter().any(|known: &Reference| known.name == reference.name)
                && let Some(text) = texts.remove(&reference.name)
            {
                out.push(Reference {
                    name: reference.name,
                    text,
                });
            }
            continue;
        }
        if depth > MAX_REFERENCE_DEPTH {
            return Ok(Err(format!(
                "references nest more than {MAX_REFERENCE_DEPTH} levels deep"
            )));
        }
        let stored = match registry
            .version(&reference.subject, VersionSelector::Exact(reference.version), true)
            .await
        {
            Ok(stored) => stored,
            Err(error) if error.is_unanswered() => return Err(error),
            Err(_) => {
                return Ok(Err(format!(
                    "reference `{}` names version {} of subject `{}`, which does not exist",
                    reference.name, reference.version, reference.subject
                )));
            }
        };
        texts.insert(reference.name.clone(), stored.text);
        pending.push((reference, depth, true));
        for inner in stored.references.into_iter().rev() {
            pending.push((inner, depth + 1, false));
        }
    }
    Ok(Ok(out))
}

//! Submitted and stored schemas as the checker reads them: the texts
//! their references bring in, parsing (with a cache for stored ones), the
//! text to store, and the compatibility comparison against versions.

use std::sync::Arc;

use super::state::{self, State};
use super::{EmbeddedRegistry, blocking, stored_text};
use crate::compat::{Mode, ParsedSchema, Reference, Report, SchemaRole, SchemaText};
use crate::registry::{Error, NewSchema, SchemaId, SubjectName, Version, VersionSelector};

/// How deep references may nest (a reference to a schema with references…).
pub(crate) const MAX_REFERENCE_DEPTH: usize = 32;

/// What [`EmbeddedRegistry::reference_texts`] has gathered so far.
#[derive(Default)]
struct ReferenceWalk {
    /// The versions already walked.
    visited: std::collections::HashSet<(SubjectName, Version)>,
    /// The import names already given a text.
    names: std::collections::HashSet<String>,
    /// The texts, each after those it imports.
    texts: Vec<Reference>,
}

impl EmbeddedRegistry {
    /// The texts of the schemas `references` name, each after its own
    /// references: every (subject, version) once, however many schemas of
    /// the graph refer to it, so the walk is linear in the graph's size.
    fn reference_texts(
        state: &State,
        references: &[crate::registry::SchemaReference],
        depth: usize,
        walk: &mut ReferenceWalk,
    ) -> Result<(), Error> {
        if depth > MAX_REFERENCE_DEPTH {
            return Err(Error::InvalidSchema {
                reason: format!("references nest more than {MAX_REFERENCE_DEPTH} levels deep"),
            });
        }
        for reference in references {
            if !walk.visited.insert((reference.subject.clone(), reference.version)) {
                continue;
            }
            let (_, entry) = state
                .select(&reference.subject, VersionSelector::Exact(reference.version), true)
                .map_err(|_| Error::InvalidSchema {
                    reason: format!(
                        "reference `{}` names version {} of subject `{}`, which does not exist",
                        reference.name, reference.version, reference.subject
                    ),
                })?;
            let row = state.schema(entry.id)?;
            Self::reference_texts(state, &row.references, depth + 1, walk)?;
            if walk.names.insert(reference.name.clone()) {
                walk.texts.push(Reference {
                    name: reference.name.clone(),
                    text: row.text.clone(),
                });
            }
        }
        Ok(())
    }

    pub(super) fn schema_text(
        state: &State,
        text: &str,
        references: &[crate::registry::SchemaReference],
    ) -> Result<SchemaText, Error> {
        let mut walk = ReferenceWalk::default();
        Self::reference_texts(state, references, 0, &mut walk)?;
        Ok(SchemaText {
            text: text.to_owned(),
            references: walk.texts,
        })
    }

    /// Parses a submitted schema (and checks its rules); returns it with
    /// its canonical form.
    pub(super) async fn parse_new(&self, schema: &NewSchema) -> Result<(Arc<ParsedSchema>, String), Error> {
        if let Some(rules) = &schema.contract.rule_set {
            rules.validate()?;
        }
        let text = Self::schema_text(&self.read(), &schema.text, &schema.references)?;
        let checker = self.checker;
        let format = schema.format;
        let parsed = blocking(move || checker.parse(format, SchemaRole::Candidate, &text))
            .await?
            .map_err(|error| Error::from_check(&error))?;
        let canonical = parsed.canonical();
        Ok((Arc::new(parsed), canonical))
    }

    /// The text to store for `schema`, parsed as `parsed` with canonical
    /// form `canonical` (see [`stored_text`]): the first rewritten text that
    /// parses back to the same canonical form, else the text as sent.
    pub(super) async fn stored_text(
        &self,
        schema: &NewSchema,
        parsed: &Arc<ParsedSchema>,
        canonical: &str,
        normalize: bool,
    ) -> Result<String, Error> {
        let rewritten_texts = stored_text::rewritten_texts(parsed, &schema.text, normalize);
        let tried = rewritten_texts.len();
        for rewritten in rewritten_texts {
            let text = Self::schema_text(&self.read(), &rewritten, &schema.references)?;
            let checker = self.checker;
            let format = schema.format;
            let reparsed = blocking(move || checker.parse(format, SchemaRole::Candidate, &text)).await?;
            match reparsed {
                Ok(again) if again.canonical() == canonical => return Ok(rewritten),
                outcome => tracing::debug!(
                    format = format.as_str(),
                    parses = outcome.is_ok(),
                    "A rewritten schema text would not keep the schema's identity"
                ),
            }
        }
        if tried > 0 {
            tracing::warn!(
                format = schema.format.as_str(),
                "No rewritten schema text keeps the schema's identity; storing the text as sent"
            );
        }
        Ok(stored_text::plain_text(schema.format, &schema.text))
    }

    /// The parsed form of a stored schema, from the cache or parsed now.
    pub(super) async fn parse_stored(&self, id: SchemaId) -> Result<Arc<ParsedSchema>, Error> {
        if let Some(parsed) = self.parsed.get(id) {
            return Ok(parsed);
        }
        let (format, text, cost) = {
            let state = self.read();
            let row = state.schema(id)?;
            (
                row.format,
                Self::schema_text(&state, &row.text, &row.references)?,
                row.text.len(),
            )
        };
        let checker = self.checker;
        let parsed = blocking(move || checker.parse(format, SchemaRole::Previous(0), &text))
            .await?
            .map_err(|error| Error::InvalidSchema {
                reason: format!(
                    "stored schema {id} cannot be read: {}",
                    crate::compat::error_chain(&error)
                ),
            })?;
        let parsed = Arc::new(parsed);
        self.parsed.insert(id, Arc::clone(&parsed), cost);
        Ok(parsed)
    }

    /// Checks `candidate` against `versions` (oldest first) under `level`.
    pub(super) async fn compare(
        &self,
        level: Mode,
        candidate: Arc<ParsedSchema>,
        versions: Vec<(Version, SchemaId)>,
    ) -> Result<Report, Error> {
        // Parse only the versions the level reads: the latest one, unless transitive.
        let mut wanted = level.versions_to_check(versions.len());
        wanted.sort_unstable();
        let mut previous = Vec::with_capacity(wanted.len());
        for position in wanted {
            let (version, id) = versions[position - 1];
            previous.push((version.get() as usize, self.parse_stored(id).await?));
        }
        let checker = self.checker;
        blocking(move || {
            let numbered: Vec<(usize, &ParsedSchema)> = previous
                .iter()
                .map(|(number, parsed)| (*number, parsed.as_ref()))
                .collect();
            checker.check_numbered(level, &candidate, &numbered)
        })
        .await?
        .map_err(|error| Error::from_check(&error))
    }
}

/// A submitted schema with its canonical form, as the state judges it.
pub(super) fn candidate<'a>(schema: &'a NewSchema, canonical: &'a str) -> state::Candidate<'a> {
    state::Candidate {
        format: schema.format,
        canonical,
        references: &schema.references,
        contract: &schema.contract,
    }
}

/// The identity the registry gives a stored schema (as a registration
/// computes it), for a store that rebuilds its rows from schema texts: the
/// Kafka store, whose records carry no fingerprint. It is given the texts
/// of the schemas the references name, or `None` when one is missing.
///
/// # Caveats
/// A schema whose references cannot all be found (a hard-deleted version),
/// or one this build cannot parse, gets an identity of its exact text
/// instead (prefixed `text:`, never equal to a parsed identity): its ID
/// and versions are served as stored, but a lookup or registration of the
/// same schema in another text form does not find it.
pub fn stored_fingerprint(
    checker: crate::compat::Checker,
) -> Arc<crate::registry::embedded::kafka::replay::Fingerprint<'static>> {
    use sha2::{Digest, Sha256};
    Arc::new(move |format, text, references, referenced, contract| {
        let parsed = referenced.and_then(|referenced| {
            let schema = SchemaText {
                text: text.to_owned(),
                references: referenced.to_vec(),
            };
            checker.parse(format, SchemaRole::Candidate, &schema).ok()
        });
        if let Some(parsed) = parsed {
            let canonical = parsed.canonical();
            let candidate = state::Candidate {
                format,
                canonical: &canonical,
                references,
                contract,
            };
            return Ok(candidate.identity(contract));
        }
        let mut hasher = Sha256::new();
        hasher.update(format.as_str().as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update(serde_json::to_vec(references).unwrap_or_default());
        hasher.update(serde_json::to_vec(contract).unwrap_or_default());
        let digest: String = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(format!("text:{digest}"))
    })
}

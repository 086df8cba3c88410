//! Search across a registry: subjects by name, and schemas by the names of
//! the elements they define (fields, records, messages, enums, JSON Schema
//! properties and definitions), with each element's type and place.
//!
//! [`elements`] reads the names out of a schema's text, per format, without
//! resolving references; [`SearchIndex`] keeps them by name for the embedded
//! registry, which updates it as schemas are stored (see
//! `registry::embedded::state`). This module knows no HTTP and no storage.
//!
//! # Bounds
//! A query is at most [`MAX_QUERY_CHARS`] characters; an answer holds at
//! most [`MAX_LIMIT`] hits and says when there were more. A query's cost is
//! one pass over the distinct names (not over the schemas), then only as
//! many postings as the hits it returns, plus those of deleted versions it
//! skips. A schema contributes at most [`elements::MAX_ELEMENTS_PER_SCHEMA`]
//! elements.

pub mod elements;
mod index;

use serde::Serialize;
use utoipa::ToSchema;

pub use elements::{Element, ElementKind};
pub use index::{IndexSize, Posting, SearchIndex};

use super::{SchemaId, SubjectName, Version};

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 100;
/// How many hits an answer holds unless the query asks for another number.
pub const DEFAULT_LIMIT: usize = 50;
/// The most hits one answer may hold.
pub const MAX_LIMIT: usize = 500;

/// What a query looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Subjects whose name contains the text.
    Subject,
    /// Fields (Avro, Protobuf) and properties (JSON Schema) whose name contains the text.
    Field,
    /// Named types whose name contains the text: Avro records, enums and
    /// fixed types, Protobuf messages and enums, JSON Schema definitions.
    Type,
}

impl Target {
    /// The name used in query strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Subject => "subject",
            Target::Field => "field",
            Target::Type => "type",
        }
    }

    /// Every target, in the order forms list them.
    pub const ALL: [Target; 3] = [Target::Field, Target::Type, Target::Subject];
}

impl std::str::FromStr for Target {
    type Err = InvalidQuery;

    fn from_str(text: &str) -> Result<Self, InvalidQuery> {
        Target::ALL
            .into_iter()
            .find(|target| target.as_str() == text)
            .ok_or_else(|| InvalidQuery(format!("unknown kind `{text}`: expected subject, field or type")))
    }
}

/// Why a query was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidQuery(String);

/// A checked query: the text lowercased, what it looks for, how many hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    needle: String,
    target: Target,
    limit: usize,
}

impl Query {
    /// Checks a query. Matching ignores case; the text is trimmed.
    ///
    /// # Errors
    /// [`InvalidQuery`] when the text is empty, longer than
    /// [`MAX_QUERY_CHARS`] or holds control characters, or `limit` is not
    /// between 1 and [`MAX_LIMIT`].
    pub fn new(text: &str, target: Target, limit: Option<usize>) -> Result<Self, InvalidQuery> {
        let text = text.trim();
        if text.is_empty() {
            return Err(InvalidQuery("the search text is empty".to_owned()));
        }
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(InvalidQuery(format!(
                "the search text is longer than {MAX_QUERY_CHARS} characters"
            )));
        }
        if text.chars().any(char::is_control) {
            return Err(InvalidQuery("the search text holds control characters".to_owned()));
        }
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(InvalidQuery(format!("the limit must be between 1 and {MAX_LIMIT}")));
        }
        Ok(Self {
            needle: text.to_lowercase(),
            target,
            limit,
        })
    }

    /// A query from the texts of a request's parameters: `q` the text,
    /// `kind` the [`Target`] (`field` when absent or empty), `limit` the most
    /// hits (the default when absent or empty).
    ///
    /// # Errors
    /// [`InvalidQuery`] when `q` is missing, `kind` unknown, `limit` not a
    /// number, or [`Query::new`] refuses the rest.
    pub fn from_params(q: Option<&str>, kind: Option<&str>, limit: Option<&str>) -> Result<Self, InvalidQuery> {
        let text = q.ok_or_else(|| InvalidQuery("the parameter `q` (the text to look for) is missing".to_owned()))?;
        let target = match kind {
            None | Some("") => Target::Field,
            Some(kind) => kind.parse()?,
        };
        let limit = match limit {
            None | Some("") => None,
            Some(limit) => Some(
                limit
                    .parse::<usize>()
                    .map_err(|_| InvalidQuery(format!("the limit must be between 1 and {MAX_LIMIT}")))?,
            ),
        };
        Self::new(text, target, limit)
    }

    /// The text looked for, lowercased.
    pub fn needle(&self) -> &str {
        &self.needle
    }

    /// What is looked for.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The most hits answered.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `name` matches: it contains the text, ignoring case.
    pub fn matches(&self, name: &str) -> bool {
        contains_ignoring_case(name, &self.needle)
    }
}

/// Whether `haystack` contains `needle_lowercase`, ignoring case; without
/// allocating while `haystack` is ASCII.
fn contains_ignoring_case(haystack: &str, needle_lowercase: &str) -> bool {
    if haystack.is_ascii() {
        let needle = needle_lowercase.as_bytes();
        return needle.len() <= haystack.len()
            && haystack
                .as_bytes()
                .windows(needle.len())
                .any(|window| window.eq_ignore_ascii_case(needle));
    }
    haystack.to_lowercase().contains(needle_lowercase)
}

/// A subject whose name matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubjectHit {
    /// The subject's name.
    #[schema(value_type = String)]
    pub subject: SubjectName,
    /// Its newest live version.
    #[schema(value_type = u32)]
    pub latest_version: Version,
    /// The schema type of that version.
    #[schema(value_type = String)]
    pub schema_type: &'static str,
}

/// An element of a live version whose name matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElementHit {
    /// The subject holding the version.
    #[schema(value_type = String)]
    pub subject: SubjectName,
    /// The version.
    #[schema(value_type = u32)]
    pub version: Version,
    /// The schema's global ID.
    #[schema(value_type = u32)]
    pub id: SchemaId,
    /// The schema type.
    #[schema(value_type = String)]
    pub schema_type: &'static str,
    /// What the element is.
    pub kind: ElementKind,
    /// Its name as written.
    pub name: String,
    /// Where it is: the enclosing type's full name and the field
    /// (`com.acme.Order.customer_id`) for Avro and Protobuf, a JSON Pointer
    /// (`#/properties/customer/properties/id`) for JSON Schema.
    pub path: String,
    /// Its type as written (`string`, `["null","long"]` as `null | long`,
    /// `map<string, int64>`, a `$ref`); for a named type, what kind it is.
    #[serde(rename = "type")]
    pub type_name: String,
}

/// A search's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Found {
    /// Matching subjects, by name (a subject search).
    pub subjects: Vec<SubjectHit>,
    /// Matching elements (a field or type search): exact names first,
    /// then by name; newest schemas first within a name.
    pub elements: Vec<ElementHit>,
    /// True when there were more hits than the limit.
    pub more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_trimmed_lowercased_and_bounded() {
        let query = Query::new("  Customer_ID ", Target::Field, None).unwrap();
        assert_eq!(query.needle(), "customer_id");
        assert_eq!(query.limit(), DEFAULT_LIMIT);
        assert!(query.matches("CUSTOMER_ID_HASH"));
        assert!(!query.matches("customer"));
        assert!(Query::new("   ", Target::Field, None).is_err());
        assert!(Query::new(&"x".repeat(MAX_QUERY_CHARS + 1), Target::Field, None).is_err());
        assert!(Query::new(&"é".repeat(MAX_QUERY_CHARS), Target::Field, None).is_ok());
        assert!(Query::new("a\u{0}b", Target::Field, None).is_err());
        assert!(Query::new("a", Target::Field, Some(0)).is_err());
        assert!(Query::new("a", Target::Field, Some(MAX_LIMIT + 1)).is_err());
    }

    #[test]
    fn matching_ignores_case_beyond_ascii() {
        let query = Query::new("ÜBER", Target::Subject, None).unwrap();
        assert!(query.matches("die-über-topic"));
        assert!(!query.matches("uber"));
    }

    #[test]
    fn parameters_default_to_a_field_search_with_the_default_limit() {
        let query = Query::from_params(Some("id"), None, Some("")).unwrap();
        assert_eq!((query.target(), query.limit()), (Target::Field, DEFAULT_LIMIT));
        assert!(Query::from_params(None, None, None).is_err());
        assert!(Query::from_params(Some("id"), Some("column"), None).is_err());
        assert!(Query::from_params(Some("id"), None, Some("-1")).is_err());
        assert!(Query::from_params(Some("id"), None, Some("ten")).is_err());
    }

    #[test]
    fn kinds_parse_by_their_query_names() {
        assert_eq!("field".parse::<Target>(), Ok(Target::Field));
        assert!("Field".parse::<Target>().is_err());
    }
}

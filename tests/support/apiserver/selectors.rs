//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`) and field selectors (`=`, `==`, `!=`).

use serde_json::Value;

use super::status::ApiError;

#[derive(Debug, Clone)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|term| !term.is_empty())
        .collect()
}

fn set_values(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
            .collect(),
    )
}

impl LabelSelector {
    /// Parses `labelSelector`.
    pub fn parse(text: &str) -> Result<LabelSelector, ApiError> {
        let invalid = || ApiError::bad_request(format!("unable to parse requirement: invalid label selector {text:?}"));
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_string())
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotEquals(key.trim().into(), value.trim().into())
            } else if let Some((key, value)) = term.split_once("==") {
                Requirement::Equals(key.trim().into(), value.trim().into())
            } else if let Some((key, value)) = term.split_once('=') {
                Requirement::Equals(key.trim().into(), value.trim().into())
            } else if let Some((key, values)) = term.split_once(" notin ") {
                Requirement::NotIn(key.trim().into(), set_values(values).ok_or_else(invalid)?)
            } else if let Some((key, values)) = term.split_once(" in ") {
                Requirement::In(key.trim().into(), set_values(values).ok_or_else(invalid)?)
            } else if term
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "-_./".contains(character))
            {
                Requirement::Exists(term.to_string())
            } else {
                return Err(invalid());
            };
            requirements.push(requirement);
        }
        Ok(LabelSelector(requirements))
    }

    /// Whether an object's labels match.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let label = |key: &str| labels.get(key).and_then(Value::as_str);
        self.0.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value.as_str()),
            Requirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Requirement::In(key, values) => label(key).is_some_and(|label| values.iter().any(|value| value == label)),
            Requirement::NotIn(key, values) => label(key).is_none_or(|label| values.iter().all(|value| value != label)),
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::NotExists(key) => label(key).is_none(),
        })
    }
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses `fieldSelector`. Any dotted field path is accepted (the real server limits them per kind).
    pub fn parse(text: &str) -> Result<FieldSelector, ApiError> {
        let mut terms = Vec::new();
        for term in split_terms(text) {
            let (field, equal, value) = if let Some((field, value)) = term.split_once("!=") {
                (field, false, value)
            } else if let Some((field, value)) = term.split_once("==") {
                (field, true, value)
            } else if let Some((field, value)) = term.split_once('=') {
                (field, true, value)
            } else {
                return Err(ApiError::bad_request(format!("invalid field selector {text:?}")));
            };
            terms.push((field.trim().to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    /// Refuses fields a custom resource cannot be selected by (only `metadata.name` and
    /// `metadata.namespace`, without `selectableFields`), as the real server does.
    pub fn check_custom(&self) -> Result<(), ApiError> {
        match self
            .0
            .iter()
            .find(|(field, _, _)| field != "metadata.name" && field != "metadata.namespace")
        {
            Some((field, _, _)) => Err(ApiError::bad_request(format!("field label not supported: {field}"))),
            None => Ok(()),
        }
    }

    /// Whether an object's fields match.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, expected)| {
            let value = field.split('.').try_fold(object, |value, name| value.get(name));
            let text = match value {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (text == *expected) == *equal
        })
    }
}

/// Both selectors of a request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Selectors {
    /// Parses the selectors of a query; `custom` limits field selectors as for custom resources.
    pub fn from_query(query: &std::collections::HashMap<String, String>, custom: bool) -> Result<Selectors, ApiError> {
        let selectors = Selectors {
            labels: LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or_default())?,
            fields: FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or_default())?,
        };
        if custom {
            selectors.fields.check_custom()?;
        }
        Ok(selectors)
    }

    /// Whether an object matches both.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn label_selectors_match_like_kubernetes() {
        let object = json!({"metadata": {"labels": {"app": "orders", "tier": "web"}}});
        let matches = |text: &str| LabelSelector::parse(text).expect("a selector").matches(&object);
        assert!(matches(""));
        assert!(matches("app=orders"));
        assert!(matches("app==orders,tier!=db"));
        assert!(matches("tier in (web, db)"));
        assert!(matches("app notin (payments)"));
        assert!(matches("tier"));
        assert!(matches("!missing"));
        assert!(!matches("app=payments"));
        assert!(!matches("tier notin (web)"));
        assert!(!matches("!tier"));
        assert!(!matches("missing in (x)"));
        assert!(matches("missing notin (x)"));
        assert!(LabelSelector::parse("app in web").is_err());
    }

    #[test]
    fn field_selectors_compare_dotted_fields() {
        let object = json!({"metadata": {"name": "a", "namespace": "default"}});
        let matches = |text: &str| FieldSelector::parse(text).expect("a selector").matches(&object);
        assert!(matches("metadata.name=a"));
        assert!(matches("metadata.name==a,metadata.namespace!=other"));
        assert!(!matches("metadata.name!=a"));
        assert!(
            FieldSelector::parse("spec.x=1")
                .expect("parsed")
                .check_custom()
                .is_err()
        );
    }
}

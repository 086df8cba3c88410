//! Name patterns in policies: `*` matches any run of characters (none
//! included), `?` exactly one, `{namespace}` the namespace of the object
//! judged, and `{namespace_}` that namespace with every `-` as `_` (Avro
//! namespaces and Protobuf packages cannot hold `-`, Kubernetes namespaces
//! often do: `com.acme.{namespace_}.*` takes `com.acme.team_a.orders` from
//! namespace `team-a`); everything else matches itself. `payments-*`,
//! `{namespace}.*`.
//!
//! Written here rather than taken from a glob crate: the namespace is only
//! known when an object is judged, and path globs (globset) treat `/` and
//! `.` specially. Matching is the usual greedy wildcard walk with one
//! backtrack point: at most pattern × text steps, with no allocation.

use std::fmt;

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 512;

/// The placeholder for the object's namespace.
pub const NAMESPACE_PLACEHOLDER: &str = "{namespace}";

/// The placeholder for the object's namespace with every `-` as `_`.
pub const UNDERSCORED_NAMESPACE_PLACEHOLDER: &str = "{namespace_}";

/// How a placeholder writes the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// As it is: `team-a`.
    Verbatim,
    /// With every `-` as `_`: `team_a`.
    Underscored,
}

/// `namespace` with every `-` as `_`.
fn underscored(namespace: &str) -> String {
    namespace.replace('-', "_")
}

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A character that matches itself.
    Char(char),
    /// `?`: any one character.
    One,
    /// `*`: any run of characters.
    Any,
    /// `{namespace}` or `{namespace_}`: the object's namespace in that
    /// form, or any run when it is not known.
    Namespace(Form),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
    tokens: Vec<Token>,
    /// Whether a `{namespace}` is among the tokens.
    verbatim: bool,
    /// Whether a `{namespace_}` is among the tokens (its form is built only then).
    underscored: bool,
}

/// Why a pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The pattern is empty.
    #[error("the pattern is empty")]
    Empty,
    /// The pattern is too long.
    #[error("the pattern is {0} bytes long; the limit is {MAX_PATTERN_BYTES}")]
    TooLong(usize),
    /// A `{` that opens neither placeholder.
    #[error("`{{` at byte {0} starts neither `{{namespace}}` nor `{{namespace_}}`, the only placeholders")]
    UnknownPlaceholder(usize),
}

impl Pattern {
    /// Compiles `source`.
    ///
    /// # Errors
    /// [`PatternError`] when it is empty, too long or has an unknown placeholder.
    pub fn new(source: &str) -> Result<Self, PatternError> {
        if source.is_empty() {
            return Err(PatternError::Empty);
        }
        if source.len() > MAX_PATTERN_BYTES {
            return Err(PatternError::TooLong(source.len()));
        }
        let mut tokens = Vec::with_capacity(source.len());
        let mut rest = source;
        while let Some(c) = rest.chars().next() {
            let at = source.len() - rest.len();
            match c {
                '{' if rest.starts_with(NAMESPACE_PLACEHOLDER) => {
                    tokens.push(Token::Namespace(Form::Verbatim));
                    rest = &rest[NAMESPACE_PLACEHOLDER.len()..];
                    continue;
                }
                '{' if rest.starts_with(UNDERSCORED_NAMESPACE_PLACEHOLDER) => {
                    tokens.push(Token::Namespace(Form::Underscored));
                    rest = &rest[UNDERSCORED_NAMESPACE_PLACEHOLDER.len()..];
                    continue;
                }
                '{' => return Err(PatternError::UnknownPlaceholder(at)),
                '*' => {
                    if tokens.last() != Some(&Token::Any) {
                        tokens.push(Token::Any);
                    }
                }
                '?' => tokens.push(Token::One),
                c => tokens.push(Token::Char(c)),
            }
            rest = &rest[c.len_utf8()..];
        }
        let verbatim = tokens.contains(&Token::Namespace(Form::Verbatim));
        let underscored = tokens.contains(&Token::Namespace(Form::Underscored));
        Ok(Self {
            source: source.to_owned(),
            tokens,
            verbatim,
            underscored,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `text` holds `namespace` in every form the pattern names it
    /// in: a cheap test that rules a namespace out before [`matches`](Self::matches).
    pub fn could_name(&self, text: &str, namespace: &str) -> bool {
        (!self.verbatim || text.contains(namespace)) && (!self.underscored || text.contains(&underscored(namespace)))
    }

    /// The pattern with its placeholders replaced by `namespace`, for messages.
    pub fn for_namespace(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(namespace) => self
                .source
                .replace(UNDERSCORED_NAMESPACE_PLACEHOLDER, &underscored(namespace))
                .replace(NAMESPACE_PLACEHOLDER, namespace),
            None => self.source.clone(),
        }
    }

    /// Whether `text` matches, the placeholders standing for `namespace` (or,
    /// when it is `None`, for any run of characters, like `*`).
    pub fn matches(&self, text: &str, namespace: Option<&str>) -> bool {
        let underscored = namespace.filter(|_| self.underscored).map(underscored);
        wildcard_match(&self.tokens, text, namespace, underscored.as_deref())
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// The greedy wildcard walk over byte offsets of `text`, with no
/// allocation: on a mismatch, go back to the last `*` (or unknown namespace)
/// and let it swallow one more character. A known namespace matches as the
/// literal text it is (`underscored` is its `{namespace_}` form).
fn wildcard_match(pattern: &[Token], text: &str, namespace: Option<&str>, underscored: Option<&str>) -> bool {
    let next_len = |at: usize| text[at..].chars().next().map_or(0, char::len_utf8);
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        let wildcard = match pattern.get(p) {
            Some(Token::Any) => true,
            Some(Token::Namespace(_)) => namespace.is_none(),
            _ => false,
        };
        if wildcard {
            star = Some((p, t));
            p += 1;
            continue;
        }
        let step = match pattern.get(p) {
            _ if t == text.len() => None,
            Some(Token::One) => Some(next_len(t)),
            Some(Token::Char(c)) if text[t..].starts_with(*c) => Some(c.len_utf8()),
            Some(Token::Namespace(form)) => match form {
                Form::Verbatim => namespace,
                Form::Underscored => underscored,
            }
            .filter(|namespace| text[t..].starts_with(namespace))
            .map(str::len),
            _ => None,
        };
        match step {
            Some(length) => {
                p += 1;
                t += length;
            }
            None if t == text.len() && p == pattern.len() => return true,
            None => match star {
                Some((star_p, star_t)) if star_t < text.len() => {
                    let resumed = star_t + next_len(star_t);
                    star = Some((star_p, resumed));
                    p = star_p + 1;
                    t = resumed;
                }
                _ => return false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str, namespace: Option<&str>) -> bool {
        Pattern::new(pattern).unwrap().matches(text, namespace)
    }

    #[test]
    fn stars_and_question_marks_match_as_in_a_shell() {
        assert!(matches("payments-*", "payments-orders-value", None));
        assert!(matches("payments-*", "payments-", None));
        assert!(!matches("payments-*", "payment-orders", None));
        assert!(matches("*-value", "orders-value", None));
        assert!(!matches("*-value", "orders-key", None));
        assert!(matches("a?c", "abc", None));
        assert!(!matches("a?c", "ac", None));
        assert!(matches("*", "", None));
        assert!(matches("a*b*c", "a-b-b-c", None));
        assert!(!matches("a*b*c", "a-b-b-d", None));
        assert!(matches("exact", "exact", None));
        assert!(!matches("exact", "exactly", None));
    }

    #[test]
    fn the_namespace_placeholder_is_the_object_namespace() {
        assert!(matches("{namespace}.*", "team-a.orders-value", Some("team-a")));
        assert!(!matches("{namespace}.*", "team-a.orders-value", Some("team-b")));
        assert!(!matches("{namespace}.*", "team-ab.orders", Some("team-a")));
        assert!(matches("{namespace}.*", "anything.at-all", None), "unknown: any run");
        assert_eq!(
            Pattern::new("{namespace}.*").unwrap().for_namespace(Some("team-a")),
            "team-a.*"
        );
    }

    #[test]
    fn the_namespace_may_sit_anywhere_and_characters_are_not_bytes() {
        assert!(matches("*.{namespace}.*", "prod.team-a.orders", Some("team-a")));
        assert!(!matches("*.{namespace}.*", "prod.team-b.orders", Some("team-a")));
        assert!(matches("{namespace}-{namespace}", "a-a", Some("a")));
        assert!(!matches("{namespace}-{namespace}", "a-b", Some("a")));
        assert!(matches("?rders", "örders", None));
        assert!(matches("*é", "café", None));
        assert!(!matches("caf?", "café!", None));
    }

    /// Issue 39 item 13: `{namespace}` is inserted verbatim, so `com.acme.{namespace}*` never
    /// matched an Avro namespace from a hyphenated Kubernetes namespace.
    #[test]
    fn the_underscored_placeholder_is_the_namespace_with_underscores_for_hyphens() {
        assert!(matches(
            "com.acme.{namespace_}*",
            "com.acme.team_a.orders",
            Some("team-a")
        ));
        assert!(!matches(
            "com.acme.{namespace_}*",
            "com.acme.team-a.orders",
            Some("team-a")
        ));
        assert!(!matches("com.acme.{namespace_}*", "com.acme.team_b", Some("team-a")));
        assert!(matches("{namespace}.{namespace_}", "team-a.team_a", Some("team-a")));
        assert!(matches("com.acme.{namespace_}*", "com.acme.anything", None));
        let pattern = Pattern::new("{namespace}.{namespace_}.*").unwrap();
        assert_eq!(pattern.for_namespace(Some("team-a")), "team-a.team_a.*");
        assert!(pattern.could_name("team-a.team_a.x", "team-a"));
        assert!(!pattern.could_name("team-a.team-a.x", "team-a"));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        assert_eq!(Pattern::new(""), Err(PatternError::Empty));
        assert_eq!(Pattern::new("{ns}.*"), Err(PatternError::UnknownPlaceholder(0)));
        assert_eq!(
            Pattern::new(&"a".repeat(MAX_PATTERN_BYTES + 1)),
            Err(PatternError::TooLong(MAX_PATTERN_BYTES + 1))
        );
    }

    #[test]
    fn many_stars_against_a_long_text_take_bounded_steps() {
        let pattern = "*a".repeat(200) + "b";
        let text = "a".repeat(10_000);
        assert!(!matches(&pattern, &text, None));
    }
}

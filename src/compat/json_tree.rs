//! A JSON document tree that borrows its strings from the text it was read
//! from. Schema parsers walk it once and keep little of it, so it is several
//! times cheaper to build than `serde_json::Value`; the parts a parser keeps
//! (defaults, custom attributes) become `Value`s with [`Json::into_value`].
//!
//! A document may nest [`MAX_NESTING`] arrays and objects deep, far beyond
//! serde_json's own limit of 128, which is switched off: reading counts the
//! depth itself, and each level of reading (and of every walk over a tree)
//! goes through [`deep`], so no depth up to the limit can overflow the stack.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::{Number, Value};

use super::stack::deep;

/// The deepest nesting of arrays and objects a document may have: the
/// default of Jackson (`StreamReadConstraints`, since 2.15), which Java Avro
/// and so Confluent's registry read schemas with. Anything they read, we
/// read. Each nested record costs three levels (the record, its `fields`,
/// the field), so this allows about 330 nested records.
pub const MAX_NESTING: usize = 1_000;

/// How the depth error reads; also how it is told apart from others.
const TOO_DEEP: &str = "the document nests more than";

/// A JSON value whose strings borrow from the source text where they can.
#[derive(Debug, Clone, PartialEq, Hash)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    Number(JsonNumber<'a>),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Members in document order; see [`Json::take`] for repeated keys.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// A number: its value as serde_json reads it (an `f64` for any with a
/// fraction or exponent), and the text it was written as, for the rare
/// reader that needs every digit (`multipleOf`). Two numbers are equal when
/// their values are, however written.
#[derive(Debug, Clone)]
pub(crate) struct JsonNumber<'a> {
    pub(crate) value: Number,
    /// As written in the document; empty for a number not read from text.
    pub(crate) literal: &'a str,
}

impl From<Number> for JsonNumber<'_> {
    fn from(value: Number) -> Self {
        Self { value, literal: "" }
    }
}

impl std::ops::Deref for JsonNumber<'_> {
    type Target = Number;

    fn deref(&self) -> &Number {
        &self.value
    }
}

impl PartialEq for JsonNumber<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl std::hash::Hash for JsonNumber<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.value.hash(state);
    }
}

/// The number literals of a JSON text, handed out in document order as the
/// parser meets the numbers (it reads the text front to back, and this
/// scans only what it has read, so strings are told from the rest).
struct NumberLiterals<'a> {
    text: &'a str,
    position: std::cell::Cell<usize>,
}

impl<'a> NumberLiterals<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            position: std::cell::Cell::new(0),
        }
    }

    /// The next number literal after the last one handed out ("" if none).
    fn next(&self) -> &'a str {
        let bytes = self.text.as_bytes();
        let mut at = self.position.get();
        while at < bytes.len() {
            match bytes[at] {
                b'"' => {
                    at += 1;
                    while at < bytes.len() && bytes[at] != b'"' {
                        at += if bytes[at] == b'\\' { 2 } else { 1 };
                    }
                    at += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let start = at;
                    while at < bytes.len() && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                        at += 1;
                    }
                    self.position.set(at);
                    return self.text.get(start..at).unwrap_or("");
                }
                _ => at += 1,
            }
        }
        self.position.set(at);
        ""
    }
}

/// Where a JSON text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) problem: String,
}

impl<'a> Json<'a> {
    /// Reads a whole JSON text.
    #[cfg(test)]
    pub(crate) fn parse(text: &'a str) -> Result<Self, SyntaxError> {
        super::stack::walk(nesting(text), || Self::parse_in_walk(text))
    }

    /// Reads a whole JSON text inside a `walk` that already has the stack
    /// for [`nesting`]`(text)` levels (the caller scanned the text once for
    /// its own walk; a second scan would cost as much as a tenth of the parse).
    pub(crate) fn parse_in_walk(text: &'a str) -> Result<Self, SyntaxError> {
        Self::parse_nested_at_most(text, MAX_NESTING)
    }

    /// Reads a whole JSON text that may nest at most `limit` arrays and
    /// objects deep (a format stricter than [`MAX_NESTING`]), inside a walk
    /// with the stack for that many levels, like [`Json::parse_in_walk`].
    pub(crate) fn parse_nested_at_most(text: &'a str, limit: usize) -> Result<Self, SyntaxError> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        deserializer.disable_recursion_limit();
        let literals = NumberLiterals::new(text);
        let parsed = Nested {
            depth: 0,
            limit,
            literals: &literals,
        }
        .deserialize(&mut deserializer)
        .and_then(|json| deserializer.end().map(|()| json));
        parsed.map_err(|error| {
            let message = error.to_string();
            // serde_json appends " at line L column C"; the position is kept separately.
            let problem_text = message.split(" at line ").next().unwrap_or(&message);
            let problem = if message.starts_with(TOO_DEEP) {
                problem_text.to_owned()
            } else if error.is_eof() {
                "the text ends before the JSON document does".to_owned()
            } else {
                format!("not valid JSON: {problem_text}")
            };
            SyntaxError {
                line: error.line(),
                column: error.column(),
                problem,
            }
        })
    }

    /// The owned `serde_json::Value` of this tree.
    pub(crate) fn into_value(self) -> Value {
        deep(|| self.into_value_here())
    }

    fn into_value_here(self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(flag) => Value::Bool(flag),
            Json::Number(number) => Value::Number(number.value),
            Json::String(text) => Value::String(text.into_owned()),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .into_iter()
                    .map(|(key, value)| (key.into_owned(), value.into_value()))
                    .collect(),
            ),
        }
    }

    /// How the value reads in a message: its kind and, when short, itself.
    pub(crate) fn describe(&self) -> String {
        let (kind, shown) = match self {
            Json::Null => return "null".to_owned(),
            Json::Bool(flag) => ("a boolean", flag.to_string()),
            Json::Number(number) => ("a number", number.to_string()),
            Json::String(text) => ("a string", Value::from(text.as_ref()).to_string()),
            Json::Array(_) => return "an array".to_owned(),
            Json::Object(_) => return "an object".to_owned(),
        };
        if shown.len() <= 40 {
            format!("{kind} {shown}")
        } else {
            kind.to_owned()
        }
    }
}

impl Json<'_> {
    /// The text of a string, or `None` for any other value.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(text) => Some(text),
            _ => None,
        }
    }

    /// The value of a number that is a non-negative integer in range.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(number) => number.as_u64(),
            _ => None,
        }
    }

    /// The value of a number that is an integer in range.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(number) => number.as_i64(),
            _ => None,
        }
    }

    /// The value of any number, as a float.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(number) => number.as_f64(),
            _ => None,
        }
    }
}

/// Written as serde_json writes the same [`Value`], object members in the
/// tree's order.
impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(flag) => serializer.serialize_bool(*flag),
            Json::Number(number) => number.value.serialize(serializer),
            Json::String(text) => serializer.serialize_str(text),
            Json::Array(items) => serializer.collect_seq(items),
            Json::Object(members) => serializer.collect_map(members.iter().map(|(key, value)| (key, value))),
        }
    }
}

/// How deep the arrays and objects of a JSON text nest, up to one more than
/// [`MAX_NESTING`], read without parsing: what a walk over its tree (or a
/// parse that stops at the limit) recurses through, so it can reserve its
/// stack up front. Brackets inside strings do not count; the text need not
/// be valid JSON.
pub(crate) fn nesting(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at = string_end(bytes, at + 1);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > MAX_NESTING {
                    break;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    deepest
}

/// Where the string whose content starts at `at` ends: just past its closing
/// quote, or at the end of the text when it has none. Searches for the quote
/// and for escapes with `memchr`, several bytes at a time.
fn string_end(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match memchr::memchr2(b'"', b'\\', bytes.get(at..).unwrap_or_default()) {
            None => return bytes.len(),
            Some(found) if bytes[at + found] == b'"' => return at + found + 1,
            // The backslash and the character it escapes.
            Some(found) => at += found + 2,
        }
    }
}

/// The members of a JSON object, in document order.
pub(crate) type Members<'a> = Vec<(Cow<'a, str>, Json<'a>)>;

/// An object's members sorted, in one pass, into the keys a reader knows
/// (`KEYS`) and the rest. JSON parsers differ on repeated keys; like
/// serde_json and Jackson, the last one wins.
pub(crate) struct Attributes<'a, const N: usize> {
    keys: &'static [&'static str; N],
    known: [Option<Json<'a>>; N],
    rest: Members<'a>,
}

impl<'a, const N: usize> Attributes<'a, N> {
    /// Sorts `members` by `keys`.
    pub(crate) fn sort(members: Members<'a>, keys: &'static [&'static str; N]) -> Self {
        let mut known: [Option<Json<'a>>; N] = std::array::from_fn(|_| None);
        let mut rest = Vec::new();
        for (key, value) in members {
            match slot(keys, &key) {
                Some(slot) => known[slot] = Some(value),
                None => {
                    rest.retain(|(other, _): &(Cow<'a, str>, Json<'a>)| *other != key);
                    rest.push((key, value));
                }
            }
        }
        Self { keys, known, rest }
    }

    /// Takes the value of a known key, if the object has it.
    pub(crate) fn take(&mut self, key: &str) -> Option<Json<'a>> {
        let slot = slot(self.keys, key);
        debug_assert!(
            slot.is_some(),
            "`{key}` is not one of the keys this object was sorted by"
        );
        slot.and_then(|slot| self.known[slot].take())
    }

    /// Every member not taken: the known keys left over, then the rest.
    pub(crate) fn into_rest(self) -> impl Iterator<Item = (Cow<'a, str>, Json<'a>)> {
        let keys = self.keys;
        self.known
            .into_iter()
            .zip(keys.iter())
            .filter_map(|(value, key)| value.map(|value| (Cow::Borrowed(*key), value)))
            .chain(self.rest)
    }
}

/// The position of `key` among `keys`. Lengths and first bytes are compared
/// before whole keys, which spares most calls to `memcmp`.
fn slot(keys: &[&str], key: &str) -> Option<usize> {
    let first = key.as_bytes().first();
    keys.iter()
        .position(|known| known.len() == key.len() && known.as_bytes().first() == first && *known == key)
}

/// Reads one value with `depth` arrays and objects around it, of at most `limit`.
#[derive(Clone, Copy)]
struct Nested<'s, 'a> {
    depth: usize,
    limit: usize,
    literals: &'s NumberLiterals<'a>,
}

impl<'s, 'a> Nested<'s, 'a> {
    /// The seed for the values inside an array or object at this depth, or
    /// the error when that container is one level too many.
    fn inner<E: de::Error>(self) -> Result<Nested<'s, 'a>, E> {
        let depth = self.depth + 1;
        if depth > self.limit {
            return Err(E::custom(format_args!("{TOO_DEEP} {} levels deep", self.limit)));
        }
        Ok(Nested { depth, ..self })
    }
}

impl<'de> DeserializeSeed<'de> for Nested<'_, 'de> {
    type Value = Json<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Nested<'_, 'de> {
    type Value = Json<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(flag))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Self::Value, E> {
        Ok(self.number(number.into()))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Self::Value, E> {
        Ok(self.number(number.into()))
    }

    fn visit_f64<E: de::Error>(self, number: f64) -> Result<Self::Value, E> {
        Number::from_f64(number)
            .map(|value| self.number(value))
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Owned(text)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Self::Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::with_capacity(sequence.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = deep(|| sequence.next_element_seed(inner))? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let inner = self.inner()?;
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1024));
        while let Some(Key(key)) = map.next_key()? {
            members.push((key, deep(|| map.next_value_seed(inner))?));
        }
        Ok(Json::Object(members))
    }
}

impl<'a> Nested<'_, 'a> {
    /// The number just read, with the literal it was written as.
    fn number(self, value: Number) -> Json<'a> {
        Json::Number(JsonNumber {
            value,
            literal: self.literals.next(),
        })
    }
}

/// An object key that borrows from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let Json::Object(members) = Json::parse(r#"{"plain":"text","esc\"aped":"a\nb"}"#).unwrap() else {
            panic!("an object");
        };
        assert!(matches!(members[0].0, Cow::Borrowed("plain")));
        assert!(matches!(members[0].1, Json::String(Cow::Borrowed("text"))));
        assert_eq!(members[1].0, "esc\"aped");
        assert_eq!(members[1].1, Json::String(Cow::Owned("a\nb".to_owned())));
    }

    #[test]
    fn the_tree_converts_to_the_same_value_serde_json_reads() {
        let text = r#"{"a":[1,-2,3.5,true,null,"x"],"b":{"c":{}},"big":18446744073709551615}"#;
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(Json::parse(text).unwrap().into_value(), expected);
    }

    #[test]
    fn attributes_keep_the_last_of_repeated_keys_and_return_the_rest() {
        static KEYS: [&str; 2] = ["type", "name"];
        let Json::Object(members) = Json::parse(r#"{"type":"int","x":1,"type":"long","x":2,"name":"n"}"#).unwrap()
        else {
            panic!("an object");
        };
        let mut attributes = Attributes::sort(members, &KEYS);
        assert_eq!(attributes.take("type"), Some(Json::String(Cow::Borrowed("long"))));
        assert_eq!(attributes.take("type"), None);
        let rest: Vec<(Cow<'_, str>, Json<'_>)> = attributes.into_rest().collect();
        assert_eq!(rest.len(), 2, "{rest:?}");
        assert_eq!(rest[0].0, "name");
        assert_eq!(rest[1], (Cow::Borrowed("x"), Json::Number(Number::from(2).into())));
    }

    #[test]
    fn syntax_errors_carry_their_position() {
        let error = Json::parse("{\n  \"a\": tru }").unwrap_err();
        assert_eq!((error.line, error.column), (2, 11));
        assert!(error.problem.starts_with("not valid JSON"), "{}", error.problem);
    }

    #[test]
    fn nesting_counts_brackets_outside_strings_up_to_one_past_the_limit() {
        assert_eq!(nesting("1"), 0);
        assert_eq!(nesting(r#"{"a":[[1],{"b":"[[[\"[{"}],"c":[]}"#), 3);
        assert_eq!(nesting(&"[".repeat(5000)), MAX_NESTING + 1);
        assert_eq!(nesting("]]]["), 1, "unbalanced text does not underflow");
        assert_eq!(
            nesting(r#"[{"a\\":"[\\\"{"}]"#),
            2,
            "escaped quotes and backslashes stay in the string"
        );
        assert_eq!(nesting(r#"[{"open [[["#), 2, "an unterminated string runs to the end");
        assert_eq!(nesting("[\"\\"), 1, "a backslash at the very end");
    }

    #[test]
    fn documents_nest_up_to_the_limit_and_no_further() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(Json::parse(&nested(MAX_NESTING)).is_ok());
        let error = Json::parse(&nested(MAX_NESTING + 1)).unwrap_err();
        assert_eq!(error.problem, "the document nests more than 1000 levels deep");
        // serde_json places it just past the bracket one level too many.
        assert_eq!((error.line, error.column), (1, MAX_NESTING + 2));
        let objects = format!("{}1{}", r#"{"a":"#.repeat(MAX_NESTING + 1), "}".repeat(MAX_NESTING + 1));
        assert!(Json::parse(&objects).unwrap_err().problem.contains("nests more than"));
    }
}

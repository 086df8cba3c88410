//! A JSON Schema document as the parser walks it: the borrowed [`Json`]
//! tree, with the members of every object sorted by key and repeated keys
//! dropped (the last one wins, as with serde_json and Jackson). Keyword
//! lookups are then binary searches, walks meet members in the order
//! serde_json's maps kept them, and written out the tree is canonical JSON.
//!
//! It costs a fraction of a `serde_json::Value`: strings borrow from the
//! text and an object is one vector, not a B-tree of owned keys.

use std::borrow::Cow;

use crate::compat::json_tree::{Json, nesting};
use crate::compat::stack;

use super::MAX_NESTING;
use super::parse::ParseError;

/// A document read by [`read`].
#[derive(Debug)]
pub(super) struct Document<'a> {
    /// The tree, its objects sorted.
    pub(super) root: Json<'a>,
    /// How many objects the tree has: about as many schemas as the parse
    /// will read, so it can size its tables once.
    pub(super) objects: usize,
}

/// Reads a JSON text of at most [`MAX_NESTING`] levels into a sorted tree.
pub(super) fn read(text: &str) -> Result<Document<'_>, ParseError> {
    let mut root = stack::walk(nesting(text).min(MAX_NESTING + 1), || {
        Json::parse_nested_at_most(text, MAX_NESTING)
    })
    .map_err(|error| ParseError {
        problem: error.problem,
        position: format!("line {} column {}", error.line, error.column),
    })?;
    let objects = sort_objects(&mut root);
    Ok(Document { root, objects })
}

/// Sorts the members of every object in the tree by key, keeping only the
/// last of repeated keys, and counts the objects. Recurses as deep as the
/// tree nests, which [`read`] limits to [`MAX_NESTING`].
fn sort_objects(json: &mut Json<'_>) -> usize {
    match json {
        Json::Array(items) => items.iter_mut().map(sort_objects).sum(),
        Json::Object(members) => {
            if !members.windows(2).all(|pair| pair[0].0 < pair[1].0) {
                // Stable, so repeated keys stay in document order.
                members.sort_by(|left, right| left.0.cmp(&right.0));
                members.dedup_by(|later, kept| {
                    let repeated = later.0 == kept.0;
                    if repeated {
                        std::mem::swap(&mut later.1, &mut kept.1);
                    }
                    repeated
                });
            }
            1 + members.iter_mut().map(|(_, value)| sort_objects(value)).sum::<usize>()
        }
        Json::Null | Json::Bool(_) | Json::Number(_) | Json::String(_) => 0,
    }
}

/// The most members an object may have to be scanned by [`Object::get`].
const SCANNED: usize = 16;

/// The members of one object of a sorted tree.
#[derive(Clone, Copy)]
pub(super) struct Object<'a> {
    members: &'a [(Cow<'a, str>, Json<'a>)],
}

impl<'a> Object<'a> {
    /// The object with these members, sorted by [`read`].
    pub(super) fn new(members: &'a [(Cow<'a, str>, Json<'a>)]) -> Self {
        Self { members }
    }

    /// The object `json` is, if it is one.
    pub(super) fn of(json: &'a Json<'a>) -> Option<Self> {
        match json {
            Json::Object(members) => Some(Self { members }),
            _ => None,
        }
    }

    /// The value of `key`. Most lookups are of keywords an object does not
    /// have, in an object of a few members: those are scanned, comparing
    /// lengths and first bytes before whole keys, which spares most calls
    /// to `memcmp`; larger objects are searched by halves.
    pub(super) fn get(self, key: &str) -> Option<&'a Json<'a>> {
        if self.members.len() <= SCANNED {
            let first = key.as_bytes().first();
            return self
                .members
                .iter()
                .find(|(name, _)| name.len() == key.len() && name.as_bytes().first() == first && name == key)
                .map(|(_, value)| value);
        }
        let at = self.members.binary_search_by(|(name, _)| name.as_ref().cmp(key)).ok()?;
        Some(&self.members[at].1)
    }

    /// Whether the object has `key`.
    pub(super) fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The members, by key.
    pub(super) fn iter(self) -> impl Iterator<Item = (&'a str, &'a Json<'a>)> {
        self.members.iter().map(|(name, value)| (name.as_ref(), value))
    }
}

/// The value of `key` when `json` is an object that has it.
pub(super) fn member<'a>(json: &'a Json<'a>, key: &str) -> Option<&'a Json<'a>> {
    Object::of(json)?.get(key)
}

/// The value at an (escaped) JSON Pointer, read as serde_json reads one: an
/// array index is decimal digits without a sign or a leading zero.
pub(super) fn lookup<'a>(document: &'a Json<'a>, pointer: &str) -> Option<&'a Json<'a>> {
    if pointer.is_empty() {
        return Some(document);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(document, |target, token| {
        let token = token.replace("~1", "/").replace("~0", "~");
        match target {
            Json::Object(_) => member(target, &token),
            Json::Array(items) => {
                let index = if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                    None
                } else {
                    token.parse::<usize>().ok()
                };
                index.and_then(|index| items.get(index))
            }
            _ => None,
        }
    })
}

/// The value as canonical JSON text: keys sorted, no whitespace.
pub(super) fn canonical(json: &Json<'_>) -> String {
    serde_json::to_string(json).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    #[test]
    fn objects_are_sorted_and_the_last_of_repeated_keys_wins() {
        let text = r#"{"b":1,"a":{"z":true,"y":[{"k":1,"k":2}]},"b":3,"a2":null}"#;
        let document = read(text).unwrap();
        assert_eq!(document.objects, 3, "the values of repeated keys are not counted");
        let document = document.root;
        assert_eq!(
            canonical(&document),
            r#"{"a":{"y":[{"k":2}],"z":true},"a2":null,"b":3}"#
        );
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(canonical(&document), expected.to_string(), "as serde_json writes it");
        let object = Object::of(&document).unwrap();
        assert_eq!(object.get("b"), Some(&Json::Number(serde_json::Number::from(3).into())));
        assert!(object.contains_key("a2") && !object.contains_key("c"));
        assert_eq!(object.iter().map(|(key, _)| key).collect::<Vec<_>>(), ["a", "a2", "b"]);
    }

    /// JSON texts with repeated keys, keys that sort differently once
    /// unescaped, and numbers of every kind serde_json reads.
    fn json_text() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just(r#""a""#),
            Just(r#""b""#),
            Just(r#""\u0061b""#),
            Just(r#""ab""#),
            Just(r#""é""#),
            Just(r#""\"q""#),
            Just(r#""""#),
        ];
        let leaf = prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|flag| flag.to_string()),
            any::<i64>().prop_map(|number| number.to_string()),
            any::<u64>().prop_map(|number| number.to_string()),
            (-1e6f64..1e6).prop_map(|number| format!("{number:e}")),
            Just(r#""line\nbreak \u00e9 \/""#.to_owned()),
            "[a-z ]{0,6}".prop_map(|text| format!("\"{text}\"")),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(key, value)| format!("{key}: {value}"))
                        .collect();
                    format!("{{ {} }}", members.join(", "))
                }),
            ]
        })
    }

    proptest! {
        /// The canonical text is a schema's identity in the registry: it must
        /// stay what serde_json wrote for the same document.
        #[test]
        fn the_canonical_text_is_what_serde_json_writes(text in json_text()) {
            let expected: Value = serde_json::from_str(&text).unwrap();
            let document = read(&text).unwrap();
            prop_assert_eq!(canonical(&document.root), expected.to_string());
        }
    }

    #[test]
    fn pointers_resolve_as_serde_json_resolves_them() {
        let text = r#"{"defs":{"a/b":{"x~y":[10,20]},"":{"0":1}},"list":[0,1,2]}"#;
        let document = read(text).unwrap().root;
        let value: Value = serde_json::from_str(text).unwrap();
        for pointer in [
            "",
            "/defs",
            "/defs/a~1b/x~0y/1",
            "/defs//0",
            "/list/2",
            "/list/02",
            "/list/+1",
            "/list/9",
            "defs",
            "/list/1/x",
            "/missing",
        ] {
            let ours = lookup(&document, pointer).map(canonical);
            assert_eq!(ours, value.pointer(pointer).map(Value::to_string), "{pointer:?}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused_with_its_place() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(read(&nested(MAX_NESTING)).is_ok());
        let error = read(&nested(100_000)).unwrap_err();
        assert_eq!(error.problem, "the document nests more than 128 levels deep");
        assert_eq!(error.position, "line 1 column 129");
        let error = read("{\"a\": tru}").unwrap_err();
        assert!(error.problem.starts_with("not valid JSON"), "{}", error.problem);
    }
}

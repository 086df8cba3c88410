//! Reading a JSON Schema document into the node arena: the draft from
//! `$schema`, keyword checks with the JSON Pointer of every problem, and
//! `$ref`s (`#/definitions/…`, `#/$defs/…`, `$id` and anchors, and referenced
//! schemas), resolved in [`resolve`].
//!
//! Nothing here recurses deeper than the document nests (at most
//! [`super::MAX_NESTING`] levels: see [`super::document::read`]), and `$ref` targets are read from a work list, so a
//! long chain of references cannot overflow the stack either.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use regex::Regex;

use crate::compat::json_tree::Json;

use super::decimal::Factor;
use super::document::{Document, Object, canonical, member};
mod resolve;

use super::model::{ArrayNode, Criterion, Draft, Meta, Node, NodeId, NumberNode, ObjectNode, Properties, StringNode};
use resolve::collect_ids;

/// Why a text is not a JSON Schema the checker can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} (at {position})")]
pub struct ParseError {
    /// What is wrong, in words.
    pub problem: String,
    /// Where: a JSON Pointer such as `/properties/age/type`, or a line and
    /// column when the text is not JSON at all.
    pub position: String,
}

impl ParseError {
    fn at(pointer: &str, problem: impl Into<String>) -> Self {
        Self {
            problem: problem.into(),
            position: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.to_owned()
            },
        }
    }
}

/// The keywords that make an untyped schema an object schema.
const OBJECT_KEYWORDS: [&str; 10] = [
    "properties",
    "additionalProperties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
];
const ARRAY_KEYWORDS: [&str; 7] = [
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "prefixItems",
];
const NUMBER_KEYWORDS: [&str; 5] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
const STRING_KEYWORDS: [&str; 4] = ["minLength", "maxLength", "pattern", "format"];
const TYPE_NAMES: [&str; 7] = ["string", "integer", "number", "boolean", "null", "object", "array"];

/// The result of reading one document.
pub(crate) struct Parsed {
    pub(crate) draft: Draft,
    pub(crate) nodes: Vec<Node>,
    pub(crate) metas: Vec<Meta>,
    pub(crate) digests: Vec<Option<Digest>>,
    pub(crate) root: NodeId,
}

/// A schema that the document refers to by name (Confluent's schema
/// references): read only when a `$ref` needs it.
pub(super) struct Referenced<'a> {
    /// The reference's name, as the referring schema's `$ref` spells it.
    pub(super) name: &'a str,
    /// The referenced schema's text.
    pub(super) text: &'a str,
    /// Where the document is kept once read, so the nodes can borrow from it.
    pub(super) document: &'a OnceCell<Document<'a>>,
}

/// Reads a schema document that is already valid JSON, its objects sorted
/// by [`super::document::read`]; `$ref`s that leave it are looked up among
/// `referenced`.
///
/// `objects`, the number of objects in the document, sizes the node tables.
pub(super) fn parse<'a>(
    document: &'a Json<'a>,
    objects: usize,
    referenced: &'a [Referenced<'a>],
) -> Result<Parsed, ParseError> {
    let draft = draft_of(document, "")?;
    let mut sources = vec![Source::Loaded(Loaded {
        name: "",
        root: document,
        draft,
        ids: collect_ids(document, draft),
    })];
    sources.extend(referenced.iter().map(Source::Unread));
    let base = member(document, if draft == Draft::Draft4 { "id" } else { "$id" })
        .and_then(Json::as_str)
        .map(str::to_owned);
    let mut loader = Loader {
        draft,
        current: 0,
        sources,
        base,
        nodes: Vec::with_capacity(objects),
        metas: Vec::with_capacity(objects),
        digests: Vec::with_capacity(objects),
        opaque: 0,
        by_place: HashMap::new(),
        pending: Vec::new(),
    };
    let root = loader.load(document, "", "")?;
    loader.by_place.insert((0, String::new()), root);
    // Definitions are read even when nothing refers to them, so a broken one
    // is refused like any other part of the document.
    for keyword in ["definitions", "$defs"] {
        match member(document, keyword) {
            None => {}
            Some(Json::Object(members)) => {
                for (name, _) in members {
                    let pointer = child(&child("", keyword), name);
                    loader.pending.push(PendingRef {
                        node: NodeId::MAX,
                        reference: format!("#{pointer}"),
                        source: 0,
                        pointer: String::new(),
                        resource: String::new(),
                    });
                }
            }
            Some(other) => {
                return Err(ParseError::at(
                    &child("", keyword),
                    format!("`{keyword}` must be an object of schemas, found {}", describe(other)),
                ));
            }
        }
    }
    while let Some(pending) = loader.pending.pop() {
        let target = loader.resolve(&pending)?;
        if let Some(node) = loader.nodes.get_mut(pending.node as usize) {
            *node = Node::Ref(target);
        }
    }
    loader.check_ref_cycles()?;
    Ok(Parsed {
        draft,
        nodes: loader.nodes,
        metas: loader.metas,
        digests: loader.digests,
        root,
    })
}

/// The draft a document's `$schema` names (draft-07 without one); `at`
/// names the document in an error (empty for the schema itself).
fn draft_of(document: &Json<'_>, at: &str) -> Result<Draft, ParseError> {
    match member(document, "$schema") {
        None => Ok(Draft::Draft7),
        Some(Json::String(uri)) => Draft::from_uri(uri).ok_or_else(|| {
            ParseError::at(
                &format!("{at}/$schema"),
                format!(
                    "`$schema` names an unknown meta-schema `{uri}`: expected draft-04, -06, -07, 2019-09 or 2020-12"
                ),
            )
        }),
        Some(other) => Err(ParseError::at(
            &format!("{at}/$schema"),
            format!("`$schema` must be a string, found {}", describe(other)),
        )),
    }
}

/// A document schemas are read from: the schema itself (always the first)
/// or a referenced one, read when first needed.
enum Source<'a> {
    Unread(&'a Referenced<'a>),
    Loaded(Loaded<'a>),
}

/// A document that has been read.
struct Loaded<'a> {
    /// The reference's name; empty for the schema itself.
    name: &'a str,
    root: &'a Json<'a>,
    draft: Draft,
    /// `$id`, `id` and anchor values, with the pointer of their schema.
    ids: HashMap<String, String>,
}

struct PendingRef {
    node: NodeId,
    reference: String,
    /// The document the `$ref` is in (an index into the loader's sources).
    source: usize,
    /// Pointer of the `$ref` keyword's object.
    pointer: String,
    /// Pointer of the schema resource (nearest `$id`) the reference is relative to.
    resource: String,
}

struct Loader<'a> {
    /// The draft of the document being read.
    draft: Draft,
    /// The document being read (an index into `sources`).
    current: usize,
    sources: Vec<Source<'a>>,
    /// The schema's own `$id`: reference names resolve against it, as URIs.
    base: Option<String>,
    nodes: Vec<Node>,
    metas: Vec<Meta>,
    digests: Vec<Option<Digest>>,
    /// How many `$ref` and `not` nodes have been read so far.
    opaque: usize,
    /// The node read at each place (document, pointer).
    by_place: HashMap<(usize, String), NodeId>,
    pending: Vec<PendingRef>,
}

fn describe(value: &Json<'_>) -> String {
    match value {
        Json::Null => "null".to_owned(),
        Json::Bool(flag) => format!("the boolean {flag}"),
        Json::Number(number) => format!("the number {}", number.value),
        Json::String(text) if text.len() <= 40 => format!("the string {}", canonical(value)),
        Json::String(_) => "a string".to_owned(),
        Json::Array(_) => "an array".to_owned(),
        Json::Object(_) => "an object".to_owned(),
    }
}

fn child(pointer: &str, key: &str) -> String {
    let mut path = String::with_capacity(pointer.len() + key.len() + 1);
    path.push_str(pointer);
    path.push('/');
    if key.contains(['~', '/']) {
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        path.push_str(key);
    }
    path
}

/// A 128-bit fingerprint of a schema's JSON text, independent of layout.
pub(crate) type Digest = [u64; 2];

/// A 128-bit SipHash-1-3 of the value, in one pass (the document's objects
/// are sorted, so key order does not matter).
fn digest(value: &Json<'_>) -> Digest {
    use siphasher::sip128::{Hasher128 as _, SipHasher13};
    use std::hash::Hash as _;
    let mut hasher = SipHasher13::new();
    value.hash(&mut hasher);
    let hash = hasher.finish128();
    [hash.h1, hash.h2]
}

impl<'a> Loader<'a> {
    fn push(&mut self, node: Node, meta: Meta) -> NodeId {
        let id = NodeId::try_from(self.nodes.len()).unwrap_or(NodeId::MAX);
        self.nodes.push(node);
        self.metas.push(meta);
        self.digests.push(None);
        id
    }

    /// Reads the schema at `pointer`; `$ref`s in it are queued, not followed.
    fn load(&mut self, value: &'a Json<'a>, pointer: &str, resource: &str) -> Result<NodeId, ParseError> {
        let id = self.push(Node::Empty, Meta::default());
        let opaque_before = self.opaque;
        let (node, meta) = match value {
            Json::Bool(true) => (Node::Empty, Meta::default()),
            Json::Bool(false) => (Node::False, Meta::default()),
            Json::Object(members) => self.load_object(id, Object::new(members), pointer, resource)?,
            other => {
                return Err(ParseError::at(
                    pointer,
                    format!("a schema must be an object or a boolean, found {}", describe(other)),
                ));
            }
        };
        self.nodes[id as usize] = node;
        self.metas[id as usize] = meta;
        if self.opaque == opaque_before {
            self.digests[id as usize] = Some(digest(value));
        }
        Ok(id)
    }

    fn load_object(
        &mut self,
        id: NodeId,
        map: Object<'a>,
        pointer: &str,
        resource: &str,
    ) -> Result<(Node, Meta), ParseError> {
        let id_key = if self.draft == Draft::Draft4 { "id" } else { "$id" };
        let resource = if pointer.is_empty() || matches!(map.get(id_key), Some(Json::String(_))) {
            pointer.to_owned()
        } else {
            resource.to_owned()
        };
        let resource = resource.as_str();
        let meta = Meta {
            id: optional_string(map, id_key, pointer)?,
            title: optional_string(map, "title", pointer)?,
            description: optional_string(map, "description", pointer)?,
            default: map.get("default").cloned().map(Json::into_value),
            connect_type: map.get("connect.type").and_then(Json::as_str).map(str::to_owned),
        };
        if let Some(reference) = map.get("$ref") {
            let Json::String(reference) = reference else {
                return Err(ParseError::at(
                    &child(pointer, "$ref"),
                    format!("`$ref` must be a string, found {}", describe(reference)),
                ));
            };
            self.pending.push(PendingRef {
                node: id,
                reference: reference.to_string(),
                source: self.current,
                pointer: pointer.to_owned(),
                resource: resource.to_owned(),
            });
            self.opaque += 1;
            return Ok((Node::Ref(id), Meta::default()));
        }
        let mut parts: Vec<Node> = Vec::new();
        for criterion in [Criterion::All, Criterion::Any, Criterion::One] {
            let keyword = criterion.keyword();
            let Some(value) = map.get(keyword) else { continue };
            let at = child(pointer, keyword);
            let Json::Array(items) = value else {
                return Err(ParseError::at(
                    &at,
                    format!("`{keyword}` must be an array of schemas, found {}", describe(value)),
                ));
            };
            if items.is_empty() {
                return Err(ParseError::at(&at, format!("`{keyword}` must not be empty")));
            }
            let mut seen = BTreeSet::new();
            let mut subschemas = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let sub = self.load(item, &format!("{at}/{index}"), resource)?;
                // The reference collapses equal subschemas.
                let first = if items.len() <= 16 {
                    !items[..index].contains(item)
                } else {
                    seen.insert(canonical(item))
                };
                if first {
                    subschemas.push(sub);
                }
            }
            parts.push(Node::Combined { criterion, subschemas });
        }
        if let Some(value) = map.get("not") {
            let sub = self.load(value, &child(pointer, "not"), resource)?;
            self.opaque += 1;
            parts.push(Node::Not(sub));
        }
        if self.draft != Draft::Draft4
            && let Some(value) = map.get("const")
        {
            parts.push(Node::Const(canonical(value)));
        }
        if let Some(value) = map.get("enum") {
            let Json::Array(items) = value else {
                return Err(ParseError::at(
                    &child(pointer, "enum"),
                    format!("`enum` must be an array, found {}", describe(value)),
                ));
            };
            parts.push(Node::Enum(items.iter().map(canonical).collect()));
        }
        match map.get("type") {
            Some(Json::String(name)) => {
                let name = self.type_name(name, &child(pointer, "type"))?;
                parts.push(self.typed(name, map, pointer, resource)?);
            }
            Some(Json::Array(names)) => {
                let at = child(pointer, "type");
                if names.is_empty() {
                    return Err(ParseError::at(&at, "`type` must not be an empty array"));
                }
                let mut typed = Vec::with_capacity(names.len());
                for (index, name) in names.iter().enumerate() {
                    let Json::String(name) = name else {
                        return Err(ParseError::at(
                            &format!("{at}/{index}"),
                            format!("every entry of `type` must be a type name, found {}", describe(name)),
                        ));
                    };
                    let name = self.type_name(name, &format!("{at}/{index}"))?;
                    typed.push(self.typed(name, map, pointer, resource)?);
                }
                if typed.len() == 1 {
                    parts.extend(typed);
                } else {
                    let subschemas = typed.into_iter().map(|node| self.push(node, Meta::default())).collect();
                    parts.push(Node::Combined {
                        criterion: Criterion::Any,
                        subschemas,
                    });
                }
            }
            Some(other) => {
                return Err(ParseError::at(
                    &child(pointer, "type"),
                    format!(
                        "`type` must be a type name or an array of type names ({}), found {}",
                        TYPE_NAMES.join(", "),
                        describe(other)
                    ),
                ));
            }
            None => {
                let modern = self.draft.is_modern();
                let has = |keywords: &[&str]| {
                    keywords.iter().any(|keyword| match map.get(keyword) {
                        // The reference's 2019-09+ loader sees `properties: {}` alone as no constraint.
                        Some(Json::Object(members)) if modern && *keyword == "properties" => !members.is_empty(),
                        Some(_) => true,
                        None => false,
                    })
                };
                if has(&OBJECT_KEYWORDS) || map.contains_key("unevaluatedProperties") {
                    parts.push(self.typed("object", map, pointer, resource)?);
                }
                if has(&ARRAY_KEYWORDS) || map.contains_key("unevaluatedItems") {
                    parts.push(self.typed("array", map, pointer, resource)?);
                }
                if has(&NUMBER_KEYWORDS) {
                    parts.push(self.typed("number", map, pointer, resource)?);
                }
                if has(&STRING_KEYWORDS) {
                    parts.push(self.typed("string", map, pointer, resource)?);
                }
            }
        }
        let node = match parts.len() {
            0 => Node::Empty,
            1 => parts.pop().unwrap_or(Node::Empty),
            _ => {
                let subschemas = parts.into_iter().map(|node| self.push(node, Meta::default())).collect();
                Node::Combined {
                    criterion: Criterion::All,
                    subschemas,
                }
            }
        };
        Ok((node, meta))
    }

    fn type_name(&self, name: &str, at: &str) -> Result<&'static str, ParseError> {
        TYPE_NAMES.iter().copied().find(|known| *known == name).ok_or_else(|| {
            ParseError::at(
                at,
                format!("unknown type `{name}`: expected one of {}", TYPE_NAMES.join(", ")),
            )
        })
    }

    fn typed(&mut self, name: &str, map: Object<'a>, pointer: &str, resource: &str) -> Result<Node, ParseError> {
        Ok(match name {
            "boolean" => Node::Boolean,
            "null" => Node::Null,
            "string" => {
                let pattern = optional_string(map, "pattern", pointer)?;
                if let Some(pattern) = &pattern {
                    Regex::new(pattern).map_err(|error| {
                        ParseError::at(
                            &child(pointer, "pattern"),
                            format!(
                                "`pattern` is not a valid regular expression: {}",
                                first_line(&error.to_string())
                            ),
                        )
                    })?;
                }
                optional_string(map, "format", pointer)?;
                Node::String(StringNode {
                    min_length: count(map, "minLength", pointer)?,
                    max_length: count(map, "maxLength", pointer)?,
                    pattern,
                })
            }
            "integer" | "number" => Node::Number(self.number(name == "integer", map, pointer)?),
            "object" => Node::Object(Box::new(self.object(map, pointer, resource)?)),
            _ => Node::Array(Box::new(self.array(map, pointer, resource)?)),
        })
    }

    fn number(&self, integer: bool, map: Object<'_>, pointer: &str) -> Result<NumberNode, ParseError> {
        let exclusive = |key: &str| -> Result<Option<f64>, ParseError> {
            match map.get(key) {
                None => Ok(None),
                // Draft 4: a flag on `minimum`/`maximum`, not a bound of its own.
                Some(Json::Bool(_)) if self.draft == Draft::Draft4 => Ok(None),
                Some(_) if self.draft == Draft::Draft4 => Err(ParseError::at(
                    &child(pointer, key),
                    format!("in draft 4 `{key}` must be a boolean"),
                )),
                Some(_) => number(map, key, pointer),
            }
        };
        let multiple_of =
            match map.get("multipleOf") {
                None => None,
                Some(Json::Number(number)) => Some(factor(number).ok_or_else(|| {
                    ParseError::at(&child(pointer, "multipleOf"), "`multipleOf` must be greater than 0")
                })?),
                Some(other) => {
                    return Err(ParseError::at(
                        &child(pointer, "multipleOf"),
                        format!("`multipleOf` must be a number, found {}", describe(other)),
                    ));
                }
            };
        Ok(NumberNode {
            integer,
            minimum: number(map, "minimum", pointer)?,
            maximum: number(map, "maximum", pointer)?,
            exclusive_minimum: exclusive("exclusiveMinimum")?,
            exclusive_maximum: exclusive("exclusiveMaximum")?,
            multiple_of,
        })
    }

    fn sub(&mut self, map: Object<'a>, key: &str, pointer: &str, resource: &str) -> Result<Option<NodeId>, ParseError> {
        match map.get(key) {
            None => Ok(None),
            Some(value) => self.load(value, &child(pointer, key), resource).map(Some),
        }
    }

    fn schema_map(
        &mut self,
        map: Object<'a>,
        key: &str,
        pointer: &str,
        resource: &str,
    ) -> Result<Vec<(&'a str, NodeId)>, ParseError> {
        let Some(value) = map.get(key) else {
            return Ok(Vec::new());
        };
        let at = child(pointer, key);
        let Some(members) = Object::of(value) else {
            return Err(ParseError::at(
                &at,
                format!("`{key}` must be an object of schemas, found {}", describe(value)),
            ));
        };
        members
            .iter()
            .map(|(name, schema)| Ok((name, self.load(schema, &child(&at, name), resource)?)))
            .collect()
    }

    fn object(&mut self, map: Object<'a>, pointer: &str, resource: &str) -> Result<ObjectNode, ParseError> {
        let required = match map.get("required") {
            None => BTreeSet::new(),
            Some(value) => string_array(value, &child(pointer, "required"), "required")?,
        };
        let properties = Properties::new(
            self.schema_map(map, "properties", pointer, resource)?
                .into_iter()
                .map(|(name, id)| (name, id, required.contains(name)))
                .collect(),
        );
        let (permits_additional, additional) = match map.get("additionalProperties") {
            None => (true, None),
            Some(Json::Bool(flag)) => (*flag, None),
            Some(value) => (
                true,
                Some(self.load(value, &child(pointer, "additionalProperties"), resource)?),
            ),
        };
        let unevaluated = if self.draft.is_modern() {
            self.sub(map, "unevaluatedProperties", pointer, resource)?
        } else {
            None
        };
        let mut pattern_properties = Vec::new();
        for (pattern, id) in self.schema_map(map, "patternProperties", pointer, resource)? {
            let regex = Regex::new(pattern).map_err(|error| {
                ParseError::at(
                    &child(&child(pointer, "patternProperties"), pattern),
                    format!(
                        "`{pattern}` is not a valid regular expression: {}",
                        first_line(&error.to_string())
                    ),
                )
            })?;
            pattern_properties.push((regex, id));
        }
        let mut dependency_arrays = BTreeMap::new();
        let mut dependency_schemas = BTreeMap::new();
        for keyword in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(value) = map.get(keyword) else { continue };
            let at = child(pointer, keyword);
            let Some(members) = Object::of(value) else {
                return Err(ParseError::at(
                    &at,
                    format!("`{keyword}` must be an object, found {}", describe(value)),
                ));
            };
            for (name, member) in members.iter() {
                let member_at = child(&at, name);
                if matches!(member, Json::Array(_)) && keyword != "dependentSchemas" {
                    dependency_arrays.insert(name.to_owned(), string_array(member, &member_at, keyword)?);
                } else if keyword != "dependentRequired" {
                    dependency_schemas.insert(name.to_owned(), self.load(member, &member_at, resource)?);
                } else {
                    return Err(ParseError::at(
                        &member_at,
                        format!(
                            "`dependentRequired` values must be arrays of names, found {}",
                            describe(member)
                        ),
                    ));
                }
            }
        }
        self.sub(map, "propertyNames", pointer, resource)?;
        Ok(ObjectNode {
            properties,
            permits_additional,
            additional,
            unevaluated,
            pattern_properties,
            dependency_arrays,
            dependency_schemas,
            min_properties: count(map, "minProperties", pointer)?,
            max_properties: count(map, "maxProperties", pointer)?,
        })
    }

    fn array(&mut self, map: Object<'a>, pointer: &str, resource: &str) -> Result<ArrayNode, ParseError> {
        let mut array = ArrayNode {
            permits_additional: true,
            unique_items: matches!(map.get("uniqueItems"), Some(Json::Bool(true))),
            min_items: count(map, "minItems", pointer)?,
            max_items: count(map, "maxItems", pointer)?,
            ..ArrayNode::default()
        };
        if let Some(value) = map.get("uniqueItems")
            && !matches!(value, Json::Bool(_))
        {
            return Err(ParseError::at(
                &child(pointer, "uniqueItems"),
                format!("`uniqueItems` must be a boolean, found {}", describe(value)),
            ));
        }
        let tuple_keyword = if self.draft == Draft::Draft2020 {
            "prefixItems"
        } else {
            "items"
        };
        let rest_keyword = if self.draft == Draft::Draft2020 {
            "items"
        } else {
            "additionalItems"
        };
        match map.get(tuple_keyword) {
            Some(Json::Array(items)) => {
                let at = child(pointer, tuple_keyword);
                for (index, item) in items.iter().enumerate() {
                    array
                        .item_schemas
                        .push(self.load(item, &format!("{at}/{index}"), resource)?);
                }
                match map.get(rest_keyword) {
                    None => {}
                    Some(Json::Bool(flag)) => array.permits_additional = *flag,
                    Some(value) => {
                        array.additional = Some(self.load(value, &child(pointer, rest_keyword), resource)?)
                    }
                }
            }
            Some(value) if self.draft == Draft::Draft2020 => {
                return Err(ParseError::at(
                    &child(pointer, "prefixItems"),
                    format!("`prefixItems` must be an array of schemas, found {}", describe(value)),
                ));
            }
            Some(value) => array.all_items = Some(self.load(value, &child(pointer, "items"), resource)?),
            // 2020-12 `items: true/false` alone says whether any items may appear at all.
            None if self.draft == Draft::Draft2020 => match map.get("items") {
                Some(Json::Bool(flag)) => array.permits_additional = *flag,
                _ => array.all_items = self.sub(map, "items", pointer, resource)?,
            },
            None => {
                // `additionalItems` without a list of `items` still counts for the reference.
                match map.get("additionalItems") {
                    None => {}
                    Some(Json::Bool(flag)) => array.permits_additional = *flag,
                    Some(value) => {
                        array.additional = Some(self.load(value, &child(pointer, "additionalItems"), resource)?);
                    }
                }
            }
        }
        array.min_contains = map.get("minContains").and_then(Json::as_i64);
        array.max_contains = map.get("maxContains").and_then(Json::as_i64);
        if self.draft.is_modern() {
            array.unevaluated = self.sub(map, "unevaluatedItems", pointer, resource)?;
            // From 2019-09 `minContains` defaults to 1 where `contains` is given.
            if map.contains_key("contains") && array.min_contains.is_none() {
                array.min_contains = Some(1);
            }
        }
        self.sub(map, "contains", pointer, resource)?;
        Ok(array)
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or(text)
        .trim()
        .to_owned()
}

fn optional_string(map: Object<'_>, key: &str, pointer: &str) -> Result<Option<String>, ParseError> {
    match map.get(key) {
        None => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.to_string())),
        Some(other) => Err(ParseError::at(
            &child(pointer, key),
            format!("`{key}` must be a string, found {}", describe(other)),
        )),
    }
}

fn count(map: Object<'_>, key: &str, pointer: &str) -> Result<Option<u64>, ParseError> {
    match map.get(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|v| *v >= 0.0 && v.fract() == 0.0)
                    .map(|v| v as u64)
            })
            .map(Some)
            .ok_or_else(|| {
                ParseError::at(
                    &child(pointer, key),
                    format!("`{key}` must be a non-negative integer, found {}", describe(value)),
                )
            }),
    }
}

fn number(map: Object<'_>, key: &str, pointer: &str) -> Result<Option<f64>, ParseError> {
    match map.get(key) {
        None => Ok(None),
        Some(Json::Number(number)) => Ok(number.as_f64()),
        Some(other) => Err(ParseError::at(
            &child(pointer, key),
            format!("`{key}` must be a number, found {}", describe(other)),
        )),
    }
}

/// A `multipleOf` number as the exact decimal written; a number made
/// without its text (not read from a document) is taken as its value prints.
fn factor(number: &crate::compat::json_tree::JsonNumber<'_>) -> Option<Factor> {
    if number.literal.is_empty() {
        Factor::parse(&number.value.to_string())
    } else {
        Factor::parse(number.literal)
    }
}

fn string_array(value: &Json<'_>, at: &str, keyword: &str) -> Result<BTreeSet<String>, ParseError> {
    let Json::Array(items) = value else {
        return Err(ParseError::at(
            at,
            format!(
                "`{keyword}` must be an array of property names, found {}",
                describe(value)
            ),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Json::String(name) => Ok(name.to_string()),
            other => Err(ParseError::at(
                &format!("{at}/{index}"),
                format!("`{keyword}` must hold property names, found {}", describe(other)),
            )),
        })
        .collect()
}

impl fmt::Display for Draft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Draft::Draft4 => "draft-04",
            Draft::Draft6 => "draft-06",
            Draft::Draft7 => "draft-07",
            Draft::Draft2019 => "2019-09",
            Draft::Draft2020 => "2020-12",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::resolve::percent_decode;

    #[test]
    fn percent_escapes_decode_and_a_percent_before_any_character_stays() {
        assert_eq!(percent_decode("a%20b%7e"), "a b~");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%f\u{6d8}%s"), "%f\u{6d8}%s");
        assert_eq!(percent_decode("%é1"), "%é1");
    }
}

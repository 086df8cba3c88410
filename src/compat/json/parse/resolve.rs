//! Resolving `$ref`s for the [`Loader`]: resources by `$id` and anchor in
//! the same document, referenced schemas by the reference's name or their
//! `$id`, and the cycles `$ref`s alone could form across schemas.

use std::collections::HashMap;

use crate::compat::json_tree::Json;

use super::super::document::{Object, lookup, member};
use super::super::model::{Draft, Node, NodeId};
use super::{Loaded, Loader, ParseError, PendingRef, Source, child, draft_of};

/// Every `$id` (`id` in draft 4) and anchor of the document, with the
/// pointer of its schema. Recursion follows the document's nesting, which
/// [`super::super::document::read`] limits; a pointer is built only for what is found.
pub(super) fn collect_ids<'a>(document: &'a Json<'a>, draft: Draft) -> HashMap<String, String> {
    fn walk<'v>(
        value: &'v Json<'v>,
        id_key: &str,
        path: &mut Vec<std::borrow::Cow<'v, str>>,
        ids: &mut HashMap<String, String>,
    ) {
        let pointer = |path: &[std::borrow::Cow<'v, str>]| {
            path.iter().fold(String::new(), |mut pointer, step| {
                pointer.push('/');
                pointer.push_str(&step.replace('~', "~0").replace('/', "~1"));
                pointer
            })
        };
        match value {
            Json::Object(_) => {
                if let Some(Json::String(id)) = member(value, id_key) {
                    ids.entry(id.to_string()).or_insert_with(|| pointer(path));
                }
                if let Some(Json::String(anchor)) = member(value, "$anchor") {
                    ids.entry(format!("#{anchor}")).or_insert_with(|| pointer(path));
                }
                for (key, member) in Object::of(value).into_iter().flat_map(Object::iter) {
                    if matches!(member, Json::Object(_) | Json::Array(_)) {
                        path.push(std::borrow::Cow::Borrowed(key));
                        walk(member, id_key, path, ids);
                        path.pop();
                    }
                }
            }
            Json::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    if matches!(item, Json::Object(_) | Json::Array(_)) {
                        path.push(std::borrow::Cow::Owned(index.to_string()));
                        walk(item, id_key, path, ids);
                        path.pop();
                    }
                }
            }
            _ => {}
        }
    }
    let id_key = if draft == Draft::Draft4 { "id" } else { "$id" };
    let mut ids = HashMap::new();
    walk(document, id_key, &mut Vec::new(), &mut ids);
    ids
}

pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    let hex = |byte: u8| char::from(byte).to_digit(16).and_then(|digit| u8::try_from(digit).ok());
    while index < bytes.len() {
        // Byte by byte: `%` may be followed by any character, not only by ASCII.
        if bytes[index] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(index + 1).copied().and_then(hex),
                bytes.get(index + 2).copied().and_then(hex),
            )
        {
            out.push(high * 16 + low);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl<'a> Loader<'a> {
    /// Finds the node a `$ref` names, reading it if no one has yet.
    ///
    /// A reference with a URI part names a schema resource: first one of the
    /// same document by its `$id`; else a referenced schema by the
    /// reference's name (also both resolved against the schema's own `$id`,
    /// as Confluent's `JsonSchema` registers its resolved references under
    /// those URIs before loading); else any document's resource by `$id`.
    pub(super) fn resolve(&mut self, pending: &PendingRef) -> Result<NodeId, ParseError> {
        let at = self.place(pending.source, &child(&pending.pointer, "$ref"));
        let unresolvable = |why: &str| ParseError {
            problem: format!("cannot resolve `$ref` \"{}\": {why}", pending.reference),
            position: at.clone(),
        };
        let (uri, fragment) = match pending.reference.split_once('#') {
            Some((uri, fragment)) => (uri, Some(percent_decode(fragment))),
            None => (pending.reference.as_str(), None),
        };
        let (source, resource) = if uri.is_empty() {
            (pending.source, pending.resource.clone())
        } else {
            match self.find_resource(pending.source, uri)? {
                Some(found) => found,
                None => return Err(unresolvable(&self.why_no_resource())),
            }
        };
        let document = self.loaded(source);
        let (root, draft) = (document.root, document.draft);
        let target = match fragment.as_deref() {
            None | Some("") => resource,
            Some(fragment) if fragment.starts_with('/') => format!("{resource}{fragment}"),
            Some(anchor) => document
                .ids
                .get(&format!("#{anchor}"))
                .cloned()
                .ok_or_else(|| unresolvable("no schema in this document has that anchor"))?,
        };
        let value = lookup(root, &target).ok_or_else(|| match document.name {
            "" => unresolvable("nothing in the document is at that place"),
            name => unresolvable(&format!("nothing in the referenced schema `{name}` is at that place")),
        })?;
        // Each place named by a `$ref` is read once, so references share its node.
        let place = (source, target);
        if let Some(&id) = self.by_place.get(&place) {
            return Ok(id);
        }
        let target_resource = resource_of(&document.ids, &place.1);
        (self.current, self.draft) = (source, draft);
        let id = self
            .load(value, &place.1, &target_resource)
            .map_err(|error| self.within(source, error))?;
        self.by_place.insert(place, id);
        Ok(id)
    }

    /// The document at `source`, which [`Self::find_resource`] has read.
    fn loaded(&self, source: usize) -> &Loaded<'a> {
        match &self.sources[source] {
            Source::Loaded(loaded) => loaded,
            Source::Unread(_) => unreachable!("a document is read before a `$ref` into it is followed"),
        }
    }

    /// The document (by index) and the pointer of the resource `uri` names,
    /// seen from a `$ref` in document `from`.
    fn find_resource(&mut self, from: usize, uri: &str) -> Result<Option<(usize, String)>, ParseError> {
        if let Some(pointer) = self.read_source(from)?.and_then(|ids| matching_id(ids, uri)) {
            return Ok(Some((from, pointer)));
        }
        let named = (1..self.sources.len()).find(|&index| {
            let name = match &self.sources[index] {
                Source::Unread(referenced) => referenced.name,
                Source::Loaded(loaded) => loaded.name,
            };
            same_uri(self.base.as_deref(), name, uri)
        });
        if let Some(index) = named {
            self.read_source(index)?;
            return Ok(Some((index, String::new())));
        }
        for index in 0..self.sources.len() {
            if let Some(pointer) = self.read_source(index)?.and_then(|ids| matching_id(ids, uri)) {
                return Ok(Some((index, pointer)));
            }
        }
        Ok(None)
    }

    /// Reads the document at `index` if no one has yet; returns its `$id`s.
    fn read_source(&mut self, index: usize) -> Result<Option<&HashMap<String, String>>, ParseError> {
        if let Source::Unread(referenced) = self.sources[index] {
            let in_reference = |error: ParseError| ParseError {
                problem: format!(
                    "referenced schema `{}` is not valid: {}",
                    referenced.name, error.problem
                ),
                position: format!("{}#{}", referenced.name, error.position),
            };
            if referenced.document.get().is_none() {
                let document = super::super::document::read(referenced.text).map_err(in_reference)?;
                // Only this loader fills the cell, so it is still empty.
                let _ = referenced.document.set(document);
            }
            let Some(document) = referenced.document.get() else {
                return Ok(None);
            };
            let draft = draft_of(&document.root, &format!("{}#", referenced.name))?;
            self.sources[index] = Source::Loaded(Loaded {
                name: referenced.name,
                root: &document.root,
                draft,
                ids: collect_ids(&document.root, draft),
            });
        }
        Ok(Some(&self.loaded(index).ids))
    }

    /// Why a URI names no resource: what was looked at.
    fn why_no_resource(&self) -> String {
        let names: Vec<String> = self.sources[1..]
            .iter()
            .map(|source| match source {
                Source::Unread(referenced) => format!("`{}`", referenced.name),
                Source::Loaded(loaded) => format!("`{}`", loaded.name),
            })
            .collect();
        if names.is_empty() {
            "no schema in this document has that `$id`, the schema has no references, and remote schemas are not \
             fetched"
                .to_owned()
        } else {
            format!(
                "no schema in this document has that `$id`, no reference is named so (the references are {}), and \
                 remote schemas are not fetched",
                names.join(", ")
            )
        }
    }

    /// Where `pointer` in document `source` is, for a person: the pointer
    /// alone in the schema itself, else prefixed by the reference's name.
    fn place(&self, source: usize, pointer: &str) -> String {
        match &self.sources[source] {
            _ if source == 0 => pointer.to_owned(),
            Source::Unread(referenced) => format!("{}#{pointer}", referenced.name),
            Source::Loaded(loaded) => format!("{}#{pointer}", loaded.name),
        }
    }

    /// `error`, found while reading document `source`, placed in it.
    fn within(&self, source: usize, error: ParseError) -> ParseError {
        if source == 0 {
            return error;
        }
        let pointer = if error.position == "/" { "" } else { &error.position };
        ParseError {
            position: self.place(source, pointer),
            problem: error.problem,
        }
    }

    /// Refuses `$ref`s that lead only to other `$ref`s, round in a circle.
    pub(super) fn check_ref_cycles(&self) -> Result<(), ParseError> {
        /// Per node: not yet known, on the chain being followed, or known to reach a schema.
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum State {
            Unknown,
            OnChain,
            Reaches,
        }
        let mut states = vec![State::Unknown; self.nodes.len()];
        let mut chain = Vec::new();
        for start in 0..self.nodes.len() {
            let mut current = start;
            chain.clear();
            loop {
                match (states[current], &self.nodes[current]) {
                    (State::Reaches, _) => break,
                    (State::OnChain, _) => {
                        let places: HashMap<NodeId, String> = self
                            .by_place
                            .iter()
                            .map(|((source, pointer), id)| (*id, self.place(*source, pointer)))
                            .collect();
                        let first = chain.iter().position(|&node| node == current).unwrap_or(0);
                        let mut cycle: Vec<String> = chain[first..]
                            .iter()
                            .map(|&node| {
                                let place = NodeId::try_from(node).ok().and_then(|id| places.get(&id));
                                place.map_or_else(|| "?".to_owned(), |place| display_place(place))
                            })
                            .collect();
                        cycle.push(cycle[0].clone());
                        let position = places
                            .get(&NodeId::try_from(current).unwrap_or(NodeId::MAX))
                            .map_or_else(|| "/$ref".to_owned(), |place| child(place, "$ref"));
                        return Err(ParseError {
                            problem: format!(
                                "`$ref` leads round a cycle of references that never reaches a schema: {}",
                                cycle.join(" -> ")
                            ),
                            position,
                        });
                    }
                    (State::Unknown, Node::Ref(target)) => {
                        states[current] = State::OnChain;
                        chain.push(current);
                        current = *target as usize;
                    }
                    (State::Unknown, _) => {
                        states[current] = State::Reaches;
                        break;
                    }
                }
            }
            for &node in &chain {
                states[node] = State::Reaches;
            }
        }
        Ok(())
    }
}

/// A place as a cycle names it: `#` for the schema's root, else the place.
fn display_place(place: &str) -> String {
    if place.is_empty() { "#" } else { place }.to_owned()
}

/// The pointer of the schema whose `$id` is `uri`, or ends with it after a
/// `/` (a relative reference).
fn matching_id(ids: &HashMap<String, String>, uri: &str) -> Option<String> {
    if let Some(pointer) = ids.get(uri) {
        return Some(pointer.clone());
    }
    ids.iter()
        .filter(|(id, _)| id.ends_with(&format!("/{uri}")) || id.trim_end_matches('#') == uri)
        .map(|(_, pointer)| pointer.clone())
        .min()
}

/// The pointer of the nearest schema with an `$id` at or above `pointer`.
fn resource_of(ids: &HashMap<String, String>, pointer: &str) -> String {
    ids.iter()
        .filter(|(id, _)| !id.starts_with('#'))
        .map(|(_, at)| at)
        .filter(|at| pointer == at.as_str() || pointer.starts_with(&format!("{at}/")))
        .max_by_key(|at| at.len())
        .cloned()
        .unwrap_or_default()
}

/// Whether a reference's `name` and a `$ref`'s `uri` name the same schema:
/// equal but for a leading `./`, or equal once both are resolved against
/// the schema's own `$id` (`base`).
fn same_uri(base: Option<&str>, name: &str, uri: &str) -> bool {
    let plain = |text: &'_ str| text.strip_prefix("./").unwrap_or(text).to_owned();
    if plain(name) == plain(uri) {
        return true;
    }
    let Some(base) = base else { return false };
    let resolved = |text: &str| {
        let absolute = text
            .split_once(':')
            .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains('/'));
        if absolute {
            text.to_owned()
        } else {
            let directory = base.rfind('/').map_or("", |end| &base[..=end]);
            format!("{directory}{}", plain(text))
        }
    };
    resolved(name) == resolved(uri)
}

//! The parsed form of a JSON Schema: an arena of nodes that mirrors how
//! Confluent's checker sees a schema (one node per schema class: object,
//! array, string, number, combined, …), with `$ref`s resolved to node ids so
//! recursive schemas are finite graphs.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde_json::Value;

/// The index of a node in [`JsonSchema::nodes`](super::JsonSchema).
pub(crate) type NodeId = u32;

/// The JSON Schema draft a document is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Draft {
    /// Draft 4 (`id`, boolean `exclusiveMinimum`/`exclusiveMaximum`).
    Draft4,
    /// Draft 6.
    Draft6,
    /// Draft 7, the default when `$schema` is absent.
    Draft7,
    /// Draft 2019-09.
    Draft2019,
    /// Draft 2020-12 (`prefixItems`, `items` for the rest).
    Draft2020,
}

impl Draft {
    /// The draft named by a `$schema` URI, if it is a known one.
    pub fn from_uri(uri: &str) -> Option<Self> {
        let uri = uri.trim_end_matches('#');
        if uri.contains("draft-04") {
            Some(Draft::Draft4)
        } else if uri.contains("draft-06") {
            Some(Draft::Draft6)
        } else if uri.contains("draft-07") {
            Some(Draft::Draft7)
        } else if uri.contains("2019-09") {
            Some(Draft::Draft2019)
        } else if uri.contains("2020-12") {
            Some(Draft::Draft2020)
        } else {
            None
        }
    }

    /// True for 2019-09 and later, whose vocabulary the reference reads differently.
    pub(crate) fn is_modern(self) -> bool {
        self >= Draft::Draft2019
    }
}

/// Annotations every schema may carry; changing them is reported but harmless.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Meta {
    pub(crate) id: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<Value>,
    /// Kafka Connect's `connect.type` annotation, which marks bytes carried as strings.
    pub(crate) connect_type: Option<String>,
}

/// `allOf`, `anyOf` or `oneOf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

/// Constraints on strings.
#[derive(Debug, Clone, Default)]
pub(crate) struct StringNode {
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<String>,
}

/// Constraints on numbers.
#[derive(Debug, Clone, Default)]
pub(crate) struct NumberNode {
    pub(crate) integer: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_minimum: Option<f64>,
    pub(crate) exclusive_maximum: Option<f64>,
    pub(crate) multiple_of: Option<super::decimal::Factor>,
}

/// Constraints on objects.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectNode {
    /// Declared properties, sorted by name, each with whether `required` names it.
    pub(crate) properties: Properties,
    /// False for `additionalProperties: false`.
    pub(crate) permits_additional: bool,
    /// The schema of `additionalProperties` when it is a schema.
    pub(crate) additional: Option<NodeId>,
    pub(crate) unevaluated: Option<NodeId>,
    pub(crate) pattern_properties: Vec<(Regex, NodeId)>,
    pub(crate) dependency_arrays: BTreeMap<String, BTreeSet<String>>,
    pub(crate) dependency_schemas: BTreeMap<String, NodeId>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) max_properties: Option<u64>,
}

/// An object's declared properties, sorted by name. The names sit back to
/// back in one buffer, so merging two lists (as the diff does against every
/// earlier version) reads memory in order instead of one allocation per name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Properties {
    names: String,
    /// Per property: where its name ends in `names`, its schema, and whether
    /// `required` names it.
    entries: Vec<(usize, NodeId, bool)>,
}

impl Properties {
    /// The properties given, in any order.
    pub(crate) fn new(mut properties: Vec<(&str, NodeId, bool)>) -> Self {
        properties.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut names = String::with_capacity(properties.iter().map(|(name, ..)| name.len()).sum());
        let entries = properties
            .into_iter()
            .map(|(name, node, required)| {
                names.push_str(name);
                (names.len(), node, required)
            })
            .collect();
        Self { names, entries }
    }

    /// The property at `index` (in name order): its name, its schema and
    /// whether it is required.
    pub(crate) fn get(&self, index: usize) -> Option<(&str, NodeId, bool)> {
        let &(end, node, required) = self.entries.get(index)?;
        let start = index.checked_sub(1).map_or(0, |before| self.entries[before].0);
        Some((&self.names[start..end], node, required))
    }
}

/// Constraints on arrays.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArrayNode {
    /// `items` as one schema for every item.
    pub(crate) all_items: Option<NodeId>,
    /// `items` as a list (or `prefixItems`): one schema per position.
    pub(crate) item_schemas: Vec<NodeId>,
    /// False for `additionalItems: false` (`items: false` after `prefixItems`).
    pub(crate) permits_additional: bool,
    pub(crate) additional: Option<NodeId>,
    pub(crate) unevaluated: Option<NodeId>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) unique_items: bool,
    pub(crate) min_contains: Option<i64>,
    pub(crate) max_contains: Option<i64>,
}

/// One schema, by the class the reference gives it.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// `{}`, `true`, or a schema with no validating keyword.
    Empty,
    /// `false`: nothing is valid.
    False,
    Boolean,
    Null,
    String(StringNode),
    Number(NumberNode),
    /// `enum`: the allowed values, each in canonical JSON text.
    Enum(BTreeSet<String>),
    /// `const`: the one allowed value in canonical JSON text.
    Const(String),
    Not(NodeId),
    Combined {
        criterion: Criterion,
        subschemas: Vec<NodeId>,
    },
    Object(Box<ObjectNode>),
    Array(Box<ArrayNode>),
    /// A `$ref`, resolved to the node it names.
    Ref(NodeId),
}

impl Node {
    /// The reference's schema class, for "did the type change" questions.
    pub(crate) fn class(&self) -> u8 {
        match self {
            Node::Empty => 0,
            Node::False => 1,
            Node::Boolean => 2,
            Node::Null => 3,
            Node::String(_) => 4,
            Node::Number(_) => 5,
            Node::Enum(_) => 6,
            Node::Const(_) => 7,
            Node::Not(_) => 8,
            Node::Combined { .. } => 9,
            Node::Object(_) => 10,
            Node::Array(_) => 11,
            Node::Ref(_) => 12,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Properties;

    #[test]
    fn properties_come_back_sorted_with_their_own_names() {
        let properties = Properties::new(vec![("b", 2, false), ("", 0, true), ("ab", 1, true), ("a", 3, false)]);
        let all: Vec<_> = (0..).map_while(|index| properties.get(index)).collect();
        assert_eq!(all, [("", 0, true), ("a", 3, false), ("ab", 1, true), ("b", 2, false)]);
        assert_eq!(properties.get(4), None);
    }
}

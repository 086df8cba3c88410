//! The difference walk: previous ("original") against candidate ("update"),
//! recording every change with Confluent's type name and `#/…` path, as its
//! `SchemaDiff` does. Judging happens elsewhere ([`super::is_compatible`]),
//! except where the reference itself asks whether a sub-comparison was
//! compatible (matching subschemas, partially open content models, `not`).
//!
//! Each pair of nodes is compared once and remembered, and a pair met again
//! while it is still being compared is a recursive cycle, taken as no
//! change. Every comparison costs one step of a budget; running out ends the
//! walk with [`TooComplex`] rather than a guess.

use std::collections::HashMap;
use std::rc::Rc;

use super::model::{ArrayNode, Criterion, Node, NodeId, NumberNode, ObjectNode, StringNode};
use super::{JsonPolicy, JsonSchema, Kind, is_compatible};

/// The walk ran out of its step budget or nested too deeply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooComplex {
    /// True when the comparisons nested deeper than allowed, rather than
    /// taking too many steps.
    pub(crate) too_deep: bool,
}

/// One step of a path: an object key or an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// A change found by the walk, with its path innermost step first (so an
/// enclosing comparison can add its own step at the end, cheaply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChange<'a> {
    pub(crate) kind: Kind,
    pub(crate) reversed_path: Vec<Step<'a>>,
}

/// A node of one of the two schemas: 0 is the original, 1 the update
/// (swapped inside `not`).
type NodeRef = (u8, NodeId);

/// How deep comparisons may nest on the caller's stack: enough for any
/// document serde_json accepts, and shallow enough for a 2 MiB thread
/// stack in a debug build. Recursive schemas whose `$ref`s pair up many
/// definitions go deeper; [`super::differences`] then walks again on a
/// thread of its own with [`DEEP_STACK_BYTES`] and [`DEEP_MAX_DEPTH`].
pub(crate) const SHALLOW_MAX_DEPTH: usize = 100;
/// The nesting allowed on the dedicated deep-walk thread.
pub(crate) const DEEP_MAX_DEPTH: usize = 4_000;
/// The stack of the deep-walk thread (reserved, committed only as used).
pub(crate) const DEEP_STACK_BYTES: usize = 512 * 1024 * 1024;

pub(crate) struct Differ<'a> {
    schemas: [&'a JsonSchema; 2],
    policy: JsonPolicy,
    budget: usize,
    max_depth: usize,
    steps: usize,
    depth: usize,
    memo: HashMap<Pair, Shared<'a>>,
    /// Pairs being compared, with their depth on the stack.
    in_progress: HashMap<Pair, usize>,
    /// The shallowest in-progress pair the current comparison assumed
    /// compatible; a result that leans on an enclosing pair is provisional
    /// and is not remembered.
    low_water: usize,
    /// Results that assumed an enclosing pair (at the bucket's depth) has no
    /// change: remembered once that pair turns out compatible, dropped if not.
    /// Each result's assumed depth is kept with it; a lookup that reuses it
    /// inherits the assumption.
    provisional: HashMap<Pair, (Shared<'a>, usize)>,
    /// The keys of `provisional`, by the depth of the pair they assume unchanged.
    buckets: Vec<Vec<Pair>>,
}

/// A pair of nodes compared, original first.
type Pair = (NodeRef, NodeRef);

/// What a comparison found, shared between the places that reuse it.
type Shared<'a> = Rc<[RawChange<'a>]>;

/// How many steps the walk takes between asking whether it may go on.
const CHECKPOINT_STEPS: usize = 1024;

type Found<'a> = Result<Vec<RawChange<'a>>, TooComplex>;

fn at<'a>(kind: Kind) -> RawChange<'a> {
    RawChange {
        kind,
        reversed_path: Vec::new(),
    }
}

fn under<'a>(mut changes: Vec<RawChange<'a>>, steps: &[Step<'a>]) -> Vec<RawChange<'a>> {
    for change in &mut changes {
        change.reversed_path.extend(steps.iter().rev().copied());
    }
    changes
}

impl<'a> Differ<'a> {
    pub(crate) fn new(
        original: &'a JsonSchema,
        update: &'a JsonSchema,
        policy: JsonPolicy,
        budget: usize,
        max_depth: usize,
    ) -> Self {
        Self {
            schemas: [original, update],
            policy,
            budget,
            max_depth,
            steps: 0,
            depth: 0,
            memo: HashMap::new(),
            in_progress: HashMap::new(),
            low_water: usize::MAX,
            provisional: HashMap::new(),
            buckets: Vec::new(),
        }
    }

    /// Every difference between the two whole schemas.
    pub(crate) fn run(&mut self) -> Found<'a> {
        let original = (0, self.schemas[0].root);
        let update = (1, self.schemas[1].root);
        self.compare(Some(original), Some(update))
    }

    fn node(&self, node: NodeRef) -> &'a Node {
        &self.schemas[node.0 as usize].nodes[node.1 as usize]
    }

    fn is_shared(&self, node: NodeRef) -> bool {
        self.schemas[node.0 as usize].shared[node.1 as usize]
    }

    fn meta(&self, node: NodeRef) -> &'a super::model::Meta {
        &self.schemas[node.0 as usize].metas[node.1 as usize]
    }

    /// Follows `$ref`s to the schema they name (the parser refused cycles of bare references).
    fn deref(&self, mut node: NodeRef) -> NodeRef {
        let mut hops = 0;
        while let Node::Ref(target) = self.node(node) {
            node = (node.0, *target);
            hops += 1;
            if hops > self.schemas[node.0 as usize].nodes.len() {
                break;
            }
        }
        node
    }

    /// Whether both subtrees are the same text, read the same way, with
    /// nothing in them that could differ.
    fn same_digest(&self, original: NodeRef, update: NodeRef) -> bool {
        let (old_schema, new_schema) = (self.schemas[original.0 as usize], self.schemas[update.0 as usize]);
        old_schema.draft == new_schema.draft
            && matches!(
                (old_schema.digests[original.1 as usize], new_schema.digests[update.1 as usize]),
                (Some(old_digest), Some(new_digest)) if old_digest == new_digest
            )
    }

    fn compatible(&self, changes: &[RawChange<'a>]) -> bool {
        changes.iter().all(|change| is_compatible(change.kind, self.policy))
    }

    fn compare(&mut self, original: Option<NodeRef>, update: Option<NodeRef>) -> Found<'a> {
        let (original, update) = match (original, update) {
            (None, None) => return Ok(Vec::new()),
            (None, Some(_)) => return Ok(vec![at(Kind::SchemaAdded)]),
            (Some(_), None) => return Ok(vec![at(Kind::SchemaRemoved)]),
            (Some(original), Some(update)) => (original, update),
        };
        self.steps += 1;
        // A stopped budget (cancelled, out of time) ends the walk as running
        // out of steps does; the caller tells the two apart.
        let stopped = self.steps.is_multiple_of(CHECKPOINT_STEPS) && crate::compat::budget::checkpoint().is_err();
        if stopped || self.steps > self.budget || self.depth > self.max_depth {
            return Err(TooComplex {
                too_deep: self.depth > self.max_depth,
            });
        }
        // Only a subtree without `$ref` has a digest, so a node that has one
        // is its own target: asking before `deref` spares reading the node,
        // which for the properties of 50 large earlier versions is a cache
        // miss each.
        if self.same_digest(original, update) {
            return Ok(Vec::new());
        }
        let targets = (self.deref(original), self.deref(update));
        if targets != (original, update) && self.same_digest(targets.0, targets.1) {
            return Ok(Vec::new());
        }
        let (original, update) = targets;
        if !self.is_shared(original) && !self.is_shared(update) {
            // Only `$ref` targets can be reached twice or round a cycle;
            // any other pair is met once, so there is nothing to remember.
            self.depth += 1;
            let found = self.compare_nodes(original, update);
            self.depth -= 1;
            return found;
        }
        let key = (original, update);
        if let Some(found) = self.memo.get(&key) {
            return Ok(found.to_vec());
        }
        if let Some((found, assumed)) = self.provisional.get(&key) {
            self.low_water = self.low_water.min(*assumed);
            return Ok(found.to_vec());
        }
        if let Some(&depth) = self.in_progress.get(&key) {
            // A recursive cycle: assume no change, and remember the assumption.
            self.low_water = self.low_water.min(depth);
            return Ok(Vec::new());
        }
        let depth = self.depth;
        self.in_progress.insert(key, depth);
        let outer_low_water = std::mem::replace(&mut self.low_water, usize::MAX);
        self.depth += 1;
        let found = self.compare_nodes(original, update);
        self.depth -= 1;
        self.in_progress.remove(&key);
        let leaned_on_enclosing = self.low_water < depth;
        let mine = self.low_water;
        self.low_water = if leaned_on_enclosing {
            outer_low_water.min(mine)
        } else {
            outer_low_water
        };
        let found = found?;
        // Settle what assumed this pair unchanged: a compatible result bears the assumption out.
        let settled = self.buckets.get_mut(depth).map(std::mem::take).unwrap_or_default();
        let compatible = self.compatible(&found);
        for settled in settled {
            if !compatible {
                self.provisional.remove(&settled);
            } else if leaned_on_enclosing {
                if let Some(entry) = self.provisional.get_mut(&settled) {
                    entry.1 = mine;
                }
                self.bucket(mine).push(settled);
            } else if let Some((result, _)) = self.provisional.remove(&settled) {
                self.memo.insert(settled, result);
            }
        }
        let shared: Shared<'a> = found.clone().into();
        if leaned_on_enclosing {
            self.provisional.insert(key, (shared, mine));
            self.bucket(mine).push(key);
        } else {
            self.memo.insert(key, shared);
        }
        Ok(found)
    }

    fn bucket(&mut self, depth: usize) -> &mut Vec<Pair> {
        if self.buckets.len() <= depth {
            self.buckets.resize_with(depth + 1, Vec::new);
        }
        &mut self.buckets[depth]
    }

    fn compare_nodes(&mut self, original: NodeRef, update: NodeRef) -> Found<'a> {
        let (old, new) = (self.node(original), self.node(update));
        match (old, new) {
            (Node::Combined { .. }, Node::Combined { .. }) => {}
            (_, Node::Combined { criterion, subschemas }) => {
                if subschemas.len() == 1 {
                    let found = self.compare(Some(original), Some((update.0, subschemas[0])))?;
                    if self.compatible(&found) {
                        return Ok(found);
                    }
                } else if matches!(criterion, Criterion::Any | Criterion::One) {
                    for &sub in subschemas {
                        let mut found = self.compare(Some(original), Some((update.0, sub)))?;
                        if self.compatible(&found) {
                            found.push(at(Kind::SumTypeExtended));
                            return Ok(found);
                        }
                    }
                }
            }
            (Node::Combined { criterion, subschemas }, _) => {
                if subschemas.len() == 1 {
                    let found = self.compare(Some((original.0, subschemas[0])), Some(update))?;
                    if self.compatible(&found) {
                        return Ok(found);
                    }
                } else if *criterion == Criterion::All {
                    for &sub in subschemas {
                        let mut found = self.compare(Some((original.0, sub)), Some(update))?;
                        if self.compatible(&found) {
                            found.push(at(Kind::ProductTypeNarrowed));
                            return Ok(found);
                        }
                    }
                }
            }
            _ => {}
        }
        if old.class() != new.class() {
            let bytes = |node: NodeRef| self.meta(node).connect_type.as_deref() == Some("bytes");
            if matches!(old, Node::False) || matches!(new, Node::Empty) || (bytes(original) && bytes(update)) {
                return Ok(Vec::new());
            }
            return Ok(vec![at(Kind::TypeChanged)]);
        }
        let mut found = Vec::new();
        let (old_meta, new_meta) = (self.meta(original), self.meta(update));
        if old_meta.id != new_meta.id && !self.schemas[0].draft.is_modern() {
            found.push(at(Kind::IdChanged));
        }
        if old_meta.title != new_meta.title {
            found.push(at(Kind::TitleChanged));
        }
        if old_meta.description != new_meta.description {
            found.push(at(Kind::DescriptionChanged));
        }
        if old_meta.default != new_meta.default {
            found.push(at(Kind::DefaultChanged));
        }
        match (old, new) {
            (Node::String(old), Node::String(new)) => strings(old, new, &mut found),
            (Node::Number(old), Node::Number(new)) => numbers(old, new, &mut found),
            (Node::Enum(old), Node::Enum(new)) if old != new => {
                let kind = if new.is_superset(old) {
                    Kind::EnumArrayExtended
                } else if old.is_superset(new) {
                    Kind::EnumArrayNarrowed
                } else {
                    Kind::EnumArrayChanged
                };
                found.push(keyword("enum", kind));
            }
            (Node::Const(old), Node::Const(new)) if old != new => {
                found.push(keyword("const", Kind::EnumArrayChanged));
            }
            (Node::Not(old), Node::Not(new)) => {
                // Reversed: the update may forbid less than the original did.
                let inner = self.compare(Some((update.0, *new)), Some((original.0, *old)))?;
                let kind = if self.compatible(&inner) {
                    Kind::NotTypeNarrowed
                } else {
                    Kind::NotTypeExtended
                };
                found.push(keyword("not", kind));
            }
            (
                Node::Combined {
                    criterion: old_criterion,
                    subschemas: old_subs,
                },
                Node::Combined {
                    criterion: new_criterion,
                    subschemas: new_subs,
                },
            ) => self.combined(
                (original.0, *old_criterion, old_subs),
                (update.0, *new_criterion, new_subs),
                &mut found,
            )?,
            (Node::Object(old), Node::Object(new)) => self.objects(original.0, old, update.0, new, &mut found)?,
            (Node::Array(old), Node::Array(new)) => self.arrays(original.0, old, update.0, new, &mut found)?,
            _ => {}
        }
        Ok(found)
    }

    fn combined(
        &mut self,
        (old_side, old_criterion, old_subs): (u8, Criterion, &'a [NodeId]),
        (new_side, new_criterion, new_subs): (u8, Criterion, &'a [NodeId]),
        found: &mut Vec<RawChange<'a>>,
    ) -> Result<(), TooComplex> {
        if old_criterion != new_criterion {
            let extended = match new_criterion {
                Criterion::Any => true,
                Criterion::One => old_subs.len() == 1 || (old_criterion == Criterion::All && new_subs.len() == 1),
                Criterion::All => old_subs.len() == 1 && new_subs.len() == 1,
            };
            if extended {
                found.push(at(Kind::CombinedTypeExtended));
            } else {
                found.push(at(Kind::CombinedTypeChanged));
                return Ok(());
            }
        }
        let (old_size, new_size) = (old_subs.len(), new_subs.len());
        // Fewer subschemas narrow what the original combined; more extend what the update combines.
        if old_size < new_size {
            found.push(at(if new_criterion == Criterion::All {
                Kind::ProductTypeExtended
            } else {
                Kind::SumTypeExtended
            }));
        } else if old_size > new_size {
            found.push(at(if old_criterion == Criterion::All {
                Kind::ProductTypeNarrowed
            } else {
                Kind::SumTypeNarrowed
            }));
        }
        // Which pairs are compatible, with what they found, then a maximum matching.
        let mut edges: Vec<Vec<(usize, Vec<RawChange<'a>>)>> = Vec::with_capacity(old_size);
        for (index, &old_sub) in old_subs.iter().enumerate() {
            let steps = [Step::Key(old_criterion.keyword()), Step::Index(index)];
            let mut row = Vec::new();
            for (target, &new_sub) in new_subs.iter().enumerate() {
                let inner = self.compare(Some((old_side, old_sub)), Some((new_side, new_sub)))?;
                if self.compatible(&inner) {
                    row.push((target, under(inner, &steps)));
                }
            }
            // Pairs without any difference are tried first, so equal subschemas pair up.
            row.sort_by_key(|(_, changes)| !changes.is_empty());
            edges.push(row);
        }
        let matching = maximum_matching(&edges, new_size, &mut self.steps, self.budget)?;
        let mut matched = 0;
        for (index, target) in matching.iter().enumerate() {
            if let Some(target) = target
                && let Some((_, changes)) = edges[index].iter().find(|(candidate, _)| candidate == target)
            {
                matched += 1;
                found.extend(changes.iter().cloned());
            }
        }
        if matched < old_size.min(new_size) {
            found.push(at(Kind::CombinedTypeSubschemasChanged));
        }
        Ok(())
    }

    fn objects(
        &mut self,
        old_side: u8,
        old: &'a ObjectNode,
        new_side: u8,
        new: &'a ObjectNode,
        found: &mut Vec<RawChange<'a>>,
    ) -> Result<(), TooComplex> {
        // properties: a merge of the two sorted lists
        let (mut i, mut j) = (0, 0);
        loop {
            let (name, old_property, new_property) = match (old.properties.get(i), new.properties.get(j)) {
                (Some((name, node, was)), next) if next.is_none_or(|(other, ..)| name < other) => {
                    i += 1;
                    (name, Some((node, was)), None)
                }
                (Some((name, old_node, was)), Some((other, new_node, is))) if name == other => {
                    i += 1;
                    j += 1;
                    (name, Some((old_node, was)), Some((new_node, is)))
                }
                (_, Some((name, node, is))) => {
                    j += 1;
                    (name, None, Some((node, is)))
                }
                // Both lists done (an old property with none new left is taken above).
                (_, None) => break,
            };
            let steps = [Step::Key("properties"), Step::Key(name)];
            let here = |kind| RawChange {
                kind,
                reversed_path: vec![Step::Key(name), Step::Key("properties")],
            };
            match (old_property, new_property) {
                (Some((old_property, was)), Some((new_property, is))) => {
                    let required_change = if was && !is {
                        Some(Kind::RequiredAttributeRemoved)
                    } else if !was && is {
                        Some(if self.meta((new_side, new_property)).default.is_some() {
                            Kind::RequiredAttributeWithDefaultAdded
                        } else {
                            Kind::RequiredAttributeAdded
                        })
                    } else {
                        None
                    };
                    if let Some(kind) = required_change {
                        found.push(RawChange {
                            kind,
                            reversed_path: vec![Step::Key(name), Step::Key("required")],
                        });
                    }
                    let inner = self.compare(Some((old_side, old_property)), Some((new_side, new_property)))?;
                    found.extend(under(inner, &steps));
                }
                (Some((old_property, _)), None) => {
                    if is_open(self, new_side, new) {
                        found.push(here(Kind::PropertyRemovedFromOpenContentModel));
                    } else if let Some(partial) = partial_schema(self, new_side, new, name) {
                        let inner = self.compare(Some((old_side, old_property)), Some((new_side, partial)))?;
                        let covered = self.compatible(&inner);
                        found.extend(under(inner, &steps));
                        found.push(here(if covered {
                            Kind::PropertyRemovedIsCoveredByPartiallyOpenContentModel
                        } else {
                            Kind::PropertyRemovedNotCoveredByPartiallyOpenContentModel
                        }));
                    } else if matches!(self.node(self.deref((old_side, old_property))), Node::False) {
                        found.push(here(Kind::PropertyWithFalseRemovedFromClosedContentModel));
                    } else {
                        found.push(here(Kind::PropertyRemovedFromClosedContentModel));
                    }
                }
                (None, Some((new_property, required))) => {
                    let has_default = self.meta((new_side, new_property)).default.is_some();
                    if is_open(self, old_side, old) {
                        let kind = if matches!(self.node(self.deref((new_side, new_property))), Node::Empty) {
                            Kind::PropertyWithEmptySchemaAddedToOpenContentModel
                        } else if !required {
                            Kind::OptionalPropertyAddedToOpenContentModel
                        } else if has_default {
                            Kind::RequiredPropertyWithDefaultAddedToOpenContentModel
                        } else {
                            Kind::RequiredPropertyAddedToOpenContentModel
                        };
                        found.push(here(kind));
                    } else {
                        if let Some(partial) = partial_schema(self, old_side, old, name) {
                            let inner = self.compare(Some((old_side, partial)), Some((new_side, new_property)))?;
                            let covered = self.compatible(&inner);
                            found.extend(under(inner, &steps));
                            found.push(here(if covered {
                                Kind::PropertyAddedIsCoveredByPartiallyOpenContentModel
                            } else {
                                Kind::PropertyAddedNotCoveredByPartiallyOpenContentModel
                            }));
                        }
                        found.push(here(if !required {
                            Kind::OptionalPropertyAddedToUnopenContentModel
                        } else if has_default {
                            Kind::RequiredPropertyWithDefaultAddedToUnopenContentModel
                        } else {
                            Kind::RequiredPropertyAddedToUnopenContentModel
                        }));
                    }
                }
                (None, None) => {}
            }
        }
        // dependencies
        for name in old.dependency_arrays.keys().chain(
            new.dependency_arrays
                .keys()
                .filter(|name| !old.dependency_arrays.contains_key(*name)),
        ) {
            let kind = match (old.dependency_arrays.get(name), new.dependency_arrays.get(name)) {
                (_, None) => Kind::DependencyArrayRemoved,
                (None, Some(_)) => Kind::DependencyArrayAdded,
                (Some(was), Some(is)) if was == is => continue,
                (Some(was), Some(is)) if is.is_superset(was) => Kind::DependencyArrayExtended,
                (Some(was), Some(is)) if was.is_superset(is) => Kind::DependencyArrayNarrowed,
                _ => Kind::DependencyArrayChanged,
            };
            found.push(RawChange {
                kind,
                reversed_path: vec![Step::Key(name), Step::Key("dependencies")],
            });
        }
        for name in old.dependency_schemas.keys().chain(
            new.dependency_schemas
                .keys()
                .filter(|name| !old.dependency_schemas.contains_key(*name)),
        ) {
            let here = |kind| RawChange {
                kind,
                reversed_path: vec![Step::Key(name), Step::Key("dependencies")],
            };
            match (old.dependency_schemas.get(name), new.dependency_schemas.get(name)) {
                (_, None) => found.push(here(Kind::DependencySchemaRemoved)),
                (None, Some(_)) => found.push(here(Kind::DependencySchemaAdded)),
                (Some(&was), Some(&is)) => {
                    let inner = self.compare(Some((old_side, was)), Some((new_side, is)))?;
                    found.extend(under(inner, &[Step::Key("dependencies"), Step::Key(name)]));
                }
            }
        }
        self.additional(
            "additionalProperties",
            [
                Kind::AdditionalPropertiesAdded,
                Kind::AdditionalPropertiesRemoved,
                Kind::AdditionalPropertiesExtended,
                Kind::AdditionalPropertiesNarrowed,
            ],
            (old_side, old.permits_additional, old.additional),
            (new_side, new.permits_additional, new.additional),
            found,
        )?;
        self.unevaluated(
            "unevaluatedProperties",
            [
                Kind::UnevaluatedPropertiesAdded,
                Kind::UnevaluatedPropertiesRemoved,
                Kind::UnevaluatedPropertiesExtended,
                Kind::UnevaluatedPropertiesNarrowed,
            ],
            old.unevaluated.map(|node| (old_side, node)),
            new.unevaluated.map(|node| (new_side, node)),
            found,
        )?;
        bound(
            found,
            "maxProperties",
            old.max_properties,
            new.max_properties,
            [
                Kind::MaxPropertiesAdded,
                Kind::MaxPropertiesRemoved,
                Kind::MaxPropertiesIncreased,
                Kind::MaxPropertiesDecreased,
            ],
        );
        bound(
            found,
            "minProperties",
            old.min_properties,
            new.min_properties,
            [
                Kind::MinPropertiesAdded,
                Kind::MinPropertiesRemoved,
                Kind::MinPropertiesIncreased,
                Kind::MinPropertiesDecreased,
            ],
        );
        Ok(())
    }

    /// `unevaluatedProperties` / `unevaluatedItems`: kinds are (added, removed, extended, narrowed).
    /// `additionalProperties` or `additionalItems`, each side given as
    /// (side, whether anything beyond the declared members is allowed, the
    /// schema such members must match): allowing them is `added`, forbidding
    /// them `removed`, dropping a schema for them `extended`, imposing one
    /// `narrowed`; two schemas are compared beneath the keyword.
    fn additional(
        &mut self,
        name: &'static str,
        [added, removed, extended, narrowed]: [Kind; 4],
        (old_side, old_permits, old_schema): (u8, bool, Option<NodeId>),
        (new_side, new_permits, new_schema): (u8, bool, Option<NodeId>),
        found: &mut Vec<RawChange<'a>>,
    ) -> Result<(), TooComplex> {
        if old_permits != new_permits {
            found.push(keyword(name, if new_permits { added } else { removed }));
            return Ok(());
        }
        match (old_schema, new_schema) {
            (None, Some(_)) => found.push(keyword(name, narrowed)),
            (Some(_), None) => found.push(keyword(name, extended)),
            (Some(was), Some(is)) => {
                let inner = self.compare(Some((old_side, was)), Some((new_side, is)))?;
                found.extend(under(inner, &[Step::Key(name)]));
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn unevaluated(
        &mut self,
        name: &'static str,
        [added, removed, extended, narrowed]: [Kind; 4],
        old: Option<NodeRef>,
        new: Option<NodeRef>,
        found: &mut Vec<RawChange<'a>>,
    ) -> Result<(), TooComplex> {
        let class = |node: Option<NodeRef>| node.map(|node| self.node(self.deref(node)));
        let kind = match (class(old), class(new)) {
            (None, None) => return Ok(()),
            (None, Some(Node::False)) => removed,
            (None, Some(_)) => narrowed,
            (Some(Node::False), None) => added,
            (Some(_), None) => extended,
            (Some(Node::False), Some(new)) if !matches!(new, Node::False) => added,
            (Some(old), Some(Node::False)) if !matches!(old, Node::False) => removed,
            (Some(Node::Empty), Some(new)) if !matches!(new, Node::Empty) => narrowed,
            (Some(old), Some(Node::Empty)) if !matches!(old, Node::Empty) => extended,
            _ => {
                let inner = self.compare(old, new)?;
                found.extend(under(inner, &[Step::Key(name)]));
                return Ok(());
            }
        };
        found.push(keyword(name, kind));
        Ok(())
    }

    fn arrays(
        &mut self,
        old_side: u8,
        old: &'a ArrayNode,
        new_side: u8,
        new: &'a ArrayNode,
        found: &mut Vec<RawChange<'a>>,
    ) -> Result<(), TooComplex> {
        let inner = self.compare(
            old.all_items.map(|node| (old_side, node)),
            new.all_items.map(|node| (new_side, node)),
        )?;
        found.extend(under(inner, &[Step::Key("items")]));
        let longest = old.item_schemas.len().max(new.item_schemas.len());
        for index in 0..longest {
            let steps = [Step::Key("items"), Step::Index(index)];
            let here = |kind| RawChange {
                kind,
                reversed_path: vec![Step::Index(index), Step::Key("items")],
            };
            match (old.item_schemas.get(index), new.item_schemas.get(index)) {
                (Some(&was), Some(&is)) => {
                    let inner = self.compare(Some((old_side, was)), Some((new_side, is)))?;
                    found.extend(under(inner, &steps));
                }
                (Some(&was), None) => {
                    if array_is_open(self, new_side, new) {
                        found.push(here(Kind::ItemRemovedFromOpenContentModel));
                    } else if let Some(partial) = array_partial(self, new_side, new) {
                        let inner = self.compare(Some((old_side, was)), Some((new_side, partial)))?;
                        let covered = self.compatible(&inner);
                        found.extend(under(inner, &steps));
                        found.push(here(if covered {
                            Kind::ItemRemovedIsCoveredByPartiallyOpenContentModel
                        } else {
                            Kind::ItemRemovedNotCoveredByPartiallyOpenContentModel
                        }));
                    } else if matches!(self.node(self.deref((old_side, was))), Node::False) {
                        found.push(here(Kind::ItemWithFalseRemovedFromClosedContentModel));
                    } else {
                        found.push(here(Kind::ItemRemovedFromClosedContentModel));
                    }
                }
                (None, Some(&is)) => {
                    if array_is_open(self, old_side, old) {
                        found.push(here(if matches!(self.node(self.deref((new_side, is))), Node::Empty) {
                            Kind::ItemWithEmptySchemaAddedToOpenContentModel
                        } else {
                            Kind::ItemAddedToOpenContentModel
                        }));
                    } else if let Some(partial) = array_partial(self, old_side, old) {
                        let inner = self.compare(Some((old_side, partial)), Some((new_side, is)))?;
                        let covered = self.compatible(&inner);
                        found.extend(under(inner, &steps));
                        found.push(here(if covered {
                            Kind::ItemAddedIsCoveredByPartiallyOpenContentModel
                        } else {
                            Kind::ItemAddedNotCoveredByPartiallyOpenContentModel
                        }));
                    } else {
                        found.push(here(Kind::ItemAddedToClosedContentModel));
                    }
                }
                (None, None) => {}
            }
        }
        self.additional(
            "additionalItems",
            [
                Kind::AdditionalItemsAdded,
                Kind::AdditionalItemsRemoved,
                Kind::AdditionalItemsExtended,
                Kind::AdditionalItemsNarrowed,
            ],
            (old_side, old.permits_additional, old.additional),
            (new_side, new.permits_additional, new.additional),
            found,
        )?;
        self.unevaluated(
            "unevaluatedItems",
            [
                Kind::UnevaluatedItemsAdded,
                Kind::UnevaluatedItemsRemoved,
                Kind::UnevaluatedItemsExtended,
                Kind::UnevaluatedItemsNarrowed,
            ],
            old.unevaluated.map(|node| (old_side, node)),
            new.unevaluated.map(|node| (new_side, node)),
            found,
        )?;
        bound(
            found,
            "maxItems",
            old.max_items,
            new.max_items,
            [
                Kind::MaxItemsAdded,
                Kind::MaxItemsRemoved,
                Kind::MaxItemsIncreased,
                Kind::MaxItemsDecreased,
            ],
        );
        bound(
            found,
            "minItems",
            old.min_items,
            new.min_items,
            [
                Kind::MinItemsAdded,
                Kind::MinItemsRemoved,
                Kind::MinItemsIncreased,
                Kind::MinItemsDecreased,
            ],
        );
        if old.unique_items != new.unique_items {
            found.push(keyword(
                "uniqueItems",
                if old.unique_items {
                    Kind::UniqueItemsRemoved
                } else {
                    Kind::UniqueItemsAdded
                },
            ));
        }
        bound(
            found,
            "maxContains",
            old.max_contains,
            new.max_contains,
            [
                Kind::MaxContainsAdded,
                Kind::MaxContainsRemoved,
                Kind::MaxContainsIncreased,
                Kind::MaxContainsDecreased,
            ],
        );
        bound(
            found,
            "minContains",
            old.min_contains,
            new.min_contains,
            [
                Kind::MinContainsAdded,
                Kind::MinContainsRemoved,
                Kind::MinContainsIncreased,
                Kind::MinContainsDecreased,
            ],
        );
        Ok(())
    }
}

fn keyword<'a>(name: &'a str, kind: Kind) -> RawChange<'a> {
    RawChange {
        kind,
        reversed_path: vec![Step::Key(name)],
    }
}

/// A bound that can be added, removed, raised or lowered: kinds are (added, removed, increased, decreased).
fn bound<'a, T: PartialOrd>(
    found: &mut Vec<RawChange<'a>>,
    name: &'static str,
    old: Option<T>,
    new: Option<T>,
    [added, removed, increased, decreased]: [Kind; 4],
) {
    let kind = match (old, new) {
        (None, None) => return,
        (None, Some(_)) => added,
        (Some(_), None) => removed,
        (Some(old), Some(new)) if old < new => increased,
        (Some(old), Some(new)) if old > new => decreased,
        _ => return,
    };
    found.push(keyword(name, kind));
}

fn strings<'a>(old: &StringNode, new: &StringNode, found: &mut Vec<RawChange<'a>>) {
    bound(
        found,
        "maxLength",
        old.max_length,
        new.max_length,
        [
            Kind::MaxLengthAdded,
            Kind::MaxLengthRemoved,
            Kind::MaxLengthIncreased,
            Kind::MaxLengthDecreased,
        ],
    );
    bound(
        found,
        "minLength",
        old.min_length,
        new.min_length,
        [
            Kind::MinLengthAdded,
            Kind::MinLengthRemoved,
            Kind::MinLengthIncreased,
            Kind::MinLengthDecreased,
        ],
    );
    match (&old.pattern, &new.pattern) {
        (None, Some(_)) => found.push(keyword("pattern", Kind::PatternAdded)),
        (Some(_), None) => found.push(keyword("pattern", Kind::PatternRemoved)),
        (Some(was), Some(is)) if was != is => found.push(keyword("pattern", Kind::PatternChanged)),
        _ => {}
    }
}

fn numbers<'a>(old: &NumberNode, new: &NumberNode, found: &mut Vec<RawChange<'a>>) {
    bound(
        found,
        "maximum",
        old.maximum,
        new.maximum,
        [
            Kind::MaximumAdded,
            Kind::MaximumRemoved,
            Kind::MaximumIncreased,
            Kind::MaximumDecreased,
        ],
    );
    bound(
        found,
        "minimum",
        old.minimum,
        new.minimum,
        [
            Kind::MinimumAdded,
            Kind::MinimumRemoved,
            Kind::MinimumIncreased,
            Kind::MinimumDecreased,
        ],
    );
    bound(
        found,
        "exclusiveMaximum",
        old.exclusive_maximum,
        new.exclusive_maximum,
        [
            Kind::ExclusiveMaximumAdded,
            Kind::ExclusiveMaximumRemoved,
            Kind::ExclusiveMaximumIncreased,
            Kind::ExclusiveMaximumDecreased,
        ],
    );
    bound(
        found,
        "exclusiveMinimum",
        old.exclusive_minimum,
        new.exclusive_minimum,
        [
            Kind::ExclusiveMinimumAdded,
            Kind::ExclusiveMinimumRemoved,
            Kind::ExclusiveMinimumIncreased,
            Kind::ExclusiveMinimumDecreased,
        ],
    );
    match (&old.multiple_of, &new.multiple_of) {
        (None, None) => {}
        (None, Some(_)) => found.push(keyword("multipleOf", Kind::MultipleOfAdded)),
        (Some(_), None) => found.push(keyword("multipleOf", Kind::MultipleOfRemoved)),
        (Some(was), Some(is)) if was == is => {}
        (Some(was), Some(is)) => {
            let kind = if is.is_multiple_of(was) {
                Kind::MultipleOfExpanded
            } else if was.is_multiple_of(is) {
                Kind::MultipleOfReduced
            } else {
                Kind::MultipleOfChanged
            };
            found.push(keyword("multipleOf", kind));
        }
    }
    if old.integer != new.integer {
        found.push(at(if old.integer {
            Kind::TypeExtended
        } else {
            Kind::TypeNarrowed
        }));
    }
}

/// Open: any property may appear with any value.
fn is_open(differ: &Differ<'_>, side: u8, object: &ObjectNode) -> bool {
    object.pattern_properties.is_empty()
        && object.additional.is_none()
        && object.permits_additional
        && object
            .unevaluated
            .is_none_or(|node| matches!(differ.node(differ.deref((side, node))), Node::Empty))
}

/// The schema a property of this name gets from a partially open model, if any.
fn partial_schema(differ: &Differ<'_>, side: u8, object: &ObjectNode, name: &str) -> Option<NodeId> {
    object
        .pattern_properties
        .iter()
        .find(|(pattern, _)| pattern.is_match(name))
        .map(|(_, node)| *node)
        .or(object.additional)
        .or_else(|| {
            if object.permits_additional {
                object
                    .unevaluated
                    .filter(|node| !matches!(differ.node(differ.deref((side, *node))), Node::False | Node::Empty))
            } else {
                None
            }
        })
}

fn array_is_open(differ: &Differ<'_>, side: u8, array: &ArrayNode) -> bool {
    if !array.permits_additional || array.additional.is_some() {
        return false;
    }
    match array.unevaluated {
        None => true,
        Some(node) => matches!(differ.node(differ.deref((side, node))), Node::Empty),
    }
}

fn array_partial(differ: &Differ<'_>, side: u8, array: &ArrayNode) -> Option<NodeId> {
    if array.additional.is_some() {
        return array.additional;
    }
    if !array.permits_additional {
        return None;
    }
    array
        .unevaluated
        .filter(|node| !matches!(differ.node(differ.deref((side, *node))), Node::False | Node::Empty))
}

/// A maximum matching in the bipartite graph `edges` (left index → right
/// indices), by augmenting paths, tried in order. Each step of the search
/// costs one step of the budget.
fn maximum_matching<T>(
    edges: &[Vec<(usize, T)>],
    right_size: usize,
    steps: &mut usize,
    budget: usize,
) -> Result<Vec<Option<usize>>, TooComplex> {
    let mut right_owner: Vec<Option<usize>> = vec![None; right_size];
    for left in 0..edges.len() {
        let mut visited = vec![false; right_size];
        augment(left, edges, &mut right_owner, &mut visited, steps, budget)?;
    }
    let mut matching = vec![None; edges.len()];
    for (right, owner) in right_owner.iter().enumerate() {
        if let Some(left) = owner {
            matching[*left] = Some(right);
        }
    }
    Ok(matching)
}

fn augment<T>(
    left: usize,
    edges: &[Vec<(usize, T)>],
    right_owner: &mut [Option<usize>],
    visited: &mut [bool],
    steps: &mut usize,
    budget: usize,
) -> Result<bool, TooComplex> {
    for (right, _) in &edges[left] {
        *steps += 1;
        if *steps > budget {
            return Err(TooComplex { too_deep: false });
        }
        if visited[*right] {
            continue;
        }
        visited[*right] = true;
        let free = match right_owner[*right] {
            None => true,
            Some(owner) => augment(owner, edges, right_owner, visited, steps, budget)?,
        };
        if free {
            right_owner[*right] = Some(left);
            return Ok(true);
        }
    }
    Ok(false)
}

/// Turns a walk's raw change into its kind and steps, outermost first.
pub(crate) fn steps_of<'a, 'b>(change: &'b RawChange<'a>) -> impl Iterator<Item = Step<'a>> + 'b {
    change.reversed_path.iter().rev().copied()
}

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

mod arrays;
mod matching;
mod objects;
mod scalars;

use matching::maximum_matching;
use scalars::{numbers, strings};

use super::model::{Criterion, Node, NodeId};
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

/// Turns a walk's raw change into its kind and steps, outermost first.
pub(crate) fn steps_of<'a, 'b>(change: &'b RawChange<'a>) -> impl Iterator<Item = Step<'a>> + 'b {
    change.reversed_path.iter().rev().copied()
}

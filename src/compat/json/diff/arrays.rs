//! Arrays compared: items, prefix items, additional and unevaluated items,
//! lengths, uniqueness and `contains`.

use super::{Differ, RawChange, Step, TooComplex, bound, keyword, under};
use crate::compat::json::Kind;
use crate::compat::json::model::{ArrayNode, Node, NodeId};

impl<'a> Differ<'a> {
    pub(super) fn arrays(
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

//! Objects compared: properties, patterns, additional and unevaluated
//! properties, required names, dependencies and counts.

use super::{Differ, NodeRef, RawChange, Step, TooComplex, bound, keyword, under};
use crate::compat::json::Kind;
use crate::compat::json::model::{Node, NodeId, ObjectNode};

impl<'a> Differ<'a> {
    pub(super) fn objects(
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
    pub(super) fn additional(
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

    pub(super) fn unevaluated(
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

//! A 128-bit digest per node of everything schema resolution reads below it
//! (kinds, names, aliases, field names and whether they have defaults,
//! symbols, sizes), so that the resolution of two versions skips a subtree
//! that did not change: a type always reads itself without a finding.
//!
//! The root has no digest: two versions of a schema differ at the root, and
//! its digest would cost as much as walking it once.
//!
//! Documentation and custom attributes take no part. A node that reaches a
//! record it is inside of (a recursive type) has no digest, nor has anything
//! that contains it: its digest could not cover what the recursion leads to.

use siphasher::sip128::{Hasher128 as _, SipHasher13};
use std::hash::{Hash as _, Hasher as _};
use std::sync::LazyLock;

use super::model::{Name, NodeId, Type, Types};
use super::parse::PRIMITIVES;
use crate::compat::stack::deep;

/// A 128-bit SipHash-1-3 of a node's structure.
pub(crate) type Digest = [u64; 2];

/// The digest of every node of `types` but `root`, where it has one.
pub(crate) fn digests(types: &Types, root: NodeId) -> Vec<Option<Digest>> {
    let mut walk = Walk {
        types,
        state: vec![State::Unseen; types.len()],
    };
    (0..types.len())
        .map(|id| {
            if id == root {
                return None;
            }
            walk.digest(id);
            match walk.state[id] {
                State::Done(digest) => digest,
                State::Unseen | State::InProgress => None,
            }
        })
        .collect()
}

#[derive(Clone, Copy)]
enum State {
    Unseen,
    InProgress,
    Done(Option<Digest>),
}

struct Walk<'t> {
    types: &'t Types,
    state: Vec<State>,
}

impl Walk<'_> {
    /// The node's digest, `None` when it reaches a record it is inside of.
    fn digest(&mut self, id: NodeId) -> Option<Digest> {
        match self.state[id] {
            State::Done(digest) => digest,
            State::InProgress => None,
            State::Unseen => {
                self.state[id] = State::InProgress;
                let digest = deep(|| self.compute(id));
                self.state[id] = State::Done(digest);
                digest
            }
        }
    }

    fn compute(&mut self, id: NodeId) -> Option<Digest> {
        let types = self.types;
        let mut hasher = SipHasher13::new();
        match types.ty(id) {
            Type::Primitive(primitive) => return Some(PRIMITIVE_DIGESTS[*primitive as usize]),
            Type::Array(items) => {
                hasher.write_u8(1);
                write_digest(&mut hasher, self.digest(*items)?);
            }
            Type::Map(values) => {
                hasher.write_u8(2);
                write_digest(&mut hasher, self.digest(*values)?);
            }
            Type::Union(branches) => {
                hasher.write_u8(3);
                hasher.write_usize(branches.len());
                for &branch in branches {
                    write_digest(&mut hasher, self.digest(branch)?);
                }
            }
            Type::Record(record) => {
                hasher.write_u8(4);
                write_name(&mut hasher, &record.name);
                hasher.write_usize(record.fields.len());
                for (position, field) in record.fields.iter().enumerate() {
                    record.field_name(position).hash(&mut hasher);
                    field.aliases().hash(&mut hasher);
                    hasher.write_u8(u8::from(field.default().is_some()));
                    write_digest(&mut hasher, self.digest(field.ty)?);
                }
            }
            Type::Enum(enumeration) => {
                hasher.write_u8(5);
                write_name(&mut hasher, &enumeration.name);
                enumeration.symbols.hash(&mut hasher);
                enumeration.default.hash(&mut hasher);
            }
            Type::Fixed(fixed) => {
                hasher.write_u8(6);
                write_name(&mut hasher, &fixed.name);
                hasher.write_u64(fixed.size);
            }
        }
        let hash = hasher.finish128();
        Some([hash.h1, hash.h2])
    }
}

/// The digests of the eight primitive types, which every schema has as
/// nodes: computed once per process, in the order of [`Primitive`]'s variants.
static PRIMITIVE_DIGESTS: LazyLock<[Digest; 8]> = LazyLock::new(|| {
    PRIMITIVES.map(|primitive| {
        let mut hasher = SipHasher13::new();
        hasher.write_u8(0);
        hasher.write_u8(primitive as u8);
        let hash = hasher.finish128();
        [hash.h1, hash.h2]
    })
});

fn write_digest(hasher: &mut SipHasher13, digest: Digest) {
    hasher.write_u64(digest[0]);
    hasher.write_u64(digest[1]);
}

fn write_name(hasher: &mut SipHasher13, name: &Name) {
    name.full.hash(hasher);
    name.aliases.hash(hasher);
}

#[cfg(test)]
mod tests {
    use crate::compat::SchemaText;
    use crate::compat::avro::AvroSchema;

    fn parse(text: &str) -> AvroSchema {
        AvroSchema::parse(&SchemaText::new(text)).expect("valid")
    }

    /// The root digests of two schemas are equal.
    fn same(a: &str, b: &str) -> bool {
        let (a, b) = (parse(&format!("[{a}]")), parse(&format!("[{b}]")));
        let branch = |schema: &AvroSchema| match schema.ty(schema.root) {
            crate::compat::avro::model::Type::Union(branches) => branches[0],
            _ => unreachable!("a union"),
        };
        a.same_as(branch(&a), &b, branch(&b))
    }

    #[test]
    fn the_primitive_digests_are_in_the_order_of_the_variants() {
        for (position, primitive) in super::PRIMITIVES.into_iter().enumerate() {
            assert_eq!(primitive as usize, position, "{primitive:?}");
        }
    }

    #[test]
    fn equal_structures_have_one_digest_whatever_their_docs_and_attributes() {
        let plain = r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"int"}}]}"#;
        let documented = r#"{"type":"record","name":"R","doc":"d","x":1,"fields":[{"name":"a","doc":"f","type":{"type":"array","items":"int"}}]}"#;
        assert!(same(plain, documented));
    }

    #[test]
    fn what_resolution_reads_changes_the_digest() {
        let base = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
        for changed in [
            r#"{"type":"record","name":"S","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","aliases":["Q"],"fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"b","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":0}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","aliases":["z"]}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#,
        ] {
            assert!(!same(base, changed), "{changed}");
        }
        let enumeration = r#"{"type":"enum","name":"E","symbols":["A","B"]}"#;
        assert!(!same(enumeration, r#"{"type":"enum","name":"E","symbols":["A","C"]}"#));
        assert!(!same(
            enumeration,
            r#"{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}"#
        ));
        assert!(!same(
            r#"{"type":"fixed","name":"F","size":1}"#,
            r#"{"type":"fixed","name":"F","size":2}"#
        ));
        let union = |branches: &str| format!(r#"{{"type":"array","items":{branches}}}"#);
        assert!(!same(&union(r#"["int","string"]"#), &union(r#"["string","int"]"#)));
    }

    #[test]
    fn a_recursive_type_and_what_contains_it_have_no_digest() {
        let text = r#"{"type":"record","name":"Outer","fields":[
            {"name":"list","type":{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}},
            {"name":"plain","type":{"type":"record","name":"Leaf","fields":[{"name":"n","type":"int"}]}}]}"#;
        let schema = parse(text);
        assert!(
            !schema.same_as(schema.root, &schema, schema.root),
            "the root contains a recursion"
        );
        let node = (0..schema.types.len())
            .find(|&id| schema.ty(id).name().is_some_and(|name| name.full == "Node"))
            .expect("Node");
        let leaf = (0..schema.types.len())
            .find(|&id| schema.ty(id).name().is_some_and(|name| name.full == "Leaf"))
            .expect("Leaf");
        assert!(!schema.same_as(node, &schema, node));
        assert!(schema.same_as(leaf, &schema, leaf));
    }
}

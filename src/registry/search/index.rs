//! [`SearchIndex`]: every indexed schema's elements, by lowercased name.
//!
//! Keyed by schema ID, not by subject version: the same schema under many
//! subjects is indexed once, and the caller turns IDs into the live versions
//! holding them at query time, so a deleted version drops out of answers
//! without touching the index. Like the registry's schemas, entries are never
//! removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::elements::{Element, ElementKind};
use super::{Query, Target};
use crate::compat::Format;
use crate::registry::SchemaId;

/// One element of one schema.
#[derive(Debug, Clone)]
pub struct Posting {
    /// The schema holding it.
    pub id: SchemaId,
    /// Its schema's format.
    pub format: Format,
    /// What it is.
    pub kind: ElementKind,
    /// Its name as written.
    pub name: Arc<str>,
    /// Where it is.
    pub path: Box<str>,
    /// Its type as written.
    pub type_name: Arc<str>,
}

/// The elements of every schema added, by lowercased name.
#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Sorted, so a query reads names in answer order and stops at its limit.
    by_name: BTreeMap<Box<str>, Vec<Posting>>,
    /// Shares the texts many postings repeat (`string`, `customer_id`).
    interned: FxHashMap<Box<str>, Arc<str>>,
    schemas: usize,
    postings: usize,
}

impl SearchIndex {
    /// Adds the elements of schema `id` (found by [`super::elements::elements`]).
    pub fn add(&mut self, id: SchemaId, format: Format, elements: Vec<Element>) {
        self.schemas += 1;
        for element in elements {
            let name = self.intern(&element.name);
            let type_name = self.intern(&element.type_name);
            let posting = Posting {
                id,
                format,
                kind: element.kind,
                name,
                path: element.path.into_boxed_str(),
                type_name,
            };
            let key = element.name.to_lowercase();
            match self.by_name.get_mut(key.as_str()) {
                // Kept in ID order; new schemas mostly come last.
                Some(postings) => {
                    let position = postings.partition_point(|held| held.id <= id);
                    postings.insert(position, posting);
                }
                None => {
                    self.by_name.insert(key.into_boxed_str(), vec![posting]);
                }
            }
            self.postings += 1;
        }
    }

    fn intern(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.interned.get(text) {
            return Arc::clone(shared);
        }
        let shared: Arc<str> = Arc::from(text);
        self.interned.insert(text.into(), Arc::clone(&shared));
        shared
    }

    /// The postings of a field or type query, in answer order: the name
    /// equal to the text first, then names containing it alphabetically;
    /// within a name, the newest schema (highest ID) first. Lazy: a caller
    /// that stops after its limit reads no more names or postings.
    ///
    /// A subject query has no postings here.
    pub fn matching<'a>(&'a self, query: &'a Query) -> impl Iterator<Item = &'a Posting> + 'a {
        let wanted = query.target();
        let searched = wanted != Target::Subject;
        let needle = query.needle();
        let exact = self.by_name.get(needle).filter(|_| searched);
        let containing = self
            .by_name
            .iter()
            .take_while(move |_| searched)
            .filter(move |(name, _)| &***name != needle && name.contains(needle))
            .map(|(_, postings)| postings);
        exact.into_iter().chain(containing).flat_map(move |postings| {
            postings
                .iter()
                .rev()
                .filter(move |posting| posting.kind.is_type() == (wanted == Target::Type))
        })
    }

    /// How many schemas and elements are indexed, and the distinct names.
    pub fn size(&self) -> IndexSize {
        IndexSize {
            schemas: self.schemas,
            postings: self.postings,
            names: self.by_name.len(),
        }
    }
}

/// The size of a [`SearchIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSize {
    /// Schemas added.
    pub schemas: usize,
    /// Elements indexed.
    pub postings: usize,
    /// Distinct lowercased names.
    pub names: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::search::elements::elements;

    fn id(number: i64) -> SchemaId {
        SchemaId::new(number).unwrap()
    }

    #[test]
    fn exact_names_come_first_then_longer_ones_and_newest_schemas_first() {
        let mut index = SearchIndex::default();
        let avro =
            |field: &str| format!(r#"{{"type":"record","name":"R","fields":[{{"name":"{field}","type":"long"}}]}}"#);
        index.add(id(1), Format::Avro, elements(Format::Avro, &avro("customer_id")));
        index.add(id(2), Format::Avro, elements(Format::Avro, &avro("a_customer_id")));
        index.add(id(3), Format::Avro, elements(Format::Avro, &avro("Customer_ID")));
        let query = Query::new("customer_id", Target::Field, None).unwrap();
        let found: Vec<(u32, &str)> = index
            .matching(&query)
            .map(|posting| (posting.id.get(), &*posting.name))
            .collect();
        assert_eq!(found, [(3, "Customer_ID"), (1, "customer_id"), (2, "a_customer_id")]);
        let types = Query::new("r", Target::Type, None).unwrap();
        assert_eq!(index.matching(&types).count(), 3, "one record R per schema");
        let subjects = Query::new("r", Target::Subject, None).unwrap();
        assert_eq!(index.matching(&subjects).count(), 0);
        assert_eq!(
            index.size(),
            IndexSize {
                schemas: 3,
                postings: 6,
                names: 3
            }
        );
    }
}

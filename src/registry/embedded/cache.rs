//! Parsed forms of stored schemas, kept so that a registration parses only
//! the candidate. Bounded by an estimate of their memory: when a new entry
//! would pass the budget, the cache starts over (stored versions never
//! change, so any entry can be rebuilt).

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap;

use crate::compat::ParsedSchema;
use crate::registry::SchemaId;

/// The default memory budget: 32 MiB.
const DEFAULT_BUDGET: usize = 32 * 1024 * 1024;

#[derive(Debug)]
pub(crate) struct ParsedCache {
    inner: Mutex<Inner>,
    budget: usize,
}

#[derive(Debug, Default)]
struct Inner {
    entries: FxHashMap<SchemaId, Arc<ParsedSchema>>,
    used: usize,
}

impl Default for ParsedCache {
    fn default() -> Self {
        Self {
            inner: Mutex::default(),
            budget: DEFAULT_BUDGET,
        }
    }
}

impl ParsedCache {
    pub(crate) fn get(&self, id: SchemaId) -> Option<Arc<ParsedSchema>> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .get(&id)
            .cloned()
    }

    /// Keeps `parsed`, whose text is `text_len` bytes long, costed as the
    /// check budget estimates its parse (a Protobuf schema keeps about 30
    /// times its text: a flat 8 let the cache hold several times its budget).
    pub(crate) fn insert(&self, id: SchemaId, parsed: Arc<ParsedSchema>, text_len: usize) {
        let cost = crate::compat::budget::parse_estimate(parsed.format(), text_len);
        if cost > self.budget {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.used + cost > self.budget {
            inner.entries.clear();
            inner.used = 0;
        }
        if inner.entries.insert(id, parsed).is_none() {
            inner.used += cost;
        }
    }
}

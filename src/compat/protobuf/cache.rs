//! The process-wide cache of compiled Protobuf schemas, so that each distinct
//! text (with its references) is compiled once per process, whoever asks:
//! the registry, `check` and the operator all parse through
//! [`ProtobufSchema::parse`](super::ProtobufSchema::parse).
//!
//! Keyed by a SHA-256 digest over the schema's text and each reference's name
//! and text, length-prefixed, in order: everything the compiler reads. Only
//! successful compiles are kept; a failing text is compiled again, so its
//! error is always the compiler's own.
//!
//! Bounded by an estimate of the memory the entries hold
//! ([`MAX_CACHED_BYTES`]). When an insertion goes over it, the least recently
//! used entries are dropped until it fits again: a subject's history is
//! checked as a whole and again on the next registration or reconcile, so
//! the versions of the subjects in use stay, and those of subjects nobody
//! touches go first. An entry over an eighth of the bound is not kept.

use std::sync::{Mutex, MutexGuard};

use prost::Message as _;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::ProtobufSchema;
use crate::compat::SchemaText;

/// The most memory (estimated) the cache holds: room for the full history
/// (50 versions) of a 2,000-field message, about 1.5 MiB each.
pub const MAX_CACHED_BYTES: usize = 128 << 20;

/// What the cache holds now and what it has answered; for benchmarks and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Schemas held.
    pub entries: usize,
    /// Their estimated memory, at most [`MAX_CACHED_BYTES`].
    pub bytes: usize,
    /// Parses answered from the cache since the process started.
    pub hits: u64,
    /// Parses that compiled (successfully or not) since the process started.
    pub misses: u64,
}

/// A digest of everything the compiler reads for one schema.
pub(crate) type Key = [u8; 32];

struct Entry {
    schema: ProtobufSchema,
    bytes: usize,
    /// The cache's clock at the last use: the smallest is evicted first.
    last_used: u64,
}

#[derive(Default)]
struct Cache {
    entries: FxHashMap<Key, Entry>,
    bytes: usize,
    clock: u64,
    hits: u64,
    misses: u64,
}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Cache>> {
    // A panic while holding the lock leaves the map consistent (every
    // mutation is one call), so a poisoned lock is still usable.
    CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key of `schema`: its text and each reference's name and text.
pub(crate) fn key(schema: &SchemaText) -> Key {
    let mut hasher = Sha256::new();
    let mut feed = |text: &str| {
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    };
    feed(&schema.text);
    for reference in &schema.references {
        feed(&reference.name);
        feed(&reference.text);
    }
    hasher.finalize().into()
}

/// The schema compiled earlier under `key`, if still held; counts a miss otherwise.
pub(crate) fn get(key: &Key) -> Option<ProtobufSchema> {
    lock().get_or_insert_with(Cache::default).lookup(key)
}

/// Keeps `schema` under `key`, evicting the least recently used entries to stay in bound.
pub(crate) fn put(key: Key, schema: &ProtobufSchema) {
    let bytes = estimated_bytes(schema);
    lock()
        .get_or_insert_with(Cache::default)
        .insert(key, schema, bytes, MAX_CACHED_BYTES);
}

impl Cache {
    fn lookup(&mut self, key: &Key) -> Option<ProtobufSchema> {
        self.clock += 1;
        let Some(entry) = self.entries.get_mut(key) else {
            self.misses += 1;
            return None;
        };
        entry.last_used = self.clock;
        self.hits += 1;
        Some(entry.schema.clone())
    }

    /// Adds an entry of `bytes`, unless it is over an eighth of `bound`,
    /// then drops the least recently used until the total is within `bound`.
    fn insert(&mut self, key: Key, schema: &ProtobufSchema, bytes: usize, bound: usize) {
        if bytes > bound / 8 {
            return;
        }
        self.clock += 1;
        let entry = Entry {
            schema: schema.clone(),
            bytes,
            last_used: self.clock,
        };
        if let Some(replaced) = self.entries.insert(key, entry) {
            self.bytes -= replaced.bytes;
        }
        self.bytes += bytes;
        while self.bytes > bound {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(key, _)| *key)
            else {
                break;
            };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.bytes -= evicted.bytes;
            }
        }
    }
}

/// What the cache holds now and what it has answered.
pub fn stats() -> CacheStats {
    let guard = lock();
    guard.as_ref().map_or_else(CacheStats::default, |cache| CacheStats {
        entries: cache.entries.len(),
        bytes: cache.bytes,
        hits: cache.hits,
        misses: cache.misses,
    })
}

/// Drops every entry (the counters stay), so the next parse of each text
/// compiles again: how benchmarks time a first sight.
pub fn clear() {
    if let Some(cache) = lock().as_mut() {
        cache.entries.clear();
        cache.bytes = 0;
    }
}

/// The memory one compiled schema holds, estimated from the size of its
/// compiled files: the descriptor pool and the model built from it each take
/// a few times the files' encoded size. The factor is a judgement, not yet
/// measured against an allocator's count (the bench prints RSS beside it).
fn estimated_bytes(schema: &ProtobufSchema) -> usize {
    let encoded: usize = schema
        .pool
        .files()
        .map(|file| file.file_descriptor_proto().encoded_len())
        .sum();
    encoded.saturating_mul(BYTES_PER_ENCODED_BYTE)
}

/// Memory held per byte of encoded descriptors; see [`estimated_bytes`].
const BYTES_PER_ENCODED_BYTE: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(message: &str) -> ProtobufSchema {
        ProtobufSchema::parse(&SchemaText::new(format!(
            "syntax = \"proto3\"; message {message} {{ int32 a = 1; }}"
        )))
        .expect("valid")
    }

    #[test]
    fn the_least_recently_used_entries_go_first_and_the_total_stays_in_bound() {
        let mut cache = Cache::default();
        let one = schema("A");
        // Eight entries of 100 fill a bound of 800 exactly.
        for key in 1..=8 {
            cache.insert([key; 32], &one, 100, 800);
        }
        assert!(cache.lookup(&[1; 32]).is_some());
        cache.insert([9; 32], &one, 100, 800);
        assert_eq!((cache.entries.len(), cache.bytes), (8, 800));
        assert!(cache.lookup(&[2; 32]).is_none(), "the second was used least recently");
        for kept in [1, 3, 4, 5, 6, 7, 8, 9] {
            assert!(cache.lookup(&[kept; 32]).is_some(), "{kept}");
        }
        assert_eq!((cache.hits, cache.misses), (9, 1));
    }

    #[test]
    fn an_entry_over_an_eighth_of_the_bound_is_not_kept() {
        let mut cache = Cache::default();
        cache.insert([1; 32], &schema("A"), 126, 1_000);
        assert_eq!(cache.entries.len(), 0);
        cache.insert([1; 32], &schema("A"), 125, 1_000);
        assert_eq!(cache.bytes, 125);
    }

    #[test]
    fn the_key_covers_every_reference_name_and_text() {
        let reference = |name: &str, text: &str| crate::compat::Reference {
            name: name.to_owned(),
            text: text.to_owned(),
        };
        let with = |references| SchemaText {
            text: "syntax = \"proto3\";".to_owned(),
            references,
        };
        let keys = [
            key(&with(vec![])),
            key(&with(vec![reference("a.proto", "x")])),
            key(&with(vec![reference("b.proto", "x")])),
            key(&with(vec![reference("a.proto", "y")])),
            key(&with(vec![reference("a.proto", ""), reference("x", "")])),
        ];
        for (index, one) in keys.iter().enumerate() {
            assert!(!keys[index + 1..].contains(one), "key {index} repeats");
        }
    }
}

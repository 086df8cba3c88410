//! A look at SQLite's WAL index without SQLite's locks, so a read can tell
//! that nothing was committed since the last catch-up for the price of one
//! `pread`, instead of a read transaction (two `fcntl` locks on the index)
//! behind a mutex that concurrent reads queue on.
//!
//! In WAL mode every connection of every process maps the index from the
//! `-shm` file beside the database. It opens with two copies of a 48-byte
//! header (SQLite's file-format notes, "The WAL-Index Header"): a counter
//! bumped by every committed transaction, the last valid frame of the log
//! and the log's salts, among others. A writer rewrites the header as part
//! of each commit, before the commit returns, second copy first; readers
//! read the first copy, then the second, and trust them only when they
//! match. So when both copies read alike and equal the header read just
//! before a catch-up that found nothing newer, no transaction can have
//! committed since, in any process.
//!
//! Every doubt answers "maybe", and the caller asks SQLite: no `-shm` file
//! (not WAL mode), a short read, copies that differ (a writer is rewriting
//! them), a header version other than the one this reads, an index not yet
//! built. The file keeps its inode while any connection has the database
//! open (SQLite truncates or deletes it only for the last one), and the
//! store's own connections stay open as long as the store.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// The length of one copy of the header.
const HEADER_LEN: usize = 48;

/// The only header version SQLite has written since WAL mode appeared
/// (3.7.0): its first field, in the machine's byte order.
const HEADER_VERSION: u32 = 3_007_000;

/// Where the header's "built" flag is: 1 once a connection built the index.
const IS_INIT_OFFSET: usize = 12;

/// One copy of the WAL-index header, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header([u8; HEADER_LEN]);

impl Header {
    /// The header the index's first 96 bytes hold, when both copies match
    /// and are of the version this reads.
    fn parse(both: &[u8; 2 * HEADER_LEN]) -> Option<Self> {
        let (first, second) = both.split_at(HEADER_LEN);
        let version = u32::from_ne_bytes(first[..4].try_into().ok()?);
        if first != second || version != HEADER_VERSION || first[IS_INIT_OFFSET] != 1 {
            return None;
        }
        Some(Self(first.try_into().ok()?))
    }
}

/// The header seen before a catch-up that left its caller with nothing
/// newer than `newest`.
#[derive(Debug, Clone, Copy)]
struct Quiet {
    header: Header,
    newest: u64,
}

/// The WAL index of one database, read without locks.
#[derive(Debug)]
pub(super) struct WalIndex {
    /// The `-shm` file; `None` when it could not be opened.
    file: Option<File>,
    quiet: Mutex<Option<Quiet>>,
}

impl WalIndex {
    /// The index beside the database at `database`, which a connection in
    /// WAL mode has open already (so the file exists). Without one, every
    /// question answers "maybe".
    pub(super) fn open(database: &Path) -> Self {
        let mut shm = database.as_os_str().to_owned();
        shm.push("-shm");
        Self {
            file: File::open(shm).ok(),
            quiet: Mutex::new(None),
        }
    }

    /// The header as it stands, or `None` when it cannot be trusted now.
    pub(super) fn header(&self) -> Option<Header> {
        let mut both = [0; 2 * HEADER_LEN];
        self.file.as_ref()?.read_exact_at(&mut both, 0).ok()?;
        Header::parse(&both)
    }

    /// Records that a catch-up which began after `header` was read left its
    /// caller with everything up to `newest`. Without a header, forgets.
    pub(super) fn record_quiet(&self, header: Option<Header>, newest: u64) {
        *self.quiet.lock().unwrap_or_else(PoisonError::into_inner) = header.map(|header| Quiet { header, newest });
    }

    /// Whether nothing can have been committed that a caller holding
    /// everything up to `revision` lacks: the header has not moved since a
    /// quiet catch-up, and the caller has what that catch-up found.
    pub(super) fn unchanged_since(&self, revision: u64) -> bool {
        let Some(now) = self.header() else {
            return false;
        };
        let quiet = *self.quiet.lock().unwrap_or_else(PoisonError::into_inner);
        quiet.is_some_and(|quiet| quiet.header == now && revision >= quiet.newest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_bytes(first: [u8; HEADER_LEN], second: [u8; HEADER_LEN]) -> [u8; 2 * HEADER_LEN] {
        let mut both = [0; 2 * HEADER_LEN];
        both[..HEADER_LEN].copy_from_slice(&first);
        both[HEADER_LEN..].copy_from_slice(&second);
        both
    }

    fn built_header(change_counter: u8) -> [u8; HEADER_LEN] {
        let mut header = [0; HEADER_LEN];
        header[..4].copy_from_slice(&HEADER_VERSION.to_ne_bytes());
        header[8] = change_counter;
        header[IS_INIT_OFFSET] = 1;
        header
    }

    #[test]
    fn a_header_is_trusted_only_when_both_copies_match_and_it_is_built_and_known() {
        let header = built_header(7);
        assert_eq!(Header::parse(&index_bytes(header, header)), Some(Header(header)));
        assert_eq!(
            Header::parse(&index_bytes(header, built_header(8))),
            None,
            "mid-rewrite"
        );
        let mut unbuilt = header;
        unbuilt[IS_INIT_OFFSET] = 0;
        assert_eq!(Header::parse(&index_bytes(unbuilt, unbuilt)), None, "not built");
        let mut other_version = header;
        other_version[0] ^= 1;
        assert_eq!(
            Header::parse(&index_bytes(other_version, other_version)),
            None,
            "unknown version"
        );
    }

    #[test]
    fn without_an_index_file_every_answer_is_maybe() {
        let folder = tempfile::tempdir().unwrap();
        let index = WalIndex::open(&folder.path().join("absent.db"));
        assert_eq!(index.header(), None);
        index.record_quiet(index.header(), 0);
        assert!(!index.unchanged_since(0));
    }

    #[test]
    fn a_commit_by_another_connection_moves_the_header_and_ends_the_quiet() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("db");
        let writer = rusqlite::Connection::open(&path).unwrap();
        writer.pragma_update(None, "journal_mode", "WAL").unwrap();
        writer.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let index = WalIndex::open(&path);
        let before = index.header().expect("a built index after a commit in WAL mode");
        index.record_quiet(Some(before), 5);
        assert!(index.unchanged_since(5));
        assert!(!index.unchanged_since(4), "a caller behind the catch-up must catch up");
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert_ne!(index.header(), Some(before));
        assert!(!index.unchanged_since(5), "a commit since the quiet catch-up");
        index.record_quiet(None, 5);
        assert!(!index.unchanged_since(5), "forgotten");
    }
}

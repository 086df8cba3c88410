//! Stack safety for the recursive walks over a schema, with the `stacker`
//! crate (as rustc does it), so that a walk is limited by the nesting limit
//! of its format, never by the stack of the thread it runs on: a tokio
//! worker's 2 MiB, or a CLI's 8 MiB main thread.
//!
//! - [`walk`] starts a walk that recurses about `levels` deep: on the
//!   current stack when it has room for all of it, else on one new stack
//!   segment on the heap that does (reserved, and used only as deep as the
//!   walk goes).
//! - [`deep`], called once per level inside a walk, is the safety net for a
//!   walk that goes deeper than its estimate (through named types that refer
//!   to each other): it moves the rest of the walk onto a new segment when
//!   the stack runs low. Each such move costs an `mmap` (about 13 µs), paid
//!   again for every node of the level where it happens, which is why a walk
//!   reserves its whole stack up front when it can.

/// The stack that must be left for one level of a walk, and for what may run
/// between two calls of [`deep`] without one: dropping a subtree that a walk
/// gives up on (a parse error leaves the rest of the document), which is
/// compiler-generated recursion as deep as the subtree. Dropping a document
/// of [`crate::compat::avro::MAX_NESTING`] nested objects takes about 700 KiB
/// in a debug build (measured), far less in a release build.
const RED_ZONE: usize = 1024 * 1024;

/// The size of each new segment [`deep`] moves to.
const SEGMENT: usize = 8 * 1024 * 1024;

/// A bound on the stack one level of any walk takes: each costs about 6 KiB
/// in a debug build (a walk to the Avro nesting limit needs 5–6 MiB there,
/// measured), a fraction of that in a release build.
const PER_LEVEL: usize = 8 * 1024;

/// The most [`walk`] reserves; a walk estimated deeper relies on [`deep`]
/// past this.
const MOST_RESERVED: usize = 64 * 1024 * 1024;

/// Runs `work`, on a new stack segment when less than [`RED_ZONE`] is left.
#[inline]
pub(crate) fn deep<R>(work: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, work)
}

/// Runs `work`, a walk that recurses about `levels` deep, where the stack
/// has room for all of it (see the module docs).
pub(crate) fn walk<R>(levels: usize, work: impl FnOnce() -> R) -> R {
    let needed = levels
        .saturating_mul(PER_LEVEL)
        .saturating_add(RED_ZONE)
        .min(MOST_RESERVED);
    stacker::maybe_grow(needed, needed, work)
}

//! Stack safety for the recursive walks over a schema: each walk calls
//! [`deep`] once per level, which moves the rest of the walk onto a fresh
//! stack segment on the heap (the `stacker` crate, as rustc does) when the
//! thread's stack is nearly used up. A walk is then limited by the nesting
//! limit of its format, never by the stack of the thread it runs on: a
//! tokio worker's 2 MiB, or a CLI's 8 MiB main thread.

/// The stack that must be left for one level of a walk, and for what may run
/// between two calls of [`deep`] without one: dropping a subtree that a walk
/// gives up on (a parse error leaves the rest of the document), which is
/// compiler-generated recursion as deep as the subtree. Dropping a document
/// of [`crate::compat::avro::MAX_NESTING`] nested objects takes about 700 KiB
/// in a debug build (measured), far less in a release build.
const RED_ZONE: usize = 1024 * 1024;

/// The size of each new stack segment: enough for a whole walk to the
/// nesting limit, so that a deep schema moves to the heap once.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `work`, on a new stack segment when less than [`RED_ZONE`] is left.
#[inline]
pub(crate) fn deep<R>(work: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, work)
}

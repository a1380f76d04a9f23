//! The write side: what runs on the threads that record.
//!
//! Cost model. With no recorder installed, or for a kind that is filtered out, a write is one
//! relaxed load of a per-kind flag and a branch. Otherwise it is a thread-local lookup, a clock
//! read (unless the caller supplies the timestamp), the record's stores into the thread's own
//! ring and one Release store of the ring head. A thread's first write claims a slot and takes
//! a ring (a spare made ahead of need, or a new one); after that nothing allocates, locks or
//! makes a system call. A full ring drops the record and counts it.
//!
//! - [`clock`]: the TSC clock and its calibration against CLOCK_MONOTONIC;
//! - [`ring`]: the lock-free single-producer/single-consumer ring of one thread slot;
//! - [`slots`]: the 255 user slots, claimed by threads and retired at thread exit;
//! - `writer`: the thread-local claim on a slot;
//! - `api`, `span_api` and `spans`: the free functions, the span functions and the span
//!   guards under them; `named`: the instants and
//!   phases that carry their names; `names`: the slots' static names, written once per slot
//!   (SPEC §15), and `strings` their interned value strings; `celog`: the CeLog event builder;
//!   `locks`: the mutex whose contended waits are spans; `alloc`: the allocator whose totals
//!   are counters.

pub mod alloc;
pub(crate) mod alloc_state;
pub(crate) mod api;
pub(crate) mod celog;
pub mod clock;
pub(crate) mod counters;
pub(crate) mod gate;
pub(crate) mod locks;
pub(crate) mod named;
pub(crate) mod names;
pub mod ring;
pub mod slots;
pub(crate) mod span_api;
pub(crate) mod spans;
pub mod stack;
pub(crate) mod strings;
pub mod tracing;
pub(crate) mod writer;

use crate::codec;
use core::fmt;
pub use stack::{SPAN_DEPTH, SPAN_NAME_BYTES};

/// Why a write with variable-size input was not recorded. (Fixed-size writes cannot fail; a
/// full ring is not an error but a counted drop.)
///
/// ```
/// use typhon_recorder::WriteError;
/// assert!(WriteError::TooLarge { size: 5000, max: 4072 }.to_string().contains("5000"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// The record is larger than `max`: what one page holds (page size − 24), and never more
    /// than 65534 bytes, the most a record's u16 size field can say.
    TooLarge {
        /// The record's size.
        size: usize,
        /// The largest record allowed: `min(page size − 24, 65534)`.
        max: usize,
    },
    /// The input is malformed (e.g. a NUL inside a span name, a CeLog id out of range).
    Invalid(String),
    /// [`span_end`](crate::span_end) was given a span that is not the thread's innermost open one.
    SpanMismatch {
        /// The span the caller tried to end.
        span_id: u64,
        /// The thread's innermost open span (0 = none).
        innermost: u64,
    },
    /// A span begun while the thread already has [`SPAN_DEPTH`] spans open, or whose name
    /// does not fit beside the open ones' (their names, each rounded up to 8 bytes, hold at
    /// most [`SPAN_NAME_BYTES`]): the recorder's room for open spans is fixed when the thread
    /// claims its slot, so that no span allocates. Nothing is opened; counted as refused.
    SpanStackFull {
        /// Spans the thread had open.
        open: usize,
        /// Bytes of names the open spans and this one would need.
        name_bytes: usize,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::TooLarge { size, max } if *max >= codec::CommonHeader::MAX_RECORD => {
                write!(
                    f,
                    "record of {size} bytes exceeds the {max}-byte maximum of a record"
                )
            }
            WriteError::TooLarge { size, max } => write!(
                f,
                "record of {size} bytes does not fit in a page (max {max}); use a larger page size"
            ),
            WriteError::Invalid(s) => write!(f, "invalid record: {s}"),
            WriteError::SpanStackFull { open, name_bytes } => write!(
                f,
                "span not opened: {open} spans open with {name_bytes} bytes of names; a thread \
                 holds at most {SPAN_DEPTH} open spans and {SPAN_NAME_BYTES} bytes of their names"
            ),
            WriteError::SpanMismatch { span_id, innermost } => write!(
                f,
                "span {span_id:#x} is not the innermost open span ({innermost:#x})"
            ),
        }
    }
}

impl std::error::Error for WriteError {}

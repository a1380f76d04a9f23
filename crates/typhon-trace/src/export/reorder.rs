//! The watermark: final events wait here for a short window of stream time and leave in time
//! order, so that what comes after (the flows, the writers) sees them sorted without the
//! export holding the recording.
//!
//! Records arrive in page-time order, and an event's own time is at or before its record's
//! page time: a span arrives at its end, holding its start; a caller may stamp an instant
//! earlier than the slot's page time. Once the stream has passed `ts + HOLD`, every event of
//! time `ts` whose record ended within the window has arrived, and the events before it can
//! leave. What the window does not cover (a span longer than [`HOLD`], a caller timestamp
//! further back) arrives after later events have left: it leaves at once and is counted as
//! `late`; nothing is lost, only its place in the file's order. The window is also bounded in
//! events ([`CAP`]): at a higher rate the oldest leave early, so memory stays flat whatever
//! the file's size.

use super::engine::Held;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Stream time an event waits for the ones before it: a few frames of a game loop, and far
/// longer than a command's processing.
pub(super) const HOLD: u64 = 50_000_000;

/// Events held at most.
pub(super) const CAP: usize = 1 << 16;

/// One waiting event, ordered by (time, arrival): at one time, arrivals keep their order,
/// which keeps a track's slices nested (see `lanes`).
struct Entry {
    ts: u64,
    n: u64,
    held: Held,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.n) == (o.ts, o.n)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.ts, self.n).cmp(&(o.ts, o.n))
    }
}

/// The waiting events.
#[derive(Default)]
pub(super) struct Reorder {
    heap: BinaryHeap<Reverse<Entry>>,
    arrivals: u64,
    /// The latest time handed out.
    frontier: u64,
    /// Events that arrived after a later one had left.
    pub(super) late: u64,
}

impl Reorder {
    /// Holds `h` until its time has passed.
    pub(super) fn push(&mut self, h: Held) {
        if h.ts < self.frontier {
            self.late += 1;
        }
        self.arrivals += 1;
        self.heap.push(Reverse(Entry {
            ts: h.ts,
            n: self.arrivals,
            held: h,
        }));
    }

    /// The earliest event, if the stream (now at `now`) has passed its window or too many
    /// are held; with `now == u64::MAX`, every event in turn.
    pub(super) fn pop(&mut self, now: u64) -> Option<Held> {
        let top = self.heap.peek()?;
        if top.0.ts.saturating_add(HOLD) > now && self.heap.len() <= CAP && now != u64::MAX {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.frontier = self.frontier.max(e.ts);
        Some(e.held)
    }
}

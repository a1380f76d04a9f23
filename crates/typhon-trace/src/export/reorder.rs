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
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Stream time an event waits for the ones before it: a few frames of a game loop, and far
/// longer than a command's processing.
pub(super) const HOLD: u64 = 50_000_000;

/// Events held at most.
pub(super) const CAP: usize = 1 << 14;

/// A waiting event's key: (time, arrival, slot in `Reorder::slots`). At one time, arrivals
/// keep their order, which keeps a track's slices nested (see `lanes`).
type Key = (u64, u64, u32);

/// The waiting events. Most arrive in time order (instants, slice ends); those go to the back
/// of `run` in O(1), and only the others (a slice's start, arriving at its end) into the heap.
/// The keys are small and the events stay put in `slots`: moving whole events through one
/// heap cost a third of the export's time.
#[derive(Default)]
pub(super) struct Reorder {
    run: VecDeque<Key>,
    heap: BinaryHeap<Reverse<Key>>,
    slots: Vec<Option<Held>>,
    free: Vec<u32>,
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
        let ts = h.ts;
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(h);
                i
            }
            None => {
                self.slots.push(Some(h));
                (self.slots.len() - 1) as u32
            }
        };
        let key = (ts, self.arrivals, slot);
        if self.run.back().is_none_or(|b| ts >= b.0) {
            self.run.push_back(key);
        } else {
            self.heap.push(Reverse(key));
        }
    }

    /// The earliest event, if the stream (now at `now`) has passed its window or too many
    /// are held; with `now == u64::MAX`, every event in turn.
    pub(super) fn pop(&mut self, now: u64) -> Option<Held> {
        let from_run = match (self.run.front(), self.heap.peek()) {
            (Some(r), Some(Reverse(h))) => r < h,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let ts = if from_run {
            self.run.front()?.0
        } else {
            self.heap.peek()?.0 .0
        };
        let held = self.run.len() + self.heap.len();
        if ts.saturating_add(HOLD) > now && held <= CAP && now != u64::MAX {
            return None;
        }
        let (ts, _, slot) = if from_run {
            self.run.pop_front()?
        } else {
            self.heap.pop()?.0
        };
        self.frontier = self.frontier.max(ts);
        self.free.push(slot);
        self.slots.get_mut(slot as usize)?.take()
    }
}

#[cfg(test)]
mod tests {
    use super::super::engine::Kind;
    use super::*;

    fn held(ts: u64, track: u32) -> Held {
        Held {
            ts,
            end: ts,
            track,
            kind: Kind::Instant,
            rec: None,
        }
    }

    /// Events leave in (time, arrival) order, the order a stable sort by time gives, whether
    /// they come in order or not; those past the window when they arrive are counted late.
    #[test]
    fn events_leave_in_stable_time_order() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut arrivals = Vec::new();
        let mut r = Reorder::default();
        let mut out = Vec::new();
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let now = u64::from(i) * 10_000;
            // Mostly in order, one in 8 back by up to 20 ms, a few far back.
            let back = match x % 64 {
                0 => 400_000_000,
                1..=7 => (x >> 8) % 20_000_000,
                _ => 0,
            };
            let ts = now.saturating_sub(back);
            arrivals.push(ts);
            r.push(held(ts, i));
            while let Some(h) = r.pop(now) {
                out.push((h.ts, h.track));
            }
        }
        while let Some(h) = r.pop(u64::MAX) {
            out.push((h.ts, h.track));
        }
        assert_eq!(out.len(), arrivals.len());
        // Apart from the late ones, the output is the stable sort of the input.
        let late: std::collections::HashSet<u32> = {
            let mut f = 0;
            let mut l = std::collections::HashSet::new();
            for &(ts, k) in &out {
                if ts < f {
                    l.insert(k);
                }
                f = f.max(ts);
            }
            l
        };
        assert!(late.len() as u64 <= r.late && r.late > 0);
        let mut want: Vec<(u64, u32)> = arrivals
            .iter()
            .enumerate()
            .map(|(k, &ts)| (ts, k as u32))
            .filter(|e| !late.contains(&e.1))
            .collect();
        want.sort_by_key(|e| e.0);
        let got: Vec<(u64, u32)> = out.into_iter().filter(|e| !late.contains(&e.1)).collect();
        assert_eq!(got, want);
    }

    /// At most CAP events wait, whatever the times.
    #[test]
    fn the_window_is_bounded_in_events() {
        let mut r = Reorder::default();
        let mut left = 0;
        for i in 0..(3 * CAP as u64) {
            r.push(held(i, 0));
            while r.pop(0).is_some() {
                left += 1;
            }
            assert!(r.run.len() + r.heap.len() <= CAP);
        }
        assert_eq!(left, 2 * CAP);
    }
}

//! The overlap-lane layout: a thread's slices go to lanes so that every track nests properly
//! (viewers draw a track's slices as a stack, which a slice overlapping another without
//! nesting would break), lane 0 being the thread's own track and each further lane an
//! "overlap" track under it.

use super::timeline::{Event, Phase, Timeline, Track};

/// A slice before lane assignment.
pub(super) struct Slice<'a> {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) rec: &'a [u8],
}

impl<'a> Timeline<'a> {
    /// Assigns `slices` of thread `th` to lanes and appends their Begin and End events.
    ///
    /// First fit: a slice goes to the lowest lane where it nests inside the innermost slice
    /// still open at its start (or that has none open), else to a new lane. Done in
    /// O(n log n) whatever the slices: a heap of the open slices' ends closes what ended
    /// (the smallest open end is always the innermost of its lane), and a max-tree over the
    /// lanes' innermost ends finds the first lane that takes the slice, where scanning every
    /// lane cost O(n²) for spans that overlap without nesting (one lane each).
    pub(super) fn lay_out(&mut self, th: usize, mut slices: Vec<Slice<'a>>) {
        use std::cmp::Reverse;
        // Outer slices first: start ascending, end descending (stable for equal ones).
        slices.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        // Per lane: its track index and its open slices' ends (innermost last).
        let mut lanes: Vec<(u32, Vec<u64>)> = vec![(th as u32, Vec::new())];
        let mut ending: std::collections::BinaryHeap<Reverse<(u64, usize)>> =
            std::collections::BinaryHeap::new();
        // Lanes never outnumber the slices (plus lane 0).
        let mut tops = MaxTree::new(slices.len() + 1);
        tops.set(0, u64::MAX);
        for s in slices {
            // Close what ended by the time this one starts.
            while let Some(&Reverse((end, lane))) = ending.peek() {
                if end > s.start {
                    break;
                }
                ending.pop();
                let (track, open) = &mut lanes[lane];
                open.pop();
                self.events.push(end_event(end, *track));
                tops.set(lane, open.last().copied().unwrap_or(u64::MAX));
            }
            // The first lane whose innermost open slice ends at or after this one's end.
            let lane = match tops.first_at_least(s.end) {
                Some(l) if l < lanes.len() => l,
                _ => {
                    let track = self.tracks.len() as u32;
                    self.tracks.push(Track {
                        thread: th,
                        lane: lanes.len() as u32,
                    });
                    lanes.push((track, Vec::new()));
                    lanes.len() - 1
                }
            };
            let (track, open) = &mut lanes[lane];
            open.push(s.end);
            ending.push(Reverse((s.end, lane)));
            tops.set(lane, s.end);
            self.events.push(Event {
                ts: s.start,
                track: *track,
                phase: Phase::Begin,
                rec: Some(s.rec),
                flow: 0,
            });
        }
        for (track, open) in lanes {
            for &end in open.iter().rev() {
                self.events.push(end_event(end, track));
            }
        }
    }
}

/// A max segment tree over lanes: set a lane's value, find the first lane whose value is at
/// least a bound, both in O(log n).
struct MaxTree {
    size: usize,
    t: Vec<u64>,
}

impl MaxTree {
    fn new(n: usize) -> Self {
        let size = n.next_power_of_two();
        Self {
            size,
            t: vec![0; 2 * size],
        }
    }
    fn set(&mut self, i: usize, v: u64) {
        let mut i = i + self.size;
        self.t[i] = v;
        while i > 1 {
            i /= 2;
            self.t[i] = self.t[2 * i].max(self.t[2 * i + 1]);
        }
    }
    fn first_at_least(&self, x: u64) -> Option<usize> {
        if self.t[1] < x {
            return None;
        }
        let mut i = 1;
        while i < self.size {
            i = if self.t[2 * i] >= x { 2 * i } else { 2 * i + 1 };
        }
        Some(i - self.size)
    }
}

/// The End of the innermost open slice of `track`, at `ts`.
fn end_event<'a>(ts: u64, track: u32) -> Event<'a> {
    Event {
        ts,
        track,
        phase: Phase::End,
        rec: None,
        flow: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::Thread;

    /// Lays out `spans` on one thread and returns (track, phase, ts) in event order.
    fn lay(spans: &[(u64, u64)]) -> (Timeline<'static>, Vec<(u32, Phase, u64)>) {
        static REC: [u8; 12] = [12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut t = Timeline {
            threads: vec![Thread {
                slot: 1,
                tid: 1,
                name: "t".into(),
            }],
            tracks: vec![Track { thread: 0, lane: 0 }],
            ..Timeline::default()
        };
        let slices = spans
            .iter()
            .map(|&(start, end)| Slice {
                start,
                end,
                rec: &REC,
            })
            .collect();
        t.lay_out(0, slices);
        t.events.sort_by_key(|e| e.ts);
        let v = t.events.iter().map(|e| (e.track, e.phase, e.ts)).collect();
        (t, v)
    }

    use Phase::{Begin as B, End as E};

    #[test]
    fn nested_and_adjacent_slices_share_the_thread_track() {
        let (t, v) = lay(&[(2, 5), (0, 10), (5, 8), (5, 5)]);
        assert_eq!(t.tracks.len(), 1);
        assert_eq!(
            v,
            [
                (0, B, 0),
                (0, B, 2),
                (0, E, 5),
                (0, B, 5),
                (0, B, 5),
                (0, E, 5),
                (0, E, 8),
                (0, E, 10)
            ]
        );
    }

    #[test]
    fn a_slice_that_overlaps_without_nesting_moves_to_an_overlap_lane() {
        let (t, v) = lay(&[(0, 10), (5, 15), (6, 7), (12, 20)]);
        // (5, 15) overlaps (0, 10): lane 1; (6, 7) nests in (0, 10); (12, 20) overlaps
        // (5, 15) but lane 0 is free again by then.
        assert_eq!(
            t.tracks,
            [Track { thread: 0, lane: 0 }, Track { thread: 0, lane: 1 }]
        );
        assert_eq!(
            v,
            [
                (0, B, 0),
                (1, B, 5),
                (0, B, 6),
                (0, E, 7),
                (0, E, 10),
                (0, B, 12),
                (1, E, 15),
                (0, E, 20)
            ]
        );
        assert_eq!(t.track_name(1), "t (overlap 1)");
    }

    #[test]
    fn every_track_nests_whatever_the_input() {
        // Pseudo-random intervals: on every track, each End closes the innermost open slice
        // at or before its time, and every slice is closed.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut spans = Vec::new();
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let start = x % 10_000;
            spans.push((start, start + (x >> 32) % 500));
        }
        let (t, v) = lay(&spans);
        // ... and the pairs are exactly the input intervals.
        let mut open: Vec<Vec<u64>> = vec![Vec::new(); t.tracks.len()];
        let mut pairs = Vec::new();
        for &(track, phase, ts) in &v {
            let o = &mut open[track as usize];
            match phase {
                B => o.push(ts),
                E => {
                    let start = o.pop().expect("an End closes an open slice");
                    assert!(start <= ts);
                    pairs.push((start, ts));
                }
                _ => unreachable!(),
            }
        }
        assert!(open.iter().all(Vec::is_empty));
        pairs.sort_unstable();
        spans.sort_unstable();
        assert_eq!(pairs, spans);
        assert!(t.tracks.len() > 1);
    }
}

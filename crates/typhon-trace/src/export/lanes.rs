//! The overlap-lane layout, online: a thread's slices go to lanes as they arrive, so that
//! every track nests properly (viewers draw a track's slices as a stack, which a slice
//! overlapping another without nesting would break), lane 0 being the thread's own track and
//! each further lane an "overlap" track under it.
//!
//! A recording's span records arrive at their end (a span is written when it closes), so a
//! slice arrives after the slices nested in it. A lane keeps only its *roots*: the outermost
//! slices placed on it, disjoint and in time order. A slice `[a, b]` that ends at or after
//! every root takes the roots starting at or after `a` as its children and fits if no root
//! straddles `a`; a slice that ends before a root fits only after all of them. The roots kept
//! per lane are capped ([`ROOTS`]): beyond it the oldest two merge into one, which can only
//! refuse a slice (it then takes another lane), never let one in that would not nest. So a
//! lane's state is bounded, and memory is O(lanes), not O(slices).
//!
//! One more rule keeps a track nested for readers that sort by time and keep the file's order
//! at equal times (trace_processor): a slice may not take as a child an earlier-written slice
//! that starts at the same time and is not empty (the child's Begin would sort before the
//! parent's).

use std::collections::VecDeque;

/// Roots kept exactly per lane.
pub(super) const ROOTS: usize = 64;

/// Lanes checked exactly before the index of free lanes is used.
const EXACT: usize = 4;

/// One lane: its track and its roots `(start, end)` in time order.
struct Lane {
    track: u32,
    roots: VecDeque<(u64, u64)>,
}

impl Lane {
    fn max_end(&self) -> u64 {
        self.roots.back().map_or(0, |r| r.1)
    }

    /// Whether `[a, b]` nests with everything on the lane.
    fn fits(&self, a: u64, b: u64) -> bool {
        let m = self.max_end();
        if self.roots.is_empty() || a >= m {
            return true;
        }
        if b < m {
            return false;
        }
        let i = self.roots.partition_point(|r| r.0 < a);
        if let Some(&(s, e)) = self.roots.get(i) {
            if s == a && e > a {
                return false;
            }
        }
        i == 0 || self.roots[i - 1].1 <= a
    }

    fn place(&mut self, a: u64, b: u64) {
        while self.roots.back().is_some_and(|r| r.0 >= a) {
            self.roots.pop_back();
        }
        self.roots.push_back((a, b));
        if self.roots.len() > ROOTS {
            let (s, _) = self.roots.pop_front().unwrap_or_default();
            if let Some(f) = self.roots.front_mut() {
                f.0 = s;
            }
        }
    }
}

/// A thread's lanes, with a min-tree over their latest ends to find a free lane in O(log n).
#[derive(Default)]
pub(super) struct Lanes {
    lanes: Vec<Lane>,
    tree: MinTree,
}

impl Lanes {
    /// The lane for `[a, b]` (`a <= b`): an index into the thread's lanes, and whether it is
    /// new (`new_track` then gives its track).
    pub(super) fn place(&mut self, a: u64, b: u64, new_track: impl FnOnce(u32) -> u32) -> u32 {
        let exact = self
            .lanes
            .iter()
            .take(EXACT)
            .position(|l| l.fits(a, b))
            .or_else(|| self.tree.first_at_most(a).filter(|&l| l < self.lanes.len()));
        let i = match exact {
            Some(i) => i,
            None => {
                let lane = self.lanes.len() as u32;
                self.lanes.push(Lane {
                    track: new_track(lane),
                    roots: VecDeque::new(),
                });
                self.lanes.len() - 1
            }
        };
        let l = &mut self.lanes[i];
        l.place(a, b);
        self.tree.set(i, l.max_end());
        l.track
    }

    /// The tracks of the lanes, lane 0 first.
    pub(super) fn tracks(&self) -> impl Iterator<Item = u32> + '_ {
        self.lanes.iter().map(|l| l.track)
    }
}

/// A min segment tree over lanes that grows: set a lane's value, find the first lane whose
/// value is at most a bound, both in O(log n).
#[derive(Default)]
struct MinTree {
    size: usize,
    t: Vec<u64>,
}

impl MinTree {
    fn set(&mut self, i: usize, v: u64) {
        if i >= self.size {
            let old: Vec<u64> = if self.size == 0 {
                Vec::new()
            } else {
                self.t[self.size..].to_vec()
            };
            self.size = (i + 1).next_power_of_two().max(4);
            self.t = vec![u64::MAX; 2 * self.size];
            for (k, &x) in old.iter().enumerate() {
                self.put(k, x);
            }
        }
        self.put(i, v);
    }
    fn put(&mut self, i: usize, v: u64) {
        let mut i = i + self.size;
        self.t[i] = v;
        while i > 1 {
            i /= 2;
            self.t[i] = self.t[2 * i].min(self.t[2 * i + 1]);
        }
    }
    fn first_at_most(&self, x: u64) -> Option<usize> {
        if self.size == 0 || self.t[1] > x {
            return None;
        }
        let mut i = 1;
        while i < self.size {
            i = if self.t[2 * i] <= x { 2 * i } else { 2 * i + 1 };
        }
        Some(i - self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places `spans` in order; returns each one's lane.
    fn lay(spans: &[(u64, u64)]) -> Vec<u32> {
        let mut l = Lanes::default();
        spans.iter().map(|&(a, b)| l.place(a, b, |k| k)).collect()
    }

    #[test]
    fn nested_slices_arriving_at_their_end_share_the_thread_track() {
        // Children first, then their parent; then a sibling after.
        assert_eq!(lay(&[(2, 5), (5, 5), (5, 8), (0, 10), (10, 12)]), [0; 5]);
    }

    #[test]
    fn a_slice_that_overlaps_without_nesting_moves_to_an_overlap_lane() {
        // (5, 15) straddles the end of (0, 10); (12, 20) fits lane 0 again.
        assert_eq!(lay(&[(0, 10), (5, 15), (12, 20)]), [0, 1, 0]);
        // A parent starting with its (non-empty) child goes elsewhere, an empty one stays.
        assert_eq!(lay(&[(0, 3), (0, 5)]), [0, 1]);
        assert_eq!(lay(&[(0, 0), (0, 5)]), [0, 0]);
    }

    /// Every lane nests when its slices are sorted by time as a reader does (stable: at equal
    /// times, in placement order, Begin before End of one slice).
    #[test]
    fn every_lane_nests_whatever_the_input_and_order() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut spans = Vec::new();
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let start = x % 10_000;
            spans.push((start, start + (x >> 32) % 500));
        }
        // Arbitrary order, and end order (as a recording arrives).
        let mut by_end = spans.clone();
        by_end.sort_by_key(|s| s.1);
        for order in [spans, by_end] {
            let lanes = lay(&order);
            let mut ev: Vec<(u64, usize, u32, bool)> = Vec::new();
            for (k, (&(a, b), &l)) in order.iter().zip(&lanes).enumerate() {
                ev.push((a, 2 * k, l, true));
                ev.push((b, 2 * k + 1, l, false));
            }
            ev.sort_by_key(|e| (e.0, e.1));
            let mut open: std::collections::HashMap<u32, Vec<u64>> = Default::default();
            let mut pairs = Vec::new();
            for (ts, k, l, begin) in ev {
                let o = open.entry(l).or_default();
                if begin {
                    o.push(k as u64);
                } else {
                    let b = o.pop().expect("an End closes an open slice");
                    assert_eq!(b as usize + 1, k, "an End closes its own slice at {ts}");
                    pairs.push(k);
                }
            }
            assert_eq!(pairs.len(), order.len());
            assert!(lanes.iter().any(|&l| l > 0));
        }
    }
}

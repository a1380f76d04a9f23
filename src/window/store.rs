//! The held pages and chunks of a window, evicted oldest-first across all slots (see the
//! module above).

use super::held::Held;
use super::pack::{Done, Packer};
use super::Owner;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// The pages and chunks held, per slot in stream order, and the owners of each slot since the
/// watermark.
pub(crate) struct Store {
    pub(crate) slots: Vec<VecDeque<Arc<Held>>>,
    /// Per slot, how many of its newest items are raw pages not yet given to be a chunk (all
    /// of them are at the back of its queue; before them may be pages given and not yet back).
    raw: Vec<usize>,
    /// Per slot, the stream number its next page gets.
    next_seq: Vec<u64>,
    /// One entry per slot that holds anything: a last time of it, at most its first item's
    /// (a slot whose first pages became a chunk has a later one; its entry is raised when it
    /// comes to the top).
    heap: BinaryHeap<Reverse<(u64, u8)>>,
    /// Bytes held (data and [`PAGE_OVERHEAD`] per item).
    pub(crate) bytes: u64,
    pub(crate) budget: u64,
    pub(crate) window_ns: u64,
    /// The largest last page time of any page evicted (it only grows).
    pub(crate) watermark: u64,
    pub(crate) evicted_records: u64,
    pub(crate) evicted_pages: u64,
    /// Missed counts carried by evicted pages (drops before the window, not in any snapshot).
    pub(crate) evicted_missed: u64,
    /// True once the byte budget (not the duration) evicted a page.
    pub(crate) budget_evicted: bool,
    /// Per slot, the threads that owned it, oldest first; the entries before the watermark are
    /// pruned but for the last (the owner at the watermark).
    pub(crate) owners: Vec<VecDeque<Owner>>,
    /// With compression on: what makes the chunks.
    packer: Option<Packer>,
}

impl Store {
    pub(crate) fn new(window_ns: u64, budget: u64, packer: Option<Packer>) -> Self {
        Self {
            slots: (0..crate::write::slots::SLOTS)
                .map(|_| VecDeque::new())
                .collect(),
            raw: vec![0; crate::write::slots::SLOTS],
            next_seq: vec![0; crate::write::slots::SLOTS],
            heap: BinaryHeap::new(),
            bytes: 0,
            budget,
            window_ns,
            watermark: 0,
            evicted_records: 0,
            evicted_pages: 0,
            evicted_missed: 0,
            budget_evicted: false,
            owners: (0..crate::write::slots::SLOTS)
                .map(|_| VecDeque::new())
                .collect(),
            packer,
        }
    }

    /// Keeps a page of `slot` (pages of a slot come in stream order), installs the chunks made
    /// meanwhile and gives the slot's oldest raw pages to be one when there are enough of them
    /// ([`super::pack`]), then evicts down to the budget and the window ending at the page's
    /// last time.
    pub(crate) fn push(&mut self, slot: u8, mut page: Held) {
        let i = slot as usize;
        page.seq = self.next_seq[i];
        self.next_seq[i] += 1;
        let q = &mut self.slots[i];
        if q.is_empty() {
            self.heap.push(Reverse((page.last_ts, slot)));
        }
        self.bytes += page.cost();
        let last = page.last_ts;
        q.push_back(Arc::new(page));
        self.raw[i] += 1;
        self.give(slot);
        self.install_made(false);
        self.evict(last);
    }

    /// Gives `slot`'s oldest raw pages not yet given to the packer while a chunk's worth is
    /// there.
    fn give(&mut self, slot: u8) {
        let i = slot as usize;
        let Some(p) = self.packer.as_mut() else {
            return;
        };
        while self.raw[i] >= p.chunk_pages {
            let q = &self.slots[i];
            let start = q.len() - self.raw[i];
            let pages: Vec<_> = q.range(start..start + p.chunk_pages).cloned().collect();
            p.give(slot, pages[0].seq, pages, self.budget / 32);
            self.raw[i] -= p.chunk_pages;
        }
    }

    /// Replaces the pages of each chunk made by the chunk, where all of them are still held;
    /// with `wait`, once every chunk given is made.
    pub(crate) fn install_made(&mut self, wait: bool) {
        let Some(p) = self.packer.as_mut() else {
            return;
        };
        for d in p.take(wait) {
            self.install(d);
        }
    }

    fn install(&mut self, d: Done) {
        let Some(chunk) = d.chunk else {
            return;
        };
        let q = &mut self.slots[d.slot as usize];
        // Stream numbers grow along a queue (a chunk has its first page's).
        let Ok(at) = q.binary_search_by_key(&d.first, |h| h.seq) else {
            // Its first page was evicted meanwhile: the chunk is dropped; its other pages stay
            // raw, not given again, until they are evicted too (they are the slot's oldest).
            return;
        };
        let end = at + d.pages;
        let whole = q
            .get(end - 1)
            .is_some_and(|h| h.seq == d.first + d.pages as u64 - 1 && h.pages() == 1);
        if !whole {
            return;
        }
        let freed: u64 = q.drain(at..end).map(|h| h.cost()).sum();
        self.bytes = self.bytes - freed + chunk.cost();
        q.insert(at, Arc::new(chunk));
    }

    /// Evicts the oldest items while the held bytes exceed the budget, or while the oldest
    /// ended at or before `now_ns − window`.
    pub(crate) fn evict(&mut self, now_ns: u64) {
        self.evict_through(now_ns.saturating_sub(self.window_ns));
    }

    /// Evicts the oldest items while the held bytes exceed the budget, or while the oldest
    /// ended at or before `horizon`: at a cut, W (no later snapshot reaches back before its
    /// W, so what ends by it is aged out of the window now, and counted so).
    pub(crate) fn evict_through(&mut self, horizon: u64) {
        while let Some(&Reverse((key, slot))) = self.heap.peek() {
            let q = &mut self.slots[slot as usize];
            let Some(front) = q.front() else {
                self.heap.pop();
                continue;
            };
            if front.last_ts != key {
                // Its first pages became a chunk, which ends later.
                let at = front.last_ts;
                self.heap.pop();
                self.heap.push(Reverse((at, slot)));
                continue;
            }
            let over = self.bytes > self.budget;
            if !over && key > horizon {
                break;
            }
            self.heap.pop();
            let Some(p) = q.pop_front() else { continue };
            if let Some(next) = q.front() {
                self.heap.push(Reverse((next.last_ts, slot)));
            }
            let raw = &mut self.raw[slot as usize];
            *raw = (*raw).min(q.len());
            if over && key > horizon {
                self.budget_evicted = true;
            }
            self.bytes -= p.cost();
            self.watermark = self.watermark.max(p.last_ts);
            self.evicted_records += p.records;
            self.evicted_pages += p.pages();
            self.evicted_missed += p.missed;
        }
        self.prune_owners();
    }

    /// Notes that `slot` is owned from `since` on by this thread (a ThreadInfo the flusher
    /// took, or made for slot 0).
    pub(crate) fn note_owner(&mut self, slot: u8, owner: Owner) {
        let q = &mut self.owners[slot as usize];
        if let Some(last) = q.back() {
            if last.tid == owner.tid && last.name == owner.name && last.kind == owner.kind {
                return;
            }
        }
        q.push_back(owner);
    }

    /// The owner of `slot` at time `at`: the last noted at or before it, else the first.
    pub(crate) fn owner_at(&self, slot: u8, at: u64) -> Option<&Owner> {
        let q = &self.owners[slot as usize];
        q.iter().rev().find(|o| o.since <= at).or_else(|| q.front())
    }

    fn prune_owners(&mut self) {
        let w = self.watermark;
        for q in &mut self.owners {
            while q.len() > 1 && q[1].since <= w {
                q.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::held::{Data, PAGE_OVERHEAD};

    fn page(first: u64, last: u64, records: u64) -> Held {
        Held {
            data: Data::Page(vec![0; 4096].into_boxed_slice()),
            first_ts: first,
            last_ts: last,
            records,
            missed: 0,
            seq: 0,
        }
    }

    #[test]
    fn the_oldest_page_of_any_slot_goes_first_and_sets_the_watermark() {
        let cost = 4096 + PAGE_OVERHEAD;
        let mut s = Store::new(u64::MAX, 3 * cost, None);
        s.push(1, page(10, 20, 5));
        s.push(2, page(5, 15, 7));
        s.push(1, page(21, 30, 5));
        assert_eq!((s.evicted_pages, s.watermark), (0, 0));
        s.push(2, page(16, 40, 7));
        // Slot 2's first page ended first (15), so it goes, although slot 1's began later.
        assert_eq!(
            (s.evicted_pages, s.evicted_records, s.watermark),
            (1, 7, 15)
        );
        assert!(s.budget_evicted);
        assert_eq!(s.bytes, 3 * cost);
        assert_eq!(s.slots[2].front().unwrap().first_ts, 16);
    }

    #[test]
    fn pages_older_than_the_window_are_evicted_by_time() {
        let mut s = Store::new(100, u64::MAX, None);
        s.push(1, page(0, 50, 1));
        s.push(3, page(60, 120, 1));
        s.evict(151);
        assert_eq!((s.evicted_pages, s.watermark), (1, 50));
        assert!(!s.budget_evicted);
        s.evict(1000);
        assert_eq!((s.evicted_pages, s.bytes), (2, 0));
    }

    #[test]
    fn owners_before_the_watermark_are_pruned_but_the_last() {
        let mut s = Store::new(100, u64::MAX, None);
        let o = |since, tid: i32| Owner {
            since,
            tid,
            name: format!("t{tid}"),
            kind: crate::ThreadKind::Other,
        };
        s.note_owner(1, o(0, 1));
        s.note_owner(1, o(10, 2));
        s.note_owner(1, o(200, 3));
        s.push(1, page(0, 50, 1));
        s.push(1, page(60, 250, 1));
        s.evict(160);
        assert_eq!(s.watermark, 50);
        assert_eq!(s.owners[1].len(), 2);
        assert_eq!(s.owner_at(1, 50).unwrap().tid, 2);
        assert_eq!(s.owner_at(1, 300).unwrap().tid, 3);
    }

    /// A page of real records, `n` instants at `t0, t0 + 1, ...`, carrying `missed`.
    #[cfg(feature = "zstd")]
    fn real_page(t0: u64, n: u64, missed: u64) -> Held {
        let mut w = crate::flush::page::PageWriter::new(4096).unwrap();
        w.set_missed(missed).unwrap();
        for i in 0..n {
            w.try_push(t0 + i, &[i as u8; 16]).unwrap();
        }
        Held::page(w.finish().into(), t0 + n - 1, n, missed)
    }

    /// With a packer of 4 pages a chunk: every 4th page of a slot makes its last 4 one chunk,
    /// counted at its compressed size; eviction takes whole chunks, the one that ends first
    /// across slots, counts the pages and records inside it, and the watermark is its last
    /// page's time; raw pages not yet in a chunk are evicted one by one.
    #[test]
    #[cfg(feature = "zstd")]
    fn chunks_are_made_of_four_pages_and_evicted_whole_by_their_end() {
        let mut s = Store::new(u64::MAX, u64::MAX, Some(Packer::inline(1, 4).unwrap()));
        for k in 0..4 {
            s.push(1, real_page(100 * k, 10, u64::from(k == 1)));
        }
        for k in 0..4 {
            s.push(2, real_page(50 + 120 * k, 10, 0));
        }
        s.push(1, real_page(400, 10, 0));
        // Slot 1: a chunk of pages 0..4 (times 0..=309), then one raw page; slot 2: a chunk
        // (times 50..=419).
        let kinds: Vec<Vec<u64>> = [1, 2]
            .iter()
            .map(|&i| s.slots[i].iter().map(|h| h.pages()).collect())
            .collect();
        assert_eq!(kinds, [vec![4, 1], vec![4]]);
        let c = &s.slots[1][0];
        assert_eq!(
            (c.first_ts, c.last_ts, c.records, c.missed),
            (0, 309, 40, 1)
        );
        assert!(matches!(c.data, Data::Chunk { pages: 4, .. }));
        let chunk_bytes = c.bytes().len() as u64;
        assert!(chunk_bytes < 4 * 4096 / 4, "compressed: {chunk_bytes}");
        let held: u64 = s.slots.iter().flatten().map(|h| h.cost()).sum();
        assert_eq!(s.bytes, held);
        assert_eq!(
            s.bytes,
            2 * PAGE_OVERHEAD
                + chunk_bytes
                + s.slots[2][0].bytes().len() as u64
                + 4096
                + PAGE_OVERHEAD
        );
        // A budget one byte under what is held: slot 1's chunk ended first (309 < 419).
        s.budget = s.bytes - 1;
        s.evict(0);
        assert_eq!(
            (
                s.evicted_pages,
                s.evicted_records,
                s.evicted_missed,
                s.watermark
            ),
            (4, 40, 1, 309)
        );
        assert!(s.budget_evicted);
        assert_eq!(s.slots[1].len(), 1);
        // Then slot 1's raw page alone (ends 409), before slot 2's chunk (419).
        s.budget = s.bytes - 1;
        s.evict(0);
        assert_eq!((s.evicted_pages, s.watermark), (5, 409));
        assert!(s.slots[1].is_empty());
        s.budget = 0;
        s.evict(0);
        assert_eq!(
            (s.evicted_pages, s.evicted_records, s.watermark, s.bytes),
            (9, 90, 419, 0)
        );
        // The slot's raw count went with its pages: four new pages make a chunk again.
        for k in 0..4 {
            s.budget = u64::MAX;
            s.push(1, real_page(1000 + 100 * k, 10, 0));
        }
        assert_eq!(s.slots[1].len(), 1);
        assert_eq!(s.slots[1][0].pages(), 4);
    }

    /// A slot whose first pages became a chunk has a later end than its heap entry said: the
    /// other slot's page that ends before the chunk goes first.
    #[test]
    #[cfg(feature = "zstd")]
    fn a_chunk_made_at_the_front_is_ordered_by_its_own_end() {
        let mut s = Store::new(u64::MAX, u64::MAX, Some(Packer::inline(1, 2).unwrap()));
        s.push(1, real_page(0, 10, 0)); // heap: slot 1 at 9
        s.push(2, real_page(20, 10, 0)); // heap: slot 2 at 29
        s.push(1, real_page(40, 10, 0)); // slot 1: one chunk ending at 49
        s.budget = s.bytes - 1;
        s.evict(0);
        assert_eq!(
            (s.evicted_pages, s.watermark),
            (1, 29),
            "slot 2's page first"
        );
        s.budget = 0;
        s.evict(0);
        assert_eq!(
            (s.evicted_pages, s.evicted_records, s.watermark),
            (3, 30, 49)
        );
    }

    /// With a thread (its 4 jobs in flight at most, the rest made inline): the same chunks as
    /// inline once every one is back, and a chunk whose pages were evicted while it was made
    /// is dropped, the bytes held still those of what is held.
    #[test]
    #[cfg(feature = "zstd")]
    fn chunks_made_on_the_thread_replace_their_pages_only_if_all_are_held() {
        let mut a = Store::new(u64::MAX, u64::MAX, Some(Packer::inline(1, 4).unwrap()));
        let mut b = Store::new(u64::MAX, u64::MAX, Some(Packer::with_thread(1, 4).unwrap()));
        for k in 0..42 {
            a.push(1 + (k % 2) as u8, real_page(100 * k, 10, 0));
            b.push(1 + (k % 2) as u8, real_page(100 * k, 10, 0));
        }
        b.install_made(true);
        for s in [&a, &b] {
            let shape: Vec<Vec<u64>> = [1, 2]
                .iter()
                .map(|&i| s.slots[i].iter().map(|h| h.pages()).collect())
                .collect();
            assert_eq!(shape, [vec![4, 4, 4, 4, 4, 1], vec![4, 4, 4, 4, 4, 1]]);
            let held: u64 = s.slots.iter().flatten().map(|h| h.cost()).sum();
            assert_eq!(s.bytes, held);
        }
        let (ra, rb): (Vec<_>, Vec<_>) = (
            a.slots[1].iter().map(|h| h.bytes().to_vec()).collect(),
            b.slots[1].iter().map(|h| h.bytes().to_vec()).collect(),
        );
        assert!(ra == rb, "the same chunks, byte for byte");
        // A budget under 32 chunks' pages: none goes to the thread, each is there at once.
        let budget = 32 * 4 * 4096 - 1;
        let mut small = Store::new(u64::MAX, budget, Some(Packer::with_thread(1, 4).unwrap()));
        for k in 0..4 {
            small.push(1, real_page(100 * k, 10, 0));
        }
        assert_eq!(
            small.slots[1].iter().map(|h| h.pages()).collect::<Vec<_>>(),
            [4]
        );
        // Four pages given, then the first of them evicted before the chunk is installed.
        let mut c = Store::new(u64::MAX, u64::MAX, Some(Packer::inline(1, 4).unwrap()));
        c.packer.as_mut().unwrap().hold_back = true;
        for k in 0..4 {
            c.push(3, real_page(100 * k, 10, 0));
        }
        assert_eq!(c.slots[3].len(), 4, "given, not yet installed");
        c.budget = c.bytes - 1;
        c.evict(0);
        assert_eq!((c.evicted_pages, c.slots[3].len()), (1, 3));
        c.packer.as_mut().unwrap().hold_back = false;
        c.budget = u64::MAX;
        c.install_made(true);
        assert_eq!(c.slots[3].iter().map(|h| h.pages()).sum::<u64>(), 3);
        assert!(
            c.slots[3].iter().all(|h| h.pages() == 1),
            "the chunk was dropped"
        );
        let held: u64 = c.slots.iter().flatten().map(|h| h.cost()).sum();
        assert_eq!(c.bytes, held);
    }
}

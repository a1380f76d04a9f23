//! The held pages of a window, evicted oldest-first across all slots (see the module above).

use super::Owner;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// One finished page and what the flusher knew of it when it emitted it.
#[derive(Debug)]
pub(crate) struct StoredPage {
    pub(crate) data: Box<[u8]>,
    /// Page time of its first and last records (ns).
    pub(crate) first_ts: u64,
    pub(crate) last_ts: u64,
    pub(crate) records: u64,
    /// The missed count the page carries (drops before its first record).
    pub(crate) missed: u64,
}

/// Bytes a held page costs beyond its data: the page's header, the `Arc`'s counts and its
/// place in its slot's queue and in the heap.
pub(crate) const PAGE_OVERHEAD: u64 = (std::mem::size_of::<StoredPage>() + 16 + 8 + 16) as u64;

/// The pages held, per slot in stream order, and the owners of each slot since the watermark.
pub(crate) struct Store {
    pub(crate) slots: Vec<VecDeque<Arc<StoredPage>>>,
    /// One entry per slot that holds a page: its first page's last time.
    heap: BinaryHeap<Reverse<(u64, u8)>>,
    /// Bytes held (data and [`PAGE_OVERHEAD`] per page).
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
}

impl Store {
    pub(crate) fn new(window_ns: u64, budget: u64) -> Self {
        Self {
            slots: (0..crate::write::slots::SLOTS)
                .map(|_| VecDeque::new())
                .collect(),
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
        }
    }

    /// Keeps a page of `slot` (pages of a slot come in stream order), then evicts down to the
    /// budget and the window ending at the page's last time.
    pub(crate) fn push(&mut self, slot: u8, page: StoredPage) {
        let q = &mut self.slots[slot as usize];
        if q.is_empty() {
            self.heap.push(Reverse((page.last_ts, slot)));
        }
        self.bytes += page.data.len() as u64 + PAGE_OVERHEAD;
        let last = page.last_ts;
        q.push_back(Arc::new(page));
        self.evict(last);
    }

    /// Evicts the oldest pages while the held bytes exceed the budget, or while the oldest
    /// page ended at or before `now_ns − window`.
    pub(crate) fn evict(&mut self, now_ns: u64) {
        let horizon = now_ns.saturating_sub(self.window_ns);
        while let Some(&Reverse((last, slot))) = self.heap.peek() {
            let over = self.bytes > self.budget;
            if !over && last > horizon {
                break;
            }
            self.heap.pop();
            let q = &mut self.slots[slot as usize];
            let Some(p) = q.pop_front() else { continue };
            if let Some(next) = q.front() {
                self.heap.push(Reverse((next.last_ts, slot)));
            }
            if over && last > horizon {
                self.budget_evicted = true;
            }
            self.bytes -= p.data.len() as u64 + PAGE_OVERHEAD;
            self.watermark = self.watermark.max(p.last_ts);
            self.evicted_records += p.records;
            self.evicted_pages += 1;
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

    fn page(first: u64, last: u64, records: u64) -> StoredPage {
        StoredPage {
            data: vec![0; 4096].into_boxed_slice(),
            first_ts: first,
            last_ts: last,
            records,
            missed: 0,
        }
    }

    #[test]
    fn the_oldest_page_of_any_slot_goes_first_and_sets_the_watermark() {
        let cost = 4096 + PAGE_OVERHEAD;
        let mut s = Store::new(u64::MAX, 3 * cost);
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
        let mut s = Store::new(100, u64::MAX);
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
        let mut s = Store::new(100, u64::MAX);
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
}

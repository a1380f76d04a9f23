//! Where a finished page goes (the sink, or in window mode the window's store) and the counters
//! the flusher publishes: `stats()`'s, the sink's, and the session summary.

use super::Flusher;
use crate::sink::{SessionSummary, SlotSummary};
use std::io;
use std::sync::atomic::Ordering;

impl Flusher {
    pub(super) fn emit_page(&mut self, slot: u8) {
        let s = &mut self.slots[slot as usize];
        let Some(page) = s.page.as_mut() else { return };
        if page.is_empty() {
            return;
        }
        let n = page.records() as u64;
        let page_missed = page.missed();
        s.opened = None;
        let bytes = page.finish();
        if let Some(w) = self.window.as_mut() {
            w.store(slot, bytes, s.last_ts, n, page_missed);
            self.core.progress.pages.fetch_add(1, Ordering::Relaxed);
            self.core
                .progress
                .bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            return;
        }
        match self.sink.write_page(slot, bytes) {
            Ok(()) => {
                self.core.progress.pages.fetch_add(1, Ordering::Relaxed);
                self.core
                    .progress
                    .bytes
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                s.written -= n;
                s.sink_lost += n;
                // The page's missed count goes to the slot's next page, so the file still
                // carries every count `missed` reports.
                s.pending += page_missed;
                self.core
                    .progress
                    .pages_lost
                    .fetch_add(1, Ordering::Relaxed);
                self.sink_error(&e);
            }
        }
    }

    /// Moves the records of pages the sink accepted but could not store from `written` to
    /// `sink_lost`, and counts the pages as lost.
    pub(super) fn take_unstored(&mut self) {
        for u in self.sink.take_unstored() {
            let s = &mut self.slots[u.slot as usize];
            let n = u.records.min(s.written);
            s.written -= n;
            s.sink_lost += n;
            // Relaxed: a statistic; only this thread writes it.
            self.core
                .progress
                .pages_lost
                .fetch_add(u.pages, Ordering::Relaxed);
        }
    }

    pub(super) fn sink_error(&self, e: &io::Error) {
        self.core
            .progress
            .sink_errors
            .fetch_add(1, Ordering::Relaxed);
        let mut first = self.core.progress.first_error.lock();
        if first.is_none() {
            *first = Some(e.to_string());
        }
    }

    pub(super) fn slot_summaries(&self) -> Vec<SlotSummary> {
        let reg = &self.core.registry;
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.used || s.missed > 0)
            .map(|(i, s)| {
                let e = reg.slot(i as u8);
                SlotSummary {
                    slot: i as u8,
                    name: s.name.clone(),
                    thread_ids: s.tids.clone(),
                    last_thread_id: s.last_tid,
                    threads: s.threads,
                    attempted: s.written + s.missed + s.sink_lost,
                    written: s.written,
                    missed: s.missed,
                    filtered: e.filtered.load(Ordering::Relaxed),
                    refused: e.refused.load(Ordering::Relaxed),
                    sink_lost: s.sink_lost,
                    clamped: s.clamped,
                    unclosed: e.unclosed.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// Publishes the counters for `stats()`, and hands them to the sink when one that no page
    /// carries changed (they only grow, so their sum tells).
    pub(super) fn publish(&mut self) {
        let slots = self.slot_summaries();
        let (no_slot, filtered_no_slot) = (self.core.no_slot(), self.core.filtered_no_slot());
        let sum = slots
            .iter()
            .fold(no_slot.wrapping_add(filtered_no_slot), |a, s| {
                a.wrapping_add(s.filtered)
                    .wrapping_add(s.refused)
                    .wrapping_add(s.sink_lost)
                    .wrapping_add(s.clamped)
            });
        if sum != self.counted {
            self.counted = sum;
            let now = SessionSummary {
                page_size: self.core.page_size,
                slots: slots.clone(),
                no_slot,
                filtered_no_slot,
                ..Default::default()
            };
            if let Err(e) = self.sink.counters(&now) {
                self.sink_error(&e);
            }
        }
        *self.core.progress.slots.lock() = slots;
        if let Some(w) = &self.window {
            // Relaxed: statistics; only this thread writes them.
            let p = &self.core.progress;
            p.evicted_records
                .store(w.store.evicted_records, Ordering::Relaxed);
            p.evicted_pages
                .store(w.store.evicted_pages, Ordering::Relaxed);
        }
    }

    pub(super) fn summary(&self) -> SessionSummary {
        SessionSummary {
            page_size: self.core.page_size,
            wall_anchor_ns: self.core.clock.wall_anchor_ns(),
            monotonic_anchor_ns: self.core.clock.monotonic_anchor_ns(),
            end_ns: crate::write::clock::monotonic_ns(),
            slots: self.slot_summaries(),
            no_slot: self.core.no_slot(),
            filtered_no_slot: self.core.filtered_no_slot(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            // Relaxed: only this thread writes them.
            pages_lost: self.core.progress.pages_lost.load(Ordering::Relaxed),
            sink_errors: self.core.progress.sink_errors.load(Ordering::Relaxed),
            first_sink_error: self.core.progress.first_error.lock().clone(),
        }
    }
}

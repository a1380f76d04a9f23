//! The counters of a recording: [`Stats`], a snapshot while it runs or the final values from
//! `finish()`.

use crate::sink::SlotSummary;
use crate::write::slots::Registry;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of a session (a snapshot, or the final values from `finish()`).
///
/// Per slot, `attempted = written + missed + sink_lost` holds exactly once the session has
/// finished; while it runs, records still in rings are in none of the three.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per-slot counters for every slot that recorded anything (slot 0 = the recorder).
    pub slots: Vec<SlotSummary>,
    /// Events not recorded because all 255 user slots were taken.
    pub no_slot: u64,
    /// Filtered writes of threads that had no slot (they had recorded nothing yet, or found
    /// every slot taken); the others are in their slot's `filtered`.
    pub filtered_no_slot: u64,
    /// Pages handed to the sink.
    pub pages: u64,
    /// Bytes handed to the sink.
    pub bytes: u64,
    /// Pages the sink failed to store.
    pub pages_lost: u64,
    /// Errors the sink returned.
    pub sink_errors: u64,
    /// The longest time, in ns, between the starts of two consecutive drains of the rings (the
    /// flusher's cycles); 0 before the second. It is about the flush interval (10 ms by
    /// default), up to 5 times it while every ring fills slowly, or less while busy rings wake
    /// the flusher early. A ring fills in its size
    /// divided by its thread's write rate (about 38 ms for the default 2 MiB at 2.5 M
    /// records/s), so a gap longer than that can drop the records of a thread writing at that
    /// rate: the flusher was not scheduled, or the sink held it up. Drops with every gap well
    /// under that came from bursts larger than the ring.
    pub longest_drain_gap_ns: u64,
    /// The first sink error, as text.
    pub first_sink_error: Option<String>,
    /// A rotating recording ([`RecorderBuilder::rotate`](crate::RecorderBuilder::rotate)):
    /// complete segments deleted because `keep` newer ones were complete.
    pub rotated_out_segments: u64,
    /// Records (every slot's, slot 0's included) in those deleted segments: with the records of
    /// the kept segments, every record written.
    pub rotated_out_records: u64,
    /// Missed counts those deleted segments carried.
    pub rotated_out_missed: u64,
    /// Window mode (SPEC §16): records aged out of the window (by its duration or its byte
    /// budget). They are in their slots' `written` (they reached the window), so
    /// `attempted = written + missed + sink_lost` still holds; `written − evicted_records` are
    /// held. Not a loss. 0 without a window.
    pub evicted_records: u64,
    /// Window mode: pages aged out of the window.
    pub evicted_pages: u64,
}

impl Stats {
    fn user(&self) -> impl Iterator<Item = &SlotSummary> {
        self.slots.iter().filter(|s| s.slot != 0)
    }
    /// Records attempted by user threads (slots 1..=255).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::Stats::default().user_attempted(), 0);
    /// ```
    pub fn user_attempted(&self) -> u64 {
        self.user().map(|s| s.attempted).sum()
    }
    /// Records written by user threads.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::Stats::default().user_written(), 0);
    /// ```
    pub fn user_written(&self) -> u64 {
        self.user().map(|s| s.written).sum()
    }
    /// Records dropped because a ring was full, all slots.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::Stats::default().total_missed(), 0);
    /// ```
    pub fn total_missed(&self) -> u64 {
        self.slots.iter().map(|s| s.missed).sum()
    }
    /// Records in the output, all slots (slot 0 included).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::Stats::default().total_written(), 0);
    /// ```
    pub fn total_written(&self) -> u64 {
        self.slots.iter().map(|s| s.written).sum()
    }
    /// Writes filtered out, all slots and threads without a slot.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::Stats::default().total_filtered(), 0);
    /// ```
    pub fn total_filtered(&self) -> u64 {
        self.slots.iter().map(|s| s.filtered).sum::<u64>() + self.filtered_no_slot
    }
    /// The counters of one slot.
    ///
    /// ```
    /// assert!(typhon_recorder::Stats::default().slot(1).is_none());
    /// ```
    pub fn slot(&self, slot: u8) -> Option<&SlotSummary> {
        self.slots.iter().find(|s| s.slot == slot)
    }
}

/// Counters the flusher publishes for `stats()` snapshots.
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) pages: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) pages_lost: AtomicU64,
    pub(crate) sink_errors: AtomicU64,
    /// The longest time between the starts of two consecutive cycles, ns.
    pub(crate) longest_gap_ns: AtomicU64,
    pub(crate) evicted_records: AtomicU64,
    pub(crate) evicted_pages: AtomicU64,
    pub(crate) first_error: Mutex<Option<String>>,
    pub(crate) slots: Mutex<Vec<SlotSummary>>,
}

impl Progress {
    /// The counters now: the flusher's, with the slots' own (`filtered`, `refused`) read
    /// from `registry` and the counts of threads without a slot passed in.
    pub(crate) fn snapshot(
        &self,
        registry: &Registry,
        no_slot: u64,
        filtered_no_slot: u64,
    ) -> Stats {
        let mut slots = self.slots.lock().clone();
        for s in &mut slots {
            let e = registry.slot(s.slot);
            // Relaxed: statistics.
            s.filtered = e.filtered.load(Ordering::Relaxed);
            s.refused = e.refused.load(Ordering::Relaxed);
            s.unclosed = e.unclosed.load(Ordering::Relaxed);
        }
        Stats {
            slots,
            no_slot,
            filtered_no_slot,
            pages: self.pages.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            pages_lost: self.pages_lost.load(Ordering::Relaxed),
            sink_errors: self.sink_errors.load(Ordering::Relaxed),
            longest_drain_gap_ns: self.longest_gap_ns.load(Ordering::Relaxed),
            first_sink_error: self.first_error.lock().clone(),
            rotated_out_segments: 0,
            rotated_out_records: 0,
            rotated_out_missed: 0,
            evicted_records: self.evicted_records.load(Ordering::Relaxed),
            evicted_pages: self.evicted_pages.load(Ordering::Relaxed),
        }
    }
}

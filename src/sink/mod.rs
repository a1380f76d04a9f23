//! Where finished pages go: a [`Sink`] receives each slot's pages in order, then the session
//! summary at the end.
//!
//! [`MemorySink`] keeps pages in memory (tests, embedding, custom transports); [`NullSink`]
//! discards them (benchmarks of the flusher); [`FileSink`] streams them
//! to disk and assembles a trace.dat at the end.

mod file;
pub mod tracedat;

pub use file::{
    output_path, page_fault, parts_complete, parts_dir, parts_locked, parts_losses, parts_name,
    recover, FileSink, PartsName, Recovered, PENDING_HEADER_LEN, PENDING_MAGIC,
};

use std::io;
use std::sync::Arc;

/// Per-slot totals of a session, as stored in the file's metadata and returned by `finish()`.
///
/// ```
/// let s = typhon_recorder::sink::SlotSummary { slot: 1, name: "main".into(), thread_ids: vec![42],
///     last_thread_id: 42, threads: 1, attempted: 10, written: 9, missed: 1, filtered: 0,
///     refused: 0, sink_lost: 0, clamped: 0, unclosed: 0 };
/// assert_eq!(s.attempted, s.written + s.missed + s.sink_lost);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlotSummary {
    /// Slot number (0 = the recorder's own stream).
    pub slot: u8,
    /// Thread name (of the first thread that used the slot; later ones are in `thread_ids`).
    pub name: String,
    /// OS thread ids of the first threads that used the slot, in order (at most
    /// `MAX_THREAD_IDS`).
    pub thread_ids: Vec<i32>,
    /// OS thread id of the slot's latest thread.
    pub last_thread_id: i32,
    /// How many threads used the slot.
    pub threads: u64,
    /// Records the slot's writers attempted: `written + missed + sink_lost`.
    pub attempted: u64,
    /// Records delivered to the sink in pages.
    pub written: u64,
    /// Records dropped because the slot's ring was full (the missed counts on its pages; a
    /// page the sink failed to store hands its count to the slot's next page, so only a sink
    /// that fails the slot's last pages too leaves counts here that the output lacks).
    pub missed: u64,
    /// Writes not recorded because their kind or CeLog zone was disabled.
    pub filtered: u64,
    /// Writes refused as invalid (too large for a page, bad arguments).
    pub refused: u64,
    /// Records in pages the sink failed to store.
    pub sink_lost: u64,
    /// Records whose time lay more than [`MAX_AHEAD_NS`](crate::MAX_AHEAD_NS) (10 s)
    /// ahead of the recorder's clock when the flusher took them (a caller's `*_at` time far in
    /// the future, a span ending there): written with the flusher's time instead, so that they
    /// do not stamp the slot's later records at that future time. They are in `written`; this
    /// says how many carry a time that is not the caller's.
    pub clamped: u64,
    /// Spans still open when the recorder finished (a forgotten guard, a thread that goes on
    /// past `finish`): written then, ending at finish, so the spans they parent have their
    /// parent in the file. They are in `written`; this says how many do not end where the
    /// program ended them.
    pub unclosed: u64,
}

/// What a sink learns when the session ends.
///
/// ```
/// let s = typhon_recorder::sink::SessionSummary::default();
/// assert!(s.slots.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionSummary {
    /// Page (sub-buffer) size in bytes.
    pub page_size: usize,
    /// UNIX time in ns at session start.
    pub wall_anchor_ns: u64,
    /// CLOCK_MONOTONIC ns at session start (file timestamps are on this base).
    pub monotonic_anchor_ns: u64,
    /// CLOCK_MONOTONIC ns when the session ended.
    pub end_ns: u64,
    /// Every slot that recorded anything, slot 0 included, in slot order.
    pub slots: Vec<SlotSummary>,
    /// Events not recorded because all 255 user slots were taken.
    pub no_slot: u64,
    /// Filtered writes of threads that had no slot.
    pub filtered_no_slot: u64,
    /// The recorder's version.
    pub version: String,
    /// Pages the sink failed to store (their records are in the slots' `sink_lost`).
    pub pages_lost: u64,
    /// Errors the sink returned (failed pages and failed flushes).
    pub sink_errors: u64,
    /// The first sink error, as text.
    pub first_sink_error: Option<String>,
}

/// The destination of finished pages. Called only from the flusher thread.
///
/// ```
/// use typhon_recorder::sink::{Sink, SessionSummary};
/// struct Count(usize);
/// impl Sink for Count {
///     fn write_page(&mut self, _slot: u8, _page: &[u8]) -> std::io::Result<()> { self.0 += 1; Ok(()) }
///     fn finish(&mut self, _s: &SessionSummary) -> std::io::Result<()> { Ok(()) }
/// }
/// let mut c = Count(0);
/// c.write_page(1, &[0; 4096]).unwrap();
/// assert_eq!(c.0, 1);
/// ```
pub trait Sink: Send {
    /// The session starts: `start` has the anchors and page size (no slots yet).
    fn begin(&mut self, start: &SessionSummary) -> io::Result<()> {
        let _ = start;
        Ok(())
    }
    /// Stores one complete page of `slot`. Pages of a slot arrive in stream order.
    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()>;
    /// Called after each flush cycle: make what was written so far durable against a crash of
    /// this process (e.g. hand buffered bytes to the OS).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// The session's counters now, after a flush cycle in which one of those that no page
    /// carries changed (`no_slot`, `filtered_no_slot`, and per slot `filtered`, `refused`,
    /// `sink_lost`, `clamped`). A sink whose output can be recovered after a kill keeps them
    /// ([`FileSink`]: in `OUT.parts/counters`), so that a recovered file still counts them.
    ///
    /// ```
    /// use typhon_recorder::sink::{NullSink, SessionSummary, Sink};
    /// NullSink.counters(&SessionSummary::default()).unwrap();
    /// ```
    fn counters(&mut self, now: &SessionSummary) -> io::Result<()> {
        let _ = now;
        Ok(())
    }
    /// The session has ended; no page follows.
    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()>;
    /// Pages [`write_page`](Self::write_page) accepted that did not reach storage after all:
    /// a sink that buffers pages (as [`FileSink`] does) and then fails to store them, in
    /// [`flush`](Self::flush) or [`finish`](Self::finish), says so here, and the flusher moves
    /// their records from the slot's `written` to its `sink_lost` and counts the pages as lost.
    /// The flusher asks after every flush and after a failed finish; each loss is reported
    /// once. A sink that stores pages as they come reports none (the default).
    ///
    /// ```
    /// use typhon_recorder::sink::{NullSink, Sink};
    /// assert!(NullSink.take_unstored().is_empty());
    /// ```
    fn take_unstored(&mut self) -> Vec<Unstored> {
        Vec::new()
    }
}

/// Pages of one slot a sink accepted but could not store (see [`Sink::take_unstored`]).
///
/// ```
/// let u = typhon_recorder::sink::Unstored { slot: 1, pages: 2, records: 180 };
/// assert_eq!(u.pages, 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unstored {
    /// The slot whose pages they were.
    pub slot: u8,
    /// How many pages.
    pub pages: u64,
    /// The records they held.
    pub records: u64,
}

/// Discards pages (for measuring the flusher alone).
///
/// ```
/// use typhon_recorder::sink::{NullSink, Sink};
/// NullSink.write_page(1, &[0; 4096]).unwrap();
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl Sink for NullSink {
    fn write_page(&mut self, _slot: u8, _page: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self, _summary: &SessionSummary) -> io::Result<()> {
        Ok(())
    }
}

/// What a [`MemorySink`] collected.
#[derive(Debug, Default, Clone)]
pub struct MemoryPages {
    /// Pages of each slot in order, indexed by slot number.
    pub slots: Vec<Vec<Vec<u8>>>,
    /// The summary, once the session has finished.
    pub summary: Option<SessionSummary>,
}

/// Keeps every page in memory. Clone the [`MemorySink::pages`] handle before giving the sink to
/// the recorder to read them afterwards.
///
/// ```
/// use typhon_recorder::sink::{MemorySink, Sink};
/// let mut s = MemorySink::new();
/// let pages = s.pages();
/// s.write_page(2, &[7; 4096]).unwrap();
/// assert_eq!(pages.lock().slots[2].len(), 1);
/// ```
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    pages: Arc<parking_lot::Mutex<MemoryPages>>,
}

impl MemorySink {
    /// An empty sink.
    ///
    /// ```
    /// let s = typhon_recorder::sink::MemorySink::new();
    /// assert!(s.pages().lock().slots.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// A shared handle to the collected pages.
    ///
    /// ```
    /// let s = typhon_recorder::sink::MemorySink::new();
    /// let h = s.pages();
    /// assert!(h.lock().summary.is_none());
    /// ```
    pub fn pages(&self) -> Arc<parking_lot::Mutex<MemoryPages>> {
        self.pages.clone()
    }
}

impl Sink for MemorySink {
    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()> {
        let mut p = self.pages.lock();
        if p.slots.len() <= slot as usize {
            p.slots.resize_with(slot as usize + 1, Vec::new);
        }
        p.slots[slot as usize].push(page.to_vec());
        Ok(())
    }

    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()> {
        self.pages.lock().summary = Some(summary.clone());
        Ok(())
    }
}

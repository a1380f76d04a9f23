//! The flusher thread: drains every slot ring into that slot's stream of sub-buffer pages.
//!
//! Each cycle (every flush interval, or sooner when a producer reports a ring past half full; up
//! to [`STRETCH`] times as seldom while every ring fills slowly) it walks the claimed slots and,
//! for each record:
//! 1. converts the record's raw-tick timestamp to CLOCK_MONOTONIC nanoseconds and rewrites the
//!    field (for spans also the duration; for timestamped CeLog events the CeLog µs timestamp);
//! 2. appends it to the slot's open page at its page time (instants: their time; spans: their
//!    end, so page time never goes backwards within a slot);
//! 3. hands full pages to the sink.
//!
//! Losses: a gap entry in the ring closes the open page; the next page carries the gap's count
//! (MISSED_EVENTS|MISSED_STORED with the count after the data), so each count sits on the page
//! right after its gap. Drops with no record after them (at thread exit or shutdown) and a gap
//! whose next record is too large to leave room for the count are carried by a ThreadInfo record
//! the flusher writes for the slot (a re-statement of the slot's thread, as Typhon itself
//! re-sends): the format's rule that a missed count needs a record on its page is kept, and every
//! drop is counted exactly once. Such records count as written by the slot.
//!
//! Here: the thread, its cycle and the draining of each slot's ring. Apart:
//! - `place`: a record's times converted and the record put on its slot's page;
//! - `publish`: where a finished page goes, and the counters published;
//! - `rotation`: the session's opening records, and a segment's cut and restatements;
//! - `clock_sync`: the ClockSync records that re-anchor the clock;
//! - `window`: window mode's cut, triggers and slot owners;
//! - `spares`: the helper thread that keeps the spare-ring pool full.

mod clock_sync;
mod place;
mod publish;
mod rotation;
mod spares;
mod window;

use clock_sync::CLOCK_SYNC_EVERY;
use spares::SpareMaker;
#[cfg(test)]
pub(crate) use spares::SPARE_RETRY;

use crate::codec::{self, kinds::Shape, records, TraceEventKind};
use crate::flush::page::PageWriter;
use crate::session::Core;
use crate::sink::{SessionSummary, Sink};
use crate::write::ring::{Consumer, Entry};
use crate::write::slots::{ACTIVE, FREE, RETIRING, SLOTS};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many flush intervals the flusher may sleep at most, while every ring fills slowly (and
/// one at least does: an idle recorder keeps the interval): the
/// busiest ring is expected to have a quarter of its size to drain when the flusher wakes (the
/// fill of the default 2 MiB ring of a thread writing 50 MB/s, drained every 10 ms), and the
/// sleep is the time that takes at the rate of the last cycle, between one flush interval and
/// this many. A cycle costs the flusher about as much again as the records a slow service
/// writes in 10 ms (real-service: 0.54 µs of its CPU a request at 10 ms, 0.42 at 50 ms); a ring
/// that fills faster than expected still wakes it at half full. Window mode keeps the flush
/// interval (its triggers and snapshot cuts are evaluated once a cycle).
pub(crate) const STRETCH: u32 = 5;

/// How many thread ids a slot's summary lists (the count of threads is kept apart).
pub const MAX_THREAD_IDS: usize = 64;

/// How far ahead of the flusher's clock a record's time may lie, in ns, before it is clamped
/// and counted in its slot's [`SlotSummary::clamped`](crate::sink::SlotSummary::clamped): 10 s. A clamped record takes the time of
/// its slot's previous record (as a CeLog event without a timestamp does), so it moves no
/// later record's page time (the flusher's own now would: it is later than the records written
/// before the drain); a span whose end is clamped ends there, or at its start if that is later.
///
/// Page time never goes backwards within a slot (SPEC §5), so one record stamped far in the
/// future (a caller's `*_at` time from a bad conversion, ticks passed as nanoseconds, an
/// uninitialised variable) would otherwise stamp every later record of its slot at that time.
/// A time the recorder's own clock gave is never ahead of the flusher's now, read after the
/// record was written (a record that seems to be is checked again against a fresh reading
/// before it is clamped), so the bound is there only for caller times, and it is a trade: the
/// most a bad time can do is hold its slot's later page times for that long, and the least a
/// caller may run ahead of the clock on purpose. Ten seconds keeps the first short (a bad time
/// costs at most 10 s of page times of one thread) while leaving room for the second: synthetic
/// timelines a few seconds ahead (the test of time extends writes 2 s ahead), events stamped
/// with a deadline, and times converted from CLOCK_MONOTONIC with
/// [`Clock::ns_to_raw`](crate::write::clock::Clock::ns_to_raw), whose calibration drifts from the tick
/// clock by parts per million of the session's length (100 ppm over a day is under 9 s).
///
/// Times in the past (before the session started, or behind the slot's last record) are kept
/// as they are: they cannot hold later records back, since such a record only takes the
/// slot's current page time, and the record's own header keeps its time (at the session's
/// time base, saturating at 0).
///
/// ```
/// assert_eq!(typhon_recorder::MAX_AHEAD_NS, 10_000_000_000);
/// ```
pub const MAX_AHEAD_NS: u64 = 10_000_000_000;

/// The flusher's state for one slot.
struct SlotStream {
    consumer: Option<Consumer>,
    page: Option<PageWriter>,
    /// Dropped records not yet placed on a page.
    pending: u64,
    /// Drops accounted so far (gap entries seen plus trailing drops carried).
    missed: u64,
    written: u64,
    sink_lost: u64,
    /// Records whose time lay more than [`MAX_AHEAD_NS`] ahead, clamped.
    clamped: u64,
    opened: Option<Instant>,
    /// Page time of the slot's last record.
    last_ts: u64,
    /// The name of the slot's first thread (the summary's), and of its latest (what a carrier
    /// ThreadInfo restates, with `last_tid`).
    name: String,
    last_name: String,
    /// The first [`MAX_THREAD_IDS`] thread ids that used the slot.
    tids: Vec<i32>,
    /// The slot's latest thread id, and how many threads have used the slot.
    last_tid: i32,
    threads: u64,
    kind: records::ThreadKind,
    used: bool,
}

impl SlotStream {
    fn new() -> Self {
        Self {
            consumer: None,
            page: None,
            pending: 0,
            missed: 0,
            written: 0,
            sink_lost: 0,
            clamped: 0,
            opened: None,
            last_ts: 0,
            name: String::new(),
            last_name: String::new(),
            tids: Vec::new(),
            last_tid: 0,
            threads: 0,
            kind: records::ThreadKind::Other,
            used: false,
        }
    }
}

struct Flusher {
    core: Arc<Core>,
    sink: Box<dyn Sink>,
    slots: Vec<SlotStream>,
    is_span: [bool; 256],
    /// Kinds whose records need more than their time converted: spans (duration), ThreadInfo
    /// (the slot's thread) and CeLog (the event's own timestamp).
    special: [bool; 256],
    scratch: Vec<u8>,
    spare_maker: SpareMaker,
    /// Record times above this (ns) are checked against a fresh clock reading and clamped
    /// ([`MAX_AHEAD_NS`]); raised at each cycle and at each check.
    horizon_ns: u64,
    /// The sum of the counters last handed to [`Sink::counters`].
    counted: u64,
    /// When slot 0 next gets a ClockSync record (see [`CLOCK_SYNC_EVERY`]).
    next_sync: Instant,
    /// Window mode (SPEC §16): finished pages go here instead of to the sink.
    window: Option<Box<crate::window::Window>>,
    /// The most bytes one slot's ring gave this cycle, for the next sleep ([`STRETCH`]).
    busiest: usize,
}

pub(crate) fn spawn(
    core: Arc<Core>,
    sink: Box<dyn Sink>,
    window: Option<crate::window::Window>,
) -> io::Result<JoinHandle<io::Result<SessionSummary>>> {
    let mut is_span = [false; 256];
    let mut special = [false; 256];
    for d in codec::KINDS {
        is_span[d.kind.0 as usize] = d.shape == Shape::Span;
        special[d.kind.0 as usize] = d.shape == Shape::Span
            || d.kind == TraceEventKind::THREAD_INFO
            || d.kind == TraceEventKind::CELOG;
    }
    if window.as_ref().is_some_and(|w| w.rules.watches_ticks()) {
        // Ticks are looked at only with a tick rule: without one they stay on the plain path.
        special[TraceEventKind::TICK_START.0 as usize] = true;
        special[TraceEventKind::TICK_END.0 as usize] = true;
    }
    let mut f = Flusher {
        core,
        sink,
        slots: (0..SLOTS).map(|_| SlotStream::new()).collect(),
        is_span,
        special,
        scratch: Vec::with_capacity(256),
        spare_maker: SpareMaker::default(),
        horizon_ns: 0,
        counted: 0,
        next_sync: Instant::now() + CLOCK_SYNC_EVERY,
        window: window.map(Box::new),
        busiest: 0,
    };
    f.session_start()?;
    let start = f.summary();
    f.sink.begin(&start)?;
    std::thread::Builder::new()
        .name("typhon-flusher".into())
        .spawn(move || f.run())
}

impl Flusher {
    fn run(mut self) -> io::Result<SessionSummary> {
        let mut last_start: Option<Instant> = None;
        loop {
            // `is_finishing` is an Acquire load paired with `finish`'s Release store: the final
            // cycle starts after the recorder was uninstalled, so every write that completed
            // before `finish()` was called is published in its ring by now.
            let finishing = self.core.wakeup.is_finishing();
            let now = Instant::now();
            let period = last_start.replace(now).map(|prev| now.duration_since(prev));
            if let Some(p) = period {
                let gap = u64::try_from(p.as_nanos()).unwrap_or(u64::MAX);
                // Relaxed: a statistic, read by `stats()` snapshots; only this thread writes it.
                self.core
                    .progress
                    .longest_gap_ns
                    .fetch_max(gap, Ordering::Relaxed);
            }
            self.busiest = 0;
            self.cycle(finishing);
            if finishing {
                break;
            }
            // Rings for the next threads' first events, made off the writing threads and off
            // this one (see `SpareMaker`).
            self.spare_maker.tend(&self.core);
            let sleep = self.next_sleep(period);
            self.core.wakeup.wait(Some(sleep));
        }
        self.spare_maker.stop();
        if let Some(w) = self.window.as_mut() {
            w.finish();
        }
        let summary = self.summary();
        if let Err(e) = self.sink.finish(&summary) {
            // Pages the sink took but could not store are lost: the final counters (published
            // for the error's stats) must not count them as written.
            self.sink_error(&e);
            self.take_unstored();
            self.publish();
            return Err(e);
        }
        Ok(summary)
    }

    /// How long to sleep after a cycle that drained what `period` (since the cycle before,
    /// `None` for the first) gathered: see [`STRETCH`].
    fn next_sleep(&self, period: Option<Duration>) -> Duration {
        let base = self.core.flush_interval;
        let Some(period) = period else { return base };
        if self.window.is_some() {
            return base;
        }
        // An idle recorder keeps the interval: a thread that starts writing at millions of
        // records a second (a benchmark's burst, a frame loop starting) is then drained before
        // its ring is half full, as ever; sleeping longer here left that to the half-full
        // wake-up alone, and `typhon-rec bench`'s drops_at_5m phase lost 39 675 records of
        // 10 M in one run of two.
        if self.busiest == 0 {
            return base;
        }
        let most = base.saturating_mul(STRETCH);
        let quarter = self.core.registry.ring_bytes() / 4;
        period
            .mul_f64(quarter as f64 / self.busiest as f64)
            .clamp(base, most)
    }

    fn cycle(&mut self, last: bool) {
        let ticket = self.core.wakeup.cycle_start();
        let now = self.refresh_horizon();
        // A snapshot due now is cut at a time read before the drain: every record stamped at
        // or before it and published by then is drained below.
        let cut = match self.window.as_ref() {
            Some(w) if !last => {
                let raw = self.core.clock.raw();
                let t1 = self.core.clock.to_ns(raw);
                w.shared().take_due(t1).map(|p| (p, raw, t1))
            }
            _ => None,
        };
        let hw = self.core.registry.high_water();
        for i in 0..hw {
            let slot = i as u8;
            if i > 0 {
                self.service_slot(slot, last);
            }
            let s = &self.slots[i];
            let stale = s
                .opened
                .is_some_and(|t| t.elapsed() >= self.core.max_page_age);
            if last || stale {
                self.emit_page(slot);
            }
        }
        if let Some((req, raw, t1)) = cut {
            self.cut(req, raw, t1, hw);
        }
        if let Some(w) = self.window.as_mut() {
            w.store.evict(now);
        }
        if let Err(e) = self.sink.flush() {
            self.sink_error(&e);
        }
        self.take_unstored();
        if !last {
            if self.sink.rotation_due() {
                self.rotate();
            } else if Instant::now() >= self.next_sync {
                self.push_clock_sync();
            }
        }
        self.publish();
        self.core.wakeup.cycle_done(ticket);
    }

    fn service_slot(&mut self, slot: u8, last: bool) {
        let core = self.core.clone();
        let reg = &core.registry;
        // For RETIRING, every record of the slot's last thread is visible to the drain below.
        let state = reg.state_for_service(slot);
        let s = &mut self.slots[slot as usize];
        if s.consumer.is_none() {
            if state == FREE {
                return;
            }
            s.consumer = reg.take_consumer(slot);
            if s.consumer.is_none() {
                return;
            }
        }
        self.drain(slot);
        if last && state == ACTIVE {
            // Spans its thread still has open (a forgotten guard): written now, ending now, so
            // that the spans they parent have their parent in the file (see `SpanGuard`).
            for r in reg.unclosed_spans(slot, self.core.clock.raw_clock().raw()) {
                self.push_raw(slot, &r);
            }
        }
        if state == RETIRING || (last && state == ACTIVE) {
            self.close_stream(slot);
            if state == RETIRING {
                reg.release(slot);
            }
        }
    }

    fn drain(&mut self, slot: u8) {
        let Some(mut cons) = self.slots[slot as usize].consumer.take() else {
            return;
        };
        let mut bytes = 0;
        cons.drain(|e| match e {
            Entry::Gap(n) => {
                let s = &mut self.slots[slot as usize];
                s.pending += n;
                s.missed += n;
            }
            Entry::Record(r) => {
                bytes += r.len();
                self.push_raw(slot, r)
            }
        });
        self.busiest = self.busiest.max(bytes);
        self.slots[slot as usize].consumer = Some(cons);
    }

    /// End of a slot's thread (or of the session): carry drops that no record followed, and
    /// hand the partial page to the sink.
    fn close_stream(&mut self, slot: u8) {
        let i = slot as usize;
        let Some(cons) = &self.slots[i].consumer else {
            return;
        };
        let dropped = cons.producer_dropped();
        let s = &mut self.slots[i];
        let trailing = dropped.saturating_sub(s.missed);
        if trailing > 0 {
            s.pending += trailing;
            s.missed += trailing;
            if let Some(p) = self.core.registry.slot(slot).parked.lock().as_mut() {
                p.producer.take_pending_gap();
            }
        }
        // A page the sink fails to store hands its missed count back (see `emit_page`), so a
        // failed last page is tried again, a few times: with a sink that keeps failing, the
        // count stays in `missed` and the page in `pages_lost`.
        for _ in 0..3 {
            while self.slots[i].pending > 0 {
                let ts = self.slots[i].last_ts;
                self.push_thread_info(slot, ts);
            }
            self.emit_page(slot);
            if self.slots[i].pending == 0 {
                break;
            }
        }
    }

    /// Pushes a flusher-made ThreadInfo record for `slot` at page time `ts`.
    fn push_thread_info(&mut self, slot: u8, ts: u64) {
        let s = &self.slots[slot as usize];
        let name = crate::codec::records::clamp_thread_name(&s.last_name);
        let len = records::thread_info_len(name);
        let tid = s.last_tid;
        let kind = s.kind;
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.resize(len, 0);
        let _ = records::write_thread_info(&mut buf, slot, ts as i64, tid, name, kind);
        self.push(slot, &buf, ts, None);
        self.scratch = buf;
    }
}

// Where the flusher reads and patches a record, from the codec's one description of it.
const KIND: usize = codec::CommonHeader::KIND_OFFSET;
const TS: usize = codec::CommonHeader::TIMESTAMP_OFFSET;
const DUR: usize = codec::kinds::SPAN_DURATION_OFFSET;
const CEL: usize = records::CELOG_EVENT;
const SLOT: usize = codec::CommonHeader::KIND_OFFSET + 1;

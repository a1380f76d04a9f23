//! The flusher thread: drains every slot ring into that slot's stream of sub-buffer pages.
//!
//! Each cycle (every flush interval, or sooner when a producer reports a ring past half full) it
//! walks the claimed slots and, for each record:
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

use crate::codec::{self, kinds::Shape, records, TraceEventKind};
use crate::flush::page::{PageWriter, PushError};
use crate::session::Core;
use crate::sink::{SessionSummary, Sink, SlotSummary};
use crate::write::ring::{Consumer, Entry};
use crate::write::slots::{SpareOutcome, ACTIVE, FREE, RETIRING, SLOTS};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many thread ids a slot's summary lists (the count of threads is kept apart).
pub const MAX_THREAD_IDS: usize = 64;

/// How far ahead of the flusher's clock a record's time may lie, in ns, before it is clamped
/// and counted in its slot's [`SlotSummary::clamped`]: 10 s. A clamped record takes the time of
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
}

/// How often the flusher re-anchors the recording's clock with a ClockSync record (SPEC §16):
/// the tick clock drifts from CLOCK_MONOTONIC by parts per million (−0.62 ppm measured, 2.2 ms
/// an hour), and a reader that maps times through the syncs accumulates that drift over one
/// interval only. A sync also opens every segment of a rotating recording.
pub(crate) const CLOCK_SYNC_EVERY: Duration = Duration::from_secs(60);

/// How long after the kernel refused a spare ring the next one is tried.
pub(crate) const SPARE_RETRY: Duration = Duration::from_secs(1);

/// Keeps the pool of spare rings full from a helper thread, so that the flusher does not wait
/// for the kernel.
///
/// Making a huge-page ring may stall for memory compaction: 5–9 ms measured on this project's
/// machines, more on a fragmented one (see [`Registry::try_make_spare`]). Made by the flusher,
/// that stall would hold up the drain of every ring, and a thread writing 2.5 M records/s fills
/// its 2 MiB ring in about 38 ms. So the flusher, after a cycle that finds the pool short (a claim
/// that takes the last spare wakes it for one), starts a helper thread (`typhon-spares`) that
/// makes rings until the pool is full (or the recorder is finishing) and then ends; the flusher
/// looks at it after each cycle and joins it at shutdown. There is at most one helper, and none
/// while the pool is full, so a program whose threads have all started carries no extra thread. If
/// the kernel refuses a ring, the next helper starts after the first cycle at least
/// [`SPARE_RETRY`] later (a thread that finds no spare meanwhile makes its own ring, as without a
/// pool). Only if no thread can be started does the flusher make a ring itself, one per cycle.
///
/// [`Registry::try_make_spare`]: crate::write::slots::Registry::try_make_spare
#[derive(Default)]
struct SpareMaker {
    /// The helper until the flusher joins it; it returns false if the kernel refused a ring.
    helper: Option<JoinHandle<bool>>,
    /// No helper before this time: the last one could not make a ring.
    retry_at: Option<Instant>,
}

impl SpareMaker {
    /// Joins a finished helper and starts one if the pool is short; never blocks on a helper
    /// that is still making a ring.
    fn tend(&mut self, core: &Arc<Core>) {
        if let Some(h) = &self.helper {
            if !h.is_finished() {
                return;
            }
            // A helper that panicked made no ring worth waiting for: treat it as refused.
            let given = self
                .helper
                .take()
                .is_some_and(|h| h.join().unwrap_or(false));
            if !given {
                self.retry_at = Some(Instant::now() + SPARE_RETRY);
            }
        }
        if self.retry_at.is_some_and(|t| Instant::now() < t) || !core.registry.needs_spares() {
            return;
        }
        self.retry_at = None;
        let c = Arc::clone(core);
        let spawned = std::thread::Builder::new()
            .name("typhon-spares".into())
            .spawn(move || {
                // A finishing recorder would unmap the rings at once: stop making them.
                while !c.wakeup.is_finishing() {
                    match c.registry.try_make_spare() {
                        SpareOutcome::Made => {}
                        SpareOutcome::Full => break,
                        SpareOutcome::Refused => return false,
                    }
                }
                true
            });
        match spawned {
            Ok(h) => self.helper = Some(h),
            Err(_) => {
                core.registry.make_spare();
            }
        }
    }

    /// Waits for a helper still making a ring (the recorder starts nothing it does not stop).
    fn stop(&mut self) {
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

impl Drop for SpareMaker {
    /// A flusher that unwinds (a panic in a cycle) still waits for its helper, which holds the
    /// recorder's state, instead of leaving it running after `finish()` returned.
    fn drop(&mut self) {
        self.stop();
    }
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
    };
    f.session_start()?;
    let start = f.summary();
    f.sink.begin(&start)?;
    std::thread::Builder::new()
        .name("typhon-flusher".into())
        .spawn(move || f.run())
}

impl Flusher {
    /// Slot 0, the recorder's own stream: its ThreadInfo, the CeLog session header
    /// (CEL_LOG_MARKER with 1 µs ticks, then CELID_SYNC_END) and a ClockSync.
    fn session_start(&mut self) -> io::Result<()> {
        let ts = self.core.clock.monotonic_anchor_ns();
        let s = &mut self.slots[0];
        s.name = "typhon-recorder".into();
        s.last_name = s.name.clone();
        s.tids.push(std::process::id() as i32);
        s.last_tid = std::process::id() as i32;
        s.threads = 1;
        s.kind = records::ThreadKind::Other;
        if let Some(w) = self.window.as_mut() {
            w.note_owner(
                0,
                crate::window::Owner {
                    since: ts,
                    tid: s.last_tid,
                    name: s.last_name.clone(),
                    kind: s.kind,
                },
            );
        }
        self.push_thread_info(0, ts);
        self.push_celog_header(ts)?;
        // The session's anchor as the first clock-sync (the tick clock's ns are
        // CLOCK_MONOTONIC's there): segment 1 opens with one as every later segment does.
        let wall = self.core.clock.wall_anchor_ns();
        self.push_clock_sync_at(ts, ts, wall);
        Ok(())
    }

    /// Slot 0's CeLog session header (CEL_LOG_MARKER with 1 µs ticks, then CELID_SYNC_END), at
    /// the session's start and restated at each segment's.
    fn push_celog_header(&mut self, ts: u64) -> io::Result<()> {
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let marker = codec::celog::log_marker_data(1_000_000, 100, ncpu);
        for (id, data) in [
            (codec::celog::CELID_LOG_MARKER, &marker[..]),
            (codec::celog::CELID_SYNC_END, &[][..]),
        ] {
            let len = records::celog_record_len(data.len(), false, false, 0);
            self.scratch.clear();
            self.scratch.resize(len, 0);
            let ev = codec::celog::CelEvent {
                id,
                timestamp: None,
                flag: None,
                cpu: 0,
                data,
            };
            records::write_celog_record(&mut self.scratch, 0, ts as i64, &ev)
                .map_err(|e| io::Error::other(e.to_string()))?;
            let rec = std::mem::take(&mut self.scratch);
            if let Some(w) = self.window.as_mut() {
                w.pinned.push(rec.clone());
            }
            self.push(0, &rec, ts, None);
            self.scratch = rec;
        }
        Ok(())
    }

    fn run(mut self) -> io::Result<SessionSummary> {
        let mut last_start: Option<Instant> = None;
        loop {
            // `is_finishing` is an Acquire load paired with `finish`'s Release store: the final
            // cycle starts after the recorder was uninstalled, so every write that completed
            // before `finish()` was called is published in its ring by now.
            let finishing = self.core.wakeup.is_finishing();
            let now = Instant::now();
            if let Some(prev) = last_start.replace(now) {
                let gap = u64::try_from(now.duration_since(prev).as_nanos()).unwrap_or(u64::MAX);
                // Relaxed: a statistic, read by `stats()` snapshots; only this thread writes it.
                self.core
                    .progress
                    .longest_gap_ns
                    .fetch_max(gap, Ordering::Relaxed);
            }
            self.cycle(finishing);
            if finishing {
                break;
            }
            // Rings for the next threads' first events, made off the writing threads and off
            // this one (see `SpareMaker`).
            self.spare_maker.tend(&self.core);
            self.core.wakeup.wait(Some(self.core.flush_interval));
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

    /// Ends the sink's segment and opens the next (SPEC §16): every slot's stream is cut at
    /// this cycle (its open page handed over, drops not yet on a page carried by a ThreadInfo,
    /// as at a thread's end), so each segment's counters are exactly its pages'; then the new
    /// segment is anchored to the wall clock and restates what a reader of it alone needs: slot
    /// 0's ThreadInfo and CeLog header, each live slot's thread, the definitions (SPEC §15) and
    /// a ClockSync. The restated records count as written, as carriers do.
    fn rotate(&mut self) {
        let hw = self.core.registry.high_water();
        for i in 0..hw {
            let slot = i as u8;
            while self.slots[i].pending > 0 {
                let ts = self.slots[i].last_ts;
                self.push_thread_info(slot, ts);
            }
            self.emit_page(slot);
        }
        if let Err(e) = self.sink.flush() {
            self.sink_error(&e);
        }
        self.take_unstored();
        let mut now = self.summary();
        let (ts, mono, wall) = self.clock_reading();
        now.monotonic_anchor_ns = ts;
        now.wall_anchor_ns = wall;
        if let Err(e) = self.sink.rotate(&now) {
            // The segment goes on (nothing is lost): the error is counted and told.
            self.sink_error(&e);
            return;
        }
        let ts0 = ts.max(self.slots[0].last_ts);
        self.push_thread_info(0, ts0);
        if let Err(e) = self.push_celog_header(ts0) {
            self.sink_error(&e);
        }
        self.push_clock_sync_at(ts, mono, wall);
        let mut live = [false; 256];
        live[0] = true;
        for (i, l) in live.iter_mut().enumerate().take(hw).skip(1) {
            let slot = i as u8;
            if self.slots[i].used && self.core.registry.state_for_service(slot) != FREE {
                *l = true;
                let t = ts.max(self.slots[i].last_ts);
                self.push_thread_info(slot, t);
            }
        }
        let defs: Vec<Box<[u8]>> = self
            .core
            .definitions
            .lock()
            .records
            .values()
            .cloned()
            .collect();
        for d in defs {
            if d.len() < codec::CommonHeader::SIZE {
                continue;
            }
            // A definition goes on the slot that wrote it while that slot lives (a per-slot
            // definition is read there), else on slot 0 (a callsite is read from any slot).
            let slot = if live[d[SLOT] as usize] { d[SLOT] } else { 0 };
            let mut r = d.into_vec();
            r[SLOT] = slot;
            let t = ts.max(self.slots[slot as usize].last_ts);
            self.push(slot, &r, t, Some((t, None)));
        }
        // Each live slot's static names (SPEC §15): its later records carry ids its thread
        // defined in an earlier segment.
        for (i, l) in live.iter().enumerate().take(hw) {
            if !*l {
                continue;
            }
            let slot = i as u8;
            let t = ts.max(self.slots[i].last_ts);
            for d in self.core.registry.name_definitions(slot, t as i64).0 {
                self.push(slot, &d, t, Some((t, None)));
            }
        }
        // On disk now: a kill must not keep a segment's records while losing the restatements
        // they need (a definition on a page still open, its users on pages already written).
        for (i, l) in live.iter().enumerate().take(hw) {
            if *l {
                self.emit_page(i as u8);
            }
        }
        if let Err(e) = self.sink.flush() {
            self.sink_error(&e);
        }
        self.take_unstored();
    }

    /// The clock now: (the recorder's time, CLOCK_MONOTONIC, UNIX), read together (the tick
    /// clock on both sides of the others, its middle taken).
    fn clock_reading(&self) -> (u64, u64, u64) {
        let c = &self.core.clock;
        let a = c.raw();
        let mono = crate::write::clock::monotonic_ns();
        let wall = crate::write::clock::wall_ns();
        let b = c.raw();
        (c.to_ns(a + (b.saturating_sub(a)) / 2), mono, wall)
    }

    /// A ClockSync on slot 0, with the clock read now.
    fn push_clock_sync(&mut self) {
        let (t, mono, wall) = self.clock_reading();
        self.push_clock_sync_at(t, mono, wall);
    }

    /// A ClockSync whose own time is `ts` (on a page at `ts` or at slot 0's last page time).
    fn push_clock_sync_at(&mut self, ts: u64, mono: u64, wall: u64) {
        self.next_sync = Instant::now() + CLOCK_SYNC_EVERY;
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.resize(records::CLOCK_SYNC_SIZE, 0);
        let _ = records::write_clock_sync(&mut buf, 0, ts as i64, mono, wall);
        self.push(0, &buf, ts, None);
        self.scratch = buf;
    }

    /// Window mode: the cut of a snapshot at `t1` (`raw` in ticks). The spans open now end at
    /// `t1`; every open page goes to the window, so that the cut holds every record drained.
    #[cold]
    fn cut(&mut self, req: crate::window::Pending, raw: u64, t1: u64, hw: usize) {
        let mut open = Vec::new();
        for i in 1..hw {
            let slot = i as u8;
            if self.core.registry.state_for_service(slot) != ACTIVE {
                continue;
            }
            let recs: Vec<Vec<u8>> = self
                .core
                .registry
                .open_spans(slot, raw)
                .into_iter()
                .filter_map(|mut r| {
                    if r.len() < DUR + 8 {
                        return None;
                    }
                    let start = i64::from_le_bytes(r[TS..TS + 8].try_into().unwrap()) as u64;
                    let ts = self.core.clock.to_ns(start);
                    // A span begun after the cut is not open at it.
                    (ts <= t1).then(|| {
                        patch_times(&mut r, ts, Some(t1.saturating_sub(ts) as i64));
                        r
                    })
                })
                .collect();
            if !recs.is_empty() {
                open.push((slot, recs));
            }
        }
        for i in 0..hw {
            self.emit_page(i as u8);
        }
        let session = crate::window::Session {
            page_size: self.core.page_size,
            wall_anchor_ns: self.core.clock.wall_anchor_ns(),
            mono_anchor_ns: self.core.clock.monotonic_anchor_ns(),
            definitions: self.core.definition_records(),
            slot_names: (0..hw)
                .map(|i| self.core.registry.name_definitions(i as u8, 0).0)
                .collect(),
        };
        if let Some(w) = self.window.as_mut() {
            w.cut(req, t1, open, session);
        }
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
        cons.drain(|e| match e {
            Entry::Gap(n) => {
                let s = &mut self.slots[slot as usize];
                s.pending += n;
                s.missed += n;
            }
            Entry::Record(r) => self.push_raw(slot, r),
        });
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

    /// The flusher's now on the session's time base (the records' own clock, converted as
    /// they are), and the horizon past which a record's time is clamped.
    fn refresh_horizon(&mut self) -> u64 {
        let now = self.core.clock.to_ns(self.core.clock.raw());
        self.horizon_ns = now.saturating_add(MAX_AHEAD_NS);
        now
    }

    /// A time past the horizon: `Some(t)` if it is still more than [`MAX_AHEAD_NS`] ahead of a
    /// fresh clock reading, with `t` the time to write instead (the slot's last page time, or
    /// the clock's now before the slot's first record), `None` if it is not.
    #[cold]
    #[inline(never)]
    fn beyond_horizon(&mut self, slot: u8, ts: u64) -> Option<u64> {
        let now = self.refresh_horizon();
        let last = self.slots[slot as usize].last_ts;
        (ts > self.horizon_ns).then_some(if last == 0 { now } else { last })
    }

    /// A record from a ring: raw-tick times. Inline into the drain loop, with everything but
    /// the common case (a record that only needs its time converted, room on the open page)
    /// out of line.
    #[inline(always)]
    fn push_raw(&mut self, slot: u8, r: &[u8]) {
        let kind = r[KIND];
        let raw = i64::from_le_bytes(r[TS..TS + 8].try_into().unwrap()) as u64;
        let mut ts = self.core.clock.to_ns(raw);
        let mut clamped = false;
        if ts > self.horizon_ns {
            if let Some(t) = self.beyond_horizon(slot, ts) {
                ts = t;
                clamped = true;
            }
        }
        if !self.special[kind as usize] {
            if clamped {
                self.slots[slot as usize].clamped += 1;
            }
            // Most records: only the time changes (no duration, CeLog time or thread to note).
            let s = &mut self.slots[slot as usize];
            if s.pending == 0 && s.opened.is_some() {
                if let Some(page) = s.page.as_mut() {
                    let page_ts = ts.max(s.last_ts);
                    if let Ok(dst) = page.try_push(page_ts, r) {
                        dst[TS..TS + 8].copy_from_slice(&ts.to_le_bytes());
                        s.written += 1;
                        s.last_ts = page_ts;
                        return;
                    }
                }
            }
            return self.push_plain(slot, r, ts);
        }
        self.push_special(slot, r, raw, ts, clamped);
    }

    /// [`push_raw`](Self::push_raw) for a record that only needs its time converted, when it
    /// does not go straight onto the open page.
    #[inline(never)]
    fn push_plain(&mut self, slot: u8, r: &[u8], ts: u64) {
        self.push(slot, r, ts, Some((ts, None)));
    }

    /// [`push_raw`](Self::push_raw) for spans, ThreadInfo and CeLog records.
    #[inline(never)]
    fn push_special(&mut self, slot: u8, r: &[u8], raw: u64, ts: u64, mut clamped: bool) {
        let kind = r[KIND];
        let mut dur = None;
        let mut page_ts = ts;
        if self.is_span[kind as usize] && r.len() >= DUR + 8 {
            let d = i64::from_le_bytes(r[DUR..DUR + 8].try_into().unwrap());
            let mut end = self.core.clock.to_ns(raw.wrapping_add(d as u64));
            // A span's page time is its end: an end far ahead is clamped as a start is (a
            // clamped start's end is then clamped too, to a duration of 0).
            if end > self.horizon_ns {
                if let Some(t) = self.beyond_horizon(slot, end) {
                    end = t.max(ts);
                    clamped = true;
                }
            }
            let d_ns = end.saturating_sub(ts);
            dur = Some(d_ns as i64);
            page_ts = end;
        }
        if kind == TraceEventKind::THREAD_INFO.0 {
            self.note_thread(slot, r, page_ts);
        } else if self.window.is_some() {
            self.watch(slot, r, kind, ts, page_ts, dur);
        }
        // Fast path: no loss to place and room on the open page.
        let s = &mut self.slots[slot as usize];
        if clamped {
            s.clamped += 1;
        }
        if s.pending == 0 && s.opened.is_some() {
            if let Some(page) = s.page.as_mut() {
                let page_ts = page_ts.max(s.last_ts);
                if let Ok(dst) = page.try_push(page_ts, r) {
                    patch_times(dst, ts, dur);
                    s.written += 1;
                    s.last_ts = page_ts;
                    return;
                }
            }
        }
        self.push(slot, r, page_ts, Some((ts, dur)));
    }

    /// Window mode's triggers, on a span, a TickStart or a TickEnd.
    #[cold]
    fn watch(&mut self, slot: u8, r: &[u8], kind: u8, ts: u64, end: u64, dur: Option<i64>) {
        let Some(w) = self.window.as_mut() else {
            return;
        };
        let fired = if kind == TraceEventKind::TICK_START.0 {
            w.rules.tick_start(slot, ts);
            None
        } else if kind == TraceEventKind::TICK_END.0 {
            w.rules.tick_end(slot, ts)
        } else if let (Some(d), true) = (dur, w.rules.watches_spans()) {
            w.rules.span(d.max(0) as u64, end, || span_name(r))
        } else {
            None
        };
        if let Some((i, keep_after)) = fired {
            let reason = w.rules.describe(i);
            if !crate::window::request_on(&self.core, &reason, keep_after, None) {
                w.rules.unfire(i);
            }
        }
    }

    fn note_thread(&mut self, slot: u8, r: &[u8], ts: u64) {
        if let Some((tid, name, kind)) = crate::codec::records::thread_info(r) {
            if let Some(w) = self.window.as_mut() {
                w.note_owner(
                    slot,
                    crate::window::Owner {
                        since: ts,
                        tid,
                        name: name.to_owned(),
                        kind,
                    },
                );
            }
            let s = &mut self.slots[slot as usize];
            if s.name.is_empty() {
                s.name = name.to_owned();
            }
            if s.last_name != name {
                s.last_name.clear();
                s.last_name.push_str(name);
            }
            if s.threads == 0 || s.last_tid != tid {
                // A slot reused by thousands of threads keeps a bounded list (and the count).
                if s.tids.len() < MAX_THREAD_IDS {
                    s.tids.push(tid);
                }
                s.last_tid = tid;
                s.threads += 1;
            }
            s.kind = kind;
            s.used = true;
        }
    }

    /// Appends one record to the slot's page stream at page time `page_ts`; `patch` holds the
    /// converted timestamp (and span duration) to write into the copy in the page.
    fn push(&mut self, slot: u8, r: &[u8], page_ts: u64, patch: Option<(u64, Option<i64>)>) {
        enum Next {
            Emit,
            Carrier,
            Done,
            Refused,
        }
        let i = slot as usize;
        if self.slots[i].page.is_none() {
            match PageWriter::new(self.core.page_size) {
                Ok(p) => self.slots[i].page = Some(p),
                Err(_) => return, // the page size was validated when the recorder started
            }
        }
        // Page time never goes backwards across the slot's pages either.
        let page_ts = page_ts.max(self.slots[i].last_ts);
        loop {
            let next = {
                let s = &mut self.slots[i];
                let page = s.page.as_mut().unwrap();
                if s.pending > 0 && !page.is_empty() {
                    Next::Emit
                } else {
                    if s.pending > 0 {
                        s.pending = page.set_missed(s.pending).unwrap_or(s.pending);
                    }
                    let empty = page.is_empty();
                    match page.try_push(page_ts, r) {
                        Ok(dst) => {
                            if let Some((ts, dur)) = patch {
                                patch_times(dst, ts, dur);
                            }
                            s.written += 1;
                            s.used = true;
                            s.last_ts = page_ts;
                            if s.opened.is_none() {
                                s.opened = Some(Instant::now());
                            }
                            Next::Done
                        }
                        // Only with a missed count reserved: the record leaves no room for it.
                        Err(PushError::Full) if empty => Next::Carrier,
                        Err(PushError::Full) => Next::Emit,
                        Err(_) => Next::Refused,
                    }
                }
            };
            match next {
                Next::Done => return,
                Next::Emit => self.emit_page(slot),
                // Put the count on a small carrier record's page; this record goes on the next.
                Next::Carrier => self.push_thread_info(slot, page_ts),
                Next::Refused => {
                    // Larger than a page can hold: producers refuse such writes, so only a
                    // foreign record could get here. Count it rather than lose it silently.
                    self.core
                        .registry
                        .slot(slot)
                        .refused
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    fn emit_page(&mut self, slot: u8) {
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
    fn take_unstored(&mut self) {
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

    fn sink_error(&self, e: &io::Error) {
        self.core
            .progress
            .sink_errors
            .fetch_add(1, Ordering::Relaxed);
        let mut first = self.core.progress.first_error.lock();
        if first.is_none() {
            *first = Some(e.to_string());
        }
    }

    fn slot_summaries(&self) -> Vec<SlotSummary> {
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
    fn publish(&mut self) {
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

    fn summary(&self) -> SessionSummary {
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

/// The inline name of a span record (NamedSpan, TracedSpan, TracingSpan).
fn span_name(r: &[u8]) -> Option<Vec<u8>> {
    use codec::records::Record;
    match codec::records::decode(r).ok()?.1 {
        Record::NamedSpan { name, .. }
        | Record::TracedSpan { name, .. }
        | Record::TracingSpan { name, .. } => Some(name.as_bytes().to_vec()),
        _ => None,
    }
}

/// Writes the converted times into a record's copy in a page: the header timestamp, a span's
/// duration, and a timestamped CeLog event's own 1 µs timestamp (low 32 bits).
fn patch_times(dst: &mut [u8], ts: u64, dur: Option<i64>) {
    dst[TS..TS + 8].copy_from_slice(&(ts as i64).to_le_bytes());
    if let Some(d) = dur {
        dst[DUR..DUR + 8].copy_from_slice(&d.to_le_bytes());
    }
    // A CeLog record: the event's header word, whose T bit says a u32 timestamp follows it.
    if dst[KIND] == TraceEventKind::CELOG.0 && dst.len() >= CEL + 8 {
        let word = u32::from_le_bytes(dst[CEL..CEL + 4].try_into().unwrap());
        if word & codec::celog::CelHeaderV3::TIMESTAMP != 0 {
            dst[CEL + 4..CEL + 8].copy_from_slice(&((ts / 1000) as u32).to_le_bytes());
        }
    }
}

// Where the flusher reads and patches a record, from the codec's one description of it.
const KIND: usize = codec::CommonHeader::KIND_OFFSET;
const TS: usize = codec::CommonHeader::TIMESTAMP_OFFSET;
const DUR: usize = codec::kinds::SPAN_DURATION_OFFSET;
const CEL: usize = records::CELOG_EVENT;
const SLOT: usize = codec::CommonHeader::KIND_OFFSET + 1;

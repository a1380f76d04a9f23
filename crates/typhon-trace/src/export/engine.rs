//! The streaming export: records in, final events out. Each record read (in page-time order)
//! becomes, on its thread, a slice (placed in a lane by `lanes` when it arrives, at its end), an
//! instant, a loss mark or (ThreadInfo) the thread's name. Final events wait in `reorder` for
//! the stream to pass their time, leave it in time order through `flows` (which links
//! correlated ones as they pass) and go to the [`Sink`]. The engine holds the open work only:
//! per thread its lanes' roots, its open tick and phases; the events of the watermark's window;
//! the flows in flight; all of them bounded.

use super::described::Described;
use super::error::ExportError;
use super::flows::Flows;
use super::fnv::FnvMap;
use super::lanes::Lanes;
use super::reorder::Reorder;
use super::timeline::{Thread, TimelineStats, Track, MAX_TIME, SYNTHETIC_TID};
use crate::tracedat::{OwnedRecord, TraceDatError, TraceFile};
use std::collections::VecDeque;
use std::io;
use typhon_recorder::codec::records::{self, Record as Body};

/// What an [`Item`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A slice from `ts` to `end`.
    Slice,
    /// A point in time.
    Instant,
    /// A counter's value (a Counter record, ids resolved) at a point in time.
    Counter,
    /// A loss mark: `Some(n)` counted, `None` not.
    Lost(Option<u64>),
    /// An uncounted loss mark for a run of `n` damaged pages of the thread's slot: one mark
    /// per run, so neither the window nor the output grows with the pages.
    Damaged(u64),
    /// A slice's end, at `ts`, on `track` (after its [`Kind::Slice`], which carries `end`
    /// too, for writers that write a slice whole).
    End,
}

/// One final event for a [`Sink`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Item<'r> {
    pub(super) ts: u64,
    /// A slice's end (= `ts` otherwise).
    pub(super) end: u64,
    pub(super) track: u32,
    pub(super) kind: Kind,
    /// The record naming it and its file offset (`None` for a loss mark).
    pub(super) rec: Option<(&'r [u8], u64)>,
    pub(super) flow: u64,
    /// A `tracing` span's slice: the span's fields (its latest description's text).
    pub(super) fields: Option<&'r str>,
}

/// An item held by the engine (an open phase's start, a flow's first event): its record copied.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub(super) ts: u64,
    pub(super) end: u64,
    pub(super) track: u32,
    pub(super) kind: Kind,
    pub(super) rec: Option<(Vec<u8>, u64)>,
}

impl Held {
    pub(super) fn of(it: &Item<'_>) -> Self {
        Held {
            ts: it.ts,
            end: it.end,
            track: it.track,
            kind: it.kind,
            rec: it.rec.map(|(d, at)| (d.to_vec(), at)),
        }
    }
    pub(super) fn item(&self, flow: u64) -> Item<'_> {
        Item {
            ts: self.ts,
            end: self.end,
            track: self.track,
            kind: self.kind,
            rec: self.rec.as_ref().map(|(d, at)| (&d[..], *at)),
            flow,
            fields: None,
        }
    }
}

/// Where the engine's output goes: a writer, or the [`super::Timeline`] collector.
pub(super) trait Sink {
    /// Describes (or, at the end, describes again with its final name) track `index`: lane
    /// `track.lane` of `thread`, named `name`, whose lane 0 is track `thread_track`.
    fn track(
        &mut self,
        index: u32,
        track: Track,
        thread: &Thread,
        thread_track: u32,
        name: &str,
    ) -> io::Result<()>;
    /// One final event.
    fn item(&mut self, it: &Item<'_>) -> io::Result<()>;
}

/// Open starts kept per phase number and thread.
const OPEN_PHASES: usize = 256;

/// A thread's state while reading.
struct ThreadState {
    thread: Thread,
    lanes: Lanes,
    /// Its lane 0's track.
    track: u32,
    /// (tid, name) its tracks were described with.
    described: (i64, String),
    open_tick: Option<Held>,
    /// Per phase number, its open starts (order of arrival, start), innermost last.
    open_phases: FnvMap<u8, VecDeque<(u64, Held)>>,
    phase_starts: u64,
    last: u64,
}

/// The process id: the ThreadInfo of slot 0 (the recorder's own stream), read ahead.
pub(super) fn find_pid(file: &TraceFile) -> i64 {
    for r in file.stream_cpu(0).flatten() {
        if let Ok((_, Body::ThreadInfo { thread_id, .. })) = records::decode(&r.data) {
            return i64::from(thread_id);
        }
    }
    SYNTHETIC_TID - 1
}

/// Reads every record of `file` into `sink`, returning the counts.
pub(super) fn run(file: &TraceFile, sink: &mut impl Sink) -> Result<TimelineStats, ExportError> {
    let mut e = Engine {
        file,
        threads: Vec::new(),
        tracks: Vec::new(),
        current: FnvMap::default(),
        damage: FnvMap::default(),
        first_page: None,
        stats: TimelineStats::default(),
        flows: Flows::default(),
        reorder: Reorder::default(),
        described: Described::default(),
        now: 0,
    };
    for r in file.stream_records() {
        match r {
            Ok(r) => {
                e.record(sink, &r)?;
                e.now = e.now.max(r.ts.min(MAX_TIME));
                e.drain(sink, e.now)?;
            }
            Err(TraceDatError::DamagedPage { cpu, pages, .. }) => {
                e.stats.damaged_pages = e.stats.damaged_pages.saturating_add(pages);
                let d = e.damage.entry(cpu).or_default();
                *d = d.saturating_add(pages);
            }
            Err(error) => {
                return Err(ExportError::Read {
                    records: e.stats.records,
                    error,
                })
            }
        }
    }
    e.finish(sink)?;
    e.stats.fields_forgotten = e.described.forgotten;
    Ok(e.stats)
}

struct Engine<'f> {
    file: &'f TraceFile,
    threads: Vec<ThreadState>,
    tracks: Vec<Track>,
    current: FnvMap<u32, usize>,
    damage: FnvMap<u32, u64>,
    first_page: Option<u64>,
    stats: TimelineStats,
    flows: Flows,
    reorder: Reorder,
    /// The `tracing` spans' fields, which their slices show.
    described: Described,
    /// The stream's time: the latest page time read.
    now: u64,
}

impl Engine<'_> {
    fn slot_name(&self, slot: u32) -> String {
        self.file
            .cmdline(slot as i64)
            .filter(|n| !n.is_empty())
            .map_or_else(|| format!("slot {slot}"), str::to_string)
    }

    /// Starts `thread` on its slot with its lane 0 track, described at once.
    fn start_thread(&mut self, sink: &mut impl Sink, thread: Thread) -> io::Result<usize> {
        let th = self.threads.len();
        let track = self.tracks.len() as u32;
        self.tracks.push(Track {
            thread: th,
            lane: 0,
        });
        self.current.insert(thread.slot, th);
        sink.track(
            track,
            Track {
                thread: th,
                lane: 0,
            },
            &thread,
            track,
            &thread.name,
        )?;
        self.threads.push(ThreadState {
            described: (thread.tid, thread.name.clone()),
            thread,
            lanes: Lanes::default(),
            track,
            open_tick: None,
            open_phases: FnvMap::default(),
            phase_starts: 0,
            last: 0,
        });
        self.stats.threads += 1;
        self.stats.tracks += 1;
        Ok(th)
    }

    fn unnamed(&self, slot: u32) -> Thread {
        Thread {
            slot,
            tid: SYNTHETIC_TID + i64::from(slot),
            name: self.slot_name(slot),
        }
    }

    /// Takes a final item: it waits in the watermark's window (a slice as its start and its
    /// end).
    fn emit(&mut self, it: Item<'_>) {
        match it.kind {
            Kind::Slice => {
                self.stats.slices += 1;
                self.reorder.push(Held {
                    ts: it.end,
                    end: it.end,
                    track: it.track,
                    kind: Kind::End,
                    rec: None,
                });
            }
            Kind::Instant => self.stats.instants += 1,
            Kind::Counter => self.stats.counters += 1,
            Kind::Lost(n) => {
                self.stats.loss_marks += 1;
                self.stats.lost_events += n.unwrap_or(0);
            }
            Kind::Damaged(_) => self.stats.loss_marks += 1,
            Kind::End => {}
        }
        self.reorder.push(Held::of(&it));
    }

    /// Hands the events whose window the stream (at `now`) has passed, in time order, to the
    /// flows and on to `sink`.
    fn drain(&mut self, sink: &mut impl Sink, now: u64) -> io::Result<()> {
        while let Some(h) = self.reorder.pop(now) {
            let mut it = h.item(0);
            if let (Kind::Slice, Some((rec, _))) = (it.kind, it.rec) {
                if let Ok((_, Body::TracingSpan { key, .. })) = records::decode(rec) {
                    it.fields = self.described.fields(key);
                }
            }
            self.flows.step(sink, it, &mut self.stats)?;
        }
        Ok(())
    }

    /// A slice of thread `th`, placed in a lane.
    fn slice(
        &mut self,
        sink: &mut impl Sink,
        th: usize,
        start: u64,
        end: u64,
        rec: (&[u8], u64),
    ) -> io::Result<()> {
        let mut new = None;
        let tracks = &mut self.tracks;
        let own = self.threads[th].track;
        let track = self.threads[th].lanes.place(start, end, |lane| {
            if lane == 0 {
                return own;
            }
            let t = tracks.len() as u32;
            tracks.push(Track { thread: th, lane });
            new = Some((t, lane));
            t
        });
        if let Some((t, lane)) = new {
            self.stats.tracks += 1;
            let s = &self.threads[th];
            let name = track_name(&s.thread.name, lane);
            sink.track(t, Track { thread: th, lane }, &s.thread, s.track, &name)?;
        }
        let it = Item {
            ts: start,
            end,
            track,
            kind: Kind::Slice,
            rec: Some(rec),
            flow: 0,
            fields: None,
        };
        self.emit(it);
        Ok(())
    }

    fn point(&mut self, th: usize, ts: u64, kind: Kind, rec: Option<(&[u8], u64)>) {
        let it = Item {
            ts,
            end: ts,
            track: self.threads[th].track,
            kind,
            rec,
            flow: 0,
            fields: None,
        };
        self.emit(it);
    }

    fn record(&mut self, sink: &mut impl Sink, r: &OwnedRecord) -> Result<(), ExportError> {
        self.stats.records += 1;
        let decoded = records::decode(&r.data).ok();
        let rec = (&r.data[..], r.at);
        let th = match (decoded, self.current.get(&r.cpu).copied()) {
            (
                Some((
                    _,
                    Body::ThreadInfo {
                        thread_id, name, ..
                    },
                )),
                cur,
            ) => {
                // Slot 0's ThreadInfo carries the process id, also the tid of the process's
                // main thread: the recorder's own stream keeps a synthetic tid.
                let tid = if r.cpu == 0 {
                    SYNTHETIC_TID
                } else {
                    i64::from(thread_id)
                };
                let name = if name.is_empty() {
                    self.slot_name(r.cpu)
                } else {
                    name.to_string()
                };
                match cur {
                    Some(i)
                        if self.threads[i].thread.tid == tid
                            || self.threads[i].thread.tid >= SYNTHETIC_TID =>
                    {
                        self.threads[i].thread.tid = tid;
                        self.threads[i].thread.name = name;
                        i
                    }
                    _ => self.start_thread(
                        sink,
                        Thread {
                            slot: r.cpu,
                            tid,
                            name,
                        },
                    )?,
                }
            }
            (_, Some(i)) => i,
            (_, None) => {
                let t = self.unnamed(r.cpu);
                self.start_thread(sink, t)?
            }
        };
        // A record's own time is its header's (a span's start); its page time can be later.
        // A time before zero stays at its page time (a span: its end, starting its duration
        // earlier), counted. Every time is held at MAX_TIME, the largest a viewer reads.
        let page = r.ts.min(MAX_TIME);
        self.first_page = Some(self.first_page.map_or(page, |f| f.min(page)));
        let ts = match decoded.map(|(h, b)| (u64::try_from(h.timestamp), b)) {
            Some((Ok(ts), _)) => ts.min(MAX_TIME),
            Some((Err(_), b)) => {
                self.stats.negative_times += 1;
                match b {
                    Body::NamedSpan { span, .. }
                    | Body::TracedSpan { span, .. }
                    | Body::TracingSpan { span, .. } => {
                        page.saturating_sub(u64::try_from(span.duration_ns).unwrap_or(0))
                    }
                    _ => page,
                }
            }
            None => page,
        };
        self.threads[th].last = page;
        if let Some(n) = self.damage.remove(&r.cpu) {
            self.point(th, page, Kind::Damaged(n), None);
        }
        if let Some(m) = r.missed_before {
            let n = u64::try_from(m).ok().filter(|&n| n > 0);
            self.point(th, page, Kind::Lost(n), None);
        }
        let instant = |ts| Held {
            ts,
            end: ts,
            track: 0,
            kind: Kind::Instant,
            rec: Some((r.data.clone(), r.at)),
        };
        match decoded {
            Some((
                _,
                Body::NamedSpan { span, .. }
                | Body::TracedSpan { span, .. }
                | Body::TracingSpan { span, .. },
            )) => {
                // A negative duration shows as an empty slice; an end past MAX_TIME is held
                // there (the duration_ns argument keeps the value).
                let end = ts
                    .saturating_add(u64::try_from(span.duration_ns).unwrap_or(0))
                    .min(MAX_TIME);
                self.slice(sink, th, ts, end, rec)?;
            }
            // A thread's name names its track; a clock-sync re-anchors wall-clock times (SPEC
            // §16); a `tracing` span's close ends its OTLP span, whose entries are the slices
            // here: none is an event.
            Some((
                _,
                Body::ThreadInfo { .. } | Body::ClockSync { .. } | Body::TracingClose { .. },
            )) => {}
            // A `tracing` span's description is its slices' arguments, not an event of its own.
            Some((_, Body::TracingSpanInfo { key, fields, .. })) => {
                self.stats.descriptions += 1;
                self.described.describe(key, fields);
            }
            // A definition (a callsite, a static name) names other records, which are resolved;
            // it is no event either.
            Some((_, Body::TracingCallsite(_) | Body::NameDefinition { .. })) => {
                self.stats.definitions += 1
            }
            Some((_, Body::TickStart)) => {
                if let Some(h) = self.threads[th].open_tick.replace(instant(ts)) {
                    // Two starts in a row: the first stays a mark.
                    let (d, at) = h.rec.unwrap_or_default();
                    self.point(th, h.ts, Kind::Instant, Some((&d, at)));
                }
            }
            Some((_, Body::TickEnd { .. })) => match self.threads[th].open_tick.take() {
                Some(h) => self.slice(sink, th, h.ts, ts.max(h.ts), rec)?,
                None => self.point(th, ts, Kind::Instant, Some(rec)),
            },
            Some((_, Body::PhaseStart { phase } | Body::NamedPhaseStart { phase, .. })) => {
                let s = &mut self.threads[th];
                let n = s.phase_starts;
                s.phase_starts += 1;
                let open = s.open_phases.entry(phase).or_default();
                open.push_back((n, instant(ts)));
                // Starts that never end are bounded too: the oldest beyond the cap stays a
                // mark, as it would at the end.
                if open.len() > OPEN_PHASES {
                    if let Some((_, h)) = open.pop_front() {
                        let (d, at) = h.rec.unwrap_or_default();
                        self.point(th, h.ts, Kind::Instant, Some((&d, at)));
                    }
                }
            }
            Some((_, Body::PhaseEnd { phase } | Body::NamedPhaseEnd { phase, .. })) => {
                let open = self.threads[th]
                    .open_phases
                    .get_mut(&phase)
                    .and_then(VecDeque::pop_back);
                match open {
                    Some((_, h)) => self.slice(sink, th, h.ts, ts.max(h.ts), rec)?,
                    None => self.point(th, ts, Kind::Instant, Some(rec)),
                }
            }
            Some((_, Body::Counter { .. })) => self.point(th, ts, Kind::Counter, Some(rec)),
            // Instants, correlation instants, CeLog events, and records this version cannot
            // decode (shown by kind, with their bytes).
            _ => self.point(th, ts, Kind::Instant, Some(rec)),
        }
        Ok(())
    }

    fn finish(&mut self, sink: &mut impl Sink) -> io::Result<()> {
        // A damaged page after a slot's last record: marked at that record's time. A slot with
        // no good record at all gets its thread, marked at the recording's start.
        let mut damage: Vec<(u32, u64)> = self.damage.drain().collect();
        damage.sort_unstable();
        for (cpu, n) in damage {
            let th = match self.current.get(&cpu) {
                Some(&th) => th,
                None => {
                    let t = self.unnamed(cpu);
                    let th = self.start_thread(sink, t)?;
                    self.threads[th].last = self.first_page.unwrap_or(0);
                    th
                }
            };
            let last = self.threads[th].last;
            self.point(th, last, Kind::Damaged(n), None);
        }
        // Ticks and phases still open at the end stay marks (phases in the order they started).
        for th in 0..self.threads.len() {
            let s = &mut self.threads[th];
            let mut phases: Vec<(u64, Held)> = std::mem::take(&mut s.open_phases)
                .into_values()
                .flatten()
                .collect();
            phases.sort_unstable_by_key(|p| p.0);
            let tick = s.open_tick.take();
            for h in tick.into_iter().chain(phases.into_iter().map(|p| p.1)) {
                let (d, at) = h.rec.unwrap_or_default();
                self.point(th, h.ts, Kind::Instant, Some((&d, at)));
            }
        }
        self.drain(sink, u64::MAX)?;
        self.stats.out_of_order = self.reorder.late;
        self.flows.finish(&mut self.stats);
        // Tracks whose thread was renamed since they were described get their final name.
        for s in &self.threads {
            if s.described != (s.thread.tid, s.thread.name.clone()) {
                let lanes = s.lanes.tracks().enumerate().skip(1);
                for (lane, t) in [(0, s.track)].into_iter().chain(lanes) {
                    let track = self.tracks[t as usize];
                    let name = track_name(&s.thread.name, lane as u32);
                    sink.track(t, track, &s.thread, s.track, &name)?;
                }
            }
        }
        Ok(())
    }
}

/// A track's display name: the thread's name, and "overlap k" for lane k > 0.
pub(super) fn track_name(thread: &str, lane: u32) -> String {
    if lane == 0 {
        thread.to_string()
    } else {
        format!("{thread} (overlap {lane})")
    }
}

//! Export a recording to the formats trace viewers open: Perfetto's protobuf trace
//! ([`perfetto`]: ui.perfetto.dev, `trace_processor`) and the Chrome trace-event JSON
//! ([`chrome`]: chrome://tracing, Perfetto, Speedscope).
//!
//! Both writers take one [`Timeline`], built here from a [`TraceFile`]:
//!
//! ```text
//!  trace.dat records (page-time order, one stream per slot)
//!     │ decode through the kind table; a ThreadInfo starts or renames the slot's thread
//!     ▼
//!  per thread: slices   spans (start = header time, end = start + duration)
//!                       TickStart…TickEnd, PhaseStart…PhaseEnd (paired per thread)
//!              instants correlation instants, Instant, CeLog, unpaired tick/phase marks
//!              losses   "events lost" marks where a page reports missed events
//!     │ lanes: a slice that does not nest inside the open ones of its lane moves to the
//!     │ next lane (an "overlap" track under the thread), so every track nests properly
//!     ▼
//!  events: Begin / End / Instant, sorted by time (stable: each track keeps its nesting order);
//!          flows tie a command's IngressReceived → IngressAdmitted → its TracedSpan →
//!          CommandConsumed (or IngressDropped) by (session, seq)
//! ```
//!
//! Nothing is left out silently: every record becomes a slice end, an instant or (ThreadInfo)
//! a thread's name, and every page's missed count becomes a loss mark carrying the count.
//!
//! ```
//! use typhon_trace::export::{Timeline, TimelineStats};
//! let t = Timeline::default();
//! assert_eq!(t.stats(), TimelineStats::default());
//! ```

pub mod chrome;
pub mod perfetto;

use crate::tracedat::{TraceDatError, TraceFile};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use typhon_recorder::codec::correlation::{command_of_causal_id, CorrelationInstant};
use typhon_recorder::codec::records::{self, FieldValue, Record as Body};
use typhon_recorder::codec::{kind_def, TraceEventKind as K};

/// The output formats.
///
/// ```
/// use typhon_trace::export::Format;
/// assert_eq!(Format::Perfetto.extension(), "pftrace");
/// assert_eq!("chrome".parse::<Format>(), Ok(Format::Chrome));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Perfetto's protobuf `Trace` of `TrackEvent`s.
    Perfetto,
    /// Chrome trace-event JSON (`{"traceEvents": [...]}`).
    Chrome,
}

impl Format {
    /// The usual file extension.
    ///
    /// ```
    /// assert_eq!(typhon_trace::export::Format::Chrome.extension(), "json");
    /// ```
    pub const fn extension(self) -> &'static str {
        match self {
            Format::Perfetto => "pftrace",
            Format::Chrome => "json",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "perfetto" => Ok(Format::Perfetto),
            "chrome" | "json" => Ok(Format::Chrome),
            _ => Err(format!(
                "unknown export format {s:?}: expected perfetto or chrome"
            )),
        }
    }
}

/// Why an export failed.
///
/// ```
/// use typhon_trace::export::ExportError;
/// let e = ExportError::Io(std::io::ErrorKind::WriteZero.into());
/// assert!(e.to_string().starts_with("writing the export"));
/// ```
#[derive(Debug)]
pub enum ExportError {
    /// The file's record data is damaged (the reader's error, after `records` good records).
    Read {
        /// Records read before the error.
        records: u64,
        /// The reader's error.
        error: TraceDatError,
    },
    /// Writing the output failed.
    Io(std::io::Error),
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::Read { records, error } => {
                write!(f, "after {records} records: {error}")
            }
            ExportError::Io(e) => write!(f, "writing the export: {e}"),
        }
    }
}

impl std::error::Error for ExportError {}

impl From<std::io::Error> for ExportError {
    fn from(e: std::io::Error) -> Self {
        ExportError::Io(e)
    }
}

/// One thread of the recording: a slot's owner between two ThreadInfos of different thread
/// ids (a reused slot gives one thread per owner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thread {
    /// The slot (trace.dat CPU) it wrote to.
    pub slot: u32,
    /// OS thread id from its ThreadInfo; for a slot without one, `SYNTHETIC_TID + slot`. Slot 0,
    /// the recorder's own stream, always has `SYNTHETIC_TID`: its ThreadInfo carries the
    /// process id, the tid of the process's main thread, which may record too.
    pub tid: i64,
    /// Its latest name (ThreadInfo, else the file's cmdline for the slot, else "slot N").
    pub name: String,
}

/// The largest time viewers take: Perfetto and the JSON importers read times as i64 ns.
const MAX_TIME: u64 = i64::MAX as u64;

/// Thread ids given to slots that never wrote a ThreadInfo (the recorder's own slot 0 among
/// them): far above Linux's `pid_max` limit (2^22), so they never collide with a real tid.
pub const SYNTHETIC_TID: i64 = 0x7F00_0000;

/// A track: one lane of a thread. Lane 0 is the thread itself; lane k > 0 holds the slices
/// that overlap, without nesting, slices of lanes below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Track {
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    /// 0 for the thread's own track.
    pub lane: u32,
}

/// What an [`Event`] does on its track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A slice opens.
    Begin,
    /// The innermost open slice of the track closes.
    End,
    /// A point in time.
    Instant,
    /// Events were lost before this point: `Some(n)` counted, `None` an uncounted loss.
    Lost(Option<u64>),
}

/// One timeline event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    /// Nanoseconds on the file's clock.
    pub ts: u64,
    /// Index into [`Timeline::tracks`].
    pub track: u32,
    /// What it does.
    pub phase: Phase,
    /// The record that names the event and gives its arguments (`None` for End and Lost).
    /// For a tick or phase slice, its end record (TickEnd carries the tick's values).
    pub rec: Option<&'a [u8]>,
    /// A flow through correlated events (0: none): the events of one flow, in time order, are
    /// linked one to the next.
    pub flow: u64,
}

/// Counts of what a [`Timeline`] holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelineStats {
    /// Records read from the file.
    pub records: u64,
    /// Slices (each a Begin and an End).
    pub slices: u64,
    /// Instants.
    pub instants: u64,
    /// Loss marks.
    pub loss_marks: u64,
    /// Events the loss marks count (uncounted losses add nothing).
    pub lost_events: u64,
    /// Threads.
    pub threads: u64,
    /// Tracks (threads plus overlap lanes).
    pub tracks: u64,
    /// Flows (written in the Perfetto format only).
    pub flows: u64,
    /// Records whose own time was before zero, placed at their page time instead.
    pub negative_times: u64,
    /// Damaged pages the reader skipped (each an uncounted loss mark on its thread).
    pub damaged_pages: u64,
}

/// A recording laid out for viewers: threads, their tracks and time-ordered events.
#[derive(Clone, Debug, Default)]
pub struct Timeline<'a> {
    /// Process name: "typhon-recorder" from [`Timeline::build`] (the file does not name the
    /// program; `typhon-rec export` uses the file's name).
    pub process_name: String,
    /// The process id, from the ThreadInfo of slot 0 (the recorder's own stream); for a file
    /// without one, `SYNTHETIC_TID - 1`.
    pub pid: i64,
    /// Threads by slot, and a reused slot's owners in order of appearance.
    pub threads: Vec<Thread>,
    /// Tracks; each thread's lane 0 has the thread's index.
    pub tracks: Vec<Track>,
    /// Events sorted by time.
    pub events: Vec<Event<'a>>,
    /// Records read.
    pub records: u64,
    /// Records whose own time was before zero, placed at their page time instead.
    pub negative_times: u64,
    /// Damaged pages the reader skipped: their records from the damage on are missing, and
    /// each shows as a loss mark without a count.
    pub damaged_pages: u64,
}

/// FNV-1a, for the export's maps (slots, flows, interned names): their keys are small and
/// come from the file, looked up once or more per event, where SipHash's resistance to chosen
/// keys buys nothing and cost a tenth of the export's time.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`Fnv`].
type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// A slice before lane assignment.
struct Slice<'a> {
    start: u64,
    end: u64,
    rec: &'a [u8],
}

/// An open phase: (order of arrival, start time, start record).
type OpenPhase<'a> = (u64, u64, &'a [u8]);

/// Per-thread collection while reading.
#[derive(Default)]
struct Collect<'a> {
    slices: Vec<Slice<'a>>,
    /// Instants and loss marks, already final except for the track (lane 0).
    points: Vec<Event<'a>>,
    /// The open tick's start time and record.
    open_tick: Option<(u64, &'a [u8])>,
    /// Per phase number, its open starts' (order of arrival, time, record), innermost last:
    /// a PhaseEnd finds its start in O(1) whatever else is open (one list for all phases made
    /// ends without a start, or with other phases' starts open, cost a search each).
    open_phases: FnvMap<u8, Vec<OpenPhase<'a>>>,
    /// PhaseStarts seen (the order of arrival above).
    phase_starts: u64,
    /// The page time of its latest record.
    last: u64,
}

impl<'a> Timeline<'a> {
    /// Reads every record of `file` into a timeline.
    ///
    /// A damaged page (see [`TraceDatError::DamagedPage`]) is skipped and counted in
    /// `damaged_pages`; its thread gets a loss mark without a count before its next record.
    ///
    /// # Errors
    /// [`ExportError::Read`] if the record data cannot be read (the reader yields no such
    /// error today: damage is per page).
    ///
    /// ```no_run
    /// use typhon_trace::{export::Timeline, tracedat::TraceFile};
    /// let f = TraceFile::open("run.dat")?;
    /// let t = Timeline::build(&f)?;
    /// println!("{} slices", t.stats().slices);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(file: &'a TraceFile) -> Result<Self, ExportError> {
        let mut threads: Vec<Thread> = Vec::new();
        let mut per: Vec<Collect<'a>> = Vec::new();
        // The current thread of each slot.
        let mut current: FnvMap<u32, usize> = FnvMap::default();
        let mut records = 0u64;
        let mut pid: Option<i64> = None;
        let mut negative_times = 0u64;
        let mut damaged_pages = 0u64;
        // The earliest page time, where a slot with nothing but damaged pages is marked.
        let mut first_page: Option<u64> = None;
        // Damaged pages per slot not yet marked: marked before the slot's next record.
        let mut damage: FnvMap<u32, u64> = FnvMap::default();
        let slot_name = |slot: u32| {
            file.cmdline(slot as i64)
                .filter(|n| !n.is_empty())
                .map_or_else(|| format!("slot {slot}"), str::to_string)
        };
        // The thread of a slot whose records so far carry no ThreadInfo.
        let unnamed = |slot: u32| Thread {
            slot,
            tid: SYNTHETIC_TID + i64::from(slot),
            name: slot_name(slot),
        };
        for r in file.records() {
            let r = match r {
                Ok(r) => r,
                Err(TraceDatError::DamagedPage { cpu, .. }) => {
                    damaged_pages += 1;
                    *damage.entry(cpu).or_default() += 1;
                    continue;
                }
                Err(error) => return Err(ExportError::Read { records, error }),
            };
            records += 1;
            let decoded = records::decode(r.data).ok();
            // A ThreadInfo with a new thread id starts a new thread on the slot.
            let th = match (decoded, current.get(&r.cpu).copied()) {
                (
                    Some((
                        _,
                        Body::ThreadInfo {
                            thread_id, name, ..
                        },
                    )),
                    cur,
                ) => {
                    // Slot 0's ThreadInfo carries the process id, which is also the tid of the
                    // process's main thread: the recorder's own stream keeps a synthetic tid.
                    let tid = if r.cpu == 0 {
                        pid.get_or_insert(i64::from(thread_id));
                        SYNTHETIC_TID
                    } else {
                        i64::from(thread_id)
                    };
                    let name = if name.is_empty() {
                        slot_name(r.cpu)
                    } else {
                        name.to_string()
                    };
                    match cur {
                        Some(i) if threads[i].tid == tid || threads[i].tid >= SYNTHETIC_TID => {
                            threads[i].tid = tid;
                            threads[i].name = name;
                            i
                        }
                        _ => start_thread(
                            &mut threads,
                            &mut per,
                            &mut current,
                            Thread {
                                slot: r.cpu,
                                tid,
                                name,
                            },
                        ),
                    }
                }
                (_, Some(i)) => i,
                (_, None) => start_thread(&mut threads, &mut per, &mut current, unnamed(r.cpu)),
            };
            // A record's own time is its header's (a span's start); its page time can be later,
            // as a slot's page time never goes backwards while caller-supplied times may.
            // A time before zero (a caller-supplied time far off) has no place in a viewer: the
            // record stays at its page time (for a span, its end: it starts its duration
            // earlier), and the count says so. Every time is held at MAX_TIME, the largest a
            // viewer reads.
            let page = r.ts.min(MAX_TIME);
            first_page = Some(first_page.map_or(page, |f| f.min(page)));
            let ts = match decoded.map(|(h, b)| (u64::try_from(h.timestamp), b)) {
                Some((Ok(ts), _)) => ts.min(MAX_TIME),
                Some((Err(_), b)) => {
                    negative_times += 1;
                    match b {
                        Body::NamedSpan { span, .. } | Body::TracedSpan { span, .. } => {
                            page.saturating_sub(u64::try_from(span.duration_ns).unwrap_or(0))
                        }
                        _ => page,
                    }
                }
                None => page,
            };
            let c = &mut per[th];
            c.last = page;
            for _ in 0..damage.remove(&r.cpu).unwrap_or(0) {
                c.points.push(lost_mark(page, None));
            }
            if let Some(m) = r.missed_before {
                c.points
                    .push(lost_mark(page, u64::try_from(m).ok().filter(|&n| n > 0)));
            }
            match decoded {
                Some((_, Body::NamedSpan { span, .. } | Body::TracedSpan { span, .. })) => {
                    // A negative duration (only a hand-written record has one) shows as an
                    // empty slice, and an end past the largest time viewers take (i64 ns) is
                    // held there; the record's duration_ns argument keeps the value.
                    let end = ts
                        .saturating_add(u64::try_from(span.duration_ns).unwrap_or(0))
                        .min(MAX_TIME);
                    c.slices.push(Slice {
                        start: ts,
                        end,
                        rec: r.data,
                    });
                }
                Some((_, Body::ThreadInfo { .. })) => {}
                Some((_, Body::TickStart)) => {
                    if let Some((t, start)) = c.open_tick.replace((ts, r.data)) {
                        // Two starts in a row: the first stays a mark.
                        c.points.push(instant(t, start));
                    }
                }
                Some((_, Body::TickEnd { .. })) => match c.open_tick.take() {
                    Some((start, _)) => c.slices.push(Slice {
                        start,
                        end: ts.max(start),
                        rec: r.data,
                    }),
                    None => c.points.push(instant(ts, r.data)),
                },
                Some((_, Body::PhaseStart { phase })) => {
                    let n = c.phase_starts;
                    c.phase_starts += 1;
                    c.open_phases
                        .entry(phase)
                        .or_default()
                        .push((n, ts, r.data));
                }
                Some((_, Body::PhaseEnd { phase })) => {
                    match c.open_phases.get_mut(&phase).and_then(Vec::pop) {
                        Some((_, start, _)) => {
                            c.slices.push(Slice {
                                start,
                                end: ts.max(start),
                                rec: r.data,
                            });
                        }
                        None => c.points.push(instant(ts, r.data)),
                    }
                }
                // Instants, correlation instants, CeLog events, and records this version
                // cannot decode (shown by kind, with their bytes, at their page time).
                _ => c.points.push(instant(ts, r.data)),
            }
        }
        // A damaged page after a slot's last record: marked at that record's time. A slot
        // with no good record at all gets its thread, marked at the recording's start.
        let mut damage: Vec<(u32, u64)> = damage.into_iter().collect();
        damage.sort_unstable();
        for (cpu, n) in damage {
            let th = match current.get(&cpu) {
                Some(&th) => th,
                None => {
                    let th = start_thread(&mut threads, &mut per, &mut current, unnamed(cpu));
                    per[th].last = first_page.unwrap_or(0);
                    th
                }
            };
            let c = &mut per[th];
            for _ in 0..n {
                c.points.push(lost_mark(c.last, None));
            }
        }
        // Threads by slot, then by first appearance (a reused slot's owners in turn).
        let mut order: Vec<usize> = (0..threads.len()).collect();
        order.sort_by_key(|&i| (threads[i].slot, i));
        let mut per: Vec<Option<Collect<'a>>> = per.into_iter().map(Some).collect();
        let per: Vec<Collect<'a>> = order.iter().filter_map(|&i| per[i].take()).collect();
        let threads: Vec<Thread> = order.iter().map(|&i| threads[i].clone()).collect();
        let mut t = Timeline {
            process_name: "typhon-recorder".to_string(),
            pid: pid.unwrap_or(SYNTHETIC_TID - 1),
            threads,
            tracks: Vec::new(),
            events: Vec::new(),
            records,
            negative_times,
            damaged_pages,
        };
        // Lane 0 of thread i is track i.
        t.tracks = (0..t.threads.len())
            .map(|thread| Track { thread, lane: 0 })
            .collect();
        for (th, mut c) in per.into_iter().enumerate() {
            // Ticks and phases still open at the end stay marks (phases in the order they
            // started).
            let mut phases: Vec<(u64, u64, &[u8])> =
                c.open_phases.into_values().flatten().collect();
            phases.sort_unstable_by_key(|p| p.0);
            let phases = phases.into_iter().map(|(_, ts, rec)| (ts, rec));
            for (ts, rec) in c.open_tick.into_iter().chain(phases) {
                c.points.push(instant(ts, rec));
            }
            for e in &mut c.points {
                e.track = th as u32;
            }
            // Slice events first: at equal times, a thread's instants then follow its Begins
            // (inside the slice that starts then) and its Ends (after the slice ends then).
            t.lay_out(th, c.slices);
            t.events.append(&mut c.points);
        }
        // Stable: each track's events are already in nesting order and time order.
        t.events.sort_by_key(|e| e.ts);
        t.link_flows();
        Ok(t)
    }

    /// Assigns `slices` of thread `th` to lanes and appends their Begin and End events.
    ///
    /// First fit: a slice goes to the lowest lane where it nests inside the innermost slice
    /// still open at its start (or that has none open), else to a new lane. Done in
    /// O(n log n) whatever the slices: a heap of the open slices' ends closes what ended
    /// (the smallest open end is always the innermost of its lane), and a max-tree over the
    /// lanes' innermost ends finds the first lane that takes the slice, where scanning every
    /// lane cost O(n²) for spans that overlap without nesting (one lane each).
    fn lay_out(&mut self, th: usize, mut slices: Vec<Slice<'a>>) {
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

    /// Ties each command's correlated events together, in time order (at equal times, in the
    /// order a command passes through them; a viewer then links them in file order), by
    /// (session, seq): IngressReceived always starts
    /// a flow; IngressAdmitted continues one that has only been received; a TracedSpan carrying
    /// the command's causal id continues one not yet past admission whose drain tick (from
    /// IngressAdmitted) does not contradict its own, or one already past it with the same
    /// drain tick (several systems may work on one command); CommandConsumed continues any;
    /// IngressDropped continues and ends one that has only been received. Any other event
    /// starts a new flow, so a wrapped seq or a repeated IngressReceived starts afresh. Flows
    /// follow the records that are there: with records lost, a flow stops short, and a
    /// CommandConsumed whose command's other records were all lost joins the open flow of its
    /// (session, seq), if any.
    fn link_flows(&mut self) {
        #[derive(Clone, Copy)]
        struct Open {
            id: u64,
            stage: u8, // 0 received, 1 admitted, 2 in its span, 3 consumed
            drain_tick: Option<u32>,
        }
        use CorrelationInstant as C;
        /// An event a flow can pass through. Stages: 0 received, 1 admitted, 2 the command's
        /// span, 3 consumed, 4 dropped.
        struct Step {
            ts: u64,
            stage: u8,
            event: usize,
            key: (u32, u16),
            drain_tick: Option<u32>,
        }
        let mut steps: Vec<Step> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let Some(rec) = e.rec else { continue };
            let (key, stage, tick) = match (e.phase, records::decode(rec)) {
                (Phase::Instant, Ok((_, Body::Correlation(c)))) => match c {
                    C::IngressReceived { session, seq, .. } => ((session, seq), 0, None),
                    C::IngressAdmitted {
                        session,
                        seq,
                        drain_tick,
                        ..
                    } => ((session, seq), 1, Some(drain_tick)),
                    C::CommandConsumed { session, seq, .. } => ((session, seq), 3, None),
                    C::IngressDropped { session, seq, .. } => ((session, seq), 4, None),
                    C::EgressSent { .. } => continue,
                },
                (Phase::Begin, Ok((_, Body::TracedSpan { context, .. }))) => {
                    match command_of_causal_id(context.hi, context.lo) {
                        Some((session, drain_tick, seq)) => ((session, seq), 2, Some(drain_tick)),
                        None => continue,
                    }
                }
                _ => continue,
            };
            steps.push(Step {
                ts: e.ts,
                stage,
                event: i,
                key,
                drain_tick: tick,
            });
        }
        // At equal times, in the order a command passes through (on one thread or several).
        steps.sort_by_key(|s| (s.ts, s.stage, s.event));
        let mut open: FnvMap<(u32, u16), Open> = FnvMap::default();
        let mut next = 0u64;
        for Step {
            stage,
            event: i,
            key,
            drain_tick: tick,
            ..
        } in steps
        {
            // Whether the event continues the open flow, and the drain tick the flow then has.
            let (cont, tick) = match (open.get(&key), stage) {
                (Some(o), 1) => (o.stage == 0, tick),
                // Before the command's span, a drain tick that does not contradict; after it
                // (another system's span of the same command), the same drain tick.
                (Some(o), 2) => (
                    if o.stage <= 1 {
                        o.drain_tick.map_or(true, |t| Some(t) == tick)
                    } else {
                        o.drain_tick == tick
                    },
                    tick,
                ),
                (Some(o), 3) => (true, o.drain_tick),
                (Some(o), 4) => (o.stage == 0, None),
                _ => (false, tick),
            };
            let id = match open.get(&key) {
                Some(o) if cont => o.id,
                _ => {
                    next += 1;
                    next
                }
            };
            self.events[i].flow = id;
            match stage {
                // A drop ends the flow it continued, and leaves any other alone.
                4 if cont => {
                    open.remove(&key);
                }
                4 => {}
                _ => {
                    open.insert(
                        key,
                        Open {
                            id,
                            stage: stage.min(3),
                            drain_tick: tick,
                        },
                    );
                }
            }
        }
        // A flow of one event links nothing: drop it.
        let mut count: FnvMap<u64, u32> = FnvMap::default();
        for e in &self.events {
            if e.flow != 0 {
                *count.entry(e.flow).or_default() += 1;
            }
        }
        for e in &mut self.events {
            if e.flow != 0 && count[&e.flow] < 2 {
                e.flow = 0;
            }
        }
    }

    /// Writes the timeline to `out` in `format` (and flushes it).
    ///
    /// # Errors
    /// Those of `out`.
    ///
    /// ```
    /// use typhon_trace::export::{Format, Timeline};
    /// let t = Timeline { process_name: "my-server".into(), ..Timeline::default() };
    /// let mut out = Vec::new();
    /// t.write(Format::Chrome, &mut out).unwrap();
    /// assert!(String::from_utf8(out).unwrap().contains("my-server"));
    /// ```
    pub fn write(&self, format: Format, out: &mut impl std::io::Write) -> std::io::Result<()> {
        match format {
            Format::Perfetto => perfetto::write(self, out)?,
            Format::Chrome => chrome::write(self, out)?,
        }
        out.flush()
    }

    /// Counts of what the timeline holds.
    ///
    /// ```
    /// let t = typhon_trace::export::Timeline::default();
    /// assert_eq!(t.stats().slices, 0);
    /// ```
    pub fn stats(&self) -> TimelineStats {
        let mut s = TimelineStats {
            records: self.records,
            negative_times: self.negative_times,
            damaged_pages: self.damaged_pages,
            threads: self.threads.len() as u64,
            tracks: self.tracks.len() as u64,
            ..TimelineStats::default()
        };
        let mut flows = std::collections::HashSet::new();
        for e in &self.events {
            match e.phase {
                Phase::Begin => s.slices += 1,
                Phase::End => {}
                Phase::Instant => s.instants += 1,
                Phase::Lost(n) => {
                    s.loss_marks += 1;
                    s.lost_events += n.unwrap_or(0);
                }
            }
            if e.flow != 0 {
                flows.insert(e.flow);
            }
        }
        s.flows = flows.len() as u64;
        s
    }

    /// A track's display name: the thread's name, and "overlap k" for lane k > 0.
    ///
    /// ```
    /// use typhon_trace::export::*;
    /// let t = Timeline {
    ///     threads: vec![Thread { slot: 1, tid: 7, name: "net".into() }],
    ///     tracks: vec![Track { thread: 0, lane: 0 }, Track { thread: 0, lane: 1 }],
    ///     ..Timeline::default()
    /// };
    /// assert_eq!(t.track_name(1), "net (overlap 1)");
    /// ```
    pub fn track_name(&self, track: usize) -> String {
        let t = self.tracks[track];
        let name = &self.threads[t.thread].name;
        if t.lane == 0 {
            name.clone()
        } else {
            format!("{name} (overlap {})", t.lane)
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

/// An instant of `rec` at `ts` (its track is set when the thread's events are laid out).
fn instant(ts: u64, rec: &[u8]) -> Event<'_> {
    Event {
        ts,
        track: 0,
        phase: Phase::Instant,
        rec: Some(rec),
        flow: 0,
    }
}

/// Starts `thread` on its slot: a new thread with its own collection, now the slot's current.
fn start_thread(
    threads: &mut Vec<Thread>,
    per: &mut Vec<Collect<'_>>,
    current: &mut FnvMap<u32, usize>,
    thread: Thread,
) -> usize {
    current.insert(thread.slot, threads.len());
    threads.push(thread);
    per.push(Collect::default());
    threads.len() - 1
}

/// A loss mark (its track is set with the thread's other points).
fn lost_mark<'a>(ts: u64, n: Option<u64>) -> Event<'a> {
    Event {
        ts,
        track: 0,
        phase: Phase::Lost(n),
        rec: None,
        flow: 0,
    }
}

fn end_event<'a>(ts: u64, track: u32) -> Event<'a> {
    Event {
        ts,
        track,
        phase: Phase::End,
        rec: None,
        flow: 0,
    }
}

/// A value of an event's arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg<'a> {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Text.
    S(std::borrow::Cow<'a, str>),
}

/// An event's display name: the span's name, "tick", "phase N", or the kind's name.
///
/// ```
/// use typhon_recorder::codec::records::Record;
/// let mut b = [0u8; 16];
/// let n = Record::PhaseEnd { phase: 3 }.write(&mut b, 1, 0).unwrap();
/// assert_eq!(typhon_trace::export::event_name(&b[..n]), "phase 3");
/// ```
pub fn event_name(rec: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match records::decode(rec) {
        Ok((_, Body::NamedSpan { name, .. } | Body::TracedSpan { name, .. })) => {
            Cow::Borrowed(name)
        }
        Ok((_, Body::TickEnd { .. })) => Cow::Borrowed("tick"),
        Ok((_, Body::PhaseStart { phase } | Body::PhaseEnd { phase })) => {
            Cow::Owned(format!("phase {phase}"))
        }
        Ok((_, Body::CeLog(ev))) => Cow::Owned(format!("CeLog 0x{:04x}", ev.id)),
        _ => {
            let kind = K(rec.get(2).copied().unwrap_or(0));
            kind_def(kind).map_or_else(|| Cow::Owned(kind.to_string()), |d| Cow::Borrowed(d.name))
        }
    }
}

/// An event's arguments: the record's fields by the kind table, plus the trace context of a
/// TracedSpan spelled out, a CeLog event's own fields, and the bytes of an undecodable record.
///
/// ```
/// use typhon_recorder::codec::records::Record;
/// use typhon_trace::export::{event_args, Arg};
/// let mut b = [0u8; 16];
/// let n = Record::TickEnd { overload_level: 2, tick_multiplier: 1 }.write(&mut b, 1, 0).unwrap();
/// assert_eq!(event_args(&b[..n])[0], ("overload_level", Arg::U(2)));
/// ```
pub fn event_args(rec: &[u8]) -> Vec<(&'static str, Arg<'_>)> {
    use std::borrow::Cow;
    let mut v = Vec::new();
    let d = match records::decode_fields(rec) {
        Ok(d) => d,
        Err(e) => {
            v.push(("undecodable", Arg::S(Cow::Owned(e.to_string()))));
            v.push(("bytes", Arg::S(Cow::Owned(hex(rec)))));
            return v;
        }
    };
    if d.header.kind == K::CELOG {
        match typhon_recorder::codec::celog::decode_event(d.payload) {
            Ok((ev, _)) => {
                v.push(("id", Arg::U(ev.id.into())));
                if let Some(ts) = ev.timestamp {
                    v.push(("celog_timestamp", Arg::U(ts.into())));
                }
                if let Some(flag) = ev.flag {
                    v.push(("flag", Arg::U(flag.into())));
                }
                v.push(("cpu", Arg::U(ev.cpu.into())));
                v.push(("data", Arg::S(Cow::Owned(hex(ev.data)))));
            }
            Err(e) => v.push(("undecodable", Arg::S(Cow::Owned(e.to_string())))),
        }
        return v;
    }
    for (f, val) in d.fields() {
        let a = match val {
            FieldValue::Unsigned(u) => Arg::U(u),
            FieldValue::Signed(i) => Arg::I(i),
            FieldValue::Str(s) => Arg::S(Cow::Borrowed(s)),
            FieldValue::Bytes(b) => Arg::S(Cow::Owned(hex(b))),
        };
        v.push((f.name, a));
    }
    if d.header.kind == K::TRACED_SPAN {
        if let (Some(hi), Some(lo)) = (
            d.get("trace_id_hi").and_then(FieldValue::as_u64),
            d.get("trace_id_lo").and_then(FieldValue::as_u64),
        ) {
            match command_of_causal_id(hi, lo) {
                Some((session, drain_tick, seq)) => {
                    v.push(("command_session", Arg::U(session.into())));
                    v.push(("command_drain_tick", Arg::U(drain_tick.into())));
                    v.push(("command_seq", Arg::U(seq.into())));
                }
                None => {
                    let w3c = records::TraceContext { hi, lo }.to_w3c_bytes();
                    v.push(("trace_id", Arg::S(Cow::Owned(hex(&w3c)))));
                }
            }
        }
    }
    v
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from_digit((x >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((x & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

/// Writes `file` to `out` in `format`, and returns what the timeline held.
///
/// # Errors
/// Those of [`Timeline::build`], and [`ExportError::Io`].
///
/// ```no_run
/// use typhon_trace::export::{export, Format};
/// use typhon_trace::tracedat::TraceFile;
/// let f = TraceFile::open("run.dat")?;
/// let mut out = std::io::BufWriter::new(std::fs::File::create("run.pftrace")?);
/// export(&f, Format::Perfetto, &mut out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export(
    file: &TraceFile,
    format: Format,
    out: &mut impl std::io::Write,
) -> Result<TimelineStats, ExportError> {
    let t = Timeline::build(file)?;
    t.write(format, out)?;
    Ok(t.stats())
}

#[cfg(test)]
mod tests {
    use super::*;

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

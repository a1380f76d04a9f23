//! The timeline model both writers read: a recording's [`Thread`]s, their [`Track`]s (a
//! thread's lane 0 and its overlap lanes) and its time-ordered [`Event`]s, with the
//! [`TimelineStats`] that count them.
//!
//! It holds borrowed records and nothing format-specific: building it is `build`'s (with
//! `lanes` and `flows`), writing it the writers'.

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
pub(super) const MAX_TIME: u64 = i64::MAX as u64;

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
    /// A counter's value (its record: a Counter).
    Counter,
    /// Events were lost before this point: `Some(n)` counted, `None` an uncounted loss.
    Lost(Option<u64>),
    /// Events were lost before this point, not counted: the records of this many damaged
    /// pages of the thread's slot in a row (one mark for the run).
    Damaged(u64),
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
    /// The record that names the event and gives its arguments (`None` for End and Lost),
    /// borrowed from the file where the file holds it as it reads; for a tick or phase slice,
    /// its end record (TickEnd carries the tick's values). A record the reader resolved (a
    /// static name or a `tracing` callsite by id, SPEC §15) is not in the file as it reads:
    /// it is in [`Timeline::resolved`] (see `resolved` below); [`Timeline::record`] gives
    /// either.
    pub rec: Option<&'a [u8]>,
    /// 1 + the index in [`Timeline::resolved`] of the event's record when the reader resolved
    /// it; 0 for none.
    pub resolved: u32,
    /// A flow through correlated events (0: none): the events of one flow, in time order, are
    /// linked one to the next.
    pub flow: u64,
    /// A `tracing` span's slice (its Begin): 1 + the index in [`Timeline::span_fields`] of the
    /// span's fields as the slice shows them; 0 for none.
    pub fields: u32,
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
    /// Counter values.
    pub counters: u64,
    /// Loss marks.
    pub loss_marks: u64,
    /// Events the loss marks count (uncounted losses add nothing).
    pub lost_events: u64,
    /// Threads.
    pub threads: u64,
    /// Tracks (threads plus overlap lanes).
    pub tracks: u64,
    /// Flows of two events or more (command flows in the Perfetto format only; `follows_from`
    /// links in both).
    pub flows: u64,
    /// Command flows of two events or more that ended before their CommandConsumed or
    /// IngressDropped: their command's other records are lost or lie more than 250 ms of
    /// events later (or beyond the 32 768 flows kept), or the recording ended first.
    pub unfinished_flows: u64,
    /// Events written after later ones: those the export's window of time order (50 ms of the
    /// stream, 16 384 events) did not cover, such as spans longer than it. Nothing is lost;
    /// readers sort by time (Perfetto's get an absolute timestamp).
    pub out_of_order: u64,
    /// Records whose own time was before zero, placed at their page time instead.
    pub negative_times: u64,
    /// Damaged pages the reader skipped (each run of them on a slot one uncounted loss mark on
    /// its thread, carrying the run's page count).
    pub damaged_pages: u64,
    /// `tracing` span descriptions (at creation and at each `Span::record`): not events, their
    /// fields are the arguments of the span's slices.
    pub descriptions: u64,
    /// Definitions (`tracing` callsites): not events, they name the records that use them.
    pub definitions: u64,
    /// `tracing` spans whose fields were forgotten to bound memory (more than 65 536 spans or
    /// 16 MiB of fields used more recently): their later slices show no fields.
    pub fields_forgotten: u64,
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
    /// The fields `tracing` spans' slices show ([`Event::fields`]).
    pub span_fields: Vec<String>,
    /// Records as the reader resolved them ([`Event::resolved`]).
    pub resolved: Vec<Box<[u8]>>,
    /// Records read.
    pub records: u64,
    /// Records whose own time was before zero, placed at their page time instead.
    pub negative_times: u64,
    /// Damaged pages the reader skipped: their records from the damage on are missing, and
    /// each run of them on a slot shows as one [`Phase::Damaged`] mark with the page count.
    pub damaged_pages: u64,
}

impl<'a> Timeline<'a> {
    /// The record of `e`: the file's bytes ([`Event::rec`]) or, for a record the reader
    /// resolved, its resolved form ([`Event::resolved`]).
    ///
    /// ```
    /// let t = typhon_trace::export::Timeline::default();
    /// assert!(t.events.iter().all(|e| t.record(e).is_some() || e.rec.is_none()));
    /// ```
    pub fn record<'s>(&'s self, e: &Event<'a>) -> Option<&'s [u8]> {
        match e.rec {
            Some(r) => Some(r),
            None => (e.resolved as usize)
                .checked_sub(1)
                .and_then(|i| self.resolved.get(i))
                .map(|r| &r[..]),
        }
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
        // A flow is an id that two events or more carry.
        let mut flows = std::collections::HashMap::<u64, u32>::new();
        for e in &self.events {
            match e.phase {
                Phase::Begin => s.slices += 1,
                Phase::End => {}
                Phase::Instant => s.instants += 1,
                Phase::Counter => s.counters += 1,
                Phase::Lost(n) => {
                    s.loss_marks += 1;
                    s.lost_events += n.unwrap_or(0);
                }
                Phase::Damaged(_) => s.loss_marks += 1,
            }
            if e.flow != 0 {
                *flows.entry(e.flow).or_default() += 1;
            }
        }
        s.flows = flows.values().filter(|&&n| n >= 2).count() as u64;
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

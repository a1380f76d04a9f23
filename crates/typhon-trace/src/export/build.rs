//! Building a [`Timeline`] from a [`TraceFile`]: every record read in file order becomes a
//! slice, an instant, a loss mark or (ThreadInfo) a thread's name, per thread, before the
//! slices are laid out in lanes (`lanes`) and the flows linked (`flows`).

use super::error::ExportError;
use super::fnv::FnvMap;
use super::lanes::Slice;
use super::timeline::{Event, Phase, Thread, Timeline, Track, MAX_TIME, SYNTHETIC_TID};
use crate::tracedat::{TraceDatError, TraceFile};
use typhon_recorder::codec::records::{self, Record as Body};

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

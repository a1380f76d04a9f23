//! What `typhon-rec live` knows about the followed recording, bounded however long it runs.
//!
//! - Every tick keeps a summary (slot, start, duration) while it is among the last
//!   [`TICKS_KEPT`]; older ones fold into [`Older`] (count, over budget, the worst one).
//! - The records themselves (the *detail*: what a flame chart and an export of chosen ticks
//!   are made from) are kept for the last [`DETAIL_NS`] and at most [`DETAIL_BYTES`] of
//!   payload, whichever is less; a tick older than the detail keeps only its summary.
//! - Spans by name and the commands of server recordings are counted in one-second buckets
//!   of the last [`WINDOW_S`] seconds, each with at most [`SAMPLES`] durations per name
//!   (reservoir-sampled past that, so the percentiles of a busy name are estimates while the
//!   count and the max stay exact).
//! - Names: the first [`NAMES_KEPT`] distinct span names are told apart, later ones are
//!   counted as "(other names)".
//! - Counters (Counter records, CounterIds resolved by the follower): the first
//!   [`COUNTERS_KEPT`] names each keep a ring of their values of the last [`COUNTER_NS`], at
//!   most [`COUNTER_POINTS`] of them (a counter written faster keeps a shorter stretch); the
//!   values of later names are counted, and their names up to [`OTHER_COUNTERS_COUNTED`].

use super::detail::Detail;
use std::collections::{BTreeMap, HashMap, VecDeque};
use typhon_recorder::codec::records::{decode, decode_fields, FieldValue, Record};
use typhon_recorder::codec::{Shape, TraceEventKind};
use typhon_trace::tracedat::OwnedRecord;

mod counters;
pub use counters::{CounterSeries, OtherCounters};

/// Tick summaries kept (about 18 minutes at 60 Hz); older ticks are folded.
pub const TICKS_KEPT: usize = 65_536;
/// How far back the detail reaches (ns), at most.
pub const DETAIL_NS: u64 = 10_000_000_000;
/// Bytes the detail keeps, at most (its records' payloads and a 16-byte header each): a
/// heavy recording keeps less than [`DETAIL_NS`]. The page needs the detail for the flame
/// chart of a tick the user clicks among the last seconds and for the worst tick's spans,
/// taken [`SETTLE_NS`] after its end: 16 MiB hold about 3 s of the heavy demo (2 workers at
/// 50 000 records/s), and a viewer that keeps up fills them within seconds, so its memory
/// reaches its long-run size early.
pub const DETAIL_BYTES: usize = 16 << 20;
/// The span table's and the command rates' window (s).
pub const WINDOW_S: u64 = 5;
/// Durations kept per name and second.
pub const SAMPLES: usize = 1024;
/// Distinct span names told apart.
pub const NAMES_KEPT: usize = 1024;
/// Counters charted, at most; the values of later names are counted.
pub const COUNTERS_KEPT: usize = 32;
/// How far back a counter's values are kept (ns).
pub const COUNTER_NS: u64 = 10_000_000_000;
/// Values kept per counter, at most (16 bytes each).
pub const COUNTER_POINTS: usize = 4096;
/// Names of the counters past [`COUNTERS_KEPT`] counted, at most (by a 64-bit hash each).
pub const OTHER_COUNTERS_COUNTED: usize = 4096;
/// Description records (ThreadInfo, `tracing` span infos and callsites) kept for exports.
const META_KEPT: usize = 8192;
/// Commands waiting for their CommandConsumed, at most (older ones are forgotten).
const PENDING_KEPT: usize = 65_536;
/// How long after its end the worst tick's spans are taken out of the detail: spans arrive
/// when they end and other threads' pages come later, up to the max page age.
const SETTLE_NS: u64 = 2_000_000_000;
/// Spans kept of the worst tick, at most.
const WORST_SPANS: usize = 20_000;

/// One tick's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Its number among all ticks of the recording (from 0, in the order they ended).
    pub id: u64,
    /// The slot it ran on.
    pub slot: u32,
    /// TickStart (ns, the recording's clock).
    pub start: u64,
    /// TickEnd − TickStart (ns).
    pub dur: u64,
}

/// The ticks that no longer have a summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Older {
    /// Ticks folded.
    pub count: u64,
    /// Of those, over the budget.
    pub over: u64,
    /// The longest of them.
    pub worst: Option<Tick>,
}

/// Durations of one name in one second: exact count and max, sampled durations.
#[derive(Default)]
struct Agg {
    count: u64,
    max: u64,
    samples: Vec<u64>,
}

impl Agg {
    fn add(&mut self, d: u64, rng: &mut u64) {
        self.count += 1;
        self.max = self.max.max(d);
        if self.samples.len() < SAMPLES {
            self.samples.push(d);
        } else {
            // Reservoir: the n-th value replaces a kept one with probability SAMPLES / n.
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            let j = (*rng % self.count) as usize;
            if j < SAMPLES {
                self.samples[j] = d;
            }
        }
    }
}

/// One second of spans and commands.
#[derive(Default)]
struct Second {
    sec: u64,
    spans: HashMap<u32, Agg>,
    received: u64,
    admitted: u64,
    dropped: u64,
    consumed: u64,
    egress: u64,
    latency: Agg,
}

/// One row of the span table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanRow {
    pub name: String,
    pub count: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// A span of a flame chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameSpan {
    pub slot: u32,
    pub name: String,
    pub start: u64,
    pub dur: u64,
    pub depth: u32,
    pub span_id: u64,
    pub trace: Option<(u64, u64)>,
}

/// The followed recording as the page sees it.
pub struct Model {
    /// The tick budget (ns).
    pub budget: u64,
    /// `live`, `finishing`, `finished` or `killed`.
    pub state: String,
    /// The follower's hint (e.g. to run `recover`).
    pub message: Option<String>,
    /// Records read.
    pub records: u64,
    /// The recording's own loss counters.
    pub losses: BTreeMap<String, u64>,
    /// Pages and records this viewer skipped because it fell behind (not the recording's).
    pub skipped_pages: u64,
    pub skipped_records: u64,
    /// Segments of a rotating recording deleted by its `keep` before this viewer read them.
    pub skipped_segments: u64,
    /// Thread names per slot.
    pub threads: BTreeMap<u32, String>,
    /// Ticks that ended, in all.
    pub ticks_total: u64,
    /// Of those, over the budget.
    pub ticks_over: u64,
    /// The last [`TICKS_KEPT`] ticks.
    pub ticks: VecDeque<Tick>,
    /// The ticks before those.
    pub older: Older,
    /// Bumped at every change: the event stream sends when it moved.
    pub version: u64,
    /// Undecodable records (counted, not shown otherwise).
    pub undecodable: u64,
    /// The charted counters, in the order their names were first seen.
    pub counters: Vec<CounterSeries>,
    /// The counters past those.
    pub other_counters: OtherCounters,
    counter_index: HashMap<String, usize>,
    open_ticks: HashMap<u32, u64>,
    detail: Detail,
    /// Ticks of at least this id may have their records in the detail.
    detail_from_ts: u64,
    meta: VecDeque<OwnedRecord>,
    thread_info: BTreeMap<u32, OwnedRecord>,
    names: HashMap<String, u32>,
    name_list: Vec<String>,
    seconds: VecDeque<Second>,
    pending: HashMap<(u32, u16), u64>,
    commands_seen: bool,
    newest: u64,
    rng: u64,
    /// The longest tick so far whose spans are still to be taken (once the stream is
    /// [`SETTLE_NS`] past its end).
    worst_pending: Option<Tick>,
    /// The longest tick's spans, kept past the detail so that "jump to worst" shows them.
    worst_flame: Option<(Tick, Vec<FlameSpan>)>,
}

const OTHER_NAMES: u32 = u32::MAX;

impl Model {
    /// An empty model with a tick budget in ns.
    pub fn new(budget: u64) -> Model {
        Model {
            budget,
            state: "opening".into(),
            message: None,
            records: 0,
            losses: BTreeMap::new(),
            skipped_pages: 0,
            skipped_records: 0,
            skipped_segments: 0,
            threads: BTreeMap::new(),
            ticks_total: 0,
            ticks_over: 0,
            // Its bound at once (2 MiB of address space, resident as ticks come): no doubling,
            // which would hold the old summaries and a copy twice their size at once.
            ticks: VecDeque::with_capacity(TICKS_KEPT),
            older: Older::default(),
            version: 0,
            undecodable: 0,
            counters: Vec::new(),
            other_counters: OtherCounters::default(),
            counter_index: HashMap::new(),
            open_ticks: HashMap::new(),
            detail: Detail::default(),
            detail_from_ts: 0,
            meta: VecDeque::new(),
            thread_info: BTreeMap::new(),
            names: HashMap::new(),
            name_list: Vec::new(),
            seconds: VecDeque::new(),
            pending: HashMap::new(),
            commands_seen: false,
            newest: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            worst_pending: None,
            worst_flame: None,
        }
    }

    fn name_id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        if self.name_list.len() >= NAMES_KEPT {
            return OTHER_NAMES;
        }
        let i = self.name_list.len() as u32;
        self.names.insert(name.to_owned(), i);
        self.name_list.push(name.to_owned());
        i
    }

    fn name_of(&self, id: u32) -> &str {
        self.name_list
            .get(id as usize)
            .map_or("(other names)", String::as_str)
    }

    /// The bucket of second `ts / 1 s`, made if new; `None` for a time older than the window.
    fn second(&mut self, ts: u64) -> Option<&mut Second> {
        let sec = ts / 1_000_000_000;
        let newest = self.newest / 1_000_000_000;
        if sec + WINDOW_S <= newest {
            return None;
        }
        let pos = self.seconds.iter().position(|s| s.sec == sec);
        let i = match pos {
            Some(i) => i,
            None => {
                let at = self.seconds.partition_point(|s| s.sec < sec);
                self.seconds.insert(
                    at,
                    Second {
                        sec,
                        ..Second::default()
                    },
                );
                at
            }
        };
        self.seconds.get_mut(i)
    }

    /// Takes one record (in time order per slot).
    pub fn add(&mut self, r: OwnedRecord) {
        self.records += 1;
        self.version += 1;
        self.newest = self.newest.max(r.ts);
        let Ok(d) = decode_fields(&r.data) else {
            self.undecodable += 1;
            self.keep(r);
            return;
        };
        let Some(def) = d.def else {
            self.undecodable += 1;
            self.keep(r);
            return;
        };
        // The record's own time: a span's start (it is written at its end, the page time).
        let ts = d.header.timestamp.max(0) as u64;
        let slot = r.cpu;
        let u = |n: &str| d.get(n).and_then(FieldValue::as_u64).unwrap_or(0);
        let mut meta = false;
        if def.shape == Shape::Span {
            let dur = d
                .get("duration_ns")
                .and_then(FieldValue::as_i64)
                .unwrap_or(0)
                .max(0) as u64;
            let name = d.get("name").and_then(FieldValue::as_str).unwrap_or("");
            let id = self.name_id(name);
            let mut rng = self.rng;
            if let Some(s) = self.second(ts) {
                s.spans.entry(id).or_default().add(dur, &mut rng);
            }
            self.rng = rng;
        } else {
            match def.kind {
                TraceEventKind::TICK_START => {
                    self.open_ticks.insert(slot, ts);
                }
                TraceEventKind::TICK_END => {
                    if let Some(start) = self.open_ticks.remove(&slot) {
                        self.end_tick(slot, start, ts.saturating_sub(start));
                    }
                }
                TraceEventKind::THREAD_INFO => {
                    if let Some(n) = d.get("name").and_then(FieldValue::as_str) {
                        self.threads.insert(slot, n.to_owned());
                    }
                    self.thread_info.insert(slot, r.clone());
                }
                TraceEventKind::TRACING_SPAN_INFO | TraceEventKind::TRACING_CALLSITE => {
                    meta = true;
                }
                TraceEventKind::COUNTER => {
                    if let Ok((_, Record::Counter { value, name })) = decode(&r.data) {
                        self.counter(name, ts, value.as_f64());
                    }
                }
                TraceEventKind::INGRESS_RECEIVED => {
                    self.commands_seen = true;
                    let key = (u("session") as u32, u("seq") as u16);
                    if self.pending.len() < PENDING_KEPT {
                        self.pending.insert(key, ts);
                    }
                    if let Some(s) = self.second(ts) {
                        s.received += 1;
                    }
                }
                TraceEventKind::INGRESS_ADMITTED => {
                    if let Some(s) = self.second(ts) {
                        s.admitted += 1;
                    }
                }
                TraceEventKind::INGRESS_DROPPED => {
                    self.pending.remove(&(u("session") as u32, u("seq") as u16));
                    if let Some(s) = self.second(ts) {
                        s.dropped += 1;
                    }
                }
                TraceEventKind::COMMAND_CONSUMED => {
                    let got = self.pending.remove(&(u("session") as u32, u("seq") as u16));
                    let mut rng = self.rng;
                    if let Some(s) = self.second(ts) {
                        s.consumed += 1;
                        if let Some(t0) = got {
                            s.latency.add(ts.saturating_sub(t0), &mut rng);
                        }
                    }
                    self.rng = rng;
                }
                TraceEventKind::EGRESS_SENT => {
                    if let Some(s) = self.second(ts) {
                        s.egress += 1;
                    }
                }
                _ => {}
            }
        }
        if meta {
            if self.meta.len() >= META_KEPT {
                self.meta.pop_front();
            }
            self.meta.push_back(r.clone());
        }
        self.keep(r);
        self.settle_worst();
        self.trim();
    }

    /// The newest record's time (ns): what the page's counter times are relative to.
    pub fn newest(&self) -> u64 {
        self.newest
    }

    fn end_tick(&mut self, slot: u32, start: u64, dur: u64) {
        let t = Tick {
            id: self.ticks_total,
            slot,
            start,
            dur,
        };
        self.ticks_total += 1;
        if dur > self.budget {
            self.ticks_over += 1;
        }
        if self.ticks.len() >= TICKS_KEPT {
            if let Some(old) = self.ticks.pop_front() {
                self.older.count += 1;
                self.older.over += u64::from(old.dur > self.budget);
                if self.older.worst.is_none_or(|w| old.dur > w.dur) {
                    self.older.worst = Some(old);
                }
            }
        }
        self.ticks.push_back(t);
        let worst = self
            .worst_pending
            .or(self.worst_flame.as_ref().map(|w| w.0));
        if worst.is_none_or(|w| dur > w.dur) {
            self.worst_pending = Some(t);
        }
    }

    /// Takes the worst tick's spans once they have all arrived (or `now`: the recording ended).
    pub fn settle_worst_now(&mut self) {
        self.settle(true);
    }

    fn settle_worst(&mut self) {
        self.settle(false);
    }

    fn settle(&mut self, now: bool) {
        let Some(t) = self.worst_pending else { return };
        if !now && self.newest < t.start + t.dur + SETTLE_NS {
            return;
        }
        self.worst_pending = None;
        if self.has_detail(t.start) {
            let mut spans = self.flame(t.start, t.start + t.dur);
            spans.truncate(WORST_SPANS);
            self.worst_flame = Some((t, spans));
        }
    }

    /// The spans of tick `t`: from the detail, or those kept of the worst tick.
    pub fn tick_spans(&self, t: &Tick) -> Option<Vec<FlameSpan>> {
        if self.has_detail(t.start) {
            return Some(self.flame(t.start, t.start + t.dur));
        }
        match &self.worst_flame {
            Some((w, spans)) if w.id == t.id => Some(spans.clone()),
            _ => None,
        }
    }

    fn keep(&mut self, r: OwnedRecord) {
        self.detail.push(r.cpu, r.ts, &r.data, r.missed_before);
    }

    /// Drops the detail past its bounds, the seconds past the window and commands that waited
    /// longer than the window.
    fn trim(&mut self) {
        while let Some(ts) = self.detail.front_ts() {
            if self.detail.bytes() <= DETAIL_BYTES && ts + DETAIL_NS >= self.newest {
                break;
            }
            self.detail_from_ts = self.detail_from_ts.max(ts + 1);
            self.detail.pop_front();
        }
        let newest = self.newest / 1_000_000_000;
        while self
            .seconds
            .front()
            .is_some_and(|s| s.sec + WINDOW_S <= newest)
        {
            self.seconds.pop_front();
        }
        if self.pending.len() >= PENDING_KEPT {
            let cut = self.newest.saturating_sub(WINDOW_S * 1_000_000_000);
            self.pending.retain(|_, t| *t >= cut);
        }
    }

    /// The span table: per name over the window, by p99, slowest first.
    pub fn spans(&self) -> Vec<SpanRow> {
        let mut by: HashMap<u32, (u64, u64, Vec<u64>)> = HashMap::new();
        for s in &self.seconds {
            for (&id, a) in &s.spans {
                let e = by.entry(id).or_default();
                e.0 += a.count;
                e.1 = e.1.max(a.max);
                e.2.extend_from_slice(&a.samples);
            }
        }
        let mut rows: Vec<SpanRow> = by
            .into_iter()
            .map(|(id, (count, max, mut v))| {
                v.sort_unstable();
                SpanRow {
                    name: self.name_of(id).to_owned(),
                    count,
                    p50_ns: rank(&v, 0.5),
                    p99_ns: rank(&v, 0.99).min(max),
                    max_ns: max,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.p99_ns.cmp(&a.p99_ns).then_with(|| a.name.cmp(&b.name)));
        rows
    }

    /// Commands over the window: rates per second, received→consumed latency, drops.
    pub fn commands(&self) -> serde_json::Value {
        if !self.commands_seen {
            return serde_json::Value::Null;
        }
        let (mut rec, mut adm, mut drop, mut con, mut egr) = (0, 0, 0, 0, 0);
        let mut lat = Vec::new();
        let mut lat_max = 0;
        for s in &self.seconds {
            rec += s.received;
            adm += s.admitted;
            drop += s.dropped;
            con += s.consumed;
            egr += s.egress;
            lat.extend_from_slice(&s.latency.samples);
            lat_max = lat_max.max(s.latency.max);
        }
        lat.sort_unstable();
        let secs = self.seconds.len().max(1) as f64;
        serde_json::json!({
            "window_s": self.seconds.len(),
            "received_per_s": rec as f64 / secs,
            "admitted_per_s": adm as f64 / secs,
            "dropped_per_s": drop as f64 / secs,
            "consumed_per_s": con as f64 / secs,
            "egress_per_s": egr as f64 / secs,
            "dropped": drop,
            "latency_p50_ns": rank(&lat, 0.5),
            "latency_p99_ns": rank(&lat, 0.99).min(lat_max),
            "latency_max_ns": lat_max,
        })
    }

    /// The tick with this id, while its summary is kept.
    pub fn tick(&self, id: u64) -> Option<Tick> {
        let first = self.ticks.front()?.id;
        self.ticks.get(id.checked_sub(first)? as usize).copied()
    }

    /// The longest tick of all (summaries and folded).
    pub fn worst(&self) -> Option<Tick> {
        let kept = self
            .ticks
            .iter()
            .max_by_key(|t| (t.dur, std::cmp::Reverse(t.id)));
        match (kept.copied(), self.older.worst) {
            (Some(k), Some(o)) if o.dur > k.dur => Some(o),
            (k, o) => k.or(o),
        }
    }

    /// Whether the records of `[from, to]` are still in the detail.
    pub fn has_detail(&self, from: u64) -> bool {
        from >= self.detail_from_ts
    }

    /// The spans of `[from, to]` (ns) on every slot, each with its depth: from its parent's
    /// when that is among them, else from the spans of its slot that contain it.
    pub fn flame(&self, from: u64, to: u64) -> Vec<FlameSpan> {
        let mut spans = Vec::new();
        let mut parents = Vec::new();
        for r in self.detail.iter() {
            let Ok(d) = decode_fields(r.data) else {
                continue;
            };
            if d.def.is_none_or(|k| k.shape != Shape::Span) {
                continue;
            }
            let dur = d
                .get("duration_ns")
                .and_then(FieldValue::as_i64)
                .unwrap_or(0)
                .max(0) as u64;
            let start = d.header.timestamp.max(0) as u64;
            if start > to || start.saturating_add(dur) < from {
                continue;
            }
            let u = |n: &str| d.get(n).and_then(FieldValue::as_u64);
            let trace = match (u("trace_id_hi"), u("trace_id_lo")) {
                (Some(h), Some(l)) if h | l != 0 => Some((h, l)),
                _ => None,
            };
            parents.push(u("parent_span_id").unwrap_or(0));
            spans.push(FlameSpan {
                slot: r.cpu,
                name: d
                    .get("name")
                    .and_then(FieldValue::as_str)
                    .unwrap_or("")
                    .to_owned(),
                start,
                dur,
                depth: 0,
                span_id: u("span_id").unwrap_or(0),
                trace,
            });
        }
        depths(&mut spans, &parents);
        spans
    }

    /// The records of `[from, to]` (ns), with the description records before them (thread
    /// names, `tracing` span infos and callsites): what an export of chosen ticks is made of.
    pub fn records_between(&self, from: u64, to: u64) -> Vec<OwnedRecord> {
        let mut out: Vec<OwnedRecord> = self.thread_info.values().cloned().collect();
        out.extend(self.meta.iter().filter(|r| r.ts < from).cloned());
        out.extend(
            self.detail
                .iter()
                .filter(|r| r.ts >= from && r.ts <= to)
                .map(|r| r.to_owned()),
        );
        out
    }

    /// Bytes of record payload held (the detail and the descriptions) and of counter values.
    pub fn held_bytes(&self) -> usize {
        self.detail.bytes()
            + self.meta.iter().map(|r| r.data.len()).sum::<usize>()
            + self
                .counters
                .iter()
                .map(|c| c.points.len() * 16 + c.name.len())
                .sum::<usize>()
    }
}

/// Nearest rank of sorted `v` (0 when empty).
fn rank(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let r = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[r - 1]
}

/// Sets each span's depth: one below its parent when the parent is in `spans`, else the count
/// of spans of its slot that strictly contain it (spans arrive at their ends, so a parent comes
/// after its children).
fn depths(spans: &mut [FlameSpan], parents: &[u64]) {
    let by_id: HashMap<(u32, u64), usize> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.span_id != 0)
        .map(|(i, s)| ((s.slot, s.span_id), i))
        .collect();
    let mut depth: Vec<Option<u32>> = vec![None; spans.len()];
    for i in 0..spans.len() {
        let mut chain = Vec::new();
        let mut at = i;
        let base = loop {
            if let Some(d) = depth[at] {
                break d;
            }
            chain.push(at);
            if chain.len() > 256 {
                break 0;
            }
            match by_id.get(&(spans[at].slot, parents[at])) {
                Some(&p) if parents[at] != 0 && p != at => at = p,
                _ => {
                    let s = &spans[at];
                    let contained = spans
                        .iter()
                        .filter(|o| {
                            o.slot == s.slot
                                && o.start <= s.start
                                && o.start + o.dur >= s.start + s.dur
                                && (o.dur > s.dur || o.start < s.start)
                        })
                        .count() as u32;
                    depth[at] = Some(contained);
                    chain.pop();
                    break contained;
                }
            }
        };
        for (k, &c) in chain.iter().rev().enumerate() {
            depth[c] = Some(base + 1 + k as u32);
        }
    }
    for (s, d) in spans.iter_mut().zip(depth) {
        s.depth = d.unwrap_or(0);
    }
}

#[cfg(test)]
mod tests {
    use super::counters::{thin, CounterView};
    use super::*;
    use typhon_recorder::codec::records::{
        write_counter, write_named_span, write_thread_info, write_tick_end, write_tick_start,
        CounterValue, SpanExt, ThreadKind,
    };

    fn rec(slot: u32, ts: u64, data: Vec<u8>) -> OwnedRecord {
        OwnedRecord {
            cpu: slot,
            ts,
            at: 0,
            data,
            missed_before: None,
        }
    }

    fn tick(m: &mut Model, slot: u32, start: u64, dur: u64) {
        let mut d = vec![0u8; 64];
        let n = write_tick_start(&mut d, slot as u8, start as i64).unwrap();
        m.add(rec(slot, start, d[..n].to_vec()));
        let n = write_tick_end(&mut d, slot as u8, (start + dur) as i64, 0, 1).unwrap();
        m.add(rec(slot, start + dur, d[..n].to_vec()));
    }

    /// A span from `start` for `dur`, written (page time) at its end.
    fn span(m: &mut Model, slot: u32, start: u64, dur: u64, id: u64, parent: u64, name: &str) {
        let mut d = vec![0u8; 64 + name.len()];
        let ext = SpanExt {
            duration_ns: dur as i64,
            span_id: id,
            parent_span_id: parent,
        };
        let n = write_named_span(&mut d, slot as u8, start as i64, &ext, name).unwrap();
        m.add(rec(slot, start + dur, d[..n].to_vec()));
    }

    #[test]
    fn flame_nests_by_parents_then_by_containment() {
        let mut m = Model::new(16_600_000);
        let mut d = vec![0u8; 64];
        let n = write_thread_info(&mut d, 3, 0, 7, "game-loop", ThreadKind::Main).unwrap();
        m.add(rec(3, 0, d[..n].to_vec()));
        // Children end (and arrive) before their parent; on slot 4 no parent ids at all.
        span(&mut m, 3, 1_100, 100, 11, 10, "child");
        span(&mut m, 3, 1_150, 20, 12, 11, "grandchild");
        span(&mut m, 3, 1_000, 900, 10, 0, "root");
        span(&mut m, 4, 1_200, 50, 0, 0, "inner");
        span(&mut m, 4, 1_000, 500, 0, 0, "outer");
        tick(&mut m, 3, 1_000, 1_000);
        let t = m.tick(0).unwrap();
        assert_eq!((t.start, t.dur, t.slot), (1_000, 1_000, 3));
        let f = m.tick_spans(&t).unwrap();
        let depth: BTreeMap<&str, u32> = f.iter().map(|s| (s.name.as_str(), s.depth)).collect();
        let want = [
            ("child", 1),
            ("grandchild", 2),
            ("inner", 1),
            ("outer", 0),
            ("root", 0),
        ];
        assert_eq!(depth, want.into_iter().collect());
        assert_eq!(m.threads.get(&3).map(String::as_str), Some("game-loop"));
        // Outside the tick: nothing.
        assert!(m.flame(5_000, 6_000).is_empty());
    }

    #[test]
    fn spans_by_name_over_the_window_by_p99() {
        let mut m = Model::new(16_600_000);
        let s = 1_000_000_000;
        for i in 0..100u64 {
            span(&mut m, 1, s + i * 1000, 10 + i, 0, 0, "fast");
        }
        span(&mut m, 1, s + 500_000, 5_000, 0, 0, "slow");
        let rows = m.spans();
        assert_eq!(rows[0].name, "slow");
        let fast = &rows[1];
        assert_eq!(
            (fast.count, fast.p50_ns, fast.p99_ns, fast.max_ns),
            (100, 59, 108, 109)
        );
        // Ten seconds on, the window (5 s) holds none of them.
        span(&mut m, 1, 12 * s, 1, 0, 0, "late");
        let names: Vec<String> = m.spans().into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["late"]);
    }

    #[test]
    fn memory_is_bounded_and_old_ticks_fold() {
        let mut m = Model::new(1_000);
        let n = TICKS_KEPT as u64 + 100;
        // One long tick early, then many short ones, each with a span of a long name: more
        // record bytes (29 MB) than the detail keeps.
        let name = "w".repeat(400);
        tick(&mut m, 1, 0, 5_000);
        for i in 1..n {
            let t = 10_000 + i * 2_000;
            span(&mut m, 1, t, 500, 0, 0, &name);
            tick(&mut m, 1, t, 1_000 + i % 7);
        }
        assert_eq!(m.ticks_total, n);
        assert_eq!(m.ticks.len(), TICKS_KEPT);
        assert_eq!(m.older.count, 100);
        assert_eq!(m.older.worst.map(|t| (t.id, t.dur)), Some((0, 5_000)));
        assert_eq!(m.worst().map(|t| t.id), Some(0));
        // Over budget: the long one and the ticks of 1001..=1006 ns.
        let over = 1 + (1..n).filter(|i| i % 7 != 0).count() as u64;
        assert_eq!(m.ticks_over, over);
        assert!(m.tick(0).is_none() && m.tick(100).is_some());
        // The detail is bounded by bytes here (its 10 s hold all 0.13 s of these records).
        let held = m.detail.bytes();
        assert!(held <= DETAIL_BYTES && held > DETAIL_BYTES - 1024, "{held}");
        assert!(!m.has_detail(0) && m.has_detail(m.newest));
        // The first tick left the detail before its spans could settle (2 s): only its summary.
        assert_eq!(m.tick_spans(&m.older.worst.unwrap()), None);
        assert_eq!(m.records, 1 + 3 * (n - 1) + 1);
    }

    fn counter(m: &mut Model, ts: u64, name: &str, v: CounterValue) {
        let mut d = vec![0u8; 64 + name.len()];
        let n = write_counter(&mut d, 1, ts as i64, v, name).unwrap();
        m.add(rec(1, ts, d[..n].to_vec()));
    }

    #[test]
    fn counters_keep_the_last_seconds_of_a_bounded_number_of_names() {
        let mut m = Model::new(16_600_000);
        let s = 1_000_000_000u64;
        // "depth" every 1 ms for 30 s: more values than a ring holds, and older than it keeps.
        for i in 0..30_000u64 {
            counter(
                &mut m,
                s + i * 1_000_000,
                "depth",
                CounterValue::from_i64(i as i64),
            );
        }
        counter(&mut m, 31 * s, "load", CounterValue::from_f64(0.25));
        // More names than are charted: the rest counted.
        for k in 0..COUNTERS_KEPT + 8 {
            counter(&mut m, 31 * s, &format!("c{k}"), CounterValue::from_i64(1));
        }
        assert_eq!(m.counters.len(), COUNTERS_KEPT);
        assert_eq!(m.counters[0].name, "depth");
        assert_eq!(m.counters[0].count, 30_000);
        assert!(m.counters[0].points.len() <= COUNTER_POINTS);
        let last = *m.counters[0].points.back().unwrap();
        assert_eq!(last, (s + 29_999_000_000, 29_999.0));
        // 2 charted names before them ("depth", "load"): the last 10 of the c's are counted.
        assert_eq!(
            (m.other_counters.values, m.other_counters.names()),
            (10, 10)
        );
        let view = m.counter_view(100);
        let want = CounterView {
            name: "load",
            count: 1,
            min: Some(0.25),
            max: Some(0.25),
            points: vec![(31 * s, 0.25)],
        };
        assert_eq!(view[1], want);
        // Within the 10 s before the newest record, thinned, the last value kept; min and
        // max over the values kept, not only those sent.
        let d = &view[0];
        assert!(
            d.points.len() <= 100 && d.points.len() > 50,
            "{}",
            d.points.len()
        );
        assert_eq!(*d.points.last().unwrap(), last);
        assert!(d.points.iter().all(|p| p.0 + COUNTER_NS >= 31 * s));
        assert!(d.points.windows(2).all(|w| w[0].0 < w[1].0));
        let kept = &m.counters[0].points;
        assert_eq!(d.max, Some(29_999.0));
        assert_eq!(d.min, Some(kept[0].1));
        // A sawtooth thinned keeps its teeth: each stretch's least and greatest.
        let saw: Vec<(u64, f64)> = (0..1000u64).map(|i| (i, (i % 10) as f64)).collect();
        let t = thin(&saw, 21);
        assert!(t.len() <= 21, "{}", t.len());
        assert!(t.iter().filter(|p| p.1 == 0.0).count() >= 10, "{t:?}");
        assert!(t.iter().filter(|p| p.1 == 9.0).count() >= 10, "{t:?}");
        assert!(m.held_bytes() < COUNTERS_KEPT * (COUNTER_POINTS * 16 + 64));
    }
}

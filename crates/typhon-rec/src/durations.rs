//! Duration statistics for `typhon-rec stats`: per span name, per tick (TickStart … TickEnd of
//! one slot) and per phase (PhaseStart … PhaseEnd of one phase on one slot), with tick
//! overruns against a budget.
//!
//! Records are fed one at a time as the file streams by. Each series keeps its durations
//! exactly while it has at most [`EXACT_MAX`] of them (so small recordings, and tests, get exact
//! percentiles), then moves them into an HdrHistogram of 3 significant digits (0.1 % relative
//! error) whose size does not grow with the count. A histogram costs about as many bytes as
//! `EXACT_MAX` records take in the file, so memory stays below the file's size whatever the
//! mix of names, and stays flat for a long recording of a few names.
//!
//! The per-name tables (span names, named instants) keep the first [`NAMES_KEPT`] distinct
//! names seen, each exactly. A name first seen once a table is full is folded into its
//! [`Folded`] "other" row: its instances and time are added exactly, and it is counted among
//! the folded names by a 64-bit hash (8 bytes, not the name), so a file of a million distinct
//! names costs a few MiB, not a table row each. Exact top-N by total time in one pass would
//! need every name's total; what is printed instead is exact for every row it shows: the kept
//! names by total time, then the folded ones' sum.

use hdrhistogram::Histogram;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use typhon_recorder::codec::records::{decode_fields, FieldValue};
use typhon_recorder::codec::{Shape, TraceEventKind};
use typhon_recorder::printable::printable;

use crate::timebase::{self, TimeBase};

/// Durations kept exactly per series before switching to a histogram.
pub const EXACT_MAX: usize = 8192;

/// Distinct names a per-name table keeps (with their series); later names are folded.
pub const NAMES_KEPT: usize = 1024;

/// The names a full table folds into its "other" row: counted, with their instances and
/// total time, not kept.
#[derive(Default)]
pub struct Folded {
    /// The names' 64-bit hashes (SipHash with fixed keys), to count them: 8 bytes a name. Two
    /// names of one hash (about one chance in 2^64 / n for n names) would count as one.
    hashes: HashSet<u64>,
    /// Instances of folded names.
    pub count: u64,
    /// Their total duration (ns), saturating (0 for instants).
    pub total: u64,
    /// Their longest duration (ns).
    pub max: u64,
}

impl Folded {
    fn add(&mut self, name: &str, dur: u64) {
        let mut h = std::hash::DefaultHasher::new();
        name.hash(&mut h);
        self.hashes.insert(h.finish());
        self.count += 1;
        self.total = self.total.saturating_add(dur);
        self.max = self.max.max(dur);
    }

    /// Distinct names folded.
    pub fn names(&self) -> u64 {
        self.hashes.len() as u64
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "names": self.names(), "count": self.count, "total_ns": self.total,
            "max_ns": self.max,
        })
    }
}

/// How many of the slowest instances each series names.
pub const SLOWEST: usize = 5;

/// Parses a duration with its unit: `16.6ms`, `500us` (or `µs`), `2s`, `1000ns`. A bare number
/// is refused, since nothing says which unit it means.
///
/// ```ignore
/// assert_eq!(parse_duration("16.6ms"), Ok(16_600_000));
/// ```
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{s:?}: a duration needs a unit (ns, us, ms or s), e.g. 16.6ms"))?;
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => return Err(format!("{s:?}: unknown unit {u:?} (use ns, us, ms or s)")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: {num:?} is not a number"))?;
    let ns = (v * scale).round();
    if !ns.is_finite() || ns <= 0.0 || ns > u64::MAX as f64 / 2.0 {
        return Err(format!("{s:?}: the duration must be above 0 and finite"));
    }
    Ok(ns as u64)
}

/// One instance of a series: its duration, start time (file clock, ns), slot, and for ticks
/// the tick's number on its slot (from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instance {
    /// Duration in ns.
    pub dur: u64,
    /// Start time in the file's clock (ns).
    pub start: u64,
    /// The thread slot.
    pub slot: u32,
    /// For ticks: the tick's number on its slot; for spans, the span id.
    pub id: u64,
}

/// Durations of one series.
enum Samples {
    Exact(Vec<u64>),
    Hist(Box<Histogram<u64>>),
}

/// Records `d`, growing the histogram to it (`saturating_record` would clamp it instead); a
/// value past what it can grow to counts as its highest.
fn put(h: &mut Histogram<u64>, d: u64) {
    if h.record(d).is_err() {
        h.saturating_record(d);
    }
}

/// One series (a span name, the ticks, one phase): count, total, max, percentiles, the slowest.
pub struct Series {
    /// Instances seen.
    pub count: u64,
    /// Sum of durations (ns), saturating.
    pub total: u64,
    /// Longest duration (ns).
    pub max: u64,
    samples: Samples,
    /// The slowest instances (a min-heap of at most [`SLOWEST`]).
    slowest: BinaryHeap<std::cmp::Reverse<Instance>>,
}

impl Default for Series {
    fn default() -> Self {
        Series {
            count: 0,
            total: 0,
            max: 0,
            samples: Samples::Exact(Vec::new()),
            slowest: BinaryHeap::new(),
        }
    }
}

/// The summary of a series: what `stats` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Instances.
    pub count: u64,
    /// Sum of durations (ns).
    pub total: u64,
    /// Mean (ns).
    pub mean: f64,
    /// Percentiles (ns): nearest rank, exact up to [`EXACT_MAX`] instances, else within 0.1 %.
    pub p50: u64,
    /// 90th percentile (ns).
    pub p90: u64,
    /// 99th percentile (ns).
    pub p99: u64,
    /// Longest (ns), always exact.
    pub max: u64,
    /// Whether the percentiles are exact.
    pub exact: bool,
    /// The slowest instances, slowest first.
    pub slowest: Vec<Instance>,
}

impl Series {
    /// Adds one instance.
    pub fn add(&mut self, i: Instance) {
        self.count += 1;
        self.total = self.total.saturating_add(i.dur);
        self.max = self.max.max(i.dur);
        match &mut self.samples {
            Samples::Exact(v) if v.len() < EXACT_MAX => v.push(i.dur),
            Samples::Exact(v) => {
                let mut h = Histogram::<u64>::new(3).expect("3 significant digits are valid");
                // Grows to the longest duration seen: its size is logarithmic in that.
                h.auto(true);
                for &d in v.iter() {
                    put(&mut h, d);
                }
                put(&mut h, i.dur);
                self.samples = Samples::Hist(Box::new(h));
            }
            Samples::Hist(h) => put(h, i.dur),
        }
        self.slowest.push(std::cmp::Reverse(i));
        if self.slowest.len() > SLOWEST {
            self.slowest.pop();
        }
    }

    /// Its summary (sorts the exact samples once).
    pub fn summary(&mut self) -> Summary {
        let (p50, p90, p99, exact) = match &mut self.samples {
            Samples::Exact(v) => {
                v.sort_unstable();
                // Nearest rank: the smallest value with at least q of the samples at or below it.
                let q = |q: f64| -> u64 {
                    if v.is_empty() {
                        return 0;
                    }
                    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
                    v[rank - 1]
                };
                (q(0.5), q(0.9), q(0.99), true)
            }
            Samples::Hist(h) => (
                h.value_at_quantile(0.5).min(self.max),
                h.value_at_quantile(0.9).min(self.max),
                h.value_at_quantile(0.99).min(self.max),
                false,
            ),
        };
        let mut slowest: Vec<Instance> = self.slowest.iter().map(|r| r.0).collect();
        slowest.sort_by(|a, b| b.cmp(a));
        Summary {
            count: self.count,
            total: self.total,
            mean: if self.count > 0 {
                self.total as f64 / self.count as f64
            } else {
                0.0
            },
            p50,
            p90,
            p99,
            max: self.max,
            exact,
            slowest,
        }
    }
}

/// Per slot: the open tick (its start and number) and the open phases.
#[derive(Default)]
struct SlotState {
    tick: Option<(u64, u64)>,
    ticks_started: u64,
    phases: HashMap<u8, u64>,
}

/// Everything `stats` learns about durations from the records.
pub struct Durations {
    /// Per span name (NamedSpan and TracedSpan): the first [`NAMES_KEPT`] names.
    pub spans: HashMap<String, Series>,
    /// Spans of the names past those.
    pub spans_folded: Folded,
    /// Ticks: TickStart to the next TickEnd on the same slot.
    pub ticks: Series,
    /// Per phase number: PhaseStart to the PhaseEnd of the same phase on the same slot (named
    /// or not).
    pub phases: BTreeMap<u8, Series>,
    /// The name of each phase that had one (NamedPhaseStart/End; the last one seen).
    pub phase_names: BTreeMap<u8, String>,
    /// NamedInstants per name: the first [`NAMES_KEPT`] names.
    pub instants: BTreeMap<String, u64>,
    /// NamedInstants of the names past those.
    pub instants_folded: Folded,
    /// The tick budget (ns) and the ticks over it.
    pub budget: u64,
    /// Ticks longer than the budget.
    pub overruns: u64,
    /// Ends without a start (a TickEnd with no open tick, a PhaseEnd with no open phase).
    pub unmatched_ends: u64,
    /// Starts never ended (a TickStart followed by another, or open at the end), and phases
    /// started again before their end.
    pub unmatched_starts: u64,
    slots: HashMap<u32, SlotState>,
}

impl Durations {
    /// Empty statistics with a tick budget in ns.
    pub fn new(budget: u64) -> Self {
        Durations {
            spans: HashMap::new(),
            spans_folded: Folded::default(),
            ticks: Series::default(),
            phases: BTreeMap::new(),
            phase_names: BTreeMap::new(),
            instants: BTreeMap::new(),
            instants_folded: Folded::default(),
            budget,
            overruns: 0,
            unmatched_ends: 0,
            unmatched_starts: 0,
            slots: HashMap::new(),
        }
    }

    /// Takes one record (`data` = the record's bytes, `slot` its CPU); records must come in
    /// time order per slot, as the file's merge yields them. Undecodable records are skipped
    /// (the caller counts them).
    pub fn add(&mut self, slot: u32, data: &[u8]) {
        let Ok(d) = decode_fields(data) else { return };
        let Some(def) = d.def else { return };
        let ts = d.header.timestamp.max(0) as u64;
        if def.shape == Shape::Span {
            let dur = d
                .get("duration_ns")
                .and_then(FieldValue::as_i64)
                .unwrap_or(0);
            let name = d.get("name").and_then(FieldValue::as_str).unwrap_or("");
            let id = d.get("span_id").and_then(FieldValue::as_u64).unwrap_or(0);
            let i = Instance {
                dur: dur.max(0) as u64,
                start: ts,
                slot,
                id,
            };
            let full = self.spans.len() >= NAMES_KEPT;
            match self.spans.get_mut(name) {
                Some(s) => s.add(i),
                None if full => self.spans_folded.add(name, i.dur),
                None => {
                    let mut s = Series::default();
                    s.add(i);
                    self.spans.insert(name.to_owned(), s);
                }
            }
            return;
        }
        let st = self.slots.entry(slot).or_default();
        match def.kind {
            TraceEventKind::TICK_START => {
                if st.tick.is_some() {
                    self.unmatched_starts += 1;
                }
                st.tick = Some((ts, st.ticks_started));
                st.ticks_started += 1;
            }
            TraceEventKind::TICK_END => match st.tick.take() {
                Some((start, n)) => {
                    let dur = ts.saturating_sub(start);
                    if dur > self.budget {
                        self.overruns += 1;
                    }
                    self.ticks.add(Instance {
                        dur,
                        start,
                        slot,
                        id: n,
                    });
                }
                None => self.unmatched_ends += 1,
            },
            TraceEventKind::NAMED_INSTANT => {
                let name = d.get("name").and_then(FieldValue::as_str).unwrap_or("");
                let full = self.instants.len() >= NAMES_KEPT;
                match self.instants.get_mut(name) {
                    Some(n) => *n += 1,
                    None if full => {
                        self.instants_folded.add(name, 0);
                    }
                    None => {
                        self.instants.insert(name.to_owned(), 1);
                    }
                }
            }
            TraceEventKind::PHASE_START
            | TraceEventKind::PHASE_END
            | TraceEventKind::NAMED_PHASE_START
            | TraceEventKind::NAMED_PHASE_END => {
                let phase = d.get("phase").and_then(FieldValue::as_u64).unwrap_or(0) as u8;
                if let Some(name) = d.get("name").and_then(FieldValue::as_str) {
                    if self.phase_names.get(&phase).map(String::as_str) != Some(name) {
                        self.phase_names.insert(phase, name.to_owned());
                    }
                }
                if def.kind == TraceEventKind::PHASE_START
                    || def.kind == TraceEventKind::NAMED_PHASE_START
                {
                    if st.phases.insert(phase, ts).is_some() {
                        self.unmatched_starts += 1;
                    }
                } else if let Some(start) = st.phases.remove(&phase) {
                    self.phases.entry(phase).or_default().add(Instance {
                        dur: ts.saturating_sub(start),
                        start,
                        slot,
                        id: 0,
                    });
                } else {
                    self.unmatched_ends += 1;
                }
            }
            _ => {}
        }
    }

    /// Closes the reading: starts still open count as unmatched.
    pub fn finish(&mut self) {
        for st in self.slots.values() {
            self.unmatched_starts += u64::from(st.tick.is_some()) + st.phases.len() as u64;
        }
        self.slots.clear();
    }

    /// How a phase is shown: `physics (phase 1)` when it was named, else `phase 1`.
    pub fn phase_label(&self, phase: u8) -> String {
        match self.phase_names.get(&phase) {
            Some(n) => format!("{n} (phase {phase})"),
            None => format!("phase {phase}"),
        }
    }

    /// The span series sorted by total time, largest first (ties by name).
    pub fn spans_by_total(&mut self) -> Vec<(String, Summary)> {
        let mut v: Vec<(String, Summary)> = self
            .spans
            .iter_mut()
            .map(|(k, s)| (k.clone(), s.summary()))
            .collect();
        v.sort_by(|a, b| b.1.total.cmp(&a.1.total).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

/// A duration for a table: `812ns`, `41.2us`, `16.61ms`, `2.500s` (3–4 significant digits).
pub fn fmt_ns(ns: f64) -> String {
    let (v, u) = if ns < 1e3 {
        return format!("{ns:.0}ns");
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if v < 10.0 {
        format!("{v:.2}{u}")
    } else if v < 100.0 {
        format!("{v:.1}{u}")
    } else {
        format!("{v:.0}{u}")
    }
}

/// The JSON of one series: its summary in ns, the slowest with their times.
fn series_json(m: &Summary, tb: &TimeBase) -> serde_json::Value {
    serde_json::json!({
        "count": m.count, "total_ns": m.total, "mean_ns": m.mean, "p50_ns": m.p50,
        "p90_ns": m.p90, "p99_ns": m.p99, "max_ns": m.max, "exact_percentiles": m.exact,
        "slowest": m.slowest.iter().map(|i| instance_json(i, tb)).collect::<Vec<_>>(),
    })
}

fn instance_json(i: &Instance, tb: &TimeBase) -> serde_json::Value {
    serde_json::json!({
        "duration_ns": i.dur, "slot": i.slot, "id": i.id,
        "start_ns": i.start, "start_rel_ns": tb.rel_ns(i.start) as i64,
        "start_wall": tb.wall_ns(i.start).map(timebase::rfc3339),
    })
}

impl Durations {
    /// Everything as JSON: `tick_budget_ns`, `ticks` (with `overruns`), `phases`, `spans`
    /// (by total time; the names past the kept ones in `spans_other`), `instants` (and
    /// `instants_other`), and the unmatched starts and ends.
    pub fn json(&mut self, tb: &TimeBase) -> serde_json::Value {
        let mut ticks = series_json(&self.ticks.summary(), tb);
        ticks["overruns"] = self.overruns.into();
        let names = &self.phase_names;
        serde_json::json!({
            "tick_budget_ns": self.budget,
            "ticks": ticks,
            "phases": self.phases.iter_mut().map(|(p, s)| {
                let mut v = series_json(&s.summary(), tb);
                v["phase"] = (*p).into();
                if let Some(n) = names.get(p) {
                    v["name"] = n.as_str().into();
                }
                v
            }).collect::<Vec<_>>(),
            "instants": self.instants.iter().map(|(n, c)| {
                serde_json::json!({ "name": n, "count": c })
            }).collect::<Vec<_>>(),
            "spans": self.spans_by_total().iter().map(|(n, m)| {
                let mut v = series_json(m, tb);
                v["name"] = n.as_str().into();
                v
            }).collect::<Vec<_>>(),
            "spans_other": self.spans_folded.json(),
            "instants_other": self.instants_folded.json(),
            "names_kept": NAMES_KEPT,
            "unmatched_starts": self.unmatched_starts,
            "unmatched_ends": self.unmatched_ends,
        })
    }

    /// The tables `stats` prints: ticks and phases, then spans by total time, each with its
    /// slowest instances (start relative to the recording's start).
    pub fn table(&mut self, tb: &TimeBase) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let head = |out: &mut String, what: &str| {
            let _ = writeln!(
                out,
                "\n{what:<24} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}  slowest (start +s)",
                "count", "total", "mean", "p50", "p90", "p99", "max"
            );
        };
        let row = |out: &mut String, name: &str, m: &Summary| {
            let slow: Vec<String> = m
                .slowest
                .iter()
                .take(3)
                .map(|i| {
                    format!(
                        "{} @{:.6}",
                        fmt_ns(i.dur as f64),
                        tb.rel_ns(i.start) as f64 / 1e9
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "{:<24} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}  {}",
                printable(name).to_string(),
                m.count,
                fmt_ns(m.total as f64),
                fmt_ns(m.mean),
                fmt_ns(m.p50 as f64),
                fmt_ns(m.p90 as f64),
                fmt_ns(m.p99 as f64),
                fmt_ns(m.max as f64),
                slow.join(", ")
            );
        };
        // A file without ticks (a server's, say) gets no tick rows: a row of zeros and "0 of
        // 0 ticks over" the budget would say nothing.
        let t = self.ticks.summary();
        if t.count > 0 || !self.phases.is_empty() {
            head(&mut out, "ticks and phases");
        }
        if t.count > 0 {
            row(&mut out, "tick", &t);
        }
        let phases: Vec<u8> = self.phases.keys().copied().collect();
        for p in phases {
            let label = self.phase_label(p);
            if let Some(s) = self.phases.get_mut(&p) {
                row(&mut out, &label, &s.summary());
            }
        }
        if t.count > 0 {
            let _ = writeln!(
                out,
                "tick budget {}: {} of {} ticks over it ({:.1} %)",
                fmt_ns(self.budget as f64),
                self.overruns,
                t.count,
                self.overruns as f64 * 100.0 / t.count as f64
            );
        }
        if self.unmatched_starts + self.unmatched_ends > 0 {
            let _ = writeln!(
                out,
                "unmatched: {} starts without an end, {} ends without a start (not timed)",
                self.unmatched_starts, self.unmatched_ends
            );
        }
        head(&mut out, "spans (by total time)");
        for (n, m) in self.spans_by_total() {
            row(&mut out, &n, &m);
        }
        let f = &self.spans_folded;
        if f.count > 0 {
            let _ = writeln!(
                out,
                "{:<24} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}  the spans of {} more names \
                 (the table keeps the first {NAMES_KEPT} names)",
                "(other)",
                f.count,
                fmt_ns(f.total as f64),
                fmt_ns(f.total as f64 / f.count as f64),
                "-",
                "-",
                "-",
                fmt_ns(f.max as f64),
                f.names()
            );
        }
        if !self.instants.is_empty() {
            let _ = writeln!(out, "\n{:<24} {:>9}", "named instants", "count");
            for (n, c) in &self.instants {
                let _ = writeln!(out, "{:<24} {c:>9}", printable(n).to_string());
            }
            let f = &self.instants_folded;
            if f.count > 0 {
                let _ = writeln!(
                    out,
                    "{:<24} {:>9}  the instants of {} more names (the table keeps the first \
                     {NAMES_KEPT} names)",
                    "(other)",
                    f.count,
                    f.names()
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_refuse_without() {
        assert_eq!(parse_duration("16.6ms"), Ok(16_600_000));
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("500µs"), Ok(500_000));
        assert_eq!(parse_duration("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration("1000ns"), Ok(1000));
        for bad in ["16.6", "ms", "1.2.3ms", "5h", "0ms", "-1ms", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentiles_are_exact_then_within_a_thousandth() {
        let mut s = Series::default();
        for d in 1..=100u64 {
            s.add(Instance {
                dur: d * 1000,
                start: d,
                slot: 1,
                id: d,
            });
        }
        let m = s.summary();
        assert_eq!(
            (m.p50, m.p90, m.p99, m.max),
            (50_000, 90_000, 99_000, 100_000)
        );
        assert!(m.exact);
        assert_eq!(
            m.slowest.iter().map(|i| i.dur).collect::<Vec<_>>(),
            [100_000, 99_000, 98_000, 97_000, 96_000]
        );
        let mut s = Series::default();
        let n = 3 * EXACT_MAX as u64;
        for d in 1..=n {
            s.add(Instance {
                dur: d * 1000,
                start: d,
                slot: 1,
                id: d,
            });
        }
        let m = s.summary();
        assert!(!m.exact);
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert!(near(m.p50, n / 2 * 1000), "{}", m.p50);
        assert!(near(m.p99, n * 990), "{}", m.p99);
        assert_eq!(m.max, n * 1000);
        assert_eq!(m.count, n);
    }
}

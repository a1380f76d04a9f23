//! The rows of `typhon-rec stats`: counts, spans and rates per slot, per thread of a reused
//! slot, and per kind.

use crate::select::Owner;
use typhon_trace::tracedat::TraceFile;

#[derive(Default)]
pub struct Acc {
    pub count: u64,
    pub missed: u64,
    pub damaged: u64,
    pub first: Option<u64>,
    pub last: u64,
}

impl Acc {
    pub fn add(&mut self, ts: u64) {
        self.count += 1;
        self.first.get_or_insert(ts);
        self.last = self.last.max(ts);
    }
    /// From its first record to its last.
    pub fn span_s(&self) -> f64 {
        self.first.map_or(0.0, |f| (self.last - f) as f64 / 1e9)
    }
    /// Records a second between its first record and its last: `None` for fewer than two
    /// records or no time between them (a burst has no rate to speak of).
    pub fn rate(&self) -> Option<f64> {
        let s = self.span_s();
        (self.count >= 2 && s > 0.0).then(|| (self.count - 1) as f64 / s)
    }
    pub fn rate_text(&self) -> String {
        self.rate()
            .map_or_else(|| "-".into(), |r| format!("{r:.0}"))
    }
}

/// The threads a slot kept records of, each with its own counts (the first [`MAX_OWNERS`]).
#[derive(Default)]
pub struct SlotAcc {
    pub acc: Acc,
    pub owners: Vec<(Option<i32>, String, Acc)>,
    /// Threads past the kept ones, and the latest thread's name.
    pub more_owners: u64,
    latest: (Option<i32>, String),
}

/// Threads of a reused slot the table lists under its row.
pub const OWNER_ROWS: usize = 8;

/// Threads a slot's row names and counts one by one (a slot reused by thousands of threads
/// counts the rest).
const MAX_OWNERS: usize = 64;

impl SlotAcc {
    /// A kept record of the slot's current owner (`None`: no ThreadInfo seen yet; `name` is
    /// then the file's cmdline for the slot).
    pub fn add(&mut self, ts: u64, owner: Option<&Owner>, name: &str) {
        self.acc.add(ts);
        let tid = owner.map(|o| o.tid);
        let same = |o: &(Option<i32>, String, Acc)| o.1 == name && (o.0.is_none() || o.0 == tid);
        match self.owners.last_mut() {
            Some(o) if same(o) => {
                o.0 = o.0.or(tid);
                o.2.add(ts);
                return;
            }
            _ if self.more_owners > 0 && self.latest.0 == tid && self.latest.1 == name => return,
            _ => {}
        }
        self.latest = (tid, name.to_owned());
        if self.owners.len() < MAX_OWNERS {
            let mut a = Acc::default();
            a.add(ts);
            self.owners.push((tid, name.to_owned(), a));
        } else {
            self.more_owners += 1;
        }
    }

    /// The slot's name: its thread's, or `first → second`, or `first → … → last (N threads)`.
    pub fn label(&self, fallback: &str) -> String {
        let n = self.owners.len() as u64 + self.more_owners;
        match (self.owners.first(), n) {
            (None, _) => fallback.to_owned(),
            (Some(o), 1) => o.1.clone(),
            (Some(a), 2) => format!("{} → {}", a.1, self.latest.1),
            (Some(a), n) => format!("{} → … → {} ({n} threads)", a.1, self.latest.1),
        }
    }
}

/// One slot's JSON in `stats --json`: its records and their span and rate, its counters, and
/// each thread that owned it with its own.
pub fn slot_json(
    f: &TraceFile,
    c: u32,
    sa: &SlotAcc,
    m: crate::session::SlotCounters,
) -> serde_json::Value {
    let a = &sa.acc;
    let mut v = serde_json::json!({
        "slot": c, "name": sa.label(f.cmdline(i64::from(c)).unwrap_or("<...>")),
        "records": a.count, "missed": m.missed.max(a.missed),
        "missed_in_pages": a.missed, "damaged_pages": a.damaged,
        "attempted": m.attempted, "written": m.written, "refused": m.refused,
        "filtered": m.filtered, "sink_lost": m.sink_lost, "clamped": m.clamped,
        "unclosed": m.unclosed,
        "span_s": a.span_s(), "records_per_s": a.rate(),
    });
    v["threads"] = sa
        .owners
        .iter()
        .map(|(tid, name, a)| {
            serde_json::json!({
                "name": name, "thread_id": tid, "records": a.count,
                "span_s": a.span_s(), "records_per_s": a.rate(),
            })
        })
        .collect::<Vec<_>>()
        .into();
    v["threads_not_listed"] = sa.more_owners.into();
    v
}

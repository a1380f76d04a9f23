//! The session's counters from a recording's metadata (SPEC §9), and the losses line `stats`
//! and `report` print from them with what reading the records found.
//!
//! Counters are read leniently where that is safe (a key a file predates is 0), and nothing
//! wrong stays quiet: a counter that is present but not a count (negative, fractional, text)
//! is named with its place in the metadata, and a sum of counters that would pass
//! 2^64 - 1 stops there and is named as saturated: such a file's counters cannot be right,
//! and a wrapped sum could read as "losses: none".

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use typhon_recorder::printable::printable;
use typhon_trace::tracedat::{TraceFile, OPTION_TYPHON_META};

/// One slot's counters from the file's metadata (absent keys: 0).
#[derive(Default, Clone, Copy)]
pub(crate) struct SlotCounters {
    pub(crate) attempted: u64,
    pub(crate) written: u64,
    pub(crate) missed: u64,
    pub(crate) refused: u64,
    pub(crate) filtered: u64,
    pub(crate) sink_lost: u64,
    pub(crate) clamped: u64,
    /// Spans still open at finish, written ending at finish time.
    pub(crate) unclosed: u64,
}

/// Every counter the session kept, from the file's metadata option (SPEC §9). Read leniently:
/// a file made before a key existed has 0 for it, unknown keys are ignored, and metadata
/// that is not JSON is reported, not fatal (the records can still be read). A value that is
/// there but is not a count is counted as 0 and named in `problems`.
#[derive(Default)]
pub(crate) struct Session {
    /// Whether the file has Typhon metadata at all (kernel traces have none).
    pub(crate) present: bool,
    /// Why the metadata could not be read, if it could not.
    pub(crate) unreadable: Option<String>,
    /// Fields of the metadata that are wrong: their place (`slots[2].missed`) and value.
    pub(crate) problems: Vec<String>,
    pub(crate) slots: BTreeMap<u32, SlotCounters>,
    pub(crate) no_slot: u64,
    pub(crate) filtered_no_slot: u64,
    pub(crate) pages_lost: u64,
    pub(crate) sink_errors: u64,
    pub(crate) first_sink_error: Option<String>,
    pub(crate) recovered: bool,
    pub(crate) damaged_pages: u64,
    pub(crate) torn_bytes: u64,
    pub(crate) unreadable_pages: u64,
    /// A recovered compressed recording's chunks that were missing (their pages lost), and
    /// those left out as damaged or repeated.
    pub(crate) missing_chunks: u64,
    pub(crate) missing_pages: u64,
    pub(crate) damaged_chunks: u64,
    pub(crate) duplicate_chunks: u64,
    /// A snapshot of a window (SPEC §16): records and pages aged out before it (not lost),
    /// and its `window` description (interval, budget, trigger).
    pub(crate) evicted_records: u64,
    pub(crate) evicted_pages: u64,
    pub(crate) window: Option<serde_json::Value>,
}

/// A counter's value: absent or null is 0; anything but an unsigned integer is 0 too, and
/// named in `problems` with `place`.
fn count(v: &serde_json::Value, k: &str, place: &str, problems: &mut Vec<String>) -> u64 {
    match v.get(k) {
        None | Some(serde_json::Value::Null) => 0,
        Some(x) => x.as_u64().unwrap_or_else(|| {
            let shown: String = x.to_string().chars().take(40).collect();
            problems.push(format!(
                "{place}{k} is {}, not a count (read as 0)",
                printable(&shown)
            ));
            0
        }),
    }
}

impl Session {
    /// The line `stats` prints for a snapshot of a window: the window requested and held, what
    /// aged out before it (not a loss), the trigger and the spans open at the cut.
    pub(crate) fn window_line(&self) -> Option<String> {
        let w = self.window.as_ref()?;
        let secs = |k: &str| w.get(k).and_then(|x| x.as_u64()).map(|n| n as f64 / 1e9);
        let requested = match secs("requested_ns") {
            Some(r) => format!("{r:.1} s requested"),
            None => "no duration (byte budget only)".into(),
        };
        let budget = w.get("budget_bytes").and_then(|x| x.as_u64()).unwrap_or(0);
        let reduced = w.get("reduced_by_budget").and_then(|x| x.as_bool()) == Some(true);
        let trigger = w.get("trigger").and_then(|x| x.as_str()).unwrap_or("");
        Some(format!(
            "window: {requested}, {:.3} s held{} (budget {budget} bytes); evicted before it: {} records in {} pages (not lost); trigger: {}; spans open at the cut: {}",
            secs("held_ns").unwrap_or(0.0),
            if reduced { " (the byte budget)" } else { "" },
            self.evicted_records,
            self.evicted_pages,
            printable(trigger),
            w.get("open_at_cut").and_then(|x| x.as_u64()).unwrap_or(0),
        ))
    }
}

/// One of a slot's counters.
type Counter = fn(&SlotCounters) -> u64;

impl Session {
    pub(crate) fn read(f: &TraceFile) -> Self {
        let mut s = Session::default();
        let Some(o) = f.options().iter().find(|o| o.id == OPTION_TYPHON_META) else {
            return s;
        };
        s.present = true;
        let v: serde_json::Value = match serde_json::from_str(&o.text()) {
            Ok(v) => v,
            Err(e) => {
                s.unreadable = Some(e.to_string());
                return s;
            }
        };
        let mut p = Vec::new();
        for (i, e) in v["slots"].as_array().into_iter().flatten().enumerate() {
            let Some(slot) = e.get("slot").and_then(|x| x.as_u64()) else {
                continue;
            };
            let at = format!("slots[{i}].");
            let c = s.slots.entry(slot as u32).or_default();
            c.attempted = count(e, "attempted", &at, &mut p);
            c.written = count(e, "written", &at, &mut p);
            c.missed = count(e, "missed", &at, &mut p);
        }
        let ses = &v["session"];
        for (i, e) in ses["slots"].as_array().into_iter().flatten().enumerate() {
            let Some(slot) = e.get("slot").and_then(|x| x.as_u64()) else {
                continue;
            };
            let at = format!("session.slots[{i}].");
            let c = s.slots.entry(slot as u32).or_default();
            c.refused = count(e, "refused", &at, &mut p);
            c.filtered = count(e, "filtered", &at, &mut p);
            c.sink_lost = count(e, "sink_lost", &at, &mut p);
            c.clamped = count(e, "clamped", &at, &mut p);
            c.unclosed = count(e, "unclosed", &at, &mut p);
        }
        let at = "session.";
        s.no_slot = count(ses, "no_slot", at, &mut p);
        s.filtered_no_slot = count(ses, "filtered_no_slot", at, &mut p);
        s.pages_lost = count(ses, "pages_lost", at, &mut p);
        s.sink_errors = count(ses, "sink_errors", at, &mut p);
        s.first_sink_error = ses
            .get("first_sink_error")
            .and_then(|x| x.as_str())
            .map(str::to_owned);
        s.recovered = ses
            .get("recovered")
            .and_then(|x| x.as_bool())
            .unwrap_or(false);
        s.damaged_pages = count(ses, "damaged_pages", at, &mut p);
        s.torn_bytes = count(ses, "torn_bytes", at, &mut p);
        s.unreadable_pages = count(ses, "unreadable_pages", at, &mut p);
        s.missing_chunks = count(ses, "missing_chunks", at, &mut p);
        s.missing_pages = count(ses, "missing_pages", at, &mut p);
        s.damaged_chunks = count(ses, "damaged_chunks", at, &mut p);
        s.duplicate_chunks = count(ses, "duplicate_chunks", at, &mut p);
        s.evicted_records = count(ses, "evicted_records", at, &mut p);
        s.evicted_pages = count(ses, "evicted_pages", at, &mut p);
        s.window = ses.get("window").filter(|w| w.is_object()).cloned();
        // The metadata as the recorder reads it back names the first field of a wrong type
        // (a clock anchor that is not an integer, say); the counters are named above.
        if p.is_empty() {
            if let Some(Err(e)) = f.typhon_meta() {
                p.push(e.to_string());
            }
        }
        s.problems = p;
        s
    }

    /// The sum of a counter over the slots, held at `u64::MAX` if it would pass it (and then
    /// named as saturated by [`Losses`] and [`counters_error`]).
    pub(crate) fn total(&self, f: impl Fn(&SlotCounters) -> u64) -> u64 {
        self.slots
            .values()
            .fold(0u64, |a, c| a.saturating_add(f(c)))
    }

    /// The per-slot counters whose sum over the slots saturated.
    pub(crate) fn saturated(&self) -> Vec<&'static str> {
        let all: [(&str, Counter); 8] = [
            ("attempted", |c| c.attempted),
            ("written", |c| c.written),
            ("missed", |c| c.missed),
            ("refused", |c| c.refused),
            ("filtered", |c| c.filtered),
            ("sink_lost", |c| c.sink_lost),
            ("clamped", |c| c.clamped),
            ("unclosed", |c| c.unclosed),
        ];
        all.into_iter()
            .filter(|(_, f)| {
                self.slots
                    .values()
                    .try_fold(0u64, |a, c| a.checked_add(f(c)))
                    .is_none()
            })
            .map(|e| e.0)
            .collect()
    }
}

/// What was lost and what was left out on request, for a recording: the metadata's counters
/// with what reading the records found (missed counts on pages, damaged pages).
pub(crate) struct Losses {
    /// (name, count) of every loss, in a fixed order, zeros included.
    pub(crate) lost: Vec<(&'static str, u64)>,
    /// (name, count) of writes left out on request (disabled kinds or zones).
    pub(crate) filtered: Vec<(&'static str, u64)>,
    first_sink_error: Option<String>,
}

impl Losses {
    /// `missed`: per slot, the larger of the metadata's and the pages' counts (pages the sink
    /// failed to store take their counts with them); `damaged`: pages reading skipped;
    /// `unread`: records the metadata says were written that reading did not find, with no
    /// damage in their place.
    pub(crate) fn new(s: &Session, missed: u64, damaged: u64, unread: u64) -> Self {
        Losses {
            lost: vec![
                ("missed", missed),
                ("refused", s.total(|c| c.refused)),
                ("no_slot", s.no_slot),
                ("sink_lost", s.total(|c| c.sink_lost)),
                ("pages_lost", s.pages_lost),
                ("sink_errors", s.sink_errors),
                ("damaged_pages", damaged),
                ("unread_records", unread),
                ("recovered_damaged_pages", s.damaged_pages),
                ("unreadable_pages", s.unreadable_pages),
                ("torn_bytes", s.torn_bytes),
                ("missing_pages", s.missing_pages),
                ("missing_chunks", s.missing_chunks),
                ("damaged_chunks", s.damaged_chunks),
                ("duplicate_chunks", s.duplicate_chunks),
                ("clamped", s.total(|c| c.clamped)),
                ("unclosed", s.total(|c| c.unclosed)),
            ],
            filtered: vec![
                ("filtered", s.total(|c| c.filtered)),
                ("filtered_no_slot", s.filtered_no_slot),
            ],
            first_sink_error: s.first_sink_error.clone(),
        }
    }

    /// The losses and left-out counts at `u64::MAX`: sums that saturated (or a single count
    /// that large), which no recording can have.
    pub(crate) fn saturated(&self) -> Vec<&'static str> {
        self.lost
            .iter()
            .chain(&self.filtered)
            .filter(|e| e.1 == u64::MAX)
            .map(|e| e.0)
            .collect()
    }

    /// "no_slot=4545 refused=3 ..." or "none", then what was filtered on request, if any; a
    /// saturated count is marked so.
    pub(crate) fn line(&self) -> String {
        let mut out = String::new();
        let mark = |v: u64| if v == u64::MAX { " (saturated)" } else { "" };
        for (k, v) in self.lost.iter().filter(|e| e.1 > 0) {
            let _ = write!(
                out,
                "{}{k}={v}{}",
                if out.is_empty() { "" } else { " " },
                mark(*v)
            );
            if *k == "sink_errors" {
                if let Some(e) = &self.first_sink_error {
                    let _ = write!(out, " (first: {})", printable(e));
                }
            }
        }
        if out.is_empty() {
            out.push_str("none");
        }
        let filtered: Vec<String> = self
            .filtered
            .iter()
            .filter(|e| e.1 > 0)
            .map(|(k, v)| format!("{k}={v}{}", mark(*v)))
            .collect();
        if !filtered.is_empty() {
            let _ = write!(out, "; left out on request: {}", filtered.join(" "));
        }
        out
    }
}

/// Every count that saturated: the per-slot sums, then the losses'.
pub(crate) fn saturated(s: &Session, l: &Losses) -> Vec<&'static str> {
    let mut sat = s.saturated();
    for k in l.saturated() {
        if !sat.contains(&k) {
            sat.push(k);
        }
    }
    sat
}

/// The error a reading ends with when the file's counters cannot be right (sums that
/// saturated, fields that are not counts): the output stands, with those marked, and the exit
/// status says the counting cannot be trusted. `None` when they are sound.
pub(crate) fn counters_error(file: &Path, s: &Session, l: &Losses) -> Option<String> {
    let sat = saturated(s, l);
    let mut why = Vec::new();
    if !sat.is_empty() {
        why.push(format!(
            "the sums of {} saturated at 2^64 - 1",
            sat.join(", ")
        ));
    }
    why.extend(s.problems.iter().cloned());
    (!why.is_empty()).then(|| {
        format!(
            "{}: the file's counters cannot be right: {}",
            file.display(),
            why.join("; ")
        )
    })
}

/// Missed records in all: per slot, the larger of the metadata's count and the pages'
/// (saturating, as [`Session::total`]).
pub(crate) fn missed_total(s: &Session, pages: &BTreeMap<u32, u64>) -> u64 {
    let mut slots: std::collections::BTreeSet<u32> = s.slots.keys().copied().collect();
    slots.extend(pages.keys());
    slots.iter().fold(0u64, |a, c| {
        let m = s.slots.get(c).map_or(0, |c| c.missed);
        a.saturating_add(m.max(pages.get(c).copied().unwrap_or(0)))
    })
}

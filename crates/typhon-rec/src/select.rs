//! What `report`, `stats` and `export` read of a file: the slots (by number or by thread name)
//! and the time window they share, and who owns each slot at each record.
//!
//! A slot is reused when its thread exits and another claims it: the new owner's ThreadInfo
//! record comes before its records in the slot's stream. The file's cmdlines name a slot by
//! its first owner only, so the readers follow the ThreadInfo records ([`Owners`]) and a
//! thread name selects that thread's records, whichever slot they are in.

use crate::durations::parse_duration;
use crate::timebase::TimeBase;
use std::collections::{BTreeMap, BTreeSet};
use typhon_recorder::codec::records::{self, DecodedRecord, FieldValue};
use typhon_recorder::codec::{Shape, TraceEventKind as K};
use typhon_trace::tracedat::TraceFile;

/// The options that choose the records: slots and a window.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Selection {
    /// Only these thread slots, by number or by thread name (repeat or comma-separate:
    /// --slot 1,net-worker-0). A name selects that thread's records in whichever slot it had.
    #[arg(long, value_delimiter = ',')]
    pub slot: Vec<String>,
    /// Only from this time: after the recording's start (`1.5s`, `200ms`) or wall-clock
    /// UTC (`2024-05-01T12:00:00.25Z`). A span counts if any part of it is in the window.
    #[arg(long, visible_alias = "since", value_parser = parse_when)]
    pub from: Option<When>,
    /// Only up to this time (same forms as --from).
    #[arg(long, visible_alias = "until", value_parser = parse_when)]
    pub to: Option<When>,
}

impl Selection {
    /// Whether anything is selected away.
    pub fn narrows(&self) -> bool {
        !self.slot.is_empty() || self.from.is_some() || self.to.is_some()
    }
}

/// A point of the window: ns after the recording's start, or UNIX ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// ns after the start.
    Rel(u64),
    /// UNIX ns.
    Wall(i128),
}

pub fn parse_when(s: &str) -> Result<When, String> {
    if s.contains('T') {
        return parse_rfc3339(s).map(When::Wall);
    }
    if s.trim() == "0" {
        return Ok(When::Rel(0));
    }
    parse_duration(s).map(When::Rel)
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z` as UNIX ns (UTC only: a zone offset is refused).
fn parse_rfc3339(s: &str) -> Result<i128, String> {
    let bad = || format!("{s:?}: not a UTC time like 2024-05-01T12:00:00.5Z");
    let body = s.strip_suffix('Z').ok_or_else(bad)?;
    let (date, time) = body.split_once('T').ok_or_else(bad)?;
    let num = |x: &str| x.parse::<i128>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<&str> = hms.split(':').collect();
    if d.len() != 3 || t.len() != 3 || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let (y, m, dd) = (num(d[0])?, num(d[1])?, num(d[2])?);
    let (h, mi, se) = (num(t[0])?, num(t[1])?, num(t[2])?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + dd - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ns_frac = if frac.is_empty() {
        0
    } else {
        num(frac)? * 10i128.pow(9 - frac.len() as u32)
    };
    Ok((days * 86_400 + h * 3600 + mi * 60 + se) * 1_000_000_000 + ns_frac)
}

/// A record's start and end (the same for an instant) in the file's clock.
pub fn extent(d: &DecodedRecord<'_>) -> (u64, u64) {
    let start = d.header.timestamp.max(0) as u64;
    let dur = match d.def {
        Some(def) if def.shape == Shape::Span => d
            .get("duration_ns")
            .and_then(FieldValue::as_i64)
            .unwrap_or(0)
            .max(0) as u64,
        _ => 0,
    };
    (start, start.saturating_add(dur))
}

/// A ThreadInfo record's thread id and name.
fn thread_info(data: &[u8]) -> Option<(i32, &str)> {
    let d = records::decode_fields(data).ok()?;
    if d.header.kind != K::THREAD_INFO {
        return None;
    }
    let tid = d.get("thread_id").and_then(FieldValue::as_i64)?;
    Some((tid as i32, d.get("name").and_then(FieldValue::as_str)?))
}

/// The thread that owns a slot: its id and name, as its ThreadInfo record gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub tid: i32,
    pub name: String,
}

/// Each slot's current owner, following the ThreadInfo records as the records stream by.
pub struct Owners<'f> {
    file: &'f TraceFile,
    current: BTreeMap<u32, Owner>,
}

impl<'f> Owners<'f> {
    pub fn new(file: &'f TraceFile) -> Self {
        Owners {
            file,
            current: BTreeMap::new(),
        }
    }

    /// Takes one record of slot `cpu`: a ThreadInfo of another thread than the slot's owner
    /// makes that thread the owner, and is returned. (The flusher restates the owner's
    /// ThreadInfo to carry a loss count: that is no change.)
    pub fn follow(&mut self, cpu: u32, data: &[u8]) -> Option<&Owner> {
        if data.get(2) != Some(&K::THREAD_INFO.0) {
            return None;
        }
        let (tid, name) = thread_info(data)?;
        let new = Owner {
            tid,
            name: name.to_owned(),
        };
        if self.current.get(&cpu) == Some(&new) {
            return None;
        }
        self.current.insert(cpu, new);
        self.current.get(&cpu)
    }

    /// The slot's owner, once a ThreadInfo of the slot was read.
    pub fn current(&self, cpu: u32) -> Option<&Owner> {
        self.current.get(&cpu)
    }

    /// The slot's owner's name: from its last ThreadInfo, else the file's cmdline for the slot
    /// (its first owner), else `<...>` as trace-cmd shows an unknown one.
    pub fn name(&self, cpu: u32) -> &str {
        match self.current.get(&cpu) {
            Some(o) => &o.name,
            None => self.file.cmdline(i64::from(cpu)).unwrap_or("<...>"),
        }
    }
}

/// Kinds that describe rather than happen: kept whatever the window, so that what is kept
/// still has its names (a span described before the window, entered in it).
fn describes(kind: u8) -> bool {
    [K::TRACING_SPAN_INFO.0, K::TRACING_CALLSITE.0].contains(&kind)
}

/// A [`Selection`] resolved against one file: slot numbers, thread names, and the window in
/// the file's clock.
#[derive(Clone, Debug)]
pub struct Picked {
    slots: BTreeSet<u32>,
    names: BTreeSet<String>,
    from: Option<u64>,
    to: Option<u64>,
}

impl Picked {
    /// Resolves `sel`: a number is a slot the file must have, anything else a thread name; a
    /// wall-clock time needs the file's wall-clock anchor.
    pub fn new(sel: &Selection, f: &TraceFile, tb: &TimeBase, file: &str) -> Result<Self, String> {
        let mono = |w: Option<When>| -> Result<Option<u64>, String> {
            Ok(match w {
                None => None,
                Some(When::Rel(ns)) => Some(tb.start.saturating_add(ns)),
                // Through the file's clock-syncs, as `report --time wall` prints times.
                Some(When::Wall(unix)) => Some(tb.ts_at_wall(unix).ok_or(
                    "the file has no wall-clock anchor: give --from/--to after the start (e.g. 1.5s)",
                )?),
            })
        };
        let (from, to) = (mono(sel.from)?, mono(sel.to)?);
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err("--from is after --to: the window holds nothing".into());
            }
        }
        let mut slots = BTreeSet::new();
        let mut names = BTreeSet::new();
        for s in &sel.slot {
            let s = s.trim();
            if s.is_empty() {
                return Err("--slot: an empty slot (give a number or a thread name)".into());
            }
            match s.parse::<u32>() {
                // A slot the file does not have is a mistake, not an empty answer.
                Ok(n) if n >= f.cpus() => {
                    return Err(format!(
                        "{file}: no slot {n}: the file has slots 0..={}",
                        f.cpus().saturating_sub(1)
                    ))
                }
                Ok(n) => {
                    slots.insert(n);
                }
                Err(_) => {
                    names.insert(s.to_owned());
                }
            }
        }
        check_names(f, &names, file)?;
        Ok(Picked {
            slots,
            names,
            from,
            to,
        })
    }

    /// Whether a record of slot `cpu`, whose owner is `owner`, is in the chosen slots.
    pub fn thread(&self, cpu: u32, owner: &str) -> bool {
        (self.slots.is_empty() && self.names.is_empty())
            || self.slots.contains(&cpu)
            || self.names.contains(owner)
    }

    /// Whether nothing is selected away.
    pub fn everything(&self) -> bool {
        self.slots.is_empty() && self.names.is_empty() && !self.windowed()
    }

    /// Whether a window is given.
    pub fn windowed(&self) -> bool {
        self.from.is_some() || self.to.is_some()
    }

    /// Whether a record from `start` to `end` is in the window (any part of it).
    pub fn in_window(&self, start: u64, end: u64) -> bool {
        self.from.is_none_or(|f| end >= f) && self.to.is_none_or(|t| start <= t)
    }

    /// Whether a record (its bytes) is in the window; one that does not decode is placed at
    /// its stream time `ts`.
    pub fn data_in_window(&self, ts: u64, data: &[u8]) -> bool {
        if !self.windowed() {
            return true;
        }
        match records::decode_fields(data) {
            Ok(d) => {
                let (s, e) = extent(&d);
                self.in_window(s, e)
            }
            Err(_) => self.in_window(ts, ts),
        }
    }

    /// The file's filter for the exports: the chosen threads' records in the window, and of
    /// the chosen threads each ThreadInfo and description whatever its time (a slice in the
    /// window keeps its thread's and its span's names).
    pub fn install(&self, f: &mut TraceFile) {
        if self.everything() {
            return;
        }
        let cmdlines: BTreeMap<u32, String> = f
            .cmdlines()
            .iter()
            .filter_map(|(p, n)| Some((u32::try_from(*p).ok()?, n.clone())))
            .collect();
        let picked = self.clone();
        f.set_record_filter(move || {
            let picked = picked.clone();
            let cmdlines = cmdlines.clone();
            let mut owners: BTreeMap<u32, String> = BTreeMap::new();
            Box::new(move |r| {
                if r.data.get(2) == Some(&K::THREAD_INFO.0) {
                    if let Some((_, name)) = thread_info(&r.data) {
                        owners.insert(r.cpu, name.to_owned());
                    }
                }
                let owner = owners
                    .get(&r.cpu)
                    .or_else(|| cmdlines.get(&r.cpu))
                    .map_or("<...>", String::as_str);
                if !picked.thread(r.cpu, owner) {
                    return false;
                }
                let kind = r.data.get(2).copied().unwrap_or(0);
                kind == K::THREAD_INFO.0 || describes(kind) || picked.data_in_window(r.ts, &r.data)
            })
        });
    }
}

/// The file's time base for a window: its anchors, else its first record's time (finding it
/// is a reading of the file up to it, so only a file without anchors pays it).
pub fn time_base(f: &TraceFile) -> TimeBase {
    let anchored = f
        .typhon_meta()
        .and_then(Result::ok)
        .is_some_and(|m| m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0);
    let first = if anchored {
        None
    } else {
        f.stream_records().find_map(|r| r.ok()).map(|r| r.ts)
    };
    TimeBase::of(f, first)
}

/// Narrows what the exports read of `f` to `sel` (nothing when it selects everything).
pub fn narrow(f: &mut TraceFile, sel: &Selection, file: &std::path::Path) -> Result<(), String> {
    if !sel.narrows() {
        return Ok(());
    }
    let tb = time_base(f);
    Picked::new(sel, f, &tb, &file.display().to_string())?.install(f);
    Ok(())
}

/// Checks that each thread name of `names` is one some slot of the file had: in its cmdlines
/// (the slots' first owners), else in a ThreadInfo record (read slot by slot, only then).
fn check_names(f: &TraceFile, names: &BTreeSet<String>, file: &str) -> Result<(), String> {
    let mut known: BTreeSet<String> = f.cmdlines().values().cloned().collect();
    if names.iter().all(|n| known.contains(n)) {
        return Ok(());
    }
    for cpu in f.data_cpus() {
        for r in f.stream_cpu(cpu).flatten() {
            if r.data.get(2) == Some(&K::THREAD_INFO.0) {
                if let Some((_, name)) = thread_info(&r.data) {
                    if !known.contains(name) {
                        known.insert(name.to_owned());
                    }
                }
            }
        }
    }
    let missing: Vec<&str> = names
        .iter()
        .filter(|n| !known.contains(*n))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    Err(format!(
        "{file}: no thread named {} (--slot takes a slot number or a thread name; the \
         file's threads: {})",
        missing.join(", "),
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_times_parse_as_durations_or_utc() {
        assert_eq!(parse_when("1.5s"), Ok(When::Rel(1_500_000_000)));
        assert_eq!(parse_when("0"), Ok(When::Rel(0)));
        assert_eq!(
            parse_when("2023-11-14T22:13:20.123456789Z"),
            Ok(When::Wall(1_700_000_000_123_456_789))
        );
        assert_eq!(
            parse_when("1970-01-01T00:00:01.5Z"),
            Ok(When::Wall(1_500_000_000))
        );
        for bad in [
            "2023-11-14T22:13:20+01:00",
            "2023-13-01T00:00:00Z",
            "5",
            "xT",
        ] {
            assert!(parse_when(bad).is_err(), "{bad}");
        }
    }
}

//! What `typhon-rec report` prints and which records: the filters (`--slot`, `--kind`,
//! `--name`, a time window, `--limit`), the time column (`--time`) and the JSON lines form.

use crate::durations::parse_duration;
use crate::inspect::{comm, progress, reading_end, warn_anchor, Res};
use crate::session::{counters_error, missed_total, Losses, Session};
use crate::timebase::{TimeBase, TimeMode};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use typhon_recorder::codec::records;
use typhon_recorder::codec::records::{DecodedRecord, FieldValue};
use typhon_recorder::codec::{Shape, TraceEventKind, KINDS};
use typhon_recorder::printable::{json_printable, printable};
use typhon_trace::tracedat::TraceFile;

/// `report`'s options.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Only these thread slots (repeat or comma-separate: --slot 1,3).
    #[arg(long, value_delimiter = ',')]
    pub slot: Vec<u32>,
    /// Only these kinds, by name (TickStart, NamedSpan, ...; any case) or number.
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    pub kind: Vec<u8>,
    /// Only spans, named instants and named phases whose name contains this text.
    #[arg(long)]
    pub name: Option<String>,
    /// Only from this time: after the recording's start (`1.5s`, `200ms`) or wall-clock
    /// UTC (`2024-05-01T12:00:00.25Z`). A span counts if any part of it is in the window.
    #[arg(long, visible_alias = "since", value_parser = parse_when)]
    pub from: Option<When>,
    /// Only up to this time (same forms as --from).
    #[arg(long, visible_alias = "until", value_parser = parse_when)]
    pub to: Option<When>,
    /// Print at most this many records.
    #[arg(long)]
    pub limit: Option<u64>,
    /// One JSON object a line (the last one: the losses).
    #[arg(long)]
    pub json: bool,
    /// The time column: `rel` = seconds since the recording's start, `wall` = UTC from the
    /// file's wall-clock anchor, `mono` = the file's monotonic clock (trace-cmd's seconds).
    #[arg(long, value_enum, default_value = "rel")]
    pub time: TimeMode,
}

/// A point of the window: ns after the recording's start, or UNIX ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// ns after the start.
    Rel(u64),
    /// UNIX ns.
    Wall(i128),
}

fn parse_kind(s: &str) -> Result<u8, String> {
    if let Ok(n) = s.parse::<u8>() {
        return Ok(n);
    }
    KINDS
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(s))
        .map(|d| d.kind.0)
        .ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|d| d.name).collect();
            format!(
                "unknown kind {s:?} (one of {}, or a number)",
                names.join(", ")
            )
        })
}

fn parse_when(s: &str) -> Result<When, String> {
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

/// The filters, resolved against the file's time base.
pub struct Filter<'a> {
    args: &'a ReportArgs,
    from: Option<u64>,
    to: Option<u64>,
}

impl<'a> Filter<'a> {
    /// Resolves the window; a wall-clock time needs the file's wall-clock anchor.
    pub fn new(args: &'a ReportArgs, tb: &TimeBase) -> Result<Self, String> {
        let mono = |w: Option<When>| -> Result<Option<u64>, String> {
            Ok(match w {
                None => None,
                Some(When::Rel(ns)) => Some(tb.start.saturating_add(ns)),
                Some(When::Wall(unix)) => Some(tb.ts_at_wall(unix).ok_or(
                    "the file has no wall-clock anchor: give --from/--to after the start (e.g. 1.5s)",
                )?),
            })
        };
        let (from, to) = (mono(args.from)?, mono(args.to)?);
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err("--from is after --to: the window holds nothing".into());
            }
        }
        if args.limit == Some(0) {
            return Err("--limit 0 shows nothing: give at least 1".into());
        }
        Ok(Filter { args, from, to })
    }

    /// Whether the slot's records can pass at all (checked before decoding).
    pub fn slot(&self, slot: u32) -> bool {
        self.args.slot.is_empty() || self.args.slot.contains(&slot)
    }

    /// Whether a decoded record passes every filter.
    pub fn keep(&self, d: &DecodedRecord<'_>) -> bool {
        let a = self.args;
        if !a.kind.is_empty() && !a.kind.contains(&d.header.kind.0) {
            return false;
        }
        if let Some(n) = &a.name {
            let named = d.def.is_some_and(|k| {
                k.shape == Shape::Span
                    || [
                        TraceEventKind::NAMED_INSTANT,
                        TraceEventKind::NAMED_PHASE_START,
                        TraceEventKind::NAMED_PHASE_END,
                    ]
                    .contains(&k.kind)
            });
            let name = d.get("name").and_then(FieldValue::as_str).unwrap_or("");
            if !named || !name.contains(n.as_str()) {
                return false;
            }
        }
        let (start, end) = extent(d);
        self.from.is_none_or(|f| end >= f) && self.to.is_none_or(|t| start <= t)
    }
}

/// A field as JSON: numbers as numbers (ids included, as the file has them), text as text,
/// raw bytes as hex.
fn value_json(v: FieldValue<'_>) -> serde_json::Value {
    match v {
        FieldValue::Unsigned(u) => u.into(),
        FieldValue::Signed(s) => s.into(),
        FieldValue::Str(s) => s.into(),
        FieldValue::Bytes(b) => b
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
            .into(),
    }
}

/// One record as a JSON object: slot, thread, kind, time (start; spans also end and
/// duration) in the chosen form and as raw ns, and its fields.
pub fn record_json(
    slot: u32,
    thread: &str,
    d: &DecodedRecord<'_>,
    tb: &TimeBase,
    mode: TimeMode,
) -> serde_json::Value {
    let (start, end) = extent(d);
    let mut v = serde_json::json!({
        "slot": slot,
        "thread": thread,
        "kind": d.def.map_or_else(|| TraceEventKind(d.header.kind.0).to_string(), |k| k.name.to_string()),
        "time": tb.show(start, mode),
        "ts_ns": start,
    });
    if d.def.is_some_and(|k| k.shape == Shape::Span) {
        v["end"] = tb.show(end, mode).into();
        v["end_ns"] = end.into();
    }
    let fields: serde_json::Map<String, serde_json::Value> = d
        .fields()
        .map(|(f, x)| (f.name.to_string(), value_json(x)))
        .collect();
    v["fields"] = fields.into();
    v
}

/// Damaged pages of one slot with no record between them: printed as one line, before the
/// slot's next record (or at the end), so a stretch of damage costs one line, not one a page.
struct DamageRun {
    /// The first page's error, printable.
    first: String,
    pages: u64,
    /// File offsets (virtual, compressed) of the first and last pages.
    from: u64,
    to: u64,
}

impl DamageRun {
    fn new(first: String, at: u64, pages: u64, last: u64) -> Self {
        DamageRun {
            first,
            pages,
            from: at,
            to: last,
        }
    }

    fn line(&self, cpu: u32, json: bool) -> String {
        let l = match (self.pages, json) {
            (1, true) => serde_json::json!({ "damaged_page": self.first }).to_string(),
            (1, false) => format!("[DAMAGED PAGE: {}]", self.first),
            (n, true) => serde_json::json!({
                "damaged_pages": n, "slot": cpu, "first_page_at": self.from,
                "last_page_at": self.to, "first": self.first,
            })
            .to_string(),
            (n, false) => format!(
                "[DAMAGED PAGES: {n} pages of cpu {cpu} in a row, at offsets {} to {}; the \
                 first: {}]",
                self.from, self.to, self.first
            ),
        };
        json_printable(&l)
    }
}

/// One line per record that passes `args`' filters, in the order the file has them (a span at
/// its end, where it was written; its line shows its start and end), with a line before each
/// record that follows lost ones and one in place of each run of damaged pages of a slot.
pub fn report(file: &Path, args: &ReportArgs) -> Res {
    // Streamed: memory is a page per slot whatever the file's size.
    let f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    // The first record's time stands in for a missing anchor only: finding it is a reading of
    // the file up to it (of all of it for a file of damaged pages).
    let anchored = f
        .typhon_meta()
        .and_then(Result::ok)
        .is_some_and(|m| m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0);
    let first = if anchored {
        None
    } else {
        f.stream_records().find_map(|r| r.ok()).map(|r| r.ts)
    };
    let tb = crate::timebase::TimeBase::of(&f, first);
    warn_anchor(file, &f);
    let filter = Filter::new(args, &tb)?;
    // A slot the file does not have is a mistake, not an empty answer.
    if let Some(&bad) = args.slot.iter().find(|&&s| s >= f.cpus()) {
        return Err(format!(
            "{}: no slot {bad}: the file has slots 0..={}",
            file.display(),
            f.cpus().saturating_sub(1)
        ));
    }
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut line = String::new();
    let pb = progress("report");
    let mut damaged_pages = 0u64;
    let mut shown = 0u64;
    let mut missed: BTreeMap<u32, u64> = BTreeMap::new();
    // Per slot, the damaged pages since its last record: one line when the run ends.
    let mut runs: BTreeMap<u32, DamageRun> = BTreeMap::new();
    let page_size = u64::from(f.page_size());
    let mut n = 0u64;
    for r in f.stream_records() {
        let r = match r {
            Ok(r) => r,
            Err(typhon_trace::tracedat::TraceDatError::DamagedPage { cpu, pages, .. })
                if !filter.slot(cpu) =>
            {
                damaged_pages = damaged_pages.saturating_add(pages);
                continue;
            }
            Err(e @ typhon_trace::tracedat::TraceDatError::DamagedPage { .. }) => {
                if let typhon_trace::tracedat::TraceDatError::DamagedPage {
                    cpu,
                    page_at,
                    pages,
                    ..
                } = e
                {
                    damaged_pages = damaged_pages.saturating_add(pages);
                    // The last page of this error: one error can stand for a run of pages.
                    let last = page_at.saturating_add((pages - 1).saturating_mul(page_size));
                    match runs.get_mut(&cpu) {
                        Some(run) => {
                            run.pages = run.pages.saturating_add(pages);
                            run.to = last;
                        }
                        None => {
                            let first = printable(&e.to_string()).to_string();
                            runs.insert(cpu, DamageRun::new(first, page_at, pages, last));
                        }
                    }
                }
                continue;
            }
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        if let Some(run) = runs.remove(&r.cpu) {
            if writeln!(out, "{}", run.line(r.cpu, args.json)).is_err() {
                return Ok(());
            }
        }
        n += 1;
        if n.is_multiple_of(65536) {
            pb.set_position(n);
        }
        if let Some(k) = r.missed_before.filter(|&k| k > 0) {
            *missed.entry(r.cpu).or_default() += k as u64;
        }
        if !filter.slot(r.cpu) || args.limit.is_some_and(|l| shown >= l) {
            continue; // read on: the losses line counts the whole file
        }
        let decoded = records::decode_fields(&r.data);
        if let Ok(d) = &decoded {
            if !filter.keep(d) {
                continue;
            }
        } else if !args.kind.is_empty() || args.name.is_some() {
            continue;
        }
        shown += 1;
        let c = comm(&f, r.cpu);
        if args.json {
            let v = match &decoded {
                Ok(d) => record_json(
                    r.cpu,
                    f.cmdline(r.cpu as i64).unwrap_or("<...>"),
                    d,
                    &tb,
                    args.time,
                ),
                Err(e) => serde_json::json!({
                    "slot": r.cpu, "time": tb.show(r.ts, args.time), "ts_ns": r.ts,
                    "kind": r.data.get(2).copied(), "undecodable": e.to_string(),
                }),
            };
            let mut v = v;
            if let Some(m) = r.missed_before {
                v["missed_before"] = m.into();
            }
            if writeln!(out, "{}", json_printable(&v.to_string())).is_err() {
                return Ok(());
            }
            continue;
        }
        match r.missed_before {
            Some(k) if k > 0 => writeln!(out, "CPU:{} [{k} EVENTS DROPPED]", r.cpu),
            Some(_) => writeln!(out, "CPU:{} [EVENTS DROPPED]", r.cpu),
            None => Ok(()),
        }
        .map_err(|e| e.to_string())?;
        line.clear();
        match &decoded {
            Ok(d) => {
                let (start, end) = extent(d);
                let _ = write!(
                    line,
                    "{c:>16}-{:<5} [{:03}] {}: ",
                    r.cpu,
                    r.cpu,
                    tb.show(start, args.time)
                );
                let name = d.def.map_or_else(
                    || format!("Kind[{}]", d.header.kind.0),
                    |k| k.name.to_string(),
                );
                let _ = write!(line, "{name:<16} ");
                if d.def
                    .is_some_and(|k| k.shape == typhon_recorder::codec::Shape::Span)
                {
                    let _ = write!(
                        line,
                        "[span {} .. {}] ",
                        tb.show(start, args.time),
                        tb.show(end, args.time)
                    );
                }
                let _ = records::write_fields(d, &mut line);
            }
            Err(e) => {
                let kind = r.data.get(2).map_or(0, |&k| k);
                let _ = write!(
                    line,
                    "{c:>16}-{:<5} [{:03}] {}: ",
                    r.cpu,
                    r.cpu,
                    tb.show(r.ts, args.time)
                );
                let _ = write!(line, "{:<16} [undecodable: {e}]", TraceEventKind(kind));
            }
        }
        if writeln!(out, "{line}").is_err() {
            return Ok(()); // closed pipe (e.g. `| head`): not an error
        }
    }
    for (cpu, run) in runs {
        if writeln!(out, "{}", run.line(cpu, args.json)).is_err() {
            return Ok(());
        }
    }
    // The last line names every loss (SPEC §9), so none stays hidden behind the records.
    let session = Session::read(&f);
    let missed = missed_total(&session, &missed);
    let losses = Losses::new(&session, missed, damaged_pages);
    let bad_counters = counters_error(file, &session, &losses);
    // What cannot be right (data read twice, time going back) before the losses line.
    for w in f.reader_warnings() {
        let line = if args.json {
            json_printable(&serde_json::json!({ "reader_warning": w }).to_string())
        } else {
            format!("[WARNING: {}]", printable(&w))
        };
        if writeln!(out, "{line}").is_err() {
            return Ok(());
        }
    }
    let end = if args.json {
        let lost: serde_json::Map<String, serde_json::Value> = losses
            .lost
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).into()))
            .collect();
        let filtered: serde_json::Map<String, serde_json::Value> = losses
            .filtered
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).into()))
            .collect();
        json_printable(
            &serde_json::json!({
                "losses": lost, "left_out_on_request": filtered, "shown": shown,
                "counters_error": bad_counters,
            })
            .to_string(),
        )
    } else {
        match &bad_counters {
            Some(e) => format!("[LOSSES: {}] ({})", losses.line(), printable(e)),
            None => format!("[LOSSES: {}]", losses.line()),
        }
    };
    if writeln!(out, "{end}").is_err() {
        return Ok(());
    }
    out.flush().ok();
    pb.finish_and_clear();
    reading_end(file, damaged_pages, "the report", bad_counters)
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
        assert_eq!(parse_kind("namedspan"), Ok(246));
        assert_eq!(parse_kind("7"), Ok(7));
        assert!(parse_kind("Nope").unwrap_err().contains("TickStart"));
    }
}

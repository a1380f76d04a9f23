//! What `typhon-rec report` prints and which records: the filters (`--slot` and the time window
//! of [`Selection`], `--kind`, `--name`, `--level`, `--target`, `--limit`), the time column
//! (`--time`) and the JSON lines form.

use crate::inspect::{progress, reading_end, warn_anchor, Res};
use crate::select::{extent, Owners, Picked, Selection};
use crate::session::{counters_error, missed_total, Losses, Session};
use crate::timebase::{TimeBase, TimeMode};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use typhon_recorder::codec::records;
use typhon_recorder::codec::records::{DecodedRecord, FieldValue};
use typhon_recorder::codec::{Shape, TraceEventKind, TraceEventKind as K, KINDS};
use typhon_recorder::printable::{json_printable, printable};
use typhon_trace::tracedat::TraceFile;

/// `report`'s options.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub sel: Selection,
    /// Only these kinds, by name (TickStart, NamedSpan, ...; any case) or number.
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    pub kind: Vec<u8>,
    /// Only spans, named instants and phases whose name, and `tracing` events whose message,
    /// contains this text.
    #[arg(long)]
    pub name: Option<String>,
    /// Only `tracing` span descriptions and events of this level or a more severe one
    /// (error, warn, info, debug, trace; any case).
    #[arg(long, value_parser = parse_level)]
    pub level: Option<u8>,
    /// Only `tracing` span descriptions and events whose target starts with this text.
    #[arg(long)]
    pub target: Option<String>,
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

/// A `tracing` level by name, as the records' level byte (ERROR 1 … TRACE 5).
fn parse_level(s: &str) -> Result<u8, String> {
    (1..=5u8)
        .find(|&l| records::level_name(l).eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| format!("unknown level {s:?} (one of error, warn, info, debug, trace)"))
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

/// The filters, resolved against the file's time base.
pub struct Filter<'a> {
    args: &'a ReportArgs,
    pub picked: Picked,
}

impl<'a> Filter<'a> {
    /// Resolves the slots and the window against the file.
    pub fn new(
        args: &'a ReportArgs,
        f: &TraceFile,
        tb: &TimeBase,
        file: &Path,
    ) -> Result<Self, String> {
        let picked = Picked::new(&args.sel, f, tb, &file.display().to_string())?;
        if args.limit == Some(0) {
            return Err("--limit 0 shows nothing: give at least 1".into());
        }
        Ok(Filter { args, picked })
    }

    /// Whether the filters ask about a record's fields (an undecodable record cannot pass).
    fn by_fields(&self) -> bool {
        let a = self.args;
        !a.kind.is_empty() || a.name.is_some() || a.level.is_some() || a.target.is_some()
    }

    /// Whether a decoded record passes every filter but the slots'.
    pub fn keep(&self, d: &DecodedRecord<'_>) -> bool {
        let a = self.args;
        if !a.kind.is_empty() && !a.kind.contains(&d.header.kind.0) {
            return false;
        }
        let kind = d.def.map(|k| k.kind);
        let text = |f: &str| d.get(f).and_then(FieldValue::as_str).unwrap_or("");
        if let Some(n) = &a.name {
            let named = match kind {
                Some(K::TRACING_EVENT) => text("message"),
                Some(k)
                    if d.def.is_some_and(|k| k.shape == Shape::Span)
                        || [
                            K::NAMED_INSTANT,
                            K::NAMED_PHASE_START,
                            K::NAMED_PHASE_END,
                            K::TRACING_SPAN_INFO,
                        ]
                        .contains(&k) =>
                {
                    text("name")
                }
                _ => return false,
            };
            if !named.contains(n.as_str()) {
                return false;
            }
        }
        let tracing = matches!(kind, Some(K::TRACING_EVENT | K::TRACING_SPAN_INFO));
        if let Some(max) = a.level {
            let l = d.get("level").and_then(FieldValue::as_u64).unwrap_or(0);
            if !tracing || l == 0 || l > u64::from(max) {
                return false;
            }
        }
        if let Some(t) = &a.target {
            if !tracing || !text("target").starts_with(t.as_str()) {
                return false;
            }
        }
        let (start, end) = extent(d);
        self.picked.in_window(start, end)
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
    let tracing = d.def.is_some_and(|k| {
        [K::TRACING_SPAN_INFO, K::TRACING_EVENT, K::TRACING_CALLSITE].contains(&k.kind)
    });
    let fields: serde_json::Map<String, serde_json::Value> = d
        .fields()
        .map(|(f, x)| match (f.name, x) {
            // A `tracing` level by its name, as the text form shows it.
            ("level", FieldValue::Unsigned(l)) if tracing => (
                "level".to_string(),
                records::level_name(u8::try_from(l).unwrap_or(0)).into(),
            ),
            _ => (f.name.to_string(), value_json(x)),
        })
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
    let tb = crate::select::time_base(&f);
    warn_anchor(file, &f);
    let filter = Filter::new(args, &f, &tb, file)?;
    let mut owners = Owners::new(&f);
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
                if !filter.picked.thread(cpu, owners.name(cpu)) =>
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
        owners.follow(r.cpu, &r.data);
        if !filter.picked.thread(r.cpu, owners.name(r.cpu))
            || args.limit.is_some_and(|l| shown >= l)
        {
            continue; // read on: the losses line counts the whole file
        }
        let decoded = records::decode_fields(&r.data);
        if let Ok(d) = &decoded {
            if !filter.keep(d) {
                continue;
            }
        } else if filter.by_fields() {
            continue;
        }
        shown += 1;
        let thread = owners.name(r.cpu);
        let c = printable(thread);
        if args.json {
            let v = match &decoded {
                Ok(d) => record_json(r.cpu, thread, d, &tb, args.time),
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
    let losses = Losses::new(&session, missed, damaged_pages, f.unread_records());
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
    reading_end(file, &f, damaged_pages, "the report", bad_counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_levels_parse_by_name() {
        assert_eq!(parse_kind("namedspan"), Ok(246));
        assert_eq!(parse_kind("7"), Ok(7));
        assert!(parse_kind("Nope").unwrap_err().contains("TickStart"));
        assert_eq!(parse_level("warn"), Ok(2));
        assert_eq!(parse_level("TRACE"), Ok(5));
        assert!(parse_level("loud").unwrap_err().contains("error, warn"));
    }
}

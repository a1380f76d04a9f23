//! Reading recordings: stats, export, pages, recover (and what `report` shares with them).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use typhon_recorder::codec::TraceEventKind;
use typhon_recorder::printable::{json_printable, printable};
use typhon_trace::export;
use typhon_trace::tracedat::{TraceFile, OPTION_TYPHON_META};

pub type Res = Result<(), String>;

/// The slot's thread name from the file, escaped for the terminal.
pub(crate) fn comm(f: &TraceFile, cpu: u32) -> String {
    printable(f.cmdline(cpu as i64).unwrap_or("<...>")).to_string()
}

/// One slot's counters from the file's metadata (absent keys: 0).
#[derive(Default, Clone, Copy)]
struct SlotCounters {
    attempted: u64,
    written: u64,
    missed: u64,
    refused: u64,
    filtered: u64,
    sink_lost: u64,
    clamped: u64,
    /// Spans still open at finish, written ending at finish time.
    unclosed: u64,
}

/// Every counter the session kept, from the file's metadata option (SPEC §9). Read leniently:
/// a file made before a key existed has 0 for it, unknown keys are ignored, and metadata
/// that is not JSON is reported, not fatal (the records can still be read).
#[derive(Default)]
pub(crate) struct Session {
    /// Whether the file has Typhon metadata at all (kernel traces have none).
    present: bool,
    /// Why the metadata could not be read, if it could not.
    unreadable: Option<String>,
    slots: BTreeMap<u32, SlotCounters>,
    no_slot: u64,
    filtered_no_slot: u64,
    pages_lost: u64,
    sink_errors: u64,
    first_sink_error: Option<String>,
    recovered: bool,
    damaged_pages: u64,
    torn_bytes: u64,
    unreadable_pages: u64,
}

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
        let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
        for e in v["slots"].as_array().into_iter().flatten() {
            let Some(slot) = e.get("slot").and_then(|x| x.as_u64()) else {
                continue;
            };
            let c = s.slots.entry(slot as u32).or_default();
            c.attempted = n(e, "attempted");
            c.written = n(e, "written");
            c.missed = n(e, "missed");
        }
        let ses = &v["session"];
        for e in ses["slots"].as_array().into_iter().flatten() {
            let Some(slot) = e.get("slot").and_then(|x| x.as_u64()) else {
                continue;
            };
            let c = s.slots.entry(slot as u32).or_default();
            c.refused = n(e, "refused");
            c.filtered = n(e, "filtered");
            c.sink_lost = n(e, "sink_lost");
            c.clamped = n(e, "clamped");
            c.unclosed = n(e, "unclosed");
        }
        s.no_slot = n(ses, "no_slot");
        s.filtered_no_slot = n(ses, "filtered_no_slot");
        s.pages_lost = n(ses, "pages_lost");
        s.sink_errors = n(ses, "sink_errors");
        s.first_sink_error = ses
            .get("first_sink_error")
            .and_then(|x| x.as_str())
            .map(str::to_owned);
        s.recovered = ses
            .get("recovered")
            .and_then(|x| x.as_bool())
            .unwrap_or(false);
        s.damaged_pages = n(ses, "damaged_pages");
        s.torn_bytes = n(ses, "torn_bytes");
        s.unreadable_pages = n(ses, "unreadable_pages");
        s
    }

    fn total(&self, f: impl Fn(&SlotCounters) -> u64) -> u64 {
        self.slots.values().map(f).sum()
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
    /// failed to store take their counts with them); `damaged`: pages reading skipped.
    pub(crate) fn new(s: &Session, missed: u64, damaged: u64) -> Self {
        Losses {
            lost: vec![
                ("missed", missed),
                ("refused", s.total(|c| c.refused)),
                ("no_slot", s.no_slot),
                ("sink_lost", s.total(|c| c.sink_lost)),
                ("pages_lost", s.pages_lost),
                ("sink_errors", s.sink_errors),
                ("damaged_pages", damaged),
                ("recovered_damaged_pages", s.damaged_pages),
                ("unreadable_pages", s.unreadable_pages),
                ("torn_bytes", s.torn_bytes),
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

    /// "no_slot=4545 refused=3 ..." or "none", then what was filtered on request, if any.
    pub(crate) fn line(&self) -> String {
        let mut out = String::new();
        for (k, v) in self.lost.iter().filter(|e| e.1 > 0) {
            let _ = write!(out, "{}{k}={v}", if out.is_empty() { "" } else { " " });
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
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !filtered.is_empty() {
            let _ = write!(out, "; left out on request: {}", filtered.join(" "));
        }
        out
    }
}

/// A records counter on stderr for reads that can take more than a second: drawn only when
/// stderr is a terminal and stdout is not (so it never mixes with output on a terminal).
pub(crate) fn progress(what: &'static str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() || (what == "report" && std::io::stdout().is_terminal()) {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg}: {human_pos} records ({per_sec})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    pb.set_message(what);
    pb
}

/// The error a reading ends with when it skipped damaged pages: the output stands, and the
/// exit status says it is incomplete (as `tar` does after skipping damaged members).
pub(crate) fn damaged(file: &Path, pages: u64, what: &str) -> Res {
    if pages == 0 {
        return Ok(());
    }
    Err(format!(
        "{}: {} skipped: {what} lacks {} records from the damage on",
        file.display(),
        damaged_pages(pages),
        if pages == 1 { "its" } else { "their" }
    ))
}

/// "1 damaged page", "2 damaged pages".
fn damaged_pages(n: u64) -> String {
    format!("{n} damaged page{}", if n == 1 { "" } else { "s" })
}

/// Missed records in all: per slot, the larger of the metadata's count and the pages'.
pub(crate) fn missed_total(s: &Session, pages: &BTreeMap<u32, u64>) -> u64 {
    let mut slots: std::collections::BTreeSet<u32> = s.slots.keys().copied().collect();
    slots.extend(pages.keys());
    slots
        .iter()
        .map(|c| {
            let m = s.slots.get(c).map_or(0, |c| c.missed);
            m.max(pages.get(c).copied().unwrap_or(0))
        })
        .sum()
}

/// Whether `a` and `b` are one file (the same inode, whatever the paths: links included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Writes FILE for trace viewers and says what went into it.
pub fn export(file: &Path, format: export::Format, out: Option<std::path::PathBuf>) -> Res {
    let out = out.unwrap_or_else(|| file.with_extension(format.extension()));
    if out == file || same_file(&out, file) {
        return Err(format!(
            "{}: the export would overwrite the recording",
            out.display()
        ));
    }
    // Streaming: the records stay in the file and are read a page at a time.
    let f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    // The file does not name the program that recorded it; its own name stands in.
    let name = file.file_stem().map_or_else(
        || "typhon-recorder".into(),
        |s| s.to_string_lossy().into_owned(),
    );
    let o = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::new(o);
    let s = match export::export_named(&f, format, &name, &mut w) {
        Ok(s) => s,
        Err(e) => {
            drop(w);
            // A partial export is no use; but a device or pipe given as the output stays.
            if std::fs::symlink_metadata(&out).is_ok_and(|m| m.is_file()) {
                let _ = std::fs::remove_file(&out);
            }
            return Err(match e {
                export::ExportError::Io(e) => format!("{}: {e}", out.display()),
                e => format!("{}: {e}", file.display()),
            });
        }
    };
    drop(w);
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    // Flows are written in the Perfetto format only.
    let flows = match format {
        export::Format::Perfetto => format!(", {} flows", s.flows),
        _ => String::new(),
    };
    println!(
        "{}: {} records -> {} slices, {} instants{flows} on {} tracks of {} threads",
        printable(&out.display().to_string()),
        s.records,
        s.slices,
        s.instants,
        s.tracks,
        s.threads
    );
    if s.loss_marks > 0 {
        println!(
            "  {} loss marks (\"events lost\") carry {} lost events",
            s.loss_marks, s.lost_events
        );
    }
    if s.negative_times > 0 {
        println!(
            "  {} records had a time before zero and stand at their page time",
            s.negative_times
        );
    }
    if s.damaged_pages > 0 {
        println!(
            "  {} skipped, each marked \"events lost\" without a count",
            damaged_pages(s.damaged_pages)
        );
    }
    if s.unfinished_flows > 0 {
        println!(
            "  {} command flows end before their CommandConsumed (records lost, or the \
             recording ended first)",
            s.unfinished_flows
        );
    }
    if s.out_of_order > 0 {
        println!(
            "  {} events come after later ones in the file (spans longer than the export's \
             50 ms window; viewers sort by time)",
            s.out_of_order
        );
    }
    let viewer = match format {
        export::Format::Perfetto => "open it at https://ui.perfetto.dev (Open trace file)",
        export::Format::Chrome => "open it at https://ui.perfetto.dev or chrome://tracing",
        _ => "send it to an OpenTelemetry Collector (typhon-rec push)",
    };
    println!("  {size} bytes; {viewer}");
    if format == export::Format::Chrome && size > 256 << 20 {
        println!(
            "  note: browsers hold at most about 512 MiB of JSON text; for a recording this \
             large the Perfetto format (the default) is smaller and loads faster"
        );
    }
    damaged(file, s.damaged_pages, "the export")
}

#[derive(Default)]
struct Acc {
    count: u64,
    missed: u64,
    damaged: u64,
    first: Option<u64>,
    last: u64,
}

impl Acc {
    fn add(&mut self, ts: u64) {
        self.count += 1;
        self.first.get_or_insert(ts);
        self.last = self.last.max(ts);
    }
    fn span_s(&self) -> f64 {
        self.first.map_or(0.0, |f| (self.last - f) as f64 / 1e9)
    }
    fn rate(&self) -> f64 {
        let s = self.span_s();
        if s > 0.0 {
            self.count as f64 / s
        } else {
            0.0
        }
    }
}

/// Per slot and per kind counts, missed, time span and rates, and every counter the session
/// kept (SPEC §9): attempted, written, missed, refused, filtered, no_slot, sink_lost, pages
/// lost, sink errors, damaged pages, clamped times and what recovery found.
pub fn stats(file: &Path, json: bool, tick_budget: u64) -> Res {
    // Streamed: memory is a page per slot plus the duration series, whatever the file's size.
    let f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut durations = crate::durations::Durations::new(tick_budget);
    let mut slots: BTreeMap<u32, Acc> = BTreeMap::new();
    let mut kinds: BTreeMap<u8, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    let pb = progress("stats");
    for r in f.stream_records() {
        let r = match r {
            Ok(r) => r,
            Err(typhon_trace::tracedat::TraceDatError::DamagedPage { cpu, .. }) => {
                all.damaged += 1;
                slots.entry(cpu).or_default().damaged += 1;
                continue;
            }
            // A read error (not damage in the file): the counts would be short without saying.
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        durations.add(r.cpu, &r.data);
        if all.count % 65536 == 0 {
            pb.set_position(all.count);
        }
        let s = slots.entry(r.cpu).or_default();
        if let Some(m) = r.missed_before.filter(|&m| m > 0) {
            s.missed += m as u64;
            all.missed += m as u64;
        }
        s.add(r.ts);
        all.add(r.ts);
        kinds
            .entry(r.data.get(2).copied().unwrap_or(0))
            .or_default()
            .add(r.ts);
    }
    pb.finish_and_clear();
    durations.finish();
    let tb = crate::timebase::TimeBase::of(&f, all.first);
    let session = Session::read(&f);
    // Slots the metadata counts but that have no records (every write refused, say) too.
    for &c in session.slots.keys() {
        slots.entry(c).or_default();
    }
    let page_missed: BTreeMap<u32, u64> = slots.iter().map(|(c, a)| (*c, a.missed)).collect();
    let missed = missed_total(&session, &page_missed);
    let losses = Losses::new(&session, missed, all.damaged);
    let counters = |c: u32| session.slots.get(&c).copied().unwrap_or_default();
    if json {
        let mut v = serde_json::json!({
            "file": file.display().to_string(),
            "records": all.count,
            "missed": missed,
            "missed_in_pages": all.missed,
            "damaged_pages": all.damaged,
            "span_s": all.span_s(),
            "metadata": session.present,
            "metadata_error": session.unreadable,
            "attempted": session.total(|c| c.attempted),
            "written": session.total(|c| c.written),
            "refused": session.total(|c| c.refused),
            "filtered": session.total(|c| c.filtered),
            "no_slot": session.no_slot,
            "filtered_no_slot": session.filtered_no_slot,
            "sink_lost": session.total(|c| c.sink_lost),
            "pages_lost": session.pages_lost,
            "sink_errors": session.sink_errors,
            "first_sink_error": session.first_sink_error,
            "clamped": session.total(|c| c.clamped),
            "unclosed": session.total(|c| c.unclosed),
            "recovered": session.recovered,
            "recovered_damaged_pages": session.damaged_pages,
            "torn_bytes": session.torn_bytes,
            "unreadable_pages": session.unreadable_pages,
            "slots": slots.iter().map(|(c, a)| {
                let m = counters(*c);
                serde_json::json!({
                    "slot": c, "name": f.cmdline(*c as i64).unwrap_or("<...>"),
                    "records": a.count, "missed": m.missed.max(a.missed),
                    "missed_in_pages": a.missed, "damaged_pages": a.damaged,
                    "attempted": m.attempted, "written": m.written, "refused": m.refused,
                    "filtered": m.filtered, "sink_lost": m.sink_lost, "clamped": m.clamped,
                    "unclosed": m.unclosed,
                    "span_s": a.span_s(), "records_per_s": a.rate(),
                })
            }).collect::<Vec<_>>(),
            "kinds": kinds.iter().map(|(k, a)| serde_json::json!({
                "kind": k, "name": TraceEventKind(*k).to_string(), "records": a.count,
                "span_s": a.span_s(), "records_per_s": a.rate(),
            })).collect::<Vec<_>>(),
        });
        v["durations"] = durations.json(&tb);
        v["losses"] = losses
            .lost
            .iter()
            .filter(|e| e.1 > 0)
            .map(|(k, n)| ((*k).to_string(), serde_json::Value::from(*n)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        println!("{}", json_printable(&format!("{v:#}")));
        return damaged(file, all.damaged, "the counting");
    }
    let damage = |n: u64| {
        if n > 0 {
            format!("  ({})", damaged_pages(n))
        } else {
            String::new()
        }
    };
    println!(
        "{}: {} records, {} missed, {:.3} s{}",
        printable(&file.display().to_string()),
        all.count,
        missed,
        all.span_s(),
        damage(all.damaged)
    );
    println!("losses: {}", losses.line());
    if !session.present {
        println!("(no Typhon metadata: only what the pages show is counted)");
    } else if let Some(e) = &session.unreadable {
        println!(
            "(the Typhon metadata is unreadable: {}; only what the pages show is counted)",
            printable(e)
        );
    }
    if session.recovered {
        println!(
            "recovered file: {} damaged pages kept, {} torn bytes left out, {} unreadable pages",
            session.damaged_pages, session.torn_bytes, session.unreadable_pages
        );
    }
    println!(
        "attempted {}, written {}, missed {}, refused {}, filtered {}, no_slot {}, \
         filtered_no_slot {}, sink_lost {}, pages_lost {}, sink_errors {}, clamped {}, unclosed {}",
        session.total(|c| c.attempted),
        session.total(|c| c.written),
        missed,
        session.total(|c| c.refused),
        session.total(|c| c.filtered),
        session.no_slot,
        session.filtered_no_slot,
        session.total(|c| c.sink_lost),
        session.pages_lost,
        session.sink_errors,
        session.total(|c| c.clamped),
        session.total(|c| c.unclosed),
    );
    println!(
        "\n{:>4}  {:<20} {:>12} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10} {:>14}",
        "slot",
        "thread",
        "records",
        "missed",
        "attempted",
        "written",
        "refused",
        "filtered",
        "sink_lost",
        "clamped",
        "unclosed",
        "span s",
        "records/s"
    );
    for (c, a) in &slots {
        let m = counters(*c);
        println!(
            "{:>4}  {:<20} {:>12} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10.3} {:>14.0}{}",
            c,
            comm(&f, *c),
            a.count,
            m.missed.max(a.missed),
            m.attempted,
            m.written,
            m.refused,
            m.filtered,
            m.sink_lost,
            m.clamped,
            m.unclosed,
            a.span_s(),
            a.rate(),
            damage(a.damaged)
        );
    }
    println!(
        "\n{:>4}  {:<20} {:>12} {:>10} {:>14}",
        "kind", "name", "records", "span s", "records/s"
    );
    for (k, a) in &kinds {
        println!(
            "{:>4}  {:<20} {:>12} {:>10.3} {:>14.0}",
            k,
            TraceEventKind(*k).to_string(),
            a.count,
            a.span_s(),
            a.rate()
        );
    }
    print!("{}", durations.table(&tb));
    damaged(file, all.damaged, "the counting")
}

/// The raw pages of one slot, one file per page.
pub fn pages(file: &Path, slot: u32, out: &Path) -> Res {
    // Streaming: a page (or, compressed, a chunk) at a time, whatever the file's size.
    let f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if slot >= f.cpus() {
        return Err(format!(
            "{}: no slot {slot} (the file has slots 0..{})",
            file.display(),
            f.cpus()
        ));
    }
    out_dir(out)?;
    let mut n = 0;
    let mut s = f.stream_cpu(slot);
    let mut i = 0;
    while let Some(page) = s.next_page() {
        let (_, page) = page.map_err(|e| format!("{}: slot {slot}: {e}", file.display()))?;
        // A trailing partial page is not a sub-buffer (the reader reports it elsewhere).
        if page.len() != f.page_size() as usize {
            continue;
        }
        let p = out.join(format!("slot-{slot:03}-page-{i:06}.raw"));
        // create_new (O_CREAT | O_EXCL): nothing is written through a link planted under the
        // page's name, and no file already there is overwritten.
        let mut o = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::AlreadyExists {
                    " (pages are never written over: remove it or choose another --out)"
                } else {
                    ""
                };
                format!("{}: {e}{hint}", p.display())
            })?;
        o.write_all(page)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        n += 1;
        i += 1;
    }
    println!(
        "wrote {n} pages of {} bytes to {} (read one with: cargo run -p typhon-trace --example kbuffer_dump -- FILE)",
        f.page_size(),
        printable(&out.display().to_string())
    );
    Ok(())
}

/// Makes `out` the directory `pages` writes into: an existing directory (not a symlink to
/// one), or a new one. A symlink, or anything that is not a directory, is refused, so the
/// pages never land where a planted link points.
fn out_dir(out: &Path) -> Res {
    let refuse = |what: &str| {
        Err(format!(
            "{}: is {what}, not a directory: --out must be a directory (new or existing)",
            out.display()
        ))
    };
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => refuse("a symbolic link"),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => refuse("not a directory"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            // create_dir, not create_dir_all: it fails on anything made at `out` meanwhile.
            std::fs::create_dir(out).map_err(|e| format!("{}: {e}", out.display()))
        }
        Err(e) => Err(format!("{}: {e}", out.display())),
    }
}

/// Recovers a killed recording.
pub fn recover(out: &Path) -> Res {
    let r = typhon_recorder::sink::recover(out).map_err(|e| e.to_string())?;
    let parts = typhon_recorder::sink::parts_dir(out);
    if r.already_complete {
        println!(
            "{} is complete (its finish was interrupted while removing {}): left as it is, leftovers removed",
            printable(&out.display().to_string()),
            printable(&parts.display().to_string())
        );
    } else if r.nothing_to_recover {
        println!(
            "nothing to recover in {}: the recording held no pages (it stopped before it wrote any); {} was not written",
            printable(&parts.display().to_string()),
            printable(&out.display().to_string())
        );
    } else {
        println!(
            "recovered {}: {} slots, {} records, {} missed, {} pages lost",
            printable(&out.display().to_string()),
            r.slots.len(),
            r.records,
            r.missed,
            r.lost_pages()
        );
        for (slot, pages, records) in &r.slots {
            println!("  slot {slot:>3}: {pages} pages, {records} records");
        }
        if r.pages_lost > 0 {
            println!(
                "  lost: {} pages the disk refused while recording ({} sink errors; first: {})",
                r.pages_lost,
                r.sink_errors,
                printable(r.first_sink_error.as_deref().unwrap_or("?"))
            );
        }
        let counted = [
            (r.no_slot, "events of threads without a slot"),
            (r.sink_lost, "records in pages the disk refused"),
            (r.refused, "refused writes"),
            (r.clamped, "clamped times"),
            (r.filtered, "filtered writes"),
        ];
        if counted.iter().any(|c| c.0 > 0) {
            let text: Vec<String> = counted
                .iter()
                .filter(|c| c.0 > 0)
                .map(|(n, what)| format!("{n} {what}"))
                .collect();
            println!("  counted while recording: {}", text.join(", "));
        }
        if r.damaged_pages > 0 {
            println!(
                "  damaged: {} pages (kept as they are; their records from the damage on are lost)",
                r.damaged_pages
            );
        }
        if r.zero_pages > 0 {
            println!(
                "  of which all zero: {} pages (not pages the recorder wrote: a sparse or zeroed part file)",
                r.zero_pages
            );
        }
        if r.unreadable_pages > 0 {
            println!(
                "  unreadable: {} pages (written as empty pages; their records are lost)",
                r.unreadable_pages
            );
        }
        if r.torn_chunks > 0 {
            println!(
                "  left out: {} compressed chunks the kill cut short ({} bytes; their pages are lost)",
                r.torn_chunks, r.torn_bytes
            );
        } else if r.torn_bytes > 0 {
            println!(
                "  left out: {} bytes of pages the kill cut short",
                r.torn_bytes
            );
        }
    }
    for e in &r.errors {
        eprintln!("typhon-rec: {}", printable(e));
    }
    for p in &r.left {
        println!(
            "  left in place (not made by the recorder, or not read whole): {}",
            printable(&p.display().to_string())
        );
    }
    if !r.errors.is_empty() {
        return Err(format!(
            "{} problem(s) reading {}; what could be read is in {}",
            r.errors.len(),
            printable(&parts.display().to_string()),
            out.display()
        ));
    }
    if !r.left.is_empty() {
        return Err(format!(
            "{} was not removed: it still holds the files above; look at them, then remove it",
            printable(&parts.display().to_string())
        ));
    }
    Ok(())
}

/// Benchmarks (measurement code lives in the library's `bench` module).
#[cfg(feature = "bench")]
pub fn bench(quick: bool, json: bool, plot: Option<&Path>) -> Res {
    // A directory that cannot be written is found out before the run, not after it.
    if let Some(dir) = plot {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let report = typhon_bench::run(&typhon_bench::BenchOptions { quick });
    if json {
        println!("{}", report.to_json());
    } else {
        println!("{report}");
    }
    if let Some(dir) = plot {
        for f in typhon_bench::plot::write_plots(&report, dir)? {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(())
}

/// Without the `bench` feature there is nothing to run.
#[cfg(not(feature = "bench"))]
pub fn bench(_quick: bool, _json: bool, _plot: Option<&Path>) -> Res {
    Err(
        "this typhon-rec was built without the `bench` feature (cargo build --features bench)"
            .into(),
    )
}

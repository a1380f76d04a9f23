//! Reading recordings: stats, export, pages, recover (and what `report` shares with them).

use crate::rows::{slot_json, Acc, SlotAcc, OWNER_ROWS};
use crate::select::{Owners, Picked, Selection};
use crate::session::{counters_error, missed_total, Losses, Session};
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use typhon_recorder::codec::TraceEventKind;
use typhon_recorder::printable::{json_printable, printable};
use typhon_trace::export;
use typhon_trace::tracedat::TraceFile;

pub type Res = Result<(), String>;

/// The slot's thread name from the file, escaped for the terminal.
pub(crate) fn comm(f: &TraceFile, cpu: u32) -> String {
    printable(f.cmdline(cpu as i64).unwrap_or("<...>")).to_string()
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

/// The error a reading ends with when records the metadata says were written were not
/// found, with no damage reported in their place ([`TraceFile::unread_records`]: a damaged
/// per-CPU table or BUFFER option hides a slot's data without a damaged page): the output
/// stands, and the exit status says it is incomplete, as for damaged pages.
pub(crate) fn unread(file: &Path, f: &TraceFile, what: &str) -> Res {
    let n = f.unread_records();
    if n == 0 {
        return Ok(());
    }
    Err(format!(
        "{}: {n} record{} the file's metadata says were written {} not in its data, with no \
         damaged page in their place (its per-CPU table or options are damaged; see the \
         warnings): {what} lacks them",
        file.display(),
        if n == 1 { "" } else { "s" },
        if n == 1 { "is" } else { "are" },
    ))
}

/// The end of a reading: [`damaged`]'s error, [`unread`]'s, and the file's counters' if
/// they cannot be right (each a line).
pub(crate) fn reading_end(
    file: &Path,
    f: &TraceFile,
    pages: u64,
    what: &str,
    counters: Option<String>,
) -> Res {
    let why: Vec<String> = [
        damaged(file, pages, what).err(),
        unread(file, f, what).err(),
        counters,
    ]
    .into_iter()
    .flatten()
    .collect();
    if why.is_empty() {
        Ok(())
    } else {
        Err(why.join("\n"))
    }
}

/// Warns on stderr, naming the file, when its clock anchors are missing or malformed.
pub(crate) fn warn_anchor(file: &Path, f: &TraceFile) {
    if let Some(p) = crate::timebase::TimeBase::anchor_problem(f) {
        eprintln!("typhon-rec: warning: {}: {}", file.display(), printable(&p));
    }
}

/// "1 damaged page", "2 damaged pages".
fn damaged_pages(n: u64) -> String {
    format!("{n} damaged page{}", if n == 1 { "" } else { "s" })
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
pub fn export(
    file: &Path,
    format: export::Format,
    out: Option<std::path::PathBuf>,
    sel: &Selection,
) -> Res {
    let out = out.unwrap_or_else(|| file.with_extension(format.extension()));
    if out == file || same_file(&out, file) {
        return Err(format!(
            "{}: the export would overwrite the recording",
            out.display()
        ));
    }
    // Streaming: the records stay in the file and are read a page at a time.
    let mut f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    crate::select::narrow(&mut f, sel, file)?;
    if format == export::Format::Perfetto {
        // Its clock snapshot carries the anchor; without one the trace has no wall-clock time.
        warn_anchor(file, &f);
    }
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
            "  {} skipped, each run of them on a slot marked \"events lost\" without a \
             count of events (damaged_pages: the run's pages)",
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
    reading_end(file, &f, s.damaged_pages, "the export", None)
}

/// Per slot and per kind counts, missed, time span and rates, and every counter the session
/// kept (SPEC §9): attempted, written, missed, refused, filtered, no_slot, sink_lost, pages
/// lost, sink errors, damaged pages, clamped times and what recovery found.
pub fn stats(file: &Path, json: bool, tick_budget: u64, sel: &Selection) -> Res {
    // Streamed: memory is a page per slot plus the duration series, whatever the file's size.
    let f = TraceFile::open_streaming(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let tb = crate::select::time_base(&f);
    let picked = Picked::new(sel, &f, &tb, &file.display().to_string())?;
    let mut owners = Owners::new(&f);
    let mut durations = crate::durations::Durations::new(tick_budget);
    let mut counter_series = crate::counters::Counters::default();
    let mut slots: BTreeMap<u32, SlotAcc> = BTreeMap::new();
    // Every slot's losses, selected or not: the losses line is the whole file's.
    let mut page_missed: BTreeMap<u32, u64> = BTreeMap::new();
    let mut kinds: BTreeMap<u8, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    let mut read = 0u64;
    let pb = progress("stats");
    for r in f.stream_records() {
        let r = match r {
            Ok(r) => r,
            Err(typhon_trace::tracedat::TraceDatError::DamagedPage { cpu, pages, .. }) => {
                all.damaged = all.damaged.saturating_add(pages);
                if picked.thread(cpu, owners.name(cpu)) {
                    let d = &mut slots.entry(cpu).or_default().acc.damaged;
                    *d = d.saturating_add(pages);
                }
                continue;
            }
            // A read error (not damage in the file): the counts would be short without saying.
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        read += 1;
        if read.is_multiple_of(65536) {
            pb.set_position(read);
        }
        if let Some(m) = r.missed_before.filter(|&m| m > 0) {
            *page_missed.entry(r.cpu).or_default() += m as u64;
            all.missed += m as u64;
        }
        owners.follow(r.cpu, &r.data);
        if !picked.thread(r.cpu, owners.name(r.cpu)) || !picked.data_in_window(r.ts, &r.data) {
            continue;
        }
        durations.add(r.cpu, &r.data);
        counter_series.add(r.ts, &r.data);
        let s = slots.entry(r.cpu).or_default();
        s.add(r.ts, owners.current(r.cpu), owners.name(r.cpu));
        all.add(r.ts);
        kinds
            .entry(r.data.get(2).copied().unwrap_or(0))
            .or_default()
            .add(r.ts);
    }
    for (c, m) in &page_missed {
        if let Some(s) = slots.get_mut(c) {
            s.acc.missed = *m;
        }
    }
    pb.finish_and_clear();
    durations.finish();
    let session = Session::read(&f);
    // Slots the metadata counts but that have no records (every write refused, say) too.
    if picked.everything() {
        for &c in session.slots.keys() {
            slots.entry(c).or_default();
        }
    }
    let missed = missed_total(&session, &page_missed);
    let losses = Losses::new(&session, missed, all.damaged, f.unread_records());
    let bad_counters = counters_error(file, &session, &losses);
    warn_anchor(file, &f);
    let counters = |c: u32| session.slots.get(&c).copied().unwrap_or_default();
    let saturated = crate::session::saturated(&session, &losses);
    if json {
        let mut v = serde_json::json!({
            "file": file.display().to_string(),
            "selected": !picked.everything(),
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
            "slots": slots.iter().map(|(c, sa)| slot_json(&f, *c, sa, counters(*c))).collect::<Vec<_>>(),
            "kinds": kinds.iter().map(|(k, a)| serde_json::json!({
                "kind": k, "name": TraceEventKind(*k).to_string(), "records": a.count,
                "span_s": a.span_s(), "records_per_s": a.rate(),
            })).collect::<Vec<_>>(),
        });
        v["durations"] = durations.json(&tb);
        v["counters"] = counter_series.json();
        // (Beside the object above: one macro call that large exceeds the recursion limit.)
        v["missing_chunks"] = session.missing_chunks.into();
        v["missing_pages"] = session.missing_pages.into();
        v["damaged_chunks"] = session.damaged_chunks.into();
        v["duplicate_chunks"] = session.duplicate_chunks.into();
        v["evicted_records"] = session.evicted_records.into();
        v["evicted_pages"] = session.evicted_pages.into();
        v["window"] = session.window.clone().into();
        v["reader_warnings"] = f.reader_warnings().into();
        v["losses"] = losses
            .lost
            .iter()
            .filter(|e| e.1 > 0)
            .map(|(k, n)| ((*k).to_string(), serde_json::Value::from(*n)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        v["saturated"] = saturated.clone().into();
        v["metadata_problems"] = session.problems.clone().into();
        println!("{}", json_printable(&format!("{v:#}")));
        return reading_end(file, &f, all.damaged, "the counting", bad_counters);
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
    if !picked.everything() {
        println!(
            "selected: the records, spans, rates and durations below are the selection's; the \
             losses and the counters are the whole recording's"
        );
    }
    println!("losses: {}", losses.line());
    if let Some(e) = &bad_counters {
        println!("({})", printable(e));
    }
    for w in f.reader_warnings() {
        println!("warning: {}", printable(&w));
    }
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
        if session.missing_chunks + session.damaged_chunks + session.duplicate_chunks > 0 {
            println!(
                "recovered chunks: {} missing ({} pages lost), {} damaged (left out, their pages in the damaged pages), {} repeated (left out)",
                session.missing_chunks,
                session.missing_pages,
                session.damaged_chunks,
                session.duplicate_chunks
            );
        }
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
    if let Some(line) = session.window_line() {
        println!("{line}");
    }
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
    for (c, sa) in &slots {
        let m = counters(*c);
        let a = &sa.acc;
        println!(
            "{:>4}  {:<20} {:>12} {:>10} {:>12} {:>12} {:>9} {:>9} {:>9} {:>8} {:>8} {:>10.3} {:>14}{}",
            c,
            printable(&sa.label(&comm(&f, *c))).to_string(),
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
            a.rate_text(),
            damage(a.damaged)
        );
        if sa.owners.len() + sa.more_owners as usize > 1 {
            // A reused slot: each thread's own records, span and rate.
            for (tid, name, a) in sa.owners.iter().take(OWNER_ROWS) {
                let who = match tid {
                    Some(t) => format!("· {} ({t})", printable(name)),
                    None => format!("· {}", printable(name)),
                };
                println!(
                    "{:>4}  {:<20} {:>12} {:>97.3} {:>14}",
                    "",
                    who,
                    a.count,
                    a.span_s(),
                    a.rate_text()
                );
            }
            let rest = (sa.owners.len().saturating_sub(OWNER_ROWS)) as u64 + sa.more_owners;
            if rest > 0 {
                println!("{:>4}  · {rest} more threads", "");
            }
        }
    }
    println!(
        "\n{:>4}  {:<20} {:>12} {:>10} {:>14}",
        "kind", "name", "records", "span s", "records/s"
    );
    for (k, a) in &kinds {
        println!(
            "{:>4}  {:<20} {:>12} {:>10.3} {:>14}",
            k,
            TraceEventKind(*k).to_string(),
            a.count,
            a.span_s(),
            a.rate_text()
        );
    }
    print!("{}", durations.table(&tb));
    print!("{}", counter_series.table());
    reading_end(file, &f, all.damaged, "the counting", bad_counters)
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

/// Recovers a killed recording: OUT from OUT.parts/, or, for a rotating recording (no
/// OUT.parts/), every segment OUT.NNNNNN a kill left unfinished.
pub fn recover(out: &Path) -> Res {
    if !typhon_recorder::sink::parts_dir(out).exists() {
        let segs = typhon_recorder::sink::recover_segments(out).map_err(|e| e.to_string())?;
        if !segs.is_empty() {
            // Each segment is told, then the first problem is returned.
            let results: Vec<Res> = segs
                .iter()
                .map(|(seg, r)| print_recovered(seg, r))
                .collect();
            return results.into_iter().collect();
        }
    }
    let r = typhon_recorder::sink::recover(out).map_err(|e| e.to_string())?;
    print_recovered(out, &r)
}

fn print_recovered(out: &Path, r: &typhon_recorder::sink::Recovered) -> Res {
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
        if r.missing_chunks > 0 || r.missing_pages > 0 {
            println!(
                "  missing: {} compressed chunks and {} pages the parts should hold and do not (lost)",
                r.missing_chunks, r.missing_pages
            );
        }
        if r.damaged_chunks > 0 {
            println!(
                "  left out: {} compressed chunks that do not decompress (their pages are counted damaged)",
                r.damaged_chunks
            );
        }
        if r.duplicate_chunks > 0 {
            println!(
                "  left out: {} compressed chunks that repeat an earlier one (their records are counted once)",
                r.duplicate_chunks
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
/// Runs the benchmark and prints it; returns the names of the counted targets this run missed.
/// The run's figures depend on the machine and its load (BENCHMARKS.md reports series of
/// runs), so a miss is said plainly on stderr and is an error only under `--strict`.
pub fn bench(quick: bool, json: bool, plot: Option<&Path>) -> Result<Vec<String>, String> {
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
    let (missed, said) = bench_verdict(&report.targets, cfg!(debug_assertions));
    eprintln!("{said}");
    Ok(missed)
}

/// The counted targets a run missed, and what to say of the run: its figures are measurements
/// of this machine under its load, not a verdict (and a debug build's are not even that).
#[cfg(feature = "bench")]
fn bench_verdict(targets: &[typhon_bench::TargetCheck], debug: bool) -> (Vec<String>, String) {
    let counted: Vec<_> = targets.iter().filter(|t| t.counted).collect();
    let missed: Vec<String> = counted
        .iter()
        .filter(|t| !t.pass)
        .map(|t| t.name.to_string())
        .collect();
    let mut said = format!(
        "{} of {} counted targets met on this run. These figures are measurements of this \
         machine under its current load, not a verdict: one run on a shared machine can miss a \
         target that a series meets (BENCHMARKS.md). --strict makes a miss exit with status 2.",
        counted.len() - missed.len(),
        counted.len()
    );
    if debug {
        said.push_str(
            " This typhon-rec is a debug build, whose figures mean nothing: run \
             `cargo run --release -p typhon-rec -- bench`.",
        );
    }
    (missed, said)
}

#[cfg(all(test, feature = "bench"))]
mod bench_tests {
    use super::bench_verdict;
    use typhon_bench::TargetCheck;

    fn t(name: &'static str, pass: bool, counted: bool) -> TargetCheck {
        TargetCheck {
            name,
            target: "",
            measured: 0.0,
            limit: 0.0,
            pass,
            counted,
        }
    }

    #[test]
    fn a_missed_counted_target_is_named_and_the_run_is_no_verdict() {
        let targets = [
            t("a", true, true),
            t("b", false, true),
            t("c", false, false),
        ];
        let (missed, said) = bench_verdict(&targets, false);
        assert_eq!(missed, ["b"], "a context row (c) is not counted");
        assert!(said.starts_with("1 of 2 counted targets met") && said.contains("not a verdict"));
        assert!(!said.contains("debug build"));
        assert!(bench_verdict(&targets, true).1.contains("debug build"));
        assert!(bench_verdict(&targets[..1], false).0.is_empty());
    }
}

/// Without the `bench` feature there is nothing to run.
#[cfg(not(feature = "bench"))]
pub fn bench(_quick: bool, _json: bool, _plot: Option<&Path>) -> Result<Vec<String>, String> {
    Err(
        "this typhon-rec was built without the `bench` feature (cargo build --features bench)"
            .into(),
    )
}

//! Reading recordings: report, stats, export, pages, recover.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use typhon_recorder::codec::{records, TraceEventKind};
use typhon_trace::export;
use typhon_trace::tracedat::TraceFile;

pub type Res = Result<(), String>;

fn open(file: &Path) -> Result<TraceFile, String> {
    TraceFile::open(file).map_err(|e| format!("{}: {e}", file.display()))
}

fn comm(f: &TraceFile, cpu: u32) -> String {
    f.cmdline(cpu as i64).unwrap_or("<...>").to_string()
}

/// A records counter on stderr for reads that can take more than a second: drawn only when
/// stderr is a terminal and stdout is not (so it never mixes with output on a terminal).
fn progress(what: &'static str) -> indicatif::ProgressBar {
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

fn secs(ts: u64) -> String {
    format!("{}.{:09}", ts / 1_000_000_000, ts % 1_000_000_000)
}

/// The error a reading ends with when it skipped damaged pages: the output stands, and the
/// exit status says it is incomplete (as `tar` does after skipping damaged members).
fn damaged(file: &Path, pages: u64, what: &str) -> Res {
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

/// One line per record in time order, with a line before each record that follows lost ones
/// and one in place of each damaged page's unread records.
pub fn report(file: &Path) -> Res {
    let f = open(file)?;
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let mut line = String::new();
    let pb = progress("report");
    let mut damaged_pages = 0u64;
    for (n, r) in f.records().enumerate() {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                damaged_pages += 1;
                if writeln!(out, "[DAMAGED PAGE: {e}]").is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        if n % 65536 == 0 {
            pb.set_position(n as u64);
        }
        match r.missed_before {
            Some(k) if k > 0 => writeln!(out, "CPU:{} [{k} EVENTS DROPPED]", r.cpu),
            Some(_) => writeln!(out, "CPU:{} [EVENTS DROPPED]", r.cpu),
            None => Ok(()),
        }
        .map_err(|e| e.to_string())?;
        line.clear();
        let c = comm(&f, r.cpu);
        let _ = write!(line, "{c:>16}-{:<5} [{:03}] {}: ", r.cpu, r.cpu, secs(r.ts));
        match records::decode_fields(r.data) {
            Ok(d) => {
                let name = d.def.map_or_else(
                    || format!("Kind[{}]", d.header.kind.0),
                    |k| k.name.to_string(),
                );
                let _ = write!(line, "{name:<16} ");
                let _ = records::write_fields(&d, &mut line);
            }
            Err(e) => {
                let kind = r.data.get(2).map_or(0, |&k| k);
                let _ = write!(line, "{:<16} [undecodable: {e}]", TraceEventKind(kind));
            }
        }
        if writeln!(out, "{line}").is_err() {
            return Ok(()); // closed pipe (e.g. `| head`): not an error
        }
    }
    out.flush().ok();
    pb.finish_and_clear();
    damaged(file, damaged_pages, "the report")
}

/// Whether `a` and `b` are one file (the same inode, whatever the paths: links included).
fn same_file(a: &Path, b: &Path) -> bool {
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
    let f = open(file)?;
    let mut t = export::Timeline::build(&f).map_err(|e| format!("{}: {e}", file.display()))?;
    // The file does not name the program that recorded it; its own name stands in.
    if let Some(stem) = file.file_stem() {
        t.process_name = stem.to_string_lossy().into_owned();
    }
    let s = t.stats();
    let o = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::new(o);
    if let Err(e) = t.write(format, &mut w) {
        drop(w);
        // A partial export is no use; but a device or pipe given as the output stays.
        if std::fs::symlink_metadata(&out).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(&out);
        }
        return Err(format!("{}: {e}", out.display()));
    }
    drop(w);
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    // Flows are written in the Perfetto format only.
    let flows = match format {
        export::Format::Perfetto => format!(", {} flows", s.flows),
        export::Format::Chrome => String::new(),
    };
    println!(
        "{}: {} records -> {} slices, {} instants{flows} on {} tracks of {} threads",
        out.display(),
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
    let viewer = match format {
        export::Format::Perfetto => "open it at https://ui.perfetto.dev (Open trace file)",
        export::Format::Chrome => "open it at https://ui.perfetto.dev or chrome://tracing",
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

/// Per slot and per kind counts, missed, time span and rates.
pub fn stats(file: &Path, json: bool) -> Res {
    let f = open(file)?;
    let mut slots: BTreeMap<u32, Acc> = BTreeMap::new();
    let mut kinds: BTreeMap<u8, Acc> = BTreeMap::new();
    let mut all = Acc::default();
    let pb = progress("stats");
    for r in f.records() {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                all.damaged += 1;
                if let typhon_trace::tracedat::TraceDatError::DamagedPage { cpu, .. } = e {
                    slots.entry(cpu).or_default().damaged += 1;
                }
                continue;
            }
        };
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
    if json {
        let v = serde_json::json!({
            "file": file.display().to_string(),
            "records": all.count,
            "missed": all.missed,
            "damaged_pages": all.damaged,
            "span_s": all.span_s(),
            "slots": slots.iter().map(|(c, a)| serde_json::json!({
                "slot": c, "name": comm(&f, *c), "records": a.count, "missed": a.missed,
                "damaged_pages": a.damaged, "span_s": a.span_s(), "records_per_s": a.rate(),
            })).collect::<Vec<_>>(),
            "kinds": kinds.iter().map(|(k, a)| serde_json::json!({
                "kind": k, "name": TraceEventKind(*k).to_string(), "records": a.count,
                "span_s": a.span_s(), "records_per_s": a.rate(),
            })).collect::<Vec<_>>(),
        });
        println!("{v:#}");
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
        file.display(),
        all.count,
        all.missed,
        all.span_s(),
        damage(all.damaged)
    );
    println!(
        "\n{:>4}  {:<20} {:>12} {:>10} {:>10} {:>14}",
        "slot", "thread", "records", "missed", "span s", "records/s"
    );
    for (c, a) in &slots {
        println!(
            "{:>4}  {:<20} {:>12} {:>10} {:>10.3} {:>14.0}{}",
            c,
            comm(&f, *c),
            a.count,
            a.missed,
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
    damaged(file, all.damaged, "the counting")
}

/// The raw pages of one slot, one file per page.
pub fn pages(file: &Path, slot: u32, out: &Path) -> Res {
    let f = open(file)?;
    if slot >= f.cpus() {
        return Err(format!(
            "{}: no slot {slot} (the file has slots 0..{})",
            file.display(),
            f.cpus()
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut n = 0;
    for (i, page) in f.pages(slot).enumerate() {
        let p = out.join(format!("slot-{slot:03}-page-{i:06}.raw"));
        std::fs::write(&p, page).map_err(|e| format!("{}: {e}", p.display()))?;
        n += 1;
    }
    println!(
        "wrote {n} pages of {} bytes to {} (read one with: cargo run --example kbuffer_dump -- FILE)",
        f.page_size(),
        out.display()
    );
    Ok(())
}

/// Recovers a killed recording.
pub fn recover(out: &Path) -> Res {
    let r = typhon_recorder::filesink::recover(out).map_err(|e| e.to_string())?;
    println!(
        "recovered {}: {} slots, {} records, {} missed",
        out.display(),
        r.slots.len(),
        r.records,
        r.missed
    );
    for (slot, pages, records) in &r.slots {
        println!("  slot {slot:>3}: {pages} pages, {records} records");
    }
    if r.torn_bytes > 0 {
        println!(
            "  left out: {} bytes of pages the kill cut short",
            r.torn_bytes
        );
    }
    if r.damaged_pages > 0 {
        println!(
            "  damaged: {} pages (kept as they are; their records from the damage on are not counted)",
            r.damaged_pages
        );
    }
    Ok(())
}

/// Benchmarks (measurement code lives in the library's `bench` module).
#[cfg(feature = "bench")]
pub fn bench(quick: bool, json: bool) -> Res {
    let report = typhon_bench::run(&typhon_bench::BenchOptions { quick });
    if json {
        println!("{}", report.to_json());
    } else {
        println!("{report}");
    }
    Ok(())
}

/// Without the `bench` feature there is nothing to run.
#[cfg(not(feature = "bench"))]
pub fn bench(_quick: bool, _json: bool) -> Res {
    Err(
        "this typhon-rec was built without the `bench` feature (cargo build --features bench)"
            .into(),
    )
}

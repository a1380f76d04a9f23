//! `typhon-rec demo`: a synthetic game/server workload recorded to a trace.dat.
//!
//! The main thread runs a 60 Hz tick loop (TickStart, a phase around a span and an instant per
//! phase, TickEnd: "input" numbered, "simulation" and "output" named; in the simulation phase Bevy-style `tracing` systems, `system{name=physics}`
//! and `system{name=ai}`, through `typhon_tracing::TyphonLayer`, with an event now and then and a
//! `follows_from` link). Each worker thread plays a network front end for its own sessions: every
//! command is IngressReceived, then IngressDropped (about 1 in 20) or IngressAdmitted for the
//! next drain tick, then CommandConsumed inside a TracedSpan that carries the command's causal id,
//! then EgressSent; CeLog events, plain and flagged, mark batches.

use clap::Args;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use typhon_recorder::codec::celog::{CELID_RAW_ULONG, CELID_USER, CELZONE_MISC};
use typhon_recorder::codec::correlation::IngressDropReason;
use typhon_recorder::codec::records::{ThreadKind, TraceContext};
use typhon_recorder::{RecorderBuilder, RecorderError, Stats, Termination};
use typhon_trace::tracedat::TraceFile;

#[derive(Args)]
pub struct DemoArgs {
    /// Output trace.dat path.
    #[arg(short = 'o', long, default_value = "typhon-demo.dat")]
    out: PathBuf,
    /// How long to record, in seconds (decimals allowed).
    // Negative numbers reach the check below, which says what is wrong, instead of clap's
    // "unexpected argument '-1'".
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
    duration: f64,
    /// Worker threads (besides the tick-loop thread).
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// Records per second per worker thread; 0 = as fast as possible. The default makes a light
    /// first look (about 130 000 records in 3 s); raise it, with --threads, to load the recorder.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// Page (sub-buffer) size in bytes: a power of two from 4096 to 1 MiB.
    #[arg(long, default_value_t = 4096)]
    page_size: usize,
    /// Ring bytes per slot: a power of two, at least 4096.
    #[arg(long, default_value_t = typhon_recorder::DEFAULT_RING_BYTES)]
    ring_size: usize,
    /// Print only the summary, as JSON, on stdout.
    #[arg(long)]
    json: bool,
    /// Write a compressed trace.dat version 7: `zstd` (level 1), `zstd:LEVEL` (1..=19), or
    /// `none` (version 6, the default).
    #[arg(long, default_value = "none", value_parser = typhon_recorder::tracedat::Compression::parse)]
    compress: typhon_recorder::tracedat::Compression,
    /// A partly filled page goes out once it is this old (with its unit: ms, s, …): what a
    /// viewer following the recording (`typhon-rec live`) waits at most for a quiet thread's
    /// records, before the flush interval.
    #[arg(long, default_value = "1s", value_parser = crate::durations::parse_duration)]
    max_page_age: u64,
    /// Write the run as rotating segments OUT.000001, OUT.000002, … of about this many bytes
    /// of pages each (`8MiB`, `512KiB`, `1G`, or bytes), keeping the newest `--keep`.
    #[arg(long, value_parser = parse_bytes)]
    rotate: Option<u64>,
    /// With --rotate: how many complete segments to keep.
    #[arg(long, default_value_t = 4, requires = "rotate")]
    keep: usize,
    /// Always on (SPEC §16): keep only the last DURATION (e.g. 3s) in memory, no file; a
    /// snapshot of it goes to --snapshot-dir at the end, on a trigger, or on
    /// `typhon-rec snapshot DIR`.
    // A window writes no file: an output path or rotation beside it is refused, not ignored.
    #[arg(long, value_name = "DURATION", value_parser = crate::durations::parse_duration,
          conflicts_with_all = ["out", "rotate"])]
    window: Option<u64>,
    /// With --window: at most this many bytes held (the budget wins over the duration).
    #[arg(long, value_name = "BYTES", requires = "window")]
    window_bytes: Option<u64>,
    /// With --window: where snapshots go (default: the working directory).
    #[arg(long, value_name = "DIR", requires = "window")]
    snapshot_dir: Option<PathBuf>,
    /// With --window: a snapshot when a tick lasts longer than this (at most one a second,
    /// 200 ms kept after the tick).
    #[arg(long, value_name = "DURATION", requires = "window", value_parser = crate::durations::parse_duration)]
    snapshot_on_tick_over: Option<u64>,
}

/// `8MiB`, `8M`, `512KiB`, `1GiB`, `4096`: a size in bytes (K, M, G are powers of 1024).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("{s:?}: a size is a number of bytes, optionally with KiB, MiB or GiB")
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        u => return Err(format!("{s:?}: unknown unit {u:?} (KiB, MiB or GiB)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// Samples write latency: every 32nd write is bracketed by clock reads.
struct Sampler {
    clock: quanta::Clock,
    hist: Histogram<u64>,
    bracket: u64,
    n: u32,
}

impl Sampler {
    fn new() -> Self {
        let clock = quanta::Clock::new();
        // The cost of an empty bracket, subtracted from every sample.
        let mut b = u64::MAX;
        for _ in 0..1000 {
            let t0 = clock.raw();
            let t1 = clock.raw();
            b = b.min(clock.delta_as_nanos(t0, t1));
        }
        Self {
            clock,
            hist: Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram bounds"),
            bracket: b,
            n: 0,
        }
    }

    #[inline]
    fn time(&mut self, f: impl FnOnce()) {
        self.n = self.n.wrapping_add(1);
        if !self.n.is_multiple_of(32) {
            f();
            return;
        }
        let t0 = self.clock.raw();
        f();
        let t1 = self.clock.raw();
        let ns = self
            .clock
            .delta_as_nanos(t0, t1)
            .saturating_sub(self.bracket);
        let _ = self.hist.record(ns.max(1));
    }
}

fn worker(idx: u32, rate: u64, stop: Arc<AtomicBool>) -> (u64, Histogram<u64>) {
    typhon_recorder::set_thread_info(&format!("net-worker-{idx}"), ThreadKind::Worker);
    // Claim the slot (and its ring) now, so the first sampled write is not the claim.
    typhon_recorder::register_thread();
    let mut s = Sampler::new();
    let start = Instant::now();
    let mut records = 0u64;
    let mut seq: u16 = 0;
    let mut drain_tick: u32 = 0;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ idx as u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..16 {
            let session = idx * 1000 + (next() % 8) as u32;
            seq = seq.wrapping_add(1);
            let wire_idx = (next() % 64) as u16;
            s.time(|| typhon_recorder::ingress_received(session, seq, wire_idx, 64 + (seq % 512)));
            records += 1;
            if next() % 20 == 0 {
                let reason = IngressDropReason::from_u8(1 + (next() % 3) as u8);
                s.time(|| typhon_recorder::ingress_dropped(session, seq, reason));
                records += 1;
                continue;
            }
            drain_tick = drain_tick.wrapping_add(seq.is_multiple_of(4) as u32);
            s.time(|| typhon_recorder::ingress_admitted(session, seq, wire_idx, drain_tick));
            let (hi, lo) = typhon_recorder::command_causal_id(session, drain_tick, seq);
            {
                let _span = typhon_recorder::traced_span("apply-command", TraceContext { hi, lo });
                s.time(|| typhon_recorder::command_consumed(session, seq, seq % 7));
            }
            s.time(|| {
                typhon_recorder::egress_sent(
                    session,
                    drain_tick,
                    128 + (seq as u32 % 900),
                    1 + seq % 3,
                )
            });
            records += 4;
        }
        let batch = records as u32;
        s.time(|| {
            let _ = typhon_recorder::celog_data(
                false,
                CELID_USER + 1,
                b"batch",
                0,
                CELZONE_MISC,
                0,
                false,
            );
        });
        s.time(|| {
            let _ = typhon_recorder::celog_data(
                true,
                CELID_RAW_ULONG,
                &batch.to_le_bytes(),
                0,
                CELZONE_MISC,
                idx as u16,
                true,
            );
        });
        records += 2;
        if rate > 0 {
            let due = Duration::from_secs_f64(records as f64 / rate as f64);
            let el = start.elapsed();
            if due > el {
                std::thread::sleep(due - el);
            }
        }
    }
    (records, s.hist)
}

fn tick_loop(stop: Arc<AtomicBool>) -> u64 {
    typhon_recorder::set_thread_info("game-loop", ThreadKind::Main);
    typhon_recorder::register_thread();
    let period = Duration::from_micros(16_667);
    let mut next = Instant::now();
    let mut records = 0;
    let mut tick: u32 = 0;
    while !stop.load(Ordering::Relaxed) {
        typhon_recorder::tick_start();
        if tick.is_multiple_of(30) {
            records += task();
        }
        for (phase, name) in [(0u8, "input"), (1, "simulation"), (2, "output")] {
            // Input keeps the numbered forms (PhaseStart/End, an Instant by id); simulation's
            // names are static, written once as definitions that its records name by id (the
            // phase guard, `span_static`, a static instant); output's carry their names
            // (NamedPhaseStart/End, NamedSpan, NamedInstant).
            let guard = (phase == 1).then(|| typhon_recorder::phase(phase, name));
            match phase {
                0 => typhon_recorder::phase_start(phase),
                2 => typhon_recorder::named_phase_start(phase, name),
                _ => {}
            }
            {
                let _s = if phase == 1 {
                    typhon_recorder::span_static(name)
                } else {
                    typhon_recorder::span(name)
                };
                match phase {
                    0 => typhon_recorder::instant(phase as i32, tick as i32),
                    1 => typhon_recorder::named_instant_static("step", tick as i32),
                    _ => typhon_recorder::named_instant("step", tick as i32),
                }
                if phase == 1 {
                    records += systems(tick);
                } else {
                    std::thread::sleep(Duration::from_micros(300));
                }
            }
            match phase {
                0 => typhon_recorder::phase_end(phase),
                2 => typhon_recorder::named_phase_end(phase, name),
                _ => drop(guard),
            }
        }
        // The tick's gauges (static names: CounterIds) at its end, and one counter named at
        // run time (inline: a Counter).
        typhon_recorder::counter_named_f64("frame budget used", f64::from(tick % 10) / 10.0);
        typhon_recorder::tick_end_with_gauges(
            tick.is_multiple_of(5) as u8,
            1,
            &[
                ("entities", 1000 + i64::from(tick % 64)),
                ("records", records as i64),
            ],
        );
        records += 1 + 3 * 4 + 1 + 3;
        tick += 1;
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
    }
    records
}

/// A task's span outside any native span, polled twice as an async task is: its entries are
/// compact (TracingEntry), and an event between its last poll and its close makes the close
/// written (TracingClose).
fn task() -> u64 {
    let task = tracing::info_span!("task", id = 1);
    task.in_scope(|| {});
    task.in_scope(|| {});
    tracing::info!("task polled twice");
    drop(task);
    1 + 2 + 1 + 1
}

/// The simulation phase's systems, instrumented with `tracing` as Bevy instruments its own: the
/// records the layer writes (span info at creation, a span per entry, events, links).
fn systems(tick: u32) -> u64 {
    let physics = tracing::info_span!("system", name = "physics");
    physics.in_scope(|| std::thread::sleep(Duration::from_micros(150)));
    let ai = tracing::info_span!("system", name = "ai");
    ai.follows_from(&physics);
    ai.in_scope(|| {
        std::thread::sleep(Duration::from_micros(150));
        if tick.is_multiple_of(30) {
            tracing::info!(tick, "ai replanned");
        }
    });
    if tick == 0 {
        // The inline forms, which the layer writes for a callsite it has no id for (more
        // callsites than its table holds): so the demo has every kind of the table.
        let key = typhon_recorder::bridge::next_key();
        let _ = typhon_recorder::bridge::span_info(key, 0, 3, "inline", "demo", "n=0");
        let _ = typhon_recorder::bridge::event(key, 3, "demo", "inline event", "n=0");
    }
    2 + 2 + 1 + u64::from(tick.is_multiple_of(30)) + 2 * u64::from(tick == 0)
}

pub fn run(a: DemoArgs) -> Result<(), String> {
    // Positive, finite and representable (1e20 s is none of the last).
    let dur = match Duration::try_from_secs_f64(a.duration) {
        Ok(d) if a.duration > 0.0 => d,
        _ => {
            return Err(format!(
                "--duration must be a positive number of seconds, got {}",
                a.duration
            ))
        }
    };
    if a.threads == 0 || a.threads > 250 {
        return Err(format!("--threads must be 1..=250, got {}", a.threads));
    }
    {
        use tracing_subscriber::layer::SubscriberExt;
        // The demo is the process's only `tracing` user: failing to install means one is there.
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()),
        );
    }
    let interrupted = {
        let out = a.out.display().to_string();
        move |why: Termination, outcome: Result<Stats, RecorderError>| {
            eprintln!();
            match outcome {
                Ok(stats) => {
                    eprintln!(
                        "typhon-rec demo: {why}: the recording is finished, {out} is complete: {} records written, {} missed, {} slots",
                        stats.total_written(),
                        stats.total_missed(),
                        stats.slots.len()
                    );
                    eprintln!("  {} stats {out}", this_command());
                }
                Err(e) => eprintln!("typhon-rec demo: {why}: finishing {out} failed: {e}"),
            }
        }
    };
    // Ctrl-C or SIGTERM mid-demo still leaves a complete file, not `OUT.parts/`.
    let builder = match a.window {
        Some(w) => {
            let mut b = RecorderBuilder::new().window(Duration::from_nanos(w));
            if let Some(n) = a.window_bytes {
                b = b.window_bytes(n);
            }
            if let Some(d) = &a.snapshot_dir {
                b = b.snapshot_dir(d);
            }
            if let Some(t) = a.snapshot_on_tick_over {
                b = b.snapshot_when(
                    typhon_recorder::Trigger::tick_over(Duration::from_nanos(t))
                        .keep_after(Duration::from_millis(200))
                        .at_most_every(Duration::from_secs(1)),
                );
            }
            b
        }
        None => RecorderBuilder::new().output(&a.out),
    };
    let mut b = builder
        .page_size(a.page_size)
        .ring_bytes(a.ring_size)
        .compression(a.compress)
        .max_page_age(Duration::from_nanos(a.max_page_age))
        .on_termination(interrupted);
    if let Some(bytes) = a.rotate {
        b = b.rotate(bytes, a.keep);
    }
    let rec = b.start().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..a.threads)
        .map(|i| {
            let stop = stop.clone();
            let rate = a.rate;
            std::thread::Builder::new()
                .name(format!("net-worker-{i}"))
                .spawn(move || worker(i, rate, stop))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let ticker = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("game-loop".into())
            .spawn(move || tick_loop(stop))
            .map_err(|e| e.to_string())?
    };
    let bar = if a.json {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(dur.as_millis() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("recording {bar:40} {elapsed_precise} / {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_message(format!("{:.1}s", a.duration));
        b
    };
    while t0.elapsed() < dur {
        std::thread::sleep(Duration::from_millis(50).min(dur.saturating_sub(t0.elapsed())));
        bar.set_position(t0.elapsed().as_millis() as u64);
    }
    bar.finish_and_clear();
    stop.store(true, Ordering::Relaxed);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3).expect("bounds");
    for w in workers {
        let (_, h) = w
            .join()
            .map_err(|_| "a worker thread panicked".to_string())?;
        hist.add(h).map_err(|e| e.to_string())?;
    }
    ticker
        .join()
        .map_err(|_| "the tick thread panicked".to_string())?;
    let elapsed = t0.elapsed().as_secs_f64();
    if a.window.is_some() {
        return window_summary(rec, elapsed, a.json, &hist);
    }
    let stats = rec.finish().map_err(|e| e.to_string())?;

    // Read the file (or the kept segments) back: the summary describes what is in it; what
    // deleted segments held is in the rotated-out counts.
    let files = match a.rotate {
        Some(_) => typhon_recorder::sink::segment_files(&a.out)
            .map_err(|e| format!("{}: {e}", a.out.display()))?,
        None => vec![a.out.clone()],
    };
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut in_file = stats.rotated_out_records;
    let mut missed_in_file = stats.rotated_out_missed;
    let mut bytes = 0;
    for path in &files {
        let f = TraceFile::open_streaming(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut stream = f.stream_records();
        while let Some(r) = stream.next() {
            let r = r.map_err(|e| e.to_string())?;
            in_file += 1;
            if let Some(m) = r.missed_before.filter(|&m| m > 0) {
                missed_in_file += m as u64;
            }
            // As written: a `tracing` span's description counts as the typed record it is, a
            // compact kind as itself.
            let k = stream.stored_kind();
            *kinds.entry(k.to_string()).or_default() += 1;
        }
        bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    }
    let attempted: u64 = stats.slots.iter().map(|s| s.attempted).sum();
    let written = stats.total_written();
    let missed = stats.total_missed();
    if written != in_file || missed != missed_in_file {
        return Err(format!(
            "accounting mismatch: stats say {written} written / {missed} missed, the file holds {in_file} / {missed_in_file}"
        ));
    }
    let q = |p: f64| hist.value_at_quantile(p);
    let drain_gap_ms = stats.longest_drain_gap_ns as f64 / 1e6;
    // With rotation there is no OUT: the newest segment is what to look at.
    let out = match (a.rotate, files.last()) {
        (Some(_), Some(p)) => p.display().to_string(),
        _ => a.out.display().to_string(),
    };
    if a.json {
        let v = serde_json::json!({
            "file": out,
            "duration_s": elapsed,
            "records_per_s": written as f64 / elapsed,
            "attempted": attempted,
            "written": written,
            "missed": missed,
            "filtered": stats.total_filtered(),
            "no_slot": stats.no_slot,
            "pages": stats.pages,
            "longest_drain_gap_ms": drain_gap_ms,
            "bytes": bytes,
            "page_size": a.page_size,
            "compression": a.compress.to_string(),
            "segments": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "rotated_out_segments": stats.rotated_out_segments,
            "rotated_out_records": stats.rotated_out_records,
            "kinds": kinds,
            "latency_ns": { "p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "p9999": q(0.9999),
                            "max": hist.max(), "samples": hist.len() },
            "slots": stats.slots.iter().map(|s| serde_json::json!({
                "slot": s.slot, "name": s.name, "attempted": s.attempted,
                "written": s.written, "missed": s.missed,
            })).collect::<Vec<_>>(),
        });
        println!("{v}");
        return Ok(());
    }
    println!(
        "typhon-rec demo: {} worker threads + game loop for {elapsed:.2} s",
        a.threads
    );
    println!(
        "  records   {written} written ({:.2} M/s), {missed} missed, {attempted} attempted, {} filtered",
        written as f64 / elapsed / 1e6,
        stats.total_filtered()
    );
    if a.rotate.is_some() {
        println!(
            "  pages     {} of {} bytes written in all; {} bytes in the kept segments; {} slots",
            stats.pages,
            a.page_size,
            bytes,
            stats.slots.len()
        );
    } else {
        println!(
            "  file      {out}: {} bytes, {} pages of {} bytes, {} slots",
            bytes,
            stats.pages,
            a.page_size,
            stats.slots.len()
        );
    }
    if a.rotate.is_some() {
        println!(
            "  segments  {} kept ({}), {} deleted holding {} records",
            files.len(),
            files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            stats.rotated_out_segments,
            stats.rotated_out_records
        );
    }
    println!(
        "  flusher   at most {:.1} ms between two drains of the rings",
        drain_gap_ms
    );
    println!(
        "  latency   per write (sampled 1/32, bracket cost removed): p50 {} ns, p99 {} ns, p99.9 {} ns, p99.99 {} ns, max {} ns",
        q(0.5),
        q(0.99),
        q(0.999),
        q(0.9999),
        hist.max()
    );
    println!("  kinds");
    for (k, n) in &kinds {
        println!("    {k:<18} {n:>12}");
    }
    println!("  slots");
    for s in &stats.slots {
        println!(
            "    {:>3} {:<20} attempted {:>10}  written {:>10}  missed {:>8}",
            s.slot, s.name, s.attempted, s.written, s.missed
        );
    }
    let me = this_command();
    println!("\nLook at it:");
    let look = [
        (
            format!("{me} report {out} | less"),
            "every record, named fields",
        ),
        (
            format!("{me} stats {out}"),
            "durations per tick, phase and span; counts, losses",
        ),
        (
            format!("trace-cmd report {out} | less"),
            "the standard ftrace reader",
        ),
        (
            format!("kernelshark {out}"),
            "timeline GUI (one row per thread slot)",
        ),
        (
            format!("{me} export {out}"),
            "-> .pftrace: open it at https://ui.perfetto.dev",
        ),
    ];
    let w = look.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    for (cmd, what) in &look {
        println!("  {cmd:<w$}  # {what}");
    }
    Ok(())
}

/// The end of an always-on demo: a last snapshot of the window, and what was kept and evicted.
fn window_summary(
    rec: typhon_recorder::Recorder,
    elapsed: f64,
    json: bool,
    hist: &Histogram<u64>,
) -> Result<(), String> {
    let q = |p: f64| hist.value_at_quantile(p);
    let t = Instant::now();
    let snap = rec.snapshot().map_err(|e| e.to_string())?;
    let snap_s = t.elapsed().as_secs_f64();
    let stats = rec.finish().map_err(|e| e.to_string())?;
    let path = snap.path.display().to_string();
    if json {
        let v = serde_json::json!({
            "snapshot": path, "from_ns": snap.from_ns, "to_ns": snap.to_ns,
            "snapshot_records": snap.records, "snapshot_s": snap_s,
            "duration_s": elapsed,
            // All slots, as `written` (slot 0's own records included), as in a file demo.
            "attempted": stats.slots.iter().map(|s| s.attempted).sum::<u64>(),
            "written": stats.total_written(), "missed": stats.total_missed(),
            "evicted_records": stats.evicted_records, "evicted_pages": stats.evicted_pages,
            "longest_drain_gap_ms": stats.longest_drain_gap_ns as f64 / 1e6,
            "latency_ns": { "p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "max": hist.max(),
                            "samples": hist.len() },
        });
        println!("{v}");
        return Ok(());
    }
    println!("typhon-rec demo: always on for {elapsed:.2} s");
    println!(
        "  records   {} written, {} missed; {} evicted from the window ({} pages), not lost",
        stats.total_written(),
        stats.total_missed(),
        stats.evicted_records,
        stats.evicted_pages
    );
    println!(
        "  snapshot  {path}: {} records, {:.3} s of window, written in {:.3} s",
        snap.records,
        (snap.to_ns - snap.from_ns) as f64 / 1e9,
        snap_s
    );
    println!(
        "  latency   per write (sampled 1/32, bracket cost removed): p50 {} ns, p99 {} ns, p99.9 {} ns",
        q(0.5),
        q(0.99),
        q(0.999)
    );
    let me = this_command();
    println!("\nLook at it:\n  {me} stats {path}\n  {me} report {path} | less");
    Ok(())
}

/// How to call this program again from the user's shell: `typhon-rec` when that name on PATH
/// is this very binary, else the binary's own path (after `cargo run` it is in target/, and a
/// pasted `typhon-rec …` would fail with "command not found").
fn this_command() -> String {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return "typhon-rec".into();
    };
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("typhon-rec"))
            .find(|c| c.is_file())
    });
    match on_path.and_then(|p| p.canonicalize().ok()) {
        Some(p) if p == me => "typhon-rec".into(),
        _ => me.display().to_string(),
    }
}

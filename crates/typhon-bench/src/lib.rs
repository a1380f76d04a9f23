//! The write-cost benchmark behind `typhon-rec bench`: side-by-side figures for this recorder,
//! the physical floors and peer libraries, measured in one run on the machine at hand, and the
//! speed targets as ratios between them.
//!
//! Everything is measured in-process and in phases, one after another (only one recorder can be
//! installed at a time):
//!
//! 1. **ns/op figures** (`clock_ns`, `write_clock_ns`, …): tight loops of calls, timed with the
//!    TSC around the whole loop; each figure is the median over several runs. These are
//!    *amortised throughput costs* (Δtime / calls), the same quantity criterion reports.
//!    The disabled figure (`disabled_ns`) times calls in straight-line code, eight per loop
//!    iteration, as instrumentation sits in a program; `disabled_loop_ns` (context) times one
//!    call per iteration, where the loop's own branch and where the linker places it weigh on
//!    the figure. Their runs alternate and are spread over the whole benchmark (a first batch
//!    after 200 ms of spinning, before any helper thread exists, then two runs between each later
//!    phase, with no recorder installed): this machine's speed for a 1 ns loop drifts by up to 2x
//!    over ~100 ms, so runs taken all at once measure one moment of it.
//!    The figures the counted ratios compare (clock, store floor, our writes, ArrayQueue, our
//!    span pair with the clock and with caller times, the peers' spans: fastrace, puffin and
//!    Tracy) are taken **side by side**: every round times one run of
//!    20 000 calls of each, starting at a different one each round, so a slow stretch of the
//!    shared machine falls on all of them alike. After each run its background work finishes,
//!    untimed, before the next run starts: the flusher drains our ring
//!    ([`Recorder::drain`](typhon_recorder::Recorder::drain)), fastrace's collector takes its spans
//!    (`fastrace::flush`), puffin hands its frame to a counting sink (`new_frame`), a consumer
//!    thread empties the ArrayQueue; Tracy's client (on-demand off, no viewer) keeps every zone
//!    queued, and the growth of resident memory per zone (`tracy_bytes_per_zone`, about 64:
//!    two 32-byte queue items) shows it did.
//!    So our writes and ArrayQueue's pushes both go into an empty buffer of the default ring's
//!    size (2 MiB, `NullSink`; ours on a huge page where the kernel gives one, ArrayQueue's on
//!    the heap in 4 KiB pages, which its allocation decides), and no run measures the ring-full
//!    path (drops of this phase are reported as `ns_phase_drops`). The `(context)` figures (`arrayqueue_local_ns`: a 512-slot
//!    queue pushed and popped on one core; `arrayqueue_shared_ns`: popped during the run;
//!    `store_floor_shared_ns`: the floor into a consumer-read ring) are reported beside the
//!    targets, not counted in `all_pass`.
//!    Then the `tracing` bridges, side by side in the same way: enter + exit of one
//!    `info_span!("system", name = "physics")` through a no-op layer (the Registry's floor),
//!    `TyphonLayer`, tracing-chrome and tracing-tracy, each run in its own dispatcher scope, and
//!    an `info!` with one field through ours (`tracing_*_ns`).
//! 2. **Per-call latency**: every call bracketed by `lfence; rdtsc; lfence` … `lfence; rdtsc`,
//!    recorded in an HdrHistogram. The flusher runs and writes a real trace file (a
//!    [`FileSink`](typhon_recorder::sink::FileSink) on a temporary path, removed afterwards), default
//!    ring size. Calls are paced at 2 M/s (one every 500 ns, spinning in between), within what
//!    the flusher drains into a file; a call delayed by a stall is timed from its own start (no
//!    coordinated-omission correction), and drops are reported next to the percentiles. The
//!    first call of the thread (slot claim, ring allocation) is reported separately, and so are,
//!    on another fresh thread, [`register_thread`](typhon_recorder::register_thread) (the claim moved to
//!    thread start) and the first call after it.
//!    Each 500 ns holds four bracketed slots: our call; a quarter later, the floor of a write
//!    with the clock (a TSC read, three plain stores and a publish into a private ring as large
//!    as ours and backed the same way, 2 MiB on a huge page where the kernel gives one:
//!    `floor_p50_ns`, `floor_p999_ns`, the tail the machine gives the least a clocked write can
//!    do); half way, a lone TSC read (`tsc_p50_ns`, `tsc_p999_ns`: no ring touched, nothing of
//!    ours called; its p99.9 is held to our limit, 4 x our p50: does the machine let even that
//!    call meet it?); three quarters of the way, an empty bracket. The empty bracket's median
//!    is the cost subtracted from every figure, and its own p99.9 (`empty_p999_ns`) shows how
//!    much of the tail is the machine stalling the thread whatever it runs.
//!    The ring's page backing is reported with the figures (`ring_huge_share`: the share of the
//!    latency thread's ring's mapping on transparent huge pages, from `/proc/self/smaps`), since
//!    a ring on 4 KiB pages has a longer tail.
//!    **Resolution**: the TSC of AMD hosts advances in steps of about 10 ns (`resolution_ns`:
//!    the smallest non-zero difference of two back-to-back reads), so every percentile is a
//!    multiple of a step. Each slot opens after a pseudo-random delay of a few steps, so a short
//!    call rounds up or down at random instead of the same way every time, and
//!    `latency_mean_ns` (ours minus the empty bracket's, both dithered) is free of the rounding.
//! 3. **Multi-thread throughput** at 1, 2 and 4 threads (default ring, NullSink): records/s
//!    over all threads, with the drops next to each figure.
//! 4. **Flusher throughput**: one producer writes as fast as it can into a 64 MiB ring while the
//!    flusher drains; the figure is records written to pages divided by the flusher thread's
//!    on-CPU time (from `/proc/self/task/<tid>/schedstat`), i.e. records per second of flusher
//!    CPU — into a NullSink and into the file sink. Then the recorder's own threads at a
//!    steady rate (one producer, 2 M records/s in 1 ms batches, default ring, file sink):
//!    the flusher's CPU time per record uncompressed (`flusher_cpu_ns_per_record`), and the
//!    flusher's and the compressor thread's (`compressor_cpu_ns_per_record`) with zstd at the
//!    default level, each thread's time from its schedstat, read once it went idle.
//! 5. **Drops at 5 M records/s**: 2 threads, each writing 2.5 M records/s paced in 1 ms batches
//!    (sleep until the next batch's deadline), default ring size, for a fixed duration. A
//!    producer that falls behind its schedule (the machine did not run it) catches up at once,
//!    as a real workload with queued work would; `late_ms_at_5m` reports the worst lag, since
//!    a lag of more than the ring holds (about 38 ms at 2.5 M records/s) drops records in the
//!    catch-up burst whatever the flusher does. `drain_gap_ms_at_5m` is the other side: the
//!    longest time between two drains of the rings, over 38 ms when the flusher was held up.
//!
//!
//! [`plot::write_plots`] draws a report as SVGs (`typhon-rec bench --plot DIR`).
//!
//! ```no_run
//! use typhon_bench::{run, BenchOptions};
//! let report = run(&BenchOptions { quick: true });
//! println!("{report}");
//! println!("{}", report.to_json());
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod alloc;
mod bridges;
mod disabled;
mod floors;
mod latency;
mod load;
mod locks;
mod own_threads;
mod peers;
pub mod plot;
#[cfg(feature = "real-programs")]
pub mod real;
mod report;
mod targets;
mod text;
mod timer;
mod window;
mod writes;

pub use floors::FloorRing;
pub use report::{
    BenchReport, FlusherThroughput, Latency, NsFigure, RecorderThreads, TargetCheck,
    ThreadThroughput,
};
pub use timer::{fenced_ticks, ticks, Dither};

use disabled::DisabledRuns;
use std::time::{Duration, Instant};
use timer::{figure, ns_per_tick, Timer};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    /// Fewer and shorter runs: the whole benchmark finishes in well under 30 s.
    pub quick: bool,
}

/// The CPU model and the logical CPU count, for the report's heading.
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cpus} logical CPUs")
}

/// Runs every phase, one after another. Needs no recorder to be installed (phases that cannot
/// install theirs report zeros).
pub fn run(opts: &BenchOptions) -> BenchReport {
    let start = Instant::now();
    let npt = ns_per_tick();
    let t = Timer {
        ns_per_tick: npt,
        runs: if opts.quick { 5 } else { 11 },
        n: if opts.quick { 200_000 } else { 1_000_000 },
        settle: None,
    };
    let mut r = BenchReport {
        quick: opts.quick,
        machine: machine(),
        ..Default::default()
    };
    let no_spare = latency::first_call_no_spare();
    let mut off = DisabledRuns::new(&t);
    peers::local_queues(&mut r, &t);
    off.take(2);
    floors::store_floor_shared(&mut r, &t);
    r.page_fault_ns = floors::page_fault_ns(t.runs, npt);
    peers::arrayqueue_shared(&mut r, &t);
    off.take(2);
    writes::recorder_ns(&mut r, &t);
    off.take(2);
    bridges::bridges(&mut r, &t);
    off.take(2);
    locks::mutexes(&mut r, &t);
    off.take(2);
    alloc::counters_and_allocator(&mut r, &t);
    off.take(2);
    let samples = if opts.quick { 1_000_000 } else { 10_000_000 };
    latency::latency(&mut r, samples, npt, no_spare);
    off.take(2);
    load::threads(&mut r, if opts.quick { 2_000_000 } else { 10_000_000 });
    off.take(2);
    let fd = Duration::from_millis(if opts.quick { 500 } else { 2000 });
    r.flusher_null = load::flusher(false, fd);
    r.flusher_file = load::flusher(true, fd);
    off.take(2);
    r.recorder_threads = own_threads::recorder_threads(fd);
    off.take(2);
    load::drops_at_5m(
        &mut r,
        Duration::from_millis(if opts.quick { 1000 } else { 3000 }),
    );
    off.take(2);
    window::window(&mut r, opts.quick, npt);
    off.take(2);
    r.disabled = figure(off.runs);
    r.disabled_loop = figure(off.loop_runs);
    r.targets = targets::targets(&r);
    r.elapsed_s = start.elapsed().as_secs_f64();
    r
}

/// Only the window-mode figures (SPEC §16) of [`run`], each beside its file-recording twin of
/// the same run, and the targets (those of the other phases fail, unmeasured): for working on
/// window mode without the whole run.
///
/// ```no_run
/// let r = typhon_bench::run_window(&typhon_bench::BenchOptions { quick: true });
/// assert!(r.to_json()["write_clock_window_ns"].is_number());
/// ```
pub fn run_window(opts: &BenchOptions) -> BenchReport {
    let start = Instant::now();
    let mut r = BenchReport {
        quick: opts.quick,
        machine: machine(),
        ..Default::default()
    };
    window::window(&mut r, opts.quick, ns_per_tick());
    r.targets = targets::targets(&r);
    r.elapsed_s = start.elapsed().as_secs_f64();
    r
}

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
//!    span pair, the peers' spans) are taken **side by side**: every round times one run of
//!    20 000 calls of each, starting at a different one each round, so a slow stretch of the
//!    shared machine falls on all of them alike. After each run its background work finishes,
//!    untimed, before the next run starts: the flusher drains our ring
//!    ([`Recorder::drain`](typhon_recorder::Recorder::drain)), fastrace's collector takes its spans
//!    (`fastrace::flush`), puffin hands its frame to a counting sink (`new_frame`), a consumer
//!    thread empties the ArrayQueue.
//!    So our writes and ArrayQueue's pushes both go into an empty buffer of the default ring's
//!    size (2 MiB, `NullSink`; ours on a huge page where the kernel gives one, ArrayQueue's on
//!    the heap in 4 KiB pages, which its allocation decides: the ratio was 1.95 in round 8 of
//!    BENCHMARKS.md, when ours was 4 KiB pages too, and 1.88 after), and no run measures the ring-full path (drops of this phase are
//!    reported as `ns_phase_drops`). The `(context)` figures (`arrayqueue_local_ns`: a 512-slot
//!    queue pushed and popped on one core; `arrayqueue_shared_ns`: popped during the run;
//!    `store_floor_shared_ns`: the floor into a consumer-read ring) are reported beside the
//!    targets, not counted in `all_pass`.
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
//!    a ring on 4 KiB pages has a longer tail (BENCHMARKS.md, round 9).
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
//!    CPU — into a NullSink and into the file sink.
//! 5. **Drops at 5 M records/s**: 2 threads, each writing 2.5 M records/s paced in 1 ms batches
//!    (sleep until the next batch's deadline), default ring size, for a fixed duration. A
//!    producer that falls behind its schedule (the machine did not run it) catches up at once,
//!    as a real workload with queued work would; `late_ms_at_5m` reports the worst lag, since
//!    a lag of more than the ring holds (about 38 ms at 2.5 M records/s) drops records in the
//!    catch-up burst whatever the flusher does. `drain_gap_ms_at_5m` is the other side: the
//!    longest time between two drains of the rings, over 38 ms when the flusher was held up.
//!
//! ```no_run
//! use typhon_bench::{run, BenchOptions};
//! let report = run(&BenchOptions { quick: true });
//! println!("{report}");
//! println!("{}", report.to_json());
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::fmt;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    /// Fewer and shorter runs: the whole benchmark finishes in well under 30 s.
    pub quick: bool,
}

/// One ns/op figure: the median of several runs, with the fastest and slowest run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NsFigure {
    /// Median ns per call over the runs.
    pub median: f64,
    /// Fastest run.
    pub min: f64,
    /// Slowest run.
    pub max: f64,
}

/// Per-call latency distribution (ns, empty-bracket cost subtracted).
#[derive(Clone, Debug, Default)]
pub struct Latency {
    /// Calls sampled.
    pub samples: u64,
    /// The empty bracket's median that was subtracted (ns), timed interleaved with the calls.
    pub bracket_ns: f64,
    /// Percentiles, ns.
    pub p50: f64,
    /// 99th percentile, ns.
    pub p99: f64,
    /// 99.9th percentile, ns.
    pub p999: f64,
    /// 99.99th percentile, ns.
    pub p9999: f64,
    /// Largest sample, ns.
    pub max: f64,
    /// The first call of a fresh thread (claims a slot, taking a spare ring, and writes its
    /// ThreadInfo), ns.
    pub first_call: f64,
    /// The same first call in a session without spare rings
    /// ([`spare_rings(0)`](typhon_recorder::RecorderBuilder::spare_rings)): the claim allocates the
    /// ring and faults it in, ns.
    pub first_call_no_spare: f64,
    /// [`register_thread`](typhon_recorder::register_thread) on a fresh thread (the claim, moved to
    /// thread start), ns.
    pub register: f64,
    /// The first call of a thread that registered, ns.
    pub first_call_registered: f64,
    /// Records dropped during the latency run.
    pub drops: u64,
    /// The floor of a write with the clock (TSC read, 24-byte store, Release publish into a
    /// private ring backed like ours), timed a quarter of the way after each of our calls with the same
    /// brackets: median, ns.
    pub floor_p50: f64,
    /// The floor's 99.9th percentile, ns: the tail the machine gives the least a clocked write does.
    pub floor_p999: f64,
    /// A lone TSC read, timed half way between two of our calls: median and 99.9th percentile,
    /// ns (bracket subtracted). The least any clocked call does; where its p99.9 misses the
    /// bound too, the tail is the machine's.
    pub tsc_p50: f64,
    /// See `tsc_p50`.
    pub tsc_p999: f64,
    /// An empty bracket (no call at all), timed three quarters of the way after each of ours: its 99.9th
    /// percentile, ns (bracket subtracted). Anything above a few resolution steps is the machine
    /// stalling this thread in those moments, whatever the call does.
    pub empty_p999: f64,
    /// Mean of our calls, ns (bracket subtracted). With the start phase dithered, the mean is not
    /// biased by the clock's resolution, where the percentiles are multiples of it.
    pub mean: f64,
    /// The clock's resolution, ns: the smallest non-zero difference between two back-to-back TSC
    /// reads (about 10 ns on AMD hosts whose TSC advances in steps; every percentile is a
    /// multiple of it).
    pub resolution_ns: f64,
    /// Bytes of the trace file written.
    pub file_bytes: u64,
    /// Share of the mapping that holds the latency thread's ring on transparent huge pages
    /// (`AnonHugePages` / `Size` in `/proc/self/smaps`): 1 when the default ring got its huge
    /// page, 0 when the kernel gave 4 KiB pages (the tail is then longer), `None` where it
    /// cannot be read. The kernel may merge the ring's mapping with a neighbouring one alike
    /// (another spare ring), which the share then covers too.
    pub ring_huge_share: Option<f64>,
}

/// Throughput of `threads` producer threads writing as fast as they can.
#[derive(Clone, Debug, Default)]
pub struct ThreadThroughput {
    /// Producer threads.
    pub threads: usize,
    /// Records attempted per second, all threads together.
    pub records_per_s: f64,
    /// Records dropped (ring full).
    pub drops: u64,
    /// Records attempted.
    pub attempted: u64,
}

/// Flusher drain rate for one sink.
#[derive(Clone, Debug, Default)]
pub struct FlusherThroughput {
    /// Records moved from rings to pages per second of flusher CPU time.
    pub records_per_s: f64,
    /// Ring bytes moved per second of flusher CPU time, in MB/s (10^6).
    pub mb_per_s: f64,
    /// Records written to pages during the run.
    pub records: u64,
    /// Flusher CPU time, seconds.
    pub cpu_s: f64,
}

/// A speed target checked as a ratio between two figures of this run.
#[derive(Clone, Debug)]
pub struct TargetCheck {
    /// Short name.
    pub name: &'static str,
    /// The target, in words.
    pub target: &'static str,
    /// The measured ratio (or value).
    pub measured: f64,
    /// The limit the measured value is compared with.
    pub limit: f64,
    /// Whether the target is met.
    pub pass: bool,
    /// Whether this is one of the issue's targets; `false` for a `(context)` row, which is
    /// reported beside them but left out of `all_pass`.
    pub counted: bool,
}

/// Everything one run measured.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// Whether this was a `--quick` run.
    pub quick: bool,
    /// CPU model and logical CPU count.
    pub machine: String,
    /// quanta `Clock::raw` alone.
    pub clock: NsFigure,
    /// IngressReceived with the recorder's clock.
    pub write_clock: NsFigure,
    /// IngressReceived with a caller-supplied timestamp.
    pub write_caller_ts: NsFigure,
    /// Every correlation kind with the recorder's clock: (name, figure).
    pub kinds: Vec<(&'static str, NsFigure)>,
    /// CeLog event (8 data bytes) with a timestamp.
    pub celog_ts: NsFigure,
    /// CeLog event (8 data bytes) without a timestamp.
    pub celog_no_ts: NsFigure,
    /// Span begin/end pair with the recorder's clock (two clock reads).
    pub span: NsFigure,
    /// Span begin/end pair with caller-supplied times.
    pub span_caller_ts: NsFigure,
    /// Bare 24-byte store plus Release publish of a local SPSC-like ring.
    pub store_floor: NsFigure,
    /// crossbeam `ArrayQueue::push` of a 24-byte record under the conditions our writes are
    /// timed in: a queue of the default ring's record capacity, emptied by another thread
    /// between runs of 20 000 pushes (as the flusher drains our ring between runs).
    pub arrayqueue: NsFigure,
    /// `ArrayQueue::push` into a 512-slot queue popped by the same thread after each batch: the
    /// queue never leaves this core's L1 (context, not like for like with our write).
    pub arrayqueue_local: NsFigure,
    /// The store floor under the recorder's memory conditions: 24-byte stores + Release publish
    /// into a ring of the default size that a consumer thread reads, runs of 20 000 starting from a drained
    /// ring (exactly how the recorder's writes are timed).
    pub store_floor_shared: NsFigure,
    /// `ArrayQueue::push` under the same conditions: a queue of the default ring's record
    /// capacity, popped concurrently by a consumer thread, runs of 20 000 from empty.
    pub arrayqueue_shared: NsFigure,
    /// `std::sync::mpsc::Sender::send` of a 24-byte record (received outside the timing).
    pub mpsc: NsFigure,
    /// The peer profiler's name.
    pub peer: &'static str,
    /// The peer profiler's span (enter + exit), with a real reporter installed.
    pub peer_span: NsFigure,
    /// Span records the peer's reporter received (proof that it recorded).
    pub peer_reported: u64,
    /// A second peer, puffin: `profile_scope!` enter + exit, with scopes on and a frame sink
    /// installed, each run's frame handed to the sink between runs (context, not counted).
    pub puffin_span: NsFigure,
    /// Scopes in the frames puffin's sink received (proof that it recorded).
    pub puffin_reported: u64,
    /// A write with no recorder installed, in straight-line code (eight per loop iteration).
    pub disabled: NsFigure,
    /// The same, one call per loop iteration (context).
    pub disabled_loop: NsFigure,
    /// Drops of the recorder during the ns/op phase (should be 0).
    pub ns_phase_drops: u64,
    /// Per-call latency with the flusher writing a file.
    pub latency: Latency,
    /// Throughput at 1, 2 and 4 threads.
    pub threads: Vec<ThreadThroughput>,
    /// Flusher into a NullSink.
    pub flusher_null: FlusherThroughput,
    /// Flusher into the file sink.
    pub flusher_file: FlusherThroughput,
    /// Drops at 5 M records/s from 2 threads (default ring).
    pub drops_at_5m: u64,
    /// Records attempted in that phase.
    pub attempted_at_5m: u64,
    /// How far behind its schedule a producer of that phase fell at worst, ms: a producer the
    /// machine did not run for a while catches up in a burst, and a burst of more than the ring
    /// holds (about 38 ms of this rate per thread) drops records however fast the flusher is.
    pub late_ms_at_5m: f64,
    /// The longest gap between two drains of the rings in that phase, ms
    /// ([`Stats::longest_drain_gap_ns`](typhon_recorder::Stats::longest_drain_gap_ns)): a gap
    /// longer than a ring holds means the flusher was held up.
    pub drain_gap_ms_at_5m: f64,
    /// Targets, checked.
    pub targets: Vec<TargetCheck>,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
}

// ---------------------------------------------------------------------------------------------
// Timing primitives.

/// Raw timestamp for loop timing (no fences: whole loops are timed): `rdtsc` on x86_64, quanta's
/// raw counter elsewhere. Shared with `examples/stall_probe.rs`.
///
/// ```
/// use typhon_bench::ticks;
/// let (a, b) = (ticks(), ticks());
/// assert!(b >= a);
/// ```
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc is available on every x86_64 CPU and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        QUANTA.with(|q| q.raw())
    }
}

/// Fenced timestamp for per-call brackets: earlier instructions finish before it is read and
/// later ones do not start before it is read (`lfence; rdtsc; lfence` on x86_64). Shared with
/// `examples/stall_probe.rs`.
///
/// ```
/// use typhon_bench::fenced_ticks;
/// let t0 = fenced_ticks();
/// std::hint::black_box(1 + 1);
/// assert!(fenced_ticks() >= t0);
/// ```
#[inline(always)]
pub fn fenced_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: lfence and rdtsc are available on every x86_64 CPU (SSE2 is baseline) and have
        // no preconditions.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        QUANTA.with(|q| q.raw())
    }
}

/// The pseudo-random delay before each bracket of the paced latency phase: 0–63 steps of an
/// empty loop (xorshift64), so that a call shorter than one step of the clock rounds up or down
/// at random instead of the same way every time. Shared with `examples/stall_probe.rs`.
///
/// ```
/// let mut d = typhon_bench::Dither::new();
/// d.wait(); // a few nanoseconds
/// ```
pub struct Dither(u64);

impl Dither {
    /// A dither starting from a fixed seed, so every run waits the same sequence of delays.
    ///
    /// ```
    /// let _ = typhon_bench::Dither::new();
    /// ```
    pub const fn new() -> Self {
        Self(0x9e37_79b9_7f4a_7c15)
    }

    /// Waits the next delay.
    ///
    /// ```
    /// let mut d = typhon_bench::Dither::default();
    /// for _ in 0..3 {
    ///     d.wait();
    /// }
    /// ```
    #[inline(always)]
    pub fn wait(&mut self) {
        let mut r = self.0;
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        self.0 = r;
        for j in 0..r & 63 {
            black_box(j);
        }
    }
}

impl Default for Dither {
    fn default() -> Self {
        Self::new()
    }
}

/// Raw ticks of one call of `f` between two [`fenced_ticks`] (the bracket's own cost included).
#[inline(always)]
fn bracketed<R>(f: impl FnOnce() -> R) -> u64 {
    let t0 = fenced_ticks();
    black_box(f());
    fenced_ticks() - t0
}

/// Raw ticks of a thread's first event, bracketed (the first-call figures of [`latency`]).
fn first_event() -> u64 {
    bracketed(|| typhon_recorder::ingress_received(0, 1, 2, 64))
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static QUANTA: quanta::Clock = quanta::Clock::new();
}

/// Nanoseconds per tick of [`ticks`], calibrated against `Instant` over ~20 ms.
fn ns_per_tick() -> f64 {
    let (i0, t0) = (Instant::now(), ticks());
    std::thread::sleep(Duration::from_millis(20));
    let (i1, t1) = (Instant::now(), ticks());
    i1.duration_since(i0).as_nanos() as f64 / (t1 - t0).max(1) as f64
}

#[derive(Clone, Copy)]
struct Timer {
    ns_per_tick: f64,
    runs: usize,
    n: u64,
    /// Called before each timed run: waits until the flusher has drained the ring, so every run
    /// starts with an empty ring and none of them measures the ring-full (drop) path.
    settle: Option<fn()>,
}

/// Waits until the installed recorder's flusher has drained everything written so far.
fn settle_recorder() {
    typhon_recorder::probe::drain_installed();
}

impl Timer {
    /// Runs `body(n)` (which must make `n` calls) `runs` times after one warm-up, returning the
    /// median, min and max ns per call.
    fn measure(&self, mut body: impl FnMut(u64)) -> NsFigure {
        body(self.n / 4 + 1);
        let v: Vec<f64> = (0..self.runs)
            .map(|_| {
                if let Some(s) = self.settle {
                    s();
                }
                let t0 = ticks();
                body(self.n);
                let t1 = ticks();
                (t1 - t0) as f64 * self.ns_per_tick / self.n as f64
            })
            .collect();
        figure(v)
    }

    /// Like [`measure`](Self::measure) for batched operations: `body` times its own batches and
    /// returns (ticks spent in timed parts, calls made).
    fn measure_self_timed(&self, mut body: impl FnMut(u64) -> (u64, u64)) -> NsFigure {
        body(self.n / 4 + 1);
        let v: Vec<f64> = (0..self.runs)
            .map(|_| {
                let (t, calls) = body(self.n);
                t as f64 * self.ns_per_tick / calls.max(1) as f64
            })
            .collect();
        figure(v)
    }
}

// ---------------------------------------------------------------------------------------------
// The floor: a minimal local SPSC-like store loop.

/// A 24-byte record stored into a ring buffer followed by a Release store of the head, the
/// least any SPSC ring can do per record. Nobody consumes: the position wraps.
///
/// Its bytes are the same kind of memory as a slot ring's (`ring::Pages`: mapped,
/// faulted in, and on huge pages from 2 MiB up where the kernel gives them), so a floor as
/// large as our ring differs from it in the code that writes, not in the pages written.
/// Shared with `examples/stall_probe.rs`.
///
/// ```
/// let mut f = typhon_bench::FloorRing::new(1 << 18).expect("2 MiB of memory");
/// f.write(1, 2, 3); // 24 bytes and a Release store of the position
/// ```
pub struct FloorRing {
    buf: typhon_recorder::ring::Pages,
    mask: usize,
    head: AtomicU64,
    pos: usize,
}

impl FloorRing {
    /// A ring of `words` u64, or `None` without memory for it or when `words` is not a power
    /// of two of at least 512 (whole 4 KiB pages).
    ///
    /// ```
    /// use typhon_bench::FloorRing;
    /// assert!(FloorRing::new(512).is_some());
    /// assert!(FloorRing::new(1000).is_none());
    /// ```
    pub fn new(words: usize) -> Option<Self> {
        if !words.is_power_of_two() || words < 512 {
            return None;
        }
        let buf =
            typhon_recorder::ring::Pages::new(words * 8, typhon_recorder::ring::Backing::Huge)?;
        Some(Self {
            buf,
            mask: words - 1,
            head: AtomicU64::new(0),
            pos: 0,
        })
    }

    /// Stores `a`, `b` and `c` at the next three positions and publishes the new position.
    ///
    /// ```
    /// let mut f = typhon_bench::FloorRing::new(512).expect("4 KiB of memory");
    /// for i in 0..1000 {
    ///     f.write(i, i, i); // wraps after 170 records; nobody reads them
    /// }
    /// ```
    #[inline(always)]
    pub fn write(&mut self, a: u64, b: u64, c: u64) {
        let (words, mask, p) = (self.buf.as_ptr().cast::<u64>(), self.mask, self.pos);
        // SAFETY: every index is masked to below `mask + 1` words, the length of `buf`, which
        // `self` owns and nothing else writes or reads while `&mut self` is held; `buf` is page
        // aligned, so every u64 slot is 8-byte aligned.
        unsafe {
            *words.add(p & mask) = a;
            *words.add((p + 1) & mask) = b;
            *words.add((p + 2) & mask) = c;
        }
        self.pos = p + 3;
        // Release: publishes the three stores above to a (hypothetical) consumer's Acquire load,
        // exactly what the recorder's ring does per record.
        self.head.store(self.pos as u64, Ordering::Release);
    }
}

// ---------------------------------------------------------------------------------------------
// Peers.

#[derive(Clone, Copy, Default)]
#[allow(dead_code)] // the fields are the payload being moved, never read back
struct Rec24([u64; 3]);

struct DiscardReporter(std::sync::Arc<AtomicU64>);

impl fastrace::collector::Reporter for DiscardReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        // Relaxed: a statistic.
        self.0.fetch_add(spans.len() as u64, Ordering::Relaxed);
    }
}

/// Installs fastrace's global collector with a reporter that counts and discards span records
/// (once per process; fastrace keeps its reporter for the process lifetime).
fn fastrace_reporter() -> std::sync::Arc<AtomicU64> {
    static COUNT: std::sync::OnceLock<std::sync::Arc<AtomicU64>> = std::sync::OnceLock::new();
    COUNT
        .get_or_init(|| {
            let c = std::sync::Arc::new(AtomicU64::new(0));
            fastrace::set_reporter(
                DiscardReporter(c.clone()),
                fastrace::collector::Config::default().report_interval(Duration::from_millis(10)),
            );
            c
        })
        .clone()
}

/// fastrace LocalSpan enter+exit: `n` spans, in traces of 1000 local spans under one root (the
/// shape of fastrace's own `compare` benchmark; the root's cost is amortised over its children).
fn fastrace_spans(n: u64) {
    use fastrace::prelude::*;
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let root = Span::root("root", SpanContext::random());
        {
            let _g = root.set_local_parent();
            for _ in 0..k {
                let _s = LocalSpan::enter_with_local_parent("update");
                black_box(&_s);
            }
        }
        drop(root);
        left -= k;
    }
}

/// Turns puffin's scopes on and installs a frame sink that counts the scopes of every frame it
/// receives and drops the frame (once per process; the count is shared by later calls).
fn puffin_sink() -> std::sync::Arc<AtomicU64> {
    static COUNT: std::sync::OnceLock<std::sync::Arc<AtomicU64>> = std::sync::OnceLock::new();
    let c = COUNT
        .get_or_init(|| {
            let c = std::sync::Arc::new(AtomicU64::new(0));
            let sink = c.clone();
            puffin::GlobalProfiler::lock().add_sink(Box::new(move |frame| {
                // Relaxed: a statistic.
                sink.fetch_add(frame.meta().num_scopes as u64, Ordering::Relaxed);
            }));
            c
        })
        .clone();
    puffin::set_scopes_on(true);
    c
}

/// puffin `profile_scope!` enter+exit: `n` scopes, in groups of 1000 under one outer scope (the
/// same shape as [`fastrace_spans`]: the inner scopes only append to the thread's stream; the
/// outer scope's end hands the stream to puffin's global profiler, amortised over its children).
fn puffin_scopes(n: u64) {
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        {
            puffin::profile_scope!("root");
            for _ in 0..k {
                puffin::profile_scope!("update");
                black_box(());
            }
        }
        left -= k;
    }
}

// ---------------------------------------------------------------------------------------------
// Phases.

const BIG_RING: usize = 64 << 20;
/// Offered load of the latency phase, records per second.
const LATENCY_RATE: u64 = 2_000_000;

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

fn floors_and_peers(r: &mut BenchReport, t: &Timer) {
    const BATCH: u64 = 512;
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(BATCH as usize);
    r.arrayqueue_local = t.measure_self_timed(|n| {
        let mut spent = 0;
        let mut done = 0;
        while done < n {
            let t0 = ticks();
            for i in 0..BATCH {
                let _ = aq.push(Rec24([black_box(i), 7, 9]));
            }
            spent += ticks() - t0;
            while aq.pop().is_some() {}
            done += BATCH;
        }
        (spent, done)
    });
    let (tx, rx) = std::sync::mpsc::channel::<Rec24>();
    r.mpsc = t.measure_self_timed(|n| {
        let mut spent = 0;
        let mut done = 0;
        while done < n {
            let t0 = ticks();
            for i in 0..BATCH {
                let _ = tx.send(Rec24([black_box(i), 7, 9]));
            }
            spent += ticks() - t0;
            while rx.try_recv().is_ok() {}
            done += BATCH;
        }
        (spent, done)
    });
}

/// Median, fastest and slowest of per-call figures.
fn figure(mut v: Vec<f64>) -> NsFigure {
    v.sort_by(|a, b| a.total_cmp(b));
    NsFigure {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// The floor and the ArrayQueue peer measured under the recorder's memory conditions: the
/// buffer is as large as the default ring and another thread reads it behind the producer, so
/// the producer's stores pay for cache lines coming back from the consumer's core, as ours do.
fn shared_floors(r: &mut BenchReport, t: &Timer) {
    use std::sync::atomic::AtomicBool;
    const RUN: u64 = 20_000;
    const WORDS: usize = typhon_recorder::DEFAULT_RING_BYTES / 8;
    let runs = t.runs * 3;
    let npt = t.ns_per_tick;
    // A ring of u64 words (atomics with Relaxed stores: plain moves on x86), 3 words a record.
    let buf: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
    let head = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let tail = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut t_local = 0u64;
            let mut sum = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Acquire: the words below `h` are written.
                let h = head.load(Ordering::Acquire);
                while t_local < h {
                    sum = sum.wrapping_add(buf[(t_local as usize) % WORDS].load(Ordering::Relaxed));
                    t_local += 1;
                }
                // Release: our reads are done before the producer reuses the words.
                tail.store(t_local, Ordering::Release);
                std::hint::spin_loop();
            }
            black_box(sum);
        });
        let mut v = Vec::with_capacity(runs);
        let mut h = 0u64;
        for _ in 0..runs {
            while tail.load(Ordering::Acquire) != h {
                std::thread::yield_now();
            }
            let t0 = ticks();
            for i in 0..RUN {
                for (k, w) in [black_box(i), 7, 9].into_iter().enumerate() {
                    buf[(h as usize + k) % WORDS].store(w, Ordering::Relaxed);
                }
                h += 3;
                // Release: publishes the record's words to the consumer.
                head.store(h, Ordering::Release);
            }
            v.push((ticks() - t0) as f64 * npt / RUN as f64);
        }
        stop.store(true, Ordering::Relaxed);
        r.store_floor_shared = figure(v);
    });
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(WORDS / 3);
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                while let Some(x) = aq.pop() {
                    black_box(x);
                }
                std::hint::spin_loop();
            }
        });
        let mut v = Vec::with_capacity(runs);
        for _ in 0..runs {
            while !aq.is_empty() {
                std::thread::yield_now();
            }
            let t0 = ticks();
            for i in 0..RUN {
                let _ = aq.push(Rec24([black_box(i), 7, 9]));
            }
            v.push((ticks() - t0) as f64 * npt / RUN as f64);
        }
        stop.store(true, Ordering::Relaxed);
        r.arrayqueue_shared = figure(v);
    });
}

/// The disabled figure's runs. A disabled call costs about a nanosecond, and this machine's
/// speed for such a loop drifts by up to 2x over stretches of ~100 ms (an empty loop drifts
/// with it), so the runs are not taken all at once: a first batch comes before any helper thread
/// exists, then two more runs between each of the later phases (no recorder is installed
/// there), and the figure is the median over all of them.
struct DisabledRuns {
    /// 20x more calls per run than the other figures, so a run lasts milliseconds rather than
    /// the ~0.2 ms in which timer and frequency ramp-up effects dominate.
    n: u64,
    ns_per_tick: f64,
    /// [`disabled_calls`]: eight calls per loop iteration (the counted figure).
    runs: Vec<f64>,
    /// [`disabled_loop_calls`]: one call per loop iteration, timed right after each of the
    /// above (context).
    loop_runs: Vec<f64>,
}

impl DisabledRuns {
    fn new(t: &Timer) -> Self {
        // The core may have slowed down during the clock calibration's sleep: spin first, so
        // the first runs do not measure a clock ramp-up.
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(200) {
            disabled_calls(10_000);
        }
        let mut d = Self {
            n: t.n * 20,
            ns_per_tick: t.ns_per_tick,
            runs: Vec::new(),
            loop_runs: Vec::new(),
        };
        d.take(t.runs);
        d
    }

    fn take(&mut self, runs: usize) {
        let per_call = |f: fn(u64), n: u64| {
            let t0 = ticks();
            f(n);
            (ticks() - t0) as f64 * self.ns_per_tick / n as f64
        };
        for _ in 0..runs {
            let a = per_call(disabled_calls, self.n);
            let b = per_call(disabled_loop_calls, self.n);
            self.runs.push(a);
            self.loop_runs.push(b);
        }
    }
}

/// `n` calls (a multiple of 8) with nothing installed, eight per loop iteration: what a disabled
/// call adds to straight-line code (one byte load, two compares and branches not taken), with
/// the loop's own increment, compare and taken branch spread over eight calls rather than
/// counted with each. Its own function so its loop is compiled on its own: inlined into `run`,
/// register pressure there made the compiler reload the flag table's address in every
/// iteration, a cost of the harness's surroundings that a call site in a program does not have.
/// The arguments are not passed through `black_box`: the disabled path never reads them, so that
/// would only add a store and a reload per call to the figure; no call can be optimised away,
/// because each one's flag load is atomic (the compiler keeps every one).
#[inline(never)]
fn disabled_calls(n: u64) {
    for i in 0..n / 8 {
        let i = i as u32;
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
    }
}

/// `n` calls with nothing installed, one per loop iteration (the figure of earlier rounds,
/// reported as context): the loop's taken branch is counted with every call, so where the
/// linker happens to place this 9-instruction loop (inside one 64-byte block or across two)
/// moves the figure by up to 2x on a slow stretch of the machine.
#[inline(never)]
fn disabled_loop_calls(n: u64) {
    for i in 0..n {
        typhon_recorder::ingress_received(i as u32, 1, 2, 64);
    }
}

/// What [`side_by_side`] times, one run of each per round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Clock,
    StoreFloor,
    WriteClock,
    WriteCallerTs,
    ArrayQueue,
    Span,
    PeerSpan,
    Puffin,
}

const BODIES: [Body; 8] = [
    Body::Clock,
    Body::StoreFloor,
    Body::WriteClock,
    Body::WriteCallerTs,
    Body::ArrayQueue,
    Body::Span,
    Body::PeerSpan,
    Body::Puffin,
];

/// The figures the counted ratios compare, measured side by side: every round times one run of
/// each body, starting at a different body each round, so the slow and fast stretches of a
/// shared machine fall on all of them alike rather than on whichever phase they coincide with.
/// Each figure is the median over the rounds. Runs of the recorder's writes start once the
/// flusher has drained the previous run (`Recorder::drain`); ArrayQueue's runs start once its consumer
/// thread has emptied the queue, the same conditions. Needs the recorder installed (with the
/// calling thread's slot claimed) and reads its raw clock through `now`.
fn side_by_side(r: &mut BenchReport, t: &Timer, now: u64) {
    const RUN: u64 = 20_000;
    let rounds = t.runs * 3;
    let npt = t.ns_per_tick;
    let q = quanta::Clock::new();
    let Some(mut floor) = FloorRing::new(1 << 14) else {
        return;
    };
    r.peer = "fastrace";
    let count = fastrace_reporter();
    let puffin_count = puffin_sink();
    // ArrayQueue timed like our write: runs of RUN pushes into an empty queue of the default
    // ring's record capacity, which another thread empties between runs (nobody pops during a
    // run), as the flusher drains our ring between runs.
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(typhon_recorder::DEFAULT_RING_BYTES / 24);
    // The consumer sleeps in a channel receive between runs (a spinning or yielding one would
    // compete with the flusher and with the timed thread for the two cores of a small machine);
    // the channels also order its pops before the next run's pushes.
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); BODIES.len()];
    std::thread::scope(|sc| {
        let aq = &aq;
        sc.spawn(move || {
            for () in go_rx {
                while let Some(x) = aq.pop() {
                    black_box(x);
                }
                if done_tx.send(()).is_err() {
                    break;
                }
            }
        });
        let mut time_one = |b: Body| -> f64 {
            let t0 = ticks();
            match b {
                Body::Clock => {
                    for _ in 0..RUN {
                        black_box(q.raw());
                    }
                }
                Body::StoreFloor => {
                    for i in 0..RUN {
                        floor.write(black_box(i), black_box(7), black_box(9));
                    }
                }
                Body::WriteClock => {
                    for i in 0..RUN {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                }
                Body::WriteCallerTs => {
                    for i in 0..RUN {
                        typhon_recorder::ingress_received_at(
                            Some(black_box(now + i)),
                            i as u32,
                            1,
                            2,
                            64,
                        );
                    }
                }
                Body::ArrayQueue => {
                    for i in 0..RUN {
                        let _ = aq.push(Rec24([black_box(i), 7, 9]));
                    }
                }
                Body::Span => {
                    for _ in 0..RUN {
                        let s = typhon_recorder::span(black_box("update"));
                        black_box(&s);
                    }
                }
                Body::PeerSpan => fastrace_spans(RUN),
                Body::Puffin => puffin_scopes(RUN),
            }
            let spent = ticks() - t0;
            // Untimed: the run's background work (the flusher draining our ring, fastrace's
            // collector taking the spans, puffin handing its frame to the sink, the consumer
            // emptying the queue) finishes before the next body's run starts, so no run pays
            // for another's, and each of ours and ArrayQueue's starts with an empty buffer.
            match b {
                Body::WriteClock | Body::WriteCallerTs | Body::Span => settle_recorder(),
                Body::PeerSpan => fastrace::flush(),
                Body::Puffin => puffin::GlobalProfiler::lock().new_frame(),
                Body::ArrayQueue if go_tx.send(()).is_ok() => {
                    let _ = done_rx.recv();
                }
                _ => {}
            }
            spent as f64 * npt / RUN as f64
        };
        // One untimed round to warm everything up.
        for b in BODIES {
            time_one(b);
        }
        for round in 0..rounds {
            for k in 0..BODIES.len() {
                let i = (round + k) % BODIES.len();
                times[i].push(time_one(BODIES[i]));
            }
        }
        drop(go_tx); // ends the consumer's loop
    });
    black_box(floor.buf.as_ptr());
    fastrace::flush();
    // Relaxed: a statistic, read after `flush` returned.
    r.peer_reported = count.load(Ordering::Relaxed);
    // The last run's frame was handed to the sink by `new_frame` right after it, on this
    // thread; Relaxed: a statistic read on the thread that ran the sink.
    r.puffin_reported = puffin_count.load(Ordering::Relaxed);
    puffin::set_scopes_on(false);
    let mut figs = times.into_iter().map(figure);
    for slot in [
        &mut r.clock,
        &mut r.store_floor,
        &mut r.write_clock,
        &mut r.write_caller_ts,
        &mut r.arrayqueue,
        &mut r.span,
        &mut r.peer_span,
        &mut r.puffin_span,
    ] {
        *slot = figs.next().expect("one figure per body");
    }
}

fn recorder_ns(r: &mut BenchReport, t: &Timer) {
    // Default ring; each run (20 000 calls, < 1 MiB) starts from a drained ring, so no run
    // measures the ring-full path, and the ring stays cache-warm as it does in steady use.
    let Ok(rec) = RecorderBuilder::new()
        .sink(NullSink)
        .flush_interval(Duration::from_millis(1))
        .start()
    else {
        return;
    };
    let t = &Timer {
        settle: Some(settle_recorder),
        n: 20_000,
        runs: t.runs * 3,
        ..*t
    };
    use typhon_recorder::IngressDropReason;
    // Claim the slot before timing.
    typhon_recorder::tick_start();
    let now = rec.now();
    side_by_side(r, t, now);
    r.kinds = vec![
        ("ingress_received", r.write_clock),
        (
            "ingress_admitted",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::ingress_admitted(black_box(i as u32), 1, 2, 100);
                }
            }),
        ),
        (
            "ingress_dropped",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::ingress_dropped(
                        black_box(i as u32),
                        1,
                        IngressDropReason::QueueFull,
                    );
                }
            }),
        ),
        (
            "command_consumed",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::command_consumed(black_box(i as u32), 1, 5);
                }
            }),
        ),
        (
            "egress_sent",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::egress_sent(black_box(i as u32), 100, 512, 3);
                }
            }),
        ),
    ];
    use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
    r.celog_ts = t.measure(|n| {
        for i in 0..n {
            let _ = typhon_recorder::celog_data(
                true,
                CELID_USER,
                &i.to_le_bytes(),
                0,
                CELZONE_MISC,
                0,
                false,
            );
        }
    });
    r.celog_no_ts = t.measure(|n| {
        for i in 0..n {
            let _ = typhon_recorder::celog_data(
                false,
                CELID_USER,
                &i.to_le_bytes(),
                0,
                CELZONE_MISC,
                0,
                false,
            );
        }
    });
    r.span_caller_ts = t.measure(|n| {
        for i in 0..n {
            let s = typhon_recorder::span_at(black_box("update"), now + i);
            s.end_at(now + i + 10);
        }
    });
    if let Ok(s) = rec.finish() {
        r.ns_phase_drops = s.total_missed();
    }
}

/// The smallest non-zero difference between two back-to-back [`ticks`] reads, in ticks: the
/// clock's resolution as a bracket sees it (a step of the TSC where it advances in steps, the
/// read's own latency where it does not).
fn tick_resolution() -> u64 {
    (0..10_000)
        .map(|_| {
            let a = ticks();
            let b = ticks();
            b.wrapping_sub(a)
        })
        .filter(|&d| d > 0 && d < 1 << 20)
        .min()
        .unwrap_or(1)
}

/// What [`paced`] measured: one histogram of raw bracket times (ticks) per slot, plus the sums
/// of our calls' and the empty bracket's times for the means.
struct Paced {
    ours: Histogram<u64>,
    floor: Histogram<u64>,
    tsc: Histogram<u64>,
    empty: Histogram<u64>,
    ours_sum: u64,
    empty_sum: u64,
}

impl Paced {
    /// The empty bracket's median, the cost [`Latency`] subtracts: taken in the same moments and
    /// with the same dither as the calls, so it rounds to the clock's steps as theirs do.
    fn bracket(&self) -> u64 {
        self.empty.value_at_quantile(0.5)
    }

    /// Quantile `q` of a slot's bracket times, bracket subtracted, in ticks.
    fn at(&self, h: &Histogram<u64>, q: f64) -> u64 {
        h.value_at_quantile(q).saturating_sub(self.bracket())
    }
}

/// `samples` rounds of four bracketed slots, one round per `interval` ticks (spinning in
/// between): `ours(i)` at the start of the interval, `floor(i)` a quarter of it later, a lone
/// TSC read half way and an empty bracket three quarters of the way, each bracketed by fenced
/// TSC reads. The four are interleaved so that they see the same machine: on a shared host the
/// tail moves from run to run with what the neighbours do, and only figures taken side by side
/// compare.
///
/// Each slot starts after a pseudo-random delay of 0–63 loop iterations (up to ~25 ns, a few
/// steps of a TSC that advances in ~10 ns steps): the spin-wait exits just after the clock
/// steps, so without the delay every bracket would open at the same phase of a step and the
/// rounding of a short call would be the same every time, a bias rather than an error that
/// averages out.
fn paced(
    samples: u64,
    interval: u64,
    mut ours: impl FnMut(u64),
    mut floor: impl FnMut(u64),
) -> Paced {
    let new = || Histogram::<u64>::new_with_bounds(1, 1 << 40, 3).expect("bounds are valid");
    let mut p = Paced {
        ours: new(),
        floor: new(),
        tsc: new(),
        empty: new(),
        ours_sum: 0,
        empty_sum: 0,
    };
    let mut next = ticks();
    let mut dither = Dither::new();
    for i in 0..samples {
        for k in 0..4u64 {
            while ticks() < next + k * interval / 4 {
                std::hint::spin_loop();
            }
            dither.wait();
            let a = fenced_ticks();
            match k {
                0 => ours(i),
                1 => floor(i),
                2 => {
                    black_box(ticks());
                }
                _ => {}
            }
            let b = fenced_ticks();
            // Saturating: a thread moved to a core whose TSC is behind reads a negative time.
            let v = b.saturating_sub(a);
            let hist = match k {
                0 => {
                    p.ours_sum += v;
                    &mut p.ours
                }
                1 => &mut p.floor,
                2 => &mut p.tsc,
                _ => {
                    p.empty_sum += v;
                    &mut p.empty
                }
            };
            let _ = hist.record(v.max(1));
        }
        next += interval;
    }
    p
}

/// Share of this thread's ring's mapping on huge pages (see [`Latency::ring_huge_share`]).
fn ring_huge_share() -> Option<f64> {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    {
        let addr = typhon_recorder::probe::this_threads_ring()?;
        let kib = |field| -> Option<f64> {
            let v = typhon_recorder::probe::smaps_field(addr, field)?;
            v.strip_suffix(" kB")?.trim().parse().ok()
        };
        let (huge, size) = (kib("AnonHugePages")?, kib("Size")?);
        (size > 0.0).then(|| huge / size)
    }
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    None
}

/// `no_spare`: [`first_call_no_spare`]'s raw ticks, measured at the start of the run.
fn latency(r: &mut BenchReport, samples: u64, ns_per_tick: f64, no_spare: u64) {
    let path = std::env::temp_dir().join(format!("typhon-bench-{}.dat", std::process::id()));
    let Ok(rec) = RecorderBuilder::new().output(&path).start() else {
        return;
    };
    let interval = (1e9 / LATENCY_RATE as f64 / ns_per_tick) as u64;
    let resolution = tick_resolution();
    let lat = std::thread::Builder::new()
        .name("bench-latency".into())
        .spawn(move || {
            let first = first_event();
            let ring_huge_share = ring_huge_share();
            // The floor of a write with the clock, interleaved with ours: a TSC read and three
            // plain stores with a publish into a private ring as large as ours.
            let mut floor = FloorRing::new(typhon_recorder::DEFAULT_RING_BYTES / 8)?;
            let p = paced(
                samples,
                interval,
                |i| typhon_recorder::ingress_received(i as u32, 1, 2, 64),
                |i| floor.write(i, ticks(), 9),
            );
            black_box(floor.buf.as_ptr());
            Some((first, p, ring_huge_share))
        })
        .expect("spawn latency thread")
        .join();
    // A thread that registers first: the claim moves out of its first call.
    let registered =
        std::thread::spawn(|| (bracketed(typhon_recorder::register_thread), first_event()))
            .join()
            .unwrap_or_default();
    let stats = rec.finish();
    let file_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(&path));
    let Ok(Some((first, p, ring_huge_share))) = lat else {
        return;
    };
    let ns = |ticks: u64| ticks as f64 * ns_per_tick;
    let (h, fh, bracket) = (&p.ours, &p.floor, p.bracket());
    let n = h.len().max(1) as f64;
    r.latency = Latency {
        samples: h.len(),
        bracket_ns: ns(bracket),
        p50: ns(p.at(h, 0.5)),
        p99: ns(p.at(h, 0.99)),
        p999: ns(p.at(h, 0.999)),
        p9999: ns(p.at(h, 0.9999)),
        max: ns(h.max().saturating_sub(bracket)),
        first_call: ns(first.saturating_sub(bracket)),
        register: ns(registered.0.saturating_sub(bracket)),
        first_call_registered: ns(registered.1.saturating_sub(bracket)),
        drops: stats.map_or(0, |s| s.total_missed()),
        file_bytes,
        floor_p50: ns(p.at(fh, 0.5)),
        floor_p999: ns(p.at(fh, 0.999)),
        tsc_p50: ns(p.at(&p.tsc, 0.5)),
        tsc_p999: ns(p.at(&p.tsc, 0.999)),
        empty_p999: ns(p.at(&p.empty, 0.999)),
        // Mean of ours minus mean of the empty bracket: both dithered alike, so neither carries
        // the rounding of the clock's steps.
        mean: ns(p.ours_sum) / n - ns(p.empty_sum) / p.empty.len().max(1) as f64,
        resolution_ns: ns(resolution),
        ring_huge_share,
        first_call_no_spare: ns(no_spare.saturating_sub(bracket)),
    };
}

/// The first call of a fresh thread in a short session without spare rings: what the pool
/// saves (raw ticks, bracket included; 0 if the session could not start). Run first, before any
/// other phase has freed memory the allocator could hand back already faulted in, so the ring
/// comes fresh from the system as a program's first threads' rings do.
fn first_call_no_spare() -> u64 {
    let Ok(rec) = RecorderBuilder::new().sink(NullSink).spare_rings(0).start() else {
        return 0;
    };
    let t = std::thread::spawn(first_event).join().unwrap_or(0);
    let _ = rec.finish();
    t
}

fn threads(r: &mut BenchReport, per_thread: u64) {
    for n in [1usize, 2, 4] {
        let Ok(rec) = RecorderBuilder::new().sink(NullSink).start() else {
            return;
        };
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(n + 1));
        let hs: Vec<_> = (0..n)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    typhon_recorder::tick_start();
                    b.wait();
                    let t0 = Instant::now();
                    for i in 0..per_thread {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                    t0.elapsed()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in hs {
            let _ = h.join();
        }
        let wall = start.elapsed();
        let stats = rec.finish().unwrap_or_default();
        let attempted = per_thread * n as u64;
        r.threads.push(ThreadThroughput {
            threads: n,
            records_per_s: attempted as f64 / wall.as_secs_f64(),
            drops: stats.total_missed(),
            attempted,
        });
    }
}

/// On-CPU nanoseconds of the thread named `name` in this process (from schedstat).
fn thread_cpu_ns(name: &str) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let s = std::fs::read_to_string(p.join("schedstat")).ok()?;
            return s.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

fn flusher(to_file: bool, dur: Duration) -> FlusherThroughput {
    let path = std::env::temp_dir().join(format!("typhon-bench-flush-{}.dat", std::process::id()));
    // No spare rings: the pool would be topped up with a 64 MiB ring inside the timed window,
    // about 29 ms in 4 KiB pages and 32 huge pages at 5.6–7.5 ms each (180–240 ms) when each
    // needs compaction. When the flusher made spares, its CPU time counted that as draining
    // (one run read 31.7 M records/s); the helper thread that makes them now would still take
    // one of the two cores from the producer or the flusher. The producer makes its ring
    // itself, before the timed window.
    let b = RecorderBuilder::new()
        .ring_bytes(BIG_RING)
        .spare_rings(0)
        .flush_interval(Duration::from_millis(1));
    let b = if to_file {
        b.output(&path)
    } else {
        b.sink(NullSink)
    };
    let Ok(rec) = b.start() else {
        return FlusherThroughput::default();
    };
    let cpu0 = thread_cpu_ns("typhon-flusher").unwrap_or(0);
    let now = rec.now();
    let producer = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut i = 0u64;
        while t0.elapsed() < dur {
            for _ in 0..1024 {
                typhon_recorder::ingress_received_at(Some(now + i), i as u32, 1, 2, 64);
                i += 1;
            }
        }
    });
    let _ = producer.join();
    // Wait until the flusher caught up (it is otherwise idle), then read its CPU time.
    rec.drain();
    let cpu1 = thread_cpu_ns("typhon-flusher").unwrap_or(0);
    let stats = rec.stats();
    drop(rec);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(&path));
    let records = stats.user_written();
    let cpu_s = (cpu1.saturating_sub(cpu0)) as f64 / 1e9;
    let rps = records as f64 / cpu_s.max(1e-9);
    FlusherThroughput {
        records_per_s: rps,
        mb_per_s: rps * 24.0 / 1e6,
        records,
        cpu_s,
    }
}

fn drops_at_5m(r: &mut BenchReport, dur: Duration) {
    let Ok(rec) = RecorderBuilder::new().sink(NullSink).start() else {
        return;
    };
    const PER_THREAD_PER_MS: u64 = 2_500;
    let hs: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut batch = 0u64;
                let mut sent = 0u64;
                let mut late = Duration::ZERO;
                while t0.elapsed() < dur {
                    for i in 0..PER_THREAD_PER_MS {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                    sent += PER_THREAD_PER_MS;
                    batch += 1;
                    let deadline = t0 + Duration::from_millis(batch);
                    let now = Instant::now();
                    if deadline > now {
                        std::thread::sleep(deadline - now);
                    } else {
                        late = late.max(now - deadline);
                    }
                }
                (sent, late)
            })
        })
        .collect();
    let (mut sent, mut late) = (0, Duration::ZERO);
    for h in hs {
        let (s, l) = h.join().unwrap_or_default();
        sent += s;
        late = late.max(l);
    }
    let stats = rec.finish().unwrap_or_default();
    r.drops_at_5m = stats.total_missed();
    r.attempted_at_5m = sent;
    r.late_ms_at_5m = late.as_secs_f64() * 1e3;
    r.drain_gap_ms_at_5m = stats.longest_drain_gap_ns as f64 / 1e6;
}

fn targets(r: &BenchReport) -> Vec<TargetCheck> {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let le = |name, target, measured: f64, limit: f64| TargetCheck {
        name,
        target,
        measured,
        limit,
        pass: measured <= limit,
        counted: true,
    };
    let ge = |name, target, measured: f64, limit: f64| TargetCheck {
        name,
        target,
        measured,
        limit,
        pass: measured >= limit,
        counted: true,
    };
    let context = |t: TargetCheck| TargetCheck {
        counted: false,
        ..t
    };
    vec![
        le(
            "write_clock_vs_clock",
            "write with the recorder's clock <= 1.25 x a clock read alone",
            ratio(r.write_clock.median, r.clock.median),
            1.25,
        ),
        le(
            "write_caller_ts_vs_store_floor",
            "write with a caller timestamp <= 2.5 x the bare 24-byte store + release floor",
            ratio(r.write_caller_ts.median, r.store_floor.median),
            2.5,
        ),
        ge(
            "arrayqueue_vs_write_caller_ts",
            "crossbeam ArrayQueue push >= 1.5 x slower than our write (caller timestamp), both timed alike: runs of 20 000 into a ring-sized buffer another thread empties between runs",
            ratio(r.arrayqueue.median, r.write_caller_ts.median),
            1.5,
        ),
        context(
            ge(
                "arrayqueue_local_vs_write_caller_ts",
                "(context) ArrayQueue push into a 512-slot queue that never leaves this core's L1 vs our write",
                ratio(r.arrayqueue_local.median, r.write_caller_ts.median),
                1.5,
            ),
        ),
        context(
            le(
                "write_caller_ts_vs_store_floor_shared",
                "(context) write with a caller timestamp <= 2.5 x the floor into a consumer-read ring",
                ratio(r.write_caller_ts.median, r.store_floor_shared.median),
                2.5,
            ),
        ),
        context(
            ge(
                "arrayqueue_shared_vs_write_caller_ts",
                "(context) ArrayQueue push with a consumer popping during the run >= 1.5 x slower than our write",
                ratio(r.arrayqueue_shared.median, r.write_caller_ts.median),
                1.5,
            ),
        ),
        ge(
            "peer_span_vs_span",
            "peer profiler span >= 2 x slower than our span pair",
            ratio(r.peer_span.median, r.span.median),
            2.0,
        ),
        context(ge(
            "puffin_span_vs_span",
            "(context) the second peer, a puffin scope, >= 2 x slower than our span pair",
            ratio(r.puffin_span.median, r.span.median),
            2.0,
        )),
        le(
            "p999_vs_p50",
            "p99.9 <= 4 x p50 with the flusher writing a file",
            ratio(r.latency.p999, r.latency.p50),
            4.0,
        ),
        context(
            le(
                "floor_p999_vs_p50",
                "(context) the same bound for the floor of a write with the clock (TSC read, 3 stores, publish), interleaved with ours",
                ratio(r.latency.floor_p999, r.latency.floor_p50),
                4.0,
            ),
        ),
        context(le(
            "tsc_p999_vs_p50",
            "(context) a lone TSC read, interleaved with ours, within our limit: its p99.9 <= 4 x our p50",
            ratio(r.latency.tsc_p999, r.latency.p50),
            4.0,
        )),
        ge(
            "flusher_records_per_s",
            "flusher >= 40 M records/s into a null sink on one core",
            r.flusher_null.records_per_s,
            40e6,
        ),
        le(
            "disabled_ns",
            "disabled write <= 1 ns (in straight-line code: 8 calls per loop iteration)",
            r.disabled.median,
            1.0,
        ),
        context(le(
            "disabled_loop_ns",
            "(context) the same with one call per loop iteration",
            r.disabled_loop.median,
            1.0,
        )),
        le(
            "drops_at_5m",
            "no drops at 5 M records/s from 2 threads, default ring",
            r.drops_at_5m as f64,
            0.0,
        ),
    ]
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
    let no_spare = first_call_no_spare();
    let mut off = DisabledRuns::new(&t);
    floors_and_peers(&mut r, &t);
    off.take(2);
    shared_floors(&mut r, &t);
    off.take(2);
    recorder_ns(&mut r, &t);
    off.take(2);
    let samples = if opts.quick { 1_000_000 } else { 10_000_000 };
    latency(&mut r, samples, npt, no_spare);
    off.take(2);
    threads(&mut r, if opts.quick { 2_000_000 } else { 10_000_000 });
    off.take(2);
    let fd = Duration::from_millis(if opts.quick { 500 } else { 2000 });
    r.flusher_null = flusher(false, fd);
    r.flusher_file = flusher(true, fd);
    off.take(2);
    drops_at_5m(
        &mut r,
        Duration::from_millis(if opts.quick { 1000 } else { 3000 }),
    );
    off.take(2);
    r.disabled = figure(off.runs);
    r.disabled_loop = figure(off.loop_runs);
    r.targets = targets(&r);
    r.elapsed_s = start.elapsed().as_secs_f64();
    r
}

fn fig(f: &NsFigure) -> Value {
    json!({ "median": f.median, "min": f.min, "max": f.max })
}

impl BenchReport {
    /// The figures as JSON: flat keys for the headline numbers (ns medians), then details.
    ///
    /// ```
    /// let r = typhon_bench::BenchReport::default();
    /// assert!(r.to_json()["clock_ns"].is_number());
    /// ```
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "quick": self.quick,
            "machine": self.machine,
            "clock_ns": self.clock.median,
            "write_clock_ns": self.write_clock.median,
            "write_caller_ts_ns": self.write_caller_ts.median,
            "store_floor_ns": self.store_floor.median,
            "store_floor_shared_ns": self.store_floor_shared.median,
            "arrayqueue_shared_ns": self.arrayqueue_shared.median,
            "arrayqueue_ns": self.arrayqueue.median,
            "arrayqueue_local_ns": self.arrayqueue_local.median,
            "floor_p50_ns": self.latency.floor_p50,
            "floor_p999_ns": self.latency.floor_p999,
            "mpsc_ns": self.mpsc.median,
            "span_ns": self.span.median,
            "span_caller_ts_ns": self.span_caller_ts.median,
            "celog_ts_ns": self.celog_ts.median,
            "celog_no_ts_ns": self.celog_no_ts.median,
            "peer": self.peer,
            "peer_reported": self.peer_reported,
            "peer_span_ns": self.peer_span.median,
            "puffin_span_ns": self.puffin_span.median,
            "puffin_reported": self.puffin_reported,
            "disabled_ns": self.disabled.median,
            "p50_ns": self.latency.p50,
            "p99_ns": self.latency.p99,
            "p999_ns": self.latency.p999,
            "p9999_ns": self.latency.p9999,
            "max_ns": self.latency.max,
            "first_call_ns": self.latency.first_call,
            "bracket_ns": self.latency.bracket_ns,
            "latency_drops": self.latency.drops,
            "flusher_records_per_s": self.flusher_null.records_per_s,
            "flusher_mb_per_s": self.flusher_null.mb_per_s,
            "flusher_file_records_per_s": self.flusher_file.records_per_s,
            "flusher_file_mb_per_s": self.flusher_file.mb_per_s,
            "drops_at_5m": self.drops_at_5m,
            "attempted_at_5m": self.attempted_at_5m,
            "ns_phase_drops": self.ns_phase_drops,
            "elapsed_s": self.elapsed_s,
        });
        // Added one by one: one more key in the literal above passes `json!`'s recursion limit.
        for (k, x) in [
            ("empty_p999_ns", self.latency.empty_p999),
            ("tsc_p50_ns", self.latency.tsc_p50),
            ("tsc_p999_ns", self.latency.tsc_p999),
            ("latency_mean_ns", self.latency.mean),
            ("resolution_ns", self.latency.resolution_ns),
            ("late_ms_at_5m", self.late_ms_at_5m),
            ("drain_gap_ms_at_5m", self.drain_gap_ms_at_5m),
            ("register_thread_ns", self.latency.register),
            ("disabled_loop_ns", self.disabled_loop.median),
            ("first_call_no_spare_ns", self.latency.first_call_no_spare),
            (
                "first_call_registered_ns",
                self.latency.first_call_registered,
            ),
        ] {
            v[k] = json!(x);
        }
        // null where smaps cannot be read.
        v["ring_huge_share"] = json!(self.latency.ring_huge_share);
        v["threads"] = json!(self
            .threads
            .iter()
            .map(|t| json!({
                "threads": t.threads, "records_per_s": t.records_per_s,
                "drops": t.drops, "attempted": t.attempted,
            }))
            .collect::<Vec<_>>());
        v["kinds_ns"] = Value::Object(
            self.kinds
                .iter()
                .map(|(k, f)| (k.to_string(), fig(f)))
                .collect(),
        );
        v["figures"] = json!({
            "clock": fig(&self.clock), "write_clock": fig(&self.write_clock),
            "write_caller_ts": fig(&self.write_caller_ts), "store_floor": fig(&self.store_floor),
            "arrayqueue": fig(&self.arrayqueue), "arrayqueue_local": fig(&self.arrayqueue_local),
            "mpsc": fig(&self.mpsc), "span": fig(&self.span),
            "span_caller_ts": fig(&self.span_caller_ts), "peer_span": fig(&self.peer_span),
            "puffin_span": fig(&self.puffin_span),
            "celog_ts": fig(&self.celog_ts), "celog_no_ts": fig(&self.celog_no_ts),
            "disabled": fig(&self.disabled), "disabled_loop": fig(&self.disabled_loop),
        });
        v["targets"] = json!(self
            .targets
            .iter()
            .map(|t| json!({
                "name": t.name, "target": t.target, "measured": t.measured,
                "limit": t.limit, "pass": t.pass,
            }))
            .collect::<Vec<_>>());
        v["all_pass"] = json!(self.targets.iter().filter(|t| t.counted).all(|t| t.pass));
        v
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = |f: &mut fmt::Formatter<'_>, name: &str, x: &NsFigure| {
            writeln!(
                f,
                "  {name:<34} {:>8.2} ns  (runs {:.2}–{:.2})",
                x.median, x.min, x.max
            )
        };
        writeln!(
            f,
            "typhon-rec bench{} — {}",
            if self.quick { " --quick" } else { "" },
            self.machine
        )?;
        writeln!(f, "ns per call (median of runs, loop-timed):")?;
        row(f, "clock read (quanta Clock::raw)", &self.clock)?;
        row(f, "store floor (24 B + release)", &self.store_floor)?;
        row(
            f,
            "  same, ring read by a consumer",
            &self.store_floor_shared,
        )?;
        row(f, "write, recorder clock", &self.write_clock)?;
        row(f, "write, caller timestamp", &self.write_caller_ts)?;
        for (k, x) in &self.kinds {
            row(f, &format!("  {k}"), x)?;
        }
        row(f, "CeLog event, timestamp", &self.celog_ts)?;
        row(f, "CeLog event, no timestamp", &self.celog_no_ts)?;
        row(f, "span pair, recorder clock", &self.span)?;
        row(f, "span pair, caller timestamps", &self.span_caller_ts)?;
        row(f, "crossbeam ArrayQueue push", &self.arrayqueue)?;
        row(
            f,
            "  512 slots, popped on this core",
            &self.arrayqueue_local,
        )?;
        row(
            f,
            "  popped by a consumer during the run",
            &self.arrayqueue_shared,
        )?;
        row(f, "std mpsc send", &self.mpsc)?;
        row(
            f,
            &format!(
                "{} span (enter+exit; {} spans reported)",
                self.peer, self.peer_reported
            ),
            &self.peer_span,
        )?;
        row(
            f,
            &format!(
                "puffin scope (enter+exit; {} scopes reported)",
                self.puffin_reported
            ),
            &self.puffin_span,
        )?;
        row(
            f,
            "disabled (no recorder), 8 calls per loop iteration",
            &self.disabled,
        )?;
        row(
            f,
            "disabled, 1 call per loop iteration",
            &self.disabled_loop,
        )?;
        let l = &self.latency;
        writeln!(
            f,
            "per-call latency ({} samples, flusher writing a file, bracket {:.1} ns subtracted):",
            l.samples, l.bracket_ns
        )?;
        writeln!(
            f,
            "  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  p99.99 {:.1}  max {:.0}  first call {:.0} ns; drops {}",
            l.p50, l.p99, l.p999, l.p9999, l.max, l.first_call, l.drops
        )?;
        writeln!(
            f,
            "  mean {:.1} ns; clock resolution {:.1} ns (every percentile is a multiple of it)",
            l.mean, l.resolution_ns
        )?;
        match l.ring_huge_share {
            Some(s) => writeln!(
                f,
                "  our ring: {:.0}% on transparent huge pages{}",
                s * 100.0,
                if s < 1.0 {
                    " (4 KiB pages have a longer tail)"
                } else {
                    ""
                }
            )?,
            None => writeln!(f, "  our ring's page backing: unknown")?,
        }
        writeln!(
            f,
            "  first call without a spare ring (it allocates and faults in its own) {:.0} ns",
            l.first_call_no_spare
        )?;
        writeln!(
            f,
            "  a thread that calls register_thread first: register {:.0} ns, then its first call {:.0} ns",
            l.register, l.first_call_registered
        )?;
        writeln!(
            f,
            "  interleaved: clocked store floor p50 {:.1}  p99.9 {:.1} ns; lone TSC read p50 {:.1}  p99.9 {:.1} ns; empty bracket p99.9 {:.1} ns",
            l.floor_p50, l.floor_p999, l.tsc_p50, l.tsc_p999, l.empty_p999
        )?;
        writeln!(f, "throughput (default ring, NullSink):")?;
        for t in &self.threads {
            writeln!(
                f,
                "  {} thread(s): {:.1} M records/s, drops {} of {}",
                t.threads,
                t.records_per_s / 1e6,
                t.drops,
                t.attempted
            )?;
        }
        for (name, x) in [
            ("null sink", &self.flusher_null),
            ("file sink", &self.flusher_file),
        ] {
            writeln!(
                f,
                "flusher into {name}: {:.1} M records/s ({:.0} MB/s) per second of flusher CPU ({} records, {:.3} s CPU)",
                x.records_per_s / 1e6,
                x.mb_per_s,
                x.records,
                x.cpu_s
            )?;
        }
        writeln!(
            f,
            "drops at 5 M records/s from 2 threads (default ring): {} of {} (producers at worst {:.1} ms behind schedule, {:.1} ms at most between two drains)",
            self.drops_at_5m, self.attempted_at_5m, self.late_ms_at_5m, self.drain_gap_ms_at_5m
        )?;
        writeln!(f, "targets:")?;
        for t in &self.targets {
            writeln!(
                f,
                "  [{}] {:<32} {:>10.3} (limit {}) — {}",
                if t.pass { "pass" } else { "FAIL" },
                t.name,
                t.measured,
                t.limit,
                t.target
            )?;
        }
        write!(f, "elapsed {:.1} s", self.elapsed_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_every_key_the_issue_lists() {
        let v = BenchReport::default().to_json();
        for k in [
            "clock_ns",
            "write_clock_ns",
            "write_caller_ts_ns",
            "store_floor_ns",
            "arrayqueue_ns",
            "span_ns",
            "peer",
            "peer_span_ns",
            "p50_ns",
            "p999_ns",
            "flusher_records_per_s",
            "disabled_ns",
            "drops_at_5m",
            "puffin_span_ns",
            "empty_p999_ns",
            "tsc_p50_ns",
            "tsc_p999_ns",
            "latency_mean_ns",
            "resolution_ns",
            "late_ms_at_5m",
            "drain_gap_ms_at_5m",
            "register_thread_ns",
            "first_call_registered_ns",
            "first_call_no_spare_ns",
            "disabled_loop_ns",
            "ring_huge_share",
        ] {
            assert!(v.get(k).is_some(), "missing key {k}");
        }
    }

    #[test]
    fn paced_times_every_slot_once_per_round_and_subtracts_the_empty_median() {
        let (mut ours, mut floor) = (Vec::new(), Vec::new());
        let p = paced(300, 100, |i| ours.push(i), |i| floor.push(i));
        let expect: Vec<u64> = (0..300).collect();
        assert_eq!((ours, floor), (expect.clone(), expect));
        for h in [&p.ours, &p.floor, &p.tsc, &p.empty] {
            assert_eq!(h.len(), 300);
        }
        assert_eq!(p.at(&p.empty, 0.5), 0);
        assert!(p.empty_sum >= p.empty.min() * 300);
    }

    #[test]
    fn tick_resolution_is_a_positive_step() {
        assert!(tick_resolution() >= 1);
    }
}

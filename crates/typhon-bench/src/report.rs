//! What one run measured, and its JSON rendering, the one `typhon-rec bench --json` prints
//! (the text table is in `text.rs`).
//!
//! The JSON's flat keys are an interface (scripts and BENCHMARKS.md read them by name); the
//! details (`figures`, `kinds_ns`, `threads`, `targets`) follow them.

use serde_json::{json, Value};

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
    /// Percentile curves of the paced run for the plot: `(name, [(quantile, ns)])` for our
    /// write, the clocked floor and the lone TSC read, bracket subtracted, at quantiles
    /// 1 - 10^(-k/10) up to the last one the samples resolve.
    pub curves: Vec<(&'static str, Vec<(f64, f64)>)>,
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
    /// Flusher CPU time, seconds (with the threads named beside it, where some are).
    pub cpu_s: f64,
    /// Of it, the `typhon-flusher` thread's own, seconds.
    pub flusher_cpu_s: f64,
}

impl FlusherThroughput {
    /// The `typhon-flusher` thread's own CPU per record, ns.
    pub fn flusher_ns_per_record(&self) -> f64 {
        self.flusher_cpu_s * 1e9 / self.records as f64
    }
}

/// Window mode with compression on (zstd at the default level: the store holds chunks),
/// beside its twins: the same figures uncompressed and in a compressed file recording.
#[derive(Clone, Debug, Default)]
pub struct WindowZstd {
    /// Resident memory a compressed window added while filled four times over, ÷ its budget.
    pub memory_vs_budget: f64,
    /// Flusher and compressor threads into a compressed file, per record (the file mode makes
    /// its chunks on a thread of its own).
    pub flusher_file: FlusherThroughput,
    /// Flusher and compressor threads into a compressed window (its chunks too are made on a
    /// thread of their own).
    pub flusher_window: FlusherThroughput,
    /// Time an uncompressed window holds per MiB of budget, ms at 1 M records/s.
    pub held_ms_per_mib_raw: f64,
    /// The same for a compressed window.
    pub held_ms_per_mib: f64,
    /// Drops at 5 M records/s into a compressed window, 2 snapshots a second.
    pub drops_at_5m: u64,
    /// Records attempted in that phase.
    pub attempted_at_5m: u64,
    /// The same phase with no snapshot (its control).
    pub drops_at_5m_quiet: u64,
    /// Snapshots taken in that phase.
    pub snapshots_at_5m: u64,
    /// Their median duration, seconds.
    pub snapshot_s_at_5m: f64,
    /// The flusher thread's own CPU per record in that phase, ns (its chunks are made on the
    /// `typhon-compress` thread while that keeps up).
    pub flusher_ns_at_5m: f64,
    /// How far behind its schedule a producer of that phase fell at worst, ms.
    pub late_ms_at_5m: f64,
    /// The longest gap between two drains in that phase, ms.
    pub drain_gap_ms_at_5m: f64,
}

/// The recorder's own threads at a steady rate into the file sink (one producer, paced): their
/// CPU time per record, uncompressed and compressed at the default zstd level.
#[derive(Clone, Debug, Default)]
pub struct RecorderThreads {
    /// Records a second the producer wrote.
    pub rate: f64,
    /// Records written in the uncompressed run.
    pub records: u64,
    /// Flusher CPU ns per record, uncompressed file sink.
    pub flusher_cpu_ns_per_record: f64,
    /// Records written in the compressed run.
    pub zstd_records: u64,
    /// The zstd level of the compressed run (the default).
    pub zstd_level: i32,
    /// Flusher CPU ns per record, compressed file sink (it gathers chunks, the compressor
    /// compresses and writes them).
    pub zstd_flusher_cpu_ns_per_record: f64,
    /// Compressor thread CPU ns per record.
    pub compressor_cpu_ns_per_record: f64,
    /// Bytes of the compressed file per record.
    pub zstd_bytes_per_record: f64,
    /// Records lost in both runs (should be 0).
    pub missed: u64,
}

impl RecorderThreads {
    /// Records a second the compressing file sink takes on one core (flusher and compressor
    /// CPU time together), 0 if not measured.
    pub fn zstd_sink_records_per_s(&self) -> f64 {
        let ns = self.zstd_flusher_cpu_ns_per_record + self.compressor_cpu_ns_per_record;
        if ns > 0.0 {
            1e9 / ns
        } else {
            0.0
        }
    }
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
    /// Span begin/end pair with the recorder's clock (two clock reads), named by a
    /// `&'static str` (`span_static`, what `span!` of a literal calls).
    pub span: NsFigure,
    /// Span begin/end pair with caller-supplied times (`span_static_at`).
    pub span_caller_ts: NsFigure,
    /// [`span`](Self::span) named by a `&str` (`span`: the name is copied at begin).
    pub span_str: NsFigure,
    /// [`span_caller_ts`](Self::span_caller_ts) named by a `&str` (`span_at`).
    pub span_str_caller_ts: NsFigure,
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
    /// Tracy `span!` enter + exit (C++ client queuing, no viewer attached), timed side by side
    /// with our span pair.
    pub tracy_span: NsFigure,
    /// Growth of resident memory over Tracy's runs per zone queued, bytes: its queue holds two
    /// 32-byte items per zone, so about 64 shows that the client queued every zone.
    pub tracy_bytes_per_zone: f64,
    /// Minor page faults per 1000 zones that Tracy's timed runs took (its queue grows into
    /// fresh pages: one 4 KiB page holds 64 zones), part of `tracy_span`.
    pub tracy_faults_per_kzone: f64,
    /// A first touch of a fresh 4 KiB page (a minor fault), ns: what each of those faults costs.
    pub page_fault_ns: f64,
    /// `tracing`: enter + exit of an existing span through `TyphonLayer` on a Registry.
    pub tracing_span: NsFigure,
    /// The same through a layer that does nothing: the Registry's own cost.
    pub tracing_floor: NsFigure,
    /// `info!` with one integer field through `TyphonLayer`.
    pub tracing_event: NsFigure,
    /// The span's enter + exit through tracing-chrome (its writer thread writing to a counter).
    pub tracing_chrome_span: NsFigure,
    /// Bytes of JSON tracing-chrome's writer thread wrote (proof that it recorded).
    pub tracing_chrome_bytes: u64,
    /// The span's enter + exit through tracing-tracy (Tracy's client queuing, no viewer).
    pub tracing_tracy_span: NsFigure,
    /// Records our recorder took from the tracing phase (proof that the layer recorded).
    pub tracing_records: u64,
    /// Records it dropped in that phase (should be 0).
    pub tracing_drops: u64,
    /// Lock + unlock of a free `parking_lot::Mutex`.
    pub mutex_plain: NsFigure,
    /// Lock + unlock of a free `TracedMutex` (records nothing), timed beside `mutex_plain`.
    pub mutex_traced: NsFigure,
    /// `counter` of a static name (a CounterId), timed beside `counter_floor`.
    pub counter: NsFigure,
    /// The fixed 24-byte write with the recorder's clock, in the same rounds as `counter`.
    pub counter_floor: NsFigure,
    /// One allocation and one free through `System` in an allocation-heavy loop.
    pub system_alloc: NsFigure,
    /// The same loop through `TrackingAllocator<System>`, timed beside `system_alloc`.
    pub tracking_alloc: NsFigure,
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
    /// The flusher's and the compressor's CPU time per record at a steady rate.
    pub recorder_threads: RecorderThreads,
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
    /// `write_clock_ns`'s write in a file recording, timed alternating with the same write in
    /// window mode (`write_clock_window`), recorder by recorder.
    pub write_clock_file_alt: NsFigure,
    /// The same write in window mode (SPEC §16), alternating with `write_clock_file_alt`.
    pub write_clock_window: NsFigure,
    /// Flusher into the file sink, measured beside `flusher_window`.
    pub flusher_file_alt: FlusherThroughput,
    /// Flusher in window mode (finished pages into the window).
    pub flusher_window: FlusherThroughput,
    /// Resident memory a window added while filled four times over, ÷ its byte budget.
    pub window_memory_vs_budget: f64,
    /// Drops at 5 M records/s in window mode while snapshots are taken (2 a second).
    pub drops_at_5m_window: u64,
    /// Records attempted in that phase.
    pub attempted_at_5m_window: u64,
    /// The same phase in window mode with no snapshot (its control: drops the machine's load
    /// causes without one).
    pub drops_at_5m_window_quiet: u64,
    /// Snapshots taken in that phase.
    pub snapshots_at_5m_window: u64,
    /// Their median duration (`Recorder::snapshot`, request to complete file), seconds.
    pub snapshot_s_at_5m_window: f64,
    /// How far behind its schedule a producer of that phase fell at worst, ms (as
    /// `late_ms_at_5m`: a drop with a lag over what a ring holds is the machine's).
    pub late_ms_at_5m_window: f64,
    /// The longest gap between two drains in that phase, ms (as `drain_gap_ms_at_5m`).
    pub drain_gap_ms_at_5m_window: f64,
    /// The compressed window's figures.
    pub window_zstd: WindowZstd,
    /// Targets, checked.
    pub targets: Vec<TargetCheck>,
    /// Wall time of the whole run, seconds.
    pub elapsed_s: f64,
}

/// ns per record from records per second (NaN for none).
pub(crate) fn ns_per(records_per_s: f64) -> f64 {
    if records_per_s > 0.0 {
        1e9 / records_per_s
    } else {
        f64::NAN
    }
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
            "span_str_ns": self.span_str.median,
            "span_str_caller_ts_ns": self.span_str_caller_ts.median,
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
            ("write_clock_file_alt_ns", self.write_clock_file_alt.median),
            ("write_clock_window_ns", self.write_clock_window.median),
            (
                "flusher_file_ns_per_record",
                ns_per(self.flusher_file_alt.records_per_s),
            ),
            (
                "flusher_window_ns_per_record",
                ns_per(self.flusher_window.records_per_s),
            ),
            ("window_memory_vs_budget", self.window_memory_vs_budget),
            ("drops_at_5m_window", self.drops_at_5m_window as f64),
            (
                "drops_at_5m_window_quiet",
                self.drops_at_5m_window_quiet as f64,
            ),
            ("attempted_at_5m_window", self.attempted_at_5m_window as f64),
            ("snapshots_at_5m_window", self.snapshots_at_5m_window as f64),
            ("snapshot_s_at_5m_window", self.snapshot_s_at_5m_window),
            ("late_ms_at_5m_window", self.late_ms_at_5m_window),
            ("drain_gap_ms_at_5m_window", self.drain_gap_ms_at_5m_window),
            (
                "window_zstd_memory_vs_budget",
                self.window_zstd.memory_vs_budget,
            ),
            (
                "flusher_file_zstd_ns_per_record",
                ns_per(self.window_zstd.flusher_file.records_per_s),
            ),
            (
                "flusher_window_zstd_ns_per_record",
                ns_per(self.window_zstd.flusher_window.records_per_s),
            ),
            (
                "flusher_file_zstd_flusher_ns_per_record",
                self.window_zstd.flusher_file.flusher_ns_per_record(),
            ),
            (
                "flusher_window_zstd_flusher_ns_per_record",
                self.window_zstd.flusher_window.flusher_ns_per_record(),
            ),
            (
                "window_held_ms_per_mib",
                self.window_zstd.held_ms_per_mib_raw,
            ),
            (
                "window_zstd_held_ms_per_mib",
                self.window_zstd.held_ms_per_mib,
            ),
            (
                "drops_at_5m_window_zstd",
                self.window_zstd.drops_at_5m as f64,
            ),
            (
                "drops_at_5m_window_zstd_quiet",
                self.window_zstd.drops_at_5m_quiet as f64,
            ),
            (
                "attempted_at_5m_window_zstd",
                self.window_zstd.attempted_at_5m as f64,
            ),
            (
                "snapshots_at_5m_window_zstd",
                self.window_zstd.snapshots_at_5m as f64,
            ),
            (
                "snapshot_s_at_5m_window_zstd",
                self.window_zstd.snapshot_s_at_5m,
            ),
            (
                "flusher_ns_per_record_at_5m_window_zstd",
                self.window_zstd.flusher_ns_at_5m,
            ),
            ("late_ms_at_5m_window_zstd", self.window_zstd.late_ms_at_5m),
            (
                "drain_gap_ms_at_5m_window_zstd",
                self.window_zstd.drain_gap_ms_at_5m,
            ),
            ("tsc_p999_ns", self.latency.tsc_p999),
            ("latency_mean_ns", self.latency.mean),
            ("resolution_ns", self.latency.resolution_ns),
            ("late_ms_at_5m", self.late_ms_at_5m),
            ("drain_gap_ms_at_5m", self.drain_gap_ms_at_5m),
            ("register_thread_ns", self.latency.register),
            ("disabled_loop_ns", self.disabled_loop.median),
            ("first_call_no_spare_ns", self.latency.first_call_no_spare),
            ("tracy_span_ns", self.tracy_span.median),
            ("tracy_bytes_per_zone", self.tracy_bytes_per_zone),
            ("tracy_faults_per_kzone", self.tracy_faults_per_kzone),
            ("page_fault_ns", self.page_fault_ns),
            ("tracing_span_ns", self.tracing_span.median),
            ("tracing_floor_ns", self.tracing_floor.median),
            ("tracing_event_ns", self.tracing_event.median),
            ("tracing_chrome_span_ns", self.tracing_chrome_span.median),
            ("tracing_tracy_span_ns", self.tracing_tracy_span.median),
            ("parking_lot_mutex_ns", self.mutex_plain.median),
            ("traced_mutex_ns", self.mutex_traced.median),
            ("counter_ns", self.counter.median),
            ("counter_floor_ns", self.counter_floor.median),
            ("system_alloc_ns", self.system_alloc.median),
            ("tracking_alloc_ns", self.tracking_alloc.median),
            (
                "flusher_cpu_ns_per_record",
                self.recorder_threads.flusher_cpu_ns_per_record,
            ),
            (
                "compressor_cpu_ns_per_record",
                self.recorder_threads.compressor_cpu_ns_per_record,
            ),
            (
                "first_call_registered_ns",
                self.latency.first_call_registered,
            ),
        ] {
            v[k] = json!(x);
        }
        for (k, x) in [
            ("tracing_chrome_bytes", self.tracing_chrome_bytes),
            ("tracing_records", self.tracing_records),
            ("tracing_drops", self.tracing_drops),
        ] {
            v[k] = json!(x);
        }
        let t = &self.recorder_threads;
        v["recorder_threads"] = json!({
            "rate": t.rate, "records": t.records,
            "flusher_cpu_ns_per_record": t.flusher_cpu_ns_per_record,
            "zstd_level": t.zstd_level, "zstd_records": t.zstd_records,
            "zstd_flusher_cpu_ns_per_record": t.zstd_flusher_cpu_ns_per_record,
            "compressor_cpu_ns_per_record": t.compressor_cpu_ns_per_record,
            "zstd_bytes_per_record": t.zstd_bytes_per_record,
            "zstd_sink_records_per_s": t.zstd_sink_records_per_s(),
            "missed": t.missed,
        });
        // Every peer's span beside ours, by name: the profilers' against `span_ns`, the
        // `tracing` bridges' against `tracing_span_ns`.
        v["peers"] = json!({
            "fastrace": { "span_ns": self.peer_span.median, "reported": self.peer_reported },
            "puffin": { "span_ns": self.puffin_span.median, "reported": self.puffin_reported },
            "tracy": { "span_ns": self.tracy_span.median, "bytes_per_zone": self.tracy_bytes_per_zone,
                "faults_per_kzone": self.tracy_faults_per_kzone },
            "tracing-chrome": {
                "span_ns": self.tracing_chrome_span.median, "bytes_written": self.tracing_chrome_bytes,
            },
            "tracing-tracy": { "span_ns": self.tracing_tracy_span.median },
        });
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
            "span_str": fig(&self.span_str), "span_str_caller_ts": fig(&self.span_str_caller_ts),
            "puffin_span": fig(&self.puffin_span),
            "celog_ts": fig(&self.celog_ts), "celog_no_ts": fig(&self.celog_no_ts),
            "disabled": fig(&self.disabled), "disabled_loop": fig(&self.disabled_loop),
            "tracy_span": fig(&self.tracy_span),
        });
        v["figures"]["tracing_span"] = fig(&self.tracing_span);
        v["figures"]["tracing_floor"] = fig(&self.tracing_floor);
        v["figures"]["tracing_event"] = fig(&self.tracing_event);
        v["figures"]["tracing_chrome_span"] = fig(&self.tracing_chrome_span);
        v["figures"]["tracing_tracy_span"] = fig(&self.tracing_tracy_span);
        v["figures"]["parking_lot_mutex"] = fig(&self.mutex_plain);
        v["figures"]["traced_mutex"] = fig(&self.mutex_traced);
        v["figures"]["counter"] = fig(&self.counter);
        v["figures"]["counter_floor"] = fig(&self.counter_floor);
        v["figures"]["system_alloc"] = fig(&self.system_alloc);
        v["figures"]["tracking_alloc"] = fig(&self.tracking_alloc);
        v["targets"] = json!(self
            .targets
            .iter()
            .map(|t| json!({
                "name": t.name, "target": t.target, "measured": t.measured,
                "limit": t.limit, "pass": t.pass, "counted": t.counted,
            }))
            .collect::<Vec<_>>());
        v["all_pass"] = json!(self.targets.iter().filter(|t| t.counted).all(|t| t.pass));
        v
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
            "span_caller_ts_ns",
            "span_str_ns",
            "span_str_caller_ts_ns",
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
            "tracy_span_ns",
            "write_clock_window_ns",
            "write_clock_file_alt_ns",
            "flusher_window_ns_per_record",
            "flusher_file_ns_per_record",
            "window_memory_vs_budget",
            "drops_at_5m_window",
            "window_zstd_memory_vs_budget",
            "flusher_file_zstd_ns_per_record",
            "flusher_window_zstd_ns_per_record",
            "flusher_file_zstd_flusher_ns_per_record",
            "flusher_window_zstd_flusher_ns_per_record",
            "flusher_ns_per_record_at_5m_window_zstd",
            "window_held_ms_per_mib",
            "window_zstd_held_ms_per_mib",
            "drops_at_5m_window_zstd",
            "snapshot_s_at_5m_window_zstd",
            "tracing_span_ns",
            "tracing_floor_ns",
            "tracing_event_ns",
            "tracing_chrome_span_ns",
            "tracing_tracy_span_ns",
            "flusher_cpu_ns_per_record",
            "compressor_cpu_ns_per_record",
            "tracy_bytes_per_zone",
            "tracy_faults_per_kzone",
            "page_fault_ns",
            "parking_lot_mutex_ns",
            "traced_mutex_ns",
            "counter_ns",
            "counter_floor_ns",
            "system_alloc_ns",
            "tracking_alloc_ns",
        ] {
            assert!(v.get(k).is_some(), "missing key {k}");
        }
        for p in [
            "fastrace",
            "puffin",
            "tracy",
            "tracing-chrome",
            "tracing-tracy",
        ] {
            assert!(v["peers"][p]["span_ns"].is_number(), "missing peer {p}");
        }
    }
}

//! The speed targets, each a ratio between two figures of the same run (or a figure against a
//! fixed limit), checked; `(context)` rows are reported beside them but not counted.

use crate::report::{BenchReport, TargetCheck};

/// The targets, checked against `r`'s figures (a ratio of NaN, from a figure of 0, fails).
pub(crate) fn targets(r: &BenchReport) -> Vec<TargetCheck> {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    // A margin in ns over a floor of the same run; NaN when either was not measured.
    let over = |a: f64, b: f64| if a > 0.0 && b > 0.0 { a - b } else { f64::NAN };
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
        le(
            "span_vs_clock",
            "span pair with the recorder's clock <= 2.5 x a clock read (two reads are the floor)",
            ratio(r.span.median, r.clock.median),
            2.5,
        ),
        le(
            "span_caller_ts_vs_store_floor",
            "span pair with caller times <= 5 x the bare 24-byte store + release floor",
            ratio(r.span_caller_ts.median, r.store_floor.median),
            5.0,
        ),
        ge(
            "peer_span_vs_span",
            "fastrace LocalSpan >= 1.15 x slower than our span pair",
            ratio(r.peer_span.median, r.span.median),
            1.15,
        ),
        ge(
            "puffin_span_vs_span",
            "puffin profile_scope! >= 1.15 x slower than our span pair",
            ratio(r.puffin_span.median, r.span.median),
            1.15,
        ),
        ge(
            "tracy_span_vs_span",
            "Tracy span! (client queuing) >= 2 x slower than our span pair",
            ratio(r.tracy_span.median, r.span.median),
            2.0,
        ),
        context(ge(
            "tracy_less_faults_vs_span",
            "(context) Tracy span! less its queue's page faults (faults per zone x a fault's cost, both of this run: as with a viewer draining the queue) >= 2 x our span pair",
            ratio(
                r.tracy_span.median - r.tracy_faults_per_kzone / 1000.0 * r.page_fault_ns,
                r.span.median,
            ),
            2.0,
        )),
        le(
            "p999_vs_floor_p999",
            "p99.9 <= the interleaved clocked floor's p99.9 + 20 ns, flusher writing a file (ns over the floor)",
            over(r.latency.p999, r.latency.floor_p999),
            20.0,
        ),
        context(le(
            "p999_vs_p50",
            "(context) p99.9 <= 4 x p50 with the flusher writing a file",
            ratio(r.latency.p999, r.latency.p50),
            4.0,
        )),
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
            "flusher >= 60 M records/s into a null sink on one core",
            r.flusher_null.records_per_s,
            60e6,
        ),
        ge(
            "flusher_file_records_per_s",
            "flusher >= 40 M records/s into the file sink on one core",
            r.flusher_file.records_per_s,
            40e6,
        ),
        context(ge(
            "zstd_sink_records_per_s",
            "(context) the compressing file sink (flusher + compressor CPU, default zstd level) >= 20 M records/s on one core",
            r.recorder_threads.zstd_sink_records_per_s(),
            20e6,
        )),
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
            "write_window_vs_file",
            "the write in window mode costs the same as in a file recording (within noise): <= 1.10 x, recorders alternated in one run",
            ratio(r.write_clock_window.median, r.write_clock_file_alt.median),
            1.10,
        ),
        le(
            "flusher_window_vs_file",
            "the flusher's CPU per record in window mode <= a file recording's (measured one after the other)",
            ratio(
                crate::report::ns_per(r.flusher_window.records_per_s),
                crate::report::ns_per(r.flusher_file_alt.records_per_s),
            ),
            1.0,
        ),
        le(
            "window_memory_vs_budget",
            "memory a window holds <= its byte budget + 10 %",
            r.window_memory_vs_budget,
            1.10,
        ),
        le(
            "flusher_window_zstd_vs_file_zstd",
            "compressed: the flusher's CPU per record in a compressed window (which makes its chunks) <= a compressed file recording's flusher and compressor",
            ratio(
                crate::report::ns_per(r.window_zstd.flusher_window.records_per_s),
                crate::report::ns_per(r.window_zstd.flusher_file.records_per_s),
            ),
            1.0,
        ),
        le(
            "window_zstd_memory_vs_budget",
            "memory a compressed window holds <= its byte budget + 10 %",
            r.window_zstd.memory_vs_budget,
            1.10,
        ),
        le(
            "drops_at_5m_window",
            "no drops at 5 M records/s from 2 threads in window mode, 2 snapshots a second",
            if r.snapshots_at_5m_window > 0 {
                r.drops_at_5m_window as f64
            } else {
                f64::NAN
            },
            0.0,
        ),
        le(
            "drops_at_5m_window_zstd",
            "no drops at 5 M records/s from 2 threads into a compressed window, 2 snapshots a second",
            if r.window_zstd.snapshots_at_5m > 0 {
                r.window_zstd.drops_at_5m as f64
            } else {
                f64::NAN
            },
            0.0,
        ),
        le(
            "drops_at_5m",
            "no drops at 5 M records/s from 2 threads, default ring",
            r.drops_at_5m as f64,
            0.0,
        ),
        le(
            "tracing_span_vs_floor",
            "tracing span enter+exit through TyphonLayer <= the Registry's floor + 25 ns (ns over the floor)",
            over(r.tracing_span.median, r.tracing_floor.median),
            25.0,
        ),
        ge(
            "tracing_tracy_vs_tracing_span",
            "tracing-tracy >= 4 x slower than TyphonLayer for the same span",
            ratio(r.tracing_tracy_span.median, r.tracing_span.median),
            4.0,
        ),
        ge(
            "tracing_chrome_vs_tracing_span",
            "tracing-chrome >= 20 x slower than TyphonLayer for the same span",
            ratio(r.tracing_chrome_span.median, r.tracing_span.median),
            20.0,
        ),
        le(
            "traced_mutex_vs_parking_lot",
            "TracedMutex lock+unlock, free, <= parking_lot::Mutex + 2 ns (ns over it)",
            over(r.mutex_traced.median, r.mutex_plain.median),
            2.0,
        ),
        le(
            "counter_vs_write_clock",
            "counter of a static name <= 1.25 x the fixed 24-byte write with the clock, side by side",
            ratio(r.counter.median, r.counter_floor.median),
            1.25,
        ),
        le(
            "tracking_alloc_vs_system",
            "TrackingAllocator<System> alloc+free in an allocation-heavy loop <= 1.10 x System, side by side",
            ratio(r.tracking_alloc.median, r.system_alloc.median),
            1.10,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::NsFigure;

    fn fig(median: f64) -> NsFigure {
        NsFigure {
            median,
            min: median,
            max: median,
        }
    }

    #[test]
    fn margins_and_ratios_are_of_the_same_run_and_a_missing_figure_fails() {
        let r = BenchReport {
            tracing_floor: fig(8.0),
            tracing_span: fig(30.0),
            tracing_tracy_span: fig(150.0),
            tracing_chrome_span: fig(500.0),
            span: fig(20.0),
            tracy_span: fig(41.0),
            ..Default::default()
        };
        let t = targets(&r);
        let get = |n: &str| t.iter().find(|t| t.name == n).expect(n).clone();
        let over = get("tracing_span_vs_floor");
        assert_eq!((over.measured, over.pass), (22.0, true));
        let tracy = get("tracing_tracy_vs_tracing_span");
        assert_eq!((tracy.measured, tracy.pass), (5.0, true));
        let chrome = get("tracing_chrome_vs_tracing_span");
        assert!(!chrome.pass && (chrome.measured - 500.0 / 30.0).abs() < 1e-12);
        assert!(get("tracy_span_vs_span").pass);
        // No latency was measured: its margin is NaN and fails rather than passing on 0 - 0.
        let p999 = get("p999_vs_floor_p999");
        assert!(p999.measured.is_nan() && !p999.pass);
        // Every target has a distinct name.
        let mut names: Vec<_> = t.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), t.len());
    }
}

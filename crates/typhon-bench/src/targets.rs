//! The speed targets, each a ratio between two figures of the same run (or a figure against a
//! fixed limit), checked; `(context)` rows are reported beside them but not counted.

use crate::report::{BenchReport, TargetCheck};

/// The targets, checked against `r`'s figures (a ratio of NaN, from a figure of 0, fails).
pub(crate) fn targets(r: &BenchReport) -> Vec<TargetCheck> {
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

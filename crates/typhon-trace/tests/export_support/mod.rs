//! What the export tests share: the known recording, the outside readers (Perfetto's protobuf
//! classes through tests/export_perfetto.py, Chrome DevTools' trace model through
//! tests/js/export_devtools.mjs) and what to make of their output.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::{IngressDropReason, RecorderBuilder, ThreadKind, TraceContext};
use typhon_trace::export::{self, Format};
use typhon_trace::tracedat::TraceFile;

pub fn scratch(tag: &str) -> PathBuf {
    super::common::scratch_dir(&format!("export-{tag}"))
}

/// Records the known workload to `path` and returns its time base (CLOCK_MONOTONIC ns).
///
/// Thread "net": IngressReceived seq 42 at 3 µs, seq 43 at 3.5 µs, IngressDropped 43 at 3.6 µs,
/// IngressAdmitted 42 at 4 µs, EgressSent at 13 µs.
/// Thread "game" (this one): tick 1–10 µs, span "frame" 1.5–9 µs, phase 1 2–8 µs, traced span
/// "apply" (command 7/3/42) 5–7 µs with CommandConsumed 42 at 6 µs inside, span "late" 9.5–12
/// µs (overlaps the tick without nesting in it), Instant at 11 µs.
pub fn record(path: &Path) -> u64 {
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    let base = typhon_recorder::clock::monotonic_ns() + 1_000_000;
    let at = |us_tenths: u64| rec.ns_to_ticks(base + us_tenths * 100);
    // "game" (this thread) claims its slot first, so "net" gets another one and neither
    // stream follows the other's in a reused slot.
    typhon_recorder::set_thread_info("game", ThreadKind::Main);
    assert!(typhon_recorder::register_thread());
    std::thread::scope(|s| {
        s.spawn(|| {
            typhon_recorder::set_thread_info("net", ThreadKind::Worker);
            typhon_recorder::ingress_received_at(Some(at(30)), 7, 42, 0, 64);
            typhon_recorder::ingress_received_at(Some(at(35)), 7, 43, 1, 32);
            typhon_recorder::ingress_dropped_at(Some(at(36)), 7, 43, IngressDropReason::QueueFull);
            typhon_recorder::ingress_admitted_at(Some(at(40)), 7, 42, 0, 3);
            typhon_recorder::egress_sent_at(Some(at(130)), 7, 3, 100, 1);
        });
    });
    typhon_recorder::tick_start_at(at(10));
    let frame = typhon_recorder::span_at("frame", at(15));
    typhon_recorder::phase_start_at(at(20), 1);
    let (hi, lo) = typhon_recorder::command_causal_id(7, 3, 42);
    let apply = typhon_recorder::traced_span_at("apply", TraceContext { hi, lo }, at(50));
    typhon_recorder::command_consumed_at(Some(at(60)), 7, 42, 2);
    apply.end_at(at(70));
    typhon_recorder::phase_end_at(at(80), 1);
    frame.end_at(at(90));
    let late = typhon_recorder::span_at("late", at(95));
    typhon_recorder::tick_end_at(at(100), 2, 1);
    typhon_recorder::instant_at(at(110), 5, 6);
    late.end_at(at(120));
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    base
}

/// Time in tenths of a µs since `base`, rounded (the tick conversion may be a few ns off).
pub fn tenths(ts: u64, base: u64) -> i64 {
    ((ts as i64 - base as i64) as f64 / 100.0).round() as i64
}

pub fn perfetto_reader() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2, google.protobuf",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!("TYPHON_REQUIRE_INTEROP=1 but python3 cannot import the perfetto package");
        }
        eprintln!(
            "SKIPPED: python3 with the perfetto package (pip install perfetto protobuf) is \
             not available; set TYPHON_REQUIRE_INTEROP=1 to fail instead"
        );
    }
    ok
}

/// (track name, type, event name, time in tenths of a µs) per event, in the order
/// trace_processor parses them: sorted by time, stably (times as the reader resolves them from
/// the incremental clock).
pub fn perfetto_events(v: &Value, base: u64) -> Vec<(String, String, String, i64)> {
    let tracks = v["tracks"].as_object().unwrap();
    let mut events: Vec<&Value> = v["events"].as_array().unwrap().iter().collect();
    events.sort_by_key(|e| e["ts"].as_u64().unwrap());
    events
        .into_iter()
        .map(|e| {
            let t = &tracks[&e["track"].as_u64().unwrap().to_string()];
            (
                t["name"].as_str().unwrap().to_string(),
                e["type"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
                tenths(e["ts"].as_u64().unwrap(), base),
            )
        })
        .collect()
}

/// The flows of the Perfetto reader's output, each as (event name, time in tenths of a µs) in
/// time order (trace_processor links a flow's events by time; within one nanosecond, here by
/// name), ordered by their first event. A flow is an id two events or more carry: the export
/// gives a command's first event its flow's id before it knows whether another will join, and
/// an id carried once links nothing.
pub fn flows(v: &Value, base: u64) -> Vec<Vec<(String, i64)>> {
    let mut by_flow: BTreeMap<u64, Vec<(String, i64)>> = BTreeMap::new();
    for e in v["events"].as_array().unwrap() {
        for id in e["flows"].as_array().unwrap() {
            by_flow.entry(id.as_u64().unwrap()).or_default().push((
                e["name"].as_str().unwrap().to_string(),
                tenths(e["ts"].as_u64().unwrap(), base),
            ));
        }
    }
    let mut f: Vec<_> = by_flow.into_values().filter(|f| f.len() >= 2).collect();
    for f in &mut f {
        f.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    }
    f.sort_by_key(|f| f[0].1);
    f
}

/// Exports `dat` to Perfetto and returns what the Perfetto reader makes of it (None, after
/// saying why, without the reader).
pub fn read_perfetto(dat: &Path) -> Option<Value> {
    let (out, _) = export_to(dat, Format::Perfetto);
    if !perfetto_reader() {
        return None;
    }
    Some(run_reader("python3", "tests/export_perfetto.py", &[&out]))
}

/// Exports `dat` next to it in `format`; returns the output's path and what it held.
pub fn export_to(dat: &Path, format: Format) -> (PathBuf, export::TimelineStats) {
    let file = TraceFile::open(dat).unwrap();
    let out = dat.with_extension(format.extension());
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let stats = export::export(&file, format, &mut w).unwrap();
    (out, stats)
}

/// Runs an outside reader (`program` on the project's `script` with `args`) and returns the
/// JSON it prints, failing the test with its stderr if it fails.
pub fn run_reader(program: &str, script: &str, args: &[&Path]) -> Value {
    let run = Command::new(program)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

/// Where the DevTools trace model is installed, or None (after saying why) if it is not.
pub fn devtools_modules() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/node_modules");
    let ok = dir.join("@paulirish/trace_engine/package.json").exists()
        && Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!(
                "TYPHON_REQUIRE_INTEROP=1 but node or {} is missing",
                dir.display()
            );
        }
        eprintln!(
            "SKIPPED: node with @paulirish/trace_engine in {} (npm ci --prefix tests/js) is not \
             available; set TYPHON_REQUIRE_INTEROP=1 to fail instead",
            dir.display()
        );
        return None;
    }
    Some(dir)
}

//! `typhon_recorder::export` end to end: a recording with known timings, exported to Perfetto
//! protobuf and Chrome JSON, read back by Perfetto's own generated protobuf classes
//! (tests/export_perfetto.py, the `perfetto` PyPI package) and by serde_json. The Perfetto
//! checks skip (with a message) without that package, unless `TYPHON_REQUIRE_INTEROP=1`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::export::{self, Format};
use typhon_recorder::recorder::{
    doc_lock, IngressDropReason, RecorderBuilder, ThreadKind, TraceContext,
};
use typhon_recorder::tracedat::TraceFile;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-export-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Records the known workload to `path` and returns its time base (CLOCK_MONOTONIC ns).
///
/// Thread "net": IngressReceived seq 42 at 3 µs, seq 43 at 3.5 µs, IngressDropped 43 at 3.6 µs,
/// IngressAdmitted 42 at 4 µs, EgressSent at 13 µs.
/// Thread "game" (this one): tick 1–10 µs, span "frame" 1.5–9 µs, phase 1 2–8 µs, traced span
/// "apply" (command 7/3/42) 5–7 µs with CommandConsumed 42 at 6 µs inside, span "late" 9.5–12
/// µs (overlaps the tick without nesting in it), Instant at 11 µs.
fn record(path: &Path) -> u64 {
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    // Caller timestamps well after the threads' first records (their ThreadInfos, at claim
    // time): a slot's page time never goes backwards, so an earlier one would be moved.
    let base = typhon_recorder::clock::monotonic_ns() + 200_000_000;
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
fn tenths(ts: u64, base: u64) -> i64 {
    ((ts as i64 - base as i64) as f64 / 100.0).round() as i64
}

fn perfetto_reader() -> bool {
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

/// (track name, type, event name, time in tenths of a µs) per event, in file order, from the
/// Perfetto reader's output.
fn perfetto_events(v: &Value, base: u64) -> Vec<(String, String, String, i64)> {
    let tracks = v["tracks"].as_object().unwrap();
    v["events"]
        .as_array()
        .unwrap()
        .iter()
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

#[test]
fn perfetto_export_reads_back_with_perfettos_own_schema() {
    let _g = doc_lock();
    let dir = scratch("perfetto");
    let dat = dir.join("known.dat");
    let base = record(&dat);
    let file = TraceFile::open(&dat).unwrap();
    let out = dir.join("known.pftrace");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let stats = export::export(&file, Format::Perfetto, &mut w).unwrap();
    drop(w);
    // 19 records: 3 ThreadInfos, slot 0's two CeLog markers, 5 on "net" and 9 on "game" (its
    // TickStart and PhaseStart become slice starts, TickEnd, PhaseEnd and the 3 spans slices).
    assert_eq!(stats.records, 19);
    assert_eq!(stats.slices, 5, "{stats:?}");
    assert_eq!(stats.instants, 2 + 5 + 2, "{stats:?}");
    assert_eq!((stats.threads, stats.tracks), (3, 4), "{stats:?}");
    assert_eq!((stats.flows, stats.loss_marks), (2, 0), "{stats:?}");
    if !perfetto_reader() {
        return;
    }
    let run = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/export_perfetto.py"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "export_perfetto.py: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(
        v["first_flags"], 1,
        "the first packet clears incremental state"
    );
    // Tracks: the process, three threads under it, one overlap lane under "game".
    let tracks = v["tracks"].as_object().unwrap();
    let process = tracks.values().find(|t| t["kind"] == "process").unwrap();
    let pid = process["pid"].as_i64().unwrap();
    assert_eq!(pid, std::process::id() as i64);
    let threads: BTreeMap<&str, &Value> = tracks
        .values()
        .filter(|t| t["kind"] == "thread")
        .map(|t| (t["name"].as_str().unwrap(), t))
        .collect();
    assert_eq!(
        threads.keys().copied().collect::<Vec<_>>(),
        ["game", "net", "typhon-recorder"]
    );
    assert!(threads.values().all(|t| t["pid"].as_i64() == Some(pid)));
    let game_uuid = tracks
        .iter()
        .find(|(_, t)| t["name"] == "game")
        .map(|(k, _)| k.parse::<u64>().unwrap())
        .unwrap();
    let lane = tracks.values().find(|t| t["kind"] == "child").unwrap();
    assert_eq!(lane["name"], "game (overlap 1)");
    assert_eq!(lane["parent"].as_u64(), Some(game_uuid));

    let ev = perfetto_events(&v, base);
    let on = |track: &str| -> Vec<(String, String, i64)> {
        ev.iter()
            .filter(|e| e.0 == track)
            .map(|e| (e.1.clone(), e.2.clone(), e.3))
            .collect()
    };
    let s = |ty: &str, name: &str, t: i64| (format!("TYPE_{ty}"), name.to_string(), t);
    assert_eq!(
        on("game"),
        [
            s("SLICE_BEGIN", "tick", 10),
            s("SLICE_BEGIN", "frame", 15),
            s("SLICE_BEGIN", "phase 1", 20),
            s("SLICE_BEGIN", "apply", 50),
            s("INSTANT", "CommandConsumed", 60),
            s("SLICE_END", "", 70),
            s("SLICE_END", "", 80),
            s("SLICE_END", "", 90),
            s("SLICE_END", "", 100),
            s("INSTANT", "Instant", 110),
        ]
    );
    assert_eq!(
        on("game (overlap 1)"),
        [s("SLICE_BEGIN", "late", 95), s("SLICE_END", "", 120)]
    );
    assert_eq!(
        on("net"),
        [
            s("INSTANT", "IngressReceived", 30),
            s("INSTANT", "IngressReceived", 35),
            s("INSTANT", "IngressDropped", 36),
            s("INSTANT", "IngressAdmitted", 40),
            s("INSTANT", "EgressSent", 130),
        ]
    );
    let names: Vec<_> = on("typhon-recorder").into_iter().map(|e| e.1).collect();
    assert_eq!(names, ["CeLog 0x1fff", "CeLog 0x1ffe"]);
    // Every event is on the one sequence, in time order.
    let events = v["events"].as_array().unwrap();
    assert!(events.iter().all(|e| e["seq"] == 1));
    assert!(events
        .windows(2)
        .all(|w| w[0]["ts"].as_u64() <= w[1]["ts"].as_u64()));

    // Arguments come from the kind table; the traced span spells out its command.
    let find = |name: &str| events.iter().find(|e| e["name"] == name).unwrap();
    let tick = &find("tick")["args"];
    assert_eq!(
        (&tick["overload_level"], &tick["tick_multiplier"]),
        (&2.into(), &1.into())
    );
    let apply = &find("apply")["args"];
    assert_eq!(apply["command_session"], 7);
    assert_eq!(apply["command_drain_tick"], 3);
    assert_eq!(apply["command_seq"], 42);
    assert_eq!(find("frame")["args"]["name"], "frame");
    let recv = &find("IngressReceived")["args"];
    assert_eq!(
        (&recv["session"], &recv["seq"], &recv["bytes"]),
        (&7.into(), &42.into(), &64.into())
    );
    let inst = &find("Instant")["args"];
    assert_eq!((&inst["name_id"], &inst["payload"]), (&5.into(), &6.into()));

    // Flows: seq 42 runs received → admitted → the apply span → consumed (ends there); seq 43
    // runs received → dropped (ends there). EgressSent is in none.
    let flow_of = |e: &Value| -> Option<(u64, bool)> {
        let f = e["flows"].as_array().unwrap();
        let t = e["ends"].as_array().unwrap();
        f.first()
            .map(|x| (x.as_u64().unwrap(), false))
            .or(t.first().map(|x| (x.as_u64().unwrap(), true)))
    };
    let chain: Vec<(String, i64, bool)> = {
        let mut by_flow: BTreeMap<u64, Vec<(String, i64, bool)>> = BTreeMap::new();
        for e in events {
            if let Some((id, ends)) = flow_of(e) {
                by_flow.entry(id).or_default().push((
                    e["name"].as_str().unwrap().to_string(),
                    tenths(e["ts"].as_u64().unwrap(), base),
                    ends,
                ));
            }
        }
        assert_eq!(by_flow.len(), 2);
        by_flow.into_values().flatten().collect()
    };
    let c = |n: &str, t: i64, ends: bool| (n.to_string(), t, ends);
    assert_eq!(
        chain,
        [
            c("IngressReceived", 30, false),
            c("IngressAdmitted", 40, false),
            c("apply", 50, false),
            c("CommandConsumed", 60, true),
            c("IngressReceived", 35, false),
            c("IngressDropped", 36, true),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chrome_export_is_json_with_balanced_slices_per_thread() {
    let _g = doc_lock();
    let dir = scratch("chrome");
    let dat = dir.join("known.dat");
    let base = record(&dat);
    let file = TraceFile::open(&dat).unwrap();
    let mut out = Vec::new();
    let stats = export::export(&file, Format::Chrome, &mut out).unwrap();
    assert_eq!((stats.slices, stats.records), (5, 19));
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    let events = v["traceEvents"].as_array().unwrap();
    let names: BTreeMap<i64, &str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_i64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    let mut seen: Vec<&str> = names.values().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, ["game", "game (overlap 1)", "net", "typhon-recorder"]);
    // Per thread: B and E balance and nest; ts is µs with three decimals (ns).
    let mut open: BTreeMap<i64, Vec<(String, i64)>> = BTreeMap::new();
    let mut slices = Vec::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let tid = e["tid"].as_i64().unwrap();
        let ts_us = e["ts"].as_f64().unwrap();
        let t = ((ts_us * 1000.0 - base as f64) / 100.0).round() as i64;
        match e["ph"].as_str().unwrap() {
            "B" => open
                .entry(tid)
                .or_default()
                .push((e["name"].as_str().unwrap().to_string(), t)),
            "E" => {
                let (name, start) = open.get_mut(&tid).unwrap().pop().unwrap();
                slices.push((names[&tid].to_string(), name, start, t));
            }
            "i" => assert_eq!(e["s"], "t"),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open.values().all(Vec::is_empty));
    slices.sort_by_key(|s| s.2);
    let sl = |th: &str, n: &str, a: i64, b: i64| (th.to_string(), n.to_string(), a, b);
    assert_eq!(
        slices,
        [
            sl("game", "tick", 10, 100),
            sl("game", "frame", 15, 90),
            sl("game", "phase 1", 20, 80),
            sl("game", "apply", 50, 70),
            sl("game (overlap 1)", "late", 95, 120),
        ]
    );
    // A span id carries the slot in its top byte: beyond 2^53, so it is a string.
    let frame = events.iter().find(|e| e["name"] == "frame").unwrap();
    assert!(frame["args"]["span_id"].is_string(), "{frame}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Drops become "events lost" marks whose counts add up to what the recorder counted as missed.
#[test]
fn lost_events_are_marked_with_their_counts() {
    let _g = doc_lock();
    let dir = scratch("lost");
    let dat = dir.join("lost.dat");
    let rec = RecorderBuilder::new()
        .output(&dat)
        .ring_bytes(4096)
        .flush_interval(std::time::Duration::from_secs(3600))
        .start()
        .unwrap();
    for i in 0..20_000u32 {
        typhon_recorder::ingress_received(1, i as u16, 0, 8);
    }
    let stats = rec.finish().unwrap();
    assert!(stats.total_missed() > 0, "the burst overflows a 4 KiB ring");
    let file = TraceFile::open(&dat).unwrap();
    let mut out = Vec::new();
    let s = export::export(&file, Format::Chrome, &mut out).unwrap();
    assert_eq!(s.lost_events, stats.total_missed());
    let v: Value = serde_json::from_slice(&out).unwrap();
    let marks: u64 = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "events lost")
        .map(|e| e["args"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(marks, stats.total_missed());
    assert_eq!(s.records, stats.total_written());
    let _ = std::fs::remove_dir_all(&dir);
}

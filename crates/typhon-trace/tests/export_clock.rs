//! The Perfetto export's timestamps, read back with Perfetto's own protobuf classes
//! (tests/export_perfetto.py, which resolves them as trace_processor does): every event's time,
//! decoded from the incremental clock (or, for an event that comes late, the absolute one),
//! is the time the project's reader gives it, and the clock snapshot maps it to wall-clock
//! time through the file's anchor. Skips (saying so) without python3's perfetto package,
//! unless `TYPHON_REQUIRE_INTEROP=1`.

mod common;
mod export_support;

use export_support::{perfetto_reader, run_reader};

use serde_json::Value;
use std::path::Path;
use typhon_recorder::{doc_lock, RecorderBuilder, ThreadKind};
use typhon_trace::export::{self, Format, Phase, Timeline};
use typhon_trace::tracedat::TraceFile;

fn read(pftrace: &Path) -> Value {
    run_reader("python3", "tests/export_perfetto.py", &[pftrace])
}

#[test]
fn perfetto_times_resolve_to_the_readers_and_to_wall_clock() {
    let _g = doc_lock();
    let dir = common::scratch_dir("export-clock");
    let dat = dir.join("clock.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let base = typhon_recorder::clock::monotonic_ns() + 1_000_000;
    let at = |us: u64| rec.ns_to_ticks(base + us * 1000);
    typhon_recorder::set_thread_info("game", ThreadKind::Main);
    std::thread::scope(|s| {
        s.spawn(|| {
            typhon_recorder::set_thread_info("net", ThreadKind::Worker);
            for i in 0..3000u16 {
                let t = 5 + u64::from(i) * 60;
                typhon_recorder::ingress_received_at(Some(at(t)), 1, i, 0, 8);
                typhon_recorder::ingress_admitted_at(Some(at(t + 7)), 1, i, 0, 2);
            }
        });
    });
    // A span far longer than the export's window (200 ms), holding 3000 short ones, an
    // instant each, and ticks: its Begin comes after what it holds.
    let long = typhon_recorder::span_at("long", at(1));
    for i in 0..3000u64 {
        let t = 10 + i * 60;
        typhon_recorder::span_at("short", at(t)).end_at(at(t + 30));
        typhon_recorder::instant_at(at(t + 40), 1, i as i32);
        if i % 100 == 0 {
            typhon_recorder::tick_start_at(at(t + 45));
            typhon_recorder::tick_end_at(at(t + 50), 0, 1);
        }
    }
    long.end_at(at(200_000));
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);

    let file = TraceFile::open(&dat).unwrap();
    let out = dat.with_extension("pftrace");
    let s = {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
        export::export(&file, Format::Perfetto, &mut w).unwrap()
    };
    assert!(
        s.out_of_order >= 1,
        "the long span's Begin comes late: {s:?}"
    );
    // Each command on "net" is received and admitted, never consumed: a flow of two events
    // that ends unfinished.
    assert_eq!((s.flows, s.unfinished_flows), (3000, 3000), "{s:?}");
    if !perfetto_reader() {
        return;
    }
    let v = read(&out);

    // One snapshot: the incremental clock 64 and the absolute 65 at the anchor, REALTIME the
    // trace's clock at the anchor's wall-clock time.
    let meta = file.typhon_meta().unwrap().unwrap();
    assert!(meta.mono_anchor_ns > 0 && meta.wall_anchor_ns > 0);
    let snaps = v["snapshots"].as_array().unwrap();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert_eq!(snaps[0]["primary"], "BUILTIN_CLOCK_REALTIME");
    let clocks: Vec<(u64, u64, bool)> = snaps[0]["clocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().unwrap(),
                c["ts"].as_u64().unwrap(),
                c["incremental"].as_bool().unwrap(),
            )
        })
        .collect();
    let mono = meta.mono_anchor_ns as u64;
    assert_eq!(
        clocks,
        [
            (64, mono, true),
            (65, mono, false),
            (1, meta.wall_anchor_ns as u64, false)
        ]
    );

    // Every event at the time the project's reader gives it (Begin, End and instants alike),
    // and at that time's wall-clock time.
    let t = Timeline::build(&file).unwrap();
    let ty = |p: Phase| match p {
        Phase::Begin => "TYPE_SLICE_BEGIN",
        Phase::End => "TYPE_SLICE_END",
        Phase::Instant | Phase::Lost(_) | Phase::Damaged(_) => "TYPE_INSTANT",
        Phase::Counter => "TYPE_COUNTER",
    };
    let mut want: Vec<(u64, String)> = t
        .events
        .iter()
        .map(|e| (e.ts, ty(e.phase).to_string()))
        .collect();
    let events = v["events"].as_array().unwrap();
    let mut got: Vec<(u64, String)> = events
        .iter()
        .map(|e| {
            (
                e["ts"].as_u64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the Perfetto times differ from the reader's");
    let offset = meta.wall_anchor_ns as i128 - mono as i128;
    for e in events {
        let ts = e["ts"].as_u64().unwrap() as i128;
        assert_eq!(e["wall"].as_i64().map(i128::from), Some(ts + offset), "{e}");
    }
    // The late events, and only they, carry absolute times; the rest are increments.
    let absolute = events.iter().filter(|e| e["clock"] == 65).count() as u64;
    assert_eq!(absolute, s.out_of_order);
    assert!(events.iter().all(|e| e["clock"] == 64 || e["clock"] == 65));
    let _ = std::fs::remove_dir_all(&dir);
}

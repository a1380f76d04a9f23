//! `typhon_trace::export` end to end: a recording with known timings, exported to Perfetto
//! protobuf and Chrome JSON, read back by Perfetto's own generated protobuf classes
//! (tests/export_perfetto.py, the `perfetto` PyPI package), by Chrome DevTools' trace model
//! (tests/js/export_devtools.mjs, the npm package `@paulirish/trace_engine` pinned by
//! tests/js/package-lock.json: `npm ci --prefix tests/js`) and by serde_json. The checks
//! with outside readers skip (with a message) without them, unless `TYPHON_REQUIRE_INTEROP=1`.

mod common;
mod export_support;

use export_support::*;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use typhon_recorder::{doc_lock, IngressDropReason, RecorderBuilder, ThreadKind, TraceContext};
use typhon_trace::export::{self, Format};
use typhon_trace::tracedat::TraceFile;

#[test]
fn perfetto_export_reads_back_with_perfettos_own_schema() {
    let _g = doc_lock();
    let dir = scratch("perfetto");
    let dat = dir.join("known.dat");
    let base = record(&dat);
    let (_, stats) = export_to(&dat, Format::Perfetto);
    // 20 records: 3 ThreadInfos, slot 0's two CeLog markers and its ClockSync (no event), 5 on
    // "net" and 9 on "game" (its TickStart and PhaseStart become slice starts, TickEnd, PhaseEnd
    // and the 3 spans slices).
    assert_eq!(stats.records, 20);
    assert_eq!(stats.slices, 5, "{stats:?}");
    assert_eq!(stats.instants, 2 + 5 + 2, "{stats:?}");
    assert_eq!((stats.threads, stats.tracks), (3, 4), "{stats:?}");
    assert_eq!((stats.flows, stats.loss_marks), (2, 0), "{stats:?}");
    let Some(v) = read_perfetto(&dat) else {
        return;
    };
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
    // Every event is on the one sequence. What Perfetto needs of the order: nothing but the
    // incremental clock's, as trace_processor sorts the events itself (stably: at equal times,
    // in file order). Sorted so, every track's slices nest: each End closes a Begin of its own
    // track.
    let events = v["events"].as_array().unwrap();
    assert!(events.iter().all(|e| e["seq"] == 1));
    let mut depth: BTreeMap<String, i64> = BTreeMap::new();
    for (track, ty, _, _) in &ev {
        let d = depth.entry(track.clone()).or_default();
        match ty.as_str() {
            "TYPE_SLICE_BEGIN" => *d += 1,
            "TYPE_SLICE_END" => *d -= 1,
            _ => {}
        }
        assert!(*d >= 0, "an End on {track} without a Begin");
    }
    assert!(depth.values().all(|&d| d == 0), "{depth:?}");

    // Arguments come from the kind table; the traced span spells out its command.
    // The earliest event of a name (the file is not in time order).
    let find = |name: &str| {
        events
            .iter()
            .filter(|e| e["name"] == name)
            .min_by_key(|e| e["ts"].as_u64())
            .unwrap()
    };
    let tick = &find("tick")["args"];
    assert_eq!(
        (&tick["overload_level"], &tick["tick_multiplier"]),
        (&2.into(), &1.into())
    );
    let apply = &find("apply")["args"];
    assert_eq!(apply["command_session"], 7);
    assert_eq!(apply["command_drain_tick"], 3);
    assert_eq!(apply["command_seq"], 42);
    // No argument repeats what the event says: a span's name, duration and flags, a phase's
    // number, a command's causal id as two integers.
    let frame = find("frame")["args"].as_object().unwrap();
    let mut keys: Vec<&str> = frame.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["parent_span_id", "span_id"]);
    assert!(find("phase 1")["args"].as_object().unwrap().is_empty());
    assert!(apply.get("trace_id_hi").is_none() && apply.get("duration_ns").is_none());
    let recv = &find("IngressReceived")["args"];
    assert_eq!(
        (&recv["session"], &recv["seq"], &recv["bytes"]),
        (&7.into(), &42.into(), &64.into())
    );
    let inst = &find("Instant")["args"];
    assert_eq!((&inst["name_id"], &inst["payload"]), (&5.into(), &6.into()));

    // Flows: seq 42 runs received → admitted → the apply span → consumed (ends there); seq 43
    // runs received → dropped (ends there). EgressSent is in none.
    assert!(events
        .iter()
        .all(|e| e["ends"].as_array().unwrap().is_empty()));
    assert_eq!(
        flows(&v, base),
        [
            vec![
                ("IngressReceived".to_string(), 30),
                ("IngressAdmitted".to_string(), 40),
                ("apply".to_string(), 50),
                ("CommandConsumed".to_string(), 60),
            ],
            vec![
                ("IngressReceived".to_string(), 35),
                ("IngressDropped".to_string(), 36),
            ],
        ]
    );
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

/// A damaged page is skipped and marked on its thread with an uncounted loss, before the
/// thread's next record; a slot whose only page is damaged still gets its thread and mark.
#[test]
fn damaged_pages_are_marked_on_their_threads() {
    let _g = doc_lock();
    let dir = scratch("damaged");
    let dat = dir.join("damaged.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    // Both threads live at once, so they hold two slots.
    let both = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            typhon_recorder::set_thread_info("busy", ThreadKind::Worker);
            assert!(typhon_recorder::register_thread());
            both.wait();
            for i in 0..3000 {
                typhon_recorder::instant(i, i);
            }
        });
        s.spawn(|| {
            typhon_recorder::set_thread_info("brief", ThreadKind::Worker);
            typhon_recorder::instant(1, 1);
            both.wait();
        });
    });
    rec.finish().unwrap();
    let bytes = std::fs::read(&dat).unwrap();
    let tf = TraceFile::parse(bytes.clone()).unwrap();
    let page = u64::from(tf.page_size());
    let by_pages = |c: &u32| tf.pages(*c).count();
    let mut slots: Vec<u32> = (1..tf.cpus()).filter(|c| by_pages(c) > 0).collect();
    slots.sort_by_key(by_pages);
    let (brief, busy) = (slots[0], slots[slots.len() - 1]);
    assert_eq!(by_pages(&brief), 1);
    assert!(by_pages(&busy) >= 3);
    // Zero the first record header of brief's only page and of busy's second page.
    let header = |cpu: u32, k: u64| {
        let at = tf.cpu_data(cpu).unwrap().0 + k * page;
        let recs = common::page_records(&bytes, at, page as usize);
        (recs[0].0 as usize, recs.len() as u64)
    };
    let (b_hdr, _) = header(brief, 0);
    let (u_hdr, u_lost) = header(busy, 1);
    let mut bad = bytes.clone();
    for h in [b_hdr, u_hdr] {
        bad[h..h + 8].fill(0);
    }
    let bad_tf = TraceFile::parse(bad).unwrap();
    let t = export::Timeline::build(&bad_tf).unwrap();
    let s = t.stats();
    assert_eq!(s.damaged_pages, 2);
    assert_eq!(
        s.records,
        tf.records().count() as u64 - u_lost - 2,
        "brief: ThreadInfo, Instant"
    );
    let marks: Vec<&str> = t
        .events
        .iter()
        .filter(|e| e.phase == export::Phase::Damaged(1))
        .map(|e| t.threads[t.tracks[e.track as usize].thread].name.as_str())
        .collect();
    let brief_name = tf.cmdline(i64::from(brief)).unwrap_or("").to_string();
    assert_eq!(marks.len(), 2, "{marks:?}");
    assert!(marks.contains(&"busy"), "{marks:?}");
    assert!(
        t.threads.iter().any(|th| th.slot == brief),
        "the slot with only a damaged page has its thread ({brief_name:?})"
    );
    // The busy mark stands right before the thread's first record after the damage.
    let i = t
        .events
        .iter()
        .position(|e| {
            e.phase == export::Phase::Damaged(1)
                && t.threads[t.tracks[e.track as usize].thread].name == "busy"
        })
        .unwrap();
    let busy_track = t.events[i].track;
    let next = t.events[i + 1..]
        .iter()
        .find(|e| e.track == busy_track)
        .unwrap();
    assert_eq!(next.ts, t.events[i].ts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records `work` (given a time in tenths of a µs after a base, it returns raw ticks) to a
/// fresh file and returns the file and the base.
fn record_with(tag: &str, work: impl FnOnce(&dyn Fn(u64) -> u64)) -> (PathBuf, u64) {
    let dir = scratch(tag);
    let dat = dir.join(format!("{tag}.dat"));
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    // Well after the thread's claim (its ThreadInfo, at the real time of its first record),
    // so that no page time is pushed past the times the test writes.
    let base = typhon_recorder::clock::monotonic_ns() + 50_000_000;
    work(&|t| rec.ns_to_ticks(base + t * 100));
    rec.finish().unwrap();
    (dat, base)
}

/// An event stands at its own time, not at its page time: a slot's page time never goes
/// backwards, so an instant written with an earlier time than the span before it has a later
/// page time. (Before: the export used page times for everything but spans.)
#[test]
fn events_stand_at_their_own_time_not_their_page_time() {
    let _g = doc_lock();
    let (dat, base) = record_with("own-time", |at| {
        typhon_recorder::span_at("work", at(1000)).end_at(at(1100));
        typhon_recorder::instant_at(at(1050), 1, 2);
        typhon_recorder::tick_start_at(at(1060));
        typhon_recorder::tick_end_at(at(1070), 0, 1);
    });
    let file = TraceFile::open(&dat).unwrap();
    let t = export::Timeline::build(&file).unwrap();
    let at = |name: &str, phase: export::Phase| {
        let e = t
            .events
            .iter()
            .find(|e| e.phase == phase && e.rec.is_some_and(|r| export::event_name(r) == name))
            .unwrap();
        tenths(e.ts, base)
    };
    assert_eq!(at("work", export::Phase::Begin), 1000);
    assert_eq!(at("Instant", export::Phase::Instant), 1050);
    assert_eq!(at("tick", export::Phase::Begin), 1060);
    // The span's page time (its end) is what the instant's page time was pushed to.
    let page_of_instant = file
        .records()
        .map(Result::unwrap)
        .find(|r| r.data[2] == typhon_recorder::codec::TraceEventKind::INSTANT.0)
        .unwrap()
        .ts;
    assert_eq!(tenths(page_of_instant, base), 1100);
    let _ = std::fs::remove_dir_all(dat.parent().unwrap());
}

/// A flow never joins two commands: a second IngressReceived of the same (session, seq)
/// starts a new one, and so does an IngressAdmitted after the command was consumed (its
/// IngressReceived lost); the span joins only the flow whose drain tick it carries. (Before:
/// flows were keyed by (session, seq) alone, and a command whose records were lost absorbed
/// the next one.)
#[test]
fn flows_follow_one_command_each_even_with_records_missing() {
    let _g = doc_lock();
    let (dat, base) = record_with("flows", |at| {
        let (hi, lo) = typhon_recorder::command_causal_id(7, 3, 42);
        typhon_recorder::ingress_received_at(Some(at(10)), 7, 42, 0, 8); // its command is lost
        typhon_recorder::ingress_received_at(Some(at(20)), 7, 42, 0, 8);
        typhon_recorder::ingress_admitted_at(Some(at(30)), 7, 42, 0, 3);
        let apply = typhon_recorder::traced_span_at("apply", TraceContext { hi, lo }, at(40));
        typhon_recorder::command_consumed_at(Some(at(45)), 7, 42, 1);
        typhon_recorder::command_consumed_at(Some(at(47)), 7, 42, 2); // a second system
        apply.end_at(at(50));
        typhon_recorder::ingress_admitted_at(Some(at(60)), 7, 42, 0, 9); // received lost
        typhon_recorder::command_consumed_at(Some(at(70)), 7, 42, 1);
        // A span of drain tick 3 again: not the tick-9 command's.
        let (hi, lo) = typhon_recorder::command_causal_id(7, 3, 42);
        typhon_recorder::traced_span_at("stale", TraceContext { hi, lo }, at(80)).end_at(at(90));
        // Seq 50: its span begins at the very time of its IngressAdmitted and holds its
        // CommandConsumed at its start; a second system's span of the same command follows; a
        // late IngressDropped of seq 50 does not end that flow.
        let (hi, lo) = typhon_recorder::command_causal_id(7, 4, 50);
        typhon_recorder::ingress_received_at(Some(at(100)), 7, 50, 0, 8);
        let first = typhon_recorder::traced_span_at("first", TraceContext { hi, lo }, at(110));
        typhon_recorder::ingress_admitted_at(Some(at(110)), 7, 50, 0, 4);
        typhon_recorder::command_consumed_at(Some(at(110)), 7, 50, 1);
        first.end_at(at(120));
        typhon_recorder::ingress_dropped_at(Some(at(125)), 7, 50, IngressDropReason::QueueFull);
        let second = typhon_recorder::traced_span_at("second", TraceContext { hi, lo }, at(130));
        typhon_recorder::command_consumed_at(Some(at(135)), 7, 50, 2);
        second.end_at(at(140));
    });
    let Some(v) = read_perfetto(&dat) else { return };
    let n = |s: &str, t: i64| (s.to_string(), t);
    assert_eq!(
        flows(&v, base),
        [
            vec![
                n("IngressReceived", 20),
                n("IngressAdmitted", 30),
                n("apply", 40),
                n("CommandConsumed", 45),
                n("CommandConsumed", 47),
            ],
            vec![n("IngressAdmitted", 60), n("CommandConsumed", 70)],
            // Membership follows the stages; the order within one nanosecond is the reader's
            // (by name here).
            vec![
                n("IngressReceived", 100),
                n("CommandConsumed", 110),
                n("IngressAdmitted", 110),
                n("first", 110),
                n("second", 130),
                n("CommandConsumed", 135),
            ],
        ]
    );
    let _ = std::fs::remove_dir_all(dat.parent().unwrap());
}

/// Threads: the recorder's own slot 0 and a recording main thread (whose tid is the process
/// id) are two threads, and two threads that used one slot in turn are two threads too.
#[test]
fn every_thread_is_its_own_track() {
    let _g = doc_lock();
    let (dat, _) = record_with("threads", |_| {
        typhon_recorder::set_thread_info("main", ThreadKind::Main);
        typhon_recorder::instant(1, 1);
        for name in ["first", "second"] {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(|| typhon_recorder::instant(2, 2))
                .unwrap()
                .join()
                .unwrap();
        }
    });
    let file = TraceFile::open(&dat).unwrap();
    let t = export::Timeline::build(&file).unwrap();
    let tid = |name: &str| t.threads.iter().find(|th| th.name == name).unwrap().tid;
    // "main" (this test thread) records with its own tid; slot 0 never takes a real one, so a
    // process main thread (tid = pid) cannot collide with it.
    let main_tid = this_tid();
    assert_eq!(tid("main"), main_tid);
    assert_eq!(tid("typhon-recorder"), export::SYNTHETIC_TID);
    assert_eq!(t.pid, std::process::id() as i64);
    assert_ne!(tid("first"), tid("second"));
    assert_eq!(t.threads.len(), 4, "{:?}", t.threads);
    let mut out = Vec::new();
    t.write(Format::Chrome, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let mut named: Vec<i64> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["tid"].as_i64().unwrap())
        .collect();
    named.sort_unstable();
    named.dedup();
    assert_eq!(named.len(), 4, "one thread_name per tid");
    let _ = std::fs::remove_dir_all(dat.parent().unwrap());
}

/// This thread's id, as the recorder's ThreadInfo writes it.
fn this_tid() -> i64 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .expect("/proc/thread-self names this thread")
}

/// A file made by hand with times no recorder writes: a span whose own time is before zero
/// (it stands its duration before its page time, and is counted), a page time past i64 ns
/// (held at i64::MAX, where viewers stop), and a span whose end would pass it. Every slice
/// still begins before it ends, and both formats are written.
#[test]
fn times_out_of_range_are_placed_and_counted() {
    use typhon_recorder::codec::records::{Record, SpanExt};
    use typhon_recorder::page::PageWriter;
    use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};
    let rec = |r: Record<'_>, ts: i64| {
        let mut b = vec![0u8; 128];
        let n = r.write(&mut b, 1, ts).unwrap();
        b.truncate(n);
        b
    };
    let span = |d: i64| SpanExt {
        duration_ns: d,
        span_id: 1 << 56 | 1,
        parent_span_id: 0,
    };
    let mut w = PageWriter::new(4096).unwrap();
    let big = i64::MAX as u64;
    // (page time, record)
    let records = [
        (
            1_000,
            rec(
                Record::NamedSpan {
                    span: span(400),
                    name: "early",
                },
                -5,
            ),
        ),
        (
            2_000,
            rec(
                Record::NamedSpan {
                    span: span(i64::MAX),
                    name: "endless",
                },
                1_500,
            ),
        ),
        (
            big + 256,
            rec(
                Record::Instant {
                    name_id: 1,
                    payload: 2,
                },
                -1,
            ),
        ),
    ];
    // One page each: a page's base time is its first record's, so the third needs its own.
    let mut pages = Vec::new();
    for (page_ts, r) in &records {
        w.try_push(*page_ts, r).unwrap();
        pages.extend_from_slice(w.finish());
    }
    let mut meta = FileMeta::new(4096);
    meta.slots.push(SlotMeta {
        slot: 1,
        name: "hand".into(),
        ..Default::default()
    });
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat(&mut out, &meta, &mut [SlotPages::from_bytes(1, &pages)]).unwrap();
    let file = TraceFile::parse(out.into_inner()).unwrap();
    let t = export::Timeline::build(&file).unwrap();
    assert_eq!(t.stats().negative_times, 2, "the span and the instant");
    let begin = |name: &str| {
        let i = t
            .events
            .iter()
            .position(|e| {
                e.phase == export::Phase::Begin && export::event_name(e.rec.unwrap()) == name
            })
            .unwrap();
        (i, t.events[i].ts)
    };
    assert_eq!(
        begin("early").1,
        600,
        "its page time (end) less its duration"
    );
    assert_eq!(begin("endless").1, 1_500);
    let instant = t
        .events
        .iter()
        .find(|e| e.phase == export::Phase::Instant)
        .unwrap();
    assert_eq!(instant.ts, big, "held at i64::MAX");
    assert!(t.events.iter().all(|e| e.ts <= big));
    // Every End follows its Begin (one track here).
    let mut depth = 0i32;
    for e in &t.events {
        match e.phase {
            export::Phase::Begin => depth += 1,
            export::Phase::End => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0);
    }
    assert_eq!(depth, 0);
    for f in [Format::Perfetto, Format::Chrome] {
        t.write(f, &mut std::io::sink()).unwrap();
    }
}

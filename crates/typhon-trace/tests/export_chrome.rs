//! The Chrome JSON export on a recording of every kind the recorder writes: each argument has
//! one JSON type in all events (64-bit ids hex strings, other integers numbers), and a
//! `follows_from` link is a pair of flow events, as it is a flow in the Perfetto export.

mod common;
mod export_support;

use export_support::*;

use serde_json::Value;
use std::collections::BTreeMap;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::{bridge, doc_lock, RecorderBuilder, ThreadKind, TraceContext};
use typhon_trace::export::{self, Format};
use typhon_trace::tracedat::TraceFile;

#[test]
fn chrome_arguments_keep_one_type_and_follows_from_is_a_flow() {
    let _g = doc_lock();
    let dir = common::scratch_dir("export-chrome");
    let dat = dir.join("kinds.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    typhon_recorder::set_thread_info("game", ThreadKind::Main);
    typhon_recorder::tick_start();
    typhon_recorder::phase_start(1);
    let (a, b) = (bridge::next_key(), bridge::next_key());
    {
        let _frame = typhon_recorder::span("frame");
        bridge::span_info(b, 2, 3, "b", "app", "").unwrap();
        assert!(bridge::enter(&bridge::SpanName::new("b"), b, 2));
        bridge::exit(2);
        bridge::span_info(a, 1, 3, "a", "app", "x=1").unwrap();
        // Inside "frame", so the flow's start has a slice to bind to.
        bridge::follows(a, b);
        typhon_recorder::ingress_received(4, 9, 0, 64);
        typhon_recorder::ingress_admitted(4, 9, 0, 2);
        let (hi, lo) = typhon_recorder::command_causal_id(4, 2, 9);
        {
            let _s = typhon_recorder::traced_span("apply", TraceContext { hi, lo });
            typhon_recorder::command_consumed(4, 9, 1);
        }
        let w3c = TraceContext {
            hi: 0x0102_0304_0506_0708,
            lo: 0x1112_1314_1516_1718,
        };
        drop(typhon_recorder::traced_span("rpc", w3c));
        typhon_recorder::egress_sent(4, 2, 100, 1);
        let _ = typhon_recorder::celog_data(true, CELID_USER + 1, b"x", 0, CELZONE_MISC, 0, false);
        typhon_recorder::instant(3, -4);
    }
    typhon_recorder::phase_end(1);
    typhon_recorder::tick_end(1, 1);
    assert!(bridge::enter(&bridge::SpanName::new("a"), a, 1));
    bridge::event(a, 3, "app", "hello", "n=3").unwrap();
    bridge::exit(1);
    assert_eq!(rec.finish().unwrap().total_missed(), 0);

    let file = TraceFile::open(&dat).unwrap();
    let mut out = Vec::new();
    let s = export::export(&file, Format::Chrome, &mut out).unwrap();
    // The command and the follows_from link (the JSON draws the second only).
    assert_eq!(s.flows, 2, "{s:?}");
    let v: Value = serde_json::from_slice(&out).unwrap();
    let events = v["traceEvents"].as_array().unwrap();

    // Per argument name, the JSON types it takes across all events: one each.
    let mut types: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        for (k, x) in e["args"].as_object().into_iter().flatten() {
            let t = match x {
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "other",
            };
            let ts = types.entry(k.clone()).or_default();
            if !ts.contains(&t) {
                ts.push(t);
            }
        }
    }
    for (k, t) in &types {
        assert_eq!(t.len(), 1, "argument {k} takes the types {t:?}");
    }
    for id in [
        "span_id",
        "parent_span_id",
        "key",
        "tracing_id",
        "follows_key",
    ] {
        assert_eq!(types[id], ["string"], "{id}");
    }
    for n in [
        "session",
        "seq",
        "name_id",
        "payload",
        "command_seq",
        "level",
    ] {
        assert_eq!(types[n], ["number"], "{n}");
    }
    let hex16 = |x: &Value| {
        x.as_str()
            .and_then(|s| s.strip_prefix("0x"))
            .is_some_and(|h| h.len() == 16 && u64::from_str_radix(h, 16).is_ok())
    };
    let frame = events.iter().find(|e| e["name"] == "frame").unwrap();
    assert!(hex16(&frame["args"]["span_id"]), "{frame}");
    let link = events
        .iter()
        .find(|e| e["name"] == "follows_from" && e["ph"] == "i")
        .unwrap();
    assert_eq!(link["args"]["key"], format!("0x{a:016x}"));
    assert_eq!(link["args"]["follows_key"], format!("0x{b:016x}"));
    // No argument repeats the event: a span's name, duration and flags are not arguments.
    assert!(frame["args"].get("name").is_none() && frame["args"].get("duration_ns").is_none());

    // The flow: "s" at the link, on its thread; "f" bound to the entry of "a" that follows.
    let flow = |ph: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["cat"] == "follows_from")
            .collect()
    };
    let (start, finish) = (flow("s"), flow("f"));
    assert_eq!((start.len(), finish.len()), (1, 1), "{start:?} {finish:?}");
    assert_eq!(start[0]["id"], finish[0]["id"]);
    assert_eq!(
        (&start[0]["ts"], &start[0]["tid"]),
        (&link["ts"], &link["tid"])
    );
    let entry = events
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "a")
        .unwrap();
    assert_eq!(finish[0]["bp"], "e");
    assert_eq!(
        (&finish[0]["ts"], &finish[0]["tid"]),
        (&entry["ts"], &entry["tid"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chrome_export_is_json_with_nested_complete_slices_per_thread() {
    let _g = doc_lock();
    let dir = scratch("chrome");
    let dat = dir.join("known.dat");
    let base = record(&dat);
    let file = TraceFile::open(&dat).unwrap();
    let mut out = Vec::new();
    let stats = export::export(&file, Format::Chrome, &mut out).unwrap();
    assert_eq!((stats.slices, stats.records), (5, 20));
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
    // Slices are complete events; ts and dur are µs with three decimals (ns). On each thread
    // they nest: a slice that starts inside another ends inside it too.
    let tenths_of = |us: &Value| ((us.as_f64().unwrap() * 1000.0 - base as f64) / 100.0).round();
    let mut slices = Vec::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let tid = e["tid"].as_i64().unwrap();
        let start = tenths_of(&e["ts"]) as i64;
        match e["ph"].as_str().unwrap() {
            "X" => {
                let end = start + (e["dur"].as_f64().unwrap() * 10.0).round() as i64;
                let name = e["name"].as_str().unwrap().to_string();
                slices.push((names[&tid].to_string(), name, start, end));
            }
            "i" => assert_eq!(e["s"], "t"),
            other => panic!("unexpected phase {other}"),
        }
    }
    for a in &slices {
        for b in &slices {
            let inside = a.0 == b.0 && b.2 > a.2 && b.2 < a.3;
            assert!(!inside || b.3 <= a.3, "{b:?} overlaps {a:?} on one thread");
        }
    }
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

/// Chrome DevTools' Performance panel loads the JSON without a warning, and sees each
/// thread's slices with their names, times and nesting. (Before: "B"/"E" pairs whose "E" had no
/// name crashed it, and speedscope, which matches ends by name, overflowed its stack.)
#[test]
fn chrome_export_loads_in_the_devtools_trace_model() {
    let _g = doc_lock();
    let dir = scratch("devtools");
    let dat = dir.join("known.dat");
    let base = record(&dat);
    let (json, _) = export_to(&dat, Format::Chrome);
    let Some(modules) = devtools_modules() else {
        return;
    };
    let v = run_reader("node", "tests/js/export_devtools.mjs", &[&modules, &json]);
    assert_eq!(
        v["logged"],
        Value::Array(vec![]),
        "the model logged: {}",
        v["logged"]
    );
    assert_eq!(v["perWarning"], Value::Array(vec![]), "{}", v["perWarning"]);
    let thread = |name: &str| {
        v["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no thread {name}: {}", v["threads"]))
    };
    // (name, start, end) in tenths of a µs after the base; the model's times are µs.
    let entries = |name: &str| -> Vec<(String, i64, i64)> {
        let t = |us: &Value| ((us.as_f64().unwrap() * 1000.0 - base as f64) / 100.0).round();
        thread(name)["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let start = t(&e[1]);
                let dur = (e[2].as_f64().unwrap() * 10.0).round();
                (
                    e[0].as_str().unwrap().to_string(),
                    start as i64,
                    (start + dur) as i64,
                )
            })
            .collect()
    };
    let e = |n: &str, a: i64, b: i64| (n.to_string(), a, b);
    assert_eq!(
        entries("game"),
        [
            e("tick", 10, 100),
            e("frame", 15, 90),
            e("phase 1", 20, 80),
            e("apply", 50, 70)
        ]
    );
    assert_eq!(thread("game")["depth"], 4, "tick > frame > phase > apply");
    assert_eq!(entries("game (overlap 1)"), [e("late", 95, 120)]);
    let _ = std::fs::remove_dir_all(&dir);
}

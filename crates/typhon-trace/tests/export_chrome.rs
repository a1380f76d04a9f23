//! The Chrome JSON export on a recording of every kind the recorder writes: each argument has
//! one JSON type in all events (64-bit ids hex strings, other integers numbers), and a
//! `follows_from` link is a pair of flow events, as it is a flow in the Perfetto export.

mod common;

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
        assert!(bridge::enter("b", b, 2));
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
    assert!(bridge::enter("a", a, 1));
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

//! `TyphonLayer` end to end: a program instrumented with `tracing` (nested spans, fields at
//! creation and from `Span::record`, an event, a span entered on two threads, `follows_from`
//! and Bevy-style system spans) recorded to a trace.dat, then read back by the project's
//! reader, by `trace-cmd report` and through the Perfetto export read with Perfetto's own
//! protobuf classes (typhon-trace's tests/export_perfetto.py). The outside readers skip, saying
//! why, when absent, and fail instead with `TYPHON_REQUIRE_INTEROP=1`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::export::{self, Format};
use typhon_trace::tracedat::TraceFile;
use typhon_tracing::TyphonLayer;

fn require() -> bool {
    std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1")
}

fn skip(why: &str) {
    assert!(!require(), "TYPHON_REQUIRE_INTEROP=1 but {why}");
    eprintln!("SKIPPED: {why}");
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-tracing-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The program. Returns nothing: everything is in the file.
fn program(path: &Path) {
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    let d2 = dispatch.clone();
    std::thread::Builder::new()
        .name("game".into())
        .spawn(move || {
            tracing::dispatcher::with_default(&d2, || {
                let frame = tracing::info_span!("frame", n = 1, late = tracing::field::Empty);
                let task = tracing::info_span!("task", id = "t1");
                {
                    let _f = frame.enter();
                    tracing::info_span!("system", name = "physics").in_scope(|| {
                        tracing::info!(bodies = 3, "stepped");
                    });
                    tracing::info_span!("system", name = "render").in_scope(|| {});
                    frame.record("late", 7);
                    task.in_scope(|| {});
                }
                let b = tracing::info_span!("b");
                b.in_scope(|| {});
                let a = tracing::info_span!("a");
                a.follows_from(&b);
                // The task goes on on another thread (an async task polled elsewhere), and
                // closes back here, later: its close is written.
                let d3 = tracing::dispatcher::get_default(|d| d.clone());
                let task = std::thread::Builder::new()
                    .name("worker".into())
                    .spawn(move || {
                        tracing::dispatcher::with_default(&d3, || task.in_scope(|| {}));
                        task
                    })
                    .unwrap()
                    .join()
                    .unwrap();
                a.in_scope(|| {});
                drop(task);
            });
        })
        .unwrap()
        .join()
        .unwrap();
    drop(dispatch);
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
}

#[derive(Debug, Clone)]
struct Entry {
    slot: u32,
    ts: i64,
    dur: i64,
    id: u64,
    parent: u64,
    key: u64,
    name: String,
}

#[test]
fn layer_records_read_back_by_every_reader() {
    let _g = doc_lock();
    let dir = scratch("e2e");
    let dat = dir.join("tracing.dat");
    program(&dat);

    // --- the project's reader ---
    let file = TraceFile::open(&dat).unwrap();
    let mut entries = Vec::new();
    let mut infos: BTreeMap<u64, (String, String)> = BTreeMap::new();
    let mut events = Vec::new();
    let mut follows = Vec::new();
    for r in file.stream_records() {
        let r = r.unwrap();
        let (h, body) = records::decode(&r.data).unwrap();
        match body {
            Record::TracingSpan {
                span, key, name, ..
            } => entries.push(Entry {
                slot: r.cpu,
                ts: h.timestamp,
                dur: span.duration_ns,
                id: span.span_id,
                parent: span.parent_span_id,
                key,
                name: name.to_string(),
            }),
            Record::TracingSpanInfo {
                key, name, fields, ..
            } => {
                // The last description of a span has all its fields.
                infos.insert(key, (name.to_string(), fields.to_string()));
            }
            Record::TracingEvent {
                span_key,
                level,
                target,
                message,
                fields,
            } => events.push((
                span_key,
                level,
                target.to_string(),
                message.to_string(),
                fields.to_string(),
            )),
            Record::TracingFollows { key, follows_key } => follows.push((key, follows_key)),
            _ => {}
        }
    }
    let by = |n: &str| -> Vec<Entry> { entries.iter().filter(|e| e.name == n).cloned().collect() };
    let frame = &by("frame")[0];
    let physics = &by("system: physics")[0];
    let render = &by("system: render")[0];
    assert_eq!(by("frame").len(), 1);
    // Bevy-style systems are told apart by their `name` field, and nest in the frame.
    for s in [physics, render] {
        // Compact entries (TracingEntry): handed out with parent 0, nested by their time.
        assert!(s.parent == frame.id || s.parent == 0, "{s:?}");
        assert_eq!(s.slot, frame.slot);
        assert!(s.ts >= frame.ts && s.ts + s.dur <= frame.ts + frame.dur);
    }
    assert_ne!(physics.key, render.key);
    // Fields at creation and from Span::record, in the span's last description.
    assert_eq!(infos[&frame.key], ("frame".into(), "n=1 late=7".into()));
    assert_eq!(
        infos[&physics.key],
        ("system".into(), "name=\"physics\"".into())
    );
    // The event, in its span, with level, target, message and fields.
    assert_eq!(
        events,
        [(
            physics.key,
            3,
            "layer".into(),
            "stepped".into(),
            "bodies=3".into()
        )]
    );
    // The task entered on two threads: two entries with one key, on two slots.
    let task = by("task");
    assert_eq!(task.len(), 2, "{entries:?}");
    assert_eq!(task[0].key, task[1].key);
    assert_ne!(task[0].slot, task[1].slot);
    // Entered inside the frame on "game" (a compact entry: nested by its time).
    assert!(task[0].parent == frame.id || task[0].parent == 0);
    assert!(task[0].ts >= frame.ts && task[0].ts + task[0].dur <= frame.ts + frame.dur);
    assert_eq!(task[1].parent, 0); // top level on "worker"
    let (a, b) = (&by("a")[0], &by("b")[0]);
    assert_eq!(follows, [(a.key, b.key)]);
    assert_eq!(file.cmdline(i64::from(task[1].slot)), Some("worker"));

    // --- trace-cmd report ---
    match Command::new("trace-cmd").arg("report").arg(&dat).output() {
        Err(e) => skip(&format!("trace-cmd not run: {e}")),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            for want in [
                // An entry carries its span's key, not its name: its description has it;
                // compact (TracingEntryShort), its time and key only.
                "TracingEntryShort:",
                " key=",
                // The task, entered on two threads, says when it closed.
                "TracingCloseShort:",
                // Callsites are defined once (their strings), and the records that use
                // them print their packed ids and typed values (as hex).
                "TracingCallsite:",
                "level=3 line=44 name=frame target=layer",
                "field_names=n,late",
                // Packed: their ids and values print as bytes.
                "TracingSpanPacked:",
                " packed_len=",
                "field_names=message,bodies",
                "TracingEventPacked:",
                "TracingFollows:",
            ] {
                assert!(text.contains(want), "no {want:?} in:\n{text}");
            }
        }
    }

    // --- Perfetto, read with Perfetto's own classes ---
    let out = dat.with_extension("pftrace");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
        export::export(&file, Format::Perfetto, &mut w).unwrap();
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../typhon-trace/tests/export_perfetto.py");
    let ok = Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return skip("python3 with the perfetto package is not installed");
    }
    let run = Command::new("python3")
        .arg(&script)
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    let tracks = v["tracks"].as_object().unwrap();
    let evs = v["events"].as_array().unwrap();
    let track_name = |e: &Value| {
        tracks[&e["track"].as_u64().unwrap().to_string()]["name"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let find = |name: &str, ty: &str| -> Vec<&Value> {
        evs.iter()
            .filter(|e| e["name"] == name && e["type"] == ty)
            .collect()
    };
    // Slices by their names, on their threads, nested in time.
    let begin = |n: &str| find(n, "TYPE_SLICE_BEGIN");
    let (fb, pb) = (begin("frame")[0], begin("system: physics")[0]);
    assert_eq!(track_name(fb), "game");
    assert_eq!(track_name(pb), "game");
    assert!(pb["ts"].as_u64() >= fb["ts"].as_u64());
    assert_eq!(begin("system: render").len(), 1);
    let tasks: Vec<String> = begin("task").into_iter().map(track_name).collect();
    assert_eq!(tasks.len(), 2);
    assert!(tasks.contains(&"game".to_string()) && tasks.contains(&"worker".to_string()));
    assert_eq!(pb["args"]["key"], physics.key);
    // Fields and the event.
    let ev = find("stepped", "TYPE_INSTANT");
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["args"]["fields"], "bodies=3");
    assert_eq!(ev[0]["args"]["level_name"], "INFO");
    // A span's fields are its slices' arguments (its description is no instant of its own).
    assert!(find("new span frame", "TYPE_INSTANT").is_empty());
    assert_eq!(
        (fb["args"]["n"].as_i64(), fb["args"]["late"].as_i64()),
        (Some(1), Some(7))
    );
    // follows_from: a flow from the link to the following span's entry.
    let fl = find("follows_from", "TYPE_INSTANT");
    assert_eq!(fl.len(), 1);
    let id = fl[0]["flows"][0].as_u64().expect("the link carries a flow");
    let linked: Vec<&Value> = evs
        .iter()
        .filter(|e| {
            e["flows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_u64() == Some(id))
        })
        .collect();
    assert_eq!(linked.len(), 2);
    assert_eq!(linked[1]["name"], "a");
    assert_eq!(fl[0]["args"]["follows_key"], b.key);
}

//! What a `tracing` program wrote, in every export (issue 36 item 3): a span entered on three
//! threads, with fields of every type, one of them set later by `Span::record`, events inside
//! it, a child span and a `follows_from` link, recorded through `typhon_tracing::TyphonLayer`
//! and exported by `typhon-rec export`:
//! - Perfetto (read with Perfetto's own protobuf classes, tests/export_perfetto.py) and Chrome
//!   JSON: each entry is a slice whose args are the span's fields with their types, the
//!   recorded value included; no "new span" instant, nothing for the callsites.
//! - OTLP (read with OpenTelemetry's classes, tests/otlp_decode.py, which also checks the JSON
//!   form against the protobuf): the span is one OTLP span from its first entry to its last
//!   exit, its fields attributes, its events span events, the link a Link, the child its child.
//!
//! The outside readers skip, saying why, when absent, and fail instead with
//! `TYPHON_REQUIRE_INTEROP=1`.

mod common;

use common::rec;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record as Body};
use typhon_recorder::{RecorderBuilder, ThreadKind};
use typhon_trace::export::otlp::tracing_span_id;
use typhon_trace::tracedat::TraceFile;

fn skip(why: &str) {
    assert!(
        std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "TYPHON_REQUIRE_INTEROP=1 but {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// Runs tests/`script` of typhon-trace on `args`; `None` (skipped) without python3 or its
/// package.
fn python(script: &str, args: &[&Path]) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../typhon-trace/tests")
        .join(script);
    match Command::new("python3").arg(&script).args(args).output() {
        Ok(o) if o.status.success() => Some(serde_json::from_slice(&o.stdout).unwrap()),
        Ok(o) => {
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(e.contains("ModuleNotFoundError"), "{script:?} failed: {e}");
            skip(&format!("python3 lacks the package {script:?} needs: {e}"));
            None
        }
        Err(e) => {
            skip(&format!("python3 not run: {e}"));
            None
        }
    }
}

/// "prev" entered once on "main"; "job" (id=7, label="alpha", ratio=0.5, ok=true, neg=-3,
/// status empty) follows it and is entered once on each of "w1", "w2", "w3" in turn, with a
/// "step" event (n = 0, 1, 2) in each entry; "child" inside the first entry; `status = 200`
/// recorded during the last entry.
fn record(dir: &Path) -> PathBuf {
    let file = dir.join("tracing.dat");
    let r = RecorderBuilder::new().output(&file).start().unwrap();
    typhon_recorder::set_thread_info("main", ThreadKind::Main);
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()),
    );
    tracing::dispatcher::with_default(&dispatch, || {
        let prev = tracing::info_span!("prev");
        prev.in_scope(|| {});
        let job = tracing::info_span!(
            "job",
            id = 7u64,
            label = "alpha",
            ratio = 0.5,
            ok = true,
            neg = -3i64,
            status = tracing::field::Empty
        );
        job.follows_from(&prev);
        for i in 0..3u64 {
            std::thread::scope(|s| {
                s.spawn(|| {
                    typhon_recorder::set_thread_info(&format!("w{}", i + 1), ThreadKind::Worker);
                    tracing::dispatcher::with_default(&dispatch, || {
                        let _e = job.enter();
                        tracing::info!(n = i, "step");
                        if i == 0 {
                            tracing::debug_span!("child").in_scope(|| {});
                        }
                        if i == 2 {
                            job.record("status", 200u64);
                        }
                    });
                });
            });
        }
    });
    let stats = r.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    file
}

/// The keys of the spans, by callsite name, from the recording's descriptions.
fn keys(file: &Path) -> std::collections::BTreeMap<String, u64> {
    let f = TraceFile::open(file).unwrap();
    let mut keys = std::collections::BTreeMap::new();
    for r in f.stream_records() {
        let r = r.unwrap();
        if let Ok((_, Body::TracingSpanInfo { key, name, .. })) = records::decode(&r.data) {
            keys.insert(name.to_string(), key);
        }
    }
    keys
}

fn export(file: &Path, format: &str, ext: &str) -> PathBuf {
    let out = file.with_extension(ext);
    let (ok, _, err) = rec(&[
        "export",
        file.to_str().unwrap(),
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "export --format {format}: {err}");
    out
}

/// The fields every "job" slice carries, as a reader decodes them.
fn job_fields_match(args: &Value, what: &str) {
    assert_eq!(args["id"], 7, "{what}: {args}");
    assert_eq!(args["label"], "alpha", "{what}");
    assert_eq!(args["ratio"], 0.5, "{what}");
    assert_eq!(args["ok"], true, "{what}");
    assert_eq!(args["neg"], -3, "{what}");
    assert_eq!(args["status"], 200, "{what}: the recorded value");
}

#[test]
fn tracing_spans_fields_events_and_links_in_perfetto_chrome_and_otlp() {
    let dir = common::tmp("export-tracing");
    let file = record(&dir);
    let keys = keys(&file);
    assert_eq!(keys.len(), 3, "{keys:?}");

    // --- Chrome JSON ---
    let json = export(&file, "chrome", "json");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let evs: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .collect();
    // (The recorder's own session markers, CeLog 0x1ffe and 0x1fff, left aside.)
    let names = |ph: &str| {
        let mut n: Vec<&str> = evs
            .iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["name"].as_str().unwrap())
            .filter(|n| !n.starts_with("CeLog 0x1ff"))
            .collect();
        n.sort();
        n
    };
    assert_eq!(names("X"), ["child", "job", "job", "job", "prev"]);
    assert_eq!(names("i"), ["follows_from", "step", "step", "step"]);
    for e in evs.iter().filter(|e| e["name"] == "job") {
        job_fields_match(&e["args"], "chrome");
    }

    // The in-memory timeline writes the same fields (Timeline::build, then chrome::write).
    let tf = TraceFile::open(&file).unwrap();
    let t = typhon_trace::export::Timeline::build(&tf).unwrap();
    let mut out = Vec::new();
    typhon_trace::export::chrome::write(&t, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let jobs: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "job")
        .collect();
    assert_eq!(jobs.len(), 3);
    for e in jobs {
        job_fields_match(&e["args"], "timeline");
    }

    // --- Perfetto, read with Perfetto's classes ---
    let pf = export(&file, "perfetto", "pftrace");
    if let Some(v) = python("export_perfetto.py", &[&pf]) {
        let evs = v["events"].as_array().unwrap();
        let names = |ty: &str| {
            let mut n: Vec<&str> = evs
                .iter()
                .filter(|e| e["type"] == ty)
                .map(|e| e["name"].as_str().unwrap())
                .filter(|n| !n.starts_with("CeLog 0x1ff"))
                .collect();
            n.sort();
            n
        };
        assert_eq!(
            names("TYPE_SLICE_BEGIN"),
            ["child", "job", "job", "job", "prev"]
        );
        assert_eq!(names("TYPE_SLICE_END").len(), 5);
        assert_eq!(
            names("TYPE_INSTANT"),
            ["follows_from", "step", "step", "step"]
        );
        let jobs: Vec<&Value> = evs.iter().filter(|e| e["name"] == "job").collect();
        assert_eq!(jobs.len(), 3);
        for e in jobs {
            job_fields_match(&e["args"], "perfetto");
        }
    }

    // --- OTLP: every record counted once, and where it went ---
    let f = TraceFile::open_streaming(&file).unwrap();
    let o = typhon_trace::export::otlp::OtlpOptions::new("t");
    let st = typhon_trace::export::otlp::write(&f, &o, false, &mut Vec::new()).unwrap();
    assert_eq!(
        st.records,
        st.spans
            + st.correlation
            + st.thread_infos
            + st.definitions
            + st.tracing_entries
            + st.tracing_descriptions
            + st.tracing_events
            + st.tracing_links
            + st.tracing_closes
            + st.left_out,
        "{st:?}"
    );
    // job, entered on three threads, closes on "main": its close is written.
    assert_eq!(st.tracing_closes, 1, "{st:?}");
    // 5 entries (prev, job 3 times, child), 4 descriptions (job's again for its record), 3
    // events, 1 link, 4 callsites (3 spans, 1 event); 3 spans with 3 events between them.
    assert_eq!(
        (
            st.tracing_entries,
            st.tracing_descriptions,
            st.tracing_events
        ),
        (5, 4, 3)
    );
    assert_eq!((st.tracing_links, st.definitions, st.spans), (1, 4, 0));
    assert_eq!((st.tracing_spans, st.spans_written, st.events), (3, 3, 3));
    assert_eq!(
        (st.tracing_late, st.tracing_unentered, st.orphans),
        (0, 0, 0)
    );

    // --- OTLP, read with OpenTelemetry's classes ---
    let pb = export(&file, "otlp", "otlp.pb");
    let oj = export(&file, "otlp-json", "otlp.json");
    let Some(v) = python("otlp_decode.py", &[&pb, &oj]) else {
        return;
    };
    let spans = v["spans"].as_array().unwrap();
    assert_eq!(v["json_checked"], 3);
    let mut names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["child", "job", "prev"],
        "one span each, not one per entry"
    );
    let by = |n: &str| spans.iter().find(|s| s["name"] == n).unwrap();
    let hex = |id: u64| format!("{:016x}", tracing_span_id(id));
    let (job, child, prev) = (by("job"), by("child"), by("prev"));
    assert_eq!(job["span_id"], hex(keys["job"]));
    assert_eq!(child["span_id"], hex(keys["child"]));
    assert_eq!(prev["span_id"], hex(keys["prev"]));
    // job and prev are roots of local traces named after their ids; child is job's child.
    assert_eq!(job["parent_span_id"], "");
    assert_eq!(prev["parent_span_id"], "");
    assert!(job["trace_id"]
        .as_str()
        .unwrap()
        .ends_with(&hex(keys["job"])));
    assert!(prev["trace_id"]
        .as_str()
        .unwrap()
        .ends_with(&hex(keys["prev"])));
    assert_eq!(child["parent_span_id"], job["span_id"]);
    assert_eq!(child["trace_id"], job["trace_id"]);
    // Fields as attributes with their types (the decoder keeps Python's types: 0.5 a double,
    // true a bool, 7 an int), the recorded one included.
    let a = &job["attributes"];
    job_fields_match(a, "otlp");
    assert!(a["ratio"].is_f64() && a["ok"].is_boolean() && a["id"].is_i64());
    assert_eq!(a["level"], "INFO");
    assert_eq!(a["target"], "export_tracing");
    assert_eq!(a["typhon.entries"], 3);
    assert_eq!(a["thread.name"], "w1", "the first entry's thread");
    assert_eq!(child["attributes"]["level"], "DEBUG");
    // From the first entry's start to the last one's end.
    assert!(job["start"].as_u64() < child["start"].as_u64());
    assert!(job["end"].as_u64().unwrap() - job["start"].as_u64().unwrap() >= 3 * 1000);
    // The events: in time order, with their fields; on another thread than w1, its name.
    let events = job["events"].as_array().unwrap();
    assert_eq!(events.len(), 3);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["name"], "step");
        assert_eq!(e["attributes"]["n"], i);
        assert_eq!(e["attributes"]["level"], "INFO");
        let t = e["time"].as_u64().unwrap();
        assert!(t >= job["start"].as_u64().unwrap() && t <= job["end"].as_u64().unwrap());
        if i == 0 {
            assert!(e["attributes"].get("thread.name").is_none(), "{e}");
        } else {
            assert_eq!(e["attributes"]["thread.name"], format!("w{}", i + 1));
        }
    }
    // follows_from: a Link to prev, in prev's trace.
    assert_eq!(
        job["links"],
        serde_json::json!([{"trace_id": prev["trace_id"], "span_id": prev["span_id"]}])
    );
    for s in [child, prev] {
        assert_eq!(s["events"].as_array().unwrap().len(), 0);
        assert_eq!(s["links"].as_array().unwrap().len(), 0);
        assert_eq!(s["attributes"]["typhon.entries"], 1);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

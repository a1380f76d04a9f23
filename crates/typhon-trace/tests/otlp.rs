//! `typhon_trace::export::otlp` end to end: a recording with known spans and commands, exported
//! as OTLP protobuf and JSON, read back by the official OpenTelemetry classes (PyPI
//! `opentelemetry-proto`, tests/otlp_decode.py, which also checks the JSON against the
//! protobuf with its own hex decoding of the ids), and every span, event, id and time compared
//! with what this crate's reader finds in the recording. Without python3 and the package the
//! test says it skips, unless `TYPHON_REQUIRE_INTEROP=1`, which makes that a failure.

mod common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::codec::records::{self, Record as Body};
use typhon_recorder::{doc_lock, IngressDropReason, RecorderBuilder, ThreadKind, TraceContext};
use typhon_trace::export::otlp::{self, OtlpOptions};
use typhon_trace::export::Format;
use typhon_trace::tracedat::TraceFile;

const W3C: [u8; 16] = [
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36,
];

/// Thread "net": IngressReceived 7/42 at 3 µs, 7/43 at 3.5 µs, IngressDropped 7/43 at 3.6 µs,
/// IngressAdmitted 7/42 (drain tick 3) at 4 µs, EgressSent 7 tick 3 at 13 µs.
/// Thread "game": tick 1–10 µs; span "frame" 1.5–9 µs holding the traced span "apply"
/// (command 7/3/42) 5–7 µs, which holds span "validate" 5.5–6.5 µs with CommandConsumed 42
/// at 6 µs, and the traced span "http" (a W3C trace) 7.5–8.5 µs; span "late" 9.5–12 µs;
/// an Instant at 11 µs.
fn record(path: &Path) {
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    let base = typhon_recorder::clock::monotonic_ns() + 1_000_000;
    let at = |us_tenths: u64| rec.ns_to_ticks(base + us_tenths * 100);
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
    let (hi, lo) = typhon_recorder::command_causal_id(7, 3, 42);
    let apply = typhon_recorder::traced_span_at("apply", TraceContext { hi, lo }, at(50));
    let validate = typhon_recorder::span_at("validate", at(55));
    typhon_recorder::command_consumed_at(Some(at(60)), 7, 42, 2);
    validate.end_at(at(65));
    apply.end_at(at(70));
    let http = typhon_recorder::traced_span_at("http", TraceContext::from_w3c_bytes(W3C), at(75));
    http.end_at(at(85));
    frame.end_at(at(90));
    let late = typhon_recorder::span_at("late", at(95));
    typhon_recorder::tick_end_at(at(100), 2, 1);
    typhon_recorder::instant_at(at(110), 5, 6);
    late.end_at(at(120));
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
}

fn reader_available() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!("TYPHON_REQUIRE_INTEROP=1 but python3 cannot import opentelemetry.proto");
        }
        eprintln!(
            "SKIPPED: python3 with the opentelemetry-proto package (pip install \
             opentelemetry-proto protobuf) is not available; set TYPHON_REQUIRE_INTEROP=1 to \
             fail instead"
        );
    }
    ok
}

/// What tests/otlp_decode.py decodes from `pb` (and checks in `json`).
fn decode(pb: &Path, json: &Path) -> Value {
    let run = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_decode.py"))
        .args([pb, json])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "otlp_decode.py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

fn export(dat: &Path, json: bool, o: &OtlpOptions) -> (PathBuf, otlp::OtlpStats) {
    let f = TraceFile::open_streaming(dat).unwrap();
    let out = dat.with_extension(if json { "otlp.json" } else { "otlp.pb" });
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let s = otlp::write(&f, o, json, &mut w).unwrap();
    (out, s)
}

/// What our reader finds: per span id (name, start, end as UNIX ns, thread name), and the
/// correlation instants (kind name, UNIX ns).
struct Expected {
    spans: BTreeMap<u64, (String, u64, u64, String)>,
    instants: Vec<(String, u64)>,
}

fn expected(dat: &Path) -> Expected {
    let f = TraceFile::open(dat).unwrap();
    let m = f.typhon_meta().unwrap().unwrap();
    assert!(m.wall_anchor_ns > 0 && m.mono_anchor_ns > 0);
    let (wall, mono) = (m.wall_anchor_ns, m.mono_anchor_ns);
    let unix = move |ts: u64| (wall as i128 + ts as i128 - mono as i128) as u64;
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    let mut e = Expected {
        spans: BTreeMap::new(),
        instants: Vec::new(),
    };
    for r in f.records() {
        let r = r.unwrap();
        let (h, b) = records::decode(r.data).unwrap();
        let ts = h.timestamp as u64;
        match b {
            Body::ThreadInfo { name, .. } => {
                names.insert(r.cpu, name.to_string());
            }
            Body::NamedSpan { span, name } | Body::TracedSpan { span, name, .. } => {
                let end = ts + span.duration_ns as u64;
                let th = names[&r.cpu].clone();
                e.spans
                    .insert(span.span_id, (name.into(), unix(ts), unix(end), th));
            }
            Body::Correlation(_) => {
                let kind = typhon_trace::export::event_name(r.data).into_owned();
                e.instants.push((kind, unix(ts)));
            }
            _ => {}
        }
    }
    e
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn by_name<'v>(spans: &'v [Value], name: &str) -> &'v Value {
    let v: Vec<&Value> = spans.iter().filter(|s| s["name"] == name).collect();
    assert_eq!(v.len(), 1, "one span named {name}");
    v[0]
}

#[test]
fn the_official_classes_decode_every_span_event_id_and_time_of_the_recording() {
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-decode");
    let dat = dir.join("run.dat");
    record(&dat);
    let mut o = OtlpOptions::new("test-svc");
    o.host = "test-host".into();
    o.recording = dat.display().to_string();
    o.batch = 3;
    let (pb, s) = export(&dat, false, &o);
    let (json, sj) = export(&dat, true, &o);
    assert_eq!(s, sj);
    // Every record counted once; 5 recorded spans, 2 command roots, 6 instants as events.
    assert_eq!(
        s.records,
        s.spans + s.correlation + s.thread_infos + s.left_out
    );
    assert_eq!((s.spans, s.commands, s.correlation), (5, 2, 5 + 1));
    assert_eq!((s.spans_written, s.events, s.batches), (7, 6, 3));
    assert_eq!(
        (s.commands_dropped, s.egress_unjoined, s.orphans, s.split),
        (1, 0, 0, 0)
    );
    assert!(s.left_out >= 3, "tick start, tick end, instant: {s:?}");
    if !reader_available() {
        return;
    }
    let v = decode(&pb, &json);
    let spans = v["spans"].as_array().unwrap();
    assert_eq!(v["json_checked"], 7);
    assert_eq!(spans.len(), 7);
    // One resource per batch, all the same.
    for r in v["resources"].as_array().unwrap() {
        assert_eq!(r["service.name"], "test-svc");
        assert_eq!(r["host.name"], "test-host");
        assert_eq!(r["process.pid"], std::process::id());
        assert_eq!(r["typhon.recording.path"], dat.display().to_string());
    }
    assert_eq!(v["scopes"][0]["name"], "typhon-recorder");

    // Every span record: its id, name, times and thread.
    let e = expected(&dat);
    assert_eq!(e.spans.len(), 5);
    for (id, (name, start, end, thread)) in &e.spans {
        let got: Vec<&Value> = spans
            .iter()
            .filter(|s| s["span_id"] == hex(&id.to_be_bytes()))
            .collect();
        assert_eq!(got.len(), 1, "span {name}");
        let g = got[0];
        assert_eq!(g["name"], name.as_str());
        assert_eq!(g["start"], *start, "{name}");
        assert_eq!(g["end"], *end, "{name}");
        assert_eq!(g["kind"], 1, "INTERNAL");
        assert_eq!(g["attributes"]["thread.name"], thread.as_str());
        assert!(g["attributes"]["thread.id"].as_i64().unwrap() > 0);
    }
    // Every correlation instant exactly once, as an event of a command's root.
    let mut events: Vec<(String, u64)> = spans
        .iter()
        .flat_map(|s| s["events"].as_array().unwrap())
        .map(|ev| {
            (
                ev["name"].as_str().unwrap().to_string(),
                ev["time"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut instants = e.instants.clone();
    events.sort();
    instants.sort();
    assert_eq!(events, instants);

    // The structure: the command's trace is its causal id; its root holds its instants.
    let id = |n: &str| by_name(spans, n)["span_id"].as_str().unwrap().to_string();
    let cmd_trace = "5459430000000007000000000003002a";
    let root = by_name(spans, "command 7/42");
    assert_eq!(root["trace_id"], cmd_trace);
    assert_eq!(root["span_id"], "008000000007002a");
    assert_eq!(root["parent_span_id"], "");
    assert_eq!(root["kind"], 2, "SERVER");
    let names: Vec<&str> = root["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "IngressReceived",
            "IngressAdmitted",
            "CommandConsumed",
            "EgressSent"
        ]
    );
    // The root's thread is the first event's; an event on another thread names its own.
    assert_eq!(root["attributes"]["thread.name"], "net");
    assert!(root["events"][0]["attributes"].get("thread.name").is_none());
    assert!(root["events"][0]["attributes"].get("session").is_none());
    assert_eq!(root["events"][0]["attributes"]["wire_idx"], 0);
    assert_eq!(root["events"][2]["attributes"]["thread.name"], "game");
    assert_eq!(root["events"][2]["attributes"]["sys_idx"], 2);
    assert_eq!(root["start"], instant(&e, "IngressReceived"));
    assert_eq!(root["end"], instant(&e, "EgressSent"));
    assert_eq!(root["attributes"]["typhon.drain_tick"], 3);
    assert_eq!(root["attributes"]["typhon.command.state"], "consumed");
    assert_eq!(root["status"]["code"], 0);
    let apply = by_name(spans, "apply");
    assert_eq!(apply["trace_id"], cmd_trace);
    assert_eq!(apply["parent_span_id"], "008000000007002a");
    assert_eq!(
        apply["attributes"]["typhon.recorded_parent_span_id"],
        id("frame").as_str()
    );
    let validate = by_name(spans, "validate");
    assert_eq!(validate["trace_id"], cmd_trace);
    assert_eq!(validate["parent_span_id"], id("apply").as_str());
    // The dropped command: its own trace (no drain tick), status ERROR with the reason.
    let dropped = by_name(spans, "command 7/43");
    assert_eq!(dropped["trace_id"], "54594300000000070000ffffffff002b");
    assert_eq!(dropped["status"]["code"], 2, "ERROR");
    assert_eq!(dropped["status"]["message"], "IngressDropped: QueueFull");
    assert_eq!(dropped["attributes"]["typhon.command.state"], "dropped");
    assert_eq!(dropped["events"].as_array().unwrap().len(), 2);
    // A W3C trace id is the span's trace, as its canonical bytes.
    let http = by_name(spans, "http");
    assert_eq!(http["trace_id"], hex(&W3C));
    assert_eq!(http["parent_span_id"], "");
    // Top-level spans: a local trace each, holding their subtree.
    let frame = by_name(spans, "frame");
    let late = by_name(spans, "late");
    assert_ne!(frame["trace_id"], late["trace_id"]);
    assert!(frame["trace_id"].as_str().unwrap().ends_with(&id("frame")));
    assert_eq!(frame["parent_span_id"], "");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_export_dispatch_writes_the_same_request_as_otlp_write() {
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-dispatch");
    let dat = dir.join("run.dat");
    record(&dat);
    let f = TraceFile::open(&dat).unwrap();
    for (format, json) in [(Format::Otlp, false), (Format::OtlpJson, true)] {
        let mut a = Vec::new();
        let s = typhon_trace::export::export(&f, format, &mut a).unwrap();
        let mut b = Vec::new();
        let o = otlp::write(&f, &OtlpOptions::new("typhon-recorder"), json, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            (s.records, s.slices, s.instants),
            (o.records, o.spans_written, o.events)
        );
    }
    assert_eq!("otlp-json".parse::<Format>(), Ok(Format::OtlpJson));
    assert_eq!(Format::Otlp.extension(), "otlp.pb");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The UNIX time of the first correlation instant named `name`.
fn instant(e: &Expected, name: &str) -> u64 {
    e.instants.iter().find(|i| i.0 == name).unwrap().1
}

/// `n` commands (received, admitted, a traced span holding a span and the consumption, the
/// egress) and `n` frames of three nested spans each, on one thread.
fn record_load(path: &Path, n: u32) {
    let rec = RecorderBuilder::new()
        .output(path)
        .ring_bytes(16 << 20)
        .start()
        .unwrap();
    assert!(typhon_recorder::register_thread());
    for i in 0..n {
        let (session, seq) = (i % 8, i as u16);
        typhon_recorder::ingress_received(session, seq, 0, 64);
        typhon_recorder::ingress_admitted(session, seq, 0, i);
        {
            let _a =
                typhon_recorder::traced_span("apply", TraceContext::from_command(session, i, seq));
            let _v = typhon_recorder::span("validate");
            typhon_recorder::command_consumed(session, seq, 1);
        }
        typhon_recorder::egress_sent(session, i, 100, 1);
        let _f = typhon_recorder::span("frame");
        let _g = typhon_recorder::span("simulate");
        let _h = typhon_recorder::span("step");
    }
    let s = rec.finish().unwrap();
    assert_eq!(s.total_missed(), 0);
}

#[test]
fn memory_holds_what_is_open_not_the_recording() {
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-bounded");
    let mut runs = Vec::new();
    for n in [1000u32, 4000] {
        let dat = dir.join(format!("load-{n}.dat"));
        record_load(&dat, n);
        let (_, s) = export(&dat, false, &OtlpOptions::new("load"));
        assert_eq!(s.spans_written, u64::from(n) * 6, "{s:?}");
        assert_eq!(s.events, u64::from(n) * 4);
        assert_eq!((s.orphans, s.split, s.egress_unjoined), (0, 0, 0));
        runs.push(s);
    }
    // Four times the recording, the same open work: a frame's two children, one command.
    assert_eq!(runs[0].peak_waiting, runs[1].peak_waiting);
    assert_eq!(runs[0].peak_commands, runs[1].peak_commands);
    assert!(
        runs[1].peak_waiting <= 2 && runs[1].peak_commands <= 1,
        "{:?}",
        runs[1]
    );
}

/// `n` `tracing` requests in turn, each described with the `tracing` id 1 (the Registry gives a
/// closed span's id to the next), entered once with an event inside, 1 ms apart.
fn record_tracing_load(path: &Path, n: u32) {
    use typhon_recorder::bridge;
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    let name = bridge::SpanName::new("req");
    for i in 0..n {
        let key = bridge::next_key();
        bridge::span_info(key, 1, 3, "req", "app", &format!("i={i}")).unwrap();
        assert!(bridge::enter(&name, key, 1));
        bridge::event(key, 3, "app", "done", "").unwrap();
        bridge::exit(1);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(rec.finish().unwrap().total_missed(), 0);
}

/// A `tracing` span is over once the Registry hands its id to a new span (and the records of
/// its time have passed): the spans held open are those of the last 50 ms, not the recording's.
#[test]
fn tracing_spans_held_are_the_open_ones_not_the_recording() {
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-tracing-bounded");
    let mut peaks = Vec::new();
    for n in [250u32, 1000] {
        let dat = dir.join(format!("tracing-{n}.dat"));
        record_tracing_load(&dat, n);
        let (_, s) = export(&dat, false, &OtlpOptions::new("load"));
        let n = u64::from(n);
        assert_eq!(
            (s.tracing_spans, s.spans_written, s.events),
            (n, n, n),
            "{s:?}"
        );
        assert_eq!((s.tracing_late, s.orphans, s.split), (0, 0, 0), "{s:?}");
        peaks.push(s.peak_tracing_open);
    }
    // Four times the recording, about the same open work (50 ms of 1 ms requests).
    assert!(
        peaks[1] <= 2 * peaks[0] && peaks[1] * 4 <= 1000,
        "peak open tracing spans {peaks:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A span never entered is no OTLP span, and its event and link are counted as left out; an
/// event outside any span too. Every record is counted once.
#[test]
fn a_tracing_span_never_entered_is_counted_with_what_it_held() {
    use typhon_recorder::bridge;
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-unentered");
    let dat = dir.join("unentered.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let (a, b) = (bridge::next_key(), bridge::next_key());
    bridge::span_info(a, 1, 3, "idle", "app", "x=1").unwrap();
    bridge::span_info(b, 2, 3, "used", "app", "").unwrap();
    bridge::event(a, 3, "app", "in idle", "").unwrap();
    bridge::event(0, 3, "app", "outside", "").unwrap();
    bridge::follows(a, b);
    assert!(bridge::enter(&bridge::SpanName::new("used"), b, 2));
    bridge::exit(2);
    assert_eq!(rec.finish().unwrap().total_missed(), 0);
    let (_, s) = export(&dat, false, &OtlpOptions::new("t"));
    assert_eq!(
        s.records,
        s.spans
            + s.correlation
            + s.thread_infos
            + s.definitions
            + s.tracing_entries
            + s.tracing_descriptions
            + s.tracing_events
            + s.tracing_links
            + s.tracing_closes
            + s.left_out,
        "{s:?}"
    );
    assert_eq!((s.tracing_spans, s.tracing_unentered), (1, 1), "{s:?}");
    assert_eq!(
        (s.tracing_events, s.tracing_links, s.events),
        (0, 0, 0),
        "{s:?}"
    );
    assert_eq!((s.tracing_descriptions, s.tracing_entries), (2, 1), "{s:?}");
    assert!(s.left_out >= 3, "the two events and the link: {s:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An async task's span as `TyphonLayer` writes it (issue 36): described against its callsite
/// with its `tracing` parent's key (the request, current where it was created), entered on
/// thread "game" inside the request's entry, again on thread "worker" (where nothing encloses
/// it), and closed 30 ms after its last exit. Both entries are compact (TracingEntry). The
/// official classes read one OTLP span for it: the request's child in the request's trace, from
/// its first enter to its close, with its field as an attribute, its event as a span event
/// and its `follows_from` as a Link.
#[test]
fn an_async_span_entered_on_two_threads_is_one_span_from_its_first_enter_to_its_close() {
    use std::time::Duration;
    use typhon_recorder::bridge;
    use typhon_recorder::codec::records::{put_entry, Callsite, Value as V};
    if !reader_available() {
        return;
    }
    let _g = doc_lock();
    let dir = common::scratch_dir("otlp-async");
    let dat = dir.join("async.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let site = |name: &'static str, field_names: &'static str| {
        let c = Callsite {
            id: bridge::next_callsite_id(),
            level: 3,
            line: 1,
            name,
            target: "app",
            file: "main.rs",
            field_names,
        };
        assert!(bridge::callsite(&c));
        c.id
    };
    let (req_cs, task_cs, ev_cs, other_cs) = (
        site("request", ""),
        site("task", "n"),
        site("event", "message"),
        site("other", ""),
    );
    let (req, task, other) = (bridge::next_key(), bridge::next_key(), bridge::next_key());
    let empty = bridge::SpanName::new("");
    bridge::span_values(other, 0, other_cs, &[]).unwrap();
    assert!(bridge::enter(&empty, other, 9));
    bridge::exit(9);
    bridge::span_values(req, 0, req_cs, &[]).unwrap();
    assert!(bridge::enter(&empty, req, 1));
    let mut v = Vec::new();
    put_entry(&mut v, 0, V::I64(7));
    bridge::span_values(task, req, task_cs, &v).unwrap();
    bridge::follows(task, other);
    assert!(bridge::enter(&empty, task, 2));
    std::thread::sleep(Duration::from_millis(2));
    bridge::exit(2);
    bridge::exit(1);
    std::thread::Builder::new()
        .name("worker".into())
        .spawn(move || {
            let empty = bridge::SpanName::new("");
            assert!(bridge::enter(&empty, task, 2));
            let mut v = Vec::new();
            put_entry(&mut v, 0, V::Str("polled"));
            bridge::event_values(task, ev_cs, &v).unwrap();
            std::thread::sleep(Duration::from_millis(2));
            bridge::exit(2);
        })
        .unwrap()
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(30));
    bridge::close(task);
    assert_eq!(rec.finish().unwrap().total_missed(), 0);

    // Both entries of the task are compact; the close is recorded.
    let f = TraceFile::open(&dat).unwrap();
    let raw: Vec<Vec<u8>> = (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap().data).collect::<Vec<_>>())
        .collect();
    let count =
        |k: typhon_recorder::codec::TraceEventKind| raw.iter().filter(|d| d[2] == k.0).count();
    use typhon_recorder::codec::TraceEventKind as K;
    assert_eq!(
        (count(K::TRACING_ENTRY_SHORT), count(K::TRACING_SPAN)),
        (4, 0)
    );
    assert_eq!(count(K::TRACING_CLOSE_SHORT), 1);

    let (pb, s) = export(&dat, false, &OtlpOptions::new("async"));
    let (json, _) = export(&dat, true, &OtlpOptions::new("async"));
    assert_eq!(
        (s.tracing_spans, s.tracing_entries, s.tracing_closes),
        (3, 4, 1),
        "{s:?}"
    );
    assert_eq!((s.orphans, s.split, s.tracing_late), (0, 0, 0), "{s:?}");
    let v = decode(&pb, &json);
    let spans = v["spans"].as_array().unwrap();
    let named = |n: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == n).collect() };
    assert_eq!(
        named("task").len(),
        1,
        "one span for both entries: {spans:#?}"
    );
    let (t, r, o) = (named("task")[0], named("request")[0], named("other")[0]);
    assert_eq!(
        t["parent_span_id"], r["span_id"],
        "the recorded tracing parent"
    );
    assert_eq!(t["trace_id"], r["trace_id"]);
    assert_eq!(r["parent_span_id"], "", "the request is a root");
    assert_eq!(
        t["span_id"].as_str().unwrap(),
        format!("{:016x}", otlp::tracing_span_id(task))
    );
    let (start, end) = (t["start"].as_u64().unwrap(), t["end"].as_u64().unwrap());
    let a = &t["attributes"];
    assert_eq!(
        (a["typhon.entries"].as_u64(), a["n"].as_i64()),
        (Some(2), Some(7))
    );
    let busy = a["typhon.busy_ns"].as_u64().unwrap();
    // From its first enter (inside the request's entry) to its close, 30 ms after its last
    // exit: not to that exit.
    assert!(start >= r["start"].as_u64().unwrap() && start <= r["end"].as_u64().unwrap());
    assert!(
        end - start >= busy + 30_000_000,
        "{start} {end} busy {busy}"
    );
    let ev = &t["events"].as_array().unwrap()[0];
    assert_eq!(ev["name"], "polled");
    assert_eq!(ev["attributes"]["thread.name"], "worker");
    let links = t["links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["span_id"], o["span_id"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Callsites defined once (SPEC §15): a recording made through the layer reads back as one
//! made before definitions existed (a file of that format is kept in
//! `typhon-trace/tests/data/tracing-v1.dat`), in fewer bytes, and a record whose definition is
//! in another slot, even one read after it, is resolved. Span entries carry no name: readers
//! take it from the span's description (a file from before that, the callsite format of
//! `tracing-v2.dat`, still reads the same), and are compact TracingEntry records.

mod common;

use std::path::Path;
use tracing_subscriber::prelude::*;
use typhon_recorder::bridge;
use typhon_recorder::codec::records::{self, Callsite, Record, Value};
use typhon_recorder::codec::TraceEventKind as K;
use typhon_recorder::RecorderBuilder;
use typhon_trace::tracedat::TraceFile;

/// The program `tracing-v1.dat` was recorded from (before §15), as it was.
fn program() {
    for i in 0..3u64 {
        let req = tracing::info_span!("request", method = "GET", uri = "/users/7", n = i);
        {
            let _e = req.enter();
            let h = tracing::debug_span!(target: "app::handler", "handler", user = 7i64, ok = true, ratio = 0.5f64);
            h.in_scope(|| {
                tracing::info!(status = 200u64, latency_us = 31i64, "finished {}", i);
            });
            h.record("ok", false);
            tracing::warn!(who = ?("a", 1), "slow");
        }
        let _e = req.enter();
        let sys = tracing::info_span!("system", name = "physics");
        sys.in_scope(|| tracing::error!("bad"));
    }
}

/// What the program's recording holds, keys left out: span descriptions (name, fields),
/// events (message, fields) and entries (names), each in the file's order.
type Seen = (Vec<(String, String)>, Vec<(String, String)>, Vec<String>);

fn seen(path: &Path) -> Seen {
    let r = common::read(path);
    (
        r.infos
            .iter()
            .map(|(_, n, f)| (n.clone(), f.clone()))
            .collect(),
        r.events
            .iter()
            .map(|(_, m, f)| (m.clone(), f.clone()))
            .collect(),
        r.entries.iter().map(|e| e.name.clone()).collect(),
    )
}

fn expected() -> Seen {
    let (mut infos, mut events, mut entries) = (vec![], vec![], vec![]);
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    for i in 0..3 {
        infos.push(s(
            "request",
            &format!("method=\"GET\" uri=\"/users/7\" n={i}"),
        ));
        infos.push(s("handler", "user=7 ok=true ratio=0.5"));
        infos.push(s("handler", "user=7 ok=false ratio=0.5"));
        infos.push(s("system", "name=\"physics\""));
        events.push(s(&format!("finished {i}"), "status=200 latency_us=31"));
        events.push(s("slow", "who=(\"a\", 1)"));
        events.push(s("bad", ""));
        entries.extend(["handler", "request", "system: physics", "request"].map(String::from));
    }
    (infos, events, entries)
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../typhon-trace/tests/data/tracing-v1.dat")
}

/// The same program recorded with callsites defined but the names in every entry (`736f557`).
fn fixture_v2() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../typhon-trace/tests/data/tracing-v2.dat")
}

/// The names of the TracingSpan records of `path`, as written.
fn raw_entry_names(path: &Path) -> Vec<String> {
    let f = TraceFile::open(path).unwrap();
    (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap()).collect::<Vec<_>>())
        .filter_map(|r| match records::decode(&r.data).unwrap().1 {
            Record::TracingSpan { name, .. } => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// Bytes of the records of each kind in `path`, as written (not resolved).
fn raw_bytes(path: &Path, kinds: &[K]) -> usize {
    let f = TraceFile::open(path).unwrap();
    (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap()).collect::<Vec<_>>())
        .filter(|r| kinds.iter().any(|k| r.data[2] == k.0))
        .map(|r| r.data.len())
        .sum()
}

#[test]
fn a_file_from_before_definitions_reads_as_it_did() {
    assert_eq!(seen(&fixture()), expected());
}

#[test]
fn a_file_with_names_in_its_entries_reads_as_it_did() {
    assert_eq!(seen(&fixture_v2()), expected());
    assert!(raw_entry_names(&fixture_v2()).iter().all(|n| !n.is_empty()));
}

#[test]
fn a_recording_with_definitions_reads_as_one_without_in_fewer_bytes() {
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch("defs-same");
    let dat = dir.join("new.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let subscriber = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
    tracing::subscriber::with_default(subscriber, program);
    rec.finish().unwrap();
    assert_eq!(seen(&dat), expected());
    assert_eq!(seen(&dat), seen(&fixture()));
    // Its entries are compact TracingEntryShort records, 20 bytes each, with no name, ids or
    // parent (the readers above gave them theirs), in half the bytes or less of the same
    // entries with their names. The request span, entered twice, closes right after its last
    // exit, which ends it: no close is written.
    assert!(raw_entry_names(&dat).is_empty());
    let entries = raw_bytes(
        &dat,
        &[K::TRACING_ENTRY_SHORT, K::TRACING_ENTRY, K::TRACING_SPAN],
    );
    assert_eq!(entries, 12 * 20);
    let named = raw_bytes(&fixture_v2(), &[K::TRACING_SPAN]);
    assert!(2 * entries <= named, "{entries} B against {named} B named");
    assert_eq!(
        raw_bytes(&dat, &[K::TRACING_CLOSE, K::TRACING_CLOSE_SHORT]),
        0
    );
    // Written as definitions and typed values: 6 callsites, and none of the old records.
    let old = [K::TRACING_SPAN_INFO, K::TRACING_EVENT];
    let f = TraceFile::open(&dat).unwrap();
    let defs = (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap()).collect::<Vec<_>>())
        .filter(|r| r.data[2] == K::TRACING_CALLSITE.0)
        .count();
    assert_eq!(defs, 6);
    assert_eq!(raw_bytes(&dat, &old), 0);
    // Descriptions and events, their definitions included, in under 3/4 of the bytes, once
    // the program has run a few times (the definitions are written once).
    let many = dir.join("many.dat");
    let rec = RecorderBuilder::new().output(&many).start().unwrap();
    let subscriber = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
    tracing::subscriber::with_default(subscriber, || (0..20).for_each(|_| program()));
    rec.finish().unwrap();
    let new = raw_bytes(
        &many,
        &[
            K::TRACING_CALLSITE,
            K::TRACING_SPAN_VALUES,
            K::TRACING_EVENT_VALUES,
            K::TRACING_SPAN_PACKED,
            K::TRACING_EVENT_PACKED,
        ],
    );
    let before = 20 * raw_bytes(&fixture(), &old);
    assert!(new * 4 < before * 3, "{new} B against {before} B before");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A span description written on one thread before its callsite's definition is written on
/// another: the merged stream meets the use first, and still resolves it; a use whose
/// definition the file lacks shows its id.
#[test]
fn a_definition_in_another_slot_read_after_its_use_resolves() {
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch("defs-slots");
    let dat = dir.join("slots.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let (id, missing) = (bridge::next_callsite_id(), bridge::next_callsite_id());
    let mut values = Vec::new();
    records::put_entry(&mut values, 1, Value::Str("GET"));
    records::put_entry(&mut values, 0, Value::I64(-3));
    std::thread::spawn({
        let values = values.clone();
        move || {
            bridge::span_values(41, 1, id, &values).unwrap();
            bridge::span_values(42, 2, missing, &values).unwrap();
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    std::thread::spawn(move || {
        let c = Callsite {
            id,
            level: 2,
            line: 9,
            name: "late",
            target: "defs",
            file: "x.rs",
            field_names: "n,method",
        };
        assert!(bridge::callsite(&c));
    })
    .join()
    .unwrap();
    rec.finish().unwrap();
    let f = TraceFile::open(&dat).unwrap();
    let mut got = vec![];
    let mut stream = f.stream_records();
    for r in stream.by_ref() {
        let r = r.unwrap();
        if let (
            _,
            Record::TracingSpanInfo {
                key,
                level,
                name,
                target,
                fields,
                ..
            },
        ) = records::decode(&r.data).unwrap()
        {
            got.push((
                key,
                level,
                name.to_string(),
                target.to_string(),
                fields.to_string(),
            ));
        }
    }
    let s = String::from;
    assert_eq!(
        got,
        [
            (41, 2, s("late"), s("defs"), s("method=\"GET\" n=-3")),
            (
                42,
                0,
                format!("callsite#{missing}"),
                s(""),
                s("field1=\"GET\" field0=-3")
            ),
        ]
    );
    assert_eq!(stream.definitions().unresolved, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

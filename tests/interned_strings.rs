//! Short strings of `tracing` values that repeat are written once per slot as NameDefinitions
//! and carried by id (SPEC §15): a file that starts in the middle of the recording (a rotated
//! segment, a window snapshot) restates them, so each reads with its strings, never `name#N`.

use std::path::Path;
use std::time::Duration;
use typhon_recorder::codec::records::{self, decode, Callsite, Record, Value};
use typhon_recorder::{bridge, doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;

/// One callsite with fields `name,n`; its id.
fn define_callsite() -> u32 {
    let id = bridge::next_callsite_id();
    let c = Callsite {
        id,
        level: 3,
        line: 1,
        name: "system",
        target: "app",
        file: "",
        field_names: "name,n",
    };
    assert!(bridge::callsite(&c));
    id
}

/// Values `name="physics" n=i`.
fn values(i: u64) -> Vec<u8> {
    let mut v = Vec::new();
    records::put_entry(&mut v, 0, Value::Str("physics"));
    records::put_entry(&mut v, 1, Value::U64(i));
    v
}

/// The fields of every span description `path` holds as its readers show them, and how many
/// of its TracingSpanValues carry a string by id.
fn described(path: &Path) -> (Vec<String>, usize) {
    let f = TraceFile::open_streaming(path).unwrap();
    let mut by_id = 0;
    for c in 0..f.cpus() {
        for r in f.stream_cpu(c) {
            if let Ok((_, Record::TracingSpanValues { values, .. })) = decode(&r.unwrap().data) {
                by_id += usize::from(records::value_ids(values).count() > 0);
            }
        }
    }
    let fields = f
        .stream_records()
        .filter_map(|r| match decode(&r.unwrap().data).ok()?.1 {
            Record::TracingSpanInfo { fields, .. } => Some(fields.to_string()),
            _ => None,
        })
        .collect();
    (fields, by_id)
}

#[test]
fn every_segment_restates_the_strings_its_values_use() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-interned-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.dat");
    let rec = RecorderBuilder::new()
        .output(&out)
        .page_size(4096)
        .rotate(64 << 10, 100)
        .start()
        .unwrap();
    let cs = define_callsite();
    // The string is taken in at its second use, long before the later segments begin.
    for round in 0..40u64 {
        bridge::span_values(round + 1, round + 1, cs, &values(round)).unwrap();
        for i in 0..200 {
            typhon_recorder::named_instant("filler", i);
        }
        if round % 8 == 7 {
            rec.drain();
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    rec.finish().unwrap();
    let segments = typhon_recorder::sink::segment_files(&out).unwrap();
    assert!(segments.len() >= 3, "several segments: {segments:?}");
    let (mut all, mut by_id) = (Vec::new(), 0);
    for s in &segments {
        let (fields, n) = described(s);
        by_id += n;
        all.extend(fields);
    }
    let want: Vec<String> = (0..40).map(|i| format!("name=\"physics\" n={i}")).collect();
    assert_eq!(all, want);
    assert_eq!(
        by_id, 39,
        "every use after the first carries the string by id"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_snapshot_restates_the_strings_its_values_use() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-interned-w-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(100))
        .snapshot_dir(&dir)
        .start()
        .unwrap();
    let cs = define_callsite();
    bridge::span_values(1, 1, cs, &values(0)).unwrap();
    bridge::span_values(2, 2, cs, &values(1)).unwrap();
    rec.drain();
    // The definition's page ages out of the window; the later use stays in it.
    std::thread::sleep(Duration::from_millis(250));
    bridge::span_values(3, 3, cs, &values(2)).unwrap();
    rec.drain();
    let snap = rec.snapshot().unwrap();
    let stats = rec.finish().unwrap();
    assert!(stats.evicted_records > 0, "the definition's page aged out");
    let (fields, by_id) = described(&snap.path);
    assert_eq!(fields, ["name=\"physics\" n=2"]);
    assert_eq!(by_id, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

//! `TracedMutex` (issue 37, item 3): a contended wait is one span named after the lock,
//! covering the wait; a free lock writes nothing. Read back from the finished file through
//! the readers' resolved stream, as `report` reads it.

use std::sync::{Arc, Barrier};
use std::time::Duration;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::{doc_lock, RecorderBuilder, TracedMutex};
use typhon_trace::tracedat::TraceFile;

/// (name, duration ns) of every named span in `path`.
fn named_spans(path: &std::path::Path) -> Vec<(String, i64)> {
    let f = TraceFile::open_streaming(path).unwrap();
    let mut out = Vec::new();
    for r in f.stream_records() {
        let r = r.unwrap();
        if let Ok((_, Record::NamedSpan { span, name })) = records::decode(&r.data) {
            out.push((name.to_string(), span.duration_ns));
        }
    }
    out
}

#[test]
fn a_contended_wait_is_one_span_and_free_locks_write_nothing() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-locks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("locks.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();

    let m = Arc::new(TracedMutex::new("queue lock", 0u64));
    for _ in 0..1000 {
        *m.lock() += 1; // free: nothing recorded
    }
    let held = m.lock();
    let ready = Arc::new(Barrier::new(2));
    let waiter = {
        let (m, ready) = (m.clone(), ready.clone());
        std::thread::spawn(move || {
            ready.wait();
            *m.lock() += 1; // waits for `held`
        })
    };
    ready.wait();
    // The waiter must be parked on the lock before it is released, or its first attempt might
    // find the lock free; 50 ms is ample for a thread already past the barrier.
    std::thread::sleep(Duration::from_millis(50));
    drop(held);
    waiter.join().unwrap();
    assert_eq!(*m.lock(), 1001);
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);

    let spans = named_spans(&path);
    assert_eq!(
        spans.len(),
        1,
        "one span for the one contended wait: {spans:?}"
    );
    let (name, dur) = &spans[0];
    assert_eq!(name, "queue lock");
    // It covers the wait: at least most of the 50 ms the holder kept the lock after the waiter
    // started waiting (the waiter may have started a little after the barrier).
    assert!(*dur >= 25_000_000, "the wait span lasts {dur} ns");
    std::fs::remove_dir_all(&dir).unwrap();
}

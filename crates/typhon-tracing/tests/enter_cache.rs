//! The layer's enter cache (src/cache.rs) never shows a stale name: a span renamed by
//! `Span::record`, a closed span whose `tracing` id a new span reuses, thousands of live spans
//! sharing buckets, and a span entered on two threads all show, entry by entry, the name the
//! span had when it was entered.

use std::path::Path;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;
use typhon_tracing::TyphonLayer;

/// (key, name) of every TracingSpan in the file, in the file's order per slot.
fn entries(path: &Path) -> Vec<(u32, u64, String)> {
    let file = TraceFile::open(path).unwrap();
    let mut v = Vec::new();
    for r in file.stream_records() {
        let r = r.unwrap();
        if let (_, Record::TracingSpan { key, name, .. }) = records::decode(&r.data).unwrap() {
            v.push((r.cpu, key, name.to_string()));
        }
    }
    v
}

#[test]
fn entries_show_the_name_of_the_span_they_entered() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-tracing-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cache.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let d = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    tracing::dispatcher::with_default(&d, || {
        // Renamed between entries: the second entry shows the new name.
        let s = tracing::info_span!("system", name = tracing::field::Empty);
        s.in_scope(|| {});
        s.record("name", "physics");
        s.in_scope(|| {});
        drop(s);
        // Closed, then its id reused (the Registry hands freed ids out again) by other names.
        for i in 0..50 {
            let s = tracing::info_span!("reuse", name = i);
            s.in_scope(|| {});
            s.in_scope(|| {});
        }
        // Many live spans at once: more than the thread's cache, some sharing a bucket.
        let many: Vec<_> = (0..5000)
            .map(|i| tracing::info_span!("many", name = i))
            .collect();
        for _ in 0..2 {
            for s in &many {
                s.in_scope(|| {});
            }
        }
        // The same span on another thread, after a rename there.
        let t = tracing::info_span!("task", name = "a");
        t.in_scope(|| {});
        let t2 = t.clone();
        let d2 = d.clone();
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&d2, || {
                t2.in_scope(|| {});
                t2.record("name", "b");
                t2.in_scope(|| {});
            })
        })
        .join()
        .unwrap();
        t.in_scope(|| {});
    });
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    let e = entries(&path);
    let names = |key: u64| -> Vec<&str> {
        e.iter()
            .filter(|x| x.1 == key)
            .map(|x| x.2.as_str())
            .collect()
    };
    let first = e[0].1;
    assert_eq!(names(first), ["system", "system: physics"]);
    let reuse: Vec<&(u32, u64, String)> = e.iter().filter(|x| x.2.starts_with("reuse")).collect();
    assert_eq!(reuse.len(), 100);
    for (i, pair) in reuse.chunks(2).enumerate() {
        let want = format!("reuse: {i}");
        assert_eq!(pair[0].2, want);
        assert_eq!(pair[1].2, want);
        assert_eq!(pair[0].1, pair[1].1);
    }
    let many: Vec<&(u32, u64, String)> = e.iter().filter(|x| x.2.starts_with("many")).collect();
    assert_eq!(many.len(), 10_000);
    for (j, x) in many.iter().enumerate() {
        assert_eq!(x.2, format!("many: {}", j % 5000));
    }
    let task: Vec<&(u32, u64, String)> = e.iter().filter(|x| x.2.starts_with("task")).collect();
    let key = task[0].1;
    assert!(task.iter().all(|x| x.1 == key));
    let shown: Vec<&str> = task.iter().map(|x| x.2.as_str()).collect();
    // Each thread's entries in order: the main thread's second one came after the rename on
    // the other thread.
    let main_slot = task[0].0;
    let on = |main: bool| -> Vec<&str> {
        task.iter()
            .filter(|x| (x.0 == main_slot) == main)
            .map(|x| x.2.as_str())
            .collect()
    };
    assert_eq!(on(true), ["task: a", "task: b"], "{shown:?}");
    assert_eq!(on(false), ["task: a", "task: b"], "{shown:?}");
}

/// Two subscribers, each with its own Registry (so their first spans have the same `tracing`
/// id) and its own `TyphonLayer`, entered in turn on one thread: each entry is its own span's.
#[test]
fn two_subscribers_with_the_same_ids_do_not_share_cache_entries() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-tracing-two-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let layer = TyphonLayer::new();
    // The same layer value in both: each stack it joins is told apart all the same.
    let a = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let b = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let sa = tracing::dispatcher::with_default(&a, || tracing::info_span!("in a"));
    let sb = tracing::dispatcher::with_default(&b, || tracing::info_span!("in b"));
    assert_eq!(sa.id(), sb.id(), "both Registries' first span");
    for _ in 0..3 {
        tracing::dispatcher::with_default(&a, || sa.in_scope(|| {}));
        tracing::dispatcher::with_default(&b, || sb.in_scope(|| {}));
    }
    drop((sa, sb));
    rec.finish().unwrap();
    let names: Vec<String> = entries(&path).into_iter().map(|e| e.2).collect();
    assert_eq!(names, ["in a", "in b", "in a", "in b", "in a", "in b"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

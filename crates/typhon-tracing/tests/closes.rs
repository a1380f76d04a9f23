//! Which spans say when they closed (a TracingClose): exactly those whose last exit is not
//! their end. A span entered once, where it was made or on another thread, gives none; one
//! entered twice (on its thread, or once on each of two), or never, gives one. The creating
//! thread's first entry is served by the enter cache its creation filled, the others through
//! the span table: both must count, once each.

use std::collections::BTreeMap;
use std::path::PathBuf;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;
use typhon_tracing::TyphonLayer;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("typhon-tracing-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `f` on a thread of its own under `d`, handing it `s` and returning it.
fn elsewhere(
    d: &tracing::Dispatch,
    s: tracing::Span,
    f: impl FnOnce(&tracing::Span) + Send + 'static,
) -> tracing::Span {
    let d = d.clone();
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&d, || f(&s));
        s
    })
    .join()
    .unwrap()
}

#[test]
fn a_span_says_when_it_closed_only_where_its_last_exit_is_not_its_end() {
    let _g = doc_lock();
    let dir = scratch("closes");
    let dat = dir.join("closes.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let d = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    // An event before each close: the recorder leaves out a close that directly follows the
    // span's own entry on the closing thread (it adds nothing to that exit), and this test is
    // of the layer's choice, not of that.
    let between = || tracing::info!("between");
    tracing::dispatcher::with_default(&d, || {
        // Each case's span has a name of its own; the values say whether it closes.
        let s = tracing::info_span!("once_here");
        s.in_scope(|| {});
        between();
        drop(s);
        let s = tracing::info_span!("twice_here");
        s.in_scope(|| {});
        s.in_scope(|| {});
        between();
        drop(s);
        drop(tracing::info_span!("never"));
        let s = elsewhere(&d, tracing::info_span!("once_there"), |s| s.in_scope(|| {}));
        between();
        drop(s);
        let s = tracing::info_span!("here_and_there");
        s.in_scope(|| {});
        let s = elsewhere(&d, s, |s| s.in_scope(|| {}));
        between();
        drop(s);
        let s = elsewhere(&d, tracing::info_span!("never_closed_there"), |_| {});
        drop(s);
        // Entered once here, closed on another thread.
        let s = tracing::info_span!("once_here_closed_there");
        s.in_scope(|| {});
        elsewhere(&d, tracing::Span::none(), move |_| {
            tracing::info!("between");
            drop(s)
        });
        // Many spans made and entered once in turn (ids reused, buckets shared over time).
        for i in 0..2000u64 {
            let s = tracing::info_span!("many", i);
            s.in_scope(|| {});
            between();
            drop(s);
        }
    });
    drop(d);
    assert_eq!(rec.finish().unwrap().total_missed(), 0);

    let file = TraceFile::open(&dat).unwrap();
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut closes: BTreeMap<u64, u32> = BTreeMap::new();
    for r in file.stream_records() {
        let r = r.unwrap();
        match records::decode(&r.data).unwrap().1 {
            Record::TracingSpanInfo { key, name, .. } => {
                names.insert(key, name.to_string());
            }
            Record::TracingClose { key } => *closes.entry(key).or_default() += 1,
            _ => {}
        }
    }
    let closed = |n: &str| -> Vec<u32> {
        names
            .iter()
            .filter(|(_, v)| v.as_str() == n)
            .map(|(k, _)| closes.get(k).copied().unwrap_or(0))
            .collect()
    };
    for (name, want) in [
        ("once_here", 0),
        ("twice_here", 1),
        ("never", 1),
        ("once_there", 0),
        ("here_and_there", 1),
        ("never_closed_there", 1),
        ("once_here_closed_there", 0),
    ] {
        assert_eq!(closed(name), [want], "{name}");
    }
    let many = closed("many");
    assert_eq!(many.len(), 2000);
    assert!(many.iter().all(|&c| c == 0), "{many:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

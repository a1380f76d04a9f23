//! How entries end (the exit's innermost-first fast path and its search below it): nested in
//! and around the thread's native spans, exited out of order, the same span re-entered inside
//! itself, and a span entered under a recorder that finished before it exited.

use std::path::{Path, PathBuf};
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;
use typhon_tracing::TyphonLayer;

/// A span record: its name, id, parent and duration.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    id: u64,
    parent: u64,
    ts: i64,
    dur: i64,
}

impl Span {
    /// Whether it nests in `outer`: a compact entry (TracingEntry) is handed out with parent
    /// 0, its nesting its time (SPEC §12: readers rebuild it so); any other names its parent.
    fn nests_in(&self, outer: &Span) -> bool {
        let within = self.ts >= outer.ts && self.ts + self.dur <= outer.ts + outer.dur;
        within && (self.parent == outer.id || self.parent == 0)
    }
}

/// Every NamedSpan and TracingSpan of the file, in the file's order.
fn spans(path: &Path) -> Vec<Span> {
    let file = TraceFile::open(path).unwrap();
    let mut v = Vec::new();
    for r in file.stream_records() {
        let r = r.unwrap();
        let (h, body) = records::decode(&r.data).unwrap();
        let (span, name) = match body {
            Record::NamedSpan { span, name } => (span, name),
            Record::TracingSpan { span, name, .. } => (span, name),
            _ => continue,
        };
        v.push(Span {
            name: name.to_string(),
            id: span.span_id,
            parent: span.parent_span_id,
            ts: h.timestamp,
            dur: span.duration_ns,
        });
    }
    v
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("typhon-tracing-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn unclosed(s: &typhon_recorder::Stats) -> u64 {
    s.slots.iter().map(|x| x.unclosed).sum()
}

fn by_name<'a>(s: &'a [Span], name: &str) -> Vec<&'a Span> {
    s.iter().filter(|x| x.name == name).collect()
}

#[test]
fn entries_nest_with_native_spans_and_end_out_of_order() {
    let _g = doc_lock();
    let dir = scratch("exits");
    let path = dir.join("exits.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let d = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    tracing::dispatcher::with_default(&d, || {
        // native > tracing > native.
        {
            let _outer = typhon_recorder::span("native outer");
            tracing::info_span!("traced").in_scope(|| {
                let _inner = typhon_recorder::span("native inner");
            });
        }
        // The same span re-entered inside itself: two entries, the inner one's parent the
        // outer one.
        let again = tracing::info_span!("again");
        again.in_scope(|| again.in_scope(|| {}));
        // Out of order: the outer guard dropped first ends the inner entry with it; the inner
        // guard's exit then finds nothing to end.
        let a = tracing::info_span!("a");
        let b = tracing::info_span!("b");
        let ga = a.enter();
        let gb = b.enter();
        drop(ga);
        drop(gb);
        // An exit below a native span: the native span opened inside the entry ends with it.
        let c = tracing::info_span!("c");
        let gc = c.enter();
        let native = typhon_recorder::span("left open");
        drop(gc);
        drop(native);
        // After all that the thread's stack is empty: a new entry is at top level.
        tracing::info_span!("after").in_scope(|| {});
    });
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    assert_eq!(unclosed(&stats), 0);
    let s = spans(&path);
    let one = |name: &str| -> Span {
        let v = by_name(&s, name);
        assert_eq!(v.len(), 1, "{name}: {s:#?}");
        v[0].clone()
    };
    let (outer, traced, inner) = (one("native outer"), one("traced"), one("native inner"));
    assert_eq!(outer.parent, 0);
    assert_eq!(traced.parent, outer.id);
    assert_eq!(inner.parent, traced.id);
    let again = by_name(&s, "again");
    assert_eq!(again.len(), 2, "{s:#?}");
    // The inner entry ends first, inside the outer one.
    assert!(again[0].nests_in(again[1]), "{again:?}");
    assert_eq!(again[1].parent, 0);
    assert!(again[0].dur <= again[1].dur);
    let (a, b) = (one("a"), one("b"));
    assert!(b.nests_in(&a));
    assert_eq!(a.parent, 0);
    assert!(b.dur <= a.dur);
    let (c, left) = (one("c"), one("left open"));
    assert_eq!(left.parent, c.id);
    assert_eq!(one("after").parent, 0);
    // native outer, traced, native inner, 2 × again, a, b, c, left open, after.
    assert_eq!(s.len(), 10, "{s:#?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_entry_of_a_finished_recorder_writes_nothing_into_the_next() {
    let _g = doc_lock();
    let dir = scratch("two-recs");
    let (p1, p2) = (dir.join("one.dat"), dir.join("two.dat"));
    let d = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    tracing::dispatcher::with_default(&d, || {
        let s = tracing::info_span!("across");
        let rec1 = RecorderBuilder::new().output(&p1).start().unwrap();
        let g = s.enter();
        // Written by the first recorder as it finishes, as unclosed.
        let st1 = rec1.finish().unwrap();
        assert_eq!(unclosed(&st1), 1);
        let rec2 = RecorderBuilder::new().output(&p2).start().unwrap();
        // Its exit under the second recorder finds no entry of it there.
        drop(g);
        // Entered again (its cache entry is warm): a new entry of the second recorder.
        s.in_scope(|| {});
        rec2.finish().unwrap();
    });
    let (one, two) = (spans(&p1), spans(&p2));
    assert_eq!(by_name(&one, "across").len(), 1, "{one:#?}");
    assert_eq!(two.len(), 1, "{two:#?}");
    assert_eq!(two[0].name, "across");
    assert_eq!(two[0].parent, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

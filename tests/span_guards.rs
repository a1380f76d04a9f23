//! Spans whose guards are dropped out of order, forgotten, or outlive their recorder, and spans
//! the recorder refuses (issue 19, classes 7 and 8). Records are read back from the memory
//! sink's pages.
//!
//! The invariant checked (see `SpanGuard`'s docs): every span in a recording has parent 0 or a
//! span of the same slot opened before it; that parent is in the recording unless it was still
//! open when the recorder finished; with the recorder's clock a span lies within its parent.

mod recording;

use proptest::prelude::*;
use recording::read_stream;
use std::collections::{BTreeMap, BTreeSet};
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::sink::MemorySink;
use typhon_recorder::Recorder;
use typhon_recorder::{doc_lock, RecorderBuilder, SpanGuard, TraceContext, WriteError};

/// A span record as read back: (slot, id, parent, start ns, end ns, name).
#[derive(Debug, Clone)]
struct Span {
    slot: u8,
    id: u64,
    parent: u64,
    start: i64,
    end: i64,
    name: String,
}

fn recorder(sink: &MemorySink) -> Recorder {
    RecorderBuilder::new()
        .sink(sink.clone())
        .ring_bytes(1 << 16)
        .spare_rings(0)
        .start()
        .unwrap()
}

fn spans(sink: &MemorySink) -> Vec<Span> {
    let pages = sink.pages();
    let pages = pages.lock();
    let mut out = Vec::new();
    for (slot, stream) in pages.slots.iter().enumerate() {
        for p in read_stream(stream) {
            for (_, r) in &p.records {
                let (h, rec) = records::decode(r).unwrap();
                let (span, name) = match rec {
                    Record::NamedSpan { span, name } => (span, name),
                    Record::TracedSpan { span, name, .. } => (span, name),
                    _ => continue,
                };
                out.push(Span {
                    slot: slot as u8,
                    id: span.span_id,
                    parent: span.parent_span_id,
                    start: h.timestamp,
                    end: h.timestamp + span.duration_ns,
                    name: name.to_string(),
                });
            }
        }
    }
    out
}

/// Checks the invariant; `open_at_finish` are the spans that may be missing (still open when
/// the recorder finished).
fn check_invariant(spans: &[Span], open_at_finish: &BTreeSet<u64>, clock_times: bool) {
    let by_id: BTreeMap<u64, &Span> = spans.iter().map(|s| (s.id, s)).collect();
    assert_eq!(
        by_id.len(),
        spans.len(),
        "a span id written twice: {spans:?}"
    );
    for s in spans {
        assert_eq!(s.id >> 56, s.slot as u64, "{s:?}");
        assert!(!open_at_finish.contains(&s.id), "{s:?} was open at finish");
        if s.parent == 0 {
            continue;
        }
        assert_eq!(
            s.parent >> 56,
            s.slot as u64,
            "parent of another slot: {s:?}"
        );
        assert!(s.parent < s.id, "a parent opened after its child: {s:?}");
        match by_id.get(&s.parent) {
            Some(p) => {
                if clock_times {
                    assert!(
                        p.start <= s.start && s.end <= p.end,
                        "{s:?} is not within its parent {p:?}"
                    );
                }
            }
            None => assert!(
                open_at_finish.contains(&s.parent),
                "{s:?}: its parent is neither in the file nor open at finish"
            ),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Open a guard (traced or not).
    Open(bool),
    /// Drop the live guard at this index (mod the number live).
    Drop(usize),
    /// `mem::forget` the live guard at this index.
    Forget(usize),
    /// `span_begin`, then later `span_end` of the innermost if it is one of these.
    Begin,
    EndBegun,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<bool>().prop_map(Op::Open),
        3 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::Forget),
        1 => Just(Op::Begin),
        1 => Just(Op::EndBegun),
    ]
}

/// Runs `ops` on this thread; returns the live guards and every id opened, and the ids of
/// guards forgotten or `span_begin` spans not ended.
fn run(ops: &[Op]) -> (Vec<SpanGuard<'static>>, BTreeSet<u64>, Vec<u64>) {
    let mut live: Vec<SpanGuard<'static>> = Vec::new();
    let mut opened = BTreeSet::new();
    let mut begun: Vec<u64> = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        match op {
            Op::Open(traced) => {
                let g = if *traced {
                    typhon_recorder::traced_span(
                        "traced",
                        TraceContext {
                            hi: 1,
                            lo: n as u64,
                        },
                    )
                } else {
                    typhon_recorder::span(if n % 2 == 0 { "even" } else { "odd-name" })
                };
                assert_ne!(g.id(), 0);
                opened.insert(g.id());
                live.push(g);
            }
            Op::Drop(i) if !live.is_empty() => drop(live.remove(i % live.len())),
            Op::Forget(i) if !live.is_empty() => std::mem::forget(live.remove(i % live.len())),
            Op::Begin => {
                let id = typhon_recorder::span_begin("begun", None, None).unwrap();
                opened.insert(id);
                begun.push(id);
            }
            Op::EndBegun => {
                if let Some(&id) = begun.last() {
                    // Ends it only if it is the thread's innermost open span.
                    if typhon_recorder::span_end(id, None).is_ok() {
                        begun.pop();
                    }
                }
            }
            _ => {}
        }
    }
    (live, opened, begun)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A thread that exits leaves no span without its parent: every span it opened is in the
    /// file (forgotten guards and unended spans end with the thread), each within its parent.
    #[test]
    fn any_order_then_thread_exit_writes_every_span_within_its_parent(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let _g = doc_lock();
        let sink = MemorySink::new();
        let rec = recorder(&sink);
        let opened = std::thread::spawn(move || {
            let (live, opened, _) = run(&ops);
            // The rest drop in creation order: outermost first.
            drop(live);
            opened
        })
        .join()
        .unwrap();
        let stats = rec.finish().unwrap();
        let spans = spans(&sink);
        check_invariant(&spans, &BTreeSet::new(), true);
        let written: BTreeSet<u64> = spans.iter().map(|s| s.id).collect();
        prop_assert_eq!(written, opened, "every span opened is written once");
        prop_assert_eq!(stats.slot(1).map_or(0, |s| s.refused), 0);
    }

    /// The recorder finishes while guards are open (and forgotten) on a thread that goes on:
    /// only spans open at finish are missing, and the guards dropped under the next recorder
    /// write nothing into it (counted as refused there), whose spans have their own parents.
    #[test]
    fn guards_open_at_finish_stay_out_of_the_next_recording(
        ops in proptest::collection::vec(op(), 1..60),
        next in proptest::collection::vec(op(), 0..20),
    ) {
        let _g = doc_lock();
        let (s1, s2) = (MemorySink::new(), MemorySink::new());
        let rec = recorder(&s1);
        let (live, opened, _) = run(&ops);
        rec.finish().unwrap();
        let first = spans(&s1);
        let written: BTreeSet<u64> = first.iter().map(|s| s.id).collect();
        let open_at_finish: BTreeSet<u64> = opened.difference(&written).copied().collect();
        check_invariant(&first, &open_at_finish, true);
        for s in &first {
            prop_assert!(opened.contains(&s.id));
        }

        let rec = recorder(&s2);
        let stale = live.len() as u64;
        drop(live);
        let (live2, opened2, begun2) = run(&next);
        drop(live2);
        // Those a dropped guard enclosed have ended with it (a mismatch now); end the rest.
        for id in begun2.into_iter().rev() {
            let _ = typhon_recorder::span_end(id, None);
        }
        let stats = rec.finish().unwrap();
        let second = spans(&s2);
        for s in &second {
            prop_assert!(!opened.contains(&s.id), "a span of the first recorder: {:?}", s);
            prop_assert!(!opened.contains(&s.parent), "a parent of the first recorder: {:?}", s);
        }
        let forgotten2: BTreeSet<u64> = opened2
            .difference(&second.iter().map(|s| s.id).collect())
            .copied()
            .collect();
        check_invariant(&second, &forgotten2, true);
        let refused: u64 = stats.slots.iter().map(|s| s.refused).sum();
        prop_assert_eq!(refused, stale, "each stale guard's drop counted once");
    }
}

#[test]
fn guards_dropped_outermost_first_or_forgotten_leave_later_spans_top_level() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    std::thread::spawn(|| {
        let v = vec![
            typhon_recorder::span("a"),
            typhon_recorder::span("b"),
            typhon_recorder::span("c"),
        ];
        drop(v); // "a" first: "b" and "c" end with it
        drop(typhon_recorder::span("after-vec"));
        {
            let _p = typhon_recorder::span("p");
            std::mem::forget(typhon_recorder::span("forgotten"));
            drop(typhon_recorder::span("child-of-forgotten"));
        } // "p" ends, and the forgotten span with it
        drop(typhon_recorder::span("after-forget"));
    })
    .join()
    .unwrap();
    rec.finish().unwrap();
    let spans = spans(&sink);
    check_invariant(&spans, &BTreeSet::new(), true);
    let by_name: BTreeMap<&str, &Span> = spans.iter().map(|s| (s.name.as_str(), s)).collect();
    assert_eq!(by_name.len(), 8, "{spans:?}");
    assert_eq!(by_name["after-vec"].parent, 0);
    assert_eq!(by_name["after-forget"].parent, 0);
    assert_eq!(by_name["b"].parent, by_name["a"].id);
    assert_eq!(by_name["c"].parent, by_name["b"].id);
    assert_eq!(
        by_name["c"].end, by_name["a"].end,
        "ended with its outer span"
    );
    assert_eq!(by_name["forgotten"].parent, by_name["p"].id);
    assert_eq!(
        by_name["child-of-forgotten"].parent,
        by_name["forgotten"].id
    );
    assert_eq!(by_name["forgotten"].end, by_name["p"].end);
}

#[test]
fn a_guard_of_a_finished_recorder_writes_nothing_into_the_next() {
    let _g = doc_lock();
    let (s1, s2) = (MemorySink::new(), MemorySink::new());
    let (t1, t2) = (s1.clone(), s2.clone());
    let (first, second) = std::thread::spawn(move || {
        let rec = recorder(&t1);
        let outer = typhon_recorder::span("outer");
        let stale_id = outer.id();
        let first = rec.finish().unwrap();
        let rec = recorder(&t2);
        drop(outer);
        let fresh = typhon_recorder::span("fresh");
        assert_ne!(fresh.id(), stale_id, "span counters are never reset");
        drop(fresh);
        // An id of the earlier recorder is not a span open in this one.
        assert!(matches!(
            typhon_recorder::span_end(stale_id, None),
            Err(WriteError::SpanMismatch { .. })
        ));
        (first, rec.finish().unwrap())
    })
    .join()
    .unwrap();
    assert!(spans(&s1).is_empty(), "the span was open at finish");
    let second_spans = spans(&s2);
    assert_eq!(second_spans.len(), 1, "{second_spans:?}");
    assert_eq!(second_spans[0].name, "fresh");
    assert_eq!(second_spans[0].parent, 0);
    assert_eq!(first.slot(1).unwrap().refused, 0);
    assert_eq!(second.slot(1).unwrap().refused, 1, "the stale guard's drop");
}

#[test]
fn refused_spans_return_errors_and_count_once() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink); // 4096-byte pages: a record of at most 4072 bytes
    std::thread::spawn(|| {
        let big = "n".repeat(5000);
        fn too_large<T>(r: &Result<T, WriteError>) -> bool {
            matches!(
                r,
                Err(WriteError::TooLarge {
                    size: 5038,
                    max: 4072
                })
            )
        }
        assert!(too_large(&typhon_recorder::span_begin(&big, None, None)));
        let ctx = TraceContext { hi: 1, lo: 2 };
        assert!(matches!(
            typhon_recorder::span_begin(&big, Some(ctx), None),
            Err(WriteError::TooLarge { size: 5054, .. })
        ));
        assert!(too_large(
            &typhon_recorder::try_span(&big, None, None).map(drop)
        ));
        let g = typhon_recorder::span(&big);
        assert_eq!(g.id(), 0, "nothing opened");
        drop(g);
        assert!(matches!(
            typhon_recorder::try_span("a\0b", None, None).map(drop),
            Err(WriteError::Invalid(_))
        ));
        // A refused span leaves nothing open: the next one is top level.
        drop(typhon_recorder::span("ok"));
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    let s = stats.slot(1).unwrap();
    assert_eq!(s.refused, 5, "each refused span once");
    assert_eq!((s.written, s.missed), (2, 0), "ThreadInfo and the one span");
    let spans = spans(&sink);
    assert_eq!(spans.len(), 1);
    assert_eq!((spans[0].name.as_str(), spans[0].parent), ("ok", 0));
}

//! Spans whose guards are dropped out of order, forgotten, or outlive their recorder, and spans
//! the recorder refuses (issue 19, classes 7 and 8). Records are read back from the memory
//! sink's pages.
//!
//! The invariant checked (see `SpanGuard`'s docs): every span id in a recording appears once,
//! and its parent is 0 or a span of the same slot opened before it that is in the same
//! recording (spans still open at finish are written then, counted as `unclosed`); with the
//! recorder's clock a span lies within its parent.

mod recording;

use proptest::prelude::*;
use recording::{read_stream, Names};
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
    let mut names = Names::default();
    for (slot, stream) in pages.slots.iter().enumerate() {
        for p in read_stream(stream) {
            for (_, r) in &p.records {
                let Some(r) = names.read(r) else { continue };
                let (h, rec) = records::decode(&r).unwrap();
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

/// Checks the invariant.
fn check_invariant(spans: &[Span], clock_times: bool) {
    let by_id: BTreeMap<u64, &Span> = spans.iter().map(|s| (s.id, s)).collect();
    assert_eq!(
        by_id.len(),
        spans.len(),
        "a span id written twice: {spans:?}"
    );
    for s in spans {
        assert_eq!(s.id >> 56, s.slot as u64, "{s:?}");
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
            None => panic!("{s:?}: its parent is not in the recording: {spans:?}"),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Open a guard: 0 traced, 1 a copied name, 2 a `&'static str` name (`span_static`).
    Open(u8),
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
        3 => (0u8..3).prop_map(Op::Open),
        3 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::Forget),
        1 => Just(Op::Begin),
        1 => Just(Op::EndBegun),
    ]
}

/// What [`run`] leaves: the live guards, every id opened, the `span_begin` spans not ended,
/// and a model of the thread's stack (the ids still open, outermost first).
struct Ran {
    live: Vec<SpanGuard>,
    opened: BTreeSet<u64>,
    /// The name each span was opened with.
    names: BTreeMap<u64, String>,
    begun: Vec<u64>,
    open: Vec<u64>,
}

/// Runs `ops` on this thread.
fn run(ops: &[Op]) -> Ran {
    let mut live: Vec<SpanGuard> = Vec::new();
    let mut opened = BTreeSet::new();
    let mut names = BTreeMap::new();
    let mut begun: Vec<u64> = Vec::new();
    let mut open: Vec<u64> = Vec::new();
    // Ending `id` ends every span opened inside it.
    let end = |open: &mut Vec<u64>, id: u64| {
        if let Some(p) = open.iter().position(|&o| o == id) {
            open.truncate(p);
        }
    };
    for (n, op) in ops.iter().enumerate() {
        match op {
            Op::Open(kind) => {
                // Copied and static names of 1 to 24 bytes, nested in any mix: a static name
                // takes no room in the stack's names, so the copies above it must still land
                // after the copies below it.
                const STATIC: [&str; 3] = ["s", "static-name", "a-static-name-of-24-byte"];
                let (g, name) = match kind {
                    0 => (
                        typhon_recorder::traced_span(
                            "traced",
                            TraceContext {
                                hi: 1,
                                lo: n as u64,
                            },
                        ),
                        "traced".to_string(),
                    ),
                    1 => {
                        let name = format!("copy-{n}{}", "x".repeat(n % 19));
                        (typhon_recorder::span(&name), name)
                    }
                    _ => {
                        let name = STATIC[n % 3];
                        (typhon_recorder::span_static(name), name.to_string())
                    }
                };
                assert_ne!(g.id(), 0);
                names.insert(g.id(), name);
                opened.insert(g.id());
                open.push(g.id());
                live.push(g);
            }
            Op::Drop(i) if !live.is_empty() => {
                let g = live.remove(i % live.len());
                end(&mut open, g.id());
                drop(g);
            }
            Op::Forget(i) if !live.is_empty() => std::mem::forget(live.remove(i % live.len())),
            Op::Begin => {
                let id = typhon_recorder::span_begin("begun", None, None).unwrap();
                names.insert(id, "begun".to_string());
                opened.insert(id);
                begun.push(id);
                open.push(id);
            }
            Op::EndBegun => {
                if let Some(&id) = begun.last() {
                    // Ends it only if it is the thread's innermost open span.
                    if typhon_recorder::span_end(id, None).is_ok() {
                        begun.pop();
                        end(&mut open, id);
                    }
                }
            }
            _ => {}
        }
    }
    Ran {
        live,
        opened,
        names,
        begun,
        open,
    }
}

/// Each span of `spans` carries the name it was opened with.
fn check_names(spans: &[Span], names: &BTreeMap<u64, String>) {
    for s in spans {
        assert_eq!(Some(&s.name), names.get(&s.id), "{s:?}");
    }
}

fn ids(spans: &[Span]) -> BTreeSet<u64> {
    spans.iter().map(|s| s.id).collect()
}

fn unclosed(stats: &typhon_recorder::Stats) -> u64 {
    stats.slots.iter().map(|s| s.unclosed).sum()
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
            let ran = run(&ops);
            // The rest drop in creation order: outermost first.
            drop(ran.live);
            (ran.opened, ran.names)
        })
        .join()
        .unwrap();
        let (opened, names) = opened;
        let stats = rec.finish().unwrap();
        let spans = spans(&sink);
        check_invariant(&spans, true);
        check_names(&spans, &names);
        prop_assert_eq!(ids(&spans), opened, "every span opened is written once");
        prop_assert_eq!(stats.slot(1).map_or(0, |s| s.refused), 0);
        prop_assert_eq!(unclosed(&stats), 0, "the thread ended them all");
    }

    /// Two recorders in turn on a thread that goes on past the first's finish, with guards
    /// opened, dropped in any order and forgotten, and `span_begin`/`span_end`, under each:
    /// each file holds every span opened under its recorder, each with its parent in the same
    /// file; the spans still open at a finish are counted as unclosed in that recording, and
    /// the first recorder's guards dropped under the second write and count nothing there.
    #[test]
    fn two_recorders_each_file_holds_every_parent(
        ops in proptest::collection::vec(op(), 1..60),
        next in proptest::collection::vec(op(), 0..30),
    ) {
        let _g = doc_lock();
        let (s1, s2) = (MemorySink::new(), MemorySink::new());
        let rec = recorder(&s1);
        let first_run = run(&ops);
        let first_stats = rec.finish().unwrap();
        let first = spans(&s1);
        check_invariant(&first, true);
        check_names(&first, &first_run.names);
        prop_assert_eq!(ids(&first), first_run.opened.clone());
        prop_assert_eq!(unclosed(&first_stats), first_run.open.len() as u64);

        let rec = recorder(&s2);
        // Half the first recorder's guards drop under the second, the rest after it.
        let mut stale = first_run.live;
        let later = stale.split_off(stale.len() / 2);
        drop(stale);
        for id in first_run.begun.iter().rev() {
            prop_assert!(typhon_recorder::span_end(*id, None).is_err());
        }
        let ran = run(&next);
        // Some guards of the second recorder drop now, the rest stay open past its finish.
        let mut live = ran.live;
        let kept = live.split_off(live.len() / 2);
        let mut open = ran.open;
        for g in live.into_iter().rev() {
            if let Some(p) = open.iter().position(|&o| o == g.id()) {
                open.truncate(p);
            }
            drop(g);
        }
        let stats = rec.finish().unwrap();
        drop(later);
        drop(kept);
        let second = spans(&s2);
        check_invariant(&second, true);
        check_names(&second, &ran.names);
        prop_assert_eq!(ids(&second), ran.opened);
        for s in &second {
            prop_assert!(!first_run.opened.contains(&s.id), "a span of the first recorder: {:?}", s);
            prop_assert!(!first_run.opened.contains(&s.parent), "a parent of the first: {:?}", s);
        }
        prop_assert_eq!(unclosed(&stats), open.len() as u64);
        let refused: u64 = stats.slots.iter().map(|s| s.refused).sum();
        prop_assert_eq!(refused, 0, "a stale guard is not the second recording's loss");
        prop_assert_eq!(first_stats.slots.iter().map(|s| s.refused).sum::<u64>(), 0);
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
    check_invariant(&spans, true);
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
    let first_spans = spans(&s1);
    assert_eq!(first_spans.len(), 1, "written at finish: {first_spans:?}");
    assert_eq!(first_spans[0].name, "outer");
    let second_spans = spans(&s2);
    assert_eq!(second_spans.len(), 1, "{second_spans:?}");
    assert_eq!(second_spans[0].name, "fresh");
    assert_eq!(second_spans[0].parent, 0);
    let (a, b) = (first.slot(1).unwrap(), second.slot(1).unwrap());
    assert_eq!(
        (a.unclosed, a.refused),
        (1, 0),
        "the first counts its open span"
    );
    assert_eq!(
        (b.unclosed, b.refused),
        (0, 0),
        "the stale guard is not the second's loss"
    );
}

/// The review's case: a forgotten top-level guard on a thread that outlives `finish` (this
/// one, and one that never touches the recorder again): every later span names it as parent,
/// so it must be in the file.
#[test]
fn a_forgotten_guard_on_a_thread_that_outlives_finish_is_in_the_file() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (ready, is_ready) = std::sync::mpsc::channel::<()>();
    let idle = std::thread::spawn(move || {
        std::mem::forget(typhon_recorder::span("idle-forgotten"));
        drop(typhon_recorder::span("idle-child"));
        ready.send(()).unwrap();
        wait.recv().unwrap(); // touches the recorder never again before its finish
    });
    is_ready.recv().unwrap();
    std::mem::forget(typhon_recorder::span("x"));
    for _ in 0..3 {
        drop(typhon_recorder::span("later"));
    }
    let _open = typhon_recorder::span_begin("begun", None, None).unwrap();
    let stats = rec.finish().unwrap();
    go.send(()).unwrap();
    idle.join().unwrap();
    let spans = spans(&sink);
    check_invariant(&spans, true);
    assert_eq!(spans.len(), 7, "{spans:?}");
    let x = spans.iter().find(|s| s.name == "x").unwrap();
    for s in spans.iter().filter(|s| s.name == "later") {
        assert_eq!(s.parent, x.id);
    }
    let begun = spans.iter().find(|s| s.name == "begun").unwrap();
    assert_eq!(begun.parent, x.id);
    assert_eq!(
        unclosed(&stats),
        3,
        "x, begun and idle-forgotten: {stats:?}"
    );
}

#[test]
fn spans_past_the_stack_room_are_refused_and_counted() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    std::thread::spawn(|| {
        let mut v: Vec<SpanGuard> = (0..typhon_recorder::SPAN_DEPTH)
            .map(|_| typhon_recorder::span("deep"))
            .collect();
        assert!(v.iter().all(|g| g.id() != 0));
        let over = typhon_recorder::try_span("over", None, None).map(drop);
        assert!(
            matches!(over, Err(WriteError::SpanStackFull { open: 64, .. })),
            "{over:?}"
        );
        assert!(typhon_recorder::span_begin("over", None, None).is_err());
        assert_eq!(typhon_recorder::span("over").id(), 0);
        v.truncate(1);
        // Names: room for 4096 bytes of open names (each from an 8-byte boundary).
        let long = "n".repeat(4000);
        let g = typhon_recorder::span(&long);
        assert_ne!(g.id(), 0);
        let r = typhon_recorder::try_span(&"m".repeat(100), None, None).map(drop);
        assert!(
            matches!(r, Err(WriteError::SpanStackFull { open: 2, .. })),
            "{r:?}"
        );
        drop(g);
        drop(v);
        drop(typhon_recorder::span("after"));
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    assert_eq!(stats.slot(1).unwrap().refused, 4);
    let spans = spans(&sink);
    check_invariant(&spans, true);
    assert_eq!(spans.len(), typhon_recorder::SPAN_DEPTH + 2);
    assert!(spans.iter().all(|s| s.name != "over"));
}

/// `span_static` under the stack's limits: one of its 64 entries, none of its name bytes; a
/// static name refused like a copied one (NUL, past a page), and counted; a static span still
/// open at finish is written then by the flusher, with its name.
#[test]
fn static_spans_take_an_entry_but_no_name_room() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let mut v: Vec<SpanGuard> = (0..typhon_recorder::SPAN_DEPTH - 1)
            .map(|_| typhon_recorder::span_static("deep"))
            .collect();
        v.push(typhon_recorder::span(&"n".repeat(4000))); // the names' room is all free
        assert!(v.iter().all(|g| g.id() != 0));
        assert_eq!(typhon_recorder::span_static("over").id(), 0, "64 open");
        v.truncate(2);
        // 4000 bytes of names open: a copied name of 100 no longer fits, a static one does.
        let long = typhon_recorder::span(&"l".repeat(4000));
        assert!(typhon_recorder::try_span(&"m".repeat(100), None, None).is_err());
        let s = typhon_recorder::span_static("static-above-a-long-copy");
        assert_ne!(s.id(), 0);
        let c = typhon_recorder::span("copy-above-a-static");
        assert_ne!(c.id(), 0);
        drop((c, s, long));
        assert_eq!(typhon_recorder::span_static("a\0b").id(), 0);
        static BIG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let big: &'static str = BIG.get_or_init(|| "b".repeat(5000));
        assert_eq!(typhon_recorder::span_static(big).id(), 0);
        drop(v);
        let forgotten = typhon_recorder::span_static("open-at-finish");
        tx.send(forgotten.id()).unwrap();
        std::mem::forget(forgotten);
        done_rx.recv().unwrap(); // the thread outlives the finish
    });
    let open_id = rx.recv().unwrap();
    let stats = rec.finish().unwrap();
    done_tx.send(()).unwrap();
    t.join().unwrap();
    let s = stats.slot(1).unwrap();
    // "over", the copy of 100, the NUL and the 5000-byte name.
    assert_eq!(s.refused, 4);
    assert_eq!(unclosed(&stats), 1);
    let spans = spans(&sink);
    check_invariant(&spans, true);
    // 63 "deep", the 4000-byte copy, the long one, the static and the copy above it, and
    // the one open at finish.
    assert_eq!(spans.len(), typhon_recorder::SPAN_DEPTH + 4);
    let named = |n: &str| spans.iter().filter(|s| s.name == n).count();
    assert_eq!(named("deep"), typhon_recorder::SPAN_DEPTH - 1);
    assert_eq!(named("static-above-a-long-copy"), 1);
    assert_eq!(named("copy-above-a-static"), 1);
    let last = spans
        .iter()
        .find(|s| s.id == open_id)
        .expect("written at finish");
    assert_eq!(last.name, "open-at-finish");
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

/// Counts the allocations of threads that ask for it (SPEC §8: the producer never allocates
/// after its thread's first event).
struct Counting;

static ALLOCS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    static TRACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if TRACK.try_with(|t| t.get()).unwrap_or(false) {
            ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { std::alloc::System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
        if TRACK.try_with(|t| t.get()).unwrap_or(false) {
            ALLOCS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn spans_deeper_or_longer_than_the_stack_allocate_nothing() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    let allocs = std::thread::spawn(|| {
        drop(typhon_recorder::span("first")); // claims the slot: may allocate
        let names: Vec<String> = (0..100).map(|i| "s".repeat(1 + i * 7)).collect();
        let mut guards: Vec<SpanGuard> = Vec::with_capacity(200);
        TRACK.with(|t| t.set(true));
        for round in 0..20 {
            for name in names.iter().cycle().skip(round).take(100) {
                guards.push(typhon_recorder::span(name));
            }
            let _ = typhon_recorder::span_begin("begun", None, None);
            // Outermost first: ends them all at once.
            guards.truncate(0);
        }
        TRACK.with(|t| t.set(false));
        ALLOCS.load(std::sync::atomic::Ordering::Relaxed)
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    assert_eq!(
        allocs, 0,
        "allocations on the span path after the first event"
    );
    assert!(
        stats.slot(1).unwrap().refused > 0,
        "the stack's room was passed"
    );
}

/// Static names (SPEC §15) allocate nothing after the thread's first event either: defining a
/// name, finding it again, and writing one inline because the slot's table is full; for spans,
/// instants, phases and counters (per-tick gauges included).
#[test]
fn static_names_defined_found_or_past_the_table_allocate_nothing() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = recorder(&sink);
    // More than the 32 names a 64 KiB ring's table holds.
    let names: Vec<&'static str> = (0..50)
        .map(|i| &*Box::leak(format!("static-{i}").into_boxed_str()))
        .collect();
    let allocs = std::thread::spawn(move || {
        drop(typhon_recorder::span("first")); // claims the slot: may allocate
        TRACK.with(|t| t.set(true));
        for _ in 0..3 {
            for &n in &names {
                let _p = typhon_recorder::phase(2, n);
                drop(typhon_recorder::span_static(n));
                typhon_recorder::named_instant_static(n, 1);
                typhon_recorder::counter(n, 5);
                typhon_recorder::counter_f64(n, 0.5);
                typhon_recorder::counter_named(n, 2);
                typhon_recorder::counter!("literal counter", 3u64);
                typhon_recorder::tick_end_with_gauges(0, 1, &[(n, 1), ("bytes", 5 << 20)]);
            }
        }
        TRACK.with(|t| t.set(false));
        ALLOCS.load(std::sync::atomic::Ordering::Relaxed)
    })
    .join()
    .unwrap();
    let defs = rec.slot_definitions(1, 0);
    rec.finish().unwrap();
    assert_eq!(allocs, 0, "allocations on the static name path");
    assert!(defs.inline > 0, "the table's room was passed");
}

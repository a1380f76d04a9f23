//! Allocations the layer makes on the hot path, counted by a counting allocator over a
//! request-like loop (spans with fields, enter and exit, a span entered on several polls,
//! `Span::record`, events): the same loop through the Registry alone and through the Registry
//! with `TyphonLayer`, the difference being the layer's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::{doc_lock, sink::NullSink, RecorderBuilder};
use typhon_tracing::TyphonLayer;

/// Counts the allocations (and reallocations) of the thread that armed it.
struct Counting;

thread_local! {
    /// `None` while not counting; a plain `Cell` with no destructor, so reading it from the
    /// allocator allocates nothing.
    static COUNT: Cell<Option<u64>> = const { Cell::new(None) };
}

fn bump() {
    let _ = COUNT.try_with(|c| {
        if let Some(n) = c.get() {
            c.set(Some(n + 1));
        }
    });
}

// SAFETY: every call is passed on to `System` unchanged; counting touches only a thread-local
// `Cell`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Allocations of this thread while `f` runs.
fn count(f: impl FnOnce()) -> u64 {
    COUNT.with(|c| c.set(Some(0)));
    f();
    COUNT.with(|c| c.replace(None)).unwrap_or(0)
}

/// One request: a span with fields entered around its work, a database span inside with a
/// field recorded later, an async-style span entered on three polls, a Bevy-style system span
/// (its `name` field names it), and three events.
fn request(i: u64) {
    let req = tracing::info_span!("request", method = "GET", path = "/users/42", id = i);
    let _r = req.enter();
    tracing::info!(status = 200u64, bytes = 512u64, "handled");
    let db = tracing::debug_span!(
        "db",
        query = "select name from users where id = ?",
        rows = tracing::field::Empty
    );
    db.in_scope(|| tracing::debug!(n = 3, cached = false, "fetched"));
    db.record("rows", 3);
    let task = tracing::info_span!("poll", task = i);
    for _ in 0..3 {
        task.in_scope(|| {});
    }
    tracing::info_span!("system", name = "physics").in_scope(|| {});
    tracing::warn!(latency_ms = 1.5, "slow");
}

const REQUESTS: u64 = 2_000;

/// Allocations of `REQUESTS` requests through `d`, after as many to warm up (the thread's
/// slot and ring, the Registry's slab pages, the layer's buffers and names).
fn allocations(d: &Dispatch) -> u64 {
    tracing::dispatcher::with_default(d, || {
        for i in 0..REQUESTS {
            request(i);
        }
        count(|| {
            for i in 0..REQUESTS {
                request(i);
            }
        })
    })
}

#[test]
fn the_layer_allocates_nothing_per_span_or_event_once_warm() {
    let _g = doc_lock();
    let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
    let registry = allocations(&Dispatch::new(tracing_subscriber::registry()));
    let ours = allocations(&Dispatch::new(
        tracing_subscriber::registry().with(TyphonLayer::new()),
    ));
    let stats = rec.finish().unwrap();
    let per = |n: u64| n as f64 / REQUESTS as f64;
    eprintln!(
        "allocations a request: Registry {}, Registry + TyphonLayer {}",
        per(registry),
        per(ours)
    );
    assert_eq!(stats.total_missed(), 0);
    // Nothing: span data, fields, names, enters, exits, records and events allocate nothing
    // once warm. The Registry's own allocations (a slab page it may still grow) are in both
    // runs; ours may grow none where the Registry alone did.
    assert_eq!(
        ours.saturating_sub(registry),
        0,
        "a request: Registry {}, ours {}",
        per(registry),
        per(ours)
    );
}

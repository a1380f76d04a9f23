//! Instruction counts per call, repeatable on a noisy machine: each body is its own
//! `#[inline(never)]` function making 10 000 calls, so callgrind can count it alone.
//!
//! ```text
//! cargo build --release -p typhon-bench --example instr
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     --toggle-collect='instr::body_*' target/release/examples/instr
//! callgrind_annotate /tmp/cg.out | grep body_   # Ir / 10 000 = instructions per call
//! ```
use std::hint::black_box;
use tracing_subscriber::prelude::*;
use typhon_recorder::{sink::NullSink, RecorderBuilder};

const N: u64 = 10_000;

#[inline(never)]
fn body_write_clock() {
    for i in 0..N {
        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
    }
}

#[inline(never)]
fn body_write_caller_ts(now: u64) {
    for i in 0..N {
        typhon_recorder::ingress_received_at(Some(black_box(now + i)), i as u32, 1, 2, 64);
    }
}

#[inline(never)]
fn body_span() {
    for _ in 0..N {
        let s = typhon_recorder::span(black_box("update"));
        black_box(&s);
    }
}

#[inline(never)]
fn body_span_caller_ts(now: u64) {
    for i in 0..N {
        let s = typhon_recorder::span_at(black_box("update"), now + 2 * i);
        s.end_at(now + 2 * i + 1);
    }
}

#[inline(never)]
fn body_span_static() {
    for _ in 0..N {
        let s = typhon_recorder::span_static(black_box("update"));
        black_box(&s);
    }
}

#[inline(never)]
fn body_span_static_caller_ts(now: u64) {
    for i in 0..N {
        let s = typhon_recorder::span_static_at(black_box("update"), now + 2 * i);
        s.end_at(now + 2 * i + 1);
    }
}

#[inline(never)]
fn body_tracing_span(s: &tracing::Span) {
    for _ in 0..N {
        let g = s.enter();
        black_box(&g);
    }
}

struct Nothing;
impl<S: tracing_core::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

#[inline(never)]
fn body_tracing_floor(s: &tracing::Span) {
    for _ in 0..N {
        let g = s.enter();
        black_box(&g);
    }
    // Not the same machine code as `body_tracing_span`, which the linker would fold into one.
    black_box("floor");
}

fn main() {
    let rec = RecorderBuilder::new()
        .sink(NullSink)
        .start()
        .expect("recorder");
    typhon_recorder::tick_start();
    let now = rec.now();
    // Each body twice: the first warms the ring's pages and the caches, then the recorder
    // drains, so the second (the one to read) writes into a drained, warm ring.
    for _ in 0..2 {
        body_write_clock();
        rec.drain();
        body_write_caller_ts(now);
        rec.drain();
        body_span();
        rec.drain();
        body_span_caller_ts(now);
        rec.drain();
        body_span_static();
        rec.drain();
        body_span_static_caller_ts(now);
        rec.drain();
    }
    let floor = tracing::Dispatch::new(tracing_subscriber::registry().with(Nothing));
    let ours = tracing::Dispatch::new(
        tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()),
    );
    let system = || tracing::info_span!("system", name = "physics");
    let (fs, os) = (
        tracing::dispatcher::with_default(&floor, system),
        tracing::dispatcher::with_default(&ours, system),
    );
    for _ in 0..2 {
        tracing::dispatcher::with_default(&floor, || body_tracing_floor(&fs));
        tracing::dispatcher::with_default(&ours, || body_tracing_span(&os));
        rec.drain();
    }
    drop((fs, os));
    let s = rec.finish().expect("finish");
    println!("{} records, {} missed", s.user_written(), s.total_missed());
}

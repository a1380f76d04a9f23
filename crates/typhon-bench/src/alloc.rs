//! The counter and allocator figures, each timed side by side with its floor in one run:
//! `counter` (a static name: a 25-byte CounterId) beside the fixed 24-byte write with the
//! recorder's clock; and an allocation-heavy loop through `System` beside the same loop through
//! `TrackingAllocator<System>`, with a recorder running and the thread's slot claimed, so the
//! tracking allocator's samples (every 256 calls a clock look, every 100 µs four counters) are
//! in its figure.

use crate::report::BenchReport;
use crate::timer::{figure, settle_recorder, ticks, Timer};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Duration;
use typhon_recorder::sink::NullSink;
use typhon_recorder::{RecorderBuilder, TrackingAllocator};

const RUN: u64 = 20_000;

/// Blocks kept live at once by [`churn`]: a working set of a few KiB, as a program's
/// short-lived allocations are.
const LIVE: usize = 64;

/// `n` allocations (and as many frees) through `a`: sizes 16 to 528 bytes in a fixed pseudo-
/// random order, each block written once, freed `LIVE` allocations later.
#[inline(never)]
fn churn<A: GlobalAlloc>(a: &A, n: u64) {
    let mut live = [(std::ptr::null_mut::<u8>(), 16usize); LIVE];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n as usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 16 + (x % 33) as usize * 16;
        let slot = &mut live[i % LIVE];
        if !slot.0.is_null() {
            // SAFETY: allocated below through `a` with this size and align 8, freed once.
            unsafe { a.dealloc(slot.0, Layout::from_size_align_unchecked(slot.1, 8)) };
        }
        // SAFETY: a non-zero size, align 8.
        let p = unsafe { a.alloc(Layout::from_size_align_unchecked(size, 8)) };
        if !p.is_null() {
            // SAFETY: `p` holds at least 16 bytes.
            unsafe { p.write_volatile(i as u8) };
        }
        *slot = (black_box(p), size);
    }
    for (p, size) in live {
        if !p.is_null() {
            // SAFETY: as above.
            unsafe { a.dealloc(p, Layout::from_size_align_unchecked(size, 8)) };
        }
    }
}

/// Both pairs of figures, with their own recorder (a `NullSink`, flushed every ms); each
/// round times one run of each body, alternating which goes first, and each figure is the
/// median over the rounds. Recorder runs start from a drained ring.
pub(crate) fn counters_and_allocator(r: &mut BenchReport, t: &Timer) {
    let Ok(rec) = RecorderBuilder::new()
        .sink(NullSink)
        .flush_interval(Duration::from_millis(1))
        .start()
    else {
        return;
    };
    typhon_recorder::register_thread();
    let npt = t.ns_per_tick;
    let rounds = t.runs * 3;
    let per_op = |t0: u64, t1: u64, n: u64| (t1 - t0) as f64 * npt / n as f64;

    let write = || {
        for i in 0..RUN {
            typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
        }
    };
    let counter = || {
        for i in 0..RUN {
            typhon_recorder::counter("queue depth", black_box(i as i64));
        }
    };
    let (mut floor, mut count) = (Vec::new(), Vec::new());
    write();
    counter();
    settle_recorder();
    for round in 0..rounds {
        let time = |body: &dyn Fn(), into: &mut Vec<f64>| {
            let t0 = ticks();
            body();
            into.push(per_op(t0, ticks(), RUN));
            settle_recorder();
        };
        if round % 2 == 0 {
            time(&write, &mut floor);
            time(&counter, &mut count);
        } else {
            time(&counter, &mut count);
            time(&write, &mut floor);
        }
    }
    r.counter_floor = figure(floor);
    r.counter = figure(count);

    let tracking = TrackingAllocator::new(System);
    let n = t.n / 4 + 1;
    churn(&System, n);
    churn(&tracking, n);
    let (mut sys, mut trk) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut run_sys = || {
            let t0 = ticks();
            churn(&System, n);
            sys.push(per_op(t0, ticks(), n));
        };
        let mut run_trk = || {
            let t0 = ticks();
            churn(&tracking, n);
            trk.push(per_op(t0, ticks(), n));
        };
        if round % 2 == 0 {
            run_sys();
            run_trk();
        } else {
            run_trk();
            run_sys();
        }
        settle_recorder();
    }
    r.system_alloc = figure(sys);
    r.tracking_alloc = figure(trk);
    let _ = rec.finish();
}

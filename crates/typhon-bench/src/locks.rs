//! The lock figures: `TracedMutex` against the plain `parking_lot::Mutex` it wraps, each a
//! lock and an unlock of a free lock (the path that must record nothing), timed side by side.

use crate::report::BenchReport;
use crate::timer::{figure, ticks, Timer};
use std::hint::black_box;

/// `n` lock + unlock pairs of a free `parking_lot::Mutex`.
#[inline(never)]
fn plain(m: &parking_lot::Mutex<u64>, n: u64) {
    for _ in 0..n {
        *black_box(m).lock() += 1;
    }
}

/// `n` lock + unlock pairs of a free `TracedMutex`.
#[inline(never)]
fn traced(m: &typhon_recorder::TracedMutex<u64>, n: u64) {
    for _ in 0..n {
        *black_box(m).lock() += 1;
    }
}

/// Both figures: one run of each per round, alternating which goes first, so the machine's slow
/// and fast stretches fall on both alike; the figures are the medians over the rounds.
pub(crate) fn mutexes(r: &mut BenchReport, t: &Timer) {
    let p = parking_lot::Mutex::new(0u64);
    let q = typhon_recorder::TracedMutex::new("bench lock", 0u64);
    plain(&p, t.n / 4 + 1);
    traced(&q, t.n / 4 + 1);
    let per_call = |t0: u64, t1: u64| (t1 - t0) as f64 * t.ns_per_tick / t.n as f64;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for round in 0..t.runs * 2 {
        let mut run_plain = || {
            let t0 = ticks();
            plain(&p, t.n);
            a.push(per_call(t0, ticks()));
        };
        let mut run_traced = || {
            let t0 = ticks();
            traced(&q, t.n);
            b.push(per_call(t0, ticks()));
        };
        if round % 2 == 0 {
            run_plain();
            run_traced();
        } else {
            run_traced();
            run_plain();
        }
    }
    r.mutex_plain = figure(a);
    r.mutex_traced = figure(b);
}

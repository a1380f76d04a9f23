//! The disabled figures: a write with no recorder installed, the cost instrumentation adds to a
//! program that is not recording. Their runs are spread over the whole benchmark
//! ([`DisabledRuns`]), between the other phases.

use crate::timer::{ticks, Timer};
use std::time::{Duration, Instant};

/// The disabled figure's runs. A disabled call costs about a nanosecond, and this machine's
/// speed for such a loop drifts by up to 2x over stretches of ~100 ms (an empty loop drifts
/// with it), so the runs are not taken all at once: a first batch comes before any helper thread
/// exists, then two more runs between each of the later phases (no recorder is installed
/// there), and the figure is the median over all of them.
pub(crate) struct DisabledRuns {
    /// 20x more calls per run than the other figures, so a run lasts milliseconds rather than
    /// the ~0.2 ms in which timer and frequency ramp-up effects dominate.
    n: u64,
    ns_per_tick: f64,
    /// [`disabled_calls`]: eight calls per loop iteration (the counted figure).
    pub(crate) runs: Vec<f64>,
    /// [`disabled_loop_calls`]: one call per loop iteration, timed right after each of the
    /// above (context).
    pub(crate) loop_runs: Vec<f64>,
}

impl DisabledRuns {
    pub(crate) fn new(t: &Timer) -> Self {
        // The core may have slowed down during the clock calibration's sleep: spin first, so
        // the first runs do not measure a clock ramp-up.
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(200) {
            disabled_calls(10_000);
        }
        let mut d = Self {
            n: t.n * 20,
            ns_per_tick: t.ns_per_tick,
            runs: Vec::new(),
            loop_runs: Vec::new(),
        };
        d.take(t.runs);
        d
    }

    pub(crate) fn take(&mut self, runs: usize) {
        let per_call = |f: fn(u64), n: u64| {
            let t0 = ticks();
            f(n);
            (ticks() - t0) as f64 * self.ns_per_tick / n as f64
        };
        for _ in 0..runs {
            let a = per_call(disabled_calls, self.n);
            let b = per_call(disabled_loop_calls, self.n);
            self.runs.push(a);
            self.loop_runs.push(b);
        }
    }
}

/// `n` calls (a multiple of 8) with nothing installed, eight per loop iteration: what a disabled
/// call adds to straight-line code (one byte load, two compares and branches not taken), with
/// the loop's own increment, compare and taken branch spread over eight calls rather than
/// counted with each. Its own function so its loop is compiled on its own: inlined into `run`,
/// register pressure there made the compiler reload the flag table's address in every
/// iteration, a cost of the harness's surroundings that a call site in a program does not have.
/// The arguments are not passed through `black_box`: the disabled path never reads them, so that
/// would only add a store and a reload per call to the figure; no call can be optimised away,
/// because each one's flag load is atomic (the compiler keeps every one).
#[inline(never)]
fn disabled_calls(n: u64) {
    for i in 0..n / 8 {
        let i = i as u32;
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
        typhon_recorder::ingress_received(i, 1, 2, 64);
    }
}

/// `n` calls with nothing installed, one per loop iteration (reported as context): the loop's taken branch is counted with every call, so where the
/// linker happens to place this 9-instruction loop (inside one 64-byte block or across two)
/// moves the figure by up to 2x on a slow stretch of the machine.
#[inline(never)]
fn disabled_loop_calls(n: u64) {
    for i in 0..n {
        typhon_recorder::ingress_received(i as u32, 1, 2, 64);
    }
}

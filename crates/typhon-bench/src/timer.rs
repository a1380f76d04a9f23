//! Timing primitives: raw and fenced TSC reads, the dither that keeps a bracket's rounding
//! unbiased, the clock's calibration and resolution, and [`Timer`], which turns loops of calls
//! into ns/op figures.
//!
//! Whole loops are timed with [`ticks`] (no fences: the loop's length hides where the reads
//! land), single calls with [`fenced_ticks`] brackets (earlier instructions finish before the
//! read, later ones start after it).

use crate::report::NsFigure;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Raw timestamp for loop timing (no fences: whole loops are timed): `rdtsc` on x86_64, quanta's
/// raw counter elsewhere. Shared with `examples/stall_probe.rs`.
///
/// ```
/// use typhon_bench::ticks;
/// let (a, b) = (ticks(), ticks());
/// assert!(b >= a);
/// ```
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc is available on every x86_64 CPU and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        QUANTA.with(|q| q.raw())
    }
}

/// Fenced timestamp for per-call brackets: earlier instructions finish before it is read and
/// later ones do not start before it is read (`lfence; rdtsc; lfence` on x86_64). Shared with
/// `examples/stall_probe.rs`.
///
/// ```
/// use typhon_bench::fenced_ticks;
/// let t0 = fenced_ticks();
/// std::hint::black_box(1 + 1);
/// assert!(fenced_ticks() >= t0);
/// ```
#[inline(always)]
pub fn fenced_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: lfence and rdtsc are available on every x86_64 CPU (SSE2 is baseline) and have
        // no preconditions.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        QUANTA.with(|q| q.raw())
    }
}

/// The pseudo-random delay before each bracket of the paced latency phase: 0–63 steps of an
/// empty loop (xorshift64), so that a call shorter than one step of the clock rounds up or down
/// at random instead of the same way every time. Shared with `examples/stall_probe.rs`.
///
/// ```
/// let mut d = typhon_bench::Dither::new();
/// d.wait(); // a few nanoseconds
/// ```
pub struct Dither(u64);

impl Dither {
    /// A dither starting from a fixed seed, so every run waits the same sequence of delays.
    ///
    /// ```
    /// let _ = typhon_bench::Dither::new();
    /// ```
    pub const fn new() -> Self {
        Self(0x9e37_79b9_7f4a_7c15)
    }

    /// Waits the next delay.
    ///
    /// ```
    /// let mut d = typhon_bench::Dither::default();
    /// for _ in 0..3 {
    ///     d.wait();
    /// }
    /// ```
    #[inline(always)]
    pub fn wait(&mut self) {
        let mut r = self.0;
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        self.0 = r;
        for j in 0..r & 63 {
            black_box(j);
        }
    }
}

impl Default for Dither {
    fn default() -> Self {
        Self::new()
    }
}

/// Raw ticks of one call of `f` between two [`fenced_ticks`] (the bracket's own cost included).
#[inline(always)]
pub(crate) fn bracketed<R>(f: impl FnOnce() -> R) -> u64 {
    let t0 = fenced_ticks();
    black_box(f());
    fenced_ticks() - t0
}

#[cfg(not(target_arch = "x86_64"))]
thread_local! {
    static QUANTA: quanta::Clock = quanta::Clock::new();
}

/// Nanoseconds per tick of [`ticks`], calibrated against `Instant` over ~20 ms.
pub(crate) fn ns_per_tick() -> f64 {
    let (i0, t0) = (Instant::now(), ticks());
    std::thread::sleep(Duration::from_millis(20));
    let (i1, t1) = (Instant::now(), ticks());
    i1.duration_since(i0).as_nanos() as f64 / (t1 - t0).max(1) as f64
}

/// How a phase takes its ns/op figures: `runs` timed runs of `n` calls each after a warm-up,
/// the median run being the figure.
#[derive(Clone, Copy)]
pub(crate) struct Timer {
    pub(crate) ns_per_tick: f64,
    pub(crate) runs: usize,
    pub(crate) n: u64,
    /// Called before each timed run: waits until the flusher has drained the ring, so every run
    /// starts with an empty ring and none of them measures the ring-full (drop) path.
    pub(crate) settle: Option<fn()>,
}

/// Waits until the installed recorder's flusher has drained everything written so far.
pub(crate) fn settle_recorder() {
    typhon_recorder::probe::drain_installed();
}

impl Timer {
    /// Runs `body(n)` (which must make `n` calls) `runs` times after one warm-up, returning the
    /// median, min and max ns per call.
    pub(crate) fn measure(&self, mut body: impl FnMut(u64)) -> NsFigure {
        body(self.n / 4 + 1);
        let v: Vec<f64> = (0..self.runs)
            .map(|_| {
                if let Some(s) = self.settle {
                    s();
                }
                let t0 = ticks();
                body(self.n);
                let t1 = ticks();
                (t1 - t0) as f64 * self.ns_per_tick / self.n as f64
            })
            .collect();
        figure(v)
    }

    /// Like [`measure`](Self::measure) for batched operations: `body` times its own batches and
    /// returns (ticks spent in timed parts, calls made).
    pub(crate) fn measure_self_timed(&self, mut body: impl FnMut(u64) -> (u64, u64)) -> NsFigure {
        body(self.n / 4 + 1);
        let v: Vec<f64> = (0..self.runs)
            .map(|_| {
                let (t, calls) = body(self.n);
                t as f64 * self.ns_per_tick / calls.max(1) as f64
            })
            .collect();
        figure(v)
    }
}

/// Median, fastest and slowest of per-call figures.
pub(crate) fn figure(mut v: Vec<f64>) -> NsFigure {
    v.sort_by(|a, b| a.total_cmp(b));
    NsFigure {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// The smallest non-zero difference between two back-to-back [`ticks`] reads, in ticks: the
/// clock's resolution as a bracket sees it (a step of the TSC where it advances in steps, the
/// read's own latency where it does not).
pub(crate) fn tick_resolution() -> u64 {
    (0..10_000)
        .map(|_| {
            let a = ticks();
            let b = ticks();
            b.wrapping_sub(a)
        })
        .filter(|&d| d > 0 && d < 1 << 20)
        .min()
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_resolution_is_a_positive_step() {
        assert!(tick_resolution() >= 1);
    }
}

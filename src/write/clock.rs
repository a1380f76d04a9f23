//! Time: raw TSC ticks on the hot path, nanoseconds on the CLOCK_MONOTONIC time base in files.
//!
//! Producers read [`Clock::raw`] (quanta's TSC source: one `rdtsc`, no syscall). The flusher turns
//! ticks into nanoseconds with [`Clock::to_ns`], anchored at session start to a
//! `clock_gettime(CLOCK_MONOTONIC)` reading, so a recording lines up with other tools' monotonic
//! timestamps (and with `trace-cmd`'s `mono` clock).

use std::time::{SystemTime, UNIX_EPOCH};

/// A calibrated tick clock with its session anchor.
///
/// ```
/// use typhon_recorder::clock::Clock;
/// let c = Clock::new();
/// let a = c.raw();
/// let b = c.raw();
/// assert!(c.to_ns(b) >= c.to_ns(a));
/// ```
#[derive(Clone, Debug)]
pub struct Clock {
    /// What producers read: the TSC inline, or quanta's own read.
    read: RawClock,
    raw0: u64,
    mono0: u64,
    wall0: u64,
    /// Ticks per nanosecond, for the (rare) ns → ticks direction.
    ticks_per_ns: f64,
    /// Nanoseconds per tick as a 24.40 fixed-point factor: `ns = ticks * mult >> 40`, quanta's
    /// own conversion factor read once, so the flusher converts with a multiply and a shift.
    mult: u64,
}

/// Fraction bits of [`Clock`]'s tick → ns factor.
const MULT_SHIFT: u32 = 40;

/// Reads CLOCK_MONOTONIC in nanoseconds.
///
/// ```
/// let a = typhon_recorder::clock::monotonic_ns();
/// assert!(typhon_recorder::clock::monotonic_ns() >= a);
/// ```
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME now, in UNIX ns (0 before the epoch).
///
/// ```
/// assert!(typhon_recorder::clock::wall_ns() > 1_600_000_000_000_000_000);
/// ```
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    /// Calibrates (once per process, inside quanta) and anchors the clock now.
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// assert!(c.wall_anchor_ns() > 1_600_000_000_000_000_000);
    /// ```
    pub fn new() -> Self {
        let q = quanta::Clock::new();
        let read = RawClock::detect(&q);
        let raw0 = q.raw();
        let mono0 = monotonic_ns();
        let wall0 = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        const SPAN: u64 = 1 << MULT_SHIFT;
        // quanta's nanoseconds for 2^40 ticks: the fixed-point factor, exactly as precise as
        // quanta's own scaling (which also multiplies and shifts).
        let ns = q.delta_as_nanos(raw0, raw0 + SPAN).max(1);
        Self {
            read,
            raw0,
            mono0,
            wall0,
            ticks_per_ns: SPAN as f64 / ns as f64,
            mult: ns,
        }
    }

    /// The current time in raw ticks (the hot-path clock read).
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// let _t: u64 = c.raw();
    /// ```
    #[inline(always)]
    pub fn raw(&self) -> u64 {
        self.read.raw()
    }

    /// The hot-path reader of this clock, for producers to keep beside their ring.
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// let r = c.raw_clock();
    /// assert!(c.to_ns(r.raw()) > 0);
    /// ```
    pub fn raw_clock(&self) -> RawClock {
        self.read.clone()
    }

    /// Converts raw ticks to nanoseconds on the CLOCK_MONOTONIC time base (saturating at 0 and
    /// at `u64::MAX`, so that no tick value, however far off, wraps around).
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// let before = typhon_recorder::clock::monotonic_ns();
    /// let t = c.to_ns(c.raw());
    /// let after = typhon_recorder::clock::monotonic_ns();
    /// assert!(t + 1_000_000 >= before && t <= after + 1_000_000);
    /// ```
    #[inline]
    pub fn to_ns(&self, raw: u64) -> u64 {
        let scale = |d: u64| {
            u64::try_from((d as u128 * self.mult as u128) >> MULT_SHIFT).unwrap_or(u64::MAX)
        };
        if raw >= self.raw0 {
            self.mono0.saturating_add(scale(raw - self.raw0))
        } else {
            self.mono0.saturating_sub(scale(self.raw0 - raw))
        }
    }

    /// How many ticks a duration may have for its conversion to stay within `ns`: the
    /// difference of two [`Clock::to_ns`] conversions rounds up to one ns past the factor's
    /// own (and across the anchor, once more), which the bound leaves room for.
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// let t = c.raw();
    /// let d = c.ticks_within_ns(u64::from(u32::MAX));
    /// assert!(c.to_ns(t + d) - c.to_ns(t) <= u64::from(u32::MAX));
    /// assert!(c.to_ns(t + 2 * d) - c.to_ns(t) > u64::from(u32::MAX));
    /// ```
    pub fn ticks_within_ns(&self, ns: u64) -> u64 {
        let m = ns.saturating_sub(4) as u128;
        u64::try_from((m << MULT_SHIFT) / self.mult as u128).unwrap_or(u64::MAX)
    }

    /// Converts nanoseconds on the CLOCK_MONOTONIC time base to raw ticks, for callers that
    /// supply their own timestamps (inverse of [`Clock::to_ns`] up to rounding).
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// let ns = typhon_recorder::clock::monotonic_ns();
    /// let back = c.to_ns(c.ns_to_raw(ns));
    /// assert!(back.abs_diff(ns) < 1_000);
    /// ```
    pub fn ns_to_raw(&self, ns: u64) -> u64 {
        let d = (ns as f64 - self.mono0 as f64) * self.ticks_per_ns;
        (self.raw0 as f64 + d).max(0.0) as u64
    }

    /// CLOCK_MONOTONIC nanoseconds at session start.
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// assert!(c.monotonic_anchor_ns() <= typhon_recorder::clock::monotonic_ns());
    /// ```
    pub fn monotonic_anchor_ns(&self) -> u64 {
        self.mono0
    }

    /// UNIX time in nanoseconds at session start (the wall-clock anchor stored in files).
    ///
    /// ```
    /// let c = typhon_recorder::clock::Clock::new();
    /// assert!(c.wall_anchor_ns() > 0);
    /// ```
    pub fn wall_anchor_ns(&self) -> u64 {
        self.wall0
    }
}

/// The producers' clock read: raw ticks on the time base of a [`Clock`].
///
/// quanta reads the TSC when it is invariant and usable, and falls back to CLOCK_MONOTONIC
/// otherwise. Its read is an out-of-line call with a match on the source; when the source is the
/// TSC, this type reads it inline instead (`rdtsc`, the same value quanta would return), which
/// saves the call on every event. Detected once, by checking that quanta's reading lies
/// between two TSC reads.
///
/// ```
/// let r = typhon_recorder::clock::Clock::new().raw_clock();
/// let (a, b) = (r.raw(), r.raw());
/// assert!(b >= a);
/// ```
#[derive(Clone, Debug)]
pub enum RawClock {
    /// `rdtsc`, inline.
    Tsc,
    /// quanta's read (its source is not the TSC here).
    Quanta(quanta::Clock),
}

impl RawClock {
    fn detect(q: &quanta::Clock) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let tsc = (0..3).all(|_| {
                let a = tsc_now();
                let v = q.raw();
                let b = tsc_now();
                a <= v && v <= b
            });
            if tsc {
                return RawClock::Tsc;
            }
        }
        RawClock::Quanta(q.clone())
    }

    /// The current time in raw ticks.
    ///
    /// ```
    /// let c = typhon_recorder::Clock::new().raw_clock();
    /// assert!(c.raw() <= c.raw());
    /// ```
    #[inline(always)]
    pub fn raw(&self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            RawClock::Tsc => tsc_now(),
            #[cfg(not(target_arch = "x86_64"))]
            RawClock::Tsc => unreachable!("the TSC reader is only chosen on x86_64"),
            RawClock::Quanta(q) => q.raw(),
        }
    }
}

/// A [`RawClock`] as a thread's writer keeps it: the `Quanta` case boxed, so that it is a tag
/// and one word, in the writer's first cache line. `repr(u8)`: the tag is a byte with room for
/// other values, the writer's largest niche, which rustc takes to tell the thread-local
/// `Option` that holds the writer from `None`, so a write's check that it has a writer and its
/// check of the clock read the same word (a layout choice of the compiler: only speed depends
/// on it).
#[repr(u8)]
pub(crate) enum ThreadClock {
    Tsc,
    Quanta(Box<quanta::Clock>),
}

impl From<RawClock> for ThreadClock {
    fn from(c: RawClock) -> Self {
        match c {
            RawClock::Tsc => ThreadClock::Tsc,
            RawClock::Quanta(q) => ThreadClock::Quanta(Box::new(q)),
        }
    }
}

impl ThreadClock {
    /// As [`RawClock::raw`].
    #[inline(always)]
    pub(crate) fn raw(&self) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            ThreadClock::Tsc => tsc_now(),
            #[cfg(not(target_arch = "x86_64"))]
            ThreadClock::Tsc => unreachable!("the TSC reader is only chosen on x86_64"),
            ThreadClock::Quanta(q) => q.raw(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc_now() -> u64 {
    // SAFETY: rdtsc exists on every x86_64 CPU and has no preconditions (no fence: like quanta,
    // the read may move within the instruction stream, which per-event timestamps tolerate).
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_matches_quanta_scaling() {
        let c = Clock::new();
        let q = quanta::Clock::new();
        for shift in 0..48 {
            let d = (1u64 << shift) + 12345;
            let ours = c.to_ns(c.raw0 + d) - c.mono0;
            let theirs = q.delta_as_nanos(c.raw0, c.raw0 + d);
            // Both multiply by quanta's factor; they may round differently by a nanosecond.
            assert!(ours.abs_diff(theirs) <= 1, "delta {d}: {ours} vs {theirs}");
        }
        assert_eq!(c.to_ns(c.raw0), c.mono0);
        assert!(c.to_ns(c.raw0 - 1000) < c.mono0);
    }
}

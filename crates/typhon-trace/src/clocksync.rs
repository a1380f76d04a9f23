//! A recording's clock, re-anchored (SPEC §16): record times are the recorder's tick clock
//! converted to ns at the session's start, which drifts from CLOCK_MONOTONIC by parts per
//! million (−0.62 ppm measured: 2.2 ms an hour). The recorder writes a ClockSync record (kind
//! 254, slot 0) at each segment's start and at least every minute, pairing a record time with
//! CLOCK_MONOTONIC and UNIX time read with it. [`ClockMap`] maps a record's time through them,
//! piecewise linearly between two syncs (and with slope 1 before the first and after the last),
//! so that a time's error is what the tick clock drifts within one interval, whatever the run's
//! length. A file without syncs maps through its metadata's anchor alone, as before.

use crate::tracedat::TraceFile;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::codec::TraceEventKind as K;

/// One clock-sync: a record time with the CLOCK_MONOTONIC and UNIX times read with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The record time (the file's clock, ns).
    pub ts: u64,
    /// CLOCK_MONOTONIC ns at `ts`.
    pub mono_ns: u64,
    /// UNIX ns at `ts`.
    pub wall_ns: i128,
}

/// The anchors of one recording, in time order (see the module).
///
/// ```
/// use typhon_trace::clocksync::{Anchor, ClockMap};
/// // The tick clock ran 1 µs slow over a second: the second sync says so.
/// let m = ClockMap::from_anchors(vec![
///     Anchor { ts: 1_000_000_000, mono_ns: 1_000_000_000, wall_ns: 5_000_000_000 },
///     Anchor { ts: 2_000_000_000, mono_ns: 2_000_001_000, wall_ns: 6_000_001_000 },
/// ]);
/// assert_eq!(m.mono_ns(1_500_000_000), 1_500_000_500);
/// assert_eq!(m.wall_ns(1_500_000_000), Some(5_500_000_500));
/// assert_eq!(m.wall_ns(3_000_000_000), Some(7_000_001_000)); // slope 1 after the last
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockMap {
    anchors: Vec<Anchor>,
}

/// Most anchors kept: a sync a minute for two years. Past it, later syncs are ignored (times
/// then map through the last one kept).
pub const MAX_ANCHORS: usize = 1 << 20;

impl ClockMap {
    /// A map through `anchors` (sorted here by time; an anchor whose time or monotonic reading
    /// does not follow the previous one's, as only a damaged file has, is left out).
    pub fn from_anchors(mut anchors: Vec<Anchor>) -> Self {
        anchors.sort_by_key(|a| a.ts);
        let mut kept: Vec<Anchor> = Vec::with_capacity(anchors.len().min(MAX_ANCHORS));
        for a in anchors {
            if kept.len() >= MAX_ANCHORS {
                break;
            }
            if kept
                .last()
                .is_some_and(|p| a.ts <= p.ts || a.mono_ns < p.mono_ns)
            {
                continue;
            }
            kept.push(a);
        }
        Self { anchors: kept }
    }

    /// The map of `file`: its ClockSync records (slot 0), and its metadata's anchor when no sync
    /// comes at or before it. Empty for a file with neither (times then have no wall clock).
    pub fn of(file: &TraceFile) -> Self {
        let mut v = Vec::new();
        for r in file.stream_cpu(0).flatten() {
            if r.data.get(2) != Some(&K::CLOCK_SYNC.0) {
                continue;
            }
            if let Ok((
                h,
                Record::ClockSync {
                    monotonic_ns,
                    wall_ns,
                },
            )) = records::decode(&r.data)
            {
                v.push(Anchor {
                    ts: h.timestamp.max(0) as u64,
                    mono_ns: monotonic_ns,
                    wall_ns: i128::from(wall_ns),
                });
            }
            if v.len() >= MAX_ANCHORS {
                break;
            }
        }
        let meta = file
            .typhon_meta()
            .and_then(Result::ok)
            .filter(|m| m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0);
        if let Some(m) = meta {
            let t = m.mono_anchor_ns as u64;
            if v.iter().all(|a| a.ts > t) {
                // The session's anchor: the tick clock's ns are CLOCK_MONOTONIC's there.
                v.push(Anchor {
                    ts: t,
                    mono_ns: t,
                    wall_ns: i128::from(m.wall_anchor_ns),
                });
            }
        }
        Self::from_anchors(v)
    }

    /// The anchors, in time order.
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// The anchor in effect at `ts` (the last at or before it, else the first) and the next.
    fn around(&self, ts: u64) -> Option<(&Anchor, Option<&Anchor>)> {
        let i = self
            .anchors
            .partition_point(|a| a.ts <= ts)
            .saturating_sub(1);
        let a = self.anchors.get(i)?;
        Some((a, self.anchors.get(i + 1).filter(|_| ts >= a.ts)))
    }

    /// CLOCK_MONOTONIC ns at record time `ts` (`ts` itself without anchors).
    pub fn mono_ns(&self, ts: u64) -> u64 {
        match self.around(ts) {
            None => ts,
            Some((a, next)) => {
                let d = i128::from(ts) - i128::from(a.ts);
                let d = match next {
                    // Between two syncs: the interval's own rate.
                    Some(b) => {
                        d * (i128::from(b.mono_ns) - i128::from(a.mono_ns))
                            / (i128::from(b.ts) - i128::from(a.ts))
                    }
                    None => d,
                };
                (i128::from(a.mono_ns) + d).clamp(0, i128::from(u64::MAX)) as u64
            }
        }
    }

    /// The record time at UNIX ns `unix` (the inverse of [`wall_ns`](Self::wall_ns), in the
    /// interval whose sync last came at or before it), if the file has an anchor.
    ///
    /// ```
    /// use typhon_trace::clocksync::{Anchor, ClockMap};
    /// let m = ClockMap::from_anchors(vec![
    ///     Anchor { ts: 1_000, mono_ns: 1_000, wall_ns: 5_000 },
    ///     Anchor { ts: 2_000, mono_ns: 2_010, wall_ns: 6_010 },
    /// ]);
    /// assert_eq!(m.ts_at_wall(5_505), Some(1_500));
    /// assert_eq!(m.wall_ns(1_500), Some(5_505));
    /// ```
    pub fn ts_at_wall(&self, unix: i128) -> Option<u64> {
        let i = self
            .anchors
            .partition_point(|a| a.wall_ns <= unix)
            .saturating_sub(1);
        let a = self.anchors.get(i)?;
        let d = unix - a.wall_ns;
        let d = match self.anchors.get(i + 1).filter(|_| d >= 0) {
            Some(b) if b.mono_ns > a.mono_ns => {
                d * (i128::from(b.ts) - i128::from(a.ts))
                    / (i128::from(b.mono_ns) - i128::from(a.mono_ns))
            }
            _ => d,
        };
        Some((i128::from(a.ts) + d).clamp(0, i128::from(u64::MAX)) as u64)
    }

    /// UNIX ns at record time `ts`, if the file has an anchor.
    pub fn wall_ns(&self, ts: u64) -> Option<i128> {
        let (a, _) = self.around(ts)?;
        Some(a.wall_ns + i128::from(self.mono_ns(ts)) - i128::from(a.mono_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(ts: u64, mono: u64, wall: i128) -> Anchor {
        Anchor {
            ts,
            mono_ns: mono,
            wall_ns: wall,
        }
    }

    /// A tick clock 0.62 ppm slow over three days, synced every minute: every time maps within
    /// what it drifts in one minute (37 µs), while one anchor at the start is 160 ms off by the
    /// end.
    #[test]
    fn piecewise_syncs_bound_the_drift_to_one_interval() {
        const NS: u64 = 1_000_000_000;
        let drift = |t: u64| t + (t as f64 * 0.62e-6) as u64; // true mono at tick-time t
        let wall0: i128 = 1_700_000_000 * i128::from(NS);
        let syncs: Vec<Anchor> = (0..=3 * 24 * 60)
            .map(|k| {
                let t = 100 * NS + k * 60 * NS;
                a(
                    t,
                    drift(t - 100 * NS) + 100 * NS,
                    wall0 + i128::from(drift(t - 100 * NS)),
                )
            })
            .collect();
        let m = ClockMap::from_anchors(syncs.clone());
        let one = ClockMap::from_anchors(vec![syncs[0]]);
        let mut worst = 0i128;
        for t in (100 * NS..100 * NS + 3 * 86_400 * NS).step_by(7_777 * NS as usize) {
            let truth = wall0 + i128::from(drift(t - 100 * NS));
            worst = worst.max((m.wall_ns(t).unwrap() - truth).abs());
        }
        // Linear interpolation of a linear drift is exact but for rounding.
        assert!(worst <= 2, "worst {worst} ns");
        let end = 100 * NS + 3 * 86_400 * NS - NS;
        let off = one.wall_ns(end).unwrap() - (wall0 + i128::from(drift(end - 100 * NS)));
        assert!(off.abs() > 150_000_000, "one anchor drifts: {off}");
    }

    #[test]
    fn a_wall_clock_step_applies_from_its_sync_on() {
        // The wall clock was stepped (1 ns back) between the syncs.
        let m = ClockMap::from_anchors(vec![a(10, 10, 1000), a(20, 20, 1009)]);
        assert_eq!(m.wall_ns(15), Some(1005));
        assert_eq!(m.wall_ns(20), Some(1009));
        assert_eq!(m.wall_ns(25), Some(1014));
        // Before the first sync: slope 1 from it.
        assert_eq!(m.wall_ns(5), Some(995));
    }

    #[test]
    fn out_of_order_or_backward_anchors_are_left_out() {
        let m = ClockMap::from_anchors(vec![a(20, 20, 0), a(10, 10, 0), a(20, 25, 0), a(30, 5, 0)]);
        assert_eq!(m.anchors(), &[a(10, 10, 0), a(20, 20, 0)]);
        assert_eq!(ClockMap::default().wall_ns(5), None);
        assert_eq!(ClockMap::default().mono_ns(5), 5);
    }
}

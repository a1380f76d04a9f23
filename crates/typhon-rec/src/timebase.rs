//! The recording's times for people: relative to its start (the default), wall-clock (UTC,
//! from the file's anchor and its clock-syncs, SPEC §16) or raw monotonic (the file's own
//! clock, ns since boot).

use typhon_trace::clocksync::ClockMap;
use typhon_trace::tracedat::TraceFile;

/// How a time is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeMode {
    /// Seconds since the recording's start.
    Rel,
    /// UTC wall-clock time from the file's anchor (RFC 3339, ns).
    Wall,
    /// The file's monotonic clock: seconds since boot, as trace-cmd prints them.
    Mono,
}

/// The anchors that turn a record's monotonic time into the other forms.
#[derive(Clone, Debug)]
pub struct TimeBase {
    /// Monotonic ns of the recording's start: the session's anchor, or the first record's
    /// time for a file without one.
    pub start: u64,
    /// UNIX ns at `start`, if the file has a wall-clock anchor.
    pub wall_at_start: Option<i128>,
    /// The file's clock-syncs (with its anchor): wall-clock times map through them.
    pub clock: ClockMap,
}

impl TimeBase {
    /// The file's anchors; `first` (the first record's time) stands in for a missing start.
    pub fn of(f: &TraceFile, first: Option<u64>) -> Self {
        let meta = f.typhon_meta().and_then(Result::ok);
        match meta {
            Some(m) if m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0 => TimeBase {
                start: m.mono_anchor_ns as u64,
                wall_at_start: Some(i128::from(m.wall_anchor_ns)),
                clock: ClockMap::of(f),
            },
            _ => TimeBase {
                start: first.unwrap_or(0),
                wall_at_start: None,
                clock: ClockMap::default(),
            },
        }
    }

    /// What is wrong with the file's clock anchors, if anything, for a warning naming the
    /// field: its Typhon metadata does not read back, or lacks the wall-clock or monotonic
    /// anchor (times are then relative to the first record, and no wall-clock time can be
    /// shown). A file without Typhon metadata (a kernel trace) has nothing to say.
    pub fn anchor_problem(f: &TraceFile) -> Option<String> {
        match f.typhon_meta()? {
            Err(e) => Some(format!(
                "{e}: times are relative to the first record, without wall-clock times"
            )),
            Ok(m) => {
                let bad = [
                    ("wall_anchor_ns", m.wall_anchor_ns),
                    ("mono_anchor_ns", m.mono_anchor_ns),
                ]
                .into_iter()
                .find(|e| e.1 <= 0)?;
                Some(format!(
                    "the Typhon metadata has no clock anchor ({} is {}, missing or not after \
                     the epoch): times are relative to the first record, without wall-clock \
                     times",
                    bad.0, bad.1
                ))
            }
        }
    }

    /// Signed ns from the start (a record can precede the anchor by a little).
    pub fn rel_ns(&self, ts: u64) -> i128 {
        i128::from(ts) - i128::from(self.start)
    }

    /// UNIX ns of `ts`, if the file has a wall-clock anchor: through the clock-syncs.
    pub fn wall_ns(&self, ts: u64) -> Option<i128> {
        self.wall_at_start?;
        self.clock.wall_ns(ts)
    }

    /// The record time at UNIX ns `unix`, if the file has a wall-clock anchor (the inverse of
    /// [`wall_ns`](Self::wall_ns)).
    pub fn ts_at_wall(&self, unix: i128) -> Option<u64> {
        self.wall_at_start?;
        self.clock.ts_at_wall(unix)
    }

    /// `ts` printed in `mode` (a file without a wall-clock anchor prints relative times).
    pub fn show(&self, ts: u64, mode: TimeMode) -> String {
        match (mode, self.wall_ns(ts)) {
            (TimeMode::Mono, _) => secs(i128::from(ts)),
            (TimeMode::Wall, Some(w)) => rfc3339(w),
            (TimeMode::Rel | TimeMode::Wall, _) => format!("+{}", secs(self.rel_ns(ts))),
        }
    }
}

/// `12.000345678` (or `-0.000001000`).
pub fn secs(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// UNIX ns as `2024-05-01T12:00:00.123456789Z` (proleptic Gregorian, UTC).
pub fn rfc3339(unix_ns: i128) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000);
    let ns = unix_ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i128::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ns:09}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_times_are_utc_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            rfc3339(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456789Z"
        );
        assert_eq!(
            rfc3339(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000000Z"
        );
        assert_eq!(secs(-1000), "-0.000001000");
    }
}

//! The clock syncs (SPEC §16): slot 0's ClockSync records, which re-anchor the recording's tick
//! clock to CLOCK_MONOTONIC and the wall clock at each segment and at least every minute.

use super::Flusher;
use crate::codec::records;
use std::time::{Duration, Instant};

/// How often the flusher re-anchors the recording's clock with a ClockSync record (SPEC §16):
/// the tick clock drifts from CLOCK_MONOTONIC by parts per million (−0.62 ppm measured, 2.2 ms
/// an hour), and a reader that maps times through the syncs accumulates that drift over one
/// interval only. A sync also opens every segment of a rotating recording.
pub(super) const CLOCK_SYNC_EVERY: Duration = Duration::from_secs(60);

impl Flusher {
    /// The clock now: (the recorder's time, CLOCK_MONOTONIC, UNIX), read together (the tick
    /// clock on both sides of the others, its middle taken).
    pub(super) fn clock_reading(&self) -> (u64, u64, u64) {
        let c = &self.core.clock;
        let a = c.raw();
        let mono = crate::write::clock::monotonic_ns();
        let wall = crate::write::clock::wall_ns();
        let b = c.raw();
        (c.to_ns(a + (b.saturating_sub(a)) / 2), mono, wall)
    }

    /// A ClockSync on slot 0, with the clock read now.
    pub(super) fn push_clock_sync(&mut self) {
        let (t, mono, wall) = self.clock_reading();
        self.push_clock_sync_at(t, mono, wall);
    }

    /// A ClockSync whose own time is `ts` (on a page at `ts` or at slot 0's last page time).
    pub(super) fn push_clock_sync_at(&mut self, ts: u64, mono: u64, wall: u64) {
        self.next_sync = Instant::now() + CLOCK_SYNC_EVERY;
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.resize(records::CLOCK_SYNC_SIZE, 0);
        let _ = records::write_clock_sync(&mut buf, 0, ts as i64, mono, wall);
        self.push(0, &buf, ts, None);
        self.scratch = buf;
        if let Some(w) = self.window.as_mut() {
            w.note_sync(crate::window::ClockReading { ts, mono, wall });
        }
    }
}

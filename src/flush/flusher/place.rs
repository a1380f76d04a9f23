//! Placing a ring's record on its slot's page: its raw-tick times converted (and clamped past the
//! horizon, [`MAX_AHEAD_NS`](super::MAX_AHEAD_NS)), spans, ThreadInfo and CeLog events handled
//! apart, a missed count put on the page after its gap.

use super::{Flusher, CEL, DUR, KIND, MAX_AHEAD_NS, MAX_THREAD_IDS, TS};
use crate::codec;
use crate::codec::TraceEventKind;
use crate::flush::page::{PageWriter, PushError};
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Flusher {
    /// The flusher's now on the session's time base (the records' own clock, converted as
    /// they are), and the horizon past which a record's time is clamped.
    pub(super) fn refresh_horizon(&mut self) -> u64 {
        let now = self.core.clock.to_ns(self.core.clock.raw());
        self.horizon_ns = now.saturating_add(MAX_AHEAD_NS);
        now
    }

    /// A time past the horizon: `Some(t)` if it is still more than [`MAX_AHEAD_NS`] ahead of a
    /// fresh clock reading, with `t` the time to write instead (the slot's last page time, or
    /// the clock's now before the slot's first record), `None` if it is not.
    #[cold]
    #[inline(never)]
    pub(super) fn beyond_horizon(&mut self, slot: u8, ts: u64) -> Option<u64> {
        let now = self.refresh_horizon();
        let last = self.slots[slot as usize].last_ts;
        (ts > self.horizon_ns).then_some(if last == 0 { now } else { last })
    }

    /// A record from a ring: raw-tick times. Inline into the drain loop, with everything but
    /// the common case (a record that only needs its time converted, room on the open page)
    /// out of line.
    #[inline(always)]
    pub(super) fn push_raw(&mut self, slot: u8, r: &[u8]) {
        let kind = r[KIND];
        let raw = i64::from_le_bytes(r[TS..TS + 8].try_into().unwrap()) as u64;
        let mut ts = self.core.clock.to_ns(raw);
        let mut clamped = false;
        if ts > self.horizon_ns {
            if let Some(t) = self.beyond_horizon(slot, ts) {
                ts = t;
                clamped = true;
            }
        }
        if !self.special[kind as usize] {
            if clamped {
                self.slots[slot as usize].clamped += 1;
            }
            // Most records: only the time changes (no duration, CeLog time or thread to note).
            let s = &mut self.slots[slot as usize];
            if s.pending == 0 && s.opened.is_some() {
                if let Some(page) = s.page.as_mut() {
                    let page_ts = ts.max(s.last_ts);
                    if let Ok(dst) = page.try_push(page_ts, r) {
                        dst[TS..TS + 8].copy_from_slice(&ts.to_le_bytes());
                        s.written += 1;
                        s.last_ts = page_ts;
                        return;
                    }
                }
            }
            return self.push_plain(slot, r, ts);
        }
        self.push_special(slot, r, raw, ts, clamped);
    }

    /// [`push_raw`](Self::push_raw) for a record that only needs its time converted, when it
    /// does not go straight onto the open page.
    #[inline(never)]
    pub(super) fn push_plain(&mut self, slot: u8, r: &[u8], ts: u64) {
        self.push(slot, r, ts, Some((ts, None)));
    }

    /// [`push_raw`](Self::push_raw) for spans, ThreadInfo and CeLog records.
    #[inline(never)]
    pub(super) fn push_special(
        &mut self,
        slot: u8,
        r: &[u8],
        raw: u64,
        ts: u64,
        mut clamped: bool,
    ) {
        let kind = r[KIND];
        let mut dur = None;
        let mut page_ts = ts;
        if self.is_span[kind as usize] && r.len() >= DUR + 4 {
            let d = read_duration(r);
            let mut end = self.core.clock.to_ns(raw.wrapping_add(d as u64));
            // A span's page time is its end: an end far ahead is clamped as a start is (a
            // clamped start's end is then clamped too, to a duration of 0).
            if end > self.horizon_ns {
                if let Some(t) = self.beyond_horizon(slot, end) {
                    end = t.max(ts);
                    clamped = true;
                }
            }
            let d_ns = end.saturating_sub(ts);
            dur = Some(d_ns as i64);
            page_ts = end;
        }
        if kind == TraceEventKind::THREAD_INFO.0 {
            self.note_thread(slot, r, page_ts);
        } else if self.window.is_some() {
            self.watch(slot, r, kind, ts, page_ts, dur);
        }
        // Fast path: no loss to place and room on the open page.
        let s = &mut self.slots[slot as usize];
        if clamped {
            s.clamped += 1;
        }
        if s.pending == 0 && s.opened.is_some() {
            if let Some(page) = s.page.as_mut() {
                let page_ts = page_ts.max(s.last_ts);
                if let Ok(dst) = page.try_push(page_ts, r) {
                    patch_times(dst, ts, dur);
                    s.written += 1;
                    s.last_ts = page_ts;
                    return;
                }
            }
        }
        self.push(slot, r, page_ts, Some((ts, dur)));
    }

    /// Appends one record to the slot's page stream at page time `page_ts`; `patch` holds the
    /// converted timestamp (and span duration) to write into the copy in the page.
    pub(super) fn push(
        &mut self,
        slot: u8,
        r: &[u8],
        page_ts: u64,
        patch: Option<(u64, Option<i64>)>,
    ) {
        enum Next {
            Emit,
            Carrier,
            Done,
            Refused,
        }
        let i = slot as usize;
        if self.slots[i].page.is_none() {
            match PageWriter::new(self.core.page_size) {
                Ok(p) => self.slots[i].page = Some(p),
                Err(_) => return, // the page size was validated when the recorder started
            }
        }
        // Page time never goes backwards across the slot's pages either.
        let page_ts = page_ts.max(self.slots[i].last_ts);
        loop {
            let next = {
                let s = &mut self.slots[i];
                let page = s.page.as_mut().unwrap();
                if s.pending > 0 && !page.is_empty() {
                    Next::Emit
                } else {
                    if s.pending > 0 {
                        s.pending = page.set_missed(s.pending).unwrap_or(s.pending);
                    }
                    let empty = page.is_empty();
                    match page.try_push(page_ts, r) {
                        Ok(dst) => {
                            if let Some((ts, dur)) = patch {
                                patch_times(dst, ts, dur);
                            }
                            s.written += 1;
                            s.used = true;
                            s.last_ts = page_ts;
                            if s.opened.is_none() {
                                s.opened = Some(Instant::now());
                            }
                            Next::Done
                        }
                        // Only with a missed count reserved: the record leaves no room for it.
                        Err(PushError::Full) if empty => Next::Carrier,
                        Err(PushError::Full) => Next::Emit,
                        Err(_) => Next::Refused,
                    }
                }
            };
            match next {
                Next::Done => return,
                Next::Emit => self.emit_page(slot),
                // Put the count on a small carrier record's page; this record goes on the next.
                Next::Carrier => self.push_thread_info(slot, page_ts),
                Next::Refused => {
                    // Larger than a page can hold: producers refuse such writes, so only a
                    // foreign record could get here. Count it rather than lose it silently.
                    self.core
                        .registry
                        .slot(slot)
                        .refused
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    pub(super) fn note_thread(&mut self, slot: u8, r: &[u8], ts: u64) {
        if let Some((tid, name, kind)) = crate::codec::records::thread_info(r) {
            if let Some(w) = self.window.as_mut() {
                w.note_owner(
                    slot,
                    crate::window::Owner {
                        since: ts,
                        tid,
                        name: name.to_owned(),
                        kind,
                    },
                );
            }
            let s = &mut self.slots[slot as usize];
            if s.name.is_empty() {
                s.name = name.to_owned();
            }
            if s.last_name != name {
                s.last_name.clear();
                s.last_name.push_str(name);
            }
            if s.threads == 0 || s.last_tid != tid {
                // A slot reused by thousands of threads keeps a bounded list (and the count).
                if s.tids.len() < MAX_THREAD_IDS {
                    s.tids.push(tid);
                }
                s.last_tid = tid;
                s.threads += 1;
            }
            s.kind = kind;
            s.used = true;
        }
    }
}

/// A span record's duration as the ring holds it: an i64 of ticks, a TracingEntryShort's u32.
fn read_duration(r: &[u8]) -> i64 {
    if r[KIND] == TraceEventKind::TRACING_ENTRY_SHORT.0 {
        return i64::from(u32::from_le_bytes(r[DUR..DUR + 4].try_into().unwrap()));
    }
    r.get(DUR..DUR + 8)
        .map_or(0, |d| i64::from_le_bytes(d.try_into().unwrap()))
}

/// Writes the converted times into a record's copy in a page: the header timestamp, a span's
/// duration, and a timestamped CeLog event's own 1 µs timestamp (low 32 bits).
pub(super) fn patch_times(dst: &mut [u8], ts: u64, dur: Option<i64>) {
    dst[TS..TS + 8].copy_from_slice(&(ts as i64).to_le_bytes());
    if let Some(d) = dur {
        if dst[KIND] == TraceEventKind::TRACING_ENTRY_SHORT.0 {
            // The writer chose it for a duration that fits in ns too (`short_entry_ticks`).
            let d = u32::try_from(d.max(0)).unwrap_or(u32::MAX);
            dst[DUR..DUR + 4].copy_from_slice(&d.to_le_bytes());
        } else {
            dst[DUR..DUR + 8].copy_from_slice(&d.to_le_bytes());
        }
    }
    // A CeLog record: the event's header word, whose T bit says a u32 timestamp follows it.
    if dst[KIND] == TraceEventKind::CELOG.0 && dst.len() >= CEL + 8 {
        let word = u32::from_le_bytes(dst[CEL..CEL + 4].try_into().unwrap());
        if word & codec::celog::CelHeaderV3::TIMESTAMP != 0 {
            dst[CEL + 4..CEL + 8].copy_from_slice(&((ts / 1000) as u32).to_le_bytes());
        }
    }
}

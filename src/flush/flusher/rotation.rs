//! What opens a slot-0 stream and each segment of a rotating recording (SPEC §16): the session's
//! start (ThreadInfo, CeLog header, first ClockSync), and at a rotation the cut of every slot's
//! stream and the restatements a reader of the new segment alone needs.

use super::Flusher;
use super::SLOT;
use crate::codec::{self, records};
use crate::write::slots::FREE;
use std::io;

impl Flusher {
    /// Slot 0, the recorder's own stream: its ThreadInfo, the CeLog session header
    /// (CEL_LOG_MARKER with 1 µs ticks, then CELID_SYNC_END) and a ClockSync.
    pub(super) fn session_start(&mut self) -> io::Result<()> {
        let ts = self.core.clock.monotonic_anchor_ns();
        let s = &mut self.slots[0];
        s.name = "typhon-recorder".into();
        s.last_name = s.name.clone();
        s.tids.push(std::process::id() as i32);
        s.last_tid = std::process::id() as i32;
        s.threads = 1;
        s.kind = records::ThreadKind::Other;
        if let Some(w) = self.window.as_mut() {
            w.note_owner(
                0,
                crate::window::Owner {
                    since: ts,
                    tid: s.last_tid,
                    name: s.last_name.clone(),
                    kind: s.kind,
                },
            );
        }
        self.push_thread_info(0, ts);
        self.push_celog_header(ts)?;
        // The session's anchor as the first clock-sync (the tick clock's ns are
        // CLOCK_MONOTONIC's there): segment 1 opens with one as every later segment does.
        let wall = self.core.clock.wall_anchor_ns();
        self.push_clock_sync_at(ts, ts, wall);
        Ok(())
    }

    /// Slot 0's CeLog session header (CEL_LOG_MARKER with 1 µs ticks, then CELID_SYNC_END), at
    /// the session's start and restated at each segment's.
    pub(super) fn push_celog_header(&mut self, ts: u64) -> io::Result<()> {
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let marker = codec::celog::log_marker_data(1_000_000, 100, ncpu);
        for (id, data) in [
            (codec::celog::CELID_LOG_MARKER, &marker[..]),
            (codec::celog::CELID_SYNC_END, &[][..]),
        ] {
            let len = records::celog_record_len(data.len(), false, false, 0);
            self.scratch.clear();
            self.scratch.resize(len, 0);
            let ev = codec::celog::CelEvent {
                id,
                timestamp: None,
                flag: None,
                cpu: 0,
                data,
            };
            records::write_celog_record(&mut self.scratch, 0, ts as i64, &ev)
                .map_err(|e| io::Error::other(e.to_string()))?;
            let rec = std::mem::take(&mut self.scratch);
            if let Some(w) = self.window.as_mut() {
                w.pinned.push(rec.clone());
            }
            self.push(0, &rec, ts, None);
            self.scratch = rec;
        }
        Ok(())
    }

    /// Ends the sink's segment and opens the next (SPEC §16): every slot's stream is cut at
    /// this cycle (its open page handed over, drops not yet on a page carried by a ThreadInfo,
    /// as at a thread's end), so each segment's counters are exactly its pages'; then the new
    /// segment is anchored to the wall clock and restates what a reader of it alone needs: slot
    /// 0's ThreadInfo and CeLog header, each live slot's thread, the definitions (SPEC §15) and
    /// a ClockSync. The restated records count as written, as carriers do.
    pub(super) fn rotate(&mut self) {
        let hw = self.core.registry.high_water();
        for i in 0..hw {
            let slot = i as u8;
            while self.slots[i].pending > 0 {
                let ts = self.slots[i].last_ts;
                self.push_thread_info(slot, ts);
            }
            self.emit_page(slot);
        }
        if let Err(e) = self.sink.flush() {
            self.sink_error(&e);
        }
        self.take_unstored();
        let mut now = self.summary();
        let (ts, mono, wall) = self.clock_reading();
        now.monotonic_anchor_ns = ts;
        now.wall_anchor_ns = wall;
        if let Err(e) = self.sink.rotate(&now) {
            // The segment goes on (nothing is lost): the error is counted and told.
            self.sink_error(&e);
            return;
        }
        let ts0 = ts.max(self.slots[0].last_ts);
        self.push_thread_info(0, ts0);
        if let Err(e) = self.push_celog_header(ts0) {
            self.sink_error(&e);
        }
        self.push_clock_sync_at(ts, mono, wall);
        let mut live = [false; 256];
        live[0] = true;
        for (i, l) in live.iter_mut().enumerate().take(hw).skip(1) {
            let slot = i as u8;
            if self.slots[i].used && self.core.registry.state_for_service(slot) != FREE {
                *l = true;
                let t = ts.max(self.slots[i].last_ts);
                self.push_thread_info(slot, t);
            }
        }
        let defs: Vec<Box<[u8]>> = self
            .core
            .definitions
            .lock()
            .records
            .values()
            .cloned()
            .collect();
        for d in defs {
            if d.len() < codec::CommonHeader::SIZE {
                continue;
            }
            // A definition goes on the slot that wrote it while that slot lives (a per-slot
            // definition is read there), else on slot 0 (a callsite is read from any slot).
            let slot = if live[d[SLOT] as usize] { d[SLOT] } else { 0 };
            let mut r = d.into_vec();
            r[SLOT] = slot;
            let t = ts.max(self.slots[slot as usize].last_ts);
            self.push(slot, &r, t, Some((t, None)));
        }
        // Each live slot's static names (SPEC §15): its later records carry ids its thread
        // defined in an earlier segment.
        for (i, l) in live.iter().enumerate().take(hw) {
            if !*l {
                continue;
            }
            let slot = i as u8;
            let t = ts.max(self.slots[i].last_ts);
            for d in self.core.registry.name_definitions(slot, t as i64).0 {
                self.push(slot, &d, t, Some((t, None)));
            }
        }
        // On disk now: a kill must not keep a segment's records while losing the restatements
        // they need (a definition on a page still open, its users on pages already written).
        for (i, l) in live.iter().enumerate().take(hw) {
            if *l {
                self.emit_page(i as u8);
            }
        }
        if let Err(e) = self.sink.flush() {
            self.sink_error(&e);
        }
        self.take_unstored();
    }
}

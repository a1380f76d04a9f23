//! The flusher's side of window mode: the store it fills, the cut it takes when a snapshot is
//! due, and the `typhon-snapshot` thread that writes it.

use super::held::Held;
use super::pack::Packer;
use super::parts::SlotCut;
use super::snapshot::{self, Job};
use super::store::Store;
use super::{Config, Owner, Pending, Rules, Shared};
use crate::codec::records;
use crate::tracedat::{Compression, DEFAULT_CHUNK_PAGES};
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the flusher knows of the session, for a cut.
pub(crate) struct Session {
    pub(crate) page_size: usize,
    pub(crate) wall_anchor_ns: u64,
    pub(crate) mono_anchor_ns: u64,
    /// The definition records (SPEC §15) to restate, and how many were not kept.
    pub(crate) definitions: (Vec<Box<[u8]>>, u64),
    /// Each slot's static-name definitions (SPEC §15), by slot: a slot's records in the
    /// snapshot use ids its thread may have defined long before W.
    pub(crate) slot_names: Vec<Vec<Box<[u8]>>>,
    /// The clock read at the cut, as a ClockSync pairs it: (record time, CLOCK_MONOTONIC, UNIX).
    pub(crate) clock_now: ClockReading,
}

/// A clock-sync (SPEC §16): a record time (ns) with the CLOCK_MONOTONIC and UNIX ns read with
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClockReading {
    pub(crate) ts: u64,
    pub(crate) mono: u64,
    pub(crate) wall: u64,
}

/// The clock at `at` as a reader of the session's syncs maps it: between the last sync at or
/// before `at` and the next (or the cut's reading, `now`), at that interval's own rate; so a
/// snapshot's restated sync at W is as exact as the session's own syncs around it.
fn sync_at(syncs: &VecDeque<ClockReading>, now: ClockReading, at: u64) -> ClockReading {
    let i = syncs.partition_point(|s| s.ts <= at);
    let next = syncs.get(i).copied().unwrap_or(now);
    let Some(a) = i.checked_sub(1).and_then(|j| syncs.get(j)).copied() else {
        // No sync at or before `at` (the session's first is at its start): slope 1 back from
        // the next.
        let back = next.ts.saturating_sub(at);
        return ClockReading {
            ts: at,
            mono: next.mono.saturating_sub(back),
            wall: next.wall.saturating_sub(back),
        };
    };
    let span = i128::from(next.ts) - i128::from(a.ts);
    let d = i128::from(at) - i128::from(a.ts);
    let along = |x: u64, y: u64| {
        let rate = if span > 0 {
            (i128::from(y) - i128::from(x)) * d / span
        } else {
            d
        };
        (i128::from(x) + rate).clamp(0, i128::from(u64::MAX)) as u64
    };
    ClockReading {
        ts: at,
        mono: along(a.mono, next.mono),
        wall: along(a.wall, next.wall),
    }
}

/// The window a flusher keeps.
pub(crate) struct Window {
    pub(crate) store: Store,
    cfg: Config,
    shared: Arc<Shared>,
    /// Slot 0's session header (CEL_LOG_MARKER, SYNC_END), restated at the head of every
    /// snapshot: the pages that first held them are evicted like any other.
    pub(crate) pinned: Vec<Vec<u8>>,
    /// The session's ClockSyncs from the last one at or before the watermark on: a snapshot
    /// restates the clock at its W from them (the syncs' own pages may be evicted, and a
    /// window under a minute may hold none).
    syncs: VecDeque<ClockReading>,
    pub(crate) rules: Rules,
    /// Snapshots cut so far (the `n` of their names).
    n: u64,
    writer: Option<JoinHandle<()>>,
}

impl Window {
    pub(crate) fn new(cfg: Config, shared: Arc<Shared>) -> Self {
        // With compression on, the store holds chunks of the v7 file's size, made on a
        // thread of their own (`pack`). A compressor that cannot be made leaves the pages raw: the
        // snapshot still compresses them (and reports the error, if zstd is missing).
        let packer = match cfg.compression {
            Compression::Zstd { level } => Packer::new(level, DEFAULT_CHUNK_PAGES).ok(),
            Compression::None => None,
        };
        Self {
            store: Store::new(cfg.window_ns, cfg.budget, packer),
            rules: Rules::new(cfg.rules.clone()),
            cfg,
            shared,
            pinned: Vec::new(),
            syncs: VecDeque::new(),
            n: 0,
            writer: None,
        }
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Keeps a page the flusher finished.
    pub(crate) fn store(&mut self, slot: u8, page: &[u8], last_ts: u64, records: u64, missed: u64) {
        self.store
            .push(slot, Held::page(page.into(), last_ts, records, missed));
    }

    pub(crate) fn note_owner(&mut self, slot: u8, owner: Owner) {
        self.store.note_owner(slot, owner);
    }

    /// Notes a ClockSync the flusher wrote; the syncs no snapshot can reach back to any more
    /// (all but the last at or before the watermark) are dropped.
    pub(crate) fn note_sync(&mut self, sync: ClockReading) {
        self.syncs.push_back(sync);
        let w = self.store.watermark;
        while self.syncs.len() > 1 && self.syncs[1].ts <= w {
            self.syncs.pop_front();
        }
    }

    /// Takes the cut at `t1` (ns) for `req`: every page held (the open ones were emitted
    /// just before), the owners at W, and `open` (per slot, the spans open at `t1`); starts the
    /// thread that writes the file.
    pub(crate) fn cut(
        &mut self,
        req: Pending,
        t1: u64,
        open: Vec<(u8, Vec<Vec<u8>>)>,
        session: Session,
    ) {
        self.reap();
        // The chunks made by now replace their pages; those still being made are cut as the
        // raw pages they are (not waited for).
        self.store.install_made(false);
        // Never before the session's start: a snapshot taken sooner than a window into the
        // recording holds (and says it holds) the time since the start, its restated records
        // dated there.
        let from = t1
            .saturating_sub(self.store.window_ns)
            .max(self.store.watermark)
            .max(session.mono_anchor_ns)
            .min(t1);
        // What ended by W is in no snapshot from now on: evicted (and counted) here, so that
        // every record written is either evicted or in this snapshot or after T1. A page of an
        // idle slot emitted at this very cut is one (a budget short of one chunk keeps it).
        // At the session's start nothing is older: the session's own first records (at the
        // start itself) are not aged out but restated at W.
        let horizon = if from == session.mono_anchor_ns {
            from.saturating_sub(1)
        } else {
            from
        };
        self.store.evict_through(horizon);
        let s = &self.store;
        let mut slots = Vec::new();
        let mut open = open.into_iter().peekable();
        for (i, q) in s.slots.iter().enumerate() {
            let slot = i as u8;
            let spans = match open.peek() {
                Some((o, _)) if *o == slot => open.next().map(|x| x.1).unwrap_or_default(),
                _ => Vec::new(),
            };
            let pages: Vec<_> = q.iter().filter(|p| p.last_ts > from).cloned().collect();
            if pages.is_empty() && spans.is_empty() && slot != 0 {
                continue;
            }
            let mut head = Vec::new();
            if slot == 0 {
                head.extend(self.pinned.iter().cloned());
                // The clock at W, so that the snapshot maps its times through a sync of its
                // own (the session's syncs at or before W are not in it).
                let c = sync_at(&self.syncs, session.clock_now, from);
                let mut r = vec![0; records::CLOCK_SYNC_SIZE];
                if records::write_clock_sync(&mut r, 0, from as i64, c.mono, c.wall).is_ok() {
                    head.push(r);
                }
                head.extend(session.definitions.0.iter().map(|d| d.to_vec()));
            }
            if let Some(names) = session.slot_names.get(i) {
                head.extend(names.iter().map(|d| d.to_vec()));
            }
            slots.push(SlotCut {
                slot,
                owner: s.owner_at(slot, from).cloned(),
                head,
                pages,
                open: spans,
            });
        }
        self.n += 1;
        let requested = (s.window_ns != u64::MAX).then_some(s.window_ns);
        let meta = serde_json::json!({
            "window": {
                "requested_ns": requested,
                "budget_bytes": s.budget,
                "held_bytes": s.bytes,
                "start_ns": from,
                "end_ns": t1,
                "held_ns": t1 - from.min(t1),
                "reduced_by_budget": requested.is_some_and(|r| s.watermark > t1.saturating_sub(r)),
                "trigger": req.reason,
                "trigger_ns": req.trigger_ns,
            },
            "evicted_records": s.evicted_records,
            "evicted_pages": s.evicted_pages,
            "evicted_missed": s.evicted_missed,
            "definitions_not_kept": session.definitions.1,
        });
        let job = Job {
            dir: self.cfg.dir.clone(),
            program: self.cfg.program.clone(),
            n: self.n,
            compression: self.cfg.compression,
            page_size: session.page_size,
            from_ns: from,
            to_ns: t1,
            meta,
            wall_anchor_ns: session.wall_anchor_ns,
            mono_anchor_ns: session.mono_anchor_ns,
            evicted_records: s.evicted_records,
            reason: req.reason,
            slots,
        };
        let shared = self.shared.clone();
        let reply = req.reply;
        let spawned = std::thread::Builder::new()
            .name("typhon-snapshot".into())
            .spawn(move || {
                super::yield_to_the_recording();
                let r = snapshot::write(job);
                if let Err(e) = &r {
                    eprintln!("typhon-recorder: snapshot failed: {e}");
                }
                shared.done();
                if let Some(tx) = reply {
                    let _ = tx.send(r.map_err(|e| e.to_string()));
                }
            });
        match spawned {
            Ok(h) => self.writer = Some(h),
            Err(e) => {
                // The job (and its reply) went with the closure that did not run.
                eprintln!("typhon-recorder: no thread for a snapshot: {e}");
                self.shared.done();
            }
        }
    }

    /// Joins a snapshot thread that has ended.
    fn reap(&mut self) {
        if self.writer.as_ref().is_some_and(|h| h.is_finished()) {
            let _ = self.writer.take().map(JoinHandle::join);
        }
    }

    /// At the end of the session: the snapshot being written is waited for; a request not
    /// yet cut is answered with an error.
    pub(crate) fn finish(&mut self) {
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        if let Some(p) = self.shared.take_any() {
            self.shared.done();
            if let Some(tx) = p.reply {
                let _ = tx.send(Err(
                    "the recorder finished before the snapshot was cut".into()
                ));
            }
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        self.finish();
    }
}

//! The installed recording's lifecycle: the state its flusher and its handle share ([`Core`]),
//! above the write side's [`Hub`] (which the writers reach through
//! [`ACTIVE`](crate::write::gate::ACTIVE) and which `Core` installs there).

use crate::error::{RecorderError, Unfinished};
use crate::sink::SessionSummary;
use crate::stats::Stats;
use crate::write::gate::{Hub, ACTIVE, GEN, KIND_OFF, KIND_STATE, SLOTLESS};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// State shared by the flusher and the handle: the write side's [`Hub`] (reached through
/// `Deref`, so `core.registry` is the hub's), and what only the lifecycle needs.
pub(crate) struct Core {
    pub(crate) hub: Arc<Hub>,
    pub(crate) page_size: usize,
    pub(crate) flush_interval: Duration,
    pub(crate) max_page_age: Duration,
    /// Events of threads that found every slot taken, once the recorder has been uninstalled
    /// (see [`Core::no_slot`]).
    pub(crate) no_slot: AtomicU64,
    /// Filtered writes of threads without a slot, once the recorder has been uninstalled (see
    /// [`Core::filtered_no_slot`]).
    pub(crate) filtered_no_slot: AtomicU64,
    pub(crate) progress: crate::stats::Progress,
    /// The flusher until the recording is finished, then how the finish went. Whoever finishes
    /// (the handle, a signal, `exit`) holds the lock until the file is complete, so a second
    /// caller waits for the first and gets its outcome.
    pub(crate) ending: parking_lot::Mutex<Ending>,
    /// The flusher thread's `pthread_t` (0 before it runs): an `exit` on that thread (a sink's)
    /// must not wait for the flusher to end.
    pub(crate) flusher_thread: AtomicU64,
    /// A rotating recording's deleted segments, counted (see [`crate::sink::Rotation`]).
    pub(crate) rotation: Option<Arc<crate::sink::Rotation>>,
}

impl std::ops::Deref for Core {
    type Target = Hub;

    fn deref(&self) -> &Hub {
        &self.hub
    }
}

/// See [`Core::ending`].
pub(crate) enum Ending {
    /// Before `start` has spawned the flusher.
    Starting,
    Running(JoinHandle<std::io::Result<SessionSummary>>),
    /// Finished: `Err` repeats a failed finish to later callers.
    Done(Result<(), EndError>),
}

/// A failed finish, kept to be told again (an `io::Error` is not `Clone`).
#[derive(Clone)]
pub(crate) enum EndError {
    Io(std::io::ErrorKind, String),
    Panicked,
}

impl Core {
    /// Filtered writes of threads without a slot so far: the running count while this
    /// recorder is installed, the final one after.
    pub(crate) fn filtered_no_slot(&self) -> u64 {
        self.slotless(&self.filtered_no_slot, &SLOTLESS.filtered)
    }

    /// Events of threads that found every slot taken, so far (as `filtered_no_slot`).
    pub(crate) fn no_slot(&self) -> u64 {
        self.slotless(&self.no_slot, &SLOTLESS.no_slot)
    }

    pub(crate) fn slotless(&self, settled: &AtomicU64, running: &AtomicU64) -> u64 {
        // No lock: the flusher calls this inside `start`, which holds ACTIVE's write lock. If
        // `finish` moves the running count into `settled` between the reads, `settled` changes
        // and the reads are taken again (it moves once in a recorder's life).
        // Relaxed: statistics.
        loop {
            let before = settled.load(Ordering::Relaxed);
            let live = if GEN.load(Ordering::Relaxed) == self.gen {
                running.load(Ordering::Relaxed)
            } else {
                0
            };
            if settled.load(Ordering::Relaxed) == before {
                return before + live;
            }
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut s = self
            .progress
            .snapshot(&self.registry, self.no_slot(), self.filtered_no_slot());
        if let Some(r) = &self.rotation {
            // Relaxed: statistics; a finished recorder's were settled before `finish` returned.
            s.rotated_out_segments = r.deleted.load(Ordering::Relaxed);
            s.rotated_out_records = r.deleted_records.load(Ordering::Relaxed);
            s.rotated_out_missed = r.deleted_missed.load(Ordering::Relaxed);
        }
        s
    }

    /// Uninstalls the recorder, has the flusher write out everything written before the call
    /// and waits for it; once finished, returns the final counters (or the same error) again.
    pub(crate) fn finish(&self) -> Result<Stats, RecorderError> {
        let mut ending = self.ending.lock();
        let handle = match std::mem::replace(&mut *ending, Ending::Done(Err(EndError::Panicked))) {
            Ending::Running(h) => h,
            Ending::Starting => {
                *ending = Ending::Done(Ok(()));
                return Ok(self.stats());
            }
            Ending::Done(r) => {
                *ending = Ending::Done(r.clone());
                return match r {
                    Ok(()) => Ok(self.stats()),
                    Err(EndError::Io(kind, msg)) => {
                        Err(RecorderError::Unfinished(Box::new(Unfinished {
                            error: std::io::Error::new(kind, msg),
                            stats: self.stats(),
                        })))
                    }
                    Err(EndError::Panicked) => Err(RecorderError::FlusherPanicked),
                };
            }
        };
        if let Some(w) = &self.window {
            // Before the flusher's last cycle: a request that came in is served first.
            w.stop_control();
        }
        {
            let mut active = ACTIVE.write();
            for flag in KIND_STATE.iter() {
                flag.store(KIND_OFF, Ordering::Relaxed);
            }
            GEN.store(0, Ordering::Relaxed);
            let (no_slot, filtered) = SLOTLESS.take();
            // Relaxed: statistics; the flusher reads the totals after the `finish` handshake.
            self.no_slot.fetch_add(no_slot, Ordering::Relaxed);
            self.filtered_no_slot.fetch_add(filtered, Ordering::Relaxed);
            *active = None;
        }
        // After uninstalling: every write that completed before this call is in its ring.
        self.wakeup.finish();
        let (kept, result) = match handle.join() {
            Ok(Ok(_summary)) => (Ok(()), Ok(self.stats())),
            // The last cycle published the final counters before the sink's `finish`.
            Ok(Err(e)) => (
                Err(EndError::Io(e.kind(), e.to_string())),
                Err(RecorderError::Unfinished(Box::new(Unfinished {
                    error: e,
                    stats: self.stats(),
                }))),
            ),
            Err(_) => (Err(EndError::Panicked), Err(RecorderError::FlusherPanicked)),
        };
        *ending = Ending::Done(kept);
        result
    }

    /// Whether the flusher will run no more cycles (it ended, or a finish has it in hand).
    pub(crate) fn flusher_gone(&self) -> bool {
        match self.ending.try_lock() {
            Some(e) => !matches!(&*e, Ending::Running(h) if !h.is_finished()),
            None => true,
        }
    }

    /// [`Recorder::snapshot`](crate::Recorder::snapshot): a request with a reply, placed once no
    /// other is in flight, then waited for.
    pub(crate) fn snapshot(&self, reason: &str) -> Result<crate::window::Snapshot, RecorderError> {
        if self.window.is_none() {
            return Err(RecorderError::Config(
                "snapshot: the recorder keeps no window (RecorderBuilder::window)".into(),
            ));
        }
        let gone = || {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "snapshot: the recorder finished before the snapshot was written",
            )
        };
        let mut backoff = Duration::from_micros(50);
        loop {
            let (tx, rx) = std::sync::mpsc::channel();
            if self.request_snapshot(reason, 0, Some(tx)) {
                return match rx.recv() {
                    Ok(Ok(s)) => Ok(s),
                    Ok(Err(e)) => Err(RecorderError::Io(std::io::Error::other(e))),
                    Err(_) => Err(RecorderError::Io(gone())),
                };
            }
            if self.flusher_gone() || self.wakeup.is_finishing() {
                return Err(RecorderError::Io(gone()));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(5));
        }
    }
}

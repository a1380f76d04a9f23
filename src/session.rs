//! The installed recording: the state its writers, its flusher and its handle share ([`Core`]),
//! and the process-wide gate every write reads first.
//!
//! At most one recorder is installed at a time. Writers find it through [`ACTIVE`] only on their
//! slow path (a thread's first event, or the first after a new recorder started): the fast path
//! compares the thread's cached generation with [`GEN`] and reads the per-kind byte of
//! [`KIND_STATE`], both relaxed loads of lines nothing writes while a recording runs.

use crate::error::{RecorderError, Unfinished};
use crate::sink::SessionSummary;
use crate::stats::Stats;
use crate::write::clock::Clock;
use crate::write::slots::Registry;
use crossbeam_utils::CachePadded;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

// Every write reads KIND_STATE and GEN, from every thread, and every CeLog write the zones;
// they change only at start and finish (or CeLogSetZones). Each sits on cache lines of its own
// (`CachePadded`), so that nothing written often (ACTIVE's lock word, the slotless counters, a
// static of another crate the linker puts next to them) takes their line away from the
// writers' caches: in one build of `typhon-rec`, GEN shared its line with ACTIVE and
// FILTERED_NO_SLOT, and the zones theirs with a benchmark's counters and puffin's lock.

/// Per-kind state: [`KIND_OFF`] while no recorder is installed, else [`KIND_ON`] or
/// [`KIND_FILTERED`]. One relaxed byte load decides the disabled, filtered and enabled paths; the
/// disabled path makes no call (it used to call `count_filtered` just to find no recorder).
pub(crate) static KIND_STATE: CachePadded<[AtomicU8; 256]> =
    CachePadded::new([const { AtomicU8::new(KIND_OFF) }; 256]);
pub(crate) const KIND_OFF: u8 = 0;
pub(crate) const KIND_FILTERED: u8 = 1;
pub(crate) const KIND_ON: u8 = 2;
/// Generation of the installed recorder (0 = none); a thread's cached slot belongs to one.
pub(crate) static GEN: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(0));
/// Writes of threads without a slot while a recorder runs, in plain counters so that counting
/// one takes no lock: events lost because every slot was taken (`no_slot`), and filtered
/// writes of threads that had not claimed a slot (`filtered`). `start` zeroes them and
/// `finish` moves them into the recorder's `Core`, both under ACTIVE's write lock.
pub(crate) static SLOTLESS: Slotless = Slotless {
    no_slot: CachePadded::new(AtomicU64::new(0)),
    filtered: CachePadded::new(AtomicU64::new(0)),
};

/// See [`SLOTLESS`].
pub(crate) struct Slotless {
    pub(crate) no_slot: CachePadded<AtomicU64>,
    pub(crate) filtered: CachePadded<AtomicU64>,
}

impl Slotless {
    /// Zeroes both (at start).
    pub(crate) fn reset(&self) {
        // Relaxed: under ACTIVE's write lock, before the generation and kind flags change. A
        // write that raced the last `finish`, or (on a weakly ordered CPU) one racing this
        // `start`, may see its count go: the "one write around start/finish" of
        // `Recorder::finish`'s docs.
        self.no_slot.store(0, Ordering::Relaxed);
        self.filtered.store(0, Ordering::Relaxed);
    }

    /// Moves both into `core` (at finish).
    pub(crate) fn settle(&self, core: &Core) {
        // Relaxed: statistics; the flusher reads the totals after the `finish` handshake.
        let n = self.no_slot.swap(0, Ordering::Relaxed);
        core.no_slot.fetch_add(n, Ordering::Relaxed);
        let n = self.filtered.swap(0, Ordering::Relaxed);
        core.filtered_no_slot.fetch_add(n, Ordering::Relaxed);
    }
}
pub(crate) static NEXT_GEN: AtomicU64 = AtomicU64::new(1);
pub(crate) static ACTIVE: RwLock<Option<Arc<Core>>> = RwLock::new(None);
/// CeLog zones (CeLogSetZones): user and CE masks.
pub(crate) static ZONE_USER: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));
pub(crate) static ZONE_CE: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));

/// Waits for a drain of the installed recorder's rings, if one is installed (for the benchmark
/// harness, which has no `Recorder` handle in some phases).
pub(crate) fn drain_installed() {
    let core = ACTIVE.read().clone();
    if let Some(core) = core {
        core.drain(|| core.wakeup.is_finishing());
    }
}

/// State shared by the producers, the flusher and the handle.
pub(crate) struct Core {
    pub(crate) gen: u64,
    pub(crate) clock: Clock,
    pub(crate) registry: Registry,
    pub(crate) page_size: usize,
    pub(crate) max_record: usize,
    pub(crate) flush_interval: Duration,
    pub(crate) max_page_age: Duration,
    /// Events of threads that found every slot taken, once the recorder has been uninstalled
    /// (see [`Core::no_slot`]).
    pub(crate) no_slot: AtomicU64,
    /// Filtered writes of threads without a slot, once the recorder has been uninstalled (see
    /// [`Core::filtered_no_slot`]).
    pub(crate) filtered_no_slot: AtomicU64,
    /// The process id at start: a thread whose id equals it is the main thread. Read once here,
    /// because `getpid` is a system call (glibc keeps no cache of it) that each thread's claim
    /// would otherwise pay, about 0.5 µs on a small VM.
    pub(crate) pid: i32,
    /// Wakes the flusher early, and tells it to finish (see [`crate::flush::wake`]).
    pub(crate) wakeup: crate::flush::wake::Wake,
    pub(crate) progress: crate::stats::Progress,
    /// The flusher until the recording is finished, then how the finish went. Whoever finishes
    /// (the handle, a signal, `exit`) holds the lock until the file is complete, so a second
    /// caller waits for the first and gets its outcome.
    pub(crate) ending: parking_lot::Mutex<Ending>,
    /// The flusher thread's `pthread_t` (0 before it runs): an `exit` on that thread (a sink's)
    /// must not wait for the flusher to end.
    pub(crate) flusher_thread: AtomicU64,
    /// The definitions (SPEC §15) this recording's writers wrote: see [`Definitions`].
    pub(crate) definitions: parking_lot::Mutex<Definitions>,
    /// A rotating recording's deleted segments, counted (see [`crate::sink::Rotation`]).
    pub(crate) rotation: Option<Arc<crate::sink::Rotation>>,
    /// Window mode's requests (SPEC §16), if the recorder keeps a window.
    pub(crate) window: Option<Arc<crate::window::Shared>>,
}

/// The definition records a recording wrote (today the `tracing` callsites), each once, by id:
/// the hook for restating them where a reader needs them again (SPEC §16: a snapshot or a
/// segment restates the definitions it uses, so every file holds its own). A definition is
/// logged when it is first written, on the writer's slow path (once per callsite and
/// recording), never on the hot path. Bounded: past [`Definitions::CAP`] records, or
/// [`Definitions::CAP_BYTES`] bytes, the rest are counted in `overflow`, not kept.
#[derive(Debug, Default)]
pub(crate) struct Definitions {
    /// Each definition's whole record (as written, its header's time the first write's), by
    /// callsite id.
    pub(crate) records: std::collections::BTreeMap<u32, Box<[u8]>>,
    pub(crate) bytes: usize,
    pub(crate) overflow: u64,
}

impl Definitions {
    pub(crate) const CAP: usize = 1 << 16;
    pub(crate) const CAP_BYTES: usize = 16 << 20;

    /// Keeps definition `id`'s record unless one is kept already (two threads may write the
    /// same definition first).
    pub(crate) fn log(&mut self, id: u32, record: &[u8]) {
        if self.records.contains_key(&id) {
            return;
        }
        if self.records.len() >= Self::CAP || self.bytes + record.len() > Self::CAP_BYTES {
            self.overflow += 1;
            return;
        }
        self.bytes += record.len();
        self.records.insert(id, record.into());
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

    /// Wakes the flusher early (a ring passed half full, or a slot retired).
    #[inline]
    pub(crate) fn wake(&self) {
        self.wakeup.notify();
    }

    /// The definition records written so far, one per id, and how many were not kept (what
    /// [`Recorder::definition_records`](crate::Recorder::definition_records) returns).
    pub(crate) fn definition_records(&self) -> (Vec<Box<[u8]>>, u64) {
        let d = self.definitions.lock();
        (d.records.values().cloned().collect(), d.overflow)
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
            SLOTLESS.settle(self);
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

    /// Waits until a flusher cycle that started after this call has completed (see
    /// [`Recorder::drain`]), or until `gone()` says the flusher will not run another one.
    pub(crate) fn drain(&self, gone: impl Fn() -> bool) {
        let ticket = self.wakeup.request_drain();
        let mut backoff = Duration::from_micros(20);
        while !self.wakeup.is_served(ticket) && !gone() {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(1));
        }
    }
}

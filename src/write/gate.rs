//! The process-wide gate every write reads first, and what the installed recording's writers
//! share ([`Hub`]).
//!
//! At most one recorder is installed at a time. Writers find it through [`ACTIVE`] only on their
//! slow path (a thread's first event, or the first after a new recorder started): the fast path
//! compares the thread's cached generation with [`GEN`] and reads the per-kind byte of
//! [`KIND_STATE`], both relaxed loads of lines nothing writes while a recording runs.
//!
//! This is the write side's half of a recording; the lifecycle (`crate::session::Core`: the
//! flusher's handle, the counters, the finish) holds a [`Hub`] and installs it here, so the
//! writers never name the lifecycle.

use crate::flush::wake::Wake;
use crate::window::request::{Pending, Reply, Shared as WindowRequests};
use crate::write::clock::Clock;
use crate::write::slots::Registry;
use crossbeam_utils::CachePadded;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
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
/// `finish` moves them into the recorder's counters, both under ACTIVE's write lock.
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

    /// Takes both counts, `(no_slot, filtered)`, leaving zeroes (at finish, to be settled into
    /// the recorder's own counters).
    pub(crate) fn take(&self) -> (u64, u64) {
        // Relaxed: statistics; the flusher reads the totals after the `finish` handshake.
        (
            self.no_slot.swap(0, Ordering::Relaxed),
            self.filtered.swap(0, Ordering::Relaxed),
        )
    }
}
pub(crate) static NEXT_GEN: AtomicU64 = AtomicU64::new(1);
/// The installed recording's write side, if one is installed.
pub(crate) static ACTIVE: RwLock<Option<Arc<Hub>>> = RwLock::new(None);
/// CeLog zones (CeLogSetZones): user and CE masks.
pub(crate) static ZONE_USER: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));
pub(crate) static ZONE_CE: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(u32::MAX));

/// Waits for a drain of the installed recorder's rings, if one is installed (for the benchmark
/// harness, which has no `Recorder` handle in some phases).
pub(crate) fn drain_installed() {
    let hub = ACTIVE.read().clone();
    if let Some(hub) = hub {
        hub.drain(|| hub.wakeup.is_finishing());
    }
}

/// What the writers of one recording share with its flusher: the slots, the clock, the
/// definitions they wrote, the flusher's wake-up and (in window mode) the snapshot requests.
pub(crate) struct Hub {
    pub(crate) gen: u64,
    pub(crate) clock: Clock,
    pub(crate) registry: Registry,
    pub(crate) max_record: usize,
    /// The process id at start: a thread whose id equals it is the main thread. Read once here,
    /// because `getpid` is a system call (glibc keeps no cache of it) that each thread's claim
    /// would otherwise pay, about 0.5 µs on a small VM.
    pub(crate) pid: i32,
    /// Wakes the flusher early, and tells it to finish (see [`crate::flush::wake`]).
    pub(crate) wakeup: Wake,
    /// The definitions (SPEC §15) this recording's writers wrote: see [`Definitions`].
    pub(crate) definitions: parking_lot::Mutex<Definitions>,
    /// Window mode's requests (SPEC §16), if the recorder keeps a window.
    pub(crate) window: Option<Arc<WindowRequests>>,
}

impl Hub {
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

    /// Waits until a flusher cycle that started after this call has completed (see
    /// [`Recorder::drain`](crate::Recorder::drain)), or until `gone()` says the flusher will not
    /// run another one.
    pub(crate) fn drain(&self, gone: impl Fn() -> bool) {
        let ticket = self.wakeup.request_drain();
        let mut backoff = Duration::from_micros(20);
        while !self.wakeup.is_served(ticket) && !gone() {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(1));
        }
    }

    /// Places a snapshot request (due `keep_after_ns` from now) and wakes the flusher; false if
    /// the recorder keeps no window or a snapshot is already in flight.
    pub(crate) fn request_snapshot(
        &self,
        reason: &str,
        keep_after_ns: u64,
        reply: Option<Reply>,
    ) -> bool {
        let Some(w) = &self.window else { return false };
        let now = self.clock.to_ns(self.clock.raw());
        let ok = w.request(Pending {
            reason: reason.chars().take(256).collect(),
            trigger_ns: now,
            due_ns: now.saturating_add(keep_after_ns),
            reply,
        });
        if ok {
            self.wake();
        }
        ok
    }
}

/// Asks the installed recorder, if it keeps a window, for a snapshot of it; returns at once.
/// False if no recorder keeps a window, or if a snapshot is already pending or being written
/// (at most one is in flight). The file goes to the recorder's snapshot directory
/// ([`RecorderBuilder::snapshot_dir`](crate::RecorderBuilder::snapshot_dir)); `reason` is
/// recorded in its metadata.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// assert!(!typhon_recorder::request_snapshot("no recorder")); // none installed
/// ```
pub fn request_snapshot(reason: &str) -> bool {
    let hub = ACTIVE.read().clone();
    let Some(hub) = hub else { return false };
    hub.request_snapshot(reason, 0, None)
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

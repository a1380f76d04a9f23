//! The slot registry: 255 user slots (1..=255) that threads claim on their first event and retire
//! when they exit.
//!
//! ```text
//!            claim (thread, CAS)            retire (thread exit)         drained (flusher)
//!   FREE ───────────────────────▶ ACTIVE ─────────────────────▶ RETIRING ─────────────────▶ FREE
//! ```
//!
//! A slot's ring comes with its first claim and is kept for every later claim: the producer end
//! is parked in the slot when a thread retires and handed to the next claimer, the consumer end is
//! taken once by the flusher. The first claim takes a ring from a small pool of spares that were
//! allocated and faulted in off the writing threads (by `start()`, then topped up by a helper
//! thread the flusher starts while the pool is short), so a thread's first event does not pay
//! for faulting in megabytes; only when the pool is empty does the claiming thread allocate the
//! ring itself. From 2 MiB up (the default) spares are
//! huge-page backed ([`Backing::Huge`](crate::write::ring::Backing::Huge): fewer TLB misses on every
//! write, but making one may wait milliseconds for the kernel to compact memory); a ring a
//! claiming thread makes itself is not advised ([`Backing::Base`](crate::write::ring::Backing::Base),
//! 4 KiB pages under the usual `madvise` setting). Such a ring stays with its slot for every
//! later thread of it: a program that starts more threads at once than there are spares has
//! that many slots on 4 KiB pages for the whole session. The flusher frees a retiring slot only
//! after draining everything its last thread wrote, so a new thread never shares a ring with
//! records of the old one in flight.

use crate::sync::Mutex;
use crate::sync::{AtomicU64, AtomicU8, Ordering};
use crate::write::ring::{Consumer, Producer};

/// Slot state: nobody owns it.
pub const FREE: u8 = 0;
/// Slot state: a thread owns the producer end.
pub const ACTIVE: u8 = 1;
/// Slot state: its thread exited; the flusher must drain it before it is reused.
pub const RETIRING: u8 = 2;

/// Number of slots, slot 0 (the recorder's own stream) included.
pub const SLOTS: usize = 256;

/// Producer end plus the per-slot state that must survive a thread: parked while the slot is free.
#[derive(Debug)]
pub struct Parked {
    /// The ring's producer end.
    pub producer: Producer,
    /// Next span counter value (span ids are `slot << 56 | counter`, never reused).
    pub span_counter: u64,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// One slot.
#[derive(Debug, Default)]
pub struct SlotEntry {
    /// FREE, ACTIVE or RETIRING.
    pub state: AtomicU8,
    /// The producer end while no thread owns the slot (None before the first claim).
    pub parked: Mutex<Option<Parked>>,
    /// The consumer end until the flusher takes it.
    pub consumer: Mutex<Option<Consumer>>,
    /// Writes refused as invalid (written by the owning thread).
    pub refused: AtomicU64,
    /// Writes filtered out (written by the owning thread).
    pub filtered: AtomicU64,
    /// Spans still open when the recorder finished, written then by the flusher, ending at
    /// finish (see [`SpanGuard`](crate::SpanGuard)).
    pub unclosed: AtomicU64,
    /// The open spans of the slot's thread, made at the slot's first claim and kept for its
    /// later threads (see [`Registry::span_stack`]).
    pub(crate) spans: Mutex<Option<std::sync::Arc<crate::write::stack::SpanStack>>>,
    /// The slot's static names (SPEC §15), made at its first claim and kept for its later
    /// threads (see [`Registry::names`]).
    pub(crate) names: Mutex<Option<std::sync::Arc<crate::write::names::NameTable>>>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// The table of slots.
///
/// ```
/// use typhon_recorder::registry::Registry;
/// let r = Registry::new(4096);
/// let (slot, parked) = r.claim().unwrap().unwrap();
/// assert_eq!(slot, 1);
/// r.retire(slot, parked);
/// assert!(r.take_consumer(1).is_some());
/// ```
#[derive(Debug)]
pub struct Registry {
    slots: Box<[SlotEntry]>,
    /// One past the highest slot ever claimed (the flusher scans below it).
    high_water: AtomicU8,
    ring_bytes: usize,
    /// Rings allocated and faulted in ahead of any claim (see [`Registry::top_up_spares`]).
    spares: Mutex<Vec<(Producer, Consumer)>>,
    /// How many spares [`Registry::top_up_spares`] keeps.
    spare_target: usize,
    /// Tests: stands for a kernel that is slow to give a ring, or refuses it.
    #[cfg(test)]
    pub(crate) hook: std::sync::Mutex<SpareHook>,
}

/// What [`Registry::try_make_spare`] did.
///
/// ```
/// use typhon_recorder::registry::{Registry, SpareOutcome};
/// let r = Registry::with_spares(4096, 1);
/// assert_eq!(r.try_make_spare(), SpareOutcome::Made);
/// assert_eq!(r.try_make_spare(), SpareOutcome::Full);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpareOutcome {
    /// A ring was made and put in the pool.
    Made,
    /// The pool already held its target; nothing was made.
    Full,
    /// The pool is short, but the ring could not be made ([`crate::write::ring::ring`] failed: the
    /// kernel refused the memory, or the ring size is invalid).
    Refused,
}

/// Tests: what the next attempts to make a spare ring meet.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct SpareHook {
    /// The next attempt first waits on this (a message or the sender's drop).
    pub(crate) stall: Option<std::sync::mpsc::Receiver<()>>,
    /// This many attempts are refused.
    pub(crate) refuse: usize,
    /// When each attempt began.
    pub(crate) attempts: Vec<std::time::Instant>,
}

impl Registry {
    /// A registry whose rings will have `ring_bytes` bytes each (checked by the caller).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(8192);
    /// assert_eq!(r.high_water(), 1);
    /// ```
    pub fn new(ring_bytes: usize) -> Self {
        Self::with_spares(ring_bytes, 0)
    }

    /// The size of each slot's ring, in bytes.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::registry::Registry::new(8192).ring_bytes(), 8192);
    /// ```
    pub fn ring_bytes(&self) -> usize {
        self.ring_bytes
    }

    /// A registry that keeps `spares` rings ready for first claims once
    /// [`top_up_spares`](Self::top_up_spares) has run (nothing is allocated here).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::with_spares(4096, 2);
    /// assert_eq!(r.spare_count(), 0);
    /// assert_eq!(r.top_up_spares(), 2);
    /// assert_eq!(r.spare_count(), 2);
    /// ```
    pub fn with_spares(ring_bytes: usize, spares: usize) -> Self {
        Self {
            slots: (0..SLOTS).map(|_| SlotEntry::default()).collect(),
            high_water: AtomicU8::new(1),
            ring_bytes,
            spares: Mutex::new(Vec::with_capacity(spares)),
            spare_target: spares,
            #[cfg(test)]
            hook: std::sync::Mutex::new(SpareHook::default()),
        }
    }

    /// Allocates (and faults in) rings until the pool holds its target number of spares; returns
    /// how many it made. Called by `start()`, never by a writing thread; later the flusher's
    /// `typhon-spares` helper makes them (see [`try_make_spare`](Self::try_make_spare)). A
    /// ring size that [`ring`](crate::write::ring::ring) refuses makes no spare (the claim then
    /// reports the error, as without a pool).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::with_spares(4096, 1);
    /// assert_eq!(r.top_up_spares(), 1);
    /// assert_eq!(r.top_up_spares(), 0); // already full
    /// r.claim().unwrap().unwrap(); // takes the spare
    /// assert_eq!((r.spare_count(), r.top_up_spares()), (0, 1));
    /// ```
    pub fn top_up_spares(&self) -> usize {
        let mut made = 0;
        while self.make_spare() {
            made += 1;
        }
        made
    }

    /// Makes one spare ring if the pool is below its target; returns whether it made one
    /// ([`try_make_spare`](Self::try_make_spare) tells a full pool from a refused ring).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::with_spares(4096, 2);
    /// assert!(r.make_spare());
    /// assert_eq!(r.spare_count(), 1);
    /// assert!(r.make_spare());
    /// assert!(!r.make_spare()); // the pool is full
    /// ```
    pub fn make_spare(&self) -> bool {
        self.try_make_spare() == SpareOutcome::Made
    }

    /// Makes one spare ring if the pool is below its target, and says what happened.
    ///
    /// Spares are huge-page backed ([`crate::write::ring::ring`]): fewer TLB misses on every write, but
    /// making one may wait milliseconds for the kernel to compact memory. So after `start()`
    /// a helper thread makes them, which the flusher starts while the pool is short, and the
    /// flusher goes on draining the rings meanwhile (only when no thread can be started does
    /// the flusher make one itself). The ring is made outside the pool's lock, so a claim that
    /// takes a spare meanwhile waits for no allocation.
    ///
    /// ```
    /// use typhon_recorder::registry::{Registry, SpareOutcome};
    /// let r = Registry::with_spares(4096, 1);
    /// assert_eq!(r.try_make_spare(), SpareOutcome::Made);
    /// assert_eq!(r.try_make_spare(), SpareOutcome::Full);
    /// // A ring size the ring module refuses (not a power of two):
    /// assert_eq!(Registry::with_spares(5000, 1).try_make_spare(), SpareOutcome::Refused);
    /// ```
    pub fn try_make_spare(&self) -> SpareOutcome {
        if !self.needs_spares() {
            return SpareOutcome::Full;
        }
        #[cfg(test)]
        {
            let (stall, refuse) = {
                let mut h = self.hook.lock().unwrap_or_else(|e| e.into_inner());
                h.attempts.push(std::time::Instant::now());
                let refuse = h.refuse > 0;
                h.refuse = h.refuse.saturating_sub(1);
                (h.stall.take(), refuse)
            };
            if let Some(rx) = stall {
                let _ = rx.recv();
            }
            if refuse {
                return SpareOutcome::Refused;
            }
        }
        let Ok(pc) = crate::write::ring::ring(self.ring_bytes) else {
            return SpareOutcome::Refused;
        };
        self.spares.lock().push(pc);
        SpareOutcome::Made
    }

    /// Whether the pool holds fewer spares than its target (a claim took one).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::with_spares(4096, 1);
    /// assert!(r.needs_spares());
    /// r.top_up_spares();
    /// assert!(!r.needs_spares());
    /// ```
    pub fn needs_spares(&self) -> bool {
        self.spare_count() < self.spare_target
    }

    /// Rings ready for first claims now.
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// assert_eq!(r.spare_count(), 0);
    /// ```
    pub fn spare_count(&self) -> usize {
        self.spares.lock().len()
    }

    /// The slot entry `i`.
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// assert_eq!(r.slot(3).state.load(std::sync::atomic::Ordering::Relaxed), 0);
    /// ```
    pub fn slot(&self, i: u8) -> &SlotEntry {
        &self.slots[i as usize]
    }

    /// The span stack of `slot`, for the thread that just claimed it: made at the slot's first
    /// claim (the claim allocates; no span does), emptied for each later thread.
    pub(crate) fn span_stack(&self, slot: u8) -> std::sync::Arc<crate::write::stack::SpanStack> {
        let mut g = self.slot(slot).spans.lock();
        let s = g.get_or_insert_with(|| std::sync::Arc::new(crate::write::stack::SpanStack::new()));
        s.clear();
        s.clone()
    }

    /// The static names of `slot`, for the thread that just claimed it, and its epoch in them:
    /// made at the slot's first claim, sized with the ring (the claim allocates; no write
    /// does), kept for its later threads, whose ids stay those of the slot.
    pub(crate) fn names(&self, slot: u8) -> (std::sync::Arc<crate::write::names::NameTable>, u32) {
        let mut g = self.slot(slot).names.lock();
        let t = g.get_or_insert_with(|| {
            std::sync::Arc::new(crate::write::names::NameTable::new(self.ring_bytes))
        });
        (t.clone(), t.claim())
    }

    /// The NameDefinition records of every static name `slot` has defined so far (stamped
    /// `ts`), and how many of its records carried their name inline for want of room in its
    /// table (see [`crate::Recorder::slot_definitions`]).
    pub(crate) fn name_definitions(&self, slot: u8, ts: i64) -> (Vec<Box<[u8]>>, u64) {
        let t = self.slot(slot).names.lock().clone();
        t.map_or((Vec::new(), 0), |t| {
            // Relaxed: a statistic.
            (
                t.definitions(slot, ts),
                t.inline.load(std::sync::atomic::Ordering::Relaxed),
            )
        })
    }

    /// The records of the spans `slot`'s thread has open, ending at `end` (raw ticks), each
    /// counted in the slot's `unclosed`: the flusher writes them at finish, so that a span's
    /// parent is in the file even when the thread never ends it (a forgotten guard), or goes on
    /// past `finish`.
    pub(crate) fn unclosed_spans(&self, slot: u8, end: u64) -> Vec<Vec<u8>> {
        let e = self.slot(slot);
        let stack = e.spans.lock().clone();
        let recs = stack.map_or_else(Vec::new, |s| s.open_records(slot, end));
        // Relaxed: a statistic, read after the flusher is joined.
        e.unclosed.fetch_add(recs.len() as u64, Ordering::Relaxed);
        recs
    }

    /// The records of the spans `slot`'s thread has open, ending at `end` (raw ticks), not
    /// counted: what a snapshot writes ending at its cut while the spans go on (SPEC §16).
    pub(crate) fn open_spans(&self, slot: u8, end: u64) -> Vec<Vec<u8>> {
        let stack = self.slot(slot).spans.lock().clone();
        stack.map_or_else(Vec::new, |s| s.open_records(slot, end))
    }

    /// One past the highest slot ever claimed (at least 1).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// r.claim().unwrap();
    /// assert_eq!(r.high_water(), 2);
    /// ```
    pub fn high_water(&self) -> usize {
        // Acquire pairs with the Release in `claim`: a slot below the value is fully set up.
        match self.high_water.load(Ordering::Acquire) {
            0 => SLOTS,
            n => n as usize,
        }
    }

    /// Claims a free user slot for the calling thread: `Ok(None)` when all 255 are taken,
    /// `Err` when the slot's ring could not be created. A slot's first claim takes a spare ring,
    /// or allocates one when none is left.
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// let a = r.claim().unwrap().unwrap();
    /// let b = r.claim().unwrap().unwrap();
    /// assert_eq!((a.0, b.0), (1, 2));
    /// ```
    pub fn claim(&self) -> Result<Option<(u8, Parked)>, crate::write::ring::RingError> {
        for i in 1..SLOTS {
            let e = &self.slots[i];
            // Relaxed pre-check to skip owned slots cheaply; the CAS decides.
            if e.state.load(Ordering::Relaxed) != FREE {
                continue;
            }
            // Relaxed: the CAS only decides who owns the slot. Nothing else crosses through the
            // state: the parked ring end comes under `parked`'s lock, and its bytes are ordered
            // by the ring itself (the producer writes only below the consumer's `tail`, loaded
            // with Acquire), so a reused ring never overwrites what the flusher still reads. The
            // loom model `claim_retire_reuse_against_flusher` checks the bytes.
            if e.state
                .compare_exchange(FREE, ACTIVE, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let mut parked = e.parked.lock();
            let p = match parked.take() {
                Some(p) => p,
                None => {
                    // (The pool's lock is released before a fallback allocation.)
                    let spare = self.spares.lock().pop();
                    let made = match spare {
                        Some(pc) => Ok(pc),
                        // This thread waits for it: 4 KiB pages, no wait for compaction.
                        None => crate::write::ring::ring_backed(
                            self.ring_bytes,
                            crate::write::ring::Backing::Base,
                        ),
                    };
                    let (producer, consumer) = match made {
                        Ok(pc) => pc,
                        Err(err) => {
                            // Relaxed: nothing was published with the slot (as in the CAS).
                            e.state.store(FREE, Ordering::Relaxed);
                            return Err(err);
                        }
                    };
                    *e.consumer.lock() = Some(consumer);
                    Parked {
                        producer,
                        span_counter: 1,
                    }
                }
            };
            drop(parked);
            // Raise the high-water mark past this slot. Release: the flusher, seeing the new mark
            // with Acquire, also sees the consumer stored above.
            let want = (i + 1) as u8; // 256 wraps to 0, read back as SLOTS
            let mut cur = self.high_water.load(Ordering::Relaxed);
            while cur != 0 && (want == 0 || cur < want) {
                match self.high_water.compare_exchange_weak(
                    cur,
                    want,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(c) => cur = c,
                }
            }
            return Ok(Some((i as u8, p)));
        }
        Ok(None)
    }

    /// Gives the producer end back at thread exit and marks the slot RETIRING.
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// let (s, p) = r.claim().unwrap().unwrap();
    /// r.retire(s, p);
    /// assert_eq!(r.slot(s).state.load(std::sync::atomic::Ordering::Relaxed), 2);
    /// ```
    pub fn retire(&self, slot: u8, parked: Parked) {
        let e = &self.slots[slot as usize];
        *e.parked.lock() = Some(parked);
        // Release: the flusher's Acquire load of RETIRING sees every record this thread
        // published (each publish is a Release store of the ring head before this store).
        e.state.store(RETIRING, Ordering::Release);
    }

    /// The slot's state as the flusher reads it before servicing the slot: FREE (nothing to
    /// do), ACTIVE, or RETIRING (drain it, then [`release`](Self::release) it).
    ///
    /// ```
    /// use typhon_recorder::registry::{Registry, RETIRING};
    /// let r = Registry::new(4096);
    /// let (s, p) = r.claim().unwrap().unwrap();
    /// r.retire(s, p);
    /// assert_eq!(r.state_for_service(s), RETIRING);
    /// ```
    pub fn state_for_service(&self, slot: u8) -> u8 {
        // Acquire pairs with `retire`'s Release store: for RETIRING, every record of the slot's
        // last thread is published (its final `head` is then visible to the drain that
        // follows). A claimed slot's consumer comes through `take_consumer`'s lock instead.
        self.slots[slot as usize].state.load(Ordering::Acquire)
    }

    /// Takes the consumer end of a slot (the flusher does this once per slot).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// assert!(r.take_consumer(1).is_none());
    /// r.claim().unwrap();
    /// assert!(r.take_consumer(1).is_some());
    /// assert!(r.take_consumer(1).is_none());
    /// ```
    pub fn take_consumer(&self, slot: u8) -> Option<Consumer> {
        self.slots[slot as usize].consumer.lock().take()
    }

    /// Marks a drained RETIRING slot FREE again (flusher only).
    ///
    /// ```
    /// let r = typhon_recorder::registry::Registry::new(4096);
    /// let (s, p) = r.claim().unwrap().unwrap();
    /// r.retire(s, p);
    /// r.release(s);
    /// assert_eq!(r.claim().unwrap().unwrap().0, s);
    /// ```
    pub fn release(&self, slot: u8) {
        // Relaxed: a claimer takes nothing from the flusher through the state (see `claim`).
        self.slots[slot as usize]
            .state
            .store(FREE, Ordering::Relaxed);
    }
}

#[cfg(all(test, target_os = "linux", not(loom), not(miri)))]
mod tests {
    use super::*;
    use crate::write::ring::tests::{huge_advised, kernel_has_thp};
    use crate::write::ring::HUGE_PAGE;

    #[test]
    fn spares_are_huge_page_backed_and_a_claims_own_ring_is_not() {
        let advised = |p: &Parked| huge_advised(p.producer.buffer_addr());
        let r = Registry::with_spares(HUGE_PAGE, 1);
        assert_eq!(r.top_up_spares(), 1);
        let (_, spare) = r.claim().unwrap().unwrap();
        assert_eq!(advised(&spare), kernel_has_thp());
        assert_eq!(spare.producer.buffer_addr() % HUGE_PAGE, 0);
        // The pool is empty: this claim makes its ring itself, in 4 KiB pages.
        let (_, own) = r.claim().unwrap().unwrap();
        assert!(!advised(&own));
    }
}

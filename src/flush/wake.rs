//! The flusher's wake-up protocol: producers (a ring past half full, a thread retiring) and
//! `finish()` wake the sleeping flusher; the flusher sleeps between cycles for at most the flush
//! interval.
//!
//! ```text
//!  producer: publish records (Release store of the ring head)   flusher: loop {
//!            notify():                                                fin = is_finishing()
//!              if !pending.swap(true)  ── first since the clear ──▶     cycle (drain every ring)
//!                  lock; notify_one                                    if fin { break }
//!  finish(): finishing = true; lock; notify_one                         wait(interval):
//!                                                                        lock; if !pending && !finishing
//!                                                                          { sleep on the condvar }
//!                                                                        unlock; pending.swap(false)
//!                                                                    }
//! ```
//!
//! No lost wake-up: a producer's `swap(true)` either comes before the flusher's clearing
//! `swap(false)` in the flag's modification order — then the clear reads it, synchronises with
//! it, and the next cycle sees every record published before the notify — or after it, and then
//! the flag stays `true` until the next `wait`, which returns at once (or is woken by the
//! producer's notify, made under the lock so it cannot fall between the check and the sleep).
//! Clearing with a plain store would not synchronise: the cycle after it could miss the records
//! of a notify that the store then erased, and the producer would not notify again until its
//! ring could be full. Nothing written before `finish()` is left behind: `finishing` is set with
//! Release after those writes, the flusher reads it with Acquire before its last cycle.
//!
//! Drain requests (`Recorder::drain`) ride on the same wake-up: the caller takes a ticket from
//! `requested` (a Release fetch_add) and notifies; the flusher reads `requested` (Acquire) before
//! each cycle and stores what it read into `served` (Release) after the cycle has published its
//! counters. A cycle that read the ticket synchronised with the request, so it drained every record
//! the caller published before asking; the caller, seeing `served` reach its ticket (Acquire), sees
//! that cycle's counters.
//!
//! The loom models in `loom-tests/tests/wake.rs` check this type.

use crate::sync::{AtomicBool, AtomicU64, Condvar, Mutex, Ordering};
use std::time::Duration;

/// Wake-up state shared by the producers, the flusher and the recorder handle.
#[derive(Debug, Default)]
pub struct Wake {
    /// A producer asked for an early cycle since the flusher last cleared the flag.
    pending: AtomicBool,
    /// `finish()` was called: the next cycle is the last.
    finishing: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
    /// Drain requests taken so far (`request_drain` hands out tickets 1, 2, ...).
    requested: AtomicU64,
    /// The highest ticket whose cycle has completed.
    served: AtomicU64,
}

impl Wake {
    /// Nobody has asked for anything yet.
    ///
    /// ```
    /// let w = typhon_recorder::wake::Wake::new();
    /// assert!(!w.is_finishing());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Producer side: asks the flusher for an early cycle. Only the first caller since the
    /// flusher's last clear pays for the lock and the notify.
    ///
    /// ```
    /// let w = typhon_recorder::wake::Wake::new();
    /// w.notify();
    /// w.wait(Some(std::time::Duration::from_secs(60))); // returns at once: a wake is pending
    /// ```
    #[inline]
    pub fn notify(&self) {
        // Release: the flusher's Acquire swap that reads this `true` (or clears after it) sees
        // every record this thread published before. The read half needs no ordering: it only
        // decides whether to notify.
        if !self.pending.swap(true, Ordering::Release) {
            self.notify_locked();
        }
    }

    #[cold]
    fn notify_locked(&self) {
        // Notifying under the lock: the flusher checks the flags and starts to sleep under it,
        // so the notify cannot fall between its check and its sleep.
        let _g = self.lock.lock();
        self.cv.notify_one();
    }

    /// `finish()` side: the flusher's next cycle is its last. Every write that happened before
    /// this call is drained by that cycle.
    ///
    /// ```
    /// let w = typhon_recorder::wake::Wake::new();
    /// w.finish();
    /// assert!(w.is_finishing());
    /// ```
    pub fn finish(&self) {
        // Release: pairs with the Acquire in `is_finishing`; the last cycle sees every record
        // published before this call.
        self.finishing.store(true, Ordering::Release);
        self.notify_locked();
    }

    /// Flusher side: whether `finish` was called (read before each cycle).
    pub fn is_finishing(&self) -> bool {
        // Acquire: pairs with the Release store in `finish`.
        self.finishing.load(Ordering::Acquire)
    }

    /// Flusher side: sleeps until a producer notifies, `finish` is called, or `timeout` passes
    /// (`None`: no timeout), then clears the request flag. The cycle after this sees every record
    /// published before a notify it consumed.
    pub fn wait(&self, timeout: Option<Duration>) {
        let g = self.lock.lock();
        // Relaxed under the lock: a notifier sets the flag before taking the lock, so either we
        // see its `true` here (and the swap below synchronises) or it notifies after we sleep.
        let g = if !self.pending.load(Ordering::Relaxed) && !self.finishing.load(Ordering::Relaxed)
        {
            self.cv.wait(g, timeout)
        } else {
            g
        };
        drop(g);
        // Acquire: pairs with the producers' Release swap; a swap, not a store, so a `true` set
        // after our check is read (and synchronised with) rather than overwritten unseen.
        self.pending.swap(false, Ordering::Acquire);
    }

    /// Caller side of a drain request: takes a ticket and wakes the flusher. Once
    /// [`is_served`](Self::is_served) says yes for the ticket, a whole cycle that started after
    /// this call has run, so every record published before it is on a page and counted.
    ///
    /// ```
    /// let w = typhon_recorder::wake::Wake::new();
    /// let t = w.request_drain();
    /// assert!(!w.is_served(t));
    /// let seen = w.cycle_start(); // the flusher, before a cycle
    /// w.cycle_done(seen);         // ... and after it
    /// assert!(w.is_served(t));
    /// ```
    pub fn request_drain(&self) -> u64 {
        // Release: the flusher's Acquire load in `cycle_start` that reads this ticket (or a later
        // one: every later change is a fetch_add, so it continues this release sequence) sees
        // everything this thread did before, the ring heads it published included.
        let ticket = self.requested.fetch_add(1, Ordering::Release) + 1;
        self.notify();
        ticket
    }

    /// Flusher side, before a cycle: the newest ticket that cycle will serve.
    pub fn cycle_start(&self) -> u64 {
        // Acquire: pairs with the Release fetch_add in `request_drain` (see there).
        self.requested.load(Ordering::Acquire)
    }

    /// Flusher side, after a cycle (and after publishing its counters): tickets up to `seen`
    /// (from [`cycle_start`](Self::cycle_start)) are served.
    pub fn cycle_done(&self, seen: u64) {
        // Release: pairs with the Acquire in `is_served`; the caller then sees the counters the
        // cycle published. Only the flusher stores, so a plain store never goes backwards.
        self.served.store(seen, Ordering::Release);
    }

    /// Caller side: whether the cycle serving `ticket` has completed.
    pub fn is_served(&self, ticket: u64) -> bool {
        // Acquire: pairs with the Release store in `cycle_done`.
        self.served.load(Ordering::Acquire) >= ticket
    }
}

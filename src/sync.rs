//! The synchronisation primitives the lock-free parts use: `std`'s atomics and `parking_lot`'s
//! locks normally, loom's under `--cfg loom`, so the loom models in `loom-tests/` check the real
//! ring, registry and wake-up code rather than a copy.
//!
//! Loom checks the index and flag protocols (every interleaving and every weak-memory outcome of
//! these atomics and locks). The ring's byte buffer is raw memory; under loom the ring declares
//! each byte access through `loom::cell::UnsafeCell`s (see `ring::Shared::cells`), so loom also
//! checks that `head` and `tail` order the bytes.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// A mutex with `parking_lot`'s interface (`lock()` returns the guard; no poisoning).
#[cfg(not(loom))]
pub type Mutex<T> = parking_lot::Mutex<T>;
/// Its guard.
#[cfg(not(loom))]
pub type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

/// Under loom: loom's mutex behind `parking_lot`'s interface.
#[cfg(loom)]
#[derive(Debug, Default)]
pub struct Mutex<T>(loom::sync::Mutex<T>);

/// Its guard.
#[cfg(loom)]
pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

#[cfg(loom)]
impl<T> Mutex<T> {
    /// A mutex holding `v`.
    #[allow(dead_code)]
    pub fn new(v: T) -> Self {
        Self(loom::sync::Mutex::new(v))
    }
    /// Locks it. Loom's mutex poisons only when a model thread panics, which already fails the
    /// model, so the unwrap never hides anything.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap()
    }
    /// Locks it if it is free (`parking_lot`'s `try_lock`).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock().ok()
    }
}

/// A condition variable: `parking_lot`'s normally, loom's under `--cfg loom`.
#[derive(Debug, Default)]
pub struct Condvar(
    #[cfg(not(loom))] parking_lot::Condvar,
    #[cfg(loom)] loom::sync::Condvar,
);

impl Condvar {
    /// Wakes one waiter.
    pub fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Releases `g`, sleeps until notified (or until `timeout` when given; spurious wake-ups are
    /// possible), and locks again.
    ///
    /// Under loom, which has no time, a timed wait returns at once (the timeout elapsed: one legal
    /// outcome, which lets a model explore the timed-out path), and an untimed wait blocks until
    /// notified, so a lost wake-up shows up as a deadlock of the model.
    pub fn wait<'a, T>(
        &self,
        g: MutexGuard<'a, T>,
        timeout: Option<std::time::Duration>,
    ) -> MutexGuard<'a, T> {
        #[cfg(not(loom))]
        {
            let mut g = g;
            match timeout {
                Some(d) => {
                    self.0.wait_for(&mut g, d);
                }
                None => self.0.wait(&mut g),
            }
            g
        }
        #[cfg(loom)]
        {
            match timeout {
                Some(_) => g,
                None => self.0.wait(g).unwrap(),
            }
        }
    }
}

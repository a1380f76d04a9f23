//! The spare rings: a helper thread keeps the pool full, so that neither the writers nor the
//! flusher wait for the kernel to make a ring.

use crate::session::Core;
use crate::write::slots::SpareOutcome;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long after the kernel refused a spare ring the next one is tried.
pub(crate) const SPARE_RETRY: Duration = Duration::from_secs(1);

/// Keeps the pool of spare rings full from a helper thread, so that the flusher does not wait
/// for the kernel.
///
/// Making a huge-page ring may stall for memory compaction: 5–9 ms measured on this project's
/// machines, more on a fragmented one (see [`Registry::try_make_spare`]). Made by the flusher,
/// that stall would hold up the drain of every ring, and a thread writing 2.5 M records/s fills
/// its 2 MiB ring in about 38 ms. So the flusher, after a cycle that finds the pool short (a claim
/// that takes the last spare wakes it for one), starts a helper thread (`typhon-spares`) that
/// makes rings until the pool is full (or the recorder is finishing) and then ends; the flusher
/// looks at it after each cycle and joins it at shutdown. There is at most one helper, and none
/// while the pool is full, so a program whose threads have all started carries no extra thread. If
/// the kernel refuses a ring, the next helper starts after the first cycle at least
/// [`SPARE_RETRY`] later (a thread that finds no spare meanwhile makes its own ring, as without a
/// pool). Only if no thread can be started does the flusher make a ring itself, one per cycle.
///
/// [`Registry::try_make_spare`]: crate::write::slots::Registry::try_make_spare
#[derive(Default)]
pub(super) struct SpareMaker {
    /// The helper until the flusher joins it; it returns false if the kernel refused a ring.
    helper: Option<JoinHandle<bool>>,
    /// No helper before this time: the last one could not make a ring.
    retry_at: Option<Instant>,
}

impl SpareMaker {
    /// Joins a finished helper and starts one if the pool is short; never blocks on a helper
    /// that is still making a ring.
    pub(super) fn tend(&mut self, core: &Arc<Core>) {
        if let Some(h) = &self.helper {
            if !h.is_finished() {
                return;
            }
            // A helper that panicked made no ring worth waiting for: treat it as refused.
            let given = self
                .helper
                .take()
                .is_some_and(|h| h.join().unwrap_or(false));
            if !given {
                self.retry_at = Some(Instant::now() + SPARE_RETRY);
            }
        }
        if self.retry_at.is_some_and(|t| Instant::now() < t) || !core.registry.needs_spares() {
            return;
        }
        self.retry_at = None;
        let c = Arc::clone(core);
        let spawned = std::thread::Builder::new()
            .name("typhon-spares".into())
            .spawn(move || {
                // A finishing recorder would unmap the rings at once: stop making them.
                while !c.wakeup.is_finishing() {
                    match c.registry.try_make_spare() {
                        SpareOutcome::Made => {}
                        SpareOutcome::Full => break,
                        SpareOutcome::Refused => return false,
                    }
                }
                true
            });
        match spawned {
            Ok(h) => self.helper = Some(h),
            Err(_) => {
                core.registry.make_spare();
            }
        }
    }

    /// Waits for a helper still making a ring (the recorder starts nothing it does not stop).
    pub(super) fn stop(&mut self) {
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

impl Drop for SpareMaker {
    /// A flusher that unwinds (a panic in a cycle) still waits for its helper, which holds the
    /// recorder's state, instead of leaving it running after `finish()` returned.
    fn drop(&mut self) {
        self.stop();
    }
}

//! Allocation counters: [`TrackingAllocator`], a `#[global_allocator]` wrapper that counts each
//! thread's allocations and frees (and their bytes) and writes the running totals as counters
//! ([`ALLOC_COUNT`], [`ALLOC_BYTES`], [`FREE_COUNT`], [`FREE_BYTES`]) into the thread's own slot.
//!
//! Cost. An allocation is one add to a thread-local accumulator (its count and bytes packed
//! in one u64; a `const` thread-local of `Cell`s with no destructor: a thread-pointer offset,
//! no registration, valid until the thread is gone) and a compare; every [`CHECK_EVERY`]
//! allocations (or frees) it folds that into the running totals and looks whether
//! [`MIN_INTERVAL_NS`] has passed since the thread last wrote its totals, and writes them if so.
//! The totals are cumulative, so a sample skipped loses nothing: the next one carries it, and
//! what is left when the thread exits, when the finishing thread calls
//! [`Recorder::finish`](crate::Recorder::finish), or at [`flush_thread`], is written then.
//!
//! Safety of writing from inside an allocator. The allocator runs inside whatever allocates,
//! including the recorder itself (a thread's first event claims a slot and makes a ring; a
//! callsite's definition is copied into a Vec while its record is being filled). So a sample is
//! written only when (1) this module is not already writing on this thread (its own guard,
//! which also makes every allocation the write makes count without recursing), (2) the recorder
//! is not in one of its allocating paths on this thread (`RecorderBusy`, set by them), and
//! (3) the thread already has a writer of the installed recorder: the allocator never claims a
//! slot (a claim takes the registry's locks, which a thread may hold while it allocates), so a
//! thread's totals show once it has recorded anything or called
//! [`register_thread`](crate::register_thread). Before a recorder is installed, after it
//! finished, and on a thread being torn down, it only counts.

use crate::codec::TraceEventKind as K;
use crate::write::alloc_state::{fold, put_sample, totals, Local, FOLD_AT, LOCAL, LOW, ONE, SMALL};
use crate::write::gate::{GEN, KIND_ON};
use crate::write::writer::{kind_state, DEAD, HOT};
use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::write::alloc_state::{
    AllocTotals, ALLOC_BYTES, ALLOC_COUNT, ALLOC_LARGE, CHECK_EVERY, FREE_BYTES, FREE_COUNT,
    MIN_INTERVAL_NS,
};

/// A [`GlobalAlloc`] that passes every call to `A` and counts each thread's allocations and
/// frees as counters (see the [module](crate::alloc) for when they are written and what it
/// costs). It never allocates itself and never reenters the recorder.
///
/// ```no_run
/// use std::alloc::System;
/// use typhon_recorder::TrackingAllocator;
///
/// #[global_allocator]
/// static A: TrackingAllocator<System> = TrackingAllocator::new(System).track_sizes_over(1 << 20);
/// # fn main() {}
/// ```
pub struct TrackingAllocator<A> {
    inner: A,
    /// Allocations larger than this are each recorded ([`ALLOC_LARGE`]); `usize::MAX`: none.
    large: AtomicUsize,
    /// `min(large, 2^32 - 1)`: the one compare of an allocation's fast path (a larger size
    /// takes the slow path, which looks at `large`).
    fast: AtomicUsize,
}

impl<A> TrackingAllocator<A> {
    /// Wraps `inner`.
    ///
    /// ```
    /// let a = typhon_recorder::TrackingAllocator::new(std::alloc::System);
    /// assert_eq!(a.sizes_tracked_over(), None);
    /// ```
    pub const fn new(inner: A) -> Self {
        Self {
            inner,
            large: AtomicUsize::new(usize::MAX),
            fast: AtomicUsize::new(SMALL - 1),
        }
    }

    /// Records each allocation larger than `bytes` as a sample of [`ALLOC_LARGE`] whose value
    /// is its size (a `const` builder, for the `static`; [`set_track_sizes_over`] changes it at
    /// run time).
    ///
    /// [`set_track_sizes_over`]: Self::set_track_sizes_over
    ///
    /// ```
    /// use typhon_recorder::TrackingAllocator;
    /// static A: TrackingAllocator<std::alloc::System> =
    ///     TrackingAllocator::new(std::alloc::System).track_sizes_over(4096);
    /// assert_eq!(A.sizes_tracked_over(), Some(4096));
    /// ```
    pub const fn track_sizes_over(mut self, bytes: usize) -> Self {
        self.large = AtomicUsize::new(bytes);
        self.fast = AtomicUsize::new(if bytes < SMALL - 1 { bytes } else { SMALL - 1 });
        self
    }

    /// [`track_sizes_over`](Self::track_sizes_over) at run time; `None` records none.
    ///
    /// ```
    /// let a = typhon_recorder::TrackingAllocator::new(std::alloc::System);
    /// a.set_track_sizes_over(Some(1 << 20));
    /// assert_eq!(a.sizes_tracked_over(), Some(1 << 20));
    /// ```
    pub fn set_track_sizes_over(&self, bytes: Option<usize>) {
        // Relaxed: a threshold; an allocation racing with the change may use either value.
        let bytes = bytes.unwrap_or(usize::MAX);
        self.large.store(bytes, Ordering::Relaxed);
        self.fast.store(bytes.min(SMALL - 1), Ordering::Relaxed);
    }

    /// The size over which each allocation is recorded, if any.
    ///
    /// ```
    /// let a = typhon_recorder::TrackingAllocator::new(std::alloc::System);
    /// assert_eq!(a.sizes_tracked_over(), None);
    /// ```
    pub fn sizes_tracked_over(&self) -> Option<usize> {
        // Relaxed: as in `set_track_sizes_over`.
        Some(self.large.load(Ordering::Relaxed)).filter(|&b| b != usize::MAX)
    }

    /// The wrapped allocator.
    ///
    /// ```
    /// let a = typhon_recorder::TrackingAllocator::new(std::alloc::System);
    /// let _system: &std::alloc::System = a.inner();
    /// ```
    pub fn inner(&self) -> &A {
        &self.inner
    }

    #[inline(always)]
    fn fast(&self) -> usize {
        // Relaxed: as in `set_track_sizes_over`.
        self.fast.load(Ordering::Relaxed)
    }
}

#[inline(always)]
fn count(l: &Local, alloc: Option<usize>, free: Option<usize>, fast: usize, large: &AtomicUsize) {
    let mut slow = false;
    if let Some(size) = free {
        let a = l
            .free_acc
            .get()
            .wrapping_add(ONE)
            .wrapping_add(size as u64 & LOW);
        l.free_acc.set(a);
        slow |= (a >= FOLD_AT) | (size >= SMALL);
    }
    if let Some(size) = alloc {
        let a = l
            .alloc_acc
            .get()
            .wrapping_add(ONE)
            .wrapping_add(size as u64 & LOW);
        l.alloc_acc.set(a);
        slow |= (a >= FOLD_AT) | (size > fast);
    }
    if slow {
        // Relaxed: as in `set_track_sizes_over`.
        slow_path(l, alloc, free, large.load(Ordering::Relaxed));
    }
}

/// Counts an allocation of `size` bytes (and a free of `freed`) on this thread.
#[inline(always)]
fn note(alloc: Option<usize>, free: Option<usize>, fast: usize, large: &AtomicUsize) {
    // `with` of a const thread-local without drop glue cannot fail.
    LOCAL.with(|l| count(l, alloc, free, fast, large));
}

// SAFETY: every method passes its arguments unchanged to `A`, whose contract is the caller's,
// and returns `A`'s result unchanged; the counting around it neither allocates (thread-local
// `Cell`s, and the recorder's ring when a sample is written, which allocates nothing once the
// thread has a writer; whatever it might allocate anyway is only counted, under `writing`) nor
// touches the memory involved, nor unwinds (no panicking operation: wrapping arithmetic).
unsafe impl<A: GlobalAlloc> GlobalAlloc for TrackingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `A::alloc`'s.
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            note(Some(layout.size()), None, self.fast(), &self.large);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            note(Some(layout.size()), None, self.fast(), &self.large);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is `A::dealloc`'s (`ptr` came from this
        // allocator, hence from `A`, with `layout`).
        unsafe { self.inner.dealloc(ptr, layout) };
        note(None, Some(layout.size()), SMALL - 1, &self.large);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is `A::realloc`'s.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        // On failure the old block is still live and nothing changed.
        if !p.is_null() {
            note(
                Some(new_size),
                Some(layout.size()),
                self.fast(),
                &self.large,
            );
        }
        p
    }
}

/// This thread's running totals: what a [`TrackingAllocator`] counted on it since it started
/// (all zero without one).
///
/// ```
/// let t = typhon_recorder::alloc::thread_totals();
/// assert!(t.allocs >= t.frees || t.free_bytes > 0 || t == Default::default());
/// ```
pub fn thread_totals() -> AllocTotals {
    LOCAL.with(totals)
}

/// Writes this thread's totals now, if it has a writer of the installed recorder and they
/// changed since its last sample (what thread exit and [`Recorder::finish`](crate::Recorder::finish)
/// do for the thread they run on). Returns whether a sample was written.
///
/// ```
/// assert!(!typhon_recorder::alloc::flush_thread()); // no recorder installed
/// ```
pub fn flush_thread() -> bool {
    LOCAL.with(|l| write_sample(l, None, true))
}

/// An accumulator reached [`CHECK_EVERY`], or a size was too large to pack (`alloc` and
/// `free` were added with their sizes cut to 32 bits: corrected here), or `alloc` is over
/// `large`: folds, corrects, and writes a sample if one is due.
#[cold]
#[inline(never)]
fn slow_path(l: &Local, alloc: Option<usize>, free: Option<usize>, large: usize) {
    fold(l);
    let fix = |bytes: &Cell<u64>, size: Option<usize>| {
        if let Some(size) = size.filter(|&s| s >= SMALL) {
            bytes.set(
                bytes
                    .get()
                    .wrapping_sub(size as u64 & LOW)
                    .wrapping_add(size as u64),
            );
        }
    };
    fix(&l.alloc_bytes, alloc);
    fix(&l.free_bytes, free);
    write_sample(l, alloc.filter(|&s| s > large), false);
}

/// Writes the thread's totals (if `force`, or [`MIN_INTERVAL_NS`] passed since the last
/// sample) and `large`, when the three conditions of the module's comment hold.
fn write_sample(l: &Local, large: Option<usize>, force: bool) -> bool {
    if cfg!(feature = "compile-out") || l.writing.get() || l.recorder_busy.get() != 0 {
        return false;
    }
    if kind_state(K::COUNTER) != KIND_ON {
        return false;
    }
    l.writing.set(true);
    let h = HOT.with(|h| h.get());
    // SAFETY: `HOT` has no destructor, so the pointer is valid for this thread's life. No other
    // reference to it is live: the recorder's paths that allocate while they hold it run under
    // `RecorderBusy` (checked above), its writes do not allocate otherwise, and this module
    // does not reenter itself (`writing`). Only reads here, and the writer's use below.
    let h = unsafe { &mut *h };
    // Relaxed: compared with this thread's cached generation, as `refresh` does; no claim.
    let gen = GEN.load(Ordering::Relaxed);
    let wrote = match h.writer.as_mut() {
        Some(w) if gen != 0 && h.gen == gen && h.gen != DEAD => put_sample(l, w, large, force),
        _ => false,
    };
    l.writing.set(false);
    wrote
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed fast path and the folds count exactly: sizes under and over 2^32 (counted
    /// without allocating them), past many folds, reallocations as a free and an allocation.
    #[test]
    fn packed_counts_are_exact_across_folds_and_huge_sizes() {
        std::thread::spawn(|| {
            let (none, over) = (AtomicUsize::new(usize::MAX), AtomicUsize::new(1 << 40));
            let t0 = thread_totals();
            let mut want = AllocTotals::default();
            let sizes = [1usize, 4095, (1 << 32) - 1, 1 << 32, (5 << 32) + 7, 1 << 47];
            for i in 0..10_000usize {
                let a = sizes[i % sizes.len()];
                let f = sizes[(i * 7 + 3) % sizes.len()];
                match i % 3 {
                    0 => note(Some(a), None, SMALL - 1, &none),
                    1 => note(None, Some(f), SMALL - 1, &none),
                    _ => note(Some(a), Some(f), SMALL - 1, &over),
                }
                if i % 3 != 1 {
                    want.allocs += 1;
                    want.alloc_bytes += a as u64;
                }
                if i % 3 != 0 {
                    want.frees += 1;
                    want.free_bytes += f as u64;
                }
                if i % 997 == 0 {
                    let t = thread_totals();
                    assert_eq!(t.allocs - t0.allocs, want.allocs);
                    assert_eq!(t.alloc_bytes - t0.alloc_bytes, want.alloc_bytes);
                    assert_eq!(t.frees - t0.frees, want.frees);
                    assert_eq!(t.free_bytes - t0.free_bytes, want.free_bytes);
                }
            }
            let t = thread_totals();
            assert_eq!(t.alloc_bytes - t0.alloc_bytes, want.alloc_bytes);
            assert_eq!(t.free_bytes - t0.free_bytes, want.free_bytes);
        })
        .join()
        .unwrap();
    }
}

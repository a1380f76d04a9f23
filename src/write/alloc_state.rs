//! The allocation counters' thread-local state (see [`crate::alloc`]): a leaf module, so that
//! the writer (whose thread exit writes the last sample, and whose allocating paths mark
//! themselves busy) and the allocator (which reaches the writer) import it without a cycle.

use std::cell::Cell;

/// One packed allocation or free of a size under [`SMALL`].
pub(crate) const ONE: u64 = 1 << 48;
pub(crate) const BYTES: u64 = ONE - 1;
/// The packed count that makes the slow path fold the accumulators: [`CHECK_EVERY`].
pub(crate) const FOLD_AT: u64 = (CHECK_EVERY as u64) << 48;
/// Sizes below this are packed; larger ones take the slow path (and are counted exactly).
pub(crate) const SMALL: usize = 1 << 32;
/// What the fast path adds of a size: its low 32 bits (all of a size under [`SMALL`]), so that
/// [`CHECK_EVERY`] of them never carry into the count.
pub(crate) const LOW: u64 = SMALL as u64 - 1;

/// Name of the counter of allocations made by a thread (a reallocation counts as one free and
/// one allocation), cumulative since the thread's first allocation.
pub const ALLOC_COUNT: &str = "alloc.count";
/// Name of the counter of bytes a thread allocated (the layouts' sizes), cumulative.
pub const ALLOC_BYTES: &str = "alloc.bytes";
/// Name of the counter of frees made by a thread, cumulative.
pub const FREE_COUNT: &str = "free.count";
/// Name of the counter of bytes a thread freed, cumulative.
pub const FREE_BYTES: &str = "free.bytes";
/// Name of the counter with one sample per allocation larger than
/// [`TrackingAllocator::track_sizes_over`](crate::TrackingAllocator::track_sizes_over): its value is that allocation's size, at its time.
pub const ALLOC_LARGE: &str = "alloc.large";

/// Allocations and frees between two looks at the clock.
pub const CHECK_EVERY: u32 = 256;
/// The least time between two samples of one thread's totals (100 µs): at most 10 000 samples
/// of 4 counters a second per thread, however fast it allocates.
pub const MIN_INTERVAL_NS: u64 = 100_000;

/// A thread's running totals (see [`thread_totals`](crate::alloc::thread_totals)).
///
/// ```
/// let t = typhon_recorder::alloc::AllocTotals { allocs: 3, alloc_bytes: 96, frees: 1, free_bytes: 32 };
/// assert_eq!(t.live_bytes(), 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocTotals {
    /// Allocations made (each reallocation counts one).
    pub allocs: u64,
    /// Bytes allocated.
    pub alloc_bytes: u64,
    /// Frees made (each reallocation counts one).
    pub frees: u64,
    /// Bytes freed.
    pub free_bytes: u64,
}

impl AllocTotals {
    /// Bytes allocated less bytes freed by this thread (negative when it frees what others
    /// allocated).
    pub fn live_bytes(&self) -> i64 {
        self.alloc_bytes.wrapping_sub(self.free_bytes) as i64
    }
}

/// The thread-local state. Only `Cell`s of plain integers: no drop glue, so the `const`
/// thread-local below needs no destructor registration (which could allocate) and is valid at
/// every point of the thread's life, thread-local destruction included.
pub(crate) struct Local {
    /// The allocations since the last fold, packed: their count in the top 16 bits, their bytes
    /// in the low 48 (each under 2^32, see [`SMALL`]; at most [`CHECK_EVERY`] of them), so that
    /// an allocation is one add and one compare.
    pub(crate) alloc_acc: Cell<u64>,
    /// The frees since the last fold, packed alike.
    pub(crate) free_acc: Cell<u64>,
    /// The totals up to the last fold.
    pub(crate) allocs: Cell<u64>,
    pub(crate) alloc_bytes: Cell<u64>,
    pub(crate) frees: Cell<u64>,
    pub(crate) free_bytes: Cell<u64>,
    /// Set while this module writes: allocations then only count.
    pub(crate) writing: Cell<bool>,
    /// Depth of the recorder's allocating paths on this thread (see [`RecorderBusy`]).
    pub(crate) recorder_busy: Cell<u32>,
    /// Raw time of the thread's last sample (0: none yet).
    pub(crate) last_raw: Cell<u64>,
    /// The totals (allocations + frees) of the last sample and the recorder it went to, to
    /// write nothing when nothing changed.
    pub(crate) written: Cell<(u64, u64)>,
}

thread_local! {
    pub(crate) static LOCAL: Local = const {
        Local {
            alloc_acc: Cell::new(0),
            free_acc: Cell::new(0),
            allocs: Cell::new(0),
            alloc_bytes: Cell::new(0),
            frees: Cell::new(0),
            free_bytes: Cell::new(0),
            writing: Cell::new(false),
            recorder_busy: Cell::new(0),
            last_raw: Cell::new(0),
            written: Cell::new((u64::MAX, 0)),
        }
    };
}

/// Marks one of the recorder's own paths that allocate while the thread's writer (or a lock a
/// write takes) is held: no sample is written on this thread while it lives.
pub(crate) struct RecorderBusy(());

impl RecorderBusy {
    #[inline]
    pub(crate) fn enter() -> Self {
        LOCAL.with(|l| l.recorder_busy.set(l.recorder_busy.get() + 1));
        RecorderBusy(())
    }
}

impl Drop for RecorderBusy {
    #[inline]
    fn drop(&mut self) {
        LOCAL.with(|l| l.recorder_busy.set(l.recorder_busy.get().saturating_sub(1)));
    }
}

pub(crate) fn totals(l: &Local) -> AllocTotals {
    let (a, f) = (l.alloc_acc.get(), l.free_acc.get());
    AllocTotals {
        allocs: l.allocs.get().wrapping_add(a >> 48),
        alloc_bytes: l.alloc_bytes.get().wrapping_add(a & BYTES),
        frees: l.frees.get().wrapping_add(f >> 48),
        free_bytes: l.free_bytes.get().wrapping_add(f & BYTES),
    }
}

/// Moves the packed accumulators into the totals.
pub(crate) fn fold(l: &Local) {
    let t = totals(l);
    l.allocs.set(t.allocs);
    l.alloc_bytes.set(t.alloc_bytes);
    l.frees.set(t.frees);
    l.free_bytes.set(t.free_bytes);
    l.alloc_acc.set(0);
    l.free_acc.set(0);
}

/// Where a sample goes: the thread's writer (implemented in `writer`).
pub(crate) trait SampleTarget {
    /// Its clock's raw time now.
    fn now(&mut self) -> u64;
    /// A raw time in ns.
    fn to_ns(&self, raw: u64) -> u64;
    /// The generation of the recorder it writes to.
    fn recorder_gen(&self) -> u64;
    /// Writes the counter `name` = `value` at raw time `t`.
    fn put_counter(&mut self, name: &'static str, value: u64, t: u64);
}

/// Writes the sample into `w`: the totals (unless too soon and not `force`, or unchanged) and
/// `large`'s size.
pub(crate) fn put_sample(
    l: &Local,
    w: &mut impl SampleTarget,
    large: Option<usize>,
    force: bool,
) -> bool {
    let now = w.now();
    let mut wrote = false;
    if let Some(size) = large {
        w.put_counter(ALLOC_LARGE, size as u64, now);
        wrote = true;
    }
    let last = l.last_raw.get();
    let due = force || last == 0 || w.to_ns(now).saturating_sub(w.to_ns(last)) >= MIN_INTERVAL_NS;
    let t = totals(l);
    let stamp = (t.allocs.wrapping_add(t.frees), w.recorder_gen());
    // All zero: no tracking allocator counts on this thread (a flush at finish without one).
    if due && stamp.0 != 0 && stamp != l.written.get() {
        w.put_counter(ALLOC_COUNT, t.allocs, now);
        w.put_counter(ALLOC_BYTES, t.alloc_bytes, now);
        w.put_counter(FREE_COUNT, t.frees, now);
        w.put_counter(FREE_BYTES, t.free_bytes, now);
        l.last_raw.set(now);
        l.written.set(stamp);
        wrote = true;
    }
    wrote
}

/// Thread exit: `w` (the writer just taken out of the thread's state, of the running recorder)
/// gets what this thread counted since its last sample.
pub(crate) fn flush_exiting(w: &mut impl SampleTarget) {
    LOCAL.with(|l| {
        if l.writing.get() {
            return;
        }
        l.writing.set(true);
        put_sample(l, w, None, true);
        l.writing.set(false);
    });
}

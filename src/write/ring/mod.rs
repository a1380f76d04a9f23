//! The slot ring: a lock-free single-producer/single-consumer ring of variable-size records.
//!
//! One ring per thread slot. The owning thread is the only [`Producer`]; the flusher is the only
//! [`Consumer`]. Both are separate types created in pairs by [`ring`], so the type system keeps
//! each side single (neither is `Clone`; the producer is `Send` so a slot can move to its thread).
//!
//! ```text
//!            tail (consumer)                    head (producer)
//!                 │                                   │
//!  ┌──────┬───────▼──────────┬──────────┬────────────▼────────────────┬──────┐
//!  │ free │ rec │ gap │ rec  │ rec      │            free              │FFFF..│  capacity = 2^n
//!  └──────┴─────────────────────────────┴──────────────────────────────┴──────┘
//!   entry framing: u16 size at offset 0 (the Typhon record's own size field);
//!   sizes rounded up to even, so an entry always starts at an even offset and a
//!   2-byte wrap marker 0xFFFF always fits before the end; size 10 = gap entry
//!   (u16 10, u64 count of records dropped before the next record).
//! ```
//!
//! `head` and `tail` are monotonically increasing byte counters (never wrapped; the position is
//! `counter & (capacity - 1)`), each on its own cache line. Each side keeps a cached copy of the
//! other side's counter and reloads it only when the cached value says the ring is full (producer)
//! or empty (consumer), so the shared lines are touched once per batch, not once per record.
//!
//! A full ring drops the newest record. The producer remembers how many it dropped and, before the
//! next record it manages to write, writes a gap entry with that count: the consumer sees every
//! loss exactly at its place in the stream, which is what lets the flusher put each missed count on
//! the page right after its gap.

use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::fmt;

mod pages;

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
pub(crate) use pages::smaps_field;
pub use pages::{Backing, Pages, HUGE_PAGE};

/// Smallest ring capacity in bytes.
pub const MIN_CAPACITY: usize = 4096;
/// Largest ring capacity in bytes (1 GiB).
pub const MAX_CAPACITY: usize = 1 << 30;
/// How far ahead of the producer [`Producer::write`] prefetches the ring's lines: one 4 KiB
/// page, so each page's first lines are in cache before the producer reaches them.
#[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
const PREFETCH_AHEAD: u64 = 4096;
/// Size field of a gap entry (smaller than any record, which is at least 12 bytes).
const GAP_SIZE: u16 = 10;
/// The wrap marker: the rest of the buffer up to its end is unused.
const WRAP: u16 = 0xFFFF;

#[inline(always)]
const fn even(n: usize) -> usize {
    (n + 1) & !1
}

/// Why a ring could not be created.
///
/// ```
/// use typhon_recorder::ring::{ring, RingError};
/// assert!(matches!(ring(1000), Err(RingError::BadCapacity(1000))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// The capacity is not a power of two in `MIN_CAPACITY..=MAX_CAPACITY`.
    BadCapacity(usize),
    /// The system gave no memory for a ring of this many bytes.
    NoMemory(usize),
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::BadCapacity(n) => write!(
                f,
                "ring capacity {n} must be a power of two between {MIN_CAPACITY} and {MAX_CAPACITY}"
            ),
            RingError::NoMemory(n) => write!(f, "no memory for a ring of {n} bytes"),
        }
    }
}

impl std::error::Error for RingError {}

/// State shared by the two ends. Producer-written fields and consumer-written fields live on
/// separate cache lines.
struct Shared {
    /// Bytes ever published by the producer. Written only by the producer (Release).
    head: CachePadded<AtomicU64>,
    /// Records the producer dropped because the ring was full. Written only by the producer.
    dropped: AtomicU64,
    /// Bytes ever consumed. Written only by the consumer (Release).
    tail: CachePadded<AtomicU64>,
    buf: Pages,
    mask: u64,
    /// Under loom: one cell per two bytes of the buffer (entries start at even offsets). Both
    /// ends declare every byte they write or read through them, so loom checks that `head`'s
    /// and `tail`'s orderings order those accesses: a write to bytes the other end may still be
    /// reading, or a read of bytes not yet published, without a happens-before, fails a model.
    #[cfg(loom)]
    cells: Box<[loom::cell::UnsafeCell<()>]>,
}

// SAFETY: the buffer bytes are only written by the single producer in the region
// [head, tail + capacity) that the consumer does not read, and only read by the single consumer in
// [tail, head) that the producer does not write; the Release store of `head` (after writing) paired
// with the consumer's Acquire load, and the Release store of `tail` (after reading) paired with the
// producer's Acquire load, order those accesses. Everything else in `Shared` is atomic.
unsafe impl Sync for Shared {}
// SAFETY: `Shared` owns its buffer; moving it between threads moves plain bytes and atomics.
unsafe impl Send for Shared {}

impl Shared {
    #[inline(always)]
    fn cap(&self) -> u64 {
        self.mask + 1
    }

    /// Under loom: declares an access to bytes `[pos, pos + len)` of the buffer (see `cells`).
    #[cfg(loom)]
    fn track(&self, pos: u64, len: usize, write: bool) {
        let (start, end) = (pos as usize / 2, (pos as usize + len).div_ceil(2));
        for c in &self.cells[start..end] {
            if write {
                c.with_mut(|_| ());
            } else {
                c.with(|_| ());
            }
        }
    }

    #[inline(always)]
    fn ptr(&self) -> *mut u8 {
        self.buf.as_ptr()
    }
}

/// Creates a ring of `capacity` bytes and returns its two ends. The buffer is allocated once, page
/// aligned, and every page of it is faulted in, so the producer never takes a page fault later.
/// From [`HUGE_PAGE`] up it is huge-page backed where the kernel allows ([`Backing::Huge`]).
///
/// ```
/// use typhon_recorder::ring::ring;
/// let (mut p, mut c) = ring(4096).unwrap();
/// assert!(p.write(14, |rec| { rec[0] = 14; rec[2] = 1; }));
/// let mut seen = Vec::new();
/// c.drain(|e| seen.push(format!("{e:?}")));
/// assert_eq!(seen.len(), 1);
/// ```
pub fn ring(capacity: usize) -> Result<(Producer, Consumer), RingError> {
    ring_backed(capacity, Backing::Huge)
}

/// [`ring`] with its bytes backed as `backing` says.
///
/// ```
/// use typhon_recorder::ring::{ring_backed, Backing, RingError};
/// assert!(ring_backed(1 << 21, Backing::Huge).is_ok());
/// assert_eq!(ring_backed(3000, Backing::Base).err(), Some(RingError::BadCapacity(3000)));
/// ```
pub fn ring_backed(capacity: usize, backing: Backing) -> Result<(Producer, Consumer), RingError> {
    if !capacity.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
        return Err(RingError::BadCapacity(capacity));
    }
    let buf = Pages::new(capacity, backing).ok_or(RingError::NoMemory(capacity))?;
    debug_assert_eq!(buf.as_ptr() as usize % pages::PAGE, 0);
    let shared = crate::sync::Arc::new(Shared {
        head: CachePadded::new(AtomicU64::new(0)),
        dropped: AtomicU64::new(0),
        tail: CachePadded::new(AtomicU64::new(0)),
        buf,
        mask: capacity as u64 - 1,
        #[cfg(loom)]
        cells: (0..capacity / 2)
            .map(|_| loom::cell::UnsafeCell::new(()))
            .collect(),
    });
    Ok((
        Producer {
            base: shared.ptr(),
            mask: shared.mask,
            shared: shared.clone(),
            head: 0,
            cached_tail: 0,
            pending_gap: 0,
            resume_at: u64::MAX,
            dropped: 0,
            wake_at: capacity as u64 / 2,
            limit: capacity as u64,
        },
        Consumer {
            shared,
            tail: 0,
            cached_head: 0,
        },
    ))
}

/// The writing end of a ring. Owned by exactly one thread at a time.
///
/// ```
/// use typhon_recorder::ring::ring;
/// let (mut p, _c) = ring(4096).unwrap();
/// assert_eq!(p.capacity(), 4096);
/// ```
///
/// `repr(C)`: the six fields a write reads (`base` to `shared`) come first, 48 bytes together,
/// that the recorder's thread-local writer lays out beside its own (the others are read only
/// on the slow path).
#[repr(C)]
pub struct Producer {
    /// `shared`'s buffer and mask, copied here so a write touches no other cache line.
    base: *mut u8,
    mask: u64,
    /// Local copy of `shared.head` (only this side writes it).
    head: u64,
    /// A record ending at or below this counter value takes the fast path: it is the smaller of
    /// the end of the buffer's current lap (so the record does not wrap) and `cached_tail + cap`
    /// (so it fits), or 0 while a gap entry must be written first or a slow-path reservation is
    /// not yet published. Folding the checks into one compare is what keeps a write at a
    /// handful of instructions.
    limit: u64,
    /// When `head` reaches this counter value, check whether the ring has passed half full.
    wake_at: u64,
    shared: crate::sync::Arc<Shared>,
    /// Last `tail` value read; the ring has at least `capacity - (head - cached_tail)` free bytes.
    cached_tail: u64,
    /// Records dropped since the last written record; written as a gap entry before the next one.
    pending_gap: u64,
    /// Where the last slow-path reservation ends, until `settle` sees it published (`head` is
    /// there). Such a reservation carried all of `pending_gap` in its gap entry (or it was 0),
    /// and nothing adds to it before `settle`, so `pending_gap` is cleared only then: a `fill`
    /// that unwinds loses no count. `u64::MAX` when no reservation awaits settling.
    resume_at: u64,
    /// Total drops (mirrors `shared.dropped`).
    dropped: u64,
}

// SAFETY: `base` points into the buffer owned by `shared` (kept alive by the Arc held alongside),
// and a `Producer` is the unique writing end: moving it to another thread moves that role whole.
unsafe impl Send for Producer {}

impl Producer {
    /// Where the buffer starts (for the bench's and the tests' look at how it is backed).
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    pub(crate) fn buffer_addr(&self) -> usize {
        self.base as usize
    }

    /// Bytes written so far (the ring's head counter, never reset): equal at two moments
    /// when nothing was written between them.
    #[inline(always)]
    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    /// Capacity in bytes.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// assert_eq!(ring(8192).unwrap().0.capacity(), 8192);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.cap() as usize
    }

    /// Records dropped so far because the ring was full.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (mut p, _c) = ring(4096).unwrap();
    /// while p.write(2000, |r| r[0] = 0) {}
    /// assert_eq!(p.dropped(), 1);
    /// ```
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Writes one record of `size` bytes (12..=65534): reserves room, lets `fill` write the bytes
    /// (it must write the whole record, starting with its u16 size field equal to `size`), then
    /// publishes it with a Release store. Returns `false`, counting a drop, when the ring is full
    /// or `size` is outside 12..=65534 (no entry could frame it). Never blocks, never allocates.
    /// If `fill` unwinds, nothing is published and the ring stays as it was.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (mut p, _c) = ring(4096).unwrap();
    /// assert!(p.write(12, |r| r[..2].copy_from_slice(&12u16.to_le_bytes())));
    /// assert!(!p.write(11, |_| {})); // too small to be a record: refused, counted
    /// assert_eq!(p.dropped(), 1);
    /// ```
    #[inline(always)]
    pub fn write(&mut self, size: usize, fill: impl FnOnce(&mut [u8])) -> bool {
        let Some(r) = self.reserve(size) else {
            return false;
        };
        fill(self.reserved(&r));
        self.publish(r);
        true
    }

    /// The first half of [`write`](Self::write), for a caller that fills the record in its
    /// own straight-line code (the span end: a fill closure of its size, compiled in this
    /// crate, was called out of line from callers in others). `None`, counting a drop, where
    /// `write` returns `false`; else the caller fills [`reserved`](Self::reserved) whole and
    /// then calls [`publish`](Self::publish), with no other write in between.
    #[inline(always)]
    pub(crate) fn reserve(&mut self, size: usize) -> Option<Reserved> {
        // One compare (folded away for a constant size): the arithmetic of `reserve_framed`
        // then cannot wrap.
        if size.wrapping_sub(12) > 0xFFFE - 12 {
            self.refuse_size();
            return None;
        }
        self.reserve_framed(size)
    }

    /// [`reserve`](Self::reserve) of a size the caller knows an entry can frame (12..=65534),
    /// with no check of it here: a span's record, whose size was checked against the page
    /// when the span began. (Outside that range the stream's framing would be wrong, though
    /// no byte outside the reservation could be touched: the bounds below do not rely on it.)
    #[inline(always)]
    pub(crate) fn reserve_framed(&mut self, size: usize) -> Option<Reserved> {
        debug_assert!((12..=0xFFFE).contains(&size), "size {size}");
        let end = self.head + even(size) as u64;
        // The fast path: no gap to write first, room before the consumer's last known position,
        // and no wrap (see `limit`): one compare. Anything else reserves out of line; either
        // way the record is filled by the caller, once, on arguments still in registers.
        let (pos, new_head) = if end <= self.limit {
            (self.head & self.mask, end)
        } else {
            self.reserve_slow(size)?
        };
        self.prefetch_ahead();
        Some(Reserved {
            pos,
            size,
            new_head,
        })
    }

    /// The bytes of a reservation, to be filled whole.
    #[inline(always)]
    pub(crate) fn reserved(&mut self, r: &Reserved) -> &mut [u8] {
        // SAFETY: [pos, pos + size) is inside the buffer and inside the free region: on the fast
        // path `end <= limit` means the reservation ends before the end of the buffer's current
        // lap and at most `cap` bytes past `cached_tail`, so the consumer does not read it;
        // `reserve_slow` returns only such a region too. Only this producer touches it until the
        // Release store of `head` in `publish`. (If the fill unwinds, `limit` is 0 after a
        // slow-path reservation, so no later write takes the fast path on an unpublished one.)
        // `Reserved` is only made by `reserve_framed` and its fields are private to this module.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(r.pos as usize), r.size) }
    }

    /// Publishes a filled reservation (the second half of [`write`](Self::write)).
    #[inline(always)]
    pub(crate) fn publish(&mut self, r: Reserved) {
        #[cfg(loom)]
        self.shared.track(r.pos, r.size, true);
        #[cfg(not(loom))]
        let _ = r.pos;
        // Release: the consumer's Acquire load of `head` then sees every byte written before.
        self.shared.head.store(r.new_head, Ordering::Release);
        // (After the shared store, so a `passed_half` right after reads this from a register.)
        self.head = r.new_head;
    }

    /// Asks for the line [`PREFETCH_AHEAD`] bytes past `head`, so the record that reaches it
    /// finds it in cache: a write prefetch (`prefetchw`) where the build targets CPUs that have
    /// it (`prfchw`), else `prefetcht0`, which is what the default x86-64 target (and the
    /// figures below) get.
    ///
    /// The hardware prefetchers follow a stream of stores only within a 4 KiB page, so without
    /// it the first lines of each new 4 KiB of ring (every ~190 records) miss, and those writes
    /// were most of the slow ones even on a huge page (BENCHMARKS.md, in its git history). One instruction that
    /// never faults and changes no byte: where the line is still being read by the consumer, it
    /// costs the consumer a miss, nothing else.
    #[inline(always)]
    fn prefetch_ahead(&self) {
        #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
        {
            let ahead = (self.head + PREFETCH_AHEAD) & self.mask;
            // SAFETY: `ahead <= mask`, so the pointer stays inside the buffer (`add` needs an
            // in-bounds offset); a prefetch reads and writes no memory and never faults.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
                _mm_prefetch::<_MM_HINT_ET0>(
                    self.base.add(ahead as usize).cast::<i8>().cast_const(),
                );
            }
        }
    }

    /// A size no entry can frame: refused like a record that finds the ring full (counted as
    /// dropped, carried by the next gap entry), since the ring has no other way to report it.
    #[cold]
    #[inline(never)]
    fn refuse_size(&mut self) -> bool {
        self.drop_one();
        self.set_limit();
        false
    }

    /// Recomputes [`Producer::limit`] from `head`, `cached_tail` and the pending gap.
    #[inline(always)]
    fn set_limit(&mut self) {
        self.set_limit_at(self.head);
    }

    /// [`set_limit`](Self::set_limit) for the head the producer is about to publish.
    #[inline(always)]
    fn set_limit_at(&mut self, head: u64) {
        self.limit = if self.pending_gap != 0 {
            0
        } else {
            // The end of the buffer's current lap, and the end of the region free for us.
            let lap_end = (head | self.mask) + 1;
            lap_end.min(self.cached_tail + self.mask + 1)
        };
    }

    /// Everything the fast path does not take: writes a pending gap entry or a wrap marker,
    /// counts a drop when the ring is full. Returns where the record of `size` bytes goes and
    /// the head after it, or `None` (a drop).
    #[cold]
    #[inline(never)]
    fn reserve_slow(&mut self, size: usize) -> Option<(u64, u64)> {
        // The last slow-path reservation left `limit` at 0 (see its end). Published since (the
        // head is where it ended), its gap entry carries the pending count and the fast path's
        // bound can be restored; this write may then take the fast path after all.
        if self.head == self.resume_at {
            self.settle();
            self.set_limit();
            let end = self.head + even(size) as u64;
            if end <= self.limit {
                return Some((self.head & self.mask, end));
            }
        }
        let gap = if self.pending_gap != 0 {
            GAP_SIZE as u64
        } else {
            0
        };
        let len = gap + even(size) as u64;
        let cap = self.mask + 1;
        let pos = self.head & self.mask;
        let to_end = cap - pos;
        // A reservation never straddles the end: if it does not fit before the end, a wrap marker
        // fills the rest (to_end >= 2 because every position is even) and it starts at 0.
        let need = if len <= to_end { len } else { to_end + len };
        if self.head + need - self.cached_tail > cap {
            // Acquire pairs with the consumer's Release store of `tail`: the consumer has finished
            // reading every byte below the value we see, so we may overwrite them.
            self.cached_tail = self.shared.tail.load(Ordering::Acquire);
            if self.head + need - self.cached_tail > cap {
                self.drop_one();
                self.set_limit();
                return None;
            }
        }
        let base = self.base;
        let mut at = pos;
        if len > to_end {
            // SAFETY: pos + 2 <= cap (pos even, cap even); bytes [pos, cap) lie in the free region
            // [head, cached_tail + cap) checked above, which the consumer does not read.
            unsafe {
                base.add(pos as usize)
                    .cast::<[u8; 2]>()
                    .write(WRAP.to_le_bytes())
            };
            #[cfg(loom)]
            self.shared.track(pos, 2, true);
            at = 0;
        }
        if gap != 0 {
            // SAFETY: [at, at + 10) starts the reservation checked above (inside the buffer and
            // the free region); the record follows it.
            let g = unsafe { std::slice::from_raw_parts_mut(base.add(at as usize), 10) };
            g[..2].copy_from_slice(&GAP_SIZE.to_le_bytes());
            g[2..10].copy_from_slice(&self.pending_gap.to_le_bytes());
            #[cfg(loom)]
            self.shared.track(at, 10, true);
            // `pending_gap` is cleared once this is published (`settle`).
        }
        // No fast path until this reservation is published, so a `fill` that unwinds leaves no
        // bound a later write could use past an unpublished head: the next write comes back
        // here, and the check at the top restores the bound once `head` reached `resume_at`.
        self.limit = 0;
        self.resume_at = self.head + need;
        Some((at + gap, self.resume_at))
    }

    /// Clears the pending count once the slow-path reservation carrying it is published (see
    /// `resume_at`). Call before counting a new drop.
    fn settle(&mut self) {
        if self.head == self.resume_at {
            self.pending_gap = 0;
            self.resume_at = u64::MAX;
        }
    }

    #[cold]
    fn drop_one(&mut self) {
        self.settle();
        self.pending_gap += 1;
        self.dropped += 1;
        // Relaxed: a statistic read by `stats()`; the consumer learns about the gap itself from the
        // gap entry, which is ordered by `head`. Only this producer writes the counter.
        self.shared.dropped.store(self.dropped, Ordering::Relaxed);
    }

    /// Whether the ring has passed half full since the last time this returned `true`, judged
    /// with a fresh look at the consumer's position. Cheap when it returns `false` (one compare);
    /// the recorder calls it after each write and wakes the flusher on `true`, so a burst wakes the
    /// flusher once per half ring, never once per record.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (mut p, _c) = ring(4096).unwrap();
    /// let mut wakes = 0;
    /// while p.write(100, |r| r[0] = 100) { if p.passed_half() { wakes += 1; } }
    /// assert_eq!(wakes, 1);
    /// ```
    #[inline]
    pub fn passed_half(&mut self) -> bool {
        if self.head < self.wake_at {
            return false;
        }
        self.check_half()
    }

    #[cold]
    fn check_half(&mut self) -> bool {
        let cap = self.shared.cap();
        // Acquire for the same reason as in `write`: we also use it as the cached tail.
        let t = self.shared.tail.load(Ordering::Acquire);
        self.cached_tail = t;
        self.set_limit();
        if self.head - t >= cap / 2 {
            // Do not ask again until the ring could be full from this consumer position.
            self.wake_at = t + cap;
            true
        } else {
            self.wake_at = t + cap / 2;
            false
        }
    }

    /// Forgets drops not yet carried by a gap entry (the flusher has accounted them itself, at
    /// the end of the slot's stream) and returns how many there were.
    pub(crate) fn take_pending_gap(&mut self) -> u64 {
        self.settle();
        let n = std::mem::take(&mut self.pending_gap);
        self.set_limit();
        n
    }

    /// Records dropped since the last written record, not yet carried by a gap entry.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (p, _c) = ring(4096).unwrap();
    /// assert_eq!(p.pending_gap(), 0);
    /// ```
    pub fn pending_gap(&self) -> u64 {
        // A published gap entry carries the count, though `pending_gap` is cleared lazily (by
        // the next slow-path reservation).
        if self.head == self.resume_at {
            0
        } else {
            self.pending_gap
        }
    }
}

/// One entry taken out of the ring.
#[derive(Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A whole record (its first two bytes are its size).
    Record(&'a [u8]),
    /// This many records were dropped here, between the previous record and the next.
    Gap(u64),
}

/// The reading end of a ring, owned by the flusher.
///
/// ```
/// use typhon_recorder::ring::{ring, Entry};
/// let (mut p, mut c) = ring(4096).unwrap();
/// while p.write(1000, |r| { r[..2].copy_from_slice(&1000u16.to_le_bytes()); }) {}
/// assert!(!p.write(200, |r| { r[..2].copy_from_slice(&200u16.to_le_bytes()); })); // full: dropped
/// let mut n = 0;
/// c.drain(|e| if let Entry::Record(_) = e { n += 1 });
/// assert!(p.write(12, |r| { r[..2].copy_from_slice(&12u16.to_le_bytes()); }));
/// let mut got = Vec::new();
/// c.drain(|e| got.push(match e { Entry::Gap(k) => k as i64, Entry::Record(r) => -(r.len() as i64) }));
/// assert_eq!((n, got), (4, vec![2, -12]));
/// ```
pub struct Consumer {
    shared: crate::sync::Arc<Shared>,
    /// Local copy of `shared.tail` (only this side writes it).
    tail: u64,
    /// Last `head` value read.
    cached_head: u64,
}

impl Consumer {
    /// Takes every entry published so far, in order, passing each to `f`. Returns the number of
    /// bytes consumed. Space is handed back to the producer in steps of an eighth of the ring while
    /// draining, and at the end.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (_p, mut c) = ring(4096).unwrap();
    /// assert_eq!(c.drain(|_| {}), 0);
    /// ```
    pub fn drain(&mut self, mut f: impl FnMut(Entry<'_>)) -> u64 {
        // Acquire pairs with the producer's Release store of `head`: every byte of every entry
        // below the value read is visible.
        self.cached_head = self.shared.head.load(Ordering::Acquire);
        let start = self.tail;
        let cap = self.shared.cap();
        let step = cap / 8;
        let mut last_release = self.tail;
        let base = self.shared.ptr();
        while self.tail < self.cached_head {
            // One contiguous run of published bytes: up to the head or the end of the buffer.
            let pos = self.tail & self.shared.mask;
            let run = (cap - pos).min(self.cached_head - self.tail) as usize;
            // Entries are read one at a time through the raw pointer, never as one slice of the
            // whole run: `tail` is released part-way through the run (below), after which the
            // producer may overwrite the released prefix, so no reference may still cover it.
            // SAFETY: `pos < cap`, so the pointer stays inside the buffer.
            let run_base = unsafe { base.add(pos as usize) };
            let mut off = 0;
            while off < run {
                let avail = run - off;
                // SAFETY (for each read below): [pos + off, pos + off + n) with n <= avail lies
                // inside the buffer and inside [tail, head) not yet released: the producer
                // published it (Acquire above) and writes only below the `tail` we release,
                // which never passes `off`. Every entry starts at an even offset and `run` is
                // even, so the 2-byte size field is there (`avail >= 2`).
                let at = unsafe { run_base.add(off) };
                #[cfg(loom)]
                self.shared.track(pos + off as u64, avail.min(2), false);
                let size = if avail >= 2 {
                    // SAFETY: as above, 2 <= avail.
                    u16::from_le_bytes(unsafe { at.cast::<[u8; 2]>().read() })
                } else {
                    0 // cannot happen (see above); framed as corrupt below
                };
                off += if size == WRAP {
                    // The rest of the buffer is unused; the producer went on at 0.
                    avail
                } else if size >= 12 && size as usize <= avail {
                    #[cfg(loom)]
                    self.shared.track(pos + off as u64, size as usize, false);
                    // SAFETY: as above, size <= avail; the slice lives only for the call.
                    f(Entry::Record(unsafe {
                        std::slice::from_raw_parts(at, size as usize)
                    }));
                    even(size as usize)
                } else if size == GAP_SIZE && avail >= 10 {
                    #[cfg(loom)]
                    self.shared.track(pos + off as u64, 10, false);
                    // SAFETY: as above, 10 <= avail.
                    let g = unsafe { at.add(2).cast::<[u8; 8]>().read() };
                    f(Entry::Gap(u64::from_le_bytes(g)));
                    10
                } else {
                    // Only a bug in this module could frame an entry this way; stop rather than
                    // read garbage, and leave the bytes for a debug build to flag.
                    debug_assert!(
                        false,
                        "corrupt ring entry of size {size} at {}",
                        pos as usize + off
                    );
                    avail
                };
                if self.tail + off as u64 - last_release >= step {
                    last_release = self.tail + off as u64;
                    // Release: our reads of the bytes below `tail` are done before the producer,
                    // after its Acquire load, overwrites them.
                    self.shared.tail.store(last_release, Ordering::Release);
                }
            }
            self.tail += run as u64;
        }
        // Release: as above.
        self.shared.tail.store(self.tail, Ordering::Release);
        self.tail - start
    }

    /// Whether entries are waiting (a fresh look at the producer's position).
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (mut p, c) = ring(4096).unwrap();
    /// assert!(c.is_empty());
    /// p.write(12, |r| r[0] = 12);
    /// assert!(!c.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        // Acquire: if we then drain, the entries are visible (drain reloads with Acquire anyway).
        self.shared.head.load(Ordering::Acquire) == self.tail
    }

    /// Records the producer has dropped so far (it may be ahead of the gap entries seen).
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// let (_p, c) = ring(4096).unwrap();
    /// assert_eq!(c.producer_dropped(), 0);
    /// ```
    pub fn producer_dropped(&self) -> u64 {
        // Relaxed: a statistic. Callers that need it to cover every gap entry they drained read
        // it after `drain`, whose Acquire load of `head` orders the producer's earlier stores.
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Capacity in bytes.
    ///
    /// ```
    /// # use typhon_recorder::ring::ring;
    /// assert_eq!(ring(4096).unwrap().1.capacity(), 4096);
    /// ```
    pub fn capacity(&self) -> usize {
        self.shared.cap() as usize
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;

    fn rec(p: &mut Producer, size: usize, tag: u8) -> bool {
        p.write(size, |r| {
            r[..2].copy_from_slice(&(size as u16).to_le_bytes());
            for b in &mut r[2..] {
                *b = tag;
            }
        })
    }

    fn entries(c: &mut Consumer) -> Vec<(usize, u8)> {
        // (size, tag) of each record; (0, n) for a gap of n.
        let mut v = Vec::new();
        c.drain(|e| match e {
            Entry::Record(r) => v.push((r.len(), r[2])),
            Entry::Gap(n) => v.push((0, n as u8)),
        });
        v
    }

    /// A `fill` that unwinds publishes nothing and leaves no bound behind: before, a panic in
    /// the fill of a slow-path (wrapping) reservation left the fast path's limit a lap ahead,
    /// and the next write built a slice past the end of the buffer. A pending gap survives too.
    #[test]
    fn a_fill_that_unwinds_leaves_the_ring_as_it_was() {
        let unwinds = |p: &mut Producer, size| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                p.write(size, |_| panic!("fill fails"))
            }));
            assert!(r.is_err());
        };
        let (mut p, mut c) = ring(4096).unwrap();
        // Head at 4000: a 200-byte record wraps (the slow path).
        for i in 0..20 {
            assert!(rec(&mut p, 200, i));
        }
        assert_eq!(entries(&mut c).len(), 20);
        unwinds(&mut p, 200);
        // The fast path must not take this one: 1000 bytes at 4000 would run past the end.
        assert!(rec(&mut p, 1000, 7));
        assert_eq!(entries(&mut c), [(1000, 7)]);
        // A pending gap survives an unwinding fill and is written once, before the next record.
        let mut dropped = 0;
        while dropped < 3 {
            if !rec(&mut p, 1500, 9) {
                dropped += 1;
            }
        }
        let mut got = entries(&mut c);
        unwinds(&mut p, 100);
        assert!(rec(&mut p, 100, 8));
        got.extend(entries(&mut c));
        assert_eq!(got[got.len() - 2..], [(0, 3), (100, 8)]);
        assert_eq!(p.dropped(), 3);
    }

    /// A drop counted right after a gap entry was published (here a refused size, which counts
    /// without reserving) adds to a fresh count: the published one is not carried twice, and
    /// the new one is not lost.
    #[test]
    fn a_drop_after_a_published_gap_starts_a_new_count() {
        let (mut p, mut c) = ring(4096).unwrap();
        assert!(rec(&mut p, 2000, 1));
        assert!(rec(&mut p, 2000, 2));
        assert!(!rec(&mut p, 2000, 3)); // full: dropped
        c.drain(|_| {});
        assert!(rec(&mut p, 100, 4)); // gap entry (1), then the record
        assert_eq!(p.pending_gap(), 0);
        assert!(!p.write(5, |_| {})); // refused: a new drop
        assert_eq!(p.pending_gap(), 1);
        assert!(rec(&mut p, 100, 5));
        assert_eq!(entries(&mut c), [(0, 1), (100, 4), (0, 1), (100, 5)]);
        assert_eq!(p.dropped(), 2);
    }

    /// Sizes no entry can frame are refused and counted, in release builds as in debug ones.
    #[test]
    fn unframeable_sizes_are_refused_and_counted() {
        let (mut p, mut c) = ring(4096).unwrap();
        for size in [0, 1, 10, 11, 0xFFFF, 70_000, usize::MAX - 1, usize::MAX] {
            assert!(
                !p.write(size, |_| unreachable!("no room is reserved")),
                "{size}"
            );
        }
        assert_eq!(p.dropped(), 8);
        assert!(rec(&mut p, 12, 1));
        assert_eq!(entries(&mut c), [(0, 8), (12, 1)]);
    }

    #[test]
    fn order_wrap_and_gaps_are_exact() {
        let (mut p, mut c) = ring(4096).unwrap();
        let mut expect: Vec<(usize, u8)> = Vec::new();
        let mut got: Vec<(usize, u8)> = Vec::new();
        let mut gaps = 0u64;
        let mut dropped = 0u64;
        let mut tag = 0u8;
        for round in 0..2000usize {
            let size = 12 + (round * 37) % 301;
            tag = tag.wrapping_add(1);
            if rec(&mut p, size, tag) {
                expect.push((size, tag));
            } else {
                dropped += 1;
            }
            if round % 41 == 0 {
                c.drain(|e| match e {
                    Entry::Record(r) => {
                        assert_eq!(u16::from_le_bytes([r[0], r[1]]) as usize, r.len());
                        assert!(r[2..].iter().all(|&b| b == r[2]));
                        got.push((r.len(), r[2]));
                    }
                    Entry::Gap(n) => gaps += n,
                });
            }
        }
        // A final record carries any trailing gap.
        while !rec(&mut p, 12, 0) {
            c.drain(|_| {});
        }
        expect.push((12, 0));
        c.drain(|e| match e {
            Entry::Record(r) => got.push((r.len(), r[2])),
            Entry::Gap(n) => gaps += n,
        });
        assert!(dropped > 0, "the test must exercise drops");
        assert_eq!(got, expect);
        assert_eq!(gaps, dropped);
        assert_eq!(c.producer_dropped(), dropped);
    }

    #[test]
    fn threads_keep_order() {
        let (mut p, mut c) = ring(4096).unwrap();
        const N: u32 = 200_000;
        let t = std::thread::spawn(move || {
            let mut i = 0u32;
            let mut written = 0u32;
            while i < N {
                let size = 16 + (i % 7) as usize * 2;
                if p.write(size, |r| {
                    r[..2].copy_from_slice(&(size as u16).to_le_bytes());
                    r[4..8].copy_from_slice(&i.to_le_bytes());
                }) {
                    written += 1;
                }
                i += 1;
            }
            (written, p.dropped())
        });
        let mut last: Option<u32> = None;
        let mut seen = 0u32;
        let mut gaps = 0u64;
        loop {
            let done = t.is_finished();
            c.drain(|e| match e {
                Entry::Record(r) => {
                    let i = u32::from_le_bytes(r[4..8].try_into().unwrap());
                    assert!(last.map_or(true, |l| i > l));
                    last = Some(i);
                    seen += 1;
                }
                Entry::Gap(n) => gaps += n,
            });
            if done && c.is_empty() {
                break;
            }
        }
        let (written, dropped) = t.join().unwrap();
        assert_eq!(seen, written);
        assert_eq!(written as u64 + dropped, N as u64);
        assert!(gaps <= dropped);
    }

    #[test]
    fn fast_path_stops_at_the_lap_end_and_at_the_consumer() {
        // 16-byte records tile a 4096-byte ring exactly: the 256th ends on the lap boundary, the
        // 257th must take the slow path (ring full), and after a drain the next lap starts at 0.
        let (mut p, mut c) = ring(4096).unwrap();
        let mut n = 0u32;
        let put = |p: &mut Producer, n: &mut u32| {
            let k = *n;
            let ok = p.write(16, |r| {
                r[..2].copy_from_slice(&16u16.to_le_bytes());
                r[4..8].copy_from_slice(&k.to_le_bytes());
            });
            if ok {
                *n += 1;
            }
            ok
        };
        for _ in 0..256 {
            assert!(put(&mut p, &mut n));
        }
        assert!(!put(&mut p, &mut n), "the ring is full");
        let mut seen = Vec::new();
        let mut gaps = 0;
        let take = |c: &mut Consumer, seen: &mut Vec<u32>, gaps: &mut u64| {
            c.drain(|e| match e {
                Entry::Record(r) => seen.push(u32::from_le_bytes(r[4..8].try_into().unwrap())),
                Entry::Gap(k) => *gaps += k,
            });
        };
        take(&mut c, &mut seen, &mut gaps);
        // Next lap: first the gap entry (slow path), then the fast path again, up to full.
        let mut more = 0;
        while put(&mut p, &mut n) {
            more += 1;
        }
        take(&mut c, &mut seen, &mut gaps);
        assert_eq!(gaps, 1);
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        // 4096 bytes minus the 10-byte gap entry (a 16-byte record less) fits 255.
        assert_eq!(more, 255);
        assert_eq!(p.dropped(), 2);
    }

    /// Whether the mapping that holds `addr` is advised `MADV_HUGEPAGE` (`hg` in its smaps
    /// `VmFlags`).
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(crate) fn huge_advised(addr: usize) -> bool {
        smaps_field(addr, "VmFlags")
            .unwrap_or_else(|| panic!("no mapping holds {addr:#x}"))
            .split(' ')
            .any(|f| f == "hg")
    }

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn smaps_fields_are_found_for_the_mapping_that_holds_the_address() {
        let (p, _c) = ring(HUGE_PAGE).unwrap();
        // The ring is faulted in, so its mapping holds at least its 2048 KiB (more if the kernel
        // merged it with a neighbouring mapping alike).
        let rss = smaps_field(p.buffer_addr() + HUGE_PAGE / 2, "Rss").unwrap();
        let kib: u64 = rss.strip_suffix(" kB").unwrap().parse().unwrap();
        assert!(kib >= 2048, "{rss}");
        assert_eq!(smaps_field(0, "Rss"), None); // nothing is mapped at 0
    }

    /// Whether this kernel has transparent huge pages (and so takes `MADV_HUGEPAGE`).
    #[cfg(all(target_os = "linux", not(miri)))]
    pub(crate) fn kernel_has_thp() -> bool {
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists()
    }

    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn huge_backing_is_aligned_and_advised_and_base_backing_is_not() {
        let advised = |p: &Producer| huge_advised(p.base as usize);
        for cap in [HUGE_PAGE, 4 * HUGE_PAGE] {
            let (p, _c) = ring_backed(cap, Backing::Huge).unwrap();
            assert_eq!(p.base as usize % HUGE_PAGE, 0, "capacity {cap}");
            assert_eq!(advised(&p), kernel_has_thp(), "capacity {cap}");
            let (p, _c) = ring_backed(cap, Backing::Base).unwrap();
            assert!(!advised(&p), "capacity {cap}");
        }
        // Below a huge page there is nothing to advise.
        let (p, _c) = ring_backed(HUGE_PAGE / 2, Backing::Huge).unwrap();
        assert!(!advised(&p));
    }

    #[test]
    fn rejects_bad_capacity() {
        assert!(ring(4095).is_err());
        assert!(ring(2048).is_err());
        assert!(ring(1 << 31).is_err());
    }

    #[test]
    fn buffer_is_page_aligned_and_zeroed() {
        for cap in [MIN_CAPACITY, 1 << 16, 1 << 20, HUGE_PAGE, 2 * HUGE_PAGE] {
            for backing in [Backing::Huge, Backing::Base] {
                let (p, _c) = ring_backed(cap, backing).unwrap();
                assert_eq!(p.base as usize % pages::PAGE, 0, "capacity {cap}");
                // SAFETY: the whole buffer is ours and nothing has been written to it yet.
                let bytes = unsafe { std::slice::from_raw_parts(p.base, cap) };
                assert!(bytes.iter().all(|&b| b == 0), "capacity {cap}");
            }
        }
        assert_eq!(
            RingError::NoMemory(4096).to_string(),
            "no memory for a ring of 4096 bytes"
        );
    }
}

/// Room [`Producer::reserve`] set aside for one record: where, how large, and the head once
/// it is published.
pub(crate) struct Reserved {
    pos: u64,
    size: usize,
    new_head: u64,
}

//! The floors: the least any ring buffer can do per record (a 24-byte store and a Release
//! publish), measured beside our writes so that their cost is judged against this machine's.
//!
//! [`FloorRing`] is the floor in a private ring backed like ours; [`store_floor_shared`] is the
//! same stores into a ring of the default size that a consumer thread reads, the memory
//! conditions our writes run under.

use crate::report::BenchReport;
use crate::timer::{figure, ticks, Timer};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A 24-byte record stored into a ring buffer followed by a Release store of the head, the
/// least any SPSC ring can do per record. Nobody consumes: the position wraps.
///
/// Its bytes are the same kind of memory as a slot ring's (`ring::Pages`: mapped,
/// faulted in, and on huge pages from 2 MiB up where the kernel gives them), so a floor as
/// large as our ring differs from it in the code that writes, not in the pages written.
/// Shared with `examples/stall_probe.rs`.
///
/// ```
/// let mut f = typhon_bench::FloorRing::new(1 << 18).expect("2 MiB of memory");
/// f.write(1, 2, 3); // 24 bytes and a Release store of the position
/// ```
pub struct FloorRing {
    pub(crate) buf: typhon_recorder::ring::Pages,
    mask: usize,
    head: AtomicU64,
    pos: usize,
}

impl FloorRing {
    /// A ring of `words` u64, or `None` without memory for it or when `words` is not a power
    /// of two of at least 512 (whole 4 KiB pages).
    ///
    /// ```
    /// use typhon_bench::FloorRing;
    /// assert!(FloorRing::new(512).is_some());
    /// assert!(FloorRing::new(1000).is_none());
    /// ```
    pub fn new(words: usize) -> Option<Self> {
        if !words.is_power_of_two() || words < 512 {
            return None;
        }
        let buf =
            typhon_recorder::ring::Pages::new(words * 8, typhon_recorder::ring::Backing::Huge)?;
        Some(Self {
            buf,
            mask: words - 1,
            head: AtomicU64::new(0),
            pos: 0,
        })
    }

    /// Stores `a`, `b` and `c` at the next three positions and publishes the new position.
    ///
    /// ```
    /// let mut f = typhon_bench::FloorRing::new(512).expect("4 KiB of memory");
    /// for i in 0..1000 {
    ///     f.write(i, i, i); // wraps after 170 records; nobody reads them
    /// }
    /// ```
    #[inline(always)]
    pub fn write(&mut self, a: u64, b: u64, c: u64) {
        let (words, mask, p) = (self.buf.as_ptr().cast::<u64>(), self.mask, self.pos);
        // SAFETY: every index is masked to below `mask + 1` words, the length of `buf`, which
        // `self` owns and nothing else writes or reads while `&mut self` is held; `buf` is page
        // aligned, so every u64 slot is 8-byte aligned.
        unsafe {
            *words.add(p & mask) = a;
            *words.add((p + 1) & mask) = b;
            *words.add((p + 2) & mask) = c;
        }
        self.pos = p + 3;
        // Release: publishes the three stores above to a (hypothetical) consumer's Acquire load,
        // exactly what the recorder's ring does per record.
        self.head.store(self.pos as u64, Ordering::Release);
    }
}

/// Records per timed run of the shared-ring figures, as in `writes::side_by_side`.
pub(crate) const RUN: u64 = 20_000;
/// Words of the default ring: the size of the shared floor's ring.
pub(crate) const WORDS: usize = typhon_recorder::DEFAULT_RING_BYTES / 8;

/// The floor measured under the recorder's memory conditions: the buffer is as large as the
/// default ring and another thread reads it behind the producer, so the producer's stores pay
/// for cache lines coming back from the consumer's core, as ours do. Runs of [`RUN`] stores
/// start from a drained ring.
pub(crate) fn store_floor_shared(r: &mut BenchReport, t: &Timer) {
    let runs = t.runs * 3;
    let npt = t.ns_per_tick;
    // A ring of u64 words (atomics with Relaxed stores: plain moves on x86), 3 words a record.
    let buf: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
    let head = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let tail = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut t_local = 0u64;
            let mut sum = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Acquire: the words below `h` are written.
                let h = head.load(Ordering::Acquire);
                while t_local < h {
                    sum = sum.wrapping_add(buf[(t_local as usize) % WORDS].load(Ordering::Relaxed));
                    t_local += 1;
                }
                // Release: our reads are done before the producer reuses the words.
                tail.store(t_local, Ordering::Release);
                std::hint::spin_loop();
            }
            black_box(sum);
        });
        let mut v = Vec::with_capacity(runs);
        let mut h = 0u64;
        for _ in 0..runs {
            while tail.load(Ordering::Acquire) != h {
                std::thread::yield_now();
            }
            let t0 = ticks();
            for i in 0..RUN {
                for (k, w) in [black_box(i), 7, 9].into_iter().enumerate() {
                    buf[(h as usize + k) % WORDS].store(w, Ordering::Relaxed);
                }
                h += 3;
                // Release: publishes the record's words to the consumer.
                head.store(h, Ordering::Release);
            }
            v.push((ticks() - t0) as f64 * npt / RUN as f64);
        }
        stop.store(true, Ordering::Relaxed);
        r.store_floor_shared = figure(v);
    });
}

/// What a first touch of a fresh 4 KiB page costs this thread, ns (the kernel's minor fault:
/// zeroing and mapping the page): the median of `runs` runs, each touching 2 MiB of a new
/// anonymous mapping kept off huge pages. A queue that grows into fresh memory, as Tracy's does
/// with no viewer, pays it once per page. 0 where the mapping fails.
pub(crate) fn page_fault_ns(runs: usize, ns_per_tick: f64) -> f64 {
    const BYTES: usize = 2 << 20;
    const PAGE: usize = 4096;
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        // SAFETY: an anonymous private mapping at an address the kernel picks; the result is
        // checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return 0.0;
        }
        // SAFETY: `p` is our mapping of BYTES; the advice only keeps it on 4 KiB pages (the
        // figure is of one 4 KiB fault, not a huge page's). A failure leaves the figure of
        // whatever pages the kernel gives, which the next line's loop still times.
        unsafe { libc::madvise(p, BYTES, libc::MADV_NOHUGEPAGE) };
        let base = p.cast::<u8>();
        let t0 = ticks();
        for off in (0..BYTES).step_by(PAGE) {
            // SAFETY: `off < BYTES`, inside the writable mapping.
            unsafe { base.add(off).write_volatile(1) };
        }
        let spent = ticks() - t0;
        // SAFETY: unmaps exactly the mapping made above; nothing refers to it any more.
        unsafe { libc::munmap(p, BYTES) };
        v.push(spent as f64 * ns_per_tick / (BYTES / PAGE) as f64);
    }
    if v.is_empty() {
        return 0.0;
    }
    figure(v).median
}

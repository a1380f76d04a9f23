//! A ring's memory: whole pages of its own, and how the kernel backs them.
//!
//! A producer reaches a new 4 KiB page every ~190 records of 22 bytes, and under nested paging a
//! TLB miss there is a two-level page walk: on a shared 2-vCPU guest such misses were the largest
//! share of the write's p99.9 (BENCHMARKS.md, in its git history). So a ring made ahead of need asks for a
//! transparent huge page, where one TLB entry covers 2 MiB of it.

/// A ring's bytes: whole pages of its own, faulted in when it is made.
///
/// On Linux they are an anonymous private mapping. Mapping rather than taking them from the heap
/// keeps the ring's place and page alignment independent of the host program's allocator and of
/// what it allocated and freed before: a ring is always page aligned, never shares a page with
/// other data, and its pages go back to the system when it is dropped.
///
/// - **Below [`HUGE_PAGE`]** (2 MiB), and for [`Backing::Base`], the mapping is populated up
///   front (`MAP_POPULATE`: one system call instead of a page fault per page on the thread that
///   first writes).
/// - **From [`HUGE_PAGE`] up, [`Backing::Huge`]** (the default ring, made ahead of need) the
///   mapping is aligned to 2 MiB and advised `MADV_HUGEPAGE` before it is faulted in, so where
///   transparent huge pages are enabled (`always` or `madvise`) one TLB entry covers 2 MiB of ring.
///   Where the kernel gives no huge page the advice is ignored and the ring is 4 KiB pages, as
///   below.
///
/// Elsewhere (and under Miri and loom) they are a page-aligned zeroed heap allocation with every
/// page touched.
pub struct Pages {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

impl Pages {
    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

/// Page size assumed for alignment and pre-faulting (the smallest on every supported target).
pub(super) const PAGE: usize = 4096;

/// The x86-64 and arm64 (4 KiB granule) huge page. On Linux a ring of this size or more made
/// with [`Backing::Huge`] is aligned to it and advised `MADV_HUGEPAGE`, so where the kernel gives
/// transparent huge pages one TLB entry covers 2 MiB of it; the default ring is one.
///
/// ```
/// assert_eq!(typhon_recorder::ring::HUGE_PAGE, typhon_recorder::DEFAULT_RING_BYTES);
/// ```
pub const HUGE_PAGE: usize = 2 << 20;

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
impl Pages {
    /// `len` bytes (a multiple of [`PAGE`]), zeroed and faulted in; `None` if the system has
    /// no memory (or address space) for them.
    pub fn new(len: usize, backing: Backing) -> Option<Self> {
        if len < HUGE_PAGE || backing == Backing::Base {
            return Self::map(len, libc::MAP_POPULATE).map(|ptr| Self { ptr, len });
        }
        // Over-map by one huge page, keep the 2 MiB-aligned `len` bytes inside, unmap the rest.
        let extra = len.checked_add(HUGE_PAGE)?;
        let raw = Self::map(extra, 0)?.as_ptr() as usize;
        let start = (raw + HUGE_PAGE - 1) & !(HUGE_PAGE - 1);
        let (head, tail) = (start - raw, raw + extra - (start + len));
        // SAFETY (both calls): each range lies inside the mapping just made (head + len + tail
        // == extra), is page aligned (raw and start are; len and HUGE_PAGE are page multiples)
        // and holds nothing: no pointer into it exists. What is left is exactly
        // [start, start + len), which `Drop` unmaps. (A failed unmap, say at the process's map
        // count limit, only leaves untouched address space mapped: nothing to handle.)
        unsafe {
            if head > 0 {
                libc::munmap(raw as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
        }
        // SAFETY: [start, start + len) is our mapping (above). The advice changes only how the
        // kernel backs it; it fails (EINVAL) on a kernel without transparent huge pages, and
        // then the ring is 4 KiB pages like a smaller one: nothing to handle.
        unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        for i in (0..len).step_by(PAGE) {
            // SAFETY: start + i is inside our mapping, which nothing else uses yet. A volatile
            // write faults the page in now (a whole huge page at the first touch of each 2 MiB
            // where the kernel gives one) rather than at the producer's first record there.
            unsafe { ((start + i) as *mut u8).write_volatile(0) };
        }
        std::ptr::NonNull::new(start as *mut u8).map(|ptr| Self { ptr, len })
    }

    /// An anonymous private read-write mapping of `len` bytes.
    fn map(len: usize, flags: libc::c_int) -> Option<std::ptr::NonNull<u8>> {
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing: no memory
        // of ours is involved; the result is checked for MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        std::ptr::NonNull::new(p.cast())
    }
}

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping `new` left, unmapped only here, once; the
        // owner (a ring's `Shared`, kept by the `Arc` both ends hold, or the bench's floor ring)
        // uses no pointer into it after dropping it.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
impl Pages {
    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len, PAGE).expect("ring sizes are valid layouts")
    }

    /// `len` bytes (a non-zero multiple of [`PAGE`]), zeroed and faulted in; `None` if the
    /// allocator has no memory for them.
    pub fn new(len: usize, _backing: Backing) -> Option<Self> {
        debug_assert!(len > 0 && len % PAGE == 0);
        // SAFETY: the layout's size is non-zero (the callers' rings and the bench's floor are
        // whole pages); the result is checked for null before use.
        let ptr = std::ptr::NonNull::new(unsafe { std::alloc::alloc_zeroed(Self::layout(len)) })?;
        for i in (0..len).step_by(PAGE) {
            // SAFETY: `i < len`, inside the allocation just made, which nothing else uses yet.
            // A volatile write, so the page is faulted in now rather than at the first record.
            unsafe { ptr.as_ptr().add(i).write_volatile(0) };
        }
        Some(Self { ptr, len })
    }
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this same layout, freed only here, once (see the
        // Linux `Drop` for why no pointer into it outlives it).
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
    }
}

/// The value of `field` (`"AnonHugePages"`, `"VmFlags"`, …) in `/proc/self/smaps` for the
/// mapping that holds `addr`: the text after the colon, or `None` if no mapping holds it or the
/// file cannot be read.
#[cfg(all(target_os = "linux", not(miri), not(loom)))]
pub(crate) fn smaps_field(addr: usize, field: &str) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        // A mapping's header starts with its range, `start-end` in hex; its fields follow.
        let first = line.split(' ').next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = (a..b).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
                return Some(v.trim().to_string());
            }
        }
    }
    None
}

/// What backs a ring's bytes on Linux (elsewhere both are zeroed heap pages).
///
/// The choice is a trade between the producer's every write and the ring's making: a huge page
/// spares the producer a TLB miss per 4 KiB of records, but faulting one in may wait milliseconds
/// for the kernel to compact memory, several times what 4 KiB pages take. So rings made ahead of
/// need, off the writing threads, take huge pages, and a ring a writing thread waits for does not.
///
/// ```
/// use typhon_recorder::ring::{ring_backed, Backing};
/// let (p, _c) = ring_backed(4096, Backing::Base).unwrap();
/// assert_eq!(p.capacity(), 4096);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// From [`HUGE_PAGE`] up, aligned to it and advised `MADV_HUGEPAGE` before it is faulted
    /// in (smaller rings: as `Base`). For rings made ahead of need: [`ring`](super::ring) and the recorder's
    /// spare rings.
    Huge,
    /// Not advised and populated in one call: 4 KiB pages where transparent huge pages are
    /// `madvise` (the usual setting) or `never`, so no wait for compaction. (Under `always` the
    /// kernel may give it huge pages as it would any mapping, and may compact for them.) For a
    /// ring a thread's first event has to make because no spare was left.
    Base,
}

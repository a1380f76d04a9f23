//! The process-wide recorder of the C ABI: starting it, reading its counters while it runs,
//! waiting for its flusher, and finishing it.
//!
//! One recorder runs at a time, held in [`RECORDER`] between `typhon_start` and
//! `typhon_finish`; the write functions do not look at it (they go through the Rust API's
//! installed recorder), only the calls of this module and `typhon_register_thread` do.

use crate::error::*;
use crate::guard::{guarded, store};
use parking_lot::Mutex;
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use typhon_recorder::{Recorder, RecorderBuilder, Stats};

/// Recorder configuration for `typhon_start`. Numeric fields left 0 take the default. Settings
/// not listed here take the Rust builder's defaults (every kind enabled, pages older than 1 s
/// flushed, two spare rings kept faulted in for threads' first events).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TyphonConfig {
    /// Path of the trace.dat to write (NUL-terminated UTF-8; required). Pages stream to
    /// `<path>.parts/` while recording; `typhon_finish` assembles the file. Only read during
    /// `typhon_start`.
    pub output_path: *const c_char,
    /// Page (sub-buffer) size in bytes: a power of two from 4096 to 1 MiB (0 = 4096).
    pub page_size: usize,
    /// Ring bytes per thread slot: a power of two from 4096 to 1 GiB (0 = 2 MiB). A record
    /// larger than the ring can never be written: it is dropped and counted as missed.
    pub ring_bytes: usize,
    /// How often the flusher drains the rings, in microseconds (0 = 10 000).
    pub flush_interval_us: u64,
    /// 0: an uncompressed trace.dat version 6. 1..=19: a trace.dat version 7 whose pages are
    /// compressed with zstd at this level while recording (1 is the fastest and, on Typhon
    /// records, about as small as 3: BENCHMARKS.md). Other values: `TYPHON_ERR_CONFIG`.
    pub zstd_level: u32,
}

/// Counters of a session, summed over every slot (slot 0, the recorder's own stream,
/// included). Once finished, `attempted == written + missed + sink_lost` exactly; in a live
/// snapshot records still in rings are in none of the three.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TyphonStats {
    /// Records writers attempted.
    pub attempted: u64,
    /// Records delivered in pages.
    pub written: u64,
    /// Records dropped because a ring was full.
    pub missed: u64,
    /// Writes not recorded because their kind or CeLog zone was disabled (those of threads
    /// without a slot included).
    pub filtered: u64,
    /// Writes refused while a recorder ran, each counted once: records too large for its pages
    /// or for any record, span names with a NUL byte, malformed payloads and arguments (NULL
    /// pointers, bad UTF-8). Each such call also returned its error code.
    pub refused: u64,
    /// Events not recorded because all 255 user slots were taken.
    pub no_slot: u64,
    /// Pages handed to the output.
    pub pages: u64,
    /// Bytes handed to the output.
    pub bytes: u64,
    /// Errors the output returned (e.g. disk full).
    pub sink_errors: u64,
    /// Records in pages the output failed to store.
    pub sink_lost: u64,
    /// Slots that recorded anything (slot 0 included).
    pub slots: u64,
}

impl From<&Stats> for TyphonStats {
    fn from(s: &Stats) -> Self {
        let sum =
            |f: fn(&typhon_recorder::sink::SlotSummary) -> u64| s.slots.iter().map(f).sum::<u64>();
        TyphonStats {
            attempted: sum(|x| x.attempted),
            written: sum(|x| x.written),
            missed: sum(|x| x.missed),
            filtered: s.total_filtered(),
            refused: sum(|x| x.refused),
            no_slot: s.no_slot,
            pages: s.pages,
            bytes: s.bytes,
            sink_errors: s.sink_errors,
            sink_lost: sum(|x| x.sink_lost),
            slots: s.slots.len() as u64,
        }
    }
}

/// The recorder of `typhon_start`. Shared (`Arc`) so that `typhon_drain` waits for its cycle
/// without holding the lock, which `typhon_stats` and the others then take at once.
pub(crate) static RECORDER: Mutex<Option<Arc<Recorder>>> = Mutex::new(None);

/// Starts a recorder writing to `config->output_path` and installs it process-wide; every
/// thread of the process then records through the write functions. The recorder runs one
/// thread of its own, `typhon-flusher`, and while threads are taking the spare rings a
/// short-lived second one, `typhon-spares`, that makes new ones; `typhon_finish` joins both.
///
/// Returns [`TYPHON_ERR_NULL`] (config or path NULL), [`TYPHON_ERR_UTF8`],
/// [`TYPHON_ERR_CONFIG`], [`TYPHON_ERR_ALREADY_STARTED`] or [`TYPHON_ERR_IO`] on failure.
///
/// # Safety
/// `config` must be NULL or point to a readable `TyphonConfig` whose `output_path` is NULL or a
/// NUL-terminated string readable for the duration of the call.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_start(std::ptr::null()) }, TYPHON_ERR_NULL);
/// let cfg = TyphonConfig { output_path: std::ptr::null(), page_size: 0, ring_bytes: 0,
///     flush_interval_us: 0, zstd_level: 0 };
/// assert_eq!(unsafe { typhon_start(&cfg) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_start(config: *const TyphonConfig) -> i32 {
    guarded("typhon_start", || {
        if config.is_null() {
            return fail(TYPHON_ERR_NULL, "config is NULL");
        }
        // SAFETY: non-null; the caller guarantees it points to a readable TyphonConfig (which
        // is Copy, so reading it by value is fine).
        let cfg = unsafe { config.read() };
        if cfg.output_path.is_null() {
            return fail(TYPHON_ERR_NULL, "config->output_path is NULL");
        }
        // SAFETY: non-null; the caller guarantees a NUL-terminated string readable for the call.
        let path = unsafe { CStr::from_ptr(cfg.output_path) };
        let path = match path.to_str() {
            Ok(p) => p,
            Err(e) => {
                return fail(
                    TYPHON_ERR_UTF8,
                    format_args!(
                        "config->output_path {:?} is not UTF-8: {e}",
                        path.to_string_lossy()
                    ),
                )
            }
        };
        let b = basic(
            RecorderBuilder::new().output(path),
            cfg.page_size,
            cfg.ring_bytes,
            cfg.flush_interval_us,
            cfg.zstd_level,
        );
        install(with_max_page_age(b, 0), false)
    })
}

/// Applies the settings `TyphonConfig` and `TyphonConfigEx` share (0: the default).
pub(crate) fn basic(
    mut b: RecorderBuilder,
    page_size: usize,
    ring_bytes: usize,
    flush_interval_us: u64,
    zstd_level: u32,
) -> RecorderBuilder {
    if page_size != 0 {
        b = b.page_size(page_size);
    }
    if ring_bytes != 0 {
        b = b.ring_bytes(ring_bytes);
    }
    if flush_interval_us != 0 {
        b = b.flush_interval(Duration::from_micros(flush_interval_us));
    }
    if zstd_level != 0 {
        // Out of 1..=19 (a huge u32 included) is refused by `validate` in `install`.
        let level = i32::try_from(zstd_level).unwrap_or(i32::MAX);
        b = b.compression(typhon_recorder::tracedat::Compression::Zstd { level });
    }
    b
}

/// The page age: `us` if not 0, else `typhon_set_max_page_age_us`'s setting if not 0, else the
/// builder's default.
pub(crate) fn with_max_page_age(b: RecorderBuilder, us: u64) -> RecorderBuilder {
    // Relaxed: a plain setting, read once here; no other memory is ordered by it.
    let us = if us != 0 {
        us
    } else {
        MAX_PAGE_AGE_US.load(Ordering::Relaxed)
    };
    if us != 0 {
        b.max_page_age(Duration::from_micros(us))
    } else {
        b
    }
}

/// Whether the recorder in [`RECORDER`] keeps a window (set and read under its lock): what tells
/// `typhon_snapshot` to answer [`TYPHON_ERR_NOT_WINDOWED`] rather than the core's config error.
pub(crate) static WINDOWED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Validates and starts `b`, and installs it as [`RECORDER`].
pub(crate) fn install(b: RecorderBuilder, windowed: bool) -> i32 {
    let mut slot = RECORDER.lock();
    if slot.is_some() {
        return fail(
            TYPHON_ERR_ALREADY_STARTED,
            "a recorder is already running (call typhon_finish first)",
        );
    }
    if let Err(e) = b.validate() {
        return recorder_error(&e);
    }
    match b.start() {
        Ok(r) => {
            *slot = Some(Arc::new(r));
            // Relaxed: only read under RECORDER's lock, which orders it.
            WINDOWED.store(windowed, Ordering::Relaxed);
            TYPHON_OK
        }
        Err(e) => recorder_error(&e),
    }
}

/// Finishes the recorder started by `typhon_start`: writes out everything written before the
/// call, assembles the trace.dat and stores the final counters in `*out` (when `out` is not
/// NULL). Returns [`TYPHON_ERR_NOT_STARTED`] when none runs, [`TYPHON_ERR_IO`] or
/// [`TYPHON_ERR_FLUSHER`] when the recording could not be completed (the recorder is stopped
/// either way). On [`TYPHON_ERR_IO`] from a full disk the final counters are still stored in
/// `*out`, and the pages are kept in `OUT.parts/` for `typhon-rec recover OUT`. A write still running on another thread when the recorder is uninstalled may
/// be in neither the file nor a counter: join or stop the writing threads first when every
/// record must be accounted for.
///
/// # Safety
/// `out` must be NULL or point to writable storage for a `TyphonStats`.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// assert_eq!(unsafe { typhon_finish(std::ptr::null_mut()) }, TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_finish(out: *mut TyphonStats) -> i32 {
    guarded("typhon_finish", || {
        let Some(mut r) = RECORDER.lock().take() else {
            return TYPHON_ERR_NOT_STARTED;
        };
        // A `typhon_drain` still waiting holds the other reference: it returns within a flush
        // cycle (the flusher runs until `finish`), and then the recorder is this call's alone.
        let r = loop {
            match Arc::try_unwrap(r) {
                Ok(r) => break r,
                Err(shared) => {
                    r = shared;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        };
        match r.finish() {
            Ok(s) => {
                *LAST_FINAL.lock() = Some(s.clone());
                if out.is_null() {
                    TYPHON_OK
                } else {
                    // SAFETY: non-null; the caller guarantees writable, aligned TyphonStats.
                    unsafe { store(out, TyphonStats::from(&s)) }
                }
            }
            Err(e) => {
                // The session ended even so: its final counters still go to the caller.
                if let (Some(s), false) = (e.stats(), out.is_null()) {
                    // SAFETY: non-null; the caller guarantees writable, aligned TyphonStats.
                    unsafe { store(out, TyphonStats::from(s)) };
                }
                recorder_error(&e)
            }
        }
    })
}

/// Finishes the recorder started by `typhon_start` when the process is told to end, so that
/// the output is a complete trace.dat rather than `OUT.parts/` (the Rust builder's
/// `finish_on_termination`):
/// - on SIGINT or SIGTERM, everything written before the signal is written out, the previous
///   dispositions are restored and the signal is raised again, so the process ends as it would
///   have (killed by the signal, or in a handler the host installed before this call, which then
///   runs; a signal the process ignores stays ignored). A second one while the file is being
///   finished acts at once. The handler only writes a byte to a pipe; a thread of the recorder's,
///   `typhon-signals`, does the finish; it is installed with `SA_RESTART`;
/// - on `exit` (or a return from `main`) with the recorder still running, an `atexit` hook
///   finishes it.
///
/// Threads still writing meanwhile are not held up; their writes after the finish point are not
/// recorded. Ends with `typhon_finish`, which puts the dispositions back (after a signal's
/// finish it returns [`TYPHON_OK`] and the final counters). Calling it twice changes nothing.
/// Returns [`TYPHON_ERR_NOT_STARTED`] without a recorder, [`TYPHON_ERR_IO`] if the pipe or the
/// thread could not be made.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// assert_eq!(typhon_finish_on_termination(), TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub extern "C" fn typhon_finish_on_termination() -> i32 {
    guarded("typhon_finish_on_termination", || {
        let r = RECORDER.lock().clone();
        match r {
            Some(r) => match r.finish_on_termination() {
                Ok(()) => TYPHON_OK,
                Err(e) => recorder_error(&e),
            },
            None => TYPHON_ERR_NOT_STARTED,
        }
    })
}

/// A snapshot of the running recorder's counters into `*out`. Returns [`TYPHON_ERR_NULL`] or
/// [`TYPHON_ERR_NOT_STARTED`].
///
/// # Safety
/// `out` must be NULL or point to writable storage for a `TyphonStats`.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// let mut s = TyphonStats::default();
/// assert_eq!(unsafe { typhon_stats(&mut s) }, TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_stats(out: *mut TyphonStats) -> i32 {
    // SAFETY: the caller's guarantee on `out`, as this function's contract states.
    unsafe { store_stats("typhon_stats", out, |s| TyphonStats::from(s)) }
}

/// Stores `pick` of a snapshot of the running recorder's stats into `*out`:
/// [`TYPHON_ERR_NULL`] for a NULL `out` (checked first), [`TYPHON_ERR_NOT_STARTED`] without a
/// recorder.
///
/// # Safety
/// `out` must be NULL or point to writable storage, aligned for `T`.
unsafe fn store_stats<T>(func: &'static str, out: *mut T, pick: impl FnOnce(&Stats) -> T) -> i32 {
    guarded(func, || {
        if out.is_null() {
            return fail(TYPHON_ERR_NULL, "the out-pointer is NULL");
        }
        let s = match RECORDER.lock().as_ref() {
            Some(r) => r.stats(),
            None => return TYPHON_ERR_NOT_STARTED,
        };
        // SAFETY: non-null; the caller guarantees it is writable and aligned for T.
        unsafe { store(out, pick(&s)) }
    })
}

/// The longest time so far, in ns, between two drains of the rings (the flusher's cycles),
/// into `*out_ns`; 0 before the second. A ring fills in its size divided by its thread's write
/// rate (about 38 ms for the default 2 MiB at 2.5 M records/s): a longer gap can drop that
/// thread's records, because the flusher was not scheduled or its output held it up. It is a
/// call of its own rather than a field of `TyphonStats`, whose layout hosts have compiled in.
/// Returns [`TYPHON_ERR_NULL`] or [`TYPHON_ERR_NOT_STARTED`].
///
/// # Safety
/// `out_ns` must be NULL or point to a writable `uint64_t`.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// let mut gap = 0u64;
/// assert_eq!(unsafe { typhon_longest_drain_gap(&mut gap) }, TYPHON_ERR_NOT_STARTED);
/// assert_eq!(unsafe { typhon_longest_drain_gap(std::ptr::null_mut()) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_longest_drain_gap(out_ns: *mut u64) -> i32 {
    // SAFETY: the caller's guarantee on `out_ns`, as this function's contract states.
    unsafe {
        store_stats("typhon_longest_drain_gap", out_ns, |s| {
            s.longest_drain_gap_ns
        })
    }
}

/// `typhon_set_max_page_age_us`'s setting (0: the builder's default).
static MAX_PAGE_AGE_US: AtomicU64 = AtomicU64::new(0);

/// Sets how old a partly filled page may get before the flusher hands it to the output, in
/// microseconds, for the recorders `typhon_start` starts after this call (0 = the default,
/// 1 000 000: 1 s). It bounds how long a quiet thread's records wait before a viewer following
/// the recording (`typhon-rec live`) or a crash's `recover` sees them; smaller values write
/// less-full pages. A call of its own rather than a field of `TyphonConfig`, whose layout
/// hosts have compiled in. Returns [`TYPHON_OK`], or [`TYPHON_ERR_CONFIG`] for more than an
/// hour (3 600 000 000), which keeps the setting as it was.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_set_max_page_age_us(100_000), TYPHON_OK);
/// assert_eq!(typhon_set_max_page_age_us(3_600_000_001), TYPHON_ERR_CONFIG);
/// assert_eq!(typhon_set_max_page_age_us(0), TYPHON_OK);
/// ```
#[no_mangle]
pub extern "C" fn typhon_set_max_page_age_us(us: u64) -> i32 {
    if us > 3_600_000_000 {
        return fail(
            TYPHON_ERR_CONFIG,
            format_args!("max page age {us} us is over an hour (3600000000 us)"),
        );
    }
    MAX_PAGE_AGE_US.store(us, Ordering::Relaxed);
    TYPHON_OK
}

/// Window mode (SPEC §16): records aged out of the window so far, into `*out` (0 without a
/// window). They are in `written` (they reached the window), not a loss. A call of its own, like
/// `typhon_longest_drain_gap`, because `TyphonStats`'s layout is compiled into hosts.
/// Returns [`TYPHON_ERR_NULL`] or [`TYPHON_ERR_NOT_STARTED`].
///
/// # Safety
/// `out` must be NULL or point to a writable `uint64_t`.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// let mut n = 0u64;
/// assert_eq!(unsafe { typhon_evicted_records(&mut n) }, TYPHON_ERR_NOT_STARTED);
/// assert_eq!(unsafe { typhon_evicted_records(std::ptr::null_mut()) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_evicted_records(out: *mut u64) -> i32 {
    // SAFETY: the caller's guarantee on `out`, as this function's contract states.
    unsafe { store_stats("typhon_evicted_records", out, |s| s.evicted_records) }
}

/// Window mode: pages aged out of the window so far, into `*out` (see
/// [`typhon_evicted_records`]). Returns [`TYPHON_ERR_NULL`] or [`TYPHON_ERR_NOT_STARTED`].
///
/// # Safety
/// `out` must be NULL or point to a writable `uint64_t`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_evicted_pages(std::ptr::null_mut()) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_evicted_pages(out: *mut u64) -> i32 {
    // SAFETY: the caller's guarantee on `out`, as this function's contract states.
    unsafe { store_stats("typhon_evicted_pages", out, |s| s.evicted_pages) }
}

/// The last stats `typhon_finish` returned (for [`typhon_clamped`] after it).
static LAST_FINAL: Mutex<Option<Stats>> = Mutex::new(None);

/// How many records had a time more than 10 s ahead of the recorder's clock (a `*_at` time far
/// in the future) and were written at their thread's previous record time instead, so that
/// they did not pin the thread's later records at that future time; all slots, into `*out`.
/// The running recorder's count, or, when none runs, the final count of the last one
/// `typhon_finish` stopped. The file's metadata has it per slot (`clamped`). A call of its own,
/// like `typhon_longest_drain_gap`, because `TyphonStats`'s layout is compiled into hosts.
/// Returns [`TYPHON_ERR_NULL`], or [`TYPHON_ERR_NOT_STARTED`] if no recorder ever ran.
///
/// # Safety
/// `out` must be NULL or point to a writable `uint64_t`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_clamped(std::ptr::null_mut()) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_clamped(out: *mut u64) -> i32 {
    let sum = |s: &Stats| s.slots.iter().map(|x| x.clamped).sum::<u64>();
    if !out.is_null() && RECORDER.lock().is_none() {
        if let Some(s) = LAST_FINAL.lock().as_ref() {
            let n = sum(s);
            // SAFETY: non-null; the caller guarantees a writable, aligned u64.
            return unsafe { store(out, n) };
        }
    }
    // SAFETY: the caller's guarantee on `out`, as this function's contract states.
    unsafe { store_stats("typhon_clamped", out, sum) }
}

/// Waits until the flusher has drained every record written before this call (on this thread,
/// or on threads joined before it) and freed the slots of threads that have exited, so that
/// `typhon_stats` counts those records. Returns `TYPHON_ERR_NOT_STARTED` without a recorder.
/// Other calls on other threads are not held up while it waits (`typhon_finish` waits for it).
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// assert_eq!(typhon_drain(), TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub extern "C" fn typhon_drain() -> i32 {
    guarded("typhon_drain", || {
        // Cloned out of the lock: the wait below does not hold up the other calls.
        let r = RECORDER.lock().clone();
        match r {
            Some(r) => {
                r.drain();
                TYPHON_OK
            }
            None => TYPHON_ERR_NOT_STARTED,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use typhon_recorder::sink::{SessionSummary, Sink};

    /// Holds the flusher in its first `write_page` until released, after saying so.
    struct Held {
        entered: mpsc::Sender<()>,
        release: Option<mpsc::Receiver<()>>,
    }

    impl Sink for Held {
        fn write_page(&mut self, _slot: u8, _page: &[u8]) -> std::io::Result<()> {
            if let Some(r) = self.release.take() {
                let _ = self.entered.send(());
                let _ = r.recv();
            }
            Ok(())
        }
        fn finish(&mut self, _summary: &SessionSummary) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `typhon_drain` waits for a flush cycle; `typhon_stats` on another thread answers
    /// meanwhile (it used to wait for the drain, which held the recorder's lock).
    #[test]
    fn a_waiting_drain_does_not_hold_up_stats() {
        let _g = typhon_recorder::doc_lock();
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let hour = Duration::from_secs(3600);
        let r = RecorderBuilder::new()
            .sink(Held {
                entered: entered_tx,
                release: Some(release_rx),
            })
            .flush_interval(hour)
            .max_page_age(hour)
            .start()
            .unwrap();
        *RECORDER.lock() = Some(Arc::new(r));
        // More than a page: the drain's cycle hands one to the sink, which holds it.
        for i in 0..1000 {
            typhon_recorder::instant(i, i);
        }
        let (started_tx, started) = mpsc::channel();
        let drain = std::thread::spawn(move || {
            started_tx.send(()).unwrap();
            typhon_drain()
        });
        let wait = Duration::from_secs(30);
        started.recv_timeout(wait).unwrap();
        entered
            .recv_timeout(wait)
            .expect("the flusher reached the sink");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = TyphonStats::default();
            // SAFETY: `s` is a writable TyphonStats.
            tx.send(unsafe { typhon_stats(&mut s) }).unwrap();
        });
        assert_eq!(
            rx.recv_timeout(wait),
            Ok(TYPHON_OK),
            "typhon_stats answered while the drain waited"
        );
        assert!(!drain.is_finished(), "the drain waits for the held cycle");
        release.send(()).unwrap();
        assert_eq!(drain.join().unwrap(), TYPHON_OK);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { typhon_finish(std::ptr::null_mut()) }, TYPHON_OK);
    }
}

//! The C ABI: the recorder for engines written in C, C++ or C# (P/Invoke).
//!
//! Every function is `extern "C"`, unmangled, prefixed `typhon_`, and never unwinds into the
//! caller: each body runs under [`std::panic::catch_unwind`] and a panic becomes
//! [`TYPHON_ERR_PANIC`]. Errors are `int32_t` codes, 0 = [`TYPHON_OK`], negative = an error,
//! named by [`typhon_error_name`] and explained by [`typhon_last_error_message`] (the calling
//! thread's last failure, in words: the configuration value, the path, the sizes). A write
//! that fails while a recorder runs is counted once as refused. The header `include/typhon_recorder.h` is generated from this
//! module with cbindgen (`cbindgen.toml`; `TYPHON_BLESS=1 cargo test -p typhon-ffi --test header`
//! rewrites it, and that test fails while it is out of date).
//!
//! Pointer contracts, shared by every function that takes one:
//! - a `(ptr, len)` pair must point to `len` readable bytes that stay valid and unmodified for
//!   the duration of the call; `ptr` may not be NULL (NULL gives [`TYPHON_ERR_NULL`]) except
//!   that NULL with `len == 0` is an empty name or payload; `len` above `PTRDIFF_MAX` gives
//!   [`TYPHON_ERR_INVALID`];
//! - names are UTF-8 without a terminating NUL counted in `len` (bad UTF-8 gives
//!   [`TYPHON_ERR_UTF8`]); the recorder copies what it keeps, so the caller may reuse the buffer
//!   as soon as the call returns;
//! - out-pointers must be NULL (where a function allows it) or point to writable, properly
//!   aligned storage of the pointee type.
//!
//! Writes with no recorder running record nothing and return [`TYPHON_OK`], like the Rust API;
//! malformed input returns its error code either way, so a bad call shows with recording off too.
//!
//! ```
//! # let _g = typhon_recorder::doc_lock();
//! use typhon_ffi::*;
//! let dir = std::env::temp_dir().join(format!("typhon-ffi-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = std::ffi::CString::new(dir.join("t.dat").to_str().unwrap()).unwrap();
//! let cfg = TyphonConfig { output_path: path.as_ptr(), page_size: 0, ring_bytes: 0,
//!     flush_interval_us: 0 };
//! unsafe {
//!     assert_eq!(typhon_start(&cfg), TYPHON_OK);
//!     assert_eq!(typhon_tick_start(), TYPHON_OK);
//!     let mut id = 0;
//!     assert_eq!(typhon_span_begin(b"update".as_ptr().cast(), 6, &mut id), TYPHON_OK);
//!     assert_eq!(typhon_span_end(id), TYPHON_OK);
//!     let mut st = TyphonStats::default();
//!     assert_eq!(typhon_finish(&mut st), TYPHON_OK);
//!     assert_eq!(st.attempted, st.written + st.missed + st.sink_lost);
//! }
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

use parking_lot::Mutex;
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use typhon_recorder::codec::TraceEventKind;
use typhon_recorder::{
    Recorder, RecorderBuilder, RecorderError, Stats, ThreadKind, TraceContext, WriteError,
};

/// Success.
pub const TYPHON_OK: i32 = 0;
/// A required pointer argument was NULL.
pub const TYPHON_ERR_NULL: i32 = -1;
/// A name or path was not valid UTF-8.
pub const TYPHON_ERR_UTF8: i32 = -2;
/// A configuration value is out of range (page size not a power of two from 4096 to 1 MiB,
/// ring bytes not a power of two from 4096 to 1 GiB).
pub const TYPHON_ERR_CONFIG: i32 = -3;
/// `typhon_start`: a recorder is already running in this process.
pub const TYPHON_ERR_ALREADY_STARTED: i32 = -4;
/// `typhon_finish`, `typhon_stats`, `typhon_longest_drain_gap`, `typhon_drain`,
/// `typhon_register_thread`: no recorder was started with `typhon_start`.
pub const TYPHON_ERR_NOT_STARTED: i32 = -5;
/// An I/O error creating or writing the output file.
pub const TYPHON_ERR_IO: i32 = -6;
/// The record does not fit in one page (size > page size − 24; a larger page size records it),
/// or is larger than any record can be (65534 bytes). For a span, reported when it begins.
pub const TYPHON_ERR_TOO_LARGE: i32 = -7;
/// Malformed input: a NUL inside a span name, a CeLog id of 0x3FFF or above or of 90
/// (`CELID_FLAGGED`), CeLog data above 4095 bytes, a payload its kind's decoder rejects, a
/// length above `PTRDIFF_MAX`.
pub const TYPHON_ERR_INVALID: i32 = -8;
/// `typhon_span_end`: the span is not this thread's innermost open span (nothing was ended).
pub const TYPHON_ERR_SPAN_MISMATCH: i32 = -9;
/// The recorder panicked inside the call (a bug; the panic did not cross the boundary).
pub const TYPHON_ERR_PANIC: i32 = -10;
/// The flusher thread panicked; the recording may be incomplete.
pub const TYPHON_ERR_FLUSHER: i32 = -11;
/// `typhon_register_thread`: all 255 thread slots are taken; this thread's events are counted
/// as no-slot.
pub const TYPHON_ERR_NO_SLOT: i32 = -12;

/// Thread kind for `typhon_set_thread_info`: the main (game loop) thread.
pub const TYPHON_THREAD_MAIN: u8 = 0;
/// Thread kind: a dedicated worker thread.
pub const TYPHON_THREAD_WORKER: u8 = 1;
/// Thread kind: a thread of a pool.
pub const TYPHON_THREAD_POOL: u8 = 2;
/// Thread kind: any other thread.
pub const TYPHON_THREAD_OTHER: u8 = 3;

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
static RECORDER: Mutex<Option<Arc<Recorder>>> = Mutex::new(None);

/// A process-wide clock for `typhon_now` / `typhon_ns_to_ticks`: raw ticks are the same in
/// every clock of the process (quanta calibrates once), so they are valid for any recorder.
fn clock() -> &'static typhon_recorder::clock::Clock {
    static C: OnceLock<typhon_recorder::clock::Clock> = OnceLock::new();
    C.get_or_init(typhon_recorder::clock::Clock::new)
}

/// The calling thread's last error message, and whether the failing call now returning set it
/// (see [`fail`] and [`guarded`]).
struct LastError {
    message: CString,
    fresh: bool,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError {
        message: CString::default(),
        fresh: false,
    });
}

/// Records `msg` as the calling thread's last error (what [`typhon_last_error_message`]
/// returns) and returns `code`. Only failing calls come here: a success leaves the message as
/// it was, so the hot path touches no thread-local for it.
#[cold]
#[inline(never)]
fn fail(code: i32, msg: impl fmt::Display) -> i32 {
    let mut text = msg.to_string().into_bytes();
    // A NUL inside (a path or name quoted in the message) would cut the C string short.
    text.retain(|&b| b != 0);
    let message = CString::new(text).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            l.message = message;
            l.fresh = true;
        }
    });
    code
}

/// After a failed call: prefixes the message it set with the function's name, or, if the
/// failure set none, writes the code's generic description.
#[cold]
#[inline(never)]
fn name_failure(func: &str, code: i32) {
    let _ = LAST_ERROR.try_with(|l| {
        let Ok(mut l) = l.try_borrow_mut() else {
            return;
        };
        let detail = if std::mem::take(&mut l.fresh) {
            l.message.to_string_lossy().into_owned()
        } else {
            describe(code).to_string()
        };
        let mut text = format!("{func}: {detail}").into_bytes();
        text.retain(|&b| b != 0);
        l.message = CString::new(text).unwrap_or_default();
    });
}

/// What a code means, for a failure that gave no message of its own.
fn describe(code: i32) -> &'static str {
    match code {
        TYPHON_ERR_NULL => "a required pointer argument is NULL",
        TYPHON_ERR_UTF8 => "a name or path is not valid UTF-8",
        TYPHON_ERR_CONFIG => "a configuration value is out of range",
        TYPHON_ERR_ALREADY_STARTED => "a recorder is already running in this process",
        TYPHON_ERR_NOT_STARTED => {
            "no recorder is running (typhon_start was not called, or \
                                   typhon_finish already stopped it)"
        }
        TYPHON_ERR_IO => "an I/O error on the output",
        TYPHON_ERR_TOO_LARGE => "the record is too large",
        TYPHON_ERR_INVALID => "malformed input",
        TYPHON_ERR_SPAN_MISMATCH => "the span is not this thread's innermost open span",
        TYPHON_ERR_PANIC => "the recorder panicked inside the call",
        TYPHON_ERR_FLUSHER => "the flusher thread panicked; the recording may be incomplete",
        TYPHON_ERR_NO_SLOT => "all 255 thread slots are taken",
        _ => "unknown error",
    }
}

/// Runs `f` (the body of the C function `func`), turning a panic into [`TYPHON_ERR_PANIC`]; a
/// failure leaves its message for [`typhon_last_error_message`].
#[inline(always)]
fn guarded(func: &'static str, f: impl FnOnce() -> i32) -> i32 {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(code) => code,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            fail(
                TYPHON_ERR_PANIC,
                format_args!("the recorder panicked inside the call (a bug): {what}"),
            )
        }
    };
    if code != TYPHON_OK {
        name_failure(func, code);
    }
    code
}

/// A write whose arguments the ABI layer refused (NULL, bad UTF-8, a length above
/// `PTRDIFF_MAX`): counted as refused while a recorder runs, as the Rust API counts its own.
#[cold]
#[inline(never)]
fn refused_args(code: i32) -> i32 {
    typhon_recorder::probe::count_refused();
    code
}

/// Runs a write that cannot fail.
#[inline(always)]
fn write(func: &'static str, f: impl FnOnce()) -> i32 {
    guarded(func, || {
        f();
        TYPHON_OK
    })
}

#[cold]
fn write_error(e: WriteError) -> i32 {
    let code = match e {
        WriteError::TooLarge { .. } => TYPHON_ERR_TOO_LARGE,
        WriteError::Invalid(_) => TYPHON_ERR_INVALID,
        WriteError::SpanMismatch { .. } => TYPHON_ERR_SPAN_MISMATCH,
    };
    fail(code, e)
}

#[inline(always)]
fn result(r: Result<(), WriteError>) -> i32 {
    match r {
        Ok(()) => TYPHON_OK,
        Err(e) => write_error(e),
    }
}

#[cold]
fn recorder_error(e: &RecorderError) -> i32 {
    // The codes are matched on the variants this module knows; any other gets the I/O code
    // (its message says what it is).
    #[allow(unreachable_patterns)]
    let code = match e {
        RecorderError::Config(_) => TYPHON_ERR_CONFIG,
        RecorderError::AlreadyInstalled => TYPHON_ERR_ALREADY_STARTED,
        RecorderError::Io(_) | RecorderError::Unfinished(_) => TYPHON_ERR_IO,
        RecorderError::FlusherPanicked => TYPHON_ERR_FLUSHER,
        _ => TYPHON_ERR_IO,
    };
    fail(code, e)
}

/// Borrows `len` bytes at `ptr`. NULL is an error unless `null_if_empty` and `len == 0`.
///
/// # Safety
/// If `ptr` is not NULL, it must point to `len` readable bytes that stay valid and unmodified
/// for `'a` (the duration of the FFI call).
unsafe fn bytes<'a>(ptr: *const u8, len: usize, null_if_empty: bool) -> Result<&'a [u8], i32> {
    if ptr.is_null() {
        return if null_if_empty && len == 0 {
            Ok(&[])
        } else {
            Err(fail(
                TYPHON_ERR_NULL,
                format_args!("a NULL pointer with a length of {len} bytes"),
            ))
        };
    }
    if len > isize::MAX as usize {
        return Err(fail(
            TYPHON_ERR_INVALID,
            format_args!("a length of {len} bytes exceeds PTRDIFF_MAX"),
        ));
    }
    // SAFETY: `ptr` is non-null; the caller guarantees `len` readable bytes valid for 'a, and
    // `len <= isize::MAX` was checked; u8 has alignment 1, so any non-null pointer is aligned.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Borrows a UTF-8 name of `len` bytes at `ptr`. NULL with `len == 0` is the empty name (what
/// C#'s `fixed` gives for an empty span); NULL with a length is an error.
///
/// # Safety
/// As [`bytes`].
unsafe fn name<'a>(ptr: *const c_char, len: usize) -> Result<&'a str, i32> {
    // SAFETY: forwarded contract of this function (same pointer, same length).
    let b = unsafe { bytes(ptr.cast(), len, true) }?;
    std::str::from_utf8(b)
        .map_err(|e| fail(TYPHON_ERR_UTF8, format_args!("the name is not UTF-8: {e}")))
}

/// Stores `v` through an out-pointer.
///
/// # Safety
/// `out` must be NULL or point to writable, aligned storage for a `T`.
unsafe fn store<T>(out: *mut T, v: T) -> i32 {
    if out.is_null() {
        return fail(TYPHON_ERR_NULL, "the out-pointer is NULL");
    }
    // SAFETY: non-null, and the caller guarantees it is writable and aligned for T.
    unsafe { out.write(v) };
    TYPHON_OK
}

macro_rules! try_code {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(code) => return code,
        }
    };
}

/// The recorder's version, a static NUL-terminated string (e.g. `"0.1.0"`); never NULL, never
/// freed.
///
/// ```
/// let v = unsafe { std::ffi::CStr::from_ptr(typhon_ffi::typhon_version()) };
/// assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
/// ```
#[no_mangle]
pub extern "C" fn typhon_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The name of an error code (`"TYPHON_OK"`, `"TYPHON_ERR_NULL"`, …; `"TYPHON_ERR_UNKNOWN"` for
/// a code this version does not define), a static NUL-terminated string; never NULL, never
/// freed.
///
/// ```
/// use typhon_ffi::*;
/// let n = unsafe { std::ffi::CStr::from_ptr(typhon_error_name(TYPHON_ERR_UTF8)) };
/// assert_eq!(n.to_str().unwrap(), "TYPHON_ERR_UTF8");
/// ```
#[no_mangle]
pub extern "C" fn typhon_error_name(code: i32) -> *const c_char {
    let s: &'static str = match code {
        TYPHON_OK => "TYPHON_OK\0",
        TYPHON_ERR_NULL => "TYPHON_ERR_NULL\0",
        TYPHON_ERR_UTF8 => "TYPHON_ERR_UTF8\0",
        TYPHON_ERR_CONFIG => "TYPHON_ERR_CONFIG\0",
        TYPHON_ERR_ALREADY_STARTED => "TYPHON_ERR_ALREADY_STARTED\0",
        TYPHON_ERR_NOT_STARTED => "TYPHON_ERR_NOT_STARTED\0",
        TYPHON_ERR_IO => "TYPHON_ERR_IO\0",
        TYPHON_ERR_TOO_LARGE => "TYPHON_ERR_TOO_LARGE\0",
        TYPHON_ERR_INVALID => "TYPHON_ERR_INVALID\0",
        TYPHON_ERR_SPAN_MISMATCH => "TYPHON_ERR_SPAN_MISMATCH\0",
        TYPHON_ERR_PANIC => "TYPHON_ERR_PANIC\0",
        TYPHON_ERR_FLUSHER => "TYPHON_ERR_FLUSHER\0",
        TYPHON_ERR_NO_SLOT => "TYPHON_ERR_NO_SLOT\0",
        _ => "TYPHON_ERR_UNKNOWN\0",
    };
    s.as_ptr().cast()
}

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
///     flush_interval_us: 0 };
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
        let mut b = RecorderBuilder::new().output(path);
        if cfg.page_size != 0 {
            b = b.page_size(cfg.page_size);
        }
        if cfg.ring_bytes != 0 {
            b = b.ring_bytes(cfg.ring_bytes);
        }
        if cfg.flush_interval_us != 0 {
            b = b.flush_interval(Duration::from_micros(cfg.flush_interval_us));
        }
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
                TYPHON_OK
            }
            Err(e) => recorder_error(&e),
        }
    })
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

/// The calling thread's last error message: what went wrong in its most recent call into the
/// library that returned an error code, prefixed with the function's name (e.g.
/// `"typhon_start: invalid recorder configuration: page size 5000 ..."`); an empty string if
/// none of its calls has failed. A NUL-terminated UTF-8 string owned by the library, never NULL.
///
/// Lifetime: the pointer is valid until the same thread's next call into the library (copy the
/// text first if you need it longer); other threads' calls do not touch it. Calls that succeed
/// leave the message as it was (like `errno`), so read it right after the failing call.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_start(std::ptr::null()) }, TYPHON_ERR_NULL);
/// let m = unsafe { std::ffi::CStr::from_ptr(typhon_last_error_message()) };
/// assert_eq!(m.to_str().unwrap(), "typhon_start: config is NULL");
/// ```
#[no_mangle]
pub extern "C" fn typhon_last_error_message() -> *const c_char {
    static EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR
            .try_with(|l| l.try_borrow().map(|l| l.message.as_ptr()).ok())
            .ok()
            .flatten()
            // The thread's storage is being torn down: no message to give.
            .unwrap_or(EMPTY.as_ptr())
    })
    .unwrap_or(EMPTY.as_ptr())
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

/// The clock now, in raw ticks: the unit of every `*_at` function's timestamp. Valid with or
/// without a running recorder (0 only if the clock panicked).
///
/// ```
/// let a = typhon_ffi::typhon_now();
/// assert!(typhon_ffi::typhon_now() >= a);
/// ```
#[no_mangle]
pub extern "C" fn typhon_now() -> u64 {
    catch_unwind(|| clock().raw()).unwrap_or(0)
}

/// Converts CLOCK_MONOTONIC nanoseconds (e.g. `clock_gettime(CLOCK_MONOTONIC)`) to raw ticks
/// for the `*_at` functions.
///
/// ```
/// use typhon_ffi::*;
/// let t = typhon_ns_to_ticks(typhon_recorder::clock::monotonic_ns());
/// assert!(t.abs_diff(typhon_now()) < 1_000_000_000);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ns_to_ticks(ns: u64) -> u64 {
    catch_unwind(|| clock().ns_to_raw(ns)).unwrap_or(0)
}

/// Claims the calling thread's slot now and writes its ThreadInfo record, so that its first
/// event costs what every later one does (the claim takes one of the spare rings in a few
/// microseconds, or, once they are used up, allocates a ring and faults its pages in: 0.8–1.5 ms
/// for the default ring on a small VM). Call it at thread start, after
/// `typhon_set_thread_info`. Returns `TYPHON_OK`, `TYPHON_ERR_NOT_STARTED` without a recorder,
/// or `TYPHON_ERR_NO_SLOT` when all 255 slots are taken.
///
/// ```
/// use typhon_ffi::*;
/// # let _g = typhon_recorder::doc_lock();
/// assert_eq!(typhon_register_thread(), TYPHON_ERR_NOT_STARTED);
/// ```
#[no_mangle]
pub extern "C" fn typhon_register_thread() -> i32 {
    guarded("typhon_register_thread", || {
        if RECORDER.lock().is_none() {
            TYPHON_ERR_NOT_STARTED
        } else if typhon_recorder::register_thread() {
            TYPHON_OK
        } else {
            TYPHON_ERR_NO_SLOT
        }
    })
}

/// Names the calling thread (`name`: `name_len` bytes of UTF-8, cut to 64 bytes) and sets its
/// kind (`TYPHON_THREAD_*`) for the ThreadInfo record written at the thread's first event.
/// Call it before the thread's first write; a later call applies from the next recorder on.
///
/// # Safety
/// `name` must point to `name_len` readable bytes (see the module's pointer contracts).
///
/// ```
/// use typhon_ffi::*;
/// let n = "net-io";
/// assert_eq!(unsafe { typhon_set_thread_info(n.as_ptr().cast(), n.len(), TYPHON_THREAD_WORKER) }, TYPHON_OK);
/// assert_eq!(unsafe { typhon_set_thread_info(b"\xff".as_ptr().cast(), 1, 0) }, TYPHON_ERR_UTF8);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_set_thread_info(
    name: *const c_char,
    name_len: usize,
    kind: u8,
) -> i32 {
    guarded("typhon_set_thread_info", || {
        // SAFETY: the caller's contract for (name, name_len).
        let n = try_code!(unsafe { self::name(name, name_len) });
        typhon_recorder::set_thread_info(n, ThreadKind::from_u8(kind));
        TYPHON_OK
    })
}

/// Computes a command's causal id (CorrelationInstantCodec.CommandCausalId) into `*hi`, `*lo`,
/// the trace context of the span that processes the command.
///
/// # Safety
/// `hi` and `lo` must be NULL (giving [`TYPHON_ERR_NULL`]) or point to writable `uint64_t`s.
///
/// ```
/// use typhon_ffi::*;
/// let (mut hi, mut lo) = (0, 0);
/// assert_eq!(unsafe { typhon_command_causal_id(7, 100, 3, &mut hi, &mut lo) }, TYPHON_OK);
/// assert_eq!((hi, lo), typhon_recorder::command_causal_id(7, 100, 3));
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_command_causal_id(
    session: u32,
    drain_tick: u32,
    seq: u16,
    hi: *mut u64,
    lo: *mut u64,
) -> i32 {
    guarded("typhon_command_causal_id", || {
        if hi.is_null() || lo.is_null() {
            return fail(TYPHON_ERR_NULL, "hi or lo is NULL");
        }
        let (h, l) = typhon_recorder::command_causal_id(session, drain_tick, seq);
        // SAFETY: both non-null; the caller guarantees writable, aligned u64s.
        unsafe {
            store(hi, h);
            store(lo, l)
        }
    })
}

// The fixed-size writes, written out (cbindgen does not expand macros). They cannot fail:
// they return TYPHON_OK, or TYPHON_ERR_PANIC for a caught panic.

/// Records IngressReceived: a message of `bytes` bytes arrived for `session`.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_ingress_received(1, 2, 3, 64), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_received(
    session: u32,
    seq: u16,
    wire_idx: u16,
    bytes: u16,
) -> i32 {
    write("typhon_ingress_received", || {
        typhon_recorder::ingress_received(session, seq, wire_idx, bytes)
    })
}

/// `typhon_ingress_received` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_ingress_received_at(typhon_now(), 1, 2, 3, 64), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_received_at(
    ts: u64,
    session: u32,
    seq: u16,
    wire_idx: u16,
    bytes: u16,
) -> i32 {
    write("typhon_ingress_received_at", || {
        typhon_recorder::ingress_received_at(Some(ts), session, seq, wire_idx, bytes)
    })
}

/// Records IngressAdmitted: the message was admitted for drain tick `drain_tick`.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_ingress_admitted(1, 2, 3, 100), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_admitted(
    session: u32,
    seq: u16,
    wire_idx: u16,
    drain_tick: u32,
) -> i32 {
    write("typhon_ingress_admitted", || {
        typhon_recorder::ingress_admitted(session, seq, wire_idx, drain_tick)
    })
}

/// `typhon_ingress_admitted` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_ingress_admitted_at(typhon_now(), 1, 2, 3, 100), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_admitted_at(
    ts: u64,
    session: u32,
    seq: u16,
    wire_idx: u16,
    drain_tick: u32,
) -> i32 {
    write("typhon_ingress_admitted_at", || {
        typhon_recorder::ingress_admitted_at(Some(ts), session, seq, wire_idx, drain_tick)
    })
}

/// Records IngressDropped: the message was dropped for `reason` (any byte; unknown values
/// are kept as they are).
///
/// ```
/// assert_eq!(typhon_ffi::typhon_ingress_dropped(1, 2, 1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_dropped(session: u32, seq: u16, reason: u8) -> i32 {
    write("typhon_ingress_dropped", || {
        typhon_recorder::ingress_dropped(session, seq, reason.into())
    })
}

/// `typhon_ingress_dropped` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_ingress_dropped_at(typhon_now(), 1, 2, 1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ingress_dropped_at(ts: u64, session: u32, seq: u16, reason: u8) -> i32 {
    write("typhon_ingress_dropped_at", || {
        typhon_recorder::ingress_dropped_at(Some(ts), session, seq, reason.into())
    })
}

/// Records CommandConsumed: system `sys_idx` consumed the command.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_command_consumed(1, 2, 5), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_command_consumed(session: u32, seq: u16, sys_idx: u16) -> i32 {
    write("typhon_command_consumed", || {
        typhon_recorder::command_consumed(session, seq, sys_idx)
    })
}

/// `typhon_command_consumed` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_command_consumed_at(typhon_now(), 1, 2, 5), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_command_consumed_at(ts: u64, session: u32, seq: u16, sys_idx: u16) -> i32 {
    write("typhon_command_consumed_at", || {
        typhon_recorder::command_consumed_at(Some(ts), session, seq, sys_idx)
    })
}

/// Records EgressSent: `bytes` bytes with `acks` acknowledgements went to `session` at
/// `tick`.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_egress_sent(1, 100, 512, 3), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_egress_sent(session: u32, tick: u32, bytes: u32, acks: u16) -> i32 {
    write("typhon_egress_sent", || {
        typhon_recorder::egress_sent(session, tick, bytes, acks)
    })
}

/// `typhon_egress_sent` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_egress_sent_at(typhon_now(), 1, 100, 512, 3), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_egress_sent_at(
    ts: u64,
    session: u32,
    tick: u32,
    bytes: u32,
    acks: u16,
) -> i32 {
    write("typhon_egress_sent_at", || {
        typhon_recorder::egress_sent_at(Some(ts), session, tick, bytes, acks)
    })
}

/// Records TickStart.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_tick_start(), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_tick_start() -> i32 {
    write("typhon_tick_start", typhon_recorder::tick_start)
}

/// `typhon_tick_start` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_tick_start_at(typhon_now()), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_tick_start_at(ts: u64) -> i32 {
    write("typhon_tick_start_at", || {
        typhon_recorder::tick_start_at(ts)
    })
}

/// Records TickEnd with the tick's overload level and multiplier.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_tick_end(0, 1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_tick_end(overload_level: u8, tick_multiplier: u8) -> i32 {
    write("typhon_tick_end", || {
        typhon_recorder::tick_end(overload_level, tick_multiplier)
    })
}

/// `typhon_tick_end` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_tick_end_at(typhon_now(), 0, 1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_tick_end_at(ts: u64, overload_level: u8, tick_multiplier: u8) -> i32 {
    write("typhon_tick_end_at", || {
        typhon_recorder::tick_end_at(ts, overload_level, tick_multiplier)
    })
}

/// Records PhaseStart.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_phase_start(2), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_phase_start(phase: u8) -> i32 {
    write("typhon_phase_start", || typhon_recorder::phase_start(phase))
}

/// `typhon_phase_start` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_phase_start_at(typhon_now(), 2), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_phase_start_at(ts: u64, phase: u8) -> i32 {
    write("typhon_phase_start_at", || {
        typhon_recorder::phase_start_at(ts, phase)
    })
}

/// Records PhaseEnd.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_phase_end(2), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_phase_end(phase: u8) -> i32 {
    write("typhon_phase_end", || typhon_recorder::phase_end(phase))
}

/// `typhon_phase_end` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_phase_end_at(typhon_now(), 2), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_phase_end_at(ts: u64, phase: u8) -> i32 {
    write("typhon_phase_end_at", || {
        typhon_recorder::phase_end_at(ts, phase)
    })
}

/// Records a generic Instant (`name_id` an id of the caller's, `payload` any value).
///
/// ```
/// assert_eq!(typhon_ffi::typhon_instant(7, -1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_instant(name_id: i32, payload: i32) -> i32 {
    write("typhon_instant", || {
        typhon_recorder::instant(name_id, payload)
    })
}

/// `typhon_instant` at `ts`: raw ticks from `typhon_now()` or `typhon_ns_to_ticks()`.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_instant_at(typhon_now(), 7, -1), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_instant_at(ts: u64, name_id: i32, payload: i32) -> i32 {
    write("typhon_instant_at", || {
        typhon_recorder::instant_at(ts, name_id, payload)
    })
}

/// CeLogSetZones: which CeLog zones are recorded (an event is recorded iff
/// `(zone_ce & dwZoneCE) != 0 || (zone_user & dwZoneUser) != 0`); `zone_process` is accepted
/// for parity and unused. Applies process-wide from the next event on.
///
/// ```
/// assert_eq!(typhon_ffi::typhon_celog_set_zones(u32::MAX, u32::MAX, 0), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_celog_set_zones(zone_user: u32, zone_ce: u32, zone_process: u32) -> i32 {
    write("typhon_celog_set_zones", || {
        typhon_recorder::celog_set_zones(zone_user, zone_ce, zone_process)
    })
}

/// CeLogData(fTimeStamp, wID, pData, wLen, dwZoneUser, dwZoneCE, wFlag, fFlagged): records one
/// CeLog event of id `w_id` with `w_len` bytes at `p_data` (at most 4095), if its zones are
/// enabled (else it is counted as filtered). `f_time_stamp` and `f_flagged` are Win32 `BOOL`s
/// (non-zero = true): without a timestamp no clock is read and the event takes the time of the
/// thread's previous record; flagged events carry `w_flag`.
///
/// # Safety
/// `p_data` must point to `w_len` readable bytes; it may be NULL when `w_len` is 0.
///
/// ```
/// use typhon_ffi::*;
/// let d = b"hello";
/// assert_eq!(unsafe { typhon_celog_data(1, 0x2000, d.as_ptr().cast(), 5, 0, 1, 0, 0) }, TYPHON_OK);
/// assert_eq!(unsafe { typhon_celog_data(1, 0x2000, std::ptr::null(), 5, 0, 1, 0, 0) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn typhon_celog_data(
    f_time_stamp: i32,
    w_id: u16,
    p_data: *const c_void,
    w_len: u16,
    dw_zone_user: u32,
    dw_zone_ce: u32,
    w_flag: u16,
    f_flagged: i32,
) -> i32 {
    guarded("typhon_celog_data", || {
        // SAFETY: the caller's contract for (p_data, w_len).
        let data =
            try_code!(unsafe { bytes(p_data.cast(), w_len as usize, true) }.map_err(refused_args));
        result(typhon_recorder::celog_data(
            f_time_stamp != 0,
            w_id,
            data,
            dw_zone_user,
            dw_zone_ce,
            w_flag,
            f_flagged != 0,
        ))
    })
}

/// [`typhon_celog_data`] with a timestamp at `ts` (raw ticks; the event always carries a
/// timestamp).
///
/// # Safety
/// As [`typhon_celog_data`].
///
/// ```
/// use typhon_ffi::*;
/// let d = [1u8, 2, 3];
/// let r = unsafe { typhon_celog_data_at(typhon_now(), 0x2001, d.as_ptr().cast(), 3, 0, 1, 9, 1) };
/// assert_eq!(r, TYPHON_OK);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn typhon_celog_data_at(
    ts: u64,
    w_id: u16,
    p_data: *const c_void,
    w_len: u16,
    dw_zone_user: u32,
    dw_zone_ce: u32,
    w_flag: u16,
    f_flagged: i32,
) -> i32 {
    guarded("typhon_celog_data_at", || {
        // SAFETY: the caller's contract for (p_data, w_len).
        let data =
            try_code!(unsafe { bytes(p_data.cast(), w_len as usize, true) }.map_err(refused_args));
        result(typhon_recorder::celog_data_at(
            Some(Some(ts)),
            w_id,
            data,
            dw_zone_user,
            dw_zone_ce,
            w_flag,
            f_flagged != 0,
        ))
    })
}

/// Writes a record of any kind: `payload` (`len` bytes) is everything after the 12-byte common
/// header. Kinds of the recorder's kind table must hold a record their decoder accepts
/// ([`TYPHON_ERR_INVALID`]: the size, a name's NUL or length, span flags, one valid CeLog
/// event); other kinds are the engine's own. [`TYPHON_ERR_TOO_LARGE`] if it does not fit in a
/// page or exceeds 65534 bytes.
///
/// # Safety
/// `payload` must point to `len` readable bytes; it may be NULL when `len` is 0.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_write_record(100, [1u8, 2].as_ptr(), 2) }, TYPHON_OK);
/// assert_eq!(unsafe { typhon_write_record(1, [1u8].as_ptr(), 1) }, TYPHON_ERR_INVALID);
/// assert_eq!(unsafe { typhon_write_record(100, std::ptr::null(), 0) }, TYPHON_OK);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_write_record(kind: u8, payload: *const u8, len: usize) -> i32 {
    guarded("typhon_write_record", || {
        // SAFETY: the caller's contract for (payload, len).
        let p = try_code!(unsafe { bytes(payload, len, true) }.map_err(refused_args));
        result(typhon_recorder::write_record(TraceEventKind(kind), p, None))
    })
}

/// [`typhon_write_record`] at `ts` (raw ticks).
///
/// # Safety
/// As [`typhon_write_record`].
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(unsafe { typhon_write_record_at(typhon_now(), 100, [1u8].as_ptr(), 1) }, TYPHON_OK);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_write_record_at(
    ts: u64,
    kind: u8,
    payload: *const u8,
    len: usize,
) -> i32 {
    guarded("typhon_write_record_at", || {
        // SAFETY: the caller's contract for (payload, len).
        let p = try_code!(unsafe { bytes(payload, len, true) }.map_err(refused_args));
        result(typhon_recorder::write_record(
            TraceEventKind(kind),
            p,
            Some(ts),
        ))
    })
}

/// Opens a span (begin/end without a guard) and stores its id in `*span_id`.
///
/// # Safety
/// `name` must point to `name_len` readable bytes; `span_id` to a writable `uint64_t`.
unsafe fn begin(
    func: &'static str,
    name: *const c_char,
    name_len: usize,
    ctx: Option<TraceContext>,
    at: Option<u64>,
    span_id: *mut u64,
) -> i32 {
    guarded(func, || {
        if span_id.is_null() {
            return refused_args(fail(TYPHON_ERR_NULL, "span_id is NULL"));
        }
        // SAFETY: non-null; the caller guarantees a writable, aligned u64.
        unsafe { span_id.write(0) };
        // SAFETY: the caller's contract for (name, name_len).
        let n = try_code!(unsafe { self::name(name, name_len) }.map_err(refused_args));
        // A name with a NUL is refused whether or not a recorder runs (`span_begin` checks
        // it first), so hosts see the same error either way.
        match typhon_recorder::span_begin(n, ctx, at) {
            Ok(id) => {
                // SAFETY: as above.
                unsafe { span_id.write(id) };
                TYPHON_OK
            }
            Err(e) => write_error(e),
        }
    })
}

/// Opens a NamedSpan called `name` (`name_len` bytes of UTF-8, no NUL inside) and stores its id
/// in `*span_id` (0 when nothing is recorded: no recorder, filtered, no slot). End it with
/// [`typhon_span_end`] on the same thread, innermost first. Its parent is the thread's innermost
/// open span.
///
/// # Safety
/// `name` must point to `name_len` readable bytes; `span_id` must point to a writable
/// `uint64_t` (NULL gives [`TYPHON_ERR_NULL`]).
///
/// ```
/// use typhon_ffi::*;
/// let mut id = 1;
/// assert_eq!(unsafe { typhon_span_begin(b"load".as_ptr().cast(), 4, &mut id) }, TYPHON_OK);
/// assert_eq!(typhon_span_end(id), TYPHON_OK);
/// assert_eq!(unsafe { typhon_span_begin(b"a\0b".as_ptr().cast(), 3, &mut id) }, TYPHON_ERR_INVALID);
/// // NULL with length 0 is the empty name; NULL with a length is not a name.
/// assert_eq!(unsafe { typhon_span_begin(std::ptr::null(), 0, &mut id) }, TYPHON_OK);
/// assert_eq!(typhon_span_end(id), TYPHON_OK);
/// assert_eq!(unsafe { typhon_span_begin(std::ptr::null(), 1, &mut id) }, TYPHON_ERR_NULL);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_span_begin(
    name: *const c_char,
    name_len: usize,
    span_id: *mut u64,
) -> i32 {
    // SAFETY: forwarded caller contract.
    unsafe { begin("typhon_span_begin", name, name_len, None, None, span_id) }
}

/// [`typhon_span_begin`] starting at `ts` (raw ticks).
///
/// # Safety
/// As [`typhon_span_begin`].
///
/// ```
/// use typhon_ffi::*;
/// let mut id = 0;
/// assert_eq!(unsafe { typhon_span_begin_at(typhon_now(), b"x".as_ptr().cast(), 1, &mut id) }, 0);
/// assert_eq!(typhon_span_end_at(id, typhon_now()), 0);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_span_begin_at(
    ts: u64,
    name: *const c_char,
    name_len: usize,
    span_id: *mut u64,
) -> i32 {
    // SAFETY: forwarded caller contract.
    unsafe {
        begin(
            "typhon_span_begin_at",
            name,
            name_len,
            None,
            Some(ts),
            span_id,
        )
    }
}

/// Opens a TracedSpan carrying the trace context `(trace_hi, trace_lo)`: a W3C trace id (hi =
/// its first 8 bytes as a little-endian u64, lo = the last 8) or a command's causal id from
/// [`typhon_command_causal_id`]. Otherwise as [`typhon_span_begin`].
///
/// # Safety
/// As [`typhon_span_begin`].
///
/// ```
/// use typhon_ffi::*;
/// let mut id = 0;
/// assert_eq!(unsafe { typhon_traced_span_begin(b"apply".as_ptr().cast(), 5, 1, 2, &mut id) }, 0);
/// assert_eq!(typhon_span_end(id), 0);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_traced_span_begin(
    name: *const c_char,
    name_len: usize,
    trace_hi: u64,
    trace_lo: u64,
    span_id: *mut u64,
) -> i32 {
    let ctx = TraceContext {
        hi: trace_hi,
        lo: trace_lo,
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        begin(
            "typhon_traced_span_begin",
            name,
            name_len,
            Some(ctx),
            None,
            span_id,
        )
    }
}

/// [`typhon_traced_span_begin`] starting at `ts` (raw ticks).
///
/// # Safety
/// As [`typhon_span_begin`].
///
/// ```
/// use typhon_ffi::*;
/// let mut id = 0;
/// let r = unsafe { typhon_traced_span_begin_at(typhon_now(), b"a".as_ptr().cast(), 1, 1, 2, &mut id) };
/// assert_eq!(r, 0);
/// assert_eq!(typhon_span_end(id), 0);
/// ```
#[no_mangle]
pub unsafe extern "C" fn typhon_traced_span_begin_at(
    ts: u64,
    name: *const c_char,
    name_len: usize,
    trace_hi: u64,
    trace_lo: u64,
    span_id: *mut u64,
) -> i32 {
    let ctx = TraceContext {
        hi: trace_hi,
        lo: trace_lo,
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        begin(
            "typhon_traced_span_begin_at",
            name,
            name_len,
            Some(ctx),
            Some(ts),
            span_id,
        )
    }
}

/// Ends span `span_id` (from a `typhon_*span_begin*` call on this thread) now and writes its
/// record. It must be the thread's innermost open span, else [`TYPHON_ERR_SPAN_MISMATCH`] and
/// nothing ends. `span_id` 0 is a no-op.
///
/// ```
/// use typhon_ffi::*;
/// assert_eq!(typhon_span_end(0), TYPHON_OK);
/// assert_eq!(typhon_span_end(42), TYPHON_ERR_SPAN_MISMATCH);
/// ```
#[no_mangle]
pub extern "C" fn typhon_span_end(span_id: u64) -> i32 {
    guarded("typhon_span_end", || {
        result(typhon_recorder::span_end(span_id, None))
    })
}

/// [`typhon_span_end`] at `ts` (raw ticks).
///
/// ```
/// assert_eq!(typhon_ffi::typhon_span_end_at(0, 5), 0);
/// ```
#[no_mangle]
pub extern "C" fn typhon_span_end_at(span_id: u64, ts: u64) -> i32 {
    guarded("typhon_span_end_at", || {
        result(typhon_recorder::span_end(span_id, Some(ts)))
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

//! The error codes every `int32_t` function returns, and the calling thread's last error
//! message that explains them.
//!
//! A failure is reported twice: as a code the host can branch on, and as text the host can log
//! ([`typhon_last_error_message`]), kept per thread like `errno`. Only failing calls write the
//! text ([`fail`], then [`name_failure`] when the C function returns), so a call that succeeds
//! touches no thread-local for it.

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::fmt;
use std::panic::catch_unwind;
use typhon_recorder::{RecorderError, WriteError};

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
/// `typhon_register_thread`, `typhon_snapshot`, `typhon_request_snapshot`: no recorder was
/// started with `typhon_start` or `typhon_start_ex`.
pub const TYPHON_ERR_NOT_STARTED: i32 = -5;
/// An I/O error creating or writing the output file.
pub const TYPHON_ERR_IO: i32 = -6;
/// The record does not fit in one page (size > page size − 24; a larger page size records it),
/// or is larger than any record can be (65534 bytes). For a span, reported when it begins; also
/// for a span begun while its thread has 64 spans open, or 4096 bytes of their names (the
/// recorder's fixed room for open spans; nothing is opened, and it is counted as refused).
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
/// A size-prefixed struct (`TyphonConfigEx`, `TyphonSnapshot`) has a `size` this library
/// refuses: smaller than the struct's first version, not at a field boundary, over 4096, or
/// larger than this library's struct with a non-zero byte past its end (a field of a newer
/// header this library does not know, so cannot honour). The message gives both sizes.
pub const TYPHON_ERR_STRUCT_SIZE: i32 = -13;
/// `typhon_snapshot`, `typhon_request_snapshot`: the running recorder keeps no window (start
/// it with `typhon_start_ex` and `window_ns` or `window_bytes`).
pub const TYPHON_ERR_NOT_WINDOWED: i32 = -14;
/// `typhon_snapshot`: the snapshot was written, but its path (and the NUL) does not fit in
/// `path_cap` bytes; `info->path_len` has its length and the error message the path.
pub const TYPHON_ERR_BUFFER: i32 = -15;
/// `typhon_request_snapshot`: a snapshot is already pending or being written (at most one is
/// in flight); this request was not placed.
pub const TYPHON_ERR_BUSY: i32 = -16;

/// The calling thread's last error message, and whether the failing call now returning set it
/// (see [`fail`] and [`name_failure`]).
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
pub(crate) fn fail(code: i32, msg: impl fmt::Display) -> i32 {
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
pub(crate) fn name_failure(func: &str, code: i32) {
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
pub(crate) fn describe(code: i32) -> &'static str {
    match code {
        TYPHON_ERR_NULL => "a required pointer argument is NULL",
        TYPHON_ERR_UTF8 => "a name or path is not valid UTF-8",
        TYPHON_ERR_CONFIG => "a configuration value is out of range",
        TYPHON_ERR_ALREADY_STARTED => "a recorder is already running in this process",
        TYPHON_ERR_NOT_STARTED => {
            "no recorder is running (typhon_start or typhon_start_ex was not called, \
             or typhon_finish already stopped it)"
        }
        TYPHON_ERR_IO => "an I/O error on the output",
        TYPHON_ERR_TOO_LARGE => "the record is too large",
        TYPHON_ERR_INVALID => "malformed input",
        TYPHON_ERR_SPAN_MISMATCH => "the span is not this thread's innermost open span",
        TYPHON_ERR_PANIC => "the recorder panicked inside the call",
        TYPHON_ERR_FLUSHER => "the flusher thread panicked; the recording may be incomplete",
        TYPHON_ERR_NO_SLOT => "all 255 thread slots are taken",
        TYPHON_ERR_STRUCT_SIZE => "a size-prefixed struct's size is refused",
        TYPHON_ERR_NOT_WINDOWED => "the recorder keeps no window",
        TYPHON_ERR_BUFFER => "the output buffer is too small",
        TYPHON_ERR_BUSY => "a snapshot is already pending or being written",
        _ => "unknown error",
    }
}

#[cold]
pub(crate) fn write_error(e: WriteError) -> i32 {
    let code = match e {
        WriteError::TooLarge { .. } | WriteError::SpanStackFull { .. } => TYPHON_ERR_TOO_LARGE,
        WriteError::Invalid(_) => TYPHON_ERR_INVALID,
        WriteError::SpanMismatch { .. } => TYPHON_ERR_SPAN_MISMATCH,
    };
    fail(code, e)
}

#[inline(always)]
pub(crate) fn result(r: Result<(), WriteError>) -> i32 {
    match r {
        Ok(()) => TYPHON_OK,
        Err(e) => write_error(e),
    }
}

#[cold]
pub(crate) fn recorder_error(e: &RecorderError) -> i32 {
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
        TYPHON_ERR_STRUCT_SIZE => "TYPHON_ERR_STRUCT_SIZE\0",
        TYPHON_ERR_NOT_WINDOWED => "TYPHON_ERR_NOT_WINDOWED\0",
        TYPHON_ERR_BUFFER => "TYPHON_ERR_BUFFER\0",
        TYPHON_ERR_BUSY => "TYPHON_ERR_BUSY\0",
        _ => "TYPHON_ERR_UNKNOWN\0",
    };
    s.as_ptr().cast()
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

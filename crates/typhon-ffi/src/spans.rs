//! Spans without a guard: `typhon_*span_begin*` opens one and hands back its id,
//! `typhon_span_end*` closes it, innermost first on the thread that opened it.
//!
//! The thread's stack of open spans lives in the Rust API (`typhon_recorder::span_begin` /
//! `span_end`); this module checks the name and the out-pointer, and a name with a NUL is
//! refused whether or not a recorder runs, so hosts see the same error either way.

use crate::error::*;
use crate::guard::{self, guarded, refused_args, try_code};
use std::ffi::c_char;
use typhon_recorder::TraceContext;
// For the docs' link (and the header's comment) to it.
#[cfg(doc)]
use crate::writes::typhon_command_causal_id;

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
        let n = try_code!(unsafe { guard::name(name, name_len) }.map_err(refused_args));
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

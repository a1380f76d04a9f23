//! How a C function's body runs: under a panic guard that turns a panic into
//! [`TYPHON_ERR_PANIC`], with its pointer arguments borrowed and its results stored through the
//! checks of the crate's pointer contracts.
//!
//! Every `typhon_*` function that returns a code goes through [`guarded`], so that no panic
//! unwinds into a C, C++ or C# caller and every failure leaves its message for
//! [`typhon_last_error_message`](crate::typhon_last_error_message).

use crate::error::*;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f` (the body of the C function `func`), turning a panic into [`TYPHON_ERR_PANIC`]; a
/// failure leaves its message for [`typhon_last_error_message`].
#[inline(always)]
pub(crate) fn guarded(func: &'static str, f: impl FnOnce() -> i32) -> i32 {
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
pub(crate) fn refused_args(code: i32) -> i32 {
    typhon_recorder::probe::count_refused();
    code
}

/// Runs a write that cannot fail.
#[inline(always)]
pub(crate) fn write(func: &'static str, f: impl FnOnce()) -> i32 {
    guarded(func, || {
        f();
        TYPHON_OK
    })
}

/// Borrows `len` bytes at `ptr`. NULL is an error unless `null_if_empty` and `len == 0`.
///
/// # Safety
/// If `ptr` is not NULL, it must point to `len` readable bytes that stay valid and unmodified
/// for `'a` (the duration of the FFI call).
pub(crate) unsafe fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    null_if_empty: bool,
) -> Result<&'a [u8], i32> {
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
pub(crate) unsafe fn name<'a>(ptr: *const c_char, len: usize) -> Result<&'a str, i32> {
    // SAFETY: forwarded contract of this function (same pointer, same length).
    let b = unsafe { bytes(ptr.cast(), len, true) }?;
    std::str::from_utf8(b)
        .map_err(|e| fail(TYPHON_ERR_UTF8, format_args!("the name is not UTF-8: {e}")))
}

/// Stores `v` through an out-pointer.
///
/// # Safety
/// `out` must be NULL or point to writable, aligned storage for a `T`.
pub(crate) unsafe fn store<T>(out: *mut T, v: T) -> i32 {
    if out.is_null() {
        return fail(TYPHON_ERR_NULL, "the out-pointer is NULL");
    }
    // SAFETY: non-null, and the caller guarantees it is writable and aligned for T.
    unsafe { out.write(v) };
    TYPHON_OK
}

/// Returns the error code of an `Err` from the enclosing function; unwraps an `Ok`.
macro_rules! try_code {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(code) => return code,
        }
    };
}
pub(crate) use try_code;

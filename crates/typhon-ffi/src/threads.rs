//! The calling thread's identity in the recording: its name and kind for the ThreadInfo
//! record, and claiming its slot ahead of its first event.

use crate::error::*;
use crate::guard::{self, guarded, try_code};
use crate::lifecycle::RECORDER;
use std::ffi::c_char;
use typhon_recorder::ThreadKind;

/// Thread kind for `typhon_set_thread_info`: the main (game loop) thread.
pub const TYPHON_THREAD_MAIN: u8 = 0;
/// Thread kind: a dedicated worker thread.
pub const TYPHON_THREAD_WORKER: u8 = 1;
/// Thread kind: a thread of a pool.
pub const TYPHON_THREAD_POOL: u8 = 2;
/// Thread kind: any other thread.
pub const TYPHON_THREAD_OTHER: u8 = 3;

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
        let n = try_code!(unsafe { guard::name(name, name_len) });
        typhon_recorder::set_thread_info(n, ThreadKind::from_u8(kind));
        TYPHON_OK
    })
}

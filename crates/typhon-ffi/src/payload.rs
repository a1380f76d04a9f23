//! The writes whose payload is the caller's bytes: CeLog events (with the CeLog zone filter)
//! and records of any kind.
//!
//! The bytes are borrowed for the call and copied into the ring; arguments the ABI layer
//! refuses (NULL with a length, a length above `PTRDIFF_MAX`) are counted as refused, as the
//! Rust API counts the payloads it refuses itself.

use crate::error::*;
use crate::guard::{bytes, guarded, refused_args, try_code, write};
use std::ffi::c_void;
use typhon_recorder::codec::TraceEventKind;

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

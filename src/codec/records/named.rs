//! Encoders of the instants and phases that carry their names: NamedInstant (i32 payload, then
//! the name) and NamedPhaseStart / NamedPhaseEnd (u8 phase, then the name). The name is the
//! record's last field, NUL-terminated, as a NamedSpan's.

use super::{has_nul, reserve};
use crate::codec::kinds::{min_size, off};
use crate::codec::{header, put_u32, EncodeError, TraceEventKind as K};

const INSTANT_PAYLOAD: usize = off(K::NAMED_INSTANT, "payload");
const INSTANT_NAME: usize = off(K::NAMED_INSTANT, "name");
const PHASE: usize = off(K::NAMED_PHASE_START, "phase");
const PHASE_NAME: usize = off(K::NAMED_PHASE_START, "name");

// The name ends each record; the two phase kinds share one layout.
const _: () = {
    assert!(min_size(K::NAMED_INSTANT) == INSTANT_NAME + 1);
    assert!(min_size(K::NAMED_PHASE_START) == PHASE_NAME + 1);
    assert!(PHASE == off(K::NAMED_PHASE_END, "phase"));
    assert!(PHASE_NAME == off(K::NAMED_PHASE_END, "name"));
    assert!(min_size(K::NAMED_PHASE_END) == PHASE_NAME + 1);
};

/// Size of a NamedInstant record: `17 + name.len()`.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::named_instant_len("hit"), 20);
/// ```
#[inline]
pub const fn named_instant_len(name: &str) -> usize {
    INSTANT_NAME + name.len() + 1
}

/// Size of a NamedPhaseStart or NamedPhaseEnd record: `14 + name.len()`.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::named_phase_len("physics"), 21);
/// ```
#[inline]
pub const fn named_phase_len(name: &str) -> usize {
    PHASE_NAME + name.len() + 1
}

/// The checks every named record makes of its name.
fn check(size: usize, name: &str) -> Result<(), EncodeError> {
    if has_nul(name.as_bytes()) {
        return Err(EncodeError::NameHasNul);
    }
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    Ok(())
}

/// Writes a NamedInstant record.
///
/// # Errors
/// [`EncodeError::NameHasNul`], [`EncodeError::RecordTooLarge`] (over 65534 bytes),
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 32];
/// let n = write_named_instant(&mut d, 1, 5, 42, "hit").unwrap();
/// assert_eq!(decode(&d[..n]).unwrap().1, Record::NamedInstant { payload: 42, name: "hit" });
/// ```
pub fn write_named_instant(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    payload: i32,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = named_instant_len(name);
    check(size, name)?;
    let d = reserve(d, size)?;
    header(d, size, K::NAMED_INSTANT, slot, ts);
    put_u32(d, INSTANT_PAYLOAD, payload as u32);
    d[INSTANT_NAME..size - 1].copy_from_slice(name.as_bytes());
    d[size - 1] = 0;
    Ok(size)
}

/// Writes a NamedPhaseStart (`start`) or NamedPhaseEnd record.
///
/// # Errors
/// As [`write_named_instant`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 32];
/// let n = write_named_phase(&mut d, 1, 5, true, 2, "physics").unwrap();
/// assert_eq!(decode(&d[..n]).unwrap().1, Record::NamedPhaseStart { phase: 2, name: "physics" });
/// ```
pub fn write_named_phase(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    start: bool,
    phase: u8,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = named_phase_len(name);
    check(size, name)?;
    let d = reserve(d, size)?;
    let kind = if start {
        K::NAMED_PHASE_START
    } else {
        K::NAMED_PHASE_END
    };
    header(d, size, kind, slot, ts);
    d[PHASE] = phase;
    d[PHASE_NAME..size - 1].copy_from_slice(name.as_bytes());
    d[size - 1] = 0;
    Ok(size)
}

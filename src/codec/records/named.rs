//! Encoders of the instants and phases that carry their names: NamedInstant (i32 payload, then
//! the name) and NamedPhaseStart / NamedPhaseEnd (u8 phase, then the name). The name is the
//! record's last field, NUL-terminated, as a NamedSpan's.

use super::{has_nul, reserve, span_ext, SpanExt};
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

// ---- static names: a definition per slot, and the records that carry its id (SPEC §15) ----

const DEF_ID: usize = off(K::NAME_DEFINITION, "name_id");
const DEF_NAME: usize = off(K::NAME_DEFINITION, "name");
const SPAN_ID_NAME: usize = off(K::NAMED_SPAN_ID, "name_id");
/// Size of a NamedSpanId record (41 bytes).
pub const NAMED_SPAN_ID_SIZE: usize = min_size(K::NAMED_SPAN_ID);
const INSTANT_ID_PAYLOAD: usize = off(K::NAMED_INSTANT_ID, "payload");
const INSTANT_ID_NAME: usize = off(K::NAMED_INSTANT_ID, "name_id");
/// Size of a NamedInstantId record (20 bytes).
pub const NAMED_INSTANT_ID_SIZE: usize = min_size(K::NAMED_INSTANT_ID);
const PHASE_ID: usize = off(K::NAMED_PHASE_START_ID, "phase");
const PHASE_ID_NAME: usize = off(K::NAMED_PHASE_START_ID, "name_id");
/// Size of a NamedPhaseStartId or NamedPhaseEndId record (17 bytes).
pub const NAMED_PHASE_ID_SIZE: usize = min_size(K::NAMED_PHASE_START_ID);

const _: () = {
    assert!(min_size(K::NAME_DEFINITION) == DEF_NAME + 1);
    // Each id form is its inline kind with the id in the name's place.
    assert!(SPAN_ID_NAME == off(K::NAMED_SPAN, "name"));
    assert!(NAMED_SPAN_ID_SIZE == SPAN_ID_NAME + 4);
    assert!(INSTANT_ID_PAYLOAD == INSTANT_PAYLOAD && INSTANT_ID_NAME == INSTANT_NAME);
    assert!(PHASE_ID == PHASE && PHASE_ID_NAME == PHASE_NAME);
    assert!(PHASE_ID == off(K::NAMED_PHASE_END_ID, "phase"));
    assert!(PHASE_ID_NAME == off(K::NAMED_PHASE_END_ID, "name_id"));
    assert!(NAMED_PHASE_ID_SIZE == min_size(K::NAMED_PHASE_END_ID));
};

/// Size of a NameDefinition record: `17 + name.len()`.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::name_definition_len("frame"), 22);
/// ```
#[inline]
pub const fn name_definition_len(name: &str) -> usize {
    DEF_NAME + name.len() + 1
}

/// Writes a NameDefinition record: `name_id` stands for `name` in this slot's records.
///
/// # Errors
/// As [`write_named_instant`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 32];
/// let n = write_name_definition(&mut d, 1, 5, 3, "frame").unwrap();
/// assert_eq!(decode(&d[..n]).unwrap().1, Record::NameDefinition { name_id: 3, name: "frame" });
/// ```
pub fn write_name_definition(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    name_id: u32,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = name_definition_len(name);
    check(size, name)?;
    let d = reserve(d, size)?;
    fill_name_definition(d, slot, ts, name_id, name);
    Ok(size)
}

/// Fills `d` (exactly [`name_definition_len`] bytes) with a NameDefinition whose name the
/// caller has checked.
#[inline]
pub(crate) fn fill_name_definition(d: &mut [u8], slot: u8, ts: i64, name_id: u32, name: &str) {
    let size = d.len();
    header(d, size, K::NAME_DEFINITION, slot, ts);
    put_u32(d, DEF_ID, name_id);
    d[DEF_NAME..size - 1].copy_from_slice(name.as_bytes());
    d[size - 1] = 0;
}

/// Writes a NamedSpanId record (41 bytes): a NamedSpan named by the slot's definition
/// `name_id`; `ts` is the span start.
///
/// # Errors
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 41];
/// let span = SpanExt { duration_ns: 1, span_id: 2, parent_span_id: 3 };
/// assert_eq!(write_named_span_id(&mut d, 1, 5, &span, 7), Ok(NAMED_SPAN_ID_SIZE));
/// assert_eq!(decode(&d).unwrap().1, Record::NamedSpanId { span, name_id: 7 });
/// ```
pub fn write_named_span_id(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    name_id: u32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, NAMED_SPAN_ID_SIZE)?;
    let d: &mut [u8; NAMED_SPAN_ID_SIZE] = d.try_into().expect("reserved its length");
    fill_named_span_id(d, slot, ts, span, name_id);
    Ok(NAMED_SPAN_ID_SIZE)
}

/// Fills a NamedSpanId record (the recorder's span end).
#[inline(always)]
pub(crate) fn fill_named_span_id(
    d: &mut [u8; NAMED_SPAN_ID_SIZE],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    name_id: u32,
) {
    header(d, NAMED_SPAN_ID_SIZE, K::NAMED_SPAN_ID, slot, ts);
    span_ext(d, span, 0);
    put_u32(d, SPAN_ID_NAME, name_id);
}

/// Writes a NamedInstantId record (20 bytes).
///
/// # Errors
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 20];
/// assert_eq!(write_named_instant_id(&mut d, 1, 5, -2, 7), Ok(20));
/// assert_eq!(decode(&d).unwrap().1, Record::NamedInstantId { payload: -2, name_id: 7 });
/// ```
pub fn write_named_instant_id(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    payload: i32,
    name_id: u32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, NAMED_INSTANT_ID_SIZE)?;
    header(d, NAMED_INSTANT_ID_SIZE, K::NAMED_INSTANT_ID, slot, ts);
    put_u32(d, INSTANT_ID_PAYLOAD, payload as u32);
    put_u32(d, INSTANT_ID_NAME, name_id);
    Ok(NAMED_INSTANT_ID_SIZE)
}

/// Writes a NamedPhaseStartId (`start`) or NamedPhaseEndId record (17 bytes).
///
/// # Errors
/// [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 17];
/// assert_eq!(write_named_phase_id(&mut d, 1, 5, false, 2, 7), Ok(17));
/// assert_eq!(decode(&d).unwrap().1, Record::NamedPhaseEndId { phase: 2, name_id: 7 });
/// ```
pub fn write_named_phase_id(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    start: bool,
    phase: u8,
    name_id: u32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, NAMED_PHASE_ID_SIZE)?;
    let kind = if start {
        K::NAMED_PHASE_START_ID
    } else {
        K::NAMED_PHASE_END_ID
    };
    header(d, NAMED_PHASE_ID_SIZE, kind, slot, ts);
    d[PHASE_ID] = phase;
    put_u32(d, PHASE_ID_NAME, name_id);
    Ok(NAMED_PHASE_ID_SIZE)
}

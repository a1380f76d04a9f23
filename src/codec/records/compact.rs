//! Compact forms of four `tracing` records: TracingEntryShort (221),
//! TracingSpanPacked (222), TracingEventPacked (223) and TracingCloseShort (224), each standing
//! for the record of its full kind (TracingEntry, TracingSpanValues, TracingEventValues,
//! TracingClose) with the same slot and time. [`super::decode`] gives a compact record as the
//! full kind's [`Record`], and [`expand`] gives its bytes, so readers see only full kinds.
//!
//! The short kinds hold 32-bit fields where the full ones hold 64 (a writer falls back to the
//! full kind for a key or a duration that does not fit); the packed kinds hold their ids as
//! varints (LEB128, as the values' numbers), which trace-cmd prints as bytes: a span's key,
//! its parent ([`parent_code`]: 0 for a root, else how many keys before its own), its
//! callsite, then the values exactly as the full kind holds them.
//!
//! ```
//! use typhon_recorder::codec::records::*;
//! let mut d = [0u8; 32];
//! let n = write_tracing_span_packed(&mut d, 1, 7, 300, 298, 4, &[0, 4, 1]).unwrap();
//! assert_eq!(n, 12 + 2 + 1 + 1 + 3);
//! assert_eq!(decode(&d[..n]).unwrap().1,
//!     Record::TracingSpanValues { key: 300, parent_key: 298, callsite: 4, values: &[0, 4, 1] });
//! let full = expand(&d[..n]).unwrap();
//! assert_eq!(full[2], 252); // a TracingSpanValues, as if written so
//! ```

use super::values::{fill_varint, take_varint, varint_len};
use super::{reserve, Record};
use crate::codec::kinds::{const_off, min_size};
use crate::codec::{header, put_u32, DecodeError, EncodeError, TraceEventKind as K};

/// Size of a TracingEntryShort record (kind 221): 20 bytes, 24 on disk.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::TRACING_ENTRY_SHORT_SIZE, 20);
/// ```
pub const TRACING_ENTRY_SHORT_SIZE: usize = min_size(K::TRACING_ENTRY_SHORT);
/// Size of a TracingCloseShort record (kind 224): 16 bytes, 20 on disk.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::TRACING_CLOSE_SHORT_SIZE, 16);
/// ```
pub const TRACING_CLOSE_SHORT_SIZE: usize = min_size(K::TRACING_CLOSE_SHORT);
/// Most bytes the ids of a packed record take: two u64 varints and a u32 one.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::PACKED_IDS_MAX, 25);
/// ```
pub const PACKED_IDS_MAX: usize = 10 + 10 + 5;

/// Writes a TracingEntryShort: one entry of span `key` from `ts` for `duration_ns`.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`TRACING_ENTRY_SHORT_SIZE`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 20];
/// write_tracing_entry_short(&mut d, 1, 100, 5, 9).unwrap();
/// assert_eq!(decode(&d).unwrap().1, Record::TracingEntry { duration_ns: 5, key: 9 });
/// ```
pub fn write_tracing_entry_short(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    duration_ns: u32,
    key: u32,
) -> Result<usize, EncodeError> {
    let have = d.len();
    let d: &mut [u8; TRACING_ENTRY_SHORT_SIZE] = d
        .get_mut(..TRACING_ENTRY_SHORT_SIZE)
        .and_then(|d| d.try_into().ok())
        .ok_or(EncodeError::DstTooSmall {
            need: TRACING_ENTRY_SHORT_SIZE,
            have,
        })?;
    fill_tracing_entry_short(d, slot, ts, duration_ns, key);
    Ok(TRACING_ENTRY_SHORT_SIZE)
}

/// [`write_tracing_entry_short`] into exactly its 20 bytes: the span end's path.
#[inline(always)]
pub(crate) fn fill_tracing_entry_short(
    d: &mut [u8; TRACING_ENTRY_SHORT_SIZE],
    slot: u8,
    ts: i64,
    duration: u32,
    key: u32,
) {
    header(
        d,
        TRACING_ENTRY_SHORT_SIZE,
        K::TRACING_ENTRY_SHORT,
        slot,
        ts,
    );
    put_u32(
        d,
        const_off!(K::TRACING_ENTRY_SHORT, "duration_ns"),
        duration,
    );
    put_u32(d, const_off!(K::TRACING_ENTRY_SHORT, "key"), key);
}

/// Writes a TracingCloseShort: span `key` closed at `ts`.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`TRACING_CLOSE_SHORT_SIZE`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 16];
/// write_tracing_close_short(&mut d, 1, 100, 9).unwrap();
/// assert_eq!(decode(&d).unwrap().1, Record::TracingClose { key: 9 });
/// ```
pub fn write_tracing_close_short(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, TRACING_CLOSE_SHORT_SIZE)?;
    header(
        d,
        TRACING_CLOSE_SHORT_SIZE,
        K::TRACING_CLOSE_SHORT,
        slot,
        ts,
    );
    put_u32(d, const_off!(K::TRACING_CLOSE_SHORT, "key"), key);
    Ok(TRACING_CLOSE_SHORT_SIZE)
}

/// How a packed description holds its parent: 0 for a root (`parent_key` 0), `key -
/// parent_key` otherwise (a parent is created before its child, so its key is a little
/// smaller), and `key` itself for a span named as its own parent, the one value the difference
/// cannot give (it would be a root's). Every pair of keys has its code, so a packed
/// description never falls back.
///
/// ```
/// use typhon_recorder::codec::records::{parent_code, parent_from_code};
/// assert_eq!(parent_code(300, 0), 0);
/// assert_eq!(parent_code(300, 298), 2);
/// for (k, p) in [(300, 0), (300, 298), (300, 300), (5, 9), (u64::MAX, 1), (0, 0)] {
///     assert_eq!(parent_from_code(k, parent_code(k, p)), p);
/// }
/// ```
pub const fn parent_code(key: u64, parent_key: u64) -> u64 {
    if parent_key == 0 {
        0
    } else if parent_key == key {
        key
    } else {
        key.wrapping_sub(parent_key)
    }
}

/// The parent key that [`parent_code`] `code` of span `key` stands for.
pub const fn parent_from_code(key: u64, code: u64) -> u64 {
    if code == 0 {
        0
    } else if code == key {
        key
    } else {
        key.wrapping_sub(code)
    }
}

/// Writes the ids of a packed description into `out`; returns their length.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut ids = [0u8; PACKED_IDS_MAX];
/// assert_eq!(pack_span_ids(300, 298, 4, &mut ids), 4);
/// assert_eq!(ids[..4], [0xAC, 0x02, 2, 4]);
/// ```
#[inline]
pub fn pack_span_ids(
    key: u64,
    parent_key: u64,
    callsite: u32,
    out: &mut [u8; PACKED_IDS_MAX],
) -> usize {
    let mut n = fill_varint(out, key);
    n += fill_varint(&mut out[n..], parent_code(key, parent_key));
    n + fill_varint(&mut out[n..], u64::from(callsite))
}

/// Writes the ids of a packed event into `out`; returns their length.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut ids = [0u8; PACKED_IDS_MAX];
/// assert_eq!(pack_event_ids(0, 200, &mut ids), 3);
/// assert_eq!(ids[..3], [0, 0xC8, 0x01]);
/// ```
#[inline]
pub fn pack_event_ids(span_key: u64, callsite: u32, out: &mut [u8; PACKED_IDS_MAX]) -> usize {
    let n = fill_varint(out, span_key);
    n + fill_varint(&mut out[n..], u64::from(callsite))
}

/// Size of a TracingSpanPacked record.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::tracing_span_packed_len(300, 298, 4, 3), 19);
/// ```
pub const fn tracing_span_packed_len(
    key: u64,
    parent_key: u64,
    callsite: u32,
    values: usize,
) -> usize {
    12 + varint_len(key)
        + varint_len(parent_code(key, parent_key))
        + varint_len(callsite as u64)
        + values
}

/// Size of a TracingEventPacked record.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::tracing_event_packed_len(0, 4, 0), 14);
/// ```
pub const fn tracing_event_packed_len(span_key: u64, callsite: u32, values: usize) -> usize {
    12 + varint_len(span_key) + varint_len(callsite as u64) + values
}

/// Writes a packed record of `kind`: header, `ids`, `values`.
fn write_packed(
    d: &mut [u8],
    kind: K,
    slot: u8,
    ts: i64,
    ids: &[u8],
    values: &[u8],
) -> Result<usize, EncodeError> {
    let size = 12 + ids.len() + values.len();
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    let d = reserve(d, size)?;
    fill_packed_head(d, kind, slot, ts, ids);
    d[12 + ids.len()..].copy_from_slice(values);
    Ok(size)
}

/// The header (sized `d.len()`) and `ids` of a packed record of `kind` into `d`; its values
/// go after them.
pub(crate) fn fill_packed_head(d: &mut [u8], kind: K, slot: u8, ts: i64, ids: &[u8]) {
    let size = d.len();
    header(d, size, kind, slot, ts);
    d[12..12 + ids.len()].copy_from_slice(ids);
}

/// Writes a TracingSpanPacked: the description of span `key` (child of `parent_key`, 0 for a
/// root) of callsite `callsite`, with its typed `values` ([`super::Values`]).
///
/// # Errors
/// [`EncodeError::RecordTooLarge`] past 65534 bytes, [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 64];
/// let n = write_tracing_span_packed(&mut d, 1, 0, 9, 0, 4, &[]).unwrap();
/// assert_eq!(n, 15);
/// ```
pub fn write_tracing_span_packed(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    parent_key: u64,
    callsite: u32,
    values: &[u8],
) -> Result<usize, EncodeError> {
    let mut ids = [0u8; PACKED_IDS_MAX];
    let n = pack_span_ids(key, parent_key, callsite, &mut ids);
    write_packed(d, K::TRACING_SPAN_PACKED, slot, ts, &ids[..n], values)
}

/// Writes a TracingEventPacked: an event of callsite `callsite` inside span `span_key` (0:
/// none), with its typed `values`.
///
/// # Errors
/// As [`write_tracing_span_packed`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 64];
/// let n = write_tracing_event_packed(&mut d, 1, 0, 9, 4, &[]).unwrap();
/// assert_eq!(decode(&d[..n]).unwrap().1,
///     Record::TracingEventValues { span_key: 9, callsite: 4, values: &[] });
/// ```
pub fn write_tracing_event_packed(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    callsite: u32,
    values: &[u8],
) -> Result<usize, EncodeError> {
    let mut ids = [0u8; PACKED_IDS_MAX];
    let n = pack_event_ids(span_key, callsite, &mut ids);
    write_packed(d, K::TRACING_EVENT_PACKED, slot, ts, &ids[..n], values)
}

/// A packed record's ids that do not read as varints (or a callsite past u32).
const BAD: DecodeError = DecodeError::BadField("packed");

/// The `packed` bytes of a TracingSpanPacked as the TracingSpanValues they stand for.
pub(super) fn decode_span_packed(packed: &[u8]) -> Result<Record<'_>, DecodeError> {
    let (key, rest) = take_varint(packed).ok_or(BAD)?;
    let (code, rest) = take_varint(rest).ok_or(BAD)?;
    let (callsite, values) = take_varint(rest).ok_or(BAD)?;
    Ok(Record::TracingSpanValues {
        key,
        parent_key: parent_from_code(key, code),
        callsite: u32::try_from(callsite).map_err(|_| BAD)?,
        values,
    })
}

/// The `packed` bytes of a TracingEventPacked as the TracingEventValues they stand for.
pub(super) fn decode_event_packed(packed: &[u8]) -> Result<Record<'_>, DecodeError> {
    let (span_key, rest) = take_varint(packed).ok_or(BAD)?;
    let (callsite, values) = take_varint(rest).ok_or(BAD)?;
    Ok(Record::TracingEventValues {
        span_key,
        callsite: u32::try_from(callsite).map_err(|_| BAD)?,
        values,
    })
}

/// Whether `kind` is one of the compact kinds.
///
/// ```
/// use typhon_recorder::codec::{records::is_compact, TraceEventKind as K};
/// assert!(is_compact(K::TRACING_SPAN_PACKED) && !is_compact(K::TRACING_SPAN_VALUES));
/// ```
pub const fn is_compact(kind: K) -> bool {
    matches!(
        kind,
        K::TRACING_ENTRY_SHORT
            | K::TRACING_SPAN_PACKED
            | K::TRACING_EVENT_PACKED
            | K::TRACING_CLOSE_SHORT
    )
}

/// The full kind that a compact `kind` stands for; any other kind as it is.
///
/// ```
/// use typhon_recorder::codec::{records::full_kind, TraceEventKind as K};
/// assert_eq!(full_kind(K::TRACING_ENTRY_SHORT), K::TRACING_ENTRY);
/// assert_eq!(full_kind(K::TICK_START), K::TICK_START);
/// ```
pub const fn full_kind(kind: K) -> K {
    match kind {
        K::TRACING_ENTRY_SHORT => K::TRACING_ENTRY,
        K::TRACING_SPAN_PACKED => K::TRACING_SPAN_VALUES,
        K::TRACING_EVENT_PACKED => K::TRACING_EVENT_VALUES,
        K::TRACING_CLOSE_SHORT => K::TRACING_CLOSE,
        k => k,
    }
}

/// A compact record (see the module) as the record of its full kind it stands for, same slot
/// and time, padded to 4 bytes as records are read; `None` for any other record, or one that
/// does not decode (readers report it as it is).
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 20];
/// write_tracing_entry_short(&mut d, 3, 100, 5, 9).unwrap();
/// let full = expand(&d).unwrap();
/// let mut want = [0u8; 28];
/// write_tracing_entry(&mut want, 3, 100, 5, 9).unwrap();
/// assert_eq!(full, want);
/// assert_eq!(expand(&want), None);
/// ```
pub fn expand(data: &[u8]) -> Option<Vec<u8>> {
    if !is_compact(K(*data.get(2)?)) {
        return None;
    }
    let (h, r) = super::decode(data).ok()?;
    // The full kind takes at most 12 bytes of ids more than the packed (u64 + u64 + u32 for
    // 3 one-byte varints): a packed record within 65522 bytes expands within a record. One
    // past that (its values fill the record) does not, and reads as it is.
    let mut out = vec![0u8; r.encoded_len().next_multiple_of(4)];
    let n = r.write(&mut out, h.slot, h.timestamp).ok()?;
    out.truncate(n.next_multiple_of(4));
    Some(out)
}

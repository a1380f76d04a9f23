//! Encoders of the records a `tracing` layer writes (SPEC §12): TracingSpan (one entry of a
//! span, laid out as a TracedSpan) and TracingEntry (one entry of a described span, compact),
//! TracingClose, TracingSpanInfo, TracingEvent and TracingFollows. The info
//! and event records carry their strings as the kernel's `__data_loc char[]` fields do, so
//! trace-cmd prints them.

use super::{fill_span, has_nul, reserve, SpanExt, TraceContext, TRACED_NAME};
use crate::codec::kinds::{const_off, min_size};
use crate::codec::{header, put_u32, put_u64, EncodeError, TraceEventKind as K};

const INFO_FIXED: usize = min_size(K::TRACING_SPAN_INFO) - 3;
const EVENT_FIXED: usize = min_size(K::TRACING_EVENT) - 3;
const FOLLOWS_SIZE: usize = min_size(K::TRACING_FOLLOWS);

/// `tracing`'s levels as a byte: 1 error, 2 warn, 3 info, 4 debug, 5 trace (0: unknown).
///
/// ```
/// use typhon_recorder::codec::records::level_name;
/// assert_eq!(level_name(3), "INFO");
/// assert_eq!(level_name(9), "?");
/// ```
pub const fn level_name(level: u8) -> &'static str {
    match level {
        1 => "ERROR",
        2 => "WARN",
        3 => "INFO",
        4 => "DEBUG",
        5 => "TRACE",
        _ => "?",
    }
}

/// Size of a TracingSpan record: `54 + name.len()`, as a TracedSpan.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::tracing_span_len("ab"), 56);
/// ```
#[inline]
pub const fn tracing_span_len(name: &str) -> usize {
    TRACED_NAME + name.len() + 1
}

/// Writes a TracingSpan record: one entry of the `tracing` span of recording-unique `key` and
/// `tracing` id `tracing_id`, displayed as `name`; `ts` is the entry's start.
///
/// # Errors
/// [`EncodeError::NameHasNul`], [`EncodeError::RecordTooLarge`], [`EncodeError::DstTooSmall`]
/// as [`write_traced_span`](super::write_traced_span).
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 80];
/// let span = SpanExt { duration_ns: 1, span_id: 2, parent_span_id: 0 };
/// let n = write_tracing_span(&mut d, 1, 0, &span, 9, 3, "system: physics").unwrap();
/// let (_, r) = decode(&d[..n]).unwrap();
/// assert_eq!(r, Record::TracingSpan { span, key: 9, tracing_id: 3, name: "system: physics" });
/// ```
pub fn write_tracing_span(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    key: u64,
    tracing_id: u64,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = tracing_span_len(name);
    if has_nul(name.as_bytes()) {
        return Err(EncodeError::NameHasNul);
    }
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    let ctx = TraceContext {
        hi: key,
        lo: tracing_id,
    };
    fill_span(reserve(d, size)?, slot, ts, span, Some(ctx), true, name);
    Ok(size)
}

/// Size of a TracingEntry record (kind 226): 28 bytes, 32 on disk.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::TRACING_ENTRY_SIZE, 28);
/// ```
pub const TRACING_ENTRY_SIZE: usize = min_size(K::TRACING_ENTRY);
/// Size of a TracingClose record (kind 227): 20 bytes, 24 on disk.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::TRACING_CLOSE_SIZE, 20);
/// ```
pub const TRACING_CLOSE_SIZE: usize = min_size(K::TRACING_CLOSE);

/// Writes a TracingEntry record: one entry, from `ts` for `duration_ns`, of the described
/// `tracing` span of key `key` (its name, ids and parent are for readers to rebuild).
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`TRACING_ENTRY_SIZE`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 28];
/// write_tracing_entry(&mut d, 1, 100, 5, 9).unwrap();
/// assert_eq!(decode(&d).unwrap().1, Record::TracingEntry { duration_ns: 5, key: 9 });
/// ```
pub fn write_tracing_entry(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    duration_ns: i64,
    key: u64,
) -> Result<usize, EncodeError> {
    let have = d.len();
    let d: &mut [u8; TRACING_ENTRY_SIZE] = d
        .get_mut(..TRACING_ENTRY_SIZE)
        .and_then(|d| d.try_into().ok())
        .ok_or(EncodeError::DstTooSmall {
            need: TRACING_ENTRY_SIZE,
            have,
        })?;
    fill_tracing_entry(d, slot, ts, duration_ns, key);
    Ok(TRACING_ENTRY_SIZE)
}

/// [`write_tracing_entry`] into exactly its 28 bytes: the span end's path (no size checks).
#[inline(always)]
pub(crate) fn fill_tracing_entry(
    d: &mut [u8; TRACING_ENTRY_SIZE],
    slot: u8,
    ts: i64,
    duration_ns: i64,
    key: u64,
) {
    header(d, TRACING_ENTRY_SIZE, K::TRACING_ENTRY, slot, ts);
    put_u64(
        d,
        const_off!(K::TRACING_ENTRY, "duration_ns"),
        duration_ns as u64,
    );
    put_u64(d, const_off!(K::TRACING_ENTRY, "key"), key);
}

/// Writes a TracingClose record: the `tracing` span of key `key` closed at `ts`.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`TRACING_CLOSE_SIZE`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 20];
/// write_tracing_close(&mut d, 1, 100, 9).unwrap();
/// assert_eq!(decode(&d).unwrap().1, Record::TracingClose { key: 9 });
/// ```
pub fn write_tracing_close(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
) -> Result<usize, EncodeError> {
    let d = reserve(d, TRACING_CLOSE_SIZE)?;
    header(d, TRACING_CLOSE_SIZE, K::TRACING_CLOSE, slot, ts);
    put_u64(d, const_off!(K::TRACING_CLOSE, "key"), key);
    Ok(TRACING_CLOSE_SIZE)
}

/// Writes `strs` back to back from `at` (each NUL-terminated) and their `__data_loc` words at
/// `locs`; the caller sized `d` from them and checked them for NULs.
fn put_strings(d: &mut [u8], mut at: usize, locs: &[usize], strs: &[&str]) {
    for (&loc, s) in locs.iter().zip(strs) {
        let len = s.len() + 1;
        put_u32(d, loc, (len as u32) << 16 | at as u32);
        d[at..at + s.len()].copy_from_slice(s.as_bytes());
        d[at + s.len()] = 0;
        at += len;
    }
}

fn check_strings(fixed: usize, strs: &[&str]) -> Result<usize, EncodeError> {
    let mut size = fixed;
    for s in strs {
        if has_nul(s.as_bytes()) {
            return Err(EncodeError::NameHasNul);
        }
        size += s.len() + 1;
    }
    // A `__data_loc` word holds 16-bit offsets and lengths, and a record is at most 65534 bytes.
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    Ok(size)
}

/// Size of a TracingSpanInfo record with these strings (each with its NUL).
///
/// ```
/// use typhon_recorder::codec::records::tracing_span_info_len;
/// assert_eq!(tracing_span_info_len("a", "b", ""), 41 + 2 + 2 + 1);
/// ```
pub const fn tracing_span_info_len(name: &str, target: &str, fields: &str) -> usize {
    INFO_FIXED + name.len() + target.len() + fields.len() + 3
}

/// Writes a TracingSpanInfo record: the span `key` (its `tracing` id `tracing_id`), its level
/// byte ([`level_name`]), its callsite name, target and fields (`k=v` pairs separated by
/// spaces, string values quoted and escaped as Rust's `Debug` does).
///
/// # Errors
/// [`EncodeError::NameHasNul`] if a string holds a NUL, [`EncodeError::RecordTooLarge`] past
/// 65534 bytes, [`EncodeError::DstTooSmall`] if `d` is shorter than [`tracing_span_info_len`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 128];
/// let n = write_tracing_span_info(&mut d, 1, 0, 9, 3, 3, "system", "bevy", "name=\"physics\"")
///     .unwrap();
/// let r = decode_fields(&d[..n]).unwrap();
/// assert_eq!(r.get("fields"), Some(FieldValue::Str("name=\"physics\"")));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn write_tracing_span_info(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    tracing_id: u64,
    level: u8,
    name: &str,
    target: &str,
    fields: &str,
) -> Result<usize, EncodeError> {
    let size = check_strings(INFO_FIXED, &[name, target, fields])?;
    let d = reserve(d, size)?;
    fill_tracing_span_info(d, slot, ts, key, tracing_id, level, name, target, fields);
    Ok(size)
}

/// [`write_tracing_span_info`] into a `d` of exactly [`tracing_span_info_len`] bytes, strings
/// checked by the caller (no NUL, the size within a record).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn fill_tracing_span_info(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    tracing_id: u64,
    level: u8,
    name: &str,
    target: &str,
    fields: &str,
) {
    let strs = [name, target, fields];
    let size = d.len();
    header(d, size, K::TRACING_SPAN_INFO, slot, ts);
    put_u64(d, const_off!(K::TRACING_SPAN_INFO, "key"), key);
    put_u64(
        d,
        const_off!(K::TRACING_SPAN_INFO, "tracing_id"),
        tracing_id,
    );
    d[const_off!(K::TRACING_SPAN_INFO, "level")] = level;
    let locs = [
        const_off!(K::TRACING_SPAN_INFO, "name"),
        const_off!(K::TRACING_SPAN_INFO, "target"),
        const_off!(K::TRACING_SPAN_INFO, "fields"),
    ];
    put_strings(d, INFO_FIXED, &locs, &strs);
}

/// Size of a TracingEvent record with these strings.
///
/// ```
/// use typhon_recorder::codec::records::tracing_event_len;
/// assert_eq!(tracing_event_len("t", "hi", ""), 33 + 2 + 3 + 1);
/// ```
pub const fn tracing_event_len(target: &str, message: &str, fields: &str) -> usize {
    EVENT_FIXED + target.len() + message.len() + fields.len() + 3
}

/// Writes a TracingEvent record: inside the span of key `span_key` (0: none), at `level`, with
/// its target, message and the other fields (as in [`write_tracing_span_info`]).
///
/// # Errors
/// As [`write_tracing_span_info`], with [`tracing_event_len`] as the size.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 128];
/// let n = write_tracing_event(&mut d, 1, 0, 9, 3, "app", "started", "n=3").unwrap();
/// let (_, r) = decode(&d[..n]).unwrap();
/// assert_eq!(r, Record::TracingEvent { span_key: 9, level: 3, target: "app", message: "started", fields: "n=3" });
/// ```
#[allow(clippy::too_many_arguments)]
pub fn write_tracing_event(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    level: u8,
    target: &str,
    message: &str,
    fields: &str,
) -> Result<usize, EncodeError> {
    let size = check_strings(EVENT_FIXED, &[target, message, fields])?;
    let d = reserve(d, size)?;
    fill_tracing_event(d, slot, ts, span_key, level, target, message, fields);
    Ok(size)
}

/// [`write_tracing_event`] into a `d` of exactly [`tracing_event_len`] bytes, strings checked
/// by the caller.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn fill_tracing_event(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    level: u8,
    target: &str,
    message: &str,
    fields: &str,
) {
    let strs = [target, message, fields];
    let size = d.len();
    header(d, size, K::TRACING_EVENT, slot, ts);
    put_u64(d, const_off!(K::TRACING_EVENT, "span_key"), span_key);
    d[const_off!(K::TRACING_EVENT, "level")] = level;
    let locs = [
        const_off!(K::TRACING_EVENT, "target"),
        const_off!(K::TRACING_EVENT, "message"),
        const_off!(K::TRACING_EVENT, "fields"),
    ];
    put_strings(d, EVENT_FIXED, &locs, &strs);
}

/// Writes a TracingFollows record (28 bytes): the span of key `key` follows from the span of
/// key `follows_key`.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 28 bytes.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 28];
/// write_tracing_follows(&mut d, 1, 0, 5, 4).unwrap();
/// assert_eq!(decode(&d).unwrap().1, Record::TracingFollows { key: 5, follows_key: 4 });
/// ```
pub fn write_tracing_follows(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    follows_key: u64,
) -> Result<usize, EncodeError> {
    let d = reserve(d, FOLLOWS_SIZE)?;
    header(d, FOLLOWS_SIZE, K::TRACING_FOLLOWS, slot, ts);
    put_u64(d, const_off!(K::TRACING_FOLLOWS, "key"), key);
    put_u64(
        d,
        const_off!(K::TRACING_FOLLOWS, "follows_key"),
        follows_key,
    );
    Ok(FOLLOWS_SIZE)
}

const CALLSITE_FIXED: usize = min_size(K::TRACING_CALLSITE) - 4;
const SPAN_VALUES_FIXED: usize = min_size(K::TRACING_SPAN_VALUES);
const EVENT_VALUES_FIXED: usize = min_size(K::TRACING_EVENT_VALUES);

/// A `tracing` callsite's definition: what a TracingCallsite record carries.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let c = Callsite { id: 4, level: 3, line: 12, name: "request", target: "app",
///     file: "src/main.rs", field_names: "method,uri" };
/// let mut d = [0u8; 128];
/// let n = write_tracing_callsite(&mut d, 1, 0, &c).unwrap();
/// assert_eq!(n, tracing_callsite_len(&c));
/// assert_eq!(decode(&d[..n]).unwrap().1, Record::TracingCallsite(c));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callsite<'a> {
    /// Its id in the recording.
    pub id: u32,
    /// Level byte ([`level_name`]).
    pub level: u8,
    /// Source line (0: unknown).
    pub line: u32,
    /// Span or event name.
    pub name: &'a str,
    /// Target.
    pub target: &'a str,
    /// Source file ("" when unknown).
    pub file: &'a str,
    /// Field names in order, separated by commas ([`join_field_names`]).
    pub field_names: &'a str,
}

impl<'a> Callsite<'a> {
    /// The field names, in order.
    ///
    /// ```
    /// # use typhon_recorder::codec::records::Callsite;
    /// let c = Callsite { id: 0, level: 0, line: 0, name: "", target: "", file: "", field_names: "a,b" };
    /// assert_eq!(c.fields().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = &'a str> {
        let f = self.field_names;
        f.split(',').filter(move |_| !f.is_empty())
    }
}

/// Joins field names for [`Callsite::field_names`]: commas between them, and a comma inside a
/// name (a `tracing` field named by a string literal) written as `;`, so names stay apart.
///
/// ```
/// let mut s = String::new();
/// typhon_recorder::codec::records::join_field_names(["a", "b,c"], &mut s);
/// assert_eq!(s, "a,b;c");
/// ```
pub fn join_field_names<'n>(names: impl IntoIterator<Item = &'n str>, out: &mut String) {
    for (i, n) in names.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for c in n.chars() {
            out.push(if c == ',' { ';' } else { c });
        }
    }
}

/// Size of a TracingCallsite record.
pub const fn tracing_callsite_len(c: &Callsite<'_>) -> usize {
    CALLSITE_FIXED + c.name.len() + c.target.len() + c.file.len() + c.field_names.len() + 4
}

/// Writes a TracingCallsite record.
///
/// # Errors
/// [`EncodeError::NameHasNul`] if a string holds a NUL, [`EncodeError::RecordTooLarge`] past
/// 65534 bytes, [`EncodeError::DstTooSmall`] if `d` is shorter than [`tracing_callsite_len`].
pub fn write_tracing_callsite(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    c: &Callsite<'_>,
) -> Result<usize, EncodeError> {
    let size = check_strings(CALLSITE_FIXED, &[c.name, c.target, c.file, c.field_names])?;
    let d = reserve(d, size)?;
    fill_tracing_callsite(d, slot, ts, c);
    Ok(size)
}

/// [`write_tracing_callsite`] into a `d` of exactly [`tracing_callsite_len`] bytes, strings
/// checked by the caller.
pub(crate) fn fill_tracing_callsite(d: &mut [u8], slot: u8, ts: i64, c: &Callsite<'_>) {
    let size = d.len();
    header(d, size, K::TRACING_CALLSITE, slot, ts);
    put_u32(d, const_off!(K::TRACING_CALLSITE, "callsite"), c.id);
    d[const_off!(K::TRACING_CALLSITE, "level")] = c.level;
    put_u32(d, const_off!(K::TRACING_CALLSITE, "line"), c.line);
    let locs = [
        const_off!(K::TRACING_CALLSITE, "name"),
        const_off!(K::TRACING_CALLSITE, "target"),
        const_off!(K::TRACING_CALLSITE, "file"),
        const_off!(K::TRACING_CALLSITE, "field_names"),
    ];
    put_strings(
        d,
        CALLSITE_FIXED,
        &locs,
        &[c.name, c.target, c.file, c.field_names],
    );
}

/// Size of a TracingSpanValues record with `values` bytes of values.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::tracing_span_values_len(10), 42);
/// ```
pub const fn tracing_span_values_len(values: usize) -> usize {
    SPAN_VALUES_FIXED + values
}

/// Size of a TracingEventValues record with `values` bytes of values.
///
/// ```
/// assert_eq!(typhon_recorder::codec::records::tracing_event_values_len(10), 34);
/// ```
pub const fn tracing_event_values_len(values: usize) -> usize {
    EVENT_VALUES_FIXED + values
}

/// Writes a TracingSpanValues record: span `key` (child of the span of key `parent_key`, 0 for
/// a root) of callsite `callsite`, with its fields' typed `values` ([`super::Values`]).
///
/// # Errors
/// [`EncodeError::RecordTooLarge`] past 65534 bytes, [`EncodeError::DstTooSmall`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 64];
/// let n = write_tracing_span_values(&mut d, 1, 0, 9, 3, 4, &[0, 4, 1]).unwrap();
/// let (_, r) = decode(&d[..n]).unwrap();
/// assert_eq!(r, Record::TracingSpanValues { key: 9, parent_key: 3, callsite: 4, values: &[0, 4, 1] });
/// ```
pub fn write_tracing_span_values(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    parent_key: u64,
    callsite: u32,
    values: &[u8],
) -> Result<usize, EncodeError> {
    let size = tracing_span_values_len(values.len());
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    fill_tracing_span_values(
        reserve(d, size)?,
        slot,
        ts,
        key,
        parent_key,
        callsite,
        values,
    );
    Ok(size)
}

/// [`write_tracing_span_values`] into a `d` of exactly its size.
pub(crate) fn fill_tracing_span_values(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    parent_key: u64,
    callsite: u32,
    values: &[u8],
) {
    fill_tracing_span_values_head(d, slot, ts, key, parent_key, callsite);
    d[SPAN_VALUES_FIXED..].copy_from_slice(values);
}

/// The fixed part of [`fill_tracing_span_values`] (the header sized `d.len()`); the values go
/// at [`TRACING_SPAN_VALUES_FIXED`].
pub(crate) fn fill_tracing_span_values_head(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    key: u64,
    parent_key: u64,
    callsite: u32,
) {
    let size = d.len();
    header(d, size, K::TRACING_SPAN_VALUES, slot, ts);
    put_u64(d, const_off!(K::TRACING_SPAN_VALUES, "key"), key);
    put_u64(
        d,
        const_off!(K::TRACING_SPAN_VALUES, "parent_key"),
        parent_key,
    );
    put_u32(d, const_off!(K::TRACING_SPAN_VALUES, "callsite"), callsite);
}

/// Where a TracingSpanValues record's values begin.
pub(crate) const TRACING_SPAN_VALUES_FIXED: usize = SPAN_VALUES_FIXED;
/// Where a TracingEventValues record's values begin.
pub(crate) const TRACING_EVENT_VALUES_FIXED: usize = EVENT_VALUES_FIXED;

/// Writes a TracingEventValues record: an event of callsite `callsite` inside the span of key
/// `span_key` (0: none), with its fields' typed `values` (the message is its `message` field).
///
/// # Errors
/// As [`write_tracing_span_values`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 64];
/// let n = write_tracing_event_values(&mut d, 1, 0, 9, 4, &[]).unwrap();
/// assert_eq!(n, 24);
/// let (_, r) = decode(&d[..n]).unwrap();
/// assert_eq!(r, Record::TracingEventValues { span_key: 9, callsite: 4, values: &[] });
/// ```
pub fn write_tracing_event_values(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    callsite: u32,
    values: &[u8],
) -> Result<usize, EncodeError> {
    let size = tracing_event_values_len(values.len());
    if size > crate::codec::CommonHeader::MAX_RECORD {
        return Err(EncodeError::RecordTooLarge(size));
    }
    fill_tracing_event_values(reserve(d, size)?, slot, ts, span_key, callsite, values);
    Ok(size)
}

/// [`write_tracing_event_values`] into a `d` of exactly its size.
pub(crate) fn fill_tracing_event_values(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    callsite: u32,
    values: &[u8],
) {
    fill_tracing_event_values_head(d, slot, ts, span_key, callsite);
    d[EVENT_VALUES_FIXED..].copy_from_slice(values);
}

/// The fixed part of [`fill_tracing_event_values`]; the values go at
/// [`TRACING_EVENT_VALUES_FIXED`].
pub(crate) fn fill_tracing_event_values_head(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span_key: u64,
    callsite: u32,
) {
    let size = d.len();
    header(d, size, K::TRACING_EVENT_VALUES, slot, ts);
    put_u64(d, const_off!(K::TRACING_EVENT_VALUES, "span_key"), span_key);
    put_u32(d, const_off!(K::TRACING_EVENT_VALUES, "callsite"), callsite);
}

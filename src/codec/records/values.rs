//! Typed `tracing` field values (SPEC §15), as TracingSpanValues and TracingEventValues records
//! carry them against their callsite's field names: no field name is in the record.
//!
//! The values are entries back to back, each `u8 field` (its index among the callsite's field
//! names), `u8 tag`, then the value:
//!
//! | tag | value | bytes |
//! |---|---|---|
//! | 1 | i64 | 8, little-endian |
//! | 2 | u64 | 8 |
//! | 3 | f64 | 8, the IEEE bits |
//! | 4 | bool | 1 (0 or 1) |
//! | 5 | str (`record_str`) | u16 length, UTF-8 |
//! | 6 | `Debug` text (`record_debug`, the formatted value) | u16 length, UTF-8 |
//! | 7 | bytes cut from the values (the field byte is 0xFF) | u64 |
//! | 8 | str | varint length, UTF-8 |
//! | 9 | `Debug` text | varint length, UTF-8 |
//! | 10 | str by id: a NameDefinition of the record's slot holds it | varint id |
//! | 11 | `Debug` text by id | varint id |
//! | 12 | i64 | zigzag varint |
//! | 13 | u64 | varint |
//!
//! A varint is LEB128: 7 bits a byte, low bits first, the high bit set on every byte but the
//! last (at most 10 bytes). [`put_entry`] writes tags 3, 4, 7 and 8–13: a small number takes
//! 1–3 bytes instead of 8, a short string's length one byte instead of two. Tags 1, 2, 5 and 6
//! (written before) still read. The recorder writes a short string that repeats in a slot
//! (an HTTP method, a Bevy system's name, an event's literal message) once, as a NameDefinition
//! of the slot, and the values then carry its id ([`Value::StrId`], [`Value::DebugId`]);
//! readers resolve it against the slot's definitions ([`inline_ids`]).
//!
//! A text shows them as the pre-§15 records did ([`write_text`]): `k=v` separated by spaces,
//! strings quoted and escaped as Rust's `Debug` does, `Debug` values as formatted, and
//! `typhon.cut=N` last when something was cut.
//!
//! ```
//! use typhon_recorder::codec::records::{Value, Values, ValuesWriter};
//! let mut buf = Vec::new();
//! let mut w = ValuesWriter::new(&mut buf);
//! w.push(0, Value::Str("GET"));
//! w.push(1, Value::U64(7));
//! let got: Vec<_> = Values::new(&buf).collect::<Result<_, _>>().unwrap();
//! assert_eq!(got, [(0, Value::Str("GET")), (1, Value::U64(7))]);
//! let mut text = String::new();
//! typhon_recorder::codec::records::write_text(&buf, &["method", "user"], &mut text);
//! assert_eq!(text, "method=\"GET\" user=7");
//! ```

use crate::codec::DecodeError;
use core::fmt::{self, Write as _};

/// One typed field value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// `record_i64`.
    I64(i64),
    /// `record_u64`.
    U64(u64),
    /// `record_f64`.
    F64(f64),
    /// `record_bool`.
    Bool(bool),
    /// `record_str`.
    Str(&'a str),
    /// `record_debug`: the value's formatted `Debug` text.
    Debug(&'a str),
    /// Bytes of the values that were cut (the entry's field byte is [`CUT_FIELD`]).
    Cut(u64),
    /// A string held by the NameDefinition of this id in the record's slot.
    StrId(u32),
    /// A `Debug` text held by the NameDefinition of this id in the record's slot.
    DebugId(u32),
}

/// The field byte of a [`Value::Cut`] entry.
pub const CUT_FIELD: u8 = 0xFF;
/// Longest string a value carries (its length is a u16).
pub const MAX_VALUE_STR: usize = u16::MAX as usize;

const TAG_I64: u8 = 1;
const TAG_U64: u8 = 2;
const TAG_F64: u8 = 3;
const TAG_BOOL: u8 = 4;
const TAG_STR: u8 = 5;
const TAG_DEBUG: u8 = 6;
const TAG_CUT: u8 = 7;
const TAG_STR_V: u8 = 8;
const TAG_DEBUG_V: u8 = 9;
const TAG_STR_ID: u8 = 10;
const TAG_DEBUG_ID: u8 = 11;
const TAG_I64_V: u8 = 12;
const TAG_U64_V: u8 = 13;

/// Bytes of `n` as a varint (1 to 10).
///
/// ```
/// use typhon_recorder::codec::records::varint_len;
/// assert_eq!((varint_len(0), varint_len(127), varint_len(128), varint_len(u64::MAX)), (1, 1, 2, 10));
/// ```
pub const fn varint_len(n: u64) -> usize {
    // 1 + one byte per 7 bits above the first 7.
    let bits = 64 - (n | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends `n` as a varint.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Writes `n` as a varint at the start of `d` (which has room); returns its length.
pub(crate) fn fill_varint(d: &mut [u8], mut n: u64) -> usize {
    let mut i = 0;
    while n >= 0x80 {
        d[i] = n as u8 | 0x80;
        n >>= 7;
        i += 1;
    }
    d[i] = n as u8;
    i + 1
}

/// A varint at the start of `b`: its value and the bytes after it.
pub(crate) fn take_varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (i, &x) in b.iter().enumerate().take(10) {
        n |= u64::from(x & 0x7f) << (7 * i);
        if x & 0x80 == 0 {
            return Some((n, &b[i + 1..]));
        }
    }
    None
}

const fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

const fn unzigzag(n: u64) -> i64 {
    (n >> 1) as i64 ^ -((n & 1) as i64)
}

/// A string's length as a value carries it: at most [`MAX_VALUE_STR`], at a char boundary.
fn str_len(s: &str) -> usize {
    let mut n = s.len().min(MAX_VALUE_STR);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

impl Value<'_> {
    /// Bytes of the entry (field and tag bytes included).
    ///
    /// ```
    /// use typhon_recorder::codec::records::Value;
    /// assert_eq!(Value::Bool(true).entry_len(), 3);
    /// assert_eq!(Value::Str("ab").entry_len(), 5);
    /// assert_eq!(Value::U64(300).entry_len(), 4);
    /// ```
    pub const fn entry_len(&self) -> usize {
        2 + match self {
            Value::F64(_) | Value::Cut(_) => 8,
            Value::I64(n) => varint_len(zigzag(*n)),
            Value::U64(n) => varint_len(*n),
            Value::Bool(_) => 1,
            Value::Str(s) | Value::Debug(s) => {
                let n = if s.len() > MAX_VALUE_STR {
                    MAX_VALUE_STR
                } else {
                    s.len()
                };
                varint_len(n as u64) + n
            }
            Value::StrId(id) | Value::DebugId(id) => varint_len(*id as u64),
        }
    }
}

/// Appends entries to a byte buffer. A string longer than [`MAX_VALUE_STR`] is cut at a
/// character boundary (the caller bounds strings before; this only keeps the length field
/// true).
#[derive(Debug)]
pub struct ValuesWriter<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> ValuesWriter<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        ValuesWriter { out }
    }

    /// Appends field `field`'s value `v`.
    pub fn push(&mut self, field: u8, v: Value<'_>) {
        put_entry(self.out, field, v);
    }
}

/// Appends one entry to `out`: numbers as varints, strings with a varint length (see the
/// module).
pub fn put_entry(out: &mut Vec<u8>, field: u8, v: Value<'_>) {
    let (tag, field) = match v {
        Value::I64(_) => (TAG_I64_V, field),
        Value::U64(_) => (TAG_U64_V, field),
        Value::F64(_) => (TAG_F64, field),
        Value::Bool(_) => (TAG_BOOL, field),
        Value::Str(_) => (TAG_STR_V, field),
        Value::Debug(_) => (TAG_DEBUG_V, field),
        Value::Cut(_) => (TAG_CUT, CUT_FIELD),
        Value::StrId(_) => (TAG_STR_ID, field),
        Value::DebugId(_) => (TAG_DEBUG_ID, field),
    };
    out.push(field);
    out.push(tag);
    match v {
        Value::I64(n) => put_varint(out, zigzag(n)),
        Value::U64(n) => put_varint(out, n),
        Value::Cut(n) => out.extend_from_slice(&n.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_bits().to_le_bytes()),
        Value::Bool(b) => out.push(u8::from(b)),
        Value::Str(s) | Value::Debug(s) => {
            let n = str_len(s);
            put_varint(out, n as u64);
            out.extend_from_slice(&s.as_bytes()[..n]);
        }
        Value::StrId(id) | Value::DebugId(id) => put_varint(out, u64::from(id)),
    }
}

/// Where a string entry's string is: the entry at the start of `entry` (as [`put_entry`]
/// writes it), if it is a string or a `Debug` text; the range of its bytes within `entry`.
///
/// ```
/// use typhon_recorder::codec::records::{put_entry, string_span, Value};
/// let mut v = Vec::new();
/// put_entry(&mut v, 0, Value::Str("GET"));
/// assert_eq!(string_span(&v), Some(3..6));
/// ```
pub fn string_span(entry: &[u8]) -> Option<core::ops::Range<usize>> {
    let tag = *entry.get(1)?;
    let (n, hdr) = match tag {
        TAG_STR | TAG_DEBUG => (
            u16::from_le_bytes([*entry.get(2)?, *entry.get(3)?]) as u64,
            4,
        ),
        TAG_STR_V | TAG_DEBUG_V => {
            let (n, rest) = take_varint(&entry[2..])?;
            (n, entry.len() - rest.len())
        }
        _ => return None,
    };
    let end = hdr.checked_add(usize::try_from(n).ok()?)?;
    (end <= entry.len()).then_some(hdr..end)
}

/// The entries of a values blob, in order; a malformed entry is an error that ends them.
#[derive(Clone, Debug)]
pub struct Values<'a> {
    rest: &'a [u8],
}

impl<'a> Values<'a> {
    /// The entries of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Values { rest: bytes }
    }
}

impl<'a> Iterator for Values<'a> {
    type Item = Result<(u8, Value<'a>), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&field, rest) = self.rest.split_first()?;
        let r = (|| {
            let (&tag, rest) = rest.split_first().ok_or(DecodeError::BadField("values"))?;
            let take = |rest: &'a [u8], n: usize| {
                (rest.len() >= n)
                    .then(|| rest.split_at(n))
                    .ok_or(DecodeError::BadField("values"))
            };
            let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
            let varint = |rest: &'a [u8]| take_varint(rest).ok_or(DecodeError::BadField("values"));
            let (v, rest) = match tag {
                TAG_I64 | TAG_U64 | TAG_F64 | TAG_CUT => {
                    let (b, rest) = take(rest, 8)?;
                    let n = u64_of(b);
                    let v = match tag {
                        TAG_I64 => Value::I64(n as i64),
                        TAG_U64 => Value::U64(n),
                        TAG_F64 => Value::F64(f64::from_bits(n)),
                        _ => Value::Cut(n),
                    };
                    (v, rest)
                }
                TAG_I64_V => {
                    let (n, rest) = varint(rest)?;
                    (Value::I64(unzigzag(n)), rest)
                }
                TAG_U64_V => {
                    let (n, rest) = varint(rest)?;
                    (Value::U64(n), rest)
                }
                TAG_STR_ID | TAG_DEBUG_ID => {
                    let (n, rest) = varint(rest)?;
                    let id = u32::try_from(n).map_err(|_| DecodeError::BadField("values"))?;
                    let v = if tag == TAG_STR_ID {
                        Value::StrId(id)
                    } else {
                        Value::DebugId(id)
                    };
                    (v, rest)
                }
                TAG_BOOL => {
                    let (b, rest) = take(rest, 1)?;
                    (Value::Bool(b[0] != 0), rest)
                }
                TAG_STR | TAG_DEBUG | TAG_STR_V | TAG_DEBUG_V => {
                    let (n, rest) = if tag == TAG_STR || tag == TAG_DEBUG {
                        let (l, rest) = take(rest, 2)?;
                        (u16::from_le_bytes([l[0], l[1]]) as usize, rest)
                    } else {
                        let (n, rest) = varint(rest)?;
                        (n.min(u64::from(u32::MAX)) as usize, rest)
                    };
                    let (s, rest) = take(rest, n)?;
                    let s = core::str::from_utf8(s).map_err(|_| DecodeError::BadUtf8)?;
                    let v = if tag == TAG_STR || tag == TAG_STR_V {
                        Value::Str(s)
                    } else {
                        Value::Debug(s)
                    };
                    (v, rest)
                }
                _ => return Err(DecodeError::BadField("values")),
            };
            Ok((field, v, rest))
        })();
        match r {
            Ok((field, v, rest)) => {
                self.rest = rest;
                Some(Ok((field, v)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The entry of `values` at `at` (its field byte, in bounds): where it ends, and for a string
/// or `Debug` text entry its string and whether it is `Debug` text; `None` for a malformed
/// entry, exactly where [`Values`] finds one (the entries end there). One pass over the
/// bytes, no value built: the recorder scans every record's values with it (inlined: a call
/// per entry, its result returned through memory, cost more than most entries' scan).
#[inline(always)]
fn scan_entry(values: &[u8], at: usize) -> Option<(usize, Option<(&str, bool)>)> {
    let tag = *values.get(at + 1)?;
    let body = at + 2;
    let fixed = |n: usize| (body + n <= values.len()).then_some((body + n, None));
    // A varint after the tag: its value and where it ends.
    let varint = || {
        let (n, rest) = take_varint(values.get(body..)?)?;
        Some((n, values.len() - rest.len()))
    };
    let (n, from, debug) = match tag {
        TAG_I64 | TAG_U64 | TAG_F64 | TAG_CUT => return fixed(8),
        TAG_BOOL => return fixed(1),
        TAG_I64_V | TAG_U64_V => return varint().map(|(_, end)| (end, None)),
        TAG_STR_ID | TAG_DEBUG_ID => {
            let (n, end) = varint()?;
            u32::try_from(n).ok()?;
            return Some((end, None));
        }
        TAG_STR | TAG_DEBUG => {
            let l = values.get(body..body + 2)?;
            (
                u16::from_le_bytes([l[0], l[1]]) as usize,
                body + 2,
                tag == TAG_DEBUG,
            )
        }
        TAG_STR_V | TAG_DEBUG_V => {
            let (n, from) = varint()?;
            (
                n.min(u64::from(u32::MAX)) as usize,
                from,
                tag == TAG_DEBUG_V,
            )
        }
        _ => return None,
    };
    let end = from.checked_add(n)?;
    let b = values.get(from..end)?;
    // Most values are ASCII: a word-at-a-time check inline instead of the validator's call.
    let s = if b.is_ascii() {
        // SAFETY: every byte of `b` is below 0x80, so `b` is valid UTF-8 (each byte a char).
        unsafe { core::str::from_utf8_unchecked(b) }
    } else {
        core::str::from_utf8(b).ok()?
    };
    Some((end, Some((s, debug))))
}

/// A string entry that goes by id in the recorder's rewrite of values ([`plan_ids`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ById {
    /// The entry is `values[start..end]`.
    start: usize,
    end: usize,
    id: u32,
    field: u8,
    debug: bool,
}

/// Plans the rewrite of `values` with the ids `id_of` gives their strings (0: inline): of the
/// first `by_id.len()` string entries, those given an id are kept in `by_id`, in order, for
/// [`fill_ids`]. Returns the rewritten values' length and how many went by id. One scan: the
/// fill copies the bytes between the entries kept, without reading the values again.
pub(crate) fn plan_ids(
    values: &[u8],
    by_id: &mut [ById],
    mut id_of: impl FnMut(&str) -> u32,
) -> (usize, usize) {
    let (mut len, mut n, mut strings, mut at) = (values.len(), 0, 0, 0);
    // Past the last string that may go by id, or a malformed entry, the rest is copied as it
    // is: no need to read it.
    while at < values.len() && strings < by_id.len() {
        let Some((end, s)) = scan_entry(values, at) else {
            break;
        };
        if let Some((s, debug)) = s {
            strings += 1;
            let id = id_of(s);
            if let (true, Some(b)) = (id != 0, by_id.get_mut(n)) {
                *b = ById {
                    start: at,
                    end,
                    id,
                    field: values[at],
                    debug,
                };
                n += 1;
                len = len - (end - at) + 2 + varint_len(u64::from(id));
            }
        }
        at = end;
    }
    (len, n)
}

/// Writes `values` into `d` (of the length [`plan_ids`] gave) with the entries of `by_id` (as
/// it kept them) by their ids.
pub(crate) fn fill_ids(d: &mut [u8], values: &[u8], by_id: &[ById]) {
    let (mut from, mut to) = (0, 0);
    for b in by_id {
        let raw = &values[from..b.start];
        d[to..to + raw.len()].copy_from_slice(raw);
        to += raw.len();
        d[to] = b.field;
        d[to + 1] = if b.debug { TAG_DEBUG_ID } else { TAG_STR_ID };
        to += 2 + fill_varint(&mut d[to + 2..], u64::from(b.id));
        from = b.end;
    }
    let rest = &values[from..];
    d[to..to + rest.len()].copy_from_slice(rest);
}

/// Writes `v` as the pre-§15 field texts did: strings quoted and escaped, `Debug` text as it
/// is, numbers and booleans as `Display` writes them.
///
/// ```
/// use typhon_recorder::codec::records::{write_value, Value};
/// let mut s = String::new();
/// write_value(&mut s, Value::Str("a\"b"));
/// assert_eq!(s, r#""a\"b""#);
/// ```
pub fn write_value(w: &mut impl fmt::Write, v: Value<'_>) {
    let _ = match v {
        Value::I64(n) => write!(w, "{n}"),
        Value::U64(n) | Value::Cut(n) => write!(w, "{n}"),
        Value::F64(x) => write!(w, "{x}"),
        Value::Bool(b) => w.write_str(if b { "true" } else { "false" }),
        Value::Str(s) => write!(w, "{s:?}"),
        Value::Debug(s) => w.write_str(s),
        // Not resolved (see [`inline_ids`]): the definition's id.
        Value::StrId(id) | Value::DebugId(id) => write!(w, "name#{id}"),
    };
}

/// The values of `bytes` with every string given by id ([`Value::StrId`], [`Value::DebugId`])
/// written inline, as `name(id)` gives it (`None`: not known, written as `name#ID`), into
/// `out`; returns whether there was any (when not, `out` is left as it was and `bytes` is
/// what to read). A malformed entry ends the values there, as readers end at it.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut v = Vec::new();
/// put_entry(&mut v, 0, Value::StrId(3));
/// put_entry(&mut v, 1, Value::U64(7));
/// let mut out = Vec::new();
/// assert!(inline_ids(&v, |id| (id == 3).then_some("GET"), &mut out));
/// let mut text = String::new();
/// write_text(&out, &["method", "n"], &mut text);
/// assert_eq!(text, "method=\"GET\" n=7");
/// ```
pub fn inline_ids<'n>(
    bytes: &[u8],
    name: impl Fn(u32) -> Option<&'n str>,
    out: &mut Vec<u8>,
) -> bool {
    if !Values::new(bytes).any(|e| matches!(e, Ok((_, Value::StrId(_) | Value::DebugId(_))))) {
        return false;
    }
    let mut buf = String::new();
    for (field, v) in Values::new(bytes).map_while(Result::ok) {
        let v = match v {
            Value::StrId(id) | Value::DebugId(id) => {
                let s = match name(id) {
                    Some(s) => s,
                    None => {
                        buf.clear();
                        let _ = write!(buf, "name#{id}");
                        &buf
                    }
                };
                if matches!(v, Value::StrId(_)) {
                    Value::Str(s)
                } else {
                    Value::Debug(s)
                }
            }
            v => v,
        };
        put_entry(out, field, v);
    }
    true
}

/// The ids of the definitions the values of `bytes` use ([`Value::StrId`], [`Value::DebugId`]).
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut v = Vec::new();
/// put_entry(&mut v, 0, Value::DebugId(9));
/// assert_eq!(value_ids(&v).collect::<Vec<_>>(), [9]);
/// ```
pub fn value_ids(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    Values::new(bytes)
        .map_while(Result::ok)
        .filter_map(|(_, v)| match v {
            Value::StrId(id) | Value::DebugId(id) => Some(id),
            _ => None,
        })
}

/// A field's name: `names[field]`, or `field{N}` for an index the callsite does not have.
fn field_name<'n>(names: &[&'n str], field: u8, buf: &'n mut String) -> &'n str {
    match names.get(field as usize) {
        Some(n) => n,
        None => {
            let _ = write!(buf, "field{field}");
            buf
        }
    }
}

/// Writes the values of `bytes` against the callsite's field `names` as `k=v` pairs separated by
/// spaces, skipping the field named `skip` (an event's `message`), with `typhon.cut=N` last if
/// the values were cut. A malformed entry ends the text with `typhon.bad_values`.
pub fn write_text_skipping(bytes: &[u8], names: &[&str], skip: Option<&str>, out: &mut String) {
    let mut cut = None;
    for e in Values::new(bytes) {
        let Ok((field, v)) = e else {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str("typhon.bad_values");
            return;
        };
        if let Value::Cut(n) = v {
            cut = Some(n);
            continue;
        }
        let mut buf = String::new();
        let name = field_name(names, field, &mut buf);
        if Some(name) == skip {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(name);
        out.push('=');
        write_value(out, v);
    }
    if let Some(n) = cut {
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = write!(out, "typhon.cut={n}");
    }
}

/// [`write_text_skipping`] of every field.
pub fn write_text(bytes: &[u8], names: &[&str], out: &mut String) {
    write_text_skipping(bytes, names, None, out);
}

/// The text of field `name` among the values (an event's message: a string as it is, other
/// values as [`write_value`] writes them); `None` when it has none.
pub fn value_text(bytes: &[u8], names: &[&str], name: &str) -> Option<String> {
    for (field, v) in Values::new(bytes).map_while(Result::ok) {
        if names.get(field as usize) == Some(&name) {
            let mut s = String::new();
            match v {
                Value::Str(t) | Value::Debug(t) => s.push_str(t),
                v => write_value(&mut s, v),
            }
            return Some(s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::records::*;

    /// The three records of a callsite, byte for byte: the layout the kind table gives them.
    #[test]
    fn golden_bytes() {
        let c = Callsite {
            id: 0x0102_0304,
            level: 3,
            line: 42,
            name: "req",
            target: "app",
            file: "m.rs",
            field_names: "a,b",
        };
        let mut d = [0u8; 64];
        let n = write_tracing_callsite(&mut d, 1, 2, &c).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            54, 0, 251, 1, 2, 0, 0, 0, 0, 0, 0, 0, // header: size 54, kind 251, slot 1, ts 2
            4, 3, 2, 1, 3, 42, 0, 0, 0,             // callsite, level, line
            37, 0, 4, 0, 41, 0, 4, 0,               // __data_loc name @37 len 4, target @41
            45, 0, 5, 0, 50, 0, 4, 0,               // file @45 len 5, field_names @50 len 4
            b'r', b'e', b'q', 0, b'a', b'p', b'p', 0, b'm', b'.', b'r', b's', 0, b'a', b',', b'b', 0,
        ];
        assert_eq!(&d[..n], want);

        let mut v = Vec::new();
        put_entry(&mut v, 0, Value::I64(-2));
        put_entry(&mut v, 1, Value::Bool(true));
        put_entry(&mut v, 2, Value::Debug("x"));
        put_entry(&mut v, 3, Value::U64(300));
        put_entry(&mut v, 4, Value::StrId(2));
        put_entry(&mut v, 5, Value::DebugId(200));
        put_entry(&mut v, 0, Value::Cut(5));
        #[rustfmt::skip]
        let want_v: &[u8] = &[
            0, 12, 3,                        // field 0, i64 -2 as a zigzag varint
            1, 4, 1,                         // field 1, bool true
            2, 9, 1, b'x',                   // field 2, Debug "x", varint length
            3, 13, 0xac, 0x02,               // field 3, u64 300 as a varint
            4, 10, 2,                        // field 4, str by id 2
            5, 11, 0xc8, 0x01,               // field 5, Debug text by id 200
            0xff, 7, 5, 0, 0, 0, 0, 0, 0, 0, // cut 5 (field byte 0xFF)
        ];
        assert_eq!(v, want_v);

        let n = write_tracing_span_values(&mut d, 1, 2, 7, 8, 9, &v[..6]).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            38, 0, 252, 1, 2, 0, 0, 0, 0, 0, 0, 0,
            7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
            0, 12, 3, 1, 4, 1,
        ];
        assert_eq!(&d[..n], want);
        let n = write_tracing_event_values(&mut d, 1, 2, 7, 9, &[1, 4, 0]).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            27, 0, 253, 1, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 4, 0,
        ];
        assert_eq!(&d[..n], want);
    }

    /// Values written before varints and ids (tags 1, 2, 5, 6) read as they did.
    #[test]
    fn values_of_the_first_format_still_read() {
        #[rustfmt::skip]
        let old: &[u8] = &[
            0, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // field 0, i64 -2
            1, 2, 7, 0, 0, 0, 0, 0, 0, 0,                         // field 1, u64 7
            2, 5, 3, 0, b'G', b'E', b'T',                         // field 2, str "GET"
            3, 6, 1, 0, b'x',                                     // field 3, Debug "x"
        ];
        let got: Vec<_> = Values::new(old).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            [
                (0, Value::I64(-2)),
                (1, Value::U64(7)),
                (2, Value::Str("GET")),
                (3, Value::Debug("x"))
            ]
        );
        assert_eq!(string_span(&old[20..27]), Some(4..7));
    }

    /// The recorder's rewrite of values with ids: string entries the id function gives an id
    /// go by it, the rest (and a malformed tail) are copied as they are.
    #[test]
    fn strings_given_ids_go_by_them() {
        let mut v = Vec::new();
        put_entry(&mut v, 0, Value::Str("GET"));
        put_entry(&mut v, 1, Value::U64(7));
        put_entry(&mut v, 2, Value::Debug("started processing request"));
        put_entry(&mut v, 3, Value::Str("unique"));
        v.extend_from_slice(&[4, 99]);
        let mut ids = [ById::default(); 2];
        let mut asked = Vec::new();
        let (len, n) = plan_ids(&v, &mut ids, |s| {
            asked.push(s.to_string());
            match s {
                "GET" => 3,
                "started processing request" => 130,
                _ => 0,
            }
        });
        assert_eq!(
            asked,
            ["GET", "started processing request"],
            "at most ids.len() strings"
        );
        let mut d = vec![0u8; len];
        fill_ids(&mut d, &v, &ids[..n]);
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 10, 3,                                          // "GET" by id 3
            1, 13, 7,                                          // u64 7
            2, 11, 0x82, 0x01,                                 // the message by id 130
            3, 8, 6, b'u', b'n', b'i', b'q', b'u', b'e',       // inline
            4, 99,                                             // malformed: as it was
        ];
        assert_eq!(d, want);
        let mut out = Vec::new();
        let names = |id| match id {
            3 => Some("GET"),
            130 => Some("started processing request"),
            _ => None,
        };
        assert!(inline_ids(&d[..d.len() - 2], names, &mut out));
        assert_eq!(out, v[..v.len() - 2]);
        let mut t = String::new();
        write_text(&d, &["m", "n"], &mut t);
        assert_eq!(
            t,
            "m=name#3 n=7 field2=name#130 field3=\"unique\" typhon.bad_values"
        );
    }

    /// The rewrite as it was first written, over the values' reader: each entry parsed into
    /// a value, each of the first `ids.len()` strings asked for an id, the bytes from a
    /// malformed entry on copied as they are.
    fn reference_rewrite(values: &[u8], ids: usize, id_of: impl Fn(&str) -> u32) -> Vec<u8> {
        let (mut out, mut k, mut it) = (Vec::new(), 0, Values::new(values));
        loop {
            let at = values.len() - it.rest.len();
            match it.next() {
                None => return out,
                Some(Ok((field, v))) => {
                    let raw = &values[at..values.len() - it.rest.len()];
                    let s = match v {
                        Value::Str(s) => Some((false, s)),
                        Value::Debug(s) => Some((true, s)),
                        _ => None,
                    };
                    if let (Some((debug, s)), true) = (s, k < ids) {
                        k += 1;
                        let id = id_of(s);
                        if id != 0 {
                            let v = if debug {
                                Value::DebugId(id)
                            } else {
                                Value::StrId(id)
                            };
                            put_entry(&mut out, field, v);
                            continue;
                        }
                    }
                    out.extend_from_slice(raw);
                }
                Some(Err(_)) => {
                    out.extend_from_slice(&values[at..]);
                    return out;
                }
            }
        }
    }

    proptest::proptest! {
        /// The one-scan rewrite gives the bytes of the reference, byte for byte, for any
        /// values: well-formed ones of every tag, and any bytes (malformed entries, bad UTF-8,
        /// varints too long or past a u32 for an id).
        #[test]
        fn the_rewrite_is_the_reference_byte_for_byte(
            entries in proptest::collection::vec(
                (0u8..4, proptest::prelude::any::<u64>(), "[a-c\\u{e9}]{0,6}|[a-z]{60,70}"),
                0..24,
            ),
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            cut in 0usize..400,
            flip in (0usize..400, proptest::prelude::any::<u8>()),
            ids in 0usize..20,
        ) {
            let mut v = Vec::new();
            for (i, (kind, n, s)) in entries.iter().enumerate() {
                let f = i as u8;
                match kind {
                    0 => put_entry(&mut v, f, Value::Str(s)),
                    1 => put_entry(&mut v, f, Value::Debug(s)),
                    2 => put_entry(&mut v, f, Value::U64(*n)),
                    _ => put_entry(&mut v, f, Value::StrId(*n as u32)),
                }
            }
            // Malformed: cut short somewhere, and noise after.
            v.truncate(cut.min(v.len()).max(v.len().saturating_sub(cut % 7)));
            v.extend_from_slice(&noise);
            // And one byte changed anywhere (a tag, a length, a string's UTF-8).
            if !v.is_empty() {
                let i = flip.0 % v.len();
                v[i] ^= flip.1;
            }
            let id_of = |s: &str| if s.len() % 3 == 0 { s.len() as u32 * 50 + 1 } else { 0 };
            let want = reference_rewrite(&v, ids, id_of);
            let mut by_id = vec![ById::default(); ids];
            let (len, n) = plan_ids(&v, &mut by_id, id_of);
            proptest::prop_assert_eq!(len, want.len());
            let mut d = vec![0u8; len];
            fill_ids(&mut d, &v, &by_id[..n]);
            proptest::prop_assert_eq!(d, want);
        }
    }

    /// Every typed value comes back as written, and the text is the pre-§15 one.
    #[test]
    fn values_round_trip_and_read_as_text() {
        let all = [
            (0, Value::I64(i64::MIN)),
            (1, Value::U64(u64::MAX)),
            (2, Value::F64(0.5)),
            (3, Value::Bool(false)),
            (4, Value::Str("a \"q\"")),
            (5, Value::Debug("Some(1)")),
            (CUT_FIELD, Value::Cut(12)),
            (6, Value::StrId(u32::MAX)),
            (7, Value::DebugId(1)),
            (8, Value::I64(-1)),
            (9, Value::U64(1 << 63)),
        ];
        let mut v = Vec::new();
        for (f, x) in all {
            put_entry(&mut v, f, x);
        }
        let back: Vec<_> = Values::new(&v).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, all);
        let mut t = String::new();
        write_text(
            &v,
            &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
            &mut t,
        );
        assert_eq!(
            t,
            r#"a=-9223372036854775808 b=18446744073709551615 c=0.5 d=false e="a \"q\"" f=Some(1) g=name#4294967295 h=name#1 i=-1 j=9223372036854775808 typhon.cut=12"#
        );
        assert_eq!(
            value_text(&v, &["m", "x", "y", "z", "e"], "e").as_deref(),
            Some("a \"q\"")
        );
    }

    /// Malformed values end in an error, never a panic or a read past them.
    #[test]
    fn malformed_values_are_errors() {
        for bad in [
            &[0u8][..],
            &[0, 9],
            &[0, 1, 1, 2],
            &[0, 5, 3, 0, b'a'],
            &[0, 5, 1, 0, 0xff],
            &[0, 13, 0x80],
            &[0, 8, 5, b'a'],
            &[0, 10, 0xff, 0xff, 0xff, 0xff, 0x7f],
        ] {
            let r: Result<Vec<_>, _> = Values::new(bad).collect();
            assert!(r.is_err(), "{bad:?}");
            let mut t = String::new();
            write_text(bad, &[], &mut t);
            assert!(t.ends_with("typhon.bad_values"), "{t}");
        }
    }
}

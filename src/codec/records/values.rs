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

impl Value<'_> {
    /// Bytes of the entry (field and tag bytes included).
    ///
    /// ```
    /// use typhon_recorder::codec::records::Value;
    /// assert_eq!(Value::Bool(true).entry_len(), 3);
    /// assert_eq!(Value::Str("ab").entry_len(), 6);
    /// ```
    pub const fn entry_len(&self) -> usize {
        2 + match self {
            Value::I64(_) | Value::U64(_) | Value::F64(_) | Value::Cut(_) => 8,
            Value::Bool(_) => 1,
            Value::Str(s) | Value::Debug(s) => 2 + s.len(),
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

/// Appends one entry to `out`.
pub fn put_entry(out: &mut Vec<u8>, field: u8, v: Value<'_>) {
    let (tag, field) = match v {
        Value::I64(_) => (TAG_I64, field),
        Value::U64(_) => (TAG_U64, field),
        Value::F64(_) => (TAG_F64, field),
        Value::Bool(_) => (TAG_BOOL, field),
        Value::Str(_) => (TAG_STR, field),
        Value::Debug(_) => (TAG_DEBUG, field),
        Value::Cut(_) => (TAG_CUT, CUT_FIELD),
    };
    out.push(field);
    out.push(tag);
    match v {
        Value::I64(n) => out.extend_from_slice(&n.to_le_bytes()),
        Value::U64(n) | Value::Cut(n) => out.extend_from_slice(&n.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_bits().to_le_bytes()),
        Value::Bool(b) => out.push(u8::from(b)),
        Value::Str(s) | Value::Debug(s) => {
            let mut n = s.len().min(MAX_VALUE_STR);
            while !s.is_char_boundary(n) {
                n -= 1;
            }
            out.extend_from_slice(&(n as u16).to_le_bytes());
            out.extend_from_slice(&s.as_bytes()[..n]);
        }
    }
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
                TAG_BOOL => {
                    let (b, rest) = take(rest, 1)?;
                    (Value::Bool(b[0] != 0), rest)
                }
                TAG_STR | TAG_DEBUG => {
                    let (l, rest) = take(rest, 2)?;
                    let n = u16::from_le_bytes([l[0], l[1]]) as usize;
                    let (s, rest) = take(rest, n)?;
                    let s = core::str::from_utf8(s).map_err(|_| DecodeError::BadUtf8)?;
                    let v = if tag == TAG_STR {
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
    };
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
        put_entry(&mut v, 0, Value::Cut(5));
        #[rustfmt::skip]
        let want_v: &[u8] = &[
            0, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // field 0, i64 -2
            1, 4, 1,                                              // field 1, bool true
            2, 6, 1, 0, b'x',                                     // field 2, Debug "x"
            0xff, 7, 5, 0, 0, 0, 0, 0, 0, 0,                      // cut 5 (field byte 0xFF)
        ];
        assert_eq!(v, want_v);

        let n = write_tracing_span_values(&mut d, 1, 2, 7, 8, 9, &v[..3 + 10]).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            45, 0, 252, 1, 2, 0, 0, 0, 0, 0, 0, 0,
            7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0,
            0, 1, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 4, 1,
        ];
        assert_eq!(&d[..n], want);
        let n = write_tracing_event_values(&mut d, 1, 2, 7, 9, &[1, 4, 0]).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            27, 0, 253, 1, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 4, 0,
        ];
        assert_eq!(&d[..n], want);
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
        ];
        let mut v = Vec::new();
        for (f, x) in all {
            put_entry(&mut v, f, x);
        }
        let back: Vec<_> = Values::new(&v).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, all);
        let mut t = String::new();
        write_text(&v, &["a", "b", "c", "d", "e", "f"], &mut t);
        assert_eq!(
            t,
            r#"a=-9223372036854775808 b=18446744073709551615 c=0.5 d=false e="a \"q\"" f=Some(1) typhon.cut=12"#
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
        ] {
            let r: Result<Vec<_>, _> = Values::new(bad).collect();
            assert!(r.is_err(), "{bad:?}");
            let mut t = String::new();
            write_text(bad, &[], &mut t);
            assert!(t.ends_with("typhon.bad_values"), "{t}");
        }
    }
}

//! The generic, table-driven decoder: any record's fields, named and typed by the kind table
//! ([`decode_fields`]), and their one-line text form ([`write_fields`]), which `report`, the
//! exports and trace-cmd's print formats agree on.

use core::fmt;

use crate::codec::celog::{self};
use crate::codec::kinds::{
    kind_def, FieldDef, FieldType, KindDef, Shape, MAX_FIELDS, SPAN_FLAG_TRACE_CONTEXT,
};
use crate::codec::{get_u16, get_u32, get_u64, CommonHeader, DecodeError, TraceEventKind as K};

/// One field value of a decoded record.
///
/// ```
/// use typhon_recorder::codec::records::FieldValue;
/// assert_eq!(FieldValue::Unsigned(3).as_u64(), Some(3));
/// assert_eq!(FieldValue::Str("x").as_str(), Some("x"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldValue<'a> {
    /// An unsigned integer field (u8..u64).
    Unsigned(u64),
    /// A signed integer field (i32, i64).
    Signed(i64),
    /// A string field (`CStr` without its NUL, or `LenStr`).
    Str(&'a str),
    /// Raw bytes (`Rest`).
    Bytes(&'a [u8]),
}

impl<'a> FieldValue<'a> {
    /// The value if unsigned.
    ///
    /// ```
    /// use typhon_recorder::codec::records::FieldValue;
    /// assert_eq!(FieldValue::Signed(3).as_u64(), None);
    /// ```
    pub const fn as_u64(self) -> Option<u64> {
        match self {
            Self::Unsigned(v) => Some(v),
            _ => None,
        }
    }

    /// The value if signed.
    ///
    /// ```
    /// use typhon_recorder::codec::records::FieldValue;
    /// assert_eq!(FieldValue::Signed(-3).as_i64(), Some(-3));
    /// ```
    pub const fn as_i64(self) -> Option<i64> {
        match self {
            Self::Signed(v) => Some(v),
            _ => None,
        }
    }

    /// The value if a string.
    ///
    /// ```
    /// use typhon_recorder::codec::records::FieldValue;
    /// assert_eq!(FieldValue::Unsigned(1).as_str(), None);
    /// ```
    pub const fn as_str(self) -> Option<&'a str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value if raw bytes.
    ///
    /// ```
    /// use typhon_recorder::codec::records::FieldValue;
    /// assert_eq!(FieldValue::Bytes(&[1, 2]).as_bytes(), Some(&[1u8, 2][..]));
    /// ```
    pub const fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Self::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// A record decoded through the kind table: the header, the table entry (`None` for a kind this
/// crate does not know) and the field values in table order.
///
/// ```
/// use typhon_recorder::codec::{correlation, records::*, TraceEventKind};
/// let mut b = [0u8; 22];
/// correlation::write_received(&mut b, 1, 2, 3, 4, 5, 6);
/// let r = decode_fields(&b).unwrap();
/// assert_eq!(r.def.unwrap().kind, TraceEventKind::INGRESS_RECEIVED);
/// assert_eq!(r.get("wire_idx"), Some(FieldValue::Unsigned(5)));
/// assert_eq!(r.values().len(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedRecord<'a> {
    /// The common header.
    pub header: CommonHeader,
    /// The kind's table entry, `None` if the kind is unknown.
    pub def: Option<&'static KindDef>,
    /// The bytes after the header (`record[12..size]`).
    pub payload: &'a [u8],
    values: [FieldValue<'a>; MAX_FIELDS],
}

impl<'a> DecodedRecord<'a> {
    /// The field values, in table order (empty for an unknown kind).
    ///
    /// ```
    /// use typhon_recorder::codec::records::*;
    /// let mut b = [0u8; 13];
    /// write_phase_end(&mut b, 1, 0, 4).unwrap();
    /// assert_eq!(decode_fields(&b).unwrap().values(), &[FieldValue::Unsigned(4)]);
    /// ```
    pub fn values(&self) -> &[FieldValue<'a>] {
        let n = self.def.map_or(0, |d| d.fields.len());
        &self.values[..n]
    }

    /// The fields with their table definitions, in table order.
    ///
    /// ```
    /// use typhon_recorder::codec::records::*;
    /// let mut b = [0u8; 14];
    /// write_tick_end(&mut b, 1, 0, 4, 5).unwrap();
    /// let names: Vec<_> = decode_fields(&b).unwrap().fields().map(|(f, _)| f.name).collect();
    /// assert_eq!(names, ["overload_level", "tick_multiplier"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = (&'static FieldDef, FieldValue<'a>)> + '_ {
        let defs: &'static [FieldDef] = self.def.map_or(&[], |d| d.fields);
        defs.iter().zip(self.values.iter().copied())
    }

    /// The value of the field called `name`.
    ///
    /// ```
    /// use typhon_recorder::codec::records::*;
    /// let mut b = [0u8; 20];
    /// write_instant(&mut b, 1, 0, 7, -2).unwrap();
    /// let r = decode_fields(&b).unwrap();
    /// assert_eq!(r.get("payload"), Some(FieldValue::Signed(-2)));
    /// assert_eq!(r.get("nope"), None);
    /// ```
    pub fn get(&self, name: &str) -> Option<FieldValue<'a>> {
        self.fields().find(|(f, _)| f.name == name).map(|(_, v)| v)
    }

    pub(super) fn unsigned(&self, name: &'static str) -> Result<u64, DecodeError> {
        self.get(name)
            .and_then(FieldValue::as_u64)
            .ok_or(DecodeError::BadField(name))
    }

    pub(super) fn signed(&self, name: &'static str) -> Result<i64, DecodeError> {
        self.get(name)
            .and_then(FieldValue::as_i64)
            .ok_or(DecodeError::BadField(name))
    }

    pub(super) fn string(&self, name: &'static str) -> Result<&'a str, DecodeError> {
        self.get(name)
            .and_then(FieldValue::as_str)
            .ok_or(DecodeError::BadField(name))
    }

    pub(super) fn bytes(&self, name: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.get(name) {
            Some(FieldValue::Bytes(b)) => Ok(b),
            _ => Err(DecodeError::BadField(name)),
        }
    }
}

impl fmt::Display for DecodedRecord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fields(self, f)
    }
}

fn utf8(b: &[u8]) -> Result<&str, DecodeError> {
    core::str::from_utf8(b).map_err(|_| DecodeError::BadUtf8)
}

/// Decodes the record at the start of `record` through the kind table (bytes after the record are
/// ignored). Checks: the header; fixed-size kinds have exactly their table size, variable ones at
/// least `min_size`; every field lies inside the record; `CStr` fields have their NUL and `LenStr`
/// lengths stay in bounds; strings are UTF-8; the fields end exactly at the record's end; span
/// flags agree with the kind (bit 0 set iff the kind has a trace context, other bits 0); a CeLog
/// record holds exactly one valid event with zero padding. So every record it accepts re-encodes
/// to the same bytes. An unknown kind decodes to its header and raw payload.
///
/// # Errors
/// The [`DecodeError`] describing the first problem found.
///
/// ```
/// use typhon_recorder::codec::{records::*, DecodeError};
/// let mut b = [0u8; 23];
/// write_thread_info(&mut b, 1, 0, 42, "main", ThreadKind::Main).unwrap();
/// let r = decode_fields(&b).unwrap();
/// assert_eq!(r.get("name"), Some(FieldValue::Str("main")));
/// b[16] = 200; // name_len beyond the record
/// assert_eq!(decode_fields(&b), Err(DecodeError::BadField("name_len")));
/// ```
pub fn decode_fields(record: &[u8]) -> Result<DecodedRecord<'_>, DecodeError> {
    let (header, rec) = CommonHeader::read_record(record)?;
    decode_payload(header, &rec[CommonHeader::SIZE..])
}

/// [`decode_fields`] for a record whose header and payload are apart: `payload` holds the bytes
/// after the header (those past `header.size` are ignored, as after a record in one piece).
/// The recorder checks a caller's payload with it before writing a byte, so what it writes is
/// what the decoder accepts.
///
/// # Errors
/// As [`decode_fields`]: [`DecodeError::BadSize`] for a header size outside 12..=65534,
/// [`DecodeError::Truncated`] if `payload` is shorter than the header says, then the checks of
/// the kind's layout.
///
/// ```
/// use typhon_recorder::codec::{records::*, CommonHeader, DecodeError, TraceEventKind as K};
/// let h = |size| CommonHeader { size, kind: K::THREAD_INFO, slot: 1, timestamp: 0 };
/// let mut p = [0u8; 11]; // thread id, name length 4, "main", kind
/// p[4] = 4;
/// p[6..10].copy_from_slice(b"main");
/// assert_eq!(decode_payload(h(23), &p).unwrap().get("name"), Some(FieldValue::Str("main")));
/// p[4] = 200; // name_len beyond the record
/// assert_eq!(decode_payload(h(23), &p), Err(DecodeError::BadField("name_len")));
/// assert_eq!(decode_payload(h(24), &p), Err(DecodeError::Truncated { need: 24, have: 23 }));
/// assert_eq!(decode_payload(h(11), &p), Err(DecodeError::BadSize(11)));
/// ```
pub fn decode_payload(
    header: CommonHeader,
    payload: &[u8],
) -> Result<DecodedRecord<'_>, DecodeError> {
    // As `read_record` does for a record in one piece: the header's size decides, and bytes
    // past it are not the record's.
    let size = header.size as usize;
    if !(CommonHeader::SIZE..=CommonHeader::MAX_RECORD).contains(&size) {
        return Err(DecodeError::BadSize(header.size));
    }
    let payload = payload
        .get(..size - CommonHeader::SIZE)
        .ok_or(DecodeError::Truncated {
            need: size,
            have: CommonHeader::SIZE + payload.len(),
        })?;
    // Offsets below count from the record's start, as the kind table's do; `body(pos)` is the
    // payload from record offset `pos` on.
    let body = |pos: usize| payload.get(pos - CommonHeader::SIZE..).unwrap_or(&[]);
    let mut out = DecodedRecord {
        header,
        def: kind_def(header.kind),
        payload,
        values: [FieldValue::Unsigned(0); MAX_FIELDS],
    };
    let Some(def) = out.def else {
        return Ok(out);
    };
    let size_ok = if def.fixed {
        size == def.min_size
    } else {
        size >= def.min_size
    };
    if !size_ok {
        return Err(DecodeError::SizeMismatch {
            kind: header.kind,
            expected: def.min_size,
            found: size,
        });
    }
    let mut pos = CommonHeader::SIZE;
    // `__data_loc` strings, as (field index, raw u32), resolved after the fixed part.
    let mut locs: [(usize, u32); MAX_FIELDS] = [(0, 0); MAX_FIELDS];
    let mut n_locs = 0;
    for (i, fd) in def.fields.iter().enumerate() {
        let v = match fd.ty {
            FieldType::DataLoc => {
                let b = body(pos).get(..4).ok_or(DecodeError::SizeMismatch {
                    kind: header.kind,
                    expected: pos + 4,
                    found: size,
                })?;
                pos += 4;
                locs[n_locs] = (i, get_u32(b, 0));
                n_locs += 1;
                FieldValue::Str("")
            }
            FieldType::CStr => {
                let rest = body(pos);
                let nul = rest
                    .iter()
                    .position(|&b| b == 0)
                    .ok_or(DecodeError::MissingNul)?;
                pos += nul + 1;
                FieldValue::Str(utf8(&rest[..nul])?)
            }
            FieldType::LenStr(len_field) => {
                let n = def.fields[..i]
                    .iter()
                    .position(|f| f.name == len_field)
                    .and_then(|j| out.values[j].as_u64())
                    .ok_or(DecodeError::BadField(len_field))? as usize;
                let bytes = body(pos).get(..n).ok_or(DecodeError::BadField(len_field))?;
                pos += n;
                FieldValue::Str(utf8(bytes)?)
            }
            FieldType::Rest => {
                let b = body(pos);
                pos = size;
                FieldValue::Bytes(b)
            }
            ty => {
                // Fixed-size integer.
                let n = ty.fixed_size().unwrap_or(0);
                let b = body(pos).get(..n).ok_or(DecodeError::SizeMismatch {
                    kind: header.kind,
                    expected: pos + n,
                    found: size,
                })?;
                pos += n;
                let raw = match n {
                    1 => b[0] as u64,
                    2 => get_u16(b, 0) as u64,
                    4 => get_u32(b, 0) as u64,
                    _ => get_u64(b, 0),
                };
                match ty {
                    FieldType::I32 => FieldValue::Signed(raw as u32 as i32 as i64),
                    FieldType::I64 => FieldValue::Signed(raw as i64),
                    _ => FieldValue::Unsigned(raw),
                }
            }
        };
        out.values[i] = v;
    }
    // The strings follow the fixed part back to back in field order, each with its NUL, so a
    // record the decoder accepts has one encoding.
    for &(i, raw) in &locs[..n_locs] {
        let (off, len) = ((raw & 0xFFFF) as usize, (raw >> 16) as usize);
        let name = def.fields[i].name;
        if off != pos || len == 0 || off + len > size {
            return Err(DecodeError::BadField(name));
        }
        let bytes = &body(off)[..len];
        let (text, nul) = bytes.split_at(len - 1);
        if nul != [0] || text.contains(&0) {
            return Err(DecodeError::BadField(name));
        }
        out.values[i] = FieldValue::Str(utf8(text)?);
        pos = off + len;
    }
    if pos != size {
        return Err(DecodeError::SizeMismatch {
            kind: header.kind,
            expected: pos,
            found: size,
        });
    }
    if def.shape == Shape::Span && def.field("flags").is_some() {
        // Bit 0 says 16 bytes of context follow the flags: a kind whose next field is a u64.
        let traced = def.fields.get(4).is_some_and(|f| f.ty == FieldType::U64);
        let want = if traced { SPAN_FLAG_TRACE_CONTEXT } else { 0 };
        if out.unsigned("flags")? != want as u64 {
            return Err(DecodeError::BadField("flags"));
        }
    }
    if def.kind == K::CELOG {
        let (ev, used) = celog::decode_event(out.payload)?;
        if used != out.payload.len() {
            return Err(DecodeError::SizeMismatch {
                kind: header.kind,
                expected: CommonHeader::SIZE + used,
                found: size,
            });
        }
        // Our records carry zero padding (no stale bytes reach a file); anything else is corrupt.
        let data_end = used - ((ev.data.len() + 3) & !3) + ev.data.len();
        if out.payload[data_end..].iter().any(|&b| b != 0) {
            return Err(DecodeError::BadField("event"));
        }
    }
    Ok(out)
}

/// The kinds whose `level` is a `tracing` level and whose `fields` is `tracing`'s text.
fn is_tracing(k: K) -> bool {
    [K::TRACING_SPAN_INFO, K::TRACING_EVENT, K::TRACING_CALLSITE].contains(&k)
}

fn is_hex_field(fd: &FieldDef) -> bool {
    fd.ty == FieldType::U64 && (fd.name.ends_with("_id") || fd.name.starts_with("trace_id"))
}

/// Prints a decoded record's fields as `name=value` pairs separated by single spaces: strings
/// unquoted, span and trace ids as `0x` + 16 hex digits, a `tracing` level by its name (`INFO`),
/// other integers in decimal, a CeLog event
/// decoded as `id=0x… flag=… cpu=… ts=… len=…` (`-` for an absent flag or timestamp). An unknown
/// kind prints `payload_len=N`.
///
/// # Errors
/// Only those of `out`.
///
/// ```
/// use typhon_recorder::codec::{celog::*, records::*};
/// let ev = CelEvent { id: 0x2005, timestamp: Some(9), flag: None, cpu: 1, data: &[1, 2, 3] };
/// let mut b = [0u8; 32];
/// let n = write_celog_record(&mut b, 1, 0, &ev).unwrap();
/// let mut s = String::new();
/// write_fields(&decode_fields(&b[..n]).unwrap(), &mut s).unwrap();
/// assert_eq!(s, "id=0x2005 flag=- cpu=1 ts=9 len=3");
/// ```
pub fn write_fields(rec: &DecodedRecord<'_>, out: &mut impl fmt::Write) -> fmt::Result {
    let Some(def) = rec.def else {
        return write!(out, "payload_len={}", rec.payload.len());
    };
    for (i, (fd, v)) in rec.fields().enumerate() {
        if i > 0 {
            out.write_char(' ')?;
        }
        match v {
            FieldValue::Bytes(b) if def.kind == K::CELOG => match celog::decode_event(b) {
                Ok((ev, _)) => {
                    write!(out, "id={:#06x} flag=", ev.id)?;
                    match ev.flag {
                        Some(fl) => write!(out, "{fl}")?,
                        None => out.write_char('-')?,
                    }
                    write!(out, " cpu={} ts=", ev.cpu)?;
                    match ev.timestamp {
                        Some(t) => write!(out, "{t}")?,
                        None => out.write_char('-')?,
                    }
                    write!(out, " len={}", ev.data.len())?;
                }
                Err(_) => write!(out, "{}=<invalid {} bytes>", fd.name, b.len())?,
            },
            FieldValue::Unsigned(u) if is_hex_field(fd) => write!(out, "{}={:#018x}", fd.name, u)?,
            FieldValue::Unsigned(u) if fd.name == "level" && is_tracing(def.kind) => write!(
                out,
                "level={}",
                super::level_name(u8::try_from(u).unwrap_or(0))
            )?,
            // The `tracing` fields' text is written escaped (strings as `Debug` writes them):
            // escaping its backslashes again would show `\\n` for a newline.
            FieldValue::Str(s) if fd.name == "fields" && is_tracing(def.kind) => {
                write!(out, "fields={}", crate::printable::printable_escaped(s))?
            }
            FieldValue::Unsigned(u) => write!(out, "{}={}", fd.name, u)?,
            // A counter's f64 value is shown as the number, not its bits.
            FieldValue::Signed(s)
                if matches!(def.kind, K::COUNTER | K::COUNTER_ID) && fd.name == "value" =>
            {
                let flags = match rec.get("flags") {
                    Some(FieldValue::Unsigned(u)) => u as u8,
                    _ => 0,
                };
                let v = super::CounterValue { raw: s, flags };
                write!(out, "{}={v}", fd.name)?
            }
            FieldValue::Signed(s) => write!(out, "{}={}", fd.name, s)?,
            // Text from the file: escaped, so it cannot drive the terminal it is printed on.
            FieldValue::Str(s) => write!(out, "{}={}", fd.name, crate::printable::printable(s))?,
            FieldValue::Bytes(b) => {
                write!(out, "{}=", fd.name)?;
                for x in b {
                    write!(out, "{x:02x}")?;
                }
            }
        }
    }
    Ok(())
}

//! Encoders and decoders for the record kinds other than the correlation instants: ticks, phases,
//! generic instants, thread info, spans and CeLog records; plus the generic, table-driven decoder
//! ([`decode_fields`]) and its printer ([`write_fields`]).
//!
//! The typed encoders take their offsets from the kind table at compile time
//! ([`crate::codec::kinds::field_offset`]); the typed decoder ([`decode`]) is built on the generic
//! one, so no layout is written down twice. Encoders write into `&mut [u8]`, never allocate, and
//! return the record size or an [`EncodeError`]; variable-size kinds have a `*_len` function so a
//! caller can reserve exactly.
//!
//! ```
//! use typhon_recorder::codec::records::*;
//! let span = SpanExt { duration_ns: 500, span_id: (1 << 56) | 7, parent_span_id: 0 };
//! let mut buf = [0u8; 64];
//! let n = write_named_span(&mut buf, 1, 1_000, &span, "update").unwrap();
//! assert_eq!(n, named_span_len("update"));
//! let rec = decode_fields(&buf[..n]).unwrap();
//! let mut text = String::new();
//! write_fields(&rec, &mut text).unwrap();
//! assert_eq!(
//!     text,
//!     "duration_ns=500 span_id=0x0100000000000007 parent_span_id=0x0000000000000000 flags=0 name=update"
//! );
//! ```

mod compact;
mod counter;
mod fields;
mod named;
mod tracing;
mod typed;
mod values;

pub use compact::*;
pub use counter::*;
pub use fields::*;
pub use named::*;
pub use tracing::*;
pub use typed::*;
pub(crate) use typed::{clamp_thread_name, thread_info};
pub use values::*;

use super::celog::{self, CelEvent};
use super::correlation::{self};
use super::header;
use super::kinds::{const_off, min_size, off, SPAN_FLAG_TRACE_CONTEXT};
use super::{copy_small, put_u32, put_u64, CommonHeader, EncodeError, TraceEventKind as K};

// ---- offsets and sizes, all from the kind table --------------------------------------------

const TICK_START_SIZE: usize = min_size(K::TICK_START);
const TICK_END_SIZE: usize = min_size(K::TICK_END);
const TICK_OVERLOAD: usize = off(K::TICK_END, "overload_level");
const TICK_MULTIPLIER: usize = off(K::TICK_END, "tick_multiplier");
const PHASE_SIZE: usize = min_size(K::PHASE_START);
const PHASE: usize = off(K::PHASE_START, "phase");
const INSTANT_SIZE: usize = min_size(K::INSTANT);
const INSTANT_NAME_ID: usize = off(K::INSTANT, "name_id");
const INSTANT_PAYLOAD: usize = off(K::INSTANT, "payload");
const SPAN_DURATION: usize = off(K::NAMED_SPAN, "duration_ns");
const SPAN_ID: usize = off(K::NAMED_SPAN, "span_id");
const SPAN_PARENT: usize = off(K::NAMED_SPAN, "parent_span_id");
const SPAN_FLAGS: usize = off(K::NAMED_SPAN, "flags");
const NAMED_NAME: usize = off(K::NAMED_SPAN, "name");
const TRACED_HI: usize = off(K::TRACED_SPAN, "trace_id_hi");
const TRACED_LO: usize = off(K::TRACED_SPAN, "trace_id_lo");
const TRACED_NAME: usize = off(K::TRACED_SPAN, "name");
const THREAD_ID: usize = off(K::THREAD_INFO, "thread_id");
const THREAD_NAME_LEN: usize = off(K::THREAD_INFO, "name_len");
const THREAD_NAME: usize = off(K::THREAD_INFO, "name");
/// Offset of a CeLog record's event (its CEL_HEADER_V3 word, then the timestamp if any).
pub(crate) const CELOG_EVENT: usize = off(K::CELOG, "event");

// Shared layouts really are shared: checked at compile time against the table.
const _: () = {
    assert!(PHASE_SIZE == min_size(K::PHASE_END) && PHASE == off(K::PHASE_END, "phase"));
    assert!(SPAN_DURATION == off(K::TRACED_SPAN, "duration_ns"));
    assert!(SPAN_ID == off(K::TRACED_SPAN, "span_id"));
    assert!(SPAN_PARENT == off(K::TRACED_SPAN, "parent_span_id"));
    assert!(SPAN_FLAGS == off(K::TRACED_SPAN, "flags"));
    // Names are the last field of both span kinds (their size is name offset + len + NUL).
    assert!(min_size(K::NAMED_SPAN) == NAMED_NAME + 1);
    assert!(min_size(K::TRACED_SPAN) == TRACED_NAME + 1);
    // A TracingSpan is laid out as a TracedSpan (key and tracing id in the context's place).
    assert!(off(K::TRACING_SPAN, "key") == TRACED_HI);
    assert!(off(K::TRACING_SPAN, "tracing_id") == TRACED_LO);
    assert!(off(K::TRACING_SPAN, "name") == TRACED_NAME);
    assert!(min_size(K::TRACING_SPAN) == TRACED_NAME + 1);
    // ThreadInfo ends with the u8 thread_kind right after the name.
    assert!(min_size(K::THREAD_INFO) == THREAD_NAME + 1);
};

#[inline(always)]
fn reserve(d: &mut [u8], need: usize) -> Result<&mut [u8], EncodeError> {
    let have = d.len();
    d.get_mut(..need)
        .ok_or(EncodeError::DstTooSmall { need, have })
}

#[inline(always)]
fn check_size(size: usize) -> Result<(), EncodeError> {
    if size > CommonHeader::MAX_RECORD {
        Err(EncodeError::RecordTooLarge(size))
    } else {
        Ok(())
    }
}

// ---- fixed-size instants -------------------------------------------------------------------

/// Writes a TickStart record (12 bytes, header only) and returns its size.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 12 bytes.
///
/// ```
/// use typhon_recorder::codec::records::write_tick_start;
/// let mut d = [0u8; 12];
/// assert_eq!(write_tick_start(&mut d, 2, 1), Ok(12));
/// assert_eq!(d, [12, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0]);
/// ```
#[inline]
pub fn write_tick_start(d: &mut [u8], slot: u8, ts: i64) -> Result<usize, EncodeError> {
    let d = reserve(d, TICK_START_SIZE)?;
    header(d, TICK_START_SIZE, K::TICK_START, slot, ts);
    Ok(TICK_START_SIZE)
}

/// Writes a TickEnd record (14 bytes) and returns its size.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 14 bytes.
///
/// ```
/// use typhon_recorder::codec::records::write_tick_end;
/// let mut d = [0u8; 14];
/// assert_eq!(write_tick_end(&mut d, 2, 1, 3, 4), Ok(14));
/// assert_eq!(&d[..4], &[14, 0, 1, 2]);
/// assert_eq!(&d[12..], &[3, 4]);
/// ```
#[inline]
pub fn write_tick_end(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    overload_level: u8,
    tick_multiplier: u8,
) -> Result<usize, EncodeError> {
    let d = reserve(d, TICK_END_SIZE)?;
    header(d, TICK_END_SIZE, K::TICK_END, slot, ts);
    d[TICK_OVERLOAD] = overload_level;
    d[TICK_MULTIPLIER] = tick_multiplier;
    Ok(TICK_END_SIZE)
}

/// Writes a PhaseStart record (13 bytes) and returns its size.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 13 bytes.
///
/// ```
/// use typhon_recorder::codec::records::write_phase_start;
/// let mut d = [0u8; 13];
/// assert_eq!(write_phase_start(&mut d, 2, 1, 9), Ok(13));
/// assert_eq!((d[2], d[12]), (2, 9));
/// ```
#[inline]
pub fn write_phase_start(d: &mut [u8], slot: u8, ts: i64, phase: u8) -> Result<usize, EncodeError> {
    let d = reserve(d, PHASE_SIZE)?;
    header(d, PHASE_SIZE, K::PHASE_START, slot, ts);
    d[PHASE] = phase;
    Ok(PHASE_SIZE)
}

/// Writes a PhaseEnd record (13 bytes) and returns its size.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 13 bytes.
///
/// ```
/// use typhon_recorder::codec::records::write_phase_end;
/// let mut d = [0u8; 13];
/// assert_eq!(write_phase_end(&mut d, 2, 1, 9), Ok(13));
/// assert_eq!((d[2], d[12]), (3, 9));
/// ```
#[inline]
pub fn write_phase_end(d: &mut [u8], slot: u8, ts: i64, phase: u8) -> Result<usize, EncodeError> {
    let d = reserve(d, PHASE_SIZE)?;
    header(d, PHASE_SIZE, K::PHASE_END, slot, ts);
    d[PHASE] = phase;
    Ok(PHASE_SIZE)
}

/// Writes a generic Instant record (20 bytes) and returns its size.
///
/// # Errors
/// [`EncodeError::DstTooSmall`] if `d` is shorter than 20 bytes.
///
/// ```
/// use typhon_recorder::codec::records::write_instant;
/// let mut d = [0u8; 20];
/// assert_eq!(write_instant(&mut d, 2, 1, 5, -1), Ok(20));
/// assert_eq!(&d[12..], &[5, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
/// ```
#[inline]
pub fn write_instant(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    name_id: i32,
    payload: i32,
) -> Result<usize, EncodeError> {
    let d = reserve(d, INSTANT_SIZE)?;
    header(d, INSTANT_SIZE, K::INSTANT, slot, ts);
    put_u32(d, INSTANT_NAME_ID, name_id as u32);
    put_u32(d, INSTANT_PAYLOAD, payload as u32);
    Ok(INSTANT_SIZE)
}

/// Size of a ClockSync record.
pub(crate) const CLOCK_SYNC_SIZE: usize = min_size(K::CLOCK_SYNC);

/// Writes a ClockSync record (kind 254): `ts` on the recording's time base, with the
/// CLOCK_MONOTONIC and UNIX times read with it.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut b = [0u8; 28];
/// assert_eq!(write_clock_sync(&mut b, 0, 5, 6, 7).unwrap(), 28);
/// assert_eq!(decode(&b).unwrap().1, Record::ClockSync { monotonic_ns: 6, wall_ns: 7 });
/// ```
pub fn write_clock_sync(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    monotonic_ns: u64,
    wall_ns: u64,
) -> Result<usize, EncodeError> {
    let d = reserve(d, CLOCK_SYNC_SIZE)?;
    header(d, CLOCK_SYNC_SIZE, K::CLOCK_SYNC, slot, ts);
    put_u64(d, const_off!(K::CLOCK_SYNC, "monotonic_ns"), monotonic_ns);
    put_u64(d, const_off!(K::CLOCK_SYNC, "wall_ns"), wall_ns);
    Ok(CLOCK_SYNC_SIZE)
}

// ---- thread info ---------------------------------------------------------------------------

/// What a thread is for; a `u8` on the wire. Values without a name are kept in
/// [`Unknown`](ThreadKind::Unknown) and re-encode to the same byte.
///
/// ```
/// use typhon_recorder::codec::records::ThreadKind;
/// assert_eq!(ThreadKind::from_u8(1), ThreadKind::Worker);
/// assert_eq!(ThreadKind::from_u8(9), ThreadKind::Unknown(9));
/// assert_eq!(ThreadKind::Unknown(9).as_u8(), 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThreadKind {
    /// The main (game loop) thread (0).
    Main,
    /// A dedicated worker thread (1).
    Worker,
    /// A thread of a pool (2).
    Pool,
    /// Any other thread (3).
    Other,
    /// A value this crate has no name for. [`from_u8`](Self::from_u8) never produces it with
    /// 0..=3.
    Unknown(u8),
}

impl ThreadKind {
    /// The kind for a wire byte.
    ///
    /// ```
    /// use typhon_recorder::codec::records::ThreadKind;
    /// assert_eq!(ThreadKind::from_u8(0), ThreadKind::Main);
    /// ```
    #[inline]
    pub const fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Main,
            1 => Self::Worker,
            2 => Self::Pool,
            3 => Self::Other,
            v => Self::Unknown(v),
        }
    }

    /// The wire byte.
    ///
    /// ```
    /// use typhon_recorder::codec::records::ThreadKind;
    /// assert_eq!(ThreadKind::Pool.as_u8(), 2);
    /// ```
    #[inline]
    pub const fn as_u8(self) -> u8 {
        match self {
            Self::Main => 0,
            Self::Worker => 1,
            Self::Pool => 2,
            Self::Other => 3,
            Self::Unknown(v) => v,
        }
    }
}

/// Size of a ThreadInfo record for a name of `name.len()` bytes: `19 + name.len()`.
///
/// ```
/// use typhon_recorder::codec::records::thread_info_len;
/// assert_eq!(thread_info_len("main"), 23);
/// ```
#[inline]
pub const fn thread_info_len(name: &str) -> usize {
    THREAD_NAME + name.len() + 1
}

/// Writes a ThreadInfo record: `i32 thread_id, u16 name_len, name bytes, u8 thread_kind`.
///
/// # Errors
/// [`EncodeError::RecordTooLarge`] if the record would exceed 65534 bytes,
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`thread_info_len`].
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 32];
/// assert_eq!(write_thread_info(&mut d, 1, 0, 42, "io", ThreadKind::Worker), Ok(21));
/// assert_eq!(&d[12..21], &[42, 0, 0, 0, 2, 0, b'i', b'o', 1]);
/// ```
#[inline]
pub fn write_thread_info(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    thread_id: i32,
    name: &str,
    kind: ThreadKind,
) -> Result<usize, EncodeError> {
    let size = thread_info_len(name);
    check_size(size)?;
    let d = reserve(d, size)?;
    header(d, size, K::THREAD_INFO, slot, ts);
    put_u32(d, THREAD_ID, thread_id as u32);
    d[THREAD_NAME_LEN..THREAD_NAME_LEN + 2].copy_from_slice(&(name.len() as u16).to_le_bytes());
    d[THREAD_NAME..size - 1].copy_from_slice(name.as_bytes());
    d[size - 1] = kind.as_u8();
    Ok(size)
}

// ---- spans ---------------------------------------------------------------------------------

/// The span extension's values (the flags byte is implied by the kind: a NamedSpan writes 0, a
/// TracedSpan writes [`SPAN_FLAG_TRACE_CONTEXT`]).
///
/// ```
/// use typhon_recorder::codec::records::SpanExt;
/// let s = SpanExt { duration_ns: 10, span_id: (3 << 56) | 1, parent_span_id: 0 };
/// assert_eq!(s.span_id >> 56, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SpanExt {
    /// Span length in nanoseconds (the header timestamp is the start).
    pub duration_ns: i64,
    /// `(slot << 56) | per-slot counter`.
    pub span_id: u64,
    /// The enclosing span of the same thread, 0 at top level.
    pub parent_span_id: u64,
}

/// A span's 16-byte trace context: a W3C trace id or a command causal id
/// ([`correlation::command_causal_id`]).
///
/// ```
/// use typhon_recorder::codec::records::TraceContext;
/// let w3c = [0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
///            0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36];
/// let c = TraceContext::from_w3c_bytes(w3c);
/// assert_eq!(c.hi, 0xa64d_b377_352f_f94b);
/// assert_eq!(c.to_w3c_bytes(), w3c);
/// assert!(!c.is_command());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct TraceContext {
    /// High half: the first 8 bytes of a W3C id as a little-endian u64, or a command's `hi`.
    pub hi: u64,
    /// Low half: the last 8 bytes of a W3C id as a little-endian u64, or a command's `lo`.
    pub lo: u64,
}

/// A `(hi, lo)` pair as [`command_causal_id`](correlation::command_causal_id) returns it, so
/// that [`traced_span`](crate::traced_span) takes that result as it is.
///
/// ```
/// use typhon_recorder::{command_causal_id, TraceContext};
/// assert_eq!(TraceContext::from(command_causal_id(5, 100, 7)), TraceContext::from_command(5, 100, 7));
/// ```
impl From<(u64, u64)> for TraceContext {
    #[inline]
    fn from((hi, lo): (u64, u64)) -> Self {
        TraceContext { hi, lo }
    }
}

/// The `(hi, lo)` pair.
///
/// ```
/// use typhon_recorder::TraceContext;
/// let (hi, lo) = TraceContext { hi: 1, lo: 2 }.into();
/// assert_eq!((hi, lo), (1u64, 2u64));
/// ```
impl From<TraceContext> for (u64, u64) {
    #[inline]
    fn from(c: TraceContext) -> Self {
        (c.hi, c.lo)
    }
}

impl TraceContext {
    /// The context of a canonical 16-byte W3C trace id.
    ///
    /// ```
    /// use typhon_recorder::codec::records::TraceContext;
    /// let mut id = [0u8; 16];
    /// id[0] = 1;
    /// id[8] = 2;
    /// assert_eq!(TraceContext::from_w3c_bytes(id), TraceContext { hi: 1, lo: 2 });
    /// ```
    #[inline]
    pub fn from_w3c_bytes(id: [u8; 16]) -> Self {
        let mut hi = [0u8; 8];
        let mut lo = [0u8; 8];
        hi.copy_from_slice(&id[..8]);
        lo.copy_from_slice(&id[8..]);
        Self {
            hi: u64::from_le_bytes(hi),
            lo: u64::from_le_bytes(lo),
        }
    }

    /// The canonical 16-byte W3C trace id.
    ///
    /// ```
    /// use typhon_recorder::codec::records::TraceContext;
    /// let b = TraceContext { hi: 1, lo: 2 }.to_w3c_bytes();
    /// assert_eq!((b[0], b[8]), (1, 2));
    /// ```
    #[inline]
    pub fn to_w3c_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.hi.to_le_bytes());
        b[8..].copy_from_slice(&self.lo.to_le_bytes());
        b
    }

    /// The context of a command's causal id ([`correlation::command_causal_id`]).
    ///
    /// ```
    /// use typhon_recorder::codec::records::TraceContext;
    /// let c = TraceContext::from_command(5, 100, 7);
    /// assert!(c.is_command());
    /// assert_eq!(c.lo, 100 << 16 | 7);
    /// ```
    #[inline]
    pub const fn from_command(session: u32, drain_tick: u32, seq: u16) -> Self {
        let (hi, lo) = correlation::command_causal_id(session, drain_tick, seq);
        Self { hi, lo }
    }

    /// Whether this is a command's causal id rather than a W3C trace id
    /// ([`correlation::is_command_causal_id`] of `hi`).
    ///
    /// ```
    /// use typhon_recorder::codec::records::TraceContext;
    /// assert!(!TraceContext { hi: 1, lo: 2 }.is_command());
    /// ```
    #[inline]
    pub const fn is_command(self) -> bool {
        correlation::is_command_causal_id(self.hi)
    }
}

/// Size of a NamedSpan record: `38 + name.len()` (header, span extension, name, NUL).
///
/// ```
/// use typhon_recorder::codec::records::named_span_len;
/// assert_eq!(named_span_len(""), 38);
/// ```
#[inline]
pub const fn named_span_len(name: &str) -> usize {
    NAMED_NAME + name.len() + 1
}

/// Size of a TracedSpan record: `54 + name.len()` (header, span extension, trace context, name,
/// NUL).
///
/// ```
/// use typhon_recorder::codec::records::traced_span_len;
/// assert_eq!(traced_span_len("ab"), 56);
/// ```
#[inline]
pub const fn traced_span_len(name: &str) -> usize {
    TRACED_NAME + name.len() + 1
}

#[inline(always)]
fn check_name(name: &str, size: usize) -> Result<(), EncodeError> {
    if has_nul(name.as_bytes()) {
        return Err(EncodeError::NameHasNul);
    }
    check_size(size)
}

#[inline(always)]
fn span_ext(d: &mut [u8], span: &SpanExt, flags: u8) {
    put_u64(d, SPAN_DURATION, span.duration_ns as u64);
    put_u64(d, SPAN_ID, span.span_id);
    put_u64(d, SPAN_PARENT, span.parent_span_id);
    d[SPAN_FLAGS] = flags;
}

/// Writes a NamedSpan record (kind 246, flags 0, NUL-terminated name); `ts` is the span start.
///
/// # Errors
/// [`EncodeError::NameHasNul`] if `name` contains a NUL, [`EncodeError::RecordTooLarge`] if the
/// record would exceed 65534 bytes, [`EncodeError::DstTooSmall`] if `d` is shorter than
/// [`named_span_len`]. Names are never truncated.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 40];
/// let span = SpanExt { duration_ns: 1, span_id: 2, parent_span_id: 3 };
/// assert_eq!(write_named_span(&mut d, 1, 0, &span, "ab"), Ok(40));
/// assert_eq!(&d[36..], &[0, b'a', b'b', 0]);
/// ```
#[inline]
pub fn write_named_span(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = named_span_len(name);
    check_name(name, size)?;
    fill_span(reserve(d, size)?, slot, ts, span, None, false, name);
    Ok(size)
}

/// Fills `d` (exactly [`named_span_len`] or [`traced_span_len`] bytes) with a span record whose
/// name the caller has already checked (no NUL, size in range): the recorder checks a name
/// once, when the span opens, and writes the record with this when it ends.
#[inline(always)]
pub(crate) fn fill_span(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    context: Option<TraceContext>,
    tracing: bool,
    name: &str,
) {
    debug_assert!(!has_nul(name.as_bytes()));
    let size = d.len();
    // The fixed part is written through an array of its exact length, so its field offsets
    // need no bounds checks; the name then goes into what follows it.
    let name_dst = match context {
        None => {
            let (fixed, rest) = d.split_at_mut(NAMED_NAME);
            let fixed: &mut [u8; NAMED_NAME] = fixed.try_into().expect("split at its length");
            header(fixed, size, K::NAMED_SPAN, slot, ts);
            span_ext(fixed, span, 0);
            rest
        }
        Some(c) => {
            let (fixed, rest) = d.split_at_mut(TRACED_NAME);
            let fixed: &mut [u8; TRACED_NAME] = fixed.try_into().expect("split at its length");
            // A TracingSpan has the TracedSpan layout: its key and tracing id in the 16 bytes.
            let kind = if tracing {
                K::TRACING_SPAN
            } else {
                K::TRACED_SPAN
            };
            header(fixed, size, kind, slot, ts);
            span_ext(fixed, span, SPAN_FLAG_TRACE_CONTEXT);
            put_u64(fixed, TRACED_HI, c.hi);
            put_u64(fixed, TRACED_LO, c.lo);
            rest
        }
    };
    let (text, nul) = name_dst.split_at_mut(name.len());
    // The caller sized `d` from the name: exactly one byte, the NUL, is left.
    let [nul] = nul else {
        panic!("span record buffer of the wrong size");
    };
    copy_small(text, name.as_bytes());
    *nul = 0;
}

/// Whether `b` contains a NUL byte; names of up to 16 bytes are checked a word at a time.
///
/// ```
/// use typhon_recorder::codec::records::has_nul;
/// assert!(!has_nul(b"update"));
/// assert!(has_nul(b"up\0date"));
/// assert!(has_nul(b"a much longer span name\0"));
/// assert!(!has_nul(b""));
/// ```
#[inline(always)]
pub fn has_nul(b: &[u8]) -> bool {
    // A word has a zero byte iff (w - 0x01..01) & !w & 0x80..80 is non-zero.
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(LO) & !w & HI != 0;
    let n = b.len();
    if (8..=16).contains(&n) {
        // Two words that overlap in the middle cover every byte.
        let a = u64::from_le_bytes(b[..8].try_into().unwrap());
        let z = u64::from_le_bytes(b[n - 8..].try_into().unwrap());
        zero(a) || zero(z)
    } else if (4..8).contains(&n) {
        let a = u32::from_le_bytes(b[..4].try_into().unwrap()) as u64 | (0xFFFF_FFFF << 32);
        let z = u32::from_le_bytes(b[n - 4..].try_into().unwrap()) as u64 | (0xFFFF_FFFF << 32);
        zero(a) || zero(z)
    } else {
        b.contains(&0)
    }
}

/// Writes a TracedSpan record (kind 11, flags bit 0 set, trace context, NUL-terminated name);
/// `ts` is the span start.
///
/// # Errors
/// As [`write_named_span`], with [`traced_span_len`] as the size.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let mut d = [0u8; 64];
/// let span = SpanExt { duration_ns: 1, span_id: 2, parent_span_id: 3 };
/// let ctx = TraceContext { hi: 4, lo: 5 };
/// assert_eq!(write_traced_span(&mut d, 1, 0, &span, ctx, "x"), Ok(55));
/// assert_eq!((d[2], d[36], d[37], d[45], d[53], d[54]), (11, 1, 4, 5, b'x', 0));
/// ```
#[inline]
pub fn write_traced_span(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    span: &SpanExt,
    context: TraceContext,
    name: &str,
) -> Result<usize, EncodeError> {
    let size = traced_span_len(name);
    check_name(name, size)?;
    fill_span(
        reserve(d, size)?,
        slot,
        ts,
        span,
        Some(context),
        false,
        name,
    );
    Ok(size)
}

// ---- CeLog records -------------------------------------------------------------------------

/// Size of a kind-255 CeLog record: 12 + [`celog::encoded_len`] (padding included).
///
/// ```
/// use typhon_recorder::codec::records::celog_record_len;
/// assert_eq!(celog_record_len(6, false, false, 0), 24);
/// assert_eq!(celog_record_len(4, true, true, 1), 28);
/// ```
#[inline]
pub const fn celog_record_len(data_len: usize, timestamp: bool, flagged: bool, cpu: u32) -> usize {
    CELOG_EVENT + celog::encoded_len(data_len, timestamp, flagged, cpu)
}

/// Writes a kind-255 record: the common header, then the complete CeLog event, padding included
/// (encoded by [`celog::encode_event`]).
///
/// # Errors
/// [`EncodeError::CeLog`] if the event cannot be encoded (data over 4095 bytes, invalid id),
/// [`EncodeError::DstTooSmall`] if `d` is shorter than [`celog_record_len`].
///
/// ```
/// use typhon_recorder::codec::{celog::*, records::*};
/// let ev = CelEvent { id: CELID_SYNC_END, timestamp: None, flag: None, cpu: 0, data: &[] };
/// let mut d = [0u8; 16];
/// assert_eq!(write_celog_record(&mut d, 0, 5, &ev), Ok(16));
/// assert_eq!(&d[..4], &[16, 0, 255, 0]);
/// assert_eq!(&d[12..], &[0x00, 0x00, 0xFE, 0x1F]);
/// ```
#[inline]
pub fn write_celog_record(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    event: &CelEvent<'_>,
) -> Result<usize, EncodeError> {
    let have = d.len();
    let tail = d.get_mut(CELOG_EVENT..).unwrap_or(&mut []);
    let n = match event.encode(tail) {
        Ok(n) => n,
        Err(celog::CelogError::DstTooSmall { need, .. }) => {
            return Err(EncodeError::DstTooSmall {
                need: CELOG_EVENT + need,
                have,
            })
        }
        Err(e) => return Err(EncodeError::CeLog(e)),
    };
    let size = CELOG_EVENT + n;
    header(d, size, K::CELOG, slot, ts);
    Ok(size)
}

//! Wire codecs: the 12-byte common header, the kind table, and one module per record family.
//!
//! Every record the recorder writes starts with the same packed, little-endian header:
//!
//! ```text
//!  0      2      3      4                              12
//!  +------+------+------+------------------------------+---------------------
//!  | size | kind | slot |        timestamp (i64)       | payload (per kind)
//!  +------+------+------+------------------------------+---------------------
//!    u16    u8     u8
//! ```
//!
//! `size` counts the whole record, header included (12..=65534; 0 and 0xFFFF are reserved for the
//! ring's framing). What follows the header is described by exactly one entry of [`kinds::KINDS`],
//! the kind table; encoders, decoders, the trace.dat event formats and the CLI's printing all read
//! that table, so a layout is written down once.

pub mod celog;
pub mod correlation;
pub mod kinds;
pub mod records;

pub use kinds::{kind_def, FieldDef, FieldType, KindDef, Shape, KINDS};

use core::fmt;

/// A record kind: the `u8` at offset 2 of every record.
///
/// A transparent newtype rather than an enum so that kinds written by newer or foreign writers stay
/// representable; [`kind_def`] says whether the kind is one this crate knows.
///
/// ```
/// use typhon_recorder::codec::TraceEventKind;
/// assert_eq!(TraceEventKind::INGRESS_RECEIVED.0, 236);
/// assert_eq!(TraceEventKind(236), TraceEventKind::INGRESS_RECEIVED);
/// assert_eq!(TraceEventKind::CELOG.name(), Some("CeLog"));
/// assert_eq!(TraceEventKind(200).name(), None);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct TraceEventKind(pub u8);

impl TraceEventKind {
    /// Start of a scheduler tick (instant, no payload).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TICK_START.0, 0);
    /// ```
    pub const TICK_START: Self = Self(0);
    /// End of a scheduler tick: `u8 overload_level, u8 tick_multiplier`.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TICK_END.0, 1);
    /// ```
    pub const TICK_END: Self = Self(1);
    /// Start of a tick phase: `u8 phase`.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::PHASE_START.0, 2);
    /// ```
    pub const PHASE_START: Self = Self(2);
    /// End of a tick phase: `u8 phase`.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::PHASE_END.0, 3);
    /// ```
    pub const PHASE_END: Self = Self(3);
    /// A generic instant: `i32 name_id, i32 payload`.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::INSTANT.0, 6);
    /// ```
    pub const INSTANT: Self = Self(6);
    /// A span carrying a 16-byte trace context (W3C trace id or command causal id) and a name.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACED_SPAN.0, 11);
    /// ```
    pub const TRACED_SPAN: Self = Self(11);
    /// Thread metadata, written when a thread claims a slot.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::THREAD_INFO.0, 77);
    /// ```
    pub const THREAD_INFO: Self = Self(77);
    /// A network message was received (correlation instant).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::INGRESS_RECEIVED.0, 236);
    /// ```
    pub const INGRESS_RECEIVED: Self = Self(236);
    /// A received message was admitted for the next drain tick (correlation instant).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::INGRESS_ADMITTED.0, 237);
    /// ```
    pub const INGRESS_ADMITTED: Self = Self(237);
    /// A received message was dropped (correlation instant).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::INGRESS_DROPPED.0, 238);
    /// ```
    pub const INGRESS_DROPPED: Self = Self(238);
    /// An admitted command was consumed by a system (correlation instant).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::COMMAND_CONSUMED.0, 239);
    /// ```
    pub const COMMAND_CONSUMED: Self = Self(239);
    /// A reply or state update was sent (correlation instant).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::EGRESS_SENT.0, 240);
    /// ```
    pub const EGRESS_SENT: Self = Self(240);
    /// A span with a NUL-terminated name and no trace context.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_SPAN.0, 246);
    /// ```
    pub const NAMED_SPAN: Self = Self(246);
    /// One entry (enter → exit on one thread) of a `tracing` span (SPEC §12): the span
    /// extension (flags bit 0 set: 16 bytes follow), u64 key (the span's recording-unique key,
    /// shared by all its entries and its TracingSpanInfo), u64 tracing_id (`tracing`'s own id,
    /// reused after close), NUL-terminated display name.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_SPAN.0, 247);
    /// ```
    pub const TRACING_SPAN: Self = Self(247);
    /// A `tracing` span's name, target, level and fields, written once when it is created and
    /// again by each `Span::record` (then with every field so far): u64 key, u64 tracing_id,
    /// u8 level, then `__data_loc` strings name, target, fields.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_SPAN_INFO.0, 248);
    /// ```
    pub const TRACING_SPAN_INFO: Self = Self(248);
    /// A `tracing` event: u64 span_key (the current span's key, 0 none), u8 level, then
    /// `__data_loc` strings target, message, fields.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_EVENT.0, 249);
    /// ```
    pub const TRACING_EVENT: Self = Self(249);
    /// `follows_from`: u64 key (the span that follows), u64 follows_key (the span it follows).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_FOLLOWS.0, 250);
    /// ```
    pub const TRACING_FOLLOWS: Self = Self(250);
    /// Kind 251: a `tracing` callsite's definition (name, target, level, file, line, field
    /// names), written once per recording; the records below refer to it by id.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_CALLSITE.0, 251);
    /// ```
    pub const TRACING_CALLSITE: Self = Self(251);
    /// Kind 252: a `tracing` span's description as its callsite id and typed field values.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_SPAN_VALUES.0, 252);
    /// ```
    pub const TRACING_SPAN_VALUES: Self = Self(252);
    /// Kind 253: a `tracing` event as its callsite id and typed field values.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_EVENT_VALUES.0, 253);
    /// ```
    pub const TRACING_EVENT_VALUES: Self = Self(253);
    /// Kind 221: a TracingEntry in 20 bytes: u32 duration_ns, u32 key. Written for
    /// an entry whose key and duration fit 32 bits; readers take it as the TracingEntry it
    /// stands for.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_ENTRY_SHORT.0, 221);
    /// ```
    pub const TRACING_ENTRY_SHORT: Self = Self(221);
    /// Kind 222: a TracingSpanValues packed: varint key, varint parent (0: a root,
    /// else `key - parent_key`), varint callsite, then the values. Readers take it as the
    /// TracingSpanValues it stands for.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_SPAN_PACKED.0, 222);
    /// ```
    pub const TRACING_SPAN_PACKED: Self = Self(222);
    /// Kind 223: a TracingEventValues packed: varint span_key, varint callsite,
    /// then the values.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_EVENT_PACKED.0, 223);
    /// ```
    pub const TRACING_EVENT_PACKED: Self = Self(223);
    /// Kind 224: a TracingClose in 16 bytes: u32 key.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_CLOSE_SHORT.0, 224);
    /// ```
    pub const TRACING_CLOSE_SHORT: Self = Self(224);
    /// Kind 226: one entry of a described `tracing` span, compact: the span extension's
    /// `duration_ns`, then u64 key (28 bytes; see the kind table).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_ENTRY.0, 226);
    /// ```
    pub const TRACING_ENTRY: Self = Self(226);
    /// Kind 227: a `tracing` span closed: u64 key (20 bytes).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::TRACING_CLOSE.0, 227);
    /// ```
    pub const TRACING_CLOSE: Self = Self(227);
    /// Kind 228: a static name's definition in its slot (SPEC §15): u32 name_id, then the
    /// NUL-terminated UTF-8 name. Written once per slot before the first record that uses the
    /// id (kinds 229–232); ids are per slot and never change meaning within a recording.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAME_DEFINITION.0, 228);
    /// ```
    pub const NAME_DEFINITION: Self = Self(228);
    /// Kind 229: a NamedSpan whose name is the slot's definition `name_id` (span extension,
    /// flags bit 0 clear, then u32 name_id; 41 bytes).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_SPAN_ID.0, 229);
    /// ```
    pub const NAMED_SPAN_ID: Self = Self(229);
    /// Kind 230: a NamedInstant by name id: i32 payload, u32 name_id (20 bytes).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_INSTANT_ID.0, 230);
    /// ```
    pub const NAMED_INSTANT_ID: Self = Self(230);
    /// Kind 231: a NamedPhaseStart by name id: u8 phase, u32 name_id (17 bytes).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_PHASE_START_ID.0, 231);
    /// ```
    pub const NAMED_PHASE_START_ID: Self = Self(231);
    /// Kind 232: a NamedPhaseEnd by name id, laid out as NamedPhaseStartId.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_PHASE_END_ID.0, 232);
    /// ```
    pub const NAMED_PHASE_END_ID: Self = Self(232);
    /// Kind 234: a counter's value with its name inline: i64 value, u8 flags (bit 0: the value
    /// is an f64's bits, [`records::COUNTER_F64`]), then the NUL-terminated UTF-8 name.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::COUNTER.0, 234);
    /// ```
    pub const COUNTER: Self = Self(234);
    /// Kind 235: a Counter whose name is the slot's definition `name_id`: i64 value, u8 flags,
    /// u32 name_id (25 bytes).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::COUNTER_ID.0, 235);
    /// ```
    pub const COUNTER_ID: Self = Self(235);
    /// An instant named by its own string: i32 payload, then the NUL-terminated UTF-8 name
    /// (kind 241, unused by SPEC §2; `instant(name_id, payload)` is the numbered form).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_INSTANT.0, 241);
    /// ```
    pub const NAMED_INSTANT: Self = Self(241);
    /// A phase's start with its name: u8 phase, then the NUL-terminated UTF-8 name (kind 242).
    /// It pairs with the next PhaseEnd or NamedPhaseEnd of the same phase on its slot.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_PHASE_START.0, 242);
    /// ```
    pub const NAMED_PHASE_START: Self = Self(242);
    /// A phase's end with its name, laid out as NamedPhaseStart (kind 243).
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::NAMED_PHASE_END.0, 243);
    /// ```
    pub const NAMED_PHASE_END: Self = Self(243);
    /// One complete CEL_HEADER_V3 CeLog event as payload.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::CELOG.0, 255);
    /// ```
    pub const CELOG: Self = Self(255);
    /// A clock-sync record (kind 254, the recorder's own stream): u64 `monotonic_ns` (a
    /// CLOCK_MONOTONIC reading) and u64 `wall_ns` (CLOCK_REALTIME, UNIX ns), both read when the
    /// record's own time (the recorder's tick clock, converted as every record's) was. Readers
    /// map a record's time through the recording's clock-syncs, piecewise (SPEC §16): the tick
    /// clock's drift from CLOCK_MONOTONIC then accumulates over one interval between syncs (at
    /// most a minute), not over the whole run.
    ///
    /// ```
    /// # use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::CLOCK_SYNC.0, 254);
    /// ```
    pub const CLOCK_SYNC: Self = Self(254);

    /// The kind's name from the kind table, or `None` for a kind this crate does not know.
    ///
    /// ```
    /// use typhon_recorder::codec::TraceEventKind;
    /// assert_eq!(TraceEventKind::EGRESS_SENT.name(), Some("EgressSent"));
    /// ```
    pub fn name(self) -> Option<&'static str> {
        kind_def(self).map(|d| d.name)
    }
}

impl fmt::Display for TraceEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "Kind[{}]", self.0),
        }
    }
}

/// Why a record (or part of one) could not be decoded. Decoders return it; they never panic.
///
/// ```
/// use typhon_recorder::codec::{CommonHeader, DecodeError};
/// assert_eq!(CommonHeader::read(&[0u8; 5]), Err(DecodeError::Truncated { need: 12, have: 5 }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ends before the structure does.
    Truncated {
        /// Bytes the structure needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The header's size field is outside 12..=65534 (0 and 0xFFFF are ring framing).
    BadSize(u16),
    /// The kind is not one this decoder handles.
    UnexpectedKind(TraceEventKind),
    /// The header's size disagrees with the size the kind's layout requires.
    SizeMismatch {
        /// The record's kind.
        kind: TraceEventKind,
        /// The size the layout requires (the minimum, for variable-size kinds).
        expected: usize,
        /// The size in the header.
        found: usize,
    },
    /// A string field is not terminated inside the record.
    MissingNul,
    /// A string field is not valid UTF-8.
    BadUtf8,
    /// A field holds a value its layout forbids (e.g. span flags disagreeing with the kind).
    BadField(&'static str),
    /// The CeLog event inside a kind-255 record is malformed.
    CeLog(celog::CelogError),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { need, have } => {
                write!(f, "truncated: need {need} bytes, have {have}")
            }
            DecodeError::BadSize(s) => write!(f, "record size {s} is outside 12..=65534"),
            DecodeError::UnexpectedKind(k) => write!(f, "unexpected record kind {k}"),
            DecodeError::SizeMismatch {
                kind,
                expected,
                found,
            } => write!(f, "{kind} record has size {found}, layout needs {expected}"),
            DecodeError::MissingNul => f.write_str("string field is not NUL-terminated"),
            DecodeError::BadUtf8 => f.write_str("string field is not valid UTF-8"),
            DecodeError::BadField(name) => write!(f, "field {name} holds an invalid value"),
            DecodeError::CeLog(e) => write!(f, "CeLog record: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DecodeError::CeLog(e) => Some(e),
            _ => None,
        }
    }
}

impl From<celog::CelogError> for DecodeError {
    fn from(e: celog::CelogError) -> Self {
        DecodeError::CeLog(e)
    }
}

/// Why a record could not be encoded. Encoders return it instead of truncating or panicking;
/// nothing is written on error.
///
/// ```
/// use typhon_recorder::codec::{records::*, EncodeError};
/// let span = SpanExt { duration_ns: 1, span_id: 2, parent_span_id: 0 };
/// assert_eq!(write_named_span(&mut [0u8; 64], 1, 0, &span, "a\0b"), Err(EncodeError::NameHasNul));
/// assert_eq!(
///     write_named_span(&mut [0u8; 8], 1, 0, &span, "ab"),
///     Err(EncodeError::DstTooSmall { need: 40, have: 8 })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The destination is too small for the whole record.
    DstTooSmall {
        /// Bytes the record needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A NUL-terminated name contains a NUL byte.
    NameHasNul,
    /// The record would exceed 65534 bytes (the size it would have).
    RecordTooLarge(usize),
    /// The CeLog event cannot be encoded.
    CeLog(celog::CelogError),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::DstTooSmall { need, have } => {
                write!(f, "record needs {need} bytes, destination has {have}")
            }
            EncodeError::NameHasNul => f.write_str("name contains a NUL byte"),
            EncodeError::RecordTooLarge(n) => {
                write!(f, "record of {n} bytes exceeds the 65534-byte maximum")
            }
            EncodeError::CeLog(e) => write!(f, "CeLog record: {e}"),
        }
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EncodeError::CeLog(e) => Some(e),
            _ => None,
        }
    }
}

impl From<celog::CelogError> for EncodeError {
    fn from(e: celog::CelogError) -> Self {
        EncodeError::CeLog(e)
    }
}

/// Writes the common header of a `size`-byte record into `d[..12]` (for the typed encoders).
#[inline(always)]
pub(crate) fn header(d: &mut [u8], size: usize, kind: TraceEventKind, slot: u8, ts: i64) {
    CommonHeader {
        size: size as u16,
        kind,
        slot,
        timestamp: ts,
    }
    .write(d);
}

/// The 12-byte header at the start of every record.
///
/// ```
/// use typhon_recorder::codec::{CommonHeader, TraceEventKind};
/// let h = CommonHeader { size: 12, kind: TraceEventKind::TICK_START, slot: 3, timestamp: -5 };
/// let mut buf = [0u8; 12];
/// h.write(&mut buf);
/// assert_eq!(buf, [12, 0, 0, 3, 0xFB, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
/// assert_eq!(CommonHeader::read(&buf), Ok(h));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommonHeader {
    /// Total record bytes, header included.
    pub size: u16,
    /// The record kind.
    pub kind: TraceEventKind,
    /// The writer's thread slot (0 = the recorder itself).
    pub slot: u8,
    /// Span start or instant time. Raw clock ticks inside a ring; nanoseconds in pages and files.
    pub timestamp: i64,
}

impl CommonHeader {
    /// Bytes in the header.
    ///
    /// ```
    /// # use typhon_recorder::codec::CommonHeader;
    /// assert_eq!(CommonHeader::SIZE, 12);
    /// ```
    pub const SIZE: usize = 12;
    /// Offset of the timestamp field inside a record.
    ///
    /// ```
    /// # use typhon_recorder::codec::CommonHeader;
    /// assert_eq!(CommonHeader::TIMESTAMP_OFFSET, 4);
    /// ```
    pub const TIMESTAMP_OFFSET: usize = 4;
    /// The header's fields, the one description of its layout: C type, field name, offset,
    /// size and signedness, as trace.dat's event formats declare them (SPEC §7), in the order
    /// [`write`](Self::write) stores them (size, kind, slot, timestamp). A test checks each
    /// field's bytes against `write`; the flusher and the format writer take their offsets
    /// from here.
    ///
    /// ```
    /// # use typhon_recorder::codec::CommonHeader;
    /// assert_eq!(CommonHeader::FIELDS[3], ("s64", "common_ts", 4, 8, true));
    /// ```
    pub const FIELDS: [(&'static str, &'static str, usize, usize, bool); 4] = [
        ("unsigned short", "common_size", 0, 2, false),
        ("unsigned char", "common_type", Self::KIND_OFFSET, 1, false),
        ("unsigned char", "common_pid", 3, 1, false),
        ("s64", "common_ts", Self::TIMESTAMP_OFFSET, 8, true),
    ];
    /// Offset of the kind byte inside a record.
    ///
    /// ```
    /// # use typhon_recorder::codec::CommonHeader;
    /// assert_eq!(CommonHeader::KIND_OFFSET, 2);
    /// ```
    pub const KIND_OFFSET: usize = 2;
    /// Largest record size the format allows (0xFFFF is the ring's wrap marker).
    ///
    /// ```
    /// # use typhon_recorder::codec::CommonHeader;
    /// assert_eq!(CommonHeader::MAX_RECORD, 0xFFFE);
    /// ```
    pub const MAX_RECORD: usize = 0xFFFE;

    /// Writes the header into `d[..12]`.
    ///
    /// # Panics
    /// If `d` is shorter than 12 bytes.
    ///
    /// ```
    /// # use typhon_recorder::codec::{CommonHeader, TraceEventKind};
    /// let mut b = [0u8; 12];
    /// CommonHeader { size: 14, kind: TraceEventKind::TICK_END, slot: 1, timestamp: 7 }.write(&mut b);
    /// assert_eq!(&b[..4], &[14, 0, 1, 1]);
    /// ```
    #[inline(always)]
    pub fn write(&self, d: &mut [u8]) {
        let d = &mut d[..Self::SIZE];
        // size, kind and slot as one little-endian word: one store on the hot path, not three.
        let word = self.size as u32 | (self.kind.0 as u32) << 16 | (self.slot as u32) << 24;
        d[0..4].copy_from_slice(&word.to_le_bytes());
        const TS: usize = CommonHeader::TIMESTAMP_OFFSET;
        d[TS..TS + 8].copy_from_slice(&self.timestamp.to_le_bytes());
    }

    /// Reads the header at the start of `s`, checking only that 12 bytes are there and that the
    /// size field is a record size (not 0, 1..11 or 0xFFFF).
    ///
    /// ```
    /// # use typhon_recorder::codec::{CommonHeader, DecodeError};
    /// let mut b = [0u8; 12];
    /// b[0] = 0xFF; b[1] = 0xFF;
    /// assert_eq!(CommonHeader::read(&b), Err(DecodeError::BadSize(0xFFFF)));
    /// ```
    pub fn read(s: &[u8]) -> Result<Self, DecodeError> {
        if s.len() < Self::SIZE {
            return Err(DecodeError::Truncated {
                need: Self::SIZE,
                have: s.len(),
            });
        }
        let size = u16::from_le_bytes([s[0], s[1]]);
        if (size as usize) < Self::SIZE || size == 0xFFFF {
            return Err(DecodeError::BadSize(size));
        }
        Ok(Self {
            size,
            kind: TraceEventKind(s[Self::KIND_OFFSET]),
            slot: s[3],
            timestamp: i64::from_le_bytes(
                s[Self::TIMESTAMP_OFFSET..Self::TIMESTAMP_OFFSET + 8]
                    .try_into()
                    .unwrap(),
            ),
        })
    }

    /// Reads the header and returns it with the whole record (`s[..size]`), checking that the
    /// buffer holds all of it.
    ///
    /// ```
    /// # use typhon_recorder::codec::{CommonHeader, DecodeError};
    /// let mut b = [0u8; 16];
    /// b[0] = 14;
    /// let (h, rec) = CommonHeader::read_record(&b).unwrap();
    /// assert_eq!((h.size, rec.len()), (14, 14));
    /// b[0] = 20;
    /// assert_eq!(CommonHeader::read_record(&b), Err(DecodeError::Truncated { need: 20, have: 16 }));
    /// ```
    pub fn read_record(s: &[u8]) -> Result<(Self, &[u8]), DecodeError> {
        let h = Self::read(s)?;
        let n = h.size as usize;
        if s.len() < n {
            return Err(DecodeError::Truncated {
                need: n,
                have: s.len(),
            });
        }
        Ok((h, &s[..n]))
    }
}

// Little-endian stores and loads shared by the codecs. Callers pass offsets that are in bounds
// (encoders reslice the destination to the record size first; decoders check sizes first).
#[inline(always)]
pub(crate) fn put_u16(d: &mut [u8], off: usize, v: u16) {
    d[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline(always)]
pub(crate) fn put_u32(d: &mut [u8], off: usize, v: u32) {
    d[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
/// `dst.copy_from_slice(src)` (equal lengths), with 4 to 32 bytes copied as two overlapping
/// loads and stores instead of a call to `memcpy`: span names on the write path, records on the
/// flusher's page path.
#[inline(always)]
pub(crate) fn copy_small(dst: &mut [u8], src: &[u8]) {
    #[inline(always)]
    fn two<const N: usize>(dst: &mut [u8], src: &[u8]) {
        let n = src.len();
        let (a, z): ([u8; N], [u8; N]) = (
            src[..N].try_into().unwrap(),
            src[n - N..].try_into().unwrap(),
        );
        dst[..N].copy_from_slice(&a);
        dst[n - N..n].copy_from_slice(&z);
    }
    debug_assert_eq!(dst.len(), src.len());
    match src.len() {
        4..=7 => two::<4>(dst, src),
        8..=16 => two::<8>(dst, src),
        17..=32 => two::<16>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}
#[inline(always)]
pub(crate) fn put_u64(d: &mut [u8], off: usize, v: u64) {
    d[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
#[inline(always)]
pub(crate) fn get_u16(s: &[u8], off: usize) -> u16 {
    let mut b = [0u8; 2];
    b.copy_from_slice(&s[off..off + 2]);
    u16::from_le_bytes(b)
}
#[inline(always)]
pub(crate) fn get_u32(s: &[u8], off: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[off..off + 4]);
    u32::from_le_bytes(b)
}
#[inline(always)]
pub(crate) fn get_u64(s: &[u8], off: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[off..off + 8]);
    u64::from_le_bytes(b)
}

//! The correlation instants, kinds 236–240: a Rust port of Typhon's `CorrelationInstantCodec`.
//!
//! Each record is the 12-byte common header followed by a fixed payload:
//!
//! ```text
//! IngressReceived  u32 session, u16 seq, u16 wire_idx, u16 bytes        (10 B → 22 B record)
//! IngressAdmitted  u32 session, u16 seq, u16 wire_idx, u32 drain_tick   (12 B → 24 B)
//! IngressDropped   u32 session, u16 seq, u8 reason                      ( 7 B → 19 B)
//! CommandConsumed  u32 session, u16 seq, u16 sys_idx                    ( 8 B → 20 B)
//! EgressSent       u32 session, u32 tick, u32 bytes, u16 acks           (14 B → 26 B)
//! ```
//!
//! Sizes and offsets come from the kind table ([`crate::codec::kinds`]); the writers are
//! straight-line stores for the recorder's hot path.
//!
//! ```
//! use typhon_recorder::codec::correlation::*;
//! let mut buf = [0u8; 32];
//! write_consumed(&mut buf, 4, 1_000, 7, 9, 2);
//! let d = decode(&buf).unwrap();
//! assert_eq!((d.slot, d.timestamp), (4, 1_000));
//! assert_eq!(d.instant, CorrelationInstant::CommandConsumed { session: 7, seq: 9, sys_idx: 2 });
//! ```

use super::header;
use super::kinds::{min_size, off};
use super::{get_u16, get_u32};
use super::{put_u16, put_u32, CommonHeader, DecodeError, TraceEventKind as K};

/// The marker in the high half of a command's causal id: `"TYC"` in the top three bytes
/// (6077962839392256000).
///
/// ```
/// use typhon_recorder::codec::correlation::COMMAND_MARKER;
/// assert_eq!(COMMAND_MARKER, 6077962839392256000);
/// assert_eq!(&COMMAND_MARKER.to_be_bytes()[..3], b"TYC");
/// ```
pub const COMMAND_MARKER: u64 = 0x5459_4300_0000_0000;

/// The causal id of a client command: `hi = COMMAND_MARKER | session`,
/// `lo = drain_tick << 16 | seq`. Unique per session and tick although `seq` wraps; `hi` is never
/// zero, so it never reads as "no causal id". [`traced_span`](crate::traced_span) takes the
/// pair as it is (it converts into a [`TraceContext`](crate::TraceContext)).
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let _s = typhon_recorder::traced_span("apply", command_causal_id(5, 0x10, 0x0203));
/// let (hi, lo) = command_causal_id(5, 0x10, 0x0203);
/// assert_eq!(hi, COMMAND_MARKER | 5);
/// assert_eq!(lo, 0x10_0203);
/// assert!(is_command_causal_id(hi));
/// ```
#[inline]
pub const fn command_causal_id(session: u32, drain_tick: u32, seq: u16) -> (u64, u64) {
    (
        COMMAND_MARKER | session as u64,
        (drain_tick as u64) << 16 | seq as u64,
    )
}

/// The `(session, drain_tick, seq)` a command's causal id was made from
/// ([`command_causal_id`] read back), or `None` for a W3C trace id.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let (hi, lo) = command_causal_id(5, 0x10, 0x0203);
/// assert_eq!(command_of_causal_id(hi, lo), Some((5, 0x10, 0x0203)));
/// assert_eq!(command_of_causal_id(0x4bf9_2f35_77b3_4da6, 1), None);
/// ```
#[inline]
pub const fn command_of_causal_id(hi: u64, lo: u64) -> Option<(u32, u32, u16)> {
    if is_command_causal_id(hi) {
        Some((hi as u32, (lo >> 16) as u32, lo as u16))
    } else {
        None
    }
}

/// True when `hi` is the high half of a command's causal id (its top 32 bits equal those of
/// [`COMMAND_MARKER`]) rather than of a W3C trace id.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// assert!(is_command_causal_id(COMMAND_MARKER | 0xFFFF_FFFF));
/// assert!(!is_command_causal_id(0x4bf9_2f35_77b3_4da6));
/// ```
#[inline]
pub const fn is_command_causal_id(hi: u64) -> bool {
    hi >> 32 == COMMAND_MARKER >> 32
}

/// True for the five kinds this codec handles (236–240).
///
/// ```
/// use typhon_recorder::codec::{correlation::covers, TraceEventKind};
/// assert!(covers(TraceEventKind::INGRESS_DROPPED));
/// assert!(!covers(TraceEventKind::NAMED_SPAN));
/// ```
#[inline]
pub const fn covers(kind: K) -> bool {
    size_of(kind) != 0
}

const RECEIVED_SIZE: usize = min_size(K::INGRESS_RECEIVED);
const ADMITTED_SIZE: usize = min_size(K::INGRESS_ADMITTED);
const DROPPED_SIZE: usize = min_size(K::INGRESS_DROPPED);
const CONSUMED_SIZE: usize = min_size(K::COMMAND_CONSUMED);
const SENT_SIZE: usize = min_size(K::EGRESS_SENT);

// Every correlation kind starts with `u32 session`; all but EgressSent follow it with `u16 seq`.
const SESSION: usize = off(K::INGRESS_RECEIVED, "session");
const SEQ: usize = off(K::INGRESS_RECEIVED, "seq");
const RECV_WIRE_IDX: usize = off(K::INGRESS_RECEIVED, "wire_idx");
const RECV_BYTES: usize = off(K::INGRESS_RECEIVED, "bytes");
const ADM_WIRE_IDX: usize = off(K::INGRESS_ADMITTED, "wire_idx");
const ADM_DRAIN_TICK: usize = off(K::INGRESS_ADMITTED, "drain_tick");
const DROP_REASON: usize = off(K::INGRESS_DROPPED, "reason");
const CONS_SYS_IDX: usize = off(K::COMMAND_CONSUMED, "sys_idx");
const SENT_TICK: usize = off(K::EGRESS_SENT, "tick");
const SENT_BYTES: usize = off(K::EGRESS_SENT, "bytes");
const SENT_ACKS: usize = off(K::EGRESS_SENT, "acks");

// The shared prefix really is shared: checked at compile time against the table.
const _: () = {
    let kinds = [
        K::INGRESS_RECEIVED,
        K::INGRESS_ADMITTED,
        K::INGRESS_DROPPED,
        K::COMMAND_CONSUMED,
        K::EGRESS_SENT,
    ];
    let mut i = 0;
    while i < kinds.len() {
        assert!(off(kinds[i], "session") == SESSION);
        if kinds[i].0 != K::EGRESS_SENT.0 {
            assert!(off(kinds[i], "seq") == SEQ);
        }
        i += 1;
    }
};

/// Whole record size of `kind` (22, 24, 19, 20 or 26), or 0 for a kind this codec does not cover.
///
/// ```
/// use typhon_recorder::codec::{correlation::size_of, TraceEventKind};
/// assert_eq!(size_of(TraceEventKind::EGRESS_SENT), 26);
/// assert_eq!(size_of(TraceEventKind::TICK_START), 0);
/// ```
#[inline]
pub const fn size_of(kind: K) -> usize {
    match kind {
        K::INGRESS_RECEIVED => RECEIVED_SIZE,
        K::INGRESS_ADMITTED => ADMITTED_SIZE,
        K::INGRESS_DROPPED => DROPPED_SIZE,
        K::COMMAND_CONSUMED => CONSUMED_SIZE,
        K::EGRESS_SENT => SENT_SIZE,
        _ => 0,
    }
}

/// Why an ingress message was dropped. A `u8` on the wire; values without a name decode to
/// [`Other`](IngressDropReason::Other) and re-encode to the same byte.
///
/// ```
/// use typhon_recorder::codec::correlation::IngressDropReason;
/// assert_eq!(IngressDropReason::from_u8(2), IngressDropReason::RateLimited);
/// assert_eq!(IngressDropReason::from_u8(200), IngressDropReason::Other(200));
/// assert_eq!(IngressDropReason::Other(200).as_u8(), 200);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IngressDropReason {
    /// The session's ingress queue was full (1).
    QueueFull,
    /// The session exceeded its message rate (2).
    RateLimited,
    /// The message could not be parsed (3).
    Malformed,
    /// The session was closed before the message was admitted (4).
    SessionClosed,
    /// Any other value, kept as is. [`from_u8`](Self::from_u8) never produces `Other` holding
    /// 1..=4; `Other(1)` encodes like `QueueFull` and decodes as `QueueFull`.
    Other(u8),
}

impl IngressDropReason {
    /// The reason for a wire byte.
    ///
    /// ```
    /// use typhon_recorder::codec::correlation::IngressDropReason;
    /// assert_eq!(IngressDropReason::from_u8(1), IngressDropReason::QueueFull);
    /// assert_eq!(IngressDropReason::from_u8(0), IngressDropReason::Other(0));
    /// ```
    #[inline]
    pub const fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::QueueFull,
            2 => Self::RateLimited,
            3 => Self::Malformed,
            4 => Self::SessionClosed,
            v => Self::Other(v),
        }
    }

    /// The wire byte.
    ///
    /// ```
    /// use typhon_recorder::codec::correlation::IngressDropReason;
    /// assert_eq!(IngressDropReason::SessionClosed.as_u8(), 4);
    /// ```
    #[inline]
    pub const fn as_u8(self) -> u8 {
        match self {
            Self::QueueFull => 1,
            Self::RateLimited => 2,
            Self::Malformed => 3,
            Self::SessionClosed => 4,
            Self::Other(v) => v,
        }
    }
}

impl From<u8> for IngressDropReason {
    fn from(v: u8) -> Self {
        Self::from_u8(v)
    }
}

impl From<IngressDropReason> for u8 {
    fn from(r: IngressDropReason) -> Self {
        r.as_u8()
    }
}

/// Writes an IngressReceived record (22 bytes) into `d[..22]`.
///
/// # Panics
/// If `d` is shorter than 22 bytes ([`size_of`]`(INGRESS_RECEIVED)`).
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let mut d = [0u8; 22];
/// write_received(&mut d, 1, 2, 3, 4, 5, 6);
/// assert_eq!(&d[..4], &[22, 0, 236, 1]);
/// assert_eq!(&d[12..], &[3, 0, 0, 0, 4, 0, 5, 0, 6, 0]);
/// ```
#[inline]
pub fn write_received(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    session: u32,
    seq: u16,
    wire_idx: u16,
    bytes: u16,
) {
    let d = &mut d[..RECEIVED_SIZE];
    header(d, RECEIVED_SIZE, K::INGRESS_RECEIVED, slot, ts);
    put_u32(d, SESSION, session);
    put_u16(d, SEQ, seq);
    put_u16(d, RECV_WIRE_IDX, wire_idx);
    put_u16(d, RECV_BYTES, bytes);
}

/// Writes an IngressAdmitted record (24 bytes) into `d[..24]`.
///
/// # Panics
/// If `d` is shorter than 24 bytes.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let mut d = [0u8; 24];
/// write_admitted(&mut d, 1, 2, 3, 4, 5, 0x0102_0304);
/// assert_eq!(&d[..4], &[24, 0, 237, 1]);
/// assert_eq!(&d[20..], &[4, 3, 2, 1]);
/// ```
#[inline]
pub fn write_admitted(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    session: u32,
    seq: u16,
    wire_idx: u16,
    drain_tick: u32,
) {
    let d = &mut d[..ADMITTED_SIZE];
    header(d, ADMITTED_SIZE, K::INGRESS_ADMITTED, slot, ts);
    put_u32(d, SESSION, session);
    put_u16(d, SEQ, seq);
    put_u16(d, ADM_WIRE_IDX, wire_idx);
    put_u32(d, ADM_DRAIN_TICK, drain_tick);
}

/// Writes an IngressDropped record (19 bytes) into `d[..19]`.
///
/// # Panics
/// If `d` is shorter than 19 bytes.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let mut d = [0u8; 19];
/// write_dropped(&mut d, 1, 2, 3, 4, IngressDropReason::Malformed);
/// assert_eq!(&d[..4], &[19, 0, 238, 1]);
/// assert_eq!(d[18], 3);
/// ```
#[inline]
pub fn write_dropped(
    d: &mut [u8],
    slot: u8,
    ts: i64,
    session: u32,
    seq: u16,
    reason: IngressDropReason,
) {
    let d = &mut d[..DROPPED_SIZE];
    header(d, DROPPED_SIZE, K::INGRESS_DROPPED, slot, ts);
    put_u32(d, SESSION, session);
    put_u16(d, SEQ, seq);
    d[DROP_REASON] = reason.as_u8();
}

/// Writes a CommandConsumed record (20 bytes) into `d[..20]`.
///
/// # Panics
/// If `d` is shorter than 20 bytes.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let mut d = [0u8; 20];
/// write_consumed(&mut d, 1, 2, 3, 4, 0x0506);
/// assert_eq!(&d[..4], &[20, 0, 239, 1]);
/// assert_eq!(&d[18..], &[6, 5]);
/// ```
#[inline]
pub fn write_consumed(d: &mut [u8], slot: u8, ts: i64, session: u32, seq: u16, sys_idx: u16) {
    let d = &mut d[..CONSUMED_SIZE];
    header(d, CONSUMED_SIZE, K::COMMAND_CONSUMED, slot, ts);
    put_u32(d, SESSION, session);
    put_u16(d, SEQ, seq);
    put_u16(d, CONS_SYS_IDX, sys_idx);
}

/// Writes an EgressSent record (26 bytes) into `d[..26]`.
///
/// # Panics
/// If `d` is shorter than 26 bytes.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let mut d = [0u8; 26];
/// write_sent(&mut d, 1, 2, 3, 4, 5, 6);
/// assert_eq!(&d[..4], &[26, 0, 240, 1]);
/// assert_eq!(&d[12..], &[3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0]);
/// ```
#[inline]
pub fn write_sent(d: &mut [u8], slot: u8, ts: i64, session: u32, tick: u32, bytes: u32, acks: u16) {
    let d = &mut d[..SENT_SIZE];
    header(d, SENT_SIZE, K::EGRESS_SENT, slot, ts);
    put_u32(d, SESSION, session);
    put_u32(d, SENT_TICK, tick);
    put_u32(d, SENT_BYTES, bytes);
    put_u16(d, SENT_ACKS, acks);
}

/// The payload of one correlation instant.
///
/// ```
/// use typhon_recorder::codec::{correlation::CorrelationInstant, TraceEventKind};
/// let i = CorrelationInstant::EgressSent { session: 1, tick: 2, bytes: 3, acks: 4 };
/// assert_eq!(i.kind(), TraceEventKind::EGRESS_SENT);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CorrelationInstant {
    /// A network message was received.
    IngressReceived {
        /// Client session.
        session: u32,
        /// The message's sequence number in the session.
        seq: u16,
        /// Index of the message inside its wire packet.
        wire_idx: u16,
        /// Message size in bytes.
        bytes: u16,
    },
    /// A received message was admitted for a drain tick.
    IngressAdmitted {
        /// Client session.
        session: u32,
        /// The message's sequence number in the session.
        seq: u16,
        /// Index of the message inside its wire packet.
        wire_idx: u16,
        /// The tick whose drain will consume it.
        drain_tick: u32,
    },
    /// A received message was dropped.
    IngressDropped {
        /// Client session.
        session: u32,
        /// The message's sequence number in the session.
        seq: u16,
        /// Why.
        reason: IngressDropReason,
    },
    /// An admitted command was consumed by a system.
    CommandConsumed {
        /// Client session.
        session: u32,
        /// The command's sequence number in the session.
        seq: u16,
        /// Index of the consuming system.
        sys_idx: u16,
    },
    /// A reply or state update was sent.
    EgressSent {
        /// Client session.
        session: u32,
        /// The tick the update belongs to.
        tick: u32,
        /// Bytes sent.
        bytes: u32,
        /// Acknowledgements carried.
        acks: u16,
    },
}

impl CorrelationInstant {
    /// The record kind this instant is written as.
    ///
    /// ```
    /// use typhon_recorder::codec::{correlation::*, TraceEventKind};
    /// let i = CorrelationInstant::CommandConsumed { session: 1, seq: 2, sys_idx: 3 };
    /// assert_eq!(i.kind(), TraceEventKind::COMMAND_CONSUMED);
    /// assert_eq!(size_of(i.kind()), 20);
    /// ```
    pub const fn kind(&self) -> K {
        match self {
            Self::IngressReceived { .. } => K::INGRESS_RECEIVED,
            Self::IngressAdmitted { .. } => K::INGRESS_ADMITTED,
            Self::IngressDropped { .. } => K::INGRESS_DROPPED,
            Self::CommandConsumed { .. } => K::COMMAND_CONSUMED,
            Self::EgressSent { .. } => K::EGRESS_SENT,
        }
    }
}

/// A decoded correlation record: header fields and payload.
///
/// ```
/// use typhon_recorder::codec::correlation::*;
/// let rec = CorrelationInstantData {
///     slot: 2,
///     timestamp: 99,
///     instant: CorrelationInstant::IngressDropped {
///         session: 1, seq: 2, reason: IngressDropReason::Other(77),
///     },
/// };
/// let mut buf = [0u8; 19];
/// assert_eq!(rec.write(&mut buf), 19);
/// assert_eq!(decode(&buf), Ok(rec));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CorrelationInstantData {
    /// The writer's thread slot.
    pub slot: u8,
    /// Instant time (raw ticks in a ring, nanoseconds in a file).
    pub timestamp: i64,
    /// Which instant, with its payload.
    pub instant: CorrelationInstant,
}

impl CorrelationInstantData {
    /// Writes the record with the matching `write_*` function and returns its size.
    ///
    /// # Panics
    /// If `d` is shorter than [`size_of`]`(self.instant.kind())`.
    ///
    /// ```
    /// use typhon_recorder::codec::correlation::*;
    /// let rec = CorrelationInstantData {
    ///     slot: 1, timestamp: 5,
    ///     instant: CorrelationInstant::EgressSent { session: 1, tick: 2, bytes: 3, acks: 4 },
    /// };
    /// let mut buf = [0u8; 64];
    /// assert_eq!(rec.write(&mut buf), 26);
    /// ```
    #[inline]
    pub fn write(&self, d: &mut [u8]) -> usize {
        let (slot, ts) = (self.slot, self.timestamp);
        match self.instant {
            CorrelationInstant::IngressReceived {
                session,
                seq,
                wire_idx,
                bytes,
            } => write_received(d, slot, ts, session, seq, wire_idx, bytes),
            CorrelationInstant::IngressAdmitted {
                session,
                seq,
                wire_idx,
                drain_tick,
            } => write_admitted(d, slot, ts, session, seq, wire_idx, drain_tick),
            CorrelationInstant::IngressDropped {
                session,
                seq,
                reason,
            } => write_dropped(d, slot, ts, session, seq, reason),
            CorrelationInstant::CommandConsumed {
                session,
                seq,
                sys_idx,
            } => write_consumed(d, slot, ts, session, seq, sys_idx),
            CorrelationInstant::EgressSent {
                session,
                tick,
                bytes,
                acks,
            } => write_sent(d, slot, ts, session, tick, bytes, acks),
        }
        size_of(self.instant.kind())
    }
}

/// Decodes the correlation record at the start of `s`; bytes after it are ignored (page payloads
/// are padded to 4).
///
/// # Errors
/// - [`DecodeError::Truncated`] if `s` is shorter than the header or than the header's size;
/// - [`DecodeError::BadSize`] if the size field is not a record size (below 12, or 0xFFFF);
/// - [`DecodeError::UnexpectedKind`] if the kind is not one of 236–240;
/// - [`DecodeError::SizeMismatch`] if the size field disagrees with [`size_of`]`(kind)`.
///
/// ```
/// use typhon_recorder::codec::{correlation::*, DecodeError, TraceEventKind};
/// let mut buf = [0u8; 28];
/// write_sent(&mut buf, 1, 2, 3, 4, 5, 6);
/// assert!(decode(&buf).is_ok()); // the 2 bytes after the record are ignored
/// buf[0] = 27;
/// assert!(matches!(decode(&buf), Err(DecodeError::SizeMismatch { .. })));
/// assert!(matches!(decode(&buf[..10]), Err(DecodeError::Truncated { .. })));
/// ```
pub fn decode(s: &[u8]) -> Result<CorrelationInstantData, DecodeError> {
    let h = CommonHeader::read(s)?;
    let expected = size_of(h.kind);
    if expected == 0 {
        return Err(DecodeError::UnexpectedKind(h.kind));
    }
    if h.size as usize != expected {
        return Err(DecodeError::SizeMismatch {
            kind: h.kind,
            expected,
            found: h.size as usize,
        });
    }
    if s.len() < expected {
        return Err(DecodeError::Truncated {
            need: expected,
            have: s.len(),
        });
    }
    let s = &s[..expected];
    let session = get_u32(s, SESSION);
    let instant = match h.kind {
        K::INGRESS_RECEIVED => CorrelationInstant::IngressReceived {
            session,
            seq: get_u16(s, SEQ),
            wire_idx: get_u16(s, RECV_WIRE_IDX),
            bytes: get_u16(s, RECV_BYTES),
        },
        K::INGRESS_ADMITTED => CorrelationInstant::IngressAdmitted {
            session,
            seq: get_u16(s, SEQ),
            wire_idx: get_u16(s, ADM_WIRE_IDX),
            drain_tick: get_u32(s, ADM_DRAIN_TICK),
        },
        K::INGRESS_DROPPED => CorrelationInstant::IngressDropped {
            session,
            seq: get_u16(s, SEQ),
            reason: IngressDropReason::from_u8(s[DROP_REASON]),
        },
        K::COMMAND_CONSUMED => CorrelationInstant::CommandConsumed {
            session,
            seq: get_u16(s, SEQ),
            sys_idx: get_u16(s, CONS_SYS_IDX),
        },
        _ => CorrelationInstant::EgressSent {
            session,
            tick: get_u32(s, SENT_TICK),
            bytes: get_u32(s, SENT_BYTES),
            acks: get_u16(s, SENT_ACKS),
        },
    };
    Ok(CorrelationInstantData {
        slot: h.slot,
        timestamp: h.timestamp,
        instant,
    })
}

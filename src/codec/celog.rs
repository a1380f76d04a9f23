//! CeLog events in the CEL_HEADER_V3 format (Windows Embedded Compact 7 / 2013).
//!
//! One event, 4-byte aligned, little-endian:
//!
//! ```text
//! u32 header = T<<31 | 0<<30 | ID<<16 | CPU<<12 | Length   (Length 12 bits, CPU 4, ID 14)
//! u32 timestamp                      iff T = 1
//! u32 flagword = real_id<<16 | flag  iff ID == CELID_FLAGGED (90)
//! u32 cpu                            iff CPU == 15 (real CPU number >= 15)
//! u8  data[Length]
//! u8  pad[0..3]                      zeros, to a 4-byte boundary; Length never counts it
//! ```
//!
//! The CPU number is CeLog's: 0 = not CPU-specific, otherwise 1 + the CPU index; values of 15 and
//! up are written as 15 in the header plus an extra DWORD.
//!
//! ```
//! use typhon_recorder::codec::celog::*;
//! let mut buf = [0u8; 32];
//! let n = encode_event(&mut buf, CELID_USER, Some(7), None, 1, b"hi").unwrap();
//! assert_eq!(n, 12);
//! let (ev, used) = decode_event(&buf[..n]).unwrap();
//! assert_eq!((ev.id, ev.timestamp, ev.cpu, ev.data, used), (CELID_USER, Some(7), 1, &b"hi"[..], 12));
//! ```

use super::{get_u32, put_u32};
use core::fmt;

/// The CEL_HEADER_V3 DWORD. Bit 30 (reserved) is always 0 in a value of this type.
///
/// ```
/// use typhon_recorder::codec::celog::CelHeaderV3;
/// let h = CelHeaderV3::new(8, 15, 0x2000, true);
/// assert_eq!(h.bits(), 0xA000_F008);
/// assert_eq!((h.length(), h.cpu(), h.id(), h.has_timestamp()), (8, 15, 0x2000, true));
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CelHeaderV3(u32);

impl CelHeaderV3 {
    /// Mask of the Length field (bits 0–11).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::codec::celog::CelHeaderV3::LENGTH_MASK, 0xFFF);
    /// ```
    pub const LENGTH_MASK: u32 = 0x0000_0FFF;
    /// Mask of the CPU field (bits 12–15).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::codec::celog::CelHeaderV3::CPU_MASK, 0xF000);
    /// ```
    pub const CPU_MASK: u32 = 0x0000_F000;
    /// Mask of the ID field (bits 16–29).
    ///
    /// ```
    /// assert_eq!(typhon_recorder::codec::celog::CelHeaderV3::ID_MASK, 0x3FFF_0000);
    /// ```
    pub const ID_MASK: u32 = 0x3FFF_0000;
    /// The reserved bit 30, which must be 0.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::codec::celog::CelHeaderV3::RESERVED, 1 << 30);
    /// ```
    pub const RESERVED: u32 = 0x4000_0000;
    /// The fTimeStamp bit 31: a u32 timestamp follows the header.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::codec::celog::CelHeaderV3::TIMESTAMP, 0x8000_0000);
    /// ```
    pub const TIMESTAMP: u32 = 0x8000_0000;

    /// Builds a header. Each field is masked to its width (`length` to 12 bits, `cpu` to 4, `id`
    /// to 14); [`encode_event`] checks the values before it gets here.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::new(0, 0, 0x1FFE, false).bits(), 0x1FFE_0000);
    /// ```
    #[inline]
    pub const fn new(length: u16, cpu: u8, id: u16, timestamp: bool) -> Self {
        Self(
            (timestamp as u32) << 31
                | ((id as u32) << 16 & Self::ID_MASK)
                | ((cpu as u32) << 12 & Self::CPU_MASK)
                | (length as u32 & Self::LENGTH_MASK),
        )
    }

    /// A header from its DWORD, or `None` if the reserved bit 30 is set.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::from_bits(0x0096_0004).unwrap().id(), 150);
    /// assert_eq!(CelHeaderV3::from_bits(0x4000_0000), None);
    /// ```
    #[inline]
    pub const fn from_bits(bits: u32) -> Option<Self> {
        if bits & Self::RESERVED != 0 {
            None
        } else {
            Some(Self(bits))
        }
    }

    /// The header DWORD.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::new(4, 0, 150, false).bits(), 0x0096_0004);
    /// ```
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Payload length in bytes, padding excluded.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::new(4095, 0, 1, false).length(), 4095);
    /// ```
    #[inline]
    pub const fn length(self) -> u16 {
        (self.0 & Self::LENGTH_MASK) as u16
    }

    /// The CPU field: 0 = not CPU-specific, 1..=14 = CPU number, 15 = an extra DWORD follows.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::new(0, 3, 1, false).cpu(), 3);
    /// ```
    #[inline]
    pub const fn cpu(self) -> u8 {
        ((self.0 & Self::CPU_MASK) >> 12) as u8
    }

    /// The ID field (`CELID_FLAGGED` for a flagged event; the real id is in the flag word).
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert_eq!(CelHeaderV3::new(0, 0, 0x3FFF, false).id(), 0x3FFF);
    /// ```
    #[inline]
    pub const fn id(self) -> u16 {
        ((self.0 & Self::ID_MASK) >> 16) as u16
    }

    /// Whether a timestamp DWORD follows the header.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::CelHeaderV3;
    /// assert!(CelHeaderV3::new(0, 0, 1, true).has_timestamp());
    /// ```
    #[inline]
    pub const fn has_timestamp(self) -> bool {
        self.0 & Self::TIMESTAMP != 0
    }
}

/// Defines `pub const` items, each with its doc and a doctest checking its value.
macro_rules! consts {
    ($ty:ty; $($(#[doc = $doc:expr])* $name:ident = $value:expr;)*) => {$(
        $(#[doc = $doc])*
        #[doc = ""]
        #[doc = "```"]
        #[doc = concat!(
            "assert_eq!(typhon_recorder::codec::celog::", stringify!($name), ", ",
            stringify!($value), ");"
        )]
        #[doc = "```"]
        pub const $name: $ty = $value;
    )*};
}

consts! { u16;
    /// Raw data: array of `i32`.
    CELID_RAW_LONG = 70;
    /// Raw data: array of `u32`.
    CELID_RAW_ULONG = 71;
    /// Raw data: array of `i16`.
    CELID_RAW_SHORT = 72;
    /// Raw data: array of `u16`.
    CELID_RAW_USHORT = 73;
    /// Raw data: UTF-16LE text, NUL included.
    CELID_RAW_WCHAR = 74;
    /// Raw data: array of `i8`.
    CELID_RAW_CHAR = 75;
    /// Raw data: array of `u8`.
    CELID_RAW_UCHAR = 76;
    /// Raw data: array of `f32`.
    CELID_RAW_FLOAT = 77;
    /// Raw data: array of `f64`.
    CELID_RAW_DOUBLE = 78;
    /// Header ID of a flagged event; the real id and the flag are in the flag word. Never a
    /// real id itself.
    CELID_FLAGGED = 90;
    /// Data loss: `u32` bytes lost since the previous data-loss event (written by flushers).
    CELID_DATA_LOSS = 150;
    /// End of the sync header that starts a session (no data, no timestamp).
    CELID_SYNC_END = 0x1FFE;
    /// Session marker, the first event of a session: see [`log_marker_data`].
    CELID_LOG_MARKER = 0x1FFF;
    /// First user event id; user ids are `CELID_USER..CELID_MAX`.
    CELID_USER = 0x2000;
    /// Largest value of the 14-bit ID field (one past the last recommended user id).
    CELID_MAX = 0x3FFF;
}

consts! { usize;
    /// Largest CeLog payload (the 12-bit Length field).
    MAX_DATA_SIZE = 4095;
}

consts! { u32;
    /// The `dwVersion` of CEL_HEADER_V3 logs, written in the log marker.
    CELOG_VERSION = 3;
    /// CeLog timestamp frequency used by this SDK: ticks of 1 µs.
    CELOG_TIMER_FREQUENCY = 1_000_000;
    /// CPU field value meaning "the real CPU number follows in an extra DWORD".
    CPU_ESCAPE = 15;
    /// Zone: interrupts.
    CELZONE_INTERRUPT = 0x1;
    /// Zone: rescheduling.
    CELZONE_RESCHEDULE = 0x2;
    /// Zone: thread migration.
    CELZONE_MIGRATE = 0x4;
    /// Zone: TLB misses.
    CELZONE_TLB = 0x8;
    /// Zone: demand paging.
    CELZONE_DEMANDPAGE = 0x10;
    /// Zone: threads.
    CELZONE_THREAD = 0x20;
    /// Zone: processes.
    CELZONE_PROCESS = 0x40;
    /// Zone: priority inversion.
    CELZONE_PRIORITYINV = 0x80;
    /// Zone: critical sections.
    CELZONE_CRITSECT = 0x100;
    /// Zone: synchronisation objects.
    CELZONE_SYNCH = 0x200;
    /// Zone: profiler.
    CELZONE_PROFILER = 0x400;
    /// Zone: heap.
    CELZONE_HEAP = 0x800;
    /// Zone: virtual memory.
    CELZONE_VIRTMEM = 0x1000;
    /// Zone: GWES.
    CELZONE_GWES = 0x2000;
    /// Zone: loader.
    CELZONE_LOADER = 0x4000;
    /// Zone: memory tracking.
    CELZONE_MEMTRACKING = 0x8000;
    /// Zone: boot time.
    CELZONE_BOOT_TIME = 0x10000;
    /// Zone: GDI.
    CELZONE_GDI = 0x20000;
    /// Zone: low memory.
    CELZONE_LOWMEM = 0x40000;
    /// Zone: kernel calls.
    CELZONE_KCALL = 0x400000;
    /// Zone: debug.
    CELZONE_DEBUG = 0x800000;
    /// Zone: reserved (applications cannot turn it on).
    CELZONE_RESERVED2 = 0x1000_0000;
    /// Zone: reserved (applications cannot turn it on).
    CELZONE_RESERVED1 = 0x2000_0000;
    /// Zone: always logged, even if zones are turned off.
    CELZONE_ALWAYSON = 0x4000_0000;
    /// Zone: miscellaneous; the switchable zone for user events.
    CELZONE_MISC = 0x8000_0000;
    /// Default enabled CE and user zones: everything but [`CELZONE_KCALL`].
    CELZONE_DEFAULT = 0xFFBF_FFFF;
}

/// Whether an event is logged: iff `(zone_ce & enabled_ce) != 0 || (zone_user & enabled_user) != 0`
/// (CeLog's `IsZoneEnabled`). `zone_*` are the event's zones (`CeLogData`'s `dwZoneUser`,
/// `dwZoneCE`), `enabled_*` the session's (`CeLogSetZones`, after [`validate_zones`]).
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let ce = validate_zones(0);
/// assert!(zones_enabled(0, CELZONE_ALWAYSON, 0, ce));
/// assert!(!zones_enabled(0, CELZONE_MISC, 0, ce));
/// assert!(zones_enabled(0, CELZONE_MISC, 0, validate_zones(CELZONE_MISC)));
/// assert!(zones_enabled(1, 0, 1, 0));
/// ```
#[inline]
pub const fn zones_enabled(
    zone_user: u32,
    zone_ce: u32,
    enabled_user: u32,
    enabled_ce: u32,
) -> bool {
    (zone_ce & enabled_ce) != 0 || (zone_user & enabled_user) != 0
}

/// CeLog's `VALIDATE_ZONES`: clears the reserved zones and forces [`CELZONE_ALWAYSON`] on.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// assert_eq!(validate_zones(0xFFFF_FFFF), 0xCFFF_FFFF);
/// assert_eq!(validate_zones(0), CELZONE_ALWAYSON);
/// ```
#[inline]
pub const fn validate_zones(zones: u32) -> u32 {
    (zones & !(CELZONE_RESERVED1 | CELZONE_RESERVED2)) | CELZONE_ALWAYSON
}

/// The CEL_LOG_MARKER_V3 payload (16 bytes): `u32 frequency, u32 default quantum (ms),
/// u32 version = 3, u32 number of CPUs`.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let d = log_marker_data(CELOG_TIMER_FREQUENCY, 100, 8);
/// assert_eq!(d, [0x40, 0x42, 0x0F, 0, 100, 0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0]);
/// ```
#[inline]
pub const fn log_marker_data(frequency: u32, quantum_ms: u32, num_cpus: u32) -> [u8; 16] {
    let (f, q, v, n) = (
        frequency.to_le_bytes(),
        quantum_ms.to_le_bytes(),
        CELOG_VERSION.to_le_bytes(),
        num_cpus.to_le_bytes(),
    );
    [
        f[0], f[1], f[2], f[3], q[0], q[1], q[2], q[3], v[0], v[1], v[2], v[3], n[0], n[1], n[2],
        n[3],
    ]
}

/// Why a CeLog event could not be encoded or decoded.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let e = encode_event(&mut [0u8; 8], CELID_USER, None, None, 0, &[0; 4096]).unwrap_err();
/// assert_eq!(e, CelogError::DataTooLarge(4096));
/// assert!(e.to_string().contains("4095"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CelogError {
    /// The payload is longer than [`MAX_DATA_SIZE`].
    DataTooLarge(usize),
    /// The event id is above [`CELID_MAX`], or is [`CELID_FLAGGED`] used as a real id.
    InvalidId(u16),
    /// The destination is too small for the whole event (nothing is truncated).
    DstTooSmall {
        /// Bytes the event needs, padding included.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The source ends before the event (padding included) does.
    Truncated {
        /// Bytes the event needs, padding included.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The reserved header bit 30 is set.
    ReservedBit,
    /// A CPU-escape DWORD holds a CPU number below 15 (the header should have held it).
    NonCanonicalCpu(u32),
}

impl fmt::Display for CelogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CelogError::DataTooLarge(n) => {
                write!(f, "CeLog payload of {n} bytes exceeds {MAX_DATA_SIZE}")
            }
            CelogError::InvalidId(id) => write!(f, "invalid CeLog event id {id:#x}"),
            CelogError::DstTooSmall { need, have } => {
                write!(f, "CeLog event needs {need} bytes, destination has {have}")
            }
            CelogError::Truncated { need, have } => {
                write!(f, "truncated CeLog event: need {need} bytes, have {have}")
            }
            CelogError::ReservedBit => f.write_str("CeLog header has the reserved bit 30 set"),
            CelogError::NonCanonicalCpu(c) => {
                write!(f, "CeLog CPU escape holds {c}, which fits the header")
            }
        }
    }
}

impl std::error::Error for CelogError {}

/// Bytes an event takes on the wire, padding included:
/// `4 * (1 + T + F + C) + round_up_4(data_len)` with C = (`cpu` >= 15).
///
/// ```
/// use typhon_recorder::codec::celog::encoded_len;
/// assert_eq!(encoded_len(0, false, false, 0), 4);
/// assert_eq!(encoded_len(6, false, false, 0), 12);
/// assert_eq!(encoded_len(4, true, true, 1), 16);
/// assert_eq!(encoded_len(8, true, false, 17), 20);
/// ```
#[inline]
pub const fn encoded_len(data_len: usize, timestamp: bool, flagged: bool, cpu: u32) -> usize {
    4 * (1 + timestamp as usize + flagged as usize + (cpu >= CPU_ESCAPE) as usize)
        + ((data_len + 3) & !3)
}

/// Encodes one event into `dst` and returns the bytes written, padding (zeros) included.
///
/// The event is flagged iff `flag` is `Some`: the header then holds [`CELID_FLAGGED`] and a flag
/// word `id << 16 | flag` follows the timestamp. `cpu` is the CeLog CPU number (0 = none,
/// 1 + CPU index otherwise); 15 and above go to an extra DWORD.
///
/// # Errors
/// [`CelogError::DataTooLarge`] if `data` exceeds 4095 bytes, [`CelogError::InvalidId`] if `id`
/// exceeds 0x3FFF or is [`CELID_FLAGGED`], [`CelogError::DstTooSmall`] if `dst` cannot hold the
/// whole event. Nothing is written on error.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let mut buf = [0xAAu8; 16];
/// let n = encode_event(&mut buf, CELID_RAW_ULONG, Some(0x12345), Some(3), 1, &[0x2F, 0, 0, 0]);
/// assert_eq!(n, Ok(16));
/// assert_eq!(buf, [0x04, 0x10, 0x5A, 0x80, 0x45, 0x23, 0x01, 0x00,
///                  0x03, 0x00, 0x47, 0x00, 0x2F, 0x00, 0x00, 0x00]);
/// ```
#[inline]
pub fn encode_event(
    dst: &mut [u8],
    id: u16,
    timestamp: Option<u32>,
    flag: Option<u16>,
    cpu: u32,
    data: &[u8],
) -> Result<usize, CelogError> {
    if data.len() > MAX_DATA_SIZE {
        return Err(CelogError::DataTooLarge(data.len()));
    }
    if id > CELID_MAX || id == CELID_FLAGGED {
        return Err(CelogError::InvalidId(id));
    }
    let need = encoded_len(data.len(), timestamp.is_some(), flag.is_some(), cpu);
    if dst.len() < need {
        return Err(CelogError::DstTooSmall {
            need,
            have: dst.len(),
        });
    }
    let dst = &mut dst[..need];
    let header_id = if flag.is_some() { CELID_FLAGGED } else { id };
    let header_cpu = if cpu >= CPU_ESCAPE {
        CPU_ESCAPE as u8
    } else {
        cpu as u8
    };
    let h = CelHeaderV3::new(
        data.len() as u16,
        header_cpu,
        header_id,
        timestamp.is_some(),
    );
    put_u32(dst, 0, h.bits());
    let mut pos = 4;
    if let Some(ts) = timestamp {
        put_u32(dst, pos, ts);
        pos += 4;
    }
    if let Some(fl) = flag {
        put_u32(dst, pos, (id as u32) << 16 | fl as u32);
        pos += 4;
    }
    if cpu >= CPU_ESCAPE {
        put_u32(dst, pos, cpu);
        pos += 4;
    }
    dst[pos..pos + data.len()].copy_from_slice(data);
    dst[pos + data.len()..].fill(0);
    Ok(need)
}

/// One decoded CeLog event.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let ev = CelEvent { id: 0x2001, timestamp: None, flag: Some(9), cpu: 20, data: b"abc" };
/// let mut buf = [0u8; 64];
/// let n = ev.encode(&mut buf).unwrap();
/// assert_eq!(n, ev.encoded_len());
/// assert_eq!(decode_event(&buf), Ok((ev, n)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CelEvent<'a> {
    /// The event id (the real id for a flagged event, never [`CELID_FLAGGED`]).
    pub id: u16,
    /// The timestamp, if the event has one (low 32 bits of the time in CeLog ticks).
    pub timestamp: Option<u32>,
    /// The user flag, if the event is flagged.
    pub flag: Option<u16>,
    /// CeLog CPU number: 0 = not CPU-specific, otherwise 1 + CPU index.
    pub cpu: u32,
    /// The payload, padding excluded.
    pub data: &'a [u8],
}

impl CelEvent<'_> {
    /// Bytes the event takes on the wire, padding included.
    ///
    /// ```
    /// use typhon_recorder::codec::celog::*;
    /// let ev = CelEvent { id: CELID_SYNC_END, timestamp: None, flag: None, cpu: 0, data: &[] };
    /// assert_eq!(ev.encoded_len(), 4);
    /// ```
    #[inline]
    pub const fn encoded_len(&self) -> usize {
        encoded_len(
            self.data.len(),
            self.timestamp.is_some(),
            self.flag.is_some(),
            self.cpu,
        )
    }

    /// Encodes the event with [`encode_event`].
    ///
    /// # Errors
    /// As [`encode_event`].
    ///
    /// ```
    /// use typhon_recorder::codec::celog::*;
    /// let ev = CelEvent { id: CELID_USER, timestamp: None, flag: None, cpu: 0, data: &[1] };
    /// assert_eq!(ev.encode(&mut [0u8; 3]), Err(CelogError::DstTooSmall { need: 8, have: 3 }));
    /// ```
    #[inline]
    pub fn encode(&self, dst: &mut [u8]) -> Result<usize, CelogError> {
        encode_event(dst, self.id, self.timestamp, self.flag, self.cpu, self.data)
    }
}

/// Decodes the event at the start of `src` and returns it with the bytes it occupies (padding
/// included). Bytes after the event are ignored; the padding's content is not checked (CE itself
/// leaves stale bytes there).
///
/// # Errors
/// [`CelogError::Truncated`] if `src` ends before the padded event does,
/// [`CelogError::ReservedBit`] if bit 30 is set, [`CelogError::InvalidId`] if a flag word holds a
/// real id above 0x3FFF or equal to [`CELID_FLAGGED`], [`CelogError::NonCanonicalCpu`] if a CPU
/// escape DWORD holds a number below 15.
///
/// ```
/// use typhon_recorder::codec::celog::*;
/// let bytes = [0x06, 0x00, 0x05, 0x20, 1, 2, 3, 4, 5, 6, 0, 0];
/// let (ev, n) = decode_event(&bytes).unwrap();
/// assert_eq!((ev.id, ev.timestamp, ev.flag, ev.cpu, ev.data, n), (0x2005, None, None, 0, &bytes[4..10], 12));
/// assert_eq!(decode_event(&bytes[..10]), Err(CelogError::Truncated { need: 12, have: 10 }));
/// ```
pub fn decode_event(src: &[u8]) -> Result<(CelEvent<'_>, usize), CelogError> {
    if src.len() < 4 {
        return Err(CelogError::Truncated {
            need: 4,
            have: src.len(),
        });
    }
    let h = CelHeaderV3::from_bits(get_u32(src, 0)).ok_or(CelogError::ReservedBit)?;
    let flagged = h.id() == CELID_FLAGGED;
    let escaped = h.cpu() as u32 == CPU_ESCAPE;
    let len = h.length() as usize;
    let need = 4 * (1 + h.has_timestamp() as usize + flagged as usize + escaped as usize)
        + ((len + 3) & !3);
    if src.len() < need {
        return Err(CelogError::Truncated {
            need,
            have: src.len(),
        });
    }
    let mut pos = 4;
    let timestamp = if h.has_timestamp() {
        pos += 4;
        Some(get_u32(src, pos - 4))
    } else {
        None
    };
    let (id, flag) = if flagged {
        let w = get_u32(src, pos);
        pos += 4;
        let real = (w >> 16) as u16;
        if real > CELID_MAX || real == CELID_FLAGGED {
            return Err(CelogError::InvalidId(real));
        }
        (real, Some(w as u16))
    } else {
        (h.id(), None)
    };
    let cpu = if escaped {
        let c = get_u32(src, pos);
        pos += 4;
        if c < CPU_ESCAPE {
            return Err(CelogError::NonCanonicalCpu(c));
        }
        c
    } else {
        h.cpu() as u32
    };
    Ok((
        CelEvent {
            id,
            timestamp,
            flag,
            cpu,
            data: &src[pos..pos + len],
        },
        need,
    ))
}

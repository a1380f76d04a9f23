//! The free functions every thread records through: ticks, phases, instants, the correlation
//! instants, CeLog events, thread info and raw records. Each is the gate (one byte load and a
//! branch while disabled), then a fixed-size write into the thread's ring.

use crate::codec::correlation::IngressDropReason;
use crate::codec::records::ThreadKind;
use crate::codec::{self, correlation, records, TraceEventKind};
use crate::write::gate::*;
use crate::write::writer::*;
use crate::write::WriteError;
use std::sync::atomic::Ordering;

/// Writes one fixed-size record: the gate (a disabled event costs one byte load and a branch),
/// then [`write_fixed`], whose closures capture by value so nothing is spilled before the gate.
macro_rules! fixed_write {
    ($kind:expr, $size:expr, $at:expr, |$d:ident, $slot:ident, $ts:ident| $body:expr) => {{
        if gate($kind) {
            write_fixed::<{ $size }>($at, move |$d: &mut [u8], $slot: u8, $ts: i64| $body);
        }
    }};
}

/// Whether events of `kind` are recorded now; counts a filtered event. Inline everywhere.
///
/// The off state is tested first, on its own: in straight-line code the compiler then lays a
/// disabled call out as a byte load, a test and one taken branch past the write, where testing
/// for "on" first gave two taken branches per disabled call, about twice the cost. An enabled
/// write pays one more test and branch, not taken.
#[inline(always)]
pub(crate) fn gate(kind: TraceEventKind) -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    let state = kind_state(kind);
    if state == KIND_OFF {
        return false;
    }
    if state == KIND_ON {
        return true;
    }
    count_filtered();
    false
}

/// The enabled path of a fixed-size write: writer, timestamp, encode (`enc(record, slot,
/// time)`), publish, wake the flusher if the ring passed half full.
/// The record size is a constant, so the encoder's field writes need no bounds checks.
#[inline(always)]
pub(crate) fn write_fixed<const SIZE: usize>(
    at: Option<u64>,
    enc: impl FnOnce(&mut [u8], u8, i64),
) {
    with_writer(move |w| {
        let ts = w.ts(at) as i64;
        let slot = w.slot;
        w.put(SIZE, move |d| enc(d, slot, ts));
    });
}

macro_rules! correlation_writes {
    ($( $(#[$m:meta])* $name:ident, $name_at:ident, $kind:ident, $enc:path, ($($arg:ident : $ty:ty),*) );* $(;)?) => {$(
        $(#[$m])*
        #[inline]
        pub fn $name($($arg: $ty),*) {
            $name_at(None, $($arg),*)
        }
        #[doc = concat!("[`", stringify!($name), "`] with a caller-supplied timestamp in raw ticks",
            " ([`Recorder::now`](crate::Recorder::now), [`Recorder::ns_to_ticks`](crate::Recorder::ns_to_ticks)); `None` reads the clock.")]
        #[inline]
        pub fn $name_at(ts: Option<u64>, $($arg: $ty),*) {
            const K: TraceEventKind = TraceEventKind::$kind;
            fixed_write!(K, correlation::size_of(K), ts, |d, slot, t| $enc(d, slot, t, $($arg),*))
        }
    )*};
}

correlation_writes! {
    /// Records IngressReceived: a message of `bytes` bytes arrived for `session`.
    ///
    /// ```
    /// typhon_recorder::ingress_received(1, 2, 3, 4); // no recorder installed: a no-op
    /// ```
    ingress_received, ingress_received_at, INGRESS_RECEIVED, correlation::write_received,
        (session: u32, seq: u16, wire_idx: u16, bytes: u16);
    /// Records IngressAdmitted: the message was admitted for drain tick `drain_tick`.
    ///
    /// ```
    /// typhon_recorder::ingress_admitted(1, 2, 3, 100);
    /// ```
    ingress_admitted, ingress_admitted_at, INGRESS_ADMITTED, correlation::write_admitted,
        (session: u32, seq: u16, wire_idx: u16, drain_tick: u32);
    /// Records IngressDropped: the message was dropped for `reason`.
    ///
    /// ```
    /// use typhon_recorder::IngressDropReason;
    /// typhon_recorder::ingress_dropped(1, 2, IngressDropReason::from_u8(1));
    /// ```
    ingress_dropped, ingress_dropped_at, INGRESS_DROPPED, correlation::write_dropped,
        (session: u32, seq: u16, reason: IngressDropReason);
    /// Records CommandConsumed: system `sys_idx` consumed the command.
    ///
    /// ```
    /// typhon_recorder::command_consumed(1, 2, 5);
    /// ```
    command_consumed, command_consumed_at, COMMAND_CONSUMED, correlation::write_consumed,
        (session: u32, seq: u16, sys_idx: u16);
    /// Records EgressSent: `bytes` bytes with `acks` acknowledgements went to `session` at `tick`.
    ///
    /// ```
    /// typhon_recorder::egress_sent(1, 100, 512, 3);
    /// ```
    egress_sent, egress_sent_at, EGRESS_SENT, correlation::write_sent,
        (session: u32, tick: u32, bytes: u32, acks: u16);
}

/// Records TickStart.
///
/// ```
/// typhon_recorder::tick_start();
/// ```
#[inline]
pub fn tick_start() {
    tick_start_at_opt(None)
}
/// [`tick_start`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::tick_start_at(12345);
/// ```
#[inline]
pub fn tick_start_at(ts: u64) {
    tick_start_at_opt(Some(ts))
}
#[inline(always)]
pub(crate) fn tick_start_at_opt(at: Option<u64>) {
    fixed_write!(TraceEventKind::TICK_START, 12, at, |d, slot, t| {
        let _ = records::write_tick_start(d, slot, t);
    })
}

/// Records TickEnd with the tick's overload level and multiplier.
///
/// ```
/// typhon_recorder::tick_end(0, 1);
/// ```
#[inline]
pub fn tick_end(overload_level: u8, tick_multiplier: u8) {
    tick_end_at_opt(None, overload_level, tick_multiplier)
}
/// [`tick_end`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::tick_end_at(12345, 0, 1);
/// ```
#[inline]
pub fn tick_end_at(ts: u64, overload_level: u8, tick_multiplier: u8) {
    tick_end_at_opt(Some(ts), overload_level, tick_multiplier)
}
#[inline(always)]
pub(crate) fn tick_end_at_opt(at: Option<u64>, o: u8, m: u8) {
    fixed_write!(TraceEventKind::TICK_END, 14, at, |d, slot, t| {
        let _ = records::write_tick_end(d, slot, t, o, m);
    })
}

/// Records PhaseStart.
///
/// ```
/// typhon_recorder::phase_start(2);
/// ```
#[inline]
pub fn phase_start(phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_START, None, phase)
}
/// Records PhaseEnd.
///
/// ```
/// typhon_recorder::phase_end(2);
/// ```
#[inline]
pub fn phase_end(phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_END, None, phase)
}
/// [`phase_start`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::phase_start_at(1, 2);
/// ```
#[inline]
pub fn phase_start_at(ts: u64, phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_START, Some(ts), phase)
}
/// [`phase_end`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::phase_end_at(1, 2);
/// ```
#[inline]
pub fn phase_end_at(ts: u64, phase: u8) {
    phase_at_opt(TraceEventKind::PHASE_END, Some(ts), phase)
}
#[inline(always)]
pub(crate) fn phase_at_opt(kind: TraceEventKind, at: Option<u64>, phase: u8) {
    fixed_write!(kind, 13, at, |d, slot, t| {
        let _ = if kind == TraceEventKind::PHASE_START {
            records::write_phase_start(d, slot, t, phase)
        } else {
            records::write_phase_end(d, slot, t, phase)
        };
    })
}

/// Records a generic Instant (`name_id` is an id of the caller's, `payload` any value).
///
/// ```
/// typhon_recorder::instant(7, -1);
/// ```
#[inline]
pub fn instant(name_id: i32, payload: i32) {
    instant_at_opt(None, name_id, payload)
}
/// [`instant`] with a caller-supplied timestamp in raw ticks.
///
/// ```
/// typhon_recorder::instant_at(1, 7, -1);
/// ```
#[inline]
pub fn instant_at(ts: u64, name_id: i32, payload: i32) {
    instant_at_opt(Some(ts), name_id, payload)
}
#[inline(always)]
pub(crate) fn instant_at_opt(at: Option<u64>, name_id: i32, payload: i32) {
    fixed_write!(TraceEventKind::INSTANT, 20, at, |d, slot, t| {
        let _ = records::write_instant(d, slot, t, name_id, payload);
    })
}

/// Names the calling thread (and sets its kind) for the ThreadInfo record written when it
/// claims a slot. Call before the thread's first event; a later call applies from the next
/// recorder on.
///
/// ```
/// use typhon_recorder::{set_thread_info, ThreadKind};
/// set_thread_info("net-io", ThreadKind::Worker);
/// ```
pub fn set_thread_info(name: &str, kind: ThreadKind) {
    let _ = OWNER.try_with(|o| {
        if let Ok(mut o) = o.try_borrow_mut() {
            o.name = Some(name.to_owned());
            o.kind = Some(kind);
        }
    });
}

/// Claims the calling thread's slot of the installed recorder now, writing its ThreadInfo record,
/// so that the thread's first event costs what every later one does. A claim takes a ring (a
/// spare one, see [`RecorderBuilder::spare_rings`](crate::RecorderBuilder::spare_rings), costs a few microseconds; once the spares are
/// gone a new one is allocated and its pages faulted in: 0.8–1.5 ms for the default 2 MiB ring
/// on a small VM) and is otherwise paid by the thread's first event. Call it at thread start, after
/// [`set_thread_info`]. Returns whether the thread now has a slot: `false` with no recorder
/// installed, or with all 255 slots taken (the thread's events are then counted as no-slot).
/// Registering writes no event, so nothing is counted for the call itself.
///
/// ```
/// use typhon_recorder::{RecorderBuilder, register_thread, sink::NullSink};
/// # let _g = typhon_recorder::doc_lock();
/// assert!(!register_thread()); // no recorder installed
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// let t = std::thread::spawn(|| {
///     let registered = register_thread();
///     typhon_recorder::ingress_received(1, 2, 3, 64); // no slot claim on this path now
///     registered
/// });
/// assert!(t.join().unwrap());
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 2); // the ThreadInfo, written when it registered, and the event
/// ```
pub fn register_thread() -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    HOT.with(|h| {
        // SAFETY: as in `with_writer`: `HOT` is this thread's own and no other reference to it is
        // live (this is not called from inside a write, and `claim` is the only other user here).
        let h = unsafe { &mut *h.get() };
        // Unlike a write, a thread without a slot counts nothing here: no event was lost.
        refresh(h);
        h.writer.is_some()
    })
}

/// Writes a record of any kind: `payload` is everything after the 12-byte common header. A
/// kind of the kind table must hold a record its decoder accepts (the exact size for fixed
/// kinds; for variable ones the NUL or length of their name, span flags agreeing with the kind,
/// one valid CeLog event): the payload is checked with
/// [`decode_payload`](codec::records::decode_payload) before anything is written. Other kinds
/// are the engine's own and are taken as they are. No record exceeds 65534 bytes.
///
/// # Errors
/// [`WriteError::Invalid`] for a payload its kind's decoder rejects, and
/// [`WriteError::TooLarge`] for a record over 65534 bytes, both whether or not a recorder
/// runs; [`WriteError::TooLarge`] also for a record larger than the running recorder's pages
/// hold. While a recorder runs, every refused write is counted once, as refused, against the
/// writing thread's slot (as no-slot for a thread that finds every slot taken).
///
/// ```
/// use typhon_recorder::{codec::TraceEventKind, WriteError};
/// typhon_recorder::write_record(TraceEventKind(100), &[1, 2, 3], None).unwrap();
/// assert!(typhon_recorder::write_record(TraceEventKind::TICK_END, &[1], None).is_err());
/// // A NamedSpan payload: the 25-byte span extension, then its name, NUL-terminated.
/// let mut span = [0u8; 26];
/// typhon_recorder::write_record(TraceEventKind::NAMED_SPAN, &span, None).unwrap(); // name ""
/// span[25] = b'x'; // a name without its NUL is not a NamedSpan
/// assert!(matches!(
///     typhon_recorder::write_record(TraceEventKind::NAMED_SPAN, &span, None),
///     Err(WriteError::Invalid(_))
/// ));
/// assert!(matches!(
///     typhon_recorder::write_record(TraceEventKind(100), &vec![0; 65_535], None),
///     Err(WriteError::TooLarge { size: 65_547, max: 65_534 })
/// ));
/// ```
pub fn write_record(
    kind: TraceEventKind,
    payload: &[u8],
    ts: Option<u64>,
) -> Result<(), WriteError> {
    let size = codec::CommonHeader::SIZE + payload.len();
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    if let Some(def) = codec::kind_def(kind) {
        let header = codec::CommonHeader {
            size: size as u16,
            kind,
            slot: 0,
            timestamp: 0,
        };
        if let Err(e) = codec::records::decode_payload(header, payload) {
            return Err(refused(WriteError::Invalid(format!(
                "{} payload of {} bytes: {e}",
                def.name,
                payload.len()
            ))));
        }
    }
    put_variable(kind, size, ts, |d, slot, t| {
        codec::CommonHeader {
            size: size as u16,
            kind,
            slot,
            timestamp: t,
        }
        .write(d);
        d[codec::CommonHeader::SIZE..size].copy_from_slice(payload);
    })
}

/// CeLogSetZones: which CeLog zones are recorded. An event is recorded iff
/// `(zone_ce & its dwZoneCE) != 0 || (zone_user & its dwZoneUser) != 0`. `zone_process` is
/// accepted for API parity and, as in CE, unused.
///
/// ```
/// typhon_recorder::celog_set_zones(0, typhon_recorder::codec::celog::CELZONE_MISC, 0);
/// typhon_recorder::celog_set_zones(u32::MAX, u32::MAX, u32::MAX);
/// ```
pub fn celog_set_zones(zone_user: u32, zone_ce: u32, zone_process: u32) {
    let _ = zone_process;
    let ce = codec::celog::validate_zones(zone_ce);
    // Relaxed: configuration flags; writers pick up the change on their next event.
    ZONE_USER.store(zone_user, Ordering::Relaxed);
    ZONE_CE.store(ce, Ordering::Relaxed);
}

/// CeLogData: records one CeLog event (CEL_HEADER_V3) of id `id` with `data`, if its zones are
/// enabled. This is CE's `CeLogData` signature, for ported code; [`CeLog`](crate::CeLog) says
/// the same field by field. `timestamp` false records no CeLog timestamp and reads no clock (the record takes the
/// time of the thread's previous record); `flagged` adds the flag word with `flag`.
///
/// # Errors
/// [`WriteError::Invalid`], whether or not a recorder runs, for `data` over 4095 bytes and for
/// the ids CE's CeLogData does not take: 0x3FFF (`CELID_MAX`) and above, and 90
/// (`CELID_FLAGGED`, which only marks a flagged event's header). [`WriteError::TooLarge`] if
/// the event does not fit in the recorder's pages. While a recorder runs, each is counted as
/// refused.
///
/// ```
/// use typhon_recorder::codec::celog::{CELID_FLAGGED, CELID_USER, CELZONE_MISC};
/// typhon_recorder::celog_data(true, CELID_USER, b"hello", 0, CELZONE_MISC, 0, false).unwrap();
/// assert!(typhon_recorder::celog_data(true, CELID_USER, &[0; 4096], 0, CELZONE_MISC, 0, false).is_err());
/// assert!(typhon_recorder::celog_data(true, CELID_FLAGGED, b"x", 0, CELZONE_MISC, 0, false).is_err());
/// ```
pub fn celog_data(
    timestamp: bool,
    id: u16,
    data: &[u8],
    zone_user: u32,
    zone_ce: u32,
    flag: u16,
    flagged: bool,
) -> Result<(), WriteError> {
    celog_data_at(
        timestamp.then_some(None),
        id,
        data,
        zone_user,
        zone_ce,
        flag,
        flagged,
    )
}

/// [`celog_data`] with a caller-supplied timestamp: `Some(Some(ticks))` records that time,
/// `Some(None)` reads the clock, `None` records no CeLog timestamp.
///
/// ```
/// use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
/// typhon_recorder::celog_data_at(Some(Some(99)), CELID_USER, b"x", 0, CELZONE_MISC, 3, true).unwrap();
/// ```
pub fn celog_data_at(
    timestamp: Option<Option<u64>>,
    id: u16,
    data: &[u8],
    zone_user: u32,
    zone_ce: u32,
    flag: u16,
    flagged: bool,
) -> Result<(), WriteError> {
    let flag = flagged.then_some(flag);
    // Validate before the gate, so bad input is reported whether or not a recorder runs.
    if data.len() > codec::celog::MAX_DATA_SIZE {
        return Err(refused(WriteError::Invalid(format!(
            "CeLog data of {} bytes exceeds {}",
            data.len(),
            codec::celog::MAX_DATA_SIZE
        ))));
    }
    // As CE's CeLogData: ids below CELID_MAX (0x3FFF), and never CELID_FLAGGED (90), which
    // marks a flagged event's header and is not an event id of its own.
    if id >= codec::celog::CELID_MAX || id == codec::celog::CELID_FLAGGED {
        return Err(refused(WriteError::Invalid(format!(
            "CeLog id {id:#x} is reserved: ids go up to 0x3FFE, and 90 (CELID_FLAGGED) marks \
             a flagged event"
        ))));
    }
    let size = records::celog_record_len(data.len(), timestamp.is_some(), flag.is_some(), 0);
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if !enabled(TraceEventKind::CELOG)
        || !codec::celog::zones_enabled(
            zone_user,
            zone_ce,
            ZONE_USER.load(Ordering::Relaxed),
            ZONE_CE.load(Ordering::Relaxed),
        )
    {
        count_filtered();
        return Ok(());
    }
    let cel_cpu = crate::platform::current_cpu().map_or(0, |cpu| cpu + 1);
    let size = if cel_cpu >= 15 { size + 4 } else { size };
    with_writer(|w| {
        if size > w.core.max_record {
            w.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: w.core.max_record,
            });
        }
        let t = match timestamp {
            Some(at) => w.ts(at),
            None => w.last_raw,
        } as i64;
        let slot = w.slot;
        let mut res = Ok(());
        // The ring publishes whatever the fill leaves, so the fill must not fail: the id and
        // the data length were checked above and `size` is the event's exact length, which
        // leaves `write_celog_record` nothing to refuse. (`res` stays as a debug check.)
        w.put(size, |d| {
            // The CeLog timestamp field is filled by the flusher from the record time (1 µs
            // ticks on the monotonic base), so it is written as 0 here.
            let ev = codec::celog::CelEvent {
                id,
                timestamp: timestamp.map(|_| 0),
                flag,
                cpu: cel_cpu,
                data,
            };
            if let Err(e) = records::write_celog_record(d, slot, t, &ev) {
                let _busy = crate::write::alloc_state::RecorderBusy::enter();
                res = Err(WriteError::Invalid(e.to_string()));
            }
        });
        debug_assert!(
            res.is_ok(),
            "a checked CeLog event failed to encode: {res:?}"
        );
        res
    })
    .unwrap_or(Ok(()))
}

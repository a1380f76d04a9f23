//! The typed view of a record ([`Record`]), built on the generic decoder so that no layout is
//! written down twice; and the ThreadInfo helpers the flusher and recovery use.

use super::*;
use crate::codec::celog::{self, CelEvent};
use crate::codec::correlation::{self, CorrelationInstant};
use crate::codec::{CommonHeader, DecodeError, EncodeError, TraceEventKind as K};

/// A typed record body for every kind of the table. Built on [`decode_fields`], so it accepts
/// exactly what the table-driven decoder accepts.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// let r = Record::PhaseStart { phase: 3 };
/// let mut b = [0u8; 16];
/// let n = r.write(&mut b, 2, 10).unwrap();
/// let (h, back) = decode(&b[..n]).unwrap();
/// assert_eq!((h.slot, h.timestamp, back), (2, 10, r));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// Kind 0.
    TickStart,
    /// Kind 1.
    TickEnd {
        /// How overloaded the tick was.
        overload_level: u8,
        /// Tick multiplier in effect.
        tick_multiplier: u8,
    },
    /// Kind 2.
    PhaseStart {
        /// Phase number.
        phase: u8,
    },
    /// Kind 3.
    PhaseEnd {
        /// Phase number.
        phase: u8,
    },
    /// Kind 6.
    Instant {
        /// Interned name.
        name_id: i32,
        /// User value.
        payload: i32,
    },
    /// Kind 11.
    TracedSpan {
        /// Duration and ids.
        span: SpanExt,
        /// Trace context.
        context: TraceContext,
        /// Span name.
        name: &'a str,
    },
    /// Kind 77.
    ThreadInfo {
        /// OS thread id.
        thread_id: i32,
        /// Thread name.
        name: &'a str,
        /// What the thread is for.
        kind: ThreadKind,
    },
    /// Kinds 236–240.
    Correlation(CorrelationInstant),
    /// Kind 246.
    NamedSpan {
        /// Duration and ids.
        span: SpanExt,
        /// Span name.
        name: &'a str,
    },
    /// Kind 247: one entry of a `tracing` span.
    TracingSpan {
        /// Duration and ids.
        span: SpanExt,
        /// The span's recording-unique key.
        key: u64,
        /// `tracing`'s id of the span.
        tracing_id: u64,
        /// Display name; empty when the span's TracingSpanValues name it (SPEC §15: readers
        /// take it from there, `typhon_trace`'s `stream_records` hands the entry out with it).
        name: &'a str,
    },
    /// Kind 226: one entry of a described `tracing` span, compact (no ids, no name: readers
    /// rebuild them, `typhon_trace`'s `stream_records` hands it out as a TracingSpan).
    TracingEntry {
        /// How long the entry lasted.
        duration_ns: i64,
        /// The span's recording-unique key.
        key: u64,
    },
    /// Kind 227: a `tracing` span closed.
    TracingClose {
        /// The span's key.
        key: u64,
    },
    /// Kind 248: a `tracing` span's description.
    TracingSpanInfo {
        /// The span's key.
        key: u64,
        /// `tracing`'s id of the span.
        tracing_id: u64,
        /// Level byte ([`level_name`]).
        level: u8,
        /// Callsite name.
        name: &'a str,
        /// Target.
        target: &'a str,
        /// Fields, `k=v` separated by spaces.
        fields: &'a str,
    },
    /// Kind 249: a `tracing` event.
    TracingEvent {
        /// The current span's key (0: none).
        span_key: u64,
        /// Level byte.
        level: u8,
        /// Target.
        target: &'a str,
        /// Message.
        message: &'a str,
        /// Other fields.
        fields: &'a str,
    },
    /// Kind 250: `follows_from`.
    TracingFollows {
        /// The span that follows.
        key: u64,
        /// The span it follows.
        follows_key: u64,
    },
    /// Kind 241: an instant with its name.
    NamedInstant {
        /// Payload.
        payload: i32,
        /// Name.
        name: &'a str,
    },
    /// Kind 242: a phase's start with its name.
    NamedPhaseStart {
        /// Phase number (it pairs starts and ends).
        phase: u8,
        /// Name.
        name: &'a str,
    },
    /// Kind 243: a phase's end with its name.
    NamedPhaseEnd {
        /// Phase number.
        phase: u8,
        /// Name.
        name: &'a str,
    },
    /// Kind 228: a static name's definition in its slot.
    NameDefinition {
        /// The id the slot's records use.
        name_id: u32,
        /// Name.
        name: &'a str,
    },
    /// Kind 229: a NamedSpan by name id.
    NamedSpanId {
        /// Duration and ids.
        span: SpanExt,
        /// Its name's id in the slot's definitions.
        name_id: u32,
    },
    /// Kind 230: a NamedInstant by name id.
    NamedInstantId {
        /// Payload.
        payload: i32,
        /// Its name's id in the slot's definitions.
        name_id: u32,
    },
    /// Kind 231: a NamedPhaseStart by name id.
    NamedPhaseStartId {
        /// Phase number.
        phase: u8,
        /// Its name's id in the slot's definitions.
        name_id: u32,
    },
    /// Kind 232: a NamedPhaseEnd by name id.
    NamedPhaseEndId {
        /// Phase number.
        phase: u8,
        /// Its name's id in the slot's definitions.
        name_id: u32,
    },
    /// Kind 234: a counter's value with its name.
    Counter {
        /// The value.
        value: CounterValue,
        /// Name.
        name: &'a str,
    },
    /// Kind 235: a Counter by name id.
    CounterId {
        /// The value.
        value: CounterValue,
        /// Its name's id in the slot's definitions.
        name_id: u32,
    },
    /// Kind 251: a `tracing` callsite's definition.
    TracingCallsite(Callsite<'a>),
    /// Kind 252: a `tracing` span's description against its callsite.
    TracingSpanValues {
        /// The span's key.
        key: u64,
        /// Its `tracing` parent's key (0: a root). Files from before kind 226 held the span's
        /// `tracing` id here.
        parent_key: u64,
        /// Its callsite's id.
        callsite: u32,
        /// Typed values ([`Values`]).
        values: &'a [u8],
    },
    /// Kind 253: a `tracing` event against its callsite.
    TracingEventValues {
        /// The current span's key (0: none).
        span_key: u64,
        /// Its callsite's id.
        callsite: u32,
        /// Typed values ([`Values`]).
        values: &'a [u8],
    },
    /// Kind 254: the recorder's clock re-anchored ([`K::CLOCK_SYNC`]).
    ClockSync {
        /// CLOCK_MONOTONIC ns read with the record's time.
        monotonic_ns: u64,
        /// UNIX ns (CLOCK_REALTIME) read with it.
        wall_ns: u64,
    },
    /// Kind 255.
    CeLog(CelEvent<'a>),
}

impl Record<'_> {
    /// The record's kind.
    ///
    /// ```
    /// use typhon_recorder::codec::{records::Record, TraceEventKind};
    /// assert_eq!(Record::TickStart.kind(), TraceEventKind::TICK_START);
    /// ```
    pub const fn kind(&self) -> K {
        match self {
            Record::TickStart => K::TICK_START,
            Record::TickEnd { .. } => K::TICK_END,
            Record::PhaseStart { .. } => K::PHASE_START,
            Record::PhaseEnd { .. } => K::PHASE_END,
            Record::Instant { .. } => K::INSTANT,
            Record::TracedSpan { .. } => K::TRACED_SPAN,
            Record::ThreadInfo { .. } => K::THREAD_INFO,
            Record::Correlation(c) => c.kind(),
            Record::NamedSpan { .. } => K::NAMED_SPAN,
            Record::TracingSpan { .. } => K::TRACING_SPAN,
            Record::TracingEntry { .. } => K::TRACING_ENTRY,
            Record::TracingClose { .. } => K::TRACING_CLOSE,
            Record::TracingSpanInfo { .. } => K::TRACING_SPAN_INFO,
            Record::TracingEvent { .. } => K::TRACING_EVENT,
            Record::TracingFollows { .. } => K::TRACING_FOLLOWS,
            Record::NamedInstant { .. } => K::NAMED_INSTANT,
            Record::NamedPhaseStart { .. } => K::NAMED_PHASE_START,
            Record::NamedPhaseEnd { .. } => K::NAMED_PHASE_END,
            Record::NameDefinition { .. } => K::NAME_DEFINITION,
            Record::NamedSpanId { .. } => K::NAMED_SPAN_ID,
            Record::NamedInstantId { .. } => K::NAMED_INSTANT_ID,
            Record::NamedPhaseStartId { .. } => K::NAMED_PHASE_START_ID,
            Record::NamedPhaseEndId { .. } => K::NAMED_PHASE_END_ID,
            Record::Counter { .. } => K::COUNTER,
            Record::CounterId { .. } => K::COUNTER_ID,
            Record::TracingCallsite(_) => K::TRACING_CALLSITE,
            Record::TracingSpanValues { .. } => K::TRACING_SPAN_VALUES,
            Record::TracingEventValues { .. } => K::TRACING_EVENT_VALUES,
            Record::ClockSync { .. } => K::CLOCK_SYNC,
            Record::CeLog(_) => K::CELOG,
        }
    }

    /// The encoded record size.
    ///
    /// ```
    /// use typhon_recorder::codec::records::*;
    /// assert_eq!(Record::NamedSpan { span: SpanExt::default(), name: "ab" }.encoded_len(), 40);
    /// ```
    pub const fn encoded_len(&self) -> usize {
        match self {
            Record::TickStart => TICK_START_SIZE,
            Record::TickEnd { .. } => TICK_END_SIZE,
            Record::PhaseStart { .. } | Record::PhaseEnd { .. } => PHASE_SIZE,
            Record::Instant { .. } => INSTANT_SIZE,
            Record::TracedSpan { name, .. } => traced_span_len(name),
            Record::ThreadInfo { name, .. } => thread_info_len(name),
            Record::Correlation(c) => correlation::size_of(c.kind()),
            Record::NamedSpan { name, .. } => named_span_len(name),
            Record::TracingSpan { name, .. } => tracing_span_len(name),
            Record::TracingEntry { .. } => TRACING_ENTRY_SIZE,
            Record::TracingClose { .. } => TRACING_CLOSE_SIZE,
            Record::TracingSpanInfo {
                name,
                target,
                fields,
                ..
            } => tracing_span_info_len(name, target, fields),
            Record::TracingEvent {
                target,
                message,
                fields,
                ..
            } => tracing_event_len(target, message, fields),
            Record::TracingFollows { .. } => min_size(K::TRACING_FOLLOWS),
            Record::NamedInstant { name, .. } => named_instant_len(name),
            Record::NamedPhaseStart { name, .. } | Record::NamedPhaseEnd { name, .. } => {
                named_phase_len(name)
            }
            Record::NameDefinition { name, .. } => name_definition_len(name),
            Record::NamedSpanId { .. } => NAMED_SPAN_ID_SIZE,
            Record::NamedInstantId { .. } => NAMED_INSTANT_ID_SIZE,
            Record::NamedPhaseStartId { .. } | Record::NamedPhaseEndId { .. } => {
                NAMED_PHASE_ID_SIZE
            }
            Record::Counter { name, .. } => counter_len(name),
            Record::CounterId { .. } => COUNTER_ID_SIZE,
            Record::TracingCallsite(c) => tracing_callsite_len(c),
            Record::TracingSpanValues { values, .. } => tracing_span_values_len(values.len()),
            Record::TracingEventValues { values, .. } => tracing_event_values_len(values.len()),
            Record::ClockSync { .. } => CLOCK_SYNC_SIZE,
            Record::CeLog(ev) => CELOG_EVENT + ev.encoded_len(),
        }
    }

    /// Writes the record with the matching typed encoder and returns its size.
    ///
    /// # Errors
    /// Those of the encoder; a correlation record whose size exceeds `d` gives
    /// [`EncodeError::DstTooSmall`] rather than the correlation writers' panic.
    ///
    /// ```
    /// use typhon_recorder::codec::{records::*, EncodeError};
    /// let r = Record::Instant { name_id: 1, payload: 2 };
    /// assert_eq!(r.write(&mut [0u8; 4], 0, 0), Err(EncodeError::DstTooSmall { need: 20, have: 4 }));
    /// ```
    pub fn write(&self, d: &mut [u8], slot: u8, ts: i64) -> Result<usize, EncodeError> {
        match *self {
            Record::TickStart => write_tick_start(d, slot, ts),
            Record::TickEnd {
                overload_level,
                tick_multiplier,
            } => write_tick_end(d, slot, ts, overload_level, tick_multiplier),
            Record::PhaseStart { phase } => write_phase_start(d, slot, ts, phase),
            Record::PhaseEnd { phase } => write_phase_end(d, slot, ts, phase),
            Record::Instant { name_id, payload } => write_instant(d, slot, ts, name_id, payload),
            Record::TracedSpan {
                span,
                context,
                name,
            } => write_traced_span(d, slot, ts, &span, context, name),
            Record::ThreadInfo {
                thread_id,
                name,
                kind,
            } => write_thread_info(d, slot, ts, thread_id, name, kind),
            Record::Correlation(instant) => {
                let d = reserve(d, correlation::size_of(instant.kind()))?;
                Ok(correlation::CorrelationInstantData {
                    slot,
                    timestamp: ts,
                    instant,
                }
                .write(d))
            }
            Record::NamedSpan { span, name } => write_named_span(d, slot, ts, &span, name),
            Record::TracingSpan {
                span,
                key,
                tracing_id,
                name,
            } => write_tracing_span(d, slot, ts, &span, key, tracing_id, name),
            Record::TracingEntry { duration_ns, key } => {
                write_tracing_entry(d, slot, ts, duration_ns, key)
            }
            Record::TracingClose { key } => write_tracing_close(d, slot, ts, key),
            Record::TracingSpanInfo {
                key,
                tracing_id,
                level,
                name,
                target,
                fields,
            } => write_tracing_span_info(d, slot, ts, key, tracing_id, level, name, target, fields),
            Record::TracingEvent {
                span_key,
                level,
                target,
                message,
                fields,
            } => write_tracing_event(d, slot, ts, span_key, level, target, message, fields),
            Record::TracingFollows { key, follows_key } => {
                write_tracing_follows(d, slot, ts, key, follows_key)
            }
            Record::NamedInstant { payload, name } => {
                write_named_instant(d, slot, ts, payload, name)
            }
            Record::NamedPhaseStart { phase, name } => {
                write_named_phase(d, slot, ts, true, phase, name)
            }
            Record::NamedPhaseEnd { phase, name } => {
                write_named_phase(d, slot, ts, false, phase, name)
            }
            Record::NameDefinition { name_id, name } => {
                write_name_definition(d, slot, ts, name_id, name)
            }
            Record::NamedSpanId { span, name_id } => {
                write_named_span_id(d, slot, ts, &span, name_id)
            }
            Record::NamedInstantId { payload, name_id } => {
                write_named_instant_id(d, slot, ts, payload, name_id)
            }
            Record::NamedPhaseStartId { phase, name_id } => {
                write_named_phase_id(d, slot, ts, true, phase, name_id)
            }
            Record::NamedPhaseEndId { phase, name_id } => {
                write_named_phase_id(d, slot, ts, false, phase, name_id)
            }
            Record::Counter { value, name } => write_counter(d, slot, ts, value, name),
            Record::CounterId { value, name_id } => write_counter_id(d, slot, ts, value, name_id),
            Record::TracingCallsite(c) => write_tracing_callsite(d, slot, ts, &c),
            Record::TracingSpanValues {
                key,
                parent_key,
                callsite,
                values,
            } => write_tracing_span_values(d, slot, ts, key, parent_key, callsite, values),
            Record::TracingEventValues {
                span_key,
                callsite,
                values,
            } => write_tracing_event_values(d, slot, ts, span_key, callsite, values),
            Record::ClockSync {
                monotonic_ns,
                wall_ns,
            } => write_clock_sync(d, slot, ts, monotonic_ns, wall_ns),
            Record::CeLog(ev) => write_celog_record(d, slot, ts, &ev),
        }
    }
}

/// Decodes the record at the start of `record` into its header and typed body (bytes after the
/// record are ignored).
///
/// # Errors
/// Those of [`decode_fields`], and [`DecodeError::UnexpectedKind`] for a kind not in the table.
///
/// ```
/// use typhon_recorder::codec::{records::*, DecodeError, TraceEventKind};
/// let mut b = [0u8; 64];
/// let span = SpanExt { duration_ns: 5, span_id: 6, parent_span_id: 7 };
/// let ctx = TraceContext::from_command(1, 2, 3);
/// let n = write_traced_span(&mut b, 4, 100, &span, ctx, "cmd").unwrap();
/// let (_, r) = decode(&b[..n]).unwrap();
/// assert_eq!(r, Record::TracedSpan { span, context: ctx, name: "cmd" });
/// b[2] = 200;
/// assert_eq!(decode(&b), Err(DecodeError::UnexpectedKind(TraceEventKind(200))));
/// ```
pub fn decode(record: &[u8]) -> Result<(CommonHeader, Record<'_>), DecodeError> {
    let r = decode_fields(record)?;
    let h = r.header;
    let span = |r: &DecodedRecord<'_>| -> Result<SpanExt, DecodeError> {
        Ok(SpanExt {
            duration_ns: r.signed("duration_ns")?,
            span_id: r.unsigned("span_id")?,
            parent_span_id: r.unsigned("parent_span_id")?,
        })
    };
    let counter_value = |r: &DecodedRecord<'_>| -> Result<CounterValue, DecodeError> {
        Ok(CounterValue {
            raw: r.signed("value")?,
            flags: r.unsigned("flags")? as u8,
        })
    };
    let body = match h.kind {
        K::TICK_START => Record::TickStart,
        K::TICK_END => Record::TickEnd {
            overload_level: r.unsigned("overload_level")? as u8,
            tick_multiplier: r.unsigned("tick_multiplier")? as u8,
        },
        K::PHASE_START => Record::PhaseStart {
            phase: r.unsigned("phase")? as u8,
        },
        K::PHASE_END => Record::PhaseEnd {
            phase: r.unsigned("phase")? as u8,
        },
        K::INSTANT => Record::Instant {
            name_id: r.signed("name_id")? as i32,
            payload: r.signed("payload")? as i32,
        },
        K::TRACED_SPAN => Record::TracedSpan {
            span: span(&r)?,
            context: TraceContext {
                hi: r.unsigned("trace_id_hi")?,
                lo: r.unsigned("trace_id_lo")?,
            },
            name: r.string("name")?,
        },
        K::THREAD_INFO => Record::ThreadInfo {
            thread_id: r.signed("thread_id")? as i32,
            name: r.string("name")?,
            kind: ThreadKind::from_u8(r.unsigned("thread_kind")? as u8),
        },
        K::NAMED_SPAN => Record::NamedSpan {
            span: span(&r)?,
            name: r.string("name")?,
        },
        K::TRACING_SPAN => Record::TracingSpan {
            span: span(&r)?,
            key: r.unsigned("key")?,
            tracing_id: r.unsigned("tracing_id")?,
            name: r.string("name")?,
        },
        K::TRACING_ENTRY => Record::TracingEntry {
            duration_ns: r.signed("duration_ns")?,
            key: r.unsigned("key")?,
        },
        K::TRACING_CLOSE => Record::TracingClose {
            key: r.unsigned("key")?,
        },
        // The compact kinds, as the full kinds they stand for (see `compact`).
        K::TRACING_ENTRY_SHORT => Record::TracingEntry {
            duration_ns: r.unsigned("duration_ns")? as i64,
            key: r.unsigned("key")?,
        },
        K::TRACING_CLOSE_SHORT => Record::TracingClose {
            key: r.unsigned("key")?,
        },
        K::TRACING_SPAN_PACKED => super::compact::decode_span_packed(r.bytes("packed")?)?,
        K::TRACING_EVENT_PACKED => super::compact::decode_event_packed(r.bytes("packed")?)?,
        K::TRACING_SPAN_INFO => Record::TracingSpanInfo {
            key: r.unsigned("key")?,
            tracing_id: r.unsigned("tracing_id")?,
            level: r.unsigned("level")? as u8,
            name: r.string("name")?,
            target: r.string("target")?,
            fields: r.string("fields")?,
        },
        K::TRACING_EVENT => Record::TracingEvent {
            span_key: r.unsigned("span_key")?,
            level: r.unsigned("level")? as u8,
            target: r.string("target")?,
            message: r.string("message")?,
            fields: r.string("fields")?,
        },
        K::TRACING_FOLLOWS => Record::TracingFollows {
            key: r.unsigned("key")?,
            follows_key: r.unsigned("follows_key")?,
        },
        K::NAMED_INSTANT => Record::NamedInstant {
            payload: r.signed("payload")? as i32,
            name: r.string("name")?,
        },
        K::NAMED_PHASE_START => Record::NamedPhaseStart {
            phase: r.unsigned("phase")? as u8,
            name: r.string("name")?,
        },
        K::NAMED_PHASE_END => Record::NamedPhaseEnd {
            phase: r.unsigned("phase")? as u8,
            name: r.string("name")?,
        },
        K::NAME_DEFINITION => Record::NameDefinition {
            name_id: r.unsigned("name_id")? as u32,
            name: r.string("name")?,
        },
        K::NAMED_SPAN_ID => Record::NamedSpanId {
            span: span(&r)?,
            name_id: r.unsigned("name_id")? as u32,
        },
        K::NAMED_INSTANT_ID => Record::NamedInstantId {
            payload: r.signed("payload")? as i32,
            name_id: r.unsigned("name_id")? as u32,
        },
        K::NAMED_PHASE_START_ID => Record::NamedPhaseStartId {
            phase: r.unsigned("phase")? as u8,
            name_id: r.unsigned("name_id")? as u32,
        },
        K::NAMED_PHASE_END_ID => Record::NamedPhaseEndId {
            phase: r.unsigned("phase")? as u8,
            name_id: r.unsigned("name_id")? as u32,
        },
        K::COUNTER => Record::Counter {
            value: counter_value(&r)?,
            name: r.string("name")?,
        },
        K::COUNTER_ID => Record::CounterId {
            value: counter_value(&r)?,
            name_id: r.unsigned("name_id")? as u32,
        },
        K::TRACING_CALLSITE => Record::TracingCallsite(Callsite {
            id: r.unsigned("callsite")? as u32,
            level: r.unsigned("level")? as u8,
            line: r.unsigned("line")? as u32,
            name: r.string("name")?,
            target: r.string("target")?,
            file: r.string("file")?,
            field_names: r.string("field_names")?,
        }),
        K::TRACING_SPAN_VALUES => Record::TracingSpanValues {
            key: r.unsigned("key")?,
            parent_key: r.unsigned("parent_key")?,
            callsite: r.unsigned("callsite")? as u32,
            values: r.bytes("values")?,
        },
        K::TRACING_EVENT_VALUES => Record::TracingEventValues {
            span_key: r.unsigned("span_key")?,
            callsite: r.unsigned("callsite")? as u32,
            values: r.bytes("values")?,
        },
        K::CLOCK_SYNC => Record::ClockSync {
            monotonic_ns: r.unsigned("monotonic_ns")?,
            wall_ns: r.unsigned("wall_ns")?,
        },
        K::CELOG => Record::CeLog(celog::decode_event(r.payload)?.0),
        k if correlation::covers(k) => Record::Correlation(correlation::decode(record)?.instant),
        k => return Err(DecodeError::UnexpectedKind(k)),
    };
    Ok((h, body))
}

/// Longest thread name a ThreadInfo record carries (longer names are cut at a character
/// boundary: a display name, not data).
///
/// ```
/// assert_eq!(typhon_recorder::MAX_THREAD_NAME, 64);
/// ```
pub const MAX_THREAD_NAME: usize = 64;

/// `name`, cut to [`MAX_THREAD_NAME`] bytes at a character boundary.
pub(crate) fn clamp_thread_name(name: &str) -> &str {
    if name.len() <= MAX_THREAD_NAME {
        return name;
    }
    let mut end = MAX_THREAD_NAME;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Decodes a ThreadInfo record: (thread id, name, kind).
pub(crate) fn thread_info(r: &[u8]) -> Option<(i32, &str, ThreadKind)> {
    match decode(r) {
        Ok((
            _,
            Record::ThreadInfo {
                thread_id,
                name,
                kind,
            },
        )) => Some((thread_id, name, kind)),
        _ => None,
    }
}

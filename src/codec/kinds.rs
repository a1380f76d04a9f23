//! The kind table: one entry per record kind, the single description of every payload layout.
//!
//! Each [`KindDef`] names the kind, says whether it is an instant or a span, and lists the fields
//! that follow the 12-byte common header, in wire order, packed with no alignment. Fixed fields
//! carry their absolute offset inside the record; a field that follows a variable-length one has
//! no fixed offset (`offset: None`) and is found by walking the record.
//!
//! Everything that needs a layout reads it here: the typed encoders are checked against it by the
//! test suite, the generic decoder ([`crate::codec::records::decode_fields`]) walks it, the trace.dat
//! writer turns each entry into an ftrace event `format`, and the CLI prints records through it.
//! Kinds are classified through this table, never by numeric range.

use super::TraceEventKind as K;

mod def;
pub use def::{FieldDef, FieldType, KindDef, Shape};

const fn f(name: &'static str, ty: FieldType, offset: usize) -> FieldDef {
    FieldDef {
        name,
        ty,
        offset: Some(offset),
    }
}

const fn var(name: &'static str, ty: FieldType) -> FieldDef {
    FieldDef {
        name,
        ty,
        offset: None,
    }
}

use FieldType::*;

/// Bytes of the span extension that follows the common header of every span record:
/// `i64 duration_ns, u64 span_id, u64 parent_span_id, u8 flags`.
///
/// ```
/// assert_eq!(typhon_recorder::codec::kinds::SPAN_EXT_SIZE, 25);
/// ```
pub const SPAN_EXT_SIZE: usize = 25;
/// Offset of the span extension's `duration_ns` field inside a span record.
///
/// ```
/// assert_eq!(typhon_recorder::codec::kinds::SPAN_DURATION_OFFSET, 12);
/// ```
pub const SPAN_DURATION_OFFSET: usize = 12;
/// Offset of the span flags byte inside a span record.
///
/// ```
/// assert_eq!(typhon_recorder::codec::kinds::SPAN_FLAGS_OFFSET, 36);
/// ```
pub const SPAN_FLAGS_OFFSET: usize = 36;
/// Span flags bit 0: a 16-byte trace context (`trace_id_hi`, `trace_id_lo`) follows the flags.
///
/// ```
/// assert_eq!(typhon_recorder::codec::kinds::SPAN_FLAG_TRACE_CONTEXT, 1);
/// ```
pub const SPAN_FLAG_TRACE_CONTEXT: u8 = 1;
/// Bit 55 of a span id: the recorder's id of a TracingEntry (kind 226), which no record
/// carries; a native span opened inside the entry names it as its parent, and readers give
/// the entry that id (SPEC §2 ids are `slot << 56 | counter`, and no counter reaches 2^55).
///
/// ```
/// assert_eq!(typhon_recorder::codec::kinds::TRACING_ENTRY_ID_BIT, 1 << 55);
/// ```
pub const TRACING_ENTRY_ID_BIT: u64 = 1 << 55;

/// Every kind this SDK writes, in kind order.
///
/// ```
/// use typhon_recorder::codec::KINDS;
/// assert_eq!(KINDS.len(), 38);
/// assert!(KINDS.iter().any(|d| d.name == "CeLog"));
/// ```
pub const KINDS: &[KindDef] = &[
    KindDef {
        kind: K::TICK_START,
        name: "TickStart",
        shape: Shape::Instant,
        fields: &[],
        min_size: 12,
        fixed: true,
    },
    KindDef {
        kind: K::TICK_END,
        name: "TickEnd",
        shape: Shape::Instant,
        fields: &[f("overload_level", U8, 12), f("tick_multiplier", U8, 13)],
        min_size: 14,
        fixed: true,
    },
    KindDef {
        kind: K::PHASE_START,
        name: "PhaseStart",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12)],
        min_size: 13,
        fixed: true,
    },
    KindDef {
        kind: K::PHASE_END,
        name: "PhaseEnd",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12)],
        min_size: 13,
        fixed: true,
    },
    KindDef {
        kind: K::INSTANT,
        name: "Instant",
        shape: Shape::Instant,
        fields: &[f("name_id", I32, 12), f("payload", I32, 16)],
        min_size: 20,
        fixed: true,
    },
    KindDef {
        kind: K::TRACED_SPAN,
        name: "TracedSpan",
        shape: Shape::Span,
        fields: &[
            f("duration_ns", I64, 12),
            f("span_id", U64, 20),
            f("parent_span_id", U64, 28),
            f("flags", U8, 36),
            f("trace_id_hi", U64, 37),
            f("trace_id_lo", U64, 45),
            f("name", CStr, 53),
        ],
        min_size: 54,
        fixed: false,
    },
    KindDef {
        kind: K::THREAD_INFO,
        name: "ThreadInfo",
        shape: Shape::Instant,
        fields: &[
            f("thread_id", I32, 12),
            f("name_len", U16, 16),
            f("name", LenStr("name_len"), 18),
            var("thread_kind", U8),
        ],
        min_size: 19,
        fixed: false,
    },
    // Compact forms of four `tracing` kinds: each stands for its full kind's record
    // (226, 252, 253, 227; same slot and time), which `records::decode` and `records::expand`
    // give, and the writer falls back to the full kind for what does not fit. This one: an
    // entry whose key and duration fit 32 bits; 20 bytes, 24 on disk (a TracingEntry: 28, 32).
    KindDef {
        kind: K::TRACING_ENTRY_SHORT,
        name: "TracingEntryShort",
        shape: Shape::Span,
        fields: &[f("duration_ns", U32, 12), f("key", U32, 16)],
        min_size: 20,
        fixed: true,
    },
    // A span's description, its ids as varints (LEB128): key, parent (0 for a root, else
    // `key - parent_key`, small: see `records::parent_code`), callsite, then the values as a
    // TracingSpanValues holds them; 12 + ~5 + values bytes where that takes 32 + values.
    KindDef {
        kind: K::TRACING_SPAN_PACKED,
        name: "TracingSpanPacked",
        shape: Shape::Instant,
        fields: &[f("packed", Rest, 12)],
        min_size: 15,
        fixed: false,
    },
    // An event with varint span_key (0: none) and callsite, then the values.
    KindDef {
        kind: K::TRACING_EVENT_PACKED,
        name: "TracingEventPacked",
        shape: Shape::Instant,
        fields: &[f("packed", Rest, 12)],
        min_size: 14,
        fixed: false,
    },
    // A TracingClose of a key that fits 32 bits: 16 bytes, 20 on disk.
    KindDef {
        kind: K::TRACING_CLOSE_SHORT,
        name: "TracingCloseShort",
        shape: Shape::Instant,
        fields: &[f("key", U32, 12)],
        min_size: 16,
        fixed: true,
    },
    // A described `tracing` span's entry, compact: one per enter → exit, as a
    // TracingSpan (kind 247) is, but only what a reader cannot rebuild. The span's name, level,
    // target and fields are in its description (TracingSpanValues, by `key`), its tracing
    // parent too (`parent_key` there); its nesting with the thread's other spans is the
    // records' time containment on their slot. 28 bytes, 32 on disk with the page's event
    // word (a TracingSpan with an empty name: 54, 60). Written for an entry of a span
    // described against its callsite whose enclosing open span on the thread is none or such
    // an entry: under a span with a span id (a native span, a TracingSpan), the entry is a
    // TracingSpan instead, so that it names that parent. Its span id in the recorder's stack
    // has bit 55 set ([`TRACING_ENTRY_ID_BIT`]): a native span opened inside it names it as
    // its parent, and readers give the entry that id.
    KindDef {
        kind: K::TRACING_ENTRY,
        name: "TracingEntry",
        shape: Shape::Span,
        fields: &[f("duration_ns", I64, 12), f("key", U64, 20)],
        min_size: 28,
        fixed: true,
    },
    // A `tracing` span closed (on_close), by key: an OTLP span runs from its first entry to
    // this. Written only for a span whose last exit is not its end: one entered more than
    // once (an async task polled again, on this thread or another) or never entered; a span
    // entered once closes with its exit (`in_scope`, a guard), and its close would cost
    // 24 bytes on disk to say what its entry says. Nor when nothing was written on the closing
    // thread since the span's last exit there (an instrumented future, entered once more to
    // be dropped, closes right after): that entry ends it. 20 bytes, 24 on disk.
    KindDef {
        kind: K::TRACING_CLOSE,
        name: "TracingClose",
        shape: Shape::Instant,
        fields: &[f("key", U64, 12)],
        min_size: 20,
        fixed: true,
    },
    // Static names (SPEC §15): a name is defined once per slot (NameDefinition) and the
    // records below carry its id; each is its inline kind (246, 241, 242, 243) with `name_id`
    // in the name's place. A reader resolves the id against the definitions of the record's
    // slot; trace-cmd, which cannot, prints the id.
    KindDef {
        kind: K::NAME_DEFINITION,
        name: "NameDefinition",
        shape: Shape::Instant,
        fields: &[f("name_id", U32, 12), f("name", CStr, 16)],
        min_size: 17,
        fixed: false,
    },
    KindDef {
        kind: K::NAMED_SPAN_ID,
        name: "NamedSpanId",
        shape: Shape::Span,
        fields: &[
            f("duration_ns", I64, 12),
            f("span_id", U64, 20),
            f("parent_span_id", U64, 28),
            f("flags", U8, 36),
            f("name_id", U32, 37),
        ],
        min_size: 41,
        fixed: true,
    },
    KindDef {
        kind: K::NAMED_INSTANT_ID,
        name: "NamedInstantId",
        shape: Shape::Instant,
        fields: &[f("payload", I32, 12), f("name_id", U32, 16)],
        min_size: 20,
        fixed: true,
    },
    KindDef {
        kind: K::NAMED_PHASE_START_ID,
        name: "NamedPhaseStartId",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12), f("name_id", U32, 13)],
        min_size: 17,
        fixed: true,
    },
    KindDef {
        kind: K::NAMED_PHASE_END_ID,
        name: "NamedPhaseEndId",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12), f("name_id", U32, 13)],
        min_size: 17,
        fixed: true,
    },
    // Counters (issue 37): a value over time, i64 or f64 (`flags` bit 0: `value` holds the f64's
    // bits). The id form is the inline kind with `name_id` in the name's place (SPEC §15).
    KindDef {
        kind: K::COUNTER,
        name: "Counter",
        shape: Shape::Instant,
        fields: &[f("value", I64, 12), f("flags", U8, 20), f("name", CStr, 21)],
        min_size: 22,
        fixed: false,
    },
    KindDef {
        kind: K::COUNTER_ID,
        name: "CounterId",
        shape: Shape::Instant,
        fields: &[
            f("value", I64, 12),
            f("flags", U8, 20),
            f("name_id", U32, 21),
        ],
        min_size: 25,
        fixed: true,
    },
    KindDef {
        kind: K::INGRESS_RECEIVED,
        name: "IngressReceived",
        shape: Shape::Instant,
        fields: &[
            f("session", U32, 12),
            f("seq", U16, 16),
            f("wire_idx", U16, 18),
            f("bytes", U16, 20),
        ],
        min_size: 22,
        fixed: true,
    },
    KindDef {
        kind: K::INGRESS_ADMITTED,
        name: "IngressAdmitted",
        shape: Shape::Instant,
        fields: &[
            f("session", U32, 12),
            f("seq", U16, 16),
            f("wire_idx", U16, 18),
            f("drain_tick", U32, 20),
        ],
        min_size: 24,
        fixed: true,
    },
    KindDef {
        kind: K::INGRESS_DROPPED,
        name: "IngressDropped",
        shape: Shape::Instant,
        fields: &[
            f("session", U32, 12),
            f("seq", U16, 16),
            f("reason", U8, 18),
        ],
        min_size: 19,
        fixed: true,
    },
    KindDef {
        kind: K::COMMAND_CONSUMED,
        name: "CommandConsumed",
        shape: Shape::Instant,
        fields: &[
            f("session", U32, 12),
            f("seq", U16, 16),
            f("sys_idx", U16, 18),
        ],
        min_size: 20,
        fixed: true,
    },
    KindDef {
        kind: K::EGRESS_SENT,
        name: "EgressSent",
        shape: Shape::Instant,
        fields: &[
            f("session", U32, 12),
            f("tick", U32, 16),
            f("bytes", U32, 20),
            f("acks", U16, 24),
        ],
        min_size: 26,
        fixed: true,
    },
    // Named instants and phases carry their names (one kind table, no name table to join):
    // every reader, trace-cmd's print format included, shows the name from the record alone.
    KindDef {
        kind: K::NAMED_INSTANT,
        name: "NamedInstant",
        shape: Shape::Instant,
        fields: &[f("payload", I32, 12), f("name", CStr, 16)],
        min_size: 17,
        fixed: false,
    },
    KindDef {
        kind: K::NAMED_PHASE_START,
        name: "NamedPhaseStart",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12), f("name", CStr, 13)],
        min_size: 14,
        fixed: false,
    },
    KindDef {
        kind: K::NAMED_PHASE_END,
        name: "NamedPhaseEnd",
        shape: Shape::Instant,
        fields: &[f("phase", U8, 12), f("name", CStr, 13)],
        min_size: 14,
        fixed: false,
    },
    KindDef {
        kind: K::NAMED_SPAN,
        name: "NamedSpan",
        shape: Shape::Span,
        fields: &[
            f("duration_ns", I64, 12),
            f("span_id", U64, 20),
            f("parent_span_id", U64, 28),
            f("flags", U8, 36),
            f("name", CStr, 37),
        ],
        min_size: 38,
        fixed: false,
    },
    KindDef {
        kind: K::TRACING_SPAN,
        name: "TracingSpan",
        shape: Shape::Span,
        fields: &[
            f("duration_ns", I64, 12),
            f("span_id", U64, 20),
            f("parent_span_id", U64, 28),
            f("flags", U8, 36),
            f("key", U64, 37),
            f("tracing_id", U64, 45),
            f("name", CStr, 53),
        ],
        min_size: 54,
        fixed: false,
    },
    KindDef {
        kind: K::TRACING_SPAN_INFO,
        name: "TracingSpanInfo",
        shape: Shape::Instant,
        fields: &[
            f("key", U64, 12),
            f("tracing_id", U64, 20),
            f("level", U8, 28),
            f("name", DataLoc, 29),
            f("target", DataLoc, 33),
            f("fields", DataLoc, 37),
        ],
        min_size: 44,
        fixed: false,
    },
    KindDef {
        kind: K::TRACING_EVENT,
        name: "TracingEvent",
        shape: Shape::Instant,
        fields: &[
            f("span_key", U64, 12),
            f("level", U8, 20),
            f("target", DataLoc, 21),
            f("message", DataLoc, 25),
            f("fields", DataLoc, 29),
        ],
        min_size: 36,
        fixed: false,
    },
    KindDef {
        kind: K::TRACING_FOLLOWS,
        name: "TracingFollows",
        shape: Shape::Instant,
        fields: &[f("key", U64, 12), f("follows_key", U64, 20)],
        min_size: 28,
        fixed: true,
    },
    // A `tracing` callsite, written once per recording (SPEC §15): the records below carry its
    // id and typed values instead of repeating its strings. `field_names` is the callsite's
    // field names in order, separated by commas (a comma inside a name is written as `;`).
    KindDef {
        kind: K::TRACING_CALLSITE,
        name: "TracingCallsite",
        shape: Shape::Instant,
        fields: &[
            f("callsite", U32, 12),
            f("level", U8, 16),
            f("line", U32, 17),
            f("name", DataLoc, 21),
            f("target", DataLoc, 25),
            f("file", DataLoc, 29),
            f("field_names", DataLoc, 33),
        ],
        min_size: 41,
        fixed: false,
    },
    // A span's description against its callsite: `values` are typed entries
    // ([`crate::codec::records::Values`]) indexed by the callsite's field names. `parent_key`:
    // the key of its `tracing` parent (explicit `parent:`, or the current span where it was
    // created; 0 for a root), so exports know it across threads. Files written before kind
    // 226 existed (`tracing-v2.dat`) held the span's `tracing` id there; nothing but the
    // OTLP export's close guess used it, and the close (227) says it now.
    KindDef {
        kind: K::TRACING_SPAN_VALUES,
        name: "TracingSpanValues",
        shape: Shape::Instant,
        fields: &[
            f("key", U64, 12),
            f("parent_key", U64, 20),
            f("callsite", U32, 28),
            f("values", Rest, 32),
        ],
        min_size: 32,
        fixed: false,
    },
    // An event against its callsite (level and target are the callsite's; the message is its
    // `message` field).
    KindDef {
        kind: K::TRACING_EVENT_VALUES,
        name: "TracingEventValues",
        shape: Shape::Instant,
        fields: &[
            f("span_key", U64, 12),
            f("callsite", U32, 20),
            f("values", Rest, 24),
        ],
        min_size: 24,
        fixed: false,
    },
    // The recorder's clock re-anchored (SPEC §16): CLOCK_MONOTONIC and UNIX time read with the
    // record's own (tick-clock) time, which readers map through them.
    KindDef {
        kind: K::CLOCK_SYNC,
        name: "ClockSync",
        shape: Shape::Instant,
        fields: &[f("monotonic_ns", U64, 12), f("wall_ns", U64, 20)],
        min_size: 28,
        fixed: true,
    },
    KindDef {
        kind: K::CELOG,
        name: "CeLog",
        shape: Shape::Instant,
        fields: &[f("event", Rest, 12)],
        min_size: 16,
        fixed: false,
    },
];

const fn build_index() -> [u8; 256] {
    let mut idx = [u8::MAX; 256];
    let mut i = 0;
    while i < KINDS.len() {
        idx[KINDS[i].kind.0 as usize] = i as u8;
        i += 1;
    }
    idx
}

static INDEX: [u8; 256] = build_index();

/// The table entry for `kind`, or `None` if this crate does not know the kind. O(1).
///
/// ```
/// use typhon_recorder::codec::{kind_def, TraceEventKind};
/// assert_eq!(kind_def(TraceEventKind::COMMAND_CONSUMED).unwrap().min_size, 20);
/// assert!(kind_def(TraceEventKind(5)).is_none());
/// ```
#[inline]
pub fn kind_def(kind: K) -> Option<&'static KindDef> {
    match INDEX[kind.0 as usize] {
        u8::MAX => None,
        i => Some(&KINDS[i as usize]),
    }
}

/// Most fields any kind has; [`crate::codec::records::DecodedRecord`] holds this many values
/// without allocating.
///
/// ```
/// use typhon_recorder::codec::kinds::{KINDS, MAX_FIELDS};
/// assert!(KINDS.iter().all(|d| d.fields.len() <= MAX_FIELDS));
/// ```
pub const MAX_FIELDS: usize = 8;

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn const_def(kind: K) -> Option<&'static KindDef> {
    let mut i = 0;
    while i < KINDS.len() {
        if KINDS[i].kind.0 == kind.0 {
            return Some(&KINDS[i]);
        }
        i += 1;
    }
    None
}

/// The fixed offset of field `name` of `kind`, looked up in the table; usable in `const` items,
/// which is how the typed encoders get their offsets (so no layout is written down twice).
/// `None` if the kind or field is unknown or the field has no fixed offset.
///
/// ```
/// use typhon_recorder::codec::{kinds::field_offset, TraceEventKind};
/// const ACKS: Option<usize> = field_offset(TraceEventKind::EGRESS_SENT, "acks");
/// assert_eq!(ACKS, Some(24));
/// assert_eq!(field_offset(TraceEventKind::THREAD_INFO, "thread_kind"), None);
/// ```
pub const fn field_offset(kind: K, name: &str) -> Option<usize> {
    let d = match const_def(kind) {
        Some(d) => d,
        None => return None,
    };
    let mut i = 0;
    while i < d.fields.len() {
        if str_eq(d.fields[i].name, name) {
            return d.fields[i].offset;
        }
        i += 1;
    }
    None
}

/// The table's `min_size` of `kind` (the whole size for fixed-size kinds), usable in `const`
/// items; `None` for an unknown kind.
///
/// ```
/// use typhon_recorder::codec::{kinds::min_size_of, TraceEventKind};
/// assert_eq!(min_size_of(TraceEventKind::INGRESS_DROPPED), Some(19));
/// assert_eq!(min_size_of(TraceEventKind(200)), None);
/// ```
pub const fn min_size_of(kind: K) -> Option<usize> {
    match const_def(kind) {
        Some(d) => Some(d.min_size),
        None => None,
    }
}

/// Compile-time unwrap of [`field_offset`] for the codecs' named offset consts.
pub(crate) const fn off(kind: K, name: &str) -> usize {
    match field_offset(kind, name) {
        Some(o) => o,
        None => panic!("field has no fixed offset in the kind table"),
    }
}

/// [`off`] evaluated at compile time in a function body, where a call of it would run at run
/// time (a loop of string compares per record written: it showed in the profile of a span's
/// exit).
macro_rules! const_off {
    ($kind:expr, $name:literal) => {{
        const OFF: usize = $crate::codec::kinds::off($kind, $name);
        OFF
    }};
}
pub(crate) use const_off;

/// Compile-time unwrap of [`min_size_of`].
pub(crate) const fn min_size(kind: K) -> usize {
    match min_size_of(kind) {
        Some(n) => n,
        None => panic!("kind missing from the kind table"),
    }
}

#[cfg(test)]
mod tests;

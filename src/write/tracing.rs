//! The writes a `tracing` layer makes (SPEC §12; the layer itself is the `typhon-tracing`
//! crate): an entry of a span goes on the thread's span stack like any span, so it nests with
//! the thread's other spans, and is written as a TracingSpan when it exits; a callsite's
//! strings are written once per recording ([`callsite`], SPEC §15), and a span's fields as
//! typed values against them ([`span_values`]) when it is created and when it records more
//! fields; events ([`event_values`]) and `follows_from` links are records of their own. The
//! records with the strings inline ([`span_info`], [`event`]) remain, for a callsite that has
//! no id.
//!
//! ```
//! # let _g = typhon_recorder::doc_lock();
//! use typhon_recorder::{bridge, RecorderBuilder, sink::MemorySink};
//! let rec = RecorderBuilder::new().sink(MemorySink::new()).start().unwrap();
//! let key = bridge::next_key();
//! bridge::span_info(key, 1, 3, "system", "app", "name=\"physics\"").unwrap();
//! bridge::enter(&bridge::SpanName::new("system: physics"), key, 1);
//! bridge::event(key, 3, "app", "stepped", "n=3").unwrap();
//! bridge::exit(1);
//! // ThreadInfo, the info, the event and the entry.
//! assert_eq!(rec.finish().unwrap().user_written(), 4);
//! ```

use crate::codec::records::{self, Callsite, TraceContext};
use crate::codec::{self, TraceEventKind as K};
use crate::write::gate::*;
use crate::write::stack::{Entry, META_TRACING, SPAN_DEPTH};
use crate::write::writer::*;
use crate::write::WriteError;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// A key no other span of this process has had: `tracing` reuses a closed span's id, so a
/// recording ties a span's entries, description and links by this key instead. One shared
/// atomic add: a layer calls it when a span is created, never on enter or exit.
///
/// ```
/// let a = typhon_recorder::bridge::next_key();
/// assert!(typhon_recorder::bridge::next_key() > a);
/// ```
pub fn next_key() -> u64 {
    // Relaxed: only uniqueness is needed.
    NEXT_KEY.fetch_add(1, Ordering::Relaxed)
}

/// A `tracing` span's display name, checked once (when the span is created or renamed) so that
/// an entry does no string work but the copy into the thread's stack.
///
/// ```
/// use typhon_recorder::bridge::SpanName;
/// assert!(SpanName::new("system: physics").is_valid());
/// assert!(!SpanName::new("bad\0name").is_valid()); // each entry of it is counted as refused
/// assert_eq!(SpanName::new("load").as_str(), "load");
/// ```
#[derive(Clone, Debug)]
pub struct SpanName {
    name: Box<str>,
    /// The TracingSpan record's size; 0 when the name cannot be recorded (a NUL, too large).
    size: usize,
}

impl SpanName {
    /// Checks `name`: one with a NUL byte, or too long for a record, is kept but never
    /// recorded (each entry is counted as refused instead).
    ///
    /// ```
    /// let n = typhon_recorder::bridge::SpanName::new(&"x".repeat(70_000));
    /// assert!(!n.is_valid()); // larger than any record
    /// ```
    pub fn new(name: &str) -> Self {
        let size = records::tracing_span_len(name);
        let ok = !records::has_nul(name.as_bytes()) && size <= codec::CommonHeader::MAX_RECORD;
        SpanName {
            name: name.into(),
            size: if ok { size } else { 0 },
        }
    }

    /// Whether entries of a span of this name can be recorded.
    ///
    /// ```
    /// assert!(typhon_recorder::bridge::SpanName::new("x").is_valid());
    /// ```
    pub fn is_valid(&self) -> bool {
        self.size != 0
    }

    /// The name.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::bridge::SpanName::new("x").as_str(), "x");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.name
    }
}

/// Opens an entry of the `tracing` span `key` (`tracing` id `tracing_id`) on this thread,
/// displayed as `name`: it nests under the thread's innermost open span, like [`crate::span()`].
/// Returns whether it was opened: `false` when nothing is recorded (no recorder, TracingSpan
/// filtered, no slot) or when it is refused (a name that [`SpanName::is_valid`] refuses, a
/// record too large for the running recorder's pages, a full span stack: counted as refused).
/// The same as [`enter_in`] subscriber 0: for a program with one subscriber.
///
/// ```
/// let name = typhon_recorder::bridge::SpanName::new("x");
/// assert!(!typhon_recorder::bridge::enter(&name, 1, 1)); // no recorder installed
/// ```
#[inline]
pub fn enter(name: &SpanName, key: u64, tracing_id: u64) -> bool {
    enter_in(0, name, key, tracing_id)
}

/// [`enter`] of a span of subscriber `subscriber`: a number that names the subscriber (its
/// layer's) among those recording on this thread, since each `tracing` subscriber hands out
/// its own ids and two subscribers' ids collide. [`exit_in`] ends only an entry of the same
/// subscriber and id.
///
/// ```
/// let name = typhon_recorder::bridge::SpanName::new("x");
/// assert!(!typhon_recorder::bridge::enter_in(7, &name, 1, 1)); // no recorder installed
/// ```
#[inline]
pub fn enter_in(subscriber: u64, name: &SpanName, key: u64, tracing_id: u64) -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    if !admitted(K::TRACING_SPAN) {
        return false;
    }
    if name.size == 0 {
        let _ = refused(WriteError::Invalid(String::new()));
        return false;
    }
    let ctx = TraceContext {
        hi: key,
        lo: tracing_id,
    };
    // Not `with_writer`: its closure would be called out of line (see `current_writer`).
    let w = current_writer();
    if w.is_null() {
        return false;
    }
    // SAFETY: the thread's own writer, used only within this call, which does not reenter the
    // recorder (see `current_writer`).
    let w = unsafe { &mut *w };
    w.open_span(&name.name, Some(ctx), None, name.size, Some(subscriber))
        .is_ok()
}

/// Ends this thread's innermost open entry of the span with `tracing` id `tracing_id` (and the
/// spans opened inside it that are still open, as a guard dropped out of order does). Nothing
/// happens when the thread has no such entry open (it was not recorded, or it ended with a
/// span that enclosed it). The same as [`exit_in`] subscriber 0.
///
/// ```
/// typhon_recorder::bridge::exit(1); // no recorder installed: nothing to end
/// ```
#[inline]
pub fn exit(tracing_id: u64) {
    exit_in(0, tracing_id)
}

/// [`exit`] of an entry that [`enter_in`] opened for `subscriber`: an entry of another
/// subscriber with the same id is not it. The entries of other subscribers open inside the
/// one that ends are not theirs to end: each is ended here (its record nested in this one)
/// and entered again at once (a second record of its span, from the same instant), so its
/// own exit ends it when it comes and no time of it is lost. Native spans and this
/// subscriber's own entries inside it end with it, as for [`exit`].
///
/// ```
/// typhon_recorder::bridge::exit_in(7, 1); // no recorder installed: nothing to end
/// ```
#[inline]
pub fn exit_in(subscriber: u64, tracing_id: u64) {
    if cfg!(feature = "compile-out") {
        return;
    }
    // The writer the entry was made under, as a guard's end takes it (`writer_as_is`): an exit
    // under a recorder that started since then claims no slot for an entry it cannot have.
    let w = writer_as_is();
    if w.is_null() {
        return;
    }
    // SAFETY: as in `enter`.
    let w = unsafe { &mut *w };
    // The common exit, in order: the innermost entry, checked before any search.
    if let Some(top) = w.depth.checked_sub(1) {
        // Always true (the depth never passes it): it spares the entry's bounds check.
        if top < SPAN_DEPTH {
            let e = w.stack.entries().entry(top);
            if is_entry_of(e, subscriber, tracing_id) {
                // Relaxed: this thread stored them.
                let (id, start, parent) = (
                    e.id.load(Ordering::Relaxed),
                    e.start.load(Ordering::Relaxed),
                    e.parent.load(Ordering::Relaxed),
                );
                let end = w.clock.raw();
                w.end_top(top, id, start, parent, end);
                return;
            }
        }
    }
    exit_below(w, subscriber, tracing_id);
}

/// Whether the open entry `e` is one of span `tracing_id` of `subscriber`.
#[inline(always)]
fn is_entry_of(e: &Entry, subscriber: u64, tracing_id: u64) -> bool {
    // Relaxed: this thread stored them.
    e.meta.load(Ordering::Relaxed) & META_TRACING != 0
        && e.trace_lo.load(Ordering::Relaxed) == tracing_id
        && e.subscriber.load(Ordering::Relaxed) == subscriber
}

/// An entry of another subscriber's span that an exit ended: what entering it again needs.
struct Resumed {
    name: String,
    ctx: TraceContext,
    subscriber: u64,
}

/// [`exit_in`] of an entry below the innermost (exits out of order) or of none.
#[cold]
#[inline(never)]
fn exit_below(w: &mut Writer, subscriber: u64, tracing_id: u64) {
    let depth = w.depth.min(SPAN_DEPTH);
    let Some(i) = (0..depth.saturating_sub(1))
        .rev()
        .find(|&i| is_entry_of(w.stack.entries().entry(i), subscriber, tracing_id))
    else {
        return;
    };
    // Copied before the end: the entries' names are overwritten by the pushes that follow.
    let resumed: Vec<Resumed> = (i + 1..depth)
        .filter_map(|j| {
            let e = w.stack.entries().entry(j);
            // Relaxed: this thread stored them.
            let sub = e.subscriber.load(Ordering::Relaxed);
            if e.meta.load(Ordering::Relaxed) & META_TRACING == 0 || sub == subscriber {
                return None;
            }
            Some(Resumed {
                // A name it was opened with, so valid UTF-8; checked rather than trusted.
                name: String::from_utf8_lossy(w.stack.name(e)).into_owned(),
                ctx: TraceContext {
                    hi: e.trace_hi.load(Ordering::Relaxed),
                    lo: e.trace_lo.load(Ordering::Relaxed),
                },
                subscriber: sub,
            })
        })
        .collect();
    let end = w.clock.raw();
    w.end_spans_from(i, end);
    for r in resumed {
        // It fitted (name, record size, depth) where it was, deeper than it goes now.
        let size = records::tracing_span_len(&r.name);
        let _ = w.open_span(&r.name, Some(r.ctx), Some(end), size, Some(r.subscriber));
    }
}

/// Writes a record of `size` bytes filled by `fill` if `kind` is recorded and it fits.
fn write_var(
    kind: K,
    size: usize,
    strs: &[&str],
    fill: impl FnOnce(&mut [u8], u8, i64),
) -> Result<(), WriteError> {
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if strs.iter().any(|s| records::has_nul(s.as_bytes())) {
        return Err(refused(WriteError::Invalid(format!(
            "a {kind} string contains a NUL byte"
        ))));
    }
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    put_variable(kind, size, None, fill)
}

/// Writes a TracingSpanInfo: span `key`'s level byte
/// ([`level_name`](crate::codec::records::level_name)), callsite name, target and fields.
///
/// # Errors
/// [`WriteError::Invalid`] for a string with a NUL, [`WriteError::TooLarge`] for a record
/// larger than 65534 bytes or than the running recorder's pages; each counted as refused while
/// a recorder runs.
///
/// ```
/// typhon_recorder::bridge::span_info(1, 1, 3, "load", "app", "file=\"a.png\"").unwrap();
/// assert!(typhon_recorder::bridge::span_info(1, 1, 3, "lo\0ad", "app", "").is_err());
/// ```
pub fn span_info(
    key: u64,
    tracing_id: u64,
    level: u8,
    name: &str,
    target: &str,
    fields: &str,
) -> Result<(), WriteError> {
    let size = records::tracing_span_info_len(name, target, fields);
    write_var(
        K::TRACING_SPAN_INFO,
        size,
        &[name, target, fields],
        // Checked once, by `write_var`; the ring hands a record of exactly `size` bytes.
        |d, slot, t| {
            records::fill_tracing_span_info(
                d, slot, t, key, tracing_id, level, name, target, fields,
            )
        },
    )
}

/// Writes a TracingEvent inside the span of key `span_key` (0: none).
///
/// # Errors
/// As [`span_info`].
///
/// ```
/// typhon_recorder::bridge::event(0, 2, "app", "disk almost full", "free=12").unwrap();
/// ```
pub fn event(
    span_key: u64,
    level: u8,
    target: &str,
    message: &str,
    fields: &str,
) -> Result<(), WriteError> {
    let size = records::tracing_event_len(target, message, fields);
    write_var(
        K::TRACING_EVENT,
        size,
        &[target, message, fields],
        |d, slot, t| {
            records::fill_tracing_event(d, slot, t, span_key, level, target, message, fields)
        },
    )
}

/// Writes a TracingFollows: span `key` follows from span `follows_key`.
///
/// ```
/// typhon_recorder::bridge::follows(2, 1);
/// ```
pub fn follows(key: u64, follows_key: u64) {
    let size = codec::kinds::min_size_of(K::TRACING_FOLLOWS).unwrap_or(28);
    let _ = write_var(K::TRACING_FOLLOWS, size, &[], |d, slot, t| {
        let _ = records::write_tracing_follows(d, slot, t, key, follows_key);
    });
}

static NEXT_CALLSITE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// An id no other callsite of this process has: a layer takes one per `tracing` callsite the
/// first time it sees it, and keeps it for every recording.
///
/// ```
/// let a = typhon_recorder::bridge::next_callsite_id();
/// assert!(typhon_recorder::bridge::next_callsite_id() > a);
/// ```
pub fn next_callsite_id() -> u32 {
    // Relaxed: only uniqueness is needed.
    NEXT_CALLSITE.fetch_add(1, Ordering::Relaxed)
}

/// The running recording's generation (0: none): a number no other recording of this process
/// has had. A layer keeps, per callsite, the generation it last wrote the callsite's
/// definition in, so that after the first time one relaxed load and a compare say it is
/// written.
///
/// ```
/// assert_eq!(typhon_recorder::bridge::generation(), 0); // no recorder installed
/// ```
#[inline]
pub fn generation() -> u64 {
    // Relaxed: a stale value costs one definition written twice, or one record that a
    // definition written moments before in this recording resolves.
    GEN.load(Ordering::Relaxed)
}

/// Writes callsite `c`'s definition (a TracingCallsite record) into this thread's slot, and
/// keeps it in the recording's definitions ([`crate::Recorder::definition_records`]). Returns
/// whether it is in the ring: `false` when nothing is recorded (no recorder, the kind off, no
/// slot), when the ring was full (the record is counted as missed: write it again with the
/// next use) or when it is refused (a NUL, too large; counted as refused).
///
/// ```
/// use typhon_recorder::codec::records::Callsite;
/// let c = Callsite { id: 1, level: 3, line: 1, name: "a", target: "b", file: "", field_names: "" };
/// assert!(!typhon_recorder::bridge::callsite(&c)); // no recorder installed
/// ```
pub fn callsite(c: &Callsite<'_>) -> bool {
    if cfg!(feature = "compile-out") {
        return false;
    }
    if !admitted(K::TRACING_CALLSITE) {
        return false;
    }
    let size = records::tracing_callsite_len(c);
    let strs = [c.name, c.target, c.file, c.field_names];
    if strs.iter().any(|s| records::has_nul(s.as_bytes())) {
        let _ = refused(WriteError::Invalid(
            "a TracingCallsite string contains a NUL byte".into(),
        ));
        return false;
    }
    // The definition is copied into a Vec while its record is filled.
    let _busy = crate::write::alloc_state::RecorderBusy::enter();
    with_writer(|w| {
        if size > w.core.max_record {
            w.refuse();
            return false;
        }
        let t = w.ts(None) as i64;
        let slot = w.slot;
        let mut rec = Vec::new();
        let ok = w.put(size, |d| {
            records::fill_tracing_callsite(d, slot, t, c);
            rec.extend_from_slice(d);
        });
        if ok {
            w.core.definitions.lock().log(c.id, &rec);
        }
        ok
    })
    .unwrap_or(false)
}

/// Writes span `key`'s description, as a TracingSpanPacked (its ids as varints),
/// or as a TracingSpanValues when that kind is disabled (the packed kind gives way to its full
/// one; disabling TracingSpanValues disables both). The description: its `tracing` parent's key
/// (`parent_key`, 0 for a root), its callsite's id and its fields' typed `values`
/// ([`records::Values`]), every field with its last value (a reader keeps the last record of
/// a key). A string of 3 to 64 bytes among them that the thread's slot has met before goes by
/// id: the slot's NameDefinition of it is written first, once per slot
/// ([`records::Value::StrId`]). The entries of a span described so, written with an empty
/// [`SpanName`], are compact TracingEntryShort records (20 bytes; a TracingEntry, 28, for a
/// key or a duration past 32 bits) where they nest in none or in such an entry.
///
/// # Errors
/// [`WriteError::TooLarge`] for a record larger than 65534 bytes or than the running
/// recorder's pages, counted as refused while a recorder runs.
///
/// ```
/// typhon_recorder::bridge::span_values(1, 1, 3, &[]).unwrap();
/// ```
pub fn span_values(
    key: u64,
    parent_key: u64,
    callsite: u32,
    values: &[u8],
) -> Result<(), WriteError> {
    if kind_state(K::TRACING_SPAN_PACKED) == KIND_ON {
        let mut ids = [0u8; records::PACKED_IDS_MAX];
        let n = records::pack_span_ids(key, parent_key, callsite, &mut ids);
        return put_values(K::TRACING_SPAN_VALUES, 12 + n, values, |d, slot, t| {
            records::fill_packed_head(d, K::TRACING_SPAN_PACKED, slot, t, &ids[..n])
        });
    }
    const FIXED: usize = records::TRACING_SPAN_VALUES_FIXED;
    put_values(K::TRACING_SPAN_VALUES, FIXED, values, |d, slot, t| {
        records::fill_tracing_span_values_head(d, slot, t, key, parent_key, callsite)
    })
}

/// Writes a TracingCloseShort (a TracingClose for a key past 32 bits or with that kind
/// disabled): span `key` closed now. For a span whose last exit need not be its
/// end (entered more than once, or never): see the kind table. Nothing is written when this
/// thread's last record is that span's entry (a TracingEntry): the close adds nothing to the
/// exit just written (a future's span, entered once more to drop it, closes right after).
///
/// ```
/// typhon_recorder::bridge::close(1); // no recorder installed: nothing written
/// ```
pub fn close(key: u64) {
    if cfg!(feature = "compile-out") {
        return;
    }
    let w = writer_as_is();
    // SAFETY: the thread's own writer, read only within this call, which does not reenter
    // the recorder (see `current_writer`).
    if !w.is_null() && unsafe { (*w).last_entry == (key, (*w).producer.head()) } {
        return;
    }
    if let (Ok(short), KIND_ON) = (u32::try_from(key), kind_state(K::TRACING_CLOSE_SHORT)) {
        let size = records::TRACING_CLOSE_SHORT_SIZE;
        let _ = write_var(K::TRACING_CLOSE, size, &[], |d, slot, t| {
            let _ = records::write_tracing_close_short(d, slot, t, short);
        });
        return;
    }
    let _ = write_var(
        K::TRACING_CLOSE,
        records::TRACING_CLOSE_SIZE,
        &[],
        |d, slot, t| {
            let _ = records::write_tracing_close(d, slot, t, key);
        },
    );
}

/// Writes a TracingEventPacked (a TracingEventValues when that kind is disabled, as in
/// [`span_values`]): an event of callsite `callsite` inside the span of key
/// `span_key` (0: none), with its fields' typed `values` (the message is its `message` field),
/// strings that repeat by id as in [`span_values`].
///
/// # Errors
/// As [`span_values`].
///
/// ```
/// typhon_recorder::bridge::event_values(0, 3, &[]).unwrap();
/// ```
pub fn event_values(span_key: u64, callsite: u32, values: &[u8]) -> Result<(), WriteError> {
    if kind_state(K::TRACING_EVENT_PACKED) == KIND_ON {
        let mut ids = [0u8; records::PACKED_IDS_MAX];
        let n = records::pack_event_ids(span_key, callsite, &mut ids);
        return put_values(K::TRACING_EVENT_VALUES, 12 + n, values, |d, slot, t| {
            records::fill_packed_head(d, K::TRACING_EVENT_PACKED, slot, t, &ids[..n])
        });
    }
    const FIXED: usize = records::TRACING_EVENT_VALUES_FIXED;
    put_values(K::TRACING_EVENT_VALUES, FIXED, values, |d, slot, t| {
        records::fill_tracing_event_values_head(d, slot, t, span_key, callsite)
    })
}

/// The string entries of one record's values that may go by id; the rest stay inline.
const MAX_IDS: usize = 16;

/// Writes a record of `kind`: `fixed` bytes that `head` fills (the header sized with the
/// whole record), then `values` with each short string that repeats in the slot as its id
/// ([`crate::write::strings`]), its NameDefinition written before the record the first time.
fn put_values(
    kind: K,
    fixed: usize,
    values: &[u8],
    head: impl FnOnce(&mut [u8], u8, i64),
) -> Result<(), WriteError> {
    if cfg!(feature = "compile-out") {
        return Ok(());
    }
    if !admitted(kind) {
        return Ok(());
    }
    let intern = kind_state(K::NAME_DEFINITION) == KIND_ON;
    with_writer(|w| {
        let mut by_id = [records::ById::default(); MAX_IDS];
        let (len, n) = if intern {
            records::plan_ids(values, &mut by_id, |s| w.str_id(s))
        } else {
            (values.len(), 0)
        };
        let size = fixed + len;
        if size > w.core.max_record || size > codec::CommonHeader::MAX_RECORD {
            w.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: w.core.max_record,
            });
        }
        let t = w.ts(None) as i64;
        let slot = w.slot;
        w.put(size, |d| {
            head(d, slot, t);
            records::fill_ids(&mut d[fixed..], values, &by_id[..n]);
        });
        Ok(())
    })
    .unwrap_or(Ok(()))
}

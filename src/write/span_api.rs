//! The span functions of the public API: the guards' constructors ([`span`], [`span_static`],
//! [`traced_span`] and their `*_at` and `try_` forms) and the guardless [`span_begin`] /
//! [`span_end`]; the machinery under them is in `spans`.

use crate::codec::records::TraceContext;
use crate::write::spans::{begin_span, begin_static, guard_of, open_span, SpanGuard};
use crate::write::writer::with_writer;
use crate::write::WriteError;

/// Opens a span without a guard, for callers that cannot hold one (the C ABI, engines whose
/// begin and end are separate calls): a NamedSpan, or a TracedSpan when `ctx` is given, starting
/// now or at `at` (raw ticks). End it with [`span_end`] on the same thread; spans end innermost
/// first. Returns the span id, or 0 when nothing is recorded (no recorder, filtered, no slot,
/// compiled out) — [`span_end`] accepts 0 as a no-op. A span still open when its thread exits
/// is ended then.
///
/// Guard spans ([`span`]) and these share one stack per thread: each one's parent is the
/// thread's innermost open span of either sort (see [`SpanGuard`]).
///
/// # Errors
/// [`WriteError::Invalid`] for a name with a NUL byte and [`WriteError::TooLarge`] for a record
/// over 65534 bytes, whether or not a recorder runs; [`WriteError::TooLarge`] also for a record
/// larger than the running recorder's pages hold. While a recorder runs each is counted as
/// refused.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{span_begin, span_end, RecorderBuilder, WriteError};
/// let sink = typhon_recorder::sink::MemorySink::new();
/// let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
/// let outer = span_begin("frame", None, None).unwrap();
/// let inner = span_begin("physics", None, None).unwrap();
/// assert!(span_end(outer, None).is_err()); // not the innermost
/// span_end(inner, None).unwrap();
/// span_end(outer, None).unwrap();
/// // A name too large for a 4 KiB page is refused, and counted.
/// let big = "x".repeat(5000);
/// assert!(matches!(span_begin(&big, None, None), Err(WriteError::TooLarge { .. })));
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 3); // ThreadInfo + 2 spans
/// assert_eq!(stats.slot(1).unwrap().refused, 1);
/// ```
pub fn span_begin(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<u64, WriteError> {
    Ok(open_span(name, ctx, at)?.map_or(0, |o| o.id))
}

/// Ends the span `span_id` opened with [`span_begin`] (or a guard) on this thread, now or at
/// `at` (raw ticks), and writes its record. `span_id` 0 (nothing was recorded) is a no-op.
///
/// # Errors
/// [`WriteError::SpanMismatch`] if `span_id` is not this thread's innermost open span: nothing
/// is ended then (and nothing counted: the span stays open and can still end). A span of an
/// earlier recorder is not open in this one, so ending it is a mismatch too.
///
/// ```
/// use typhon_recorder::{span_begin, span_end};
/// let id = span_begin("x", None, Some(10)).unwrap(); // 0: no recorder installed
/// span_end(id, Some(20)).unwrap();
/// assert!(span_end(12345, None).is_err());
/// ```
pub fn span_end(span_id: u64, at: Option<u64>) -> Result<(), WriteError> {
    if span_id == 0 {
        return Ok(());
    }
    let mismatch = |innermost| WriteError::SpanMismatch { span_id, innermost };
    with_writer(|w| {
        let innermost = w.innermost();
        if innermost != span_id {
            return Err(mismatch(innermost));
        }
        let end = match at {
            Some(t) => t,
            None => w.clock.raw(),
        };
        w.end_innermost(end);
        Ok(())
    })
    .unwrap_or(Err(mismatch(0)))
}

/// Opens a NamedSpan; it ends when the guard drops. Its parent is the thread's innermost open
/// span. A span the recorder refuses (a name with a NUL byte, a record larger than a page) is
/// not opened and is counted as refused, never truncated; [`try_span`] reports it.
///
/// The name is copied when the span begins, so the guard borrows nothing: a name made on the
/// spot needs no `let` of its own.
///
/// ```
/// let _outer = typhon_recorder::span("frame");
/// let _inner = typhon_recorder::span("physics");
/// for level in 0..2 {
///     let _l = typhon_recorder::span(&format!("load level {level}"));
/// }
/// ```
#[inline]
pub fn span(name: &str) -> SpanGuard {
    begin_span(name, None, None)
}

/// [`span`], [`span_at`], [`traced_span`] or [`traced_span_at`] that reports a refused span:
/// a TracedSpan when `ctx` is given, starting now or at `at` (raw ticks). The guard is inert
/// (id 0) when nothing is recorded (no recorder, filtered, no slot).
///
/// # Errors
/// As [`span_begin`]: [`WriteError::Invalid`] for a name with a NUL byte,
/// [`WriteError::TooLarge`] for a record over 65534 bytes or larger than the running
/// recorder's pages hold (each counted as refused while a recorder runs).
///
/// ```
/// use typhon_recorder::{try_span, WriteError};
/// let g = try_span("update", None, None).unwrap();
/// drop(g);
/// assert!(matches!(try_span("a\0b", None, None), Err(WriteError::Invalid(_))));
/// ```
#[inline]
pub fn try_span(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<SpanGuard, WriteError> {
    Ok(guard_of(open_span(name, ctx, at)?))
}

/// [`span`] starting at a caller-supplied time in raw ticks (end it with [`SpanGuard::end_at`]
/// or by dropping it).
///
/// ```
/// let s = typhon_recorder::span_at("load", 100);
/// s.end_at(200);
/// ```
#[inline]
pub fn span_at(name: &str, start: u64) -> SpanGuard {
    begin_span(name, None, Some(start))
}

/// [`span`] for a name that lives as long as the program (a literal, or a `&'static str`
/// from a table): the fast path, and what [`span!`](crate::span!) with a literal name (and
/// no arguments) calls. The name is not copied when the span begins: the thread's stack
/// points at it. It is written once per slot, as a definition (SPEC §15), and each span
/// carries its id (a NamedSpanId, 41 bytes, which readers show as a NamedSpan); past the
/// slot's room for names (one per 4 KiB of ring, at least 32) it is copied into the record
/// when the span ends. Everything else is as for [`span`]: the same nesting, the same checks
/// and counts (a name with a NUL byte, or too long for a page, is refused and counted), and
/// a static span takes no room of the [`SPAN_NAME_BYTES`](crate::SPAN_NAME_BYTES) for names
/// (only one of the [`SPAN_DEPTH`](crate::SPAN_DEPTH) entries).
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, span_static, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// {
///     let _frame = span_static("frame");
///     let _physics = typhon_recorder::span!("physics"); // the same call
///     let _bad = span_static("a\0b"); // refused, counted
/// }
/// let stats = rec.finish().unwrap();
/// // ThreadInfo, the 2 names' definitions, 2 spans
/// assert_eq!(stats.user_written(), 5);
/// assert_eq!(stats.slot(1).unwrap().refused, 1);
/// ```
#[inline]
pub fn span_static(name: &'static str) -> SpanGuard {
    begin_static(name, None)
}

/// [`span_static`] starting at a caller-supplied time in raw ticks (end it with
/// [`SpanGuard::end_at`] or by dropping it).
///
/// ```
/// let s = typhon_recorder::span_static_at("load", 100);
/// s.end_at(200);
/// ```
#[inline]
pub fn span_static_at(name: &'static str, start: u64) -> SpanGuard {
    begin_static(name, Some(start))
}

/// Opens a TracedSpan carrying a trace context: a W3C trace id
/// ([`TraceContext::from_w3c_bytes`]) or a command's causal id: what
/// [`command_causal_id`](crate::command_causal_id) returns is taken as it is (any
/// `(hi, lo)` pair converts into a [`TraceContext`]).
///
/// ```
/// let _s = typhon_recorder::traced_span("apply-command", typhon_recorder::command_causal_id(7, 100, 3));
/// let w3c = typhon_recorder::TraceContext::from_w3c_bytes([0xab; 16]);
/// let _t = typhon_recorder::traced_span("request", w3c);
/// ```
#[inline]
pub fn traced_span(name: &str, ctx: impl Into<TraceContext>) -> SpanGuard {
    begin_span(name, Some(ctx.into()), None)
}

/// [`traced_span`] starting at a caller-supplied time in raw ticks.
///
/// ```
/// let s = typhon_recorder::traced_span_at("x", typhon_recorder::command_causal_id(7, 1, 2), 5);
/// s.end_at(9);
/// ```
#[inline]
pub fn traced_span_at(name: &str, ctx: impl Into<TraceContext>, start: u64) -> SpanGuard {
    begin_span(name, Some(ctx.into()), Some(start))
}

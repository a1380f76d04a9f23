//! Spans: guards and explicit begin/end, nested per thread through one stack of open spans.

use crate::codec::records::TraceContext;
use crate::codec::{self, records, TraceEventKind};
use crate::session::*;
use crate::write::ring::Producer;
use crate::write::writer::*;
use crate::write::WriteError;

/// An open span; dropping it ends the span and writes its record (NamedSpan, or TracedSpan when
/// it carries a trace context). Not `Send`: a span begins and ends on one thread.
///
/// # Nesting, order and recorders
///
/// A thread's open spans (guards and [`span_begin`] spans alike) form a stack; a new span's
/// parent is the innermost one still open (0 at top level). The recorder keeps the stack with
/// each span's name, so that it can end spans whose guards never do:
/// - dropping a guard that is not the innermost (a `Vec` of guards dropped outermost first)
///   ends it **and every span opened inside it that is still open**, at the same time; the
///   inner guards' own drops then write nothing. So every span ends within its parent.
/// - a guard that is never dropped (`mem::forget`, a leak) stays open until its parent ends
///   (it is then ended with it), or until its thread exits (every span still open is ended
///   then). A span still open when its recorder finishes is not in the file; the spans it
///   parents are.
/// - a guard opened under one recorder belongs to that one. Dropped after it finished, it
///   writes nothing: under a later recorder the drop is counted as refused there (the span
///   cannot be recorded anywhere), with no recorder installed it does nothing.
///
/// The invariant: in a recording, every span's parent is 0 or a span of the same slot that
/// was open when it began, and that parent is in the recording too unless it was still open
/// when the recorder finished. With the recorder's clock (no `*_at` times), a span's interval
/// lies within its parent's.
///
/// A guard whose span the recorder refused (a name with a NUL byte, a record larger than a
/// page) opens nothing and is counted as refused: [`try_span`] returns that error instead.
///
/// Cost: the stack lives in the thread's writer, made with room for 64 open spans and 4 KiB of
/// their names when the thread claims its slot; a thread that goes past either allocates once
/// more for each new high mark (never on later spans that stay within it).
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::RecorderBuilder;
/// let rec = RecorderBuilder::new().sink(typhon_recorder::sink::NullSink).start().unwrap();
/// let guards = vec![typhon_recorder::span("a"), typhon_recorder::span("b")];
/// drop(guards); // "a" ends first, and "b" with it
/// let later = typhon_recorder::span("c");
/// drop(later); // a top-level span: its parent is 0, not "b"
/// assert_eq!(rec.finish().unwrap().user_written(), 4); // ThreadInfo + 3 spans
/// ```
#[must_use = "a span ends when this guard is dropped"]
pub struct SpanGuard<'a> {
    /// The span's id, 0 when nothing is recorded.
    id: u64,
    /// The generation of the recorder it was opened under.
    gen: u64,
    /// Not `Send`; the lifetime is the name's, kept so the API stays as it was (the recorder
    /// copies the name).
    _marker: std::marker::PhantomData<(&'a str, *const ())>,
}

impl SpanGuard<'_> {
    /// This span's id (`slot << 56 | counter`), 0 when nothing is recorded.
    ///
    /// ```
    /// let s = typhon_recorder::span("x");
    /// assert_eq!(s.id(), 0); // no recorder installed
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Ends the span at a caller-supplied time in raw ticks (spans opened inside it and still
    /// open end then too).
    ///
    /// ```
    /// let s = typhon_recorder::span_at("x", 10);
    /// s.end_at(20);
    /// ```
    #[inline]
    pub fn end_at(mut self, ts: u64) {
        if self.id != 0 {
            close_guard(self.id, self.gen, Some(ts));
        }
        self.id = 0;
    }

    #[inline(always)]
    pub(crate) fn inert() -> Self {
        SpanGuard {
            id: 0,
            gen: 0,
            _marker: std::marker::PhantomData,
        }
    }
}

impl Drop for SpanGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.id != 0 {
            close_guard(self.id, self.gen, None);
        }
    }
}

impl Writer {
    /// Opens a span of record size `size` (checked here against the page, counted as refused
    /// when it does not fit) and returns its id.
    #[inline(always)]
    pub(crate) fn open_span(
        &mut self,
        name: &str,
        ctx: Option<TraceContext>,
        at: Option<u64>,
        size: usize,
    ) -> Result<u64, WriteError> {
        if size > self.max_record {
            self.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: self.max_record,
            });
        }
        let start = self.ts(at);
        let id = (self.slot as u64) << 56 | (self.span_counter & ((1 << 56) - 1));
        self.span_counter += 1;
        let parent = self.spans.last().map_or(0, |e| e.id);
        let name_at = self.span_names.len();
        push_name(&mut self.span_names, name.as_bytes());
        let (traced, c) = match ctx {
            Some(c) => (true, c),
            None => (false, TraceContext::default()),
        };
        self.spans.push(OpenSpan {
            start,
            id,
            parent,
            trace_hi: c.hi,
            trace_lo: c.lo,
            traced,
            name_at,
        });
        Ok(id)
    }

    /// Ends the open span at `i` at `end` (raw ticks), and every span opened inside it that is
    /// still open, innermost first; each is written.
    #[inline(always)]
    pub(crate) fn end_spans_from(&mut self, i: usize, end: u64) {
        let Some(target) = self.spans.get(i).map(|e| e.id) else {
            return;
        };
        while self.spans.len() > i {
            let top = self.spans.len() - 1;
            // Spans left open inside the target end with it, never before they began.
            let e = &self.spans[top];
            let t = if e.id == target {
                end
            } else {
                end.max(e.start)
            };
            self.end_innermost(t);
        }
        self.last_raw = end;
    }

    /// Ends the innermost open span at `end` (the common end: a guard dropped in order).
    ///
    /// The entry is read in place, field by field, not copied out: `pop` moved it with 16-byte
    /// loads, which cannot be forwarded from the 8-byte stores that wrote it at the span's
    /// begin, and the stall cost about 7 ns a span pair (13.6 against 6.2 ns).
    #[inline(always)]
    pub(crate) fn end_innermost(&mut self, end: u64) {
        let Some(top) = self.spans.len().checked_sub(1) else {
            return;
        };
        let e = &self.spans[top];
        let name_at = e.name_at;
        write_span(
            &mut self.producer,
            &self.span_names[name_at.min(self.span_names.len())..],
            e,
            self.slot,
            end,
        );
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        // OpenSpan is Copy: nothing to drop.
        self.spans.truncate(top);
        self.span_names.truncate(name_at);
        self.last_raw = end;
    }
}

/// Writes the record of `e`, the thread's innermost open span, whose name is `name` (the end
/// of [`Writer::span_names`]), ending at `end`.
#[inline(always)]
pub(crate) fn write_span(producer: &mut Producer, name: &[u8], e: &OpenSpan, slot: u8, end: u64) {
    // SAFETY: `span_names` holds whole `&str`s, each pushed at its entry's `name_at` and cut
    // back only to an entry's `name_at`, so the bytes from the innermost's `name_at` to the end
    // are one whole UTF-8 name.
    let name = unsafe { std::str::from_utf8_unchecked(name) };
    let ctx = e.traced.then_some(TraceContext {
        hi: e.trace_hi,
        lo: e.trace_lo,
    });
    let size = match ctx {
        None => records::named_span_len(name),
        Some(_) => records::traced_span_len(name),
    };
    // Checked against the page when it opened (`open_span`), under this same recorder.
    producer.write(size, |d| {
        let ext = records::SpanExt {
            duration_ns: end.wrapping_sub(e.start) as i64,
            span_id: e.id,
            parent_span_id: e.parent,
        };
        records::fill_span(d, slot, e.start as i64, &ext, ctx, name)
    });
}

/// Ends the span of a guard (its drop or [`SpanGuard::end_at`]): the common case, the
/// thread's innermost span of the running recorder, here; the others out of line.
#[inline(never)]
pub(crate) fn close_guard(id: u64, gen: u64, at: Option<u64>) {
    // With no recorder installed there is no writer: nothing to write or count.
    with_writer(|w| {
        let n = w.spans.len();
        if w.core.gen == gen && n > 0 && w.spans[n - 1].id == id {
            let end = match at {
                Some(t) => t,
                None => w.clock.raw(),
            };
            w.end_innermost(end);
        } else {
            close_other(w, id, gen, at);
        }
    });
}

/// [`close_guard`] of a span that is not the innermost open one, or of another recorder.
#[cold]
#[inline(never)]
pub(crate) fn close_other(w: &mut Writer, id: u64, gen: u64, at: Option<u64>) {
    if w.core.gen != gen {
        // Its recorder has finished: the span can be written nowhere (see `SpanGuard`).
        w.refuse();
        return;
    }
    // Not found: it already ended, with a span that enclosed it.
    if let Some(i) = w.spans.iter().rposition(|e| e.id == id) {
        let end = match at {
            Some(t) => t,
            None => w.clock.raw(),
        };
        w.end_spans_from(i, end);
    }
}

/// Counts a write the C ABI refused for its arguments (NULL, bad UTF-8), as a refused write of
/// the Rust API is counted: once, as `refused` of the calling thread's slot (for `typhon-ffi`).
#[doc(hidden)]
pub fn count_refused() {
    let _ = refused(WriteError::Invalid(String::new()));
}

#[inline(always)]
pub(crate) fn begin_span(name: &str, ctx: Option<TraceContext>, at: Option<u64>) -> SpanGuard<'_> {
    // The disabled path stays here, inline: one load and a branch, as for instants.
    let kind = if ctx.is_some() {
        TraceEventKind::TRACED_SPAN
    } else {
        TraceEventKind::NAMED_SPAN
    };
    if cfg!(feature = "compile-out") || kind_state(kind) == KIND_OFF {
        return SpanGuard::inert();
    }
    guard_of(open_span(name, ctx, at).ok().flatten())
}

#[inline(always)]
pub(crate) fn guard_of<'a>(o: Option<(u64, u64)>) -> SpanGuard<'a> {
    match o {
        Some((id, gen)) => SpanGuard {
            id,
            gen,
            _marker: std::marker::PhantomData,
        },
        None => SpanGuard::inert(),
    }
}

/// Opens a span (the one begin path of guards and of [`span_begin`]): `Ok(Some((id,
/// generation)))`, `Ok(None)` when nothing is recorded (compiled out, no recorder, filtered, no
/// slot), `Err` for a span the recorder refuses (counted as refused while a recorder runs): a
/// name with a NUL, a record over 65534 bytes (whether or not a recorder runs), a record
/// larger than the running recorder's pages hold.
#[inline(always)]
pub(crate) fn open_span(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<Option<(u64, u64)>, WriteError> {
    let (kind, size) = match ctx {
        None => (TraceEventKind::NAMED_SPAN, records::named_span_len(name)),
        Some(_) => (TraceEventKind::TRACED_SPAN, records::traced_span_len(name)),
    };
    if cfg!(feature = "compile-out") {
        return Ok(None);
    }
    if size > codec::CommonHeader::MAX_RECORD {
        return Err(refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        }));
    }
    if records::has_nul(name.as_bytes()) {
        // A NUL would end the name early in every reader: refuse rather than truncate.
        return Err(refused(WriteError::Invalid(
            "span name contains a NUL byte".into(),
        )));
    }
    let state = kind_state(kind);
    if state != KIND_ON {
        if state == KIND_FILTERED {
            count_filtered();
        }
        return Ok(None);
    }
    with_writer(|w| {
        w.open_span(name, ctx, at, size)
            .map(|id| Some((id, w.core.gen)))
    })
    .unwrap_or(Ok(None))
}

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
    Ok(open_span(name, ctx, at)?.map_or(0, |(id, _)| id))
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
        let innermost = w.spans.last().map_or(0, |e| e.id);
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
/// ```
/// let _outer = typhon_recorder::span("frame");
/// let _inner = typhon_recorder::span("physics");
/// ```
#[inline]
pub fn span(name: &str) -> SpanGuard<'_> {
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
) -> Result<SpanGuard<'_>, WriteError> {
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
pub fn span_at(name: &str, start: u64) -> SpanGuard<'_> {
    begin_span(name, None, Some(start))
}

/// Opens a TracedSpan carrying a trace context: a W3C trace id
/// ([`TraceContext::from_w3c_bytes`]) or a command's causal id ([`command_causal_id`](crate::command_causal_id)).
///
/// ```
/// let (hi, lo) = typhon_recorder::command_causal_id(7, 100, 3);
/// let _s = typhon_recorder::traced_span("apply-command",
///     typhon_recorder::TraceContext { hi, lo });
/// ```
#[inline]
pub fn traced_span(name: &str, ctx: TraceContext) -> SpanGuard<'_> {
    begin_span(name, Some(ctx), None)
}

/// [`traced_span`] starting at a caller-supplied time in raw ticks.
///
/// ```
/// let s = typhon_recorder::traced_span_at("x", typhon_recorder::TraceContext { hi: 1, lo: 2 }, 5);
/// s.end_at(9);
/// ```
#[inline]
pub fn traced_span_at(name: &str, ctx: TraceContext, start: u64) -> SpanGuard<'_> {
    begin_span(name, Some(ctx), Some(start))
}

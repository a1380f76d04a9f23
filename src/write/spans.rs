//! Spans: guards and explicit begin/end, nested per thread through one stack of open spans.

use crate::codec::kinds::TRACING_ENTRY_ID_BIT;
use crate::codec::records::TraceContext;
use crate::codec::{self, records, TraceEventKind};
use crate::write::gate::*;
use crate::write::ring::Producer;
use crate::write::stack::{SPAN_DEPTH, SPAN_NAME_BYTES};
use crate::write::writer::*;
use crate::write::WriteError;
use std::sync::atomic::Ordering;

/// An open span; dropping it ends the span and writes its record (NamedSpan, or TracedSpan when
/// it carries a trace context). Not `Send`: a span begins and ends on one thread.
///
/// # Nesting, order and recorders
///
/// A thread's open spans (guards and [`span_begin`](crate::span_begin) spans alike) form a
/// stack; a new span's parent is the innermost one still open (0 at top level). The recorder
/// keeps the stack with each span's name, so that it can end spans whose guards never do:
/// - dropping a guard that is not the innermost (a `Vec` of guards dropped outermost first)
///   ends it **and every span opened inside it that is still open**, at the same time; the
///   inner guards' own drops then write nothing. So every span ends within its parent.
/// - a guard that is never dropped (`mem::forget`, a leak) stays open until its parent ends
///   (it is then ended with it), until its thread exits (every span still open is ended
///   then), or until its recorder finishes: the spans a thread still has open then are written
///   by the recorder as it finishes, ending at that moment, and counted in the slot's
///   [`unclosed`](crate::sink::SlotSummary::unclosed) (in `finish()`'s stats and the file's
///   metadata). The recorder can do this for a thread that never writes again because the
///   stack lives in memory it shares with the flusher (read once, at finish; see "Cost").
/// - a guard opened under one recorder belongs to that one, whose finish wrote (and counted)
///   it. Dropped later, under another recorder or none, it writes and counts nothing: the
///   later recording is not charged with the earlier one's span, and its spans never name a
///   parent of the earlier one (a thread's stack starts empty under each recorder).
///
/// **The invariant**: in a recording, every span's id appears once, and its parent is 0 or a
/// span of the same slot, begun before it, that is in the same recording. With the recorder's
/// clock (no `*_at` times), a span's interval lies within its parent's. The one exception is
/// the race `finish` documents: a span a thread ends or begins while `finish` runs may be in
/// neither the file nor a counter, and a span it parents may then lack it.
///
/// A guard whose span the recorder refused opens nothing and is counted as refused
/// ([`try_span`](crate::try_span) returns the error instead): a name with a NUL byte, a record
/// larger than a page, or a thread with no room left for another open span
/// ([`WriteError::SpanStackFull`]: [`SPAN_DEPTH`](crate::SPAN_DEPTH) spans open, or their copied
/// names past [`SPAN_NAME_BYTES`](crate::SPAN_NAME_BYTES)). The spans opened inside a refused one
/// have the innermost span that was opened as their parent.
///
/// Cost: the stack is fixed in size, allocated when its slot is first claimed, so no span
/// allocates. A span's begin stores its fields there, and its name unless it is a `&'static str`
/// ([`span_static`](crate::span_static), which the entry points at; relaxed stores to memory only
/// its thread writes), its end one word more (the entry is marked free before its record is
/// written, so that the flusher's read at finish, a seqlock keyed on the span id, never takes a
/// span that was also written). No lock, no shared cache line written.
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
pub struct SpanGuard {
    /// What its end needs (id 0 when nothing is recorded), passed to it by value.
    span: Opened,
    /// Not `Send`. The guard borrows nothing: the recorder copied a `&str` name into the
    /// thread's stack when the span began, so `span(&format!(..))` needs no `let` for the name.
    _marker: std::marker::PhantomData<*const ()>,
}

impl SpanGuard {
    /// This span's id (`slot << 56 | counter`), 0 when nothing is recorded.
    ///
    /// ```
    /// let s = typhon_recorder::span("x");
    /// assert_eq!(s.id(), 0); // no recorder installed
    /// ```
    pub fn id(&self) -> u64 {
        self.span.id
    }

    /// Ends the span at a caller-supplied time in raw ticks (spans opened inside it and still
    /// open end then too).
    ///
    /// ```
    /// let s = typhon_recorder::span_at("x", 10);
    /// s.end_at(20);
    /// ```
    // Always inline, as the drop: the in-order end is the common case and runs on arguments
    // already in registers; left to the inliner, the end was called out of line.
    #[inline(always)]
    pub fn end_at(self, ts: u64) {
        // Ended here: the drop has nothing left to do (the guard owns nothing). Not run even if
        // the end unwound, so the guard needs no copy in memory for an unwind's drop.
        let g = std::mem::ManuallyDrop::new(self);
        if g.span.id != 0 {
            close_guard(g.span, Some(ts));
        }
    }

    #[inline(always)]
    pub(crate) fn inert() -> Self {
        SpanGuard {
            span: Opened {
                id: 0,
                start: 0,
                parent: 0,
                name: std::ptr::null(),
                name_len: 0,
                name_id: 0,
            },
            _marker: std::marker::PhantomData,
        }
    }
}

impl Drop for SpanGuard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.span.id != 0 {
            close_guard(self.span, None);
        }
    }
}

impl Writer {
    /// Opens a span of record size `size` (checked here against the page, counted as refused
    /// when it does not fit) and returns its id, start and parent; `tracing`: an entry of a
    /// `tracing` span of that subscriber (see [`crate::bridge::enter_in`]).
    #[inline(always)]
    pub(crate) fn open_span(
        &mut self,
        name: &str,
        ctx: Option<TraceContext>,
        at: Option<u64>,
        size: usize,
        tracing: Option<u64>,
    ) -> Result<Opened, WriteError> {
        if size > self.max_record {
            self.refuse();
            return Err(WriteError::TooLarge {
                size,
                max: self.max_record,
            });
        }
        let depth = self.depth;
        if depth >= SPAN_DEPTH {
            return Err(self.stack_full(depth, name.len()));
        }
        let name_at = self.stack.entries().names_end(depth);
        if name_at * 8 + name.len() > SPAN_NAME_BYTES {
            return Err(self.stack_full(depth, name.len()));
        }
        let start = self.ts(at);
        let id = self.next_span_id();
        let parent = self.top_id;
        // An entry of a described `tracing` span (no name of its own) whose enclosing span is
        // none or such an entry is written compact, as a TracingEntry: marked in its id, which
        // a native span opened inside it names as its parent (see the kind table). Under a
        // span with an id of its own it stays a TracingSpan, which names that parent.
        let id = if tracing.is_some()
            && name.is_empty()
            && (parent == 0 || parent & TRACING_ENTRY_ID_BIT != 0)
        {
            id | TRACING_ENTRY_ID_BIT
        } else {
            id
        };
        self.stack.push_kind(
            depth,
            name_at,
            id,
            start,
            parent,
            ctx,
            tracing,
            name.as_bytes(),
        );
        self.depth = depth + 1;
        self.top_id = id;
        let copy = if ctx.is_none() && tracing.is_none() {
            self.stack.names_at(name_at)
        } else {
            std::ptr::null()
        };
        Ok(Opened {
            id,
            start,
            parent,
            name: copy,
            // A record's name is at most 65534 bytes (checked by the caller).
            name_len: name.len() as u32,
            name_id: 0,
        })
    }

    /// [`open_span`](Self::open_span) of a NamedSpan named by a `&'static str`, already
    /// checked by the caller (no NUL, its record fits a page): the entry points at the name,
    /// nothing is copied, and only the depth can be out of room. `name_id`: the name's id in
    /// the slot's names (0: the record carries the name).
    #[inline(always)]
    pub(crate) fn open_span_static(
        &mut self,
        name: &'static str,
        at: Option<u64>,
        name_id: u32,
    ) -> Option<Opened> {
        // An `Option`, not a `Result` with its `WriteError`: no guard reports the error, and a
        // `Result` kept the guard in memory rather than in registers.
        let depth = self.depth;
        if depth >= SPAN_DEPTH {
            self.refuse();
            return None;
        }
        let start = self.ts(at);
        let id = self.next_span_id();
        let parent = self.top_id;
        let entries = self.stack.entries();
        let name_at = entries.names_end(depth);
        entries.push_static(depth, name_at, id, start, parent, name);
        self.depth = depth + 1;
        self.top_id = id;
        Some(Opened {
            id,
            start,
            parent,
            name: name.as_ptr(),
            // Checked by the caller to fit a record.
            name_len: name.len() as u32,
            name_id,
        })
    }

    /// The next span id of this slot (`slot << 56 | counter`, SPEC §2).
    #[inline(always)]
    fn next_span_id(&mut self) -> u64 {
        let id = self.span_id_base | (self.span_counter & ((1 << 56) - 1));
        self.span_counter += 1;
        id
    }

    /// A span begun past the stack's room (`open` spans open, its name `len` bytes long):
    /// refused and counted (see [`SpanGuard`]).
    #[cold]
    #[inline(never)]
    fn stack_full(&self, open: usize, len: usize) -> WriteError {
        self.refuse();
        WriteError::SpanStackFull {
            open,
            name_bytes: self.stack.entries().names_end(open) * 8 + len,
        }
    }

    /// The id of the innermost open span, 0 when none is.
    #[inline(always)]
    pub(crate) fn innermost(&self) -> u64 {
        self.top_id
    }

    /// Ends the open span at `i` at `end` (raw ticks), and every span opened inside it that is
    /// still open, innermost first; each is written.
    #[inline(always)]
    pub(crate) fn end_spans_from(&mut self, i: usize, end: u64) {
        if i >= self.depth {
            return;
        }
        while self.depth > i {
            let top = self.depth - 1;
            // Spans left open inside the target end with it, never before they began.
            let t = if top == i {
                end
            } else {
                end.max(
                    self.stack
                        .entries()
                        .entry(top)
                        .start
                        .load(Ordering::Relaxed),
                )
            };
            self.end_innermost(t);
        }
        self.last_raw = end;
    }

    /// Ends the innermost open span at `end` (the common end: a guard dropped in order).
    #[inline(always)]
    pub(crate) fn end_innermost(&mut self, end: u64) {
        let Some(top) = self.depth.checked_sub(1) else {
            return;
        };
        let e = self.stack.entries().entry(top);
        // Relaxed: this thread stored them.
        let id = e.id.load(Ordering::Relaxed);
        let start = e.start.load(Ordering::Relaxed);
        let parent = e.parent.load(Ordering::Relaxed);
        self.end_top(top, id, start, parent, end);
    }

    /// Ends the innermost open span, at `top` of the stack, whose id, start and parent the
    /// caller has (a guard keeps them; [`end_innermost`](Self::end_innermost) reads them).
    #[inline(always)]
    pub(crate) fn end_top(&mut self, top: usize, id: u64, start: u64, parent: u64, end: u64) {
        let stack = &self.stack;
        let e = stack.entries().entry(top);
        // Relaxed: this thread stored it.
        let m = e.meta.load(Ordering::Relaxed);
        // SAFETY: only the borrow's lifetime is let go of, so that the writer can be borrowed
        // mutably beside it: the name is a `&'static str` or its copy in the stack's names,
        // which `self.stack` keeps allocated, and nothing stores to those words before the
        // record is written (only this thread does, at its next push).
        let name: &[u8] = unsafe { &*std::ptr::from_ref(stack.name(e)) };
        let tracing = m & crate::write::stack::META_TRACING != 0;
        let ctx = (m & crate::write::stack::META_TRACED != 0).then(|| TraceContext {
            hi: e.trace_hi.load(Ordering::Relaxed),
            lo: e.trace_lo.load(Ordering::Relaxed),
        });
        self.end_top_with(top, id, start, parent, end, name, ctx, tracing);
    }

    /// [`end_top`](Self::end_top) of a NamedSpan whose guard has its name: no read of the
    /// entry but the store that invalidates it, and a record with no context to branch on.
    #[inline(always)]
    pub(crate) fn end_top_named(
        &mut self,
        top: usize,
        id: u64,
        start: u64,
        parent: u64,
        end: u64,
        name: &[u8],
    ) {
        self.end_top_with(top, id, start, parent, end, name, None, false);
    }

    /// [`end_top_named`](Self::end_top_named) of a span whose name is the slot's definition
    /// `name_id`: a NamedSpanId, fixed in size.
    #[inline(always)]
    pub(crate) fn end_top_id(
        &mut self,
        top: usize,
        id: u64,
        start: u64,
        parent: u64,
        end: u64,
        name_id: u32,
    ) {
        // Before the record, as in `end_top_with`.
        self.stack.entries().invalidate(top);
        self.depth = top;
        self.top_id = parent;
        let ext = records::SpanExt {
            duration_ns: end.wrapping_sub(start) as i64,
            span_id: id,
            parent_span_id: parent,
        };
        let (producer, slot) = (&mut self.producer, self.slot);
        if let Some(r) = producer.reserve_framed(records::NAMED_SPAN_ID_SIZE) {
            if let Ok(d) = producer.reserved(&r).try_into() {
                records::fill_named_span_id(d, slot, start as i64, &ext, name_id);
            }
            producer.publish(r);
        }
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        self.last_raw = end;
    }

    /// The end both of those share: pops the entry at `top` and writes the span's record.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn end_top_with(
        &mut self,
        top: usize,
        id: u64,
        start: u64,
        parent: u64,
        end: u64,
        name: &[u8],
        ctx: Option<TraceContext>,
        tracing: bool,
    ) {
        // Before the record: once the flusher has drained it, it must not also find the span
        // open (it would write it twice at finish).
        self.stack.entries().invalidate(top);
        self.depth = top;
        self.top_id = parent;
        let ext = records::SpanExt {
            duration_ns: end.wrapping_sub(start) as i64,
            span_id: id,
            parent_span_id: parent,
        };
        if tracing && id & TRACING_ENTRY_ID_BIT != 0 {
            // A compact entry: its key (the context's `hi`, see `bridge::enter_in`) and time.
            let key = ctx.map_or(0, |c| c.hi);
            let ticks = end.wrapping_sub(start);
            if ticks < self.short_entry_ticks && key <= u64::from(u32::MAX) {
                // Both fit 32 bits (the duration once in ns: see `short_entry_ticks`).
                write_entry_short(
                    &mut self.producer,
                    self.slot,
                    start,
                    ticks as u32,
                    key as u32,
                );
            } else {
                write_entry(&mut self.producer, self.slot, start, ext.duration_ns, key);
            }
            self.last_entry = (key, self.producer.head());
        } else {
            write_span(
                &mut self.producer,
                name,
                ctx,
                tracing,
                self.slot,
                start,
                &ext,
            );
        }
        if self.producer.passed_half() {
            self.wake_flusher();
        }
        self.last_raw = end;
    }
}

/// Writes a TracingEntry (kind 226): an entry of the described span `key` from `start` (raw
/// ticks) for `duration` ticks. Fixed in size, so framed by any page.
#[inline(always)]
pub(crate) fn write_entry(producer: &mut Producer, slot: u8, start: u64, duration: i64, key: u64) {
    if let Some(r) = producer.reserve_framed(records::TRACING_ENTRY_SIZE) {
        if let Ok(d) = producer.reserved(&r).try_into() {
            records::fill_tracing_entry(d, slot, start as i64, duration, key);
        }
        producer.publish(r);
    }
}

/// Writes a TracingEntryShort (kind 221): [`write_entry`] of a key and a duration that fit 32
/// bits (the flusher converts the duration in place, as a span's).
#[inline(always)]
pub(crate) fn write_entry_short(
    producer: &mut Producer,
    slot: u8,
    start: u64,
    duration: u32,
    key: u32,
) {
    if let Some(r) = producer.reserve_framed(records::TRACING_ENTRY_SHORT_SIZE) {
        if let Ok(d) = producer.reserved(&r).try_into() {
            records::fill_tracing_entry_short(d, slot, start as i64, duration, key);
        }
        producer.publish(r);
    }
}

/// Writes a span's record: name `name` (an entry's, see
/// [`SpanStack::name`](crate::write::stack::SpanStack::name)), starting at `start` (raw ticks).
#[inline(always)]
pub(crate) fn write_span(
    producer: &mut Producer,
    name: &[u8],
    ctx: Option<TraceContext>,
    tracing: bool,
    slot: u8,
    start: u64,
    ext: &records::SpanExt,
) {
    // SAFETY: an entry's `name` is a whole `&str`: a `&'static str`, or one copied whole into
    // the stack's names from its entry's first word, with its length in the entry.
    let name = unsafe { std::str::from_utf8_unchecked(name) };
    let size = match ctx {
        None => records::named_span_len(name),
        Some(_) => records::traced_span_len(name),
    };
    // Checked against the page when it opened (`open_span`, `begin_static`), under this same
    // recorder: an entry frames it. Reserve, fill, publish rather than `write` with a closure:
    // the closure, compiled in this crate, was called out of line from a span end inlined
    // into another crate.
    if let Some(r) = producer.reserve_framed(size) {
        fill(producer.reserved(&r), slot, start, ext, ctx, tracing, name);
        producer.publish(r);
    }
}

#[inline(always)]
fn fill(
    d: &mut [u8],
    slot: u8,
    start: u64,
    ext: &records::SpanExt,
    ctx: Option<TraceContext>,
    tracing: bool,
    name: &str,
) {
    records::fill_span(d, slot, start as i64, ext, ctx, tracing, name)
}

/// Ends the span of a guard (its drop or [`SpanGuard::end_at`]): the common case, the
/// innermost span of the thread's writer (see [`writer_as_is`]), inline at the drop, with the
/// start and parent the guard kept; a guard dropped out of order, or one its writer no longer
/// has, out of line.
#[inline(always)]
pub(crate) fn close_guard(g: Opened, at: Option<u64>) {
    let (id, start, parent) = (g.id, g.start, g.parent);
    // With no writer there is nothing to write or count.
    let w = writer_as_is();
    if w.is_null() {
        return;
    }
    // SAFETY: the thread's own writer, used only within this call, which does not reenter the
    // recorder (see `current_writer`).
    let w = unsafe { &mut *w };

    // The innermost span of this writer: `top_id` is `id` only while this span is open at the
    // top of the stack, so `depth - 1` is its entry. A thread's ids never repeat, across its
    // writers too (see `writer_as_is`), so a guard of a finished recorder never matches the
    // thread's writer of the next one: the guard keeps no generation.
    if w.top_id == id {
        let end = match at {
            Some(t) => t,
            None => w.clock.raw(),
        };
        if g.name.is_null() {
            w.end_top(w.depth - 1, id, start, parent, end);
        } else if g.name_id != 0 {
            w.end_top_id(w.depth - 1, id, start, parent, end, g.name_id);
        } else {
            // SAFETY: a NamedSpan's guard, open (its id is the innermost's): `name` is its
            // `&'static str`, or its copy in this thread's stack, which no push overwrites
            // while it is open; either way `name_len` bytes, and only read here.
            let name = unsafe { std::slice::from_raw_parts(g.name, g.name_len as usize) };
            w.end_top_named(w.depth - 1, id, start, parent, end, name);
        }
    } else {
        close_other(w, id, at);
    }
}

/// [`close_guard`] of a span that is not the innermost open one, or of another recorder.
#[cold]
#[inline(never)]
pub(crate) fn close_other(w: &mut Writer, id: u64, at: Option<u64>) {
    // Not found: it already ended, with a span that enclosed it, or its recorder has finished
    // and wrote it then, counted as unclosed in its own file (see `SpanGuard`; its id is no
    // span's of this writer): nothing to write or count here.
    let i = (0..w.depth)
        .rev()
        .find(|&i| w.stack.entries().entry(i).id.load(Ordering::Relaxed) == id);
    if let Some(i) = i {
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
pub(crate) fn begin_span(name: &str, ctx: Option<TraceContext>, at: Option<u64>) -> SpanGuard {
    // The disabled path stays here, inline: one load and a branch, as for instants.
    let kind = if ctx.is_some() {
        TraceEventKind::TRACED_SPAN
    } else {
        TraceEventKind::NAMED_SPAN
    };
    let state = kind_state(kind);
    if cfg!(feature = "compile-out") || state == KIND_OFF {
        return SpanGuard::inert();
    }
    guard_of(open_span_in(state, name, ctx, at).ok().flatten())
}

/// The begin of [`span_static`](crate::span_static) and
/// [`span_static_at`](crate::span_static_at): [`begin_span`] of a NamedSpan whose name needs
/// no copy, refusing and counting what it refuses. A name with an id in the slot's names
/// (`crate::write::names`) was checked when it was defined, and its span is written as a
/// NamedSpanId; any other is checked here (no NUL, a record that fits the page, whose limit is
/// never above 65534 bytes) and written with its name.
#[inline(always)]
pub(crate) fn begin_static(name: &'static str, at: Option<u64>) -> SpanGuard {
    let state = kind_state(TraceEventKind::NAMED_SPAN);
    if cfg!(feature = "compile-out") {
        return SpanGuard::inert();
    }
    // One compare on the hot path. The cold paths return nothing: a guard they returned
    // (through memory) kept the hot path's guard in memory too.
    if state != KIND_ON {
        if state != KIND_OFF {
            begin_static_not_on(name, state);
        }
        return SpanGuard::inert();
    }
    let w = current_writer();
    if w.is_null() {
        return SpanGuard::inert();
    }
    // SAFETY: the thread's own writer, used only within this call, which does not reenter the
    // recorder (see `current_writer`); no reference to it is live across `static_refused`.
    let name_id = unsafe { (*w).static_name_id(name, at) };
    if name_id == 0 && static_refused(w, name) {
        return SpanGuard::inert();
    }
    // SAFETY: as above.
    let w = unsafe { &mut *w };
    guard_of(w.open_span_static(name, at, name_id))
}

/// The checks of a static name written inline ([`begin_static`]): whether it is refused
/// (counted as [`open_span`] counts it).
#[cold]
#[inline(never)]
fn static_refused(w: *mut Writer, name: &'static str) -> bool {
    let size = records::named_span_len(name);
    if records::has_nul(name.as_bytes()) {
        refuse_name(size);
        return true;
    }
    // SAFETY: as in `begin_static`: no other reference to the writer is live here.
    if size > unsafe { (*w).max_record } {
        // SAFETY: as above.
        unsafe { (*w).refuse() };
        return true;
    }
    false
}

/// [`begin_static`] while NamedSpan is filtered: a bad name is refused (as [`open_span`]
/// refuses it), any other counted as filtered.
#[cold]
#[inline(never)]
fn begin_static_not_on(name: &'static str, state: u8) {
    let size = records::named_span_len(name);
    if size > codec::CommonHeader::MAX_RECORD || records::has_nul(name.as_bytes()) {
        refuse_name(size);
    } else if state == KIND_FILTERED {
        count_filtered();
    }
}

/// A static name [`begin_static`] refuses: counted as [`open_span`] counts it.
#[cold]
#[inline(never)]
fn refuse_name(size: usize) {
    if size > codec::CommonHeader::MAX_RECORD {
        let _ = refused(WriteError::TooLarge {
            size,
            max: codec::CommonHeader::MAX_RECORD,
        });
    } else {
        let _ = refused(WriteError::Invalid("span name contains a NUL byte".into()));
    }
}

#[inline(always)]
pub(crate) fn guard_of(o: Option<Opened>) -> SpanGuard {
    match o {
        Some(span) => SpanGuard {
            span,
            _marker: std::marker::PhantomData,
        },
        None => SpanGuard::inert(),
    }
}

/// Opens a span (the one begin path of guards and of [`span_begin`](crate::span_begin)):
/// `Ok(Some(opened))`, `Ok(None)` when nothing is recorded (compiled out, no recorder, filtered, no
/// slot), `Err` for a span the recorder refuses (counted as refused while a recorder runs): a name
/// with a NUL, a record over 65534 bytes (whether or not a recorder runs), a record larger than the
/// running recorder's pages hold.
#[inline(always)]
pub(crate) fn open_span(
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<Option<Opened>, WriteError> {
    let kind = if ctx.is_some() {
        TraceEventKind::TRACED_SPAN
    } else {
        TraceEventKind::NAMED_SPAN
    };
    open_span_in(kind_state(kind), name, ctx, at)
}

/// [`open_span`] with its kind's state already loaded (one relaxed load a span, not two).
#[inline(always)]
fn open_span_in(
    state: u8,
    name: &str,
    ctx: Option<TraceContext>,
    at: Option<u64>,
) -> Result<Option<Opened>, WriteError> {
    let size = match ctx {
        None => records::named_span_len(name),
        Some(_) => records::traced_span_len(name),
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
    if state != KIND_ON {
        if state == KIND_FILTERED {
            count_filtered();
        }
        return Ok(None);
    }
    let w = current_writer();
    if w.is_null() {
        return Ok(None);
    }
    // SAFETY: the thread's own writer, used only within this call, which does not reenter the
    // recorder (see `current_writer`).
    let w = unsafe { &mut *w };
    w.open_span(name, ctx, at, size, None).map(Some)
}

/// A span the recorder opened: what its guard keeps.
#[derive(Clone, Copy)]
pub(crate) struct Opened {
    pub(crate) id: u64,
    pub(crate) start: u64,
    pub(crate) parent: u64,
    /// A NamedSpan's name (see [`SpanGuard`]), null for any other span.
    pub(crate) name: *const u8,
    pub(crate) name_len: u32,
    /// A static name's id in the slot's names (written as a NamedSpanId), 0 for none.
    pub(crate) name_id: u32,
}

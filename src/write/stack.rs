//! A thread's stack of open spans, fixed in size and shared with the flusher.
//!
//! The owning thread is the only writer; it pushes at a span's begin and pops at its end, with
//! plain (relaxed atomic) stores into memory allocated once, when its slot is first claimed, so
//! a span never allocates. The flusher reads the stack once, at finish, to write the spans still
//! open then (forgotten guards, spans of a thread that goes on past `finish`): so a span written
//! earlier never names a parent that is missing from the file.
//!
//! The flusher's read races with a thread that is still writing: each entry is a seqlock whose
//! sequence is the span id itself (unique in the thread, never reused), zeroed at the pop
//! before anything of a later span is stored there. A read that sees the id change, or 0,
//! takes nothing of that entry, and stops there (see [`SpanStack::open_records`]).

use crate::codec::records::{self, TraceContext};
use crate::sync::{fence, AtomicPtr, AtomicU64, Ordering};

/// Open spans a thread can have at once; a span begun beyond is refused
/// ([`WriteError::SpanStackFull`](crate::WriteError::SpanStackFull), counted as refused).
///
/// ```
/// assert_eq!(typhon_recorder::SPAN_DEPTH, 64);
/// ```
pub const SPAN_DEPTH: usize = 64;
/// Bytes of open spans' names a thread can hold at once (each name rounded up to 8 bytes); a
/// span whose name does not fit is refused
/// ([`WriteError::SpanStackFull`](crate::WriteError::SpanStackFull), counted as refused).
///
/// ```
/// assert_eq!(typhon_recorder::SPAN_NAME_BYTES, 4096);
/// ```
pub const SPAN_NAME_BYTES: usize = 4096;
const NAME_WORDS: usize = SPAN_NAME_BYTES / 8;

/// One open span: what its record needs when it ends.
pub(crate) struct Entry {
    /// The span id, 0 while the entry holds no open span (the seqlock word, see the module).
    pub(crate) id: AtomicU64,
    pub(crate) start: AtomicU64,
    pub(crate) parent: AtomicU64,
    pub(crate) trace_hi: AtomicU64,
    pub(crate) trace_lo: AtomicU64,
    /// Which subscriber a `tracing` entry's id is of (a number its layer chose; 0 for none):
    /// two subscribers hand out the same ids, so an exit matches on both.
    pub(crate) subscriber: AtomicU64,
    /// `names_end << 32 | name_len << 3 | static << 2 | tracing << 1 | traced`: a copied name
    /// is `name_len` bytes in the words of [`SpanStack::names`] that end at word `names_end`
    /// (where the next span's name goes: kept here, not the name's first word, so that a
    /// push finds it with one load and a shift); a `static` one lives in the program
    /// (`name_ptr`) and takes no words; `traced`: it has a context (`trace_*`); `tracing`: it
    /// is an entry of a `tracing` span (key and id in `trace_*`).
    pub(crate) meta: AtomicU64,
    /// Where the name's bytes are, for the owning thread's end: its copy in `names`, or the
    /// `&'static str`'s own. One pointer for both, so that the end does not branch on which.
    /// The flusher reads `name_ptr` only for a static name; a copy it reads word by word.
    pub(crate) name_ptr: AtomicPtr<u8>,
}

impl Entry {
    fn new() -> Self {
        Entry {
            id: AtomicU64::new(0),
            start: AtomicU64::new(0),
            parent: AtomicU64::new(0),
            trace_hi: AtomicU64::new(0),
            trace_lo: AtomicU64::new(0),
            subscriber: AtomicU64::new(0),
            meta: AtomicU64::new(0),
            name_ptr: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

/// `meta` bit: the entry has a 16-byte context.
pub(crate) const META_TRACED: u64 = 1;
/// `meta` bit: the entry is a `tracing` span's (a TracingSpan record).
pub(crate) const META_TRACING: u64 = 2;
/// `meta` bit: the entry's name is a `&'static str`, not copied (see [`Entry::meta`]).
pub(crate) const META_STATIC: u64 = 4;

/// The length of an entry's name, from its `meta`.
#[inline(always)]
pub(crate) const fn meta_len(m: u64) -> usize {
    ((m as u32) >> 3) as usize
}

/// See the module docs.
///
/// ```text
///   entries[0]   entries[1]   entries[2]        entries[d]   entries[d+1] ..
///  +----------+ +----------+ +----------+     +----------+ +----------+
///  | sentinel | | depth 0  | | depth 1  | ... | innermost| | id 0     |  (free)
///  | id 0     | | id, meta | | id, meta |     | id, meta | |          |
///  +----------+ +----------+ +----------+     +----------+ +----------+
/// ```
///
/// The owning thread keeps the depth `d` (how many are open) itself; the stack does not store
/// it. The flusher reads from `entries[1]` up to the first free entry (id 0), since every
/// entry above the open ones is free: a pop frees its entry before anything else.
pub struct SpanStack {
    /// Arrays, not slices, so that an index already checked against [`SPAN_DEPTH`] (or known
    /// below the depth) needs no second bounds check against a length loaded from memory.
    /// `entries[0]` is a sentinel that never holds a span (id 0; `meta` 0: no names in use
    /// below the first span), so the entry below any open one, whose `meta` says where the
    /// names in use end, is read without a branch for the first; see [`Entries::entry`].
    entries: Box<Entries>,
    /// The open spans' names, each from a word boundary, little-endian bytes.
    pub(crate) names: Box<[AtomicU64; NAME_WORDS]>,
}

/// A [`SpanStack`]'s entries, sentinel first: what a static span's begin and every span's end
/// touch, reached through [`SpanStack::entries`] or, by the owning thread, through the
/// address its `OwnStack` keeps.
#[repr(transparent)]
pub struct Entries([Entry; SPAN_DEPTH + 1]);

/// The owning thread's handle on its slot's stack: the stack, and where its entries are, so
/// that a span's begin and end reach an entry with one load from the thread's writer rather
/// than two (the `Arc`'s pointer, then the entries' `Box`).
pub(crate) struct OwnStack {
    entries: std::ptr::NonNull<Entries>,
    stack: std::sync::Arc<SpanStack>,
}

impl OwnStack {
    pub(crate) fn new(stack: std::sync::Arc<SpanStack>) -> Self {
        OwnStack {
            entries: std::ptr::NonNull::from(&*stack.entries),
            stack,
        }
    }

    /// The stack's entries.
    #[inline(always)]
    pub(crate) fn entries(&self) -> &Entries {
        // SAFETY: `entries` is the address of the heap `Entries` that the `Box` of the stack
        // `self.stack` holds owns: allocated once, never moved, and freed only with that
        // `SpanStack`, which this handle's `Arc` keeps alive. Shared access only, as through
        // `SpanStack::entries`.
        unsafe { self.entries.as_ref() }
    }
}

impl std::ops::Deref for OwnStack {
    type Target = SpanStack;
    fn deref(&self) -> &SpanStack {
        &self.stack
    }
}

impl std::fmt::Debug for SpanStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.entries.0[1..]
            .iter()
            .take_while(|e| e.id.load(Ordering::Relaxed) != 0)
            .count();
        f.debug_struct("SpanStack").field("open", &open).finish()
    }
}

impl Default for SpanStack {
    fn default() -> Self {
        Self::new()
    }
}

impl Entries {
    /// The entry of the span at `depth` (0: the outermost), `depth < SPAN_DEPTH`.
    #[inline(always)]
    pub(crate) fn entry(&self, depth: usize) -> &Entry {
        &self.0[depth + 1]
    }

    /// Words of names in use below the open entry `depth` (where the next name goes), for a
    /// `depth` up to [`SPAN_DEPTH`]: the `meta` of the entry below, or of the sentinel.
    ///
    /// ```
    /// use typhon_recorder::stack::SpanStack;
    /// let s = SpanStack::new();
    /// let e = s.entries();
    /// assert_eq!(e.names_end(0), 0);
    /// s.push(0, 0, 1, 10, 0, None, b"nine byte");
    /// assert_eq!(e.names_end(1), 2); // two words hold the copied name
    /// e.push_static(1, 2, 2, 11, 1, "static");
    /// assert_eq!(e.names_end(2), 2); // a static name takes none
    /// ```
    #[inline(always)]
    pub fn names_end(&self, depth: usize) -> usize {
        (self.0[depth].meta.load(Ordering::Relaxed) >> 32) as usize
    }

    /// Pushes a NamedSpan whose name is a `&'static str`: the entry points at it, nothing is
    /// copied, and it takes no room in `names` (`at`, where the names in use end, is kept for
    /// the spans pushed above it). `depth` is checked by the caller. Owning thread only.
    #[inline(always)]
    pub fn push_static(
        &self,
        depth: usize,
        at: usize,
        id: u64,
        start: u64,
        parent: u64,
        name: &'static str,
    ) {
        let e = self.entry(depth);
        // Relaxed: published by the Release store of `id` below, as in `push_kind`.
        e.start.store(start, Ordering::Relaxed);
        e.parent.store(parent, Ordering::Relaxed);
        e.meta.store(
            (at as u64) << 32 | (name.len() as u64) << 3 | META_STATIC,
            Ordering::Relaxed,
        );
        // The pointer is only read through, never written: `*mut` is `AtomicPtr`'s type.
        e.name_ptr
            .store(name.as_ptr().cast_mut(), Ordering::Relaxed);
        e.id.store(id, Ordering::Release);
    }

    /// Invalidates the entry at `top` (the innermost) before it is written out and popped:
    /// from here a read of the flusher takes nothing of it, whatever is stored there next.
    #[inline(always)]
    pub fn invalidate(&self, top: usize) {
        self.entry(top).id.store(0, Ordering::Relaxed);
        // Release: orders the store above before every later store to the entry or names
        // (the seqlock writer's barrier; free on x86).
        fence(Ordering::Release);
    }
}

impl SpanStack {
    /// An empty stack, with all its room allocated now (the only allocation it ever makes).
    pub fn new() -> Self {
        SpanStack {
            // Made on the stack and moved: 65 entries, 4.1 KiB (the names, 4 KiB, are built
            // in place).
            entries: Box::new(Entries(std::array::from_fn(|_| Entry::new()))),
            names: boxed_array(|| AtomicU64::new(0)),
        }
    }

    /// Its entries: where a span's begin and end store.
    ///
    /// ```
    /// let s = typhon_recorder::stack::SpanStack::new();
    /// assert_eq!(s.entries().names_end(0), 0);
    /// ```
    #[inline(always)]
    pub fn entries(&self) -> &Entries {
        &self.entries
    }

    /// Empties the stack for a new thread of its slot: an entry its last thread left open (it
    /// exited after its recorder finished) must not look open to the flusher's read while the
    /// new thread overwrites it.
    pub fn clear(&self) {
        // Relaxed: the claim that calls this is ordered before the new thread's spans by the
        // slot lock it took, and `push`'s Release covers its own entries.
        for e in self.entries.0.iter() {
            e.id.store(0, Ordering::Relaxed);
        }
        fence(Ordering::Release);
    }

    /// Pushes a span at `depth` (the current depth, checked by the caller to be below
    /// [`SPAN_DEPTH`], and the name to fit from word `at`). Owning thread only.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &self,
        depth: usize,
        at: usize,
        id: u64,
        start: u64,
        parent: u64,
        ctx: Option<TraceContext>,
        name: &[u8],
    ) {
        self.push_kind(depth, at, id, start, parent, ctx, None, name)
    }

    /// [`push`](Self::push), for an entry of a `tracing` span of subscriber `s` when `tracing`
    /// is `Some(s)` (then `ctx` holds its key and id). Owning thread only.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_kind(
        &self,
        depth: usize,
        at: usize,
        id: u64,
        start: u64,
        parent: u64,
        ctx: Option<TraceContext>,
        tracing: Option<u64>,
        name: &[u8],
    ) {
        let e = self.entries.entry(depth);
        // Relaxed: published by the Release store of `id` below (see the module docs).
        e.start.store(start, Ordering::Relaxed);
        e.parent.store(parent, Ordering::Relaxed);
        let traced = match ctx {
            Some(c) => {
                e.trace_hi.store(c.hi, Ordering::Relaxed);
                e.trace_lo.store(c.lo, Ordering::Relaxed);
                1
            }
            None => 0,
        };
        e.meta.store(
            ((at + name.len().div_ceil(8)) as u64) << 32
                | (name.len() as u64) << 3
                | if tracing.is_some() { META_TRACING } else { 0 }
                | traced,
            Ordering::Relaxed,
        );
        if let Some(sub) = tracing {
            e.subscriber.store(sub, Ordering::Relaxed);
        }
        let words = &self.names[at..];
        store_name(words, name);
        e.name_ptr.store(words_ptr(words), Ordering::Relaxed);
        e.id.store(id, Ordering::Release);
    }

    /// Where a name copied from word `at` is, for the owning thread to read (null under loom).
    #[inline(always)]
    pub(crate) fn names_at(&self, at: usize) -> *const u8 {
        words_ptr(&self.names[at.min(NAME_WORDS)..]).cast_const()
    }

    /// The name of the open entry `e` of this stack. Owning thread only.
    #[inline(always)]
    #[cfg(not(loom))]
    pub(crate) fn name(&self, e: &Entry) -> &[u8] {
        // Relaxed: this thread stored them.
        let p = e.name_ptr.load(Ordering::Relaxed);
        let len = meta_len(e.meta.load(Ordering::Relaxed));
        // SAFETY: the entry is open, so the push that opened it stored both (the length in `meta`):
        // a `&'static str`'s pointer and length, or those of its copy in `names` (checked by the
        // push's caller to lie within them, words that are plain `u64`s in memory: `AtomicU64` has
        // `u64`'s layout). Only the owning thread (the caller) stores to them, and not while the
        // borrow lives (the caller writes the record, then pushes again); the flusher's concurrent
        // atomic loads are reads too, so there is no data race.
        unsafe { std::slice::from_raw_parts(p, len) }
    }

    /// Under loom the words are loom's atomics, not `u64`s in memory, so the name cannot be
    /// borrowed in place; the models drive the stack directly and never end a span through the
    /// writer.
    #[cfg(loom)]
    pub(crate) fn name(&self, _e: &Entry) -> &[u8] {
        panic!("SpanStack::name is not modelled under loom")
    }

    /// The records of the spans open now, each ending at `end` (raw ticks, never before its
    /// start), for `slot`: what the flusher writes at finish. Any thread. The read ends at the
    /// first entry it finds free or changing while it is read: every span above that entry
    /// began after the entry was freed, so while this read ran (a span `finish` races, see
    /// [`SpanGuard`](crate::SpanGuard)), and its parent may be missing from what was read.
    pub fn open_records(&self, slot: u8, end: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for e in &self.entries.0[1..] {
            // Acquire: pairs with `push`'s Release store of the id, so the fields are the span's.
            let id = e.id.load(Ordering::Acquire);
            if id == 0 {
                break;
            }
            let start = e.start.load(Ordering::Relaxed);
            let parent = e.parent.load(Ordering::Relaxed);
            let hi = e.trace_hi.load(Ordering::Relaxed);
            let lo = e.trace_lo.load(Ordering::Relaxed);
            let m = e.meta.load(Ordering::Relaxed);
            let static_ptr = e.name_ptr.load(Ordering::Relaxed);
            let len = meta_len(m);
            // A static name is read once the entry is known whole (below); a copy now, word
            // by word, as the owner may be storing the next span's name over it.
            let mut name = Vec::new();
            if m & META_STATIC == 0 {
                let words = len.div_ceil(8);
                // Out of range only as `meta` changes under the read (checked below).
                let Some(at) = ((m >> 32) as usize).checked_sub(words) else {
                    break;
                };
                let Some(words) = self.names.get(at..at + words) else {
                    break;
                };
                name = words
                    .iter()
                    .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
                    .collect();
                name.truncate(len);
            }
            // Acquire: pairs with `invalidate`'s fence; if any load above saw a later span's
            // store, the id below is no longer the one read first.
            fence(Ordering::Acquire);
            if e.id.load(Ordering::Relaxed) != id {
                break;
            }
            let name: &str = if m & META_STATIC != 0 {
                // SAFETY: the id did not change, so `meta` and `name_ptr` are both of the one
                // span `push_static` stored: the length and pointer of a `&'static str`, valid
                // on any thread for the rest of the program.
                unsafe {
                    std::str::from_utf8_unchecked(std::slice::from_raw_parts(static_ptr, len))
                }
            } else {
                // Whole (the id held), so a `&str`'s bytes; checked rather than trusted.
                let Ok(name) = std::str::from_utf8(&name) else {
                    break;
                };
                name
            };
            let ctx = (m & META_TRACED != 0).then_some(TraceContext { hi, lo });
            let tracing = m & META_TRACING != 0;
            if tracing && id & crate::codec::kinds::TRACING_ENTRY_ID_BIT != 0 {
                // A compact entry (see `Writer::open_span`): its key is the context's `hi`.
                let mut rec = vec![0u8; records::TRACING_ENTRY_SIZE];
                let dur = end.saturating_sub(start) as i64;
                let _ = records::write_tracing_entry(&mut rec, slot, start as i64, dur, hi);
                out.push(rec);
                continue;
            }
            let size = match ctx {
                None => records::named_span_len(name),
                Some(_) => records::traced_span_len(name),
            };
            let mut rec = vec![0u8; size];
            let ext = records::SpanExt {
                duration_ns: end.saturating_sub(start) as i64,
                span_id: id,
                parent_span_id: parent,
            };
            records::fill_span(&mut rec, slot, start as i64, &ext, ctx, tracing, name);
            out.push(rec);
        }
        out
    }
}

/// The address of the first of `words`, for the owning thread to read its copied name
/// through (null under loom, where no name is read so).
#[inline(always)]
fn words_ptr(words: &[AtomicU64]) -> *mut u8 {
    #[cfg(not(loom))]
    {
        words.as_ptr().cast::<u8>().cast_mut()
    }
    #[cfg(loom)]
    {
        let _ = words;
        std::ptr::null_mut()
    }
}

/// `[f(); N]` on the heap, built there, not on the stack and moved.
fn boxed_array<T, const N: usize>(f: impl FnMut() -> T) -> Box<[T; N]> {
    let v: Box<[T]> = std::iter::repeat_with(f).take(N).collect();
    match v.try_into() {
        Ok(a) => a,
        Err(_) => unreachable!("took exactly N"),
    }
}

/// Stores `name` into `dst` from its first word, little-endian, the last word zero-padded.
/// Names of up to 16 bytes take at most two word stores built from overlapping loads, without
/// a loop or a call.
#[inline(always)]
fn store_name(dst: &[AtomicU64], name: &[u8]) {
    let n = name.len();
    let src = name.as_ptr();
    // Relaxed: published with the entry (see `SpanStack::push`).
    let put = |i: usize, w: u64| dst[i].store(w.to_le(), Ordering::Relaxed);
    // SAFETY (every read below): each reads 4 or 8 bytes at an offset that, for the `n`
    // checked by its branch, lies within `name`.
    if n > 16 {
        store_name_long(dst, name);
    } else if n >= 8 {
        put(
            0,
            u64::from_le(unsafe { src.cast::<u64>().read_unaligned() }),
        );
        if n > 8 {
            let b = u64::from_le(unsafe { src.add(n - 8).cast::<u64>().read_unaligned() });
            put(1, b >> (8 * (16 - n)));
        }
    } else if n >= 4 {
        let a = u32::from_le(unsafe { src.cast::<u32>().read_unaligned() }) as u64;
        let b = u32::from_le(unsafe { src.add(n - 4).cast::<u32>().read_unaligned() }) as u64;
        put(0, a | (b >> (8 * (8 - n))) << 32);
    } else if n > 0 {
        let mut w = 0u64;
        for (i, &c) in name.iter().enumerate() {
            w |= (c as u64) << (8 * i);
        }
        put(0, w);
    }
}

#[cold]
#[inline(never)]
fn store_name_long(dst: &[AtomicU64], name: &[u8]) {
    for (d, chunk) in dst.iter().zip(name.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        // Relaxed: as in `store_name`.
        d.store(u64::from_le_bytes(b), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_every_length_read_back_whole() {
        let s = SpanStack::new();
        let text: String = (0..200).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        for n in 0..200 {
            let name = &text.as_bytes()[..n];
            s.push(0, 3, 7, 1, 0, None, name);
            assert_eq!(s.name(s.entries().entry(0)), name, "length {n}");
            assert_eq!(s.entries().names_end(1), 3 + n.div_ceil(8));
            let recs = s.open_records(1, 5);
            assert_eq!(recs.len(), 1);
            s.entries().invalidate(0);
            assert!(
                s.open_records(1, 5).is_empty(),
                "an invalidated entry is skipped"
            );
        }
    }
}

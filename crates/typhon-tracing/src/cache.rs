//! What an enter needs of a span (its key and display name), found without the Registry: each
//! thread keeps the spans it entered in a small direct-mapped cache, and a global table says
//! which of them are still what they were.
//!
//! Looking a span up in the Registry (`ctx.span(id)` takes a slab reference, `extensions()` a
//! read lock and a type-keyed map lookup) was two thirds of the layer's enter. A cache entry
//! holds the layer's stack, the `tracing` id, a token and the name; the global table holds, per
//! hash bucket of (stack, id), the token of the span last created (or renamed) there. The stack
//! (a number each layer gets when it joins a subscriber) keeps two Registries, which hand out
//! the same ids, apart.
//!
//! An entry is good while its bucket still holds its token: tokens are never reused, a span's
//! is stored when it is created and replaced when it is renamed, and it is cleared when the
//! span closes, so a stale entry (a closed span whose id was reused, a renamed span, a bucket
//! another span took) never matches and the enter falls back to the Registry. Two live spans in
//! one bucket only cost the one created first its hits, and only while the other lives: the
//! first one's next miss after that takes the emptied bucket back ([`reclaim`]).
//!
//! Ordering: a span's token is stored (Release) before any thread can enter it (entering needs
//! its handle, passed on after its creation), and cleared (Release) in `on_close`, before the
//! Registry frees its id for reuse; an enter loads it with Acquire. So an enter of a reused id
//! never sees the token of the span that had it before.

use crate::names::Display;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

const BUCKETS: usize = 4096;
const CACHED: usize = 256;

static LIVE: [AtomicU64; BUCKETS] = [const { AtomicU64::new(0) }; BUCKETS];
/// Per bucket, the token of the span last entered a second time on one thread (its cache
/// slot's first hit): such a span's last exit need not be its end, so its close is written.
/// Two such spans live in one bucket leave only the later's mark: the other's close is then
/// not written, and a reader ends it at its last exit.
static AGAIN: [AtomicU64; BUCKETS] = [const { AtomicU64::new(0) }; BUCKETS];
/// Per bucket, the token of the span whose first entry on the thread that created it was
/// served by the cache slot its creation filled ([`prime`]): that entry counts as one of the
/// span's enters, as one through the span table does. A bucket another live span's mark holds
/// is not taken: that entry is counted in the span's table entry instead ([`mark_first`]).
/// Marks are plain stores, not compare-and-swaps (a locked instruction on the enter's path
/// waits for the records just written to leave the store buffer: it cost more than the table
/// lookup it replaces). So two threads marking one bucket at the same instant can leave only
/// one mark; the other span then counts one enter too few, and its close is written although
/// its last exit was its end: a close more than needed, never one missing.
static FIRST: [AtomicU64; BUCKETS] = [const { AtomicU64::new(0) }; BUCKETS];
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// The bucket of a `tracing` id of layer stack `stack`. Registry ids put the slab index in the
/// low bits and the creating thread's shard above, so ids of different threads share low bits:
/// hash them all.
#[inline(always)]
fn bucket(stack: u64, id: u64) -> &'static AtomicU64 {
    &LIVE[bucket_index(stack, id)]
}

#[inline(always)]
fn bucket_index(stack: u64, id: u64) -> usize {
    let h = (id ^ stack.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - 12)) as usize
}

/// Tokens a thread takes from [`NEXT_TOKEN`] at once.
const TOKEN_BLOCK: u64 = 1024;

thread_local! {
    /// The thread's block of tokens: the next one, and the end of the block. A shared atomic
    /// add per span (a locked instruction, which waits for the records just written to leave
    /// the store buffer) becomes one per 1024 spans.
    static TOKENS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A token no span (nor layer stack) has had (never 0, the empty bucket).
pub(crate) fn new_token() -> u64 {
    TOKENS
        .try_with(|t| {
            let (next, end) = t.get();
            if next < end {
                t.set((next + 1, end));
                return next;
            }
            // Relaxed: only uniqueness is needed. NEXT_TOKEN starts at 1: no block holds 0.
            let start = NEXT_TOKEN.fetch_add(TOKEN_BLOCK, Ordering::Relaxed);
            t.set((start + 1, start + TOKEN_BLOCK));
            start
        })
        // During the thread's exit: one of its own.
        .unwrap_or_else(|_| NEXT_TOKEN.fetch_add(1, Ordering::Relaxed))
}

/// Span `id` of `stack` is now described by `token` (created, or renamed from `old`, 0 for
/// none).
pub(crate) fn publish(stack: u64, id: u64, old: u64, token: u64) {
    let b = bucket(stack, id);
    if old == 0 {
        b.store(token, Ordering::Release);
    } else {
        // Only where its old token still is: a bucket another span took stays that span's.
        let _ = b.compare_exchange(old, token, Ordering::Release, Ordering::Relaxed);
    }
}

/// Span `id` of `stack`, live and described by `token`, takes its bucket back if the bucket
/// is empty: a span created later in its bucket, now closed, left it so, and without this
/// every later enter of the span (a connection's, a frame's) would miss.
pub(crate) fn reclaim(stack: u64, id: u64, token: u64) {
    // Release, as `publish`; a bucket another live span holds stays that span's. The span
    // cannot close meanwhile: the enter that calls this holds a handle on it, so the close's
    // `retire` comes after.
    let _ = bucket(stack, id).compare_exchange(0, token, Ordering::Release, Ordering::Relaxed);
}

/// What the cache knew of a span when it closed.
pub(crate) struct Retired {
    /// A thread entered it a second time (see [`AGAIN`]).
    pub(crate) again: bool,
    /// Its creating thread's first entry was served by the slot its creation filled (see
    /// [`FIRST`]): one enter the span table did not count.
    pub(crate) first: bool,
}

/// Span `id` of `stack`, described by `token`, closed.
///
/// [`LIVE`] and [`FIRST`] are cleared with a load and a store where they still hold the
/// span's token, not with a locked compare-and-swap (which waits for the records just written
/// to leave the store buffer). Another thread may store its own span's token into the bucket
/// between the two, and the store then erases it: for `LIVE` that span's next enter misses
/// and takes its bucket back ([`reclaim`]); for `FIRST` it counts one enter too few, at most
/// a close written that was not needed. An [`AGAIN`] mark erased would be a close missing:
/// that one is swapped, but only where the load finds the span's token (most spans were
/// entered once).
pub(crate) fn retire(stack: u64, id: u64, token: u64) -> Retired {
    let i = bucket_index(stack, id);
    // Release for LIVE: an enter of a span that reuses the id after this close cannot see
    // this span's token (see the module). Relaxed for the marks: the close that reads them
    // comes after the enters (the span's handle orders them).
    let take = |a: &AtomicU64, o: Ordering| {
        let ours = a.load(Ordering::Relaxed) == token;
        if ours {
            a.store(0, o);
        }
        ours
    };
    take(&LIVE[i], Ordering::Release);
    let again = &AGAIN[i];
    Retired {
        again: again.load(Ordering::Relaxed) == token
            && again
                .compare_exchange(token, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok(),
        first: take(&FIRST[i], Ordering::Relaxed),
    }
}

/// The bucket of `AGAIN` of span `id` of `stack` (the index of its `LIVE` one).
#[inline(always)]
fn again_bucket(stack: u64, id: u64) -> &'static AtomicU64 {
    &AGAIN[bucket_index(stack, id)]
}

/// A span entered a second time on this thread: marked in [`AGAIN`] (once per thread).
#[cold]
#[inline(never)]
fn mark_again(stack: u64, id: u64, token: u64) {
    again_bucket(stack, id).store(token, Ordering::Relaxed);
}

/// The creating thread's first entry of span `id` of `stack` (described by `token`), served by
/// the slot its creation filled: marked in [`FIRST`], or, where another live span's mark holds
/// the bucket, counted in the span's table entry as an enter the cache did not serve.
#[inline(always)]
fn mark_first(stack: u64, id: u64, token: u64) {
    let b = &FIRST[bucket_index(stack, id)];
    // Relaxed: as `mark_again`; a load and a store, not a locked swap (see `FIRST`).
    if b.load(Ordering::Relaxed) == 0 {
        b.store(token, Ordering::Relaxed);
    } else {
        count_first(stack, id);
    }
}

/// [`mark_first`] where another live span's mark holds the bucket: the entry counted in the
/// span's table entry.
#[cold]
#[inline(never)]
fn count_first(stack: u64, id: u64) {
    crate::spans::with(stack, id, |d| {
        d.slow_enters = d.slow_enters.saturating_add(1);
    });
}

/// What an enter needs of a span.
#[derive(Clone)]
pub(crate) struct Entered {
    pub(crate) key: u64,
    pub(crate) name: Display,
}

/// One cached span; an empty slot has id 0, which no `tracing` span has, so it never matches.
struct Slot {
    id: u64,
    stack: u64,
    token: u64,
    /// Whether the span was entered again through this slot (its close is then written).
    again: bool,
    /// Filled at the span's creation ([`prime`]) and not entered through yet: its first hit is
    /// the thread's first entry of the span, not a second.
    primed: bool,
    span: Option<Entered>,
}

type Table = [Slot; CACHED];

thread_local! {
    /// This thread's table, null until its first miss. A `Cell` of a raw pointer has no
    /// destructor, so reading it is one thread-relative load: no lazy-initialisation state,
    /// no destructor registration check and no borrow flag on the enter's path.
    static TABLE: Cell<*mut Table> = const { Cell::new(std::ptr::null_mut()) };
    /// Frees `TABLE`'s allocation at thread exit; touched on misses only (its first touch
    /// registers its destructor). Each slot owns its name, so a span closed or renamed
    /// meanwhile leaves the slot stale (it no longer matches), never dangling.
    static OWNER: Owner = const { Owner };
}

struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        // Enters from later thread-exit destructors see no table and take the Registry's path
        // (and cannot make a new one: `OWNER` is gone).
        let table = TABLE.with(|t| t.replace(std::ptr::null_mut()));
        if !table.is_null() {
            // SAFETY: a non-null `TABLE` came from `Box::into_raw` in `fill`, and it was just
            // taken out, so nothing else can reach it.
            drop(unsafe { Box::from_raw(table) });
        }
    }
}

#[inline(always)]
fn index(id: u64) -> usize {
    // The slab index is in the low bits: consecutive ids of a thread get consecutive slots.
    (id as usize) & (CACHED - 1)
}

/// Runs `f` on span `id`'s cached description if it is still good; `None` (without calling
/// `f`) when the thread must look the span up.
#[inline(always)]
pub(crate) fn with_cached<R>(stack: u64, id: u64, f: impl FnOnce(&Entered) -> R) -> Option<R> {
    let table = TABLE.with(Cell::get);
    if table.is_null() {
        return None;
    }
    // SAFETY: a non-null `TABLE` points at this thread's live table (`OWNER` frees it only
    // after nulling `TABLE`), of which the index takes one slot in bounds. Only this thread
    // touches it, and only `fill` writes to it; `fill` is not called while this reference
    // lives: `f` is the recorder's enter, which never calls back into `tracing` or this layer.
    let s = unsafe { &*(table as *const Slot).add(index(id)) };
    // The token alone names one span of one stack; the id and stack make a match of another
    // bucket's token impossible to mistake. Empty slots fail on the id.
    if s.id != id || s.stack != stack || bucket(stack, id).load(Ordering::Acquire) != s.token {
        return None;
    }
    s.span.as_ref().map(f)
}

/// [`with_cached`] for an enter: a hit is the span's second entry (or later) on this
/// thread, the first of which marks it in [`AGAIN`].
#[inline(always)]
pub(crate) fn enter_cached<R>(stack: u64, id: u64, f: impl FnOnce(&Entered) -> R) -> Option<R> {
    let table = TABLE.with(Cell::get);
    if table.is_null() {
        return None;
    }
    // SAFETY: as in `with_cached`; the slot is written (its `again`) before `f` runs, and no
    // other reference into the table is live meanwhile (only this thread reaches it, and
    // nothing here calls out).
    let s = unsafe { &mut *(table as *mut Slot).add(index(id)) };
    if s.id != id || s.stack != stack || bucket(stack, id).load(Ordering::Acquire) != s.token {
        return None;
    }
    if s.primed {
        s.primed = false;
        mark_first(stack, id, s.token);
    } else if !s.again {
        s.again = true;
        mark_again(stack, id, s.token);
    }
    s.span.as_ref().map(f)
}

/// Keeps span `id`'s (of `stack`) description, looked up under `token`, for this thread's next
/// enters.
pub(crate) fn fill(stack: u64, id: u64, token: u64, span: Entered) {
    put(stack, id, token, span, false);
}

/// Keeps the description of span `id` of `stack`, just created under `token` on this thread,
/// for its enters here: a span is mostly entered where it was made (a request's span on its
/// worker, a system's run on the frame's thread), and its first enter then needs no lookup
/// in the span table.
pub(crate) fn prime(stack: u64, id: u64, token: u64, span: Entered) {
    put(stack, id, token, span, true);
}

fn put(stack: u64, id: u64, token: u64, span: Entered, primed: bool) {
    let mut table = TABLE.with(Cell::get);
    if table.is_null() {
        // Only once `OWNER` will free it (not during or after this thread's exit).
        if OWNER.try_with(|_| ()).is_err() {
            return;
        }
        let b: Box<Table> = Box::new(std::array::from_fn(|_| Slot {
            id: 0,
            stack: 0,
            token: 0,
            again: false,
            primed: false,
            span: None,
        }));
        table = Box::into_raw(b);
        TABLE.with(|t| t.set(table));
    }
    // SAFETY: as in `with_cached`: this thread's live table, one slot in bounds, and no other
    // reference into it is live (nothing here calls out).
    let s = unsafe { &mut *(table as *mut Slot).add(index(id)) };
    *s = Slot {
        id,
        stack,
        token,
        again: false,
        primed,
        span: Some(span),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_recorder::bridge::SpanName;

    /// A long-lived span whose bucket a later, short-lived span took: once that span closes,
    /// the long-lived one's next miss takes the bucket back, and its enters hit again.
    #[test]
    fn a_span_takes_its_bucket_back_once_the_span_that_took_it_closes() {
        let stack = new_token();
        let (a, a_token) = (1u64, new_token());
        // Another id of the same bucket (and another slot of the thread's table).
        let b = (2..)
            .find(|&b| std::ptr::eq(bucket(stack, b), bucket(stack, a)) && index(b) != index(a))
            .unwrap();
        let name: &'static SpanName = Box::leak(Box::new(SpanName::new("a")));
        let entered = || Entered {
            key: 7,
            name: Display::Shared(name),
        };
        publish(stack, a, 0, a_token);
        fill(stack, a, a_token, entered());
        assert_eq!(with_cached(stack, a, |e| e.key), Some(7));
        // b is created in the bucket, then closes.
        let b_token = new_token();
        publish(stack, b, 0, b_token);
        assert!(!retire(stack, b, b_token).again, "never entered again");
        assert_eq!(
            with_cached(stack, a, |e| e.key),
            None,
            "a stale bucket misses"
        );
        // a's miss (the Registry's lookup, then this) makes it good again.
        reclaim(stack, a, a_token);
        fill(stack, a, a_token, entered());
        assert_eq!(with_cached(stack, a, |e| e.key), Some(7));
        // A bucket a live span holds stays its own.
        let c_token = new_token();
        publish(stack, b, 0, c_token);
        reclaim(stack, a, a_token);
        assert_eq!(bucket(stack, a).load(Ordering::Relaxed), c_token);
        let _ = retire(stack, b, c_token);
    }
}

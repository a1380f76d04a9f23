//! The names a span's entries show, made without allocating per span where they can be.
//!
//! A span with no `name` field shows its callsite's name, which never changes; one with a
//! `name` field shows `"{span}: {name}"`, and those repeat too (Bevy's systems make the same
//! few hundred every frame). Each is checked into a [`SpanName`] once, kept for the rest of
//! the program in a fixed table keyed by the callsite's metadata and the `name` value. The
//! table is bounded: a program with more distinct names than it holds (a `name` made of
//! request ids) gets the rest as names of their own, one per span.

use std::ops::Deref;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tracing_core::Metadata;
use typhon_recorder::bridge::SpanName;

/// A span's display name: one kept for good in the table, shared, or one of its own.
#[derive(Clone, Debug)]
pub(crate) enum Display {
    Shared(&'static SpanName),
    Own(Arc<SpanName>),
}

impl Deref for Display {
    type Target = SpanName;

    fn deref(&self) -> &SpanName {
        match self {
            Display::Shared(n) => n,
            Display::Own(n) => n,
        }
    }
}

/// The name of the entries of a span whose description names it (SPEC §15): none.
pub(crate) fn empty() -> &'static SpanName {
    static EMPTY: OnceLock<SpanName> = OnceLock::new();
    EMPTY.get_or_init(|| SpanName::new(""))
}

/// A callsite, its `name` value (`None`: the callsite's own name) and the display name.
struct Interned {
    meta: *const Metadata<'static>,
    value: Option<Box<str>>,
    name: SpanName,
}

const SLOTS: usize = 4096;
/// Probes from a callsite's slot before it gives up.
const PROBES: usize = 32;
/// Entries with a `name` value the table takes at most: the rest of it stays for callsites,
/// whatever names a program makes.
const VALUES: usize = SLOTS / 2;

static VALUES_TAKEN: AtomicUsize = AtomicUsize::new(0);

/// Each slot null or an `Interned` leaked for the rest of the program, never replaced.
static TABLE: [AtomicPtr<Interned>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

fn slot_of(meta: *const Metadata<'static>, value: Option<&str>) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (meta as usize as u64).wrapping_mul(K);
    if let Some(v) = value {
        for &b in v.as_bytes() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
        h ^= 1;
    }
    (h >> (64 - 12)) as usize
}

/// The display name of callsite `meta`'s spans with `name` field `value` (`None`: with none;
/// `make` makes it, once); `None` when the table has no room for it.
pub(crate) fn intern(
    meta: &'static Metadata<'static>,
    value: Option<&str>,
    make: impl FnOnce() -> SpanName,
) -> Option<&'static SpanName> {
    let key: *const Metadata<'static> = meta;
    let start = slot_of(key, value);
    let mut made: Option<Box<Interned>> = None;
    let mut make = Some(make);
    for i in 0..PROBES {
        let slot = &TABLE[(start + i) % SLOTS];
        // Acquire: pairs with the Release of the store that published it, so its fields are
        // whole.
        let mut p = slot.load(Ordering::Acquire);
        if p.is_null() {
            // Relaxed: a count, not a publication; threads that race past the check take at
            // most one entry each beyond the bound.
            if value.is_some() && VALUES_TAKEN.load(Ordering::Relaxed) >= VALUES {
                return None;
            }
            let new = made.take().unwrap_or_else(|| {
                Box::new(Interned {
                    meta: key,
                    value: value.map(Box::from),
                    name: make.take().map_or_else(|| SpanName::new(""), |f| f()),
                })
            });
            let raw = Box::into_raw(new);
            match slot.compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if value.is_some() {
                        VALUES_TAKEN.fetch_add(1, Ordering::Relaxed);
                    }
                    // SAFETY: published, never freed: valid for the rest of the program.
                    return Some(unsafe { &(*raw).name });
                }
                Err(other) => {
                    // SAFETY: `raw` came from `Box::into_raw` above and was not published.
                    made = Some(unsafe { Box::from_raw(raw) });
                    p = other;
                }
            }
        }
        // SAFETY: a non-null slot holds a published `Interned`, never freed.
        let e = unsafe { &*p };
        if e.meta == key && e.value.as_deref() == value {
            return Some(&e.name);
        }
    }
    None
}

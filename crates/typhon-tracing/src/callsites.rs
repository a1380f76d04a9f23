//! Callsite definitions (SPEC §15): each `tracing` callsite the layer sees gets an id, and its
//! name, target, level, file, line and field names are written once per recording, as a
//! TracingCallsite record; span descriptions and events then carry the id and typed values.
//!
//! The ids live in a fixed table keyed by the callsite's metadata, for the rest of the
//! program. Each entry keeps the generation of the recording its definition was last written
//! in ([`typhon_recorder::bridge::generation`]): once written, a use costs one relaxed load and
//! a compare. A definition that did not reach the ring (full, or no slot) is written again by
//! the next use; a callsite the table has no room for (more than it holds) is written with its
//! strings inline, as before §15.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use tracing_core::Metadata;
use typhon_recorder::bridge;
use typhon_recorder::codec::records::{join_field_names, Callsite};

/// One callsite: its id and the recording its definition is in.
pub(crate) struct Site {
    meta: *const Metadata<'static>,
    pub(crate) id: u32,
    written: AtomicU64,
}

const SLOTS: usize = 4096;
const PROBES: usize = 32;

/// Each slot null or a `Site` leaked for the rest of the program, never replaced.
static TABLE: [AtomicPtr<Site>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

fn slot_of(meta: *const Metadata<'static>) -> usize {
    ((meta as usize as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 12)) as usize
}

/// Callsite `meta`'s entry, made the first time; `None` when the table has no room.
fn site(meta: &'static Metadata<'static>) -> Option<&'static Site> {
    let key: *const Metadata<'static> = meta;
    let start = slot_of(key);
    for i in 0..PROBES {
        let slot = &TABLE[(start + i) % SLOTS];
        // Acquire: pairs with the Release that published the entry, so its fields are whole.
        let mut p = slot.load(Ordering::Acquire);
        if p.is_null() {
            let raw = Box::into_raw(Box::new(Site {
                meta: key,
                id: bridge::next_callsite_id(),
                written: AtomicU64::new(0),
            }));
            match slot.compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                // SAFETY: published, never freed: valid for the rest of the program.
                Ok(_) => return Some(unsafe { &*raw }),
                Err(other) => {
                    // SAFETY: `raw` came from `Box::into_raw` above and was not published.
                    drop(unsafe { Box::from_raw(raw) });
                    p = other;
                }
            }
        }
        // SAFETY: a non-null slot holds a published `Site`, never freed.
        let e = unsafe { &*p };
        if e.meta == key {
            return Some(e);
        }
    }
    None
}

/// The id of callsite `meta` with its definition written in the running recording (written now
/// if it is not yet), or `None`: no room in the table, no recording, or the definition could
/// not be written (the caller then writes its strings inline).
#[inline]
pub(crate) fn defined(meta: &'static Metadata<'static>) -> Option<u32> {
    let s = site(meta)?;
    let gen = bridge::generation();
    // Relaxed: a stale value writes the definition once more (harmless: same id, same text).
    if s.written.load(Ordering::Relaxed) == gen && gen != 0 {
        return Some(s.id);
    }
    define(s, meta, gen)
}

#[cold]
#[inline(never)]
fn define(s: &Site, meta: &'static Metadata<'static>, gen: u64) -> Option<u32> {
    let mut names = String::new();
    join_field_names(meta.fields().iter().map(|f| f.name()), &mut names);
    let no_nul = |t: &'static str| -> std::borrow::Cow<'static, str> {
        if t.contains('\0') {
            t.replace('\0', "\u{FFFD}").into()
        } else {
            t.into()
        }
    };
    let (name, target) = (no_nul(meta.name()), no_nul(meta.target()));
    let file = no_nul(meta.file().unwrap_or(""));
    let c = Callsite {
        id: s.id,
        level: crate::level_byte(meta.level()),
        line: meta.line().unwrap_or(0),
        name: &name,
        target: &target,
        file: &file,
        field_names: &names.replace('\0', "\u{FFFD}"),
    };
    if gen == 0 || !bridge::callsite(&c) {
        return None;
    }
    s.written.store(gen, Ordering::Relaxed);
    Some(s.id)
}

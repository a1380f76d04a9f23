//! Static names written once per slot (SPEC §15): a `&'static str` a span, instant or phase is
//! named by gets an id in its slot the first time the slot uses it; a NameDefinition record
//! (id → name) goes into the slot's ring then, and the records that use the name carry the id.
//!
//! Each slot has one fixed table ([`NameTable`]), made with its first claim and sized with its
//! ring, keyed by the name's address and length: a lookup is a hash and a compare or two, with
//! no allocation and no lock, so after a thread's first event no write allocates or blocks for
//! it. A name past the table's room is written inline (the old kinds), counted in
//! [`NameTable::inline`]; nothing is lost.
//!
//! Ids belong to the slot for the whole recording: an entry is never removed and never changes
//! its id, so a definition read anywhere in the slot's stream (or restated in another file,
//! [`NameTable::definitions`]) names every record of that id. A thread that takes over a slot
//! does not rely on definitions its predecessor wrote: each entry keeps the claim (`epoch`) in
//! whose records its definition was last written, and a later owner writes it again, with the
//! same id, before its own first use. So a reader that starts at the first page after a reuse
//! still finds every definition it needs in what follows.

use crate::codec::records;
// std's atomics, not `crate::sync`'s: the table is owner-written with one Release publication,
// which the loom models (rings, registry, wake-ups) do not cover.
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Probes a lookup makes at most: a name that finds no room within them is written inline.
const PROBES: usize = 16;

/// One name of a slot's table.
struct NameEntry {
    /// The name's address; null while the entry is free. Stored last, with Release, so that
    /// the flusher (restating, [`NameTable::definitions`]) that sees it sees `len` and `id`.
    ptr: AtomicPtr<u8>,
    len: AtomicUsize,
    id: AtomicU32,
    /// The claim of the slot whose records hold this name's definition (see the module).
    epoch: AtomicU32,
}

/// A slot's static names (see the module). Written only by the thread that owns the slot
/// (one at a time: the registry's claim hands the slot over), read by the flusher.
pub(crate) struct NameTable {
    entries: Box<[NameEntry]>,
    /// Names held at most: half the entries, which keeps probes short.
    cap: usize,
    used: AtomicUsize,
    next_id: AtomicU32,
    /// Claims of the slot so far (the current owner's epoch).
    claims: AtomicU32,
    /// Records written with their name inline because the table was full.
    pub(crate) inline: AtomicU64,
    /// The slot's interned value strings ([`crate::write::strings`]), which share its ids and
    /// its NameDefinitions; made at the slot's first such string.
    strs: std::sync::OnceLock<crate::write::strings::StrTable>,
    ring_bytes: usize,
}

impl std::fmt::Debug for NameTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameTable")
            .field("cap", &self.cap)
            .field("used", &self.used)
            .field("inline", &self.inline)
            .finish()
    }
}

impl NameTable {
    /// A table for a slot whose ring is `ring_bytes`: one name per 4 KiB of ring (at least
    /// 32, at most 4096), in twice as many entries.
    pub(crate) fn new(ring_bytes: usize) -> Self {
        let cap = Self::capacity_for(ring_bytes);
        NameTable {
            entries: (0..cap * 2)
                .map(|_| NameEntry {
                    ptr: AtomicPtr::new(std::ptr::null_mut()),
                    len: AtomicUsize::new(0),
                    id: AtomicU32::new(0),
                    epoch: AtomicU32::new(0),
                })
                .collect(),
            cap,
            used: AtomicUsize::new(0),
            next_id: AtomicU32::new(1),
            claims: AtomicU32::new(0),
            inline: AtomicU64::new(0),
            strs: std::sync::OnceLock::new(),
            ring_bytes,
        }
    }

    /// The slot's interned strings, made the first time (the slot's first string to intern:
    /// its only allocation).
    #[inline]
    pub(crate) fn strs(&self) -> &crate::write::strings::StrTable {
        self.strs
            .get_or_init(|| crate::write::strings::StrTable::new(self.ring_bytes))
    }

    /// A new id of the slot's (for an interned string whose definition was written).
    pub(crate) fn take_id(&self) -> u32 {
        // Relaxed: owner-only, as in `define`.
        let id = self.next_id.load(Ordering::Relaxed);
        self.next_id
            .store(id.wrapping_add(1).max(1), Ordering::Relaxed);
        id
    }

    /// The id [`take_id`](Self::take_id) gives next.
    pub(crate) fn peek_id(&self) -> u32 {
        // Relaxed: owner-only.
        self.next_id.load(Ordering::Relaxed)
    }

    /// How many names a slot with a ring of `ring_bytes` holds.
    pub(crate) fn capacity_for(ring_bytes: usize) -> usize {
        (ring_bytes / 4096).clamp(32, 4096).next_power_of_two()
    }

    /// Names this table holds at most.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// A new owner's epoch (at its claim, under the registry's lock).
    pub(crate) fn claim(&self) -> u32 {
        // Relaxed: the slot's owners are ordered by the registry's handover.
        let e = self.claims.load(Ordering::Relaxed).wrapping_add(1).max(1);
        self.claims.store(e, Ordering::Relaxed);
        e
    }

    #[inline(always)]
    fn home(&self, ptr: *const u8, len: usize) -> usize {
        let h = (ptr as usize as u64 ^ (len as u64).rotate_left(32))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (self.entries.len() - 1)
    }

    /// The id of `name` if its definition is in `epoch`'s records (the owner's lookup).
    #[inline(always)]
    pub(crate) fn find(&self, name: &'static str, epoch: u32) -> Option<u32> {
        let (ptr, len) = (name.as_ptr(), name.len());
        let mask = self.entries.len() - 1;
        let mut i = self.home(ptr, len);
        for _ in 0..PROBES {
            let e = &self.entries[i];
            // Relaxed: only the owning thread stores them, and it is this thread.
            let p = e.ptr.load(Ordering::Relaxed);
            if p.cast_const() == ptr && e.len.load(Ordering::Relaxed) == len {
                return (e.epoch.load(Ordering::Relaxed) == epoch)
                    .then(|| e.id.load(Ordering::Relaxed));
            }
            if p.is_null() {
                return None;
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Where `name` is or goes, for [`define`](Self::define): `Ok((entry, id))` if the table
    /// has it, `Err(Some(entry))` for the free entry it would take, `Err(None)` if it has no
    /// room for it.
    fn place(&self, name: &'static str) -> Result<(usize, u32), Option<usize>> {
        let (ptr, len) = (name.as_ptr(), name.len());
        let mask = self.entries.len() - 1;
        let mut i = self.home(ptr, len);
        for _ in 0..PROBES {
            let e = &self.entries[i];
            // Relaxed: as in `find`.
            let p = e.ptr.load(Ordering::Relaxed);
            if p.cast_const() == ptr && e.len.load(Ordering::Relaxed) == len {
                return Ok((i, e.id.load(Ordering::Relaxed)));
            }
            if p.is_null() {
                let room = self.used.load(Ordering::Relaxed) < self.cap;
                return Err(room.then_some(i));
            }
            i = (i + 1) & mask;
        }
        Err(None)
    }

    /// Gives `name` its id in `epoch`'s records, writing its definition with `write(id)` (which
    /// returns whether the record went into the ring) when the table does not have it yet or
    /// has it from an earlier owner. Returns the id, or `None` when the name is to be written
    /// inline: no room (counted in [`inline`](Self::inline)), or the definition was not written
    /// (a full ring: it is tried again at the next use).
    pub(crate) fn define(
        &self,
        name: &'static str,
        epoch: u32,
        write: impl FnOnce(u32) -> bool,
    ) -> Option<u32> {
        match self.place(name) {
            Ok((i, id)) => {
                let e = &self.entries[i];
                // Relaxed: only the owner reads its epoch.
                if e.epoch.load(Ordering::Relaxed) != epoch {
                    if !write(id) {
                        return None;
                    }
                    e.epoch.store(epoch, Ordering::Relaxed);
                }
                Some(id)
            }
            Err(Some(i)) => {
                // Relaxed: owner-only counters.
                let id = self.next_id.load(Ordering::Relaxed);
                if !write(id) {
                    return None;
                }
                self.next_id
                    .store(id.wrapping_add(1).max(1), Ordering::Relaxed);
                self.used
                    .store(self.used.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                let e = &self.entries[i];
                e.len.store(name.len(), Ordering::Relaxed);
                e.id.store(id, Ordering::Relaxed);
                e.epoch.store(epoch, Ordering::Relaxed);
                // Release: publishes `len` and `id` to `definitions`.
                e.ptr.store(name.as_ptr().cast_mut(), Ordering::Release);
                Some(id)
            }
            Err(None) => {
                // Relaxed: the owner's counter (a load and a store, no locked add), read as a
                // statistic.
                self.inline
                    .store(self.inline.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Every name the slot has defined so far, as NameDefinition records of `slot` stamped
    /// `ts`, in id order: what a file that starts in the middle of the recording restates.
    pub(crate) fn definitions(&self, slot: u8, ts: i64) -> Vec<Box<[u8]>> {
        let mut defs: Vec<(u32, std::borrow::Cow<'static, str>)> = Vec::new();
        for e in self.entries.iter() {
            // Acquire: pairs with `define`'s Release, so `len` and `id` are this name's.
            let p = e.ptr.load(Ordering::Acquire);
            if p.is_null() {
                continue;
            }
            let len = e.len.load(Ordering::Relaxed);
            // SAFETY: `p` and `len` are a `&'static str`'s (stored together by `define`, before
            // `p` was published): valid UTF-8 that lives for the program.
            let name = unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(p.cast_const(), len))
            };
            defs.push((e.id.load(Ordering::Relaxed), name.into()));
        }
        if let Some(strs) = self.strs.get() {
            defs.extend(strs.definitions().into_iter().map(|(id, s)| (id, s.into())));
        }
        defs.sort_unstable();
        defs.into_iter()
            .map(|(id, name)| {
                let mut d = vec![0u8; records::name_definition_len(&name)];
                records::fill_name_definition(&mut d, slot, ts, id, &name);
                d.into_boxed_slice()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::records::{decode, Record};

    #[test]
    fn names_get_ids_once_and_again_for_a_new_owner() {
        let t = NameTable::new(4096);
        let e1 = t.claim();
        let mut written = Vec::new();
        let a = t.define("alpha", e1, |id| {
            written.push(id);
            true
        });
        assert_eq!(a, Some(1));
        assert_eq!(t.find("alpha", e1), Some(1));
        assert_eq!(t.find("beta", e1), None);
        let b = t.define("beta", e1, |id| {
            written.push(id);
            true
        });
        assert_eq!(b, Some(2));
        // The same address, another length: another name.
        let ab: &'static str = &"alphabet"[..5];
        assert_eq!(ab, "alpha");
        assert!(t.define(&"alphabet"[..3], e1, |_| true).is_some());
        // A new owner finds the name, but writes its definition again, with the same id.
        let e2 = t.claim();
        assert_eq!(t.find("alpha", e2), None);
        assert_eq!(
            t.define("alpha", e2, |id| {
                written.push(id);
                true
            }),
            Some(1)
        );
        assert_eq!(t.find("alpha", e2), Some(1));
        assert_eq!(written, [1, 2, 1]);
        // A definition the ring did not take: nothing is kept, the next use tries again.
        assert_eq!(t.define("gamma", e2, |_| false), None);
        assert_eq!(t.find("gamma", e2), None);
        assert_eq!(t.define("gamma", e2, |_| true), Some(4));
        let defs: Vec<_> = t
            .definitions(3, 9)
            .iter()
            .map(|d| match decode(d).unwrap() {
                (h, Record::NameDefinition { name_id, name }) => {
                    assert_eq!((h.slot, h.timestamp), (3, 9));
                    (name_id, name.to_string())
                }
                r => panic!("{r:?}"),
            })
            .collect();
        assert_eq!(
            defs,
            [(1, "alpha"), (2, "beta"), (3, "alp"), (4, "gamma")].map(|(i, n)| (i, n.into()))
        );
        assert_eq!(t.inline.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_table_counts_what_it_leaves_inline() {
        let t = NameTable::new(4096);
        let cap = t.capacity();
        assert_eq!(cap, 32);
        let e = t.claim();
        let names: Vec<&'static str> = (0..cap + 5)
            .map(|i| &*Box::leak(format!("n{i}").into_boxed_str()))
            .collect();
        let ids: Vec<_> = names.iter().map(|n| t.define(n, e, |_| true)).collect();
        let defined = ids.iter().flatten().count();
        assert!(defined <= cap && defined >= cap - PROBES, "{defined}");
        let inline = (names.len() - defined) as u64;
        assert_eq!(t.inline.load(Ordering::Relaxed), inline);
        assert_eq!(t.definitions(1, 0).len(), defined);
        // Every defined name keeps its own id.
        let mut seen: Vec<u32> = ids.iter().flatten().copied().collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), defined);
    }
}

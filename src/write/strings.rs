//! Short strings of `tracing` values written once per slot (SPEC §15): an HTTP method, a Bevy
//! system's `name`, an event's literal message repeat in every request or frame. The first
//! time a slot's values carry one a second time, it gets an id among the slot's static names
//! ([`super::names`]), a NameDefinition (id → string) goes into the slot's ring, and the
//! values carry the id from then on ([`crate::codec::records::Value::StrId`]); readers resolve
//! it with the slot's other NameDefinitions, and a file that starts in the middle of the
//! recording (a segment, a snapshot) gets it restated with them ([`StrTable::definitions`]).
//!
//! The table is bounded and allocation-free once made (at the slot's first such string): a
//! fixed number of entries, each with room for a string of [`MAX_INTERNED`] bytes. A string
//! is taken in only when it is seen again (a small table of fingerprints remembers the strings
//! seen once), so strings that never repeat (a request's URI with its id, an error text with
//! its values) do not take the room of the ones that do; they stay inline, as do longer
//! strings and strings past the table's room. Nothing is lost either way.
//!
//! Why [`MAX_INTERNED`] is 64: what repeats verbatim is short (methods, versions, status
//! texts, system and type names, literal messages, mostly under 40 bytes), while longer
//! strings are mostly made with values in them and repeat rarely; a fixed cell per entry keeps
//! the table's memory known in advance (a slot's table has twice its room in cells of 64
//! bytes, and four times its room in fingerprints: 32 KiB with the default 2 MiB ring, which holds 256 strings), and a lookup's hash and compare stay within a
//! cache line of the string.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Longest string taken in (bytes).
pub(crate) const MAX_INTERNED: usize = 64;
/// Shortest string taken in: a shorter one costs no more inline than as an id.
pub(crate) const MIN_INTERNED: usize = 3;
/// Probes a lookup makes at most.
const PROBES: usize = 8;

/// One entry: a string, its id and the claim whose records hold its definition.
struct StrEntry {
    /// The string's hash (never 0); 0 while the entry is free. Stored last, with Release, so
    /// that the flusher that sees it sees `len`, `id` and the cell's bytes.
    hash: AtomicU64,
    len: AtomicUsize,
    id: AtomicU32,
    /// As `NameEntry::epoch` in [`super::names`].
    epoch: AtomicU32,
}

/// A slot's interned strings (see the module). Written only by the slot's owner thread, read
/// by the flusher (restating).
pub(crate) struct StrTable {
    entries: Box<[StrEntry]>,
    /// Entry `i`'s string, written once before the entry is published and never again.
    cells: Box<[UnsafeCell<[u8; MAX_INTERNED]>]>,
    /// Fingerprints of strings seen once, each in one of two places its hash picks: the
    /// second sight takes a string in. Two places (an empty one taken first, else the two in
    /// turn), so that strings that share a place (seen in turn, as a frame's systems are) do
    /// not keep pushing each other out.
    seen: Box<[AtomicU32]>,
    /// Which of its two places a new fingerprint takes.
    flip: AtomicU32,
    /// Strings held at most: half the entries.
    cap: usize,
    used: AtomicUsize,
    /// Strings written inline because the table was full.
    pub(crate) inline: AtomicU64,
}

// SAFETY: the cells are the only non-atomic state. A cell is written only by the slot's owner,
// before the Release store that publishes its entry, and never after; every reader (the owner,
// the flusher) reads it only after an Acquire load (or the owner's own store) saw the entry
// published. So no cell is ever written while it is read.
unsafe impl Sync for StrTable {}

impl std::fmt::Debug for StrTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrTable")
            .field("cap", &self.cap)
            .field("used", &self.used)
            .field("inline", &self.inline)
            .finish()
    }
}

/// What the table says of a string for the asking claim.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Its id, its definition in the claim's records.
    Id(u32),
    /// Held with this id, defined in an earlier claim's records: to define again (entry).
    Stale(usize, u32),
    /// Seen a second time and the table has room: to define with a new id (entry, hash).
    New(usize, u64),
    /// To write inline: too short or long, seen once, or no room.
    Inline,
}

/// A hash of `s` that is never 0: 8 bytes a step.
#[inline]
fn hash(s: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (s.len() as u64).wrapping_mul(K);
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        // The last bytes as the low bytes of a word, zero above: the last 8 bytes of a
        // string that has them, shifted down (one load, not a copy into a zeroed buffer),
        // else the few bytes one by one.
        let w = match s.len().checked_sub(8).and_then(|at| s.get(at..)) {
            Some(last) => {
                u64::from_le_bytes(last.try_into().unwrap_or([0; 8])) >> (8 * (8 - r.len()))
            }
            None => r.iter().rev().fold(0u64, |w, &b| (w << 8) | u64::from(b)),
        };
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    // A multiply carries a byte's change only upwards: the finalizer of MurmurHash3 spreads
    // every bit over the bits the table's index and fingerprint take.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (h ^ (h >> 33)) | 1
}

impl StrTable {
    /// A table for a slot whose ring is `ring_bytes`: one string per 8 KiB of ring (at least
    /// 64, at most 1024), in twice as many entries.
    pub(crate) fn new(ring_bytes: usize) -> Self {
        let cap = (ring_bytes / 8192).clamp(64, 1024).next_power_of_two();
        let n = cap * 2;
        StrTable {
            entries: (0..n)
                .map(|_| StrEntry {
                    hash: AtomicU64::new(0),
                    len: AtomicUsize::new(0),
                    id: AtomicU32::new(0),
                    epoch: AtomicU32::new(0),
                })
                .collect(),
            cells: (0..n).map(|_| UnsafeCell::new([0; MAX_INTERNED])).collect(),
            seen: (0..n * 2).map(|_| AtomicU32::new(0)).collect(),
            flip: AtomicU32::new(0),
            cap,
            used: AtomicUsize::new(0),
            inline: AtomicU64::new(0),
        }
    }

    /// The string of published entry `i`.
    fn cell(&self, i: usize, len: usize) -> &[u8] {
        // SAFETY: entry `i` is published (the caller saw its hash with Acquire, or is the
        // owner that stored it), so its cell was written before and is never written again
        // (see the `Sync` impl); `len` ≤ MAX_INTERNED was stored with it.
        unsafe { &(&*self.cells[i].get())[..len.min(MAX_INTERNED)] }
    }

    /// Where `s` (of hash `h`) is: `Ok(entry)` if held, `Err(Some(entry))` for the free entry
    /// it would take, `Err(None)` when the probes find neither.
    #[inline]
    fn place(&self, s: &[u8], h: u64) -> Result<usize, Option<usize>> {
        let mask = self.entries.len() - 1;
        let mut i = (h >> 32) as usize & mask;
        for _ in 0..PROBES {
            let e = &self.entries[i];
            // Relaxed: only the owning thread stores entries, and it is this thread.
            let eh = e.hash.load(Ordering::Relaxed);
            if eh == 0 {
                return Err(Some(i));
            }
            if eh == h && e.len.load(Ordering::Relaxed) == s.len() && self.cell(i, s.len()) == s {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
        Err(None)
    }

    /// What to do with `s` in `epoch`'s records (the owner's lookup): a first sight of a
    /// string is remembered, and the second finds it [`Found::New`].
    #[inline]
    pub(crate) fn find(&self, s: &str, epoch: u32) -> Found {
        let b = s.as_bytes();
        if b.len() > MAX_INTERNED || b.len() < MIN_INTERNED {
            return Found::Inline;
        }
        let h = hash(b);
        // Relaxed everywhere: owner-only state (the flusher reads only published entries).
        match self.place(b, h) {
            Ok(i) => {
                let e = &self.entries[i];
                let id = e.id.load(Ordering::Relaxed);
                if e.epoch.load(Ordering::Relaxed) == epoch {
                    Found::Id(id)
                } else {
                    Found::Stale(i, id)
                }
            }
            Err(Some(i)) => {
                let m = self.seen.len() - 1;
                let (a, b) = (
                    &self.seen[(h >> 32) as usize & m],
                    &self.seen[(h >> 48) as usize & m],
                );
                let fp = h as u32 | 1;
                if a.load(Ordering::Relaxed) != fp && b.load(Ordering::Relaxed) != fp {
                    // An empty place first; else the two in turn.
                    let to = if a.load(Ordering::Relaxed) == 0 {
                        a
                    } else if b.load(Ordering::Relaxed) == 0 {
                        b
                    } else {
                        let f = self.flip.load(Ordering::Relaxed);
                        self.flip.store(f ^ 1, Ordering::Relaxed);
                        if f == 0 {
                            a
                        } else {
                            b
                        }
                    };
                    to.store(fp, Ordering::Relaxed);
                    Found::Inline
                } else if self.used.load(Ordering::Relaxed) >= self.cap {
                    self.count_inline();
                    Found::Inline
                } else {
                    Found::New(i, h)
                }
            }
            Err(None) => {
                self.count_inline();
                Found::Inline
            }
        }
    }

    #[cold]
    fn count_inline(&self) {
        // Relaxed: the owner's counter (a load and a store, no locked add), read as a statistic.
        self.inline
            .store(self.inline.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The definition of [`Found::Stale`] entry `i` is now in `epoch`'s records.
    pub(crate) fn restated(&self, i: usize, epoch: u32) {
        // Relaxed: owner-only.
        self.entries[i].epoch.store(epoch, Ordering::Relaxed);
    }

    /// [`Found::New`] entry `i` (hash `h`) now holds `s` with `id`, its definition in
    /// `epoch`'s records.
    pub(crate) fn hold(&self, i: usize, h: u64, s: &str, id: u32, epoch: u32) {
        let b = s.as_bytes();
        let e = &self.entries[i];
        // Relaxed: owner-only. `find` said the entry was free, and only the owner (this
        // thread) fills entries, so it still is.
        if b.len() > MAX_INTERNED || e.hash.load(Ordering::Relaxed) != 0 {
            return;
        }
        self.used
            .store(self.used.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // SAFETY: entry `i` is free (hash 0), so no reader reads its cell (they read only
        // published entries), and only this thread, the owner, writes it.
        unsafe { (&mut *self.cells[i].get())[..b.len()].copy_from_slice(b) };
        e.len.store(b.len(), Ordering::Relaxed);
        e.id.store(id, Ordering::Relaxed);
        e.epoch.store(epoch, Ordering::Relaxed);
        // Release: publishes the cell, `len` and `id` to `definitions`.
        e.hash.store(h, Ordering::Release);
    }

    /// Every string held, with its id: what a file that starts in the middle restates.
    pub(crate) fn definitions(&self) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            // Acquire: pairs with `define`'s Release, so the cell, `len` and `id` are whole.
            if e.hash.load(Ordering::Acquire) == 0 {
                continue;
            }
            let len = e.len.load(Ordering::Relaxed);
            // A held string came from a `&str`: its bytes are UTF-8.
            let s = String::from_utf8_lossy(self.cell(i, len)).into_owned();
            out.push((e.id.load(Ordering::Relaxed), s));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash as first written (the last bytes copied into a zeroed word): its values decide
    /// where strings go, so which repeat by id, and must not change.
    fn reference_hash(s: &[u8]) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h = (s.len() as u64).wrapping_mul(K);
        let mut chunks = s.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap());
            h = (h.rotate_left(23) ^ w).wrapping_mul(K);
        }
        let r = chunks.remainder();
        if !r.is_empty() {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(r);
            h = (h.rotate_left(23) ^ u64::from_le_bytes(b)).wrapping_mul(K);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        (h ^ (h >> 33)) | 1
    }

    #[test]
    fn the_hash_is_the_one_first_written() {
        let bytes: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..=bytes.len() {
            for start in [0, 1, 5] {
                let s = &bytes[start..(start + len).min(bytes.len())];
                assert_eq!(hash(s), reference_hash(s), "{s:?}");
            }
        }
    }

    /// The owner's use of the table, as `Writer::str_id` makes it (ids from 5, every
    /// definition written).
    fn id_of(
        t: &StrTable,
        next: &mut u32,
        s: &str,
        epoch: u32,
        written: &mut Vec<u32>,
    ) -> Option<u32> {
        match t.find(s, epoch) {
            Found::Id(id) => Some(id),
            Found::Stale(i, id) => {
                written.push(id);
                t.restated(i, epoch);
                Some(id)
            }
            Found::New(i, h) => {
                let id = *next;
                *next += 1;
                written.push(id);
                t.hold(i, h, s, id, epoch);
                Some(id)
            }
            Found::Inline => None,
        }
    }

    /// A string is taken in at its second sight, keeps its id, is defined again for a new
    /// claim, and the table's bound leaves the rest inline.
    #[test]
    fn strings_are_taken_in_when_they_repeat() {
        let t = StrTable::new(0);
        let mut next = 5;
        let mut w = Vec::new();
        assert_eq!(
            id_of(&t, &mut next, "GET", 1, &mut w),
            None,
            "first sight stays inline"
        );
        assert_eq!(id_of(&t, &mut next, "GET", 1, &mut w), Some(5));
        assert_eq!(id_of(&t, &mut next, "GET", 1, &mut w), Some(5));
        assert_eq!(id_of(&t, &mut next, "ab", 1, &mut w), None, "too short");
        assert_eq!(id_of(&t, &mut next, "ab", 1, &mut w), None);
        let long = "x".repeat(MAX_INTERNED + 1);
        assert_eq!(id_of(&t, &mut next, &long, 1, &mut w), None);
        assert_eq!(id_of(&t, &mut next, &long, 1, &mut w), None, "too long");
        let edge = "y".repeat(MAX_INTERNED);
        id_of(&t, &mut next, &edge, 1, &mut w);
        assert_eq!(id_of(&t, &mut next, &edge, 1, &mut w), Some(6));
        assert_eq!(
            id_of(&t, &mut next, "GET", 2, &mut w),
            Some(5),
            "a new claim"
        );
        assert_eq!(id_of(&t, &mut next, "GET", 2, &mut w), Some(5));
        assert_eq!(w, [5, 6, 5]);
        let mut defs = t.definitions();
        defs.sort();
        assert_eq!(defs, [(5, "GET".to_string()), (6, edge)]);
        // Past the room: inline, counted.
        let mut held = 2;
        for i in 0..t.cap * 2 {
            let s = format!("name-{i}");
            id_of(&t, &mut next, &s, 2, &mut w);
            if id_of(&t, &mut next, &s, 2, &mut w).is_some() {
                held += 1;
            }
        }
        assert_eq!(held, t.cap);
        assert!(t.inline.load(Ordering::Relaxed) >= t.cap as u64);
        assert_eq!(t.definitions().len(), t.cap);
    }

    /// Strings seen in turn (a frame's systems, each name once a frame) are all taken in
    /// within a few rounds: ones that share a place among the fingerprints do not keep
    /// pushing each other out.
    #[test]
    fn strings_seen_in_turn_are_all_taken_in() {
        let t = StrTable::new(0);
        let mut next = 1;
        let mut w = Vec::new();
        let names: Vec<String> = (0..t.cap - 4)
            .map(|i| format!("sim::system_{i:03}"))
            .collect();
        for _ in 0..4 {
            for n in &names {
                id_of(&t, &mut next, n, 1, &mut w);
            }
        }
        let held = names
            .iter()
            .filter(|n| matches!(t.find(n, 1), Found::Id(_)))
            .count();
        assert_eq!(held, names.len());
    }
}

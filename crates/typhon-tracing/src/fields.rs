//! A span's fields as its TracingSpanInfo records carry them: `k=v` pairs separated by spaces,
//! one per field, in the order each was first given. `Span::record` of a field replaces its
//! value where it is, so the last value recorded is the one the file has, and a span recorded
//! a million times costs the same per record as one recorded twice.
//!
//! The text is bounded: [`FIELDS_CAP`] bytes. A value that does not fit is cut at a character
//! boundary and ends in `…`; a field with no room left at all is left out; and the text then
//! ends with `typhon.cut=N`, the bytes of the current values that it does not hold. Room is
//! given first come, first served: a later field never pushes out an earlier one.

use std::cell::RefCell;
use std::fmt;
use tracing_core::field::Field;

/// Closed spans' fields kept (emptied, their buffers' room kept) for spans created later on
/// the thread: a span's fields then allocate nothing once the program is warm.
const POOL: usize = 256;
/// Text room a kept span's fields may have: a span with large fields gives its room back.
const POOL_TEXT: usize = 512;

thread_local! {
    static FREE: RefCell<Vec<SpanFields>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of a span's field text, the mark included: small enough that a TracingSpanInfo with
/// a callsite's name and target fits a page of the smallest size (4 KiB).
pub(crate) const FIELDS_CAP: usize = 2048;
/// The mark a text that does not hold everything ends with, before its count.
pub(crate) const CUT_MARK: &str = " typhon.cut=";
/// The room kept for the mark: it and a `u64`'s 20 digits.
const BODY_CAP: usize = FIELDS_CAP - CUT_MARK.len() - 20;
/// What a cut value ends with.
const ELLIPSIS: &str = "…";

/// Where one field is in the text.
#[derive(Clone, Copy, Debug)]
struct Spot {
    /// Its index in the span's callsite.
    field: usize,
    /// Its ` k=v` (with the space before it) is `text[start..end]`; empty when left out.
    start: usize,
    end: usize,
    /// Bytes of its current `k=v` that the text does not hold.
    cut: u64,
}

/// A span's fields: see the module.
#[derive(Debug, Default)]
pub(crate) struct SpanFields {
    /// Each field's ` k=v`, then the mark when something is cut.
    text: String,
    /// Where the fields end (and the mark begins).
    body: usize,
    spots: Vec<Spot>,
}

/// Writes up to `limit` bytes of the string into `out` (NUL bytes, which end strings in the
/// file's readers, as U+FFFD) and counts the rest; [`finish`](Self::finish) makes room for the
/// `…` of a cut value.
pub(crate) struct Bounded<'a> {
    out: &'a mut String,
    limit: usize,
    cut: u64,
}

impl<'a> Bounded<'a> {
    pub(crate) fn new(out: &'a mut String, limit: usize) -> Self {
        Bounded { out, limit, cut: 0 }
    }

    fn push(&mut self, s: &str) {
        if self.cut > 0 {
            self.cut = self.cut.saturating_add(s.len() as u64);
            return;
        }
        let room = self.limit.saturating_sub(self.out.len());
        if s.len() <= room {
            self.out.push_str(s);
            return;
        }
        let fit = floor_boundary(s, room);
        self.out.push_str(&s[..fit]);
        self.cut = (s.len() - fit) as u64;
    }

    /// Ends the value: a cut one is shortened to leave room for `…`, which is appended, and
    /// what it lost counted. Returns the bytes not kept.
    pub(crate) fn finish(self) -> u64 {
        let mut cut = self.cut;
        if cut > 0 {
            let keep = floor_boundary(self.out, self.limit.saturating_sub(ELLIPSIS.len()));
            cut = cut.saturating_add((self.out.len() - keep) as u64);
            self.out.truncate(keep);
            self.out.push_str(ELLIPSIS);
        }
        cut
    }
}

impl fmt::Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut parts = s.split('\0');
        if let Some(first) = parts.next() {
            self.push(first);
        }
        for p in parts {
            self.push("\u{FFFD}");
            self.push(p);
        }
        Ok(())
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    // A char is at most 4 bytes: a boundary is within 3 bytes below any index.
    (at.saturating_sub(3)..=at)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

impl SpanFields {
    /// Empty fields for a new span, with the room of a closed span's where there is one.
    pub(crate) fn take() -> Self {
        FREE.try_with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.pop()))
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// A closed span's fields, kept for [`take`](Self::take) while the pool has room.
    pub(crate) fn give(mut self) {
        if self.text.capacity() > POOL_TEXT {
            return;
        }
        self.text.clear();
        self.body = 0;
        self.spots.clear();
        let _ = FREE.try_with(|f| {
            if let Ok(mut f) = f.try_borrow_mut() {
                if f.capacity() == 0 {
                    // Its whole room at once: a give never grows it.
                    f.reserve_exact(POOL);
                }
                if f.len() < f.capacity() {
                    f.push(self);
                }
            }
        });
    }

    /// The text for the record: the fields, and the mark if anything is cut.
    pub(crate) fn text(&self) -> &str {
        // Each field's text starts with its separating space; the first needs none.
        self.text.get(1..).unwrap_or("")
    }

    /// Sets `field`'s value to what `write` writes (into a writer that bounds it), replacing
    /// the one it had. `scratch` is a buffer the caller lends for a replaced value (its
    /// contents do not matter). Returns the value as kept.
    pub(crate) fn set(
        &mut self,
        field: &Field,
        scratch: &mut String,
        write: impl FnOnce(&mut Bounded<'_>),
    ) -> &str {
        let at = self.spots.iter().position(|s| s.field == field.index());
        let old = at.map_or(0, |i| self.spots[i].end - self.spots[i].start);
        let room = BODY_CAP.saturating_sub(self.body - old);
        let key = field.name();
        // ` k=` and at least `…` of the value, or nothing of it.
        let fits = 1 + key.len() + 1 + ELLIPSIS.len() <= room;
        self.text.truncate(self.body);
        let (start, len, cut) = match at {
            // A new field that fits: written where it goes, at the end.
            None if fits => {
                let start = self.body;
                self.text.push(' ');
                self.text.push_str(key);
                self.text.push('=');
                let mut b = Bounded::new(&mut self.text, start + room);
                write(&mut b);
                let cut = b.finish();
                (start, self.text.len() - start, cut)
            }
            _ => {
                scratch.clear();
                let cut = if fits {
                    scratch.push(' ');
                    scratch.push_str(key);
                    scratch.push('=');
                    let mut b = Bounded::new(scratch, room);
                    write(&mut b);
                    b.finish()
                } else {
                    // Counted, not kept: the whole `k=v`.
                    let mut b = Bounded::new(scratch, 0);
                    write(&mut b);
                    b.finish().saturating_add(key.len() as u64 + 1)
                };
                let seg: &str = if fits { scratch } else { "" };
                let (start, end) = match at {
                    Some(i) => (self.spots[i].start, self.spots[i].end),
                    None => (self.body, self.body),
                };
                self.text.replace_range(start..end, seg);
                let grown = seg.len() as isize - (end - start) as isize;
                // The fields after it move with its end (one left out moves too: it stays
                // where the field that follows it begins).
                for s in self.spots.iter_mut().filter(|s| s.start >= end) {
                    s.start = s.start.wrapping_add_signed(grown);
                    s.end = s.end.wrapping_add_signed(grown);
                }
                (start, seg.len(), cut)
            }
        };
        let spot = Spot {
            field: field.index(),
            start,
            end: start + len,
            cut,
        };
        match at {
            Some(i) => self.spots[i] = spot,
            None => self.spots.push(spot),
        }
        self.body = self.text.len();
        let total = self.spots.iter().fold(0u64, |a, s| a.saturating_add(s.cut));
        if total > 0 {
            self.text.push_str(CUT_MARK);
            let mut digits = [0u8; 20];
            self.text.push_str(crate::decimal(total, &mut digits));
        }
        let value_at = start + 1 + key.len() + 1;
        match len {
            0 => "",
            _ => &self.text[value_at..start + len],
        }
    }
}

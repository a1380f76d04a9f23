//! A span's fields as its TracingSpanValues records carry them: typed entries
//! ([`typhon_recorder::codec::records::Values`]), one per field, in the order each was first
//! given. `Span::record` of a field replaces its value where it is, so the last value recorded
//! is the one the file has, and a span recorded a million times costs the same per record as
//! one recorded twice.
//!
//! The values are bounded: [`FIELDS_CAP`] bytes. A string that does not fit is cut at a
//! character boundary and ends in `…`; a field with no room left at all is left out; and the
//! values then end with a cut entry, the bytes of the current values that they do not hold
//! (readers show `typhon.cut=N`). Room is given first come, first served: a later field never
//! pushes out an earlier one.

use std::cell::RefCell;
use std::fmt;
use tracing_core::field::Field;
use typhon_recorder::codec::records::{put_entry, Value};

/// Closed spans' fields kept (emptied, their buffers' room kept) for spans created later on
/// the thread: a span's fields then allocate nothing once the program is warm.
const POOL: usize = 256;
/// Text room a kept span's fields may have: a span with large fields gives its room back.
const POOL_TEXT: usize = 512;

thread_local! {
    static FREE: RefCell<Vec<SpanFields>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of a span's values, the cut entry included: small enough that a TracingSpanInfo
/// written inline (the fallback) with a callsite's name and target fits a page of the smallest
/// size (4 KiB).
pub(crate) const FIELDS_CAP: usize = 2048;
/// The room kept for the cut entry (field, tag, u64).
const BODY_CAP: usize = FIELDS_CAP - 10;
/// What a cut value ends with.
const ELLIPSIS: &str = "…";

/// Where one field is in the values.
#[derive(Clone, Copy, Debug)]
struct Spot {
    /// Its index in the span's callsite.
    field: usize,
    /// Its entry is `buf[start..end]`; empty when left out.
    start: usize,
    end: usize,
    /// Bytes of its current value that the values do not hold.
    cut: u64,
}

/// A span's fields: see the module.
#[derive(Debug, Default)]
pub(crate) struct SpanFields {
    /// Each field's entry, then the cut entry when something is cut.
    buf: Vec<u8>,
    /// A field's new entry, before it takes its place.
    tmp: Vec<u8>,
    /// Where the fields end (and the cut entry begins).
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
        // Most text has no NUL: one scan for it instead of a split's search and iterator. Most
        // pieces a `Debug` writes are a few bytes, which a plain loop scans faster than the
        // call `memchr` is.
        let has_nul = if s.len() <= 16 {
            s.bytes().any(|b| b == 0)
        } else {
            s.as_bytes().contains(&0)
        };
        if !has_nul {
            self.push(s);
            return Ok(());
        }
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
        if self.buf.capacity() > POOL_TEXT || self.tmp.capacity() > POOL_TEXT {
            return;
        }
        self.buf.clear();
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

    /// The values for the record: the fields, and the cut entry if anything is cut.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Sets `field`'s value to `v` (a `Debug` value formatted into `scratch`, a buffer the
    /// caller lends), replacing the one it had.
    pub(crate) fn set(&mut self, field: &Field, scratch: &mut String, v: crate::Value<'_>) {
        let at = self.spots.iter().position(|s| s.field == field.index());
        if at.is_none() && self.append(field, v) {
            return;
        }
        self.replace(at, field, scratch, v);
    }

    /// The common case of [`set`](Self::set), a span's creation: a field given for the first
    /// time, nothing cut so far, and a value that fits whole with no NUL in it (a number, or a
    /// string as it is) goes straight onto the end of the values, without the copies and the
    /// splice of [`replace`](Self::replace), which would write the same bytes. Returns whether
    /// it did.
    #[inline]
    fn append(&mut self, field: &Field, v: crate::Value<'_>) -> bool {
        if self.buf.len() != self.body {
            // A cut entry: something is cut, the general path keeps its count.
            return false;
        }
        let room = BODY_CAP.saturating_sub(self.body);
        let value = match v {
            // `replace` bounds a string to the room less its entry's 4 header bytes, and
            // writes a NUL as U+FFFD: one within that bound and with no NUL is kept as it is.
            crate::Value::Str(s)
                if s.len() <= room.saturating_sub(4) && !s.as_bytes().contains(&0) =>
            {
                Value::Str(s)
            }
            crate::Value::I64(n) => Value::I64(n),
            crate::Value::U64(n) => Value::U64(n),
            crate::Value::F64(x) => Value::F64(x),
            crate::Value::Bool(t) => Value::Bool(t),
            _ => return false,
        };
        if value.entry_len() > room {
            return false;
        }
        let start = self.body;
        put_entry(&mut self.buf, field.index().min(254) as u8, value);
        self.spots.push(Spot {
            field: field.index(),
            start,
            end: self.buf.len(),
            cut: 0,
        });
        self.body = self.buf.len();
        true
    }

    /// [`set`](Self::set) in general: the value bounded (a string cut to the room left, a
    /// `Debug` value formatted), put where the field's old value was (`at`), and the cut entry
    /// made again.
    fn replace(
        &mut self,
        at: Option<usize>,
        field: &Field,
        scratch: &mut String,
        v: crate::Value<'_>,
    ) {
        let old = at.map_or(0, |i| self.spots[i].end - self.spots[i].start);
        let room = BODY_CAP.saturating_sub(self.body - old);
        let idx = field.index().min(254) as u8;
        self.tmp.clear();
        let mut cut = 0u64;
        let text = |scratch: &mut String, s: Option<&str>, d: Option<&dyn fmt::Debug>| {
            // The string's room: the entry's field, tag and length (at most 4 bytes below
            // 16 KiB) stay out of it.
            let limit = room.saturating_sub(4);
            scratch.clear();
            let mut b = Bounded::new(scratch, limit);
            let _ = match (s, d) {
                (Some(s), _) => fmt::Write::write_str(&mut b, s),
                (None, Some(d)) => fmt::Write::write_fmt(&mut b, format_args!("{d:?}")),
                _ => Ok(()),
            };
            b.finish()
        };
        let value = match v {
            crate::Value::Str(s) => {
                cut = text(scratch, Some(s), None);
                Some(Value::Str(scratch.as_str()))
            }
            crate::Value::Debug(d) => {
                cut = text(scratch, None, Some(d));
                Some(Value::Debug(scratch.as_str()))
            }
            crate::Value::I64(n) => Some(Value::I64(n)),
            crate::Value::U64(n) => Some(Value::U64(n)),
            crate::Value::F64(x) => Some(Value::F64(x)),
            crate::Value::Bool(t) => Some(Value::Bool(t)),
        };
        if let Some(value) = value {
            // A value with no room at all (not even `…` of a string) is left out, and counted.
            let fits = value.entry_len() <= room;
            if fits {
                put_entry(&mut self.tmp, idx, value);
            } else {
                // Left out: all of its value is counted (a string's bytes, a number's).
                cut = match v {
                    crate::Value::Str(s) => s.len() as u64,
                    crate::Value::Debug(_) => {
                        let kept = scratch.len() - if cut > 0 { ELLIPSIS.len() } else { 0 };
                        (kept as u64).saturating_add(cut)
                    }
                    crate::Value::Bool(_) => 1,
                    _ => 8,
                };
            }
        }
        self.buf.truncate(self.body);
        let (start, end) = match at {
            Some(i) => (self.spots[i].start, self.spots[i].end),
            None => (self.body, self.body),
        };
        let len = self.tmp.len();
        if start == self.buf.len() {
            // A field given for the first time (a `Debug` one at the span's creation): onto
            // the end, a copy instead of a splice's iterator.
            self.buf.extend_from_slice(&self.tmp);
        } else {
            self.buf.splice(start..end, self.tmp.iter().copied());
        }
        let grown = len as isize - (end - start) as isize;
        // The fields after it move with its end.
        for s in self
            .spots
            .iter_mut()
            .filter(|s| s.start >= end && s.field != field.index())
        {
            s.start = s.start.wrapping_add_signed(grown);
            s.end = s.end.wrapping_add_signed(grown);
        }
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
        self.body = self.buf.len();
        let total = self.spots.iter().fold(0u64, |a, s| a.saturating_add(s.cut));
        if total > 0 {
            put_entry(&mut self.buf, 0, Value::Cut(total));
        }
    }
}

//! Span entries without their name (SPEC §12, §15): a `tracing` span entered on every poll
//! writes a TracingSpan record per entry, and its name (the callsite's, or `"{span}: {name}"`
//! for a span with a `name` field) is the same in each. The layer writes it once, in the span's
//! TracingSpanValues (its callsite and its `name` value say it), and the entries with an empty
//! name; [`SpanNames`] learns each span's name from its values as the stream passes them and
//! hands each entry out with it, so every reader sees the entries as they were written before.
//!
//! A span's values come before its entries in time order (it is described when it is created,
//! and entered after), and again when `Span::record` changes a field, so an entry shows the
//! name the span had when it began. The table is bounded: two generations of [`SpanNames::CAP`]
//! keys each, a key used in the older one moving to the newer, the older dropped when the newer
//! fills; a span entered after more than that many spans were described since its last use
//! loses its name. An entry whose span's name is not known (its values missed, or dropped from
//! the table) is handed out as `span#KEY`, counted in [`SpanNames::unresolved`].

//!
//! A compact entry (TracingEntry, kind 226) carries only its time and key; it is handed out
//! as the TracingSpan it stands for, named so, with `tracing_id` 0 and parent 0 (its nesting
//! is its time on its slot; its `tracing` parent is in its span's description). Its span id
//! is the one the recorder gave it, when a span opened inside it names it as its parent (bit
//! 55 set: a span record of the same slot, earlier in the stream, since a span is written at
//! its end, that lies in the entry's time); else one of its own, `slot << 56 | 3 << 54 | n`,
//! which no recorder gives.

use std::collections::HashMap;
use std::sync::Arc;
use typhon_recorder::codec::kinds::TRACING_ENTRY_ID_BIT;
use typhon_recorder::codec::records::{self, Record, SpanExt};
use typhon_recorder::codec::{kind_def, TraceEventKind as K};

/// Parents not yet met that a slot's spans name, kept at most (a slot's stack is 64 deep).
const ORPHANS: usize = 256;

/// The names of the spans seen so far, by key: see the module.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// use typhon_trace::span_names::SpanNames;
/// let mut names = SpanNames::default();
/// names.learn(9, "system: physics");
/// let span = SpanExt { duration_ns: 5, span_id: 1, parent_span_id: 0 };
/// let mut d = [0u8; 64];
/// let n = write_tracing_span(&mut d, 1, 0, &span, 9, 3, "").unwrap();
/// let named = names.resolve(&d[..n]).unwrap();
/// assert_eq!(decode(&named).unwrap().1,
///     Record::TracingSpan { span, key: 9, tracing_id: 3, name: "system: physics" });
/// ```
#[derive(Debug, Default)]
pub struct SpanNames {
    new: HashMap<u64, Arc<str>>,
    old: HashMap<u64, Arc<str>>,
    /// The last name learnt, shared by the spans that have it (a frame's systems repeat theirs).
    last: Option<Arc<str>>,
    /// Entries handed out without their span's name.
    pub unresolved: u64,
    /// Per slot: (recorder id of a compact entry, start of a span that names it as parent),
    /// for the entry to take when it comes (see the module).
    orphans: HashMap<u8, Vec<(u64, i64)>>,
    /// Compact entries given an id of their own.
    own_ids: u64,
}

impl SpanNames {
    /// Keys a generation of the table holds.
    pub const CAP: usize = 1 << 16;

    /// Span `key` is now named `name`.
    pub fn learn(&mut self, key: u64, name: &str) {
        let name = match &self.last {
            Some(l) if **l == *name => l.clone(),
            _ => {
                let n: Arc<str> = Arc::from(name.replace('\0', "\u{FFFD}"));
                self.last = Some(n.clone());
                n
            }
        };
        self.old.remove(&key);
        self.put(key, name);
    }

    fn put(&mut self, key: u64, name: Arc<str>) {
        if self.new.len() >= Self::CAP && !self.new.contains_key(&key) {
            self.old = std::mem::take(&mut self.new);
        }
        self.new.insert(key, name);
    }

    fn get(&mut self, key: u64) -> Option<Arc<str>> {
        if let Some(n) = self.new.get(&key) {
            return Some(n.clone());
        }
        let n = self.old.remove(&key)?;
        self.put(key, n.clone());
        Some(n)
    }

    /// Notes the parent a span record `data` names, if it is a compact entry's (bit 55).
    pub(crate) fn note_span(&mut self, data: &[u8]) {
        let Some(def) = data.get(2).and_then(|&k| kind_def(K(k))) else {
            return;
        };
        let Some(at) = def.field("parent_span_id").and_then(|f| f.offset) else {
            return;
        };
        let (Some(p), Some(ts)) = (data.get(at..at + 8), data.get(4..12)) else {
            return;
        };
        let parent = u64::from_le_bytes(p.try_into().unwrap_or_default());
        if parent & TRACING_ENTRY_ID_BIT == 0 {
            return;
        }
        let start = i64::from_le_bytes(ts.try_into().unwrap_or_default());
        let list = self.orphans.entry(data[3]).or_default();
        if list.iter().any(|&(p, _)| p == parent) {
            return;
        }
        if list.len() >= ORPHANS {
            // Parents never met (their entries lost): the oldest go first.
            list.remove(0);
        }
        list.push((parent, start));
    }

    /// The TracingSpan a TracingEntry `data` stands for (see the module), padded to 4 bytes;
    /// `None` if it is no TracingEntry.
    pub fn resolve_entry(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        let (h, Record::TracingEntry { duration_ns, key }) = records::decode(data).ok()? else {
            return None;
        };
        let (start, end) = (h.timestamp, h.timestamp.saturating_add(duration_ns.max(0)));
        let list = self.orphans.entry(h.slot).or_default();
        let span_id = match list.iter().position(|&(_, t)| t >= start && t <= end) {
            Some(i) => list.remove(i).0,
            None => {
                self.own_ids += 1;
                (h.slot as u64) << 56 | 3 << 54 | (self.own_ids & ((1 << 54) - 1))
            }
        };
        let name = match self.get(key) {
            Some(n) => n,
            None => {
                self.unresolved += 1;
                Arc::from(format!("span#{key}"))
            }
        };
        let span = SpanExt {
            duration_ns,
            span_id,
            parent_span_id: 0,
        };
        let mut out = vec![0u8; records::tracing_span_len(&name) + 3];
        let n = records::write_tracing_span(&mut out, h.slot, h.timestamp, &span, key, 0, &name)
            .ok()?;
        out.truncate(n.next_multiple_of(4));
        Some(out)
    }

    /// The entry `data` with its span's name, padded to 4 bytes as records are read, if it is a
    /// TracingSpan written without one; `None` for any other record (one with its name, or one
    /// that does not decode: readers take it as it is).
    pub fn resolve(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        let (
            h,
            Record::TracingSpan {
                span,
                key,
                tracing_id,
                name: "",
            },
        ) = records::decode(data).ok()?
        else {
            return None;
        };
        let name = match self.get(key) {
            Some(n) => n,
            None => {
                self.unresolved += 1;
                Arc::from(format!("span#{key}"))
            }
        };
        let mut out = vec![0u8; records::tracing_span_len(&name) + 3];
        let n = records::write_tracing_span(
            &mut out,
            h.slot,
            h.timestamp,
            &span,
            key,
            tracing_id,
            &name,
        )
        .ok()?;
        out.truncate(n.next_multiple_of(4));
        Some(out)
    }
}

/// The name a span of callsite `name` with field names `fields` and `values` shows:
/// `"{name}: {value}"` when it has a `name` field (its string as it is), else `name`. The
/// layer's display name, made from what the file holds.
pub(crate) fn display_name(name: &str, fields: &[&str], values: &[u8]) -> String {
    match records::value_text(values, fields, "name") {
        Some(v) => format!("{name}: {v}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use records::SpanExt;

    fn entry(key: u64, name: &str) -> Vec<u8> {
        let span = SpanExt {
            duration_ns: 1,
            span_id: 2,
            parent_span_id: 0,
        };
        let mut d = vec![0u8; 128];
        let n = records::write_tracing_span(&mut d, 1, 0, &span, key, 7, name).unwrap();
        d.truncate(n);
        d
    }

    fn name_of(d: &[u8]) -> String {
        match records::decode(d).unwrap().1 {
            Record::TracingSpan { name, .. } => name.to_string(),
            r => panic!("{r:?}"),
        }
    }

    /// An entry with its name is left as it is; one whose span is unknown shows its key, and
    /// is counted.
    #[test]
    fn an_unknown_span_shows_its_key_and_is_counted() {
        let mut names = SpanNames::default();
        assert_eq!(names.resolve(&entry(3, "kept")), None);
        assert_eq!(name_of(&names.resolve(&entry(3, "")).unwrap()), "span#3");
        assert_eq!(names.unresolved, 1);
        names.learn(3, "late\0r");
        assert_eq!(
            name_of(&names.resolve(&entry(3, "")).unwrap()),
            "late\u{FFFD}r"
        );
        assert_eq!(names.unresolved, 1);
    }

    fn compact(slot: u8, ts: i64, dur: i64, key: u64) -> Vec<u8> {
        let mut d = vec![0u8; 28];
        records::write_tracing_entry(&mut d, slot, ts, dur, key).unwrap();
        d
    }

    fn native(slot: u8, ts: i64, parent: u64) -> Vec<u8> {
        let span = SpanExt {
            duration_ns: 1,
            span_id: (slot as u64) << 56 | 50,
            parent_span_id: parent,
        };
        let mut d = vec![0u8; 64];
        let n = records::write_named_span(&mut d, slot, ts, &span, "n").unwrap();
        d.truncate(n);
        d
    }

    fn handed(d: &[u8]) -> (SpanExt, u64, String) {
        match records::decode(d).unwrap().1 {
            Record::TracingSpan {
                span,
                key,
                tracing_id: 0,
                name,
            } => (span, key, name.to_string()),
            r => panic!("{r:?}"),
        }
    }

    /// A compact entry takes the id a native span inside it named (a span of its slot, within
    /// its time, earlier in the stream), else one of its own; its name is its span's.
    #[test]
    fn a_compact_entry_takes_the_id_its_native_child_names() {
        let mut names = SpanNames::default();
        names.learn(7, "task");
        let p = 1u64 << 56 | TRACING_ENTRY_ID_BIT | 9;
        names.note_span(&native(1, 150, p));
        // Another slot's entry, and one of this slot before the child: not its parent.
        let (other, _, _) = handed(&names.resolve_entry(&compact(2, 100, 100, 7)).unwrap());
        let (before, _, _) = handed(&names.resolve_entry(&compact(1, 10, 20, 7)).unwrap());
        let (e, key, name) = handed(&names.resolve_entry(&compact(1, 100, 100, 7)).unwrap());
        assert_eq!((e.span_id, e.parent_span_id, e.duration_ns), (p, 0, 100));
        assert_eq!((key, name.as_str()), (7, "task"));
        for own in [other.span_id, before.span_id] {
            assert_ne!(own, p);
            assert_eq!(own >> 54 & 3, 3, "{own:x}");
        }
        assert_ne!(other.span_id, before.span_id);
        // Claimed once: the next entry gets its own.
        let (again, _, _) = handed(&names.resolve_entry(&compact(1, 100, 100, 7)).unwrap());
        assert_ne!(again.span_id, p);
        assert_eq!(names.resolve_entry(&native(1, 0, 0)), None);
        assert_eq!(names.unresolved, 0);
    }

    /// The table holds at most two generations of keys: a span used within the last one keeps
    /// its name, one untouched for two is forgotten.
    #[test]
    fn the_table_is_bounded_and_keeps_the_spans_in_use() {
        let mut names = SpanNames::default();
        names.learn(0, "long-lived");
        names.learn(1, "forgotten");
        for k in 2..(3 * SpanNames::CAP as u64) {
            names.learn(k, "short");
            if k % 1000 == 0 {
                assert!(names.resolve(&entry(0, "")).is_some());
            }
            assert!(names.new.len() + names.old.len() <= 2 * SpanNames::CAP);
        }
        assert_eq!(
            name_of(&names.resolve(&entry(0, "")).unwrap()),
            "long-lived"
        );
        assert_eq!(names.unresolved, 0);
        assert_eq!(name_of(&names.resolve(&entry(1, "")).unwrap()), "span#1");
        assert_eq!(names.unresolved, 1);
    }
}

//! Which trace each recorded span belongs to. A TracedSpan names its own trace (its context);
//! a NamedSpan or a `tracing` span belongs to its parent's trace, and a top-level one starts a
//! local trace of its own. Spans arrive at their end, children before their parent, so a span
//! whose trace is not yet known waits under its parent's id until the parent (or an ancestor
//! with a known trace) arrives; memory is the subtrees of the spans still open, capped at
//! [`MAX_WAITING`] (beyond it the oldest subtrees go out in local traces of their own, counted
//! as `split`).
//!
//! A `tracing` span (see `tracing`) is one OTLP span for all its entries, written when it is
//! over, long after its children: it takes part as a node (`Trees::node`, from its first
//! entry read) that learns its trace as a span would and hands it on to the spans under it; an
//! entry's recorded id is an alias of its span's (`Trees::alias`), so the spans an entry holds
//! are children of the `tracing` span.

use super::super::fnv::FnvMap;
use super::batch::Batch;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::collections::HashSet;
use std::io;

/// Spans waiting for their trace at most.
pub const MAX_WAITING: usize = 1 << 16;
/// Resolved spans remembered for a child arriving after its parent (not nested in time: rare,
/// and close behind it).
const MAX_RECENT: usize = 1 << 12;

struct Waiting {
    /// `None`: a `tracing` span's node (its span is written later, [`Trees::ready`]).
    span: Option<Span>,
    id: u64,
    /// A node's parent (a span's is in the span).
    parent: u64,
}

pub(super) struct Trees {
    /// The recording's half of a local trace id (the other half is the root span's id).
    pub(super) local_key: u64,
    waiting: FnvMap<u64, Vec<Waiting>>,
    held: usize,
    recent: FnvMap<u64, [u8; 16]>,
    /// `tracing` spans still open whose trace is known: (trace, parent).
    open: FnvMap<u64, ([u8; 16], u64)>,
    /// `tracing` spans over whose node still waits for its trace.
    ready: FnvMap<u64, Span>,
    /// A `tracing` span's entries' recorded ids → its id (for spans arriving after the entry
    /// they lie in: rare, and close behind it).
    aliases: FnvMap<u64, u64>,
}

impl Trees {
    pub(super) fn new(local_key: u64) -> Self {
        Trees {
            local_key,
            waiting: FnvMap::default(),
            held: 0,
            recent: FnvMap::default(),
            open: FnvMap::default(),
            ready: FnvMap::default(),
            aliases: FnvMap::default(),
        }
    }

    /// The trace of span `id`, if known now.
    fn trace_of(&self, id: u64) -> Option<[u8; 16]> {
        self.recent
            .get(&id)
            .copied()
            .or_else(|| self.open.get(&id).map(|o| o.0))
    }

    /// The trace a link to span `id` names: its own if known, else the local trace it would
    /// root.
    pub(super) fn link_trace(&self, id: u64) -> [u8; 16] {
        self.trace_of(id).unwrap_or_else(|| self.local(id))
    }

    /// The span a recorded parent id stands for (an entry's: its `tracing` span's).
    fn parent_of(&self, recorded: u64) -> u64 {
        self.aliases.get(&recorded).copied().unwrap_or(recorded)
    }

    fn wait(&mut self, out: &mut Batch<'_>, parent: u64, w: Waiting) -> io::Result<()> {
        self.waiting.entry(parent).or_default().push(w);
        self.held += 1;
        out.stats.peak_waiting = out.stats.peak_waiting.max(self.held as u64);
        if self.held > MAX_WAITING {
            out.stats.split += self.release_all(out)?;
        }
        Ok(())
    }

    /// The `tracing` span `id` begins (its first entry read lies in span `parent`, 0 for
    /// none): it takes its parent's trace, or roots a local trace of its own.
    pub(super) fn node(&mut self, out: &mut Batch<'_>, id: u64, parent: u64) -> io::Result<()> {
        let parent = Some(self.parent_of(parent))
            .filter(|&p| p != id)
            .unwrap_or(0);
        let known = if parent == 0 {
            Some(self.local(id))
        } else {
            self.trace_of(parent)
        };
        match known {
            Some(t) => self.resolve_node(out, id, parent, t),
            None => self.wait(
                out,
                parent,
                Waiting {
                    span: None,
                    id,
                    parent,
                },
            ),
        }
    }

    /// Recorded span `entry` is an entry of the `tracing` span `id`: the spans waiting under it
    /// are `id`'s children.
    pub(super) fn alias(&mut self, out: &mut Batch<'_>, entry: u64, id: u64) -> io::Result<()> {
        if self.aliases.len() >= MAX_RECENT {
            self.aliases.clear();
        }
        self.aliases.insert(entry, id);
        let Some(group) = self.waiting.remove(&entry) else {
            return Ok(());
        };
        self.held -= group.len();
        let known = self.trace_of(id);
        for mut w in group {
            // A span entered inside its own entry is not its own parent.
            let p = if w.id == id { 0 } else { id };
            w.parent = p;
            if let Some(s) = w.span.as_mut() {
                s.parent_span_id = super::values::span_id(p);
            }
            match (w.span.take(), known) {
                (None, _) if p == 0 => self.resolve_node(out, w.id, 0, self.local(w.id))?,
                (None, Some(t)) => self.resolve_node(out, w.id, p, t)?,
                (Some(s), Some(t)) => self.resolve(out, s, w.id, t)?,
                (span, None) => self.wait(out, p, Waiting { span, ..w })?,
            }
        }
        Ok(())
    }

    /// The `tracing` span `id` is over: written now if its trace is known, else when its
    /// node learns it.
    pub(super) fn ready(&mut self, out: &mut Batch<'_>, mut span: Span, id: u64) -> io::Result<()> {
        match self.open.remove(&id) {
            Some((t, parent)) => {
                span.parent_span_id = super::values::span_id(parent);
                span.trace_id = t.to_vec();
                self.remember(id, t);
                out.push(span)
            }
            None => {
                self.ready.insert(id, span);
                Ok(())
            }
        }
    }

    /// Node `id` (under `parent`) is in trace `t`: so are the spans waiting under it.
    fn resolve_node(
        &mut self,
        out: &mut Batch<'_>,
        id: u64,
        parent: u64,
        t: [u8; 16],
    ) -> io::Result<()> {
        match self.ready.remove(&id) {
            Some(mut s) => {
                s.parent_span_id = super::values::span_id(parent);
                s.trace_id = t.to_vec();
                out.push(s)?;
                self.remember(id, t);
            }
            None => {
                self.open.insert(id, (t, parent));
            }
        }
        self.descendants(out, id, t)
    }

    /// The local trace rooted at span `root`.
    pub(super) fn local(&self, root: u64) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.local_key.to_be_bytes());
        b[8..].copy_from_slice(&root.to_be_bytes());
        b
    }

    /// Span `id` with recorded parent `parent`; `own`: the trace it names itself (a
    /// TracedSpan), else it takes its parent's.
    pub(super) fn span(
        &mut self,
        out: &mut Batch<'_>,
        span: Span,
        id: u64,
        parent: u64,
        own: Option<[u8; 16]>,
    ) -> io::Result<()> {
        let mut span = span;
        let parent = match self.aliases.get(&parent) {
            Some(&p) => {
                span.parent_span_id = super::values::span_id(p);
                p
            }
            None => parent,
        };
        let known = own
            .or_else(|| (parent == 0).then(|| self.local(id)))
            .or_else(|| self.trace_of(parent));
        match known {
            Some(t) => self.resolve(out, span, id, t),
            None => self.wait(
                out,
                parent,
                Waiting {
                    span: Some(span),
                    id,
                    parent,
                },
            ),
        }
    }

    fn resolve(
        &mut self,
        out: &mut Batch<'_>,
        mut span: Span,
        id: u64,
        t: [u8; 16],
    ) -> io::Result<()> {
        span.trace_id = t.to_vec();
        out.push(span)?;
        self.remember(id, t);
        self.descendants(out, id, t)
    }

    /// The spans (and nodes) waiting under `id`, and theirs, take trace `t`.
    fn descendants(&mut self, out: &mut Batch<'_>, id: u64, t: [u8; 16]) -> io::Result<()> {
        let mut stack = vec![id];
        while let Some(p) = stack.pop() {
            for w in self.waiting.remove(&p).unwrap_or_default() {
                self.held -= 1;
                match w.span {
                    Some(mut s) => {
                        s.trace_id = t.to_vec();
                        out.push(s)?;
                        self.remember(w.id, t);
                    }
                    None => match self.ready.remove(&w.id) {
                        Some(mut s) => {
                            s.parent_span_id = super::values::span_id(w.parent);
                            s.trace_id = t.to_vec();
                            out.push(s)?;
                            self.remember(w.id, t);
                        }
                        None => {
                            self.open.insert(w.id, (t, w.parent));
                        }
                    },
                }
                stack.push(w.id);
            }
        }
        Ok(())
    }

    fn remember(&mut self, id: u64, t: [u8; 16]) {
        if self.recent.len() >= MAX_RECENT {
            self.recent.clear();
        }
        self.recent.insert(id, t);
    }

    /// Writes every waiting span: the subtrees under each absent parent in the local trace
    /// named after that parent (the span keeps it as its parent: a viewer shows the gap).
    /// Returns how many spans had an absent parent.
    pub(super) fn release_all(&mut self, out: &mut Batch<'_>) -> io::Result<u64> {
        let mut n = 0u64;
        while !self.waiting.is_empty() {
            let ids: HashSet<u64> = self.waiting.values().flatten().map(|w| w.id).collect();
            let mut roots: Vec<u64> = self
                .waiting
                .keys()
                .filter(|k| !ids.contains(k))
                .copied()
                .collect();
            if roots.is_empty() {
                // Only parents that wait on each other are left (a hostile file): every key
                // breaks its cycle, so this pass empties the map.
                roots.extend(self.waiting.keys().copied());
            }
            roots.sort_unstable();
            for p in roots {
                let Some(group) = self.waiting.remove(&p) else {
                    continue;
                };
                let t = self.local(p);
                for w in group {
                    self.held -= 1;
                    n += 1;
                    match w.span {
                        Some(s) => self.resolve(out, s, w.id, t)?,
                        None => self.resolve_node(out, w.id, w.parent, t)?,
                    }
                }
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::otlp::OtlpStats;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

    /// Runs `f` with a batch whose requests land in the returned spans (by span id: trace id,
    /// parent id).
    fn run(f: impl FnOnce(&mut Trees, &mut Batch<'_>)) -> (Vec<(u64, [u8; 16], u64)>, OtlpStats) {
        let mut got = Vec::new();
        let mut out = |r: ExportTraceServiceRequest, _: u64| -> io::Result<()> {
            for s in r.resource_spans[0].scope_spans[0].spans.iter() {
                let id = u64::from_be_bytes(s.span_id[..].try_into().unwrap());
                let p = match s.parent_span_id.len() {
                    0 => 0,
                    _ => u64::from_be_bytes(s.parent_span_id[..].try_into().unwrap()),
                };
                got.push((id, s.trace_id[..].try_into().unwrap(), p));
            }
            Ok(())
        };
        let stats = {
            let mut b = Batch {
                resource: Default::default(),
                scope: Default::default(),
                spans: Vec::new(),
                max: 7,
                out: &mut out,
                stats: OtlpStats::default(),
            };
            let mut t = Trees::new(0xABCD);
            f(&mut t, &mut b);
            b.stats.orphans = t.release_all(&mut b).unwrap();
            b.flush().unwrap();
            assert_eq!(t.held, 0);
            b.stats
        };
        got.sort();
        (got, stats)
    }

    fn s(t: &mut Trees, b: &mut Batch<'_>, id: u64, parent: u64) {
        let sp = crate::export::otlp::values::span([0; 16], id, parent, "x", 1, (0, 1));
        t.span(b, sp, id, parent, None).unwrap();
    }

    #[test]
    fn children_take_the_trace_their_top_level_ancestor_roots() {
        let (got, st) = run(|t, b| {
            s(t, b, 3, 2); // grandchild first, as spans arrive at their end
            s(t, b, 4, 2);
            s(t, b, 2, 1);
            s(t, b, 1, 0);
            s(t, b, 5, 0);
        });
        let l1 = Trees::new(0xABCD).local(1);
        assert_eq!(
            got,
            vec![
                (1, l1, 0),
                (2, l1, 1),
                (3, l1, 2),
                (4, l1, 2),
                (5, Trees::new(0xABCD).local(5), 0)
            ]
        );
        assert_eq!((st.orphans, st.split, st.peak_waiting), (0, 0, 3));
    }

    #[test]
    fn absent_parents_and_cycles_are_written_once_and_counted() {
        let (got, st) = run(|t, b| {
            s(t, b, 10, 99); // parent never arrives
            s(t, b, 11, 10);
            s(t, b, 20, 21); // 20 and 21 wait on each other
            s(t, b, 21, 20);
        });
        let ids: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(ids, vec![10, 11, 20, 21]);
        let l99 = Trees::new(0xABCD).local(99);
        assert_eq!(got[0], (10, l99, 99));
        assert_eq!(got[1], (11, l99, 10));
        assert_eq!(got[2].1, got[3].1, "a cycle stays in one trace");
        assert_eq!(st.orphans, 2, "10 under 99, and the cycle's first span");
    }

    /// `tracing` spans: T1 (entry 30) holds the NamedSpan 31 and the `tracing` span T2 (entry
    /// 32), and lies in "frame" 20, which is in the W3C trace W; T3's entry 40 lies in an entry
    /// of itself (41). Entries arrive before what holds them, spans are over long after.
    #[test]
    fn tracing_spans_are_nodes_their_entries_aliases() {
        let w: [u8; 16] = [7; 16];
        let (t1, t2, t3) = (
            0x0040_0000_0000_0001,
            0x0040_0000_0000_0002,
            0x0040_0000_0000_0003,
        );
        let (got, st) = run(|t, b| {
            s(t, b, 31, 30); // a NamedSpan in T1's entry
            t.alias(b, 32, t2).unwrap(); // T2's entry, in T1's entry 30
            t.node(b, t2, 30).unwrap();
            t.alias(b, 30, t1).unwrap(); // T1's entry, in "frame"
            t.node(b, t1, 20).unwrap();
            let ready = |t: &mut Trees, b: &mut Batch<'_>, id| {
                let sp = crate::export::otlp::values::span([0; 16], id, 0, "x", 1, (0, 1));
                t.ready(b, sp, id).unwrap();
            };
            ready(t, b, t2); // over before its trace is known: written when it is
            let frame = crate::export::otlp::values::span([0; 16], 20, 10, "frame", 1, (0, 1));
            t.span(b, frame, 20, 0, Some(w)).unwrap(); // a TracedSpan: W
            ready(t, b, t1);
            t.alias(b, 40, t3).unwrap();
            t.node(b, t3, 41).unwrap();
            t.alias(b, 41, t3).unwrap(); // its own outer entry: no parent of itself
            ready(t, b, t3);
        });
        let l3 = Trees::new(0xABCD).local(t3);
        assert_eq!(
            got,
            vec![
                (20, w, 10),
                (31, w, t1),
                (t1, w, 20),
                (t2, w, t1),
                (t3, l3, 0)
            ]
        );
        assert_eq!((st.orphans, st.split), (0, 0));
    }

    #[test]
    fn too_many_waiting_go_out_split_and_counted() {
        let n = MAX_WAITING as u64 + 1;
        let (got, st) = run(|t, b| {
            for id in 0..n {
                s(t, b, 1000 + id, 7);
            }
        });
        assert_eq!(got.len() as u64, n);
        assert_eq!((st.split, st.orphans), (n, 0));
        assert_eq!(st.peak_waiting, n);
    }
}

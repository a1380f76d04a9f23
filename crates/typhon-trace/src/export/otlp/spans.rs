//! Which trace each recorded span belongs to. A TracedSpan names its own trace (its context);
//! a NamedSpan or a `tracing` span belongs to its parent's trace, and a top-level one starts a
//! local trace of its own. Spans arrive at their end, children before their parent, so a span
//! whose trace is not yet known waits under its parent's id until the parent (or an ancestor
//! with a known trace) arrives; memory is the subtrees of the spans still open, capped at
//! [`MAX_WAITING`] (beyond it the oldest subtrees go out in local traces of their own, counted
//! as `split`).

use super::super::fnv::FnvMap;
use super::batch::Batch;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::collections::HashSet;
use std::io;

/// Spans waiting for their trace at most.
pub(super) const MAX_WAITING: usize = 1 << 16;
/// Resolved spans remembered for a child arriving after its parent (not nested in time).
const MAX_RECENT: usize = 1 << 16;

struct Waiting {
    span: Span,
    id: u64,
}

pub(super) struct Trees {
    /// The recording's half of a local trace id (the other half is the root span's id).
    pub(super) local_key: u64,
    waiting: FnvMap<u64, Vec<Waiting>>,
    held: usize,
    recent: FnvMap<u64, [u8; 16]>,
}

impl Trees {
    pub(super) fn new(local_key: u64) -> Self {
        Trees {
            local_key,
            waiting: FnvMap::default(),
            held: 0,
            recent: FnvMap::default(),
        }
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
        let known = own
            .or_else(|| (parent == 0).then(|| self.local(id)))
            .or_else(|| self.recent.get(&parent).copied());
        match known {
            Some(t) => self.resolve(out, span, id, t),
            None => {
                self.waiting
                    .entry(parent)
                    .or_default()
                    .push(Waiting { span, id });
                self.held += 1;
                if self.held > MAX_WAITING {
                    out.stats.split += self.release_all(out)?;
                }
                Ok(())
            }
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
        // Its waiting descendants take its trace.
        let mut stack = vec![id];
        while let Some(p) = stack.pop() {
            for w in self.waiting.remove(&p).unwrap_or_default() {
                self.held -= 1;
                let mut s = w.span;
                s.trace_id = t.to_vec();
                out.push(s)?;
                self.remember(w.id, t);
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
                // Parents that wait on each other (a hostile file): break the cycle.
                roots.extend(self.waiting.keys().min().copied());
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
                    self.resolve(out, w.span, w.id, t)?;
                }
            }
        }
        Ok(n)
    }
}

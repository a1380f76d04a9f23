//! Window mode's hooks in the flusher (SPEC §16): the snapshot's cut, the triggers watched on
//! spans and ticks, and each slot's owners noted for a snapshot's ThreadInfo.

use super::place::patch_times;
use super::{Flusher, DUR, TS};
use crate::codec::TraceEventKind;
use crate::write::slots::ACTIVE;

impl Flusher {
    /// Window mode: the cut of a snapshot at `t1` (`raw` in ticks). The spans open now end at
    /// `t1`; every open page goes to the window, so that the cut holds every record drained.
    #[cold]
    pub(super) fn cut(&mut self, req: crate::window::Pending, raw: u64, t1: u64, hw: usize) {
        let mut open = Vec::new();
        for i in 1..hw {
            let slot = i as u8;
            if self.core.registry.state_for_service(slot) != ACTIVE {
                continue;
            }
            let recs: Vec<Vec<u8>> = self
                .core
                .registry
                .open_spans(slot, raw)
                .into_iter()
                .filter_map(|mut r| {
                    if r.len() < DUR + 8 {
                        return None;
                    }
                    let start = i64::from_le_bytes(r[TS..TS + 8].try_into().unwrap()) as u64;
                    let ts = self.core.clock.to_ns(start);
                    // A span begun after the cut is not open at it.
                    (ts <= t1).then(|| {
                        patch_times(&mut r, ts, Some(t1.saturating_sub(ts) as i64));
                        r
                    })
                })
                .collect();
            if !recs.is_empty() {
                open.push((slot, recs));
            }
        }
        for i in 0..hw {
            self.emit_page(i as u8);
        }
        let session = crate::window::Session {
            page_size: self.core.page_size,
            wall_anchor_ns: self.core.clock.wall_anchor_ns(),
            mono_anchor_ns: self.core.clock.monotonic_anchor_ns(),
            definitions: self.core.definition_records(),
            slot_names: (0..hw)
                .map(|i| self.core.registry.name_definitions(i as u8, 0).0)
                .collect(),
            clock_now: {
                let (ts, mono, wall) = self.clock_reading();
                crate::window::ClockReading { ts, mono, wall }
            },
        };
        if let Some(w) = self.window.as_mut() {
            w.cut(req, t1, open, session);
        }
    }

    /// Window mode's triggers, on a span, a TickStart or a TickEnd.
    #[cold]
    pub(super) fn watch(
        &mut self,
        slot: u8,
        r: &[u8],
        kind: u8,
        ts: u64,
        end: u64,
        dur: Option<i64>,
    ) {
        let Some(w) = self.window.as_mut() else {
            return;
        };
        let fired = if kind == TraceEventKind::TICK_START.0 {
            w.rules.tick_start(slot, ts);
            None
        } else if kind == TraceEventKind::TICK_END.0 {
            w.rules.tick_end(slot, ts)
        } else if let (Some(d), true) = (dur, w.rules.watches_spans()) {
            w.rules.span(d.max(0) as u64, end, || span_name(r))
        } else {
            None
        };
        if let Some((i, keep_after)) = fired {
            let reason = w.rules.describe(i);
            if !self.core.request_snapshot(&reason, keep_after, None) {
                w.rules.unfire(i);
            }
        }
    }
}

/// The inline name of a span record (NamedSpan, TracedSpan, TracingSpan).
pub(super) fn span_name(r: &[u8]) -> Option<Vec<u8>> {
    use crate::codec::records::Record;
    match crate::codec::records::decode(r).ok()?.1 {
        Record::NamedSpan { name, .. }
        | Record::TracedSpan { name, .. }
        | Record::TracingSpan { name, .. } => Some(name.as_bytes().to_vec()),
        _ => None,
    }
}

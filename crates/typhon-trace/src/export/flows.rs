//! The flows that tie a command's correlated events together (IngressReceived →
//! IngressAdmitted → its TracedSpan → CommandConsumed, or IngressDropped), by (session, seq),
//! so a viewer draws the command's path across threads. Streaming: a flow's first event is
//! held until its second arrives (a flow of one event links nothing and is written without
//! one), so what is held is one event per command in flight.

use super::engine::{Held, Item, Kind, Sink};
use super::fnv::FnvMap;
use std::io;
use typhon_recorder::codec::correlation::{command_of_causal_id, CorrelationInstant};
use typhon_recorder::codec::records::{self, Record as Body};

/// A command's open flow.
struct Open {
    id: u64,
    stage: u8, // 0 received, 1 admitted, 2 in its span, 3 consumed
    drain_tick: Option<u32>,
    /// Its first event, until a second joins it.
    held: Option<Held>,
}

/// The open flows by (session, seq), and the `follows_from` links waiting for their span.
#[derive(Default)]
pub(super) struct Flows {
    open: FnvMap<(u32, u16), Open>,
    /// By the key of the span that follows: the TracingFollows instant, held until the span's
    /// next entry arrives (a link is those two events).
    follows: FnvMap<u64, Held>,
    next: u64,
}

impl Flows {
    /// Passes `it` on to `sink`, with its flow: IngressReceived always starts a flow;
    /// IngressAdmitted continues one that has only been received; a TracedSpan carrying the
    /// command's causal id continues one not yet past admission whose drain tick (from
    /// IngressAdmitted) does not contradict its own, or one already past it with the same
    /// drain tick (several systems may work on one command; the span arrives at its end, after
    /// what happened inside it); CommandConsumed continues any; IngressDropped continues and
    /// ends one that has only been received. Any other event starts a new flow, so a wrapped
    /// seq or a repeated IngressReceived starts afresh. Flows follow the records that are
    /// there: with records lost, a flow stops short. `flows` counts the flows written (those
    /// of two events or more).
    pub(super) fn step(
        &mut self,
        sink: &mut impl Sink,
        mut it: Item<'_>,
        flows: &mut u64,
    ) -> io::Result<()> {
        use CorrelationInstant as C;
        let Some((rec, _)) = it.rec else {
            return sink.item(&it);
        };
        let (key, stage, tick) = match (it.kind, records::decode(rec)) {
            (Kind::Instant, Ok((_, Body::Correlation(c)))) => match c {
                C::IngressReceived { session, seq, .. } => ((session, seq), 0, None),
                C::IngressAdmitted {
                    session,
                    seq,
                    drain_tick,
                    ..
                } => ((session, seq), 1, Some(drain_tick)),
                C::CommandConsumed { session, seq, .. } => ((session, seq), 3, None),
                C::IngressDropped { session, seq, .. } => ((session, seq), 4, None),
                C::EgressSent { .. } => return sink.item(&it),
            },
            (Kind::Slice, Ok((_, Body::TracedSpan { context, .. }))) => {
                match command_of_causal_id(context.hi, context.lo) {
                    Some((session, drain_tick, seq)) => ((session, seq), 2, Some(drain_tick)),
                    None => return sink.item(&it),
                }
            }
            (Kind::Instant, Ok((_, Body::TracingFollows { key, .. }))) => {
                if let Some(old) = self.follows.insert(key, Held::of(&it)) {
                    sink.item(&old.item(0))?;
                }
                return Ok(());
            }
            (Kind::Slice, Ok((_, Body::TracingSpan { key, .. }))) => {
                let Some(h) = self.follows.remove(&key) else {
                    return sink.item(&it);
                };
                self.next += 1;
                *flows += 1;
                sink.item(&h.item(self.next))?;
                it.flow = self.next;
                return sink.item(&it);
            }
            _ => return sink.item(&it),
        };
        // Whether the event continues the open flow, and the drain tick the flow then has.
        let (cont, tick) = match (self.open.get(&key), stage) {
            (Some(o), 1) => (o.stage == 0, tick),
            (Some(o), 2) => (
                if o.stage <= 1 {
                    o.drain_tick.map_or(true, |t| Some(t) == tick)
                } else {
                    o.drain_tick == tick
                },
                tick,
            ),
            (Some(o), 3) => (true, o.drain_tick),
            (Some(o), 4) => (o.stage == 0, None),
            _ => (false, tick),
        };
        if stage == 4 && !cont {
            // A drop that continues nothing starts a flow of one: no flow.
            return sink.item(&it);
        }
        if cont {
            let Some(o) = self.open.get_mut(&key) else {
                return sink.item(&it);
            };
            it.flow = o.id;
            if let Some(h) = o.held.take() {
                *flows += 1;
                sink.item(&h.item(o.id))?;
            }
            sink.item(&it)?;
            if stage == 4 {
                // A drop ends the flow it continued.
                self.open.remove(&key);
            } else {
                o.stage = stage.min(3);
                o.drain_tick = tick;
            }
            return Ok(());
        }
        // A new flow: the old one's lone event (if any) is written without one.
        self.next += 1;
        let old = self.open.insert(
            key,
            Open {
                id: self.next,
                stage: stage.min(3),
                drain_tick: tick,
                held: Some(Held::of(&it)),
            },
        );
        if let Some(h) = old.and_then(|o| o.held) {
            sink.item(&h.item(0))?;
        }
        Ok(())
    }

    /// Writes the lone first events still held, without a flow.
    pub(super) fn finish(&mut self, sink: &mut impl Sink) -> io::Result<()> {
        let mut held: Vec<((u32, u16), Held)> = self
            .open
            .drain()
            .filter_map(|(k, o)| Some((k, o.held?)))
            .collect();
        held.sort_unstable_by_key(|h| h.0);
        for (_, h) in held {
            sink.item(&h.item(0))?;
        }
        let mut follows: Vec<(u64, Held)> = self.follows.drain().collect();
        follows.sort_unstable_by_key(|h| h.0);
        for (_, h) in follows {
            sink.item(&h.item(0))?;
        }
        Ok(())
    }
}

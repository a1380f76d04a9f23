//! The flows that tie a command's correlated events together (IngressReceived →
//! IngressAdmitted → its TracedSpan → CommandConsumed, or IngressDropped), by (session, seq),
//! so a viewer draws the command's path across threads.
//!
//! The events of a command are linked in time order, but they do not arrive in it: a span
//! arrives at its end, after what happened inside it, and caller timestamps may be written in
//! any order. So the events that can join a flow (the correlation instants but EgressSent, and
//! the TracedSpans carrying a command's causal id) are held, per command, and linked at the end
//! of the export, each command's in time order; everything else streams. What stays resident
//! is those events' records, not the recording.

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

/// A command's key (session, seq), and the events of it held until the end, with their stages.
type Key = (u32, u16);
type HeldEvents = Vec<(u8, Held)>;

/// The open flows by (session, seq).
#[derive(Default)]
pub(super) struct Flows {
    open: FnvMap<(u32, u16), Open>,
    /// The events that can join a flow, per command, until [`Flows::finish`].
    held: FnvMap<Key, HeldEvents>,
    /// By the key of the span that follows: the TracingFollows instant, held until the span's
    /// next entry arrives (a link is those two events).
    follows: FnvMap<u64, Held>,
    next: u64,
}

/// What a flow-relevant event is: its command, its stage (0 received, 1 admitted, 2 a span of
/// the command, 3 consumed, 4 dropped) and its drain tick when it carries one.
fn classify(it: &Item<'_>) -> Option<((u32, u16), u8, Option<u32>)> {
    use CorrelationInstant as C;
    let (rec, _) = it.rec?;
    match (it.kind, records::decode(rec)) {
        (Kind::Instant, Ok((_, Body::Correlation(c)))) => match c {
            C::IngressReceived { session, seq, .. } => Some(((session, seq), 0, None)),
            C::IngressAdmitted {
                session,
                seq,
                drain_tick,
                ..
            } => Some(((session, seq), 1, Some(drain_tick))),
            C::CommandConsumed { session, seq, .. } => Some(((session, seq), 3, None)),
            C::IngressDropped { session, seq, .. } => Some(((session, seq), 4, None)),
            C::EgressSent { .. } => None,
        },
        (Kind::Slice, Ok((_, Body::TracedSpan { context, .. }))) => {
            let (session, drain_tick, seq) = command_of_causal_id(context.hi, context.lo)?;
            Some(((session, seq), 2, Some(drain_tick)))
        }
        _ => None,
    }
}

impl Flows {
    /// Passes `it` on to `sink`, or holds it for [`Flows::finish`] when it can join a flow.
    pub(super) fn step(&mut self, sink: &mut impl Sink, mut it: Item<'_>) -> io::Result<()> {
        if let Some((rec, _)) = it.rec {
            match (it.kind, records::decode(rec)) {
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
                    sink.item(&h.item(self.next))?;
                    it.flow = self.next;
                    return sink.item(&it);
                }
                _ => {}
            }
        }
        match classify(&it) {
            None => sink.item(&it),
            Some((key, stage, _)) => {
                self.held
                    .entry(key)
                    .or_default()
                    .push((stage, Held::of(&it)));
                Ok(())
            }
        }
    }

    /// Links each command's held events in time order and writes them: IngressReceived always
    /// starts a flow; IngressAdmitted continues one that has only been received; a TracedSpan
    /// carrying the command's causal id continues one not yet past admission whose drain tick
    /// (from IngressAdmitted) does not contradict its own, or one already past it with the same
    /// drain tick (several systems may work on one command); CommandConsumed continues any;
    /// IngressDropped continues and ends one that has only been received. Any other event
    /// starts a new flow, so a wrapped seq or a repeated IngressReceived starts afresh. Flows
    /// follow the records that are there: with records lost, a flow stops short. `flows`
    /// counts the flows written (those of two events or more).
    pub(super) fn finish(&mut self, sink: &mut impl Sink, flows: &mut u64) -> io::Result<()> {
        let mut held: Vec<(Key, HeldEvents)> = self.held.drain().collect();
        held.sort_unstable_by_key(|h| h.0);
        for (key, mut events) in held {
            // Time order; at one time, the order of the command's stages.
            events.sort_by_key(|(stage, h)| (h.ts, *stage));
            for (_, h) in &events {
                let it = h.item(0);
                if let Some((_, stage, tick)) = classify(&it) {
                    self.link(sink, key, stage, tick, it, flows)?;
                }
            }
            // The lone first event still held, without a flow.
            if let Some(h) = self.open.remove(&key).and_then(|o| o.held) {
                sink.item(&h.item(0))?;
            }
        }
        let mut follows: Vec<(u64, Held)> = self.follows.drain().collect();
        follows.sort_unstable_by_key(|h| h.0);
        for (_, h) in follows {
            sink.item(&h.item(0))?;
        }
        Ok(())
    }

    fn link(
        &mut self,
        sink: &mut impl Sink,
        key: (u32, u16),
        stage: u8,
        tick: Option<u32>,
        mut it: Item<'_>,
        flows: &mut u64,
    ) -> io::Result<()> {
        // Whether the event continues the open flow, and the drain tick the flow then has.
        let (cont, tick) = match (self.open.get(&key), stage) {
            (Some(o), 1) => (o.stage == 0, tick),
            (Some(o), 2) => (
                if o.stage <= 1 {
                    o.drain_tick.is_none_or(|t| Some(t) == tick)
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
}

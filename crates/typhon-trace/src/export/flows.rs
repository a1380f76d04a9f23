//! The flows that tie a command's correlated events together (IngressReceived →
//! IngressAdmitted → its TracedSpan → CommandConsumed, or IngressDropped), by (session, seq),
//! so a viewer draws the command's path across threads; and the `follows_from` links of
//! `tracing` spans.
//!
//! Events reach the flows in time order (`reorder` hands them out so), and each is linked as
//! it passes: the first event of a flow gets the flow's id at once (an id that no second
//! event joins links nothing in a viewer), so no event is held here. What is kept is each
//! command in flight (its stage, drain tick and id) and each pending `follows_from`, both
//! bounded: a flow idle for [`IDLE`] of the events' time, or the oldest beyond [`OPEN_CAP`],
//! ends there (counted in `unfinished_flows` if it never reached its CommandConsumed or
//! IngressDropped); an event of its command after that starts a new flow.

use super::engine::{Item, Kind, Sink};
use super::fnv::FnvMap;
use super::timeline::TimelineStats;
use std::collections::VecDeque;
use std::io;
use typhon_recorder::codec::correlation::{command_of_causal_id, CorrelationInstant};
use typhon_recorder::codec::records::{self, Record as Body};

/// Event time after which a command's flow with no new event ends: 15 frames at 60 Hz, far
/// longer than a command takes from its reception to its last system. (Memory is the flows
/// begun within it, so it is kept short.)
pub(super) const IDLE: u64 = 250_000_000;

/// Flows (and pending `follows_from` links) kept at most.
pub(super) const OPEN_CAP: usize = 1 << 15;

/// A command's open flow.
struct Open {
    id: u64,
    stage: u8, // 0 received, 1 admitted, 2 in its span, 3 consumed
    drain_tick: Option<u32>,
    /// Events in the flow so far.
    events: u32,
    /// Its latest event's time.
    last: u64,
}

/// A command's key (session, seq).
type Key = (u32, u16);

/// The open flows by (session, seq).
#[derive(Default)]
pub(super) struct Flows {
    open: FnvMap<Key, Open>,
    /// Flows in the order of their latest event, with that event's time and the flow's id
    /// (an entry whose flow has moved on or ended is skipped).
    order: VecDeque<(u64, Key, u64)>,
    /// By the key of the span that follows: the flow id a TracingFollows instant started,
    /// until that span's next entry joins it.
    follows: FnvMap<u64, u64>,
    /// Pending links in the order they were made (key, id).
    follows_order: VecDeque<(u64, u64)>,
    next: u64,
}

/// What a flow-relevant event is: its command, its stage (0 received, 1 admitted, 2 a span of
/// the command, 3 consumed, 4 dropped) and its drain tick when it carries one.
fn classify(kind: Kind, body: &Body<'_>) -> Option<(Key, u8, Option<u32>)> {
    use CorrelationInstant as C;
    match (kind, body) {
        (Kind::Instant, Body::Correlation(c)) => match *c {
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
        (Kind::Slice, Body::TracedSpan { context, .. }) => {
            let (session, drain_tick, seq) = command_of_causal_id(context.hi, context.lo)?;
            Some(((session, seq), 2, Some(drain_tick)))
        }
        _ => None,
    }
}

impl Flows {
    /// Links `it` (the next event in time order) into its flow, if it has one, and passes it
    /// on to `sink`.
    ///
    /// IngressReceived always starts a flow; IngressAdmitted continues one that has only been
    /// received; a TracedSpan carrying the command's causal id continues one not yet past
    /// admission whose drain tick (from IngressAdmitted) does not contradict its own, or one
    /// already past it with the same drain tick (several systems may work on one command);
    /// CommandConsumed continues any; IngressDropped continues and ends one that has only been
    /// received. Any other event starts a new flow, so a wrapped seq or a repeated
    /// IngressReceived starts afresh. Flows follow the records that are there: with records
    /// lost, a flow stops short. `stats.flows` counts the flows of two events or more.
    pub(super) fn step(
        &mut self,
        sink: &mut impl Sink,
        mut it: Item<'_>,
        stats: &mut TimelineStats,
    ) -> io::Result<()> {
        let Some((rec, _)) = it.rec else {
            return sink.item(&it);
        };
        let Ok((_, body)) = records::decode(rec) else {
            return sink.item(&it);
        };
        match (it.kind, &body) {
            (Kind::Instant, Body::TracingFollows { key, .. }) => {
                self.next += 1;
                it.flow = self.next;
                self.follows.insert(*key, self.next);
                self.follows_order.push_back((*key, self.next));
                self.expire_follows();
                return sink.item(&it);
            }
            (Kind::Slice, Body::TracingSpan { key, .. }) => {
                if let Some(id) = self.follows.remove(key) {
                    stats.flows += 1;
                    it.flow = id;
                }
                return sink.item(&it);
            }
            _ => {}
        }
        if let Some((key, stage, tick)) = classify(it.kind, &body) {
            self.expire(it.ts, stats);
            it.flow = self.link(key, stage, tick, it.ts, stats);
        }
        sink.item(&it)
    }

    /// The flow `key`'s event of `stage` at `ts` joins (0 for none), as [`Flows::step`] says.
    fn link(
        &mut self,
        key: Key,
        stage: u8,
        tick: Option<u32>,
        ts: u64,
        s: &mut TimelineStats,
    ) -> u64 {
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
        if cont {
            let Some(o) = self.open.get_mut(&key) else {
                return 0;
            };
            o.events += 1;
            if o.events == 2 {
                s.flows += 1;
            }
            let id = o.id;
            if stage == 4 {
                // A drop ends the flow it continued.
                self.open.remove(&key);
            } else {
                // A flow never goes back a stage: a span of the command that begins at its
                // CommandConsumed's very nanosecond passes after it, and the flow stays
                // consumed (which only `unfinished` tells apart from a span's stage).
                o.stage = o.stage.max(stage.min(3));
                o.drain_tick = tick;
                o.last = ts;
                self.order.push_back((ts, key, id));
            }
            return id;
        }
        if stage == 4 {
            // A drop that continues nothing starts a flow of one: no flow.
            return 0;
        }
        self.next += 1;
        let old = self.open.insert(
            key,
            Open {
                id: self.next,
                stage: stage.min(3),
                drain_tick: tick,
                events: 1,
                last: ts,
            },
        );
        if let Some(o) = old {
            unfinished(&o, s);
        }
        self.order.push_back((ts, key, self.next));
        self.next
    }

    /// Ends the flows idle since before `now - IDLE`, and the oldest beyond the cap.
    fn expire(&mut self, now: u64, s: &mut TimelineStats) {
        // Entries beyond twice the cap are dropped too, so `order` stays bounded when the
        // same flows are continued again and again.
        while let Some(&(ts, key, id)) = self.order.front() {
            let over = self.open.len() > OPEN_CAP || self.order.len() > 2 * OPEN_CAP;
            if ts.saturating_add(IDLE) > now && !over {
                break;
            }
            self.order.pop_front();
            if let Some(o) = self.open.get(&key) {
                if o.id == id && o.last == ts {
                    unfinished(o, s);
                    self.open.remove(&key);
                }
            }
        }
    }

    /// Forgets the oldest pending `follows_from` links beyond the cap.
    fn expire_follows(&mut self) {
        while self.follows_order.len() > OPEN_CAP {
            if let Some((key, id)) = self.follows_order.pop_front() {
                if self.follows.get(&key) == Some(&id) {
                    self.follows.remove(&key);
                }
            }
        }
    }

    /// Ends every flow still open at the end of the recording.
    pub(super) fn finish(&mut self, s: &mut TimelineStats) {
        for (_, o) in self.open.drain() {
            unfinished(&o, s);
        }
        self.order.clear();
        self.follows.clear();
        self.follows_order.clear();
    }
}

/// Counts `o`, ending, if it is a flow that never reached its CommandConsumed.
fn unfinished(o: &Open, s: &mut TimelineStats) {
    if o.events >= 2 && o.stage < 3 {
        s.unfinished_flows += 1;
    }
}

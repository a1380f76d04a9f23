//! The flows that tie a command's correlated events together (IngressReceived →
//! IngressAdmitted → its TracedSpan → CommandConsumed, or IngressDropped), by (session, seq),
//! so a viewer draws the command's path across threads.

use super::fnv::FnvMap;
use super::timeline::{Phase, Timeline};
use typhon_recorder::codec::correlation::{command_of_causal_id, CorrelationInstant};
use typhon_recorder::codec::records::{self, Record as Body};

impl Timeline<'_> {
    /// Ties each command's correlated events together, in time order (at equal times, in the
    /// order a command passes through them; a viewer then links them in file order), by
    /// (session, seq): IngressReceived always starts
    /// a flow; IngressAdmitted continues one that has only been received; a TracedSpan carrying
    /// the command's causal id continues one not yet past admission whose drain tick (from
    /// IngressAdmitted) does not contradict its own, or one already past it with the same
    /// drain tick (several systems may work on one command); CommandConsumed continues any;
    /// IngressDropped continues and ends one that has only been received. Any other event
    /// starts a new flow, so a wrapped seq or a repeated IngressReceived starts afresh. Flows
    /// follow the records that are there: with records lost, a flow stops short, and a
    /// CommandConsumed whose command's other records were all lost joins the open flow of its
    /// (session, seq), if any.
    pub(super) fn link_flows(&mut self) {
        #[derive(Clone, Copy)]
        struct Open {
            id: u64,
            stage: u8, // 0 received, 1 admitted, 2 in its span, 3 consumed
            drain_tick: Option<u32>,
        }
        use CorrelationInstant as C;
        /// An event a flow can pass through. Stages: 0 received, 1 admitted, 2 the command's
        /// span, 3 consumed, 4 dropped.
        struct Step {
            ts: u64,
            stage: u8,
            event: usize,
            key: (u32, u16),
            drain_tick: Option<u32>,
        }
        let mut steps: Vec<Step> = Vec::new();
        for (i, e) in self.events.iter().enumerate() {
            let Some(rec) = e.rec else { continue };
            let (key, stage, tick) = match (e.phase, records::decode(rec)) {
                (Phase::Instant, Ok((_, Body::Correlation(c)))) => match c {
                    C::IngressReceived { session, seq, .. } => ((session, seq), 0, None),
                    C::IngressAdmitted {
                        session,
                        seq,
                        drain_tick,
                        ..
                    } => ((session, seq), 1, Some(drain_tick)),
                    C::CommandConsumed { session, seq, .. } => ((session, seq), 3, None),
                    C::IngressDropped { session, seq, .. } => ((session, seq), 4, None),
                    C::EgressSent { .. } => continue,
                },
                (Phase::Begin, Ok((_, Body::TracedSpan { context, .. }))) => {
                    match command_of_causal_id(context.hi, context.lo) {
                        Some((session, drain_tick, seq)) => ((session, seq), 2, Some(drain_tick)),
                        None => continue,
                    }
                }
                _ => continue,
            };
            steps.push(Step {
                ts: e.ts,
                stage,
                event: i,
                key,
                drain_tick: tick,
            });
        }
        // At equal times, in the order a command passes through (on one thread or several).
        steps.sort_by_key(|s| (s.ts, s.stage, s.event));
        let mut open: FnvMap<(u32, u16), Open> = FnvMap::default();
        let mut next = 0u64;
        for Step {
            stage,
            event: i,
            key,
            drain_tick: tick,
            ..
        } in steps
        {
            // Whether the event continues the open flow, and the drain tick the flow then has.
            let (cont, tick) = match (open.get(&key), stage) {
                (Some(o), 1) => (o.stage == 0, tick),
                // Before the command's span, a drain tick that does not contradict; after it
                // (another system's span of the same command), the same drain tick.
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
            let id = match open.get(&key) {
                Some(o) if cont => o.id,
                _ => {
                    next += 1;
                    next
                }
            };
            self.events[i].flow = id;
            match stage {
                // A drop ends the flow it continued, and leaves any other alone.
                4 if cont => {
                    open.remove(&key);
                }
                4 => {}
                _ => {
                    open.insert(
                        key,
                        Open {
                            id,
                            stage: stage.min(3),
                            drain_tick: tick,
                        },
                    );
                }
            }
        }
        // A flow of one event links nothing: drop it.
        let mut count: FnvMap<u64, u32> = FnvMap::default();
        for e in &self.events {
            if e.flow != 0 {
                *count.entry(e.flow).or_default() += 1;
            }
        }
        for e in &mut self.events {
            if e.flow != 0 && count[&e.flow] < 2 {
                e.flow = 0;
            }
        }
    }
}

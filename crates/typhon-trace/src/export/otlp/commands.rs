//! Commands as traces. Each command (session, seq) gets a root span "command S/Q" in the trace
//! of its causal id, from its first correlation instant to its last; its IngressReceived,
//! IngressAdmitted, IngressDropped, CommandConsumed and the EgressSent of its session and drain
//! tick are the root's events, and its TracedSpans are the root's children. IngressDropped
//! sets status ERROR with the reason.
//!
//! A command is held from its first instant until it is over: dropped; consumed and its egress
//! seen (the first EgressSent of its session at its drain tick joins it; one at a later tick
//! means it will get none); or no event of it for [`HORIZON_NS`] of recording time; and at most
//! [`MAX_OPEN`] are held (the oldest go first), so memory is the commands in flight, not the
//! recording. An EgressSent finds its commands through an index by (session, drain tick), so
//! each command is looked at by at most one EgressSent: O(log n) per record whatever the file.
//! (Ticks are compared as numbers: a u32 tick counter at 60 Hz wraps after two years.)

use super::super::args::{event_args, event_name};
use super::super::fnv::FnvMap;
use super::batch::Batch;
use super::values::{kv_arg, kv_int, kv_str, span, trace_id, Clock, ThreadId};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::{span::Event, span::SpanKind, status, Status};
use std::collections::{BTreeSet, VecDeque};
use std::io;
use typhon_recorder::codec::correlation::{CorrelationInstant as C, IngressDropReason};
use typhon_recorder::codec::records::TraceContext;

/// A command with no new event for this long (recording time) is written as it is.
pub const HORIZON_NS: u64 = 1_000_000_000;
/// Commands held at most.
pub const MAX_OPEN: usize = 1 << 16;
/// Written commands remembered for a TracedSpan that arrives after its root (it ended after
/// the command's egress: close behind it).
const MAX_DONE: usize = 1 << 12;
/// The drain tick in the trace id of a command never admitted (dropped, or its
/// IngressAdmitted lost): no real tick, so it cannot collide with an admitted command's trace.
pub const NO_DRAIN_TICK: u32 = u32::MAX;

/// The span id of command (session, seq)'s root: bit 55 set in slot 0's range, which the
/// recorder's own stream never uses for spans, so it never equals a recorded span id.
pub fn root_span_id(session: u32, seq: u16) -> u64 {
    1 << 55 | u64::from(session) << 16 | u64::from(seq)
}

struct Cmd {
    gen: u64,
    drain: Option<u32>,
    first: u64,
    last: u64,
    thread: ThreadId,
    /// Its events, with the thread each happened on.
    events: Vec<(Event, ThreadId)>,
    /// Its IngressReceived arrived.
    received: bool,
    consumed: bool,
    /// Its egress joined it, or one of a later tick passed it.
    egress: bool,
    dropped: Option<IngressDropReason>,
}

type Key = (u32, u16);

#[derive(Default)]
pub(super) struct Commands {
    open: FnvMap<Key, Cmd>,
    /// Per session, the open commands with a drain tick still waiting for their egress.
    awaiting: FnvMap<u32, BTreeSet<(u32, u16)>>,
    /// Open commands in the order they started (entries of written ones are skipped).
    order: VecDeque<(Key, u64)>,
    gen: u64,
    /// Recently written commands with their drain tick: a TracedSpan arriving after its
    /// command's root does not start a second root of the same id.
    /// With the roots written for each, so that a command written twice (a resend, or its
    /// events split by the horizon) gets distinct root span ids.
    done: FnvMap<(u32, u32, u16), u8>,
}

/// An instant as an event: its fields but session and seq (the root's attributes); the thread
/// is added when the root is written, for events on another thread than the root's.
fn event(clock: &Clock, ts: u64, rec: &[u8], thread: &ThreadId) -> (Event, ThreadId) {
    let attributes: Vec<KeyValue> = event_args(rec)
        .into_iter()
        .filter(|(k, _)| !matches!(*k, "session" | "seq"))
        .map(|(k, v)| kv_arg(k, v))
        .collect();
    let e = Event {
        time_unix_nano: clock.unix(ts),
        name: event_name(rec).into_owned(),
        attributes,
        dropped_attributes_count: 0,
    };
    (e, thread.clone())
}

impl Cmd {
    /// Nothing more is expected of it: received, then dropped, or consumed with its egress
    /// seen. (Without its IngressReceived it waits: another thread's records may bring it.)
    fn over(&self) -> bool {
        self.received && (self.dropped.is_some() || (self.consumed && self.egress))
    }
}

impl Commands {
    fn entry(&mut self, key: Key, ts: u64, thread: &ThreadId) -> &mut Cmd {
        if !self.open.contains_key(&key) {
            self.gen += 1;
            self.order.push_back((key, self.gen));
            if self.order.len() > 4 * MAX_OPEN.max(self.open.len()) {
                // Entries of written commands behind a long-lived one: drop them.
                let open = &self.open;
                self.order
                    .retain(|(k, g)| open.get(k).is_some_and(|c| c.gen == *g));
            }
            self.open.insert(
                key,
                Cmd {
                    gen: self.gen,
                    drain: None,
                    first: ts,
                    last: ts,
                    thread: thread.clone(),
                    events: Vec::new(),
                    received: false,
                    consumed: false,
                    egress: false,
                    dropped: None,
                },
            );
        }
        let c = self.open.get_mut(&key).expect("inserted above");
        c.first = c.first.min(ts);
        c.last = c.last.max(ts);
        c
    }

    /// A correlation instant at `ts` (file time); `rec` is its record.
    pub(super) fn instant(
        &mut self,
        out: &mut Batch<'_>,
        clock: &Clock,
        (ts, rec, i): (u64, &[u8], C),
        thread: &ThreadId,
    ) -> io::Result<()> {
        let ev = event(clock, ts, rec, thread);
        match i {
            C::IngressReceived { session, seq, .. } => {
                // A second IngressReceived of an open command (a wrapped seq, a resend):
                // the first command is over. One opened by its later events joins: records
                // arrive in page-time order, and a slot's caller timestamps can be earlier
                // than its page time (another thread's records of the command came first).
                if self.open.get(&(session, seq)).is_some_and(|c| c.received) {
                    self.write(out, clock, (session, seq))?;
                }
                let c = self.entry((session, seq), ts, thread);
                c.received = true;
                // The root is on the thread that received the command.
                c.thread = thread.clone();
                c.events.push(ev);
                if c.over() {
                    self.write(out, clock, (session, seq))?;
                }
            }
            C::IngressAdmitted {
                session,
                seq,
                drain_tick,
                ..
            } => {
                self.entry((session, seq), ts, thread).events.push(ev);
                self.set_drain((session, seq), drain_tick);
            }
            C::CommandConsumed { session, seq, .. } => {
                let c = self.entry((session, seq), ts, thread);
                c.consumed = true;
                c.events.push(ev);
                if c.over() {
                    self.write(out, clock, (session, seq))?;
                }
            }
            C::IngressDropped {
                session,
                seq,
                reason,
            } => {
                let c = self.entry((session, seq), ts, thread);
                c.dropped = Some(reason);
                c.events.push(ev);
                out.stats.commands_dropped += 1;
                if c.over() {
                    self.write(out, clock, (session, seq))?;
                }
            }
            C::EgressSent { session, tick, .. } => {
                // The commands of this session admitted for this tick or an earlier one.
                let due: Vec<(u32, u16)> = match self.awaiting.get_mut(&session) {
                    Some(a) if tick == u32::MAX => std::mem::take(a).into_iter().collect(),
                    Some(a) => {
                        let later = a.split_off(&(tick + 1, 0));
                        std::mem::replace(a, later).into_iter().collect()
                    }
                    None => Vec::new(),
                };
                if self.awaiting.get(&session).is_some_and(BTreeSet::is_empty) {
                    self.awaiting.remove(&session);
                }
                let mut joined = false;
                for (drain, seq) in due {
                    let Some(c) = self.open.get_mut(&(session, seq)) else {
                        continue;
                    };
                    c.egress = true;
                    if drain == tick {
                        joined = true;
                        c.last = c.last.max(ts);
                        c.events.push(ev.clone());
                    }
                    if c.over() {
                        self.write(out, clock, (session, seq))?;
                    }
                }
                if !joined {
                    out.stats.egress_unjoined += 1;
                }
            }
        }
        Ok(())
    }

    /// A TracedSpan of command (session, drain_tick, seq) from `start` to `end` (file times):
    /// the root takes its drain tick if it has none, and lasts at least until the span's end.
    pub(super) fn span(
        &mut self,
        (session, drain, seq): (u32, u32, u16),
        start: u64,
        end: u64,
        thread: &ThreadId,
    ) {
        if self.done.contains_key(&(session, drain, seq)) {
            return;
        }
        let c = self.entry((session, seq), start, thread);
        c.last = c.last.max(end);
        if c.drain.is_none() {
            self.set_drain((session, seq), drain);
        }
    }

    /// Gives open command `key` its drain tick, where its egress is awaited.
    fn set_drain(&mut self, key: Key, drain: u32) {
        let Some(c) = self.open.get_mut(&key) else {
            return;
        };
        if let Some(old) = c.drain.replace(drain) {
            if let Some(a) = self.awaiting.get_mut(&key.0) {
                a.remove(&(old, key.1));
            }
        }
        if !c.egress {
            self.awaiting
                .entry(key.0)
                .or_default()
                .insert((drain, key.1));
        }
    }

    /// Writes the commands that have waited [`HORIZON_NS`] past their last event by `now`, and
    /// the oldest beyond [`MAX_OPEN`].
    pub(super) fn expire(
        &mut self,
        out: &mut Batch<'_>,
        clock: &Clock,
        now: u64,
    ) -> io::Result<()> {
        out.stats.peak_commands = out.stats.peak_commands.max(self.open.len() as u64);
        while let Some(&(key, gen)) = self.order.front() {
            let stale = match self.open.get(&key) {
                Some(c) if c.gen == gen => {
                    self.open.len() > MAX_OPEN || c.last.saturating_add(HORIZON_NS) < now
                }
                _ => {
                    self.order.pop_front();
                    continue;
                }
            };
            if !stale {
                break;
            }
            self.write(out, clock, key)?;
        }
        Ok(())
    }

    /// Writes every command still held, in the order they started.
    pub(super) fn finish(&mut self, out: &mut Batch<'_>, clock: &Clock) -> io::Result<()> {
        while let Some((key, gen)) = self.order.pop_front() {
            if self.open.get(&key).is_some_and(|c| c.gen == gen) {
                self.write(out, clock, key)?;
            }
        }
        Ok(())
    }

    fn write(&mut self, out: &mut Batch<'_>, clock: &Clock, key: Key) -> io::Result<()> {
        let Some(mut c) = self.open.remove(&key) else {
            return Ok(());
        };
        if let (Some(d), Some(a)) = (c.drain, self.awaiting.get_mut(&key.0)) {
            a.remove(&(d, key.1));
            if a.is_empty() {
                self.awaiting.remove(&key.0);
            }
        }
        let (session, seq) = key;
        let drain = c.drain.unwrap_or(NO_DRAIN_TICK);
        if self.done.len() >= MAX_DONE {
            self.done.clear();
        }
        let n = self.done.entry((session, drain, seq)).or_insert(0);
        // Bits 48..55 of the root's id count the earlier roots of the same trace (wrapping
        // after 127: a command resent that often shares an id with its 128th predecessor).
        let id = root_span_id(session, seq) | u64::from(*n & 0x7F) << 48;
        if *n > 0 {
            out.stats.command_repeats += 1;
        }
        *n = n.wrapping_add(1);
        let trace = trace_id(TraceContext::from_command(session, drain, seq));
        let mut s = span(
            trace,
            id,
            0,
            &format!("command {session}/{seq}"),
            SpanKind::Server as i32,
            (clock.unix(c.first), clock.unix(c.last)),
        );
        s.attributes.push(kv_int("typhon.session", session.into()));
        s.attributes.push(kv_int("typhon.seq", seq.into()));
        if let Some(d) = c.drain {
            s.attributes.push(kv_int("typhon.drain_tick", d.into()));
        }
        let state = match (c.dropped, c.consumed) {
            (Some(_), _) => "dropped",
            (None, true) => "consumed",
            (None, false) => "unfinished",
        };
        s.attributes.push(kv_str("typhon.command.state", state));
        c.thread.attributes(&mut s.attributes);
        c.events.sort_by_key(|e| e.0.time_unix_nano);
        s.events = std::mem::take(&mut c.events)
            .into_iter()
            .map(|(mut e, th)| {
                if th != c.thread {
                    th.attributes(&mut e.attributes);
                }
                e
            })
            .collect();
        if let Some(r) = c.dropped {
            s.status = Some(Status {
                message: format!("IngressDropped: {r:?}"),
                code: status::StatusCode::Error as i32,
            });
        }
        out.stats.commands += 1;
        out.push(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::otlp::OtlpStats;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use typhon_recorder::codec::correlation as c;

    /// One correlation record at `ts`, written by the codec.
    fn rec(ts: u64, i: C) -> (u64, Vec<u8>, C) {
        let mut d = [0u8; 32];
        let t = ts as i64;
        match i {
            C::IngressReceived { session, seq, .. } => {
                c::write_received(&mut d, 1, t, session, seq, 0, 8)
            }
            C::IngressAdmitted {
                session,
                seq,
                drain_tick,
                ..
            } => c::write_admitted(&mut d, 1, t, session, seq, 0, drain_tick),
            C::CommandConsumed { session, seq, .. } => {
                c::write_consumed(&mut d, 1, t, session, seq, 0)
            }
            C::IngressDropped {
                session,
                seq,
                reason,
            } => c::write_dropped(&mut d, 1, t, session, seq, reason),
            C::EgressSent { session, tick, .. } => c::write_sent(&mut d, 1, t, session, tick, 1, 1),
        }
        let n = c::size_of(c::decode(&d).unwrap().instant.kind());
        (ts, d[..n].to_vec(), i)
    }

    fn recv(s: u32, q: u16) -> C {
        C::IngressReceived {
            session: s,
            seq: q,
            wire_idx: 0,
            bytes: 8,
        }
    }
    fn adm(s: u32, q: u16, d: u32) -> C {
        C::IngressAdmitted {
            session: s,
            seq: q,
            wire_idx: 0,
            drain_tick: d,
        }
    }
    fn cons(s: u32, q: u16) -> C {
        C::CommandConsumed {
            session: s,
            seq: q,
            sys_idx: 0,
        }
    }
    fn egr(s: u32, t: u32) -> C {
        C::EgressSent {
            session: s,
            tick: t,
            bytes: 1,
            acks: 1,
        }
    }

    /// Feeds `events` (time, instant) and returns the roots written, in order, as (name, event
    /// names), with the stats; `expire_at`: an `expire` call at that time after all events.
    fn run(events: &[(u64, C)], expire_at: Option<u64>) -> (Vec<(String, Vec<String>)>, OtlpStats) {
        let mut got = Vec::new();
        let mut out = |r: ExportTraceServiceRequest, _: u64| -> io::Result<()> {
            for s in &r.resource_spans[0].scope_spans[0].spans {
                let ev = s.events.iter().map(|e| e.name.clone()).collect();
                got.push((s.name.clone(), ev));
            }
            Ok(())
        };
        let stats = {
            let mut b = Batch {
                resource: Default::default(),
                scope: Default::default(),
                spans: Vec::new(),
                max: 1,
                out: &mut out,
                stats: OtlpStats::default(),
            };
            let clock = Clock {
                anchor: None,
                map: Default::default(),
            };
            let th = ThreadId::default();
            let mut cmds = Commands::default();
            for &(ts, i) in events {
                let (ts, d, i) = rec(ts, i);
                cmds.instant(&mut b, &clock, (ts, &d, i), &th).unwrap();
            }
            if let Some(now) = expire_at {
                cmds.expire(&mut b, &clock, now).unwrap();
            } else {
                cmds.finish(&mut b, &clock).unwrap();
            }
            b.flush().unwrap();
            b.stats
        };
        (got, stats)
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_command_is_written_once_consumed_and_its_egress_seen_in_either_order() {
        let (got, _) = run(
            &[
                (1, recv(7, 1)),
                (2, adm(7, 1, 3)),
                (4, egr(7, 3)),
                (5, cons(7, 1)),
            ],
            Some(6),
        );
        let all = names(&[
            "IngressReceived",
            "IngressAdmitted",
            "EgressSent",
            "CommandConsumed",
        ]);
        assert_eq!(got, vec![("command 7/1".to_string(), all)]);
        let (got, _) = run(
            &[
                (1, recv(7, 1)),
                (2, adm(7, 1, 3)),
                (3, cons(7, 1)),
                (4, egr(7, 3)),
            ],
            Some(5),
        );
        assert_eq!(got.len(), 1, "written at its egress, before any expiry");
    }

    #[test]
    fn a_later_ticks_egress_ends_a_consumed_command_without_joining_it() {
        let (got, s) = run(
            &[
                (1, recv(7, 1)),
                (2, adm(7, 1, 3)),
                (3, cons(7, 1)),
                (4, egr(7, 4)),
            ],
            Some(5),
        );
        assert_eq!(
            got[0].1,
            names(&["IngressReceived", "IngressAdmitted", "CommandConsumed"])
        );
        assert_eq!(s.egress_unjoined, 1);
        // Another session's egress touches nothing.
        let (got, s) = run(
            &[
                (1, recv(7, 1)),
                (2, adm(7, 1, 3)),
                (3, cons(7, 1)),
                (4, egr(8, 3)),
            ],
            Some(5),
        );
        assert!(got.is_empty());
        assert_eq!(s.egress_unjoined, 1);
    }

    #[test]
    fn a_repeated_ingress_starts_a_new_command_and_stale_ones_expire() {
        let (got, _) = run(&[(1, recv(7, 1)), (2, recv(7, 1))], None);
        assert_eq!(got.len(), 2);
        let (got, _) = run(&[(1, recv(7, 1))], Some(1 + HORIZON_NS + 1));
        assert_eq!(got.len(), 1, "nothing for longer than the horizon");
        let (got, _) = run(&[(1, recv(7, 1))], Some(1 + HORIZON_NS));
        assert!(got.is_empty(), "not before it");
    }

    #[test]
    fn a_commands_later_events_arriving_first_are_joined_by_its_ingress() {
        // Another thread's records can come first (its page time is later than its caller
        // timestamps): the consumption, then the receipt, admission and egress.
        let ev = [
            (6, cons(7, 42)),
            (3, recv(7, 42)),
            (4, adm(7, 42, 3)),
            (13, egr(7, 3)),
        ];
        let (got, s) = run(&ev, Some(14));
        let all = names(&[
            "IngressReceived",
            "IngressAdmitted",
            "CommandConsumed",
            "EgressSent",
        ]);
        assert_eq!(got, vec![("command 7/42".to_string(), all)]);
        assert_eq!(s.commands, 1);
    }

    #[test]
    fn a_drop_seen_before_its_ingress_waits_for_it_and_a_resend_gets_its_own_root() {
        let drop = C::IngressDropped {
            session: 7,
            seq: 1,
            reason: IngressDropReason::QueueFull,
        };
        let (got, s) = run(&[(2, drop), (1, recv(7, 1))], Some(3));
        assert_eq!(
            got,
            vec![(
                "command 7/1".to_string(),
                names(&["IngressReceived", "IngressDropped"])
            )]
        );
        assert_eq!(
            (s.commands, s.commands_dropped, s.command_repeats),
            (1, 1, 0)
        );
        // Received twice: two roots of one trace, with distinct ids.
        let (_, s) = run(&[(1, recv(7, 1)), (2, recv(7, 1))], None);
        assert_eq!((s.commands, s.command_repeats), (2, 1));
    }

    #[test]
    fn no_more_than_max_open_commands_are_held() {
        let ev: Vec<(u64, C)> = (0..=MAX_OPEN as u32).map(|i| (1, recv(i, 0))).collect();
        let (got, s) = run(&ev, Some(1));
        assert_eq!(got.len(), 1, "the oldest goes out");
        assert_eq!(got[0].0, "command 0/0");
        assert_eq!(s.peak_commands, MAX_OPEN as u64 + 1);
    }
}

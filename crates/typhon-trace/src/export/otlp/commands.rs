//! Commands as traces. Each command (session, seq) gets a root span "command S/Q" in the trace
//! of its causal id, from its first correlation instant to its last; its IngressReceived,
//! IngressAdmitted, IngressDropped, CommandConsumed and the EgressSent of its session and drain
//! tick are the root's events, and its TracedSpans are the root's children. IngressDropped
//! sets status ERROR with the reason.
//!
//! A command is held from its first instant until it is over: dropped; consumed and its egress
//! (EgressSent of its session at its drain tick, or a later tick) seen; or no event of it for
//! [`HORIZON_NS`] of recording time; and at most [`MAX_OPEN`] are held (the oldest go first),
//! so memory is the commands in flight, not the recording.

use super::super::args::{event_args, event_name, Arg};
use super::super::fnv::FnvMap;
use super::batch::Batch;
use super::values::{kv_int, kv_str, kv_u64, span, trace_id, Clock, ThreadId};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::{span::Event, span::SpanKind, status, Status};
use std::collections::VecDeque;
use std::io;
use typhon_recorder::codec::correlation::{CorrelationInstant as C, IngressDropReason};
use typhon_recorder::codec::records::TraceContext;

/// A command with no new event for this long (recording time) is written as it is.
pub(super) const HORIZON_NS: u64 = 1_000_000_000;
/// Commands held at most.
pub(super) const MAX_OPEN: usize = 1 << 16;
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
    events: Vec<Event>,
    consumed: bool,
    egress: bool,
    dropped: Option<IngressDropReason>,
}

type Key = (u32, u16);

#[derive(Default)]
pub(super) struct Commands {
    open: FnvMap<Key, Cmd>,
    by_session: FnvMap<u32, Vec<u16>>,
    /// Open commands in the order they started (entries of written ones are skipped).
    order: VecDeque<(Key, u64)>,
    gen: u64,
    /// Recently written commands with their drain tick: a TracedSpan arriving after its
    /// command's root does not start a second root of the same id.
    done: FnvMap<(u32, u32, u16), ()>,
}

fn event(clock: &Clock, ts: u64, rec: &[u8], thread: &ThreadId) -> Event {
    let mut attributes: Vec<KeyValue> = event_args(rec)
        .into_iter()
        .map(|(k, v)| match v {
            Arg::U(u) => kv_u64(k, u),
            Arg::I(i) => kv_int(k, i),
            Arg::S(s) => kv_str(k, &s),
        })
        .collect();
    thread.attributes(&mut attributes);
    Event {
        time_unix_nano: clock.unix(ts),
        name: event_name(rec).into_owned(),
        attributes,
        dropped_attributes_count: 0,
    }
}

/// Whether tick `a` comes after tick `b` (ticks wrap).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl Commands {
    fn entry(&mut self, key: Key, ts: u64, thread: &ThreadId) -> &mut Cmd {
        if !self.open.contains_key(&key) {
            self.gen += 1;
            self.order.push_back((key, self.gen));
            self.by_session.entry(key.0).or_default().push(key.1);
            self.open.insert(
                key,
                Cmd {
                    gen: self.gen,
                    drain: None,
                    first: ts,
                    last: ts,
                    thread: thread.clone(),
                    events: Vec::new(),
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
                // the first command is over.
                if self.open.contains_key(&(session, seq)) {
                    self.write(out, clock, (session, seq))?;
                }
                self.entry((session, seq), ts, thread).events.push(ev);
            }
            C::IngressAdmitted {
                session,
                seq,
                drain_tick,
                ..
            } => {
                let c = self.entry((session, seq), ts, thread);
                c.drain = Some(drain_tick);
                c.events.push(ev);
            }
            C::CommandConsumed { session, seq, .. } => {
                let c = self.entry((session, seq), ts, thread);
                c.consumed = true;
                c.events.push(ev);
                if c.egress {
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
                self.write(out, clock, (session, seq))?;
            }
            C::EgressSent { session, tick, .. } => {
                let seqs = self.by_session.get(&session).cloned().unwrap_or_default();
                let mut joined = false;
                for seq in seqs {
                    let Some(c) = self.open.get_mut(&(session, seq)) else {
                        continue;
                    };
                    if c.drain == Some(tick) {
                        joined = true;
                        c.egress = true;
                        c.last = c.last.max(ts);
                        c.events.push(ev.clone());
                        if c.consumed {
                            self.write(out, clock, (session, seq))?;
                        }
                    } else if c.consumed && c.drain.is_some_and(|d| after(tick, d)) {
                        // Its session's egress has moved past its tick without it.
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
        c.drain.get_or_insert(drain);
        c.last = c.last.max(end);
    }

    /// Writes the commands that have waited [`HORIZON_NS`] past their last event by `now`, and
    /// the oldest beyond [`MAX_OPEN`].
    pub(super) fn expire(
        &mut self,
        out: &mut Batch<'_>,
        clock: &Clock,
        now: u64,
    ) -> io::Result<()> {
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
        if let Some(v) = self.by_session.get_mut(&key.0) {
            v.retain(|&s| s != key.1);
            if v.is_empty() {
                self.by_session.remove(&key.0);
            }
        }
        let (session, seq) = key;
        let drain = c.drain.unwrap_or(NO_DRAIN_TICK);
        if self.done.len() >= MAX_OPEN {
            self.done.clear();
        }
        self.done.insert((session, drain, seq), ());
        let trace = trace_id(TraceContext::from_command(session, drain, seq));
        let mut s = span(
            trace,
            root_span_id(session, seq),
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
        c.events.sort_by_key(|e| e.time_unix_nano);
        s.events = std::mem::take(&mut c.events);
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

//! `tracing` spans as OTLP spans: every entry of a span (on any thread), its description, its
//! events and its `follows_from` links make one OTLP span, held until it is over.
//!
//! - The span runs from its first entry's start to its close (a TracingClose record, written
//!   for a span entered more than once or never), else to its last entry's end (a span entered
//!   once closes with its exit), named as its last entry read (a `name` field recorded later
//!   renames it). Its id is [`tracing_span_id`] of its key; `typhon.entries` and
//!   `typhon.busy_ns` say how many entries it had and how long they were, `thread.id` and
//!   `thread.name` are its first entry's.
//! - Its parent: for a span whose entries are compact (TracingEntry), the `tracing` parent its
//!   description recorded (an explicit `parent:` or the span current where it was created,
//!   on whatever thread), a root when none; for one whose entries are TracingSpan records
//!   (under a native span, or a file from before kind 226), the span its first entry read
//!   lies in (the `tracing` span of an enclosing entry, or a NamedSpan or TracedSpan). It is
//!   in its parent's trace; a root span roots a local trace of its own, named after its
//!   key-derived id (so a TracedSpan with a W3C or a command's id around a TracingSpan entry
//!   puts the span in that trace).
//! - Its fields (the latest description: `Span::record` values replace those before) are
//!   attributes of their own types, with `level` and `target`; its events are span events
//!   (name: the message; attributes: `level`, `target`, the fields, and the thread when not
//!   the span's first entry's); `follows_from` is a Link to the span it follows.
//! - A span is over [`GRACE`] of the records' time after its close (other slots' records of
//!   that time may still come), or, with no close recorded: when a description with its
//!   `tracing` id (a TracingSpanInfo: the Registry gives a closed span's id to a new span)
//!   came [`GRACE`] before, else at the end of the recording, or once no record of it came
//!   for [`IDLE`], or when more than
//!   [`MAX_OPEN`] are open (the least recently active first). An entry after that is written
//!   as a span of its own under it, and an event or link after that is left out (both counted
//!   in `tracing_late`): with two subscribers, whose Registries give out the same ids, a span
//!   may end early so. A span never entered is no span (counted in `tracing_unentered`).
//! - At most [`MAX_EVENTS`] events and as many links a span, as OpenTelemetry's SDKs keep; the
//!   rest are counted in the span's `dropped_events_count` and `dropped_links_count`.

use super::super::fields::{parse, FieldVal};
use super::super::fnv::FnvMap;
use super::batch::Batch;
use super::spans::Trees;
use super::values::{kv, kv_int, kv_str, kv_u64, span, Clock, ThreadId};
use opentelemetry_proto::tonic::common::v1::{any_value::Value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::span::{Event, Link, SpanKind};
use std::collections::VecDeque;
use std::io;
use typhon_recorder::codec::records::{level_name, SpanExt};

/// Records' time after which a `tracing` span with no new record is over: 30 s.
pub const IDLE: u64 = 30_000_000_000;
/// Records' time a span whose `tracing` id a new span took is kept open for its records still
/// to come (other slots' records of the same time): 50 ms, the other exports' window.
pub const GRACE: u64 = 50_000_000;
/// `tracing` spans held open at most.
pub const MAX_OPEN: usize = 1 << 15;
/// Events (and links) a span keeps at most, as OpenTelemetry's SDKs' default span limits.
pub const MAX_EVENTS: usize = 128;

/// The OTLP span id of the `tracing` span of key `key`: `0x0040` then the key's low 48 bits.
/// Recorded span ids have the slot in their top byte and a counter that never reaches bit 54
/// in slot 0; command roots have bit 55 set: no span id of the recording is one of these.
///
/// ```
/// use typhon_trace::export::otlp::tracing_span_id;
/// assert_eq!(tracing_span_id(42), 0x0040_0000_0000_002a);
/// ```
pub const fn tracing_span_id(key: u64) -> u64 {
    0x0040 << 48 | key & 0x0000_FFFF_FFFF_FFFF
}

/// A span still open.
#[derive(Default)]
struct Open {
    tracing_id: u64,
    /// Its `tracing` parent's key, as its description (a TracingSpanValues) recorded it.
    parent_key: u64,
    /// When it closed (file ns), if its close was recorded.
    closed: Option<u64>,
    name: String,
    level: u8,
    target: String,
    fields: String,
    /// First start and last end of its entries (file ns).
    start: u64,
    end: u64,
    entries: u64,
    busy: u64,
    thread: Option<ThreadId>,
    events: Vec<Event>,
    dropped_events: u32,
    follows: Vec<u64>,
    dropped_links: u32,
    /// Records' time of its latest record.
    last: u64,
}

/// The open `tracing` spans.
#[derive(Default)]
pub(super) struct TracingSpans {
    open: FnvMap<u64, Open>,
    /// (records' time, key) in the order spans were last active; stale entries are skipped.
    order: VecDeque<(u64, u64)>,
    /// Keys of spans written, for the entries and events that come after (bounded: cleared
    /// when full, after which such a record starts its span anew).
    done: FnvMap<u64, ()>,
    /// `tracing` id → the open span described with it last.
    by_id: FnvMap<u64, u64>,
    /// Spans whose `tracing` id a new span took: (records' time then, key).
    closing: VecDeque<(u64, u64)>,
    /// Most spans open at once.
    peak: u64,
}

const MAX_DONE: usize = 1 << 16;

/// Attributes of a `tracing` field text (see `fields`), typed, after `extra` unless a field
/// has the same key (the program's field wins).
fn attributes(fields: &str, extra: Vec<KeyValue>) -> Vec<KeyValue> {
    let mut out: Vec<KeyValue> = parse(fields)
        .into_iter()
        .map(|(k, v)| match v {
            FieldVal::I(i) => kv_int(k, i),
            FieldVal::U(u) => kv_u64(k, u),
            FieldVal::F(f) => kv(k, Value::DoubleValue(f)),
            FieldVal::B(b) => kv(k, Value::BoolValue(b)),
            FieldVal::S(s) => kv_str(k, &s),
        })
        .collect();
    // A field named twice (a malformed text) keeps its first value: keys are unique.
    let mut seen = std::collections::HashSet::new();
    out.retain(|a| seen.insert(a.key.clone()));
    for e in extra {
        if seen.insert(e.key.clone()) {
            out.push(e);
        }
    }
    out
}

fn level_target(level: u8, target: &str) -> Vec<KeyValue> {
    let mut v = vec![kv_str("level", level_name(level))];
    if !target.is_empty() {
        v.push(kv_str("target", target));
    }
    v
}

impl TracingSpans {
    /// The open span `key`, begun if new, marked active at `now`.
    fn touch(&mut self, key: u64, now: u64) -> &mut Open {
        self.order.push_back((now, key));
        let n = self.open.len() + usize::from(!self.open.contains_key(&key));
        self.peak = self.peak.max(n as u64);
        let o = self.open.entry(key).or_default();
        o.last = now;
        o
    }

    /// Whether records of `key` come after its span was written.
    fn late(&self, key: u64) -> bool {
        self.done.contains_key(&key) && !self.open.contains_key(&key)
    }

    /// A description of span `key`: its callsite's level and target, and its fields.
    /// `values`: it was written as a TracingSpanValues, whose `id` is its `tracing` parent's
    /// key; else (a TracingSpanInfo) `id` is its `tracing` id.
    pub(super) fn describe(
        &mut self,
        (key, id, values): (u64, u64, bool),
        now: u64,
        (level, target, fields): (u8, &str, &str),
    ) {
        if values {
            let o = self.touch(key, now);
            o.parent_key = id;
            o.level = level;
            target.clone_into(&mut o.target);
            fields.clone_into(&mut o.fields);
            return;
        }
        let tracing_id = id;
        if let Some(old) = self.by_id.insert(tracing_id, key) {
            if old != key {
                // The Registry gave `old`'s id to a new span: `old` is closed.
                self.closing.push_back((now, old));
            }
        }
        let o = self.touch(key, now);
        o.tracing_id = tracing_id;
        o.level = level;
        target.clone_into(&mut o.target);
        fields.clone_into(&mut o.fields);
    }

    /// An entry of span `key` (recorded as `x`, `name`, from `start` to `end`, on `th`;
    /// `compact`: written as a TracingEntry, whose span's parent is its `tracing` parent).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn entry(
        &mut self,
        out: &mut Batch<'_>,
        trees: &mut Trees,
        clock: &Clock,
        (key, x, name, compact): (u64, &SpanExt, &str, bool),
        (start, end): (u64, u64),
        th: &ThreadId,
        now: u64,
    ) -> io::Result<()> {
        let id = tracing_span_id(key);
        if self.late(key) {
            // After its span was written: a span of its own under it.
            out.stats.tracing_late += 1;
            let mut s = span(
                [0; 16],
                x.span_id,
                id,
                name,
                SpanKind::Internal as i32,
                (clock.unix(start), clock.unix(end)),
            );
            th.attributes(&mut s.attributes);
            return trees.span(out, s, x.span_id, id, None);
        }
        let o = self.touch(key, now);
        let first = o.entries == 0;
        if first {
            o.start = start;
            o.end = end;
            o.thread = Some(th.clone());
        }
        // The latest entry's name: a `name` field recorded later renames the span.
        name.clone_into(&mut o.name);
        o.start = o.start.min(start);
        o.end = o.end.max(end);
        o.entries += 1;
        o.busy = o.busy.saturating_add(end.saturating_sub(start));
        trees.alias(out, x.span_id, id)?;
        if first {
            let parent = if !compact {
                x.parent_span_id
            } else if o.parent_key != 0 {
                tracing_span_id(o.parent_key)
            } else {
                0
            };
            trees.node(out, id, parent)?;
        }
        self.limit(out, trees, clock)
    }

    /// Span `key` closed at `ts`: it is over once [`GRACE`] of the records' time has passed
    /// (another slot's entry or event of before then may still come). `false` when it was
    /// written already.
    pub(super) fn closed(&mut self, key: u64, ts: u64, now: u64) -> bool {
        if self.late(key) {
            return false;
        }
        let o = self.touch(key, now);
        o.closed = Some(ts);
        self.closing.push_back((now, key));
        true
    }

    /// An event in span `key` at `ts`; `false` when it has none to join (written already).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn event(
        &mut self,
        clock: &Clock,
        key: u64,
        ts: u64,
        (level, target, message, fields): (u8, &str, &str, &str),
        th: &ThreadId,
        now: u64,
    ) -> bool {
        if self.late(key) {
            return false;
        }
        let o = self.touch(key, now);
        if o.events.len() >= MAX_EVENTS {
            o.dropped_events += 1;
            return true;
        }
        let mut extra = level_target(level, target);
        // The thread, when it is not the span's first entry's (added when it is written).
        extra.push(kv_str("thread.name", &th.name));
        if let Some(t) = th.tid {
            extra.push(kv_int("thread.id", t));
        }
        let name = if message.is_empty() { "event" } else { message };
        o.events.push(Event {
            time_unix_nano: clock.unix(ts),
            name: name.to_string(),
            attributes: attributes(fields, extra),
            dropped_attributes_count: 0,
        });
        true
    }

    /// Span `key` follows span `follows`; `false` when it was written already.
    pub(super) fn follows(&mut self, key: u64, follows: u64, now: u64) -> bool {
        if self.late(key) {
            return false;
        }
        let o = self.touch(key, now);
        if o.follows.len() >= MAX_EVENTS {
            o.dropped_links += 1;
        } else {
            o.follows.push(follows);
        }
        true
    }

    /// Writes the spans idle since before `now - IDLE`, and those closed since before
    /// `now - GRACE`.
    pub(super) fn expire(
        &mut self,
        out: &mut Batch<'_>,
        trees: &mut Trees,
        clock: &Clock,
        now: u64,
    ) -> io::Result<()> {
        while let Some(&(t, key)) = self.closing.front() {
            if t.saturating_add(GRACE) > now {
                break;
            }
            self.closing.pop_front();
            self.close(out, trees, clock, key)?;
        }
        while let Some(&(t, key)) = self.order.front() {
            if t.saturating_add(IDLE) > now && self.order.len() <= 4 * MAX_OPEN {
                break;
            }
            self.order.pop_front();
            if self.open.get(&key).is_some_and(|o| o.last == t) {
                self.close(out, trees, clock, key)?;
            }
        }
        // Descriptions and events of spans never entered count too.
        self.limit(out, trees, clock)
    }

    /// Writes the least recently active spans beyond [`MAX_OPEN`].
    fn limit(&mut self, out: &mut Batch<'_>, trees: &mut Trees, clock: &Clock) -> io::Result<()> {
        while self.open.len() > MAX_OPEN {
            let Some((t, key)) = self.order.pop_front() else {
                break;
            };
            if self.open.get(&key).is_some_and(|o| o.last == t) {
                self.close(out, trees, clock, key)?;
            }
        }
        Ok(())
    }

    /// Writes every span still open (the end of the recording).
    pub(super) fn finish(
        &mut self,
        out: &mut Batch<'_>,
        trees: &mut Trees,
        clock: &Clock,
    ) -> io::Result<()> {
        let mut keys: Vec<u64> = self.open.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            self.close(out, trees, clock, key)?;
        }
        self.order.clear();
        self.closing.clear();
        out.stats.peak_tracing_open = self.peak;
        Ok(())
    }

    /// Span `key` is over: it goes to `trees`, which writes it once its trace is known.
    fn close(
        &mut self,
        out: &mut Batch<'_>,
        trees: &mut Trees,
        clock: &Clock,
        key: u64,
    ) -> io::Result<()> {
        let Some(o) = self.open.remove(&key) else {
            return Ok(());
        };
        if self.by_id.get(&o.tracing_id) == Some(&key) {
            self.by_id.remove(&o.tracing_id);
        }
        if self.done.len() >= MAX_DONE {
            self.done.clear();
        }
        self.done.insert(key, ());
        if o.entries == 0 {
            // No span to hold its events and links: they are left out.
            out.stats.tracing_unentered += 1;
            let events = o.events.len() as u64 + u64::from(o.dropped_events);
            let links = o.follows.len() as u64 + u64::from(o.dropped_links);
            out.stats.tracing_events -= events;
            out.stats.tracing_links -= links;
            out.stats.left_out += events + links;
            return Ok(());
        }
        let id = tracing_span_id(key);
        // Its close, if recorded, ends it (never before its last exit).
        let end = o.closed.map_or(o.end, |c| c.max(o.end));
        let mut s = span(
            [0; 16],
            id,
            0,
            &o.name,
            SpanKind::Internal as i32,
            (clock.unix(o.start), clock.unix(end)),
        );
        let mut extra = level_target(o.level, &o.target);
        let th = o.thread.unwrap_or_default();
        th.attributes(&mut extra);
        extra.push(kv_u64("typhon.entries", o.entries));
        extra.push(kv_u64("typhon.busy_ns", o.busy));
        s.attributes = attributes(&o.fields, extra);
        s.events = o.events;
        for e in &mut s.events {
            // An event on the span's own thread does not repeat it.
            let same = e.attributes.iter().any(|a| {
                a.key == "thread.name"
                    && a.value.as_ref().and_then(|v| v.value.as_ref())
                        == Some(&Value::StringValue(th.name.clone()))
            });
            if same {
                e.attributes
                    .retain(|a| a.key != "thread.name" && a.key != "thread.id");
            }
        }
        s.dropped_events_count = o.dropped_events;
        s.links = o
            .follows
            .iter()
            .map(|&f| {
                let fid = tracing_span_id(f);
                Link {
                    trace_id: trees.link_trace(fid).to_vec(),
                    span_id: fid.to_be_bytes().to_vec(),
                    ..Link::default()
                }
            })
            .collect();
        s.dropped_links_count = o.dropped_links;
        out.stats.tracing_spans += 1;
        trees.ready(out, s, id)
    }
}

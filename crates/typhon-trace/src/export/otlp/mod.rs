//! OTLP: a recording as OpenTelemetry traces, for a Collector feeding Jaeger or Tempo (SPEC
//! §13). [`write()`] writes one `ExportTraceServiceRequest` (protobuf, or the OTLP JSON encoding:
//! hex ids, integer enums, 64-bit integers as strings); [`export_batches`] hands the same
//! spans out as requests of at most [`OtlpOptions::batch`] spans (what `typhon-rec push`
//! POSTs).
//!
//! ```text
//!  records (page-time order) ─┬─ span records ──► spans: trace known? ── no ─► wait under parent
//!                             │                                  └ yes ─► batch
//!                             ├─ correlation instants ──► commands: held until over ─► root span
//!                             └─ ThreadInfo: thread.id / thread.name of the slot's next spans
//!  batch (≤ N spans, resource + scope) ──► file (requests concatenated = one request) or HTTP
//! ```
//!
//! Mapping:
//! - Every NamedSpan and TracedSpan record is one span with the recording's span id (8 bytes,
//!   big-endian), its name, kind INTERNAL, and UNIX times from the file's wall-clock anchor;
//!   attributes `thread.id`, `thread.name`.
//! - A `tracing` span is one span for all its entries, on whatever threads, from its first
//!   entry's start to its close (a TracingClose record), or to its last entry's end when none
//!   was written; its parent is its recorded `tracing` parent; its fields are attributes, its
//!   events span events, its `follows_from` links Links, and the spans its entries hold its
//!   children (see [`tracing`]: its id is [`tracing_span_id`] of its key).
//! - A TracedSpan with a W3C trace id is a span of that trace; with a command's causal id, a
//!   span of the command's trace (see [`commands`]: the trace id is the causal id, `hi` then
//!   `lo` big-endian, and the span's parent is the command's root span "command S/Q", which
//!   carries the correlation instants as events). A TracedSpan roots its subtree in its trace:
//!   its recorded parent (in another trace) is kept as `typhon.recorded_parent_span_id`.
//! - A NamedSpan or `tracing` span is in its parent's trace; a top-level one (and its subtree)
//!   is a local trace of its own, id = 8 bytes of the recording (FNV-1a of host, pid and
//!   wall-clock anchor) then the root's span id (a `tracing` span's: its key-derived id), so a
//!   thread's work reads as one trace per top-level span (a frame, a job, a request).
//! - Ticks, phases, plain instants, CeLog events and `tracing` events outside any span are not
//!   in the spans: they are left out and counted ([`OtlpStats::left_out`]); the Perfetto export
//!   shows them. Missed counts and damaged pages are counted too.
//! - The resource: `service.name`, `host.name`, `process.pid` (slot 0's ThreadInfo),
//!   `typhon.recording.path`; the scope: "typhon-recorder" and the recorder's version.
//!
//! Memory is a batch, the spans waiting for their parent (the open subtrees), the commands in
//! flight and the open `tracing` spans, each capped ([`spans::MAX_WAITING`],
//! [`commands::MAX_OPEN`], [`tracing::MAX_OPEN`]), not the records.
//!
//! ```
//! use typhon_trace::export::otlp::{write, OtlpOptions};
//! use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
//! let mut dat = std::io::Cursor::new(Vec::new());
//! write_tracedat(&mut dat, &FileMeta::new(4096), &mut []).unwrap();
//! let f = TraceFile::parse(dat.into_inner()).unwrap();
//! let mut out = Vec::new();
//! let s = write(&f, &OtlpOptions::new("my-server"), true, &mut out).unwrap();
//! assert_eq!((s.records, s.batches), (0, 0));
//! assert_eq!(out, b"{\"resourceSpans\":[]}\n");
//! ```

mod batch;
pub mod commands;
pub mod spans;
pub mod tracing;
mod values;

pub use commands::{root_span_id, NO_DRAIN_TICK};
/// The OTLP types (prost) the export builds, for callers that send or read them.
pub use opentelemetry_proto;
pub use tracing::tracing_span_id;

use super::error::ExportError;
use crate::tracedat::{TraceDatError, TraceFile};
use batch::Batch;
use commands::Commands;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use spans::Trees;
use std::io::{self, Write};
use tracing::TracingSpans;
use typhon_recorder::codec::correlation::command_of_causal_id;
use typhon_recorder::codec::records::{self, Record as Body};
use typhon_recorder::codec::TraceEventKind as K;
use values::{hex, kv_int, kv_str, span, trace_id, Clock, ThreadId};

/// What the export says about the recording, and how it batches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpOptions {
    /// `service.name`.
    pub service: String,
    /// `host.name`: the file does not record it; [`OtlpOptions::new`] takes this machine's.
    pub host: String,
    /// `typhon.recording.path` (left out when empty).
    pub recording: String,
    /// Spans per request (at least 1).
    pub batch: usize,
}

impl OtlpOptions {
    /// `service` on this machine's host name, batches of 512 spans (the OpenTelemetry SDKs'
    /// default export batch).
    ///
    /// ```
    /// let o = typhon_trace::export::otlp::OtlpOptions::new("game");
    /// assert_eq!((o.service.as_str(), o.batch), ("game", 512));
    /// ```
    pub fn new(service: &str) -> Self {
        OtlpOptions {
            service: service.to_string(),
            host: host_name(),
            recording: String::new(),
            batch: 512,
        }
    }
}

/// This machine's host name (Linux: the kernel's), "localhost" if unreadable.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// What went into an OTLP export. Every record is counted once: `records = spans +
/// correlation + thread_infos + definitions + tracing_entries + tracing_descriptions +
/// tracing_events + tracing_links + left_out`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtlpStats {
    /// Records read.
    pub records: u64,
    /// NamedSpan and TracedSpan records (each one OTLP span).
    pub spans: u64,
    /// `tracing` span entries (all of a span's entries are one OTLP span).
    pub tracing_entries: u64,
    /// `tracing` span descriptions (their fields are their span's attributes).
    pub tracing_descriptions: u64,
    /// `tracing` events in a span (each an event of its span, or beyond 128 counted in its
    /// `dropped_events_count`; those outside any span, or in one never entered, are
    /// `left_out`).
    pub tracing_events: u64,
    /// `follows_from` records (each a Link of the span that follows).
    pub tracing_links: u64,
    /// OTLP spans written for `tracing` spans.
    pub tracing_spans: u64,
    /// `tracing` records that came after their span was written (idle for 30 s, or too many
    /// open): an entry is written as a span of its own under it, an event or link is left out
    /// (and counted in `left_out` too).
    pub tracing_late: u64,
    /// `tracing` spans described but never entered: no span (their events and links are
    /// `left_out`).
    pub tracing_unentered: u64,
    /// Definitions (`tracing` callsites), which name the records that use them.
    pub definitions: u64,
    /// Correlation instants (each an event of its command's root, or an unjoined EgressSent).
    pub correlation: u64,
    /// ThreadInfo records (they name the spans' threads).
    pub thread_infos: u64,
    /// Records that are not in the OTLP spans (ticks, phases, instants, CeLog, `tracing` events
    /// outside any span, undecodable records).
    pub left_out: u64,
    /// Command root spans written.
    pub commands: u64,
    /// IngressDropped instants (each sets its root's status ERROR).
    pub commands_dropped: u64,
    /// Command roots written for a (session, drain tick, seq) already written (a resend, or
    /// events that arrived after their command was over): each has its own span id.
    pub command_repeats: u64,
    /// EgressSent instants that matched no command held (their session and tick).
    pub egress_unjoined: u64,
    /// Spans written: recorded ones plus command roots.
    pub spans_written: u64,
    /// Span events written (an EgressSent joins every command of its session and tick).
    pub events: u64,
    /// Requests written.
    pub batches: u64,
    /// Spans whose parent is not in the recording (lost, or still open at its end): written
    /// in a local trace named after that parent.
    pub orphans: u64,
    /// Spans written before their parent arrived because too many waited.
    pub split: u64,
    /// Events the pages' missed counts say were lost.
    pub lost_events: u64,
    /// Damaged pages the reader skipped.
    pub damaged_pages: u64,
    /// Records whose own time was before zero (placed at their page time).
    pub negative_times: u64,
    /// The file has no wall-clock anchor: times are its monotonic clock's, not UNIX times.
    pub no_wall_anchor: bool,
    /// Most spans waiting for their parent at once (the open subtrees).
    pub peak_waiting: u64,
    /// Most commands held at once (in flight, or waiting for their egress).
    pub peak_commands: u64,
    /// Most `tracing` spans open at once.
    pub peak_tracing_open: u64,
    /// `tracing` spans' closes (TracingClose records) that ended their span.
    pub tracing_closes: u64,
}

/// Reads `file` and hands its spans to `out` as requests of at most `opts.batch` spans, with
/// the records read so far. Returns what went in.
///
/// # Errors
/// [`ExportError::Read`] if the record data cannot be read; [`ExportError::Io`] with `out`'s
/// error.
pub fn export_batches(
    file: &TraceFile,
    opts: &OtlpOptions,
    out: &mut dyn FnMut(ExportTraceServiceRequest, u64) -> io::Result<()>,
) -> Result<OtlpStats, ExportError> {
    let meta = file.typhon_meta().and_then(Result::ok);
    let anchor = meta
        .as_ref()
        .filter(|m| m.mono_anchor_ns > 0 && m.wall_anchor_ns > 0)
        .map(|m| (m.mono_anchor_ns, m.wall_anchor_ns));
    let clock = Clock {
        anchor,
        map: anchor.map_or_else(Default::default, |_| crate::clocksync::ClockMap::of(file)),
    };
    let pid = find_pid(file);
    let mut attributes = vec![
        kv_str("service.name", &opts.service),
        kv_str("host.name", &opts.host),
    ];
    if let Some(p) = pid {
        attributes.push(kv_int("process.pid", p));
    }
    if !opts.recording.is_empty() {
        attributes.push(kv_str("typhon.recording.path", &opts.recording));
    }
    let mut b = Batch {
        resource: Resource {
            attributes,
            ..Resource::default()
        },
        scope: InstrumentationScope {
            name: "typhon-recorder".into(),
            version: meta.map_or_else(String::new, |m| m.recorder_version),
            ..InstrumentationScope::default()
        },
        spans: Vec::new(),
        max: opts.batch.max(1),
        out,
        stats: OtlpStats {
            no_wall_anchor: anchor.is_none(),
            ..OtlpStats::default()
        },
    };
    let key = local_key(&opts.host, pid, anchor);
    let mut trees = Trees::new(key);
    let mut cmds = Commands::default();
    let mut tracing = TracingSpans::default();
    let mut threads: Vec<Option<ThreadId>> = Vec::new();
    let mut recs = file.stream_records();
    while let Some(r) = recs.next() {
        // A TracingSpan handed out for a compact entry, an info for a TracingSpanValues: what
        // their ids and `tracing_id` mean depends on it.
        let written = recs.written_kind();
        let r = match r {
            Ok(r) => r,
            Err(TraceDatError::DamagedPage { pages, .. }) => {
                b.stats.damaged_pages = b.stats.damaged_pages.saturating_add(pages);
                continue;
            }
            Err(error) => {
                return Err(ExportError::Read {
                    records: b.stats.records,
                    error,
                })
            }
        };
        b.stats.records += 1;
        if let Some(m) = r.missed_before.and_then(|m| u64::try_from(m).ok()) {
            b.stats.lost_events += m;
        }
        let slot = r.cpu as usize;
        if threads.len() <= slot {
            threads.resize(slot + 1, None);
        }
        let th = threads[slot].get_or_insert_with(|| ThreadId {
            tid: None,
            name: slot_name(file, r.cpu),
        });
        let Ok((h, body)) = records::decode(&r.data) else {
            b.stats.left_out += 1;
            continue;
        };
        // A record's own time is its header's (a span's start); one before zero stands at its
        // page time (a span: its end, starting its duration earlier), as in the other exports.
        let dur = match body {
            Body::NamedSpan { span, .. }
            | Body::TracedSpan { span, .. }
            | Body::TracingSpan { span, .. } => Some(span.duration_ns),
            _ => None,
        };
        let ts = u64::try_from(h.timestamp).unwrap_or_else(|_| {
            b.stats.negative_times += 1;
            r.ts.saturating_sub(dur.and_then(|d| u64::try_from(d).ok()).unwrap_or(0))
        });
        let end = ts.saturating_add(dur.and_then(|d| u64::try_from(d).ok()).unwrap_or(0));
        match body {
            Body::ThreadInfo {
                thread_id, name, ..
            } => {
                b.stats.thread_infos += 1;
                th.tid = Some(i64::from(thread_id));
                th.name = if name.is_empty() {
                    slot_name(file, r.cpu)
                } else {
                    name.to_string()
                };
            }
            Body::TracingSpan {
                span: x, key, name, ..
            } => {
                b.stats.tracing_entries += 1;
                tracing.entry(
                    &mut b,
                    &mut trees,
                    &clock,
                    (key, &x, name, written == K::TRACING_ENTRY),
                    (ts, end),
                    th,
                    r.ts,
                )?;
            }
            Body::TracingSpanInfo {
                key,
                tracing_id,
                level,
                target,
                fields,
                ..
            } => {
                b.stats.tracing_descriptions += 1;
                // A TracingSpanValues' info carries its `tracing` parent's key there.
                let values = written == K::TRACING_SPAN_VALUES;
                tracing.describe((key, tracing_id, values), r.ts, (level, target, fields));
            }
            Body::TracingClose { key } => {
                if tracing.closed(key, ts, r.ts) {
                    b.stats.tracing_closes += 1;
                } else {
                    b.stats.left_out += 1;
                    b.stats.tracing_late += 1;
                }
            }
            Body::TracingEvent {
                span_key,
                level,
                target,
                message,
                fields,
            } => {
                let ev = (level, target, message, fields);
                if span_key == 0 {
                    b.stats.left_out += 1;
                } else if tracing.event(&clock, span_key, ts, ev, th, r.ts) {
                    b.stats.tracing_events += 1;
                } else {
                    b.stats.left_out += 1;
                    b.stats.tracing_late += 1;
                }
            }
            Body::TracingFollows { key, follows_key } => {
                if tracing.follows(key, follows_key, r.ts) {
                    b.stats.tracing_links += 1;
                } else {
                    b.stats.left_out += 1;
                    b.stats.tracing_late += 1;
                }
            }
            Body::TracingCallsite(_) => b.stats.definitions += 1,
            Body::NamedSpan { span: x, name } => {
                b.stats.spans += 1;
                let mut s = span(
                    [0; 16],
                    x.span_id,
                    x.parent_span_id,
                    name,
                    SpanKind::Internal as i32,
                    (clock.unix(ts), clock.unix(end)),
                );
                th.attributes(&mut s.attributes);
                trees.span(&mut b, s, x.span_id, x.parent_span_id, None)?;
            }
            Body::TracedSpan {
                span: x,
                context,
                name,
            } => {
                b.stats.spans += 1;
                let command = command_of_causal_id(context.hi, context.lo);
                let parent = command.map_or(0, |(session, _, seq)| root_span_id(session, seq));
                let mut s = span(
                    trace_id(context),
                    x.span_id,
                    parent,
                    name,
                    SpanKind::Internal as i32,
                    (clock.unix(ts), clock.unix(end)),
                );
                th.attributes(&mut s.attributes);
                if x.parent_span_id != 0 {
                    let p = hex(&x.parent_span_id.to_be_bytes());
                    s.attributes
                        .push(kv_str("typhon.recorded_parent_span_id", &p));
                }
                if let Some(c) = command {
                    cmds.span(c, ts, end, th);
                }
                trees.span(&mut b, s, x.span_id, 0, Some(trace_id(context)))?;
            }
            Body::Correlation(i) => {
                b.stats.correlation += 1;
                cmds.instant(&mut b, &clock, (ts, &r.data, i), th)?;
            }
            _ => b.stats.left_out += 1,
        }
        cmds.expire(&mut b, &clock, r.ts)?;
        tracing.expire(&mut b, &mut trees, &clock, r.ts)?;
    }
    cmds.finish(&mut b, &clock)?;
    tracing.finish(&mut b, &mut trees, &clock)?;
    b.stats.orphans = trees.release_all(&mut b)?;
    b.flush()?;
    Ok(b.stats)
}

/// Writes `file` to `out` as one `ExportTraceServiceRequest`: protobuf (the batches'
/// encodings one after the other, which protobuf reads as one message whose `resource_spans`
/// are all of theirs), or with `json` the OTLP JSON encoding (`{"resourceSpans":[…]}`),
/// streaming either way. Flushes `out`.
///
/// # Errors
/// As [`export_batches`].
pub fn write(
    file: &TraceFile,
    opts: &OtlpOptions,
    json: bool,
    out: &mut impl Write,
) -> Result<OtlpStats, ExportError> {
    if json {
        out.write_all(b"{\"resourceSpans\":[")?;
    }
    let mut first = true;
    let stats = {
        let mut emit = |req: ExportTraceServiceRequest, _: u64| -> io::Result<()> {
            if !json {
                return out.write_all(&req.encode_to_vec());
            }
            for rs in &req.resource_spans {
                if !first {
                    out.write_all(b",\n")?;
                }
                first = false;
                serde_json::to_writer(&mut *out, rs)?;
            }
            Ok(())
        };
        export_batches(file, opts, &mut emit)?
    };
    if json {
        out.write_all(b"]}\n")?;
    }
    out.flush()?;
    Ok(stats)
}

/// The process id: the ThreadInfo of slot 0 (the recorder's own stream), read ahead.
fn find_pid(file: &TraceFile) -> Option<i64> {
    file.stream_cpu(0)
        .flatten()
        .find_map(|r| match records::decode(&r.data) {
            Ok((_, Body::ThreadInfo { thread_id, .. })) => Some(i64::from(thread_id)),
            _ => None,
        })
}

fn slot_name(file: &TraceFile, slot: u32) -> String {
    file.cmdline(i64::from(slot))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("slot {slot}"), str::to_string)
}

/// The recording's half of its local trace ids: FNV-1a of host, pid and wall-clock anchor, so
/// recordings of different processes and machines do not share trace ids, and exporting the
/// same file twice gives the same ids (a backend keeps one copy).
fn local_key(host: &str, pid: Option<i64>, anchor: Option<(i64, i64)>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let (mono, wall) = anchor.unwrap_or((0, 0));
    let bytes = host
        .bytes()
        .chain(pid.unwrap_or(0).to_le_bytes())
        .chain(wall.to_le_bytes())
        .chain(mono.to_le_bytes());
    for x in bytes {
        h = (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

//! Chrome trace-event JSON: `{"displayTimeUnit":"ns","traceEvents":[...]}`, read by
//! chrome://tracing, ui.perfetto.dev, Chrome DevTools and speedscope. Best for small
//! recordings: the file comes out about 12 times the size of the Perfetto format's.
//!
//! ```text
//!  {"ph":"M","name":"process_name"|"thread_name","pid","tid","args":{"name":…}}
//!  {"ph":"X","name","pid","tid","ts","dur","args":{…}}   a slice (ts, dur: µs with 3 decimals)
//!  {"ph":"i","s":"t","name","pid","tid","ts","args"}     an instant; "events lost" with a count
//!  {"ph":"C","name","pid","tid","ts","args":{"value":…}}   a counter's value
//!  {"ph":"s"|"f","id","name":"follows_from","cat","pid","tid","ts"}   a follows_from link
//! ```
//!
//! Events come in time order (the engine's watermark; a span longer than its window comes a
//! little late, and readers sort by time anyway). Slices are complete ("X") events: importers
//! that match a begin with its end by name and arguments (speedscope) or keep one begin/end
//! stack for all threads (Chrome DevTools) take them as they are, which they do not for
//! "B"/"E" pairs.
//!
//! An overlap lane gets its own tid (`OVERLAP_TID + track`) named "thread (overlap k)".
//! `follows_from` links are flow events (`"ph":"s"` at the TracingFollows instant, `"ph":"f"`
//! bound to the entry of the span that follows; a viewer draws the arrow when the instant lies
//! in a slice of its thread). Command flows are left out: the format binds flows to slices,
//! and most correlated events are instants.
//!
//! Each argument has one JSON type in every event: 64-bit identifiers (span ids, `tracing`
//! keys) are hex strings (`"0x0100000000000001"`: JavaScript numbers would round them), other
//! integers numbers, text strings. A loss mark carries `"count": N`, or `"not_counted": true`.
//! A `tracing` span's slices carry its fields too, each by its name with its value's type
//! (an integer beyond 2^53 as a decimal string; a float that is not finite is `null`).
//!
//! ```
//! use typhon_trace::export::{chrome, Timeline};
//! let mut out = Vec::new();
//! chrome::write(&Timeline::default(), &mut out).unwrap();
//! let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert_eq!(v["traceEvents"][0]["name"], "process_name");
//! ```

use super::args::{event_name, field_args, shown_args, Arg};
use super::engine::{Item, Kind, Sink};
use super::timeline::{Thread, Timeline, Track};
use std::borrow::Cow;
use std::io::{self, Write};
use typhon_recorder::codec::{records, TraceEventKind as K};

/// The largest integer JavaScript's numbers hold exactly (2^53).
const JS_EXACT: i64 = 1 << 53;

/// The tid of overlap track `t` is `OVERLAP_TID + t`.
pub const OVERLAP_TID: i64 = 0x7E00_0000;

/// Writes `t` as Chrome trace-event JSON.
///
/// # Errors
/// Those of `out`.
pub fn write(t: &Timeline<'_>, out: &mut impl Write) -> io::Result<()> {
    let mut w = Writer::new(out, t.pid, &t.process_name)?;
    t.replay(&mut w)?;
    w.finish()
}

/// The streaming Chrome JSON writer: each event is written as it comes (a slice when it ends,
/// as an "X" event).
pub(super) struct Writer<'o, W: Write> {
    out: &'o mut W,
    pid: i64,
    /// Each track's tid, as first described (a thread's events keep one tid).
    tids: Vec<i64>,
}

impl<'o, W: Write> Writer<'o, W> {
    /// Starts the JSON with the process's name.
    pub(super) fn new(out: &'o mut W, pid: i64, process_name: &str) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        write!(
            out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":{pid},\"args\":{{\"name\":{}}}}}",
            json_str(process_name)
        )?;
        Ok(Writer {
            out,
            pid,
            tids: Vec::new(),
        })
    }

    /// Closes the JSON.
    pub(super) fn finish(self) -> io::Result<()> {
        self.out.write_all(b"\n]}\n")
    }
}

impl<W: Write> Sink for Writer<'_, W> {
    fn track(
        &mut self,
        index: u32,
        track: Track,
        thread: &Thread,
        _thread_track: u32,
        name: &str,
    ) -> io::Result<()> {
        let i = index as usize;
        if self.tids.len() <= i {
            self.tids.resize(i + 1, i64::MIN);
        }
        if self.tids[i] == i64::MIN {
            self.tids[i] = if track.lane == 0 {
                thread.tid
            } else {
                OVERLAP_TID + i64::from(index)
            };
        }
        write!(
            self.out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            self.pid,
            self.tids[i],
            json_str(name)
        )
    }

    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        let pid = self.pid;
        let ts = micros(it.ts);
        let tid = self.tids.get(it.track as usize).copied().unwrap_or(0);
        let out = &mut *self.out;
        match (it.kind, it.rec) {
            (kind @ (Kind::Lost(_) | Kind::Damaged(_)), _) => {
                // "count" is always a number: a loss without one says so in its own argument.
                let count = match kind {
                    Kind::Lost(Some(n)) => format!("\"count\":{n}"),
                    Kind::Damaged(n) => format!("\"not_counted\":true,\"damaged_pages\":{n}"),
                    _ => "\"not_counted\":true".to_string(),
                };
                write!(
                    out,
                    ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"events lost\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{{count}}}}}"
                )
            }
            (Kind::End, _) => Ok(()),
            // A counter: "C" events of one name make a counter track of the process (the
            // format keys counters by pid and name; the thread is not part of it).
            (Kind::Counter, Some((r, _))) => match records::decode(r) {
                Ok((_, records::Record::Counter { value, name })) => {
                    let v = match value.as_i64() {
                        Some(i) => i.to_string(),
                        // JSON has no NaN or infinity: such values are written as null.
                        None if value.as_f64().is_finite() => value.as_f64().to_string(),
                        None => "null".to_string(),
                    };
                    write!(
                        out,
                        ",\n{{\"ph\":\"C\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{\"value\":{v}}}}}",
                        json_str(name)
                    )
                }
                _ => Ok(()),
            },
            (kind, rec) => {
                let ph = if kind == Kind::Slice {
                    format!("\"X\",\"dur\":{}", micros(it.end.saturating_sub(it.ts)))
                } else {
                    "\"i\",\"s\":\"t\"".to_string()
                };
                let name = rec.map(|r| event_name(r.0)).unwrap_or_default();
                write!(
                    out,
                    ",\n{{\"ph\":{ph},\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{",
                    json_str(&name)
                )?;
                let args = rec.map(|r| shown_args(r.0)).unwrap_or_default();
                let fields = it.fields.map(|f| field_args(f, &args)).unwrap_or_default();
                let all = args.into_iter().map(|(n, v, id)| (Cow::Borrowed(n), v, id));
                let all = all.chain(fields.into_iter().map(|(n, v)| (n, v, false)));
                for (k, (name, v, id)) in all.enumerate() {
                    // One JSON type per argument: ids are hex strings, other integers numbers
                    // (ours at most 32 bits wide; a field's beyond 2^53, which JavaScript
                    // would round, a decimal string).
                    let v = match v {
                        Arg::U(u) if id => format!("\"0x{u:016x}\""),
                        Arg::I(i) if id => format!("\"0x{:016x}\"", i as u64),
                        Arg::U(u) if u > JS_EXACT as u64 => format!("\"{u}\""),
                        Arg::I(i) if i.unsigned_abs() > JS_EXACT as u64 => format!("\"{i}\""),
                        Arg::U(u) => u.to_string(),
                        Arg::I(i) => i.to_string(),
                        Arg::S(s) => json_str(&s),
                        Arg::F(f) => serde_json::Value::from(f).to_string(),
                        Arg::B(b) => b.to_string(),
                    };
                    let sep = if k == 0 { "" } else { "," };
                    write!(out, "{sep}{}:{v}", json_str(&name))?;
                }
                out.write_all(b"}}")?;
                // A `follows_from` link: a flow from the TracingFollows instant to the entry of
                // the span that follows, bound to the slice it starts ("bp":"e": the enclosing
                // slice at that time, the entry itself).
                let follows = match rec.and_then(|r| r.0.get(2)).copied().map(K) {
                    Some(K::TRACING_FOLLOWS) => Some("\"s\""),
                    Some(K::TRACING_SPAN) => Some("\"f\",\"bp\":\"e\""),
                    _ => None,
                };
                match follows {
                    Some(ph) if it.flow != 0 => write!(
                        out,
                        ",\n{{\"ph\":{ph},\"id\":{},\"name\":\"follows_from\",\"cat\":\"follows_from\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}}}",
                        it.flow
                    ),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Nanoseconds as microseconds with three decimals, exactly.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

//! Chrome trace-event JSON: `{"displayTimeUnit":"ns","traceEvents":[...]}`, read by
//! chrome://tracing, ui.perfetto.dev, Chrome DevTools and speedscope. Best for small
//! recordings: the file comes out about 2.5 times the size of the Perfetto format's.
//!
//! ```text
//!  {"ph":"M","name":"process_name"|"thread_name","pid","tid","args":{"name":…}}
//!  {"ph":"X","name","pid","tid","ts","dur","args":{…}}   a slice (ts, dur: µs with 3 decimals)
//!  {"ph":"i","s":"t","name","pid","tid","ts","args"}     an instant; "events lost" with a count
//! ```
//!
//! Slices are complete ("X") events, written when they end (readers order events by time): importers that match a begin with its end
//! by name and arguments (speedscope) or keep one begin/end stack for all threads (Chrome
//! DevTools) take them as they are, which they do not for "B"/"E" pairs.
//!
//! An overlap lane gets its own tid (`OVERLAP_TID + track`) named "thread (overlap k)". Flows
//! are left out: the format binds them to slices, and most correlated events are instants.
//! Integers beyond ±2^53 (span ids carry the slot in their top byte) are written as strings,
//! since JavaScript readers would round them.
//!
//! ```
//! use typhon_trace::export::{chrome, Timeline};
//! let mut out = Vec::new();
//! chrome::write(&Timeline::default(), &mut out).unwrap();
//! let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert_eq!(v["traceEvents"][0]["name"], "process_name");
//! ```

use super::args::{event_args, event_name, Arg};
use super::engine::{Item, Kind, Sink};
use super::timeline::{Thread, Timeline, Track};
use std::io::{self, Write};

/// The tid of overlap track `t` is `OVERLAP_TID + t`.
pub const OVERLAP_TID: i64 = 0x7E00_0000;

/// Largest integer a JavaScript number holds exactly.
const JS_SAFE: u64 = (1 << 53) - 1;

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
            (Kind::Lost(n), _) => {
                let count = n.map_or_else(|| "\"not counted\"".to_string(), int_u);
                write!(
                    out,
                    ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"events lost\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{\"count\":{count}}}}}"
                )
            }
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
                let args = rec.map(|r| event_args(r.0)).unwrap_or_default();
                for (k, (name, v)) in args.into_iter().enumerate() {
                    let v = match v {
                        Arg::U(u) => int_u(u),
                        Arg::I(i) if i.unsigned_abs() <= JS_SAFE => i.to_string(),
                        Arg::I(i) => format!("\"{i}\""),
                        Arg::S(s) => json_str(&s),
                    };
                    let sep = if k == 0 { "" } else { "," };
                    write!(out, "{sep}{}:{v}", json_str(name))?;
                }
                out.write_all(b"}}")
            }
        }
    }
}

/// Nanoseconds as microseconds with three decimals, exactly.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn int_u(u: u64) -> String {
    if u <= JS_SAFE {
        u.to_string()
    } else {
        format!("\"{u}\"")
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

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
//! Slices are complete ("X") events, in start order: importers that match a begin with its end
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
use super::timeline::{Phase, Timeline};
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
    let tid = |track: usize| {
        let tr = t.tracks[track];
        if tr.lane == 0 {
            t.threads[tr.thread].tid
        } else {
            OVERLAP_TID + track as i64
        }
    };
    // Each slice's end, found by pairing Begin and End events per track.
    let mut ends = vec![0u64; t.events.len()];
    let mut open: Vec<Vec<usize>> = vec![Vec::new(); t.tracks.len()];
    for (i, e) in t.events.iter().enumerate() {
        match e.phase {
            Phase::Begin => open[e.track as usize].push(i),
            Phase::End => {
                if let Some(b) = open[e.track as usize].pop() {
                    ends[b] = e.ts;
                }
            }
            Phase::Instant | Phase::Lost(_) => {}
        }
    }
    let pid = t.pid;
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    write!(
        out,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":{pid},\"args\":{{\"name\":{}}}}}",
        json_str(&t.process_name)
    )?;
    for i in 0..t.tracks.len() {
        write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            tid(i),
            json_str(&t.track_name(i))
        )?;
    }
    for (i, e) in t.events.iter().enumerate() {
        let ts = micros(e.ts);
        let tid = tid(e.track as usize);
        match (e.phase, e.rec) {
            // Written with its Begin.
            (Phase::End, _) => {}
            (Phase::Lost(n), _) => {
                let count = n.map_or_else(|| "\"not counted\"".to_string(), int_u);
                write!(
                    out,
                    ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"events lost\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{\"count\":{count}}}}}"
                )?;
            }
            (Phase::Begin | Phase::Instant, rec) => {
                let ph = if e.phase == Phase::Begin {
                    format!("\"X\",\"dur\":{}", micros(ends[i].saturating_sub(e.ts)))
                } else {
                    "\"i\",\"s\":\"t\"".to_string()
                };
                // Begin and Instant events always carry their record; an empty name would
                // still keep the slice balanced.
                let name = rec.map(event_name).unwrap_or_default();
                write!(
                    out,
                    ",\n{{\"ph\":{ph},\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{",
                    json_str(&name)
                )?;
                let args = rec.map(event_args).unwrap_or_default();
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
                out.write_all(b"}}")?;
            }
        }
    }
    out.write_all(b"\n]}\n")
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

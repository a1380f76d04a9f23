//! Chrome trace-event JSON: `{"displayTimeUnit":"ns","traceEvents":[...]}`, read by
//! chrome://tracing, ui.perfetto.dev and Speedscope. Best for small recordings: each event is
//! about ten times larger than in the Perfetto format.
//!
//! ```text
//!  {"ph":"M","name":"process_name"|"thread_name","pid","tid","args":{"name":…}}
//!  {"ph":"B","name","pid","tid","ts","args":{…}}     a slice opens   (ts: µs, 3 decimals = ns)
//!  {"ph":"E","pid","tid","ts"}                          the innermost slice of tid closes
//!  {"ph":"i","s":"t","name","pid","tid","ts","args"}   an instant; "events lost" with a count
//! ```
//!
//! An overlap lane gets its own tid (`OVERLAP_TID + track`) named "thread (overlap k)". Flows
//! are left out: the format binds them to slices, and most correlated events are instants.
//! Integers beyond ±2^53 (span ids carry the slot in their top byte) are written as strings,
//! since JavaScript readers would round them.
//!
//! ```
//! use typhon_recorder::export::{chrome, Timeline};
//! let mut out = Vec::new();
//! chrome::write(&Timeline::default(), &mut out).unwrap();
//! let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
//! assert_eq!(v["traceEvents"][0]["name"], "process_name");
//! ```

use super::{event_args, event_name, Arg, Phase, Timeline};
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
    for e in &t.events {
        let ts = format!("{}.{:03}", e.ts / 1000, e.ts % 1000);
        let tid = tid(e.track as usize);
        match (e.phase, e.rec) {
            (Phase::End, _) => {
                write!(
                    out,
                    ",\n{{\"ph\":\"E\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts}}}"
                )?;
            }
            (Phase::Lost(n), _) => {
                let count = n.map_or_else(|| "\"not counted\"".to_string(), int_u);
                write!(
                    out,
                    ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"events lost\",\"pid\":{pid},\"tid\":{tid},\"ts\":{ts},\"args\":{{\"count\":{count}}}}}"
                )?;
            }
            (Phase::Begin | Phase::Instant, rec) => {
                let ph = if e.phase == Phase::Begin {
                    "\"B\""
                } else {
                    "\"i\",\"s\":\"t\""
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

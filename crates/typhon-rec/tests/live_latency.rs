//! Updates reach the page within 2 s of the write at the defaults (SPEC §17): a recorder with
//! the builder's defaults (a partly filled page goes out after 1 s), one tick written by a
//! quiet thread, and the event stream of `typhon-rec live` following it, timed from the write
//! to the first update that counts the tick.

mod common;
mod live;

use common::{tmp, BIN};
use live::Live;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use typhon_recorder::RecorderBuilder;

#[test]
fn a_tick_reaches_the_event_stream_within_two_seconds() {
    let out = tmp("live-latency").join("rec.dat");
    let rec = RecorderBuilder::new().output(&out).start().unwrap();
    typhon_recorder::register_thread();
    let live = Live::start(BIN, &out, &[]);
    let mut s = TcpStream::connect(&live.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /events?t={} HTTP/1.1\r\nHost: x\r\n\r\n",
        live.token
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    // The updates before the follower's first look say "opening"; then it is live, no ticks.
    let ticks_of = |r: &mut BufReader<TcpStream>, line: &mut String| loop {
        line.clear();
        assert!(r.read_line(line).unwrap() > 0, "the stream ended");
        if let Some(d) = line.strip_prefix("data: ") {
            let v: serde_json::Value = serde_json::from_str(d).unwrap();
            break (
                v["state"].as_str().unwrap().to_owned(),
                v["ticks"].as_u64().unwrap(),
            );
        }
    };
    let (state, ticks) = loop {
        let (state, ticks) = ticks_of(&mut r, &mut line);
        if state != "opening" {
            break (state, ticks);
        }
    };
    assert_eq!((state.as_str(), ticks), ("live", 0));
    let t0 = Instant::now();
    typhon_recorder::tick_start();
    typhon_recorder::tick_end(0, 1);
    let took = loop {
        let (_, ticks) = ticks_of(&mut r, &mut line);
        if ticks == 1 {
            break t0.elapsed();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the tick never arrived"
        );
    };
    eprintln!("a quiet thread's tick reached the event stream in {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    rec.finish().unwrap();
}

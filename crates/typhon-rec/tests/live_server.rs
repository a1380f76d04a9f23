//! `typhon-rec live` as an HTTP server, on a finished demo file: what `/api/state` answers
//! against what the file holds, the token, the bounds on headers, requests and connections,
//! the event stream, and the export of chosen ticks.

mod common;
mod live;

use common::{rec, tmp, BIN};
use live::{header, raw, Live};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use typhon_recorder::codec::records::decode_fields;
use typhon_recorder::codec::TraceEventKind as K;
use typhon_trace::tracedat::TraceFile;

fn demo(name: &str) -> PathBuf {
    demo_with(name, &[])
}

fn demo_with(name: &str, extra: &[&str]) -> PathBuf {
    let out = tmp(name).join("demo.dat");
    let mut args = vec![
        "demo",
        "-o",
        out.to_str().unwrap(),
        "--duration",
        "1.5",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (ok, _, err) = rec(&args);
    assert!(ok, "{err}");
    out
}

/// (records, ticks) of the file.
fn file_counts(file: &Path) -> (u64, u64) {
    let recs = common::records(file);
    let ticks = recs.iter().filter(|r| r.2 == K::TICK_END.0).count();
    (recs.len() as u64, ticks as u64)
}

/// On a finished file larger than what one poll of a followed recording takes (32 768
/// records), every tick is summarised and every record read, none skipped.
#[test]
fn state_answers_what_the_file_holds() {
    let file = demo_with("live-state", &["--rate", "200000"]);
    let (records, ticks) = file_counts(&file);
    assert!(
        records > 200_000,
        "a demo of {records} records is too small for this test"
    );
    let live = Live::start(BIN, &file, &[]);
    let s = live.wait_state(60, |s| s["state"] == "finished" && s["records"] == records);
    assert_eq!(s["ticks"], ticks, "{s}");
    assert_eq!(s["viewer"]["skipped_records"], 0, "{s}");
    assert_eq!(s["viewer"]["skipped_segments"], 0, "{s}");
    assert_eq!(s["viewer"]["read"], records, "{s}");
    // The demo's counters: its gauges at every tick's end ("entities" 1000 + tick % 64), and
    // one named at run time, each with its values of the last seconds.
    let series = s["counters"]["series"].as_array().expect("counters.series");
    let by: std::collections::BTreeMap<&str, &serde_json::Value> = series
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c))
        .collect();
    for n in ["entities", "records", "frame budget used"] {
        assert!(by.contains_key(n), "{n} missing from the counters: {s}");
    }
    let e = by["entities"];
    assert_eq!(e["count"], ticks, "a value per tick: {e}");
    let (t, v) = (e["t"].as_array().unwrap(), e["v"].as_array().unwrap());
    assert!(!v.is_empty() && t.len() == v.len(), "{e}");
    assert!(
        v.iter()
            .all(|x| (1000.0..1064.0).contains(&x.as_f64().unwrap())),
        "{e}"
    );
    let (min, max) = (e["min"].as_f64().unwrap(), e["max"].as_f64().unwrap());
    assert!(1000.0 <= min && min <= max && max < 1064.0, "{e}");
    let t: Vec<f64> = t.iter().map(|x| x.as_f64().unwrap()).collect();
    assert!(
        t.windows(2).all(|w| w[0] <= w[1]) && t[t.len() - 1] <= 0.0,
        "{t:?}"
    );
    assert_eq!(s["counters"]["other_values"], 0, "{s}");
    let losses = s["losses"].as_object().expect("losses is an object");
    assert!(losses.values().all(|v| v.is_u64()), "{s}");
    let spans = s["spans"].as_array().unwrap();
    let names: BTreeSet<&str> = spans.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for n in ["apply-command", "simulation", "input", "output"] {
        assert!(names.contains(n), "{n} missing from {names:?}");
    }
    for r in spans {
        let (p50, p99, max) = (&r["p50_ns"], &r["p99_ns"], &r["max_ns"]);
        let (p50, p99, max) = (
            p50.as_u64().unwrap(),
            p99.as_u64().unwrap(),
            max.as_u64().unwrap(),
        );
        assert!(
            r["count"].as_u64().unwrap() > 0 && p50 <= p99 && p99 <= max,
            "{r}"
        );
    }
    // By p99, slowest first.
    let p99s: Vec<u64> = spans
        .iter()
        .map(|r| r["p99_ns"].as_u64().unwrap())
        .collect();
    assert!(p99s.windows(2).all(|w| w[0] >= w[1]), "{p99s:?}");
    // A server recording: command rates and drops.
    assert!(
        s["commands"]["received_per_s"].as_f64().unwrap() > 0.0,
        "{s}"
    );
}

/// A rotating recording whose `keep` deleted its first segments: the viewer says how many it
/// could not read (`viewer.skipped_segments`, and its message), apart from the recording's
/// losses, and accounts for every record of the segments kept (read or skipped).
#[test]
fn segments_deleted_before_the_viewer_came_are_said_apart_from_losses() {
    let out = demo_with(
        "live-rotate",
        &["--rate", "100000", "--rotate", "256KiB", "--keep", "2"],
    );
    let kept = typhon_recorder::sink::segment_files(&out).unwrap();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let first = kept[0].to_str().unwrap();
    let first: u64 = first[first.len() - 6..].parse().unwrap();
    assert!(first > 1, "no segment was deleted: {kept:?}");
    let records: u64 = kept.iter().map(|f| common::records(f).len() as u64).sum();
    let live = Live::start(BIN, &out, &[]);
    let s = live.wait_state(60, |s| s["state"] == "finished" && s["records"] == records);
    assert_eq!(s["viewer"]["skipped_segments"], first - 1, "{s}");
    // Both kept segments are read in one poll, more than it takes: the oldest pages are
    // skipped, and counted, apart too.
    let v = &s["viewer"];
    let (read, skipped) = (
        v["read"].as_u64().unwrap(),
        v["skipped_records"].as_u64().unwrap(),
    );
    assert_eq!(read + skipped, records, "{s}");
    let msg = s["message"].as_str().unwrap();
    assert!(msg.contains(&format!("{} segment(s)", first - 1)), "{msg}");
    let losses = s["losses"].as_object().unwrap();
    assert!(
        losses.values().all(|v| v == 0),
        "the viewer's skips are no losses: {s}"
    );
}

#[test]
fn every_request_needs_the_token() {
    let file = demo("live-token");
    let live = Live::start(BIN, &file, &[]);
    let first = if live.token.starts_with('0') {
        '1'
    } else {
        '0'
    };
    let wrong = format!("{first}{}", &live.token[1..]);
    for path in [
        "/",
        "/api/state",
        "/events",
        "/live.js",
        "/vendor/uPlot.esm.js",
        "/nothing",
    ] {
        let (status, _, _) = live.get(path, false);
        assert_eq!(status, 403, "{path} without the token");
        let (status, _, _) = live.get(&format!("{path}?t={wrong}"), false);
        assert_eq!(status, 403, "{path} with a wrong token");
    }
    let (status, head, body) = live.get("/", true);
    assert_eq!(status, 200);
    assert_eq!(
        header(&head, "content-security-policy"),
        Some("default-src 'self'")
    );
    let page = String::from_utf8(body).unwrap();
    // Everything the page loads comes from this server, with the token.
    assert!(
        page.contains(&format!("live.js?t={}", live.token)),
        "{page}"
    );
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "{page}"
    );
    let (status, head, _) = live.get("/vendor/uPlot.esm.js", true);
    assert_eq!(status, 200);
    assert!(header(&head, "content-type")
        .unwrap()
        .starts_with("text/javascript"));
}

#[test]
fn headers_requests_and_connections_are_bounded() {
    let file = demo("live-bounds");
    let live = Live::start(BIN, &file, &[]);
    let t = &live.token;
    let big = format!(
        "GET /api/state?t={t} HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(9000)
    );
    assert_eq!(raw(&live.addr, big.as_bytes()).0, 431, "headers over 8 KiB");
    let many: String = (0..40).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let many = format!("GET /api/state?t={t} HTTP/1.1\r\n{many}\r\n");
    assert_eq!(raw(&live.addr, many.as_bytes()).0, 431, "40 header lines");
    let post = format!("POST /api/state?t={t} HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(raw(&live.addr, post.as_bytes()).0, 405);
    let body = format!("GET /api/state?t={t} HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    assert_eq!(raw(&live.addr, body.as_bytes()).0, 413);

    // 1001 requests on one connection: 1000 answered, then it is closed.
    let one =
        format!("GET /api/ticks?t={t}&after=18446744073709551614 HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut s = TcpStream::connect(&live.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let w = {
        let mut s = s.try_clone().unwrap();
        let req = one.repeat(1001);
        std::thread::spawn(move || {
            let _ = s.write_all(req.as_bytes());
        })
    };
    let mut got = Vec::new();
    let _ = std::io::Read::read_to_end(&mut s, &mut got);
    w.join().unwrap();
    let answered = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200 OK")
        .count();
    assert_eq!(answered, 1000);

    // 32 connections at once; the 33rd is refused until one closes.
    let held: Vec<TcpStream> = (0..32)
        .map(|_| TcpStream::connect(&live.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, _, _) = live.get("/api/state", true);
    assert_eq!(status, 503, "a 33rd connection");
    drop(held);
    let t0 = std::time::Instant::now();
    while live.get("/api/state", true).0 != 200 {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "connections were not given back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn events_push_the_state_and_the_ticks() {
    let file = demo("live-events");
    let (records, ticks) = file_counts(&file);
    let live = Live::start(BIN, &file, &[]);
    live.wait_state(60, |s| s["state"] == "finished" && s["records"] == records);
    let mut s = TcpStream::connect(&live.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET /events?t={} HTTP/1.1\r\nHost: x\r\n\r\n",
        live.token
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let mut head = String::new();
    while line != "\r\n" {
        line.clear();
        r.read_line(&mut line).unwrap();
        head.push_str(&line);
    }
    assert!(head.contains("Content-Type: text/event-stream"), "{head}");
    let mut event = String::new();
    let data = loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.trim().to_owned();
        }
        if let Some(d) = line.strip_prefix("data: ") {
            break d.to_owned();
        }
    };
    assert_eq!(event, "update");
    let v: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(v["records"], records);
    assert_eq!(v["state"], "finished");
    let list = v["tick_list"].as_array().unwrap();
    assert_eq!(list.len() as u64, ticks.min(2048), "{v}");
    // Ids in order, each [id, slot, start, duration].
    assert!(list.windows(2).all(|w| w[1][0].as_u64() > w[0][0].as_u64()));
}

#[test]
fn chosen_ticks_export_to_pftrace() {
    let file = demo("live-export");
    let (records, _) = file_counts(&file);
    let live = Live::start(BIN, &file, &[]);
    live.wait_state(60, |s| s["state"] == "finished" && s["records"] == records);
    let (_, _, body) = live.get("/api/ticks", true);
    let ticks: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap();
    let (a, b) = (&ticks[ticks.len() / 3], &ticks[ticks.len() / 3 + 4]);
    let (from, to) = (a[0].as_u64().unwrap(), b[0].as_u64().unwrap());
    let start = a[2].as_u64().unwrap().min(b[2].as_u64().unwrap());
    let end = (a[2].as_u64().unwrap() + a[3].as_u64().unwrap())
        .max(b[2].as_u64().unwrap() + b[3].as_u64().unwrap());
    let (status, head, body) = live.get(&format!("/api/export?from={from}&to={to}"), true);
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains(&format!("ticks-{from}-{to}.pftrace")),
        "{head}"
    );

    // What went in: the records of those ticks' time, each slot's thread name, and the
    // `tracing` descriptions before them.
    let f = TraceFile::open_streaming(&file).unwrap();
    let mut in_range = 0u64;
    let mut described_before = 0u64;
    let mut named = BTreeSet::new();
    for r in f.stream_records() {
        let r = r.unwrap();
        let kind = decode_fields(&r.data)
            .ok()
            .and_then(|d| d.def)
            .map(|d| d.kind);
        if kind == Some(K::THREAD_INFO) {
            named.insert(r.cpu);
        }
        if (kind == Some(K::TRACING_SPAN_INFO) || kind == Some(K::TRACING_CALLSITE)) && r.ts < start
        {
            described_before += 1;
        }
        in_range += u64::from(r.ts >= start && r.ts <= end);
    }
    let expected = in_range + described_before + named.len() as u64;
    let got: u64 = header(&head, "x-typhon-records").unwrap().parse().unwrap();
    assert_eq!(got, expected, "records exported");
    let slices: u64 = header(&head, "x-typhon-slices").unwrap().parse().unwrap();
    assert!(
        slices > to - from,
        "{slices} slices for {} ticks",
        to - from + 1
    );
    // The names of the ticks' spans and threads are in its (zlib-compressed) packets.
    let text = String::from_utf8_lossy(&unbundle(&body)).into_owned();
    for n in ["simulation", "game-loop"] {
        assert!(text.contains(n), "{n} missing from the export");
    }
    // Ticks not kept or out of order get clear answers.
    let (status, _, _) = live.get("/api/export?from=1&to=999999999", true);
    assert_eq!(status, 404);
    let (status, _, _) = live.get("/api/export?from=x", true);
    assert_eq!(status, 400);
}

/// A protobuf varint at `*at`.
fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let x = b[*at];
        *at += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x & 0x80 == 0 {
            break;
        }
    }
    v
}

/// The length-delimited fields `field` of the message `b`.
fn fields(b: &[u8], field: u64) -> Vec<&[u8]> {
    let (mut at, mut out) = (0, Vec::new());
    while at < b.len() {
        let key = varint(b, &mut at);
        match key & 7 {
            0 => {
                varint(b, &mut at);
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let n = varint(b, &mut at) as usize;
                if key >> 3 == field {
                    out.push(&b[at..at + n]);
                }
                at += n;
            }
            w => panic!("wire type {w} in a Perfetto trace"),
        }
    }
    out
}

/// A Perfetto trace's packets with their compressed bundles (TracePacket.compressed_packets,
/// field 50: a zlib `Trace`) inflated, concatenated.
fn unbundle(trace: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for packet in fields(trace, 1) {
        out.extend_from_slice(packet);
        for z in fields(packet, 50) {
            let mut inner = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(z), &mut inner).unwrap();
            out.extend(fields(&inner, 1).concat());
        }
    }
    out
}

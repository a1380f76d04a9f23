//! Soak test (not in the default test run): minutes of a demo-like workload at a high rate —
//! several threads, every record kind, short-lived threads churning slots — checking that per
//! slot attempted = written + missed (+ sink_lost) and that memory stays flat.
//!
//! ```text
//! cargo run --release --example soak -- --minutes 5 [--threads 6] [--max-growth-mib 16]
//! ```
//!
//! RSS is sampled every second from /proc/self/statm; after a warm-up of 10 s (or a tenth of the
//! run) the RSS may not grow more than `--max-growth-mib` above the warm-up value. Prints
//! first/last/max RSS and the totals; exits 1 on any violation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::sink::NullSink;
use typhon_recorder::{IngressDropReason, RecorderBuilder, TraceContext};

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn frame(i: u32) {
    typhon_recorder::tick_start();
    typhon_recorder::phase_start(1);
    typhon_recorder::ingress_received(3, i as u16, 1, 128);
    typhon_recorder::ingress_admitted(3, i as u16, 1, i);
    if i % 64 == 0 {
        typhon_recorder::ingress_dropped(3, i as u16, IngressDropReason::RateLimited);
    }
    typhon_recorder::command_consumed(3, i as u16, 2);
    {
        let _s = typhon_recorder::span("update");
        let _t = typhon_recorder::traced_span(
            "apply",
            TraceContext {
                hi: 1,
                lo: i as u64,
            },
        );
        typhon_recorder::instant(1, i as i32);
    }
    let _ = typhon_recorder::celog_data(true, CELID_USER, b"soak", 0, CELZONE_MISC, 0, false);
    typhon_recorder::egress_sent(3, i, 512, 1);
    typhon_recorder::phase_end(1);
    typhon_recorder::tick_end(0, 1);
}

fn main() {
    let minutes = arg("--minutes", 5.0);
    let threads = arg("--threads", 6.0) as usize;
    let max_growth = (arg("--max-growth-mib", 16.0) * 1048576.0) as u64;
    let run = Duration::from_secs_f64(minutes * 60.0);
    let warmup = Duration::from_secs(10).min(run / 10);
    let rec = RecorderBuilder::new()
        .sink(NullSink)
        .ring_bytes(1 << 18)
        .start()
        .expect("start the recorder");
    let stop = Arc::new(AtomicBool::new(false));
    let mut hs: Vec<_> = (0..threads)
        .map(|t| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("soak-{t}"))
                .spawn(move || {
                    let mut i = 0u32;
                    // Relaxed: a stop request only.
                    while !stop.load(Ordering::Relaxed) {
                        frame(i);
                        i = i.wrapping_add(1);
                    }
                })
                .unwrap()
        })
        .collect();
    // Slot churn: short-lived threads all along.
    let stop2 = stop.clone();
    hs.push(std::thread::spawn(move || {
        while !stop2.load(Ordering::Relaxed) {
            let h: Vec<_> = (0..8)
                .map(|_| std::thread::spawn(|| (0..100).for_each(frame)))
                .collect();
            h.into_iter().for_each(|h| h.join().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }));
    let t0 = Instant::now();
    let first = rss_bytes();
    let (mut base, mut max, mut last) = (first, first, first);
    let mut failed = false;
    while t0.elapsed() < run {
        std::thread::sleep(Duration::from_secs(1));
        last = rss_bytes();
        max = max.max(last);
        if t0.elapsed() < warmup {
            base = last;
        } else if last > base + max_growth {
            eprintln!("soak: RSS grew from {base} to {last} bytes after warm-up");
            failed = true;
            break;
        }
        let s = rec.stats();
        for sl in &s.slots {
            if sl.attempted != sl.written + sl.missed + sl.sink_lost {
                eprintln!("soak: live accounting broken for slot {}: {sl:?}", sl.slot);
                failed = true;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    hs.into_iter().for_each(|h| h.join().unwrap());
    let stats = rec.finish().expect("finish");
    for s in &stats.slots {
        if s.attempted != s.written + s.missed + s.sink_lost {
            eprintln!("soak: accounting broken for slot {}: {s:?}", s.slot);
            failed = true;
        }
    }
    println!(
        "soak: {:.1} min, {} records written, {} missed, {} pages; RSS first {} KiB, after warm-up {} KiB, last {} KiB, max {} KiB",
        t0.elapsed().as_secs_f64() / 60.0,
        stats.total_written(),
        stats.total_missed(),
        stats.pages,
        first / 1024,
        base / 1024,
        last / 1024,
        max / 1024
    );
    if failed {
        std::process::exit(1);
    }
    println!("soak: OK");
}

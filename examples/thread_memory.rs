//! What many recording threads cost in memory: N threads (default 300) each claim a slot and
//! write until its ring has wrapped once, all alive at once; the process's resident memory is
//! read before the recorder starts and while they all hold their slots, for the default ring
//! and for a smaller one. Threads past the 255 slots are counted as `no_slot`.
//!
//! ```text
//! cargo run --release --example thread_memory -- [THREADS (default 300)]
//! ```

use std::sync::{Arc, Barrier};
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn run(threads: usize, ring_bytes: usize) -> Result<(), Box<dyn std::error::Error>> {
    let before = rss_kib();
    let rec = RecorderBuilder::new()
        .sink(NullSink)
        .ring_bytes(ring_bytes)
        .start()?;
    let hold = Arc::new(Barrier::new(threads + 1));
    let done = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (hold, done) = (hold.clone(), done.clone());
            std::thread::spawn(move || {
                // 22-byte records, padded to 24 in the ring: enough to wrap it once.
                for i in 0..ring_bytes / 16 {
                    typhon_recorder::ingress_received(1, i as u16, 0, 64);
                }
                hold.wait();
                done.wait();
            })
        })
        .collect();
    hold.wait();
    let held = rss_kib();
    done.wait();
    for h in hs {
        h.join().unwrap();
    }
    let stats = rec.finish()?;
    let slots = stats.slots.len().saturating_sub(1);
    println!(
        "ring {:>5} KiB, {threads} threads ({slots} slots; {} records of threads without one, \
         counted as no_slot): {} MiB resident more ({:.2} MiB a slot)",
        ring_bytes >> 10,
        stats.no_slot,
        held.saturating_sub(before) >> 10,
        held.saturating_sub(before) as f64 / 1024.0 / slots.max(1) as f64
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads = match std::env::args().nth(1) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("{s:?} is not a thread count"))?,
        None => 300,
    };
    run(threads, typhon_recorder::DEFAULT_RING_BYTES)?;
    run(threads, 256 << 10)?;
    Ok(())
}

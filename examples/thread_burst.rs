//! The first event of threads that start in a burst: how many find a spare ring.
//!
//! Each round starts a recorder with the default two spare rings (into a `NullSink`), then six
//! threads a fixed number of milliseconds apart; each times its first event, which claims a
//! slot and a ring. A thread that finds a spare pays a few microseconds; one that finds the
//! pool empty faults in its own ring (about 1 ms for the default 2 MiB). The pool is refilled
//! by the flusher's `typhon-spares` helper, started at once when a claim takes the last spare.
//!
//! ```text
//! cargo run --release --example thread_burst -- [GAP_MS (default 1)] [ROUNDS (default 20)]
//! ```
//!
//! It prints each round's six first-event times in µs, then the median, the 90th percentile
//! and how many took over 200 µs (a thread that made its own ring).

use std::time::{Duration, Instant};
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

const THREADS: u32 = 6;

fn arg(i: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {i}: {s:?} is not a count")),
    }
}

fn main() -> Result<(), String> {
    let gap = Duration::from_millis(arg(1, 1)?);
    let rounds = arg(2, 20)?;
    let mut all = Vec::new();
    for _ in 0..rounds {
        let rec = RecorderBuilder::new()
            .sink(NullSink)
            .start()
            .map_err(|e| e.to_string())?;
        // Let the flusher reach its timed wait, as in a program that has been running a while.
        std::thread::sleep(Duration::from_millis(20));
        let mut threads = Vec::new();
        for i in 0..THREADS {
            threads.push(std::thread::spawn(move || {
                let t = Instant::now();
                typhon_recorder::ingress_received(i, 1, 2, 64);
                let first = t.elapsed();
                // Alive until the burst is over: an exiting thread wakes the flusher too.
                std::thread::sleep(Duration::from_millis(100));
                first
            }));
            std::thread::sleep(gap);
        }
        let us: Vec<u64> = threads
            .into_iter()
            .map(|t| t.join().map_or(u64::MAX, |d| d.as_micros() as u64))
            .collect();
        println!("{us:?}");
        all.extend(us);
        rec.finish().map_err(|e| e.to_string())?;
    }
    all.sort_unstable();
    if all.is_empty() {
        return Ok(());
    }
    let at = |q: f64| all[((all.len() - 1) as f64 * q) as usize];
    println!(
        "{} first events, {} ms apart: median {} µs, p90 {} µs, over 200 µs: {}",
        all.len(),
        gap.as_millis(),
        at(0.5),
        at(0.9),
        all.iter().filter(|&&u| u > 200).count()
    );
    Ok(())
}

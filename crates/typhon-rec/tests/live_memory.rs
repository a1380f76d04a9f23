//! The viewer's memory stays bounded however long the recording runs: `typhon-rec live`
//! follows a heavy demo, and its peak RSS (VmHWM) at the end is at most 1.5× its peak after the
//! first third of the run (the first minute, for a run of 5 minutes or more): by then its
//! detail (the last 10 s of records, at most 16 MiB) is full, and only summaries grow.
//!
//! The soak (SPEC §17's figure, 10 minutes):
//! `TYPHON_LIVE_SOAK_S=600 cargo test --release -p typhon-rec --test live_memory -- --nocapture`
//! (about 4 GB of recording in the temp directory at the default rate; `TYPHON_LIVE_SOAK_RATE`
//! sets the records per second per worker thread, 50 000 by default). `--release`: a debug
//! viewer cannot keep up with this demo, skips forward and reads a share of the records that
//! varies with the machine's load, so its detail fills at a varying pace. By default the run
//! is 30 s (its first third: the detail is full by then).

mod common;
mod live;

use common::{tmp, BIN};
use live::Live;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// VmHWM of `pid` in KiB.
fn peak_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn env_u64(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn memory_stays_bounded_while_following() {
    let secs = env_u64("TYPHON_LIVE_SOAK_S", 30);
    let rate = env_u64("TYPHON_LIVE_SOAK_RATE", 50_000);
    let first = if secs >= 300 { 60 } else { secs / 3 };
    let out = tmp("live-memory").join("soak.dat");
    let mut demo = Command::new(BIN)
        .args(["demo", "-o"])
        .arg(&out)
        .args(["--duration", &secs.to_string(), "--threads", "2"])
        .args(["--rate", &rate.to_string(), "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let parts = typhon_recorder::sink::parts_dir(&out);
    let t0 = Instant::now();
    while !parts.is_dir() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no {}",
            parts.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let live = Live::start(BIN, &out, &[]);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(first));
    let early = peak_kib(live.pid());
    let s_early = live.state();
    assert!(demo.wait().unwrap().success(), "the demo failed");
    let s = live.wait_state(600, |s| s["state"] == "finished");
    // The last records are in.
    std::thread::sleep(Duration::from_secs(1));
    let s = {
        let again = live.state();
        if again["records"] == s["records"] {
            again
        } else {
            live.state()
        }
    };
    let end = peak_kib(live.pid());
    let ratio = end as f64 / early as f64;
    eprintln!(
        "live following a {secs} s demo (2 workers at {rate} records/s each): peak RSS {early} KiB after {first} s ({} records, {} held), {end} KiB at the end after {:.0} s ({} records, {} ticks, {} held, {} skipped): {ratio:.2}x",
        s_early["records"], s_early["viewer"]["held_bytes"], t0.elapsed().as_secs_f64(), s["records"], s["ticks"], s["viewer"]["held_bytes"], s["viewer"]["skipped_records"]
    );
    assert!(
        ratio <= 1.5,
        "peak RSS grew {ratio:.2}x ({early} -> {end} KiB)"
    );
}

//! The recorder's own threads at a steady rate: the CPU time of the flusher (`typhon-flusher`)
//! and of the compressor (`typhon-compress`) per record, while one producer writes a fixed
//! number of records a second into the file sink, uncompressed and then zstd-compressed at the
//! default level. These are what a program pays beside its writes, on cores the program may
//! want.

use crate::report::RecorderThreads;
use std::hint::black_box;
use std::time::{Duration, Instant};
use typhon_recorder::tracedat::{Compression, DEFAULT_ZSTD_LEVEL};
use typhon_recorder::RecorderBuilder;

/// Records a second of the steady phase: 2 M, the paced rate of the latency phase, about what
/// a busy game or service writes.
pub(crate) const RATE: u64 = 2_000_000;

/// On-CPU ns of this process's thread named `name` (`/proc/self/task/TID/schedstat`), None if
/// no thread has the name.
pub(crate) fn thread_cpu_ns(name: &str) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let s = std::fs::read_to_string(p.join("schedstat")).ok()?;
            return s.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// The CPU time of the thread `name` once it went idle: the compressor works on the chunks
/// queued when the flusher last drained, so its count is read once it grew by under 0.2 ms in
/// 20 ms (an idle flusher still wakes at every flush interval), within a second.
pub(crate) fn settled_cpu_ns(name: &str) -> Option<u64> {
    let mut last = thread_cpu_ns(name)?;
    let start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = thread_cpu_ns(name)?;
        if now.saturating_sub(last) < 200_000 || start.elapsed() > Duration::from_secs(1) {
            return Some(now);
        }
        last = now;
    }
}

/// One steady run of `dur` into the file sink, compressed as `c`: (records written, flusher
/// CPU ns, compressor CPU ns, file bytes, records missed).
fn steady(c: Compression, dur: Duration) -> Option<(u64, u64, u64, u64, u64)> {
    let path = std::env::temp_dir().join(format!(
        "typhon-bench-threads-{}-{c}.dat",
        std::process::id()
    ));
    let rec = RecorderBuilder::new()
        .output(&path)
        .compression(c)
        .start()
        .ok()?;
    let f0 = thread_cpu_ns("typhon-flusher").unwrap_or(0);
    let c0 = thread_cpu_ns("typhon-compress").unwrap_or(0);
    let producer = std::thread::spawn(move || {
        typhon_recorder::tick_start();
        // 1 ms batches, each sleeping until its deadline (a late batch is not caught up twice).
        let per_ms = RATE / 1000;
        let t0 = Instant::now();
        let mut batch = 0u64;
        while t0.elapsed() < dur {
            for i in 0..per_ms {
                typhon_recorder::ingress_received(black_box((batch * per_ms + i) as u32), 1, 2, 64);
            }
            batch += 1;
            let deadline = t0 + Duration::from_millis(batch);
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
        }
    });
    let _ = producer.join();
    rec.drain();
    let f1 = settled_cpu_ns("typhon-flusher").unwrap_or(f0);
    let c1 = settled_cpu_ns("typhon-compress").unwrap_or(c0);
    let stats = rec.stats();
    let _ = rec.finish();
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(&path));
    Some((
        stats.user_written(),
        f1.saturating_sub(f0),
        c1.saturating_sub(c0),
        bytes,
        stats.total_missed(),
    ))
}

/// The steady phase: an uncompressed run, then a compressed one, each `dur`.
pub(crate) fn recorder_threads(dur: Duration) -> RecorderThreads {
    let mut r = RecorderThreads {
        rate: RATE as f64,
        zstd_level: DEFAULT_ZSTD_LEVEL,
        ..RecorderThreads::default()
    };
    let per = |ns: u64, n: u64| ns as f64 / n.max(1) as f64;
    if let Some((n, f, _, _, missed)) = steady(Compression::None, dur) {
        r.records = n;
        r.flusher_cpu_ns_per_record = per(f, n);
        r.missed += missed;
    }
    let z = Compression::Zstd {
        level: DEFAULT_ZSTD_LEVEL,
    };
    if let Some((n, f, c, bytes, missed)) = steady(z, dur) {
        r.zstd_records = n;
        r.zstd_flusher_cpu_ns_per_record = per(f, n);
        r.compressor_cpu_ns_per_record = per(c, n);
        r.zstd_bytes_per_record = bytes as f64 / n.max(1) as f64;
        r.missed += missed;
    }
    r
}

//! The recorder under load from producer threads: throughput at 1, 2 and 4 threads, the
//! flusher's drain rate per second of its own CPU, and drops at 5 M records/s.

use crate::own_threads::thread_cpu_ns;
use crate::report::{BenchReport, FlusherThroughput, ThreadThroughput};
use std::hint::black_box;
use std::time::{Duration, Instant};
use typhon_recorder::sink::NullSink;
use typhon_recorder::{Recorder, RecorderBuilder};

/// The ring of the flusher phase: 64 MiB, 32 times the default ring.
pub(crate) const BIG_RING: usize = 64 << 20;

/// Records per second of 1, 2 and 4 producer threads writing `per_thread` records each as fast
/// as they can (default ring, `NullSink`), with the drops of each.
pub(crate) fn threads(r: &mut BenchReport, per_thread: u64) {
    for n in [1usize, 2, 4] {
        let Ok(rec) = RecorderBuilder::new().sink(NullSink).start() else {
            return;
        };
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(n + 1));
        let hs: Vec<_> = (0..n)
            .map(|_| {
                let b = barrier.clone();
                std::thread::spawn(move || {
                    typhon_recorder::tick_start();
                    b.wait();
                    let t0 = Instant::now();
                    for i in 0..per_thread {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                    t0.elapsed()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in hs {
            let _ = h.join();
        }
        let wall = start.elapsed();
        let stats = rec.finish().unwrap_or_default();
        let attempted = per_thread * n as u64;
        r.threads.push(ThreadThroughput {
            threads: n,
            records_per_s: attempted as f64 / wall.as_secs_f64(),
            drops: stats.total_missed(),
            attempted,
        });
    }
}

/// The flusher's drain rate for one sink (the file sink if `to_file`, else a `NullSink`): one
/// producer writes as fast as it can for `dur` into a ring it never fills, and the records
/// written to pages are divided by the flusher thread's on-CPU time.
pub(crate) fn flusher(to_file: bool, dur: Duration) -> FlusherThroughput {
    let path = std::env::temp_dir().join(format!("typhon-bench-flush-{}.dat", std::process::id()));
    // No spare rings: the pool would be topped up with a 64 MiB ring inside the timed window
    // (tens of ms of page faults, hundreds when its huge pages need compaction), and the helper
    // thread that makes it would take one of the two cores from the producer or the flusher.
    // The producer makes its ring itself, before the timed window.
    let b = RecorderBuilder::new()
        .ring_bytes(BIG_RING)
        .spare_rings(0)
        .flush_interval(Duration::from_millis(1));
    let b = if to_file {
        b.output(&path)
    } else {
        b.sink(NullSink)
    };
    let Ok(rec) = b.start() else {
        return FlusherThroughput::default();
    };
    flat_out(rec, dur, |rec| {
        drop(rec);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(&path));
    })
}

/// One producer writes as fast as it can for `dur` into `rec`, in a ring it never fills; once
/// the flusher caught up (it is otherwise idle), the records written to pages over the flusher
/// thread's on-CPU time. `end` finishes the recording after that time is read.
pub(crate) fn flat_out(
    rec: Recorder,
    dur: Duration,
    end: impl FnOnce(Recorder),
) -> FlusherThroughput {
    flat_out_threads(rec, dur, &[], end)
}

/// [`flat_out`], over the on-CPU time of the flusher and of the recorder's threads named in
/// `also` (the file mode's compressor: read once it went idle, as it works on the chunks the
/// last drain queued).
pub(crate) fn flat_out_threads(
    rec: Recorder,
    dur: Duration,
    also: &[&str],
    end: impl FnOnce(Recorder),
) -> FlusherThroughput {
    let cpu0 = thread_cpu_ns("typhon-flusher").unwrap_or(0);
    let also0: Vec<u64> = also.iter().map(|n| thread_cpu_ns(n).unwrap_or(0)).collect();
    let now = rec.now();
    let producer = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut i = 0u64;
        while t0.elapsed() < dur {
            for _ in 0..1024 {
                typhon_recorder::ingress_received_at(Some(now + i), i as u32, 1, 2, 64);
                i += 1;
            }
        }
    });
    let _ = producer.join();
    rec.drain();
    let cpu1 = thread_cpu_ns("typhon-flusher").unwrap_or(0);
    let others: u64 = also
        .iter()
        .zip(&also0)
        .map(|(n, c0)| crate::own_threads::settled_cpu_ns(n).map_or(0, |c| c.saturating_sub(*c0)))
        .sum();
    let stats = rec.stats();
    end(rec);
    let records = stats.user_written();
    let cpu_s = (cpu1.saturating_sub(cpu0) + others) as f64 / 1e9;
    let rps = records as f64 / cpu_s.max(1e-9);
    FlusherThroughput {
        records_per_s: rps,
        mb_per_s: rps * 24.0 / 1e6,
        records,
        cpu_s,
        flusher_cpu_s: cpu1.saturating_sub(cpu0) as f64 / 1e9,
    }
}

/// Drops at 5 M records/s: 2 threads each writing 2.5 M records/s in 1 ms batches for `dur`
/// (default ring, `NullSink`), with how late the producers fell and the longest drain gap.
pub(crate) fn drops_at_5m(r: &mut BenchReport, dur: Duration) {
    let Ok(rec) = RecorderBuilder::new().sink(NullSink).start() else {
        return;
    };
    const PER_THREAD_PER_MS: u64 = 2_500;
    let hs: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut batch = 0u64;
                let mut sent = 0u64;
                let mut late = Duration::ZERO;
                while t0.elapsed() < dur {
                    for i in 0..PER_THREAD_PER_MS {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                    sent += PER_THREAD_PER_MS;
                    batch += 1;
                    let deadline = t0 + Duration::from_millis(batch);
                    let now = Instant::now();
                    if deadline > now {
                        std::thread::sleep(deadline - now);
                    } else {
                        late = late.max(now - deadline);
                    }
                }
                (sent, late)
            })
        })
        .collect();
    let (mut sent, mut late) = (0, Duration::ZERO);
    for h in hs {
        let (s, l) = h.join().unwrap_or_default();
        sent += s;
        late = late.max(l);
    }
    let stats = rec.finish().unwrap_or_default();
    r.drops_at_5m = stats.total_missed();
    r.attempted_at_5m = sent;
    r.late_ms_at_5m = late.as_secs_f64() * 1e3;
    r.drain_gap_ms_at_5m = stats.longest_drain_gap_ns as f64 / 1e6;
}

//! Window mode (SPEC §16) against a file recording, in the same run: the write's cost, the
//! flusher's CPU per record, the memory held against the budget, and drops at 5 M records/s
//! while snapshots are taken.
//!
//! Only one recorder can be installed at a time, so the write's two figures alternate
//! recorders: each round starts a file recording and a window recording (in turn first), times
//! one run of writes in each, and finishes it; each figure is the median over the rounds, so a
//! slow stretch of a shared machine falls on both alike.

use crate::load::BIG_RING;
use crate::peers::rss_bytes;
use crate::report::{BenchReport, FlusherThroughput, NsFigure};
use crate::timer::{figure, ticks};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use typhon_recorder::{Recorder, RecorderBuilder};

/// What a window-mode figure is measured against: the same recording kept in a window or
/// written to a file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    File,
    Window,
}

/// A scratch directory of this process for the files and snapshots of these phases.
fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-bench-window-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&d);
    d
}

fn start(mode: Mode, b: RecorderBuilder, tag: &str) -> Option<Recorder> {
    let dir = scratch();
    let b = match mode {
        Mode::File => b.output(dir.join(format!("{tag}.dat"))),
        Mode::Window => b.window(Duration::from_secs(30)).snapshot_dir(&dir),
    };
    b.start().ok()
}

fn cleanup() {
    let _ = std::fs::remove_dir_all(scratch());
}

/// The write (`ingress_received`, the recorder's clock: `write_clock_ns`'s body) in a file
/// recording and in window mode, alternating recorders round by round; `(file, window)`.
pub(crate) fn write_file_vs_window(rounds: usize, npt: f64) -> (NsFigure, NsFigure) {
    const RUN: u64 = 20_000;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..rounds + 1 {
        for k in 0..2 {
            let mode = if (round + k) % 2 == 0 {
                Mode::File
            } else {
                Mode::Window
            };
            let b = RecorderBuilder::new().flush_interval(Duration::from_millis(1));
            let Some(rec) = start(mode, b, "write") else {
                return Default::default();
            };
            // Claim the slot and warm the ring, then time a run from a drained ring.
            for i in 0..RUN {
                typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
            }
            rec.drain();
            let t0 = ticks();
            for i in 0..RUN {
                typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
            }
            let spent = ticks().wrapping_sub(t0);
            rec.drain();
            let _ = rec.finish();
            // The first round warms both up.
            if round > 0 {
                times[(mode == Mode::Window) as usize].push(spent as f64 * npt / RUN as f64);
            }
        }
    }
    cleanup();
    let [f, w] = times;
    (figure(f), figure(w))
}

/// The flusher's CPU per record (as [`crate::load::flusher`]): one producer writes as fast as
/// it can for `dur` into a ring it never fills, into a file or a window.
pub(crate) fn flusher(mode: Mode, dur: Duration) -> FlusherThroughput {
    let b = RecorderBuilder::new()
        .ring_bytes(BIG_RING)
        .spare_rings(0)
        .flush_interval(Duration::from_millis(1));
    let Some(rec) = start(mode, b, "flusher") else {
        return FlusherThroughput::default();
    };
    crate::load::flat_out(rec, dur, |rec| {
        let _ = rec.finish();
        cleanup();
    })
}

/// Resident memory a window adds, over its byte budget: one thread fills a window of `budget`
/// bytes four times over; the growth of the process's resident set from before the fill (ring
/// and slot already made) to its end, divided by the budget.
pub(crate) fn memory_vs_budget(budget: u64) -> f64 {
    let Ok(rec) = RecorderBuilder::new()
        .window(Duration::from_secs(3600))
        .window_bytes(budget)
        .snapshot_dir(scratch())
        .flush_interval(Duration::from_millis(1))
        .start()
    else {
        return f64::NAN;
    };
    // The ring, written through once, and the slot: not the window's.
    let ring_records = typhon_recorder::DEFAULT_RING_BYTES as u64 / 24;
    for i in 0..ring_records {
        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
    }
    rec.drain();
    // Freed heap that is still resident (an earlier phase's) would take the window's pages
    // unseen: handed back first, so the growth is the window's.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
    let before = rss_bytes();
    let mut peak = before;
    // Four budgets of 24-byte records, in half rings, drained between them: none dropped.
    let total = 4 * budget / 24;
    let batch = ring_records / 2;
    let mut i = 0;
    while i < total {
        for _ in 0..batch {
            typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
            i += 1;
        }
        rec.drain();
        peak = peak.max(rss_bytes());
    }
    let _ = rec.finish();
    cleanup();
    peak.saturating_sub(before) as f64 / budget as f64
}

/// Drops at 5 M records/s (as [`crate::load::drops_at_5m`]: 2 threads of 2.5 M records/s in
/// 1 ms batches, default ring) in window mode, with a snapshot of the window taken every
/// `every` meanwhile (`None`: none, the phase's control); `(drops, attempted, snapshots, median
/// snapshot seconds)`.
pub(crate) fn drops_at_5m_snapshots(
    dur: Duration,
    every: Option<Duration>,
) -> (u64, u64, u64, f64) {
    let Some(rec) = start(Mode::Window, RecorderBuilder::new(), "5m") else {
        return (0, 0, 0, f64::NAN);
    };
    const PER_THREAD_PER_MS: u64 = 2_500;
    let hs: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut batch = 0u64;
                let mut sent = 0u64;
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
                    }
                }
                sent
            })
        })
        .collect();
    let t0 = Instant::now();
    let mut took = Vec::new();
    while let Some(every) = every.filter(|_| t0.elapsed() < dur) {
        std::thread::sleep(every);
        let s = Instant::now();
        if let Ok(snap) = rec.snapshot() {
            took.push(s.elapsed().as_secs_f64());
            let _ = std::fs::remove_file(&snap.path);
        }
    }
    let sent: u64 = hs.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    let stats = rec.finish().unwrap_or_default();
    cleanup();
    let n = took.len() as u64;
    took.sort_by(f64::total_cmp);
    let median = took.get(took.len() / 2).copied().unwrap_or(f64::NAN);
    (stats.total_missed(), sent, n, median)
}

/// Every window-mode figure, into `r`.
pub(crate) fn window(r: &mut BenchReport, quick: bool, npt: f64) {
    // First: the other phases' freed heap would hide the window's growth.
    r.window_memory_vs_budget = memory_vs_budget(32 << 20);
    let (file, window) = write_file_vs_window(if quick { 15 } else { 45 }, npt);
    r.write_clock_file_alt = file;
    r.write_clock_window = window;
    let fd = Duration::from_millis(if quick { 500 } else { 2000 });
    r.flusher_file_alt = flusher(Mode::File, fd);
    r.flusher_window = flusher(Mode::Window, fd);
    let dur = Duration::from_millis(if quick { 2000 } else { 6000 });
    r.drops_at_5m_window_quiet = drops_at_5m_snapshots(dur, None).0;
    let (drops, attempted, snaps, median) =
        drops_at_5m_snapshots(dur, Some(Duration::from_millis(500)));
    r.drops_at_5m_window = drops;
    r.attempted_at_5m_window = attempted;
    r.snapshots_at_5m_window = snaps;
    r.snapshot_s_at_5m_window = median;
}

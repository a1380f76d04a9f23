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
use typhon_recorder::tracedat::DEFAULT_ZSTD_LEVEL;
use typhon_recorder::{Compression, Recorder, RecorderBuilder};

/// The compression of the `*_zstd` figures: the default level.
const ZSTD: Compression = Compression::Zstd {
    level: DEFAULT_ZSTD_LEVEL,
};

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
/// it can for `dur` into a ring it never fills, into a file or a window, compressed as `c`.
/// A compressed recording's chunks are made on a thread of their own (`typhon-compress`),
/// a file's and a window's alike: that thread's time is counted too, so that each figure holds
/// all the recorder's work (`TYPHON_COMPRESS_INLINE=1` makes them on the flusher, in both).
pub(crate) fn flusher(mode: Mode, dur: Duration, c: Compression) -> FlusherThroughput {
    let b = RecorderBuilder::new()
        .ring_bytes(BIG_RING)
        .spare_rings(0)
        .compression(c)
        .flush_interval(Duration::from_millis(1));
    let Some(rec) = start(mode, b, "flusher") else {
        return FlusherThroughput::default();
    };
    let also: &[&str] = if c.is_compressed() {
        &["typhon-compress"]
    } else {
        &[]
    };
    crate::load::flat_out_threads(rec, dur, also, |rec| {
        let _ = rec.finish();
        cleanup();
    })
}

/// A window recording of `budget` bytes compressed as `c`, no time bound.
fn window_of(budget: u64, c: Compression) -> Option<Recorder> {
    RecorderBuilder::new()
        .window(Duration::from_secs(3600))
        .window_bytes(budget)
        .compression(c)
        .snapshot_dir(scratch())
        .flush_interval(Duration::from_millis(1))
        .start()
        .ok()
}

/// This thread writes 24-byte records into `rec`'s window in half rings drained between them
/// (none dropped), until the window evicted and then three times as many again: the window
/// is full, filled four times over. Calls `sample` after each batch.
fn fill(rec: &Recorder, mut sample: impl FnMut()) {
    let batch = typhon_recorder::DEFAULT_RING_BYTES as u64 / 24 / 2;
    let (mut i, mut until) = (0u64, u64::MAX);
    while i < until {
        for _ in 0..batch {
            typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
            i += 1;
        }
        rec.drain();
        sample();
        if until == u64::MAX && rec.stats().evicted_records > 0 {
            until = 4 * i;
        }
    }
}

/// Resident memory a window adds, over its byte budget: one thread fills a window of `budget`
/// bytes compressed as `c` four times over ([`fill`]); the growth of the process's resident
/// set from before the fill (ring and slot already made) to its end, divided by the budget.
pub(crate) fn memory_vs_budget(budget: u64, c: Compression) -> f64 {
    let Some(rec) = window_of(budget, c) else {
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
    fill(&rec, || peak = peak.max(rss_bytes()));
    let _ = rec.finish();
    cleanup();
    peak.saturating_sub(before) as f64 / budget as f64
}

/// Time a full window of `budget` bytes compressed as `c` holds per MiB of its budget, in ms
/// at 1 M records/s of [`fill`]'s 24-byte records (numbered: they compress as a server's
/// steady stream of alike records does, better than varied ones): its snapshot's records
/// ÷ 1000 ÷ MiB.
pub(crate) fn held_ms_per_mib(budget: u64, c: Compression) -> f64 {
    let Some(rec) = window_of(budget, c) else {
        return f64::NAN;
    };
    fill(&rec, || {});
    let held = rec.snapshot().map(|s| s.records - s.restated);
    let _ = rec.finish();
    cleanup();
    held.map_or(f64::NAN, |n| {
        n as f64 / 1000.0 / (budget as f64 / f64::from(1 << 20))
    })
}

/// One phase at 5 M records/s in window mode ([`drops_at_5m_snapshots`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AtFiveM {
    pub(crate) drops: u64,
    pub(crate) attempted: u64,
    pub(crate) snapshots: u64,
    /// The median snapshot's duration, seconds.
    pub(crate) snapshot_s: f64,
    /// The flusher thread's CPU per record attempted, ns.
    pub(crate) flusher_ns: f64,
    /// How far behind its schedule a producer fell at worst, ms (as `late_ms_at_5m`).
    pub(crate) late_ms: f64,
    /// The longest gap between two drains, ms (as `drain_gap_ms_at_5m`).
    pub(crate) drain_gap_ms: f64,
}

/// Drops at 5 M records/s (as [`crate::load::drops_at_5m`]: 2 threads of 2.5 M records/s in
/// 1 ms batches, default ring) in window mode, with a snapshot of the window taken every
/// `every` meanwhile (`None`: none, the phase's control). A drop is told apart by the two
/// figures beside it: a producer late by more than its ring holds (the machine did not run it)
/// or a drain gap as long (the flusher was held up).
pub(crate) fn drops_at_5m_snapshots(
    dur: Duration,
    every: Option<Duration>,
    c: Compression,
) -> AtFiveM {
    let nan = AtFiveM {
        snapshot_s: f64::NAN,
        flusher_ns: f64::NAN,
        late_ms: f64::NAN,
        drain_gap_ms: f64::NAN,
        ..AtFiveM::default()
    };
    let Some(rec) = start(Mode::Window, RecorderBuilder::new().compression(c), "5m") else {
        return nan;
    };
    let cpu0 = crate::own_threads::thread_cpu_ns("typhon-flusher").unwrap_or(0);
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
    let (mut sent, mut late) = (0, Duration::ZERO);
    for h in hs {
        let (s, l) = h.join().unwrap_or_default();
        sent += s;
        late = late.max(l);
    }
    rec.drain();
    let flusher_ns = crate::own_threads::thread_cpu_ns("typhon-flusher").map_or(f64::NAN, |c| {
        c.saturating_sub(cpu0) as f64 / sent.max(1) as f64
    });
    let stats = rec.finish().unwrap_or_default();
    cleanup();
    took.sort_by(f64::total_cmp);
    AtFiveM {
        drops: stats.total_missed(),
        attempted: sent,
        snapshots: took.len() as u64,
        snapshot_s: took.get(took.len() / 2).copied().unwrap_or(f64::NAN),
        flusher_ns,
        late_ms: late.as_secs_f64() * 1e3,
        drain_gap_ms: stats.longest_drain_gap_ns as f64 / 1e6,
    }
}

/// Every window-mode figure, into `r`.
pub(crate) fn window(r: &mut BenchReport, quick: bool, npt: f64) {
    // First: the other phases' freed heap would hide the window's growth.
    r.window_memory_vs_budget = memory_vs_budget(32 << 20, Compression::None);
    r.window_zstd.memory_vs_budget = memory_vs_budget(32 << 20, ZSTD);
    let (file, window) = write_file_vs_window(if quick { 15 } else { 45 }, npt);
    r.write_clock_file_alt = file;
    r.write_clock_window = window;
    let fd = Duration::from_millis(if quick { 500 } else { 2000 });
    r.flusher_file_alt = flusher(Mode::File, fd, Compression::None);
    r.flusher_window = flusher(Mode::Window, fd, Compression::None);
    r.window_zstd.flusher_file = flusher(Mode::File, fd, ZSTD);
    r.window_zstd.flusher_window = flusher(Mode::Window, fd, ZSTD);
    r.window_zstd.held_ms_per_mib_raw = held_ms_per_mib(8 << 20, Compression::None);
    r.window_zstd.held_ms_per_mib = held_ms_per_mib(8 << 20, ZSTD);
    let dur = Duration::from_millis(if quick { 2000 } else { 6000 });
    r.drops_at_5m_window_quiet = drops_at_5m_snapshots(dur, None, Compression::None).drops;
    let every = Some(Duration::from_millis(500));
    let a = drops_at_5m_snapshots(dur, every, Compression::None);
    r.drops_at_5m_window = a.drops;
    r.attempted_at_5m_window = a.attempted;
    r.snapshots_at_5m_window = a.snapshots;
    r.snapshot_s_at_5m_window = a.snapshot_s;
    r.late_ms_at_5m_window = a.late_ms;
    r.drain_gap_ms_at_5m_window = a.drain_gap_ms;
    let z = &mut r.window_zstd;
    z.drops_at_5m_quiet = drops_at_5m_snapshots(dur, None, ZSTD).drops;
    let a = drops_at_5m_snapshots(dur, every, ZSTD);
    z.flusher_ns_at_5m = a.flusher_ns;
    z.drops_at_5m = a.drops;
    z.attempted_at_5m = a.attempted;
    z.snapshots_at_5m = a.snapshots;
    z.snapshot_s_at_5m = a.snapshot_s;
    z.late_ms_at_5m = a.late_ms;
    z.drain_gap_ms_at_5m = a.drain_gap_ms;
}

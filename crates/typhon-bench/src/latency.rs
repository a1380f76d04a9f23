//! The per-call latency phase: each call bracketed by fenced TSC reads at a paced 2 M calls/s
//! while the flusher writes a real file, interleaved with the floor, a lone TSC read and an
//! empty bracket; and the first-call figures of fresh threads.
//!
//! Only figures taken side by side compare on a shared host, so the four slots share every
//! moment of the run; the empty bracket's median is the cost subtracted from all of them.

use crate::floors::FloorRing;
use crate::report::{BenchReport, Latency};
use crate::timer::{bracketed, fenced_ticks, tick_resolution, ticks, Dither};
use hdrhistogram::Histogram;
use std::hint::black_box;
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

/// Raw ticks of a thread's first event, bracketed (the first-call figures of [`latency`]).
fn first_event() -> u64 {
    bracketed(|| typhon_recorder::ingress_received(0, 1, 2, 64))
}

/// Offered load of the latency phase, records per second.
const LATENCY_RATE: u64 = 2_000_000;

/// What [`paced`] measured: one histogram of raw bracket times (ticks) per slot, plus the sums
/// of our calls' and the empty bracket's times for the means.
struct Paced {
    ours: Histogram<u64>,
    floor: Histogram<u64>,
    tsc: Histogram<u64>,
    empty: Histogram<u64>,
    ours_sum: u64,
    empty_sum: u64,
}

impl Paced {
    /// The empty bracket's median, the cost [`Latency`] subtracts: taken in the same moments and
    /// with the same dither as the calls, so it rounds to the clock's steps as theirs do.
    fn bracket(&self) -> u64 {
        self.empty.value_at_quantile(0.5)
    }

    /// Quantile `q` of a slot's bracket times, bracket subtracted, in ticks.
    fn at(&self, h: &Histogram<u64>, q: f64) -> u64 {
        h.value_at_quantile(q).saturating_sub(self.bracket())
    }

    /// A slot's percentile curve, (quantile, ticks), at 1 - 10^(-k/10) for k = 0, 1, … while
    /// the samples resolve the quantile (one sample at least beyond it), then the largest
    /// sample: ten points per decade of "one in N", as HdrHistogram plots them.
    fn curve(&self, h: &Histogram<u64>) -> Vec<(f64, u64)> {
        let n = h.len().max(1) as f64;
        let mut v: Vec<(f64, u64)> = (0..)
            .map(|k| 1.0 - 10f64.powf(-f64::from(k) / 10.0))
            .take_while(|q| (1.0 - q) * n >= 1.0)
            .map(|q| (q, self.at(h, q)))
            .collect();
        v.push((1.0 - 1.0 / n, h.max().saturating_sub(self.bracket())));
        v
    }
}

/// `samples` rounds of four bracketed slots, one round per `interval` ticks (spinning in
/// between): `ours(i)` at the start of the interval, `floor(i)` a quarter of it later, a lone
/// TSC read half way and an empty bracket three quarters of the way, each bracketed by fenced
/// TSC reads. The four are interleaved so that they see the same machine: on a shared host the
/// tail moves from run to run with what the neighbours do, and only figures taken side by side
/// compare.
///
/// Each slot starts after a pseudo-random delay of 0–63 loop iterations (up to ~25 ns, a few
/// steps of a TSC that advances in ~10 ns steps): the spin-wait exits just after the clock
/// steps, so without the delay every bracket would open at the same phase of a step and the
/// rounding of a short call would be the same every time, a bias rather than an error that
/// averages out.
fn paced(
    samples: u64,
    interval: u64,
    mut ours: impl FnMut(u64),
    mut floor: impl FnMut(u64),
) -> Paced {
    let new = || Histogram::<u64>::new_with_bounds(1, 1 << 40, 3).expect("bounds are valid");
    let mut p = Paced {
        ours: new(),
        floor: new(),
        tsc: new(),
        empty: new(),
        ours_sum: 0,
        empty_sum: 0,
    };
    let mut next = ticks();
    let mut dither = Dither::new();
    for i in 0..samples {
        for k in 0..4u64 {
            while ticks() < next + k * interval / 4 {
                std::hint::spin_loop();
            }
            dither.wait();
            let a = fenced_ticks();
            match k {
                0 => ours(i),
                1 => floor(i),
                2 => {
                    black_box(ticks());
                }
                _ => {}
            }
            let b = fenced_ticks();
            // Saturating: a thread moved to a core whose TSC is behind reads a negative time.
            let v = b.saturating_sub(a);
            let hist = match k {
                0 => {
                    p.ours_sum += v;
                    &mut p.ours
                }
                1 => &mut p.floor,
                2 => &mut p.tsc,
                _ => {
                    p.empty_sum += v;
                    &mut p.empty
                }
            };
            let _ = hist.record(v.max(1));
        }
        next += interval;
    }
    p
}

/// Share of this thread's ring's mapping on huge pages (see [`Latency::ring_huge_share`]).
fn ring_huge_share() -> Option<f64> {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    {
        let addr = typhon_recorder::probe::this_threads_ring()?;
        let kib = |field| -> Option<f64> {
            let v = typhon_recorder::probe::smaps_field(addr, field)?;
            v.strip_suffix(" kB")?.trim().parse().ok()
        };
        let (huge, size) = (kib("AnonHugePages")?, kib("Size")?);
        (size > 0.0).then(|| huge / size)
    }
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    None
}

/// `no_spare`: [`first_call_no_spare`]'s raw ticks, measured at the start of the run.
pub(crate) fn latency(r: &mut BenchReport, samples: u64, ns_per_tick: f64, no_spare: u64) {
    let path = std::env::temp_dir().join(format!("typhon-bench-{}.dat", std::process::id()));
    let Ok(rec) = RecorderBuilder::new().output(&path).start() else {
        return;
    };
    let interval = (1e9 / LATENCY_RATE as f64 / ns_per_tick) as u64;
    let resolution = tick_resolution();
    let lat = std::thread::Builder::new()
        .name("bench-latency".into())
        .spawn(move || {
            let first = first_event();
            let ring_huge_share = ring_huge_share();
            // The floor of a write with the clock, interleaved with ours: a TSC read and three
            // plain stores with a publish into a private ring as large as ours.
            let mut floor = FloorRing::new(typhon_recorder::DEFAULT_RING_BYTES / 8)?;
            let p = paced(
                samples,
                interval,
                |i| typhon_recorder::ingress_received(i as u32, 1, 2, 64),
                |i| floor.write(i, ticks(), 9),
            );
            black_box(floor.buf.as_ptr());
            Some((first, p, ring_huge_share))
        })
        .expect("spawn latency thread")
        .join();
    // A thread that registers first: the claim moves out of its first call.
    let registered =
        std::thread::spawn(|| (bracketed(typhon_recorder::register_thread), first_event()))
            .join()
            .unwrap_or_default();
    let stats = rec.finish();
    let file_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_dir_all(typhon_recorder::sink::parts_dir(&path));
    let Ok(Some((first, p, ring_huge_share))) = lat else {
        return;
    };
    let ns = |ticks: u64| ticks as f64 * ns_per_tick;
    let (h, fh, bracket) = (&p.ours, &p.floor, p.bracket());
    let n = h.len().max(1) as f64;
    r.latency = Latency {
        samples: h.len(),
        bracket_ns: ns(bracket),
        p50: ns(p.at(h, 0.5)),
        p99: ns(p.at(h, 0.99)),
        p999: ns(p.at(h, 0.999)),
        p9999: ns(p.at(h, 0.9999)),
        max: ns(h.max().saturating_sub(bracket)),
        first_call: ns(first.saturating_sub(bracket)),
        register: ns(registered.0.saturating_sub(bracket)),
        first_call_registered: ns(registered.1.saturating_sub(bracket)),
        drops: stats.map_or(0, |s| s.total_missed()),
        file_bytes,
        floor_p50: ns(p.at(fh, 0.5)),
        floor_p999: ns(p.at(fh, 0.999)),
        tsc_p50: ns(p.at(&p.tsc, 0.5)),
        tsc_p999: ns(p.at(&p.tsc, 0.999)),
        empty_p999: ns(p.at(&p.empty, 0.999)),
        // Mean of ours minus mean of the empty bracket: both dithered alike, so neither carries
        // the rounding of the clock's steps.
        mean: ns(p.ours_sum) / n - ns(p.empty_sum) / p.empty.len().max(1) as f64,
        resolution_ns: ns(resolution),
        ring_huge_share,
        first_call_no_spare: ns(no_spare.saturating_sub(bracket)),
        curves: [
            ("our write (recorder clock)", &p.ours),
            ("clocked floor (TSC read, 3 stores, publish)", &p.floor),
            ("a lone TSC read", &p.tsc),
        ]
        .into_iter()
        .map(|(name, h)| {
            let c = p.curve(h).into_iter().map(|(q, t)| (q, ns(t))).collect();
            (name, c)
        })
        .collect(),
    };
}

/// The first call of a fresh thread in a short session without spare rings: what the pool
/// saves (raw ticks, bracket included; 0 if the session could not start). Run first, before any
/// other phase has freed memory the allocator could hand back already faulted in, so the ring
/// comes fresh from the system as a program's first threads' rings do.
pub(crate) fn first_call_no_spare() -> u64 {
    let Ok(rec) = RecorderBuilder::new().sink(NullSink).spare_rings(0).start() else {
        return 0;
    };
    let t = std::thread::spawn(first_event).join().unwrap_or(0);
    let _ = rec.finish();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_times_every_slot_once_per_round_and_subtracts_the_empty_median() {
        let (mut ours, mut floor) = (Vec::new(), Vec::new());
        let p = paced(300, 100, |i| ours.push(i), |i| floor.push(i));
        let expect: Vec<u64> = (0..300).collect();
        assert_eq!((ours, floor), (expect.clone(), expect));
        for h in [&p.ours, &p.floor, &p.tsc, &p.empty] {
            assert_eq!(h.len(), 300);
        }
        assert_eq!(p.at(&p.empty, 0.5), 0);
        // 300 samples resolve "one in 251" (k = 24) but not "one in 316" (k = 25): 25 points
        // and the largest sample, quantiles rising.
        let c = p.curve(&p.ours);
        assert_eq!(c.len(), 26);
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(p.empty_sum >= p.empty.min() * 300);
    }
}

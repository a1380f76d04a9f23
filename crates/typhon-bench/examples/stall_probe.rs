//! How much of the p99.9 tail is the machine: times, interleaved in one thread and paced like
//! `typhon-rec bench`'s latency phase, bodies that do less and less than a write —
//!
//! - `ours`: `ingress_received` with the recorder's clock (a recorder with a `NullSink`);
//! - `ring`: the same 22-byte record with a TSC read, written by our ring's `Producer` alone
//!   into a ring of the default size that another thread drains every 10 ms (no recorder,
//!   gate or thread-local around it);
//! - `ring, own`: the same into a second such ring that this thread drains itself, every
//!   20 000 rounds between two brackets: the ring alone, its lines never read by another core;
//! - `ring+TLS`: the same, self-drained, with the memory ours touches around a write: the
//!   producer in a thread-local beside the time and a count further on, and two padded
//!   statics checked first (the gate's state byte and the recorder's generation);
//! - `floor`: the latency floor of `typhon-rec bench`: a TSC read, three stores and a Release
//!   store of the position into a private ring as large as ours that nobody reads
//!   (`bench::FloorRing`);
//! - `tsc+store`: a TSC read and three 8-byte stores into a private 16 KiB buffer (always in L1);
//! - `tsc`: one TSC read;
//! - `empty`: nothing (its median is the bracket cost subtracted from the others).
//!
//! Each body's p50 and p99.9 are printed with whether p99.9 ≤ 4 × p50, the bound of issue 5,
//! and then, per run, how many of the samples were above that body's bound: p99.9 meets it
//! when at most 0.1% are. A count moves less from run to run than the percentile, which sits
//! on a cliff. If bodies that touch no shared memory and call no code of ours miss the bound
//! too, the tail is the machine's (a shared, virtualised host), not the recorder's.
//!
//! A second table counts, per run, the samples above the floor's p99.9 + 20 ns: the bound of
//! `typhon-rec bench`'s `p999_vs_floor_p999` target (issue 25), which `ours` misses when more
//! than 0.1% of its samples are there. Its ratios to the floor's own count say how much more
//! often than the floor each body meets the machine's slow moments.
//!
//! ```text
//! cargo run --release --example stall_probe -- [SAMPLES (default 1000000)] [RUNS (default 5)] [file]
//! ```

#[cfg(target_arch = "x86_64")]
mod probe {
    use crossbeam_utils::CachePadded;
    use hdrhistogram::Histogram;
    use std::cell::UnsafeCell;
    use std::hint::black_box;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    // The bench's own brackets and dither: the TSC fenced on both sides, so the bracket holds
    // exactly the body; the plain TSC; the random delay before each bracket.
    use typhon_bench::{fenced_ticks as fenced, ticks as tsc, Dither};

    /// A private buffer of 16 KiB written three words at a time, wrapping.
    struct Buf {
        words: Vec<u64>,
        pos: usize,
    }

    impl Buf {
        fn new() -> Self {
            Self {
                words: vec![1; 2048],
                pos: 0,
            }
        }
        #[inline(always)]
        fn write(&mut self, a: u64, b: u64) {
            let n = self.words.len();
            let p = self.pos;
            self.words[p % n] = a;
            self.words[(p + 1) % n] = b;
            self.words[(p + 2) % n] = a ^ b;
            self.pos = (p + 3) % n;
        }
    }

    const NAMES: [&str; 8] = [
        "ours",
        "ring",
        "ring, own",
        "ring+TLS",
        "floor",
        "tsc+store",
        "tsc",
        "empty",
    ];
    /// Where the floor and the empty bracket are in [`NAMES`].
    const FLOOR: usize = 4;
    const EMPTY: usize = 7;
    /// The `p999_vs_floor_p999` target's margin over the floor's p99.9, ns.
    const TARGET_NS: f64 = 20.0;

    /// One body's figures in one run: p50 and p99.9 (ns, less the empty bracket's median) and
    /// how many samples lay above 4 x that p50, and above the floor's p99.9 + [`TARGET_NS`].
    struct Figures {
        p50: f64,
        p999: f64,
        over: u64,
        over_floor: u64,
    }

    /// The 22-byte record of the ring bodies, with a TSC read, as `ingress_received` writes it.
    #[inline(always)]
    fn ring_write(ring: &mut typhon_recorder::ring::Producer, i: u64) {
        let t = tsc();
        ring.write(22, |d| {
            d[..4].copy_from_slice(&0x00ec_0016u32.to_le_bytes());
            d[4..12].copy_from_slice(&t.to_le_bytes());
            d[12..16].copy_from_slice(&(i as u32).to_le_bytes());
            d[16..20].copy_from_slice(&0x0002_0001u32.to_le_bytes());
            d[20..22].copy_from_slice(&64u16.to_le_bytes());
        });
    }

    /// The `ring+TLS` body's per-thread state, laid out over lines as the recorder's writer
    /// is: the producer, the last time stored beside it, a count some lines further on.
    struct TlsRing {
        producer: Option<typhon_recorder::ring::Producer>,
        last: u64,
        _apart: [u64; 12],
        count: u64,
    }

    /// The two checks ours makes before it writes, each on its own padded line as the
    /// recorder's are: a per-kind state byte, then the recorder's generation.
    static KIND: CachePadded<[AtomicU8; 256]> = CachePadded::new([const { AtomicU8::new(2) }; 256]);
    static GEN: CachePadded<AtomicU64> = CachePadded::new(AtomicU64::new(1));

    thread_local! {
        static TLS_RING: UnsafeCell<TlsRing> = const {
            UnsafeCell::new(TlsRing { producer: None, last: 0, _apart: [0; 12], count: 0 })
        };
    }

    /// The ring body with ours's memory around it and nothing else of the recorder.
    #[inline(always)]
    fn tls_ring_write(i: u64) {
        // Relaxed: plain flags, as the recorder's gate reads them.
        if KIND[0xec].load(Ordering::Relaxed) != 2 || GEN.load(Ordering::Relaxed) == 0 {
            return;
        }
        TLS_RING.with(|c| {
            // SAFETY: the cell is this thread's own, and this is the only reference to it while
            // the closure runs (nothing in it reaches `TLS_RING` again).
            let c = unsafe { &mut *c.get() };
            c.last = tsc();
            if let Some(p) = c.producer.as_mut() {
                ring_write(p, i);
            }
            c.count = c.count.wrapping_add(1);
        });
    }

    /// One run: `samples` rounds of the eight bodies, one body every 120 ns.
    fn run(samples: u64, ticks_per_ns: f64) -> Vec<Figures> {
        let new = || Histogram::<u64>::new_with_bounds(1, 1 << 40, 3).expect("valid bounds");
        let mut h: Vec<Histogram<u64>> = NAMES.iter().map(|_| new()).collect();
        let mut a = Buf::new();
        let mut floor = typhon_bench::FloorRing::new(typhon_recorder::DEFAULT_RING_BYTES / 8)
            .expect("a floor ring of the default size");
        let (mut ring, mut drain) =
            typhon_recorder::ring::ring(typhon_recorder::DEFAULT_RING_BYTES)
                .expect("a ring of the default size");
        let (tls, mut tls_drain) = typhon_recorder::ring::ring(typhon_recorder::DEFAULT_RING_BYTES)
            .expect("a ring of the default size");
        // SAFETY: as in `tls_ring_write`: this thread's own cell, no other reference live.
        TLS_RING.with(|c| unsafe { (*c.get()).producer = Some(tls) });
        let (mut own, mut own_drain) =
            typhon_recorder::ring::ring(typhon_recorder::DEFAULT_RING_BYTES)
                .expect("a ring of the default size");
        // The ring's consumer on another thread, every 10 ms like the flusher's default cycle,
        // so the ring body's lines travel between cores as ours do.
        let stop = Arc::new(AtomicBool::new(false));
        let drainer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // Relaxed: only ends the loop; the ring's own orderings cover its bytes.
                while !stop.load(Ordering::Relaxed) {
                    drain.drain(|_| {});
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let step = (120.0 * ticks_per_ns) as u64;
        let mut next = tsc();
        let mut dither = Dither::new();
        for i in 0..samples {
            for (k, hist) in h.iter_mut().enumerate() {
                while tsc() < next {
                    std::hint::spin_loop();
                }
                next += step;
                dither.wait();
                let t0 = fenced();
                match k {
                    0 => typhon_recorder::ingress_received(i as u32, 1, 2, 64),
                    1 => ring_write(&mut ring, i),
                    2 => ring_write(&mut own, i),
                    3 => tls_ring_write(i),
                    4 => floor.write(tsc(), i, 9),
                    5 => a.write(tsc(), i),
                    6 => {
                        black_box(tsc());
                    }
                    _ => {}
                }
                let t1 = fenced();
                // Saturating: a thread moved to a core whose TSC is behind reads a negative time.
                let _ = hist.record(t1.saturating_sub(t0).max(1));
            }
            // 20 000 records of 22 bytes are a fifth of the ring: it never fills.
            if i % 20_000 == 19_999 {
                own_drain.drain(|_| {});
                tls_drain.drain(|_| {});
            }
        }
        black_box(&a.words);
        black_box(&mut floor);
        stop.store(true, Ordering::Relaxed);
        let _ = drainer.join();
        let bracket = h[EMPTY].value_at_quantile(0.5);
        let ns = |t: u64| t as f64 / ticks_per_ns;
        // In raw ticks, bracket included, like the histograms' values.
        let floor_bound =
            h[FLOOR].value_at_quantile(0.999) + (TARGET_NS * ticks_per_ns).round() as u64;
        h.iter()
            .enumerate()
            .map(|(k, x)| {
                let sub = if k == EMPTY { 0 } else { bracket };
                let p50 = x.value_at_quantile(0.5).saturating_sub(sub);
                Figures {
                    p50: ns(p50),
                    p999: ns(x.value_at_quantile(0.999).saturating_sub(sub)),
                    // Above the bound: more than 4 x p50 after the bracket is taken off.
                    over: x.count_between(sub + 4 * p50 + 1, u64::MAX),
                    over_floor: x.count_between(floor_bound + 1, u64::MAX),
                }
            })
            .collect()
    }

    /// Prints per-run sample counts (one row per run, one column per body), their sums over
    /// the runs and each sum as a multiple of the floor's: how much more often each body was
    /// slow than the least a clocked write into ring memory is.
    fn counts(rows: &[Vec<u64>]) {
        let line = |v: &mut dyn Iterator<Item = String>| v.collect::<String>();
        for o in rows {
            println!("{}", line(&mut o.iter().map(|c| format!("{c:>16}"))));
        }
        let sums: Vec<u64> = (0..NAMES.len())
            .map(|k| rows.iter().map(|o| o[k]).sum())
            .collect();
        let floor = sums[FLOOR].max(1) as f64;
        println!(
            "{}   (sum)",
            line(&mut sums.iter().map(|c| format!("{c:>16}")))
        );
        println!(
            "{}   (x the floor's sum)",
            line(&mut sums.iter().map(|&c| format!("{:>16.2}", c as f64 / floor)))
        );
    }

    pub fn main() {
        let mut args = std::env::args().skip(1);
        let samples: u64 = args
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        let runs: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
        let (t0, i0) = (tsc(), Instant::now());
        std::thread::sleep(Duration::from_millis(100));
        let ticks_per_ns = (tsc() - t0) as f64 / i0.elapsed().as_nanos() as f64;
        // `file` as the third argument: the flusher writes a real file (as `typhon-rec bench`
        // does), not into a NullSink.
        let out = std::env::temp_dir().join(format!("stall-probe-{}.dat", std::process::id()));
        let b = typhon_recorder::RecorderBuilder::new();
        let b = if args.next().as_deref() == Some("file") {
            b.output(&out)
        } else {
            b.sink(typhon_recorder::sink::NullSink)
        };
        let rec = b.start().expect("start a recorder");
        typhon_recorder::register_thread();
        println!("p50 / p99.9 in ns (empty: raw, others less its median); * = p99.9 <= 4 x p50");
        println!("{}", NAMES.map(|n| format!("{n:>16}")).join(""));
        let mut passes = [0u32; NAMES.len()];
        let (mut overs, mut over_floor) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let r = run(samples, ticks_per_ns);
            let mut line = String::new();
            for (k, f) in r.iter().enumerate() {
                let ok = f.p999 <= 4.0 * f.p50;
                passes[k] += u32::from(ok);
                let cell = format!("{:.0} / {:.0}{}", f.p50, f.p999, if ok { "*" } else { " " });
                line += &format!("{cell:>16}");
            }
            println!("{line}");
            overs.push(r.iter().map(|f| f.over).collect::<Vec<_>>());
            over_floor.push(r.iter().map(|f| f.over_floor).collect::<Vec<_>>());
        }
        let summary = passes.map(|p| format!("{:>16}", format!("{p}/{runs}")));
        println!("{}   (runs within the bound)", summary.join(""));
        println!(
            "samples above each body's bound (p99.9 meets it at <= {}):",
            samples / 1000
        );
        counts(&overs);
        println!(
            "samples above the floor's p99.9 + {TARGET_NS} ns (p999_vs_floor_p999 misses at > {}):",
            samples / 1000
        );
        counts(&over_floor);
        match rec.finish() {
            // A flusher starved on a busy host can let the ring fill: said, not hidden.
            Ok(s) if s.total_missed() > 0 => {
                println!("({} writes dropped: the ring filled)", s.total_missed())
            }
            Ok(_) => {}
            Err(e) => eprintln!("finishing the recorder: {e}"),
        }
        let _ = std::fs::remove_file(&out);
    }
}

fn main() {
    #[cfg(target_arch = "x86_64")]
    probe::main();
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("stall_probe reads the TSC: x86_64 only");
}

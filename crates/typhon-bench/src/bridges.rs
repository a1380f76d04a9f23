//! The `tracing` bridges, side by side: enter + exit of an existing span through
//! `typhon_tracing::TyphonLayer`, through a layer that does nothing (the Registry's own cost, the
//! floor), through tracing-chrome and through tracing-tracy, each on its own
//! `tracing_subscriber::Registry`; and an `info!` with one integer field through ours.
//!
//! A subscriber is per thread (`tracing::dispatcher::with_default`): each run enters its
//! dispatcher's scope, so every run sees only its own bridge. The span is the Bevy shape,
//! `info_span!("system", name = "physics")`, created once per bridge; what is timed is its
//! enter and exit, the cost paid every frame. Rounds of one run per body, each round starting at
//! a different body, as in the recorder's side-by-side figures; after each run its background
//! work finishes untimed (our flusher drains; tracing-chrome's writer thread writes out
//! everything sent; Tracy's client keeps queuing, as with no viewer).

use crate::report::BenchReport;
use crate::timer::{figure, settle_recorder, ticks, Timer};
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

/// A layer that does nothing: a Registry with it costs what the Registry costs.
struct Nothing;
impl<S: tracing_core::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

/// tracing-chrome's output: counts the bytes its writer thread wrote and the flushes it made,
/// and keeps nothing. A flush is the writer thread's answer to `FlushGuard::flush`, which it
/// handles after every message sent before it, so its count tells that a run is written out.
#[derive(Clone, Default)]
struct Counting {
    bytes: Arc<AtomicU64>,
    flushes: Arc<AtomicU64>,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Relaxed: statistics; the flush count below orders the wait.
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        // Release: the bytes counted before it are visible to the thread that waits for it.
        self.flushes.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

/// What [`bridges`] times, one run of each per round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Floor,
    Ours,
    OursEvent,
    Chrome,
    Tracy,
}

const BODIES: [Body; 5] = [
    Body::Floor,
    Body::Ours,
    Body::OursEvent,
    Body::Chrome,
    Body::Tracy,
];

/// The span every bridge enters: one callsite, created under each bridge's dispatcher.
fn system_span() -> tracing::Span {
    tracing::info_span!("system", name = "physics")
}

/// Times the bridges (see the module docs) into `r`'s `tracing_*` figures. Installs its own
/// recorder (NullSink, default ring); leaves the figures at 0 if it cannot.
pub(crate) fn bridges(r: &mut BenchReport, t: &Timer) {
    // A layer's enter + exit writes a ~70-byte record: 10 000 of them stay under half the
    // default ring, as the writes phase's runs do (`writes.rs`), so no run is timed while the
    // flusher drains it. 20 000 crossed the half mark, woke the flusher mid-run and read about
    // 9 ns more a call in those runs, natives alike (BENCHMARKS.md, "What falls short").
    const RUN: u64 = 10_000;
    let Ok(rec) = RecorderBuilder::new()
        .sink(NullSink)
        .flush_interval(Duration::from_millis(1))
        .start()
    else {
        return;
    };
    typhon_recorder::tick_start();
    let out = Counting::default();
    let (chrome, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(out.clone())
        .build();
    let ours =
        Dispatch::new(tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()));
    // In the order of BODIES (the event goes through our dispatcher too).
    let dispatches = [
        Dispatch::new(tracing_subscriber::registry().with(Nothing)),
        ours.clone(),
        ours,
        Dispatch::new(tracing_subscriber::registry().with(chrome)),
        Dispatch::new(tracing_subscriber::registry().with(tracing_tracy::TracyLayer::default())),
    ];
    let spans: Vec<tracing::Span> = dispatches
        .iter()
        .map(|d| tracing::dispatcher::with_default(d, system_span))
        .collect();
    let npt = t.ns_per_tick;
    let rounds = t.runs * 3;
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); BODIES.len()];
    let time_one = |i: usize| -> f64 {
        let (b, d, s) = (BODIES[i], &dispatches[i], &spans[i]);
        let spent = tracing::dispatcher::with_default(d, || {
            let t0 = ticks();
            if b == Body::OursEvent {
                for n in 0..RUN {
                    tracing::info!(n = black_box(n), "tick");
                }
            } else {
                for _ in 0..RUN {
                    let g = s.enter();
                    black_box(&g);
                }
            }
            ticks() - t0
        });
        match b {
            Body::Ours | Body::OursEvent => settle_recorder(),
            Body::Chrome => {
                // Acquire: pairs with the writer's Release in `Counting::flush`.
                let before = out.flushes.load(Ordering::Acquire);
                guard.flush();
                while out.flushes.load(Ordering::Acquire) == before {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
            Body::Floor | Body::Tracy => {}
        }
        spent as f64 * npt / RUN as f64
    };
    for i in 0..BODIES.len() {
        time_one(i);
    }
    for round in 0..rounds {
        for k in 0..BODIES.len() {
            let i = (round + k) % BODIES.len();
            times[i].push(time_one(i));
        }
    }
    drop(spans);
    drop(dispatches);
    drop(guard); // joins tracing-chrome's writer thread
                 // Relaxed: read after the writer thread was joined.
    r.tracing_chrome_bytes = out.bytes.load(Ordering::Relaxed);
    let mut figs = times.into_iter().map(figure);
    for slot in [
        &mut r.tracing_floor,
        &mut r.tracing_span,
        &mut r.tracing_event,
        &mut r.tracing_chrome_span,
        &mut r.tracing_tracy_span,
    ] {
        *slot = figs.next().expect("one figure per body");
    }
    if let Ok(s) = rec.finish() {
        r.tracing_records = s.user_written();
        r.tracing_drops = s.total_missed();
    }
}

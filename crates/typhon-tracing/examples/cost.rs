//! What the layer costs, next to the Registry's own cost and the recorder's own span pair, in
//! ns per op: enter + exit of an existing span through a Registry with a layer that does
//! nothing (`tracing_floor_ns`) and with `TyphonLayer` (`tracing_span_ns`), an `info!` with one
//! integer field (`tracing_event_ns`), and `typhon_recorder::span` (`span_ns`).
//!
//! Runs of 20 000 ops (they fit the ring) start from a drained ring, as `typhon-rec bench`
//! times the native span; the bodies take turns for 15 rounds; each prints its median, min and
//! max. `cargo run --release -p typhon-tracing --example cost`
use std::hint::black_box;
use std::time::Instant;
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::{sink::NullSink, RecorderBuilder};

struct Nothing;
impl<S: tracing_core::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

/// A figure's name, the dispatcher its body runs under, and the body.
type Body<'a> = (&'static str, &'a Dispatch, Box<dyn FnMut() + 'a>);

const RUN: u32 = 20_000;
const ROUNDS: usize = 15;

/// ns per op of `RUN` calls of `f` under `d`, then waits for the flusher to drain them.
fn run(d: &Dispatch, f: &mut dyn FnMut()) -> f64 {
    let ns = tracing::dispatcher::with_default(d, || {
        let t = Instant::now();
        for _ in 0..RUN {
            f();
        }
        t.elapsed().as_nanos() as f64 / f64::from(RUN)
    });
    typhon_recorder::probe::drain_installed();
    ns
}

fn main() {
    let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
    let floor = Dispatch::new(tracing_subscriber::registry().with(Nothing));
    let ours =
        Dispatch::new(tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()));
    let floor_span = tracing::dispatcher::with_default(&floor, || {
        tracing::info_span!("system", name = "physics")
    });
    let ours_span = tracing::dispatcher::with_default(&ours, || {
        tracing::info_span!("system", name = "physics")
    });
    let mut bodies: Vec<Body> = vec![
        (
            "tracing_floor_ns",
            &floor,
            Box::new(|| drop(black_box(&floor_span).enter())),
        ),
        (
            "tracing_span_ns",
            &ours,
            Box::new(|| drop(black_box(&ours_span).enter())),
        ),
        (
            "tracing_event_ns",
            &ours,
            Box::new(|| tracing::info!(n = 1, "tick")),
        ),
        (
            "span_ns",
            &ours,
            Box::new(|| {
                drop(black_box(typhon_recorder::span(black_box(
                    "system: physics",
                ))))
            }),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); bodies.len()];
    for (_, d, f) in bodies.iter_mut() {
        run(d, f); // warm-up
    }
    for round in 0..ROUNDS {
        for k in 0..bodies.len() {
            let i = (round + k) % bodies.len();
            let (_, d, f) = &mut bodies[i];
            times[i].push(run(d, f));
        }
    }
    let stats = rec.finish().unwrap();
    for ((name, _, _), mut t) in bodies.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        println!(
            "{name} {:.1} (min {:.1}, max {:.1})",
            t[t.len() / 2],
            t[0],
            t[t.len() - 1]
        );
    }
    println!("missed {}", stats.total_missed());
}

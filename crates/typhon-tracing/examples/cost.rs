//! What the layer costs, next to the Registry's own cost: enter + exit of an existing span, and
//! an `info!` with one integer field, median of 7 runs of 200k each, in ns.
//! `cargo run --release -p typhon-tracing --example cost`
use std::time::Instant;
use tracing_subscriber::prelude::*;
use typhon_recorder::{sink::NullSink, RecorderBuilder};

struct Nothing;
impl<S: tracing_core::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

fn per_op(mut f: impl FnMut()) -> f64 {
    const N: u32 = 200_000;
    let mut runs: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..N {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(N)
        })
        .collect();
    runs.sort_by(|a, b| a.total_cmp(b));
    runs[3]
}

fn main() {
    let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
    let floor =
        tracing::subscriber::with_default(tracing_subscriber::registry().with(Nothing), || {
            let s = tracing::info_span!("system", name = "physics");
            per_op(|| drop(s.enter()))
        });
    let (span, event) = tracing::subscriber::with_default(
        tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()),
        || {
            let s = tracing::info_span!("system", name = "physics");
            let span = per_op(|| drop(s.enter()));
            let event = per_op(|| tracing::info!(n = 1, "tick"));
            (span, event)
        },
    );
    let stats = rec.finish().unwrap();
    println!("tracing_floor_ns {floor:.1}");
    println!("tracing_span_ns {span:.1}");
    println!("tracing_event_ns {event:.1}");
    println!("missed {}", stats.total_missed());
}

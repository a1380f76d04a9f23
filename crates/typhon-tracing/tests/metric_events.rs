//! tracing-opentelemetry's metrics convention: an event with a `counter.NAME` or
//! `monotonic_counter.NAME` field is recorded as the counter NAME (its running total, each
//! event's value an increment; i64, u64 and f64), not as an event; other events stay events.
//! Read back from a trace.dat by the project's reader.

mod common;

use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, CounterValue as V, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;
use typhon_tracing::TyphonLayer;

#[test]
fn metric_fields_are_counters_not_events() {
    let _g = doc_lock();
    let dir = common::scratch("metrics");
    let path = dir.join("metrics.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(TyphonLayer::new()));
    tracing::dispatcher::with_default(&dispatch, || {
        for _ in 0..3 {
            tracing::info!(monotonic_counter.requests = 1u64);
        }
        tracing::info!(counter.queue_depth = 5i64, "queued");
        tracing::info!(counter.queue_depth = -2i64);
        tracing::info!(monotonic_counter.seconds = 0.25f64);
        tracing::info!(monotonic_counter.seconds = 0.5f64);
        tracing::info!(monotonic_counter.requests = 2u64, path = "/a");
        tracing::info!(counters = 9, "not a metric");
    });
    rec.finish().unwrap();
    let file = TraceFile::open(&path).unwrap();
    let mut counters = Vec::new();
    let mut events = Vec::new();
    for r in file.stream_records() {
        let r = r.unwrap();
        match records::decode(&r.data).unwrap().1 {
            Record::Counter { value, name } => counters.push((name.to_string(), value)),
            Record::TracingEvent {
                message, fields, ..
            } => events.push(format!("{message} {fields}")),
            _ => {}
        }
    }
    let c = |n: &str, v| (n.to_string(), v);
    assert_eq!(
        counters,
        [
            c("requests", V::from_i64(1)),
            c("requests", V::from_i64(2)),
            c("requests", V::from_i64(3)),
            c("queue_depth", V::from_i64(5)),
            c("queue_depth", V::from_i64(3)),
            c("seconds", V::from_f64(0.25)),
            c("seconds", V::from_f64(0.75)),
            c("requests", V::from_i64(5)),
        ]
    );
    assert_eq!(events, ["not a metric counters=9"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Bytes on disk a "request" costs through `TyphonLayer`, shaped as issue 33's service: three
//! span infos (a request span, a handler span and an inner span, two fields each), six span
//! entries (each span entered twice, as a future polled twice) and three events.
//!
//! `cargo run --release -p typhon-tracing --example bytes_per_request [REQUESTS]`

use tracing_subscriber::prelude::*;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let out = std::env::temp_dir().join(format!("bytes-per-request-{}.dat", std::process::id()));
    let rec = typhon_recorder::RecorderBuilder::new()
        .output(&out)
        .start()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..n {
            let req = tracing::info_span!("request", method = "GET", uri = "/users/7");
            let h = tracing::info_span!(parent: &req, "handler", user = 7u64, id = i);
            let db = tracing::debug_span!(parent: &h, "db", table = "users", rows = 1u64);
            for _poll in 0..2 {
                let _r = req.enter();
                let _h = h.enter();
                let _d = db.enter();
            }
            tracing::info!(parent: &req, status = 200u64, "started processing request");
            tracing::debug!(parent: &db, rows = 1u64, "query done");
            tracing::info!(parent: &req, status = 200u64, latency = 31u64, "finished processing request");
        }
    });
    let stats = rec.finish().unwrap();
    let bytes = std::fs::metadata(&out).unwrap().len();
    // Bytes of each kind's records as written (each with its 4-byte page header word).
    let f = typhon_trace::tracedat::TraceFile::open_streaming(&out).unwrap();
    let mut by_kind = std::collections::BTreeMap::<u8, (u64, u64)>::new();
    for cpu in 0..f.cpus() {
        for r in f.stream_cpu(cpu).flatten() {
            let e = by_kind.entry(r.data[2]).or_default();
            e.0 += 1;
            e.1 += r.data.len() as u64 + 4;
        }
    }
    for (k, (count, b)) in by_kind {
        let name = typhon_recorder::codec::kind_def(typhon_recorder::codec::TraceEventKind(k))
            .map_or("?", |d| d.name);
        println!(
            "  {name:<20} {count:>8} records  {:>6.1} B each  {:>6.1} B/request",
            b as f64 / count as f64,
            b as f64 / n as f64
        );
    }
    drop(f);
    let _ = std::fs::remove_file(&out);
    println!(
        "requests {n}  records {}  file {bytes} B  {:.1} B/request  {:.1} B/record",
        stats.user_written(),
        bytes as f64 / n as f64,
        bytes as f64 / stats.user_written() as f64
    );
}

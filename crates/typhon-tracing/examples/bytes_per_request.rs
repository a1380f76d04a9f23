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
    let _ = std::fs::remove_file(&out);
    println!(
        "requests {n}  records {}  file {bytes} B  {:.1} B/request  {:.1} B/record",
        stats.user_written(),
        bytes as f64 / n as f64,
        bytes as f64 / stats.user_written() as f64
    );
}

//! The `tracing` calls of one request of `real-service` (tower-http's `TraceLayer` span and
//! its two events, the `#[instrument]`ed handlers' spans, their events and a `Span::record`),
//! made in process with no network, so that the layer's own CPU a request shows without the
//! kernel's: thread CPU time a request through the Registry alone and through the Registry
//! with `TyphonLayer`, in alternating runs; medians, min and max.
//!
//! `cargo run --release -p typhon-tracing --example request_cpu [ROUNDS]`

use std::fmt;
use tracing::{debug, info, Dispatch, Level};
use tracing_subscriber::prelude::*;
use typhon_recorder::{sink::NullSink, RecorderBuilder};

const RUN: u64 = 2_000;

fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A `Debug` that prints a text as it is (as `http::Uri`'s and `Method`'s do).
struct Plain<'a>(&'a str);
impl fmt::Debug for Plain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// `TraceLayer`'s latency field: `display` of a value with a unit.
struct Latency(u64);
impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

#[inline(never)]
fn request(i: u64, uri: &mut String) {
    use std::fmt::Write as _;
    uri.clear();
    let user = i % 2 == 0;
    let _ = write!(uri, "/{}/{i}", if user { "users" } else { "orders" });
    let req = tracing::span!(
        Level::DEBUG,
        "request",
        method = ?Plain("GET"),
        uri = ?Plain(uri),
        version = ?Plain("HTTP/1.1")
    );
    {
        let _r = req.enter();
        tracing::event!(Level::DEBUG, "started processing request");
        if user {
            let h = tracing::info_span!("get_user", user.id = i);
            let _h = h.enter();
            {
                let l = tracing::debug_span!("load_user", id = i);
                let _l = l.enter();
                debug!(id = i, "cache miss");
            }
            info!(bytes = 40u64, "user served");
        } else {
            let h = tracing::info_span!("get_order", order.id = i, status = tracing::field::Empty);
            let _h = h.enter();
            h.record("status", if i % 3 == 0 { "shipped" } else { "open" });
            info!(total_cents = i * 100 + 99, "order served");
        }
    }
    // The response's poll: the request span entered again.
    let _r = req.enter();
    tracing::event!(
        Level::DEBUG,
        latency = %Latency(0),
        status = 200u64,
        "finished processing request"
    );
}

fn run(d: &Dispatch, base: u64) -> f64 {
    let mut uri = String::new();
    let ns = tracing::dispatcher::with_default(d, || {
        let t = thread_cpu_ns();
        for i in 0..RUN {
            request(base + i, &mut uri);
        }
        (thread_cpu_ns() - t) as f64 / RUN as f64
    });
    typhon_recorder::probe::drain_installed();
    ns
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(31);
    let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
    let registry = Dispatch::new(tracing_subscriber::registry());
    let ours =
        Dispatch::new(tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new()));
    let mut base = 1;
    // One mode's runs alone (for an instruction count under callgrind, `request` toggled).
    if let Ok(only) = std::env::var("REQUEST_CPU_ONLY") {
        let d = if only == "registry" { &registry } else { &ours };
        for _ in 0..rounds {
            run(d, base);
            base += RUN;
        }
        rec.finish().unwrap();
        return;
    }
    for d in [&registry, &ours] {
        run(d, base);
        base += RUN;
    }
    let (mut a, mut b, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (x, y) = if round % 2 == 0 {
            let x = run(&registry, base);
            (x, run(&ours, base + RUN))
        } else {
            let y = run(&ours, base);
            (run(&registry, base + RUN), y)
        };
        base += 2 * RUN;
        a.push(x);
        b.push(y);
        diff.push(y - x);
    }
    let stats = rec.finish().unwrap();
    for (name, mut t) in [
        ("registry_ns", a),
        ("typhon_ns", b),
        ("over_registry_ns", diff),
    ] {
        t.sort_by(f64::total_cmp);
        println!(
            "{name} {:.0} (min {:.0}, max {:.0})",
            t[t.len() / 2],
            t[0],
            t[t.len() - 1]
        );
    }
    println!("missed {}", stats.total_missed());
}

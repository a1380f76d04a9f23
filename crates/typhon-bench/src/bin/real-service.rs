//! A real program as a benchmark: an axum service with tower-http's `TraceLayer` and
//! `#[instrument]`ed handlers, under a load generator on loopback, measured in CPU a request
//! (the server process's own CPU time, its runtime's workers and the subscriber's threads
//! included) and bytes on disk a request, under each `tracing` subscriber (BENCHMARKS.md,
//! "What a real program pays").
//!
//! ```text
//! real-service bench [--modes all|none,registry,…] [--rounds 5] [--requests 20000] [--conns 4]
//!                    [--warmup 2000] [--wrk SECONDS] [--json FILE] [--plot FILE.svg]
//! ```
//! `bench` runs the modes alternately, each round one server process per mode. The server
//! (`serve`) starts the load generator (`load`, this program again, or `wrk` with `--wrk`) as a
//! process of its own, so that only the server's CPU is counted: the generator warms the
//! server up, the server lets its subscriber catch up and reads its CPU time, the generator
//! sends the measured requests, the server lets its subscriber catch up again (our flusher
//! drains, tracing-chrome's writer flushes, the process goes idle) and reads its CPU time
//! again; then it finishes the subscriber's output (our recording assembled from its parts,
//! tracing-chrome's file closed), reported apart, per request served.

use axum::extract::Path as UrlPath;
use axum::routing::get;
use axum::Router;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, instrument};
use typhon_bench::real::{self, Mode};

/// Requests the handlers answered (Relaxed: a count, read after the load generator is done).
static SERVED: AtomicU64 = AtomicU64::new(0);

#[instrument(level = "debug")]
async fn load_user(id: u64) -> String {
    debug!(id, "cache miss");
    format!("{{\"id\":{id},\"name\":\"user-{id}\",\"plan\":\"free\"}}")
}

#[instrument(skip_all, fields(user.id = id))]
async fn get_user(UrlPath(id): UrlPath<u64>) -> String {
    SERVED.fetch_add(1, Ordering::Relaxed);
    let body = load_user(id).await;
    info!(bytes = body.len(), "user served");
    body
}

#[instrument(skip_all, fields(order.id = id, status))]
async fn get_order(UrlPath(id): UrlPath<u64>) -> String {
    SERVED.fetch_add(1, Ordering::Relaxed);
    let status = if id % 3 == 0 { "shipped" } else { "open" };
    tracing::Span::current().record("status", status);
    info!(total_cents = id * 100 + 99, "order served");
    format!("{{\"order\":{id},\"status\":\"{status}\"}}")
}

fn app() -> Router {
    Router::new()
        .route("/users/{id}", get(get_user))
        .route("/orders/{id}", get(get_order))
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        Some("serve") => serve(&args[1..]),
        Some("load") => load(&args[1..]),
        _ => Err("usage: real-service bench|serve|load [options] (see the source's docs)".into()),
    };
    if let Err(e) = r {
        eprintln!("real-service: {e}");
        std::process::exit(1);
    }
}

/// The options `bench` passes on to `serve`, and their defaults.
struct Load {
    requests: u64,
    conns: u64,
    warmup: u64,
    wrk: u64,
}

impl Load {
    fn parse(args: &[String]) -> Result<Self, String> {
        Ok(Load {
            requests: real::arg(args, "--requests", 20_000)?,
            conns: real::arg(args, "--conns", 4)?,
            warmup: real::arg(args, "--warmup", 2_000)?,
            wrk: real::arg(args, "--wrk", 0)?,
        })
    }
    fn args(&self) -> Vec<String> {
        [
            ("--requests", self.requests),
            ("--conns", self.conns),
            ("--warmup", self.warmup),
            ("--wrk", self.wrk),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect()
    }
}

fn bench(args: &[String]) -> Result<(), String> {
    let modes = Mode::parse_list(&real::arg(args, "--modes", "all".to_string())?)?;
    let rounds: usize = real::arg(args, "--rounds", 5)?;
    let l = Load::parse(args)?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    eprintln!(
        "real-service: {} modes x {rounds} rounds, {} requests over {} connections each (load {})",
        modes.len(),
        if l.wrk > 0 {
            format!("wrk {} s", l.wrk)
        } else {
            l.requests.to_string()
        },
        l.conns,
        real::load_average()
    );
    let samples = real::alternate(
        &modes,
        rounds,
        Duration::from_secs(300),
        |m| {
            let mut c = Command::new(&exe);
            c.arg("serve").arg("--mode").arg(m.name()).args(l.args());
            c
        },
        |s| {
            eprintln!(
                "  round {} {:<12} {:>8.2} µs a request, {:>6.0} B, load {}",
                s.round,
                s.mode,
                s.get("cost_ns") / 1e3,
                s.get("bytes_per_unit"),
                s.figures["load"].as_str().unwrap_or("")
            )
        },
    )?;
    let sum = real::summarise(&samples, &["threads_ns_per_unit", "finish_ns_per_unit"]);
    println!(
        "{}",
        real::table(
            &sum,
            "CPU a request",
            "request",
            &[
                "of it, our flusher + compressor",
                "finishing the file, a request"
            ]
        )
    );
    if let Some(p) = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1))
    {
        real::write_json(p.as_ref(), "real-service", &samples, &sum)?;
    }
    if let Some(p) = args
        .iter()
        .position(|a| a == "--plot")
        .and_then(|i| args.get(i + 1))
    {
        let title =
            format!("axum + TraceLayer service: server CPU a request, {rounds} alternating rounds");
        real::overhead_svg(p.as_ref(), &title, "a request", &sum)?;
    }
    Ok(())
}

/// One measuring process: the server under `--mode`, printing its figures as JSON.
fn serve(args: &[String]) -> Result<(), String> {
    let mode = Mode::parse(&real::arg(args, "--mode", String::new())?)?;
    let l = Load::parse(args)?;
    let installed = real::install(mode, &real::scratch("service"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| format!("bind 127.0.0.1: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    rt.spawn(async move {
        let _ = axum::serve(listener, app()).await;
    });
    let load_avg = real::load_average();

    let measured = if l.wrk > 0 {
        let url = format!("http://127.0.0.1:{port}/users/7");
        let wrk = |secs: u64| {
            Command::new("wrk")
                .args([
                    "-t2",
                    &format!("-c{}", l.conns),
                    &format!("-d{secs}s"),
                    &url,
                ])
                .stdout(Stdio::null())
                .status()
                .map_err(|e| format!("wrk (apt-get install wrk): {e}"))
        };
        wrk(1)?;
        window(installed, || wrk(l.wrk).map(|_| ()))?
    } else {
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let mut gen = Command::new(exe)
            .args(["load", "--port", &port.to_string()])
            .args(l.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start the load generator: {e}"))?;
        let mut lines = BufReader::new(gen.stdout.take().ok_or("no stdout")?).lines();
        let mut go = gen.stdin.take().ok_or("no stdin")?;
        // The generator says "warm" once its warm-up requests are answered.
        match lines.next() {
            Some(Ok(l)) if l == "warm" => {}
            other => return Err(format!("load generator: {other:?} instead of \"warm\"")),
        }
        let m = window(installed, || {
            writeln!(go, "go").map_err(|e| e.to_string())?;
            let done = lines.next();
            let st = gen.wait().map_err(|e| e.to_string())?;
            match done {
                Some(Ok(l)) if st.success() && l.starts_with("done") => Ok(()),
                other => Err(format!("load generator: {other:?}, {st}")),
            }
        })?;
        if m.window_served != l.requests {
            return Err(format!(
                "served {} requests in the window, sent {}",
                m.window_served, l.requests
            ));
        }
        m
    };
    drop(rt);
    let served = SERVED.load(Ordering::Relaxed);
    let per = |x: f64| x / measured.window_served.max(1) as f64;
    let all = |x: f64| x / served.max(1) as f64;
    println!(
        "{}",
        serde_json::json!({
            "mode": mode.name(),
            "cost_ns": per(measured.cpu_ns as f64),
            "units": measured.window_served,
            "served": served,
            "bytes_per_unit": all(measured.fin.file_bytes as f64),
            "records_per_unit": all(measured.fin.records as f64),
            "mem_bytes_per_unit": per(measured.rss_grown as f64),
            "finish_ns_per_unit": all(measured.finish_cpu_ns as f64),
            "threads_ns_per_unit": per(measured.ours_cpu_ns as f64),
            "missed": measured.fin.missed,
            "file_bytes": measured.fin.file_bytes,
            "records": measured.fin.records,
            "load": load_avg,
        })
    );
    Ok(())
}

/// What a measured window cost the server.
struct Window {
    /// From before the measured requests to when the subscriber caught up with them.
    cpu_ns: u64,
    /// Of `cpu_ns`, the recorder's own threads' (flusher, compressor).
    ours_cpu_ns: u64,
    /// Finishing the subscriber's output afterwards (ours: the file assembled from its parts).
    finish_cpu_ns: u64,
    window_served: u64,
    rss_grown: u64,
    fin: real::Finished,
}

/// Measures the server's CPU time over `load` (which returns once the measured requests are
/// answered) until its subscriber caught up, then the finishing of the subscriber's output.
fn window(
    installed: real::Installed,
    load: impl FnOnce() -> Result<(), String>,
) -> Result<Window, String> {
    installed.settle();
    let ours0 = real::recorder_threads_cpu_ns();
    let (cpu0, served0, rss0) = (
        real::process_cpu_ns(),
        SERVED.load(Ordering::Relaxed),
        real::rss_bytes(),
    );
    load()?;
    let window_served = SERVED.load(Ordering::Relaxed) - served0;
    let rss_grown = real::rss_bytes().saturating_sub(rss0);
    installed.settle();
    let cpu1 = real::process_cpu_ns();
    let ours_cpu_ns = real::recorder_threads_cpu_ns() - ours0;
    // The subscriber stays the global default (it cannot be removed); its output is closed.
    let fin = installed.finish()?;
    Ok(Window {
        cpu_ns: cpu1 - cpu0,
        finish_cpu_ns: real::process_cpu_ns() - cpu1,
        ours_cpu_ns,
        window_served,
        rss_grown,
        fin,
    })
}

/// The load generator: `--conns` connections (keep-alive, one request in flight each), the
/// warm-up requests, "warm" on stdout, then on "go" from stdin the measured requests, then
/// "done". Bounded: every read times out after 10 s, and exactly `--requests` are sent.
fn load(args: &[String]) -> Result<(), String> {
    let port: u16 = real::arg(args, "--port", 0)?;
    let l = Load::parse(args)?;
    let run = |n: u64| -> Result<(), String> {
        let next = Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..l.conns.max(1))
            .map(|_| {
                let next = next.clone();
                std::thread::spawn(move || -> Result<(), String> {
                    let mut c = Conn::open(port)?;
                    loop {
                        // Relaxed: a ticket counter; each ticket is one request.
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return Ok(());
                        }
                        let path = if i % 2 == 0 {
                            format!("/users/{}", i % 1000)
                        } else {
                            format!("/orders/{}", i % 1000)
                        };
                        c.get(&path)?;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().map_err(|_| "a connection thread panicked")??;
        }
        Ok(())
    };
    run(l.warmup)?;
    println!("warm");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    run(l.requests)?;
    println!("done {}", l.requests);
    Ok(())
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(port: u16) -> Result<Self, String> {
        let s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let _ = s.set_nodelay(true);
        Ok(Conn { s, buf: Vec::new() })
    }

    /// Sends GET `path` and reads the whole response; a status other than 200 is an error.
    fn get(&mut self, path: &str) -> Result<(), String> {
        write!(self.s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .map_err(|e| format!("send: {e}"))?;
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            self.fill(&mut chunk)?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            return Err(format!("{path}: {}", head.lines().next().unwrap_or("")));
        }
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{path}: no content-length"))?;
        while self.buf.len() < head_end + len {
            self.fill(&mut chunk)?;
        }
        Ok(())
    }

    fn fill(&mut self, chunk: &mut [u8]) -> Result<(), String> {
        let n = self.s.read(chunk).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

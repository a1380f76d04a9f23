//! `typhon-rec live OUT|FILE`: follows a recording while it runs (or opens a finished one) and
//! serves a page that shows it (SPEC §17).
//!
//! One thread follows the recording ([`typhon_trace::follow::Follower`]) into a [`Model`]
//! kept behind a mutex; the HTTP server ([`http`]) answers the page, its scripts (served from
//! the binary), JSON snapshots and server-sent events from it. The viewer only reads the
//! recording's files, so a slow browser cannot make the recording lose a record: the follower
//! skips forward when it falls behind and the page says how much it skipped.

mod detail;
mod export;
mod file;
mod http;
pub mod model;

use clap::Args;
use model::{Model, Tick, WINDOW_S};
use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct LiveArgs {
    /// The recording's output path (followed through OUT.parts/ while it runs), or a finished
    /// or recovered trace.dat.
    path: PathBuf,
    /// TCP port (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on. Anything but loopback lets other machines in (the URL's token
    /// still guards it).
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// A tick longer than this is over budget (with its unit: ns, us, ms or s).
    #[arg(long, default_value = "16.6ms", value_parser = crate::durations::parse_duration)]
    tick_budget: u64,
}

/// Records taken from the follower per poll, at most: what it holds at once. More new records
/// than this (a viewer that fell behind, or attached late to a heavy recording) and it skips
/// the oldest pages, counted. A full batch is followed by the next poll at once.
const BATCH: usize = 32_768;
/// How often the follower looks for new pages when it has caught up.
const POLL: Duration = Duration::from_millis(100);
/// How often an event stream looks for a change.
const PUSH: Duration = Duration::from_millis(250);
/// Values per counter an update carries at most (the page draws a few hundred pixels).
const COUNTER_POINTS_SENT: usize = 600;
/// Tick summaries an event carries at most (the page asks `/api/ticks` for more).
const TICKS_PER_EVENT: usize = 2048;

static INDEX: &str = include_str!("../../assets/live/index.html");
static LIVE_JS: &str = include_str!("../../assets/live/live.js");
static LIVE_CSS: &str = include_str!("../../assets/live/live.css");
static UPLOT_JS: &str = include_str!("../../assets/live/vendor/uPlot.esm.js");
static UPLOT_CSS: &str = include_str!("../../assets/live/vendor/uPlot.min.css");

/// Shared between the follower, the server and the streams.
struct Shared {
    model: Mutex<Model>,
    stop: AtomicBool,
}

impl Shared {
    fn model(&self) -> MutexGuard<'_, Model> {
        // A panic while holding the lock leaves a model that is still consistent enough to
        // show: each change is one record's.
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub fn run(a: LiveArgs) -> Result<(), String> {
    let listener = std::net::TcpListener::bind((a.bind, a.port))
        .map_err(|e| format!("cannot listen on {}:{}: {e}", a.bind, a.port))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    if !a.bind.is_loopback() {
        eprintln!(
            "typhon-rec live: listening on {} lets other machines in; only the URL's token keeps them out (plain HTTP)",
            a.bind
        );
    }
    let token = token()?;
    let shared = Arc::new(Shared {
        model: Mutex::new(Model::new(a.tick_budget)),
        stop: AtomicBool::new(false),
    });
    {
        let shared = shared.clone();
        let path = a.path.clone();
        let parts = typhon_recorder::sink::parts_dir(&a.path);
        let finished = a.path.is_file() && !parts.exists();
        if finished {
            std::thread::Builder::new()
                .name("live-file".into())
                .spawn(move || file::read(&path, &shared))
        } else {
            let follower = follow::open(&a.path)?;
            std::thread::Builder::new()
                .name("live-follow".into())
                .spawn(move || follow_loop(follower, &path, &shared))
        }
        .map_err(|e| e.to_string())?;
    }
    let host = match addr {
        std::net::SocketAddr::V6(v) => format!("[{}]", v.ip()),
        std::net::SocketAddr::V4(v) => v.ip().to_string(),
    };
    println!(
        "typhon-rec live: {} at http://{host}:{}/?t={token}",
        a.path.display(),
        addr.port()
    );
    let _ = std::io::stdout().flush();
    let handler = {
        let shared = shared.clone();
        let token = token.clone();
        Arc::new(move |r: &http::Request| route(r, &shared, &token))
    };
    http::serve(listener, token, handler, Arc::new(AtomicBool::new(false)));
    Ok(())
}

/// 128 bits from the kernel's random source, in hex.
fn token() -> Result<String, String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

mod follow {
    //! The reader behind the view.
    use std::path::Path;
    pub use typhon_trace::follow::Follower;

    pub fn open(path: &Path) -> Result<Follower, String> {
        Follower::open(path).map_err(|e| e.to_string())
    }
}

fn follow_loop(mut f: follow::Follower, path: &Path, shared: &Shared) {
    while !shared.stop.load(Ordering::Relaxed) {
        let batch = match f.poll(BATCH) {
            Ok(b) => b,
            Err(e) => {
                let mut m = shared.model();
                m.message = Some(format!("{}: {e}", path.display()));
                m.version += 1;
                drop(m);
                std::thread::sleep(POLL * 10);
                continue;
            }
        };
        let caught_up = batch.records.len() < BATCH;
        {
            let mut m = shared.model();
            let state = batch.state.as_str();
            if m.state != state || m.message != batch.message || m.losses != batch.losses {
                m.version += 1;
            }
            m.state = state.to_owned();
            m.message = batch.message;
            m.losses = batch.losses;
            for (slot, name) in batch.threads {
                m.threads.entry(slot).or_insert(name);
            }
            let skipped = (
                batch.skipped_pages,
                batch.skipped_records,
                batch.skipped_segments,
            );
            if skipped != (m.skipped_pages, m.skipped_records, m.skipped_segments) {
                m.version += 1;
            }
            m.skipped_pages = batch.skipped_pages;
            m.skipped_records = batch.skipped_records;
            m.skipped_segments = batch.skipped_segments;
            for r in batch.records {
                m.add(r);
            }
            if caught_up && matches!(m.state.as_str(), "finished" | "killed") {
                m.settle_worst_now();
            }
        }
        if caught_up {
            std::thread::sleep(POLL);
        }
    }
}

fn tick_json(t: &Tick) -> Value {
    json!([t.id, t.slot, t.start, t.dur])
}

/// `/api/state`: what the page's header, losses and span table show.
fn state_json(m: &Model) -> Value {
    let spans: Vec<Value> = m
        .spans()
        .into_iter()
        .map(|s| {
            json!({"name": s.name, "count": s.count, "p50_ns": s.p50_ns, "p99_ns": s.p99_ns,
                   "max_ns": s.max_ns})
        })
        .collect();
    let threads: serde_json::Map<String, Value> = m
        .threads
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(v.as_str())))
        .collect();
    json!({
        "state": m.state,
        "message": m.message,
        "records": m.records + m.skipped_records,
        "losses": m.losses,
        // What this viewer skipped (it fell behind, or a rotating recording's `keep` deleted
        // segments before it read them): not losses of the recording, which `losses` counts.
        "viewer": {"read": m.records, "skipped_pages": m.skipped_pages, "skipped_records": m.skipped_records,
                   "skipped_segments": m.skipped_segments,
                   "undecodable": m.undecodable, "held_bytes": m.held_bytes()},
        "ticks": m.ticks_total,
        "ticks_over": m.ticks_over,
        "ticks_kept_from": m.ticks.front().map(|t| t.id),
        "older": {"count": m.older.count, "over": m.older.over,
                  "worst": m.older.worst.as_ref().map(tick_json)},
        "worst": m.worst().as_ref().map(tick_json),
        "budget_ns": m.budget,
        "window_s": WINDOW_S,
        "spans": spans,
        "commands": m.commands(),
        "counters": counters_json(m),
        "threads": threads,
    })
}

/// The counters of the last seconds: per counter its name, values taken in all, min and max of
/// the window, and its recent values thinned to [`COUNTER_POINTS_SENT`] (`t`: seconds before
/// the newest record, `v`), and the names past those charted, counted.
fn counters_json(m: &Model) -> Value {
    let newest = m.newest();
    let series: Vec<Value> = m
        .counter_view(COUNTER_POINTS_SENT)
        .into_iter()
        .map(|c| {
            let t: Vec<f64> = c
                .points
                .iter()
                .map(|p| -((newest.saturating_sub(p.0) / 1_000_000) as f64) / 1e3)
                .collect();
            // NaN and infinities are no JSON numbers: null (a gap in the chart).
            let num = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
            let v: Vec<Value> = c.points.iter().map(|p| num(p.1)).collect();
            json!({"name": c.name, "count": c.count, "min": c.min.map(num), "max": c.max.map(num),
                   "t": t, "v": v})
        })
        .collect();
    json!({
        "window_s": model::COUNTER_NS / 1_000_000_000,
        "series": series,
        "other_names": m.other_counters.names(),
        "other_values": m.other_counters.values,
    })
}

/// The kept ticks after id `after` (all kept when `None`), the last [`TICKS_PER_EVENT`].
fn ticks_after(m: &Model, after: Option<u64>) -> Vec<Value> {
    let first = m.ticks.front().map_or(0, |t| t.id);
    let from = after.map_or(first, |a| (a + 1).max(first));
    let from = from.max(m.ticks_total.saturating_sub(TICKS_PER_EVENT as u64));
    let skip = from.saturating_sub(first) as usize;
    m.ticks.iter().skip(skip).map(tick_json).collect()
}

fn json_reply(v: &Value) -> http::Reply {
    http::Reply::ok("application/json", v.to_string())
}

fn route(r: &http::Request, shared: &Arc<Shared>, token: &str) -> http::Reply {
    use http::Reply;
    let num = |k: &str| r.param(k).and_then(|v| v.parse::<u64>().ok());
    match r.path.as_str() {
        "/" | "/index.html" => Reply::ok(
            "text/html; charset=utf-8",
            INDEX.replace("{{TOKEN}}", token),
        ),
        "/live.js" => Reply::ok("text/javascript; charset=utf-8", LIVE_JS),
        "/live.css" => Reply::ok("text/css; charset=utf-8", LIVE_CSS),
        "/vendor/uPlot.esm.js" => Reply::ok("text/javascript; charset=utf-8", UPLOT_JS),
        "/vendor/uPlot.min.css" => Reply::ok("text/css; charset=utf-8", UPLOT_CSS),
        "/api/state" => json_reply(&state_json(&shared.model())),
        "/api/ticks" => json_reply(&Value::from(ticks_after(&shared.model(), num("after")))),
        "/api/tick" => {
            let Some(id) = num("id") else {
                return Reply::status(400, "/api/tick needs id=N");
            };
            json_reply(&flame_json(&shared.model(), id))
        }
        "/api/export" => {
            let (Some(from), Some(to)) = (num("from"), num("to")) else {
                return Reply::status(400, "/api/export needs from=N&to=M (tick ids)");
            };
            export_reply(&shared.model(), from.min(to), from.max(to))
        }
        "/events" => {
            let shared = shared.clone();
            Reply::Stream(Box::new(move |s| events(s, &shared)))
        }
        _ => Reply::status(404, "not found"),
    }
}

/// `/api/tick?id=N`: the tick's spans, lane by lane, or why they are gone.
fn flame_json(m: &Model, id: u64) -> Value {
    let Some(t) = m.tick(id) else {
        return json!({"id": id, "error": "this tick's summary is no longer kept"});
    };
    let Some(spans) = m.tick_spans(&t) else {
        return json!({"id": id, "tick": tick_json(&t),
                      "error": "this tick is older than the detail kept (the last seconds): only its summary remains"});
    };
    let mut lanes: std::collections::BTreeMap<u32, Vec<Value>> = Default::default();
    for s in &spans {
        lanes.entry(s.slot).or_default().push(json!({
            "name": s.name, "start": s.start, "dur": s.dur, "depth": s.depth,
            "span_id": format!("{:x}", s.span_id),
            "trace": s.trace.map(|(h, l)| format!("{h:016x}{l:016x}")),
        }));
    }
    let lanes: Vec<Value> = lanes
        .into_iter()
        .map(|(slot, spans)| {
            let name = m
                .threads
                .get(&slot)
                .cloned()
                .unwrap_or_else(|| format!("slot {slot}"));
            json!({"slot": slot, "thread": name, "spans": spans})
        })
        .collect();
    json!({"id": id, "tick": tick_json(&t), "lanes": lanes})
}

fn export_reply(m: &Model, from: u64, to: u64) -> http::Reply {
    let (Some(a), Some(b)) = (m.tick(from), m.tick(to)) else {
        return http::Reply::status(404, "those ticks' summaries are no longer kept");
    };
    let (start, end) = (a.start.min(b.start), (a.start + a.dur).max(b.start + b.dur));
    if !m.has_detail(start) {
        return http::Reply::status(
            410,
            "those ticks are older than the detail kept (the last seconds)",
        );
    }
    let records = m.records_between(start, end);
    match export::pftrace(&records, &m.threads) {
        Ok((body, stats)) => http::Reply::Full {
            status: 200,
            ctype: "application/octet-stream",
            body,
            headers: vec![
                (
                    "Content-Disposition",
                    format!("attachment; filename=\"ticks-{from}-{to}.pftrace\""),
                ),
                // What went in, for scripts (and tests) that do not parse the trace.
                ("X-Typhon-Records", stats.records.to_string()),
                ("X-Typhon-Slices", stats.slices.to_string()),
            ],
        },
        Err(e) => http::Reply::status(500, &format!("export failed: {e}")),
    }
}

/// The event stream: an `update` (the state and the ticks since the last one) whenever the
/// model changed, checked every [`PUSH`]; a comment line every 5 s keeps proxies from closing.
fn events(s: &mut TcpStream, shared: &Shared) {
    let mut sent_version = u64::MAX;
    let mut last_tick: Option<u64> = None;
    let mut quiet = Instant::now();
    let mut id = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        let msg = {
            let m = shared.model();
            if m.version != sent_version {
                sent_version = m.version;
                let ticks = ticks_after(&m, last_tick);
                if let Some(t) = ticks.last().and_then(|t| t[0].as_u64()) {
                    last_tick = Some(t);
                }
                let mut v = state_json(&m);
                v["tick_list"] = Value::from(ticks);
                Some(v.to_string())
            } else {
                None
            }
        };
        let wrote = match msg {
            Some(data) => {
                id += 1;
                quiet = Instant::now();
                write!(s, "id: {id}\nevent: update\ndata: {data}\n\n").and_then(|_| s.flush())
            }
            None if quiet.elapsed() >= Duration::from_secs(5) => {
                quiet = Instant::now();
                s.write_all(b": heartbeat\n\n").and_then(|_| s.flush())
            }
            None => Ok(()),
        };
        if wrote.is_err() {
            return;
        }
        std::thread::sleep(PUSH);
    }
}

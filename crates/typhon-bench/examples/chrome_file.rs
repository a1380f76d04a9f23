//! tracing-chrome's enter + exit with its file writer (`ChromeLayerBuilder::file`, the
//! default way of using it: JSON through a `BufWriter` into a `File`) beside the counting
//! writer `typhon-rec bench` uses, and ours and the Registry's floor, in one process: rounds of
//! 20 000 enters of each body in turn, each starting at a different body; after each chrome run
//! its writer thread finishes writing untimed. Prints ns per enter+exit, median (min–max).
//! `cargo run --release -p typhon-bench --example chrome_file [ROUNDS]`
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Dispatch;
use tracing_subscriber::prelude::*;
use typhon_recorder::{sink::NullSink, RecorderBuilder};

struct Nothing;
impl<S: tracing_core::Subscriber> tracing_subscriber::Layer<S> for Nothing {}

/// Delegates to `inner` (a `File`, or nothing), counting flushes so a run can wait for its
/// writer thread to have written everything sent.
struct Flushes<W> {
    inner: W,
    flushes: Arc<AtomicU64>,
}

impl<W: Write> Write for Flushes<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        // Release: what was written before is done when the waiting thread sees the count.
        self.flushes.fetch_add(1, Ordering::Release);
        r
    }
}

const RUN: u32 = 20_000;

/// A chrome layer writing into `out`, built and timed on a thread of its own: tracing-chrome
/// sends each thread's messages to the channel of the layer last built on (or first used by)
/// that thread, so two chrome layers on one thread would both write into the second's output.
/// Each `()` received runs one timed round and answers its ns per enter+exit.
fn chrome_worker<W: Write + Send + 'static>(out: W) -> (Sender<()>, Receiver<f64>) {
    let (go, rounds) = channel::<()>();
    let (done, times) = channel::<f64>();
    std::thread::spawn(move || {
        let flushes = Arc::new(AtomicU64::new(0));
        let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
            .writer(Flushes {
                inner: out,
                flushes: flushes.clone(),
            })
            .build();
        let d = Dispatch::new(tracing_subscriber::registry().with(layer));
        let span = tracing::dispatcher::with_default(&d, system);
        for () in rounds {
            let ns = timed(&d, &span);
            // Acquire: pairs with the Release in `Flushes::flush`.
            let before = flushes.load(Ordering::Acquire);
            guard.flush();
            while flushes.load(Ordering::Acquire) == before {
                std::thread::sleep(Duration::from_micros(200));
            }
            if done.send(ns).is_err() {
                break;
            }
        }
        drop(span);
        drop(d);
        drop(guard);
    });
    (go, times)
}

fn system() -> tracing::Span {
    tracing::info_span!("system", name = "physics")
}

/// ns per enter+exit of `RUN` enters of `span` under `d`.
fn timed(d: &Dispatch, span: &tracing::Span) -> f64 {
    tracing::dispatcher::with_default(d, || {
        let t = Instant::now();
        for _ in 0..RUN {
            drop(black_box(span).enter());
        }
        t.elapsed().as_nanos() as f64 / f64::from(RUN)
    })
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(15);
    let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
    let dir = std::env::temp_dir().join(format!("chrome-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.json");
    let workers = [
        chrome_worker(std::io::sink()),
        chrome_worker(std::fs::File::create(&path).unwrap()),
    ];
    let d = [
        Dispatch::new(tracing_subscriber::registry().with(Nothing)),
        Dispatch::new(tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new())),
    ];
    let spans: Vec<_> = d
        .iter()
        .map(|d| tracing::dispatcher::with_default(d, system))
        .collect();
    let names = ["floor", "ours", "chrome_counting", "chrome_file"];
    let mut times = vec![Vec::new(); names.len()];
    for round in 0..=rounds {
        for k in 0..names.len() {
            let i = (round + k) % names.len();
            let ns = if i < 2 {
                let ns = timed(&d[i], &spans[i]);
                typhon_recorder::probe::drain_installed();
                ns
            } else {
                let (go, t) = &workers[i - 2];
                go.send(()).unwrap();
                t.recv().unwrap()
            };
            if round > 0 {
                times[i].push(ns);
            }
        }
    }
    drop(workers);
    // Let the workers' guards write their files out.
    std::thread::sleep(Duration::from_millis(500));
    drop(spans);
    drop(d);
    rec.finish().unwrap();
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&dir);
    for (n, mut t) in names.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        println!(
            "{n:16} {:8.1} ns ({:.1}–{:.1})",
            t[t.len() / 2],
            t[0],
            t[t.len() - 1]
        );
    }
    println!("chrome file: {size} bytes");
}

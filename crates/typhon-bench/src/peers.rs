//! The peers our figures are compared with: fastrace's and puffin's spans, each with a real
//! sink installed that proves it recorded, Tracy's zone (its client queuing, no viewer attached,
//! the queue's growth in this process's memory the proof), and the queues (crossbeam's `ArrayQueue`,
//! `std::sync::mpsc`) a 24-byte record could go through instead of our ring.
//!
//! The spans are timed side by side with ours (`writes::side_by_side`); the queue figures here
//! are the ones taken under other conditions, reported as context.

use crate::floors::{RUN, WORDS};
use crate::report::BenchReport;
use crate::timer::{figure, ticks, Timer};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A 24-byte record, the size of a fixed-size write's, for the queues to move.
#[derive(Clone, Copy, Default)]
#[allow(dead_code)] // the fields are the payload being moved, never read back
pub(crate) struct Rec24(pub(crate) [u64; 3]);

struct DiscardReporter(std::sync::Arc<AtomicU64>);

impl fastrace::collector::Reporter for DiscardReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        // Relaxed: a statistic.
        self.0.fetch_add(spans.len() as u64, Ordering::Relaxed);
    }
}

/// Installs fastrace's global collector with a reporter that counts and discards span records
/// (once per process; fastrace keeps its reporter for the process lifetime).
pub(crate) fn fastrace_reporter() -> std::sync::Arc<AtomicU64> {
    static COUNT: std::sync::OnceLock<std::sync::Arc<AtomicU64>> = std::sync::OnceLock::new();
    COUNT
        .get_or_init(|| {
            let c = std::sync::Arc::new(AtomicU64::new(0));
            fastrace::set_reporter(
                DiscardReporter(c.clone()),
                fastrace::collector::Config::default().report_interval(Duration::from_millis(10)),
            );
            c
        })
        .clone()
}

/// fastrace LocalSpan enter+exit: `n` spans, in traces of 1000 local spans under one root (the
/// shape of fastrace's own `compare` benchmark; the root's cost is amortised over its children).
pub(crate) fn fastrace_spans(n: u64) {
    use fastrace::prelude::*;
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let root = Span::root("root", SpanContext::random());
        {
            let _g = root.set_local_parent();
            for _ in 0..k {
                let _s = LocalSpan::enter_with_local_parent("update");
                black_box(&_s);
            }
        }
        drop(root);
        left -= k;
    }
}

/// Turns puffin's scopes on and installs a frame sink that counts the scopes of every frame it
/// receives and drops the frame (once per process; the count is shared by later calls).
pub(crate) fn puffin_sink() -> std::sync::Arc<AtomicU64> {
    static COUNT: std::sync::OnceLock<std::sync::Arc<AtomicU64>> = std::sync::OnceLock::new();
    let c = COUNT
        .get_or_init(|| {
            let c = std::sync::Arc::new(AtomicU64::new(0));
            let sink = c.clone();
            puffin::GlobalProfiler::lock().add_sink(Box::new(move |frame| {
                // Relaxed: a statistic.
                sink.fetch_add(frame.meta().num_scopes as u64, Ordering::Relaxed);
            }));
            c
        })
        .clone();
    puffin::set_scopes_on(true);
    c
}

/// puffin `profile_scope!` enter+exit: `n` scopes, in groups of 1000 under one outer scope (the
/// same shape as [`fastrace_spans`]: the inner scopes only append to the thread's stream; the
/// outer scope's end hands the stream to puffin's global profiler, amortised over its children).
pub(crate) fn puffin_scopes(n: u64) {
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        {
            puffin::profile_scope!("root");
            for _ in 0..k {
                puffin::profile_scope!("update");
                black_box(());
            }
        }
        left -= k;
    }
}

/// Starts Tracy's client (the C++ profiler, started here rather than at load: the
/// `manual-lifetime` feature). On-demand mode is off, so with no viewer connected the client
/// queues every zone in memory, as a game does before a viewer attaches; nothing leaves the
/// process (no broadcast; it listens on localhost only).
pub(crate) fn tracy_client() -> tracy_client::Client {
    tracy_client::Client::start()
}

/// Tracy `span!` enter + exit: `n` zones (two queue items each, begin and end, with a TSC read
/// each, exactly the C API's `___tracy_emit_zone_begin` / `_end`).
pub(crate) fn tracy_spans(n: u64) {
    for _ in 0..n {
        let z = tracy_client::span!("update");
        black_box(&z);
    }
}

/// This process's resident memory, bytes (`/proc/self/statm`), 0 where it cannot be read: how
/// far Tracy's queue grew over its runs.
pub(crate) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_bytes())
}

/// Minor page faults this thread has taken so far (`getrusage(RUSAGE_THREAD)`), 0 where it
/// cannot be read: Tracy's queue, never drained with no viewer, grows into fresh pages, and
/// the faults of its timed runs are part of its figure.
pub(crate) fn thread_minor_faults() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: all-zero bytes are a valid `rusage` (plain integers and timevals).
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `u` is a valid, writable `rusage` for getrusage to fill.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } == 0 {
            return u64::try_from(u.ru_minflt).unwrap_or(0);
        }
    }
    0
}

fn page_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).unwrap_or(4096)
}

/// The queues under conditions other than our ring's (context): `ArrayQueue::push` into a
/// 512-slot queue this thread pops after each batch, so it never leaves this core's L1, and
/// `mpsc::Sender::send`, received outside the timing.
pub(crate) fn local_queues(r: &mut BenchReport, t: &Timer) {
    const BATCH: u64 = 512;
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(BATCH as usize);
    r.arrayqueue_local = t.measure_self_timed(|n| {
        let mut spent = 0;
        let mut done = 0;
        while done < n {
            let t0 = ticks();
            for i in 0..BATCH {
                let _ = aq.push(Rec24([black_box(i), 7, 9]));
            }
            spent += ticks() - t0;
            while aq.pop().is_some() {}
            done += BATCH;
        }
        (spent, done)
    });
    let (tx, rx) = std::sync::mpsc::channel::<Rec24>();
    r.mpsc = t.measure_self_timed(|n| {
        let mut spent = 0;
        let mut done = 0;
        while done < n {
            let t0 = ticks();
            for i in 0..BATCH {
                let _ = tx.send(Rec24([black_box(i), 7, 9]));
            }
            spent += ticks() - t0;
            while rx.try_recv().is_ok() {}
            done += BATCH;
        }
        (spent, done)
    });
}

/// `ArrayQueue::push` under the same conditions as
/// [`store_floor_shared`](crate::floors::store_floor_shared): a queue of the
/// default ring's record capacity, popped concurrently by a consumer thread, runs of
/// [`RUN`] pushes from empty.
pub(crate) fn arrayqueue_shared(r: &mut BenchReport, t: &Timer) {
    let runs = t.runs * 3;
    let npt = t.ns_per_tick;
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(WORDS / 3);
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                while let Some(x) = aq.pop() {
                    black_box(x);
                }
                std::hint::spin_loop();
            }
        });
        let mut v = Vec::with_capacity(runs);
        for _ in 0..runs {
            while !aq.is_empty() {
                std::thread::yield_now();
            }
            let t0 = ticks();
            for i in 0..RUN {
                let _ = aq.push(Rec24([black_box(i), 7, 9]));
            }
            v.push((ticks() - t0) as f64 * npt / RUN as f64);
        }
        stop.store(true, Ordering::Relaxed);
        r.arrayqueue_shared = figure(v);
    });
}

//! The ns/op figures of the recorder's writes (every correlation kind, CeLog, spans), and the
//! figures the counted ratios compare, timed side by side with them.
//!
//! The recorder runs with a `NullSink` and the default ring; every timed run starts from a
//! drained ring, so no run measures the ring-full path.

use crate::floors::FloorRing;
use crate::peers::{
    fastrace_reporter, fastrace_spans, puffin_scopes, puffin_sink, rss_bytes, thread_minor_faults,
    tracy_client, tracy_spans, Rec24,
};
use crate::report::BenchReport;
use crate::timer::{figure, settle_recorder, ticks, Timer};
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Duration;
use typhon_recorder::sink::NullSink;
use typhon_recorder::RecorderBuilder;

/// What [`side_by_side`] times, one run of each per round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Clock,
    StoreFloor,
    WriteClock,
    WriteCallerTs,
    ArrayQueue,
    Span,
    SpanCallerTs,
    SpanStr,
    SpanStrCallerTs,
    PeerSpan,
    Puffin,
    Tracy,
}

const BODIES: [Body; 12] = [
    Body::Clock,
    Body::StoreFloor,
    Body::WriteClock,
    Body::WriteCallerTs,
    Body::ArrayQueue,
    Body::Span,
    Body::SpanCallerTs,
    Body::SpanStr,
    Body::SpanStrCallerTs,
    Body::PeerSpan,
    Body::Puffin,
    Body::Tracy,
];

/// The figures the counted ratios compare, measured side by side: every round times one run of
/// each body, starting at a different body each round, so the slow and fast stretches of a
/// shared machine fall on all of them alike rather than on whichever phase they coincide with.
/// Each figure is the median over the rounds. Runs of the recorder's writes start once the
/// flusher has drained the previous run (`Recorder::drain`); ArrayQueue's runs start once its consumer
/// thread has emptied the queue, the same conditions. Needs the recorder installed (with the
/// calling thread's slot claimed) and reads its raw clock through `now`.
fn side_by_side(r: &mut BenchReport, t: &Timer, now: u64) {
    const RUN: u64 = 20_000;
    let rounds = t.runs * 3;
    let npt = t.ns_per_tick;
    let q = quanta::Clock::new();
    let Some(mut floor) = FloorRing::new(1 << 14) else {
        return;
    };
    r.peer = "fastrace";
    let count = fastrace_reporter();
    let puffin_count = puffin_sink();
    let _tracy = tracy_client();
    // Tracy's queue never shrinks while no viewer is connected: the growth of resident memory
    // over its runs, per zone, shows that the client queued every zone.
    let mut tracy_growth = 0u64;
    // And the page faults its timed runs took in growing (inside the timing, as in a program).
    let mut tracy_faults = 0u64;
    // ArrayQueue timed like our write: runs of RUN pushes into an empty queue of the default
    // ring's record capacity, which another thread empties between runs (nobody pops during a
    // run), as the flusher drains our ring between runs.
    let aq = crossbeam_queue::ArrayQueue::<Rec24>::new(typhon_recorder::DEFAULT_RING_BYTES / 24);
    // The consumer sleeps in a channel receive between runs (a spinning or yielding one would
    // compete with the flusher and with the timed thread for the two cores of a small machine);
    // the channels also order its pops before the next run's pushes.
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); BODIES.len()];
    std::thread::scope(|sc| {
        let aq = &aq;
        sc.spawn(move || {
            for () in go_rx {
                while let Some(x) = aq.pop() {
                    black_box(x);
                }
                if done_tx.send(()).is_err() {
                    break;
                }
            }
        });
        let mut time_one = |b: Body| -> f64 {
            let (rss0, faults0) = if b == Body::Tracy {
                (rss_bytes(), thread_minor_faults())
            } else {
                (0, 0)
            };
            let t0 = ticks();
            match b {
                Body::Clock => {
                    for _ in 0..RUN {
                        black_box(q.raw());
                    }
                }
                Body::StoreFloor => {
                    for i in 0..RUN {
                        floor.write(black_box(i), black_box(7), black_box(9));
                    }
                }
                Body::WriteClock => {
                    for i in 0..RUN {
                        typhon_recorder::ingress_received(black_box(i as u32), 1, 2, 64);
                    }
                }
                Body::WriteCallerTs => {
                    for i in 0..RUN {
                        typhon_recorder::ingress_received_at(
                            Some(black_box(now + i)),
                            i as u32,
                            1,
                            2,
                            64,
                        );
                    }
                }
                Body::ArrayQueue => {
                    for i in 0..RUN {
                        let _ = aq.push(Rec24([black_box(i), 7, 9]));
                    }
                }
                // The form the docs give for a literal name (`span!("update")` is this call),
                // as the peers' spans below are each given a static name.
                Body::Span => {
                    for _ in 0..RUN {
                        let s = typhon_recorder::span_static(black_box("update"));
                        black_box(&s);
                    }
                }
                Body::SpanCallerTs => {
                    for i in 0..RUN {
                        let s = typhon_recorder::span_static_at(black_box("update"), now + 2 * i);
                        s.end_at(now + 2 * i + 1);
                    }
                }
                // The `&str` forms, for names made at run time: the name is copied at begin.
                Body::SpanStr => {
                    for _ in 0..RUN {
                        let s = typhon_recorder::span(black_box("update"));
                        black_box(&s);
                    }
                }
                Body::SpanStrCallerTs => {
                    for i in 0..RUN {
                        let s = typhon_recorder::span_at(black_box("update"), now + 2 * i);
                        s.end_at(now + 2 * i + 1);
                    }
                }
                Body::PeerSpan => fastrace_spans(RUN),
                Body::Puffin => puffin_scopes(RUN),
                Body::Tracy => tracy_spans(RUN),
            }
            let spent = ticks() - t0;
            // Untimed: the run's background work (the flusher draining our ring, fastrace's
            // collector taking the spans, puffin handing its frame to the sink, the consumer
            // emptying the queue) finishes before the next body's run starts, so no run pays
            // for another's, and each of ours and ArrayQueue's starts with an empty buffer.
            match b {
                Body::WriteClock
                | Body::WriteCallerTs
                | Body::Span
                | Body::SpanCallerTs
                | Body::SpanStr
                | Body::SpanStrCallerTs => settle_recorder(),
                Body::PeerSpan => fastrace::flush(),
                Body::Puffin => puffin::GlobalProfiler::lock().new_frame(),
                Body::ArrayQueue if go_tx.send(()).is_ok() => {
                    let _ = done_rx.recv();
                }
                Body::Tracy => {
                    tracy_faults += thread_minor_faults().saturating_sub(faults0);
                    tracy_growth += rss_bytes().saturating_sub(rss0);
                }
                _ => {}
            }
            spent as f64 * npt / RUN as f64
        };
        // One untimed round to warm everything up.
        for b in BODIES {
            time_one(b);
        }
        for round in 0..rounds {
            for k in 0..BODIES.len() {
                let i = (round + k) % BODIES.len();
                times[i].push(time_one(BODIES[i]));
            }
        }
        drop(go_tx); // ends the consumer's loop
    });
    black_box(floor.buf.as_ptr());
    fastrace::flush();
    // Relaxed: a statistic, read after `flush` returned.
    r.peer_reported = count.load(Ordering::Relaxed);
    // The last run's frame was handed to the sink by `new_frame` right after it, on this
    // thread; Relaxed: a statistic read on the thread that ran the sink.
    r.puffin_reported = puffin_count.load(Ordering::Relaxed);
    puffin::set_scopes_on(false);
    // The warm-up round's zones count too: its growth is in the sum.
    let zones = (rounds as u64 + 1) * RUN;
    r.tracy_bytes_per_zone = tracy_growth as f64 / zones as f64;
    r.tracy_faults_per_kzone = tracy_faults as f64 * 1000.0 / zones as f64;
    let mut figs = times.into_iter().map(figure);
    for slot in [
        &mut r.clock,
        &mut r.store_floor,
        &mut r.write_clock,
        &mut r.write_caller_ts,
        &mut r.arrayqueue,
        &mut r.span,
        &mut r.span_caller_ts,
        &mut r.span_str,
        &mut r.span_str_caller_ts,
        &mut r.peer_span,
        &mut r.puffin_span,
        &mut r.tracy_span,
    ] {
        *slot = figs.next().expect("one figure per body");
    }
}

/// Phase 1 with the recorder installed: the side-by-side figures, then each other kind and CeLog
/// with and without a timestamp, one after another.
pub(crate) fn recorder_ns(r: &mut BenchReport, t: &Timer) {
    // Default ring; each run (20 000 calls, < 1 MiB) starts from a drained ring, so no run
    // measures the ring-full path, and the ring stays cache-warm as it does in steady use.
    let Ok(rec) = RecorderBuilder::new()
        .sink(NullSink)
        .flush_interval(Duration::from_millis(1))
        .start()
    else {
        return;
    };
    let t = &Timer {
        settle: Some(settle_recorder),
        n: 20_000,
        runs: t.runs * 3,
        ..*t
    };
    use typhon_recorder::IngressDropReason;
    // Claim the slot before timing.
    typhon_recorder::tick_start();
    let now = rec.now();
    side_by_side(r, t, now);
    r.kinds = vec![
        ("ingress_received", r.write_clock),
        (
            "ingress_admitted",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::ingress_admitted(black_box(i as u32), 1, 2, 100);
                }
            }),
        ),
        (
            "ingress_dropped",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::ingress_dropped(
                        black_box(i as u32),
                        1,
                        IngressDropReason::QueueFull,
                    );
                }
            }),
        ),
        (
            "command_consumed",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::command_consumed(black_box(i as u32), 1, 5);
                }
            }),
        ),
        (
            "egress_sent",
            t.measure(|n| {
                for i in 0..n {
                    typhon_recorder::egress_sent(black_box(i as u32), 100, 512, 3);
                }
            }),
        ),
    ];
    use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
    r.celog_ts = t.measure(|n| {
        for i in 0..n {
            let _ = typhon_recorder::celog_data(
                true,
                CELID_USER,
                &i.to_le_bytes(),
                0,
                CELZONE_MISC,
                0,
                false,
            );
        }
    });
    r.celog_no_ts = t.measure(|n| {
        for i in 0..n {
            let _ = typhon_recorder::celog_data(
                false,
                CELID_USER,
                &i.to_le_bytes(),
                0,
                CELZONE_MISC,
                0,
                false,
            );
        }
    });
    if let Ok(s) = rec.finish() {
        r.ns_phase_drops = s.total_missed();
    }
}

//! Criterion benches of one write: every correlation kind, CeLog with and without timestamp, a
//! span pair — with the recorder's clock and with a caller-supplied timestamp — next to the
//! floors (a clock read alone, a bare 24-byte store + Release publish) and the peers (crossbeam
//! `ArrayQueue` push, `std::sync::mpsc` send, a fastrace LocalSpan with a real reporter, a
//! puffin scope with scopes on and a frame sink), and the cost with no recorder installed. The recorder runs with its default ring draining into a
//! `NullSink`; recorder writes are timed in chunks smaller than the default ring with
//! untimed drain waits between them, so no sample measures the ring-full path. `cargo bench --bench write`.
#![allow(clippy::unit_arg)] // black_box(unit write) keeps each call in the timed loop

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::sink::NullSink;
use typhon_recorder::{IngressDropReason, RecorderBuilder};

#[derive(Clone, Copy)]
#[allow(dead_code)]
struct Rec24([u64; 3]);

fn floors(c: &mut Criterion) {
    let mut g = c.benchmark_group("floor");
    let q = quanta::Clock::new();
    g.bench_function("clock_raw", |b| b.iter(|| black_box(q.raw())));
    let mut buf = vec![0u64; 1 << 14];
    let head = AtomicU64::new(0);
    let mut pos = 0usize;
    g.bench_function("store24_release", |b| {
        b.iter(|| {
            let m = buf.len() - 1;
            buf[pos & m] = black_box(1);
            buf[(pos + 1) & m] = 2;
            buf[(pos + 2) & m] = 3;
            pos += 3;
            // Release: what an SPSC ring does to publish the record.
            head.store(pos as u64, Ordering::Release);
        })
    });
    g.finish();
}

fn peers(c: &mut Criterion) {
    let mut g = c.benchmark_group("peer");
    let q = crossbeam_queue::ArrayQueue::<Rec24>::new(4096);
    g.bench_function("arrayqueue_push", |b| {
        b.iter_batched(
            || while q.pop().is_some() {},
            |_| {
                for i in 0..1024u64 {
                    let _ = q.push(Rec24([black_box(i), 2, 3]));
                }
            },
            BatchSize::SmallInput,
        )
    });
    let (tx, rx) = std::sync::mpsc::channel::<Rec24>();
    g.bench_function("mpsc_send", |b| {
        b.iter_batched(
            || while rx.try_recv().is_ok() {},
            |_| {
                for i in 0..1024u64 {
                    let _ = tx.send(Rec24([black_box(i), 2, 3]));
                }
            },
            BatchSize::SmallInput,
        )
    });
    struct Discard;
    impl fastrace::collector::Reporter for Discard {
        fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
            black_box(spans);
        }
    }
    fastrace::set_reporter(
        Discard,
        fastrace::collector::Config::default().report_interval(Duration::from_millis(10)),
    );
    // Like our writes (chunked, the flusher draining between chunks untimed): traces of 1000
    // spans timed in chunks of 16, fastrace's collector taking them between chunks, untimed.
    // Timed back to back instead, its collector falls behind and the figure measures the
    // allocator growing its heap.
    g.bench_function("fastrace_local_span_x1000", |b| {
        use fastrace::prelude::*;
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let k = (iters - done).min(16);
                fastrace::flush();
                let t0 = std::time::Instant::now();
                for _ in 0..k {
                    let root = Span::root("root", SpanContext::random());
                    let _g = root.set_local_parent();
                    for _ in 0..1000 {
                        let _s = LocalSpan::enter_with_local_parent("update");
                    }
                }
                total += t0.elapsed();
                done += k;
            }
            total
        })
    });
    // puffin, the same shape: frames of 1000 inner scopes under an outer one, timed in chunks of
    // 16, each chunk's frame handed to a sink (which drops it) between chunks, untimed.
    puffin::set_scopes_on(true);
    puffin::GlobalProfiler::lock().add_sink(Box::new(|frame| {
        black_box(frame);
    }));
    g.bench_function("puffin_scope_x1000", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut done = 0;
            while done < iters {
                let k = (iters - done).min(16);
                puffin::GlobalProfiler::lock().new_frame();
                let t0 = std::time::Instant::now();
                for _ in 0..k {
                    puffin::profile_scope!("root");
                    for _ in 0..1000 {
                        puffin::profile_scope!("update");
                    }
                }
                total += t0.elapsed();
                done += k;
            }
            total
        })
    });
    g.finish();
    fastrace::flush();
    puffin::GlobalProfiler::lock().new_frame();
    puffin::set_scopes_on(false);
}

fn disabled(c: &mut Criterion) {
    let mut g = c.benchmark_group("disabled");
    g.bench_function("ingress_received", |b| {
        b.iter(|| typhon_recorder::ingress_received(black_box(1), 1, 2, 64))
    });
    g.bench_function("span", |b| {
        b.iter(|| black_box(typhon_recorder::span(black_box("update"))))
    });
    g.finish();
}

/// Times `iters` calls of `f` in chunks of 16 384 (< the default ring), letting the flusher
/// drain between chunks (untimed), so criterion never measures the ring-full path.
fn chunked<R>(
    rec: &typhon_recorder::Recorder,
    iters: u64,
    mut f: impl FnMut(u64) -> R,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let k = (iters - done).min(16_384);
        rec.drain();
        let t = std::time::Instant::now();
        for i in 0..k {
            black_box(f(i));
        }
        total += t.elapsed();
        done += k;
    }
    total
}

fn recorder(c: &mut Criterion) {
    let rec = RecorderBuilder::new()
        .sink(NullSink)
        .flush_interval(Duration::from_millis(1))
        .start()
        .expect("no other recorder in this process");
    typhon_recorder::tick_start(); // claim the slot outside the timing
    let now = rec.now();
    let mut g = c.benchmark_group("write_clock");
    g.bench_function("ingress_received", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::ingress_received(black_box(1), 1, 2, 64))
            })
        })
    });
    g.bench_function("ingress_admitted", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::ingress_admitted(black_box(1), 1, 2, 100))
            })
        })
    });
    g.bench_function("ingress_dropped", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::ingress_dropped(
                    black_box(1),
                    1,
                    IngressDropReason::QueueFull,
                ))
            })
        })
    });
    g.bench_function("command_consumed", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::command_consumed(black_box(1), 1, 5))
            })
        })
    });
    g.bench_function("egress_sent", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::egress_sent(black_box(1), 100, 512, 3))
            })
        })
    });
    g.bench_function("celog_ts", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box({
                    typhon_recorder::celog_data(
                        true,
                        CELID_USER,
                        b"12345678",
                        0,
                        CELZONE_MISC,
                        0,
                        false,
                    )
                })
            })
        })
    });
    g.bench_function("celog_no_ts", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box({
                    typhon_recorder::celog_data(
                        false,
                        CELID_USER,
                        b"12345678",
                        0,
                        CELZONE_MISC,
                        0,
                        false,
                    )
                })
            })
        })
    });
    // A literal name, as `span!("update")` gives it (the form `typhon-rec bench` times as
    // `span_ns`), and a `&str` one, copied at begin (`span_str_ns`).
    g.bench_function("span_pair", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                drop(black_box(typhon_recorder::span_static(black_box("update"))))
            })
        })
    });
    g.bench_function("span_str_pair", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                drop(black_box(typhon_recorder::span(black_box("update"))))
            })
        })
    });
    g.finish();
    let mut g = c.benchmark_group("write_caller_ts");
    g.bench_function("ingress_received", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::ingress_received_at(
                    Some(black_box(now)),
                    1,
                    1,
                    2,
                    64,
                ))
            })
        })
    });
    g.bench_function("ingress_admitted", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::ingress_admitted_at(
                    Some(black_box(now)),
                    1,
                    1,
                    2,
                    100,
                ))
            })
        })
    });
    g.bench_function("ingress_dropped", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box({
                    typhon_recorder::ingress_dropped_at(
                        Some(black_box(now)),
                        1,
                        1,
                        IngressDropReason::QueueFull,
                    )
                })
            })
        })
    });
    g.bench_function("command_consumed", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::command_consumed_at(
                    Some(black_box(now)),
                    1,
                    1,
                    5,
                ))
            })
        })
    });
    g.bench_function("egress_sent", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(typhon_recorder::egress_sent_at(
                    Some(black_box(now)),
                    1,
                    100,
                    512,
                    3,
                ))
            })
        })
    });
    g.bench_function("celog_ts", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box({
                    typhon_recorder::celog_data_at(
                        Some(Some(black_box(now))),
                        CELID_USER,
                        b"12345678",
                        0,
                        CELZONE_MISC,
                        0,
                        false,
                    )
                })
            })
        })
    });
    g.bench_function("span_pair", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(
                    typhon_recorder::span_static_at(black_box("update"), black_box(now))
                        .end_at(now + 10),
                )
            })
        })
    });
    g.bench_function("span_str_pair", |b| {
        b.iter_custom(|n| {
            chunked(&rec, n, |_| {
                black_box(
                    typhon_recorder::span_at(black_box("update"), black_box(now)).end_at(now + 10),
                )
            })
        })
    });
    g.finish();
    let stats = rec.finish().expect("finish");
    eprintln!(
        "recorder drops during the benches: {}",
        stats.total_missed()
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    targets = floors, peers, disabled, recorder
}
criterion_main!(benches);

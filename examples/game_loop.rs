//! A game server's tick loop instrumented with typhon-recorder, recording to a trace.dat.
//!
//! ```sh
//! cargo run --release --example game_loop -- /tmp/game.dat
//! trace-cmd report /tmp/game.dat | head
//! ```
//!
//! The main thread runs ticks (TickStart, phases with spans, TickEnd) and hands network commands
//! to worker threads through a channel; each command goes IngressReceived → IngressAdmitted (or
//! IngressDropped) → CommandConsumed inside a TracedSpan carrying the command's causal id →
//! EgressSent, so a viewer can follow one command across threads.

use std::sync::mpsc;
use std::time::Duration;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::{IngressDropReason, RecorderBuilder, ThreadKind, TraceContext};

struct Command {
    session: u32,
    seq: u16,
    drain_tick: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "game_loop.dat".into());
    let rec = RecorderBuilder::new().output(&out).start()?;
    typhon_recorder::set_thread_info("main-loop", ThreadKind::Main);

    let (tx, rx) = mpsc::channel::<Command>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("sim-worker-{i}"))
                .spawn(move || loop {
                    let Ok(cmd) = rx.lock().unwrap().recv() else {
                        break;
                    };
                    let (hi, lo) =
                        typhon_recorder::command_causal_id(cmd.session, cmd.drain_tick, cmd.seq);
                    let _span =
                        typhon_recorder::traced_span("apply-command", TraceContext { hi, lo });
                    typhon_recorder::command_consumed(cmd.session, cmd.seq, i);
                    std::thread::sleep(Duration::from_micros(50));
                    typhon_recorder::egress_sent(cmd.session, cmd.drain_tick, 256, 1);
                })
        })
        .collect::<Result<_, _>>()?;

    let mut seq: u16 = 0;
    for tick in 0..120u32 {
        typhon_recorder::tick_start();
        typhon_recorder::phase_start(0);
        {
            let _input = typhon_recorder::span("input");
            for session in 1..=8u32 {
                seq = seq.wrapping_add(1);
                typhon_recorder::ingress_received(session, seq, 0, 48);
                if seq % 17 == 0 {
                    typhon_recorder::ingress_dropped(session, seq, IngressDropReason::RateLimited);
                    continue;
                }
                typhon_recorder::ingress_admitted(session, seq, 0, tick + 1);
                tx.send(Command {
                    session,
                    seq,
                    drain_tick: tick + 1,
                })?;
            }
        }
        typhon_recorder::phase_end(0);
        typhon_recorder::phase_start(1);
        {
            let _sim = typhon_recorder::span("simulate");
            std::thread::sleep(Duration::from_millis(2));
        }
        typhon_recorder::phase_end(1);
        typhon_recorder::celog_data(
            true,
            CELID_USER,
            &tick.to_le_bytes(),
            0,
            CELZONE_MISC,
            0,
            false,
        )?;
        typhon_recorder::tick_end(0, 1);
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(tx);
    for w in workers {
        w.join().map_err(|_| "worker panicked")?;
    }
    let stats = rec.finish()?;
    println!(
        "{out}: {} records written, {} missed, {} pages",
        stats.total_written(),
        stats.total_missed(),
        stats.pages
    );
    Ok(())
}

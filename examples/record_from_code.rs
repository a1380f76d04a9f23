// The README's "Recording from your code" program, as it stands there: `tests/readme.rs` checks
// that the README shows this file's code, and `cargo test` builds it, so the snippet compiles.
// cargo run --release --example record_from_code -- /tmp/run.dat
use typhon_recorder::codec::celog::CELID_USER;
use typhon_recorder::{instant, span, CeLog, RecorderBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "run.dat".into());
    let rec = RecorderBuilder::new().output(&out).start()?; // installs it process-wide
    let (session, seq, wire_idx, bytes, drain_tick, sys_idx) = (7, 1, 0, 64, 100, 3);
    for tick in 0..3u32 {
        typhon_recorder::tick_start();
        typhon_recorder::ingress_received(session, seq, wire_idx, bytes);
        {
            let _physics = typhon_recorder::phase(1, "physics"); // a named phase, ended by the guard
            let _step = span!("step {tick}"); // formatted only while recording
            instant!("collision", 12); // a named instant with a payload
        }
        {
            let cmd = typhon_recorder::command_causal_id(session, drain_tick, seq);
            let _span = typhon_recorder::traced_span("apply-command", cmd);
            typhon_recorder::command_consumed(session, seq, sys_idx);
        }
        CeLog::new(CELID_USER, b"frame done").flag(3).write()?; // CE's CeLogData, field by field
        typhon_recorder::tick_end(0, 1); // overload level, tick multiplier
    }
    let stats = rec.finish()?; // everything written before this call is in the file
    println!("{} records in {out}", stats.user_written());
    Ok(())
}

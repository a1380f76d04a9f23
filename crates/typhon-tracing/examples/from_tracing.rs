// The README's "From `tracing`" program, as it stands there (`tests/readme.rs` at the workspace
// root checks it; `cargo test` builds it). cargo run --example from_tracing -p typhon-tracing
use tracing_subscriber::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rec = typhon_recorder::RecorderBuilder::new()
        .output("run.dat")
        .start()?;
    tracing_subscriber::registry()
        .with(typhon_tracing::TyphonLayer::new())
        .init();
    // … tracing::info_span!, tracing::info!, as the program already does:
    for frame in 0..3 {
        let _frame = tracing::info_span!("frame", frame).entered();
        tracing::info!(entities = 1000, "simulated");
    }
    rec.finish()?;
    Ok(())
}

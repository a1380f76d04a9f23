//! Always on (SPEC §16): the last 30 s kept in memory, written when a tick runs long or when
//! `typhon-rec snapshot .` asks.
//!
//! ```sh
//! cargo run --example always_on &
//! typhon-rec snapshot .    # prints the new file's path
//! ```
use std::time::Duration;
use typhon_recorder::{RecorderBuilder, RecorderError, Trigger};

fn main() -> Result<(), RecorderError> {
    let rec = RecorderBuilder::new()
        .window(Duration::from_secs(30))
        .window_bytes(64 << 20) // the budget wins over the duration
        .snapshot_dir(".")
        .snapshot_when(
            Trigger::tick_over(Duration::from_millis(20))
                .keep_after(Duration::from_secs(1))
                .at_most_every(Duration::from_secs(60)),
        )
        .start()?;
    for tick in 0..600u32 {
        typhon_recorder::tick_start();
        std::thread::sleep(Duration::from_millis(if tick == 300 { 25 } else { 5 }));
        typhon_recorder::tick_end(0, 1);
    }
    let snap = rec.snapshot()?; // blocks until the file is complete
    println!("{}: {} records", snap.path.display(), snap.records);
    let stats = rec.finish()?;
    println!("{} records aged out of the window", stats.evicted_records);
    Ok(())
}

//! `TrackingAllocator` as the program's global allocator: each thread's allocation and free
//! counts and bytes become counters (`alloc.count`, `alloc.bytes`, `free.count`,
//! `free.bytes`), and each allocation over 1 MiB an `alloc.large` sample of its size.
//! `cargo run --release --example tracking_allocator -- /tmp/alloc.dat`, then
//! `typhon-rec stats /tmp/alloc.dat`.

use std::alloc::System;
use typhon_recorder::{RecorderBuilder, TrackingAllocator};

#[global_allocator]
static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System).track_sizes_over(1 << 20);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "alloc.dat".into());
    let rec = RecorderBuilder::new().output(&out).start()?;
    let mut kept = Vec::new();
    for frame in 0..100u32 {
        let _f = typhon_recorder::span!("frame");
        kept.push(vec![frame as u8; 4096]); // counted on this thread
        typhon_recorder::counter!("buffers kept", kept.len());
    }
    drop(vec![0u8; 8 << 20]); // over 1 MiB: alloc.large = 8388608
    rec.finish()?; // this thread's last totals are written here
    println!("typhon-rec stats {out}: alloc.count, alloc.bytes, free.count, free.bytes");
    Ok(())
}

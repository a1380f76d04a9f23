//! A program with `TrackingAllocator` as its `#[global_allocator]` (this test binary): its
//! allocation counters show in `stats --json` (count, min, max, mean, last per name), the
//! large allocation with its exact size, and the totals at least what the thread had counted.

mod common;

use common::rec;
use serde_json::Value;
use std::alloc::System;
use typhon_recorder::alloc::{self as talloc, AllocTotals};
use typhon_recorder::{RecorderBuilder, TrackingAllocator};

const LARGE: usize = 4 << 20;

#[global_allocator]
static A: TrackingAllocator<System> = TrackingAllocator::new(System).track_sizes_over(1 << 20);

#[test]
fn allocation_counters_show_in_stats_json() {
    let dir = common::tmp("alloc-counters");
    let file = dir.join("alloc.dat");
    let r = RecorderBuilder::new().output(&file).start().unwrap();
    let end: AllocTotals = std::thread::Builder::new()
        .name("allocating".into())
        .spawn(|| {
            typhon_recorder::register_thread();
            let mut keep = Vec::new();
            for i in 0..20_000usize {
                keep.push(vec![i as u8; 16 + i % 200]);
                if keep.len() > 100 {
                    keep.swap_remove(i % 100);
                }
            }
            drop(vec![7u8; LARGE]);
            drop(keep);
            talloc::thread_totals()
        })
        .unwrap()
        .join()
        .unwrap();
    let stats = r.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    let (ok, out, err) = rec(&["stats", file.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let c = &v["counters"];
    let last = |n: &str| {
        c[n]["last"]
            .as_u64()
            .unwrap_or_else(|| panic!("no {n} in {c}"))
    };
    assert!(last(talloc::ALLOC_COUNT) >= end.allocs, "{c}");
    assert!(last(talloc::ALLOC_BYTES) >= end.alloc_bytes, "{c}");
    assert!(last(talloc::FREE_COUNT) >= end.frees, "{c}");
    assert!(last(talloc::FREE_BYTES) >= end.free_bytes, "{c}");
    // At least 40 000 allocations and frees, about 2.2 MB each way, in 100 µs samples or more.
    assert!(
        end.allocs > 20_000 && end.alloc_bytes > 2_000_000,
        "{end:?}"
    );
    for n in [talloc::ALLOC_COUNT, talloc::FREE_BYTES] {
        let s = &c[n];
        assert!(s["count"].as_u64().unwrap() >= 1, "{s}");
        assert!(
            s["min"].as_u64().unwrap() <= s["max"].as_u64().unwrap(),
            "{s}"
        );
        assert_eq!(s["max"], s["last"], "{n} is cumulative: {s}");
    }
    let large = &c[talloc::ALLOC_LARGE];
    assert_eq!(large["count"], 1, "{c}");
    assert_eq!(large["last"], LARGE as u64, "{c}");
    std::fs::remove_dir_all(&dir).unwrap();
}

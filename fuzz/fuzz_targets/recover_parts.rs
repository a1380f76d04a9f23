//! `recover` of a compressed recording's parts directory (issue 32): the input is slot 1's
//! part file and one pending file, `[u8 chunk index][u32 LE part file length][part file]
//! [pending file]`, beside a fixed `session.json` (zstd, 4096-byte pages, 4 pages to a chunk).
//! Seeds (`fuzz/corpus/recover_parts/`): whole chunks and a pending chunk, a bad middle chunk, a
//! repeated chunk, a pending file whose header index is not its name's, a pending file past a
//! gap. `recover` must return (an error or a result), never panic or hang.
#![no_main]
use std::sync::atomic::{AtomicU64, Ordering};

static RUN: AtomicU64 = AtomicU64::new(0);

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let index = data[0];
    let n = u32::from_le_bytes(data[1..5].try_into().unwrap()) as usize;
    let rest = &data[5..];
    let (part, pending) = rest.split_at(n.min(rest.len()));
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("recover-fuzz-{}-{run}", std::process::id()));
    let out = dir.join("f.dat");
    let parts = typhon_recorder::sink::parts_dir(&out);
    std::fs::create_dir_all(&parts).unwrap();
    std::fs::write(
        parts.join("session.json"),
        r#"{"page_size":4096,"compression":"zstd:1","chunk_pages":4}"#,
    )
    .unwrap();
    if !part.is_empty() {
        std::fs::write(parts.join("slot-001.pages"), part).unwrap();
    }
    std::fs::write(parts.join(format!("slot-001.chunk-{index}.pending")), pending).unwrap();
    let _ = typhon_recorder::sink::recover(&out);
    let _ = std::fs::remove_dir_all(&dir);
});

//! The compressor's speed and ratio at each zstd level on a real recording's pages: each slot's
//! pages cut into chunks of the sink's size ([`DEFAULT_CHUNK_PAGES`]) and compressed as the
//! compressing file sink does ([`ChunkCompressor`]), on this thread alone, timed by its own CPU
//! clock. Levels below 1 (zstd's fast levels) are included: the recorder's `--compress`
//! accepts 1..=19, so these say what a faster default would give, measured on the same pages.
//!
//! ```text
//! typhon-rec demo --out /tmp/demo.dat            # uncompressed (version 6)
//! cargo run --release -p typhon-bench --example zstd_levels -- /tmp/demo.dat [LEVEL ...]
//! ```
//! Prints, per level, the chunk bytes (headers included) per record and the compressor's CPU
//! ns per record and records a second on one core, then the same as JSON.

use std::time::Duration;
use typhon_recorder::tracedat::{ChunkCompressor, DEFAULT_CHUNK_PAGES};
use typhon_trace::tracedat::TraceFile;

fn thread_cpu_ns() -> u64 {
    // SAFETY: all-zero bytes are a valid `timespec`.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a valid, writable `timespec` for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: zstd_levels FILE.dat [LEVEL ...] (an uncompressed recording)");
        std::process::exit(2);
    };
    let f = match TraceFile::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("zstd_levels: {path}: {e}");
            std::process::exit(1);
        }
    };
    if f.compression().is_some() {
        eprintln!("zstd_levels: {path}: compressed; record it with --compress none");
        std::process::exit(1);
    }
    let levels: Vec<i32> = if args.len() > 1 {
        match args[1..].iter().map(|l| l.parse()).collect() {
            Ok(v) => v,
            Err(_) => {
                eprintln!("zstd_levels: a level is not a number: {:?}", &args[1..]);
                std::process::exit(2);
            }
        }
    } else {
        vec![-7, -5, -3, -2, -1, 1, 2, 3]
    };
    // Each slot's pages, in chunks of the sink's size.
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut records = 0u64;
    let mut raw = 0usize;
    for cpu in 0..f.cpus() {
        records += f.cpu_records(cpu).count() as u64;
        let pages: Vec<&[u8]> = f.pages(cpu).collect();
        for c in pages.chunks(DEFAULT_CHUNK_PAGES) {
            let data = c.concat();
            raw += data.len();
            chunks.push(data);
        }
    }
    println!(
        "{path}: {records} records, {} chunks of up to {DEFAULT_CHUNK_PAGES} pages, {:.2} B of pages a record",
        chunks.len(),
        raw as f64 / records.max(1) as f64
    );
    println!(
        "| zstd level | B a record (chunks) | compressor CPU a record | records/s on one core |"
    );
    println!("|---|---|---|---|");
    let mut out = Vec::new();
    let mut json = Vec::new();
    for level in levels {
        let mut z = match ChunkCompressor::new(level) {
            Ok(z) => z,
            Err(e) => {
                eprintln!("zstd_levels: level {level}: {e}");
                continue;
            }
        };
        // Whole passes over the pages until 0.3 s of this thread's CPU time is spent.
        let (mut passes, mut spent, mut bytes) = (0u64, 0u64, 0usize);
        while spent < Duration::from_millis(300).as_nanos() as u64 || passes == 0 {
            let t0 = thread_cpu_ns();
            for c in &chunks {
                out.clear();
                if let Err(e) = z.chunk(c, &mut out) {
                    eprintln!("zstd_levels: level {level}: {e}");
                    std::process::exit(1);
                }
                bytes += out.len();
            }
            spent += thread_cpu_ns() - t0;
            passes += 1;
        }
        let n = (records * passes).max(1) as f64;
        let b = bytes as f64 / n;
        let ns = spent as f64 / n;
        println!("| {level} | {b:.2} | {ns:.1} ns | {:.1} M |", 1e3 / ns);
        json.push(
            serde_json::json!({"level": level, "bytes_per_record": b, "cpu_ns_per_record": ns}),
        );
    }
    println!(
        "{}",
        serde_json::json!({ "file": path, "records": records, "levels": json })
    );
}

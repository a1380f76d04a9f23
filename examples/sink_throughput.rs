//! The file sink's throughput with and without compression, on one core: every page of a
//! recording (the first argument, a trace.dat) is handed to a `FileSink` the way the flusher
//! hands them (write_page per page, flush every 64 pages), then finished. Prints records/s per
//! mode as the median of 5 runs with min–max (`TYPHON_COMPRESS_INLINE=1`: compression on the
//! caller's thread instead of the compressor thread) (BENCHMARKS.md, "Compressed recordings").
//!
//! `cargo run --release --example sink_throughput -- FILE.dat [OUTDIR]`

use std::time::Instant;
use typhon_recorder::sink::{FileSink, SessionSummary, Sink};
use typhon_recorder::tracedat::Compression;
use typhon_trace::tracedat::TraceFile;

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .expect("usage: sink_throughput FILE.dat [OUTDIR]");
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp".into()));
    let f = TraceFile::open_streaming(&file).unwrap();
    let mut pages: Vec<(u8, Vec<u8>)> = Vec::new();
    for cpu in 0..f.cpus() {
        let mut s = f.stream_cpu(cpu);
        while let Some(p) = s.next_page() {
            pages.push((cpu as u8, p.unwrap().1.to_vec()));
        }
    }
    let records = f.stream_records().count() as f64;
    let bytes: usize = pages.iter().map(|p| p.1.len()).sum();
    println!("{} pages, {records} records, {bytes} bytes", pages.len());
    for c in ["none", "zstd:1", "zstd:3"] {
        let comp = Compression::parse(c).unwrap();
        let mut rates = Vec::new();
        let mut hands = Vec::new();
        let mut size = 0;
        for run in 0..5 {
            let out = dir.join(format!("sink-throughput-{}-{run}.dat", std::process::id()));
            let t = Instant::now();
            let mut s = FileSink::create_with(&out, f.page_size() as usize, comp, 0).unwrap();
            for (i, (slot, p)) in pages.iter().enumerate() {
                s.write_page(*slot, p).unwrap();
                if i % 64 == 63 {
                    s.flush().unwrap();
                }
            }
            s.flush().unwrap();
            let hand_s = t.elapsed().as_secs_f64();
            // Finishing waits for the compressor and assembles the file: included, so the rate
            // is that of the pages reaching the disk compressed.
            s.finish(&SessionSummary {
                page_size: f.page_size() as usize,
                ..Default::default()
            })
            .unwrap();
            let rec_s = t.elapsed().as_secs_f64();
            hands.push(records / hand_s);
            size = std::fs::metadata(&out).unwrap().len();
            std::fs::remove_file(&out).unwrap();
            rates.push(records / rec_s);
        }
        rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
        hands.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{c:7} {:6.1} M records/s to the finished file (min {:.1}, max {:.1}), {:.1} MB/s of pages; \
             the caller (flusher) handed them over at {:.1} M/s (min {:.1}, max {:.1}); file {size} bytes",
            rates[2] / 1e6,
            rates[0] / 1e6,
            rates[4] / 1e6,
            rates[2] / records * bytes as f64 / 1e6,
            hands[2] / 1e6,
            hands[0] / 1e6,
            hands[4] / 1e6,
        );
    }
}

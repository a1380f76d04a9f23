//! Stable-Rust bounded fuzzing, part of the normal test suite (the `cargo fuzz` targets in
//! `fuzz/` need nightly and run unbounded). Both call the same entry points,
//! `typhon_trace::fuzzing::{page, tracedat, record}`, which walk everything a reader returns
//! and assert it stays in bounds and terminates.
//!
//! - mutation loop with a fixed seed over a valid recording made by the recorder (the file, its
//!   pages and its records): bit flips, interesting values, truncation, splices, duplication;
//! - the same on version 7 copies of it (`fuzzing::v6_to_v7`, and `trace-cmd convert`'s when
//!   trace-cmd is installed), so the sectioned reader is mutated too;
//! - truncations of the valid file at every header boundary region: errors, never a panic, and
//!   never more records than the intact file;
//! - the exporter on mutants of the valid file;
//! - proptest: arbitrary bytes into every reader.
//!
//! `TYPHON_FUZZ_ITERS` raises the mutation count (default 3000 per target: a few seconds).

use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Duration;
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::fuzzing;
use typhon_trace::tracedat::TraceFile;

/// A small deterministic PRNG (xorshift64*), so failures reproduce from the printed iteration.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, 0x1d, 0x1e, 0x1f];
                let i = rng.below(len);
                v[i] = INTERESTING[rng.below(8)];
            }
            2 if len >= 4 => {
                // An interesting 32-bit word (lengths, offsets, counts).
                const WORDS: [u32; 6] = [0, 1, 0x7fff_ffff, 0xffff_ffff, 0x1000, 0x8000_0000];
                let i = rng.below(len - 3);
                v[i..i + 4].copy_from_slice(&WORDS[rng.below(6)].to_le_bytes());
            }
            3 => v.truncate(rng.below(len + 1)),
            4 if len > 8 => {
                // Copy a chunk over another place.
                let a = rng.below(len);
                let b = rng.below(len);
                let n = rng.below(64).min(len - a).min(len - b);
                let chunk = v[a..a + n].to_vec();
                v[b..b + n].copy_from_slice(&chunk);
            }
            5 if len > 8 => {
                let i = rng.below(len);
                let n = rng.below(32).min(len - i);
                let chunk = v[i..i + n].to_vec();
                v.splice(i..i, chunk);
            }
            _ if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            _ => v.push(rng.next() as u8),
        }
    }
    v
}

fn iters() -> usize {
    std::env::var("TYPHON_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

/// (the trace.dat bytes, its pages, its records)
type Corpus = (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Version 7 copies of the corpus file: ours (uncompressed and zstd), and trace-cmd's own when
/// it is installed.
fn v7_corpus() -> &'static Vec<Vec<u8>> {
    static C: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    C.get_or_init(|| {
        let (file, _, _) = corpus();
        let mut v = vec![
            fuzzing::v6_to_v7(file).expect("a v7 copy"),
            fuzzing::v6_to_zstd(file).expect("a zstd v7 copy"),
        ];
        let dir = std::env::temp_dir().join(format!("typhon-fuzz-v7-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let (i, o) = (dir.join("v6.dat"), dir.join("v7.dat"));
        std::fs::write(&i, file).unwrap();
        let converted = std::process::Command::new("trace-cmd")
            .args([
                "convert",
                "--file-version",
                "7",
                "--compression",
                "none",
                "-i",
            ])
            .arg(&i)
            .arg("-o")
            .arg(&o)
            .output()
            .is_ok_and(|r| r.status.success());
        match std::fs::read(&o) {
            Ok(b) if converted => v.push(b),
            _ => eprintln!("note: no trace-cmd convert; the v7 corpus is our own copy only"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        for f in &v {
            assert_eq!(TraceFile::parse(f.clone()).unwrap().version(), 7);
        }
        v
    })
}

/// A valid recording of every record family, made once by the recorder itself.
fn corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("typhon-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("seed.dat");
        {
            let _g = doc_lock();
            let rec = RecorderBuilder::new()
                .output(&out)
                // Big enough that nothing is dropped however slow the flusher is scheduled.
                .ring_bytes(1 << 20)
                .flush_interval(Duration::from_millis(1))
                .start()
                .unwrap();
            demo_records(300);
            rec.finish().unwrap();
        }
        let file = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let tf = TraceFile::parse(file.clone()).unwrap();
        let mut pages = Vec::new();
        for cpu in 0..tf.cpus() {
            pages.extend(tf.pages(cpu).map(<[u8]>::to_vec));
        }
        let recs: Vec<Vec<u8>> = tf
            .records()
            .map(|r| {
                let d = r.unwrap().data;
                let size = u16::from_le_bytes([d[0], d[1]]) as usize;
                d[..size.min(d.len())].to_vec()
            })
            .collect();
        assert!(
            pages.len() > 2 && recs.len() > 300,
            "{} pages, {} records",
            pages.len(),
            recs.len()
        );
        (file, pages, recs)
    })
}

/// Every public write of the producer API.
fn demo_records(n: i32) {
    use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
    use typhon_recorder::TraceContext;
    for i in 0..n {
        typhon_recorder::tick_start();
        typhon_recorder::phase_start(1);
        typhon_recorder::ingress_received(7, i as u16, 0, 64);
        typhon_recorder::ingress_admitted(7, i as u16, 0, 1);
        typhon_recorder::ingress_dropped(
            7,
            i as u16,
            typhon_recorder::IngressDropReason::QueueFull,
        );
        typhon_recorder::command_consumed(7, i as u16, 3);
        typhon_recorder::egress_sent(7, i as u32, 100, 2);
        {
            let _s = typhon_recorder::span("fuzz-span");
            let _t = typhon_recorder::traced_span("traced", TraceContext { hi: 1, lo: 2 });
        }
        typhon_recorder::celog_data(true, CELID_USER, b"celog!", 0, CELZONE_MISC, 5, i % 2 == 0)
            .unwrap();
        typhon_recorder::instant(i, -i);
        typhon_recorder::phase_end(1);
        typhon_recorder::tick_end(i as u8, 3);
    }
}

#[test]
fn mutated_trace_files_never_panic() {
    let (file, _, _) = corpus();
    assert!(fuzzing::tracedat(file.clone()).unwrap() > 300);
    let mut rng = Rng(0x7970_686f_6e01);
    for i in 0..iters() / 3 {
        let m = mutate(&mut rng, file);
        let r = std::panic::catch_unwind(|| fuzzing::tracedat(m.clone()));
        if r.is_err() {
            let p = std::env::temp_dir().join(format!("typhon-fuzz-crash-{i}.dat"));
            std::fs::write(&p, &m).unwrap();
            panic!(
                "iteration {i}: the reader panicked; input saved to {}",
                p.display()
            );
        }
    }
}

/// The exporter on mutated files: whatever parses exports with nesting slices and valid JSON.
#[test]
fn mutated_trace_files_export_cleanly() {
    let (file, _, _) = corpus();
    assert!(fuzzing::export(file.clone()).unwrap() > 300);
    let mut rng = Rng(0x6578_706f_7274);
    let mut exported = 0;
    for i in 0..iters() / 30 {
        let m = mutate(&mut rng, file);
        match std::panic::catch_unwind(|| fuzzing::export(m.clone())) {
            Ok(r) => exported += usize::from(r.is_some()),
            Err(_) => {
                let p = std::env::temp_dir().join(format!("typhon-fuzz-export-{i}.dat"));
                std::fs::write(&p, &m).unwrap();
                panic!(
                    "iteration {i}: the exporter panicked; input saved to {}",
                    p.display()
                );
            }
        }
    }
    assert!(exported > 0, "some mutants still parse and export");
}

#[test]
fn mutated_v7_trace_files_never_panic() {
    let (file, _, _) = corpus();
    let full = fuzzing::tracedat(file.clone()).unwrap();
    let mut rng = Rng(0x7637_7637_0001);
    for (k, seed) in v7_corpus().iter().enumerate() {
        // The v7 copy holds the same records.
        assert_eq!(fuzzing::tracedat(seed.clone()), Some(full), "v7 seed {k}");
        for i in 0..iters() / 3 {
            let m = mutate(&mut rng, seed);
            let r = std::panic::catch_unwind(|| fuzzing::tracedat(m.clone()));
            if r.is_err() {
                let p = std::env::temp_dir().join(format!("typhon-fuzz-v7-crash-{k}-{i}.dat"));
                std::fs::write(&p, &m).unwrap();
                panic!(
                    "v7 seed {k}, iteration {i}: the reader panicked; input saved to {}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn mutated_v7_trace_files_export_cleanly() {
    let mut rng = Rng(0x7637_6578_7001);
    for (k, seed) in v7_corpus().iter().enumerate() {
        assert!(fuzzing::export(seed.clone()).unwrap() > 300);
        let mut exported = 0;
        for i in 0..iters() / 30 {
            let m = mutate(&mut rng, seed);
            match std::panic::catch_unwind(|| fuzzing::export(m.clone())) {
                Ok(r) => exported += usize::from(r.is_some()),
                Err(_) => {
                    let p = std::env::temp_dir().join(format!("typhon-fuzz-v7-export-{k}-{i}.dat"));
                    std::fs::write(&p, &m).unwrap();
                    panic!(
                        "v7 seed {k}, iteration {i}: the exporter panicked; input saved to {}",
                        p.display()
                    );
                }
            }
        }
        assert!(exported > 0, "some v7 mutants still parse and export");
    }
}

#[test]
fn truncated_v7_trace_files_yield_errors_not_panics() {
    for seed in v7_corpus() {
        let full = fuzzing::tracedat(seed.clone()).unwrap();
        let mut cut = 0;
        while cut < seed.len() {
            let r = fuzzing::tracedat(seed[..cut].to_vec());
            assert!(r.is_none_or(|n| n <= full), "cut at {cut}");
            cut += if cut < 64 * 1024 { 7 } else { 4093 };
        }
    }
}

#[test]
fn truncated_trace_files_yield_errors_not_panics() {
    let (file, _, _) = corpus();
    let full = fuzzing::tracedat(file.clone()).unwrap();
    let mut cut = 0;
    while cut < file.len() {
        let r = fuzzing::tracedat(file[..cut].to_vec());
        assert!(r.is_none_or(|n| n <= full), "cut at {cut}");
        // Dense in the headers, sparse in the page data.
        cut += if cut < 64 * 1024 { 7 } else { 4093 };
    }
    assert!(TraceFile::parse(file[..100].to_vec()).is_err());
    assert!(TraceFile::parse(Vec::new()).is_err());
}

#[test]
fn mutated_pages_never_panic() {
    let (_, pages, _) = corpus();
    let mut rng = Rng(0x0070_6167_6573);
    for (i, p) in pages.iter().enumerate() {
        assert!(fuzzing::page(p) > 0, "page {i} of the valid file");
    }
    for i in 0..iters() {
        let p = &pages[rng.below(pages.len())];
        let m = mutate(&mut rng, p);
        if std::panic::catch_unwind(|| fuzzing::page(&m)).is_err() {
            panic!("iteration {i}: page reader panicked on {m:02x?}");
        }
    }
}

#[test]
fn mutated_records_never_panic() {
    let (_, _, recs) = corpus();
    let mut rng = Rng(0x7265_636f_7264);
    for r in recs {
        typhon_recorder::codec::records::decode(r).expect("valid record");
        fuzzing::record(r);
    }
    for i in 0..iters() * 3 {
        let r = &recs[rng.below(recs.len())];
        let m = mutate(&mut rng, r);
        if std::panic::catch_unwind(|| fuzzing::record(&m)).is_err() {
            panic!("iteration {i}: a record decoder panicked on {m:02x?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_pages(data in proptest::collection::vec(any::<u8>(), 0..4200)) {
        fuzzing::page(&data);
    }

    #[test]
    fn arbitrary_records(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        fuzzing::record(&data);
    }

    #[test]
    fn arbitrary_trace_files(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        // Mostly rejected at the magic; prefix the magic to get further in.
        fuzzing::tracedat(data.clone());
        for version in [&b"6\0"[..], b"7\0"] {
            let mut v = b"\x17\x08\x44tracing".to_vec();
            v.extend_from_slice(version);
            v.extend_from_slice(&data);
            fuzzing::tracedat(v);
        }
    }
}

/// The hostile shapes of `fuzz/corpus/tracedat_parse` (written by `examples/hostile_shapes
/// seeds`: options sections that inflate 1024 times, 64-byte pages in 9-byte chunks, many
/// CPUs of one chunk), as they are and mutated: read in bounds, what is kept within the file's
/// size. The same shapes made afresh too, so the seeds cannot drift from the code.
#[test]
fn hostile_shapes_and_their_mutants_never_panic() {
    use typhon_trace::fuzzing::shapes::{many_cpu_chunks, options_bomb, small_zstd, tiny_pages};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/tracedat_parse");
    let mut seeds: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            (p.display().to_string(), std::fs::read(&p).unwrap())
        })
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 3, "{seeds:?}");
    let base = small_zstd(2);
    seeds.push((
        "options_bomb".into(),
        options_bomb(&base, 3, 1 << 20).unwrap(),
    ));
    seeds.push(("tiny_pages".into(), tiny_pages(&base, 12).unwrap()));
    seeds.push(("many_cpu_chunks".into(), many_cpu_chunks(3, 2, 1)));
    let mut rng = Rng(0x5eed_0032);
    for (name, seed) in &seeds {
        assert!(seed.len() <= 16 << 10, "{name}: {} bytes", seed.len());
        assert!(fuzzing::tracedat(seed.clone()).is_some(), "{name} parses");
        for i in 0..iters() / 20 {
            let m = mutate(&mut rng, seed);
            if std::panic::catch_unwind(|| fuzzing::tracedat(m.clone())).is_err() {
                let p = std::env::temp_dir().join(format!("typhon-fuzz-shape-crash-{i}.dat"));
                std::fs::write(&p, &m).unwrap();
                panic!(
                    "{name}, iteration {i}: the reader panicked; input saved to {}",
                    p.display()
                );
            }
        }
    }
}

//! `typhon_start_ex`'s rotation and tick-trigger fields reach the recorder: a rotating run
//! leaves complete segments, the newest holding the last record; a windowed run with a tick
//! trigger and `trigger_keep_after_ns` writes a snapshot that holds what was recorded just
//! after the slow tick; a compressed window's snapshot is a v7 file of its newest records.
//! One test: one recorder per process, the runs one after the other.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use typhon_ffi::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_trace::tracedat::TraceFile;

fn config() -> TyphonConfigEx {
    // SAFETY: all-zero is a valid TyphonConfigEx (integers and raw pointers), every default.
    let mut c: TyphonConfigEx = unsafe { std::mem::zeroed() };
    c.size = std::mem::size_of::<TyphonConfigEx>();
    c.flush_interval_us = 1000;
    c
}

/// The Instants `(name_id, payload)` in a file (v6, or v7: the streaming reader decompresses
/// its chunks).
fn instants(path: &Path) -> Vec<(i32, i32)> {
    let f = TraceFile::open_streaming(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for cpu in f.data_cpus().collect::<Vec<_>>() {
        for r in f.stream_cpu(cpu) {
            let r = r.expect("record");
            if let Ok((_, Record::Instant { name_id, payload })) = records::decode(&r.data) {
                out.push((name_id, payload));
            }
        }
    }
    out
}

fn files(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && keep(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn rotation_and_tick_triggers_reach_the_recorder() {
    let _g = typhon_recorder::doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-start-ex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // Rotation: 16 KiB segments (4 pages), the newest 2 kept.
    let out = dir.join("run.dat");
    let path = CString::new(out.to_str().unwrap()).unwrap();
    let mut c = config();
    c.output_path = path.as_ptr();
    c.rotate_segment_bytes = 16 << 10;
    c.rotate_keep = 2;
    // SAFETY: `c` and the string it points to live through the call.
    assert_eq!(unsafe { typhon_start_ex(&c) }, TYPHON_OK);
    const N: i32 = 20_000;
    for i in 0..N {
        assert_eq!(typhon_instant(3, i), TYPHON_OK);
        if i % 1000 == 0 {
            // Lets the flusher cut segments as it goes.
            assert_eq!(typhon_drain(), TYPHON_OK);
        }
    }
    // SAFETY: NULL is allowed.
    assert_eq!(unsafe { typhon_finish(std::ptr::null_mut()) }, TYPHON_OK);
    let segments = files(&dir, |n| {
        n.strip_prefix("run.dat.")
            .is_some_and(|s| s.len() == 6 && s.bytes().all(|b| b.is_ascii_digit()))
    });
    assert!(
        (2..=3).contains(&segments.len()),
        "the newest 2 segments kept: {segments:?}"
    );
    assert!(
        segments[0].to_str().unwrap() > out.with_extension("dat.000002").to_str().unwrap(),
        "older segments were rotated out: {segments:?}"
    );
    let newest = instants(segments.last().unwrap());
    assert_eq!(
        newest.last(),
        Some(&(3, N - 1)),
        "the last record is in the newest segment"
    );
    for s in &segments {
        let got = instants(s);
        assert!(!got.is_empty() && got.windows(2).all(|w| w[0].1 + 1 == w[1].1));
    }

    // Window mode with a tick trigger kept open 200 ms after the slow tick.
    let snaps = dir.join("snaps");
    std::fs::create_dir_all(&snaps).unwrap();
    let sd = CString::new(snaps.to_str().unwrap()).unwrap();
    let mut c = config();
    c.window_ns = 60_000_000_000;
    c.snapshot_dir = sd.as_ptr();
    c.tick_over_ns = 1_000_000;
    c.trigger_keep_after_ns = 200_000_000;
    c.trigger_at_most_every_ns = 3_600_000_000_000;
    // SAFETY: as above.
    assert_eq!(unsafe { typhon_start_ex(&c) }, TYPHON_OK);
    assert_eq!(typhon_tick_start(), TYPHON_OK);
    std::thread::sleep(Duration::from_millis(3));
    assert_eq!(typhon_tick_end(0, 1), TYPHON_OK);
    // Recorded after the trigger, inside its keep_after: in the snapshot.
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(typhon_instant(9, 1), TYPHON_OK);
    let t0 = Instant::now();
    let dat = |n: &str| n.ends_with(".dat") && !n.starts_with('.');
    while files(&snaps, dat).is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: NULL is allowed.
    assert_eq!(unsafe { typhon_finish(std::ptr::null_mut()) }, TYPHON_OK);
    let snap = files(&snaps, dat);
    assert_eq!(snap.len(), 1, "one snapshot from the slow tick: {snap:?}");
    assert_eq!(instants(&snap[0]), [(9, 1)]);

    // A compressed window (zstd level 1) of 256 KiB: chunks are made and evicted while
    // 40 000 instants go in, and the snapshot is a v7 file holding the newest of them, none
    // missing, up to the last.
    let zsnaps = dir.join("zsnaps");
    std::fs::create_dir_all(&zsnaps).unwrap();
    let zd = CString::new(zsnaps.to_str().unwrap()).unwrap();
    let mut c = config();
    c.window_ns = 60_000_000_000;
    c.window_bytes = 256 << 10;
    c.snapshot_dir = zd.as_ptr();
    c.zstd_level = 1;
    // SAFETY: as above.
    assert_eq!(unsafe { typhon_start_ex(&c) }, TYPHON_OK);
    const M: i32 = 40_000;
    for i in 0..M {
        assert_eq!(typhon_instant(5, i), TYPHON_OK);
        if i % 2000 == 1999 {
            assert_eq!(typhon_drain(), TYPHON_OK);
        }
    }
    let mut path = vec![0u8; 4096];
    // SAFETY: all-zero is a valid TyphonSnapshot (integers).
    let mut info: TyphonSnapshot = unsafe { std::mem::zeroed() };
    info.size = std::mem::size_of::<TyphonSnapshot>();
    // SAFETY: `path` has `path.len()` writable bytes; `info` is a TyphonSnapshot of its size.
    let rc = unsafe { typhon_snapshot(path.as_mut_ptr().cast(), path.len(), &mut info) };
    assert_eq!(rc, TYPHON_OK);
    // SAFETY: NULL is allowed.
    assert_eq!(unsafe { typhon_finish(std::ptr::null_mut()) }, TYPHON_OK);
    let path = std::ffi::CStr::from_bytes_until_nul(&path).unwrap();
    let path = PathBuf::from(path.to_str().unwrap());
    let f = TraceFile::open(&path).unwrap();
    assert_eq!((f.version(), f.compression()), (7, Some("zstd")));
    let got: Vec<i32> = instants(&path)
        .into_iter()
        .filter(|&(id, _)| id == 5)
        .map(|(_, p)| p)
        .collect();
    assert!(info.evicted_records > 0 && info.missed == 0, "{info:?}");
    assert!(!got.is_empty() && got.len() < M as usize, "{}", got.len());
    assert!(got.windows(2).all(|w| w[0] + 1 == w[1]), "no gap");
    assert_eq!(got.last(), Some(&(M - 1)));
    std::fs::remove_dir_all(&dir).unwrap();
}

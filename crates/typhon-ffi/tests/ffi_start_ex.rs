//! `typhon_start_ex`'s rotation and tick-trigger fields reach the recorder: a rotating run
//! leaves complete segments, the newest holding the last record; a windowed run with a tick
//! trigger and `trigger_keep_after_ns` writes a snapshot that holds what was recorded just
//! after the slow tick. One test: one recorder per process, the runs one after the other.

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

/// The Instants `(name_id, payload)` in a file.
fn instants(path: &Path) -> Vec<(i32, i32)> {
    let f = TraceFile::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for cpu in 0..f.cpus() {
        for r in f.cpu_records(cpu) {
            let r = r.expect("record");
            if let Ok((_, Record::Instant { name_id, payload })) = records::decode(r.data) {
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
    std::fs::remove_dir_all(&dir).unwrap();
}

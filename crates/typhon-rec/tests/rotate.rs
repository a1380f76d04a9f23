//! Issue 34 item 6: a run written as rotating segments (SPEC §16). Each segment is a complete
//! trace.dat read alone (by trace-cmd and by our readers, with its threads' names and its
//! definitions resolved), the newest `keep` are kept, what the deleted ones held is counted
//! (`Stats::rotated_out_*`), and a kill leaves nothing `recover` cannot rebuild.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use typhon_recorder::codec::records::{self, Callsite, Record};
use typhon_recorder::sink::{parts_dir, segment_files, segment_path};
use typhon_recorder::tracedat::Compression;
use typhon_recorder::{doc_lock, RecorderBuilder, Stats};
use typhon_trace::tracedat::TraceFile;

const CALLSITE: u32 = 7;

/// What one segment holds, read by our reader alone.
#[derive(Debug, Default)]
struct Segment {
    records: u64,
    missed: u64,
    /// Per slot: the first record's thread name (a ThreadInfo), and the instants' payloads.
    first_thread: BTreeMap<u32, String>,
    seqs: BTreeMap<u32, Vec<i32>>,
    /// TracingSpanValues read back as the TracingSpanInfo of callsite `CALLSITE`.
    resolved: u64,
    unresolved: u64,
    clock_syncs: u64,
    /// The names the file's metadata gives its slots.
    meta_names: BTreeMap<u32, String>,
}

fn read_segment(path: &Path) -> Segment {
    let f = TraceFile::open_streaming(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = Segment::default();
    for m in f.typhon_meta().expect("Typhon metadata").unwrap().slots {
        s.meta_names.insert(u32::from(m.slot), m.name);
    }
    let mut stream = f.stream_records();
    let mut seen = std::collections::BTreeSet::new();
    for r in stream.by_ref() {
        let r = r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        s.records += 1;
        s.missed += r.missed_before.unwrap_or(0).max(0) as u64;
        let (_, rec) = records::decode(&r.data).unwrap();
        if seen.insert(r.cpu) {
            if let Record::ThreadInfo { name, .. } = rec {
                s.first_thread.insert(r.cpu, name.to_owned());
            }
        }
        match rec {
            Record::Instant { payload, .. } => s.seqs.entry(r.cpu).or_default().push(payload),
            Record::TracingSpanInfo {
                name: "rotating", ..
            } => s.resolved += 1,
            Record::ClockSync { .. } => s.clock_syncs += 1,
            _ => {}
        }
    }
    s.unresolved = stream.definitions().unresolved;
    s
}

/// `trace-cmd report` reads `path` alone: its record lines, or None without trace-cmd.
fn trace_cmd_lines(path: &Path) -> Option<Vec<String>> {
    let o = Command::new("trace-cmd")
        .arg("report")
        .arg(path)
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "trace-cmd report {}: {err}",
        path.display()
    );
    assert!(
        !err.contains("failed") && !err.contains("bad"),
        "{}: {err}",
        path.display()
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    Some(out.lines().skip(1).map(str::to_owned).collect())
}

/// Two named writers, each writing `n` instants numbered 0.. and, every 50th, a span value of
/// a `tracing` callsite defined once (at the start: only the first segment has it unless the
/// segments restate it). Every 250 instants each waits for a drain of the rings: nothing is
/// missed, so the counts are exact, and segments are cut at the same points whatever the
/// machine's load (a rotation comes after a flush cycle).
fn write_load(rec: &typhon_recorder::Recorder, n: i32) {
    let c = Callsite {
        id: CALLSITE,
        level: 3,
        line: 1,
        name: "rotating",
        target: "test",
        file: "",
        field_names: "",
    };
    std::thread::scope(|sc| {
        for name in ["writer-a", "writer-b"] {
            std::thread::Builder::new()
                .name(name.into())
                .spawn_scoped(sc, move || {
                    assert!(typhon_recorder::bridge::callsite(&c));
                    for i in 0..n {
                        typhon_recorder::instant(1, i);
                        if i % 50 == 0 {
                            typhon_recorder::bridge::span_values(i as u64 + 1, 1, CALLSITE, &[])
                                .unwrap();
                        }
                        if i % 250 == 249 {
                            rec.drain();
                        }
                    }
                })
                .unwrap();
        }
    });
}

/// Every kept segment read alone; the instants' sequence numbers follow on across them per
/// thread with no gap and none twice, from where the deleted segments stopped.
fn check_segments(out: &Path, files: &[PathBuf], stats: &Stats, keep: usize) {
    assert!(
        !out.exists() && !parts_dir(out).exists(),
        "no OUT and no OUT.parts"
    );
    let n = stats.rotated_out_segments as usize + files.len();
    assert!(
        n >= keep + 2,
        "{n} segments: the test wants some deleted; {stats:?}"
    );
    assert_eq!(files.len(), keep, "the newest keep are kept");
    let want: Vec<PathBuf> = (n - keep + 1..=n)
        .map(|i| segment_path(out, i as u64))
        .collect();
    assert_eq!(files, want, "named OUT.NNNNNN, the newest kept");
    assert!(!segment_path(out, (n - keep) as u64).exists());
    let mut records = stats.rotated_out_records;
    let mut missed = stats.rotated_out_missed;
    let mut next: BTreeMap<String, i32> = BTreeMap::new();
    for (k, f) in files.iter().enumerate() {
        let s = read_segment(f);
        records += s.records;
        missed += s.missed;
        // Each slot's stream opens with its thread, named as the metadata names it.
        for (slot, name) in &s.meta_names {
            assert_eq!(
                s.first_thread.get(slot),
                Some(name),
                "{}: slot {slot}",
                f.display()
            );
        }
        assert_eq!(
            s.first_thread.get(&0).map(String::as_str),
            Some("typhon-recorder")
        );
        assert!(
            s.clock_syncs >= 1,
            "{}: opens with a ClockSync",
            f.display()
        );
        assert_eq!(
            s.unresolved,
            0,
            "{}: the definitions are restated",
            f.display()
        );
        // A span value follows every 50th instant (one may fall on either side of a cut).
        let due: u64 = s.seqs.values().flatten().filter(|p| *p % 50 == 0).count() as u64;
        assert!(
            s.resolved + 2 >= due && s.resolved <= due + 2,
            "{}: {} span values resolved by name, {due} due",
            f.display(),
            s.resolved
        );
        for (slot, seqs) in &s.seqs {
            let name = &s.first_thread[slot];
            let first = *next.entry(name.clone()).or_insert(seqs[0]);
            let want: Vec<i32> = (first..first + seqs.len() as i32).collect();
            assert_eq!(seqs, &want, "{}: {name}'s instants", f.display());
            next.insert(name.clone(), first + seqs.len() as i32);
            if k == 0 && stats.rotated_out_segments == 0 {
                assert_eq!(first, 0);
            }
        }
        if let Some(lines) = trace_cmd_lines(f) {
            assert_eq!(
                lines.len() as u64,
                s.records,
                "{}: trace-cmd reads every record",
                f.display()
            );
            assert!(lines
                .iter()
                .any(|l| l.contains("ClockSync:") && l.contains("wall_ns=")));
            for name in s.meta_names.values() {
                assert!(
                    lines.iter().any(|l| l.contains(&format!("name={name} "))),
                    "{name}"
                );
            }
        }
    }
    let written: u64 = stats.slots.iter().map(|s| s.written).sum();
    assert_eq!(
        records, written,
        "kept segments + rotated_out_records = written"
    );
    assert_eq!(missed, stats.total_missed());
}

fn rotating_run(name: &str, compression: Compression) {
    let _g = doc_lock();
    let dir = tmp(name);
    let out = dir.join("run.dat");
    let keep = 3;
    let rec = RecorderBuilder::new()
        .output(&out)
        .compression(compression)
        .rotate(64 << 10, keep)
        .start()
        .unwrap();
    write_load(&rec, 20_000);
    let stats = rec.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    let files = segment_files(&out).unwrap();
    check_segments(&out, &files, &stats, keep);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn segments_are_complete_files_and_the_newest_keep_stay() {
    rotating_run("rot-v6", Compression::None);
}

#[test]
fn compressed_segments_too() {
    rotating_run("rot-zstd", Compression::Zstd { level: 1 });
}

#[test]
fn a_second_run_does_not_mix_with_an_earlier_ones_segments() {
    let _g = doc_lock();
    let dir = tmp("rot-mix");
    let out = dir.join("run.dat");
    std::fs::write(segment_path(&out, 4), b"").unwrap();
    let e = RecorderBuilder::new()
        .output(&out)
        .rotate(64 << 10, 2)
        .start()
        .err()
        .unwrap();
    assert!(e.to_string().contains("run.dat.000004"), "{e}");
    assert!(!parts_dir(&segment_path(&out, 1)).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

const CHILD: &str = "TYPHON_ROTATE_CHILD";

/// The child: a rotating recording, everything written flushed to its segments' parts, its
/// counters printed, then killed (abort) with no finish. With `TYPHON_FAILPOINT_FINISH`, the
/// background finish of a segment is killed part-way instead.
#[test]
fn rotate_child() {
    use std::io::Write;
    let Some(out) = std::env::var_os(CHILD) else {
        return;
    };
    let rec = RecorderBuilder::new()
        .output(PathBuf::from(out))
        .rotate(64 << 10, 2)
        .max_page_age(Duration::from_millis(1))
        .start()
        .unwrap();
    write_load(&rec, 12_000);
    // Every record on a page, every page handed to the sink and flushed to its part file.
    rec.drain();
    std::thread::sleep(Duration::from_millis(100));
    rec.drain();
    // The background finish of the previous segment done (its parts directory gone, the
    // oldest segments deleted and counted): only the current segment's parts are left.
    let out = PathBuf::from(std::env::var_os(CHILD).unwrap());
    let dir = out.parent().unwrap().to_owned();
    let parts = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".parts")
            })
            .count()
    };
    while parts() > 1 {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    let s = rec.stats();
    let written: u64 = s.slots.iter().map(|s| s.written).sum();
    println!("CHILD-WRITTEN {written} {}", s.rotated_out_records);
    std::io::stdout().flush().unwrap();
    std::process::abort();
}

#[test]
fn a_killed_rotating_run_is_recovered_whole() {
    let dir = tmp("rot-kill");
    let out = dir.join("run.dat");
    let o = run_test_child("rotate_child", &[(CHILD, out.as_os_str())]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("CHILD-WRITTEN ").map(|p| p.1.trim()))
        .unwrap_or_else(|| panic!("{stdout}{}", String::from_utf8_lossy(&o.stderr)));
    let v: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    let (written, rotated_out) = (v[0], v[1]);
    assert!(!o.status.success());
    let current = segment_files(&out).unwrap().len() as u64 + 1;
    assert!(parts_dir(&segment_path(&out, current)).exists() || current > 0);
    let (ok, so, se) = cli_recover(&out);
    assert!(ok, "{so}{se}");
    assert!(so.contains("recovered"), "{so}");
    let files = segment_files(&out).unwrap();
    assert!(files.iter().all(|f| !parts_dir(f).exists()));
    // The recovered current segment reads alone, threads named, definitions resolved; with
    // the complete ones and the deleted ones' count it holds every record written.
    let mut records = rotated_out;
    for f in &files {
        let s = read_segment(f);
        assert_eq!(s.unresolved, 0, "{}", f.display());
        for (slot, name) in &s.meta_names {
            assert_eq!(
                s.first_thread.get(slot),
                Some(name),
                "{}: slot {slot}",
                f.display()
            );
        }
        records += s.records;
        trace_cmd_lines(f);
    }
    assert_eq!(records, written, "{so}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A kill in the middle of a segment's background finish: `recover OUT` rebuilds that segment
/// and the current one.
#[test]
fn a_kill_during_a_background_finish_is_recovered() {
    let dir = tmp("rot-kill-finish");
    let out = dir.join("run.dat");
    // Step 2 of the first assembly: a slot copied into the assembly, the journal written.
    let o = run_test_child(
        "rotate_child",
        &[
            (CHILD, out.as_os_str()),
            ("TYPHON_FAILPOINT_FINISH", "2".as_ref()),
        ],
    );
    assert!(!o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        !stdout.contains("CHILD-WRITTEN"),
        "killed in the first finish: {stdout}"
    );
    assert!(
        parts_dir(&segment_path(&out, 1)).exists(),
        "segment 1's finish was cut"
    );
    assert!(
        parts_dir(&segment_path(&out, 2)).exists(),
        "segment 2 was being written"
    );
    let (ok, so, se) = cli_recover(&out);
    assert!(ok, "{so}{se}");
    let files = segment_files(&out).unwrap();
    // Segment 2 is not written when none of its pages had reached the disk (its first ones
    // go there in the cycle of the cut, which the kill on the finishing thread may precede).
    let both = vec![segment_path(&out, 1), segment_path(&out, 2)];
    assert!(
        files == both || (files == both[..1] && so.contains("nothing to recover")),
        "{files:?}: {so}"
    );
    assert_eq!(
        files,
        vec![segment_path(&out, 1), segment_path(&out, 2)],
        "{so}"
    );
    for f in &files {
        assert!(!parts_dir(f).exists());
        let s = read_segment(f);
        // Segment 2 may hold nothing: its first pages reach the disk in the cycle of the cut,
        // which the kill in segment 1's finish (on its own thread) may come before.
        assert!(s.records > 0 || f == &files[1], "{}: {s:?}", f.display());
        assert_eq!(s.unresolved, 0, "{}: {s:?}", f.display());
        for (slot, name) in s.meta_names.iter().filter(|_| s.records > 0) {
            assert_eq!(
                s.first_thread.get(slot),
                Some(name),
                "{}: slot {slot}",
                f.display()
            );
        }
        trace_cmd_lines(f);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file whose tick clock ran 1 ppm slow, with ClockSync records a minute apart saying so:
/// `ClockMap`, `report --time wall` and `--from` map times through them (piecewise), and
/// trace-cmd prints the record.
#[test]
fn clock_syncs_map_wall_clock_times_piecewise() {
    use typhon_recorder::page::PageWriter;
    use typhon_recorder::tracedat::{write_tracedat, FileMeta, SlotPages};
    use typhon_trace::clocksync::ClockMap;
    const S: u64 = 1_000_000_000;
    const W: u64 = 1_700_000_000 * S; // 2023-11-14T22:13:20Z
    let dir = tmp("clock-sync");
    let path = dir.join("synced.dat");
    let page = |recs: &[(u64, Vec<u8>)]| {
        let mut w = PageWriter::new(4096).unwrap();
        for (ts, r) in recs {
            w.try_push(*ts, r).unwrap();
        }
        w.finish().to_vec()
    };
    let rec = |f: &dyn Fn(&mut [u8]) -> usize| {
        let mut b = vec![0u8; 128];
        let n = f(&mut b);
        b.truncate(n);
        b
    };
    let sync = |ts: u64, mono: u64, wall: u64| {
        (
            ts,
            rec(&|b| records::write_clock_sync(b, 0, ts as i64, mono, wall).unwrap()),
        )
    };
    let slot0 = page(&[
        (
            S,
            rec(&|b| {
                records::write_thread_info(
                    b,
                    0,
                    S as i64,
                    1,
                    "typhon-recorder",
                    records::ThreadKind::Other,
                )
                .unwrap()
            }),
        ),
        sync(S, S, W),
        sync(61 * S, 61 * S + 60_000, W + 60 * S + 60_000),
    ]);
    let slot1 = page(&[
        (
            S,
            rec(&|b| {
                records::write_thread_info(b, 1, S as i64, 2, "main", records::ThreadKind::Main)
                    .unwrap()
            }),
        ),
        (
            31 * S,
            rec(&|b| records::write_instant(b, 1, 31 * S as i64, 1, 1).unwrap()),
        ),
        (
            91 * S,
            rec(&|b| records::write_instant(b, 1, 91 * S as i64, 1, 2).unwrap()),
        ),
    ]);
    let mut meta = FileMeta::new(4096);
    meta.wall_anchor_ns = W as i64;
    meta.mono_anchor_ns = S as i64;
    let mut slots = vec![
        SlotPages::from_bytes(0, &slot0),
        SlotPages::from_bytes(1, &slot1),
    ];
    write_tracedat(std::fs::File::create(&path).unwrap(), &meta, &mut slots).unwrap();

    let f = TraceFile::open_streaming(&path).unwrap();
    let m = ClockMap::of(&f);
    assert_eq!(m.anchors().len(), 2);
    // Halfway through the minute, half the drift; after the last sync, its offset.
    assert_eq!(m.wall_ns(31 * S), Some(i128::from(W + 30 * S + 30_000)));
    assert_eq!(m.wall_ns(91 * S), Some(i128::from(W + 90 * S + 60_000)));

    let p = path.to_str().unwrap();
    let times = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["report", p, "--json", "--time", "wall", "--kind", "Instant"];
        args.extend_from_slice(extra);
        let (ok, out, err) = common::rec(&args);
        assert!(ok, "{err}");
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["kind"] == "Instant")
            .map(|v| v["time"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        times(&[]),
        [
            "2023-11-14T22:13:50.000030000Z",
            "2023-11-14T22:14:50.000060000Z"
        ]
    );
    // The inverse: a wall-clock window picks the record at its mapped time.
    assert_eq!(
        times(&["--from", "2023-11-14T22:14:50.000060000Z"]),
        ["2023-11-14T22:14:50.000060000Z"]
    );
    if let Some(lines) = trace_cmd_lines(&path) {
        assert!(
            lines
                .iter()
                .any(|l| l.contains("ClockSync:") && l.contains("monotonic_ns=61000060000")),
            "{lines:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

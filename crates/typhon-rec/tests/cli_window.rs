//! Always on from the command line (SPEC §16): `demo --window`, `snapshot DIR`, and the readers
//! on snapshots.

mod common;
use common::{rec, tmp, BIN};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use typhon_trace::tracedat::TraceFile;

fn snapshots(d: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".dat") && !n.starts_with('.')
        })
        .collect();
    v.sort();
    v
}

/// A windowed demo with a tick trigger leaves snapshots (the triggered ones and the last),
/// which `stats`, `report` and `export` read like any recording; nothing else is written.
#[test]
fn a_windowed_demo_writes_snapshots_the_readers_read() {
    let d = tmp("cli-window");
    let (ok, stdout, err) = rec(&[
        "demo",
        "--window",
        "1s",
        "--snapshot-dir",
        d.to_str().unwrap(),
        "--snapshot-on-tick-over",
        "100us",
        "--duration",
        "2.5",
    ]);
    assert!(ok, "{err}");
    assert!(stdout.contains("evicted from the window"), "{stdout}");
    let snaps = snapshots(&d);
    assert!(
        snaps.iter().all(|s| s
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("typhon-rec-")),
        "no file but snapshots: {snaps:?}"
    );
    // At most one trigger a second over 2.5 s, and the last one.
    assert!(snaps.len() >= 2 && snaps.len() <= 4, "{snaps:?}");
    for s in &snaps {
        let p = s.to_str().unwrap();
        let (ok, json, err) = rec(&["stats", "--json", p]);
        assert!(ok, "{err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(v["window"]["held_ns"].as_u64().unwrap() <= 1_000_000_000);
        assert!(v["evicted_records"].is_u64());
        assert_eq!(v["missed"], 0);
        let (ok, text, err) = rec(&["stats", p]);
        assert!(ok, "{err}");
        assert!(text.contains("window: 1.0 s requested"), "{text}");
        let (ok, _, err) = rec(&["report", p]);
        assert!(ok, "{err}");
        let pf = d.join("out.pftrace");
        let (ok, _, err) = rec(&["export", p, "-o", pf.to_str().unwrap()]);
        assert!(ok, "{err}");
        assert!(std::fs::metadata(&pf).unwrap().len() > 0);
        TraceFile::open(s).unwrap();
    }
    let triggered = snaps
        .iter()
        .filter(|s| {
            let f = TraceFile::open(s).unwrap();
            let m = f.typhon_meta().unwrap().unwrap();
            m.session["window"]["trigger"] == "tick over 100µs"
        })
        .count();
    assert!(triggered >= 1, "{snaps:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A window writes no file: an output path or rotation beside `--window` is refused with a
/// message naming both, not ignored, and nothing is written.
#[test]
fn a_windowed_demo_refuses_an_output_or_rotation() {
    let d = tmp("cli-window-refuses");
    let out = d.join("never.dat");
    for extra in [vec!["-o", out.to_str().unwrap()], vec!["--rotate", "1MiB"]] {
        let mut args = vec!["demo", "--window", "1s", "--duration", "0.2"];
        args.extend(&extra);
        let (ok, _, err) = rec(&args);
        assert!(!ok, "{extra:?} was taken");
        assert!(
            err.contains("--window") && err.contains(extra[0].trim_start_matches('-')),
            "{err}"
        );
    }
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// `typhon-rec snapshot DIR` asks a running windowed demo and prints the new file's path; with
/// no recording there, it names the socket it tried.
#[test]
fn snapshot_dir_asks_the_running_recording() {
    let d = tmp("cli-snapshot");
    let (ok, _, err) = rec(&["snapshot", d.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("typhon.sock"), "{err}");
    let mut demo = std::process::Command::new(BIN)
        .args([
            "demo",
            "--window",
            "5s",
            "--duration",
            "4",
            "--snapshot-dir",
        ])
        .arg(&d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sock = d.join("typhon.sock");
    let t = Instant::now();
    while !sock.exists() && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let (ok, stdout, err) = rec(&["snapshot", d.to_str().unwrap()]);
    assert!(ok, "{err}");
    let p = PathBuf::from(stdout.trim());
    assert_eq!(p.parent(), Some(d.canonicalize().unwrap().as_path()));
    let f = TraceFile::open(&p).unwrap();
    let m = f.typhon_meta().unwrap().unwrap();
    assert_eq!(m.session["window"]["trigger"], "typhon-rec snapshot");
    assert!(demo.wait().unwrap().success());
    assert!(!sock.exists());
    assert_eq!(snapshots(&d).len(), 2, "this one and the demo's last");
    let _ = std::fs::remove_dir_all(&d);
}

/// A compressed windowed demo (its window holds zstd chunks): the snapshot is v7, and `stats`
/// reads in it exactly the records the demo says it holds, no page damaged or missing.
#[test]
fn a_compressed_windowed_demo_writes_v7_snapshots_the_readers_read() {
    let d = tmp("cli-window-zstd");
    let (ok, json, err) = rec(&[
        "demo",
        "--window",
        "1s",
        "--window-bytes",
        "262144",
        "--compress",
        "zstd",
        "--snapshot-dir",
        d.to_str().unwrap(),
        "--duration",
        "1.5",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert!(v["evicted_pages"].as_u64().unwrap() > 0, "{v}");
    let p = v["snapshot"].as_str().unwrap();
    let f = TraceFile::open(p).unwrap();
    assert_eq!((f.version(), f.compression()), (7, Some("zstd")));
    let (ok, sj, err) = rec(&["stats", "--json", p]);
    assert!(ok, "{err}");
    let s: serde_json::Value = serde_json::from_str(&sj).unwrap();
    assert_eq!(s["records"], v["snapshot_records"], "{s}");
    assert_eq!(s["written"], v["snapshot_records"], "{s}");
    assert_eq!(
        (&s["missed"], &s["damaged_pages"]),
        (&0.into(), &0.into()),
        "{s}"
    );
    let (ok, _, err) = rec(&["report", p]);
    assert!(ok, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

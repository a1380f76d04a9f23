//! The real programs' smoke test (small and bounded: 200 requests, 20 frames, one round of
//! every mode): each mode's process runs to its end, the measured window holds exactly the
//! requests sent or the frames run, ours records without losing a record and writes a file,
//! tracing-chrome writes one, and the modes without output write nothing.
//!
//! `cargo test -p typhon-bench --features real-programs --test real_programs`

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn run(exe: &str, args: &[&str]) -> Value {
    let json: PathBuf = std::env::temp_dir().join(format!(
        "typhon-real-smoke-{}-{}.json",
        std::process::id(),
        args[0]
    ));
    let out = Command::new(exe)
        .arg("bench")
        .args(&args[1..])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap_or_else(|e| panic!("{exe}: {e}"));
    assert!(
        out.status.success(),
        "{exe} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text).expect("the bench's JSON")
}

/// The summary entry of `mode`.
fn mode<'a>(v: &'a Value, mode: &str) -> &'a Value {
    v["summary"]
        .as_array()
        .expect("a summary")
        .iter()
        .find(|m| m["mode"] == mode)
        .unwrap_or_else(|| panic!("no {mode} in {v:#}"))
}

fn check(v: &Value, units: u64) {
    for m in [
        "none",
        "registry",
        "typhon",
        "typhon-zstd",
        "chrome",
        "tracy",
    ] {
        let s = mode(v, m);
        assert_eq!(s["rounds"], 1, "{m}");
        assert_eq!(s["units"].as_u64(), Some(units), "{m}: the measured window");
        assert!(s["median_ns"].as_f64().unwrap() > 0.0, "{m}: a cost");
        let bytes = s["bytes_per_unit"].as_f64().unwrap();
        match m {
            "none" | "registry" | "tracy" => assert_eq!(bytes, 0.0, "{m} writes no file"),
            _ => assert!(bytes > 0.0, "{m} wrote its file"),
        }
        if m.starts_with("typhon") {
            assert!(
                s["records_per_unit"].as_f64().unwrap() >= 1.0,
                "{m}: records"
            );
            assert_eq!(s["missed"], 0, "{m}: nothing lost at this rate");
        }
    }
    // The compressed recording of the same work is the smaller.
    assert!(
        mode(v, "typhon-zstd")["bytes_per_unit"].as_f64()
            < mode(v, "typhon")["bytes_per_unit"].as_f64()
    );
}

#[test]
fn the_service_serves_every_request_in_every_mode() {
    let v = run(
        env!("CARGO_BIN_EXE_real-service"),
        &[
            "service",
            "--rounds",
            "1",
            "--requests",
            "200",
            "--warmup",
            "20",
            "--conns",
            "2",
        ],
    );
    check(&v, 200);
}

#[test]
fn the_frame_loop_runs_every_frame_in_every_mode() {
    let v = run(
        env!("CARGO_BIN_EXE_real-ecs"),
        &["ecs", "--rounds", "1", "--frames", "20", "--warmup", "2"],
    );
    check(&v, 20);
}

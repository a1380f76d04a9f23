//! The live view in a real browser: a demo records, `typhon-rec live` follows it from its
//! start, and Chromium (driven by Playwright from Python, tests/live_browser.py, with the
//! system browser at /usr/bin/chromium) checks that the page shows the recording live, ticks,
//! spans by name, a flame chart of a clicked tick with a lane per thread and a tooltip, and at
//! the end "finished" with as many records as the finished file holds.
//!
//! Skipped, saying why, without chromium or Playwright; a failure instead under
//! `TYPHON_REQUIRE_INTEROP=1` (`.ci/run` installs both). The screenshot goes to the scratch
//! directory; `TYPHON_BLESS=1` writes it to docs/live-view.png (the README's picture).

mod common;
mod live;

use common::{tmp, BIN};
use live::Live;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

fn skip(why: &str) {
    assert!(
        std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "TYPHON_REQUIRE_INTEROP=1 but {why}"
    );
    eprintln!("SKIPPED: {why}");
}

fn have_playwright() -> bool {
    Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_page_follows_a_demo_to_its_end() {
    if !Path::new(CHROMIUM).exists() {
        return skip("no /usr/bin/chromium (apt-get install --no-install-recommends chromium)");
    }
    if !have_playwright() {
        return skip("Python's playwright is not installed (pip install playwright==1.49.0)");
    }
    let dir = tmp("live-browser");
    let out = dir.join("live.dat");
    // A short max page age: the page shows the recording well before it ends.
    let mut demo = Command::new(BIN)
        .args(["demo", "-o"])
        .arg(&out)
        .args(["--duration", "40", "--max-page-age", "200ms", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let parts = typhon_recorder::sink::parts_dir(&out);
    let t0 = Instant::now();
    while !parts.is_dir() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the demo made no {}",
            parts.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let live = Live::start(BIN, &out, &[]);
    let shot = if std::env::var("TYPHON_BLESS").as_deref() == Ok("1") {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/live-view.png")
    } else {
        dir.join("live-view.png")
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live_browser.py");
    let run = Command::new("python3")
        .arg(&script)
        .arg(live.url())
        .arg(&shot)
        .arg("--expect-live")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    if run.status.code() == Some(3) {
        let _ = demo.kill();
        let _ = demo.wait();
        return skip(&format!("Playwright cannot run: {stderr}"));
    }
    let status = demo.wait().unwrap();
    assert!(status.success(), "the demo failed");
    assert!(run.status.success(), "the browser script failed: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)));
    eprintln!("the page showed: {v}");

    assert!(
        ["live", "finishing"].contains(&v["first_state"].as_str().unwrap()),
        "{v}"
    );
    let names: Vec<&str> = v["span_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for n in ["apply-command", "simulation", "system: physics"] {
        assert!(
            names.contains(&n),
            "{n} missing from the span table: {names:?}"
        );
    }
    assert_eq!(v["paused_label"], "Resume", "{v}");
    assert!(v["flame_spans"].as_u64().unwrap() > 0, "{v}");
    let threads: Vec<&str> = v["flame_threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        threads.contains(&"game-loop"),
        "lanes named by thread: {threads:?}"
    );
    let tip = v["tooltip"]
        .as_str()
        .expect("hovering a span shows a tooltip");
    assert!(
        tip.contains(" ms") || tip.contains(" µs") || tip.contains(" ns"),
        "{tip}"
    );
    assert!(tip.contains("trace "), "{tip}");
    assert_eq!(v["state"], "finished", "{v}");
    let in_file = common::records(&out).len() as u64;
    assert_eq!(
        v["records"], in_file,
        "the page's record count against the file's"
    );
    assert_eq!(v["losses"], "no losses", "{v}");
    assert!(
        v["errors"].as_array().unwrap().is_empty(),
        "page errors: {v}"
    );
    assert!(
        v["foreign_requests"].as_array().unwrap().is_empty(),
        "the page loaded something from elsewhere: {v}"
    );
    // "Jump to worst" shows the worst tick's spans, though it left the detail long ago.
    assert_eq!(v["worst_flame_tick"], v["worst_tick"], "{v}");
    assert!(v["worst_flame_spans"].as_u64().unwrap() > 0, "{v}");
    let png = std::fs::metadata(&shot).unwrap().len();
    assert!(png > 10_000 && png < 300_000, "screenshot of {png} bytes");
}

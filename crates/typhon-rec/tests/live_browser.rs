//! The live view in a real browser: a demo records, `typhon-rec live` follows it from its
//! start, and Chromium (driven by Playwright from Python, tests/live_browser.py, with the
//! system browser at /usr/bin/chromium) checks that the page shows the recording live, ticks,
//! spans by name, a flame chart of a clicked tick with a lane per thread and a tooltip, the
//! demo's counters charted by name, and at the end "finished" with as many records as the
//! finished file holds.
//!
//! The demo runs until the page has made its live checks (then it is sent SIGINT, which
//! finishes its recording as the end of `--duration` does): a page that loads late, as a
//! Chromium slow to start on a loaded machine makes it, still meets the recording live. A
//! fixed demo length had been met finished by such a page.
//!
//! Skipped, saying why, without chromium or Playwright; a failure instead under
//! `TYPHON_REQUIRE_INTEROP=1` (`.ci/run` installs both). The screenshot goes to the scratch
//! directory; `TYPHON_BLESS=1` writes it to docs/live-view.png (the README's picture).

mod common;
mod live;

use common::{tmp, BIN};
use live::Live;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// The demo runs at least this long (s) before it is ended: the worst tick's spans are long
/// out of the detail (about 3 s of this demo) when the page jumps to it.
const DEMO_AT_LEAST: u64 = 15;
/// And at most this long: the page's live checks are done by then, or the test fails.
const DEMO_AT_MOST: &str = "300";

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
        .args([
            "--duration",
            DEMO_AT_MOST,
            "--max-page-age",
            "200ms",
            "--json",
        ])
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
    let mut py = Command::new("python3")
        .arg(&script)
        .arg(live.url())
        .arg(&shot)
        .arg("--expect-live")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut py_err = py.stderr.take().unwrap();
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = py_err.read_to_string(&mut s);
        s
    });
    // The script's lines: "live-checked" once its checks of the running recording are done,
    // then its JSON. The demo is ended at the first (or when the script ends without it).
    let mut lines = BufReader::new(py.stdout.take().unwrap()).lines();
    let mut checked_live = false;
    for l in lines.by_ref() {
        if l.unwrap() == "live-checked" {
            checked_live = true;
            break;
        }
    }
    let ran = t0.elapsed();
    if checked_live && ran < Duration::from_secs(DEMO_AT_LEAST) {
        std::thread::sleep(Duration::from_secs(DEMO_AT_LEAST) - ran);
    }
    let pid = libc::pid_t::try_from(demo.id()).unwrap();
    // SAFETY: kill(2) takes no memory; the pid is our own child's, not waited for yet, so it
    // is still that process's.
    let sent = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(sent, 0, "kill({pid}, SIGINT)");
    let json = lines.next().and_then(Result::ok).unwrap_or_default();
    let run = py.wait().unwrap();
    let stderr = errs.join().unwrap();
    if run.code() == Some(3) {
        let _ = demo.kill();
        let _ = demo.wait();
        return skip(&format!("Playwright cannot run: {stderr}"));
    }
    let status = demo.wait().unwrap();
    // Ended by SIGINT mid-run: the recording finished by its termination handler, which then
    // lets the signal end the process (what it would do without the recorder).
    assert!(
        status.success() || status.signal() == Some(libc::SIGINT),
        "the demo failed: {status}"
    );
    assert!(checked_live, "the browser script failed: {stderr}");
    assert!(run.success(), "the browser script failed: {stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    eprintln!("the page showed: {v}");
    assert_eq!(v["state_when_checked"], "live", "{v}");
    let counters: Vec<&str> = v["counter_series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for n in ["entities", "frame budget used"] {
        assert!(counters.contains(&n), "{n} not charted: {counters:?}");
    }
    assert_eq!(v["counter_legend"], v["counter_series"], "{v}");
    assert!(v["counter_points"].as_u64().unwrap() > 10, "{v}");
    assert!(v["counter_canvas"].as_u64().unwrap() >= 1, "{v}");

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

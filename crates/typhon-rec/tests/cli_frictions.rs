//! The readers' first-day frictions (issue 36, item 4): a slot reused by a second thread is
//! shown under each thread's own name; `report` names `tracing` levels, filters by level,
//! target and event message, and escapes `Debug` text once; `stats` and `export` take
//! `report`'s `--slot` (a number or a thread name) and `--from`/`--to`; `convert` says what it
//! wrote and refuses an existing output unless `--force`; a tick-less file gets no tick rows;
//! rates are over each row's own first and last record. Each on a file the recorder wrote.
//!
//! trace-cmd still shows a reused slot's records under its first owner's name: a record's
//! `common_pid` is one byte holding the slot (SPEC §7), and trace-cmd takes a comm from the
//! cmdlines by pid, one name a pid.

mod common;

use common::rec;
use std::path::PathBuf;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use typhon_recorder::RecorderBuilder;

/// `first-owner` writes 3 named instants and exits; once its slot is retired `second-owner`
/// claims it and writes 4 named instants and three `tracing` events (WARN with a `Debug`
/// string holding a newline, INFO, DEBUG). No ticks. Returns the file and the slot, which both
/// threads had (asserted from the file's ThreadInfo records). Recorded once for all the tests
/// (a process has one recorder at a time); each test writes only beside it.
fn record(_test: &str) -> (PathBuf, u32) {
    static FILE: std::sync::OnceLock<(PathBuf, u32)> = std::sync::OnceLock::new();
    FILE.get_or_init(recording).clone()
}

fn recording() -> (PathBuf, u32) {
    let d = common::tmp("frictions");
    let out = d.join("reuse.dat");
    let r = RecorderBuilder::new()
        .output(&out)
        .flush_interval(Duration::from_millis(1))
        .start()
        .unwrap();
    std::thread::Builder::new()
        .name("first-owner".into())
        .spawn(|| {
            for i in 0..3 {
                typhon_recorder::named_instant("first-work", i);
            }
        })
        .unwrap()
        .join()
        .unwrap();
    // The slot is free again once the flusher has drained the exited thread's ring.
    std::thread::sleep(Duration::from_millis(200));
    std::thread::Builder::new()
        .name("second-owner".into())
        .spawn(|| {
            let sub = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
            tracing::subscriber::with_default(sub, || {
                for i in 0..4 {
                    typhon_recorder::named_instant("second-work", i);
                }
                tracing::warn!(target: "app::db", detail = ?"a\nb", "slow query");
                tracing::info!(target: "net", "accepted");
                tracing::debug!(target: "app::cache", "miss");
            });
        })
        .unwrap()
        .join()
        .unwrap();
    r.finish().unwrap();
    let f = typhon_trace::tracedat::TraceFile::open(&out).unwrap();
    let mut owners: Vec<(u32, String)> = Vec::new();
    for r in f.stream_records().map(Result::unwrap) {
        if r.data[2] == typhon_recorder::codec::TraceEventKind::THREAD_INFO.0 {
            let d = typhon_recorder::codec::records::decode_fields(&r.data).unwrap();
            let n = d.get("name").and_then(|v| v.as_str()).unwrap().to_owned();
            owners.push((r.cpu, n));
        }
    }
    let slot_of = |n: &str| owners.iter().find(|o| o.1 == n).map(|o| o.0);
    let slot = slot_of("first-owner").expect("first-owner's ThreadInfo");
    assert_eq!(
        slot_of("second-owner"),
        Some(slot),
        "the second thread should reuse the first one's slot: {owners:?}"
    );
    (out, slot)
}

fn ok(args: &[&str]) -> String {
    let (ok, out, err) = rec(args);
    assert!(ok, "{args:?}: {err}");
    out
}

fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    ok(args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The records a `report --json` showed (its last line says how many).
fn shown(args: &[&str]) -> u64 {
    json_lines(args).last().unwrap()["shown"].as_u64().unwrap()
}

#[test]
fn a_reused_slot_is_shown_under_each_threads_name() {
    let (file, slot) = record("reuse-names");
    let f = file.to_str().unwrap();
    let lines = json_lines(&["report", f, "--json", "--slot", &slot.to_string()]);
    let by_thread = |t: &str, name: &str| {
        lines
            .iter()
            .filter(|l| l["thread"] == t && l["fields"]["name"] == name)
            .count()
    };
    assert_eq!(by_thread("first-owner", "first-work"), 3, "{lines:?}");
    assert_eq!(by_thread("second-owner", "second-work"), 4, "{lines:?}");
    assert_eq!(by_thread("first-owner", "second-work"), 0);
    // The text form's thread column too.
    let text = ok(&["report", f, "--name", "second-work"]);
    assert_eq!(text.matches("second-owner-").count(), 4, "{text}");

    // stats: one row for the slot, named by both threads, each with its own records.
    let v: serde_json::Value = serde_json::from_str(&ok(&["stats", f, "--json"])).unwrap();
    let row = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slot"] == slot)
        .unwrap()
        .clone();
    assert_eq!(row["name"], "first-owner → second-owner", "{row}");
    let threads = row["threads"].as_array().unwrap();
    let names: Vec<&str> = threads
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first-owner", "second-owner"]);
    // ThreadInfo + 3 instants; ThreadInfo + 4 instants + the tracing records.
    assert_eq!(threads[0]["records"], 4, "{row}");
    let second = threads[1]["records"].as_u64().unwrap();
    assert!(second >= 8, "{row}");
    assert_eq!(
        row["records"].as_u64().unwrap(),
        4 + second,
        "the threads' records are the slot's: {row}"
    );
    let text = ok(&["stats", f]);
    assert!(text.contains("first-owner → second-owner"), "{text}");
    assert!(text.contains("· second-owner ("), "{text}");
}

#[test]
fn report_names_levels_filters_level_target_and_message_and_escapes_debug_once() {
    let (file, _) = record("reuse-levels");
    let f = file.to_str().unwrap();
    let all = ok(&["report", f, "--kind", "TracingEvent"]);
    assert!(
        all.contains("level=WARN") && all.contains("level=INFO"),
        "{all}"
    );
    assert!(
        all.contains("level=DEBUG") && !all.contains("level=2"),
        "{all}"
    );
    // `?"a\nb"` is the Debug text "a\nb" (a backslash, an n): shown so, not as "a\\nb".
    assert!(all.contains(r#"fields=detail="a\nb""#), "{all}");
    assert!(!all.contains(r#"a\\nb"#), "{all}");

    let warn = ok(&["report", f, "--level", "warn"]);
    assert_eq!(warn.matches("TracingEvent").count(), 1, "{warn}");
    assert!(warn.contains("message=slow query"), "{warn}");
    assert_eq!(shown(&["report", f, "--json", "--level", "INFO"]), 2);
    assert_eq!(shown(&["report", f, "--json", "--level", "trace"]), 3);

    let app = ok(&["report", f, "--target", "app::"]);
    assert_eq!(app.matches("TracingEvent").count(), 2, "{app}");
    assert!(!app.contains("target=net"), "{app}");

    let lines = json_lines(&["report", f, "--json", "--name", "slow q"]);
    assert_eq!(lines.len(), 2, "the event and the losses line: {lines:?}");
    assert_eq!(lines[0]["fields"]["message"], "slow query");
    assert_eq!(lines[0]["fields"]["level"], "WARN");

    let (okay, _, err) = rec(&["report", f, "--level", "loud"]);
    assert!(
        !okay && err.contains("error, warn, info, debug, trace"),
        "{err}"
    );
}

#[test]
fn stats_and_export_take_reports_slot_and_window_and_slot_takes_a_thread_name() {
    let (file, slot) = record("reuse-filters");
    let f = file.to_str().unwrap();
    let d = common::tmp("frictions-export");
    let second = shown(&["report", f, "--json", "--slot", "second-owner"]);
    let by_number = shown(&["report", f, "--json", "--slot", &slot.to_string()]);
    assert!(
        second >= 8 && by_number == second + 4,
        "{second} {by_number}"
    );

    let stats = |extra: &[&str]| -> serde_json::Value {
        let mut a = vec!["stats", f, "--json"];
        a.extend_from_slice(extra);
        serde_json::from_str(&ok(&a)).unwrap()
    };
    let v = stats(&["--slot", "second-owner"]);
    assert_eq!(v["records"].as_u64(), Some(second), "{v}");
    assert_eq!(v["slots"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["slots"][0]["name"], "second-owner");

    // A window from the second thread's first record on holds its records and none of the
    // first thread's (200 ms before).
    let lines = json_lines(&["report", f, "--json", "--slot", "second-owner"]);
    let first_ns = lines
        .iter()
        .filter_map(|l| l["time"].as_str())
        .map(|t| (t.trim_start_matches('+').parse::<f64>().unwrap() * 1e9).round() as u64)
        .min()
        .unwrap();
    let from = format!("{first_ns}ns");
    let windowed = shown(&["report", f, "--json", "--from", &from]);
    assert!(windowed >= second && windowed < by_number, "{windowed}");
    assert_eq!(
        stats(&["--from", &from])["records"].as_u64(),
        Some(windowed)
    );
    let to = stats(&["--to", &from, "--slot", "first-owner"]);
    assert_eq!(to["records"].as_u64(), Some(4), "{to}");

    let export = |extra: &[&str]| -> u64 {
        let o = d.join("e.json");
        let _ = std::fs::remove_file(&o);
        let mut a = vec!["export", f, "--format", "chrome", "-o", o.to_str().unwrap()];
        a.extend_from_slice(extra);
        let out = ok(&a);
        let n = out.split(": ").nth(1).unwrap().split(' ').next().unwrap();
        n.parse().unwrap_or_else(|_| panic!("{out}"))
    };
    assert_eq!(export(&["--slot", "second-owner"]), second);
    // The window's records, and the ThreadInfo of the threads before it (the recorder's and
    // first-owner's), which name the tracks whatever their time.
    assert_eq!(export(&["--from", &from]), windowed + 2);
    assert!(export(&[]) > windowed);
    let o = d.join("e.otlp.json");
    let out = ok(&[
        "export",
        f,
        "--format",
        "otlp-json",
        "-o",
        o.to_str().unwrap(),
        "--slot",
        "first-owner",
    ]);
    assert!(out.contains(": 4 records"), "{out}");

    let (okay, _, err) = rec(&["stats", f, "--slot", "nobody"]);
    assert!(!okay && err.contains("no thread named nobody"), "{err}");
    assert!(
        err.contains("second-owner"),
        "the file's threads are named: {err}"
    );
    let (okay, _, err) = rec(&["export", f, "--slot", "99"]);
    assert!(!okay && err.contains("no slot 99"), "{err}");
}

#[test]
fn convert_says_what_it_wrote_and_replaces_only_with_force() {
    let (file, _) = record("reuse-convert");
    let f = file.to_str().unwrap();
    let out = common::tmp("frictions-convert").join("c.dat");
    let o = out.to_str().unwrap();
    let v: serde_json::Value = serde_json::from_str(&ok(&["stats", f, "--json"])).unwrap();
    let records = v["records"].as_u64().unwrap();
    let slots = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["records"].as_u64() > Some(0))
        .count();
    let said = ok(&["convert", f, o, "--compress", "zstd"]);
    let size = std::fs::metadata(&out).unwrap().len();
    assert_eq!(
        said.trim(),
        format!(
            "wrote {o}: trace.dat version 7, zstd:1, {records} records in {slots} slots, {size} bytes \
             (from {} bytes)",
            std::fs::metadata(&file).unwrap().len()
        )
    );
    let (okay, _, err) = rec(&["convert", f, o]);
    assert!(
        !okay && err.contains("exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        size,
        "left as it was"
    );
    let said = ok(&["convert", f, o, "--force"]);
    assert!(said.contains("trace.dat version 6,"), "{said}");
    assert_ne!(std::fs::metadata(&out).unwrap().len(), size, "replaced");
    let again: serde_json::Value = serde_json::from_str(&ok(&["stats", o, "--json"])).unwrap();
    assert_eq!(again["records"].as_u64(), Some(records));
    let leftovers = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_string_lossy().contains(".convert-")
        })
        .count();
    assert_eq!(leftovers, 0);
    let (okay, _, err) = rec(&["convert", f, f, "--force"]);
    assert!(!okay && err.contains("is the input"), "{err}");
}

#[test]
fn stats_of_a_tickless_file_has_no_tick_rows() {
    let (file, _) = record("reuse-ticks");
    let text = ok(&["stats", file.to_str().unwrap()]);
    assert!(!text.contains("\ntick "), "{text}");
    assert!(!text.contains("tick budget"), "{text}");
    assert!(!text.contains("ticks and phases"), "{text}");
    assert!(
        text.contains("spans (by total time)"),
        "the other tables stay: {text}"
    );
}

#[test]
fn rates_are_over_each_rows_own_span() {
    let (file, slot) = record("reuse-rates");
    let f = file.to_str().unwrap();
    let v: serde_json::Value = serde_json::from_str(&ok(&["stats", f, "--json"])).unwrap();
    // A row's rate is its records after the first over its own first-to-last span; a row of
    // one record, or of no time between its records, has none.
    let check = |r: &serde_json::Value| {
        let (n, span) = (
            r["records"].as_u64().unwrap(),
            r["span_s"].as_f64().unwrap(),
        );
        if n < 2 || span == 0.0 {
            assert!(r["records_per_s"].is_null(), "{r}");
        } else {
            let want = (n - 1) as f64 / span;
            let got = r["records_per_s"].as_f64().unwrap();
            assert!((got - want).abs() <= want * 1e-9, "{r}");
        }
    };
    let slots = v["slots"].as_array().unwrap();
    slots.iter().for_each(check);
    let reused = slots.iter().find(|s| s["slot"] == slot).unwrap();
    for t in reused["threads"].as_array().unwrap() {
        check(t);
        // Each thread's span is its own, inside the slot's (which holds the 200 ms between).
        assert!(
            t["span_s"].as_f64().unwrap() < reused["span_s"].as_f64().unwrap(),
            "{reused}"
        );
    }
    v["kinds"].as_array().unwrap().iter().for_each(check);
    // The recorder's own slot writes its records at one time: no rate, not 0 records/s.
    assert!(slots[0]["records_per_s"].is_null(), "{v}");
}

//! `typhon-rec report` narrows and shapes its output: `--slot`, `--kind`, `--name`, the
//! `--from/--to` window (after the start, or wall-clock), `--limit`, `--json` lines and the
//! `--time` column; a span shows its start and end. Checked on a recording made by the recorder
//! with caller timestamps.

mod common;

use common::rec;
use std::path::PathBuf;
use std::time::Duration;
use typhon_recorder::RecorderBuilder;

const MS: u64 = 1_000_000;

/// Main thread: TickStart at 0, span "outer" 1..5 ms holding Instant(7) at 2 ms, TickEnd at
/// 6 ms; a second thread: span "other" 8..9 ms. Times after `base` (returned, ns after the
/// recording's start).
fn record() -> (PathBuf, u64) {
    let d = std::env::temp_dir().join(format!("typhon-report-filters-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let out = d.join("r.dat");
    let r = RecorderBuilder::new().output(&out).start().unwrap();
    // The thread's ThreadInfo is written at the clock's time when it claims its slot: claimed
    // here, before `base`, it cannot land in a window of the test (under load, a claim at the
    // first write came late enough to fall into the 3..4 ms one).
    typhon_recorder::register_thread();
    let base = r.clock().to_ns(r.now()) + MS;
    let at = |ns: u64| {
        let raw = r.ns_to_ticks(base + ns);
        while r.now() < raw {
            std::thread::sleep(Duration::from_micros(50));
        }
        raw
    };
    typhon_recorder::tick_start_at(at(0));
    let s = typhon_recorder::span_at("outer", at(MS));
    typhon_recorder::instant_at(at(2 * MS), 7, 0);
    s.end_at(at(5 * MS));
    typhon_recorder::tick_end_at(at(6 * MS), 0, 1);
    let (a, b) = (at(8 * MS), at(9 * MS));
    std::thread::spawn(move || typhon_recorder::span_at("other", a).end_at(b))
        .join()
        .unwrap();
    let start = r.clock().monotonic_anchor_ns();
    r.finish().unwrap();
    (out, base - start)
}

fn lines(args: &[&str]) -> Vec<serde_json::Value> {
    let (ok, out, err) = rec(args);
    assert!(ok, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn kinds(v: &[serde_json::Value]) -> Vec<String> {
    v.iter()
        .filter_map(|x| x["kind"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn report_filters_windows_limits_and_prints_json_lines_with_span_starts_and_ends() {
    let (file, base) = record();
    let f = file.to_str().unwrap();
    let rel = |ms: u64| (base + ms * MS) as f64 / 1e9;
    let secs = |v: &serde_json::Value| {
        v.as_str()
            .unwrap()
            .trim_start_matches('+')
            .parse::<f64>()
            .unwrap()
    };

    let all = lines(&["report", f, "--json"]);
    let last = all.last().unwrap();
    assert_eq!(last["losses"]["missed"], 0, "{last}");
    assert_eq!(last["shown"].as_u64().unwrap() as usize, all.len() - 1);
    // The span is written at its end, but shows where it starts and ends.
    let outer = all.iter().find(|v| v["fields"]["name"] == "outer").unwrap();
    assert!((secs(&outer["time"]) - rel(1)).abs() < 1e-5, "{outer}");
    assert!((secs(&outer["end"]) - rel(5)).abs() < 1e-5, "{outer}");
    // Ids are numbers, as in the file.
    assert!(outer["fields"]["span_id"].is_u64() && outer["fields"]["parent_span_id"].is_u64());

    let slot2 = lines(&["report", f, "--json", "--slot", "2"]);
    assert!(slot2[..slot2.len() - 1].iter().all(|v| v["slot"] == 2));
    assert!(kinds(&slot2).contains(&"NamedSpan".to_string()));

    let spans = lines(&["report", f, "--json", "--kind", "namedspan,TickEnd"]);
    assert_eq!(kinds(&spans), ["NamedSpan", "TickEnd", "NamedSpan"]);
    let named = lines(&["report", f, "--json", "--name", "out"]);
    assert_eq!(named.len(), 2, "outer and the losses: {named:?}");

    // 3..4 ms after base: only the span that covers it.
    let (from, to) = (
        format!("{}ms", base / 1000 / 1000 + 3),
        format!("{}ms", base / 1000 / 1000 + 4),
    );
    let w = lines(&[
        "report", f, "--json", "--slot", "1", "--from", &from, "--to", &to,
    ]);
    assert_eq!(kinds(&w), ["NamedSpan"], "{w:?}");
    // The same window in wall-clock time.
    let wall = lines(&["report", f, "--json", "--time", "wall", "--name", "outer"]);
    let t = wall[0]["time"].as_str().unwrap().to_owned();
    assert!(t.ends_with('Z'), "{t}");
    let w = lines(&[
        "report", f, "--json", "--slot", "1", "--since", &t, "--until", &t,
    ]);
    assert_eq!(kinds(&w), ["NamedSpan"], "{w:?}");

    let lim = lines(&["report", f, "--json", "--limit", "2"]);
    assert_eq!(lim.len(), 3);
    assert_eq!(lim[2]["shown"], 2);

    let mono = lines(&[
        "report",
        f,
        "--json",
        "--time",
        "mono",
        "--kind",
        "TickStart",
    ]);
    let ts = mono[0]["ts_ns"].as_u64().unwrap();
    assert!((secs(&mono[0]["time"]) - ts as f64 / 1e9).abs() < 1e-9);

    // Text: times after the start by default, spans with both ends.
    let (ok, out, err) = rec(&["report", f, "--name", "outer"]);
    assert!(ok, "{err}");
    assert!(out.contains("[span +"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("[LOSSES:"), "{out}");

    let (ok, _, err) = rec(&["report", f, "--kind", "Nope"]);
    assert!(!ok && err.contains("TickStart"), "{err}");
    // Filters that can match nothing are refused, not answered with an empty report.
    let (ok, _, err) = rec(&["report", f, "--slot", "99"]);
    assert!(
        !ok && err.contains("no slot 99") && err.contains(f),
        "{err}"
    );
    let (ok, _, err) = rec(&["report", f, "--from", "2s", "--to", "1s"]);
    assert!(!ok && err.contains("--from is after --to"), "{err}");
    let (ok, _, err) = rec(&["report", f, "--limit", "0"]);
    assert!(!ok && err.contains("--limit 0"), "{err}");
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

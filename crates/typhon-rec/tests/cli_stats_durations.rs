//! `typhon-rec stats` times spans, ticks and phases: on a recording made by the recorder with
//! caller timestamps (so every duration is known), the counts, totals, percentiles, maxima, the
//! slowest instances with their start times and the tick overruns are what was written.

mod common;

use common::rec;
use std::path::PathBuf;
use std::time::Duration;
use typhon_recorder::RecorderBuilder;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// Caller times go through the TSC conversion and back: each is within 1 us of its ns.
const TOL: u64 = 3 * US;

/// Records, from the main thread: 10 ticks of 4k ms (k = 1..=10) 1 ms apart, each holding
/// phase 1 for 2k ms; then 100 spans "work" of 50k us (k = 1..=100) and 20 spans "idle" of
/// 10 us, 100 us apart. Returns the file and the first tick's start, in ns after the
/// recording's start.
fn record() -> (PathBuf, u64) {
    let d = std::env::temp_dir().join(format!("typhon-stats-dur-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let out = d.join("known.dat");
    let r = RecorderBuilder::new().output(&out).start().unwrap();
    let start = r.clock().monotonic_anchor_ns();
    let base = r.clock().to_ns(r.now()) + MS;
    // Each time is written once it has passed, so none is in the future (which is clamped).
    let at = |ns: u64| {
        let raw = r.ns_to_ticks(base + ns);
        while r.now() < raw {
            std::thread::sleep(Duration::from_micros(50));
        }
        raw
    };
    let mut t = 0;
    for k in 1..=10u64 {
        typhon_recorder::tick_start_at(at(t));
        typhon_recorder::phase_start_at(at(t), 1);
        typhon_recorder::phase_end_at(at(t + 2 * k * MS), 1);
        typhon_recorder::tick_end_at(at(t + 4 * k * MS), 0, 1);
        t += 4 * k * MS + MS;
    }
    for k in 1..=100u64 {
        let s = typhon_recorder::span_at("work", at(t));
        s.end_at(at(t + 50 * k * US));
        t += 50 * k * US + 100 * US;
    }
    for _ in 0..20 {
        let s = typhon_recorder::span_at("idle", at(t));
        s.end_at(at(t + 10 * US));
        t += 110 * US;
    }
    r.finish().unwrap();
    (out, base - start)
}

fn near(v: &serde_json::Value, want: u64, what: &str) {
    let got = v.as_f64().unwrap_or_else(|| panic!("{what}: {v}"));
    assert!(
        (got - want as f64).abs() <= TOL as f64,
        "{what}: {got} ns, written {want} ns"
    );
}

#[test]
fn stats_gives_durations_percentiles_slowest_and_overruns_of_a_known_recording() {
    let (file, first_tick) = record();
    let f = file.to_str().unwrap();
    let (ok, out, err) = rec(&["stats", f, "--json", "--tick-budget", "16.6ms"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &v["durations"];
    assert_eq!(d["tick_budget_ns"], 16_600_000);

    let ticks = &d["ticks"];
    assert_eq!(ticks["count"], 10);
    // 4k ms for k = 1..=10: over 16.6 ms from k = 5 on.
    assert_eq!(ticks["overruns"], 6);
    near(&ticks["total_ns"], 220 * MS, "tick total");
    near(&ticks["p50_ns"], 20 * MS, "tick p50");
    near(&ticks["p90_ns"], 36 * MS, "tick p90");
    near(&ticks["max_ns"], 40 * MS, "tick max");
    near(&ticks["mean_ns"], 22 * MS, "tick mean");
    let slow = ticks["slowest"].as_array().unwrap();
    assert_eq!(slow.len(), 5);
    near(&slow[0]["duration_ns"], 40 * MS, "slowest tick");
    assert_eq!(slow[0]["id"], 9, "the tenth tick (numbered from 0)");
    // It starts after the nine before it: sum over k = 1..=9 of 4k + 1 ms.
    near(
        &slow[0]["start_rel_ns"],
        first_tick + 189 * MS,
        "slowest tick's start",
    );
    assert!(slow[0]["start_wall"].as_str().unwrap().ends_with('Z'));

    let phases = d["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0]["phase"], 1);
    assert_eq!(phases[0]["count"], 10);
    near(&phases[0]["max_ns"], 20 * MS, "phase max");
    near(&phases[0]["total_ns"], 110 * MS, "phase total");

    let spans = d["spans"].as_array().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["work", "idle"], "by total time");
    let w = &spans[0];
    assert_eq!(w["count"], 100);
    assert_eq!(w["exact_percentiles"], true);
    near(&w["total_ns"], 5050 * 50 * US, "work total");
    near(&w["p50_ns"], 50 * 50 * US, "work p50");
    near(&w["p90_ns"], 90 * 50 * US, "work p90");
    near(&w["p99_ns"], 99 * 50 * US, "work p99");
    near(&w["max_ns"], 100 * 50 * US, "work max");
    let slow: Vec<f64> = w["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["duration_ns"].as_f64().unwrap())
        .collect();
    for (got, k) in slow.iter().zip([100u64, 99, 98, 97, 96]) {
        assert!((got - (k * 50 * US) as f64).abs() <= TOL as f64, "{slow:?}");
    }
    assert_eq!(spans[1]["count"], 20);
    near(&spans[1]["max_ns"], 10 * US, "idle max");
    assert_eq!(d["unmatched_starts"], 0);
    assert_eq!(d["unmatched_ends"], 0);
    // Every loss counter is still there beside the durations.
    for k in [
        "missed",
        "refused",
        "no_slot",
        "sink_lost",
        "pages_lost",
        "clamped",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }

    // A budget above every tick: no overrun; the table says the same in words.
    let (ok, out, err) = rec(&["stats", f, "--tick-budget", "41ms"]);
    assert!(ok, "{err}");
    assert!(out.contains("0 of 10 ticks over it"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in\n{out}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let work = line("work");
    assert_eq!(work[1], "100");
    assert_eq!(work[7], "5.00ms", "max column: {work:?}");
    assert_eq!(line("tick")[1], "10");

    // A budget without a unit is refused with a message, not read as some unit.
    let (ok, _, err) = rec(&["stats", f, "--tick-budget", "16.6"]);
    assert!(!ok && err.contains("unit"), "{err}");
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
}

//! Named instants and phases (NamedInstant, NamedPhaseStart/End) and `tracing` spans told
//! apart by their `name` field ("system: physics", as Bevy's systems) are shown by their names
//! by every reader: `report` (and its `--name` filter), `stats` (text and JSON), the Chrome
//! and Perfetto exports (Perfetto's read with Perfetto's own protobuf classes) and
//! `trace-cmd report` (through the kinds' print formats). The outside readers skip, saying
//! why, when absent, and fail instead with `TYPHON_REQUIRE_INTEROP=1`.

mod common;

use common::rec;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::{bridge, RecorderBuilder};

fn skip(why: &str) {
    assert!(
        std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "TYPHON_REQUIRE_INTEROP=1 but {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// Two ticks, each with phase 1 "physics" (named) and phase 2 (numbered only), a
/// "collision" instant in each physics phase, a numbered instant, and two `tracing`-style
/// system spans per tick through the bridge, as `typhon-tracing` writes them.
fn record(dir: &Path) -> PathBuf {
    let file = dir.join("named.dat");
    let r = RecorderBuilder::new().output(&file).start().unwrap();
    let physics = bridge::SpanName::new("system: physics");
    let render = bridge::SpanName::new("system: render");
    let (kp, kr) = (bridge::next_key(), bridge::next_key());
    for _ in 0..2 {
        typhon_recorder::tick_start();
        typhon_recorder::named_phase_start(1, "physics");
        assert!(bridge::enter(&physics, kp, 1));
        typhon_recorder::named_instant("collision", 7);
        bridge::exit(1);
        typhon_recorder::named_phase_end(1, "physics");
        typhon_recorder::phase_start(2);
        assert!(bridge::enter(&render, kr, 2));
        bridge::exit(2);
        typhon_recorder::instant(5, 0);
        typhon_recorder::phase_end(2);
        typhon_recorder::tick_end(0, 1);
    }
    let stats = r.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    file
}

#[test]
fn named_instants_phases_and_system_spans_show_their_names_in_every_reader() {
    let dir = std::env::temp_dir().join(format!("typhon-named-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = record(&dir);
    let f = file.to_str().unwrap();

    // --- report ---
    let (ok, out, err) = rec(&["report", f]);
    assert!(ok, "{err}");
    for want in [
        "NamedInstant",
        "payload=7 name=collision",
        "NamedPhaseStart",
        "phase=1 name=physics",
        "NamedPhaseEnd",
        "name=system: physics",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    let (ok, out, err) = rec(&["report", f, "--name", "physics"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("name=")).collect();
    // Per tick: the phase's start and end, and the system span.
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines.iter().all(|l| l.contains("physics")), "{out}");

    // --- stats ---
    let (ok, out, err) = rec(&["stats", f, "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["durations"];
    let phases = d["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(
        (&phases[0]["phase"], &phases[0]["name"]),
        (&1.into(), &"physics".into())
    );
    assert_eq!(phases[0]["count"], 2);
    assert_eq!(phases[1]["phase"], 2);
    assert!(phases[1].get("name").is_none(), "{}", phases[1]);
    assert_eq!(
        d["instants"],
        serde_json::json!([{ "name": "collision", "count": 2 }])
    );
    let mut spans: Vec<(String, u64)> = d["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect();
    spans.sort();
    assert_eq!(
        spans,
        [
            ("system: physics".to_string(), 2),
            ("system: render".to_string(), 2)
        ]
    );
    let (ok, out, err) = rec(&["stats", f]);
    assert!(ok, "{err}");
    for want in [
        "physics (phase 1)",
        "phase 2",
        "system: physics",
        "named instants",
        "collision",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }

    // --- Chrome export ---
    let chrome = dir.join("named.json");
    let (ok, _, err) = rec(&[
        "export",
        f,
        "--format",
        "chrome",
        "-o",
        chrome.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let count = |name: &str, ph: &str| {
        evs.iter()
            .filter(|e| e["name"] == name && e["ph"] == ph)
            .count()
    };
    assert_eq!(
        count("physics", "X"),
        2,
        "the named phase is a slice under its name"
    );
    assert_eq!(count("phase 2", "X"), 2);
    assert_eq!(count("system: physics", "X"), 2);
    assert_eq!(count("system: render", "X"), 2);
    assert_eq!(count("collision", "i"), 2);

    // --- Perfetto export, read with Perfetto's classes ---
    let pf = dir.join("named.pftrace");
    let (ok, _, err) = rec(&[
        "export",
        f,
        "--format",
        "perfetto",
        "-o",
        pf.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../typhon-trace/tests/export_perfetto.py");
    match Command::new("python3").arg(&script).arg(&pf).output() {
        Ok(o) if o.status.success() => {
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            let evs = v["events"].as_array().unwrap();
            let count = |name: &str, ty: &str| {
                evs.iter()
                    .filter(|e| e["name"] == name && e["type"] == ty)
                    .count()
            };
            assert_eq!(count("physics", "TYPE_SLICE_BEGIN"), 2);
            assert_eq!(count("phase 2", "TYPE_SLICE_BEGIN"), 2);
            assert_eq!(count("system: physics", "TYPE_SLICE_BEGIN"), 2);
            assert_eq!(count("collision", "TYPE_INSTANT"), 2);
        }
        Ok(o) => {
            let e = String::from_utf8_lossy(&o.stderr);
            if e.contains("ModuleNotFoundError") {
                skip("python3 has no perfetto package");
            } else {
                panic!("Perfetto's reader failed: {e}");
            }
        }
        Err(e) => skip(&format!("python3 not run: {e}")),
    }

    // --- trace-cmd ---
    match Command::new("trace-cmd").arg("report").arg(&file).output() {
        Err(e) => skip(&format!("trace-cmd not run: {e}")),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            for want in [
                "NamedInstant:",
                "payload=7 name=collision",
                "NamedPhaseStart:",
                "phase=1 name=physics",
                "NamedPhaseEnd:",
                "name=system: physics",
            ] {
                assert!(text.contains(want), "no {want:?} in:\n{text}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

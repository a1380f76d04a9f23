//! Counters (kinds 234 and 235) in every reader, with exact values: `stats` (text and JSON:
//! count, min, max, mean and last per counter), `report`, the Chrome export (`"ph":"C"`), the
//! Perfetto export read with Perfetto's own protobuf classes (a counter track per name per
//! thread, each value exact), and `trace-cmd report` (through the kinds' print formats). The
//! outside readers skip, saying why, when absent, and fail instead with
//! `TYPHON_REQUIRE_INTEROP=1`.

mod common;

use common::rec;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::RecorderBuilder;

fn skip(why: &str) {
    assert!(
        std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "TYPHON_REQUIRE_INTEROP=1 but {why}"
    );
    eprintln!("SKIPPED: {why}");
}

/// "queue depth" (static: definition + ids) 3, -5, 10, 4; "load" (f64) 0.5, 2.25;
/// "shard 7" (run-time name: inline) 100, 300; two ticks with gauges "entities" 1000, 1001
/// and "bytes" 5 MiB.
const DEPTHS: [i64; 4] = [3, -5, 10, 4];

fn record(dir: &Path) -> PathBuf {
    let file = dir.join("counters.dat");
    let r = RecorderBuilder::new().output(&file).start().unwrap();
    for (i, d) in DEPTHS.into_iter().enumerate() {
        typhon_recorder::counter("queue depth", d);
        if i < 2 {
            typhon_recorder::counter!("load", [0.5, 2.25][i]);
            typhon_recorder::counter!(&format!("shard {}", 7), [100, 300][i]);
        }
    }
    for tick in 0..2 {
        typhon_recorder::tick_start();
        typhon_recorder::tick_end_with_gauges(
            0,
            1,
            &[("entities", 1000 + tick), ("bytes", 5 << 20)],
        );
    }
    let stats = r.finish().unwrap();
    assert_eq!(stats.total_missed(), 0);
    file
}

#[test]
fn counters_show_with_exact_values_in_every_reader() {
    let dir = common::tmp("counters");
    let file = record(&dir);
    let f = file.to_str().unwrap();

    // --- stats ---
    let (ok, out, err) = rec(&["stats", f, "--json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["counters"],
        json!({
            "queue depth": {"count": 4, "min": -5, "max": 10, "mean": 3.0, "last": 4},
            "load": {"count": 2, "min": 0.5, "max": 2.25, "mean": 1.375, "last": 2.25},
            "shard 7": {"count": 2, "min": 100, "max": 300, "mean": 200.0, "last": 300},
            "entities": {"count": 2, "min": 1000, "max": 1001, "mean": 1000.5, "last": 1001},
            "bytes": {"count": 2, "min": 5242880, "max": 5242880, "mean": 5242880.0, "last": 5242880},
        })
    );
    let (ok, out, err) = rec(&["stats", f]);
    assert!(ok, "{err}");
    let line = out.lines().find(|l| l.starts_with("queue depth")).unwrap();
    let cols: Vec<&str> = line["queue depth".len()..].split_whitespace().collect();
    assert_eq!(cols, ["4", "-5", "10", "3.000", "4"], "{out}");

    // --- report: the ids resolved, the values as numbers ---
    let (ok, out, err) = rec(&["report", f]);
    assert!(ok, "{err}");
    let counters: Vec<&str> = out.lines().filter(|l| l.contains(" Counter")).collect();
    assert_eq!(counters.len(), 12, "{out}");
    for want in [
        "value=-5 flags=0 name=queue depth",
        "value=2.25 flags=1 name=load",
        "value=300 flags=0 name=shard 7",
        "value=1001 flags=0 name=entities",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }

    // --- Chrome export ---
    let chrome = dir.join("counters.json");
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
    let values = |evs: &[Value], name: &str| -> Vec<Value> {
        evs.iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| e["args"]["value"].clone())
            .collect()
    };
    let evs = v["traceEvents"].as_array().unwrap();
    assert_eq!(
        values(evs, "queue depth"),
        [json!(3), json!(-5), json!(10), json!(4)]
    );
    assert_eq!(values(evs, "load"), [json!(0.5), json!(2.25)]);
    assert_eq!(values(evs, "entities"), [json!(1000), json!(1001)]);

    // --- Perfetto export, read with Perfetto's classes ---
    let pf = dir.join("counters.pftrace");
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
            let tracks = v["tracks"].as_object().unwrap();
            let track = |name: &str| {
                let (uuid, t) = tracks
                    .iter()
                    .find(|(_, t)| t["kind"] == "counter" && t["name"] == name)
                    .unwrap_or_else(|| panic!("no counter track {name}: {tracks:?}"));
                // Under the thread that wrote it.
                assert_eq!(tracks[&t["parent"].to_string()]["kind"], "thread");
                uuid.parse::<u64>().unwrap()
            };
            let evs = v["events"].as_array().unwrap();
            let series = |name: &str| -> Vec<(Value, Value)> {
                let uuid = track(name);
                evs.iter()
                    .filter(|e| e["track"] == uuid)
                    .inspect(|e| assert_eq!(e["type"], "TYPE_COUNTER"))
                    .map(|e| (e["value_field"].clone(), e["value"].clone()))
                    .collect()
            };
            let int = |v: i64| (json!("counter_value"), json!(v));
            let dbl = |v: f64| (json!("double_counter_value"), json!(v));
            assert_eq!(series("queue depth"), DEPTHS.map(int));
            assert_eq!(series("load"), [dbl(0.5), dbl(2.25)]);
            assert_eq!(series("shard 7"), [int(100), int(300)]);
            assert_eq!(series("bytes"), [int(5 << 20), int(5 << 20)]);
            let counter_tracks = tracks.values().filter(|t| t["kind"] == "counter").count();
            assert_eq!(counter_tracks, 5);
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

    // --- trace-cmd: both kinds parse; the id form prints its id ---
    match Command::new("trace-cmd").arg("report").arg(&file).output() {
        Err(e) => skip(&format!("trace-cmd not run: {e}")),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            let with = |k: &str| text.lines().filter(|l| l.contains(k)).count();
            // Inline: the run-time name's 2 values; by id: the other 10.
            assert_eq!(with(" Counter: "), 2, "{text}");
            assert_eq!(with(" CounterId: "), 10, "{text}");
            assert!(text.contains("value=300 flags=0 name=shard 7"), "{text}");
            assert!(text.contains("value=-5 flags=0 name_id="), "{text}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

//! `typhon-rec stats` (table and JSON) shows every counter the session kept, `report` ends with
//! a line naming every non-zero loss, files made before a counter existed still read (absent =
//! 0), and no string from a file reaches the terminal with its control characters (SPEC §9,
//! §10).

mod common;

use common::rec;
use std::path::{Path, PathBuf};
use typhon_recorder::codec::records::{Record, SpanExt};
use typhon_recorder::page::PageWriter;
use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-losses-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A recording of one slot, named `name`, holding a span named `span_name`, with `meta`'s
/// session counters.
fn write(path: &Path, name: &str, span_name: &'static str, session: serde_json::Value) {
    std::fs::write(path, file_with(name, span_name, session, |_| {})).unwrap();
}

/// The bytes [`write`] writes, with `edit` applied to the metadata first.
fn file_with(
    name: &str,
    span_name: &'static str,
    session: serde_json::Value,
    edit: impl FnOnce(&mut FileMeta),
) -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    let mut b = [0u8; 512];
    let r = Record::NamedSpan {
        span: SpanExt {
            duration_ns: 5,
            span_id: 1 << 56 | 1,
            parent_span_id: 0,
        },
        name: span_name,
    };
    let n = r.write(&mut b, 1, 100).unwrap();
    w.try_push(100, &b[..n]).unwrap();
    let page = w.finish().to_vec();
    let mut meta = FileMeta::new(4096);
    meta.slots.push(SlotMeta {
        slot: 1,
        name: name.into(),
        thread_id: Some(42),
        attempted: 10,
        written: 1,
        missed: 3,
    });
    meta.slots.push(SlotMeta {
        slot: 2,
        name: "idle".into(),
        ..SlotMeta::default()
    });
    meta.session = session;
    edit(&mut meta);
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat(&mut out, &meta, &mut [SlotPages::from_bytes(1, &page)]).unwrap();
    out.into_inner()
}

/// `b` with `from` (found once) replaced by `to`, of the same length.
fn patched(b: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at: Vec<usize> = (0..b.len() - from.len())
        .filter(|&i| &b[i..i + from.len()] == from.as_bytes())
        .collect();
    assert_eq!(at.len(), 1, "{from}");
    let mut v = b.to_vec();
    v[at[0]..at[0] + to.len()].copy_from_slice(to.as_bytes());
    v
}

/// Every counter of the shared metadata contract, each with a different non-zero value.
fn full_session() -> serde_json::Value {
    serde_json::json!({
        "end_ns": 1000,
        "no_slot": 4545,
        "filtered_no_slot": 11,
        "pages_lost": 12,
        "sink_errors": 13,
        "first_sink_error": "No space left on device",
        "recovered": true,
        "damaged_pages": 14,
        "torn_bytes": 15,
        "unreadable_pages": 16,
        "a_key_from_the_future": [1, 2, 3],
        "slots": [
            { "slot": 1, "filtered": 17, "refused": 18, "sink_lost": 19, "clamped": 20, "unclosed": 22,
              "thread_ids": [42], "threads": 1 },
            { "slot": 2, "refused": 21 },
        ],
    })
}

#[test]
fn stats_and_report_show_every_counter_of_the_session() {
    let d = scratch("full");
    let f = d.join("full.dat");
    write(&f, "worker", "span", full_session());
    let fs = f.to_str().unwrap();

    let (ok, out, err) = rec(&["stats", "--json", fs]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for (k, want) in [
        ("records", 1),
        ("attempted", 10),
        ("written", 1),
        ("missed", 3),
        ("refused", 39),
        ("filtered", 17),
        ("no_slot", 4545),
        ("filtered_no_slot", 11),
        ("sink_lost", 19),
        ("pages_lost", 12),
        ("sink_errors", 13),
        ("clamped", 20),
        ("unclosed", 22),
        ("recovered_damaged_pages", 14),
        ("torn_bytes", 15),
        ("unreadable_pages", 16),
        ("damaged_pages", 0),
    ] {
        assert_eq!(v[k].as_u64(), Some(want), "{k}: {v:#}");
    }
    assert_eq!(v["recovered"], true);
    assert_eq!(v["first_sink_error"], "No space left on device");
    assert_eq!(v["losses"]["no_slot"], 4545);
    let slots = v["slots"].as_array().unwrap();
    let s1 = slots.iter().find(|s| s["slot"] == 1).unwrap();
    for (k, want) in [
        ("attempted", 10),
        ("written", 1),
        ("missed", 3),
        ("refused", 18),
        ("filtered", 17),
        ("sink_lost", 19),
        ("clamped", 20),
        ("unclosed", 22),
    ] {
        assert_eq!(s1[k].as_u64(), Some(want), "slot 1 {k}");
    }
    // A slot without records but with counts is listed too.
    let s2 = slots.iter().find(|s| s["slot"] == 2).expect("slot 2");
    assert_eq!(
        (s2["records"].as_u64(), s2["refused"].as_u64()),
        (Some(0), Some(21))
    );

    let (ok, out, err) = rec(&["stats", fs]);
    assert!(ok, "{err}");
    let losses = out.lines().find(|l| l.starts_with("losses: ")).unwrap();
    for want in [
        "missed=3",
        "refused=39",
        "no_slot=4545",
        "sink_lost=19",
        "pages_lost=12",
        "sink_errors=13 (first: No space left on device)",
        "recovered_damaged_pages=14",
        "unreadable_pages=16",
        "torn_bytes=15",
        "clamped=20",
        "unclosed=22",
        "filtered=17",
        "filtered_no_slot=11",
    ] {
        assert!(losses.contains(want), "{want} in {losses}");
    }
    assert!(out.contains(", 3 missed,"), "{out}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("1  worker"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    // slot thread records missed attempted written refused filtered sink_lost clamped unclosed
    assert_eq!(
        &cols[..11],
        ["1", "worker", "1", "3", "10", "1", "18", "17", "19", "20", "22"]
    );

    let (ok, out, err) = rec(&["report", fs]);
    assert!(ok, "{err}");
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("[LOSSES: ") && last.contains("no_slot=4545"),
        "{last}"
    );
    assert!(
        last.contains("refused=39")
            && last.contains("filtered_no_slot=11")
            && last.contains("unclosed=22"),
        "{last}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn files_without_the_newer_counters_read_as_zero() {
    let d = scratch("old");
    let f = d.join("old.dat");
    // What `finish` wrote before pages_lost, sink_errors and clamped existed.
    write(
        &f,
        "worker",
        "span",
        serde_json::json!({ "end_ns": 5, "no_slot": 0, "filtered_no_slot": 0,
            "slots": [{ "slot": 1, "filtered": 0, "refused": 0, "sink_lost": 0 }] }),
    );
    let fs = f.to_str().unwrap();
    let (ok, out, err) = rec(&["stats", "--json", fs]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "pages_lost",
        "sink_errors",
        "clamped",
        "unclosed",
        "torn_bytes",
        "unreadable_pages",
    ] {
        assert_eq!(v[k].as_u64(), Some(0), "{k}");
    }
    // The metadata says 3 missed (SlotMeta): a loss, named.
    assert_eq!(v["losses"], serde_json::json!({ "missed": 3 }));
    let (ok, out, _) = rec(&["report", fs]);
    assert!(ok);
    assert_eq!(out.lines().last(), Some("[LOSSES: missed=3]"));

    // No session at all, and metadata that is not JSON: still read, nothing invented.
    write(&f, "worker", "span", serde_json::Value::Null);
    let (ok, out, err) = rec(&["stats", fs]);
    assert!(ok, "{err}");
    assert!(out.contains("losses: missed=3\n"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Every character of `s` a terminal would act on.
fn controls(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
        })
        .collect()
}

#[test]
fn strings_from_the_file_are_printed_escaped() {
    let d = scratch("esc");
    let f = d.join("esc.dat");
    // ESC sequences (retitle, clear), BEL, CR, BS, a C1 CSI, DEL and a bidi override.
    let nasty = "w\x1b]0;owned\x07\x1b[2J\r\x08\u{9b}31m\x7f\u{202e}x";
    let span: &'static str = "s\x1b[31mred\u{2066}\r";
    let mut session = full_session();
    session["first_sink_error"] = "disk\x1b[2Jfull\u{9b}".into();
    write(&f, nasty, span, session);
    let fs = f.to_str().unwrap();
    for args in [
        &["report", fs][..],
        &["stats", fs],
        &["stats", "--json", fs],
    ] {
        let (ok, out, err) = rec(args);
        assert!(ok, "{args:?}: {err}");
        assert_eq!(controls(&out), [], "{args:?}: {out:?}");
        assert_eq!(controls(&err), [], "{args:?}: {err:?}");
    }
    let (_, out, _) = rec(&["report", fs]);
    // The cmdline lost its control characters when written (`?`); the span name keeps them,
    // shown as escapes.
    assert!(out.contains(r"name=s\x1b[31mred\u{2066}\r"), "{out}");
    assert!(out.contains(r"(first: disk\x1b[2Jfull\u{9b})"), "{out}");
    // JSON keeps the data: it reads back as the same strings.
    let (_, out, _) = rec(&["stats", "--json", fs]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["first_sink_error"], "disk\x1b[2Jfull\u{9b}");

    // A file name with escapes in an error message.
    let bad = d.join("bad\x1b[2J\u{9b}.dat");
    std::fs::write(&bad, b"not a trace").unwrap();
    let (ok, _, err) = rec(&["stats", bad.to_str().unwrap()]);
    assert!(!ok);
    assert_eq!(controls(&err), [], "{err:?}");
    assert!(err.contains(r"bad\x1b[2J\u{9b}.dat"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Sums of counters saturate at 2^64 - 1 and say so: two slots refusing 2^63 writes each (and
/// attempting as many) read as "refused=18446744073709551615 (saturated)", the JSON lists the
/// saturated sums, and the reading ends with status 1 naming the file and the counters.
/// (Before: the sums wrapped to 0 in a release build, "losses: none" for refused.)
#[test]
fn counter_sums_that_overflow_saturate_and_are_flagged() {
    let d = scratch("saturate");
    let f = d.join("huge.dat");
    let half = 1u64 << 63;
    let session = serde_json::json!({
        "slots": [{ "slot": 1, "refused": half }, { "slot": 2, "refused": half }],
    });
    let b = file_with("worker", "span", session, |m| {
        for s in &mut m.slots {
            s.attempted = half;
        }
        m.wall_anchor_ns = 1_700_000_000_000_000_000;
        m.mono_anchor_ns = 50;
    });
    std::fs::write(&f, b).unwrap();
    let fs = f.to_str().unwrap();
    let (ok, out, err) = rec(&["stats", "--json", fs]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("huge.dat")
            && err.contains("cannot be right")
            && err.contains("attempted, refused saturated"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["refused"].as_u64(), Some(u64::MAX));
    assert_eq!(v["attempted"].as_u64(), Some(u64::MAX));
    assert_eq!(v["losses"]["refused"].as_u64(), Some(u64::MAX));
    assert_eq!(v["saturated"], serde_json::json!(["attempted", "refused"]));
    let (ok, out, err) = rec(&["stats", fs]);
    assert!(!ok && err.contains("saturated"), "{err}");
    let losses = out.lines().find(|l| l.starts_with("losses: ")).unwrap();
    assert!(
        losses.contains("refused=18446744073709551615 (saturated)"),
        "{losses}"
    );
    let (ok, out, err) = rec(&["report", fs]);
    assert!(
        !ok && err.contains("huge.dat") && err.contains("saturated"),
        "{err}"
    );
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("[LOSSES: missed=3 refused=18446744073709551615 (saturated)]"),
        "{last}"
    );
    let (ok, out, _) = rec(&["report", "--json", fs]);
    assert!(!ok);
    let end: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(end["losses"]["refused"].as_u64(), Some(u64::MAX));
    assert!(
        end["counters_error"]
            .as_str()
            .unwrap()
            .contains("saturated"),
        "{end}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A counter that is not a count, a clock anchor of the wrong type and a missing (renamed)
/// anchor are named with the file and the field: counters end the reading with status 1 (the
/// output stands, each read as 0), an anchor is a warning (times are then relative).
/// (Before: each read as 0 without a word.)
#[test]
fn malformed_counters_and_anchors_are_named() {
    let d = scratch("malformed");
    let f = d.join("odd.dat");
    let fs = f.to_str().unwrap();
    let anchors = |m: &mut FileMeta| {
        m.wall_anchor_ns = 17;
        m.mono_anchor_ns = 50;
    };
    // Sound: no warning, status 0.
    std::fs::write(
        &f,
        file_with("worker", "span", serde_json::json!({}), anchors),
    )
    .unwrap();
    let (ok, _, err) = rec(&["stats", fs]);
    assert!(ok && err.is_empty(), "{err}");
    let session = serde_json::json!({
        "pages_lost": -4,
        "slots": [{ "slot": 1, "refused": "lots" }],
    });
    std::fs::write(&f, file_with("worker", "span", session, anchors)).unwrap();
    for cmd in ["stats", "report"] {
        let (ok, _, err) = rec(&[cmd, fs]);
        assert!(!ok, "{cmd}");
        assert!(
            err.contains("odd.dat: the file's counters cannot be right")
                && err.contains("session.pages_lost is -4, not a count")
                && err.contains("session.slots[0].refused is \"lots\", not a count"),
            "{cmd}: {err}"
        );
    }
    let (_, out, _) = rec(&["stats", "--json", fs]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata_problems"].as_array().unwrap().len(), 2, "{v:#}");
    // An anchor of the wrong type: the metadata does not read back; both the counters' end
    // and a warning name the field.
    let good = file_with("worker", "span", serde_json::json!({}), anchors);
    std::fs::write(
        &f,
        patched(&good, "\"wall_anchor_ns\":17", "\"wall_anchor_ns\":\"\""),
    )
    .unwrap();
    let (ok, _, err) = rec(&["stats", fs]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("warning: ") && err.contains("odd.dat") && err.contains("wall_anchor_ns"),
        "{err}"
    );
    // A renamed anchor key: the anchor is missing, which is a warning; the counting stands.
    std::fs::write(
        &f,
        patched(&good, "\"mono_anchor_ns\"", "\"mono_anchor_nz\""),
    )
    .unwrap();
    for cmd in ["stats", "report"] {
        let (ok, _, err) = rec(&[cmd, fs]);
        assert!(ok, "{cmd}: {err}");
        assert!(
            err.contains("warning: ")
                && err.contains("odd.dat")
                && err.contains("no clock anchor (mono_anchor_ns is 0"),
            "{cmd}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

//! Interoperability: files written by `write_tracedat` from `PageWriter` pages holding records
//! of every kind must print fully in `trace-cmd report`, and our reader must agree with it, also
//! on the version 7 file `trace-cmd convert` makes from ours.
//!
//! Skips (with a printed reason) when trace-cmd is not installed, unless
//! `TYPHON_REQUIRE_INTEROP=1`, which turns the skip into a failure.

mod tracedat_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use tracedat_support::*;
use typhon_recorder::codec::kind_def;
use typhon_trace::tracedat::*;

const PAGE: usize = 4096;

fn trace_cmd_available() -> bool {
    let ok = Command::new("trace-cmd")
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("trace-cmd version"))
        .unwrap_or(false);
    if !ok {
        if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
            panic!("trace-cmd is not installed but TYPHON_REQUIRE_INTEROP=1");
        }
        eprintln!("SKIPPED: trace-cmd is not installed (set TYPHON_REQUIRE_INTEROP=1 to fail)");
    }
    ok
}

fn tmp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("typhon-tracedat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

struct Sample {
    /// Every record in the order a time-ordered merge gives (ties: lower slot first).
    recs: Vec<Built>,
    /// (slot, missed count) per page with a count, in slot then page order.
    drops: Vec<(u8, u64)>,
    meta: FileMeta,
}

/// Writes the sample file: slots 0, 1 and 3 (CPU 2 empty), every kind, long records, a gap of
/// 2^28 ns, missed counts on three pages.
fn write_sample(path: &Path) -> Sample {
    let plans = [
        SlotPlan {
            slot: 0,
            start: 1_000_000_000,
            rounds: 3,
            gap: 1 << 28,
            missed: vec![],
        },
        SlotPlan {
            slot: 1,
            start: 1_000_000_500,
            rounds: 12,
            gap: 1 << 28,
            missed: vec![(1, 17), (2, 3)],
        },
        SlotPlan {
            slot: 3,
            start: 1_000_000_250,
            rounds: 8,
            gap: (1 << 27) + 12_345,
            missed: vec![(1, 5)],
        },
    ];
    let names = ["typhon-recorder", "render main", "", "worker-3"];
    let mut meta = FileMeta::new(PAGE as u32);
    meta.wall_anchor_ns = 1_750_000_000_123_456_789;
    meta.mono_anchor_ns = 999_000_000;
    meta.session = serde_json::json!({ "app": "interop-test" });
    let mut all = Vec::new();
    let mut drops = Vec::new();
    let mut page_data = Vec::new();
    for p in &plans {
        let (recs, pages, missed) = pack(p, PAGE);
        let need = p.missed.iter().map(|&(i, _)| i + 1).max().unwrap_or(1);
        assert!(
            pages.len() / PAGE >= need,
            "slot {} has too few pages",
            p.slot
        );
        let total_missed: u64 = missed.iter().sum();
        for &m in missed.iter().filter(|&&m| m > 0) {
            drops.push((p.slot, m));
        }
        meta.slots.push(SlotMeta {
            slot: p.slot,
            name: names[p.slot as usize].into(),
            thread_id: Some(1000 + i64::from(p.slot)),
            attempted: recs.len() as u64 + total_missed,
            written: recs.len() as u64,
            missed: total_missed,
        });
        all.extend(recs);
        page_data.push((p.slot, pages));
    }
    assert_eq!(drops.len(), 3, "every planned missed count is on a page");
    let mut slot_pages: Vec<SlotPages<'_>> = page_data
        .iter()
        .map(|(s, p)| SlotPages::from_bytes(*s, p))
        .collect();
    let f = std::fs::File::create(path).unwrap();
    write_tracedat(f, &meta, &mut slot_pages).unwrap();
    // Merge order: by page time, ties to the lower slot, each slot's order kept (stable sort of
    // the slot-ordered concatenation).
    all.sort_by_key(|r| (r.page_ts, r.slot));
    Sample {
        recs: all,
        drops,
        meta,
    }
}

/// One parsed `trace-cmd report` line.
#[derive(Debug)]
enum Line {
    Record {
        comm: String,
        pid: i64,
        cpu: u32,
        ts: String,
        event: String,
        fields: String,
    },
    Dropped {
        cpu: u32,
        count: Option<u64>,
    },
    Other(String),
}

fn parse_line(l: &str) -> Line {
    if let Some(rest) = l.strip_prefix("CPU:") {
        if let Some((cpu, tail)) = rest.split_once(' ') {
            let count = tail
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(" EVENTS DROPPED]"))
                .and_then(|n| n.parse().ok());
            return Line::Dropped {
                cpu: cpu.parse().unwrap(),
                count,
            };
        }
    }
    // "<comm>-<pid> [CPU] <ts>: <event>: <fields>"; comm may hold spaces.
    let Some(open) = l.find(" [") else {
        return Line::Other(l.into());
    };
    let Some(close) = l[open..].find("] ").map(|c| c + open) else {
        return Line::Other(l.into());
    };
    let Ok(cpu) = l[open + 2..close].parse() else {
        return Line::Other(l.into());
    };
    let (comm, pid) = l[..open].trim().rsplit_once('-').unwrap();
    let rest = l[close + 1..].trim_start();
    let (ts, rest) = rest.split_once(": ").unwrap();
    let (event, fields) = rest.split_once(':').unwrap();
    Line::Record {
        comm: comm.into(),
        pid: pid.parse().unwrap(),
        cpu,
        ts: ts.into(),
        event: event.into(),
        fields: fields.trim().into(),
    }
}

fn report(args: &[&str], path: &Path) -> (String, String) {
    let out = Command::new("trace-cmd")
        .arg("report")
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "trace-cmd report failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ns_of(ts: &str) -> u64 {
    let (s, frac) = ts.split_once('.').unwrap();
    assert_eq!(frac.len(), 9, "-t prints nanoseconds: {ts}");
    s.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap()
}

/// Checks a `trace-cmd report -t` output against the sample.
fn check_report(stdout: &str, s: &Sample) {
    assert!(!stdout.contains("[FAILED TO PARSE]"), "{stdout}");
    assert!(!stdout.contains("[UNKNOWN EVENT]"), "{stdout}");
    let lines: Vec<Line> = stdout.lines().map(parse_line).collect();
    let mut recs = s.recs.iter();
    let mut drops_seen = Vec::new();
    let mut pending_drop: Option<u32> = None;
    let mut n = 0;
    for l in &lines {
        match l {
            Line::Record {
                comm,
                pid,
                cpu,
                ts,
                event,
                fields,
            } => {
                let b = recs.next().expect("more report lines than records");
                n += 1;
                assert_eq!(*cpu, u32::from(b.slot), "line {n}: {l:?}");
                assert_eq!(*pid, i64::from(b.slot), "common_pid is the slot");
                let name = &s.meta.slots.iter().find(|m| m.slot == b.slot).unwrap().name;
                if b.slot == 0 {
                    // libtraceevent names pid 0 "<idle>" whatever the cmdlines say.
                    assert_eq!(comm, "<idle>");
                } else if name.is_empty() {
                    assert_eq!(comm, "<...>");
                } else {
                    assert_eq!(comm, name, "thread name from cmdlines");
                }
                assert_eq!(ns_of(ts), b.page_ts, "timestamp of {event}");
                assert_eq!(event, kind_def(b.kind).unwrap().name);
                assert_eq!(fields, &b.expect.join(" "), "every field of {event}");
                if let Some(c) = pending_drop.take() {
                    assert_eq!(c, *cpu, "drop line precedes a record of its CPU");
                }
            }
            Line::Dropped { cpu, count } => {
                drops_seen.push((*cpu as u8, count.expect("a counted drop")));
                pending_drop = Some(*cpu);
            }
            Line::Other(o) => assert!(o.starts_with("cpus="), "unexpected line {o:?}"),
        }
    }
    assert!(recs.next().is_none(), "report has fewer lines than records");
    let mut want = s.drops.clone();
    want.sort();
    drops_seen.sort();
    assert_eq!(drops_seen, want, "one DROPPED line per page with a count");
    assert!(
        stdout.starts_with("cpus=4\n"),
        "CPU count = highest slot + 1"
    );
}

/// Checks our reader on a file with the sample's content.
fn check_reader(f: &TraceFile, s: &Sample) {
    assert_eq!(f.cpus(), 4);
    assert_eq!(f.page_size(), PAGE as u32);
    assert_eq!(f.clock(), Some("mono"));
    assert_eq!(f.cmdline(1), Some("render main"));
    assert_eq!(f.cmdline(2), None);
    assert_eq!(f.cpu_data(2).unwrap().1, 0);
    let mut drops = Vec::new();
    let mut n = 0;
    for (r, b) in f.records().zip(&s.recs) {
        let r = r.unwrap();
        n += 1;
        assert_eq!((r.cpu, r.ts), (u32::from(b.slot), b.page_ts));
        let padded = b.bytes.len().div_ceil(4) * 4;
        assert_eq!(r.data.len(), padded);
        assert_eq!(&r.data[..b.bytes.len()], &b.bytes[..]);
        assert!(r.data[b.bytes.len()..].iter().all(|&x| x == 0));
        assert_eq!(
            f.event_of(r.data).unwrap().name,
            kind_def(b.kind).unwrap().name
        );
        if let Some(m) = r.missed_before {
            drops.push((r.cpu as u8, m as u64));
        }
    }
    assert_eq!(n, s.recs.len());
    assert_eq!(f.records().count(), s.recs.len());
    drops.sort();
    let mut want = s.drops.clone();
    want.sort();
    assert_eq!(drops, want);
}

#[test]
fn trace_cmd_reports_every_record_and_field() {
    let path = tmp_path("sample-v6.dat");
    let s = write_sample(&path);
    let f = TraceFile::open(&path).unwrap();
    check_reader(&f, &s);
    assert_eq!(f.version(), 6);
    assert_eq!(f.typhon_meta().unwrap().unwrap(), s.meta);
    if !trace_cmd_available() {
        return;
    }
    let (out, err) = report(&["-t"], &path);
    assert!(!err.contains("rror"), "{err}");
    check_report(&out, &s);
    // Default output (sec.usec) prints the same number of lines.
    let (out_us, _) = report(&[], &path);
    assert_eq!(out_us.lines().count(), out.lines().count());
    let first = out_us.lines().nth(1).unwrap();
    assert!(first.contains(" 1.000000: "), "{first}");
    std::fs::remove_file(&path).ok();
    std::fs::remove_dir(path.parent().unwrap()).ok();
}

#[test]
fn reads_the_v7_file_trace_cmd_converts_ours_to() {
    if !trace_cmd_available() {
        return;
    }
    let v6 = tmp_path("conv-v6.dat");
    let v7 = tmp_path("conv-v7.dat");
    let v7z = tmp_path("conv-v7z.dat");
    let s = write_sample(&v6);
    for (out, comp) in [(&v7, "none"), (&v7z, "any")] {
        let st = Command::new("trace-cmd")
            .args([
                "convert",
                "--file-version",
                "7",
                "--compression",
                comp,
                "-i",
            ])
            .arg(&v6)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap();
        assert!(st.status.success(), "trace-cmd convert failed: {st:?}");
    }
    let f = TraceFile::open(&v7).unwrap();
    assert_eq!(f.version(), 7);
    check_reader(&f, &s);
    // trace-cmd copies options it does not know: our metadata survives conversion.
    match f.typhon_meta() {
        Some(m) => assert_eq!(m.unwrap(), s.meta),
        None => eprintln!("note: trace-cmd convert dropped the metadata option"),
    }
    let (out, _) = report(&["-t"], &v7);
    check_report(&out, &s);
    // trace-cmd's own zstd file (3.1.6 leaves the chunk count out of each CPU's size): the
    // streaming reader decompresses it chunk by chunk into the very records of the v6 file.
    let z = TraceFile::open_streaming(&v7z).unwrap();
    assert_eq!((z.version(), z.compression()), (7, Some("zstd")));
    let plain = TraceFile::open_streaming(&v6).unwrap();
    let recs = |f: &TraceFile| -> Vec<(u32, u64, Vec<u8>)> {
        f.stream_records()
            .map(|r| {
                let r = r.unwrap();
                (r.cpu, r.ts, r.data)
            })
            .collect()
    };
    let want = recs(&plain);
    assert!(!want.is_empty());
    assert_eq!(recs(&z), want, "trace-cmd's zstd file reads differently");
    for p in [&v6, &v7, &v7z] {
        std::fs::remove_file(p).ok();
    }
    std::fs::remove_dir(v6.parent().unwrap()).ok();
}

//! Recordings made through the whole pipeline (threads → rings → flusher → file sink →
//! trace.dat) read by independent readers: `trace-cmd report` and libtraceevent's kbuffer (a C
//! program built here) must agree with the project's readers record for record.
//!
//! Skips (saying why) when trace-cmd / cc / libtraceevent are absent; fails instead with
//! `TYPHON_REQUIRE_INTEROP=1`, which `.ci/run` sets after installing them.

mod common;

use std::process::Command;
use std::time::Duration;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::{doc_lock, RecorderBuilder, Stats, ThreadKind};
use typhon_trace::kbuffer::{Endian, LongSize};
use typhon_trace::tracedat::TraceFile;

fn require() -> bool {
    std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1")
}

/// Records a workload with drops (small rings, bursts), long records and long gaps.
fn record(path: &std::path::Path) -> Stats {
    let rec = RecorderBuilder::new()
        .output(path)
        .ring_bytes(4096)
        .flush_interval(Duration::from_millis(5))
        .start()
        .unwrap();
    let t0 = rec.now();
    let late = rec.ns_to_ticks(rec.clock().to_ns(t0) + 400_000_000);
    let hs: Vec<_> = (0..3u32)
        .map(|t| {
            std::thread::spawn(move || {
                typhon_recorder::set_thread_info(&format!("burst-{t}"), ThreadKind::Worker);
                for i in 0..60_000u32 {
                    typhon_recorder::ingress_received(t, i as u16, 0, 64);
                    if i % 97 == 0 {
                        let _s = typhon_recorder::span(
                            "a-span-name-long-enough-to-need-the-long-record-form-of-the-page-format-xx",
                        );
                        typhon_recorder::celog_data(true, CELID_USER, &i.to_le_bytes(), 0, CELZONE_MISC, 1, true)
                            .unwrap();
                    }
                    if i % 5000 == 0 {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
                typhon_recorder::instant_at(late + t as u64, 1, 2); // a > 2^27 ns gap
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    rec.finish().unwrap()
}

#[test]
fn trace_cmd_and_libtraceevent_agree_with_our_readers() {
    let _g = doc_lock();
    let dir = common::scratch_dir("recording-interop");
    let path = dir.join("rec.dat");
    let stats = record(&path);
    assert!(stats.total_missed() > 0, "the workload must drop records");

    // Our reader: the file holds exactly what the stats say, slot by slot.
    let f = TraceFile::open(&path).unwrap();
    let mut per_slot = vec![(0u64, 0u64); f.cpus() as usize];
    let mut drop_pages = 0;
    for r in f.records() {
        let r = r.unwrap();
        per_slot[r.cpu as usize].0 += 1;
        if let Some(m) = r.missed_before {
            assert!(m > 0, "every missed count is stored");
            per_slot[r.cpu as usize].1 += m as u64;
            drop_pages += 1;
        }
    }
    for s in &stats.slots {
        assert_eq!(
            per_slot[s.slot as usize],
            (s.written, s.missed),
            "slot {}",
            s.slot
        );
        assert_eq!(s.attempted, s.written + s.missed);
    }
    let total: u64 = per_slot.iter().map(|p| p.0).sum();

    // trace-cmd report: one line per record, every field parsed, a drop line per gap page.
    match Command::new("trace-cmd").arg("report").arg(&path).output() {
        Err(e) if !require() => eprintln!("SKIPPED: trace-cmd not run: {e}"),
        Err(e) => panic!("TYPHON_REQUIRE_INTEROP=1 but trace-cmd cannot run: {e}"),
        Ok(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!text.contains("FAILED TO PARSE"));
            assert!(!text.contains("UNKNOWN EVENT"));
            let drops = text
                .lines()
                .filter(|l| l.contains("EVENTS DROPPED]"))
                .count();
            assert_eq!(drops, drop_pages);
            let counted: u64 = text
                .lines()
                .filter_map(|l| l.split(" [").nth(1))
                .filter_map(|l| l.strip_suffix(" EVENTS DROPPED]"))
                .map(|n| n.parse::<u64>().unwrap())
                .sum();
            assert_eq!(counted, stats.total_missed());
            let records = text
                .lines()
                .filter(|l| !l.starts_with("cpus=") && !l.contains("EVENTS DROPPED]"))
                .count() as u64;
            assert_eq!(records, total, "trace-cmd lists every record");
            for name in ["burst-0", "burst-1", "burst-2"] {
                assert!(text.contains(name), "thread name {name} from cmdlines");
            }
        }
    }

    // libtraceevent's kbuffer on every page of every slot agrees with ours on ts, sizes,
    // offsets, indices and missed counts for every record.
    if let Some(exe) = common::build_c("kbuffer_pages.c", &dir) {
        for cpu in 0..f.cpus() {
            let pages: Vec<&[u8]> = f.pages(cpu).collect();
            if pages.is_empty() {
                continue;
            }
            let file = dir.join(format!("slot{cpu}.pages"));
            std::fs::write(&file, pages.concat()).unwrap();
            let out = Command::new(&exe)
                .arg(f.page_size().to_string())
                .args(["8", "l"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(out.status.success());
            let c = String::from_utf8(out.stdout).unwrap();
            let mut rust = String::new();
            for (n, p) in pages.iter().enumerate() {
                common::dump_page(&mut rust, n, p, LongSize::Eight, Endian::Little);
            }
            assert_eq!(c, rust, "slot {cpu}: libtraceevent and KBuffer differ");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `trace-cmd report` prints every CeLog event's CEL_HEADER_V3 decoded (id by name where CeLog
/// names it, the real id and flag of a flagged event, CPU, timestamp, payload length), as our
/// own decoder reads the same bytes: the print format's arithmetic is checked on real records.
#[test]
fn trace_cmd_prints_celog_headers_decoded() {
    use typhon_recorder::codec::celog::{decode_event, CELID_RAW_WCHAR};
    let _g = doc_lock();
    let dir = common::scratch_dir("celog-print");
    let path = dir.join("celog.dat");
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    std::thread::spawn(|| {
        let wide: Vec<u8> = "hi\0".encode_utf16().flat_map(u16::to_le_bytes).collect();
        for i in 0..50u16 {
            let (ts, flagged) = (i % 2 == 0, i % 3 == 0);
            let id = if i % 5 == 0 {
                CELID_RAW_WCHAR
            } else {
                CELID_USER + i
            };
            let data = if id == CELID_RAW_WCHAR {
                &wide[..]
            } else {
                &i.to_le_bytes()[..]
            };
            typhon_recorder::celog_data(ts, id, data, 0, CELZONE_MISC, 7 * i, flagged).unwrap();
        }
    })
    .join()
    .unwrap();
    rec.finish().unwrap();

    let name = |id: u16| match id {
        0x1ffe => "SYNC_END".to_string(),
        0x1fff => "LOG_MARKER".to_string(),
        74 => "RAW_WCHAR".to_string(),
        other => format!("0x{other:x}"),
    };
    let mut ours = Vec::new();
    for r in TraceFile::open(&path).unwrap().records() {
        let r = r.unwrap();
        if r.data[2] != 255 {
            continue;
        }
        let (ev, _) = decode_event(&r.data[12..]).unwrap();
        ours.push(format!(
            "id={} flag={} cpu={} ts={} len={}",
            name(ev.id),
            ev.flag.unwrap_or(0),
            ev.cpu,
            ev.timestamp.unwrap_or(0),
            ev.data.len()
        ));
    }
    assert_eq!(
        ours.len(),
        52,
        "50 events and the session's marker and sync end"
    );
    match Command::new("trace-cmd").arg("report").arg(&path).output() {
        Err(e) if !require() => eprintln!("SKIPPED: trace-cmd not run: {e}"),
        Err(e) => panic!("TYPHON_REQUIRE_INTEROP=1 but trace-cmd cannot run: {e}"),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            let mut theirs: Vec<String> = text
                .lines()
                .filter(|l| l.contains(" CeLog: "))
                .filter_map(|l| {
                    let from = l.find(" id=")? + 1;
                    let to = l.find(" event=")?;
                    Some(l[from..to].to_string())
                })
                .collect();
            ours.sort();
            theirs.sort();
            assert_eq!(theirs, ours);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

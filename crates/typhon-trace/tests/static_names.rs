//! Static names written once per slot (SPEC §15): the new records' bytes, a recording that reads
//! as one made before (a file of that format is kept in `tests/data/static-names-v1.dat`, with
//! what it read as then in `static-names-v1.txt`), in fewer bytes, a slot with more names than
//! its table holds, a reused slot read from its new thread's first record, the restating hook,
//! the exports and `trace-cmd report`.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::codec::records::{self, Record, SpanExt};
use typhon_recorder::codec::TraceEventKind as K;
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::defs::Definitions;
use typhon_trace::export::{self, Format};
use typhon_trace::tracedat::{OwnedRecord, TraceFile};

/// The program `static-names-v1.dat` was recorded from (before static names were
/// definitions), as it was: two threads, one after the other (the second may reuse the first's
/// slot), each with static and run-time span names, named instants and phases.
fn program() {
    for t in 0..2u32 {
        std::thread::spawn(move || {
            typhon_recorder::set_thread_info(
                &format!("worker-{t}"),
                typhon_recorder::ThreadKind::Worker,
            );
            (0..3).for_each(frame);
        })
        .join()
        .unwrap();
    }
}

/// One frame of [`program`]'s threads.
fn frame(i: i32) {
    let _frame = typhon_recorder::span!("frame");
    {
        let _p = typhon_recorder::span_static("physics");
        typhon_recorder::instant!("collision", i);
    }
    {
        let _l = typhon_recorder::span(&format!("load level {i}"));
        typhon_recorder::named_instant(&format!("loaded {i}"), i);
    }
    {
        let _u = typhon_recorder::phase(1, "update");
    }
    typhon_recorder::named_phase_start(2, "render");
    typhon_recorder::named_phase_end(2, "render");
}

/// Bytes of the records of named things in `recs` (their size fields: no padding), with the
/// definitions or without.
fn named_bytes(recs: &[OwnedRecord], definitions: bool) -> usize {
    let named = [241, 242, 243, 246, 229, 230, 231, 232];
    recs.iter()
        .filter(|r| named.contains(&r.data[2]) || (definitions && r.data[2] == 228))
        .map(|r| usize::from(u16::from_le_bytes([r.data[0], r.data[1]])))
        .sum()
}

/// Every record of `path` as the readers see it (resolved), one line each, in stream order.
fn listing(path: &Path) -> String {
    let f = TraceFile::open(path).unwrap();
    let mut out = String::new();
    for r in f.stream_records() {
        let r = r.unwrap();
        let (h, body) = records::decode(&r.data).unwrap();
        writeln!(out, "{} {} {:?}", h.slot, h.timestamp, body).unwrap();
    }
    out
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn require() -> bool {
    std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1")
}

/// What a recording of [`program`] reads as, times, ids and slots left out (the second thread
/// reuses the first one's slot or not, as the flusher's timing has it): each record's kind and
/// body, spans by name, in stream order (definitions left out: they are no event).
fn seen(path: &Path) -> Vec<String> {
    let f = TraceFile::open(path).unwrap();
    let mut out = Vec::new();
    for r in f.stream_records() {
        let r = r.unwrap();
        let (_, body) = records::decode(&r.data).unwrap();
        let line = match body {
            Record::NamedSpan { name, .. } => format!("span {name}"),
            Record::ThreadInfo { name, .. } => format!("thread {name}"),
            // Definitions, the session header and the clock-sync (SPEC §16, which came after
            // the fixture) are the file's bookkeeping, not the program's records.
            Record::NameDefinition { .. } | Record::CeLog(_) | Record::ClockSync { .. } => continue,
            b => format!("{b:?}"),
        };
        out.push(line);
    }
    out
}

/// Every record of `path` as written (not resolved), slot by slot.
fn raw(path: &Path) -> Vec<OwnedRecord> {
    let f = TraceFile::open(path).unwrap();
    (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap()).collect::<Vec<_>>())
        .collect()
}

fn count(recs: &[OwnedRecord], kind: K) -> usize {
    recs.iter().filter(|r| r.data[2] == kind.0).count()
}

fn record(path: &Path, f: impl FnOnce()) -> typhon_recorder::Stats {
    let rec = RecorderBuilder::new().output(path).start().unwrap();
    f();
    rec.finish().unwrap()
}

/// The new kinds' bytes, as SPEC §2 lays them out.
#[test]
fn golden_bytes_of_the_static_name_records() {
    let mut d = [0u8; 64];
    let n = records::write_name_definition(&mut d, 3, 0x0102, 7, "ab").unwrap();
    assert_eq!(
        d[..n],
        [19, 0, 228, 3, 2, 1, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, b'a', b'b', 0]
    );
    let span = SpanExt {
        duration_ns: 5,
        span_id: (3 << 56) | 9,
        parent_span_id: 0x11,
    };
    let n = records::write_named_span_id(&mut d, 3, 0x0102, &span, 7).unwrap();
    let mut want = vec![41, 0, 229, 3, 2, 1, 0, 0, 0, 0, 0, 0];
    want.extend(5i64.to_le_bytes());
    want.extend(((3u64 << 56) | 9).to_le_bytes());
    want.extend(0x11u64.to_le_bytes());
    want.extend([0, 7, 0, 0, 0]);
    assert_eq!(d[..n], want[..]);
    let n = records::write_named_instant_id(&mut d, 3, 0x0102, -2, 7).unwrap();
    assert_eq!(
        d[..n],
        [20, 0, 230, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF, 7, 0, 0, 0]
    );
    for (start, kind) in [(true, 231u8), (false, 232)] {
        let n = records::write_named_phase_id(&mut d, 3, 0x0102, start, 4, 7).unwrap();
        assert_eq!(
            d[..n],
            [17, 0, kind, 3, 2, 1, 0, 0, 0, 0, 0, 0, 4, 7, 0, 0, 0]
        );
    }
    // Each resolves, against its slot's definition, to the inline record it stands for.
    let mut defs = Definitions::default();
    let n = records::write_name_definition(&mut d, 3, 0, 7, "physics").unwrap();
    assert!(defs.learn(&d[..n]));
    let n = records::write_named_span_id(&mut d, 3, 10, &span, 7).unwrap();
    let out = defs.resolve(&d[..n]).unwrap();
    assert_eq!(out.len() % 4, 0);
    assert_eq!(
        records::decode(&out).unwrap().1,
        Record::NamedSpan {
            span,
            name: "physics"
        }
    );
    let n = records::write_named_phase_id(&mut d, 3, 10, false, 4, 7).unwrap();
    assert_eq!(
        records::decode(&defs.resolve(&d[..n]).unwrap()).unwrap().1,
        Record::NamedPhaseEnd {
            phase: 4,
            name: "physics"
        }
    );
    // Another slot's id 7 is not this name.
    let n = records::write_named_instant_id(&mut d, 4, 10, 1, 7).unwrap();
    assert_eq!(
        records::decode(&defs.resolve(&d[..n]).unwrap()).unwrap().1,
        Record::NamedInstant {
            payload: 1,
            name: "name#7"
        }
    );
    assert_eq!(defs.unresolved, 1);
}

#[test]
fn a_file_from_before_static_names_reads_as_it_did() {
    let want = std::fs::read_to_string(data("static-names-v1.txt")).unwrap();
    assert_eq!(listing(&data("static-names-v1.dat")), want);
}

#[test]
fn a_recording_with_static_names_reads_as_one_without_in_fewer_bytes() {
    let _g = doc_lock();
    let dir = common::scratch_dir("static-names-same");
    let dat = dir.join("new.dat");
    record(&dat, program);
    let old = data("static-names-v1.dat");
    assert_eq!(seen(&dat), seen(&old));
    let (new_raw, old_raw) = (raw(&dat), raw(&old));
    // 4 static names (frame, physics, collision, update) defined by each of the 2 threads
    // (the second, on the same slot or not, defines them again); the run-time names inline.
    assert_eq!(count(&new_raw, K::NAME_DEFINITION), 8);
    assert_eq!(count(&new_raw, K::NAMED_SPAN_ID), 12);
    assert_eq!(count(&new_raw, K::NAMED_SPAN), 6);
    assert_eq!(count(&new_raw, K::NAMED_INSTANT_ID), 6);
    assert_eq!(count(&new_raw, K::NAMED_INSTANT), 6);
    assert_eq!(count(&new_raw, K::NAMED_PHASE_START_ID), 6);
    assert_eq!(count(&new_raw, K::NAMED_PHASE_END_ID), 6);
    // `named_phase_start(2, "render")` takes a `&str`: inline, as before.
    assert_eq!(count(&new_raw, K::NAMED_PHASE_START), 6);
    // Resolved, the records are those of before, byte for byte in size.
    let resolved: Vec<OwnedRecord> = TraceFile::open(&dat)
        .unwrap()
        .stream_records()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(named_bytes(&resolved, false), named_bytes(&old_raw, false));
    // A thread that runs longer than the program's 3 frames writes fewer bytes than inline
    // names would take: the definitions are written once.
    let long = dir.join("long.dat");
    record(&long, || {
        std::thread::spawn(|| (0..50).for_each(frame))
            .join()
            .unwrap()
    });
    let long_raw = raw(&long);
    let long_resolved: Vec<OwnedRecord> = TraceFile::open(&long)
        .unwrap()
        .stream_records()
        .map(|r| r.unwrap())
        .collect();
    let (new, inline) = (
        named_bytes(&long_raw, true),
        named_bytes(&long_resolved, false),
    );
    assert!(new < inline, "{new} B against {inline} B inline");
    // The exports show the same events under the same names.
    let events = |path: &Path| -> Vec<String> {
        let f = TraceFile::open(path).unwrap();
        let mut out = Vec::new();
        export::export(&f, Format::Chrome, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let mut e: Vec<String> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] != "M")
            .map(|e| format!("{} {}", e["ph"], e["name"]))
            .collect();
        e.sort();
        e
    };
    let (new_events, old_events) = (events(&dat), events(&old));
    assert_eq!(new_events, old_events);
    assert!(new_events.iter().any(|e| e.contains("physics")));
    assert!(!new_events.iter().any(|e| e.contains("name#")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A thread that takes over a slot writes the definitions it uses again: a reader that starts
/// at the new thread's first record resolves every record from there with what follows.
#[test]
fn a_reused_slot_restates_its_names_for_its_new_thread() {
    let _g = doc_lock();
    let dir = common::scratch_dir("static-names-reuse");
    let dat = dir.join("reuse.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let run = || {
        std::thread::spawn(|| {
            drop(typhon_recorder::span_static("frame"));
            typhon_recorder::instant!("hit", 1);
        })
        .join()
        .unwrap();
    };
    run();
    // The slot is free again once the flusher has drained its retired thread.
    rec.drain();
    rec.drain();
    run();
    rec.finish().unwrap();
    let f = TraceFile::open(&dat).unwrap();
    let slot: Vec<OwnedRecord> = f.stream_cpu(1).map(|r| r.unwrap()).collect();
    let infos: Vec<usize> = (0..slot.len())
        .filter(|&i| slot[i].data[2] == K::THREAD_INFO.0)
        .collect();
    assert_eq!(infos.len(), 2, "both threads took slot 1");
    let mut defs = Definitions::default();
    let mut names = Vec::new();
    for r in &slot[infos[1]..] {
        if defs.learn(&r.data) {
            continue;
        }
        if let Some(d) = defs.resolve(&r.data) {
            names.push(format!("{:?}", records::decode(&d).unwrap().1));
        }
    }
    assert_eq!(defs.unresolved, 0);
    assert_eq!(names.len(), 2);
    assert!(
        names[0].contains("\"frame\"") && names[1].contains("\"hit\""),
        "{names:?}"
    );
    // The same ids as the first thread's: a slot's ids keep their meaning all recording long.
    let ids = |rs: &[OwnedRecord]| -> Vec<u32> {
        rs.iter()
            .filter(|r| r.data[2] == K::NAME_DEFINITION.0)
            .map(|r| u32::from_le_bytes(r.data[12..16].try_into().unwrap()))
            .collect()
    };
    assert_eq!(ids(&slot[..infos[1]]), ids(&slot[infos[1]..]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// More static names than a slot's table holds: the rest are written inline and counted; every
/// record reads back with its name. The restating hook gives exactly the names defined, and
/// they alone resolve every id record of the slot.
#[test]
fn more_names_than_the_table_holds_are_written_inline_and_counted() {
    let _g = doc_lock();
    let dir = common::scratch_dir("static-names-full");
    let dat = dir.join("full.dat");
    // A 64 KiB ring: a table of 32 names.
    let rec = RecorderBuilder::new()
        .output(&dat)
        .ring_bytes(1 << 16)
        .start()
        .unwrap();
    let names: Vec<&'static str> = (0..100)
        .map(|i| &*Box::leak(format!("system-{i}").into_boxed_str()))
        .collect();
    let (defs, inline) = std::thread::spawn({
        let names = names.clone();
        move || {
            for _ in 0..2 {
                for n in &names {
                    drop(typhon_recorder::span_static(n));
                }
            }
            // Read while the thread still owns its slot.
            let d = rec.slot_definitions(1, 0);
            (d, rec)
        }
    })
    .join()
    .map(|(d, rec)| {
        rec.finish().unwrap();
        (d.records, d.inline)
    })
    .unwrap();
    let recs = raw(&dat);
    let by_id = count(&recs, K::NAMED_SPAN_ID);
    let by_name = count(&recs, K::NAMED_SPAN);
    assert_eq!(by_id + by_name, 200, "every span is in the file");
    assert_eq!(by_name as u64, inline, "each inline one is counted");
    assert_eq!(count(&recs, K::NAME_DEFINITION), defs.len());
    assert!((16..=32).contains(&defs.len()), "{}", defs.len());
    assert_eq!(by_id, 2 * defs.len());
    // Read back: each name twice, in order.
    let spans: Vec<String> = seen(&dat)
        .into_iter()
        .filter_map(|l| l.strip_prefix("span ").map(str::to_string))
        .collect();
    let want: Vec<String> = (0..2)
        .flat_map(|_| names.iter().map(|n| n.to_string()))
        .collect();
    assert_eq!(spans, want);
    // The hook's records resolve every id record of the slot by themselves.
    let mut hook = Definitions::default();
    for d in &defs {
        assert!(hook.learn(d));
    }
    for r in recs.iter().filter(|r| r.data[2] == K::NAMED_SPAN_ID.0) {
        hook.resolve(&r.data).unwrap();
    }
    assert_eq!(hook.unresolved, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `trace-cmd report` parses every new record and prints the ids it cannot resolve.
#[test]
fn trace_cmd_reports_static_name_records_with_their_ids() {
    let _g = doc_lock();
    let dir = common::scratch_dir("static-names-trace-cmd");
    let dat = dir.join("tc.dat");
    record(&dat, program);
    let total = raw(&dat).len();
    match Command::new("trace-cmd").arg("report").arg(&dat).output() {
        Err(e) if !require() => {
            eprintln!(
                "SKIPPED: trace-cmd not run: {e}; set TYPHON_REQUIRE_INTEROP=1 to fail instead"
            )
        }
        Err(e) => panic!("TYPHON_REQUIRE_INTEROP=1 but trace-cmd cannot run: {e}"),
        Ok(out) => {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            assert!(!text.contains("UNKNOWN EVENT"), "{text}");
            let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("cpus=")).collect();
            assert_eq!(lines.len(), total, "{text}");
            let with = |kind: &str| lines.iter().filter(|l| l.contains(kind)).count();
            assert_eq!(with(" NameDefinition: "), 8);
            assert_eq!(with(" NamedSpanId: "), 12);
            assert_eq!(with(" NamedInstantId: "), 6);
            assert!(lines
                .iter()
                .any(|l| l.contains(" NameDefinition: ") && l.contains("name=physics")));
            assert!(lines
                .iter()
                .filter(|l| l.contains(" NamedSpanId: "))
                .all(|l| l.contains(" name_id=")));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

//! Issue 32, items 1, 2, 4 and 11: what `recover` makes of a compressed recording killed under
//! load. The pages of every chunk stay on disk until the chunk is in the part file, so a kill
//! with chunks queued for the compressor loses none of them; a chunk that goes missing anyway
//! (a part file cut or deleted, a pending file lost) is counted lost, page by page; a chunk that
//! does not decompress costs only its pages; a repeated chunk counts once; a pending file or a
//! session that cannot be right is named, not guessed at.
//!
//! The recordings are made by a child process (this test binary, run for one test) writing
//! numbered pages (`test_page`: 5 records each, their times say slot, page and record) through
//! the file sink, 4 pages to a chunk, its compressor slowed down (`TYPHON_COMPRESS_STALL_MS`)
//! so that chunks are queued when the child is killed.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use typhon_recorder::sink::{parts_dir, recover, FileSink, SessionSummary, Sink};
use typhon_recorder::tracedat::Compression;

const CHILD: &str = "TYPHON_LOAD_CHILD";
const FINISH: &str = "TYPHON_LOAD_CHILD_FINISH";
/// Pages per slot: 15 whole chunks of 4 each for slots 1 and 2, 15 and one page for slot 3.
const SLOTS: [(u8, u64); 3] = [(1, 60), (2, 60), (3, 61)];
const CHUNK_PAGES: u64 = 4;
/// Records per test page.
const PER_PAGE: u64 = 5;

/// The child: every page written and flushed, then a kill (abort), before finishing or (with
/// `FINISH`) in the finish once the last chunks are handed over (`TYPHON_FAILPOINT_FINISH=1`).
#[test]
fn load_child() {
    use std::io::Write;
    let Some(out) = std::env::var_os(CHILD) else {
        return;
    };
    let mut s = FileSink::create_with(
        PathBuf::from(out),
        4096,
        Compression::Zstd { level: 1 },
        CHUNK_PAGES as usize,
    )
    .unwrap();
    let most = SLOTS.iter().map(|s| s.1).max().unwrap();
    for k in 0..most {
        for (slot, n) in SLOTS {
            if k < n {
                s.write_page(slot, &test_page(slot, k, PER_PAGE)).unwrap();
            }
        }
        if k % 3 == 2 {
            s.flush().unwrap();
        }
    }
    s.flush().unwrap();
    println!("CHILD-FLUSHED");
    std::io::stdout().flush().unwrap();
    if std::env::var_os(FINISH).is_some() {
        let _ = s.finish(&SessionSummary {
            page_size: 4096,
            ..Default::default()
        });
        println!("CHILD-FINISHED");
    }
    std::process::abort();
}

/// Runs the child recording to `out` (`inline`: compressing on its own thread, so that no
/// chunk is queued at the kill); returns the pending files it left.
fn killed(out: &Path, finish: bool, inline: bool) -> Vec<String> {
    let mut env = vec![(CHILD, out.as_os_str())];
    if finish {
        env.push((FINISH, "1".as_ref()));
        env.push(("TYPHON_FAILPOINT_FINISH", "1".as_ref()));
    }
    if inline {
        env.push(("TYPHON_COMPRESS_INLINE", "1".as_ref()));
    } else {
        // A compressor slower than the flusher: its queue is full when the child is killed.
        env.push(("TYPHON_COMPRESS_STALL_MS", "20".as_ref()));
    }
    let o = run_test_child("load_child", &env);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        !o.status.success() && stdout.contains("CHILD-FLUSHED") && !stdout.contains("FINISHED"),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Vec<String> = std::fs::read_dir(parts_dir(out))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pending"))
        .collect();
    v.sort();
    v
}

fn want() -> Vec<(u32, u64)> {
    test_page_records(&SLOTS)
}

/// Records of one slot in a file.
fn of_slot(out: &Path, slot: u32) -> u64 {
    sorted_records(out).iter().filter(|r| r.0 == slot).count() as u64
}

/// (offset, length) of every chunk of a part file, from the headers.
fn chunks(part: &Path) -> Vec<(usize, usize)> {
    let b = std::fs::read(part).unwrap();
    let (mut v, mut at) = (Vec::new(), 0);
    while at + 8 <= b.len() {
        let c = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
        v.push((at, 8 + c));
        at += 8 + c;
    }
    v
}

/// A copy of `out`'s parts directory (without its lock) for `name` next to it.
fn copy_parts(out: &Path, name: &str) -> PathBuf {
    let to = out.with_file_name(name);
    let d = parts_dir(&to);
    std::fs::create_dir(&d).unwrap();
    for e in std::fs::read_dir(parts_dir(out)).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "lock" {
            std::fs::copy(e.path(), d.join(e.file_name())).unwrap();
        }
    }
    to
}

/// A kill with chunks queued for the compressor (item 1: up to 8 full chunks, 5 440–49 000
/// records, were lost, and `recover` said "0 pages lost"), while recording or in the finish
/// once the last chunks are handed over: every record is recovered, nothing is counted lost.
#[test]
fn a_kill_under_load_loses_no_queued_chunk() {
    let dir = tmp("zl-queued");
    for finish in [false, true] {
        let out = dir.join(format!("q{finish}.dat"));
        let pending = killed(&out, finish, false);
        // Chunks were queued at the kill: a full queue's pending files beside the gathering one.
        assert!(pending.len() > 8, "finish {finish}: {pending:?}");
        let r = recover(&out).unwrap();
        assert!(r.errors.is_empty() && r.left.is_empty(), "{r:?}");
        assert_eq!(
            (r.lost_pages(), r.missing_chunks, r.torn_chunks),
            (0, 0, 0),
            "{r:?}"
        );
        assert_eq!(sorted_records(&out), want(), "finish {finish}");
        assert!(!parts_dir(&out).exists());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Chunks that should be there and are not (item 1): a queued chunk's pending file deleted, a
/// part file cut at a chunk boundary, a part file deleted. Per slot, the records in the file and
/// the records of the pages counted lost are the records written; `recover` exits non-zero and
/// `stats` shows the loss.
#[test]
fn every_missing_chunk_is_counted_lost() {
    let dir = tmp("zl-missing");
    let out = dir.join("m.dat");
    let pending = killed(&out, false, false);
    // The slot with most pending files: its lowest is a full chunk queued at the kill.
    let slot_of = |n: &str| n[5..8].parse::<u8>().unwrap();
    let slot = (1..=3u8)
        .max_by_key(|s| pending.iter().filter(|n| slot_of(n) == *s).count())
        .unwrap();
    assert!(
        pending.iter().filter(|n| slot_of(n) == slot).count() > 1,
        "{pending:?}"
    );
    let lowest = pending.iter().find(|n| slot_of(n) == slot).unwrap().clone();
    let written = |s: u8| SLOTS.iter().find(|e| e.0 == s).unwrap().1 * PER_PAGE;
    let part = |o: &Path, s: u8| parts_dir(o).join(format!("slot-{s:03}.pages"));
    type Case = (&'static str, u8, Box<dyn Fn(&Path)>);
    let cases: Vec<Case> = vec![
        (
            "a queued chunk's pending file deleted",
            slot,
            Box::new(move |o: &Path| std::fs::remove_file(parts_dir(o).join(&lowest)).unwrap()),
        ),
        (
            "the part file cut at a chunk boundary",
            slot,
            Box::new(move |o: &Path| {
                let p = part(o, slot);
                let c = chunks(&p);
                let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.set_len(c[c.len() - 1].0 as u64).unwrap();
            }),
        ),
        (
            "a part file deleted",
            slot % 3 + 1,
            Box::new(move |o: &Path| std::fs::remove_file(part(o, slot % 3 + 1)).unwrap()),
        ),
    ];
    for (i, (what, s, damage)) in cases.into_iter().enumerate() {
        let o = copy_parts(&out, &format!("c{i}.dat"));
        damage(&o);
        let (ok, stdout, stderr) = cli_recover(&o);
        assert!(!ok, "{what}: {stdout}{stderr}");
        assert!(
            stderr.contains("are missing: counted lost"),
            "{what}: {stderr}"
        );
        let (ok, json, err) = cli(&["stats".as_ref(), "--json".as_ref(), o.as_os_str()]);
        assert!(ok, "{what}: {err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let missing = v["missing_pages"].as_u64().unwrap();
        assert!(
            missing > 0 && missing.is_multiple_of(CHUNK_PAGES),
            "{what}: {missing}"
        );
        assert_eq!(
            v["losses"]["missing_pages"].as_u64(),
            Some(missing),
            "{what}"
        );
        assert_eq!(
            of_slot(&o, u32::from(s)) + missing * PER_PAGE,
            written(s),
            "{what}: slot {s}"
        );
        for other in (1..=3u8).filter(|&x| x != s) {
            assert_eq!(of_slot(&o, u32::from(other)), written(other), "{what}");
        }
        assert!(
            stdout.contains(&format!("{missing} pages the parts should hold")),
            "{stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One chunk that does not decompress in the middle of a part file (item 2: every later chunk
/// of the slot was dropped as a torn tail, exit 0, the parts deleted): only its pages are lost,
/// counted damaged; `recover` exits non-zero and keeps the part file.
#[test]
fn one_bad_chunk_costs_only_its_pages() {
    let dir = tmp("zl-bad");
    let out = dir.join("b.dat");
    killed(&out, false, true);
    // Slot 3: its last page waits in a pending file, added after the kept part file's chunks.
    let p = parts_dir(&out).join("slot-003.pages");
    let c = chunks(&p);
    assert_eq!(c.len(), 15);
    let mut b = std::fs::read(&p).unwrap();
    b[c[2].0 + 8 + c[2].1 / 2] ^= 0x5a;
    std::fs::write(&p, &b).unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(!ok, "{stdout}{stderr}");
    assert!(
        stdout.contains("1 compressed chunks that do not decompress"),
        "{stdout}"
    );
    assert!(stdout.contains("4 pages lost"), "{stdout}");
    assert!(!stdout.contains("cut short"), "{stdout}");
    assert!(
        stderr.contains(&format!("{}: the chunk at byte {}", p.display(), c[2].0)),
        "{stderr}"
    );
    // The part file is kept as it was, the pending page's chunk after its own.
    assert!(
        std::fs::read(&p).unwrap().starts_with(&b),
        "{}",
        p.display()
    );
    // Chunk 2 is pages 8..12 of slot 3.
    let lost: Vec<(u32, u64)> = test_page_records(&[(3, 12)])
        .into_iter()
        .filter(|r| (r.1 - 3_000_000) / 1000 >= 8)
        .collect();
    let want: Vec<(u32, u64)> = want().into_iter().filter(|r| !lost.contains(r)).collect();
    assert_eq!(sorted_records(&out), want);
    let (ok, json, err) = cli(&["stats".as_ref(), "--json".as_ref(), out.as_os_str()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (
            v["recovered_damaged_pages"].as_u64(),
            v["damaged_chunks"].as_u64()
        ),
        (Some(4), Some(1))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A chunk appended twice, and a pending file whose chunk is already the part file's last (item
/// 4): neither counts its records twice; the repeat is flagged. A pending file that claims the
/// last chunk's place with other pages is named and not used.
#[test]
fn a_repeated_chunk_or_pending_file_counts_once() {
    let dir = tmp("zl-dup");
    let out = dir.join("d.dat");
    killed(&out, false, true);
    // Slot 1's first chunk again at the end of its part file.
    let a = copy_parts(&out, "a.dat");
    let p = parts_dir(&a).join("slot-001.pages");
    let mut b = std::fs::read(&p).unwrap();
    let first = chunks(&p)[0];
    b.extend_from_within(..first.1);
    std::fs::write(&p, &b).unwrap();
    let r = recover(&a).unwrap();
    assert_eq!((r.duplicate_chunks, r.lost_pages()), (1, 0), "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|e| e.contains("repeats an earlier chunk")),
        "{r:?}"
    );
    assert_eq!(sorted_records(&a), want());
    // Slot 1's last chunk (pages 56..60) also in the pending file of its index, 14: a kill
    // after the chunk was appended, before its pending file was removed.
    let pending_of = |o: &Path, pages: std::ops::Range<u64>| {
        let mut f = b"typhpnd1".to_vec();
        f.extend_from_slice(&14u64.to_le_bytes());
        for k in pages {
            f.extend_from_slice(&test_page(1, k, PER_PAGE));
        }
        std::fs::write(parts_dir(o).join("slot-001.chunk-14.pending"), f).unwrap();
    };
    let c = copy_parts(&out, "c.dat");
    pending_of(&c, 56..60);
    let r = recover(&c).unwrap();
    assert!(r.errors.is_empty() && r.left.is_empty(), "{r:?}");
    assert_eq!(sorted_records(&c), want());
    // Other pages in that place: the index cannot be right; named and left.
    let e = copy_parts(&out, "e.dat");
    pending_of(&e, 52..56);
    let r = recover(&e).unwrap();
    let named = parts_dir(&e).join("slot-001.chunk-14.pending");
    assert!(
        r.errors
            .iter()
            .any(|m| m.contains(&named.display().to_string())
                && m.contains("the index cannot be right")),
        "{r:?}"
    );
    assert!(r.left.contains(&named), "{r:?}");
    assert_eq!(sorted_records(&e), want());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A pending file or a session that cannot be right is named with the field that is wrong
/// (item 11): a header index that is not the name's (0 used to be taken for "already written"),
/// a file larger than a chunk and its header (a 4 GiB sparse one took 12 s), a renamed
/// `compression` key (the chunks would be read as pages).
#[test]
fn a_pending_file_or_session_that_cannot_be_right_is_named() {
    let dir = tmp("zl-wrong");
    let out = dir.join("w.dat");
    let pending = killed(&out, false, true);
    // Slot 3's last page waits in the pending file of chunk 15.
    assert!(
        pending.contains(&"slot-003.chunk-15.pending".to_string()),
        "{pending:?}"
    );
    let a = copy_parts(&out, "a.dat");
    let p = parts_dir(&a).join("slot-003.chunk-15.pending");
    let mut b = std::fs::read(&p).unwrap();
    b[8..16].copy_from_slice(&0u64.to_le_bytes());
    std::fs::write(&p, &b).unwrap();
    let r = recover(&a).unwrap();
    let named = |r: &typhon_recorder::sink::Recovered, p: &Path, what: &str| {
        r.errors
            .iter()
            .any(|e| e.contains(&p.display().to_string()) && e.contains(what))
    };
    assert!(
        named(&r, &p, "its header's chunk index is 0, its name's is 15"),
        "{r:?}"
    );
    assert!(r.left.contains(&p), "{r:?}");
    assert_eq!(std::fs::read(&p).unwrap(), b);
    // Its page is not in the file: counted lost.
    assert_eq!((r.missing_chunks, r.missing_pages), (1, 1));
    assert_eq!(sorted_records(&a).len() as u64, (60 + 60 + 60) * PER_PAGE);

    let h = copy_parts(&out, "h.dat");
    let p = parts_dir(&h).join("slot-003.chunk-15.pending");
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(4 << 30).unwrap();
    drop(f);
    let r = recover(&h).unwrap();
    assert!(
        named(&r, &p, &format!("{} bytes, more than a chunk", 4u64 << 30)),
        "{r:?}"
    );
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 4 << 30);

    let s = copy_parts(&out, "s.dat");
    let session = parts_dir(&s).join("session.json");
    let text = std::fs::read_to_string(&session).unwrap();
    std::fs::write(&session, text.replace("\"compression\"", "\"compresion\"")).unwrap();
    let e = recover(&s).unwrap_err().to_string();
    assert!(
        e.contains(&session.display().to_string()) && e.contains("unknown field \"compresion\""),
        "{e}"
    );
    assert!(parts_dir(&s).join("slot-001.pages").exists() && !s.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The records of a file the reader can read, skipping damaged pages (kept in a recovered file
/// as they are).
fn readable_records(out: &Path) -> Vec<(u32, u64)> {
    let f = typhon_trace::tracedat::TraceFile::open_streaming(out).unwrap();
    let mut v: Vec<(u32, u64)> = f
        .stream_records()
        .filter_map(|r| r.ok().map(|r| (r.cpu, r.ts)))
        .collect();
    v.sort();
    v
}

/// Mutants of a recording killed with chunks queued (a byte flipped, a file cut short or grown,
/// in its part files and pending files): `recover` never panics, never counts a record twice or
/// makes one up outside a page it counts damaged, and whenever records are missing from the file it says so: an error or a
/// file left in place (both make `typhon-rec recover` exit non-zero), or pages counted lost or
/// torn. (Cutting a slot's last pending file is what a kill does: that loss is the kill's.)
#[test]
fn mutated_parts_never_lose_records_silently() {
    let dir = tmp("zl-mutants");
    let out = dir.join("base.dat");
    killed(&out, false, false);
    let mut names: Vec<String> = std::fs::read_dir(parts_dir(&out))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pages") || n.ends_with(".pending"))
        .collect();
    names.sort();
    // (slot, chunk index) of a pending file's name.
    let index = |n: &str| -> Option<(u8, u64)> {
        let (s, i) = n
            .strip_suffix(".pending")?
            .strip_prefix("slot-")?
            .split_once(".chunk-")?;
        Some((s.parse().ok()?, i.parse().ok()?))
    };
    let last_pending = |n: &str| {
        index(n).is_some_and(|(s, i)| {
            !names
                .iter()
                .filter_map(|m| index(m))
                .any(|(t, j)| t == s && j > i)
        })
    };
    let want = want();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // (refused, every record, fewer records and said so)
    let mut seen = (0, 0, 0);
    for i in 0..48 {
        let o = copy_parts(&out, &format!("m{i}.dat"));
        let name = &names[next() as usize % names.len()];
        let p = parts_dir(&o).join(name);
        let mut b = std::fs::read(&p).unwrap();
        let kind = next() % 3;
        match kind {
            0 if !b.is_empty() => {
                let at = next() as usize % b.len();
                b[at] ^= 1 << (next() % 8);
            }
            1 => b.truncate(next() as usize % (b.len() + 1)),
            _ => (0..next() % 5000).for_each(|_| b.push(next() as u8)),
        }
        std::fs::write(&p, &b).unwrap();
        let what = format!("mutant {i}: {name} kind {kind}");
        let r = match recover(&o) {
            Ok(r) => r,
            Err(e) => {
                // Refused as a whole: nothing was touched.
                assert!(parts_dir(&o).join(name).exists(), "{what}: {e}");
                seen.0 += 1;
                continue;
            }
        };
        let got = readable_records(&o);
        let mut dedup = got.clone();
        dedup.dedup();
        assert_eq!(dedup.len(), got.len(), "{what}: a record twice");
        // (A damaged page is kept as it is, as in an uncompressed recording: what the reader
        // takes from it before the damage may be anything.)
        assert!(
            r.damaged_pages > 0 || got.iter().all(|x| want.binary_search(x).is_ok()),
            "{what}: a record never written: {r:?}"
        );
        let said =
            !r.errors.is_empty() || !r.left.is_empty() || r.lost_pages() > 0 || r.torn_bytes > 0;
        if got.len() < want.len() && !(kind == 1 && last_pending(name)) {
            assert!(
                said,
                "{what}: {} of {} records, nothing said: {r:?}",
                got.len(),
                want.len()
            );
        }
        if got.len() == want.len() {
            seen.1 += 1;
        } else {
            seen.2 += 1;
        }
    }
    eprintln!(
        "mutants: {} refused, {} with every record, {} with fewer",
        seen.0, seen.1, seen.2
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The fuzz target `recover_parts`'s seeds (`fuzz/corpus/recover_parts/`, made from slot 3 of
/// `load_child`'s recording: 15 chunks of 4 pages and a pending page) recover as their names
/// say, in the layout the target gives them: slot 1's part file and one pending file.
#[test]
fn the_recover_fuzz_seeds_recover_as_they_say() {
    let dir = tmp("zl-seeds");
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/recover_parts");
    // (seed, records, damaged chunks, repeated chunks, missing chunks, missing pages)
    let cases = [
        ("whole-chunks-and-pending", 305, 0, 0, 0, 0),
        ("bad-middle-chunk", 285, 1, 0, 0, 0),
        ("repeated-chunk", 305, 0, 1, 0, 0),
        ("pending-header-index-0", 300, 0, 0, 1, 1),
        ("pending-after-a-gap", 305, 0, 0, 2, 8),
        ("part-cut-at-a-chunk-boundary", 245, 0, 0, 3, 12),
    ];
    for (name, records, damaged, repeated, missing, missing_pages) in cases {
        let data = std::fs::read(seeds.join(name)).unwrap();
        let n = u32::from_le_bytes(data[1..5].try_into().unwrap()) as usize;
        let (part, pending) = data[5..].split_at(n);
        let out = dir.join(format!("{name}.dat"));
        let parts = parts_dir(&out);
        std::fs::create_dir(&parts).unwrap();
        std::fs::write(
            parts.join("session.json"),
            r#"{"page_size":4096,"compression":"zstd:1","chunk_pages":4}"#,
        )
        .unwrap();
        std::fs::write(parts.join("slot-001.pages"), part).unwrap();
        std::fs::write(
            parts.join(format!("slot-001.chunk-{}.pending", data[0])),
            pending,
        )
        .unwrap();
        let r = recover(&out).unwrap();
        assert_eq!(
            (
                r.records,
                r.damaged_chunks,
                r.duplicate_chunks,
                r.missing_chunks,
                r.missing_pages
            ),
            (records, damaged, repeated, missing, missing_pages),
            "{name}: {r:?}"
        );
        assert_eq!(
            r.errors.is_empty(),
            name.starts_with("whole"),
            "{name}: {r:?}"
        );
        assert_eq!(sorted_records(&out).len() as u64, records, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

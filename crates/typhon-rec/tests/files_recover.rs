//! SPEC §9, issue 19's second review: a start the disk refuses leaves nothing behind, the lock
//! is the directory's own `flock` (nothing is written through a planted `lock`, and deleting
//! it frees nothing), and `recover` of a directory without pages says there is nothing to
//! recover. Every test that installs the recorder holds `doc_lock()`.

mod common;

use common::*;

use std::time::Duration;
use typhon_recorder::page::PageWriter;
use typhon_recorder::sink::{parts_dir, FileSink, Sink};
use typhon_recorder::{doc_lock, RecorderBuilder};

/// A page of `slot` holding `n` records.
fn page(slot: u8, n: u64) -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    for j in 0..n {
        w.try_push(j + 1, &[slot; 20]).unwrap();
    }
    w.finish().to_vec()
}

/// A full disk at start: the start fails, and nothing it made is left (the lock used to
/// stay, and every later start said "not finished; run recover", which then failed).
#[test]
fn a_full_disk_at_start_leaves_nothing_behind() {
    let _g = doc_lock();
    let Some(fs) = tmpfs("start-full", 4) else {
        return;
    };
    let out = fs.0.join("s.dat");
    let filler = fill(&fs.0, 0);
    let e = RecorderBuilder::new()
        .output(&out)
        .start()
        .err()
        .expect("a full disk refuses the start");
    assert!(
        !parts_dir(&out).exists(),
        "left {:?} after: {e}",
        std::fs::read_dir(parts_dir(&out)).map(|d| d.count())
    );
    std::fs::remove_file(filler).unwrap();
    let rec = RecorderBuilder::new().output(&out).start().unwrap();
    rec.finish().unwrap();
    assert!(out.exists());
}

/// A parts directory holding only a lock note: `recover` says there is nothing to recover,
/// writes no output and removes what the recorder made, so the path is usable again.
#[test]
fn recover_of_a_directory_without_pages_says_nothing_to_recover() {
    let dir = tmp("only-lock");
    let out = dir.join("o.dat");
    let parts = parts_dir(&out);
    std::fs::create_dir(&parts).unwrap();
    std::fs::write(parts.join("lock"), "4242\n").unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("nothing to recover"), "{stdout}");
    assert!(!out.exists());
    assert!(!parts.exists());
    // Nothing it can use: a lock, a stray journal and a file that is not the recorder's,
    // which is named and left (and recover exits non-zero for it).
    std::fs::create_dir(&parts).unwrap();
    std::fs::write(parts.join("lock"), "4242\n").unwrap();
    std::fs::write(parts.join("assembly-3.journal"), "").unwrap();
    std::fs::write(parts.join("notes.txt"), "mine").unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("nothing to recover"), "{stdout}{stderr}");
    assert!(stdout.contains("notes.txt"), "{stdout}");
    let left: Vec<_> = std::fs::read_dir(&parts)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    // The stray journal is gone; the lock note stays with the directory.
    assert!(left.contains(&"notes.txt".into()), "{left:?}");
    assert!(!left.contains(&"assembly-3.journal".into()), "{left:?}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A hard link planted at `OUT.parts/lock` is never written through by `recover` (it used to
/// truncate the victim to recover's pid), whether the directory holds pages or not.
#[test]
fn recover_never_writes_through_a_planted_lock() {
    let dir = tmp("planted-lock");
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let out = dir.join("k.dat");
    let mut s = FileSink::create(&out, 4096).unwrap();
    s.write_page(1, &page(1, 5)).unwrap();
    s.flush().unwrap();
    drop(s); // as a kill leaves it
    let parts = parts_dir(&out);
    std::fs::remove_file(parts.join("lock")).unwrap();
    std::fs::hard_link(&victim, parts.join("lock")).unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(records(&out).len(), 5);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    // Only a lock, planted.
    let out2 = dir.join("k2.dat");
    std::fs::create_dir(parts_dir(&out2)).unwrap();
    std::fs::hard_link(&victim, parts_dir(&out2).join("lock")).unwrap();
    let (ok, stdout, stderr) = cli_recover(&out2);
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Deleting `OUT.parts/lock` while a recording runs does not make its directory recoverable
/// (the lock is the directory's own): `recover` and a second recorder still refuse it, and the
/// recording finishes with every record.
#[test]
fn deleting_the_lock_note_does_not_free_a_live_recording() {
    let _g = doc_lock();
    let dir = tmp("deleted-lock");
    let out = dir.join("live.dat");
    let rec = RecorderBuilder::new()
        .output(&out)
        .flush_interval(Duration::from_millis(5))
        .start()
        .unwrap();
    std::thread::spawn(|| (0..1000).for_each(|i| typhon_recorder::instant(1, i)))
        .join()
        .unwrap();
    rec.drain();
    std::fs::remove_file(parts_dir(&out).join("lock")).unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(!ok, "recover of a live recording must fail: {stdout}");
    assert!(stderr.contains("a live recording, pid"), "{stderr}");
    let e = FileSink::create(&out, 4096).err().unwrap().to_string();
    assert!(e.contains("a live recording, pid"), "{e}");
    rec.finish().unwrap();
    assert_eq!(instants(&out), 1000);
    assert!(!parts_dir(&out).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The final counters of a finish the disk refused say what is really in the file: pages the
/// sink had buffered and could not write are lost, their records `sink_lost`, not `written`.
/// (They used to count as written: "16 pages could not be written" while the stats said
/// written=5724, and the recovered file held 3001 of the slot's records.)
#[test]
fn a_failed_finish_counts_only_what_reached_the_disk() {
    let _g = doc_lock();
    let Some(fs) = tmpfs("finish-stats", 4) else {
        return;
    };
    let out = fs.0.join("f.dat");
    let rec = RecorderBuilder::new()
        .output(&out)
        .flush_interval(Duration::from_millis(5))
        .start()
        .unwrap();
    (0..3000).for_each(|i| typhon_recorder::instant(1, i));
    rec.drain();
    let filler = fill(&fs.0, 0);
    (0..3000).for_each(|i| typhon_recorder::instant(1, i));
    let e = rec.finish().expect_err("the disk is full");
    let stats = e.stats().expect("the final counters").clone();
    std::fs::remove_file(filler).unwrap();
    let r = typhon_recorder::sink::recover(&out).unwrap();
    let in_file = |cpu: u32| records(&out).iter().filter(|r| r.0 == cpu).count() as u64;
    for s in &stats.slots {
        assert_eq!(
            in_file(u32::from(s.slot)),
            s.written,
            "slot {}: {s:?}",
            s.slot
        );
        assert_eq!(s.attempted, s.written + s.missed + s.sink_lost, "{s:?}");
    }
    let one = stats.slot(1).unwrap();
    assert_eq!(one.attempted, 6001, "{one:?}");
    assert!(one.sink_lost > 0, "the disk refused pages: {one:?}");
    assert!(stats.pages_lost > 0);
    // recover counts the same pages as lost.
    assert_eq!(r.pages_lost, stats.pages_lost, "{r:?} {stats:?}");
    // The sink's errors name the file the disk refused.
    let parts = parts_dir(&out).display().to_string();
    for first in [&stats.first_sink_error, &r.first_sink_error] {
        let first = first.as_deref().unwrap_or("none");
        assert!(first.contains(&parts), "{first}");
    }
}

/// A killed recording's parts next to an older, complete OUT of the same name.
fn killed_over_an_older_out(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = tmp(name);
    let out = dir.join("k.dat");
    let mut s = FileSink::create(&out, 4096).unwrap();
    s.write_page(1, &page(1, 3)).unwrap();
    s.finish(&typhon_recorder::sink::SessionSummary {
        page_size: 4096,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(records(&out).len(), 3);
    let mut s = FileSink::create(&out, 4096).unwrap();
    s.write_page(1, &page(1, 7)).unwrap();
    s.write_page(2, &page(2, 9)).unwrap();
    s.flush().unwrap();
    drop(s); // as a kill leaves it
    (dir, out)
}

/// A journal that does not name OUT as the assembly it renamed does not make `recover` take
/// an older OUT for complete (it used to, deleting session.json: the parts were lost for good).
#[test]
fn a_stray_journal_does_not_make_an_older_out_complete() {
    for (i, journal) in ["", "renamed 1 2 3\n", "slot 1 4096 4096\n"]
        .iter()
        .enumerate()
    {
        let (dir, out) = killed_over_an_older_out(&format!("stray-journal-{i}"));
        let parts = parts_dir(&out);
        std::fs::write(parts.join("assembly-5.journal"), journal).unwrap();
        let r = typhon_recorder::sink::recover(&out).unwrap();
        assert!(!r.already_complete, "{journal:?}: {r:?}");
        assert_eq!(
            records(&out).len(),
            16,
            "{journal:?}: the killed recording's pages"
        );
        assert!(!parts.exists(), "{journal:?}: {r:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Files whose names only look like the recorder's (leading zeros), or whose content is not
/// what it writes there, are never deleted (`assembly-01.dat` and `assembly-00.journal`
/// holding "my notes" used to be).
#[test]
fn recover_keeps_files_that_only_look_like_its_own() {
    let (dir, out) = killed_over_an_older_out("look-alike");
    let parts = parts_dir(&out);
    let planted = [
        ("assembly-01.dat", "my data"),
        ("assembly-00.journal", "my notes"),
        ("assembly-7.journal", "my notes\n"),
        ("assembly-8.dat", "not a trace.dat"),
        ("slot-01.pages", "mine"),
    ];
    for (name, text) in planted {
        std::fs::write(parts.join(name), text).unwrap();
    }
    let r = typhon_recorder::sink::recover(&out).unwrap();
    assert_eq!(records(&out).len(), 16);
    for (name, text) in planted {
        let p = parts.join(name);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), text, "{name}");
        assert!(r.left.contains(&p), "{name} is named: {r:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const COUNTERS_CHILD: &str = "TYPHON_FILES_COUNTERS_CHILD";

/// The child half of `counters_survive_a_kill`: does nothing unless started by it. Records
/// with losses no page carries (threads without a slot, a refused span, a clamped time, a
/// filtered kind), waits until the flusher has noted them, prints its counters and waits to
/// be killed.
#[test]
fn counters_child() {
    let Ok(out) = std::env::var(COUNTERS_CHILD) else {
        return;
    };
    let _g = doc_lock();
    let rec = RecorderBuilder::new()
        .output(&out)
        .flush_interval(Duration::from_millis(5))
        .disable(typhon_recorder::codec::TraceEventKind::TICK_START)
        .start()
        .unwrap();
    let threads = 300;
    let wrote = std::sync::Arc::new(std::sync::Barrier::new(threads + 1));
    for t in 0..threads {
        let wrote = wrote.clone();
        std::thread::spawn(move || {
            (0..15).for_each(|i| typhon_recorder::instant(t as i32, i));
            typhon_recorder::tick_start();
            if t == 0 {
                drop(typhon_recorder::span(&"n".repeat(70_000)));
                typhon_recorder::instant_at(u64::MAX, 1, 0);
            }
            wrote.wait();
            // Keep the slots: the kill comes while every thread lives.
            std::thread::sleep(Duration::from_secs(3600));
        });
    }
    wrote.wait();
    rec.drain();
    rec.drain();
    let s = rec.stats();
    let sum =
        |f: fn(&typhon_recorder::sink::SlotSummary) -> u64| s.slots.iter().map(f).sum::<u64>();
    println!(
        "CHILD-COUNTERS {} {} {} {}",
        s.no_slot,
        sum(|s| s.refused),
        sum(|s| s.clamped),
        s.total_filtered()
    );
    std::thread::sleep(Duration::from_secs(3600));
    drop(rec);
}

/// The counters no page carries survive a SIGKILL: `recover` takes them from the recording's
/// `counters` file into the metadata, and `typhon-rec stats` shows them. (They lived only in
/// the finish summary: a recovered file said "losses: none".)
#[test]
fn counters_survive_a_kill() {
    use std::io::BufRead;
    let dir = tmp("counters-kill");
    let out = dir.join("c.dat");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "counters_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(COUNTERS_CHILD, &out)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // The harness prints "test counters_child ... " before it.
        .find_map(|l| l.split_once("CHILD-COUNTERS").map(|(_, c)| c.to_owned()))
        .expect("the child reports its counters");
    child.kill().unwrap();
    child.wait().unwrap();
    let want: Vec<u64> = line
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let [no_slot, refused, clamped, filtered] = want[..] else {
        panic!("{line}")
    };
    assert!(no_slot >= 45 * 15, "{line}");
    assert_eq!((refused, clamped), (1, 1), "{line}");
    assert!(filtered >= 255, "{line}");
    let (ok, stdout, stderr) = cli_recover(&out);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("counted while recording"), "{stdout}");
    let (ok, stdout, stderr) = cli(&["stats".as_ref(), "--json".as_ref(), out.as_os_str()]);
    assert!(ok, "{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["no_slot"], no_slot, "{stdout}");
    assert_eq!(v["refused"], refused);
    assert_eq!(v["clamped"], clamped);
    assert_eq!(
        v["filtered"].as_u64().unwrap() + v["filtered_no_slot"].as_u64().unwrap(),
        filtered
    );
    assert_eq!(v["losses"]["no_slot"], no_slot, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A killed recording with 4096-byte pages: slot 1 holds `n` pages of 90 records.
fn killed_4k(name: &str, n: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = tmp(name);
    let out = dir.join("w.dat");
    let mut s = FileSink::create(&out, 4096).unwrap();
    for _ in 0..n {
        s.write_page(1, &page(1, 90)).unwrap();
    }
    s.flush().unwrap();
    drop(s);
    (dir, out)
}

/// A session.json whose page size the part files contradict is refused, naming it, and
/// nothing is touched (8192 over 4096-byte parts used to lose half the records silently:
/// "0 pages lost", exit 0, the parts deleted).
#[test]
fn a_wrong_page_size_in_the_session_is_refused() {
    for n in [1, 2, 5] {
        let (dir, out) = killed_4k(&format!("wrong-size-{n}"), n);
        let parts = parts_dir(&out);
        let session = parts.join("session.json");
        std::fs::write(&session, r#"{"page_size":8192}"#).unwrap();
        let (ok, stdout, stderr) = cli_recover(&out);
        assert!(!ok, "{stdout}");
        assert!(
            stderr.contains(&session.display().to_string()) && stderr.contains("4096-byte page"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::metadata(parts.join("slot-001.pages"))
                .unwrap()
                .len(),
            4096 * n
        );
        assert!(!out.exists());
        // With the right size, every record.
        std::fs::write(&session, r#"{"page_size":4096}"#).unwrap();
        let (ok, stdout, stderr) = cli_recover(&out);
        assert!(ok, "{stdout}{stderr}");
        assert_eq!(records(&out).len() as u64, 90 * n);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Pages the writer cannot have made are damaged, their records in no count: an all-zero
/// page (a sparse part file used to become "0 records, 0 pages lost"), bytes after the
/// data, a missed count on a page without records.
#[test]
fn pages_the_writer_cannot_have_made_are_damaged() {
    let (dir, out) = killed_4k("not-made", 2);
    let parts = parts_dir(&out);
    // Slot 2: sparse, all zero.
    let f = std::fs::File::create(parts.join("slot-002.pages")).unwrap();
    f.set_len(16 << 20).unwrap();
    // Slot 3: a good page, one with a byte after its data, one with a missed count and no
    // records.
    let mut three = page(3, 10);
    let mut stale = page(3, 10);
    stale[4000] = 0xaa;
    three.extend_from_slice(&stale);
    let mut empty = vec![0u8; 4096];
    empty[0] = 1;
    empty[8..16].copy_from_slice(&((1u64 << 31) | (1 << 30)).to_le_bytes());
    empty[16..24].copy_from_slice(&5u64.to_le_bytes());
    three.extend_from_slice(&empty);
    std::fs::write(parts.join("slot-003.pages"), &three).unwrap();
    let (ok, stdout, stderr) = cli_recover(&out);
    // The all-zero part file is not copied (16 MiB of zeros) but left, named.
    assert!(!ok, "{stdout}{stderr}");
    assert!(stdout.contains("slot-002.pages"), "{stdout}");
    assert!(std::fs::metadata(&out).unwrap().len() < 1 << 20);
    let zero = (16 << 20) / 4096;
    assert!(
        stdout.contains(&format!("{} pages lost", zero + 2)),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("all zero: {zero} pages")),
        "{stdout}"
    );
    // (Damaged pages are kept in the file as they are; only the counts leave them out.)
    assert!(
        stdout.contains("slot   1: 2 pages, 180 records"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("slot   2: {zero} pages, 0 records")),
        "{stdout}"
    );
    assert!(stdout.contains("slot   3: 3 pages, 10 records"), "{stdout}");
    let (ok, stdout, _) = cli(&["stats".as_ref(), "--json".as_ref(), out.as_os_str()]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["recovered_damaged_pages"], zero + 2, "{stdout}");
    assert_eq!(
        v["missed"], 0,
        "the count on the page without records is not one"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

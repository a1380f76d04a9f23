//! SPEC §17: following a recording while it runs (`typhon_trace::follow`). The parts are made by
//! the core's own file sink (driven in this process, page by page, so that every count is
//! known), or by a real recorder in a child process that is killed. Every record carries its
//! slot and a sequence number: a follower must show each exactly once, in order per slot,
//! whatever the race with the writer, across the finish, and across a kill and `recover`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use typhon_recorder::codec::records::write_instant;
use typhon_recorder::codec::TraceEventKind as K;
use typhon_recorder::page::PageWriter;
use typhon_recorder::sink::{
    parts_dir, segment_path, FileSink, RotatingSink, SessionSummary, Sink,
};
use typhon_recorder::tracedat::Compression;
use typhon_trace::follow::{FollowBatch, Follower, RecordingState};

const PAGE: usize = 4096;
/// Records per page the tests write (24 bytes each on the page: 100 fit in 4096).
const PER_PAGE: u64 = 100;

/// Page `n` of `slot`: records `n * PER_PAGE ..` of the slot, each an instant whose name id is
/// the slot and whose payload is its sequence number (the time is the sequence number too).
fn page(slot: u8, n: u64) -> Vec<u8> {
    let mut w = PageWriter::new(PAGE).unwrap();
    for i in 0..PER_PAGE {
        let seq = n * PER_PAGE + i;
        let mut d = [0u8; 20];
        write_instant(&mut d, slot, (seq + 1) as i64, slot as i32, seq as i32).unwrap();
        w.try_push(seq + 1, &d).unwrap();
    }
    w.finish().to_vec()
}

fn summary() -> SessionSummary {
    SessionSummary {
        page_size: PAGE,
        ..Default::default()
    }
}

fn sink(out: &Path, zstd: Option<usize>) -> FileSink {
    let mut s = match zstd {
        None => FileSink::create(out, PAGE).unwrap(),
        Some(chunk_pages) => {
            FileSink::create_with(out, PAGE, Compression::Zstd { level: 1 }, chunk_pages).unwrap()
        }
    };
    s.begin(&summary()).unwrap();
    s
}

/// What a follower saw: each slot's sequence numbers in the order shown.
#[derive(Default)]
struct Seen {
    seqs: BTreeMap<u32, Vec<u64>>,
    states: Vec<RecordingState>,
}

impl Seen {
    fn add(&mut self, b: &FollowBatch) {
        if self.states.last() != Some(&b.state) {
            self.states.push(b.state);
        }
        for r in &b.records {
            assert_eq!(r.data[2], K::INSTANT.0, "only the test's instants: {r:?}");
            let slot = u32::from_le_bytes(r.data[12..16].try_into().unwrap());
            let seq = u32::from_le_bytes(r.data[16..20].try_into().unwrap()) as u64;
            assert_eq!(r.cpu, slot);
            assert_eq!(r.ts, seq + 1);
            self.seqs.entry(slot).or_default().push(seq);
        }
    }

    fn records(&self) -> usize {
        self.seqs.values().map(Vec::len).sum()
    }

    /// Every slot's records 0..n, each once, in order.
    fn assert_whole(&self, want: &BTreeMap<u32, u64>) {
        let got: BTreeMap<u32, u64> = self
            .seqs
            .iter()
            .map(|(&s, v)| (s, v.len() as u64))
            .collect();
        assert_eq!(&got, want);
        for (slot, v) in &self.seqs {
            let expect: Vec<u64> = (0..v.len() as u64).collect();
            assert!(
                *v == expect,
                "slot {slot}: the records are not 0..{} in order, once each",
                v.len()
            );
        }
    }
}

fn poll(f: &mut Follower, seen: &mut Seen) -> FollowBatch {
    let b = f.poll(usize::MAX).unwrap();
    seen.add(&b);
    b
}

/// Polls until the follower says finished (or a deadline: a failure).
fn until_finished(f: &mut Follower, seen: &mut Seen) -> FollowBatch {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let b = poll(f, seen);
        if b.state == RecordingState::Finished {
            // A finished file does not change: the next poll shows nothing.
            assert!(f.poll(usize::MAX).unwrap().records.is_empty());
            return b;
        }
        assert!(Instant::now() < until, "never finished: {:?}", seen.states);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A writer on its own thread (flushing as the recorder does, every few pages) races a follower
/// polling as fast as it can, through the finish: every record once, in order.
fn race(zstd: Option<usize>, tag: &str) {
    let dir = common::scratch_dir(tag);
    let out = dir.join("run.dat");
    let mut s = sink(&out, zstd);
    let mut f = Follower::open(&out).unwrap();
    let pages_per_slot = 150u64;
    let slots = [1u8, 2, 3];
    let writer = std::thread::spawn(move || {
        for n in 0..pages_per_slot {
            for &slot in &slots {
                s.write_page(slot, &page(slot, n)).unwrap();
            }
            if n % 3 == 0 {
                s.flush().unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        s.flush().unwrap();
        s.finish(&summary()).unwrap();
    });
    let mut seen = Seen::default();
    // Polls that showed records while the recording was live.
    let mut polls = 0;
    while !writer.is_finished() {
        let b = poll(&mut f, &mut seen);
        polls += usize::from(b.state == RecordingState::Live && !b.records.is_empty());
    }
    writer.join().unwrap();
    let last = until_finished(&mut f, &mut seen);
    let want: BTreeMap<u32, u64> = slots
        .iter()
        .map(|&s| (u32::from(s), pages_per_slot * PER_PAGE))
        .collect();
    seen.assert_whole(&want);
    assert_eq!(seen.states.first(), Some(&RecordingState::Live));
    assert_eq!(last.losses["damaged_pages"], 0);
    assert_eq!(last.losses["missed"], 0);
    assert_eq!((last.skipped_pages, last.skipped_records), (0, 0));
    assert!(
        polls >= 5,
        "the follower read while the writer wrote ({polls} polls)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_racing_writer_uncompressed_every_record_once_in_order() {
    race(None, "follow-race");
}

/// Compressed: chunks of 4 pages, so the follower meets pending files being written, chunks
/// appended and pending files removed, all the time.
#[test]
fn a_racing_writer_compressed_every_record_once_in_order() {
    race(Some(4), "follow-race-z");
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// A page the kill (or a write in progress) cut short is not read until it is whole; a page the
/// recorder cannot have made is counted damaged, its records are not shown, and the pages after
/// it are read.
#[test]
fn a_torn_page_waits_and_a_damaged_page_is_counted() {
    let dir = common::scratch_dir("follow-torn");
    let out = dir.join("run.dat");
    let mut s = sink(&out, None);
    for n in 0..2 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    assert_eq!(poll(&mut f, &mut seen).records.len(), 200);
    let part = parts_dir(&out).join("slot-001.pages");
    let p2 = page(1, 2);
    append(&part, &p2[..1000]);
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.records.len(), b.losses["damaged_pages"]), (0, 0));
    append(&part, &p2[1000..]);
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.records.len(), b.losses["damaged_pages"]), (100, 0));
    // Page 3 with a byte after its data: not a page the recorder made.
    let mut bad = page(1, 3);
    bad[PAGE - 1] = 1;
    append(&part, &bad);
    let p4 = page(1, 4);
    append(&part, &p4);
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.records.len(), b.losses["damaged_pages"]), (100, 1));
    assert_eq!(
        b.records[0].ts, 401,
        "page 4's first record follows the damaged page"
    );
    assert_eq!(seen.records(), 400);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compressed: a chunk that does not decompress costs its pages (counted damaged, as `recover`
/// counts them), and the chunks after it are read; across the finish it is not counted twice.
#[test]
fn a_damaged_chunk_is_counted_and_passed() {
    let dir = common::scratch_dir("follow-badchunk");
    let out = dir.join("run.dat");
    let parts = parts_dir(&out);
    let mut s = sink(&out, Some(4));
    for n in 0..8 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    wait_for(|| !parts.join("slot-001.chunk-1.pending").exists());
    // Chunk 0's zstd magic (after its 8-byte header), spoilt.
    let part = parts.join("slot-001.pages");
    let f = std::fs::OpenOptions::new().write(true).open(&part).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[0; 4], 8).unwrap();
    let mut fo = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    let b = poll(&mut fo, &mut seen);
    assert_eq!(b.losses["damaged_pages"], 4);
    assert_eq!(seen.records(), 400);
    assert_eq!(
        b.records[0].ts, 401,
        "chunk 1 is read after the damaged chunk 0"
    );
    s.write_page(1, &page(1, 8)).unwrap();
    s.finish(&summary()).unwrap();
    let b = until_finished(&mut fo, &mut seen);
    assert_eq!(b.losses["damaged_pages"], 4);
    assert_eq!(seen.seqs[&1], (400..900).collect::<Vec<u64>>());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Slots that start writing after the follower opened the recording (threads that start late)
/// are found and read from their first page.
#[test]
fn slots_that_appear_late_are_read_from_their_first_page() {
    let dir = common::scratch_dir("follow-late");
    let out = dir.join("run.dat");
    let mut s = sink(&out, None);
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    let b = poll(&mut f, &mut seen);
    assert!(b.records.is_empty() && b.state == RecordingState::Live);
    s.write_page(1, &page(1, 0)).unwrap();
    s.flush().unwrap();
    poll(&mut f, &mut seen);
    assert_eq!(seen.records(), 100);
    for n in 0..3 {
        s.write_page(7, &page(7, n)).unwrap();
        s.write_page(200, &page(200, n)).unwrap();
    }
    s.write_page(1, &page(1, 1)).unwrap();
    s.flush().unwrap();
    poll(&mut f, &mut seen);
    let want: BTreeMap<u32, u64> = [(1, 200), (7, 300), (200, 300)].into();
    seen.assert_whole(&want);
    s.finish(&summary()).unwrap();
    until_finished(&mut f, &mut seen);
    seen.assert_whole(&want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The switch at the finish: what the parts showed is not shown again from OUT, what only OUT
/// has (pages written after the last poll) is. Both forms. On the way, an assembly in the
/// directory (a finish in progress) reads as "finishing".
#[test]
fn the_switch_at_finish_shows_the_rest_once() {
    for zstd in [None, Some(4)] {
        let dir = common::scratch_dir("follow-finish");
        let out = dir.join("run.dat");
        // An older file of the same name: not taken for the finished recording.
        std::fs::write(&out, b"an older run").unwrap();
        let mut s = sink(&out, zstd);
        for n in 0..10 {
            s.write_page(1, &page(1, n)).unwrap();
            s.write_page(2, &page(2, n)).unwrap();
        }
        s.flush().unwrap();
        let parts = parts_dir(&out);
        wait_for(|| (1..=2).all(|s| !parts.join(format!("slot-00{s}.chunk-1.pending")).exists()));
        let mut f = Follower::open(&out).unwrap();
        let mut seen = Seen::default();
        poll(&mut f, &mut seen);
        // Compressed: 2 chunks of 4 pages in the part file, 2 pages pending; all shown.
        assert_eq!(seen.records(), 2000, "{zstd:?}");
        let journal = parts_dir(&out).join("assembly-0.journal");
        std::fs::write(&journal, b"").unwrap();
        assert_eq!(poll(&mut f, &mut seen).state, RecordingState::Finishing);
        std::fs::remove_file(&journal).unwrap();
        assert_eq!(poll(&mut f, &mut seen).state, RecordingState::Live);
        for n in 10..13 {
            s.write_page(1, &page(1, n)).unwrap();
        }
        // Not flushed: these pages reach the disk only with the finish.
        s.finish(&summary()).unwrap();
        let last = until_finished(&mut f, &mut seen);
        seen.assert_whole(&[(1, 1300), (2, 1000)].into());
        assert_eq!(
            seen.states,
            [
                RecordingState::Live,
                RecordingState::Finishing,
                RecordingState::Live,
                RecordingState::Finished
            ]
        );
        assert_eq!(last.message, None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A finished file opened as it is: every record, and a follower that can take fewer skips the
/// oldest pages whole and says so.
#[test]
fn a_finished_file_and_a_follower_that_falls_behind() {
    let dir = common::scratch_dir("follow-file");
    let out = dir.join("run.dat");
    let mut s = sink(&out, Some(4));
    for n in 0..10 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.finish(&summary()).unwrap();
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    let b = until_finished(&mut f, &mut seen);
    assert_eq!(b.state, RecordingState::Finished);
    seen.assert_whole(&[(1, 1000)].into());
    // 250 records at most: the 7 oldest pages are skipped, the last 2 shown (a third would
    // make 300).
    let mut f = Follower::open(&out).unwrap();
    let b = f.poll(250).unwrap();
    assert_eq!((b.skipped_pages, b.skipped_records), (8, 800));
    assert_eq!(b.records.len(), 200);
    assert_eq!(b.records[0].ts, 801);
    assert_eq!(
        b.losses["missed"], 0,
        "the follower's skips are not the recording's losses"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compressed, step by step: pages pending are shown, and not again when their chunk lands in
/// the part file; a pending file emptied into a tombstone (a chunk the disk refused) is not
/// used and its index is passed over.
#[test]
fn compressed_pending_pages_are_shown_once() {
    let dir = common::scratch_dir("follow-pending");
    let out = dir.join("run.dat");
    let parts = parts_dir(&out);
    let mut s = sink(&out, Some(4));
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    for n in 0..2 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    // No part file yet (no chunk written): the pending pages of chunk 0 are there.
    assert!(parts.join("slot-001.chunk-0.pending").exists());
    // A slot with no chunk written yet (no part file) is read from its pending file.
    assert!(!parts.join("slot-001.pages").exists());
    poll(&mut f, &mut seen);
    seen.assert_whole(&[(1, 200)].into());
    // The chunk fills (4 pages), goes to the compressor, lands in the part file; 1 more page
    // pending for chunk 1.
    for n in 2..5 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    wait_for(|| !parts.join("slot-001.chunk-0.pending").exists());
    poll(&mut f, &mut seen);
    let b = poll(&mut f, &mut seen);
    seen.assert_whole(&[(1, 500)].into());
    assert_eq!(b.losses["damaged_pages"], 0);
    // 2 more pages of chunk 1 pending (3 now): shown.
    for n in 5..7 {
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    poll(&mut f, &mut seen);
    seen.assert_whole(&[(1, 700)].into());
    // Chunk 1 completes: only its last page is new.
    s.write_page(1, &page(1, 7)).unwrap();
    s.flush().unwrap();
    wait_for(|| !parts.join("slot-001.chunk-1.pending").exists());
    poll(&mut f, &mut seen);
    seen.assert_whole(&[(1, 800)].into());
    // Chunk 2's pending file, then emptied into its tombstone as the compressor does when the
    // disk refuses the chunk: the pages shown from it stay shown, nothing more is read from it,
    // and chunk 3 is read next.
    s.write_page(1, &page(1, 8)).unwrap();
    s.flush().unwrap();
    let pending = parts.join("slot-001.chunk-2.pending");
    let lost = parts.join("slot-001.chunk-2.lost");
    // Before the follower reads it: emptied to its header's first bytes, as a cut mid-write.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&pending)
        .unwrap()
        .set_len(10)
        .unwrap();
    poll(&mut f, &mut seen);
    seen.assert_whole(&[(1, 800)].into());
    std::fs::rename(&pending, &lost).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&lost)
        .unwrap()
        .set_len(0)
        .unwrap();
    drop(s);
    let b = poll(&mut f, &mut seen);
    assert_eq!(b.state, RecordingState::Killed);
    seen.assert_whole(&[(1, 800)].into());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rotating recording to `out` (never rotating by itself: the tests call `rotate`).
fn rotating(out: &Path, zstd: Option<usize>, keep: usize) -> RotatingSink {
    let (c, chunk) = match zstd {
        None => (
            Compression::None,
            typhon_recorder::tracedat::DEFAULT_CHUNK_PAGES,
        ),
        Some(n) => (Compression::Zstd { level: 1 }, n),
    };
    let mut s = RotatingSink::create(out, PAGE, c, chunk, u64::MAX, keep).unwrap();
    s.begin(&summary()).unwrap();
    s
}

/// A rotating recording written while the follower polls: 3 slots, 6 segments of 8 pages a
/// slot (a segment switch every 8 pages), every segment kept. Every record once, in order per
/// slot, across the switches; live, then finished once the last segment is.
fn race_segments(zstd: Option<usize>, tag: &str) {
    let dir = common::scratch_dir(tag);
    let out = dir.join("run.dat");
    let mut s = rotating(&out, zstd, 100);
    let mut f = Follower::open(&out).unwrap();
    assert_eq!(f.segment(), Some(segment_path(&out, 1).as_path()));
    assert_eq!(f.out(), out.as_path());
    let (segments, per_segment) = (6u64, 8u64);
    let slots = [1u8, 2, 3];
    // Records the follower has shown: before each rotation the writer waits (a while, at most)
    // until the follower has shown one of the segment's, so that every segment is followed
    // live, not only read once finished.
    let shown = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let shown_w = shown.clone();
    let writer = std::thread::spawn(move || {
        // Until the follower has shown a record of the segment that ends at page `n`.
        let wait = |n: u64| {
            let first = (n - per_segment) * PER_PAGE * slots.len() as u64;
            let until = Instant::now() + Duration::from_secs(10);
            while shown_w.load(std::sync::atomic::Ordering::Relaxed) <= first
                && Instant::now() < until
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        for n in 0..segments * per_segment {
            if n > 0 && n % per_segment == 0 {
                wait(n);
                s.rotate(&summary()).unwrap();
            }
            for &slot in &slots {
                s.write_page(slot, &page(slot, n)).unwrap();
            }
            if n % 2 == 0 {
                s.flush().unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        s.flush().unwrap();
        wait(segments * per_segment);
        s.finish(&summary()).unwrap();
    });
    let mut seen = Seen::default();
    // The segments the follower was in at a poll that showed records while live, and those it
    // was in when it said "finishing".
    let mut live_in = std::collections::BTreeSet::new();
    let mut finishing_in = std::collections::BTreeSet::new();
    let mut track = |b: &FollowBatch, f: &Follower, seen: &Seen| {
        shown.store(seen.records() as u64, std::sync::atomic::Ordering::Relaxed);
        let seg = f.segment().unwrap().to_path_buf();
        match b.state {
            RecordingState::Live if !b.records.is_empty() => {
                live_in.insert(seg);
            }
            RecordingState::Finishing => {
                finishing_in.insert(seg);
            }
            _ => {}
        }
        assert_eq!((b.skipped_segments, &b.message), (0, &None));
    };
    while !writer.is_finished() {
        let b = poll(&mut f, &mut seen);
        track(&b, &f, &seen);
    }
    writer.join().unwrap();
    let last = until_finished(&mut f, &mut seen);
    let want: BTreeMap<u32, u64> = slots
        .iter()
        .map(|&s| (u32::from(s), segments * per_segment * PER_PAGE))
        .collect();
    seen.assert_whole(&want);
    // Live through every rotation (a segment finishing while the next is written is not the
    // recording finishing), finished at the end; "finishing" only in the last segment's finish.
    let lastseg = segment_path(&out, segments);
    assert_eq!(f.segment(), Some(lastseg.as_path()));
    assert_eq!(seen.states.first(), Some(&RecordingState::Live));
    assert_eq!(seen.states.last(), Some(&RecordingState::Finished));
    assert!(
        !seen.states.contains(&RecordingState::Killed),
        "{:?}",
        seen.states
    );
    assert!(
        finishing_in.iter().all(|s| *s == lastseg),
        "finishing said in a segment before the last: {finishing_in:?}"
    );
    assert_eq!(
        live_in.len() as u64,
        segments,
        "records were shown live from every segment (5 switches): {live_in:?}"
    );
    assert_eq!(last.losses["damaged_pages"], 0);
    assert_eq!(last.losses["missed"], 0);
    assert_eq!(
        (
            last.skipped_pages,
            last.skipped_records,
            last.skipped_segments
        ),
        (0, 0, 0)
    );
    assert_eq!(last.message, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rotating_recording_is_followed_across_its_segments() {
    race_segments(None, "follow-seg");
}

#[test]
fn a_rotating_compressed_recording_is_followed_across_its_segments() {
    race_segments(Some(4), "follow-seg-z");
}

/// `keep` 2: segment 1 is deleted before the follower opens the recording (counted skipped and
/// said), and segment 4 while the follower reads it: the rest of segment 4 is read from the
/// part files the follower holds open, so every record of segments 2 to 7 is shown once, in
/// order, and none is skipped.
fn segments_deleted_by_keep(zstd: Option<usize>, tag: &str) {
    let dir = common::scratch_dir(tag);
    let out = dir.join("run.dat");
    let mut s = rotating(&out, zstd, 2);
    let per_segment = 4u64;
    let slots = [1u8, 2];
    // Segment `seg`'s pages (numbered from 1), the first `pages` of them, flushed.
    let write = |s: &mut RotatingSink, seg: u64, pages: std::ops::Range<u64>| {
        for n in pages {
            for &slot in &slots {
                s.write_page(slot, &page(slot, (seg - 1) * per_segment + n))
                    .unwrap();
            }
        }
        s.flush().unwrap();
    };
    // Segments 1, 2, 3 complete, 4 written: segment 1 deleted.
    for seg in 1..=3 {
        write(&mut s, seg, 0..per_segment);
        s.rotate(&summary()).unwrap();
    }
    write(&mut s, 4, 0..2);
    wait_for(|| !segment_path(&out, 1).exists() && segment_path(&out, 3).exists());
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.state, b.skipped_segments), (RecordingState::Live, 1));
    assert_eq!(f.segment(), Some(segment_path(&out, 4).as_path()));
    let msg = b.message.unwrap();
    assert!(
        msg.contains("1 segment(s)") && msg.contains("`keep`"),
        "{msg}"
    );
    // Segments 2 and 3, and segment 4's first 2 pages.
    let mut want: Vec<u64> = (per_segment * PER_PAGE..(3 * per_segment + 2) * PER_PAGE).collect();
    for slot in slots {
        let got = &seen.seqs[&u32::from(slot)];
        assert!(
            *got == want,
            "slot {slot}: {} records from {:?}, want {} from {:?}",
            got.len(),
            got.first(),
            want.len(),
            want.first()
        );
    }
    // The rest of 4, then 5 and 6 complete, 7 written, while the follower does not look:
    // segment 4 (and 3) deleted.
    write(&mut s, 4, 2..per_segment);
    s.rotate(&summary()).unwrap();
    for seg in 5..=6 {
        write(&mut s, seg, 0..per_segment);
        s.rotate(&summary()).unwrap();
    }
    write(&mut s, 7, 0..per_segment);
    wait_for(|| !segment_path(&out, 4).exists() && segment_path(&out, 6).exists());
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.state, b.skipped_segments), (RecordingState::Live, 1));
    assert_eq!(f.segment(), Some(segment_path(&out, 7).as_path()));
    assert!(b.message.unwrap().contains("1 segment(s)"));
    s.finish(&summary()).unwrap();
    let last = until_finished(&mut f, &mut seen);
    assert_eq!(
        (
            last.skipped_segments,
            last.skipped_pages,
            last.skipped_records
        ),
        (1, 0, 0)
    );
    assert!(last.message.unwrap().contains("1 segment(s)"));
    // The rest of segment 4 (read from the deleted part files), then 5 to 7.
    want.extend((3 * per_segment + 2) * PER_PAGE..7 * per_segment * PER_PAGE);
    for slot in slots {
        let got = &seen.seqs[&u32::from(slot)];
        assert!(
            *got == want,
            "slot {slot}: {} records from {:?}, want {} from {:?}",
            got.len(),
            got.first(),
            want.len(),
            want.first()
        );
    }
    assert_eq!(
        seen.states,
        [RecordingState::Live, RecordingState::Finished]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn segments_deleted_by_keep_are_counted_or_read_to_their_end() {
    segments_deleted_by_keep(None, "follow-seg-keep");
}

#[test]
fn compressed_segments_deleted_by_keep_are_counted_or_read_to_their_end() {
    segments_deleted_by_keep(Some(2), "follow-seg-keep-z");
}

/// A rotating recording whose recorder dies (the sink dropped: its lock released, no finish)
/// while the follower reads its last segment: killed, with the `recover OUT` hint; after
/// `typhon-rec recover OUT` (which rebuilds the segments) finished, no record shown twice.
#[test]
fn a_killed_rotating_recording_says_to_recover() {
    let dir = common::scratch_dir("follow-seg-kill");
    let out = dir.join("run.dat");
    let mut s = rotating(&out, None, 10);
    for n in 0..6 {
        if n == 3 {
            s.rotate(&summary()).unwrap();
        }
        s.write_page(1, &page(1, n)).unwrap();
    }
    s.flush().unwrap();
    wait_for(|| segment_path(&out, 1).exists());
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    assert_eq!(poll(&mut f, &mut seen).state, RecordingState::Live);
    // Live while segment 1's background finish holds its lock, then killed.
    drop(s);
    let until = Instant::now() + Duration::from_secs(20);
    let b = loop {
        let b = poll(&mut f, &mut seen);
        if b.state != RecordingState::Live {
            break b;
        }
        assert!(Instant::now() < until, "never killed");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!((b.state, b.skipped_segments), (RecordingState::Killed, 0));
    assert_eq!(f.segment(), Some(segment_path(&out, 2).as_path()));
    let msg = b.message.unwrap();
    assert!(
        msg.contains(&format!("run `typhon-rec recover {}`", out.display()))
            && msg.contains(&parts_dir(&segment_path(&out, 2)).display().to_string()),
        "{msg}"
    );
    seen.assert_whole(&[(1, 600)].into());
    let r = typhon_recorder::sink::recover_segments(&out).unwrap();
    assert_eq!(r.len(), 1, "{r:?}");
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.state, b.message), (RecordingState::Finished, None));
    seen.assert_whole(&[(1, 600)].into());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A segment opened while its finish cleans up (its file made, its parts directory not yet
/// removed, unlocked, its journal gone): the file is the segment's (a rotating recording never
/// starts beside an earlier one's segments), so it is read, not taken for a kill.
#[test]
fn a_segment_met_in_its_finish_clean_up_is_read_from_its_file() {
    let dir = common::scratch_dir("follow-seg-cleanup");
    let out = dir.join("run.dat");
    let mut s = rotating(&out, None, 10);
    s.write_page(1, &page(1, 0)).unwrap();
    s.rotate(&summary()).unwrap();
    s.write_page(1, &page(1, 1)).unwrap();
    s.flush().unwrap();
    let seg1 = segment_path(&out, 1);
    wait_for(|| seg1.exists() && !parts_dir(&seg1).exists());
    std::fs::create_dir(parts_dir(&seg1)).unwrap();
    let mut f = Follower::open(&out).unwrap();
    let mut seen = Seen::default();
    let b = poll(&mut f, &mut seen);
    assert_eq!((b.state, b.skipped_segments), (RecordingState::Live, 0));
    seen.assert_whole(&[(1, 200)].into());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

fn wait_for(mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < until, "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
}

const CHILD_ENV: &str = "TYPHON_FOLLOW_KILL_CHILD";
/// Instants each of the child's threads writes.
const CHILD_RECORDS: i32 = 3000;

/// The child half of `a_killed_recording_says_to_recover`: does nothing unless started by it.
/// A real recorder writes to the file named in the environment from 3 threads, slowly enough to
/// be followed, waits until every page is on disk, says so, and waits to be killed.
#[test]
fn kill_child() {
    let Ok(out) = std::env::var(CHILD_ENV) else {
        return;
    };
    let zstd = std::env::var("TYPHON_FOLLOW_KILL_ZSTD").is_ok();
    let mut b = typhon_recorder::RecorderBuilder::new()
        .output(&out)
        .flush_interval(Duration::from_millis(5))
        .max_page_age(Duration::from_millis(5));
    if zstd {
        b = b.compression(Compression::Zstd { level: 1 });
    }
    let rec = b.start().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    for t in 0..3 {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("worker-{t}"))
            .spawn(move || {
                for i in 0..CHILD_RECORDS {
                    typhon_recorder::instant(100 + t, i);
                    if i % 500 == 499 {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                tx.send(()).unwrap();
                // Keeps its slot until the kill.
                std::thread::sleep(Duration::from_secs(3600));
            })
            .unwrap();
    }
    for _ in 0..3 {
        rx.recv().unwrap();
    }
    rec.drain();
    std::thread::sleep(Duration::from_millis(20));
    rec.drain();
    println!("CHILD-FLUSHED");
    std::thread::sleep(Duration::from_secs(3600));
}

/// A recording killed with SIGKILL while followed: live while it runs, then "killed" with the
/// `recover` hint; every record the parts hold is shown once (as many as `recover` puts in the
/// file), and after `recover` the follower goes on in the recovered file and shows none again.
fn killed(zstd: bool, tag: &str) {
    let dir = common::scratch_dir(tag);
    let out: PathBuf = dir.join("killed.dat");
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["kill_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if zstd {
        cmd.env("TYPHON_FOLLOW_KILL_ZSTD", "1");
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if line.unwrap().contains("CHILD-FLUSHED") {
                let _ = tx.send(());
            }
        }
    });
    wait_for(|| parts_dir(&out).join("session.json").exists());
    let mut f = Follower::open(&out).unwrap();
    let mut per: BTreeMap<u32, Vec<i32>> = BTreeMap::new();
    let mut total = 0u64;
    let mut live_batches = 0;
    let mut take = |b: &FollowBatch, per: &mut BTreeMap<u32, Vec<i32>>| {
        total += b.records.len() as u64;
        for r in &b.records {
            if r.data[2] == K::INSTANT.0 {
                let name = i32::from_le_bytes(r.data[12..16].try_into().unwrap());
                let v = i32::from_le_bytes(r.data[16..20].try_into().unwrap());
                per.entry(name as u32).or_default().push(v);
            }
        }
    };
    let until = Instant::now() + Duration::from_secs(60);
    while rx.try_recv().is_err() {
        assert!(Instant::now() < until, "the child never flushed");
        let b = f.poll(usize::MAX).unwrap();
        assert_eq!(b.state, RecordingState::Live);
        live_batches += usize::from(!b.records.is_empty());
        take(&b, &mut per);
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) with a pid of our own child and SIGKILL has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    assert!(!child.wait().unwrap().success());
    lines.join().unwrap();
    let b = f.poll(usize::MAX).unwrap();
    take(&b, &mut per);
    assert_eq!(b.state, RecordingState::Killed);
    let msg = b.message.clone().unwrap();
    assert!(
        msg.contains(&format!("run `typhon-rec recover {}`", out.display())),
        "{msg}"
    );
    let names: Vec<&str> = b.threads.values().map(String::as_str).collect();
    for t in 0..3 {
        assert!(names.contains(&format!("worker-{t}").as_str()), "{names:?}");
    }
    assert!(
        live_batches >= 2,
        "records were shown while it ran ({live_batches} batches)"
    );
    let expect: Vec<i32> = (0..CHILD_RECORDS).collect();
    assert_eq!(per.len(), 3);
    for (name, v) in &per {
        assert!(
            *v == expect,
            "instants of {name}: not 0..{CHILD_RECORDS} in order, once each"
        );
    }
    // Killed stays killed, and shows nothing more; the follower changes nothing in the
    // directory (names, lengths, times), and a second follower opened on OUT.parts reads the same.
    let before = listing(&parts_dir(&out));
    let again = f.poll(usize::MAX).unwrap();
    let mut g = Follower::open(parts_dir(&out)).unwrap();
    assert_eq!(g.out(), out.as_path());
    assert_eq!(g.poll(usize::MAX).unwrap().records.len() as u64, total);
    assert_eq!(listing(&parts_dir(&out)), before);
    assert_eq!(
        (again.state, again.records.len()),
        (RecordingState::Killed, 0)
    );
    assert_eq!(again.losses["missed"], 0);
    let rec = typhon_recorder::sink::recover(&out).unwrap();
    assert_eq!(
        total, rec.records,
        "the follower showed what recover keeps: {rec:?}"
    );
    let b = f.poll(usize::MAX).unwrap();
    assert_eq!(
        (b.state, b.records.len(), b.message),
        (RecordingState::Finished, 0, None)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_recording_says_to_recover() {
    killed(false, "follow-kill");
}

#[test]
fn a_killed_compressed_recording_says_to_recover() {
    killed(true, "follow-kill-z");
}

/// Each file of `dir` with its length and modification time.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.len(),
                m.modified().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The follower shows records as `stream_records` does (SPEC §15): a slot's static names and
/// a nameless `tracing` entry's name resolved while the recording is live, never `name#N` or
/// an empty name.
#[test]
fn static_names_resolve_while_live() {
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch_dir("follow-static-names");
    let out = dir.join("live.dat");
    let rec = typhon_recorder::RecorderBuilder::new()
        .output(&out)
        .start()
        .unwrap();
    for _ in 0..5 {
        drop(typhon_recorder::span_static("static-step"));
        typhon_recorder::named_instant_static("static-mark", 1);
    }
    rec.drain();
    std::thread::sleep(Duration::from_millis(1200)); // past the default max page age
    let mut f = Follower::open(&out).unwrap();
    let mut names = Vec::new();
    let t0 = Instant::now();
    while names.len() < 10 && t0.elapsed() < Duration::from_secs(20) {
        let b = f.poll(100_000).unwrap();
        assert_eq!(b.state, RecordingState::Live);
        for r in &b.records {
            match typhon_recorder::codec::records::decode(&r.data) {
                Ok((_, typhon_recorder::codec::records::Record::NamedSpan { name, .. }))
                | Ok((_, typhon_recorder::codec::records::Record::NamedInstant { name, .. })) => {
                    names.push(name.to_owned())
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    rec.finish().unwrap();
    names.sort();
    names.dedup();
    assert_eq!(names, ["static-mark", "static-step"]);
}

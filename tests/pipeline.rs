//! The recorder pipeline end to end through the memory sink: exact accounting, order, slot reuse,
//! overload, time extends and long records.

mod recording;

use recording::{read_stream, PageView};
use std::collections::HashMap;
use std::time::Duration;
use typhon_recorder::codec::celog::{CELID_USER, CELZONE_MISC};
use typhon_recorder::codec::records;
use typhon_recorder::codec::TraceEventKind as K;
use typhon_recorder::sink::{MemorySink, SessionSummary, Sink};
use typhon_recorder::{doc_lock, RecorderBuilder};

/// Pages of every slot, decoded and checked.
fn streams(sink: &MemorySink) -> Vec<Vec<PageView>> {
    sink.pages()
        .lock()
        .slots
        .iter()
        .map(|p| read_stream(p))
        .collect()
}

/// The thread name of each slot's first ThreadInfo.
fn slot_names(streams: &[Vec<PageView>]) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for (slot, pages) in streams.iter().enumerate() {
        for p in pages {
            for (_, r) in &p.records {
                if r[2] == K::THREAD_INFO.0 {
                    m.entry(thread_name(r)).or_insert(slot);
                }
            }
        }
    }
    m
}

/// Every ThreadInfo of the user slots, in slot and stream order: (thread id, name, kind).
fn user_thread_infos(sink: &MemorySink) -> Vec<(i32, String, records::ThreadKind)> {
    let mut v = Vec::new();
    for pages in streams(sink).iter().skip(1) {
        for p in pages {
            for (_, r) in &p.records {
                if let records::Record::ThreadInfo {
                    thread_id,
                    name,
                    kind,
                } = records::decode(r).unwrap().1
                {
                    v.push((thread_id, name.to_string(), kind));
                }
            }
        }
    }
    v
}

fn thread_name(r: &[u8]) -> String {
    match records::decode(r).unwrap().1 {
        records::Record::ThreadInfo { name, .. } => name.to_string(),
        other => panic!("not a ThreadInfo: {other:?}"),
    }
}

/// The sequence number a test record carries (None for records without one).
fn seq_of(r: &[u8]) -> Option<u64> {
    match typhon_recorder::codec::TraceEventKind(r[2]) {
        K::INSTANT => Some(u32::from_le_bytes(r[16..20].try_into().unwrap()) as u64),
        K::INGRESS_RECEIVED => Some(
            u16::from_le_bytes(r[16..18].try_into().unwrap()) as u64
                | (u16::from_le_bytes(r[18..20].try_into().unwrap()) as u64) << 16,
        ),
        K::EGRESS_SENT => Some(u32::from_le_bytes(r[16..20].try_into().unwrap()) as u64),
        K::CELOG => {
            let (ev, _) = typhon_recorder::codec::celog::decode_event(&r[12..]).unwrap();
            Some(u32::from_le_bytes(ev.data[..4].try_into().unwrap()) as u64)
        }
        _ => None,
    }
}

fn write_seq(t: u32, i: u32) {
    match i % 4 {
        0 => typhon_recorder::instant(t as i32, i as i32),
        1 => typhon_recorder::ingress_received(t, i as u16, (i >> 16) as u16, 64),
        2 => typhon_recorder::egress_sent(t, i, 128, 1),
        _ => typhon_recorder::celog_data(
            i % 8 == 3,
            CELID_USER,
            &i.to_le_bytes(),
            0,
            CELZONE_MISC,
            7,
            i % 3 == 0,
        )
        .unwrap(),
    }
}

/// Checks a slot's stream: sequence numbers strictly increase and every jump equals the missed
/// count on the page where it happens. Returns (records carrying a sequence, total missed).
fn check_sequence(pages: &[PageView]) -> (u64, u64) {
    let mut next = 0u64;
    let mut seen = 0;
    let mut missed_total = 0;
    let mut carried = 0u64;
    for p in pages {
        if p.missed > 0 {
            missed_total += p.missed as u64;
            carried += p.missed as u64;
        }
        for (_, r) in &p.records {
            if let Some(i) = seq_of(r) {
                assert_eq!(
                    i,
                    next + carried,
                    "a gap must equal the missed count before it"
                );
                next = i + 1;
                carried = 0;
                seen += 1;
            }
        }
    }
    (seen, missed_total)
}

#[test]
fn eight_threads_million_records_each_all_accounted() {
    let _g = doc_lock();
    const THREADS: u32 = 8;
    const N: u32 = 1_000_000;
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .ring_bytes(1 << 22)
        .start()
        .unwrap();
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("w{t}"))
                .spawn(move || {
                    for i in 0..N {
                        write_seq(t, i);
                    }
                })
                .unwrap()
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let stats = rec.finish().unwrap();
    let st = streams(&sink);
    let names = slot_names(&st);
    for t in 0..THREADS {
        let slot = names[&format!("w{t}")];
        let (seen, missed) = check_sequence(&st[slot]);
        assert_eq!(
            seen + missed,
            N as u64,
            "thread {t}: records + missed = attempted"
        );
        let s = stats.slot(slot as u8).unwrap();
        let in_file: u64 = st[slot].iter().map(|p| p.records.len() as u64).sum();
        assert_eq!(s.written, in_file);
        assert_eq!(s.missed, missed);
        assert_eq!(s.attempted, s.written + s.missed);
    }
    assert_eq!(stats.no_slot, 0);
}

/// A sink that takes its time, so rings overflow.
struct Slow(MemorySink, Duration);
impl Sink for Slow {
    fn write_page(&mut self, slot: u8, page: &[u8]) -> std::io::Result<()> {
        std::thread::sleep(self.1);
        self.0.write_page(slot, page)
    }
    fn finish(&mut self, s: &SessionSummary) -> std::io::Result<()> {
        self.0.finish(s)
    }
}

#[test]
fn overload_drops_are_counted_exactly_and_placed_after_their_gap() {
    let _g = doc_lock();
    let mem = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(Slow(mem.clone(), Duration::from_millis(2)))
        .ring_bytes(4096)
        .flush_interval(Duration::from_millis(1))
        .start()
        .unwrap();
    const N: u32 = 300_000;
    let hs: Vec<_> = (0..2)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("o{t}"))
                .spawn(move || (0..N).for_each(|i| write_seq(t, i)))
                .unwrap()
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let stats = rec.finish().unwrap();
    let st = streams(&mem);
    let names = slot_names(&st);
    let mut total_missed = 0;
    for t in 0..2 {
        let slot = names[&format!("o{t}")];
        let (seen, missed) = check_sequence(&st[slot]);
        assert_eq!(seen + missed, N as u64);
        let s = stats.slot(slot as u8).unwrap();
        assert_eq!(s.missed, missed);
        assert_eq!(s.attempted, s.written + s.missed);
        let thread_infos: u64 = st[slot]
            .iter()
            .flat_map(|p| &p.records)
            .filter(|(_, r)| r[2] == K::THREAD_INFO.0)
            .count() as u64;
        // Every record in the file is a sequenced record or a ThreadInfo (the claim's, plus
        // carriers of trailing drops).
        assert_eq!(s.written, seen + thread_infos);
        total_missed += missed;
    }
    assert!(total_missed > 0, "the slow sink must cause drops");
}

#[test]
fn thousand_short_lived_threads_reuse_slots() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .ring_bytes(4096)
        .flush_interval(Duration::from_millis(1))
        .start()
        .unwrap();
    for batch in 0..50 {
        let hs: Vec<_> = (0..20)
            .map(|k| {
                let t = batch * 20 + k;
                std::thread::Builder::new()
                    .name(format!("s{t}"))
                    .spawn(move || (0..10).for_each(|i| write_seq(t, i)))
                    .unwrap()
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
    }
    let stats = rec.finish().unwrap();
    let st = streams(&sink);
    let mut per_thread: HashMap<String, u64> = HashMap::new();
    let mut current: HashMap<usize, String> = HashMap::new();
    for (slot, pages) in st.iter().enumerate().skip(1) {
        for p in pages {
            for (_, r) in &p.records {
                if r[2] == K::THREAD_INFO.0 {
                    current.insert(slot, thread_name(r));
                } else {
                    *per_thread.entry(current[&slot].clone()).or_default() += 1;
                }
            }
        }
    }
    assert_eq!(per_thread.len(), 1000);
    assert!(per_thread.values().all(|&n| n == 10));
    let max_slot = st.len() - 1;
    assert!(
        max_slot < 255,
        "slots must be reused, highest used {max_slot}"
    );
    assert_eq!(stats.total_missed(), 0);
    assert_eq!(stats.user_written(), 1000 * 11);
    let users = stats.slots.iter().filter(|s| s.slot != 0);
    assert_eq!(users.clone().map(|s| s.threads).sum::<u64>(), 1000);
    assert!(users
        .clone()
        .all(|s| s.thread_ids.len() <= 64 && s.threads >= s.thread_ids.len() as u64));
}

#[test]
fn three_hundred_live_threads_count_the_slotless() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .ring_bytes(4096)
        .start()
        .unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(300));
    let hs: Vec<_> = (0..300u32)
        .map(|t| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                write_seq(t, 0);
                b.wait(); // all 300 alive at once
                write_seq(t, 1);
            })
        })
        .collect();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let stats = rec.finish().unwrap();
    assert_eq!(stats.no_slot, 45 * 2);
    assert_eq!(stats.user_written(), 255 * 3);
}

#[test]
fn long_gaps_use_time_extends_and_big_records_the_long_form() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    // One page for the whole test, however slow the machine (no age-based early flush).
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .max_page_age(Duration::from_secs(600))
        .start()
        .unwrap();
    let t0 = rec.now();
    let ns = |k: u64| rec.ns_to_ticks(rec.clock().to_ns(t0) + k);
    std::thread::spawn({
        let (a, b, c) = (ns(50_000_000), ns(550_000_000), ns(2_050_000_000));
        move || {
            typhon_recorder::set_thread_info("gaps", records::ThreadKind::Worker);
            typhon_recorder::instant_at(a, 1, 1);
            typhon_recorder::instant_at(b, 1, 2); // 0.5 s later: > 2^27 ns
            let name = "n".repeat(100); // 138-byte NamedSpan: long form
            let s = typhon_recorder::span_at(&name, b);
            s.end_at(c);
        }
    })
    .join()
    .unwrap();
    rec.finish().unwrap();
    let pages = sink.pages();
    let pages = pages.lock();
    let slot_pages = &pages.slots[1];
    assert_eq!(slot_pages.len(), 1);
    let page = &slot_pages[0];
    // Walk the raw record headers.
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap()) as usize & ((1 << 27) - 1);
    let mut off = 16;
    let mut types = Vec::new();
    while off < 16 + commit {
        let h = u32::from_le_bytes(page[off..off + 4].try_into().unwrap());
        let t = h & 31;
        types.push(t);
        off += match t {
            0 => 8 + u32::from_le_bytes(page[off + 4..off + 8].try_into().unwrap()) as usize - 4,
            30 => 8,
            n => 4 + 4 * n as usize,
        };
    }
    // ThreadInfo, Instant, extend + Instant, extend + long NamedSpan.
    assert_eq!(types, vec![6, 5, 30, 5, 30, 0]);
    let v = recording::read_page(page);
    let times: Vec<u64> = v.records.iter().map(|r| r.0).collect();
    // Page times: the span's is its end. (The first Instant's page time may be its claim's
    // ThreadInfo time on a slow machine, so only lower bounds hold exactly.)
    assert!(times[2] - times[1] >= 1 << 27);
    assert!(times[3] - times[2] >= 1_499_000_000);
}

#[test]
fn records_of_a_thread_that_panics_are_kept() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    let r = std::thread::spawn(|| {
        for i in 0..100 {
            typhon_recorder::instant(9, i);
        }
        panic!("worker failed");
    })
    .join();
    assert!(r.is_err());
    let stats = rec.finish().unwrap();
    assert_eq!(stats.user_written(), 101);
}

#[test]
fn spans_nest_and_carry_ids() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    std::thread::spawn(|| {
        let outer = typhon_recorder::span("outer");
        let oid = outer.id();
        let (hi, lo) = typhon_recorder::command_causal_id(5, 77, 9);
        {
            let inner =
                typhon_recorder::traced_span("inner", typhon_recorder::TraceContext { hi, lo });
            assert_eq!(inner.id(), oid + 1);
        }
        drop(outer);
    })
    .join()
    .unwrap();
    rec.finish().unwrap();
    let st = streams(&sink);
    let recs: Vec<_> = st[1].iter().flat_map(|p| p.records.clone()).collect();
    let inner = records::decode_fields(&recs[1].1).unwrap();
    let outer = records::decode_fields(&recs[2].1).unwrap();
    assert_eq!(inner.def.unwrap().kind, K::TRACED_SPAN);
    assert_eq!(outer.def.unwrap().kind, K::NAMED_SPAN);
    let oid = outer.get("span_id").unwrap().as_u64().unwrap();
    assert_eq!(oid >> 56, 1);
    assert_eq!(inner.get("parent_span_id").unwrap().as_u64(), Some(oid));
    assert_eq!(outer.get("parent_span_id").unwrap().as_u64(), Some(0));
    let hi = inner.get("trace_id_hi").unwrap().as_u64().unwrap();
    assert!(typhon_recorder::is_command_causal_id(hi));
    // Page time of a span is its end: the outer span (ends last) is after the inner one.
    assert!(recs[2].0 >= recs[1].0);
    let dur = outer.get("duration_ns").unwrap();
    assert!(matches!(dur, records::FieldValue::Signed(d) if d >= 0));
}

#[test]
fn a_refused_second_start_leaves_no_files() {
    let _g = doc_lock();
    let rec = RecorderBuilder::new()
        .sink(MemorySink::new())
        .start()
        .unwrap();
    let out = std::env::temp_dir().join(format!("typhon-second-{}.dat", std::process::id()));
    let r = RecorderBuilder::new().output(&out).start();
    assert!(matches!(
        r,
        Err(typhon_recorder::RecorderError::AlreadyInstalled)
    ));
    assert!(!typhon_recorder::sink::parts_dir(&out).exists());
    assert!(!out.exists());
    rec.finish().unwrap();
}

/// `Recorder::drain`: once writer threads have written (and still hold their slots), one drain
/// makes `stats()` count every record they wrote, exactly, while the recorder keeps running; a
/// drain that races a live writer returns.
#[test]
fn drain_counts_every_record_written_before_it() {
    let _g = doc_lock();
    let rec = RecorderBuilder::new()
        .sink(MemorySink::new())
        .flush_interval(Duration::from_secs(3600)) // only wake-ups and drains run cycles
        .start()
        .unwrap();
    const THREADS: u32 = 3;
    // A tenth of the default ring each: no wake-up from a half-full ring.
    const N: u32 = 5_000;
    // The writers stay alive (a thread's exit would wake the flusher) until the counts are
    // checked: only the drain makes the flusher run a cycle before that.
    let written = std::sync::Arc::new(std::sync::Barrier::new(THREADS as usize + 1));
    let checked = std::sync::Arc::new(std::sync::Barrier::new(THREADS as usize + 1));
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let (written, checked) = (written.clone(), checked.clone());
            std::thread::spawn(move || {
                for i in 0..N {
                    typhon_recorder::instant(t as i32, i as i32);
                }
                written.wait();
                checked.wait();
            })
        })
        .collect();
    written.wait();
    rec.drain();
    let s = rec.stats();
    // Each thread: its ThreadInfo and N instants.
    assert_eq!(s.user_written(), (THREADS * (N + 1)) as u64);
    assert_eq!(s.user_attempted(), s.user_written());
    assert_eq!(s.total_missed(), 0);
    checked.wait();
    hs.into_iter().for_each(|h| h.join().unwrap());
    // Live writers on another thread: the drain still returns.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let st = stop.clone();
    let live = std::thread::spawn(move || {
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            typhon_recorder::instant(9, 9);
        }
    });
    let before = rec.stats().user_written();
    rec.drain();
    assert!(rec.stats().user_written() >= before);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    live.join().unwrap();
    let fin = rec.finish().unwrap();
    assert_eq!(
        fin.user_attempted(),
        fin.user_written() + fin.total_missed()
    );
}

/// `register_thread` claims a thread's slot (writing its ThreadInfo) before its first event, once;
/// registering writes and counts nothing else, also when no slot is left.
#[test]
fn register_thread_claims_the_slot_up_front_and_counts_nothing_itself() {
    use std::sync::{Arc, Barrier};
    use typhon_recorder::register_thread;
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .ring_bytes(4096)
        .flush_interval(Duration::from_secs(3600)) // only drains and thread exits run cycles
        .start()
        .unwrap();
    let (held, release) = (Arc::new(Barrier::new(256)), Arc::new(Barrier::new(256)));
    let hs: Vec<_> = (0..255)
        .map(|t| {
            let (held, release) = (held.clone(), release.clone());
            std::thread::spawn(move || {
                assert!(register_thread());
                if t == 0 {
                    assert!(register_thread(), "a second call keeps the slot");
                }
                held.wait(); // every slot taken
                release.wait();
            })
        })
        .collect();
    held.wait();
    rec.drain();
    let s = rec.stats();
    assert_eq!(
        s.user_written(),
        255,
        "one ThreadInfo per registered thread"
    );
    assert_eq!(s.no_slot, 0);
    // All 255 slots are held: a late thread gets none, and only its event is counted.
    let late = std::thread::spawn(|| {
        let r = register_thread();
        typhon_recorder::instant(1, 1);
        r
    });
    assert!(!late.join().unwrap());
    release.wait();
    hs.into_iter().for_each(|h| h.join().unwrap());
    let stats = rec.finish().unwrap();
    assert_eq!(stats.no_slot, 1);
    assert_eq!(stats.user_written(), 255);
    // Every registered thread's ThreadInfo is in its slot's stream (and the recorder's own in
    // slot 0's).
    let names = slot_names(&streams(&sink));
    assert_eq!(names.values().filter(|&&slot| slot != 0).count(), 255);
}

/// The name and kind a thread's ThreadInfo carries: `set_thread_info`'s, else the thread's own
/// name, else `thread-{tid}`; a spawned thread is a Worker unless it says otherwise.
#[test]
fn thread_info_names_a_thread_by_what_it_has() {
    use records::ThreadKind;
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    std::thread::spawn(|| typhon_recorder::instant(1, 1))
        .join()
        .unwrap();
    std::thread::Builder::new()
        .name("render".into())
        .spawn(|| typhon_recorder::instant(2, 1))
        .unwrap()
        .join()
        .unwrap();
    std::thread::Builder::new()
        .name("ignored".into())
        .spawn(|| {
            typhon_recorder::set_thread_info("net-io", ThreadKind::Pool);
            typhon_recorder::instant(3, 1)
        })
        .unwrap()
        .join()
        .unwrap();
    rec.finish().unwrap();
    let mut infos = user_thread_infos(&sink);
    infos.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(infos.len(), 3, "{infos:?}");
    assert_eq!(infos[0].1, "net-io");
    assert_eq!(infos[0].2, ThreadKind::Pool);
    assert_eq!(infos[1].1, "render");
    assert_eq!(infos[1].2, ThreadKind::Worker);
    let (tid, name, kind) = &infos[2];
    assert_eq!(name, &format!("thread-{tid}"), "an unnamed thread");
    assert!(*tid > 0);
    assert_eq!(*kind, ThreadKind::Worker);
    // The summary names each slot after its first thread (the threads ran one after another,
    // so they may have shared a slot) and counts all three.
    let p = sink.pages();
    let summary = p.lock().summary.clone().unwrap();
    let user: Vec<_> = summary.slots.iter().filter(|s| s.slot != 0).collect();
    assert!(user.iter().all(|s| infos.iter().any(|i| i.1 == s.name)));
    assert_eq!(user.iter().map(|s| s.threads).sum::<u64>(), 3);
    assert!(user.iter().any(|s| s.thread_ids.contains(tid)));
    // Slot 0, the recorder's own stream, starts with its ThreadInfo: the recorder's name and the
    // process id. (Before: the name was empty since the carrier change.)
    let slot0 = &streams(&sink)[0];
    let first = &slot0[0].records[0].1;
    match records::decode(first).unwrap().1 {
        records::Record::ThreadInfo {
            thread_id,
            name,
            kind,
        } => {
            assert_eq!(name, "typhon-recorder");
            assert_eq!(thread_id as u32, std::process::id());
            assert_eq!(kind, ThreadKind::Other);
        }
        other => panic!("slot 0 starts with {other:?}"),
    }
}

/// Input the decoders would reject never reaches the ring: each bad write returns its error,
/// writes nothing, and the thread's records before and after it arrive whole, with the counts
/// exact. (Before: a CeLog id of 90 published unwritten ring space, which cut the thread's
/// stream there; a 70 000-byte record on 128 KiB pages was written with its size wrapped; and
/// write_record took known kinds whose fields their decoder rejects.)
#[test]
fn bad_input_is_refused_before_it_reaches_the_ring() {
    use typhon_recorder::WriteError;
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .page_size(128 * 1024)
        .start()
        .unwrap();
    std::thread::spawn(|| {
        let celog = |id| typhon_recorder::celog_data(true, id, b"x", 0, CELZONE_MISC, 0, false);
        let invalid = |r: Result<(), WriteError>| matches!(r, Err(WriteError::Invalid(_)));
        typhon_recorder::instant(1, 1);
        assert!(invalid(celog(90)), "CELID_FLAGGED is not an event id");
        assert!(invalid(celog(0x3FFF)), "CELID_MAX is not a user id");
        celog(CELID_USER).unwrap();
        // A NamedSpan whose flags say "traced", and whose name has no NUL.
        let mut span = [0u8; 27];
        span[24] = 1;
        span[25..].copy_from_slice(b"ab");
        assert!(invalid(typhon_recorder::write_record(
            K::NAMED_SPAN,
            &span,
            None
        )));
        // A CeLog event with the reserved bit 30 set.
        assert!(invalid(typhon_recorder::write_record(
            K::CELOG,
            &[0, 0, 0, 0x40],
            None
        )));
        // A ThreadInfo whose name length runs past the record.
        let mut ti = [0u8; 11];
        ti[4] = 200;
        assert!(invalid(typhon_recorder::write_record(
            K::THREAD_INFO,
            &ti,
            None
        )));
        // Larger than any record's u16 size, though the page would hold it.
        assert_eq!(
            typhon_recorder::write_record(K(100), &vec![7; 70_000], None),
            Err(WriteError::TooLarge {
                size: 70_012,
                max: 65_534
            })
        );
        // A span whose record would be as large: refused (and counted) when it opens.
        drop(typhon_recorder::span(&"n".repeat(70_000)));
        assert!(matches!(
            typhon_recorder::span_begin(&"n".repeat(70_000), None, None),
            Err(WriteError::TooLarge { .. })
        ));
        // The largest record there is goes through.
        typhon_recorder::write_record(K(100), &vec![7; 65_522], None).unwrap();
        typhon_recorder::instant(2, 2);
    })
    .join()
    .unwrap();
    let stats = rec.finish().unwrap();
    let streams = streams(&sink);
    let mut kinds = Vec::new();
    for p in &streams[1] {
        for (_, r) in &p.records {
            records::decode_fields(r).unwrap();
            kinds.push((K(r[2]), r.len()));
        }
    }
    assert_eq!(
        kinds,
        [
            (K::THREAD_INFO, kinds[0].1),
            (K::INSTANT, 20),
            (K::CELOG, 24),
            (K(100), 65_534),
            (K::INSTANT, 20),
        ]
    );
    let s = stats.slot(1).unwrap();
    assert_eq!((s.attempted, s.written, s.missed), (5, 5, 0));
    // Every write that returned an error is counted once: two CeLog ids, three payloads,
    // the 70 000-byte record, the span guard and the span_begin.
    assert_eq!(s.refused, 8, "each refused write, once");
}

/// The ThreadInfo the flusher adds to carry a missed count restates the slot's latest thread:
/// its id with its own name. (It paired the latest id with the slot's first thread's name
/// once threads had reused the slot.)
///
/// A carrier is written only when a thread's run ends in a loss, which depends on how far the
/// flusher got while the threads wrote; the scenario is repeated (up to 5 times) until one
/// is, and every ThreadInfo of every attempt is checked.
#[test]
fn carrier_thread_infos_name_the_thread_they_restate() {
    let _g = doc_lock();
    let mut seen = Vec::new();
    for _attempt in 0..5 {
        let sink = MemorySink::new();
        let rec = RecorderBuilder::new()
            .sink(sink.clone())
            .ring_bytes(4096)
            .start()
            .unwrap();
        for t in 0..4 {
            std::thread::Builder::new()
                .name(format!("t{t}"))
                .spawn(|| {
                    for i in 0..5000 {
                        typhon_recorder::instant(1, i); // a 4 KiB ring overflows: drops
                    }
                })
                .unwrap()
                .join()
                .unwrap();
        }
        let stats = rec.finish().unwrap();
        assert!(stats.total_missed() > 0, "the test needs drops");
        let mut names: HashMap<i32, String> = HashMap::new();
        let all = user_thread_infos(&sink);
        let infos = all.len();
        for (thread_id, name, _) in all {
            let first = names.entry(thread_id).or_insert_with(|| name.clone());
            assert_eq!(
                *first, name,
                "thread {thread_id} restated under another name"
            );
        }
        assert_eq!(names.len(), 4);
        if infos > 4 {
            return;
        }
        seen.push(infos);
    }
    panic!("no carrier ThreadInfo in 5 attempts (ThreadInfos per attempt: {seen:?})");
}

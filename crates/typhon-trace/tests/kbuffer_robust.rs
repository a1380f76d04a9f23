//! `read_buffer` (libtraceevent 1.8.2+ semantics; the installed 1.7.1 lacks it, so these are
//! checked against the C source's behaviour) and the no-panic / always-terminates guarantee of
//! the reader on arbitrary bytes.

mod common;

use common::RawPage;
use proptest::prelude::*;
use typhon_recorder::page::PageWriter;
use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

/// Ten 4-byte records at times 100..=109: data offsets 0, 8, ..., 72; commit 80.
fn ten_records() -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    for i in 0..10u8 {
        w.try_push(100 + u64::from(i), &[i; 4]).unwrap();
    }
    w.finish().to_vec()
}

fn le64() -> KBuffer<'static> {
    KBuffer::new(LongSize::Eight, Endian::Little)
}

/// Ten records at times 100..=109 on a page that reports `missed` events.
fn ten_records_after(missed: u64) -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    w.set_missed(missed).unwrap();
    for i in 0..10u8 {
        w.try_push(100 + u64::from(i), &[i; 4]).unwrap();
    }
    w.finish().to_vec()
}

#[test]
fn read_buffer_whole_page_comes_out_as_it_was() {
    let page = ten_records();
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    let mut out = vec![0xEEu8; 200];
    assert_eq!(kb.read_buffer(&mut out), Ok(80));
    // The page's time is its first record's and that record's delta is 0, so rewriting the
    // header and zeroing the delta reproduce the page.
    assert_eq!(&out[..96], &page[..96]);
    assert!(out[96..].iter().all(|&b| b == 0xEE)); // nothing past start + commit
    assert!(kb.read_event().is_none());
    assert_eq!(kb.read_buffer(&mut out), Ok(0)); // at the end
}

#[test]
fn read_buffer_carries_the_missed_count_of_the_first_records() {
    let page = ten_records_after(7);
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(kb.missed_events(), 7);
    // Room for every record and the count after them.
    let mut out = vec![0xAAu8; 16 + 80 + 8];
    assert_eq!(kb.read_buffer(&mut out), Ok(80));
    let commit = u64::from_le_bytes(out[8..16].try_into().unwrap());
    assert_eq!(
        commit,
        80 | 1 << 31 | 1 << 30,
        "missed and stored flags, 80 bytes"
    );
    assert_eq!(u64::from_le_bytes(out[96..104].try_into().unwrap()), 7);
    let mut kb2 = le64();
    kb2.load_subbuffer(&out).unwrap();
    assert_eq!(kb2.missed_events(), 7);
    assert_eq!(kb2.subbuffer_size(), 80);
    // Room for three records but not the count: only the missed flag is set.
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    let mut out = vec![0xAAu8; 16 + 24 + 7];
    assert_eq!(kb.read_buffer(&mut out), Ok(24));
    assert_eq!(
        u64::from_le_bytes(out[8..16].try_into().unwrap()),
        24 | 1 << 31
    );
    let mut kb2 = le64();
    kb2.load_subbuffer(&out).unwrap();
    assert_eq!(kb2.missed_events(), -1, "missed, count unknown");
    // The rest of the page does not follow the loss: no flags.
    let mut rest = vec![0u8; 200];
    assert_eq!(kb.read_buffer(&mut rest), Ok(80));
    assert_eq!(u64::from_le_bytes(rest[8..16].try_into().unwrap()), 56);
}

#[test]
fn read_buffer_partial_rewrites_header_and_first_delta() {
    let page = ten_records();
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    kb.next_event();
    kb.next_event(); // at record 2 (ts 102)
    let mut out = vec![0u8; 16 + 8 * 4 + 4];
    assert_eq!(kb.read_buffer(&mut out), Ok(48)); // records 2..=5, ends at data index 48
    assert_eq!(u64::from_le_bytes(out[0..8].try_into().unwrap()), 102);
    assert_eq!(u64::from_le_bytes(out[8..16].try_into().unwrap()), 32);
    assert_eq!(u32::from_le_bytes(out[16..20].try_into().unwrap()), 1); // delta zeroed
    assert_eq!(&out[20..48], &page[36..64]);
    assert_eq!(kb.read_event().unwrap().timestamp, 106);
    let mut kb2 = le64();
    kb2.load_subbuffer(&out).unwrap();
    let ts: Vec<u64> = std::iter::from_fn(|| {
        let e = kb2.read_event()?;
        kb2.next_event();
        Some(e.timestamp)
    })
    .collect();
    assert_eq!(ts, vec![102, 103, 104, 105]);
}

#[test]
fn read_buffer_takes_a_record_that_ends_exactly_at_len() {
    let page = ten_records();
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    kb.next_event(); // record 1
    let mut out = vec![0u8; 16 + 8 * 3];
    // Records 1, 2 and 3 fill `out` exactly (1.8.0 and 1.8.1 stopped one short).
    assert_eq!(kb.read_buffer(&mut out), Ok(32));
    assert_eq!(u64::from_le_bytes(out[8..16].try_into().unwrap()), 24);
    assert_eq!(kb.curr_index(), 32);
}

#[test]
fn read_buffer_too_small_and_not_loaded() {
    let page = ten_records();
    let mut kb = le64();
    assert!(kb.read_buffer(&mut [0u8; 64]).is_err());
    kb.load_subbuffer(&page).unwrap();
    kb.next_event();
    assert_eq!(kb.read_buffer(&mut [0u8; 23]), Ok(-1)); // header 16 + record 8 > 23
    assert_eq!(kb.read_buffer(&mut [0u8; 8]), Ok(-1));
    let mut out = [0u8; 25];
    assert_eq!(kb.read_buffer(&mut out), Ok(16)); // exactly one record
}

#[test]
fn read_buffer_32_bit_big_endian() {
    let mut r = RawPage::new(false, true);
    for i in 0..4u32 {
        r.hdr(1, if i == 0 { 0 } else { 7 });
        r.payload(i, 4);
    }
    let page = r.page(1000, 32, 0, None, 4096);
    let mut kb = KBuffer::new(LongSize::Four, Endian::Big);
    kb.load_subbuffer(&page).unwrap();
    kb.next_event(); // ts 1007
    let mut out = vec![0u8; 12 + 17];
    assert_eq!(kb.read_buffer(&mut out), Ok(24));
    assert_eq!(u64::from_be_bytes(out[0..8].try_into().unwrap()), 1007);
    assert_eq!(u32::from_be_bytes(out[8..12].try_into().unwrap()), 16);
    assert_eq!(u32::from_be_bytes(out[12..16].try_into().unwrap()), 1 << 27); // type 1, delta 0
    let mut kb2 = KBuffer::new(LongSize::Four, Endian::Big);
    kb2.load_subbuffer(&out).unwrap();
    assert_eq!(kb2.read_event().unwrap().timestamp, 1007);
    assert_eq!(kb2.next_event().unwrap().timestamp, 1014);
}

/// Exercises every entry point; panics only if the reader does.
fn poke(page: &[u8], ls: LongSize, en: Endian, probes: &[i32], lens: &[usize]) {
    let mut kb = KBuffer::new(ls, en);
    let _ = kb.load_subbuffer(page);
    let mut steps = 0;
    while let Some(ev) = kb.read_event() {
        let _ = (
            ev.data.len(),
            kb.event_size(),
            kb.curr_size(),
            kb.curr_offset(),
            kb.missed_events(),
        );
        kb.next_event();
        steps += 1;
        assert!(steps <= page.len(), "the walk does not terminate");
    }
    let _ = (
        kb.error(),
        kb.start_of_data(),
        kb.subbuffer_size(),
        kb.timestamp(),
    );
    for &o in probes {
        let _ = kb.read_at_offset(o);
    }
    for &n in lens {
        let mut out = vec![0u8; n];
        let _ = kb.load_subbuffer(page);
        let mut rounds = 0;
        while let Ok(r) = kb.read_buffer(&mut out) {
            rounds += 1;
            if r <= 0 || rounds > page.len() {
                break;
            }
        }
    }
}

fn mode() -> impl Strategy<Value = (LongSize, Endian)> {
    (
        prop_oneof![Just(LongSize::Four), Just(LongSize::Eight)],
        prop_oneof![Just(Endian::Little), Just(Endian::Big)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn never_panics_on_random_bytes(
        page in prop::collection::vec(any::<u8>(), 0..700),
        (ls, en) in mode(),
        probes in prop::collection::vec(any::<i32>(), 0..4),
        lens in prop::collection::vec(0usize..800, 0..3),
    ) {
        poke(&page, ls, en, &probes, &lens);
    }

    #[test]
    fn never_panics_on_damaged_writer_pages(
        sizes in prop::collection::vec(0usize..300, 1..30),
        flips in prop::collection::vec((0usize..4096, any::<u8>()), 1..12),
        truncate in prop::option::of(0usize..4096),
        (ls, en) in mode(),
    ) {
        let mut w = PageWriter::new(4096).unwrap();
        w.set_missed(5).unwrap();
        for (i, n) in sizes.iter().enumerate() {
            let _ = w.try_push(i as u64 * 999_999, &vec![0x5A; *n]);
        }
        let mut page = w.finish().to_vec();
        let span = 64.max(page.len() / 8); // mostly the header and the first records
        for (at, b) in flips {
            page[at % span] ^= b;
        }
        if let Some(t) = truncate {
            page.truncate(t);
        }
        poke(&page, ls, en, &[0, 17, 100, 5000, -3], &[0, 20, 100, 4096]);
    }
}

//! The Rust kbuffer reproduces, number for number, the outputs libtraceevent 1.7.1 gave on the
//! hand-built pages of research/ftrace-kbuffer-format.md §8.

mod common;

use std::fmt::Write as _;

use common::*;
use typhon_recorder::page::{RB_MISSED_EVENTS, RB_MISSED_STORED};
use typhon_trace::kbuffer::{Endian, KBuffer, LongSize};

/// The §8 per-record line (the pointer it printed is left out, as in the doc).
fn walk(kb: &mut KBuffer<'_>, page: &[u8]) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "subbuffer_size={} start_of_data={} kbuffer_timestamp={}",
        kb.subbuffer_size(),
        kb.start_of_data(),
        kb.timestamp()
    )
    .unwrap();
    let mut i = 0;
    while let Some(ev) = kb.read_event() {
        let off = ev.data_offset;
        let first = u32::from_ne_bytes(page[off..off + 4].try_into().unwrap());
        writeln!(s, "  ev{i} ts={} data_off_in_page={} curr_offset={} curr_index={} event_size={} curr_size={} missed={} first_u32=0x{first:08x}",
            ev.timestamp, off, kb.curr_offset(), kb.curr_index(), kb.event_size(), kb.curr_size(),
            kb.missed_events()).unwrap();
        kb.next_event();
        i += 1;
    }
    writeln!(s, "  after loop: curr_offset={}", kb.curr_offset()).unwrap();
    s
}

fn le64() -> KBuffer<'static> {
    KBuffer::new(LongSize::Eight, Endian::Little)
}

#[test]
fn main_page_le64_missed_stored() {
    let page = section8_records(true, false).page(1_000_000, 324, MISSED_BOTH, Some(12345), 4096);
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(walk(&mut kb, &page), "\
subbuffer_size=324 start_of_data=16 kbuffer_timestamp=1000010
  ev0 ts=1000010 data_off_in_page=20 curr_offset=16 curr_index=0 event_size=8 curr_size=12 missed=12345 first_u32=0xaaaa0001
  ev1 ts=672088660 data_off_in_page=40 curr_offset=36 curr_index=20 event_size=4 curr_size=8 missed=0 first_u32=0xbbbb0001
  ev2 ts=672088663 data_off_in_page=64 curr_offset=56 curr_index=40 event_size=120 curr_size=128 missed=0 first_u32=0xcccc0000
  ev3 ts=672088667 data_off_in_page=192 curr_offset=184 curr_index=168 event_size=8 curr_size=16 missed=0 first_u32=0xdddd0001
  ev4 ts=5000000000 data_off_in_page=212 curr_offset=208 curr_index=192 event_size=12 curr_size=16 missed=0 first_u32=0xeeee0001
  ev5 ts=5000000100 data_off_in_page=228 curr_offset=224 curr_index=208 event_size=112 curr_size=116 missed=0 first_u32=0xffff0000
  after loop: curr_offset=340
");
    assert!(kb.read_event().is_none());

    let rao =
        |kb: &mut KBuffer<'_>, off| kb.read_at_offset(off).map(|e| (e.data_offset, e.timestamp));
    assert_eq!(rao(&mut kb, 0), Some((20, 1000010)));
    assert_eq!(kb.curr_offset(), 16);
    assert_eq!(rao(&mut kb, 36), Some((40, 672088660)));
    assert_eq!(kb.curr_offset(), 36);
    assert_eq!(rao(&mut kb, 30), Some((40, 672088660)));
    assert_eq!(kb.curr_offset(), 36);
    assert_eq!(rao(&mut kb, 60), Some((192, 672088667)));
    assert_eq!((kb.curr_offset(), kb.missed_events()), (184, 0));
    assert_eq!(rao(&mut kb, 4000), None);
}

#[test]
fn missed_flag_variants() {
    let r = section8_records(true, false);
    let cases: [(u64, Option<u64>, i32); 4] = [
        (RB_MISSED_EVENTS, None, -1),
        (0, None, 0),
        (RB_MISSED_STORED, Some(777), 0),
        (MISSED_BOTH, Some(0x1_0000_0005), 5),
    ];
    for (flags, stored, want) in cases {
        let page = r.page(1_000_000, 324, flags, stored, 4096);
        let mut kb = le64();
        kb.load_subbuffer(&page).unwrap();
        assert_eq!(kb.read_event().unwrap().timestamp, 1000010);
        assert_eq!(kb.missed_events(), want, "flags {flags:#x}");
        assert_eq!(kb.subbuffer_size(), 324);
    }
}

fn by_name(name: &str) -> (LongSize, Endian, Vec<u8>) {
    section8_pages()
        .into_iter()
        .find(|p| p.0 == name)
        .map(|p| (p.1, p.2, p.3))
        .unwrap()
}

#[test]
fn leading_time_extend_hides_the_missed_count() {
    let (_, _, page) = by_name("le64 leading extend");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(walk(&mut kb, &page), "\
subbuffer_size=24 start_of_data=24 kbuffer_timestamp=2000
  ev0 ts=2000 data_off_in_page=28 curr_offset=24 curr_index=8 event_size=4 curr_size=8 missed=0 first_u32=0x11111111
  ev1 ts=2005 data_off_in_page=36 curr_offset=32 curr_index=16 event_size=4 curr_size=8 missed=0 first_u32=0x22222222
  after loop: curr_offset=40
");
}

#[test]
fn trailing_padding_is_harmless() {
    let (_, _, page) = by_name("le64 trailing padding");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(walk(&mut kb, &page), "\
subbuffer_size=4080 start_of_data=16 kbuffer_timestamp=3000
  ev0 ts=3000 data_off_in_page=20 curr_offset=16 curr_index=0 event_size=4 curr_size=8 missed=0 first_u32=0x33333333
  ev1 ts=3005 data_off_in_page=28 curr_offset=24 curr_index=8 event_size=4 curr_size=8 missed=0 first_u32=0x44444444
  after loop: curr_offset=4096
");
}

#[test]
fn mid_page_padding_delta_is_added() {
    let (_, _, page) = by_name("le64 mid padding");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(walk(&mut kb, &page), "\
subbuffer_size=24 start_of_data=16 kbuffer_timestamp=4000
  ev0 ts=4000 data_off_in_page=20 curr_offset=16 curr_index=0 event_size=4 curr_size=8 missed=0 first_u32=0x55555555
  ev1 ts=5005 data_off_in_page=36 curr_offset=32 curr_index=16 event_size=4 curr_size=8 missed=0 first_u32=0x66666666
  after loop: curr_offset=40
");
}

#[test]
fn zero_bytes_inside_commit_give_bogus_records() {
    let (_, _, page) = by_name("le64 zero bytes inside commit");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    // The doc abbreviates ev2..ev4 as "likewise (curr_offset 28, 32, 36; event_size=-4)".
    assert_eq!(walk(&mut kb, &page), "\
subbuffer_size=24 start_of_data=16 kbuffer_timestamp=5000
  ev0 ts=5000 data_off_in_page=20 curr_offset=16 curr_index=0 event_size=4 curr_size=8 missed=0 first_u32=0x77777777
  ev1 ts=5000 data_off_in_page=32 curr_offset=24 curr_index=8 event_size=-4 curr_size=4 missed=0 first_u32=0x00000000
  ev2 ts=5000 data_off_in_page=36 curr_offset=28 curr_index=12 event_size=-4 curr_size=4 missed=0 first_u32=0x00000000
  ev3 ts=5000 data_off_in_page=40 curr_offset=32 curr_index=16 event_size=-4 curr_size=4 missed=0 first_u32=0x00000000
  ev4 ts=5000 data_off_in_page=44 curr_offset=36 curr_index=20 event_size=-4 curr_size=4 missed=0 first_u32=0x00000000
  after loop: curr_offset=40
");
}

#[test]
fn null_padding_inside_commit() {
    let (_, _, page) = by_name("le64 null padding inside commit");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    let s = walk(&mut kb, &page);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "subbuffer_size=16 start_of_data=16 kbuffer_timestamp=6000"
    );
    assert!(
        lines[1].starts_with("  ev0 ts=6000 ") && lines[1].contains(" event_size=4 curr_size=8 ")
    );
    assert!(lines[1].ends_with("first_u32=0x88888888"));
    assert!(lines[2].starts_with(
        "  ev1 ts=6000 data_off_in_page=36 curr_offset=28 curr_index=12 event_size=-4 curr_size=4 "
    ));
    assert_eq!(lines.len(), 4);
}

#[test]
fn empty_page_with_stored_count() {
    let (_, _, page) = by_name("le64 empty page with stored count");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert!(kb.read_event().is_none());
    assert_eq!((kb.missed_events(), kb.subbuffer_size()), (99, 0));
}

#[test]
fn junk_commit_bits_and_max_delta() {
    let (_, _, page) = by_name("le64 max delta, junk commit bits");
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(
        (kb.subbuffer_size(), kb.start_of_data(), kb.timestamp()),
        (8, 16, 134217727)
    );
}

#[test]
fn le32_layout() {
    let (ls, en, page) = by_name("le32 missed+stored 54321");
    let mut kb = KBuffer::new(ls, en);
    kb.load_subbuffer(&page).unwrap();
    let want = [
        (1000010u64, 0, 8, 12, 54321),
        (672088660, 20, 4, 8, 0),
        (672088663, 40, 120, 128, 0),
        (672088667, 168, 8, 16, 0),
        (5000000000, 192, 12, 16, 0),
        (5000000100, 208, 112, 116, 0),
    ];
    assert_eq!(
        (kb.subbuffer_size(), kb.start_of_data(), kb.timestamp()),
        (324, 12, 1000010)
    );
    for (ts, idx, es, cs, missed) in want {
        let ev = kb.read_event().unwrap();
        assert_eq!(
            (
                ev.timestamp,
                kb.curr_index(),
                kb.curr_offset(),
                kb.event_size(),
                kb.curr_size(),
                kb.missed_events()
            ),
            (ts, idx, idx + 12, es, cs, missed)
        );
        kb.next_event();
    }
    assert!(kb.read_event().is_none());
    assert_eq!(kb.curr_offset(), 336);
}

#[test]
fn be64_layout_matches_le64() {
    let (ls, en, be_page) = by_name("be64 missed+stored 4242");
    let le_page =
        section8_records(true, false).page(1_000_000, 324, MISSED_BOTH, Some(12345), 4096);
    let mut be = KBuffer::new(ls, en);
    let mut le = le64();
    be.load_subbuffer(&be_page).unwrap();
    le.load_subbuffer(&le_page).unwrap();
    assert_eq!(be.missed_events(), 4242);
    loop {
        let (a, b) = (be.read_event(), le.read_event());
        assert_eq!(
            a.map(|e| (e.timestamp, e.data_offset)),
            b.map(|e| (e.timestamp, e.data_offset))
        );
        assert_eq!(
            (
                be.curr_offset(),
                be.curr_index(),
                be.event_size(),
                be.curr_size()
            ),
            (
                le.curr_offset(),
                le.curr_index(),
                le.event_size(),
                le.curr_size()
            )
        );
        if a.is_none() {
            break;
        }
        be.next_event();
        le.next_event();
    }
}

#[test]
fn same_as_host() {
    let page = section8_records(true, false).page(1_000_000, 324, MISSED_BOTH, Some(12345), 4096);
    let mut kb = KBuffer::new(LongSize::same_as_host(), Endian::same_as_host());
    kb.load_subbuffer(&page).unwrap();
    assert_eq!(
        (kb.start_of_data(), kb.read_event().unwrap().timestamp),
        (16, 1000010)
    );
}

/// research §8, rao.c: records at 16, 28 and 36; read_at_offset rounds up.
#[test]
fn read_at_offset_rounds_up() {
    let mut r = RawPage::new(true, false);
    r.hdr(2, 0);
    r.payload(0xa1, 8);
    r.hdr(1, 1);
    r.payload(0xb1, 4);
    r.hdr(1, 1);
    r.payload(0xc1, 4);
    let page = r.page(10, 28, 0, None, 4096);
    let mut kb = le64();
    kb.load_subbuffer(&page).unwrap();
    let mut got = Vec::new();
    for off in [0, 15, 16, 17, 27, 28, 29, 35, 36, 37, 44, 45] {
        got.push(
            kb.read_at_offset(off)
                .map(|e| (page[e.data_offset], kb.curr_offset())),
        );
    }
    let a = Some((0xa1, 16));
    let b = Some((0xb1, 28));
    let c = Some((0xc1, 36));
    assert_eq!(got, vec![a, a, a, b, b, b, c, c, c, None, None, None]);
}

//! Records the metadata says were written but that no damage explains are counted: a damaged
//! BUFFER option (its id, its name), a per-CPU table entry zeroed or cut short hide a CPU's
//! data without a damaged page, and reading would find fewer records (0) without a word.
//! [`TraceFile::unread_records`] counts them and a reader warning names each CPU; an intact
//! file has none.

use typhon_recorder::page::PageWriter;
use typhon_recorder::tracedat::{
    write_tracedat, write_tracedat_v7, Compression, FileMeta, SlotMeta, SlotPages,
};
use typhon_trace::tracedat::TraceFile;

/// Pages of each CPU, records per page.
const PAGES: u64 = 3;
const PER_PAGE: u64 = 50;

/// The pages of a slot: `PAGES` pages of `PER_PAGE` records.
fn pages(slot: u64) -> Vec<u8> {
    let mut data = Vec::new();
    for p in 0..PAGES {
        let mut w = PageWriter::new(4096).unwrap();
        for j in 0..PER_PAGE {
            w.try_push(1 + slot * 1_000_000 + p * 100 + j, &[j as u8; 20])
                .unwrap();
        }
        data.extend_from_slice(w.finish());
    }
    data
}

/// A recording of slots 1 and 2, whose metadata counts what each wrote; version 7 zstd, or
/// version 6.
fn file(v7: bool) -> Vec<u8> {
    let mut meta = FileMeta::new(4096);
    for slot in [1u8, 2] {
        meta.slots.push(SlotMeta {
            slot,
            name: format!("t{slot}"),
            thread_id: None,
            attempted: PAGES * PER_PAGE,
            written: PAGES * PER_PAGE,
            missed: 0,
        });
    }
    let (a, b) = (pages(1), pages(2));
    let mut slots = [SlotPages::from_bytes(1, &a), SlotPages::from_bytes(2, &b)];
    let mut out = std::io::Cursor::new(Vec::new());
    if v7 {
        write_tracedat_v7(
            &mut out,
            &meta,
            Compression::Zstd { level: 1 },
            1,
            &mut slots,
        )
        .unwrap();
    } else {
        write_tracedat(&mut out, &meta, &mut slots).unwrap();
    }
    out.into_inner()
}

/// Reads every record: (records, damaged pages, unread records, warnings).
fn read(d: Vec<u8>) -> (u64, u64, u64, Vec<String>) {
    let f = TraceFile::parse(d).unwrap();
    let (mut ok, mut damaged) = (0, 0);
    for r in f.stream_records() {
        match r {
            Ok(_) => ok += 1,
            Err(e) => damaged += e.damaged_pages(),
        }
    }
    (ok, damaged, f.unread_records(), f.reader_warnings())
}

/// Offset of the top buffer's name (its NUL) in the last options section's BUFFER option:
/// the option's id is 14 bytes before it (2 id, 4 size, 8 section offset).
fn buffer_name(d: &[u8]) -> usize {
    let at = d
        .windows(10)
        .rposition(|w| w == b"\0mono\0\x00\x10\x00\x00")
        .unwrap();
    assert_eq!(&d[at - 14..at - 12], &[3, 0], "the BUFFER option's id");
    at
}

const ALL: u64 = 2 * PAGES * PER_PAGE;

#[test]
fn an_intact_file_has_nothing_unread() {
    for v7 in [true, false] {
        let (ok, damaged, unread, w) = read(file(v7));
        assert_eq!((ok, damaged, unread), (ALL, 0, 0), "v7 {v7}");
        assert!(w.is_empty(), "v7 {v7}: {w:?}");
    }
}

#[test]
fn a_damaged_buffer_option_id_is_counted_unread() {
    let mut d = file(true);
    let id = buffer_name(&d) - 14;
    d[id] ^= 0xff;
    let (ok, damaged, unread, w) = read(d);
    assert_eq!((ok, damaged, unread), (0, 0, ALL));
    let all = w.join("\n");
    assert!(all.contains("option id 252"), "{all}");
    assert!(
        all.contains("no BUFFER option for the top instance"),
        "{all}"
    );
    for cpu in [1, 2] {
        assert!(
            all.contains(&format!("cpu {cpu}: no data in the file")),
            "{all}"
        );
    }
}

#[test]
fn a_damaged_buffer_name_is_counted_unread() {
    let mut d = file(true);
    let name = buffer_name(&d);
    d[name] ^= 0xff;
    let (ok, damaged, unread, w) = read(d);
    assert_eq!((ok, damaged, unread), (0, 0, ALL));
    let all = w.join("\n");
    assert!(all.contains("buffer instance"), "{all}");
    assert!(all.contains("cpu 2: no data in the file"), "{all}");
}

/// Offset in a version 6 file of `cpu`'s flyrecord table entry (`u64 offset, u64 size`).
fn v6_entry(d: &[u8], cpu: u32) -> usize {
    let (off, size) = TraceFile::parse(d.to_vec()).unwrap().cpu_data(cpu).unwrap();
    let mut e = off.to_le_bytes().to_vec();
    e.extend_from_slice(&size.to_le_bytes());
    let fly = d.windows(10).position(|w| w == b"flyrecord\0").unwrap();
    fly + d[fly..].windows(16).position(|w| w == e).unwrap()
}

#[test]
fn a_v6_table_entry_zeroed_is_counted_unread() {
    let mut d = file(false);
    let e = v6_entry(&d, 2);
    d[e..e + 16].fill(0);
    let (ok, damaged, unread, w) = read(d);
    assert_eq!((ok, damaged, unread), (ALL / 2, 0, ALL / 2));
    assert!(w.join("\n").contains("cpu 2: no data in the file"), "{w:?}");
}

#[test]
fn a_v6_table_entry_cut_short_is_counted_unread() {
    let mut d = file(false);
    let e = v6_entry(&d, 1) + 8;
    let size = u64::from_le_bytes(d[e..e + 8].try_into().unwrap());
    d[e..e + 8].copy_from_slice(&(size - 4096).to_le_bytes());
    let (ok, damaged, unread, w) = read(d);
    assert_eq!((ok, damaged, unread), (ALL - PER_PAGE, 0, PER_PAGE));
    assert!(
        w.join("\n").contains(&format!(
            "cpu 1: {} records read, under the {}",
            (PAGES - 1) * PER_PAGE,
            PAGES * PER_PAGE
        )),
        "{w:?}"
    );
}

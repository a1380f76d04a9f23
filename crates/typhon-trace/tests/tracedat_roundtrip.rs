//! Writer → reader round trips, golden format texts, input validation, and robustness of the
//! reader against truncated and corrupted files.

mod common;
mod tracedat_support;

use std::io::Cursor;
use tracedat_support::*;
use typhon_recorder::codec::{kind_def, TraceEventKind, KINDS};
use typhon_trace::tracedat::format::{event_format, header_page, print_fmt};
use typhon_trace::tracedat::*;

#[test]
fn golden_tick_end_format() {
    let t = event_format(kind_def(TraceEventKind::TICK_END).unwrap()).unwrap();
    assert_eq!(
        t,
        "name: TickEnd\n\
         ID: 1\n\
         format:\n\
         \tfield:unsigned short common_size;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:unsigned char common_type;\toffset:2;\tsize:1;\tsigned:0;\n\
         \tfield:unsigned char common_pid;\toffset:3;\tsize:1;\tsigned:0;\n\
         \tfield:s64 common_ts;\toffset:4;\tsize:8;\tsigned:1;\n\
         \n\
         \tfield:u8 overload_level;\toffset:12;\tsize:1;\tsigned:0;\n\
         \tfield:u8 tick_multiplier;\toffset:13;\tsize:1;\tsigned:0;\n\
         \n\
         print fmt: \"overload_level=%u tick_multiplier=%u\", REC->overload_level, REC->tick_multiplier\n"
    );
}

#[test]
fn golden_variable_length_print_formats() {
    let p = |k| print_fmt(kind_def(k).unwrap()).unwrap();
    assert_eq!(
        p(TraceEventKind::THREAD_INFO),
        "\"thread_id=%d name_len=%u name=%.*s thread_kind=%u\", REC->thread_id, \
         REC->name_len, REC->name_len, REC->name, REC->name[REC->name_len]"
    );
    // CeLog: the length, the CEL_HEADER_V3 word decoded (checked against trace-cmd on real
    // records in recording_interop.rs), then the whole event in hex.
    let celog = p(TraceEventKind::CELOG);
    assert!(celog.starts_with(
        "\"event_len=%u id=%s flag=%u cpu=%u ts=%u len=%u event=%s\", REC->common_size - 12, \
         __print_symbolic("
    ));
    assert!(celog.contains("{ 8191, \"LOG_MARKER\" }"));
    assert!(celog.ends_with(", __print_hex(REC->event, REC->common_size - 12)"));
    assert_eq!(
        p(TraceEventKind::NAMED_SPAN),
        "\"duration_ns=%lld span_id=%llu parent_span_id=%llu flags=%u name=%s\", \
         REC->duration_ns, REC->span_id, REC->parent_span_id, REC->flags, REC->name"
    );
    let t = event_format(kind_def(TraceEventKind::NAMED_SPAN).unwrap()).unwrap();
    assert!(t.contains("\tfield:char name[];\toffset:37;\tsize:0;\tsigned:1;\n"));
    let t = event_format(kind_def(TraceEventKind::CELOG).unwrap()).unwrap();
    assert!(t.contains("\tfield:unsigned char event[];\toffset:12;\tsize:0;\tsigned:0;\n"));
    // ThreadInfo's thread_kind has no fixed offset: it is printed, not declared.
    let t = event_format(kind_def(TraceEventKind::THREAD_INFO).unwrap()).unwrap();
    assert!(!t.contains("thread_kind;"));
}

#[test]
fn golden_header_page() {
    assert_eq!(
        header_page(4096),
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n"
    );
    assert_eq!(header_page(4096).len(), 205);
}

/// Every table field appears in the generated format text or print format.
#[test]
fn every_table_field_is_described() {
    for d in KINDS {
        let t = event_format(d).unwrap();
        assert!(t.contains(&format!("\nID: {}\n", d.kind.0)));
        for f in d.fields {
            assert!(t.contains(&format!(" {}=", f.name)) || t.contains(&format!("\"{}=", f.name)));
            if f.offset.is_some() {
                assert!(
                    t.contains(&format!(" {};", f.name)) || t.contains(&format!(" {}[];", f.name))
                );
            }
        }
    }
}

/// Per-slot page bytes.
type SlotBytes = Vec<(u8, Vec<u8>)>;

fn sample(page: usize) -> (Vec<Built>, SlotBytes, FileMeta) {
    sample_with(page, 10)
}

/// The sample with `rounds` rounds of every kind in slot 2.
fn sample_with(page: usize, rounds: u32) -> (Vec<Built>, SlotBytes, FileMeta) {
    let mut meta = FileMeta::new(page as u32);
    meta.wall_anchor_ns = 42;
    let mut all = Vec::new();
    let mut data = Vec::new();
    for (slot, rounds, missed) in [(2u8, rounds, vec![(1usize, 9u64)]), (7, 4, vec![])] {
        let plan = SlotPlan {
            slot,
            start: 5_000 + i64::from(slot),
            rounds,
            gap: 1 << 30,
            missed,
        };
        let (recs, pages, m) = pack(&plan, page);
        meta.slots.push(SlotMeta {
            slot,
            name: format!("t{slot}\nx"),
            thread_id: None,
            attempted: recs.len() as u64 + m.iter().sum::<u64>(),
            written: recs.len() as u64,
            missed: m.iter().sum(),
        });
        all.extend(recs);
        data.push((slot, pages));
    }
    all.sort_by_key(|r| (r.page_ts, r.slot));
    (all, data, meta)
}

fn write(meta: &FileMeta, data: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut sp: Vec<SlotPages<'_>> = data
        .iter()
        .map(|(s, p)| SlotPages::from_bytes(*s, p))
        .collect();
    let mut out = Cursor::new(Vec::new());
    write_tracedat(&mut out, meta, &mut sp).unwrap();
    out.into_inner()
}

#[test]
fn round_trip_4k_and_64k_pages() {
    for page in [4096usize, 65536] {
        let (recs, data, meta) = sample(page);
        let file = write(&meta, &data);
        let f = TraceFile::parse(file.clone()).unwrap();
        assert_eq!(f.page_size() as usize, page);
        assert_eq!(f.cpus(), 8);
        assert_eq!(
            f.cmdline(2),
            Some("t2?x"),
            "control characters are replaced"
        );
        assert_eq!(f.typhon_meta().unwrap().unwrap(), meta);
        assert_eq!(f.formats().len(), KINDS.len());
        for (slot, pages) in &data {
            let (off, size) = f.cpu_data(u32::from(*slot)).unwrap();
            assert_eq!(off % page as u64, 0, "page-aligned");
            assert_eq!(size as usize, pages.len());
            assert_eq!(&file[off as usize..][..pages.len()], &pages[..]);
            assert_eq!(f.pages(u32::from(*slot)).count(), pages.len() / page);
        }
        let got: Vec<Record<'_>> = f.records().map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), recs.len());
        for (r, b) in got.iter().zip(&recs) {
            assert_eq!((r.cpu, r.ts), (u32::from(b.slot), b.page_ts));
            assert_eq!(&r.data[..b.bytes.len()], &b.bytes[..]);
        }
        let missed: i64 = got.iter().filter_map(|r| r.missed_before).sum();
        assert_eq!(missed, if page == 4096 { 9 } else { 0 });
        // Per-CPU iteration yields the same records as the merge.
        let per_cpu: usize = (0..f.cpus()).map(|c| f.cpu_records(c).count()).sum();
        assert_eq!(per_cpu, recs.len());
    }
}

#[test]
fn streams_from_any_reader() {
    let (_, data, meta) = sample(4096);
    let mut sp: Vec<SlotPages<'_>> = data
        .iter()
        .map(|(s, p)| SlotPages::new(*s, p.len() as u64, std::io::BufReader::new(&p[..])))
        .collect();
    let mut out = Cursor::new(Vec::new());
    write_tracedat(&mut out, &meta, &mut sp).unwrap();
    assert_eq!(out.into_inner(), write(&meta, &data));
}

#[test]
fn writer_rejects_inconsistent_input() {
    let meta = FileMeta::new(4096);
    let page = vec![0u8; 4096];
    let err = |meta: &FileMeta, sp: &mut [SlotPages<'_>]| {
        write_tracedat(Cursor::new(Vec::new()), meta, sp).unwrap_err()
    };
    let e = err(&meta, &mut [SlotPages::from_bytes(1, &page[..100])]);
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("multiple of the page size"), "{e}");
    let e = err(
        &meta,
        &mut [
            SlotPages::from_bytes(1, &page),
            SlotPages::from_bytes(1, &page),
        ],
    );
    assert!(e.to_string().contains("twice"), "{e}");
    let e = err(&FileMeta::new(5000), &mut []);
    assert!(e.to_string().contains("page size"), "{e}");
    let mut dup = FileMeta::new(4096);
    dup.slots.push(SlotMeta::default());
    dup.slots.push(SlotMeta::default());
    assert!(err(&dup, &mut []).to_string().contains("described twice"));
    let mut clock = FileMeta::new(4096);
    clock.clock = "bad]".into();
    assert!(err(&clock, &mut []).to_string().contains("clock"));
    // A source shorter or longer than its length.
    let e = err(&meta, &mut [SlotPages::new(1, 8192, &page[..])]);
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    let two = vec![0u8; 8192];
    let e = err(&meta, &mut [SlotPages::new(1, 4096, &two[..])]);
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    // Not at the start of the output.
    let mut out = Cursor::new(vec![0u8; 3]);
    out.set_position(3);
    assert!(write_tracedat(&mut out, &meta, &mut []).is_err());
}

/// Drains everything the reader offers; must not panic whatever the bytes.
fn exercise(bytes: Vec<u8>) {
    if let Ok(f) = TraceFile::parse(bytes) {
        let _ = f.typhon_meta();
        for r in f.records().take(100_000).flatten() {
            let _ = f.event_of(r.data);
        }
        for c in 0..f.cpus().min(300) {
            let _ = f.cpu_records(c).take(100_000).count();
        }
    }
}

#[test]
fn truncated_files_give_errors_not_panics() {
    let (_, data, meta) = sample(4096);
    let file = write(&meta, &data);
    let (off, _) = TraceFile::parse(file.clone()).unwrap().cpu_data(2).unwrap();
    // Every cut inside the metadata is an error; cuts inside the data make the CPU table
    // point past the end, also an error.
    for cut in (0..file.len()).step_by(7) {
        let r = TraceFile::parse(file[..cut].to_vec());
        assert!(r.is_err(), "cut at {cut} of {} (data at {off})", file.len());
        let msg = r.unwrap_err().to_string();
        assert!(!msg.is_empty());
    }
}

#[test]
fn corrupted_files_never_panic() {
    let (_, data, meta) = sample(4096);
    let file = write(&meta, &data);
    // Deterministic xorshift: flip bytes all over the file, including the page data.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..400 {
        let mut f = file.clone();
        for _ in 0..1 + rnd() % 8 {
            let at = (rnd() % f.len() as u64) as usize;
            f[at] = rnd() as u8;
        }
        exercise(f);
    }
    // Targeted: every byte of the first page header and its first records.
    let (off, _) = TraceFile::parse(file.clone()).unwrap().cpu_data(2).unwrap();
    for i in 0..64 {
        for v in [0u8, 0xFF, 0x1D, 0x1E, 0x1F] {
            let mut f = file.clone();
            f[off as usize + i] = v;
            exercise(f);
        }
    }
    // Huge counts and sizes in the metadata must not allocate or panic.
    for at in [16usize, 20, 24, 235, 240] {
        let mut f = file.clone();
        f[at..at + 4].copy_from_slice(&[0xFF; 4]);
        exercise(f);
    }
}

#[test]
fn a_zero_word_inside_commit_is_an_error() {
    // kbuffer would return bogus records here; this reader reports the corruption.
    let mut page = vec![0u8; 4096];
    page[0..8].copy_from_slice(&100u64.to_le_bytes());
    page[8..16].copy_from_slice(&8u64.to_le_bytes()); // 8 bytes of commit, all zero
    let mut out = Cursor::new(Vec::new());
    write_tracedat(
        &mut out,
        &FileMeta::new(4096),
        &mut [SlotPages::from_bytes(0, &page)],
    )
    .unwrap();
    let f = TraceFile::parse(out.into_inner()).unwrap();
    let r: Vec<_> = f.cpu_records(0).collect();
    assert_eq!(r.len(), 1);
    assert!(
        matches!(
            r[0],
            Err(TraceDatError::DamagedPage {
                cpu: 0,
                records_before: 0,
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn cpu_data_off_the_page_grid_is_an_error() {
    // trace-cmd refuses such a file ("failed to init data"); so does this reader, where it
    // used to read the shifted bytes as pages of undecodable records.
    let (_, data, meta) = sample(4096);
    let file = write(&meta, &data);
    let (off, size) = TraceFile::parse(file.clone()).unwrap().cpu_data(2).unwrap();
    let mut entry = off.to_le_bytes().to_vec();
    entry.extend_from_slice(&size.to_le_bytes());
    let at = file
        .windows(16)
        .position(|w| w == entry)
        .expect("the flyrecord table holds cpu 2's offset and size");
    let mut f = file.clone();
    f[at..at + 8].copy_from_slice(&(off + 8).to_le_bytes());
    f[at + 8..at + 16].copy_from_slice(&(size - 8).to_le_bytes());
    let e = TraceFile::parse(f).unwrap_err().to_string();
    assert!(e.contains("not aligned"), "{e}");
}

#[test]
fn overlapping_cpu_data_is_an_error() {
    // No writer makes them; with them, a small file could hold any number of copies of its
    // pages (each a damaged page for the readers to report) under as many CPUs.
    let (_, data, meta) = sample(4096);
    let file = write(&meta, &data);
    let tf = TraceFile::parse(file.clone()).unwrap();
    let entry = |cpu| {
        let (off, size) = tf.cpu_data(cpu).unwrap();
        let mut e = off.to_le_bytes().to_vec();
        e.extend_from_slice(&size.to_le_bytes());
        (file.windows(16).position(|w| w == e).unwrap(), off, size)
    };
    let (_, off2, size2) = entry(2);
    let (at7, off7, _) = entry(7);
    assert!(off2 < off7);
    let mut f = file.clone();
    // Cpu 7's data starts one page before cpu 2's ends.
    f[at7..at7 + 8].copy_from_slice(&(off2 + size2 - 4096).to_le_bytes());
    let e = TraceFile::parse(f).unwrap_err().to_string();
    assert!(e.contains("cpu 7 data overlaps cpu 2's"), "{e}");
}

/// A damaged page costs its records from the damage on, once, as a `DamagedPage` error; the
/// reading goes on with the CPU's next page and with the other CPUs.
#[test]
fn a_damaged_page_is_skipped_and_the_reading_goes_on() {
    let (_, data, meta) = sample_with(4096, 40);
    let file = write(&meta, &data);
    let clean = TraceFile::parse(file.clone()).unwrap();
    let (off, _) = clean.cpu_data(2).unwrap();
    assert!(
        clean.pages(2).count() >= 3,
        "the sample has a page after the damaged one"
    );
    let page1 = off + 4096;
    let at = |f: &TraceFile, r: &Record<'_>| r.data.as_ptr() as u64 - file_base(f, r);
    let all: Vec<(u32, u64, u64)> = clean
        .records()
        .map(|r| r.unwrap())
        .map(|r| (r.cpu, r.ts, at(&clean, &r)))
        .collect();
    let on_page1: Vec<u64> = all
        .iter()
        .filter(|r| r.0 == 2 && (page1..page1 + 4096).contains(&r.2))
        .map(|r| r.2)
        .collect();
    assert!(on_page1.len() >= 3, "{on_page1:?}");
    // The file offsets of the page's record headers, as kbuffer walks them.
    let recs = common::page_records(&file, page1, 4096);
    let data: Vec<u64> = recs.iter().map(|r| r.1).collect();
    assert_eq!(data, on_page1);
    let headers: Vec<u64> = recs.iter().map(|r| r.0).collect();
    // Zero the header and length words of the page's record `k`: a record of size 0.
    for k in [0usize, 2] {
        let mut f = file.clone();
        let hdr = headers[k] as usize;
        f[hdr..hdr + 8].fill(0);
        let tf = TraceFile::parse(f).unwrap();
        let mut ok = Vec::new();
        let mut errs = Vec::new();
        for r in tf.records() {
            match r {
                Ok(r) => ok.push((r.cpu, r.ts, at(&tf, &r))),
                Err(e) => errs.push(e),
            }
        }
        let want: Vec<_> = all
            .iter()
            .filter(|r| !(r.0 == 2 && on_page1[k..].contains(&r.2)))
            .copied()
            .collect();
        assert_eq!(ok, want, "damage at record {k}");
        assert_eq!(errs.len(), 1, "{errs:?}");
        match &errs[0] {
            TraceDatError::DamagedPage {
                cpu,
                page_at,
                at,
                records_before,
                ..
            } => {
                assert_eq!(
                    (*cpu, *page_at, *at, *records_before as usize),
                    (2, page1, hdr as u64, k)
                );
            }
            e => panic!("{e}"),
        }
        assert!(errs[0].to_string().contains(&format!("first {k} records")));
    }
}

/// The file offset of the buffer `r.data` points into, so `data - base` is a file offset.
fn file_base(f: &TraceFile, r: &Record<'_>) -> u64 {
    let (off, _) = f.cpu_data(r.cpu).unwrap();
    f.pages(r.cpu).next().unwrap().as_ptr() as u64 - off
}

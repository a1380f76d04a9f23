//! SPEC §10–§11: the compressed (zstd v7) reader on hostile input. Every size a chunk or a
//! compressed section declares is checked against the bytes there and a cap before anything
//! is allocated; a chunk that does not decompress costs only its pages (one damaged page each,
//! counted), and the chunks after it are read; an impossible chunk header or a wrong chunk
//! count costs that CPU's data from the damage on (one damaged page), never the other CPUs';
//! another compression is refused by name.

use typhon_recorder::page::PageWriter;
use typhon_recorder::tracedat::{
    write_tracedat_v7, ChunkCompressor, Compression, FileMeta, SlotMeta, SlotPages,
};
use typhon_trace::tracedat::{TraceDatError, TraceFile};

/// A zstd v7 file of `pages` pages of 50 records each on CPU 1, one page per chunk.
fn file(pages: u64) -> Vec<u8> {
    let mut data = Vec::new();
    for p in 0..pages {
        let mut w = PageWriter::new(4096).unwrap();
        for j in 0..50 {
            w.try_push(1 + p * 100 + j, &[j as u8; 20]).unwrap();
        }
        data.extend_from_slice(w.finish());
    }
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &FileMeta::new(4096),
        Compression::Zstd { level: 1 },
        1,
        &mut [SlotPages::from_bytes(1, &data)],
    )
    .unwrap();
    out.into_inner()
}

/// Offset of CPU 1's first chunk header.
fn first_chunk(d: &[u8]) -> usize {
    let f = TraceFile::parse(d.to_vec()).unwrap();
    f.cpu_data(1).unwrap().0 as usize + 4
}

fn read_all(d: Vec<u8>) -> (usize, Vec<TraceDatError>) {
    let f = TraceFile::parse(d).unwrap();
    let (mut ok, mut errs) = (0, Vec::new());
    for r in f.stream_records() {
        match r {
            Ok(_) => ok += 1,
            Err(e) => errs.push(e),
        }
    }
    (ok, errs)
}

#[test]
fn a_whole_file_reads_every_record() {
    let d = file(4);
    let f = TraceFile::parse(d.clone()).unwrap();
    assert_eq!((f.version(), f.compression()), (7, Some("zstd")));
    // The borrowed accessors see no page data in a compressed file; the streaming ones do.
    assert_eq!(f.pages(1).count(), 0);
    assert_eq!(read_all(d).0, 200);
}

#[test]
fn a_chunk_that_does_not_decompress_costs_only_its_pages() {
    let mut d = file(4);
    let at = first_chunk(&d);
    // The first chunk's frame: its magic bytes broken.
    d[at + 8] ^= 0xff;
    let (ok, errs) = read_all(d);
    assert_eq!(ok, 150, "the three other chunks are read");
    assert_eq!(errs.len(), 1, "one page in the chunk: {errs:?}");
    assert!(
        matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, .. }),
        "{errs:?}"
    );
}

#[test]
fn a_chunk_of_many_pages_that_does_not_decompress_counts_each_page() {
    // Six pages in chunks of four: the first chunk (4 pages) broken costs 4 damaged pages.
    let mut data = Vec::new();
    for p in 0..6u64 {
        let mut w = PageWriter::new(4096).unwrap();
        for j in 0..50 {
            w.try_push(1 + p * 100 + j, &[j as u8; 20]).unwrap();
        }
        data.extend_from_slice(w.finish());
    }
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &FileMeta::new(4096),
        Compression::Zstd { level: 1 },
        4,
        &mut [SlotPages::from_bytes(1, &data)],
    )
    .unwrap();
    let mut d = out.into_inner();
    let at = first_chunk(&d);
    assert_eq!(
        u32::from_le_bytes(d[at + 4..at + 8].try_into().unwrap()),
        4 * 4096,
        "the first chunk holds four pages"
    );
    d[at + 8] ^= 0xff;
    let (ok, errs) = read_all(d);
    assert_eq!(ok, 100, "the second chunk's two pages are read");
    // One error for the chunk, standing for its four pages from the chunk's (virtual) offset.
    assert_eq!(errs.len(), 1, "{errs:?}");
    let data_at = (at - 4) as u64;
    match &errs[0] {
        TraceDatError::DamagedPage {
            cpu: 1,
            page_at,
            pages: 4,
            ..
        } => assert_eq!(*page_at, data_at, "the lost pages named from their offset"),
        other => panic!("{other:?}"),
    }
    assert_eq!(errs[0].damaged_pages(), 4);
}

#[test]
fn declared_sizes_beyond_the_bytes_or_the_cap_are_refused_before_allocating() {
    let base = file(2);
    let at = first_chunk(&base);
    for (what, csize, usize_) in [
        ("uncompressed over the ratio cap", None, Some(16u32 << 20)),
        (
            "uncompressed over the 16 MiB cap",
            Some(1u32 << 30),
            Some(!4095u32),
        ),
        ("not a page multiple", None, Some(4097)),
        ("zero", None, Some(0)),
        ("compressed past the file", Some(u32::MAX), None),
    ] {
        let mut d = base.clone();
        if let Some(c) = csize {
            d[at..at + 4].copy_from_slice(&c.to_le_bytes());
        }
        if let Some(u) = usize_ {
            d[at + 4..at + 8].copy_from_slice(&u.to_le_bytes());
        }
        let (ok, errs) = read_all(d);
        assert_eq!(ok, 0, "{what}");
        // The CPU's data from the damage on is lost: one damaged page, naming the header.
        assert_eq!(errs.len(), 1, "{what}: {errs:?}");
        assert!(
            matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, at: a, .. } if a == at as u64),
            "{what}: {errs:?}"
        );
    }
}

#[test]
fn a_compressed_section_must_fit_its_caps() {
    let mut d = file(1);
    // After the 37-byte header come STRINGS (id 15) and HEADER_INFO (16), compressed: a body
    // is u32 compressed, u32 uncompressed, frame. HEADER_INFO now says 60 MiB.
    assert_eq!(u16::from_le_bytes([d[37], d[38]]), 15);
    let strings = u64::from_le_bytes(d[45..53].try_into().unwrap()) as usize;
    let h = 37 + 16 + strings;
    assert_eq!(u16::from_le_bytes([d[h], d[h + 1]]), 16);
    d[h + 16 + 4..h + 16 + 8].copy_from_slice(&(60u32 << 20).to_le_bytes());
    assert!(matches!(
        TraceFile::parse(d),
        Err(TraceDatError::Corrupt { .. })
    ));
}

#[test]
fn another_compression_is_refused_by_name() {
    let mut d = file(1);
    // "zstd" → "zlib" (trace-cmd 3.1.6 on Debian has no zlib either).
    let p = d.windows(5).position(|w| w == b"zstd\0").unwrap();
    d[p..p + 4].copy_from_slice(b"zlib");
    match TraceFile::parse(d) {
        Err(e @ TraceDatError::Compressed(_)) => assert!(e.to_string().contains("zlib")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_chunk_count_past_the_cpu_s_region_stops_at_its_end() {
    // Two CPUs; CPU 1 says it has 4 billion chunks: they are read only up to CPU 2's data
    // (each byte is read for one CPU at most), and CPU 2 is read whole.
    let mut d = two_cpus(2);
    let at = first_chunk(&d) - 4;
    d[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (ok, errs) = read_all(d);
    assert_eq!(ok, 200, "both chunks of each CPU");
    // What follows CPU 1's chunks (the padding to CPU 2's page) is no chunk: one damaged page.
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, .. }),
        "{errs:?}"
    );
}

/// A zstd v7 file with CPUs 1 and 2, each `pages` pages of 50 records in one-page chunks.
fn two_cpus(pages: u64) -> Vec<u8> {
    let mut data = Vec::new();
    for p in 0..pages {
        let mut w = PageWriter::new(4096).unwrap();
        for j in 0..50 {
            w.try_push(1 + p * 100 + j, &[j as u8; 20]).unwrap();
        }
        data.extend_from_slice(w.finish());
    }
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &FileMeta::new(4096),
        Compression::Zstd { level: 1 },
        1,
        &mut [
            SlotPages::from_bytes(1, &data),
            SlotPages::from_bytes(2, &data),
        ],
    )
    .unwrap();
    out.into_inner()
}

/// Records per CPU and the errors of a reading.
fn per_cpu(d: Vec<u8>) -> ([usize; 3], Vec<TraceDatError>) {
    let f = TraceFile::parse(d).unwrap();
    let (mut n, mut errs) = ([0; 3], Vec::new());
    for r in f.stream_records() {
        match r {
            Ok(r) => n[r.cpu.min(2) as usize] += 1,
            Err(e) => errs.push(e),
        }
    }
    (n, errs)
}

#[test]
fn a_chunk_count_too_small_counts_every_page_it_leaves_out() {
    let base = two_cpus(5);
    let count_at = first_chunk(&base) - 4;
    assert_eq!(
        u32::from_le_bytes(base[count_at..count_at + 4].try_into().unwrap()),
        5
    );
    for count in [0u32, 2, 4] {
        let mut d = base.clone();
        d[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
        let (n, errs) = per_cpu(d);
        assert_eq!(n, [0, 50 * count as usize, 250], "count {count}");
        // The chunks after the count are walked (not read): one error for all the pages they
        // declare, from the virtual offset they would have had.
        let left = 5 - count as usize;
        assert_eq!(errs.len(), 1, "count {count}: {errs:?}");
        assert_eq!(errs[0].damaged_pages(), left as u64, "count {count}");
        for e in &errs {
            match e {
                TraceDatError::DamagedPage {
                    cpu: 1, page_at, ..
                } => {
                    assert_eq!(*page_at, (count_at + count as usize * 4096) as u64, "{e}");
                    let s = e.to_string();
                    assert!(
                        s.contains("after the chunks its count declares")
                            && s.contains(&format!("{left} chunks of {left} pages")),
                        "{s}"
                    );
                }
                other => panic!("count {count}: {other:?}"),
            }
        }
    }
}

/// Issue 32: a count 40 chunks short in a CPU of chunks of four pages is 160 pages unread,
/// counted as 160 damaged pages (not one).
#[test]
fn a_chunk_count_too_small_by_many_chunks_counts_their_pages() {
    let data: Vec<u8> = (0..200u64).flat_map(|p| page(p, 10)).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &FileMeta::new(4096),
        Compression::Zstd { level: 1 },
        4,
        &mut [SlotPages::from_bytes(1, &data)],
    )
    .unwrap();
    let mut d = out.into_inner();
    let count_at = first_chunk(&d) - 4;
    assert_eq!(
        u32::from_le_bytes(d[count_at..count_at + 4].try_into().unwrap()),
        50
    );
    d[count_at..count_at + 4].copy_from_slice(&10u32.to_le_bytes());
    let (ok, errs) = read_all(d);
    let pages: u64 = errs.iter().map(|e| e.damaged_pages()).sum();
    assert_eq!((ok, pages), (40 * 10, 160), "{:?}", errs.first());
}

/// A 4 KiB page of `n` records at times `1 + p * 100 + j`.
fn page(p: u64, n: u64) -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    for j in 0..n {
        w.try_push(1 + p * 100 + j, &[j as u8; 20]).unwrap();
    }
    w.finish().to_vec()
}

/// A zstd v7 file whose CPU 1 holds `chunks` as they are (each a compressed page), with
/// metadata saying slot 1 wrote `written` records.
fn raw_chunks(chunks: &[Vec<u8>], written: u64) -> Vec<u8> {
    let mut meta = FileMeta::new(4096);
    meta.slots.push(SlotMeta {
        slot: 1,
        written,
        ..SlotMeta::default()
    });
    let bytes: Vec<u8> = chunks.concat();
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &meta,
        Compression::Zstd { level: 1 },
        1,
        &mut [SlotPages::chunked(
            1,
            bytes.len() as u64,
            chunks.len() as u32,
            &bytes[..],
        )],
    )
    .unwrap();
    out.into_inner()
}

fn chunk_of(p: u64) -> Vec<u8> {
    let mut z = ChunkCompressor::new(1).unwrap();
    let mut out = Vec::new();
    z.chunk(&page(p, 50), &mut out).unwrap();
    out
}

/// Issue 32: what reading cannot take for right is said, though every record is whole: a
/// chunk repeated after itself, time going back from a chunk to the next, and more records
/// than the metadata says the slot wrote.
#[test]
fn chunks_that_cannot_be_right_are_flagged() {
    let (a, b, c) = (chunk_of(0), chunk_of(1), chunk_of(2));
    // Written as recorded: no warning.
    let f = TraceFile::parse(raw_chunks(&[a.clone(), b.clone(), c.clone()], 150)).unwrap();
    assert_eq!(f.stream_records().filter(|r| r.is_ok()).count(), 150);
    assert_eq!(f.reader_warnings(), Vec::<String>::new());

    // The second chunk twice: its records are read twice, time goes back, and there are 200
    // records where 150 were written.
    let f = TraceFile::parse(raw_chunks(
        &[a.clone(), b.clone(), b.clone(), c.clone()],
        150,
    ))
    .unwrap();
    assert_eq!(f.stream_records().filter(|r| r.is_ok()).count(), 200);
    let w = f.reader_warnings();
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(
        w[0].starts_with("cpu 1: the chunk at offset ") && w[0].contains("again"),
        "{w:#?}"
    );
    assert!(w[1].starts_with("cpu 1: time goes back 49 "), "{w:#?}");
    assert_eq!(
        w[2],
        "cpu 1: 200 records read, over the 150 the metadata says the slot wrote"
    );
    // Read again, the same warnings (not twice as many).
    assert_eq!(f.stream_records().count(), 200);
    assert_eq!(f.reader_warnings(), w);

    // An earlier chunk again later: time goes back (no count: the slot's counts are all 0).
    let f = TraceFile::parse(raw_chunks(&[a.clone(), b, c, a], 0)).unwrap();
    assert_eq!(f.stream_records().filter(|r| r.is_ok()).count(), 200);
    let w = f.reader_warnings();
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(w[0].starts_with("cpu 1: time goes back 249 "), "{w:#?}");
}

#[test]
fn an_impossible_chunk_header_costs_only_its_cpu_from_the_damage_on() {
    let base = two_cpus(4);
    let first = first_chunk(&base);
    // CPU 1's third chunk: walk the headers the reader walks.
    let mut at = first;
    for _ in 0..2 {
        at += 8 + u32::from_le_bytes(base[at..at + 4].try_into().unwrap()) as usize;
    }
    for (what, csize, usize_) in [
        ("compressed size 0xfffffff0", Some(0xffff_fff0u32), None),
        ("uncompressed size 0xffffffff", None, Some(u32::MAX)),
    ] {
        let mut d = base.clone();
        if let Some(c) = csize {
            d[at..at + 4].copy_from_slice(&c.to_le_bytes());
        }
        if let Some(u) = usize_ {
            d[at + 4..at + 8].copy_from_slice(&u.to_le_bytes());
        }
        let (n, errs) = per_cpu(d);
        assert_eq!(
            n,
            [0, 100, 200],
            "{what}: CPU 2 whole, CPU 1 up to the damage"
        );
        assert_eq!(errs.len(), 1, "{what}: {errs:?}");
        assert!(
            matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, at: a, .. } if a == at as u64),
            "{what}: {errs:?}"
        );
    }
    // A count one larger than the chunks there: the header after the last chunk is no chunk.
    let mut d = base.clone();
    d[first - 4..first].copy_from_slice(&5u32.to_le_bytes());
    let (n, errs) = per_cpu(d);
    assert_eq!(n, [0, 200, 200]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, .. }),
        "{errs:?}"
    );
    // The same on the last CPU, whose region ends at the file's metadata or end.
    let f = TraceFile::parse(base.clone()).unwrap();
    let last = f.cpu_data(2).unwrap().0 as usize;
    let mut d = base;
    d[last..last + 4].copy_from_slice(&5u32.to_le_bytes());
    let (n, errs) = per_cpu(d);
    assert_eq!(n, [0, 200, 200]);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        matches!(errs[0], TraceDatError::DamagedPage { cpu: 2, .. }),
        "{errs:?}"
    );
}

/// Issue 32: compressed options sections are read as a stream: an unknown option's data is
/// skipped, never held, and the other options are kept as they are.
#[test]
fn unknown_options_of_compressed_sections_are_skipped_unread() {
    use typhon_trace::fuzzing::shapes::{options_bomb, small_zstd};
    let base = small_zstd(2);
    let d = options_bomb(&base, 3, 4 << 20).unwrap();
    assert!(d.len() < base.len() + (16 << 10), "{}", d.len());
    let f = TraceFile::parse(d.clone()).unwrap();
    let g = TraceFile::parse(base).unwrap();
    assert_eq!(f.options(), g.options(), "the same options, no unknown one");
    let held: usize = f.options().iter().map(|o| o.data.len()).sum();
    assert!(held < d.len(), "{held} bytes of options from {}", d.len());
    assert_eq!(read_all(d).0, 40);
}

/// Issue 32: what a file's compressed sections decompress to is capped in all (a fixed cap,
/// and 32 times the file's size): beyond it the file is refused, naming the section.
#[test]
fn compressed_metadata_beyond_its_cap_is_refused_naming_the_section() {
    use typhon_trace::fuzzing::shapes::{options_bomb, small_zstd};
    // Two sections of 64 MiB each in a 140 kB file: the first is over the 16 MiB any file may
    // have (a file of 512 KiB or more may have 32 times its size).
    let d = options_bomb(&small_zstd(2), 2, (64 << 20) - 20).unwrap();
    assert!(d.len() < 150 << 10, "{}", d.len());
    match TraceFile::parse(d) {
        Err(e @ TraceDatError::Corrupt { .. }) => {
            let s = e.to_string();
            assert!(
                s.contains("compressed section 0 (\"options\") declares 67108864 bytes")
                    && s.contains("times the file's size"),
                "{s}"
            );
        }
        other => panic!("{other:?}"),
    }
}

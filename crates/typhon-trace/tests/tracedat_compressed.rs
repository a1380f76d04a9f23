//! SPEC §10–§11: the compressed (zstd v7) reader on hostile input. Every size a chunk or a
//! compressed section declares is checked against the bytes there and a cap before anything
//! is allocated; a chunk that does not decompress costs only its pages (one error, counted),
//! and the chunks after it are read; another compression is refused by name.

use typhon_recorder::page::PageWriter;
use typhon_recorder::tracedat::{write_tracedat_v7, Compression, FileMeta, SlotPages};
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
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        matches!(errs[0], TraceDatError::DamagedPage { cpu: 1, .. }),
        "{errs:?}"
    );
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
        assert_eq!(errs.len(), 1, "{what}: {errs:?}");
        assert!(
            matches!(
                errs[0],
                TraceDatError::Corrupt { .. } | TraceDatError::Truncated { .. }
            ),
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
    let mut data = Vec::new();
    for p in 0..2u64 {
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
    let mut d = out.into_inner();
    let at = first_chunk(&d) - 4;
    d[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (ok, errs) = read_all(d);
    assert_eq!(ok, 200, "both chunks of each CPU");
    // What follows CPU 1's chunks (the padding to CPU 2's page) is no chunk: one error.
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        matches!(
            errs[0],
            TraceDatError::Truncated { .. } | TraceDatError::Corrupt { .. }
        ),
        "{errs:?}"
    );
}

//! Entry points shared by the `cargo fuzz` targets (`fuzz/`) and the stable-Rust bounded fuzz
//! harness in the normal test suite (`tests/fuzz_harness.rs`): each feeds arbitrary bytes to one
//! reader and walks everything it returns. The property is the same everywhere: readers never
//! panic, never read out of bounds, never loop forever; bad input yields errors. The exporter
//! must also keep its own promises on whatever file parses: slices nest, the JSON parses.
//!
//! ```
//! typhon_trace::fuzzing::page(&[0xff; 64]);
//! typhon_trace::fuzzing::tracedat(b"\x17\x08\x44tracing6".to_vec());
//! typhon_trace::fuzzing::record(&[12, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
//! assert_eq!(typhon_trace::fuzzing::export(b"not a file".to_vec()), None);
//! ```

pub mod shapes;

use crate::kbuffer::{Endian, KBuffer, LongSize};
use crate::tracedat::TraceFile;
use typhon_recorder::codec::{celog, correlation, records};

/// Upper bound on events walked per page: a page of N bytes holds at most N/4 events, so more
/// means the reader loops.
fn max_events(len: usize) -> usize {
    len / 4 + 2
}

/// The kbuffer page reader, in every header layout and byte order: load, walk every event with
/// `next_event`, query every accessor, jump with `read_at_offset`, copy with `read_buffer`.
/// Returns the number of events seen.
pub fn page(data: &[u8]) -> usize {
    let mut seen = 0;
    for (ls, en) in [
        (LongSize::Eight, Endian::Little),
        (LongSize::Four, Endian::Little),
        (LongSize::Eight, Endian::Big),
    ] {
        let mut kb = KBuffer::new(ls, en);
        if kb.load_subbuffer(data).is_err() {
            continue;
        }
        let _ = (kb.missed_events(), kb.subbuffer_size(), kb.start_of_data());
        let _ = (kb.timestamp(), kb.error(), kb.subbuffer().map(<[u8]>::len));
        let mut n = 0;
        let mut ev = kb.read_event();
        while let Some(e) = ev {
            assert!(e.data_offset + e.data.len() <= data.len());
            let _ = (
                kb.event_size(),
                kb.curr_size(),
                kb.curr_offset(),
                kb.curr_index(),
            );
            n += 1;
            assert!(n <= max_events(data.len()), "the page walk does not end");
            ev = kb.next_event();
        }
        seen += n;
        // Offsets past, inside and before the data.
        for off in [
            0,
            4,
            16,
            17,
            data.len() as i32 / 2,
            data.len() as i32,
            -1,
            i32::MAX,
        ] {
            let _ = kb.read_at_offset(off);
        }
        let mut buf = vec![0u8; data.len().min(1 << 16)];
        let _ = kb.read_buffer(&mut buf);
        let _ = kb.read_buffer(&mut []);
    }
    seen
}

/// The trace.dat reader (v6 and v7): parse, check that what it copied out stays within the
/// file's size, then read every accessor, the metadata and names as `stats` and `report` show
/// them, and iterate every record of every CPU and the merged stream; each record's payload
/// also goes through the record decoders (and the field printing of `report`). Returns
/// the number of records read, or `None` when parsing failed.
pub fn tracedat(data: Vec<u8>) -> Option<usize> {
    let bound = data.len() / 4 + 2;
    let tf_len = data.len();
    let tf = TraceFile::parse(data).ok()?;
    let _ = (
        tf.version(),
        tf.big_endian(),
        tf.long_size(),
        tf.page_size(),
    );
    let _ = (tf.header_page(), tf.page_header_size(), tf.header_event());
    let _ = (
        tf.formats().len(),
        tf.cmdlines().len(),
        tf.options().len(),
        tf.clock(),
    );
    // What reading copied out of the file stays within its size (no allocation sized by a
    // declared length, no section parsed twice): the options' bytes, formats, cmdlines.
    let len = tf_len;
    let option_bytes: usize = tf.options().iter().map(|o| o.data.len()).sum();
    assert!(
        option_bytes <= len,
        "{option_bytes} option bytes from {len}"
    );
    assert!(tf.formats().len() <= len && tf.cmdlines().len() <= len);
    // What `stats` and `report` print: the metadata, names escaped, fields written out.
    if let Some(Ok(meta)) = tf.typhon_meta() {
        let _ = meta.to_json();
    }
    for name in tf.cmdlines().values() {
        let _ = typhon_recorder::printable::printable(name).to_string();
    }
    let mut n = 0;
    for cpu in 0..tf.cpus().min(1024) {
        let _ = tf.cpu_data(cpu);
        let _ = tf.pages(cpu).count();
        for r in tf.cpu_records(cpu) {
            n += 1;
            assert!(n <= bound, "cpu_records does not end");
            if let Ok(r) = r {
                let _ = tf.event_of(r.data);
                record(r.data);
            }
        }
    }
    let mut m = 0;
    for r in tf.records() {
        m += 1;
        assert!(m <= bound, "records() does not end");
        let _ = r;
    }
    if tf.compression().is_some() {
        // Compressed page data is read only by the streaming readers, a chunk at a time: each
        // chunk is at most MAX_RATIO times its compressed bytes, so the records are bounded.
        let bound = tf_len.saturating_mul(typhon_recorder::tracedat::MAX_RATIO as usize) / 4 + 2;
        for cpu in 0..tf.cpus().min(1024) {
            let mut s = tf.stream_cpu(cpu);
            while let Some(p) = s.next_page() {
                let _ = p.map(|p| p.1.len());
            }
        }
        for r in tf.stream_records() {
            n += 1;
            assert!(n <= bound, "stream_records() does not end");
            if let Ok(r) = r {
                let _ = tf.event_of(&r.data);
                record(&r.data);
            }
        }
    }
    Some(n)
}

/// The exporter on a file that parses: every track's slices nest, events are in time order,
/// both formats are written, and the Chrome JSON parses. Returns the number of events, or
/// `None` when parsing or reading failed.
pub fn export(data: Vec<u8>) -> Option<usize> {
    use crate::export::{Format, Phase, Timeline};
    let tf = TraceFile::parse(data).ok()?;
    if tf.compression().is_some() {
        // A compressed file's records are not in its bytes (`Timeline::build` borrows them):
        // the streaming exporter, which `typhon-rec export` runs, reads it chunk by chunk.
        let s = crate::export::export(&tf, Format::Perfetto, &mut std::io::sink()).ok()?;
        let mut json = Vec::new();
        crate::export::export(&tf, Format::Chrome, &mut json).ok()?;
        if let Err(e) = serde_json::from_slice::<serde_json::Value>(&json) {
            panic!("the Chrome export is not JSON: {e}");
        }
        return Some((s.slices * 2 + s.instants + s.counters) as usize);
    }
    let t = Timeline::build(&tf).ok()?;
    let mut open = vec![0usize; t.tracks.len()];
    for e in &t.events {
        let o = &mut open[e.track as usize];
        match e.phase {
            Phase::Begin => *o += 1,
            Phase::End => *o = o.checked_sub(1).expect("an End closes an open slice"),
            Phase::Instant | Phase::Counter | Phase::Lost(_) | Phase::Damaged(_) => {}
        }
    }
    assert!(open.iter().all(|&o| o == 0), "every slice ends");
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    t.write(Format::Perfetto, &mut std::io::sink())
        .expect("a sink takes it");
    let mut json = Vec::new();
    t.write(Format::Chrome, &mut json).expect("a Vec takes it");
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&json) {
        panic!("the Chrome export is not JSON: {e}");
    }
    Some(t.events.len())
}

/// The record decoders on one record: `records::decode`, `decode_fields` (and printing the
/// fields), the correlation codec on the payload, and the CeLog event decoder on the payload.
pub fn record(data: &[u8]) {
    let _ = records::decode(data);
    if let Ok(d) = records::decode_fields(data) {
        let mut s = String::new();
        let _ = records::write_fields(&d, &mut s);
        let _ = d.values().len();
    }
    let payload = data.get(12..).unwrap_or(&[]);
    let _ = correlation::decode(data);
    let _ = correlation::decode(payload);
    if let Ok((ev, used)) = celog::decode_event(data) {
        assert!(used <= data.len());
        let _ = ev.data.len();
    }
    if let Ok((_, used)) = celog::decode_event(payload) {
        assert!(used <= payload.len());
    }
}

/// A version 7 (sectioned, uncompressed) copy of a little-endian version 6 trace.dat: the same
/// header, formats, cmdlines, options and page data, laid out as trace-cmd ≥ 3.0 writes them
/// (metadata sections, the flyrecord section with page-aligned CPU data, then one options
/// section that points at them all, with CPUCOUNT and a BUFFER option for the top instance).
/// `None` if `v6` is not such a file. The fuzzers mutate these too, so the v7 reader is covered
/// as well as the v6 one.
///
/// ```
/// use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages, TraceFile};
/// let mut meta = FileMeta::new(4096);
/// meta.slots.push(SlotMeta { slot: 1, name: "w".into(), ..Default::default() });
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat(&mut out, &meta, &mut [SlotPages::from_bytes(1, &[0u8; 4096])]).unwrap();
/// let v7 = typhon_trace::fuzzing::v6_to_v7(&out.into_inner()).unwrap();
/// let f = TraceFile::parse(v7).unwrap();
/// assert_eq!((f.version(), f.cpus(), f.cmdline(1)), (7, 2, Some("w")));
/// assert_eq!(f.typhon_meta().unwrap().unwrap(), meta);
/// ```
pub fn v6_to_v7(v6: &[u8]) -> Option<Vec<u8>> {
    let tf = TraceFile::parse(v6.to_vec()).ok()?;
    if tf.version() != 6 || tf.big_endian() {
        return None;
    }
    // Where each metadata part lies in the v6 file: the v7 section bodies are the same bytes.
    let u32_at = |p: usize| Some(u32::from_le_bytes(v6.get(p..p + 4)?.try_into().ok()?) as usize);
    let u64_at = |p: usize| Some(u64::from_le_bytes(v6.get(p..p + 8)?.try_into().ok()?) as usize);
    let mut p = 18;
    let start = p;
    p += 12;
    p += 8 + u64_at(p)?;
    p += 13;
    p += 8 + u64_at(p)?;
    let header_info = start..p;
    let start = p;
    let n = u32_at(p)?;
    p += 4;
    for _ in 0..n {
        p += 8 + u64_at(p)?;
    }
    let ftrace = start..p;
    let start = p;
    let nsys = u32_at(p)?;
    p += 4;
    for _ in 0..nsys {
        p += v6.get(p..)?.iter().position(|&b| b == 0)? + 1;
        let n = u32_at(p)?;
        p += 4;
        for _ in 0..n {
            p += 8 + u64_at(p)?;
        }
    }
    let events = start..p;
    let kallsyms = p..p + 4 + u32_at(p)?;
    p = kallsyms.end;
    let printk = p..p + 4 + u32_at(p)?;
    p = printk.end;
    let cmdlines = p..p + 8 + u64_at(p)?;
    let parts = [
        (16u16, header_info),
        (17, ftrace),
        (18, events),
        (19, kallsyms),
        (20, printk),
        (21, cmdlines),
    ];

    let mut out = v6[..12].to_vec();
    out[10] = b'7';
    out.extend_from_slice(&v6[12..18]);
    out.extend_from_slice(b"none\0\0");
    let options_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let section = |out: &mut Vec<u8>, id: u16, body: &[u8]| {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // not compressed
        out.extend_from_slice(&0u32.to_le_bytes()); // no description string
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(body);
    };
    let mut offsets = Vec::new();
    for (id, r) in parts {
        offsets.push((id, out.len() as u64));
        section(&mut out, id, v6.get(r)?);
    }
    // The flyrecord section: padding to a page boundary, then each CPU's pages.
    let page = tf.page_size() as usize;
    let fly_at = out.len();
    let body_at = fly_at + 16;
    let data_at = body_at.div_ceil(page) * page;
    let mut body = vec![0u8; data_at - body_at];
    let mut table = Vec::new();
    for cpu in 0..tf.cpus() {
        let (off, size) = tf.cpu_data(cpu)?;
        if size == 0 {
            continue;
        }
        let bytes = v6.get(off as usize..(off + size) as usize)?;
        table.push((cpu, (body_at + body.len()) as u64, size));
        body.extend_from_slice(bytes);
    }
    section(&mut out, 3, &body);
    // The options section, last, pointing back at everything.
    let opts_at = out.len() as u64;
    out[options_at..options_at + 8].copy_from_slice(&opts_at.to_le_bytes());
    let mut o = Vec::new();
    let option = |o: &mut Vec<u8>, id: u16, data: &[u8]| {
        o.extend_from_slice(&id.to_le_bytes());
        o.extend_from_slice(&(data.len() as u32).to_le_bytes());
        o.extend_from_slice(data);
    };
    for (id, off) in offsets {
        option(&mut o, id, &off.to_le_bytes());
    }
    option(&mut o, 8, &tf.cpus().to_le_bytes());
    for opt in tf.options() {
        option(&mut o, opt.id, &opt.data);
    }
    let mut b = (fly_at as u64).to_le_bytes().to_vec();
    b.push(0); // the top instance: no name
    b.extend_from_slice(tf.clock().unwrap_or("").as_bytes());
    b.push(0);
    b.extend_from_slice(&tf.page_size().to_le_bytes());
    b.extend_from_slice(&(table.len() as u32).to_le_bytes());
    for (cpu, off, size) in table {
        b.extend_from_slice(&cpu.to_le_bytes());
        b.extend_from_slice(&off.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
    }
    option(&mut o, 3, &b);
    option(&mut o, 0, &0u64.to_le_bytes()); // DONE: no next options section
    section(&mut out, 0, &o);
    Some(out)
}

/// A zstd-compressed version 7 copy of a Typhon version 6 file (two pages to a chunk, so a
/// small file has several chunks): the compressed seed of the fuzz corpus. `None` for a file
/// that does not parse or has no Typhon metadata.
///
/// ```
/// use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotPages, TraceFile};
/// let pages = vec![0u8; 4096];
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat(&mut out, &FileMeta::new(4096), &mut [SlotPages::from_bytes(1, &pages)]).unwrap();
/// let z = typhon_trace::fuzzing::v6_to_zstd(&out.into_inner()).unwrap();
/// let f = TraceFile::parse(z).unwrap();
/// assert_eq!((f.version(), f.compression()), (7, Some("zstd")));
/// ```
pub fn v6_to_zstd(v6: &[u8]) -> Option<Vec<u8>> {
    use typhon_recorder::tracedat::{write_tracedat_v7, Compression, SlotPages};
    let tf = TraceFile::parse(v6.to_vec()).ok()?;
    let meta = tf.typhon_meta()?.ok()?;
    let bytes: Vec<(u32, Vec<u8>)> = tf
        .data_cpus()
        .map(|c| (c, tf.pages(c).flatten().copied().collect::<Vec<u8>>()))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    let mut slots: Vec<SlotPages<'_>> = bytes
        .iter()
        .map(|(c, b)| SlotPages {
            slot: *c,
            ..SlotPages::from_bytes(0, b)
        })
        .collect();
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &meta,
        Compression::Zstd { level: 1 },
        2,
        &mut slots,
    )
    .ok()?;
    Some(out.into_inner())
}

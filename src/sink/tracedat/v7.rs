//! The trace.dat version 7 writer: compressed with zstd (SPEC §11) or not.
//!
//! Layout written (research trace-dat-v7-compression.md §1; all integers little-endian; a
//! "section" is `u16 id, u16 flags, u32 string id, u64 size, body`, flag 1 = compressed, whose
//! body is then `u32 compressed size, u32 uncompressed size, zstd frame`):
//!
//! ```text
//! 17 08 44 "tracing" "7\0" | endian 0 | long 8 | u32 page size | "zstd\0" "1.5.7\0" (or "none\0\0")
//! u64 offset of the first options section
//! section 15 STRINGS          the section descriptions (first: trace-cmd walks to it)
//! sections 16..=21            header_page/header_event, ftrace formats, event formats,
//!                             kallsyms, printk, cmdlines: the version 6 bytes of each
//! section 0 options           16..=21 → their offsets, CPUCOUNT, TRACECLOCK, VERSION,
//!                             TYPHON_META, DONE → the second options section
//! section 3 flyrecord         zeros to a page boundary, then each slot's data page-aligned:
//!                             compressed: u32 chunk count, chunks; else the pages
//! section 0 options           BUFFER (the flyrecord's offset, "" , clock, page size, per-CPU
//!                             id/offset/size), DONE 0
//! ```
//!
//! The BUFFER option comes after the data (as trace-cmd writes it) so that pages can be
//! compressed as they are copied; the offsets it and the first DONE hold are patched in place.
//! A CPU's size counts its 4-byte chunk count (as the format says, and trace-cmd 3.2 writes;
//! trace-cmd 3.1.6 leaves it out but reads either, it only checks that the size is not 0).

use super::compress::{zstd_version, ChunkCompressor, Compression, DEFAULT_CHUNK_PAGES};
use super::writer::{check_inputs, copy_exact, invalid, parts, FileMeta, SlotPages, MAGIC};
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Section and option ids (trace-cmd-private.h).
const SEC_OPTIONS: u16 = 0;
const SEC_BUFFER: u16 = 3;
const OPT_CPUCOUNT: u16 = 8;
const SEC_STRINGS: u16 = 15;
/// Section flag: the body is compressed.
const FL_COMPRESS: u16 = 1;

/// Section descriptions, in the STRINGS section at these offsets.
const STRINGS: &[&str] = &[
    "strings",
    "headers",
    "ftrace events",
    "events format",
    "kallsyms",
    "printk",
    "command lines",
    "options",
    "buffer flyrecord ",
];

fn string_id(name: &str) -> u32 {
    let mut at = 0;
    for s in STRINGS {
        if *s == name {
            return at;
        }
        at += s.len() as u32 + 1;
    }
    0
}

/// A section's bytes: header and body (compressed when `z` is given).
fn section(
    id: u16,
    desc: &str,
    body: &[u8],
    z: Option<&mut ChunkCompressor>,
) -> io::Result<Vec<u8>> {
    let (flags, body) = match z {
        // The same `size, size, frame` as a chunk (trace-cmd's `tracecmd_compress_block`).
        Some(z) => {
            let mut b = Vec::new();
            z.chunk(body, &mut b)?;
            (FL_COMPRESS, b)
        }
        None => (0, body.to_vec()),
    };
    let mut s = Vec::with_capacity(16 + body.len());
    s.extend_from_slice(&id.to_le_bytes());
    s.extend_from_slice(&flags.to_le_bytes());
    s.extend_from_slice(&string_id(desc).to_le_bytes());
    s.extend_from_slice(&(body.len() as u64).to_le_bytes());
    s.extend_from_slice(&body);
    Ok(s)
}

fn option(o: &mut Vec<u8>, id: u16, data: &[u8]) {
    o.extend_from_slice(&id.to_le_bytes());
    o.extend_from_slice(&(data.len() as u32).to_le_bytes());
    o.extend_from_slice(data);
}

/// Writes a complete trace.dat version 7 file to `out` (positioned at offset 0), compressed as
/// `compression` says. A [`SlotPages`] of pages is copied as it is (uncompressed) or
/// compressed `chunk_pages` pages to a chunk (0: [`DEFAULT_CHUNK_PAGES`]); one of chunks
/// ([`SlotPages::chunked`]) is copied as it is into a compressed file. Errors are those of
/// [`super::write_tracedat`], and `InvalidInput` for chunks into an uncompressed file.
///
/// ```
/// use typhon_recorder::tracedat::{write_tracedat_v7, Compression, FileMeta, SlotPages};
/// use typhon_trace::tracedat::TraceFile;
/// let pages = vec![0u8; 4096];
/// let mut out = std::io::Cursor::new(Vec::new());
/// write_tracedat_v7(&mut out, &FileMeta::new(4096), Compression::Zstd { level: 1 }, 0,
///     &mut [SlotPages::from_bytes(1, &pages)]).unwrap();
/// let f = TraceFile::parse(out.into_inner()).unwrap();
/// assert_eq!((f.version(), f.compression()), (7, Some("zstd")));
/// ```
pub fn write_tracedat_v7<W: Write + Seek>(
    out: W,
    meta: &FileMeta,
    compression: Compression,
    chunk_pages: usize,
    slot_data: &mut [SlotPages<'_>],
) -> io::Result<()> {
    write_tracedat_v7_with(
        out,
        meta,
        compression,
        chunk_pages,
        slot_data,
        |_, _, _, _| Ok(()),
    )
}

/// [`write_tracedat_v7`], calling `copied(out, slot, offset, len)` once each slot's data is
/// written, as [`super::write_tracedat_with`] does; for compressed data `offset` and `len` are
/// those of its chunks (after the chunk count).
pub fn write_tracedat_v7_with<W: Write + Seek>(
    mut out: W,
    meta: &FileMeta,
    compression: Compression,
    chunk_pages: usize,
    slot_data: &mut [SlotPages<'_>],
    mut copied: impl FnMut(&mut W, u32, u64, u64) -> io::Result<()>,
) -> io::Result<()> {
    let start = out.stream_position()?;
    if start != 0 {
        return Err(invalid(format!(
            "output is at offset {start}, a trace.dat must start at offset 0"
        )));
    }
    compression.check().map_err(invalid)?;
    let cpus = check_inputs(meta, slot_data)?;
    let mut z = match compression {
        Compression::Zstd { level } => Some(ChunkCompressor::new(level)?),
        Compression::None => {
            if let Some(sp) = slot_data.iter().find(|s| s.chunks.is_some()) {
                return Err(invalid(format!(
                    "slot {} holds compressed chunks: an uncompressed file cannot store them",
                    sp.slot
                )));
            }
            None
        }
    };
    let p = parts(meta)?;
    let page = u64::from(meta.page_size);

    let mut h = Vec::with_capacity(16 * 1024);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(b"7\0");
    h.push(0); // little-endian
    h.push(8); // sizeof(long)
    h.extend_from_slice(&meta.page_size.to_le_bytes());
    match compression {
        Compression::Zstd { .. } => {
            h.extend_from_slice(b"zstd\0");
            h.extend_from_slice(zstd_version().as_bytes());
            h.push(0);
        }
        Compression::None => h.extend_from_slice(b"none\0\0"),
    }
    let options_ptr = h.len();
    h.extend_from_slice(&0u64.to_le_bytes());
    let mut strings = Vec::new();
    for s in STRINGS {
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
    }
    h.extend(section(SEC_STRINGS, "strings", &strings, z.as_mut())?);
    let mut offsets = Vec::new();
    for (id, desc, body) in [
        (16u16, "headers", &p.header_info),
        (17, "ftrace events", &p.ftrace),
        (18, "events format", &p.events),
        (19, "kallsyms", &p.kallsyms),
        (20, "printk", &p.printk),
        (21, "command lines", &p.cmdlines),
    ] {
        offsets.push((id, h.len() as u64));
        h.extend(section(id, desc, body, z.as_mut())?);
    }
    let first_options = h.len() as u64;
    h[options_ptr..options_ptr + 8].copy_from_slice(&first_options.to_le_bytes());
    let mut o = Vec::new();
    for (id, off) in offsets {
        option(&mut o, id, &off.to_le_bytes());
    }
    option(&mut o, OPT_CPUCOUNT, &cpus.to_le_bytes());
    for (id, data) in &p.options {
        option(&mut o, *id, data);
    }
    // DONE: the offset of the next options section, patched once it is known.
    option(&mut o, 0, &0u64.to_le_bytes());
    let done_at = h.len() as u64 + 16 + o.len() as u64 - 8;
    h.extend(section(SEC_OPTIONS, "options", &o, None)?);

    let fly_at = h.len() as u64;
    let fly_flags = if z.is_some() { FL_COMPRESS } else { 0 };
    h.extend_from_slice(&SEC_BUFFER.to_le_bytes());
    h.extend_from_slice(&fly_flags.to_le_bytes());
    h.extend_from_slice(&string_id("buffer flyrecord ").to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // size, patched
    out.write_all(&h)?;
    let mut pos = h.len() as u64;
    drop(h);

    slot_data.sort_by_key(|s| s.slot);
    let mut buf = vec![0u8; 64 * 1024];
    let mut table: Vec<(u32, u64, u64)> = Vec::new();
    let chunk_pages = if chunk_pages == 0 {
        DEFAULT_CHUNK_PAGES
    } else {
        chunk_pages
    } as u64;
    for sp in slot_data.iter_mut() {
        if sp.len == 0 {
            continue; // an empty CPU is not in the table
        }
        let aligned = pos.div_ceil(page) * page;
        out.write_all(&vec![0u8; (aligned - pos) as usize])?;
        pos = aligned;
        let size = match (&mut z, sp.chunks) {
            (None, _) => {
                copy_exact(&mut out, sp, &mut buf)?;
                copied(&mut out, sp.slot, pos, sp.len)?;
                sp.len
            }
            (Some(_), Some(n)) => {
                out.write_all(&n.to_le_bytes())?;
                copy_exact(&mut out, sp, &mut buf)?;
                copied(&mut out, sp.slot, pos + 4, sp.len)?;
                4 + sp.len
            }
            (Some(z), None) => {
                let n = compress_pages(&mut out, z, sp, page * chunk_pages)?;
                let end = out.stream_position()?;
                out.seek(SeekFrom::Start(pos))?;
                out.write_all(&n.to_le_bytes())?;
                out.seek(SeekFrom::Start(end))?;
                copied(&mut out, sp.slot, pos + 4, end - pos - 4)?;
                end - pos
            }
        };
        table.push((sp.slot, pos, size));
        pos += size;
    }
    // The flyrecord section's size: every byte after its size field.
    let fly_size = pos - (fly_at + 16);
    let second_options = pos;
    let mut b = fly_at.to_le_bytes().to_vec();
    b.push(0); // the top instance: no name
    b.extend_from_slice(meta.clock.as_bytes());
    b.push(0);
    b.extend_from_slice(&meta.page_size.to_le_bytes());
    b.extend_from_slice(&(table.len() as u32).to_le_bytes());
    for (cpu, off, size) in &table {
        b.extend_from_slice(&cpu.to_le_bytes());
        b.extend_from_slice(&off.to_le_bytes());
        b.extend_from_slice(&size.to_le_bytes());
    }
    let mut o = Vec::new();
    option(&mut o, SEC_BUFFER, &b);
    option(&mut o, 0, &0u64.to_le_bytes());
    out.write_all(&section(SEC_OPTIONS, "options", &o, None)?)?;
    let end = out.stream_position()?;
    out.seek(SeekFrom::Start(fly_at + 8))?;
    out.write_all(&fly_size.to_le_bytes())?;
    out.seek(SeekFrom::Start(done_at))?;
    out.write_all(&second_options.to_le_bytes())?;
    out.seek(SeekFrom::Start(end))?;
    out.flush()
}

/// Compresses a slot's pages into chunks of `chunk` bytes (the last may hold fewer pages),
/// after a placeholder chunk count; returns the count.
fn compress_pages<W: Write>(
    out: &mut W,
    z: &mut ChunkCompressor,
    sp: &mut SlotPages<'_>,
    chunk: u64,
) -> io::Result<u32> {
    out.write_all(&0u32.to_le_bytes())?;
    let mut data = vec![0u8; chunk as usize];
    let mut frame = Vec::new();
    let mut left = sp.len;
    let mut n = 0u32;
    while left > 0 {
        let want = left.min(chunk) as usize;
        sp.source.read_exact(&mut data[..want]).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "slot {}: source ended before its length {}: {e}",
                    sp.slot, sp.len
                ),
            )
        })?;
        frame.clear();
        z.chunk(&data[..want], &mut frame)?;
        out.write_all(&frame)?;
        n = n
            .checked_add(1)
            .ok_or_else(|| invalid(format!("slot {}: over 2^32 chunks", sp.slot)))?;
        left -= want as u64;
    }
    let mut probe = [0u8; 1];
    if sp.source.read(&mut probe)? != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("slot {}: source has more than {} bytes", sp.slot, sp.len),
        ));
    }
    Ok(n)
}

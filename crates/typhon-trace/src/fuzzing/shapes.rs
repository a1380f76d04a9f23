//! Hostile trace.dat shapes, built from a valid file, for the fuzz corpus and the bounds tests:
//! compressed options sections that inflate 1024 times ([`options_bomb`]), many CPUs each
//! with one large chunk ([`many_cpu_chunks`]), and 64-byte pages in chunks of 9 bytes that each
//! declare 1024 of them ([`tiny_pages`]).

use crate::tracedat::TraceFile;
use typhon_recorder::codec::records::Record;
use typhon_recorder::page::PageWriter;
use typhon_recorder::tracedat::{
    write_tracedat_v7, ChunkCompressor, Compression, FileMeta, SlotPages,
};

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// Offset of the field holding the first options section's offset in a v7 file's header.
fn options_ptr(v7: &[u8]) -> Option<usize> {
    let mut p = 18;
    for _ in 0..2 {
        p += v7.get(p..)?.iter().position(|&b| b == 0)? + 1;
    }
    Some(p)
}

/// The uncompressed options sections of a little-endian v7 file, as (section offset, body
/// offset, body size), in chain order.
fn options_sections(v7: &[u8]) -> Option<Vec<(usize, usize, usize)>> {
    let mut next = u64_at(v7, options_ptr(v7)?) as usize;
    let mut out = Vec::new();
    while next != 0 && out.len() < 64 {
        let h = v7.get(next..next + 16)?;
        if u16_at(h, 2) & 1 != 0 {
            return None;
        }
        let size = u64_at(h, 8) as usize;
        let body = next + 16;
        out.push((next, body, size));
        // The last option is DONE: its data is the next section's offset.
        next = u64_at(v7, body + size - 8) as usize;
    }
    Some(out)
}

/// A small zstd v7 Typhon recording: `pages` pages of 20 instants each on CPU 1.
///
/// ```
/// let f = typhon_trace::tracedat::TraceFile::parse(typhon_trace::fuzzing::shapes::small_zstd(2)).unwrap();
/// assert_eq!(f.stream_records().filter(|r| r.is_ok()).count(), 40);
/// ```
pub fn small_zstd(pages: u64) -> Vec<u8> {
    many_cpu_chunks(1, pages as usize, 20)
}

/// `v7` (a little-endian version 7 file written by the recorder, zstd-compressed) with
/// `sections` more options sections chained after its last one, each compressed and holding
/// one option of an unknown id with `option_bytes` zero bytes of data (at most 64 MiB - 20),
/// compressed (frames one after the other) into a body 1024 times smaller (padded with a
/// skippable frame), the most the ratio cap allows. `None` if `v7` is not such a file.
///
/// ```
/// let bomb = typhon_trace::fuzzing::shapes::options_bomb(&typhon_trace::fuzzing::shapes::small_zstd(1), 2, 1 << 20).unwrap();
/// assert!(bomb.len() < 64 << 10);
/// ```
pub fn options_bomb(v7: &[u8], sections: usize, option_bytes: u32) -> Option<Vec<u8>> {
    let last = *options_sections(v7)?.last()?;
    let mut out = v7.to_vec();
    let inflated = 6 + option_bytes as usize + 14;
    let body_len = inflated.div_ceil(1024).max(64) + 8;
    let stride = 16 + body_len;
    let first = out.len();
    out[last.1 + last.2 - 8..last.1 + last.2].copy_from_slice(&(first as u64).to_le_bytes());
    let mut z = ChunkCompressor::new(1).ok()?;
    // The option's zeros as frames of 1 MiB (one frame, repeated), so that making a bomb of
    // gigabytes takes 1 MiB: the frames of a body decompress one after the other.
    const Z: usize = 1 << 20;
    let mut frame = Vec::new();
    let mut zeros = Vec::new();
    z.chunk(&vec![0u8; Z], &mut zeros).ok()?;
    let zeros = zeros[8..].to_vec();
    for k in 0..sections {
        let next = if k + 1 == sections {
            0
        } else {
            (first + (k + 1) * stride) as u64
        };
        let mut body = vec![0u8; 8];
        body[4..].copy_from_slice(&(inflated as u32).to_le_bytes());
        let mut head = 0x7777u16.to_le_bytes().to_vec();
        head.extend_from_slice(&option_bytes.to_le_bytes());
        frame.clear();
        z.chunk(&head, &mut frame).ok()?;
        body.extend_from_slice(&frame[8..]);
        let n = option_bytes as usize;
        for _ in 0..n / Z {
            body.extend_from_slice(&zeros);
        }
        let mut tail = vec![0u8; n % Z];
        tail.extend_from_slice(&0u16.to_le_bytes());
        tail.extend_from_slice(&8u32.to_le_bytes());
        tail.extend_from_slice(&next.to_le_bytes());
        frame.clear();
        z.chunk(&tail, &mut frame).ok()?;
        body.extend_from_slice(&frame[8..]);
        // Pad the frame to the body's size with a skippable frame (magic, size, bytes).
        let pad = body_len.checked_sub(body.len() + 8)?;
        body.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        body.extend_from_slice(&(pad as u32).to_le_bytes());
        body.resize(body_len, 0);
        let csize = (body_len - 8) as u32;
        body[..4].copy_from_slice(&csize.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // OPTIONS
        out.extend_from_slice(&1u16.to_le_bytes()); // compressed
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(body_len as u64).to_le_bytes());
        out.extend_from_slice(&body);
    }
    Some(out)
}

/// Pages generated as they are read: page `k` holds `per_page` instants at times
/// `1 + k * 1000 + j`, the same on every CPU (so a merge by time takes a page of each in turn).
struct GenPages {
    cpu: u8,
    pages: usize,
    per_page: usize,
    k: usize,
    page: Vec<u8>,
    pos: usize,
}

impl std::io::Read for GenPages {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.page.len() {
            if self.k == self.pages {
                return Ok(0);
            }
            let mut w = PageWriter::new(4096).map_err(std::io::Error::other)?;
            let mut b = [0u8; 64];
            for j in 0..self.per_page {
                let ts = 1 + self.k as u64 * 1000 + j as u64;
                let r = Record::Instant {
                    name_id: 1,
                    payload: j as i32,
                };
                let n = r
                    .write(&mut b, self.cpu, ts as i64)
                    .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
                w.try_push(ts, &b[..n])
                    .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
            }
            self.page.clear();
            self.page.extend_from_slice(w.finish());
            self.pos = 0;
            self.k += 1;
        }
        let n = buf.len().min(self.page.len() - self.pos);
        buf[..n].copy_from_slice(&self.page[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A zstd v7 Typhon recording of `cpus` CPUs (1..=cpus), each one chunk of `chunk_pages`
/// 4 KiB pages of `per_page` instants, the same times on every CPU.
///
/// ```
/// let f = typhon_trace::tracedat::TraceFile::parse(typhon_trace::fuzzing::shapes::many_cpu_chunks(3, 2, 1)).unwrap();
/// assert_eq!(f.stream_records().filter(|r| r.is_ok()).count(), 6);
/// ```
pub fn many_cpu_chunks(cpus: u32, chunk_pages: usize, per_page: usize) -> Vec<u8> {
    let mut slots: Vec<SlotPages<'_>> = (1..=cpus)
        .map(|c| {
            let src = GenPages {
                cpu: c as u8,
                pages: chunk_pages,
                per_page,
                k: 0,
                page: Vec::new(),
                pos: 0,
            };
            SlotPages {
                slot: c,
                ..SlotPages::new(0, (chunk_pages * 4096) as u64, src)
            }
        })
        .collect();
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat_v7(
        &mut out,
        &FileMeta::new(4096),
        Compression::Zstd { level: 1 },
        chunk_pages.max(1),
        &mut slots,
    )
    .expect("an in-memory file");
    out.into_inner()
}

/// A zstd v7 file with 64-byte pages whose CPU 1 data is `chunks` chunks of one byte that each
/// declare 64 KiB (1024 pages; the ratio cap's floor), none of which decompresses: 1024 damaged
/// pages per 9 bytes of file. `None` if `v7` is not a recorder's zstd file.
///
/// ```
/// use typhon_trace::fuzzing::shapes::{small_zstd, tiny_pages};
/// let f = typhon_trace::tracedat::TraceFile::parse(tiny_pages(&small_zstd(1), 3).unwrap()).unwrap();
/// assert_eq!(f.page_size(), 64);
/// let errors: Vec<_> = f.stream_records().filter_map(|r| r.err()).collect();
/// // One error a chunk, each standing for the chunk's 1024 pages.
/// assert_eq!(errors.len(), 3);
/// assert_eq!(errors.iter().map(|e| e.damaged_pages()).sum::<u64>(), 3 * 1024);
/// ```
pub fn tiny_pages(v7: &[u8], chunks: u32) -> Option<Vec<u8>> {
    let tf = TraceFile::parse(v7.to_vec()).ok()?;
    let (off, size) = tf.cpu_data(1)?;
    let mut out = v7.to_vec();
    out[14..18].copy_from_slice(&64u32.to_le_bytes());
    // The BUFFER option (id 3): u64 section offset, name, clock, then the page size.
    for (_, body, size) in options_sections(v7)? {
        let mut p = body;
        while p + 6 <= body + size {
            let (id, n) = (u16_at(&out, p), u32_at(&out, p + 2) as usize);
            if id == 3 {
                let mut q = p + 6 + 8;
                for _ in 0..2 {
                    q += out.get(q..)?.iter().position(|&b| b == 0)? + 1;
                }
                out[q..q + 4].copy_from_slice(&64u32.to_le_bytes());
            }
            p += 6 + n;
        }
    }
    let (off, size) = (off as usize, size as usize);
    if 4 + 9 * chunks as usize > size {
        return None;
    }
    let mut d = chunks.to_le_bytes().to_vec();
    for i in 0..chunks {
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&(64u32 << 10).to_le_bytes());
        d.push(i as u8);
    }
    // The CPU's size: exactly the chunks (the count included).
    out[off..off + d.len()].copy_from_slice(&d);
    let len = d.len() as u64;
    for (_, body, bsize) in options_sections(v7)? {
        let mut p = body;
        while p + 6 <= body + bsize {
            let (id, n) = (u16_at(&out, p), u32_at(&out, p + 2) as usize);
            if id == 3 {
                let mut q = p + 6 + 8;
                for _ in 0..2 {
                    q += out.get(q..)?.iter().position(|&b| b == 0)? + 1;
                }
                let cpus = u32_at(&out, q + 4) as usize;
                for e in 0..cpus {
                    let at = q + 8 + e * 20;
                    if u32_at(&out, at) == 1 {
                        out[at + 12..at + 20].copy_from_slice(&len.to_le_bytes());
                    }
                }
            }
            p += 6 + n;
        }
    }
    Some(out)
}

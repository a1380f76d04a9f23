//! A slot's data in a snapshot: the cut's held pages and chunks trimmed to `(W, T1]`, after a
//! restatement of the slot's owner (and for slot 0 the session header and the definitions).
//!
//! Held items wholly inside the interval go to the file as they are: a raw page into a v6
//! file, a chunk into a v7 one. An item that crosses W or T1 (a chunk decompressed first) gives
//! only its records inside the interval, into pages made for the snapshot, as do the
//! restatements and the spans open at T1. In a v7 file every byte of a slot's data must be a
//! chunk, so the pages made here and the raw pages held (a slot's newest, not yet a chunk) are
//! compressed into chunks of their own, between the held chunks.

use super::held::{Data, Held};
use super::Owner;
use crate::codec::{self, records};
use crate::flush::page::{PageRecords, PageWriter};
use crate::tracedat::{decompress_chunk, ChunkCompressor, CHUNK_HEADER, DEFAULT_CHUNK_PAGES};
use std::io::{self, Read};
use std::sync::Arc;

/// One slot's part of a cut.
pub(crate) struct SlotCut {
    pub(crate) slot: u8,
    pub(crate) owner: Option<Owner>,
    /// Records restated after the ThreadInfo at W (slot 0: the session header, definitions).
    pub(crate) head: Vec<Vec<u8>>,
    pub(crate) pages: Vec<Arc<Held>>,
    /// Records of the spans open at T1, times converted, ending at T1.
    pub(crate) open: Vec<Vec<u8>>,
}

/// A part of a slot's data in the file: bytes made for the snapshot (pages or chunks), or a
/// held page or chunk as is.
enum Part {
    Owned(Vec<u8>),
    Held(Arc<Held>),
}

impl Part {
    fn bytes(&self) -> &[u8] {
        match self {
            Part::Owned(v) => v,
            Part::Held(p) => p.bytes(),
        }
    }
}

/// Reads a slot's parts in order.
pub(crate) struct Parts {
    parts: Vec<Part>,
    at: usize,
    off: usize,
}

impl Parts {
    pub(crate) fn empty() -> Self {
        Self {
            parts: Vec::new(),
            at: 0,
            off: 0,
        }
    }
}

impl Read for Parts {
    /// Fills `buf` from as many parts as it holds: the writer's buffer goes to the file in one
    /// system call, not one per 4 KiB page.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while let Some(p) = self.parts.get(self.at) {
            let b = p.bytes();
            if self.off < b.len() {
                let k = (b.len() - self.off).min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&b[self.off..self.off + k]);
                self.off += k;
                n += k;
                if n == buf.len() {
                    break;
                }
                continue;
            }
            // Released as soon as it is written: a held item evicted meanwhile is freed here.
            self.parts[self.at] = Part::Owned(Vec::new());
            self.at += 1;
            self.off = 0;
        }
        Ok(n)
    }
}

/// A slot's data for the file, and what it holds.
pub(crate) struct Built {
    pub(crate) parts: Parts,
    pub(crate) len: u64,
    /// For a compressed file: how many chunks `parts` are.
    pub(crate) chunks: Option<u32>,
    pub(crate) written: u64,
    pub(crate) missed: u64,
    pub(crate) restated: u64,
    pub(crate) open: u64,
}

/// Pages made for a compressed file wait here until they fill a chunk, or a held chunk or the
/// end of the slot comes.
struct Zip {
    z: ChunkCompressor,
    run: Vec<u8>,
    pages: usize,
    chunks: u32,
}

/// Appends records to a slot's new pages, starting a page when one is full.
struct Pages {
    w: PageWriter,
    parts: Vec<Part>,
    written: u64,
    zip: Option<Zip>,
}

impl Pages {
    fn push(&mut self, ts: u64, rec: &[u8]) -> io::Result<()> {
        if self.w.try_push(ts, rec).is_err() {
            self.close()?;
            self.w
                .try_push(ts, rec)
                .map_err(|e| io::Error::other(format!("a record does not fit a page: {e:?}")))?;
        }
        self.written += 1;
        Ok(())
    }

    /// Ends the page being made.
    fn close(&mut self) -> io::Result<()> {
        if self.w.is_empty() {
            return Ok(());
        }
        let Some(z) = self.zip.as_mut() else {
            self.parts.push(Part::Owned(self.w.finish().to_vec()));
            return Ok(());
        };
        z.run.extend_from_slice(self.w.finish());
        z.pages += 1;
        if z.pages == DEFAULT_CHUNK_PAGES {
            self.seal()?;
        }
        Ok(())
    }

    /// Compresses the pages waiting for a chunk into one.
    fn seal(&mut self) -> io::Result<()> {
        let Some(z) = self.zip.as_mut().filter(|z| z.pages > 0) else {
            return Ok(());
        };
        let mut out = Vec::new();
        z.z.chunk(&z.run, &mut out)?;
        z.run.clear();
        z.pages = 0;
        z.chunks += 1;
        self.parts.push(Part::Owned(out));
        Ok(())
    }

    /// A held item wholly inside the interval, as it is (a raw page into a compressed file:
    /// among the pages waiting for a chunk).
    fn held(&mut self, h: Arc<Held>) -> io::Result<()> {
        self.close()?;
        self.written += h.records;
        match (&h.data, self.zip.as_mut()) {
            (Data::Page(b), Some(z)) => {
                z.run.extend_from_slice(b);
                z.pages += 1;
                if z.pages == DEFAULT_CHUNK_PAGES {
                    self.seal()?;
                }
            }
            (Data::Chunk { .. }, Some(_)) => {
                self.seal()?;
                if let Some(z) = self.zip.as_mut() {
                    z.chunks += 1;
                }
                self.parts.push(Part::Held(h));
            }
            (Data::Page(_), None) => self.parts.push(Part::Held(h)),
            (Data::Chunk { .. }, None) => {
                return Err(io::Error::other(
                    "a compressed chunk in an uncompressed snapshot",
                ))
            }
        }
        Ok(())
    }

    /// The records of `page` (its first page time `first`, carrying `missed`) inside
    /// `(w, t1]`. A missed count on a page that starts before W counts drops before W, which
    /// the window evicted.
    fn trim(&mut self, page: &[u8], first: u64, missed: u64, w: u64, t1: u64) -> io::Result<u64> {
        let recs = PageRecords::new(page).map_err(|e| io::Error::other(e.to_string()))?;
        let mut kept = Vec::new();
        for r in recs {
            let (ts, data) = r.map_err(|e| io::Error::other(e.to_string()))?;
            if ts > w && ts <= t1 {
                kept.push((ts, data));
            }
        }
        if kept.is_empty() {
            return Ok(0);
        }
        let mut carried = 0;
        if first > w && missed > 0 {
            self.close()?;
            self.w
                .set_missed(missed)
                .map_err(|e| io::Error::other(e.to_string()))?;
            carried = missed;
        }
        for (ts, data) in &kept {
            self.push(*ts, data)?;
        }
        Ok(carried)
    }
}

const TS: usize = codec::CommonHeader::TIMESTAMP_OFFSET;

/// Builds one slot's data: into a compressed file when `level` is given.
pub(crate) fn build(
    c: SlotCut,
    page_size: usize,
    w: u64,
    t1: u64,
    level: Option<i32>,
) -> io::Result<Built> {
    let zip = match level {
        Some(l) => Some(Zip {
            z: ChunkCompressor::new(l)?,
            run: Vec::new(),
            pages: 0,
            chunks: 0,
        }),
        None => None,
    };
    let mut p = Pages {
        w: PageWriter::new(page_size).map_err(|e| io::Error::other(e.to_string()))?,
        parts: Vec::new(),
        written: 0,
        zip,
    };
    let mut missed = 0;
    let mut buf = Vec::new();
    if let Some(o) = &c.owner {
        let name = records::clamp_thread_name(&o.name);
        buf.resize(records::thread_info_len(name), 0);
        records::write_thread_info(&mut buf, c.slot, w as i64, o.tid, name, o.kind)
            .map_err(|e| io::Error::other(e.to_string()))?;
        p.push(w, &buf)?;
    }
    for mut r in c.head {
        r[TS..TS + 8].copy_from_slice(&(w as i64).to_le_bytes());
        p.push(w, &r)?;
    }
    let restated = p.written;
    let mut pages = Vec::new();
    for h in c.pages {
        if h.first_ts > w && h.last_ts <= t1 {
            missed += h.missed;
            p.held(h)?;
            continue;
        }
        match &h.data {
            Data::Page(b) => missed += p.trim(b, h.first_ts, h.missed, w, t1)?,
            Data::Chunk { bytes, .. } => {
                let size = bytes
                    .get(4..CHUNK_HEADER)
                    .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap()));
                decompress_chunk(&bytes[CHUNK_HEADER.min(bytes.len())..], size, &mut pages)?;
                for page in pages.chunks_exact(page_size) {
                    let first = u64::from_le_bytes(page[..8].try_into().unwrap());
                    let carried = PageRecords::new(page).map_or(0, |r| r.missed());
                    missed += p.trim(page, first, carried, w, t1)?;
                }
            }
        }
    }
    let open = c.open.len() as u64;
    for r in &c.open {
        p.push(t1, r)?;
    }
    p.close()?;
    p.seal()?;
    let len = p.parts.iter().map(|x| x.bytes().len() as u64).sum();
    Ok(Built {
        chunks: p.zip.as_ref().map(|z| z.chunks),
        parts: Parts {
            parts: p.parts,
            at: 0,
            off: 0,
        },
        len,
        written: p.written,
        missed,
        restated,
        open,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::pack::Packer;
    use crate::window::store::Store;

    /// 100 pages of one slot, 100 records each 10 ns apart; pages 5, 37 and 60 carry a missed
    /// count.
    fn pages() -> Vec<Held> {
        (0..100u64)
            .map(|k| {
                let mut w = PageWriter::new(4096).unwrap();
                let missed = if [5, 37, 60].contains(&k) { k } else { 0 };
                w.set_missed(missed).unwrap();
                let t0 = 1000 * (k + 1);
                for i in 0..100 {
                    w.try_push(t0 + 10 * i, &(k * 100 + i).to_le_bytes())
                        .unwrap();
                }
                Held::page(w.finish().into(), t0 + 990, 100, missed)
            })
            .collect()
    }

    fn cut(s: &Store, w: u64) -> SlotCut {
        SlotCut {
            slot: 1,
            owner: Some(Owner {
                since: 0,
                tid: 7,
                name: "t".into(),
                kind: crate::ThreadKind::Other,
            }),
            head: Vec::new(),
            pages: s.slots[1]
                .iter()
                .filter(|h| h.last_ts > w)
                .cloned()
                .collect(),
            open: Vec::new(),
        }
    }

    /// The records of a slot's data: pages, or chunks of pages.
    fn records(b: Built, page_size: usize) -> (Vec<(u64, Vec<u8>)>, Vec<u8>) {
        let mut raw = Vec::new();
        let mut parts = b.parts;
        parts.read_to_end(&mut raw).unwrap();
        assert_eq!(raw.len() as u64, b.len);
        let mut pages = Vec::new();
        match b.chunks {
            None => pages.extend_from_slice(&raw),
            Some(n) => {
                let (mut at, mut buf) = (0, Vec::new());
                for _ in 0..n {
                    let c = u32::from_le_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
                    let u = u32::from_le_bytes(raw[at + 4..at + 8].try_into().unwrap());
                    decompress_chunk(&raw[at + 8..at + 8 + c], u, &mut buf).unwrap();
                    pages.extend_from_slice(&buf);
                    at += 8 + c;
                }
                assert_eq!(at, raw.len(), "{n} chunks, nothing else");
            }
        }
        let mut out = Vec::new();
        for p in pages.chunks_exact(page_size) {
            for r in PageRecords::new(p).unwrap() {
                let (ts, d) = r.unwrap();
                out.push((ts, d.to_vec()));
            }
        }
        (out, raw)
    }

    /// The same pages held raw and held as chunks of 8 (the last 4 still raw), cut at W and
    /// T1 inside chunks: the same records, written and missed counts; the chunks wholly inside
    /// are in the compressed file byte for byte.
    #[test]
    fn a_chunked_slot_gives_the_records_of_a_raw_one() {
        let mut raw = Store::new(u64::MAX, u64::MAX, None);
        let mut zst = Store::new(u64::MAX, u64::MAX, Some(Packer::new(1, 8).unwrap()));
        for (a, b) in pages().into_iter().zip(pages()) {
            raw.push(1, a);
            zst.push(1, b);
        }
        // On the packer's thread: every chunk given, made and installed.
        zst.install_made(true);
        assert_eq!(zst.slots[1].len(), 12 + 4);
        for (w, t1) in [
            (3_455, 90_500),
            (0, u64::MAX),
            (20_000, 38_001),
            (97_000, 99_999),
        ] {
            let a = build(cut(&raw, w), 4096, w, t1, None).unwrap();
            let b = build(cut(&zst, w), 4096, w, t1, Some(1)).unwrap();
            assert_eq!(
                (a.written, a.missed, a.restated, a.open),
                (b.written, b.missed, b.restated, b.open),
                "({w}, {t1}]"
            );
            // A missed count is carried by a page that starts after W and has a record by T1.
            let missed: u64 = [5u64, 37, 60]
                .iter()
                .filter(|&&k| 1000 * (k + 1) > w && 1000 * (k + 1) <= t1)
                .sum();
            assert_eq!(a.missed, missed, "({w}, {t1}]");
            let (ra, _) = records(a, 4096);
            let (rb, bytes) = records(b, 4096);
            assert_eq!(ra.len(), rb.len());
            assert!(ra == rb, "({w}, {t1}]: the same records");
            // The ThreadInfo at W, then every record of (W, T1].
            let n = (1..=100u64)
                .flat_map(|k| (0..100).map(move |i| 1000 * k + 10 * i))
                .filter(|&t| t > w && t <= t1)
                .count();
            assert_eq!(ra.len(), n + 1);
            if w == 3_455 {
                let inside = &zst.slots[1][2];
                assert!(inside.first_ts > w && matches!(inside.data, Data::Chunk { .. }));
                let c = inside.bytes();
                assert!(
                    bytes.windows(c.len()).any(|x| x == c),
                    "a chunk inside the interval is copied as it is"
                );
            }
        }
    }
}

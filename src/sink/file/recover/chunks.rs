//! Reading a compressed slot's chunks for `recover`: which of them can be used, and what each
//! one that cannot costs.
//!
//! Chunk headers (`u32 compressed size, u32 uncompressed size`) delimit the chunks, so one
//! chunk whose frame does not decompress is skipped alone: its pages (its uncompressed size
//! over the page size) are damaged, the chunks after it are read. "Torn" is only a chunk the
//! end of the file cuts short (a kill while it was appended). A chunk whose bytes repeat an
//! earlier chunk of the slot exactly is a duplicate (the recorder never writes two chunks
//! alike: every record has its own time): left out, so it cannot count its records twice.

use super::super::paths::at;
use crate::sink::tracedat::{decompress_chunk, plausible_size, CHUNK_HEADER};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A slot's chunks in `len` bytes at `offset` of a file.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// (offset in the file, length) of the chunks that decompress, runs merged.
    pub(super) ranges: Vec<(u64, u64)>,
    /// Chunks in `ranges`.
    pub(super) good: u32,
    /// Chunks the headers delimit (good and damaged; not duplicates): the positions the
    /// recorder's chunks took.
    pub(super) positions: u64,
    pub(super) damaged_chunks: u64,
    /// Pages of the damaged chunks.
    pub(super) damaged_pages: u64,
    pub(super) duplicates: u64,
    /// Bytes from the torn chunk on (at most one, at the end).
    pub(super) torn_bytes: u64,
    /// Where the delimited chunks end, from `offset`: where more chunks may follow.
    pub(super) end: u64,
    /// (offset in the file, length) of the last delimited chunk, if it decompresses.
    pub(super) last: Option<(u64, u64)>,
    /// What was wrong, each naming the file and the chunk.
    pub(super) problems: Vec<String>,
}

impl Walk {
    /// Whether every delimited chunk could be used.
    pub(super) fn whole(&self) -> bool {
        self.damaged_chunks == 0 && self.duplicates == 0
    }

    /// Bytes of the usable chunks.
    pub(super) fn len(&self) -> u64 {
        self.ranges.iter().map(|r| r.1).sum()
    }

    fn take(&mut self, at: u64, n: u64) {
        match self.ranges.last_mut() {
            Some(r) if r.0 + r.1 == at => r.1 += n,
            _ => self.ranges.push((at, n)),
        }
    }
}

/// The sizes a chunk header gives: (compressed, uncompressed).
pub(super) fn chunk_sizes(h: &[u8; CHUNK_HEADER]) -> (u64, u32) {
    (
        u64::from(u32::from_le_bytes(h[..4].try_into().unwrap())),
        u32::from_le_bytes(h[4..].try_into().unwrap()),
    )
}

fn hash(b: &[u8]) -> u64 {
    // Fixed keys: the same bytes hash alike in every run (only equality within a slot matters).
    let mut h = std::hash::DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

/// Walks the chunks of `len` bytes at `offset` in `file` (named `path`), `page`-byte pages,
/// chunks of at most `max_pages` pages. A read error is returned (the caller keeps the file).
pub(super) fn walk(
    file: &File,
    path: &Path,
    offset: u64,
    len: u64,
    page: u64,
    max_pages: u64,
) -> io::Result<Walk> {
    let mut w = Walk::default();
    let mut z = Vec::new();
    let mut data = Vec::new();
    // Hash of a good chunk's bytes → its offset, to tell a repeated chunk.
    let mut seen: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut earlier = Vec::new();
    let mut pos = 0u64;
    let read = |buf: &mut [u8], at_: u64| {
        file.read_exact_at(buf, at_)
            .map_err(|e| at(path, "reading", e))
    };
    while pos < len {
        let left = len - pos;
        let mut h = [0u8; CHUNK_HEADER];
        if left < CHUNK_HEADER as u64 {
            w.torn_bytes = left;
            break;
        }
        read(&mut h, offset + pos)?;
        let (c, u) = chunk_sizes(&h);
        if CHUNK_HEADER as u64 + c > left {
            // Cut short by the end of the file: the chunk a kill interrupted.
            w.torn_bytes = left;
            break;
        }
        let whole = CHUNK_HEADER as u64 + c;
        let chunk_at = offset + pos;
        pos += whole;
        w.end = pos;
        w.positions += 1;
        let sizes_ok = u > 0
            && u64::from(u) % page == 0
            && u64::from(u) / page <= max_pages
            && plausible_size(c, u64::from(u));
        let decoded = sizes_ok && {
            z.resize(c as usize, 0);
            read(&mut z, chunk_at + CHUNK_HEADER as u64)?;
            decompress_chunk(&z, u, &mut data).is_ok()
        };
        if !decoded {
            // Its pages by its header when the header can be right, else a whole chunk's.
            let pages = if sizes_ok {
                u64::from(u) / page
            } else {
                max_pages
            };
            w.damaged_chunks += 1;
            w.damaged_pages += pages;
            w.last = None;
            w.problems.push(format!(
                "{}: the chunk at byte {chunk_at} ({c} bytes, {u} uncompressed) {}: left out, its {pages} pages counted damaged",
                path.display(),
                if sizes_ok { "does not decompress" } else { "has sizes no chunk of this recording can have" },
            ));
            continue;
        }
        let key = hash(&z) ^ u64::from(u);
        let mut repeat = false;
        for &prev in seen.get(&key).into_iter().flatten() {
            earlier.resize(whole as usize, 0);
            read(&mut earlier, prev)?;
            let mut mine = h.to_vec();
            mine.extend_from_slice(&z);
            if earlier == mine {
                repeat = true;
                break;
            }
        }
        if repeat {
            w.positions -= 1;
            w.duplicates += 1;
            w.problems.push(format!(
                "{}: the chunk at byte {chunk_at} repeats an earlier chunk of the slot byte for byte: left out, its records are counted once",
                path.display()
            ));
            continue;
        }
        seen.entry(key).or_default().push(chunk_at);
        w.take(chunk_at, whole);
        w.good += 1;
        w.last = Some((chunk_at, whole));
    }
    Ok(w)
}

//! A compressed recording's pending files (see `chunks`), made the last chunks of their slots.

use super::super::assemble::Source;
use super::super::paths::*;
use crate::sink::tracedat::{ChunkCompressor, DEFAULT_CHUNK_PAGES};
use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Makes the whole pages of slot `slot`'s pending file (`path`) the last chunks (zstd `level`)
/// of its part file, unless that already holds the chunk they were gathered for (a kill after
/// the chunk was written and before the pending file was removed). A partial last page (a write the
/// kill cut short) is left out; its bytes are returned, for `torn_bytes`. Read and compressed
/// [`DEFAULT_CHUNK_PAGES`] pages at a time, so a pending file of any size takes bounded memory.
pub(super) fn add_pending(
    dir: &Path,
    slot: u8,
    path: &Path,
    page: u64,
    level: i32,
    sources: &mut BTreeMap<u8, Source>,
) -> io::Result<u64> {
    let f = open_regular(path, false)?;
    let len = f.metadata().map_err(|e| at(path, "reading", e))?.len();
    if len < PENDING_HEADER {
        // Empty, or cut between the header's start and its end: it holds no page.
        return Ok(0);
    }
    let mut head = [0u8; PENDING_HEADER as usize];
    f.read_exact_at(&mut head, 0)
        .map_err(|e| at(path, "reading", e))?;
    let index = u64::from_le_bytes(head[8..].try_into().unwrap());
    if let Some(src) = sources.get(&slot) {
        if !src.remove {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: slot {slot}'s chunks are in an assembly already; not used, left as it is",
                    path.display()
                ),
            ));
        }
        if u64::from(src.chunks.unwrap_or(0)) > index {
            return Ok(0);
        }
    }
    let pages = (len - PENDING_HEADER) / page;
    let torn = (len - PENDING_HEADER) % page;
    if pages == 0 {
        return Ok(torn);
    }
    let mut z = ChunkCompressor::new(level).map_err(|e| at(path, "compressing", e))?;
    let part = slot_file(dir, slot);
    let (file, mut end, mut chunks) = match sources.remove(&slot) {
        Some(src) => (
            open_regular(&src.path, true)?,
            src.len,
            src.chunks.unwrap_or(0),
        ),
        None => (create_new_with(&part, false)?, 0, 0),
    };
    // A torn chunk after the whole ones (counted above) is cut off: these chunks follow them.
    file.set_len(end).map_err(|e| at(&part, "writing", e))?;
    let mut data = vec![0u8; (DEFAULT_CHUNK_PAGES as u64 * page) as usize];
    let mut out = Vec::new();
    let mut at_page = 0;
    while at_page < pages {
        let n = (pages - at_page).min(DEFAULT_CHUNK_PAGES as u64);
        let buf = &mut data[..(n * page) as usize];
        f.read_exact_at(buf, PENDING_HEADER + at_page * page)
            .map_err(|e| at(path, "reading", e))?;
        out.clear();
        z.chunk(buf, &mut out)
            .map_err(|e| at(path, "compressing", e))?;
        file.write_all_at(&out, end)
            .map_err(|e| at(&part, "writing", e))?;
        end += out.len() as u64;
        chunks += 1;
        at_page += n;
    }
    sources.insert(
        slot,
        Source {
            slot,
            path: part,
            file,
            offset: 0,
            len: end,
            remove: true,
            chunks: Some(chunks),
        },
    );
    Ok(torn)
}

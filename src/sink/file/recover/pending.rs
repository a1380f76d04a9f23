//! A compressed recording's pending files (see `chunks`): the chunks of a slot the part file
//! does not hold yet, made its next chunks; and the chunks neither holds, counted missing.
//!
//! The compressor appends a slot's chunks in index order, and removes a chunk's pending file
//! once the chunk is in the part file (or makes it a tombstone when the disk refused it, its
//! pages counted lost then). So before the lowest pending index `m` come exactly `m` chunks, less
//! the tombstones below `m`, in the part file; one more means a kill between the append and the
//! removal (the part file's last chunk is then the pending file's pages: checked); fewer means
//! chunks are missing (the part file cut or deleted). Between two pending files no index may be
//! missing, and every chunk but the last holds `chunk_pages` pages. Past the last pending file,
//! the chunks the slot had handed over (the `counters` file) must be there too.

use super::super::assemble::Source;
use super::super::paths::*;
use super::chunks::{chunk_sizes, Walk};
use crate::sink::tracedat::{decompress_chunk, ChunkCompressor, CHUNK_HEADER};
use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What a slot's pending files came to.
#[derive(Debug, Default)]
pub(super) struct Added {
    /// Bytes of partial last pages (a write the kill cut short), left out.
    pub(super) torn_bytes: u64,
    /// Chunks that should be in the part file or a pending file and are in neither.
    pub(super) missing_chunks: u64,
    /// Their pages, and the pages a full chunk's pending file lacks.
    pub(super) missing_pages: u64,
    /// Problems, each naming a file (and the field that is wrong).
    pub(super) errors: Vec<String>,
    /// Pending files not used: left as they are.
    pub(super) keep: BTreeSet<PathBuf>,
}

/// A slot's recording, as `recover` read it from the session and the part file.
pub(super) struct Slot<'a> {
    pub(super) slot: u8,
    pub(super) page: u64,
    pub(super) level: i32,
    /// Pages per chunk (`session.json`), capped by the largest chunk a reader takes.
    pub(super) chunk_pages: u64,
    /// Chunks handed over, as the `counters` file last noted (0 when it says nothing).
    pub(super) handed_over: u64,
    /// The part file's chunks, if it is there.
    pub(super) walk: Option<&'a Walk>,
}

struct Pending {
    index: u64,
    path: PathBuf,
    tombstone: bool,
    pages: u64,
}

fn invalid(m: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m)
}

/// Reads a pending file's header, refusing one that cannot be the recorder's: larger than a
/// chunk's pages and the header (not read further), or whose header names another chunk than
/// its name does.
fn open(s: &Slot<'_>, index: u64, path: &Path) -> io::Result<(Pending, u64)> {
    let f = open_regular(path, false)?;
    let len = f.metadata().map_err(|e| at(path, "reading", e))?.len();
    let max = PENDING_HEADER + s.chunk_pages * s.page;
    if len > max {
        return Err(invalid(format!(
            "{}: {len} bytes, more than a chunk of this recording can take ({} pages of {} bytes after a {PENDING_HEADER}-byte header: {max}): not a pending file the recorder wrote; not read, left as it is",
            path.display(),
            s.chunk_pages,
            s.page
        )));
    }
    let mut p = Pending {
        index,
        path: path.to_path_buf(),
        tombstone: false,
        pages: 0,
    };
    if len < PENDING_HEADER {
        // Empty, or cut in its header (a kill right after the create): no page yet.
        return Ok((p, 0));
    }
    let mut head = [0u8; PENDING_HEADER as usize];
    f.read_exact_at(&mut head, 0)
        .map_err(|e| at(path, "reading", e))?;
    let said = u64::from_le_bytes(head[8..].try_into().unwrap());
    if said != index {
        return Err(invalid(format!(
            "{}: its header's chunk index is {said}, its name's is {index}: not a pending file the recorder wrote; not used, left as it is",
            path.display()
        )));
    }
    p.pages = (len - PENDING_HEADER) / s.page;
    Ok((p, (len - PENDING_HEADER) % s.page))
}

/// Whether the `len` bytes at `at_` in the part file are one chunk that starts with `pages`
/// (all of them; or the first ones, when writing the rest to the pending file failed).
fn chunk_is(src: &Source, at_: u64, len: u64, pages: &[u8]) -> bool {
    let mut z = vec![0u8; len as usize];
    let mut data = Vec::new();
    let mut h = [0u8; CHUNK_HEADER];
    src.file.read_exact_at(&mut z, at_).is_ok() && {
        h.copy_from_slice(&z[..CHUNK_HEADER]);
        let (_, u) = chunk_sizes(&h);
        decompress_chunk(&z[CHUNK_HEADER..], u, &mut data).is_ok() && data.starts_with(pages)
    }
}

/// Makes slot `s.slot`'s pending files (`files`: name index, path; in index order) the next
/// chunks of its part file (`src`, made when there is none), as the module docs say, and counts
/// the chunks missing. A pending file whose place cannot be right is named and left, with the
/// slot's later ones.
pub(super) fn add_pending(
    dir: &Path,
    s: &Slot<'_>,
    files: &[(u64, PathBuf, bool)],
    src: &mut Option<Source>,
) -> io::Result<Added> {
    let mut a = Added::default();
    let mut found = Vec::new();
    for (index, path, lost) in files {
        if *lost {
            // A tombstone: whatever it holds, the chunk was counted lost while recording.
            found.push(Pending {
                index: *index,
                path: path.clone(),
                tombstone: true,
                pages: 0,
            });
            continue;
        }
        match open(s, *index, path) {
            Ok((p, torn)) => {
                a.torn_bytes += torn;
                found.push(p);
            }
            Err(e) => {
                // Its pages are not read: lost unless the file is mended and recovered again
                // (as many as its length holds, at most a chunk's).
                a.errors.push(e.to_string());
                a.keep.insert(path.clone());
                a.missing_chunks += 1;
                a.missing_pages += std::fs::symlink_metadata(path).map_or(s.chunk_pages, |m| {
                    (m.len().saturating_sub(PENDING_HEADER) / s.page).min(s.chunk_pages)
                });
                found.push(Pending {
                    index: *index,
                    path: path.clone(),
                    tombstone: true,
                    pages: 0,
                });
            }
        }
    }
    let part = slot_file(dir, s.slot);
    if let Some(src) = src.as_ref().filter(|src| src.path != part) {
        if let Some(p) = found.iter().find(|p| !p.tombstone && p.pages > 0) {
            a.errors.push(format!(
                "{}: slot {}'s chunks are in an assembly already ({}); not used, left as it is",
                p.path.display(),
                s.slot,
                src.path.display()
            ));
            a.keep.insert(p.path.clone());
        }
        return Ok(a);
    }
    let held = s.walk.map_or(0, |w| w.positions);
    let live: Vec<&Pending> = found.iter().filter(|p| !p.tombstone).collect();
    let mut next = match live.first() {
        // Before the first live pending file: the part file's chunks and the tombstones.
        Some(first) => {
            let below = found
                .iter()
                .filter(|p| p.tombstone && p.index < first.index)
                .count() as u64;
            first.index - below
        }
        None => held,
    };
    // Index of the next chunk `found` should hold, and live files to add.
    let mut add: Vec<&Pending> = Vec::new();
    let mut at_index = live.first().map_or(0, |p| p.index);
    if let Some(first) = live.first() {
        let mut rest = &live[..];
        if held == next + 1 {
            // A kill between the append and the removal: the part file's last chunk must be
            // exactly these pages.
            let same = match (s.walk.and_then(|w| w.last), src.as_ref()) {
                (Some((o, l)), Some(src)) => {
                    let mut pages = vec![0u8; (first.pages * s.page) as usize];
                    open_regular(&first.path, false)?
                        .read_exact_at(&mut pages, PENDING_HEADER)
                        .map_err(|e| at(&first.path, "reading", e))?;
                    chunk_is(src, o, l, &pages)
                }
                _ => false,
            };
            if !same {
                return Ok(refuse(a, &live, held, next, src));
            }
            rest = &live[1..];
            at_index += 1;
            next = held;
        } else if held > next {
            return Ok(refuse(a, &live, held, next, src));
        }
        a.missing_chunks += next - held;
        a.missing_pages += (next - held) * s.chunk_pages;
        for (k, p) in rest.iter().enumerate() {
            // Indices skipped that no tombstone explains: chunks missing.
            let gap = (at_index..p.index)
                .filter(|i| !found.iter().any(|f| f.tombstone && f.index == *i))
                .count() as u64;
            a.missing_chunks += gap;
            a.missing_pages += gap * s.chunk_pages;
            if k + 1 < rest.len() && p.pages < s.chunk_pages {
                // A chunk handed over holds `chunk_pages` pages: the rest were not kept.
                a.missing_pages += s.chunk_pages - p.pages;
            }
            at_index = p.index + 1;
            add.push(p);
        }
    }
    // Every chunk the slot handed over is somewhere: the part file, a tombstone, a pending
    // file, or counted missing above. Indices up to the last pending file added are; without
    // one, those the part file and the tombstones hold.
    let accounted = match add.last() {
        Some(p) => p.index + 1,
        None => held + found.iter().filter(|p| p.tombstone).count() as u64,
    };
    if s.handed_over > accounted {
        let n = s.handed_over - accounted;
        a.missing_chunks += n;
        a.missing_pages += n * s.chunk_pages;
    }
    if a.missing_chunks > 0 {
        a.errors.push(format!(
            "slot {}: {} chunks ({} pages) that {} and its pending files should hold are missing: counted lost",
            s.slot,
            a.missing_chunks,
            a.missing_pages,
            slot_file(dir, s.slot).display()
        ));
    }
    append(dir, s, &add, src)?;
    Ok(a)
}

/// The slot's pending files cannot follow its part file as their indices say: named, left.
fn refuse(mut a: Added, live: &[&Pending], held: u64, next: u64, src: &Option<Source>) -> Added {
    let first = live[0];
    a.errors.push(format!(
        "{}: its header's chunk index {} says {next} chunks come before it, but {} holds {held}: the index cannot be right; the slot's pending files are not used, left as they are",
        first.path.display(),
        first.index,
        src.as_ref().map_or("the part file".into(), |s| s.path.display().to_string()),
    ));
    for p in live {
        a.keep.insert(p.path.clone());
    }
    a
}

/// Compresses each pending file's whole pages into one chunk after the part file's delimited
/// chunks (a torn one, counted already, is cut off).
fn append(dir: &Path, s: &Slot<'_>, add: &[&Pending], src: &mut Option<Source>) -> io::Result<()> {
    let add: Vec<&&Pending> = add.iter().filter(|p| p.pages > 0).collect();
    if add.is_empty() {
        return Ok(());
    }
    let part = slot_file(dir, s.slot);
    let mut z = ChunkCompressor::new(s.level).map_err(|e| at(&part, "compressing", e))?;
    // The source is replaced only once every chunk is appended: after a failure it still
    // describes the chunks the part file held (the bytes after them are in no count).
    // (A part file kept for a look, a chunk of it damaged, stays kept.)
    let (file, mut end, mut ranges, mut chunks, remove) = match src.as_ref() {
        Some(src) => (
            open_regular(&src.path, true)?,
            s.walk.map_or(0, |w| w.end),
            src.extents(),
            src.chunks.unwrap_or(0),
            src.remove,
        ),
        None => (create_new_with(&part, false)?, 0, Vec::new(), 0, true),
    };
    file.set_len(end).map_err(|e| at(&part, "writing", e))?;
    let mut data = Vec::new();
    let mut out = Vec::new();
    for p in add {
        data.resize((p.pages * s.page) as usize, 0);
        open_regular(&p.path, false)?
            .read_exact_at(&mut data, PENDING_HEADER)
            .map_err(|e| at(&p.path, "reading", e))?;
        out.clear();
        z.chunk(&data, &mut out)
            .map_err(|e| at(&p.path, "compressing", e))?;
        file.write_all_at(&out, end)
            .map_err(|e| at(&part, "writing", e))?;
        match ranges.last_mut() {
            Some(r) if r.0 + r.1 == end => r.1 += out.len() as u64,
            _ => ranges.push((end, out.len() as u64)),
        }
        end += out.len() as u64;
        chunks += 1;
    }
    let len = ranges.iter().map(|r| r.1).sum();
    *src = Some(Source {
        slot: s.slot,
        path: part,
        file,
        offset: 0,
        len,
        remove,
        chunks: Some(chunks),
        ranges,
    });
    Ok(())
}

//! A compressed recording's part file: the slot's pages gathered into chunks, each compressed
//! as it fills (or at the flush that ends a cycle) and appended, so the disk only ever sees
//! compressed bytes and a kill loses at most the pages of a chunk not yet written.
//!
//! The part file is the chunks back to back (`u32 compressed size, u32 uncompressed size,
//! frame` each, [`crate::tracedat::compress`]): finishing copies them as they are after the
//! chunk count into the v7 file; `recover` reads them one by one and stops at a torn one.

use super::paths::at;
use crate::flush::page::PageRecords;
use crate::sink::tracedat::ChunkCompressor;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// One slot's chunk file. Invariant: the file holds `len` bytes of whole chunks; the pages of
/// the chunk being filled are in `pending` only. A chunk that fails to be written is cut back
/// off the file and its pages are lost (and reported, so they are counted).
pub(super) struct ChunkFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) chunks: u32,
    /// The length the file must be cut back to, while cutting it failed: until it is done,
    /// chunks are refused (they would land after a partial one).
    cut_to: Option<u64>,
    pending: Vec<u8>,
    pending_pages: u64,
    pending_records: u64,
    /// The compressed chunk, reused.
    out: Vec<u8>,
}

/// Pages and records a failed chunk write lost.
pub(super) type Lost = (u64, u64);

impl ChunkFile {
    pub(super) fn new(path: PathBuf, file: File, chunk_bytes: usize) -> Self {
        Self {
            path,
            file,
            len: 0,
            chunks: 0,
            cut_to: None,
            pending: Vec::with_capacity(chunk_bytes),
            pending_pages: 0,
            pending_records: 0,
            out: Vec::new(),
        }
    }

    /// Takes a page; once `chunk_pages` are gathered they are compressed and written. On an
    /// error the chunk's pages are lost: the error, and the pages and records lost before
    /// this one (the caller counts this page itself).
    pub(super) fn write_page(
        &mut self,
        page: &[u8],
        z: &mut ChunkCompressor,
        chunk_pages: u64,
    ) -> Result<(), (io::Error, Lost)> {
        let records = PageRecords::new(page).map_or(0, |r| r.count() as u64);
        self.pending.extend_from_slice(page);
        self.pending_pages += 1;
        self.pending_records += records;
        if self.pending_pages < chunk_pages {
            return Ok(());
        }
        self.emit(z)
            .map_err(|(e, (p, r))| (e, (p - 1, r - records)))
    }

    /// Compresses and writes the pending pages, if any, as one chunk.
    pub(super) fn flush(&mut self, z: &mut ChunkCompressor) -> Result<(), (io::Error, Lost)> {
        if self.pending_pages == 0 {
            return Ok(());
        }
        self.emit(z)
    }

    fn emit(&mut self, z: &mut ChunkCompressor) -> Result<(), (io::Error, Lost)> {
        let lost = (self.pending_pages, self.pending_records);
        self.pending_pages = 0;
        self.pending_records = 0;
        self.out.clear();
        let r = z
            .chunk(&self.pending, &mut self.out)
            .and_then(|()| self.append());
        self.pending.clear();
        r.map_err(|e| (at(&self.path, "writing", e), lost))
    }

    fn append(&mut self) -> io::Result<()> {
        if let Some(keep) = self.cut_to {
            self.file.set_len(keep)?;
            self.cut_to = None;
        }
        match self.file.write_all_at(&self.out, self.len) {
            Ok(()) => {
                self.len += self.out.len() as u64;
                self.chunks += 1;
                Ok(())
            }
            Err(e) => {
                // Part of the chunk may be on disk: cut it off, or refuse chunks until it is.
                if self.file.set_len(self.len).is_err() {
                    self.cut_to = Some(self.len);
                }
                Err(e)
            }
        }
    }
}

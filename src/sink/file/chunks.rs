//! A compressed recording's part files: each slot's pages gathered into chunks on the
//! flusher's side ([`Gather`]), compressed and appended by a compressor thread
//! ([`Compressor`]), so the disk only ever sees compressed bytes and the flusher goes back to
//! draining the rings while a chunk is compressed.
//!
//! ```text
//!   flusher: write_page ──▶ Gather (≤ chunk_pages pages) ──full──▶ queue ──▶ compressor thread
//!                             │ end of each flush cycle                       │ zstd frame
//!                             ▼                                               ▼
//!            slot-001.pending: "typhpnd1", u64 chunk index, the gathered pages   slot-001.pages: chunks
//! ```
//!
//! The part file is the chunks back to back (`u32 compressed size, u32 uncompressed size,
//! frame` each, [`crate::tracedat::compress`]): finishing copies them as they are after the
//! chunk count into the v7 file; `recover` reads them one by one and stops at a torn one.
//!
//! A chunk goes to the thread only when it is full (or when the recording finishes): a light
//! recording's flush cycles hold a page or two per slot, and chunks cut at every cycle would
//! be small and compress worse (the default demo: 10.1 bytes a record against 9.1 in whole
//! chunks). Until its chunk is full, a slot's gathered pages are written as they are to its
//! pending file at the end of every flush cycle, so a kill loses none of them: `recover` makes
//! them the slot's last chunk, unless the part file already holds the chunk of that index
//! (a kill after the chunk was written, before the pending file was cleared). A kill loses
//! only the full chunks still queued, [`QUEUE`], beyond what an uncompressed recording loses.
//! Pending pages go to the kernel's page cache and are cut once their chunk is handed over,
//! normally long before the kernel writes dirty pages back (30 s by default): the disk sees
//! the compressed chunks. (Under the heavy demo, 4 × 200 000 records/s, about 70% of the pages
//! pass through a pending file; the flusher's cost is a copy of each into the page cache.)
//! The queue is bounded: when the compressor falls behind, the flusher waits for it, the rings
//! fill and producers drop records (counted), as with a slow disk; producers never wait.
//! A chunk the disk refuses is cut back off its file and its pages and records are reported as
//! lost ([`Compressor::failures`]), so they are counted.

use super::paths::{at, create_new_with, pending_file, slot_file, PENDING_HEADER, PENDING_MAGIC};
use crate::flush::page::PageRecords;
use crate::sink::tracedat::ChunkCompressor;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// Chunks queued for the compressor thread at most.
pub(super) const QUEUE: usize = 8;

/// Pages and records of a chunk.
pub(super) type Lost = (u64, u64);

/// A slot's pages waiting to become a chunk (on the flusher's side), and its pending file.
#[derive(Default)]
pub(super) struct Gather {
    data: Vec<u8>,
    pages: u64,
    /// Chunks of this slot handed to the compressor: the index the gathered pages' chunk gets.
    sent: u64,
    /// The gathered pages already in the pending file.
    kept: u64,
    /// The pending file (made at the first flush cycle that ends with pages gathered).
    file: Option<File>,
    /// The pending file holds pages of a chunk already handed over: cut it before reuse.
    stale: bool,
}

impl Gather {
    /// Adds a page; true when the chunk is full.
    pub(super) fn push(&mut self, page: &[u8], chunk_pages: u64) -> bool {
        self.data.extend_from_slice(page);
        self.pages += 1;
        self.pages >= chunk_pages
    }

    /// The records of the gathered pages: counted only when a chunk is lost, so the flusher
    /// does not walk every record of every page it hands over.
    fn records(&self, page_size: usize) -> u64 {
        self.data
            .chunks_exact(page_size.max(1))
            .map(|p| PageRecords::new(p).map_or(0, |r| r.count() as u64))
            .sum()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// Writes the gathered pages not yet in the slot's pending file to it (the end of a flush
    /// cycle), so a kill before the chunk is full loses none of them. The first pages of a
    /// chunk replace what the file held (the pages of a chunk already handed over) and write
    /// the header naming the chunk's index; later ones are appended. After a failed write
    /// the next cycle writes the whole gather again.
    pub(super) fn keep(&mut self, dir: &Path, slot: u8) -> io::Result<()> {
        if self.pages == self.kept {
            return Ok(());
        }
        let path = pending_file(dir, slot);
        if self.file.is_none() {
            self.file = Some(create_new_with(&path, false)?);
        }
        let Some(f) = self.file.as_ref() else {
            unreachable!("made just above")
        };
        let page = self.data.len() / self.pages as usize;
        let from = self.kept as usize * page;
        let r = (|| {
            if self.kept == 0 {
                if self.stale {
                    f.set_len(0)?;
                    self.stale = false;
                }
                let mut head = [0u8; PENDING_HEADER as usize];
                head[..8].copy_from_slice(PENDING_MAGIC);
                head[8..].copy_from_slice(&self.sent.to_le_bytes());
                f.write_all_at(&head, 0)?;
            }
            f.write_all_at(&self.data[from..], PENDING_HEADER + from as u64)
        })();
        match r {
            Ok(()) => {
                self.kept = self.pages;
                Ok(())
            }
            Err(e) => {
                self.kept = 0;
                self.stale = true;
                Err(at(&path, "writing", e))
            }
        }
    }

    /// The gathered pages went to the compressor as chunk `sent`: the next ones are the next
    /// chunk's, and what the pending file holds is stale.
    fn handed_over(&mut self) {
        self.sent += 1;
        self.stale |= self.kept > 0;
        self.kept = 0;
    }

    /// Removes the pending file, once every chunk handed over is written or counted lost.
    pub(super) fn forget_pending(&mut self, dir: &Path, slot: u8) -> io::Result<()> {
        match self.file.take() {
            Some(_) => {
                let path = pending_file(dir, slot);
                std::fs::remove_file(&path).map_err(|e| at(&path, "removing", e))
            }
            None => Ok(()),
        }
    }
}

/// One slot's chunk file. Invariant: the file holds `len` bytes of whole chunks. A chunk that
/// fails to be written is cut back off the file.
pub(super) struct ChunkFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) len: u64,
    pub(super) chunks: u32,
    /// The length the file must be cut back to, while cutting it failed: until it is done,
    /// chunks are refused (they would land after a partial one).
    cut_to: Option<u64>,
}

impl ChunkFile {
    fn append(&mut self, chunk: &[u8]) -> io::Result<()> {
        if let Some(keep) = self.cut_to {
            self.file.set_len(keep)?;
            self.cut_to = None;
        }
        match self.file.write_all_at(chunk, self.len) {
            Ok(()) => {
                self.len += chunk.len() as u64;
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

/// Chunks that could not be written, for the flusher to count. The flusher asks after every
/// page: `any` spares it the lock while there are none (the usual case).
#[derive(Default)]
struct Failures {
    any: AtomicBool,
    list: Mutex<Vec<(u8, io::Error, Lost)>>,
}

impl Failures {
    fn push(&self, f: (u8, io::Error, Lost)) {
        // A poisoned lock: a panic elsewhere; the failure is still recorded.
        self.list.lock().unwrap_or_else(|p| p.into_inner()).push(f);
        // Relaxed: the list is under the lock; the flag only says to look. Set after the
        // unlock, so a `take` that sees it locks after this push (had its lock come first, its
        // swap would have happened before this store and could not have read it).
        self.any.store(true, Ordering::Relaxed);
    }

    fn take(&self) -> Vec<(u8, io::Error, Lost)> {
        // Relaxed, as in `push`. Cleared before the list is taken: a failure pushed in between
        // sets it again, and is taken now or next time.
        if !self.any.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        std::mem::take(&mut *self.list.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What compresses and writes chunks: the files, the compressor, and the failures to report.
struct Writer {
    dir: PathBuf,
    files: Vec<Option<ChunkFile>>,
    z: ChunkCompressor,
    out: Vec<u8>,
    failures: Arc<Failures>,
}

impl Writer {
    fn chunk(&mut self, slot: u8, g: &Gather) {
        let r = self.try_chunk(slot, g);
        if let Err(e) = r {
            let e = at(&slot_file(&self.dir, slot), "writing", e);
            let records = g.records(g.data.len() / g.pages.max(1) as usize);
            self.failures.push((slot, e, (g.pages, records)));
        }
    }

    fn try_chunk(&mut self, slot: u8, g: &Gather) -> io::Result<()> {
        let entry = &mut self.files[slot as usize];
        let f = match entry {
            Some(f) => f,
            None => {
                let path = slot_file(&self.dir, slot);
                let file = create_new_with(&path, true)?;
                entry.insert(ChunkFile {
                    path,
                    file,
                    len: 0,
                    chunks: 0,
                    cut_to: None,
                })
            }
        };
        self.out.clear();
        self.z.chunk(&g.data, &mut self.out)?;
        f.append(&self.out)
    }
}

enum Job {
    Chunk(u8, Gather),
}

/// Compresses chunks on its own thread (or inline, where the thread could not be started or
/// `TYPHON_COMPRESS_INLINE=1` asks for it, to measure the difference).
pub(super) struct Compressor {
    tx: Option<SyncSender<Job>>,
    /// Emptied buffers coming back, reused for the next chunks.
    spare: Option<Receiver<Vec<u8>>>,
    thread: Option<std::thread::JoinHandle<Writer>>,
    inline: Option<Writer>,
    failures: Arc<Failures>,
}

impl Compressor {
    pub(super) fn new(dir: &Path, z: ChunkCompressor) -> Self {
        let failures = Arc::new(Failures::default());
        let mut w = Writer {
            dir: dir.to_path_buf(),
            files: (0..256).map(|_| None).collect(),
            z,
            out: Vec::new(),
            failures: failures.clone(),
        };
        if std::env::var_os("TYPHON_COMPRESS_INLINE").is_some_and(|v| v == "1") {
            return Self::inline(w, failures);
        }
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let (stx, srx) = sync_channel::<Vec<u8>>(QUEUE + 2);
        let (wtx, wrx) = std::sync::mpsc::channel::<Writer>();
        let spawned = std::thread::Builder::new()
            .name("typhon-compress".into())
            .spawn(move || {
                let Ok(mut w) = wrx.recv() else {
                    unreachable!("the writer is sent right after the spawn")
                };
                for Job::Chunk(slot, mut g) in rx {
                    w.chunk(slot, &g);
                    g.data.clear();
                    // The buffer goes back for reuse, unless enough are waiting already.
                    let _ = stx.try_send(g.data);
                }
                w
            });
        match spawned {
            Ok(thread) => {
                if let Err(back) = wtx.send(w) {
                    w = back.0;
                    return Self::inline(w, failures);
                }
                Self {
                    tx: Some(tx),
                    spare: Some(srx),
                    thread: Some(thread),
                    inline: None,
                    failures,
                }
            }
            Err(_) => Self::inline(w, failures),
        }
    }

    fn inline(w: Writer, failures: Arc<Failures>) -> Self {
        Self {
            tx: None,
            spare: None,
            thread: None,
            inline: Some(w),
            failures,
        }
    }

    /// Hands a slot's gathered pages over as one chunk, and leaves `g` empty.
    pub(super) fn send(&mut self, slot: u8, g: &mut Gather, chunk_bytes: usize) {
        if let Some(w) = self.inline.as_mut() {
            w.chunk(slot, g);
            g.data.clear();
            g.pages = 0;
            g.handed_over();
            return;
        }
        let mut data = self
            .spare
            .as_ref()
            .and_then(|s| s.try_recv().ok())
            .unwrap_or_default();
        data.reserve(chunk_bytes);
        let full = Gather {
            data: std::mem::replace(&mut g.data, data),
            pages: std::mem::take(&mut g.pages),
            ..Gather::default()
        };
        g.handed_over();
        if let Some(tx) = &self.tx {
            if let Err(back) = tx.send(Job::Chunk(slot, full)) {
                // The thread is gone (it panicked): its chunks are counted lost from now on.
                let Job::Chunk(slot, g) = back.0;
                let records = g.records(g.data.len() / g.pages.max(1) as usize);
                self.failures.push((
                    slot,
                    io::Error::other("the compressor thread stopped"),
                    (g.pages, records),
                ));
            }
        }
    }

    /// The chunks that could not be written since the last call.
    pub(super) fn failures(&mut self) -> Vec<(u8, io::Error, Lost)> {
        self.failures.take()
    }

    /// Waits for every chunk handed over to be written, and returns the part files.
    pub(super) fn finish(&mut self) -> Vec<Option<ChunkFile>> {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            match t.join() {
                Ok(w) => return w.files,
                Err(_) => {
                    self.failures.push((
                        0,
                        io::Error::other("the compressor thread panicked"),
                        (0, 0),
                    ));
                    return Vec::new();
                }
            }
        }
        self.inline.take().map(|w| w.files).unwrap_or_default()
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // The thread ends when its queue closes; what it holds is written first.
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

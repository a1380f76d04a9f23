//! A compressed recording's part files: each slot's pages gathered into chunks on the
//! flusher's side ([`Gather`]), compressed and appended by a compressor thread
//! ([`Compressor`]), so the flusher goes back to draining the rings while a chunk is compressed.
//!
//! ```text
//!   flusher: write_page ──▶ Gather (≤ chunk_pages pages) ──full──▶ queue ──▶ compressor thread
//!              │ end of each flush cycle, and at the hand-over         │ 1. zstd frame, appended
//!              ▼                                                       ▼    to slot-001.pages
//!   slot-001.chunk-7.pending: "typhpnd1", u64 index 7, the chunk's pages   2. chunk-7.pending
//!   (one file per chunk not yet in the part file)                             removed
//! ```
//!
//! The part file is the chunks back to back (`u32 compressed size, u32 uncompressed size,
//! frame` each, [`crate::tracedat::compress`]), in index order (a chunk the disk refused is
//! not there and leaves a tombstone, below): finishing copies them as they are after the chunk
//! count into the v7 file; `recover` reads them one by one.
//!
//! Every page stays on disk from the flush cycle that took it until its chunk is in the part
//! file, so a kill loses at most what an uncompressed recording loses (the pages of the cycle
//! it interrupts), whether the chunk was still gathering, queued or being compressed: the
//! gathered pages go to their chunk's pending file at the end of every flush cycle, and the
//! rest of a chunk's pages when it is handed over; the compressor removes the file once the
//! chunk is appended. `recover` makes the pending files of chunks the part file does not hold
//! the slot's next chunks, in index order; an index the part file and the pending files do not
//! account for is a missing chunk, whose `chunk_pages` pages it counts lost (see
//! `recover::chunks`). A kill between the append and the removal leaves both: `recover` sees
//! that the part file's last chunk is those pages.
//!
//! A chunk goes to the thread only when it is full (or when the recording finishes): a light
//! recording's flush cycles hold a page or two per slot, and chunks cut at every cycle would
//! be small and compress worse (the default demo: 10.1 bytes a record against 9.1 in whole
//! chunks). Pending pages go to the kernel's page cache and are removed milliseconds later,
//! once their chunk is written, normally long before the kernel writes dirty pages back (30 s
//! by default): the disk sees the compressed chunks. The flusher's cost is a copy of each page
//! into the page cache.
//! The queue is bounded ([`QUEUE`] chunks): when the compressor falls behind, the flusher waits
//! for it, the rings fill and producers drop records (counted), as with a slow disk; producers
//! never wait. A chunk the disk refuses is cut back off its file, its pages and records are
//! reported as lost ([`Compressor::failures`]), and its pending file is renamed to a tombstone,
//! `slot-001.chunk-7.lost` (emptied), so that `recover` neither counts it missing nor adds it.

use super::paths::{
    at, create_new, create_new_with, lost_file, open_regular, pending_file, slot_file,
    PENDING_HEADER, PENDING_MAGIC,
};
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

/// A pending file's header: the magic, then the chunk's index.
fn pending_header(magic: &[u8; 8], index: u64) -> [u8; PENDING_HEADER as usize] {
    let mut head = [0u8; PENDING_HEADER as usize];
    head[..8].copy_from_slice(magic);
    head[8..].copy_from_slice(&index.to_le_bytes());
    head
}

/// A slot's pages waiting to become a chunk (on the flusher's side), and its pending file.
#[derive(Default)]
pub(super) struct Gather {
    data: Vec<u8>,
    pages: u64,
    /// Chunks of this slot handed to the compressor: the index the gathered pages' chunk gets.
    sent: u64,
    /// The gathered pages already in the pending file.
    kept: u64,
    /// The chunk's pending file (made at the first flush cycle that ends with pages gathered,
    /// or at the hand-over).
    file: Option<File>,
}

impl Gather {
    /// Adds a page; true when the chunk is full.
    pub(super) fn push(&mut self, page: &[u8], chunk_pages: u64) -> bool {
        self.data.extend_from_slice(page);
        self.pages += 1;
        self.pages >= chunk_pages
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// Chunks of this slot handed to the compressor.
    pub(super) fn sent(&self) -> u64 {
        self.sent
    }

    /// Writes the gathered pages not yet in the chunk's pending file to it (the end of a flush
    /// cycle, and the hand-over), so a kill before the chunk is in the part file loses none of
    /// them. The first write makes the file and its header. After a failed write the next one
    /// writes the whole gather again.
    pub(super) fn keep(&mut self, dir: &Path, slot: u8) -> io::Result<()> {
        if self.pages == self.kept {
            return Ok(());
        }
        let path = pending_file(dir, slot, self.sent);
        if self.file.is_none() {
            self.file = Some(create_new(&path)?);
        }
        let Some(f) = self.file.as_ref() else {
            unreachable!("made just above")
        };
        let page = self.data.len() / self.pages as usize;
        let from = self.kept as usize * page;
        let r = (|| {
            if self.kept == 0 {
                f.write_all_at(&pending_header(PENDING_MAGIC, self.sent), 0)?;
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
                Err(at(&path, "writing", e))
            }
        }
    }

    /// The gathered pages went to the compressor as chunk `sent`: the next ones are the next
    /// chunk's, in a file of their own.
    fn handed_over(&mut self) {
        self.sent += 1;
        self.kept = 0;
        self.file = None;
    }
}

/// A full chunk on its way to the compressor.
struct Full {
    slot: u8,
    index: u64,
    data: Vec<u8>,
    pages: u64,
}

impl Full {
    /// The chunk's records: counted only when it is lost, so the flusher does not walk every
    /// record of every page it hands over.
    fn records(&self) -> u64 {
        self.data
            .chunks_exact((self.data.len() / self.pages.max(1) as usize).max(1))
            .map(|p| PageRecords::new(p).map_or(0, |r| r.count() as u64))
            .sum()
    }

    fn lost(&self) -> Lost {
        (self.pages, self.records())
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
    /// A pause before each chunk (`TYPHON_COMPRESS_STALL_MS`, for tests: a compressor slower
    /// than the flusher, so that chunks are queued when the recording is killed).
    stall: Option<std::time::Duration>,
}

impl Writer {
    /// Appends the chunk to its part file, then removes its pending file; a chunk the disk
    /// refuses is counted, and its pending file becomes a tombstone.
    fn chunk(&mut self, c: &Full) {
        if let Some(d) = self.stall {
            std::thread::sleep(d);
        }
        let pending = pending_file(&self.dir, c.slot, c.index);
        match self.try_chunk(c) {
            Ok(()) => {
                if let Err(e) = std::fs::remove_file(&pending) {
                    if e.kind() != io::ErrorKind::NotFound {
                        // The chunk is written: a pending file left behind costs nothing
                        // (`recover` sees that the part file holds its pages).
                        let e = at(&pending, "removing", e);
                        self.failures.push((c.slot, e, (0, 0)));
                    }
                }
            }
            Err(e) => {
                let e = at(&slot_file(&self.dir, c.slot), "writing", e);
                tombstone(&self.dir, c.slot, c.index);
                self.failures.push((c.slot, e, c.lost()));
            }
        }
    }

    fn try_chunk(&mut self, c: &Full) -> io::Result<()> {
        let entry = &mut self.files[c.slot as usize];
        let f = match entry {
            Some(f) => f,
            None => {
                let path = slot_file(&self.dir, c.slot);
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
        self.z.chunk(&c.data, &mut self.out)?;
        f.append(&self.out)
    }
}

/// Turns the pending file of chunk `index` of `slot`, counted lost, into its tombstone
/// ([`lost_file`]): renamed and cut, which a full disk allows (made empty if there was none).
/// If that fails, a later `recover` counts the chunk missing as well as lost: too much, never
/// too little.
fn tombstone(dir: &Path, slot: u8, index: u64) {
    let (pending, lost) = (pending_file(dir, slot, index), lost_file(dir, slot, index));
    if std::fs::rename(&pending, &lost).is_ok() {
        if let Ok(f) = open_regular(&lost, true) {
            let _ = f.set_len(0);
        }
    } else {
        let _ = create_new(&lost);
    }
}

/// Compresses chunks on its own thread (or inline, where the thread could not be started or
/// `TYPHON_COMPRESS_INLINE=1` asks for it, to measure the difference).
pub(super) struct Compressor {
    tx: Option<SyncSender<Full>>,
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
            stall: std::env::var("TYPHON_COMPRESS_STALL_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(std::time::Duration::from_millis),
        };
        if std::env::var_os("TYPHON_COMPRESS_INLINE").is_some_and(|v| v == "1") {
            return Self::inline(w, failures);
        }
        let (tx, rx) = sync_channel::<Full>(QUEUE);
        let (stx, srx) = sync_channel::<Vec<u8>>(QUEUE + 2);
        let (wtx, wrx) = std::sync::mpsc::channel::<Writer>();
        let spawned = std::thread::Builder::new()
            .name("typhon-compress".into())
            .spawn(move || {
                let Ok(mut w) = wrx.recv() else {
                    unreachable!("the writer is sent right after the spawn")
                };
                for mut c in rx {
                    w.chunk(&c);
                    c.data.clear();
                    // The buffer goes back for reuse, unless enough are waiting already.
                    let _ = stx.try_send(c.data);
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

    /// Hands a slot's gathered pages over as one chunk, and leaves `g` empty. The pages not yet
    /// in the chunk's pending file are written to it first: an error doing so is returned (the
    /// chunk still goes to the compressor; only a kill before it is written would lose it).
    pub(super) fn send(
        &mut self,
        dir: &Path,
        slot: u8,
        g: &mut Gather,
        chunk_bytes: usize,
    ) -> io::Result<()> {
        let kept = g.keep(dir, slot);
        let index = g.sent;
        if let Some(w) = self.inline.as_mut() {
            let c = Full {
                slot,
                index,
                data: std::mem::take(&mut g.data),
                pages: std::mem::take(&mut g.pages),
            };
            w.chunk(&c);
            g.data = c.data;
            g.data.clear();
            g.handed_over();
            return kept;
        }
        let mut data = self
            .spare
            .as_ref()
            .and_then(|s| s.try_recv().ok())
            .unwrap_or_default();
        data.reserve(chunk_bytes);
        let full = Full {
            slot,
            index,
            data: std::mem::replace(&mut g.data, data),
            pages: std::mem::take(&mut g.pages),
        };
        g.handed_over();
        if let Some(tx) = &self.tx {
            if let Err(back) = tx.send(full) {
                // The thread is gone (it panicked): its chunks are counted lost from now on.
                let c = back.0;
                tombstone(dir, slot, index);
                self.failures.push((
                    slot,
                    io::Error::other("the compressor thread stopped"),
                    c.lost(),
                ));
            }
        }
        kept
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

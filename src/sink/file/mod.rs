//! The file sink: pages stream to per-slot files while recording; `finish` assembles trace.dat.
//!
//! ```text
//!   recording to OUT (OUT.parts/ itself flock'ed)  finish() / recover
//!   OUT.parts/lock            (our pid, a note)        │
//!   OUT.parts/session.json    (page size, anchors)     │
//!   OUT.parts/losses.json     (pages the disk refused) ├──▶ OUT.parts/assembly-0.dat ──rename──▶ OUT
//!   OUT.parts/counters        (what no page carries)   │    (+ assembly-0.journal: which slots
//!   OUT.parts/slot-001.pages  (slot 1's pages)         │     it holds, at which offsets, and
//!   OUT.parts/slot-002.pages                           │     what it was when renamed)
//!   OUT.parts/slot-002.chunk-7.pending                 │
//!             (compressed: a chunk's pages until it    │
//!              is in the part file, see `chunks`)      │
//! ```
//!
//! Like trace-cmd, which records one file per CPU and assembles them at the end, the sink appends
//! every page to its slot's file and hands the bytes to the OS after every flush cycle, so a
//! process killed with SIGKILL leaves every flushed page on disk. [`recover`] turns such a
//! leftover directory into a valid trace.dat (thread names and totals are rebuilt from the pages'
//! ThreadInfo records and missed counts).
//!
//! Finishing copies one slot at a time into `assembly-N.dat` inside the parts directory, makes
//! the copy durable, notes it in `assembly-N.journal`, and only then deletes the slot's part
//! file: it needs no more free space than the largest slot, and at every moment each page is in
//! a part file or in a journaled assembly, where [`recover`] finds it. The assembly is renamed
//! onto OUT last, after the journal notes its device, inode and length; a journal whose assembly is
//! gone and whose noted identity is OUT's therefore means OUT is complete, and
//! [`recover`] then only removes the leftovers instead of overwriting it.
//!
//! Every file made here is created with `O_EXCL | O_NOFOLLOW` (nothing pre-planted is ever
//! written through), and [`recover`] reads only regular files, opened without following links
//! or blocking on FIFOs, a page at a time.
//!
//! A compressed recording ([`FileSink::create_with`], SPEC §11) keeps the same directory, but
//! each part file holds zstd chunks of whole pages, compressed by a compressor thread as a
//! slot's pages fill a chunk; the pages of a chunk not yet in the part file wait in
//! `slot-NNN.chunk-I.pending` (`chunks`). Finishing copies the chunks as they are into a
//! trace.dat version 7; `recover` leaves out a torn last chunk (counted in `torn_chunks` and
//! `torn_bytes`) and a chunk that does not decompress (its pages counted damaged), makes the
//! pending pages the slot's next chunks, and counts the pages of every chunk that is missing.
//! `session.json` names the compression and the pages per chunk, so `recover` knows which form
//! the parts are in.
//!
//! Modules, each using only those before it: `paths` (names, checks, exclusive creates, the
//! lock), `counters` (the counters file), `chunks` (compressed part files), `assemble`
//! (finishing and clean-up), `recover`, `live` (what a reader following a recording in
//! progress may read without the lock); the sink itself is here.

mod assemble;
mod chunks;
mod counters;
mod live;
mod paths;
mod recover;

pub use live::{
    parts_complete, parts_locked, parts_losses, parts_name, PartsName, PENDING_HEADER_LEN,
    PENDING_MAGIC,
};
pub use paths::{output_path, parts_dir};
pub use recover::{page_fault, recover, Recovered};

use crate::flush::page::PageRecords;
use crate::sink::tracedat::{
    ChunkCompressor, Compression, FileMeta, SlotMeta, DEFAULT_CHUNK_PAGES,
};
use crate::sink::{SessionSummary, Sink, Unstored};
use assemble::{assemble, cleanup, failpoint, names, Source};
use chunks::{Compressor, Gather};
use counters::CountersFile;
use paths::*;
use std::collections::{BTreeSet, VecDeque};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Streams pages to `<out>.parts/` and assembles `out` at the end.
///
/// ```
/// use typhon_recorder::sink::FileSink;
/// use typhon_recorder::sink::{Sink, SessionSummary};
/// let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let out = dir.join("t.dat");
/// let mut s = FileSink::create(&out, 4096).unwrap();
/// s.finish(&SessionSummary { page_size: 4096, ..Default::default() }).unwrap();
/// assert!(out.exists());
/// assert!(!typhon_recorder::sink::parts_dir(&out).exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct FileSink {
    out: PathBuf,
    dir: PathBuf,
    page_size: usize,
    files: Vec<Option<SlotFile>>,
    /// Held (flock'ed) for the sink's whole life: the directory belongs to a live recording.
    lock: Option<DirLock>,
    losses: File,
    pages_lost: u64,
    sink_errors: u64,
    first_error: Option<String>,
    /// Accepted pages a failed finish could not store, for [`Sink::take_unstored`].
    unstored: Vec<Unstored>,
    /// `counters`: what no page carries, for `recover` after a kill.
    counters: CountersFile,
    compression: Compression,
    /// A compressed recording's pages gathered per slot (then `files` is unused), the
    /// compressor that writes them as chunks to the part files, and pages per chunk.
    gathers: Vec<Gather>,
    compressor: Option<Compressor>,
    chunk_pages: u64,
    /// The first pending file write that failed at a hand-over, for the next `flush` to return.
    spool_error: Option<io::Error>,
}

/// Bytes buffered per slot file before they go to the OS.
const SLOT_BUFFER: usize = 64 * 1024;

/// One slot's page file. Invariant: the bytes on disk and those in the buffer are, together,
/// the `accepted` bytes: whole pages, in order. A write that fails part-way is cut back off
/// the file, so a failing disk costs the pages it refused (counted by the flusher as
/// `sink_lost`) and never shifts the slot's later pages off the page grid.
struct SlotFile {
    path: PathBuf,
    w: BufWriter<File>,
    accepted: u64,
    /// The length the file must be cut back to, while cutting it failed: until it is done,
    /// the slot's pages are refused (and so counted lost), since they would land off the grid.
    cut_to: Option<u64>,
    /// (end offset, records) of the accepted pages not yet known to be wholly on disk, oldest
    /// first: those still (partly) in the buffer. If the last flush fails, they are what is
    /// lost, and the flusher learns their records through [`Sink::take_unstored`]. At most a
    /// buffer's worth of pages plus one: allocated once.
    unsynced: VecDeque<(u64, u64)>,
}

impl SlotFile {
    fn new(path: PathBuf, file: File, page_size: usize) -> Self {
        Self {
            path,
            w: BufWriter::with_capacity(SLOT_BUFFER, file),
            accepted: 0,
            cut_to: None,
            unsynced: VecDeque::with_capacity(SLOT_BUFFER / page_size.max(1) + 2),
        }
    }

    /// Bytes of the accepted pages that are on disk (the rest is buffered).
    fn on_disk(&self) -> u64 {
        self.accepted - self.w.buffer().len() as u64
    }

    /// Forgets the pages that are now wholly on disk.
    fn synced(&mut self) {
        let on_disk = self.on_disk();
        while self.unsynced.front().is_some_and(|p| p.0 <= on_disk) {
            self.unsynced.pop_front();
        }
    }

    fn write_page(&mut self, page: &[u8]) -> io::Result<()> {
        self.try_write_page(page)
            .map_err(|e| at(&self.path, "writing", e))
    }

    fn try_write_page(&mut self, page: &[u8]) -> io::Result<()> {
        self.cut_back()?;
        match self.w.write_all(page) {
            Ok(()) => {
                self.accepted += page.len() as u64;
                // The flusher made the page: it loads. Counted here, off the producers' path,
                // so that a page lost later can be counted by its records.
                let records = PageRecords::new(page).map_or(0, |r| r.count() as u64);
                self.unsynced.push_back((self.accepted, records));
                self.synced();
                Ok(())
            }
            Err(e) => {
                // `BufWriter` either failed to flush its buffer (it keeps the unwritten part
                // and took none of `page`) or wrote a page of at least its capacity straight
                // to the file (its buffer empty), possibly in part: what belongs on disk is
                // what was accepted less what is still buffered.
                let keep = self.on_disk();
                if self.w.get_ref().metadata().map_or(true, |m| m.len() > keep) {
                    self.cut_to = Some(keep);
                    self.cut_back().map_err(|t| {
                        io::Error::new(
                            t.kind(),
                            format!("{e}; then cutting the partial page off failed: {t}"),
                        )
                    })?;
                }
                self.synced();
                Err(e)
            }
        }
    }

    /// Cuts a partial page off the file if an earlier attempt failed.
    fn cut_back(&mut self) -> io::Result<()> {
        if let Some(keep) = self.cut_to {
            self.w.get_ref().set_len(keep)?;
            self.cut_to = None;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.cut_back().and_then(|()| self.w.flush());
        self.synced();
        r.map_err(|e| at(&self.path, "writing", e))
    }

    /// The accepted pages that are not wholly on disk: (pages, records).
    fn unwritten(&self) -> (u64, u64) {
        let records = self.unsynced.iter().map(|p| p.1).sum();
        (self.unsynced.len() as u64, records)
    }
}

impl FileSink {
    /// Creates `<out>.parts/` and its lock (held until the sink is finished or dropped), after
    /// checking `out` with [`output_path`]: an output that is not absent or a regular file, or
    /// whose directory does not exist, is refused before anything is created. A parts
    /// directory that exists is refused too: a live recording is writing it, or it holds an
    /// unfinished one (the error says which; only the latter can be recovered).
    ///
    /// ```
    /// use typhon_recorder::sink::FileSink;
    /// let e = FileSink::create("/nonexistent-dir/x.dat", 4096).err().unwrap();
    /// assert!(e.to_string().contains("/nonexistent-dir"));
    /// let e = FileSink::create(std::env::temp_dir(), 4096).err().unwrap();
    /// assert!(e.to_string().contains("is a directory"));
    /// ```
    pub fn create(out: impl AsRef<Path>, page_size: usize) -> io::Result<Self> {
        Self::create_with(out, page_size, Compression::None, 0)
    }

    /// [`Self::create`] for a recording written as `compression` says: compressed, each
    /// slot's part file holds chunks of `chunk_pages` pages (0: [`DEFAULT_CHUNK_PAGES`]),
    /// compressed by a compressor thread as they fill (the pages of a chunk not yet full wait
    /// in the slot's pending file), and finishing assembles a trace.dat version 7.
    ///
    /// ```
    /// use typhon_recorder::sink::{FileSink, Sink, SessionSummary};
    /// use typhon_recorder::tracedat::Compression;
    /// let dir = std::env::temp_dir().join(format!("fs-z-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let out = dir.join("t.dat");
    /// let mut s = FileSink::create_with(&out, 4096, Compression::Zstd { level: 1 }, 0).unwrap();
    /// s.finish(&SessionSummary { page_size: 4096, ..Default::default() }).unwrap();
    /// assert_eq!(&std::fs::read(&out).unwrap()[..12], b"\x17\x08\x44tracing7\0");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn create_with(
        out: impl AsRef<Path>,
        page_size: usize,
        compression: Compression,
        chunk_pages: usize,
    ) -> io::Result<Self> {
        compression
            .check()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let z = match compression {
            Compression::Zstd { level } => Some(ChunkCompressor::new(level)?),
            Compression::None => None,
        };
        let chunk_pages = if chunk_pages == 0 {
            DEFAULT_CHUNK_PAGES
        } else {
            chunk_pages
        };
        let out = output_path(out.as_ref())?;
        let dir = parts_dir(&out);
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(refuse_existing(&dir, &out))
            }
            Err(e) => return Err(at(&dir, "creating", e)),
        }
        let mut made = Vec::new();
        let r = (|| {
            let lock = create_lock(&dir, &mut made)?;
            let session = dir.join(SESSION);
            let mut f = create_new(&session)?;
            made.push(SESSION);
            f.write_all(
                serde_json::json!({
                    "page_size": page_size,
                    "compression": compression.to_string(),
                    "chunk_pages": chunk_pages,
                })
                .to_string()
                .as_bytes(),
            )
            .map_err(|e| at(&session, "writing", e))?;
            let lpath = dir.join(LOSSES);
            let mut losses = create_new(&lpath)?;
            made.push(LOSSES);
            losses
                .write_all(&losses_bytes(0, 0, None))
                .map_err(|e| at(&lpath, "writing", e))?;
            let cpath = dir.join(COUNTERS);
            let cfile = create_new(&cpath)?;
            made.push(COUNTERS);
            let counters = CountersFile::init(cfile, &cpath)?;
            Ok::<_, io::Error>((lock, losses, counters))
        })();
        let (lock, losses, counters) = match r {
            Ok(v) => v,
            Err(e) => {
                // Only the files this call made (a `recover` racing with it may own the lock).
                for f in made {
                    let _ = fs::remove_file(dir.join(f));
                }
                let _ = fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let compressor = z.map(|z| Compressor::new(&dir, z));
        Ok(Self {
            out,
            dir,
            page_size,
            files: (0..256).map(|_| None).collect(),
            lock: Some(lock),
            losses,
            pages_lost: 0,
            sink_errors: 0,
            first_error: None,
            unstored: Vec::new(),
            counters,
            compression,
            gathers: (0..256).map(|_| Gather::default()).collect(),
            compressor,
            chunk_pages: chunk_pages as u64,
            spool_error: None,
        })
    }

    /// Counts a failed page or flush, and notes it in `losses.json` (overwritten in place, so
    /// it works on a full disk) for `recover` to count after a kill.
    fn note_error(&mut self, pages: u64, e: &io::Error) {
        self.pages_lost += pages;
        self.sink_errors += 1;
        self.first_error.get_or_insert_with(|| e.to_string());
        let b = losses_bytes(
            self.pages_lost,
            self.sink_errors,
            self.first_error.as_deref(),
        );
        let _ = self.losses.write_all_at(&b, 0);
    }

    fn open_slot(&mut self, slot: u8) -> io::Result<&mut SlotFile> {
        let entry = &mut self.files[slot as usize];
        Ok(match entry {
            Some(f) => f,
            None => {
                let path = slot_file(&self.dir, slot);
                let file = create_new_with(&path, true)?;
                entry.insert(SlotFile::new(path, file, self.page_size))
            }
        })
    }

    /// Hands slot `slot`'s gathered pages to the compressor (the rest of them to its pending
    /// file first: a failure doing so is returned by the next `flush`).
    fn send_chunk(&mut self, slot: u8) {
        let bytes = self.page_size * self.chunk_pages as usize;
        if let Some(c) = self.compressor.as_mut() {
            if let Err(e) = c.send(&self.dir, slot, &mut self.gathers[slot as usize], bytes) {
                self.spool_error.get_or_insert(e);
            }
        }
    }

    /// Counts the chunks the compressor could not write; the first error.
    fn chunk_failures(&mut self) -> io::Result<()> {
        let failed = self
            .compressor
            .as_mut()
            .map(|c| c.failures())
            .unwrap_or_default();
        let mut first = Ok(());
        for (slot, e, lost) in failed {
            self.chunk_lost(slot, &e, 0, lost);
            if first.is_ok() {
                first = Err(e);
            }
        }
        first
    }

    /// A failed chunk: the error counted, and the pages it lost besides the one the flusher
    /// counts itself handed back through [`Sink::take_unstored`].
    fn chunk_lost(
        &mut self,
        slot: u8,
        e: &io::Error,
        this_page: u64,
        (pages, records): (u64, u64),
    ) {
        self.note_error(this_page + pages, e);
        if pages > 0 {
            self.unstored.push(Unstored {
                slot,
                pages,
                records,
            });
        }
    }

    /// Hands every slot's last, partial chunk to the compressor and waits for all to be written
    /// (or counted lost): the compressor removes each pending file once its chunk is written
    /// (a kill in between leaves both; `recover` then sees that the part file has the chunk).
    fn last_chunks(&mut self) -> Vec<Option<chunks::ChunkFile>> {
        if self.compressor.is_none() {
            return Vec::new();
        }
        for slot in 0..=255u8 {
            if !self.gathers[slot as usize].is_empty() {
                self.send_chunk(slot);
            }
        }
        // A kill here leaves the last chunks queued: their pages are in their pending files.
        failpoint();
        let files = self
            .compressor
            .as_mut()
            .map(|c| c.finish())
            .unwrap_or_default();
        failpoint();
        files
    }

    fn assemble_all(&mut self, summary: &SessionSummary) -> io::Result<()> {
        let page = self.page_size as u64;
        let cfiles = self.last_chunks();
        if let Err(e) = self.flush() {
            if self.compressor.is_some() {
                // The chunks the disk refused are counted and handed back (`chunk_failures`);
                // what reached the disk stays for `recover`.
                return Err(io::Error::new(
                    e.kind(),
                    format!("writing the last chunks: {e} (their pages are lost, and counted)"),
                ));
            }
            // What the disk would not take is lost: noted for `recover`, and handed to the
            // flusher (`take_unstored`), which counts its records as `sink_lost`.
            let mut unwritten = 0;
            for (slot, f) in self.files.iter().enumerate() {
                let Some(f) = f else { continue };
                let (pages, records) = f.unwritten();
                if pages > 0 {
                    unwritten += pages;
                    self.unstored.push(Unstored {
                        slot: slot as u8,
                        pages,
                        records,
                    });
                }
            }
            self.note_error(unwritten, &e);
            return Err(io::Error::new(
                e.kind(),
                format!("writing the last pages: {e} ({unwritten} pages could not be written and are lost)"),
            ));
        }
        let mut sources = Vec::new();
        for (slot, f) in self.files.iter_mut().enumerate() {
            let Some(f) = f.take() else { continue };
            let file = f.w.into_inner().map_err(|e| e.into_error())?;
            sources.push(Source {
                slot: slot as u8,
                path: slot_file(&self.dir, slot as u8),
                file,
                offset: 0,
                len: f.accepted / page * page,
                remove: true,
                chunks: None,
                ranges: Vec::new(),
            });
        }
        // (The compressor is joined: every chunk it could not write was taken by `flush` above.)
        for (slot, f) in cfiles.into_iter().enumerate() {
            let Some(f) = f else { continue };
            sources.push(Source {
                slot: slot as u8,
                path: f.path,
                file: f.file,
                offset: 0,
                len: f.len,
                remove: true,
                chunks: Some(f.chunks),
                ranges: Vec::new(),
            });
        }
        let mut meta = FileMeta::new(self.page_size as u32);
        meta.wall_anchor_ns = summary.wall_anchor_ns as i64;
        meta.mono_anchor_ns = summary.monotonic_anchor_ns as i64;
        meta.slots = summary
            .slots
            .iter()
            .map(|s| SlotMeta {
                slot: s.slot,
                name: s.name.clone(),
                thread_id: (s.threads > 0).then_some(s.last_thread_id as i64),
                attempted: s.attempted,
                written: s.written,
                missed: s.missed,
            })
            .collect();
        // The flusher's counts, or the sink's own when it is driven directly.
        let pages_lost = summary.pages_lost.max(self.pages_lost);
        let sink_errors = summary.sink_errors.max(self.sink_errors);
        let first = summary
            .first_sink_error
            .clone()
            .or(self.first_error.clone());
        meta.session = serde_json::json!({
            "end_ns": summary.end_ns,
            "no_slot": summary.no_slot,
            "filtered_no_slot": summary.filtered_no_slot,
            "pages_lost": pages_lost,
            "sink_errors": sink_errors,
            "first_sink_error": first,
            "slots": summary.slots.iter().map(|s| serde_json::json!({
                "slot": s.slot, "filtered": s.filtered, "refused": s.refused,
                "sink_lost": s.sink_lost, "clamped": s.clamped, "unclosed": s.unclosed, "thread_ids": s.thread_ids, "threads": s.threads,
            })).collect::<Vec<_>>(),
        });
        let a = assemble(&self.dir, &self.out, &meta, self.compression, sources, true)?;
        // Unlocked and removed last: until here the directory is this recording's.
        let left = cleanup(&self.dir, &a.journal, &BTreeSet::new(), &mut self.lock);
        if !left.is_empty() {
            eprintln!(
                "typhon-recorder: {} is complete; left in {}: {}",
                self.out.display(),
                self.dir.display(),
                names(&left)
            );
        }
        Ok(())
    }
}

fn losses_bytes(pages_lost: u64, sink_errors: u64, first: Option<&str>) -> Vec<u8> {
    let first: Option<String> = first.map(|s| s.chars().take(1000).collect());
    let j = serde_json::json!({
        "pages_lost": pages_lost, "sink_errors": sink_errors, "first_sink_error": first,
    })
    .to_string();
    let mut b = vec![b' '; LOSSES_LEN];
    b[..j.len()].copy_from_slice(j.as_bytes());
    b[LOSSES_LEN - 1] = b'\n';
    b
}

impl Sink for FileSink {
    fn begin(&mut self, start: &SessionSummary) -> io::Result<()> {
        let meta = serde_json::json!({
            "page_size": self.page_size,
            "wall_anchor_ns": start.wall_anchor_ns,
            "monotonic_anchor_ns": start.monotonic_anchor_ns,
            "version": start.version,
            "compression": self.compression.to_string(),
            "chunk_pages": self.chunk_pages,
        });
        let path = self.dir.join(SESSION);
        let f = open_regular(&path, true)?;
        f.set_len(0).map_err(|e| at(&path, "writing", e))?;
        f.write_all_at(meta.to_string().as_bytes(), 0)
            .map_err(|e| at(&path, "writing", e))
    }

    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()> {
        if self.compressor.is_some() {
            if self.gathers[slot as usize].push(page, self.chunk_pages) {
                self.send_chunk(slot);
            }
            // A chunk that failed is counted as it is learnt (the page just taken is not in it).
            let _ = self.chunk_failures();
            return Ok(());
        }
        let r = self.open_slot(slot).and_then(|f| f.write_page(page));
        if let Err(e) = &r {
            self.note_error(1, e);
        }
        r
    }

    fn flush(&mut self) -> io::Result<()> {
        // Every file is flushed even when one fails, so each one's pages reach the OS every
        // cycle and a kill loses none of them; the first error is returned. A failed flush
        // keeps its unwritten bytes buffered, to go out with the next one.
        let mut first = Ok(());
        if self.compressor.is_some() {
            first = self.chunk_failures();
            if let Some(e) = self.spool_error.take() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
            // A chunk goes to the compressor only when full (`chunks`): what is gathered goes
            // to the chunk's pending file. Nothing is lost when that fails (the pages are still
            // gathered, and written again next cycle); the error is returned, and a kill before
            // the next cycle would lose them.
            for slot in 0..=255u8 {
                let g = &mut self.gathers[slot as usize];
                if !g.is_empty() {
                    if let Err(e) = g.keep(&self.dir, slot) {
                        if first.is_ok() {
                            first = Err(e);
                        }
                    }
                }
            }
            // The chunks each slot handed over, for `recover` to find any that go missing.
            let sent: Vec<(u8, u64)> = (0..=255u8)
                .map(|slot| (slot, self.gathers[slot as usize].sent()))
                .filter(|c| c.1 > 0)
                .collect();
            if let Err(e) = self.counters.chunks(sent) {
                if first.is_ok() {
                    first = Err(at(&self.dir.join(COUNTERS), "writing", e));
                }
            }
        }
        for f in self.files.iter_mut().flatten() {
            if let Err(e) = f.flush() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Overwrites `OUT.parts/counters` in place (see the `counters` module).
    fn counters(&mut self, now: &SessionSummary) -> io::Result<()> {
        let path = self.dir.join(COUNTERS);
        self.counters
            .update(now)
            .map_err(|e| at(&path, "writing", e))
    }

    fn take_unstored(&mut self) -> Vec<Unstored> {
        std::mem::take(&mut self.unstored)
    }

    /// Assembles `out`. On an error (a full disk) every page that reached the disk is kept in
    /// `<out>.parts/`, which is unlocked when the sink is dropped: the error names both paths
    /// and says to run `typhon-rec recover`.
    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()> {
        self.assemble_all(summary).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "finishing {}: {e}; every page that reached the disk is kept in {}: free some space, then run `typhon-rec recover {}`",
                    self.out.display(),
                    self.dir.display(),
                    self.out.display()
                ),
            )
        })
    }
}

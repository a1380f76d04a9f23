//! What turns a slot's raw pages into a chunk: a `typhon-compress` thread of its own, as the
//! file sink's, so that the flusher's drain never waits for zstd.
//!
//! ```text
//!  flusher (owns the store)                       typhon-compress
//!  push: a slot's 32nd raw page ── Job ─────────▶ zstd the pages, back to back
//!        (Arc copies; the pages stay held          │
//!         raw and counted raw meanwhile)           │
//!  next push / cut: install ◀──── Done ───────────┘
//!        the chunk replaces exactly those pages, if all of them are still held
//! ```
//!
//! A chunk in flight changes nothing a cut sees: its pages are still in the store, raw, and a
//! snapshot copies raw pages as well as chunks. A chunk whose first page was evicted meanwhile
//! is dropped: its first pages were evicted (and counted so); the rest stay raw, not given
//! again, until they go too (they are the slot's oldest).
//!
//! At most [`IN_FLIGHT`] jobs are out at once, holding at most 1/32 of the budget in raw
//! pages (a small window compresses inline). Past that, while the thread is behind, the
//! flusher makes the chunk itself: the thread takes a steady rate's compression off the
//! flusher, and a burst beyond what it keeps up with costs the flusher the zstd calls it made
//! before there was a thread, instead of a window of raw pages evicted before their chunks
//! are back. Where the thread cannot be started, or `TYPHON_COMPRESS_INLINE=1` asks for it
//! (to measure the difference, as in the file sink), every chunk is made on the flusher.

use super::held::{Data, Held};
use crate::tracedat::ChunkCompressor;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// Most chunk jobs given to the thread and not yet installed.
const IN_FLIGHT: usize = 4;

/// A slot's consecutive raw pages, `first` the stream number of the first (in its slot).
struct Job {
    slot: u8,
    first: u64,
    pages: Vec<Arc<Held>>,
}

/// A job's chunk (`None`: zstd failed; the pages stay raw).
pub(crate) struct Done {
    /// The bytes of its pages.
    raw: u64,
    pub(crate) slot: u8,
    pub(crate) first: u64,
    pub(crate) pages: usize,
    pub(crate) chunk: Option<Held>,
}

/// The zstd context and buffers that make one chunk at a time.
struct Maker {
    z: ChunkCompressor,
    run: Vec<u8>,
    out: Vec<u8>,
}

impl Maker {
    fn make(&mut self, job: Job) -> Done {
        self.run.clear();
        let (mut first_ts, mut last_ts, mut records, mut missed) = (u64::MAX, 0, 0, 0);
        for h in &job.pages {
            self.run.extend_from_slice(h.bytes());
            first_ts = first_ts.min(h.first_ts);
            last_ts = last_ts.max(h.last_ts);
            records += h.records;
            missed += h.missed;
        }
        self.out.clear();
        let n = job.pages.len();
        let raw = self.run.len() as u64;
        // The pages' bytes go back now, not when the chunk is installed.
        drop(job.pages);
        let chunk = self.z.chunk(&self.run, &mut self.out).ok().map(|()| Held {
            data: Data::Chunk {
                bytes: self.out.as_slice().into(),
                pages: n as u32,
            },
            first_ts,
            last_ts,
            records,
            missed,
            seq: job.first,
        });
        Done {
            raw,
            slot: job.slot,
            first: job.first,
            pages: n,
            chunk,
        }
    }
}

/// The thread's end of a packer.
struct Worker {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Makes chunks of `chunk_pages` pages, on its thread while that keeps up, else inline.
pub(crate) struct Packer {
    pub(crate) chunk_pages: usize,
    /// The flusher's own maker: a job past [`IN_FLIGHT`], or every job without a thread.
    local: Box<Maker>,
    worker: Option<Worker>,
    /// Chunks made inline, not yet taken.
    made: Vec<Done>,
    /// Jobs at the thread, not yet taken back by [`Packer::take`], and their pages' bytes.
    out: usize,
    out_bytes: u64,
    /// Tests: no chunk is handed back while this is true (one "still being made").
    #[cfg(test)]
    pub(crate) hold_back: bool,
}

fn maker(level: i32) -> std::io::Result<Box<Maker>> {
    Ok(Box::new(Maker {
        z: ChunkCompressor::new(level)?,
        run: Vec::new(),
        out: Vec::new(),
    }))
}

impl Packer {
    /// A packer of zstd `level`, with a thread unless `TYPHON_COMPRESS_INLINE=1`.
    pub(crate) fn new(level: i32, chunk_pages: usize) -> std::io::Result<Self> {
        let inline = std::env::var_os("TYPHON_COMPRESS_INLINE").is_some_and(|v| v == "1");
        Self::with(level, chunk_pages, !inline)
    }

    /// A packer that makes its chunks on the caller's thread, as they are given.
    #[cfg(test)]
    pub(crate) fn inline(level: i32, chunk_pages: usize) -> std::io::Result<Self> {
        Self::with(level, chunk_pages, false)
    }

    /// A packer with a thread, whatever the environment says.
    #[cfg(test)]
    pub(crate) fn with_thread(level: i32, chunk_pages: usize) -> std::io::Result<Self> {
        Self::with(level, chunk_pages, true)
    }

    fn with(level: i32, chunk_pages: usize, threaded: bool) -> std::io::Result<Self> {
        let local = maker(level)?;
        let worker = if threaded {
            Self::spawn(maker(level)?)
        } else {
            None
        };
        Ok(Self {
            chunk_pages: chunk_pages.max(1),
            local,
            worker,
            made: Vec::new(),
            out: 0,
            out_bytes: 0,
            #[cfg(test)]
            hold_back: false,
        })
    }

    /// The thread, given its maker; `None` where it cannot be started.
    fn spawn(mut m: Box<Maker>) -> Option<Worker> {
        let (jtx, jrx) = channel::<Job>();
        let (dtx, drx) = channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("typhon-compress".into())
            .spawn(move || {
                // Behind the flusher on a busy core: while this thread waits, its jobs fill
                // and the flusher makes the next chunks itself, but it drains the rings first.
                super::yield_to_the_recording();
                for job in jrx {
                    if dtx.send(m.make(job)).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Worker {
            jobs: Some(jtx),
            done: drx,
            thread: Some(thread),
        })
    }

    /// Gives `pages` (consecutive in `slot`, the first of stream number `first`) to be made a
    /// chunk: to the thread while fewer than [`IN_FLIGHT`] are there holding at most
    /// `out_budget` bytes of pages with these, else made now. A thread that cannot keep up so
    /// makes the flusher share the work, rather than letting the raw pages it has not reached
    /// fill the budget and be evicted before their chunk is back.
    pub(crate) fn give(&mut self, slot: u8, first: u64, pages: Vec<Arc<Held>>, out_budget: u64) {
        let bytes: u64 = pages.iter().map(|h| h.bytes().len() as u64).sum();
        let room = self.out < IN_FLIGHT && self.out_bytes + bytes <= out_budget;
        let mut job = Job { slot, first, pages };
        if let Some(w) = self.worker.as_mut().filter(|_| room) {
            if let Some(tx) = w.jobs.as_ref() {
                match tx.send(job) {
                    Ok(()) => {
                        self.out += 1;
                        self.out_bytes += bytes;
                        return;
                    }
                    Err(back) => job = back.0,
                }
            }
            // The thread is gone (it panicked): the chunks it made are kept, the rest are made
            // inline from now on.
            self.made.extend(w.done.try_iter());
            self.worker = None;
            self.out = 0;
            self.out_bytes = 0;
        }
        self.made.push(self.local.make(job));
    }

    /// The chunks made so far, not waiting for the others; with `wait`, every chunk given.
    pub(crate) fn take(&mut self, wait: bool) -> Vec<Done> {
        #[cfg(test)]
        if self.hold_back {
            return Vec::new();
        }
        let mut got = std::mem::take(&mut self.made);
        if let Some(w) = &self.worker {
            let before = got.len();
            got.extend(w.done.try_iter());
            while wait && got.len() - before < self.out {
                match w.done.recv() {
                    Ok(d) => got.push(d),
                    Err(_) => break,
                }
            }
            let back = &mut got[before..];
            self.out = self.out.saturating_sub(back.len());
            let bytes: u64 = back.iter().map(|d| d.raw).sum();
            self.out_bytes = self.out_bytes.saturating_sub(bytes);
            // Held chunks are copied into this thread's heap: made in the compressor's (a
            // malloc arena of its own), they would leave two arenas' worth of free gaps
            // behind as the window evicts them (measured: 13 % more resident than the budget).
            for d in back {
                if let Some(Held {
                    data: Data::Chunk { bytes, .. },
                    ..
                }) = &mut d.chunk
                {
                    *bytes = Box::from(&bytes[..]);
                }
            }
        }
        got
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the job channel ends the thread once it has made the jobs queued (at most
        // `IN_FLIGHT` chunks: a few ms at the window's level on the way out).
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

//! How the streaming readers hold decompressed chunks: memory for all of a file's CPUs
//! together is bounded, whatever their count (SPEC §10).
//!
//! A CPU reading a chunk holds it whole while the chunks held whole by all the file's streams
//! stay within [`WHOLE_BUDGET`] (the usual case: 256 CPUs of 128 KiB chunks take 32 MiB). A
//! chunk that would go over it is decompressed into the one scratch buffer of the file and
//! kept as pieces of [`PIECE`] bytes (or a page, if larger), each compressed again on its own,
//! so a page is read by decompressing its piece only: a merge that takes one page of each CPU
//! in turn never decompresses a chunk twice. The pieces of all CPUs are bounded too (by
//! [`PIECES_BUDGET`] and twice the file's size): data whose pieces would go over it (no real
//! recording's pieces compress much worse than its chunks) is refused as damaged pages.
//!
//! ```text
//!  chunk frame ──► fits the budget? ── yes ──► whole chunk (counted) ──► pages
//!                         └──── no ──► scratch ──► pieces, each compressed ──► one piece ──► page
//! ```

use super::error::TraceDatError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use typhon_recorder::tracedat::{decompress_chunk, ChunkCompressor};

/// The decompressed chunks all of a file's streams may hold whole at once.
pub(super) const WHOLE_BUDGET: u64 = 32 << 20;

/// The compressed pieces all of a file's streams may hold at once (or twice the file's size,
/// if more).
pub(super) const PIECES_BUDGET: u64 = 256 << 20;

/// Bytes of a piece (at least a page): small enough that reading one page decompresses
/// little more than the page, large enough that a piece's frame costs little beside its data.
pub(super) const PIECE: usize = 4096;

/// What a file's streams share: the bytes held, and one scratch for large chunks.
#[derive(Debug, Default)]
pub(super) struct ChunkPool {
    /// Bytes of whole chunks held.
    whole: AtomicU64,
    /// Bytes of pieces held.
    pieces: AtomicU64,
    scratch: Mutex<Scratch>,
}

#[derive(Default)]
struct Scratch {
    /// A compressed chunk, read from the file.
    frame: Vec<u8>,
    /// A chunk decompressed whole, before it is cut into pieces; then one piece.
    data: Vec<u8>,
    z: Option<ChunkCompressor>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

/// One CPU's current chunk, decompressed.
#[derive(Debug, Default)]
pub(super) enum Held {
    /// No chunk.
    #[default]
    None,
    /// The whole chunk (counted in the pool's whole bytes).
    Whole(Vec<u8>),
    /// The chunk as pieces (counted in the pool's piece bytes).
    Pieces(Pieces),
}

/// A chunk cut into pieces of `piece` bytes, each compressed as a chunk (`u32 compressed,
/// u32 uncompressed, frame`) into `frames`, at the offsets `at`.
#[derive(Debug)]
pub(super) struct Pieces {
    frames: Vec<u8>,
    at: Vec<u32>,
    piece: usize,
    len: usize,
}

/// Why a chunk could not be held.
pub(super) enum Refused {
    /// It does not decompress (or the file cannot be read): the message.
    Bad(String),
    /// Its pieces would go over the budget.
    OverBudget(String),
    /// The file could not be read.
    Read(TraceDatError),
}

impl Held {
    /// Bytes of the chunk (decompressed).
    pub(super) fn len(&self) -> usize {
        match self {
            Held::None => 0,
            Held::Whole(v) => v.len(),
            Held::Pieces(p) => p.len,
        }
    }
}

impl ChunkPool {
    /// Reads a chunk's frame of `csize` bytes with `read` and decompresses it (`usize_` bytes)
    /// into what `held` holds, whole if the budget allows, else as pieces of at least `page`
    /// bytes; `file_len` scales the pieces' budget. What `held` held before is let go first;
    /// `print` is set to the frame's fingerprint.
    // The counters are only sizes, ordering nothing else (the streams of a file are read on
    // one thread at a time, behind `&mut`): Relaxed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn load(
        &self,
        held: &mut Held,
        csize: usize,
        usize_: u32,
        page: usize,
        file_len: u64,
        read: impl FnOnce(&mut [u8]) -> super::error::Result<()>,
        print: &mut u64,
    ) -> Result<(), Refused> {
        self.release(held);
        let mut s = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let s = &mut *s;
        s.frame.resize(csize, 0);
        read(&mut s.frame).map_err(Refused::Read)?;
        *print = fingerprint(&s.frame, usize_);
        let want = u64::from(usize_);
        let whole = self.whole.fetch_add(want, Ordering::Relaxed);
        if whole + want <= WHOLE_BUDGET {
            let mut v = Vec::new();
            return match decompress_chunk(&s.frame, usize_, &mut v) {
                Ok(()) => {
                    *held = Held::Whole(v);
                    Ok(())
                }
                Err(e) => {
                    self.whole.fetch_sub(want, Ordering::Relaxed);
                    Err(Refused::Bad(e.to_string()))
                }
            };
        }
        self.whole.fetch_sub(want, Ordering::Relaxed);
        decompress_chunk(&s.frame, usize_, &mut s.data).map_err(|e| Refused::Bad(e.to_string()))?;
        if s.z.is_none() {
            s.z = Some(ChunkCompressor::new(1).map_err(|e| Refused::Bad(e.to_string()))?);
        }
        let z = s.z.as_mut().expect("set above");
        let piece = PIECE.max(page);
        let budget = PIECES_BUDGET.max(file_len.saturating_mul(2));
        let mut p = Pieces {
            frames: Vec::new(),
            at: Vec::with_capacity(s.data.len().div_ceil(piece)),
            piece,
            len: s.data.len(),
        };
        for d in s.data.chunks(piece) {
            p.at.push(p.frames.len() as u32);
            z.chunk(d, &mut p.frames)
                .map_err(|e| Refused::Bad(e.to_string()))?;
        }
        p.frames.shrink_to_fit();
        let cost = (p.frames.len() + 4 * p.at.len()) as u64;
        let had = self.pieces.fetch_add(cost, Ordering::Relaxed);
        if had + cost > budget {
            self.pieces.fetch_sub(cost, Ordering::Relaxed);
            return Err(Refused::OverBudget(format!(
                "the chunks read at once would take over {budget} bytes of memory \
                 ({had} held, this one {cost})"
            )));
        }
        *held = Held::Pieces(p);
        Ok(())
    }

    /// Lets go of what `held` holds.
    pub(super) fn release(&self, held: &mut Held) {
        match std::mem::take(held) {
            Held::None => {}
            Held::Whole(v) => {
                self.whole.fetch_sub(v.len() as u64, Ordering::Relaxed);
            }
            Held::Pieces(p) => {
                let cost = (p.frames.len() + 4 * p.at.len()) as u64;
                self.pieces.fetch_sub(cost, Ordering::Relaxed);
            }
        }
    }

    /// Copies `out.len()` bytes at `pos` of the chunk `held` holds into `out` (they are
    /// inside one piece, as pages are).
    pub(super) fn copy(&self, held: &Held, pos: usize, out: &mut [u8]) -> Result<(), String> {
        match held {
            Held::None => Err("no chunk".into()),
            Held::Whole(v) => {
                let s = v
                    .get(pos..pos + out.len())
                    .ok_or_else(|| format!("page at {pos} past the chunk"))?;
                out.copy_from_slice(s);
                Ok(())
            }
            Held::Pieces(p) => {
                let i = pos / p.piece;
                let at = *p.at.get(i).ok_or("page past the chunk's pieces")? as usize;
                let h = p.frames.get(at..at + 8).ok_or("piece header")?;
                let csize = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
                let usize_ = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
                let frame = p.frames.get(at + 8..at + 8 + csize).ok_or("piece frame")?;
                let mut s = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
                decompress_chunk(frame, usize_, &mut s.data).map_err(|e| e.to_string())?;
                let off = pos % p.piece;
                let src = s
                    .data
                    .get(off..off + out.len())
                    .ok_or("page past its piece")?;
                out.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

/// A chunk's fingerprint (FNV-1a of its frame and size): two chunks with the same are taken
/// for the same chunk.
fn fingerprint(frame: &[u8], usize_: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ u64::from(usize_);
    for &b in frame {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

//! Compression of a recording (SPEC §11): the choice ([`Compression`]) and the chunk format
//! that trace.dat version 7 stores page data in.
//!
//! A chunk is a run of whole pages compressed as one zstd frame, stored as
//! `u32 compressed size, u32 uncompressed size, frame` (little-endian), exactly as trace-cmd
//! 3.1.6 writes and reads them (`tracecmd_compress_copy_from`): each chunk is independent, and
//! its uncompressed size is a multiple of the page size (trace-cmd finds a page in a chunk by
//! dividing by it).

use std::io;

/// How a recording's file is written.
///
/// ```
/// use typhon_recorder::tracedat::Compression;
/// assert_eq!(Compression::parse("zstd").unwrap(), Compression::Zstd { level: 1 });
/// assert_eq!(Compression::parse("zstd:3").unwrap(), Compression::Zstd { level: 3 });
/// assert_eq!(Compression::parse("none").unwrap(), Compression::None);
/// assert!(Compression::parse("zlib").is_err());
/// assert!(Compression::parse("zstd:99").is_err());
/// assert_eq!(Compression::Zstd { level: 3 }.to_string(), "zstd:3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compression {
    /// trace.dat version 6, pages as they are.
    #[default]
    None,
    /// trace.dat version 7 with zstd chunks at this level (1..=19; 1 is the fastest).
    Zstd {
        /// zstd compression level.
        level: i32,
    },
}

/// The zstd level `Compression::parse("zstd")` picks: the fastest, which the measurements in
/// BENCHMARKS.md show already beats trace-cmd's own level 3 on 40 KiB chunks by using larger
/// chunks, at several times its speed.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// The highest zstd level accepted (zstd's "ultra" levels need a large window per chunk).
pub const MAX_ZSTD_LEVEL: i32 = 19;

/// Pages per chunk when the recorder compresses: trace-cmd uses 10 (40 KiB with 4 KiB pages);
/// larger chunks compress better and trace-cmd 3.1.6 and KernelShark still read them
/// (BENCHMARKS.md, "Compressed recordings").
pub const DEFAULT_CHUNK_PAGES: usize = 32;

/// The largest uncompressed chunk a reader accepts (a fixed cap, SPEC §10): 16 MiB, 400 times
/// what trace-cmd writes.
pub const MAX_CHUNK_BYTES: u32 = 16 << 20;

/// The largest ratio of uncompressed to compressed size a reader accepts (beyond 64 KiB):
/// zstd can expand a few bytes into megabytes, so without it a small hostile file could make
/// a reader hold gigabytes (one chunk per CPU). Recorder pages hold at least one record with
/// its own header and time, so a chunk of them compresses at most ~200:1 (one record per page).
pub const MAX_RATIO: u64 = 1024;

/// Whether a chunk or section of `csize` compressed bytes may decompress to `usize_` bytes:
/// at most [`MAX_CHUNK_BYTES`], and at most [`MAX_RATIO`] times `csize` (or 64 KiB).
///
/// ```
/// use typhon_recorder::tracedat::plausible_size;
/// assert!(plausible_size(4000, 131072));
/// assert!(plausible_size(10, 65536));
/// assert!(!plausible_size(100, 16 << 20));
/// ```
pub fn plausible_size(csize: u64, usize_: u64) -> bool {
    usize_ <= u64::from(MAX_CHUNK_BYTES)
        && usize_ <= (csize.saturating_mul(MAX_RATIO)).max(64 << 10)
}

/// Bytes of a chunk's header.
pub const CHUNK_HEADER: usize = 8;

impl Compression {
    /// `none`, `zstd` (level [`DEFAULT_ZSTD_LEVEL`]) or `zstd:LEVEL` (1..=19).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (s, None),
        };
        match (name, level) {
            ("none", None) => Ok(Compression::None),
            ("zstd", None) => Ok(Compression::Zstd {
                level: DEFAULT_ZSTD_LEVEL,
            }),
            ("zstd", Some(l)) => {
                let level: i32 = l
                    .parse()
                    .map_err(|_| format!("zstd level {l:?} is not a number"))?;
                Compression::Zstd { level }
                    .check()
                    .map(|()| Compression::Zstd { level })
            }
            _ => Err(format!(
                "unknown compression {s:?}: use none, zstd or zstd:LEVEL (1..={MAX_ZSTD_LEVEL}); \
                 trace-cmd 3.1.6 and KernelShark read zstd only"
            )),
        }
    }

    /// An error message for a level out of 1..=19.
    pub fn check(&self) -> Result<(), String> {
        match *self {
            Compression::Zstd { level } if !(1..=MAX_ZSTD_LEVEL).contains(&level) => Err(format!(
                "zstd level {level} is out of range 1..={MAX_ZSTD_LEVEL}"
            )),
            _ => Ok(()),
        }
    }

    /// Whether this writes compressed (version 7) files.
    pub fn is_compressed(&self) -> bool {
        matches!(self, Compression::Zstd { .. })
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
        }
    }
}

/// The version string of the linked zstd ("1.5.7"), for the file header (trace-cmd ignores it).
pub fn zstd_version() -> &'static str {
    backend::version()
}

/// A reusable zstd compressor writing chunks.
pub struct ChunkCompressor {
    z: backend::Compressor,
    /// The last frame, reused (compressed bytes are then appended to the caller's buffer).
    frame: Vec<u8>,
}

impl std::fmt::Debug for ChunkCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChunkCompressor")
    }
}

impl ChunkCompressor {
    /// A compressor at zstd `level`.
    pub fn new(level: i32) -> io::Result<Self> {
        let z = backend::compressor(level)?;
        Ok(Self {
            z,
            frame: Vec::new(),
        })
    }

    /// Appends `data` (whole pages) to `out` as one chunk: header, then the zstd frame.
    ///
    /// ```
    /// use typhon_recorder::tracedat::ChunkCompressor;
    /// let mut c = ChunkCompressor::new(1).unwrap();
    /// let mut out = Vec::new();
    /// c.chunk(&[0u8; 8192], &mut out).unwrap();
    /// assert_eq!(u32::from_le_bytes(out[4..8].try_into().unwrap()), 8192);
    /// let size = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
    /// assert_eq!(out.len(), 8 + size);
    /// ```
    pub fn chunk(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let usize_ = u32::try_from(data.len())
            .ok()
            .filter(|&n| n <= MAX_CHUNK_BYTES)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a chunk of {} bytes is over the cap", data.len()),
                )
            })?;
        self.frame.clear();
        let n = backend::compress(&mut self.z, data, &mut self.frame)?;
        let csize = u32::try_from(n).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidData, "compressed chunk over 4 GiB")
        })?;
        out.extend_from_slice(&csize.to_le_bytes());
        out.extend_from_slice(&usize_.to_le_bytes());
        out.extend_from_slice(&self.frame[..n]);
        Ok(())
    }
}

/// Decompresses one chunk's (or compressed section's) frame into `out` (cleared first), which
/// must come out exactly `size` bytes (at most 64 MiB): no more is ever allocated, whatever
/// the frame says.
///
/// ```
/// use typhon_recorder::tracedat::{decompress_chunk, ChunkCompressor};
/// let mut c = ChunkCompressor::new(1).unwrap();
/// let mut z = Vec::new();
/// c.chunk(&[7u8; 4096], &mut z).unwrap();
/// let mut page = Vec::new();
/// decompress_chunk(&z[8..], 4096, &mut page).unwrap();
/// assert_eq!(page, vec![7u8; 4096]);
/// assert!(decompress_chunk(&z[8..], 100, &mut page).is_err());
/// assert!(decompress_chunk(&z[8..z.len() - 1], 4096, &mut page).is_err());
/// ```
pub fn decompress_chunk(frame: &[u8], size: u32, out: &mut Vec<u8>) -> io::Result<()> {
    // The callers check their own caps (16 MiB a chunk, 64 MiB a metadata section); this one
    // bounds what any caller can make it allocate.
    const CAP: u32 = 64 << 20;
    if size > CAP {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{size} bytes uncompressed, over the {CAP}-byte cap"),
        ));
    }
    out.clear();
    out.try_reserve_exact(size as usize)
        .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
    let n = backend::decompress(frame, out, size).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("chunk does not decompress to its {size} bytes: {e}"),
        )
    })?;
    if n != size as usize || out.len() != size as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("chunk decompresses to {n} bytes, its header says {size}"),
        ));
    }
    Ok(())
}

/// The zstd calls, behind the `zstd` feature: without it every compressed operation is an
/// `Unsupported` error that names the feature, and the core links no compressor.
#[cfg(feature = "zstd")]
mod backend {
    use std::io;

    pub type Compressor = zstd::bulk::Compressor<'static>;

    pub fn version() -> &'static str {
        zstd::zstd_safe::version_string()
    }

    pub fn compressor(level: i32) -> io::Result<Compressor> {
        let mut z = zstd::bulk::Compressor::new(level)?;
        // trace-cmd writes no content size (it knows it from the chunk header); the 1-4 bytes
        // are saved on every chunk.
        z.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))?;
        // A 4-byte checksum of the content ends each frame, so a flipped bit in a chunk is a
        // damaged chunk (libzstd checks it on decompression, trace-cmd's too), never records
        // silently changed.
        z.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
        Ok(z)
    }

    /// Compresses `data` into `frame` (empty), returning the frame's length.
    pub fn compress(z: &mut Compressor, data: &[u8], frame: &mut Vec<u8>) -> io::Result<usize> {
        frame.reserve(zstd::zstd_safe::compress_bound(data.len()));
        z.compress_to_buffer(data, frame)
    }

    /// Decompresses `frame` into `out` (empty, `size` bytes reserved), at most `size` bytes.
    pub fn decompress(frame: &[u8], out: &mut Vec<u8>, size: u32) -> io::Result<usize> {
        thread_local! {
            // One decompression context per thread, reused for every chunk.
            static DCTX: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        DCTX.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_none() {
                *d = Some(zstd::bulk::Decompressor::new()?);
            }
            // At most `size` bytes (the output's length, `out` holds nothing yet): a frame
            // that says more is an error, not a larger allocation.
            let mut slot = Limited(out, size as usize);
            d.as_mut()
                .map_or(Ok(0), |d| d.decompress_to_buffer(frame, &mut slot))
        })
    }

    /// A `Vec` seen by zstd as a buffer of at most `.1` bytes.
    struct Limited<'a>(&'a mut Vec<u8>, usize);

    // SAFETY: the capacity reported is at most the Vec's own spare capacity from its start (the
    // Vec is empty and has reserved at least `.1` bytes), and `filled_until` sets its length to
    // bytes zstd initialised, as `WriteBuf` requires.
    unsafe impl zstd::zstd_safe::WriteBuf for Limited<'_> {
        fn as_slice(&self) -> &[u8] {
            self.0.as_slice()
        }
        fn capacity(&self) -> usize {
            self.1.min(self.0.capacity())
        }
        fn as_mut_ptr(&mut self) -> *mut u8 {
            self.0.as_mut_ptr()
        }
        unsafe fn filled_until(&mut self, n: usize) {
            // SAFETY: the caller (zstd) initialised the first `n` bytes, `n` ≤ the capacity.
            unsafe { self.0.set_len(n) }
        }
    }
}

#[cfg(not(feature = "zstd"))]
mod backend {
    use std::io;

    /// No compressor in this build: none can be made.
    pub enum Compressor {}

    fn none() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "zstd compression needs typhon-recorder's `zstd` feature, which this build lacks",
        )
    }

    pub fn version() -> &'static str {
        "none"
    }

    pub fn compressor(_level: i32) -> io::Result<Compressor> {
        Err(none())
    }

    pub fn compress(z: &mut Compressor, _: &[u8], _: &mut Vec<u8>) -> io::Result<usize> {
        match *z {}
    }

    pub fn decompress(_: &[u8], _: &mut Vec<u8>, _: u32) -> io::Result<usize> {
        Err(none())
    }
}

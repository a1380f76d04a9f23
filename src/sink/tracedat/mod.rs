//! trace-cmd `trace.dat` files: the event formats generated from the kind table, the
//! version 6 writer and the version 7 one (zstd-compressed or not, `compress`, `v7`). The reader is `typhon_trace::tracedat`.
//!
//! A recording is one trace.dat file in which every thread slot is a "CPU" (CPU n = slot n), each
//! record kind is an event of system `typhon` whose ID is the kind byte, and the cmdlines map a
//! slot to its thread name, so `trace-cmd report` and KernelShark show Typhon records directly.
//!
//! ```
//! use typhon_recorder::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};
//! use typhon_trace::tracedat::TraceFile;
//! let mut meta = FileMeta::new(4096);
//! meta.slots.push(SlotMeta { slot: 2, name: "worker".into(), ..Default::default() });
//! let mut out = std::io::Cursor::new(Vec::new());
//! write_tracedat(&mut out, &meta, &mut []).unwrap();
//! let f = TraceFile::parse(out.into_inner()).unwrap();
//! assert_eq!(f.cpus(), 3);
//! assert_eq!(f.cmdline(2), Some("worker"));
//! ```

pub mod compress;
pub mod format;
pub mod v7;
pub mod writer;

pub use compress::{
    decompress_chunk, plausible_size, zstd_version, ChunkCompressor, Compression, CHUNK_HEADER,
    DEFAULT_CHUNK_PAGES, DEFAULT_ZSTD_LEVEL, MAX_CHUNK_BYTES, MAX_RATIO,
};
pub use v7::{write_tracedat_v7, write_tracedat_v7_with};

pub use writer::{
    write_tracedat, write_tracedat_with, FileMeta, SlotMeta, SlotPages, MAGIC, MAX_WRITE_CPUS,
    META_FORMAT, OPTION_TRACECLOCK, OPTION_TYPHON_META, OPTION_VERSION,
};

//! trace-cmd `trace.dat` files: the event formats generated from the kind table and the
//! version 6 writer. The reader is `typhon_trace::tracedat`.
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

pub mod format;
pub mod writer;

pub use writer::{
    write_tracedat, write_tracedat_with, FileMeta, SlotMeta, SlotPages, MAGIC, META_FORMAT,
    OPTION_TRACECLOCK, OPTION_TYPHON_META, OPTION_VERSION,
};

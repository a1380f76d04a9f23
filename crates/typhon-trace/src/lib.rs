//! # typhon-trace
//!
//! Reading what `typhon-recorder` writes: the [`kbuffer`] port (libtraceevent's sub-buffer
//! reader, traps included), the [`tracedat`] reader (trace-cmd `trace.dat` versions 6 and 7),
//! and the [`export`]s for trace viewers (Perfetto protobuf, Chrome trace-event JSON) and
//! OpenTelemetry backends (OTLP).
//!
//! ```
//! use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotMeta, TraceFile};
//! let mut meta = FileMeta::new(4096);
//! meta.slots.push(SlotMeta { slot: 1, name: "main".into(), ..Default::default() });
//! let mut out = std::io::Cursor::new(Vec::new());
//! write_tracedat(&mut out, &meta, &mut []).unwrap();
//! let f = TraceFile::parse(out.into_inner()).unwrap();
//! assert_eq!(f.cmdline(1), Some("main"));
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod defs;
pub mod export;
pub mod follow;
#[doc(hidden)]
pub mod fuzzing;
pub mod kbuffer;
pub mod tracedat;

//! # typhon-recorder
//!
//! A profiler recorder for game and server code: any thread writes small binary records at
//! nanosecond cost, a background flusher turns them into Linux ftrace sub-buffer pages, and the
//! finished recording is a trace-cmd `trace.dat` file that `trace-cmd report`, KernelShark and
//! the `typhon-rec` CLI read.
//!
//! A complete program: a game loop with ticks, named phases, spans (one named on the spot), a
//! named instant, a command traced from its arrival to the span that applies it, and a CeLog
//! event.
//!
//! ```
//! use typhon_recorder::codec::celog::CELID_USER;
//! use typhon_recorder::{instant, span, CeLog, RecorderBuilder};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//! #   let _g = typhon_recorder::doc_lock();
//! #   let dir = std::env::temp_dir().join(format!("typhon-doc-{}", std::process::id()));
//! #   std::fs::create_dir_all(&dir)?;
//!     let path = dir.join("run.dat");
//!     let rec = RecorderBuilder::new().output(&path).start()?; // installs it process-wide
//!     for tick in 0..3u32 {
//!         typhon_recorder::tick_start();
//!         typhon_recorder::ingress_received(7, tick as u16, 0, 64); // session, seq, wire, bytes
//!         {
//!             let _physics = typhon_recorder::phase(1, "physics"); // ends when dropped
//!             let _step = span!("step {tick}"); // formatted only while recording
//!             instant!("collision", 2); // a named instant with a payload
//!         }
//!         {
//!             let cmd = typhon_recorder::command_causal_id(7, tick, tick as u16);
//!             let _apply = typhon_recorder::traced_span("apply-command", cmd);
//!             typhon_recorder::command_consumed(7, tick as u16, 2);
//!         }
//!         CeLog::new(CELID_USER, b"frame done").write()?;
//!         typhon_recorder::tick_end(0, 1);
//!     }
//!     let stats = rec.finish()?; // everything written before this call is in run.dat
//!     assert_eq!(stats.total_missed(), 0);
//!     // ThreadInfo, the static names' definitions ("physics", "collision"), ten records a tick
//!     assert_eq!(stats.user_written(), 1 + 2 + 3 * 10);
//! #   std::fs::remove_dir_all(&dir)?;
//!     Ok(())
//! }
//! ```
//!
//! `typhon-rec stats run.dat` then times the ticks, `physics (phase 1)` and each span by name;
//! `typhon-rec report`, `typhon-rec export` (Perfetto, Chrome) and `trace-cmd report` read it
//! too. Code instrumented with the `tracing` crate records through the `typhon-tracing`
//! crate's `TyphonLayer` instead.
//!
//! ```text
//!  thread A ──write──▶ slot ring 1 ─┐                     ┌──▶ pages of slot 1 ─┐
//!  thread B ──write──▶ slot ring 2 ─┼──drain── flusher ───┼──▶ pages of slot 2 ─┼──▶ sink ──▶ trace.dat
//!  thread C ──write──▶ slot ring 3 ─┘  (ticks → ns,       └──▶ pages of slot 3 ─┘   (one "CPU"
//!   (no locks, no allocation,           missed counts,                               per slot)
//!    drop-newest when full)             commit headers)
//! ```
//!
//! ## The API
//!
//! - **Lifecycle**: [`RecorderBuilder`] (output path or [`sink::Sink`], page and ring sizes,
//!   flush interval, kinds to filter) → [`Recorder`] → [`Recorder::finish`] → [`Stats`].
//! - **Writes**, free functions on any thread, each with an `*_at` variant taking a caller
//!   timestamp in raw ticks ([`Recorder::now`], [`Recorder::ns_to_ticks`]): [`tick_start`],
//!   [`tick_end`], [`phase`] (a guard) or [`named_phase_start`] / [`named_phase_end`], the
//!   numbered [`phase_start`] / [`phase_end`], [`named_instant`] (or [`instant!`]) and the
//!   numbered [`instant()`], the correlation instants ([`ingress_received`],
//!   [`ingress_admitted`], [`ingress_dropped`], [`command_consumed`], [`egress_sent`]), CeLog
//!   events through [`CeLog`] (or CE's positional [`celog_data`]) with [`celog_set_zones`],
//!   [`write_record`].
//! - **Spans**: [`span!`] (which formats; a literal name is not copied), [`span_static`] for a
//!   `&'static str` (the fast path: no copy at begin), [`span`](fn@span) for a name made at run
//!   time (copied) and [`traced_span`] (taking a [`TraceContext`] or what [`command_causal_id`]
//!   returns) give a [`SpanGuard`] that ends the span when dropped; [`try_span`] says why one was
//!   refused; [`span_begin`] / [`span_end`] for code that cannot hold a guard.
//! - **Threads**: [`set_thread_info`] names the thread; [`register_thread`] claims its slot
//!   before its first event.
//! - **Formats**: [`codec`] (the record layouts, the kind table, `CorrelationInstantCodec`,
//!   CEL_HEADER_V3), [`tracedat`] (the trace.dat writer), [`sink`] (where pages go, the file
//!   sink and [`sink::recover`]).
//!
//! With no recorder installed, or for a kind disabled with [`RecorderBuilder::disable`], a
//! write is one relaxed load and a branch; the `compile-out` cargo feature removes every write.
//! Reading recordings (the kbuffer port, the trace.dat reader, the Perfetto and Chrome exports)
//! is the `typhon-trace` crate; the C ABI is `typhon-ffi`; the CLI is `typhon-rec`.
//!
//! ## Inside
//!
//! The data flows one way through one module per stage:
//! - `codec`: the record formats;
//! - `write`: the write side (clock, rings, slots, the thread's writer, the free functions and
//!   span guards);
//! - `session`: the installed recording's shared state, below both sides;
//! - `flush`: the flusher, its wake-up protocol and the page format;
//! - `sink`: where pages go (memory, the per-slot part files, trace.dat, recovery);
//! - `stats` and `recorder`: the counters and the lifecycle on top.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod codec;
mod error;
mod flush;
mod macros;
mod platform;
pub mod printable;
mod recorder;
mod session;
pub mod sink;
mod stats;
mod sync;
mod term;
pub mod window;
mod write;

pub use codec::correlation::{command_causal_id, is_command_causal_id, IngressDropReason};
pub use codec::records::{ThreadKind, TraceContext, MAX_THREAD_NAME};
pub use flush::flusher::MAX_AHEAD_NS;
#[doc(hidden)]
pub use macros::__span_fmt;
pub use recorder::{
    Recorder, RecorderBuilder, RecorderError, SlotDefinitions, Unfinished, DEFAULT_FLUSH_INTERVAL,
    DEFAULT_RING_BYTES, DEFAULT_SPARE_RINGS,
};
pub use sink::tracedat;
pub use sink::tracedat::Compression;
pub use stats::Stats;
pub use term::Termination;
pub use window::{Snapshot, Trigger};
pub use write::api::{
    celog_data, celog_data_at, celog_set_zones, command_consumed, command_consumed_at, egress_sent,
    egress_sent_at, ingress_admitted, ingress_admitted_at, ingress_dropped, ingress_dropped_at,
    ingress_received, ingress_received_at, instant, instant_at, phase_end, phase_end_at,
    phase_start, phase_start_at, register_thread, set_thread_info, tick_end, tick_end_at,
    tick_start, tick_start_at, write_record,
};
pub use write::celog::CeLog;
pub use write::clock::Clock;
#[doc(hidden)]
pub use write::counters::{__counter_named, __counter_static};
pub use write::counters::{
    counter, counter_at, counter_f64, counter_f64_at, counter_named, counter_named_f64,
    tick_end_with_gauges, try_counter, CounterArg,
};
pub use write::gate::request_snapshot;
pub use write::locks::{TracedMutex, TracedMutexGuard};
pub use write::named::{
    named_instant, named_instant_at, named_instant_static, named_phase_end, named_phase_end_at,
    named_phase_end_static, named_phase_start, named_phase_start_at, named_phase_start_static,
    phase, try_named_instant, try_named_phase_end, try_named_phase_start, PhaseGuard,
};
pub use write::span_api::{
    span, span_at, span_begin, span_end, span_static, span_static_at, traced_span, traced_span_at,
    try_span,
};
pub use write::spans::SpanGuard;
pub use write::{WriteError, SPAN_DEPTH, SPAN_NAME_BYTES};

/// Allocation counters: [`TrackingAllocator`]'s counter names, a thread's totals, a flush.
pub use write::alloc;
pub use write::alloc::TrackingAllocator;
/// The writes of a `tracing` layer (the `typhon-tracing` crate's `TyphonLayer` makes them; SPEC
/// §12). A program instruments with [`span()`] and the other free functions, or with `tracing`
/// through that layer.
pub use write::tracing as bridge;

/// The most-used names in one import: `use typhon_recorder::prelude::*;`.
///
/// ```
/// use typhon_recorder::prelude::*;
/// let b: RecorderBuilder = RecorderBuilder::new();
/// assert!(b.validate().is_ok());
/// ```
pub mod prelude {
    pub use crate::{
        span, traced_span, Recorder, RecorderBuilder, SpanGuard, Stats, ThreadKind, TraceContext,
    };
}

// Internals that the loom models (`loom-tests`), the benchmark harness (`typhon-bench`) and the
// readers' tests (`typhon-trace`) reach; not an API for programs.
#[doc(hidden)]
pub use flush::{page, wake};
#[doc(hidden)]
pub use write::{clock, ring, slots as registry, stack};

/// What the benchmark harness (`typhon-bench`) needs to see of the recorder's insides; not an
/// API for programs.
#[doc(hidden)]
pub mod probe {
    /// Waits until the installed recorder's flusher has drained every record written before
    /// the call; returns at once without one.
    pub fn drain_installed() {
        crate::write::gate::drain_installed()
    }

    /// Where this thread's ring starts, if it has one under the installed recorder (claims a
    /// slot like a first event would).
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    pub fn this_threads_ring() -> Option<usize> {
        crate::write::writer::this_threads_ring()
    }

    /// A field of `/proc/self/smaps` for the mapping that holds `addr`.
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    pub fn smaps_field(addr: usize, field: &str) -> Option<String> {
        crate::write::ring::smaps_field(addr, field)
    }

    /// Counts a write the C ABI refused for its arguments (NULL, bad UTF-8), as a refused
    /// write of the Rust API is counted: once, as `refused` of the calling thread's slot.
    pub fn count_refused() {
        crate::write::spans::count_refused()
    }
}

/// Serialises doctests and tests that install the process-wide recorder.
#[doc(hidden)]
pub fn doc_lock() -> parking_lot::MutexGuard<'static, ()> {
    static L: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    L.lock()
}

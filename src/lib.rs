//! # typhon-recorder
//!
//! A profiler recorder for game and server code: any thread writes small binary records at
//! nanosecond cost, a background flusher turns them into Linux ftrace sub-buffer pages, and the
//! finished recording is a trace-cmd `trace.dat` file that `trace-cmd report`, KernelShark and
//! the `typhon-rec` CLI read.
//!
//! ```text
//!  thread A ──write──▶ slot ring 1 ─┐                     ┌──▶ pages of slot 1 ─┐
//!  thread B ──write──▶ slot ring 2 ─┼──drain── flusher ───┼──▶ pages of slot 2 ─┼──▶ sink ──▶ trace.dat
//!  thread C ──write──▶ slot ring 3 ─┘  (ticks → ns,       └──▶ pages of slot 3 ─┘   (one "CPU"
//!   (no locks, no allocation,           missed counts,                               per slot)
//!    drop-newest when full)             commit headers)
//! ```
//!
//! The data flows through one module per stage:
//! - [`codec`]: the record formats (12-byte common header, the kind table, correlation instants,
//!   spans, CeLog events);
//! - [`ring`]: the lock-free single-producer/single-consumer ring of one thread slot;
//! - [`registry`]: the 255 user slots, claimed by threads and retired at thread exit;
//! - [`recorder`]: the producer API (free functions and guards) and the recorder's lifecycle;
//! - [`flusher`] and [`page`]: draining rings into kbuffer-compatible sub-buffer pages;
//! - [`sink`]: where pages go (memory, or the file that becomes trace.dat);
//! - [`tracedat`]: the trace.dat writer;
//! - [`printable`]: text from a file made safe for a terminal.
//!
//! Reading recordings (the kbuffer port, the trace.dat reader, the exports) is the
//! `typhon-trace` crate; the C ABI is `typhon-ffi`; the CLI is `typhon-rec`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod clock;
pub mod codec;
pub mod filesink;
pub mod flusher;
pub mod page;
pub mod printable;
pub mod recorder;
pub mod registry;
pub mod ring;
pub mod sink;
mod sync;
pub mod tracedat;
pub mod wake;

/// What the benchmark harness (`typhon-bench`) needs to see of the recorder's insides; not an
/// API for programs.
#[doc(hidden)]
pub mod probe {
    /// Waits until the installed recorder's flusher has drained every record written before
    /// the call; returns at once without one.
    pub fn drain_installed() {
        crate::recorder::drain_installed()
    }

    /// Where this thread's ring starts, if it has one under the installed recorder (claims a
    /// slot like a first event would).
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    pub fn this_threads_ring() -> Option<usize> {
        crate::recorder::this_threads_ring()
    }

    /// A field of `/proc/self/smaps` for the mapping that holds `addr`.
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    pub fn smaps_field(addr: usize, field: &str) -> Option<String> {
        crate::ring::smaps_field(addr, field)
    }
}

pub use codec::correlation::{command_causal_id, is_command_causal_id};
pub use recorder::{
    celog_data, celog_data_at, celog_set_zones, command_consumed, command_consumed_at, egress_sent,
    egress_sent_at, ingress_admitted, ingress_admitted_at, ingress_dropped, ingress_dropped_at,
    ingress_received, ingress_received_at, instant, instant_at, phase_end, phase_end_at,
    phase_start, phase_start_at, register_thread, set_thread_info, span, span_at, span_begin,
    span_end, tick_end, tick_end_at, tick_start, tick_start_at, traced_span, traced_span_at,
    try_span, write_record, Recorder, RecorderBuilder, SpanGuard, Stats,
};

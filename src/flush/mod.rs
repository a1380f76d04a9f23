//! The flush side: the thread that drains the rings.
//!
//! - [`flusher`]: drains every slot's ring, converts ticks to nanoseconds, builds pages and
//!   hands them to the sink; keeps the counters of [`crate::Stats`];
//! - [`wake`]: how producers and the handle wake the flusher early, and tell it to finish;
//! - [`page`]: the sub-buffer page format (kbuffer-compatible), its writer and its reader.

pub(crate) mod flusher;
pub mod page;
pub mod wake;

//! Raw ticks, the unit of every `*_at` write's timestamp: the clock now, and CLOCK_MONOTONIC
//! nanoseconds converted to it.
//!
//! Both work with or without a running recorder, so a host can take timestamps before
//! `typhon_start` and keep them across recorders.

use std::panic::catch_unwind;
use std::sync::OnceLock;

/// A process-wide clock for `typhon_now` / `typhon_ns_to_ticks`: raw ticks are the same in
/// every clock of the process (quanta calibrates once), so they are valid for any recorder.
fn clock() -> &'static typhon_recorder::clock::Clock {
    static C: OnceLock<typhon_recorder::clock::Clock> = OnceLock::new();
    C.get_or_init(typhon_recorder::clock::Clock::new)
}

/// The clock now, in raw ticks: the unit of every `*_at` function's timestamp. Valid with or
/// without a running recorder (0 only if the clock panicked).
///
/// ```
/// let a = typhon_ffi::typhon_now();
/// assert!(typhon_ffi::typhon_now() >= a);
/// ```
#[no_mangle]
pub extern "C" fn typhon_now() -> u64 {
    catch_unwind(|| clock().raw()).unwrap_or(0)
}

/// Converts CLOCK_MONOTONIC nanoseconds (e.g. `clock_gettime(CLOCK_MONOTONIC)`) to raw ticks
/// for the `*_at` functions.
///
/// ```
/// use typhon_ffi::*;
/// let t = typhon_ns_to_ticks(typhon_recorder::clock::monotonic_ns());
/// assert!(t.abs_diff(typhon_now()) < 1_000_000_000);
/// ```
#[no_mangle]
pub extern "C" fn typhon_ns_to_ticks(ns: u64) -> u64 {
    catch_unwind(|| clock().ns_to_raw(ns)).unwrap_or(0)
}

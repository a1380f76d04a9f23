//! Counters (kinds 234 and 235): a named value over time, an i64 or an f64. A `&'static str`
//! name ([`counter`], [`counter_f64`], `counter!` of a literal) is written once per slot as a
//! definition and each value carries its id (a CounterId, 25 bytes, no allocation); a name made
//! at run time ([`counter_named`]) is written inline in each record (a Counter). A name with a
//! NUL byte or too long for a page is refused and counted, as every named record's.

use crate::codec::records::{self, CounterValue};
use crate::codec::TraceEventKind as K;
use crate::write::named::{put_named, put_static};
use crate::write::writer::current_writer;

#[inline(always)]
fn put_counter_static(name: &'static str, value: CounterValue, at: Option<u64>) {
    let _ = put_static(
        K::COUNTER,
        name,
        at,
        records::COUNTER_ID_SIZE,
        |d, slot, t, id| {
            let _ = records::write_counter_id(d, slot, t, value, id);
        },
        || put_counter_inline(name, value, at),
    );
}

#[inline]
fn put_counter_inline(
    name: &str,
    value: CounterValue,
    at: Option<u64>,
) -> Result<(), crate::WriteError> {
    put_named(
        K::COUNTER,
        records::counter_len(name),
        name,
        at,
        |d, slot, t| {
            let r = records::write_counter(d, slot, t, value, name);
            debug_assert!(r.is_ok(), "a checked counter failed to encode: {r:?}");
        },
    )
}

/// Records the value of the counter `name` now: `stats` gives each counter's count, min, max,
/// mean and last; the Perfetto export draws it as a counter track, Chrome JSON as `"ph":"C"`.
/// The name is written once per slot (a NameDefinition) and each value after it is a
/// 25-byte CounterId; nothing allocates after the thread's first event.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// for depth in [3, 5, 4] {
///     typhon_recorder::counter("queue depth", depth);
/// }
/// // ThreadInfo, the name's definition and the 3 values.
/// assert_eq!(rec.finish().unwrap().user_written(), 5);
/// ```
#[inline]
pub fn counter(name: &'static str, value: i64) {
    put_counter_static(name, CounterValue::from_i64(value), None)
}

/// [`counter`] with an f64 value (stored exactly, as its bits).
///
/// ```
/// typhon_recorder::counter_f64("load", 0.75);
/// ```
#[inline]
pub fn counter_f64(name: &'static str, value: f64) {
    put_counter_static(name, CounterValue::from_f64(value), None)
}

/// [`counter`] at a caller-supplied time in raw ticks.
///
/// ```
/// typhon_recorder::counter_at(100, "queue depth", 3);
/// ```
#[inline]
pub fn counter_at(ts: u64, name: &'static str, value: i64) {
    put_counter_static(name, CounterValue::from_i64(value), Some(ts))
}

/// [`counter_f64`] at a caller-supplied time in raw ticks.
///
/// ```
/// typhon_recorder::counter_f64_at(100, "load", 0.75);
/// ```
#[inline]
pub fn counter_f64_at(ts: u64, name: &'static str, value: f64) {
    put_counter_static(name, CounterValue::from_f64(value), Some(ts))
}

/// [`counter`] for a name made at run time: the name is written inline in every record (a
/// Counter, `22 + name.len()` bytes), as [`named_instant`](crate::named_instant)'s is. What
/// `counter!` of a non-literal name calls.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// let shard = 3;
/// typhon_recorder::counter_named(&format!("shard {shard} depth"), 12);
/// typhon_recorder::counter_named("bad\0name", 1); // refused, counted
/// let stats = rec.finish().unwrap();
/// assert_eq!(stats.user_written(), 2); // ThreadInfo + the counter
/// assert_eq!(stats.slot(1).unwrap().refused, 1);
/// ```
#[inline]
pub fn counter_named(name: &str, value: i64) {
    let _ = put_counter_inline(name, CounterValue::from_i64(value), None);
}

/// [`counter_named`] with an f64 value.
///
/// ```
/// typhon_recorder::counter_named_f64("shard 3 load", 0.5);
/// ```
#[inline]
pub fn counter_named_f64(name: &str, value: f64) {
    let _ = put_counter_inline(name, CounterValue::from_f64(value), None);
}

/// [`counter_named`] (now, or at `at` in raw ticks) of any [`CounterValue`] that says why it
/// was refused (what the C ABI's `typhon_counter` calls).
///
/// # Errors
/// As [`try_named_instant`](crate::try_named_instant): [`WriteError::Invalid`](crate::WriteError)
/// for a name with a NUL byte, `TooLarge` for one too long; each counted as refused while a
/// recorder runs.
///
/// ```
/// use typhon_recorder::{codec::records::CounterValue, try_counter};
/// try_counter("depth", CounterValue::from_i64(3), None).unwrap();
/// assert!(try_counter("a\0b", CounterValue::from_f64(1.0), None).is_err());
/// ```
pub fn try_counter(
    name: &str,
    value: CounterValue,
    at: Option<u64>,
) -> Result<(), crate::WriteError> {
    put_counter_inline(name, value, at)
}

/// A value [`counter!`](crate::counter!) accepts: integers are recorded as i64 (a `u64` or
/// `usize` over `i64::MAX` as `i64::MAX`), `f32` and `f64` as f64. An unsuffixed integer
/// literal is an `i32`, a float literal an `f64`.
///
/// ```
/// use typhon_recorder::{codec::records::CounterValue, CounterArg};
/// assert_eq!(7u32.counter_value(), CounterValue::from_i64(7));
/// assert_eq!(u64::MAX.counter_value(), CounterValue::from_i64(i64::MAX));
/// assert_eq!(0.5f32.counter_value(), CounterValue::from_f64(0.5));
/// ```
pub trait CounterArg: Copy {
    /// The value as stored.
    fn counter_value(self) -> CounterValue;
}

macro_rules! counter_arg_int {
    ($($t:ty),*) => {$(
        impl CounterArg for $t {
            #[inline(always)]
            fn counter_value(self) -> CounterValue {
                CounterValue::from_i64(i64::try_from(self).unwrap_or(i64::MAX))
            }
        }
    )*};
}
counter_arg_int!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl CounterArg for f64 {
    #[inline(always)]
    fn counter_value(self) -> CounterValue {
        CounterValue::from_f64(self)
    }
}

impl CounterArg for f32 {
    #[inline(always)]
    fn counter_value(self) -> CounterValue {
        CounterValue::from_f64(f64::from(self))
    }
}

/// What `counter!` of a literal name calls (any [`CounterArg`] value).
#[doc(hidden)]
#[inline]
pub fn __counter_static(name: &'static str, value: impl CounterArg) {
    put_counter_static(name, value.counter_value(), None)
}

/// What `counter!` of a run-time name calls.
#[doc(hidden)]
#[inline]
pub fn __counter_named(name: &str, value: impl CounterArg) {
    let _ = put_counter_inline(name, value.counter_value(), None);
}

/// Per-tick gauges in the Typhon engine's style (its PerTickSnapshot), in one call: each
/// `(name, value)` of `gauges` as a counter, then the TickEnd, all at one time, read once.
/// Readers see the gauges at the tick's end (`stats` per name, a counter track each).
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// for tick in 0..2 {
///     typhon_recorder::tick_start();
///     typhon_recorder::tick_end_with_gauges(0, 1, &[("entities", 1000 + tick), ("bytes", 5 << 20)]);
/// }
/// // ThreadInfo, 2 definitions, then per tick: TickStart, 2 CounterIds, TickEnd.
/// assert_eq!(rec.finish().unwrap().user_written(), 11);
/// ```
pub fn tick_end_with_gauges(
    overload_level: u8,
    tick_multiplier: u8,
    gauges: &[(&'static str, i64)],
) {
    if cfg!(feature = "compile-out") {
        return;
    }
    let w = current_writer();
    if w.is_null() {
        return;
    }
    // SAFETY: the thread's own writer, used only for this read, which does not reenter the
    // recorder; no reference to it outlives the statement.
    let t = unsafe { (*w).ts(None) };
    for &(name, value) in gauges {
        put_counter_static(name, CounterValue::from_i64(value), Some(t));
    }
    crate::write::api::tick_end_at_opt(Some(t), overload_level, tick_multiplier);
}

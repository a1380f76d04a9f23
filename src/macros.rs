//! `span!` and `instant!`: the free functions with less to type; `span!` formats its name only
//! when spans are recorded, into a reused buffer. (A phase needs no macro: [`phase`](crate::phase)
//! returns a guard.)

use crate::codec::TraceEventKind;
use crate::write::gate::KIND_OFF;
use crate::write::spans::SpanGuard;
use std::cell::RefCell;
use std::fmt::Write as _;

thread_local! {
    /// `span!`'s formatted names: reused, so a warm thread formats without allocating.
    static NAME_BUF: RefCell<String> = const { RefCell::new(String::new()) };
}

/// What `span!` expands to: a span named by `args`, formatted only if NamedSpan is recorded
/// (or filtered, so that it is counted).
#[doc(hidden)]
#[inline]
pub fn __span_fmt(args: std::fmt::Arguments<'_>) -> SpanGuard {
    if cfg!(feature = "compile-out")
        || crate::write::writer::kind_state(TraceEventKind::NAMED_SPAN) == KIND_OFF
    {
        return SpanGuard::inert();
    }
    // A literal with no arguments is a `&'static str`: the fast path, with no copy at begin.
    if let Some(s) = args.as_str() {
        return crate::span_static(s);
    }
    let reused = NAME_BUF.try_with(|b| {
        // Taken (a `Display` of an argument that itself opens a span): the other path below.
        let mut b = b.try_borrow_mut().ok()?;
        b.clear();
        let _ = b.write_fmt(args);
        Some(crate::span(&b))
    });
    match reused {
        Ok(Some(g)) => g,
        _ => crate::span(&std::fmt::format(args)),
    }
}

/// Opens a span named like `format!` would (`span!("load {path}")`), and returns its guard;
/// the name is formatted only when spans are recorded. `span!("frame")` is
/// [`span_static("frame")`](crate::span_static): a literal name is not copied at the begin.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, span, RecorderBuilder};
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// let _frame = span!("frame");
/// for level in 0..3 {
///     let _l = span!("load level {level}");
/// }
/// // ThreadInfo, the definition of the static name "frame", 4 spans
/// assert_eq!(rec.finish().unwrap().user_written(), 6);
/// ```
#[macro_export]
macro_rules! span {
    ($($arg:tt)+) => {
        $crate::__span_fmt(::core::format_args!($($arg)+))
    };
}

/// Records a NamedInstant: `instant!("hit")` ([`named_instant`](crate::named_instant) with
/// payload 0) or `instant!("hit", payload)`; a literal name is
/// [`named_instant_static`](crate::named_instant_static)'s (written once per slot).
///
/// ```
/// typhon_recorder::instant!("collision");
/// typhon_recorder::instant!("collision", 3);
/// ```
#[macro_export]
macro_rules! instant {
    // A literal is a `&'static str`: written once per slot (`named_instant_static`).
    ($name:literal) => {
        $crate::named_instant_static($name, 0)
    };
    ($name:literal, $payload:expr) => {
        $crate::named_instant_static($name, $payload)
    };
    ($name:expr) => {
        $crate::named_instant($name, 0)
    };
    ($name:expr, $payload:expr) => {
        $crate::named_instant($name, $payload)
    };
}

/// Records a counter's value: `counter!("queue depth", v)`. A literal name is written once per
/// slot ([`counter`](fn@crate::counter)'s path); any other name expression (a `&str` made at run
/// time) is written inline in each record ([`counter_named`](crate::counter_named)). The value
/// is any [`CounterArg`](crate::CounterArg): integers as i64, floats as f64.
///
/// ```
/// let depth: usize = 3;
/// typhon_recorder::counter!("queue depth", depth);
/// typhon_recorder::counter!("load", 0.75);
/// let name = format!("shard {} depth", 2);
/// typhon_recorder::counter!(&name, 5);
/// ```
#[macro_export]
macro_rules! counter {
    ($name:literal, $value:expr) => {
        $crate::__counter_static($name, $value)
    };
    ($name:expr, $value:expr) => {
        $crate::__counter_named($name, $value)
    };
}

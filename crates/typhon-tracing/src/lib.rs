//! A [`tracing_subscriber::Layer`] that records `tracing` spans and events into the running
//! typhon-recorder recording (SPEC §12).
//!
//! - Each enter → exit of a span on a thread is one record of that thread, nested with its
//!   other spans (those of `typhon_recorder::span` too); a span entered on several threads (an
//!   async task) gives one record per entry, all with the span's key. The entry of a span
//!   described against its callsite is a TracingEntryShort (20 bytes: its time, u32 duration
//!   and key; a TracingEntry, 28, past 32 bits; readers rebuild the rest), or a TracingSpan
//!   under a native span, which it then names as parent. Descriptions and events carry their
//!   ids as varints (TracingSpanPacked, TracingEventPacked), which readers take as the
//!   TracingSpanValues and TracingEventValues below.
//! - A span's description carries its `tracing` parent's key (an explicit `parent:`, or the
//!   current span), so exports know it across threads; a span entered more than once (or
//!   never) gives a TracingClose when it closes, so that OTLP ends it there.
//! - Each layer knows which subscriber it is in, and an exit ends that subscriber's entry: a
//!   global subscriber's span and a scoped (`with_default`) one's with the same id stay apart;
//!   the other's entries open inside the one that ends go on as a second entry of their span.
//! - Each callsite (name, target, level, file, line, field names) is written once per
//!   recording, as a TracingCallsite record, the first time the layer meets it.
//!   A span's fields are encoded once, when it is created (and again for `Span::record`, which
//!   replaces the field's value), as typed values against its callsite's field names, into a
//!   TracingSpanValues record; the entry records carry the key only (an empty name: readers
//!   take the name from the span's description), so enter and exit format nothing and copy
//!   no string. A span whose description went out with its strings inline (its callsite has
//!   no id) keeps its name in its entries. A span's values are bounded (2 KiB): a string that does
//!   not fit is cut, ending in `…`, and readers then show `typhon.cut=N`, the bytes not held.
//!   Readers (`typhon_trace`'s `stream_records`) hand these records out as the
//!   TracingSpanInfo and TracingEvent records they stand for. Numbers are varints, and a
//!   short string that repeats (a system's `name`, an HTTP method, an event's literal message;
//!   up to 64 bytes) goes into the slot's definitions once and the values carry its id (the
//!   recorder decides as it writes the record: `typhon_recorder::bridge::span_values`).
//! - A span with a `name` field is displayed as `"{span name}: {name}"`: Bevy's systems, all
//!   `info_span!("system", name = …)`, show as `system: physics`, `system: render`, … and
//!   aggregate per system.
//! - Once the program is warm, the layer allocates nothing: a span's data is kept in a table
//!   of the layer's keyed by its id (not in the Registry's extensions, a box per span), closed
//!   spans' field buffers serve new ones, typed values are encoded without `fmt` (only `Debug`
//!   values are formatted), and enters, exits and events allocate nothing.
//! - Events give TracingEventValues records (callsite, typed values with the message, the
//!   current span's key); `follows_from` gives a TracingFollows record, a flow in the Perfetto export.
//! - An event with a `counter.NAME` or `monotonic_counter.NAME` field (tracing-opentelemetry's
//!   metrics convention: `tracing::info!(counter.requests = 1)`) adds its value to the metric
//!   NAME, recorded as a counter named NAME holding the running total, instead of an event.
//!
//! A complete program:
//!
//! ```
//! # let _g = typhon_recorder::doc_lock();
//! use tracing_subscriber::prelude::*;
//! use typhon_recorder::{sink::MemorySink, RecorderBuilder};
//!
//! let sink = MemorySink::new();
//! let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
//! let subscriber = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
//! tracing::subscriber::with_default(subscriber, || {
//!     let frame = tracing::info_span!("frame", n = 1);
//!     let _f = frame.enter();
//!     tracing::info_span!("system", name = "physics").in_scope(|| {
//!         tracing::info!(bodies = 3, "stepped");
//!     });
//! });
//! let stats = rec.finish().unwrap();
//! // ThreadInfo, 3 callsites (2 spans, 1 event), 2 span descriptions, 1 event, 2 entries.
//! assert_eq!(stats.user_written(), 9);
//! ```
//!
//! With Bevy, return it from `LogPlugin::custom_layer`:
//! `custom_layer: |_| Some(Box::new(typhon_tracing::TyphonLayer::new()))`, which takes a
//! `Box<dyn Layer<Registry> + Send + Sync>`.

#![warn(missing_docs)]

mod cache;
mod callsites;
mod counters;
mod fields;
mod names;
mod spans;

use fields::SpanFields;
use names::Display;
use spans::SpanData;
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::sync::Arc;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;
use typhon_recorder::bridge::{self, SpanName};
use typhon_recorder::codec::records;

/// The layer. It holds no state: everything goes into the installed recorder (with none
/// installed, each hook does nothing but its own formatting at span creation and events).
///
/// ```
/// use tracing_subscriber::{prelude::*, Layer, Registry};
/// let boxed: Box<dyn Layer<Registry> + Send + Sync> = Box::new(typhon_tracing::TyphonLayer::new());
/// let _subscriber = tracing_subscriber::registry().with(boxed);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TyphonLayer {
    /// Which subscriber stack this layer is in (a fresh one each time it joins one): two
    /// Registries hand out the same span ids, and neither the enter cache nor an exit (it
    /// ends the thread's entry of this stack and id) may mix them up.
    stack: u64,
}

impl Default for TyphonLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl TyphonLayer {
    /// A layer recording into whatever recorder is installed.
    ///
    /// ```
    /// let _layer = typhon_tracing::TyphonLayer::new();
    /// ```
    pub fn new() -> Self {
        TyphonLayer {
            stack: cache::new_token(),
        }
    }
}

/// The level byte of the records ([`typhon_recorder::codec::records::level_name`]).
pub(crate) fn level_byte(l: &Level) -> u8 {
    match *l {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// A field's value as `tracing` hands it over.
#[derive(Clone, Copy)]
enum Value<'a> {
    Str(&'a str),
    I64(i64),
    U64(u64),
    Bool(bool),
    F64(f64),
    Debug(&'a dyn fmt::Debug),
}

/// What a visitor hands each field to.
trait Sink {
    fn value(&mut self, field: &Field, v: Value<'_>);
}

/// Visits fields into a [`Sink`].
struct Visitor<S>(S);

impl<S: Sink> Visit for Visitor<S> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.value(field, Value::Str(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.value(field, Value::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.value(field, Value::U64(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.value(field, Value::Bool(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.value(field, Value::F64(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.value(field, Value::Debug(value));
    }
}

/// An event's fields as typed entries, `Debug` values formatted into `scratch` first.
struct EventValues<'a> {
    out: &'a mut Vec<u8>,
    scratch: &'a mut String,
}

impl Sink for EventValues<'_> {
    fn value(&mut self, field: &Field, v: Value<'_>) {
        let idx = field.index().min(254) as u8;
        let v = match v {
            Value::Str(s) => records::Value::Str(s),
            Value::I64(n) => records::Value::I64(n),
            Value::U64(n) => records::Value::U64(n),
            Value::Bool(t) => records::Value::Bool(t),
            Value::F64(x) => records::Value::F64(x),
            Value::Debug(d) => {
                self.scratch.clear();
                let mut b = fields::Bounded::new(self.scratch, records::MAX_VALUE_STR);
                let _ = write!(b, "{d:?}");
                b.finish();
                records::Value::Debug(self.scratch.as_str())
            }
        };
        records::put_entry(self.out, idx, v);
    }
}

/// A span's fields, each replacing the value it had ([`fields`]).
struct SpanVisit<'a> {
    fields: &'a mut SpanFields,
    scratch: &'a mut String,
}

impl Sink for SpanVisit<'_> {
    fn value(&mut self, field: &Field, v: Value<'_>) {
        self.fields.set(field, self.scratch, v);
    }
}

/// The callsite's field names, for a record written with its strings inline.
fn field_names(meta: &'static Metadata<'static>) -> Vec<&'static str> {
    meta.fields().iter().map(|f| f.name()).collect()
}

/// Writes span `key`'s description (its `tracing` parent's key `parent_key`, its `tracing` id
/// `id`): against its callsite's definition, or (no room for the callsite, its definition not
/// written) with its strings inline (which carries the id, not the parent). Returns whether it went
/// against the callsite: its entries then need not carry its name.
fn write_span(
    (key, parent_key, id): (u64, u64, u64),
    meta: &'static Metadata<'static>,
    fields: &SpanFields,
) -> bool {
    if let Some(cs) = callsites::defined(meta) {
        if bridge::span_values(key, parent_key, cs, fields.bytes()).is_ok() {
            return true;
        }
    }
    let mut text = String::new();
    records::write_text(fields.bytes(), &field_names(meta), &mut text);
    let _ = bridge::span_info(
        key,
        id,
        level_byte(meta.level()),
        &no_nul_str(meta.name()),
        &no_nul_str(meta.target()),
        &text,
    );
    false
}

/// The name a span's entries carry: none (readers take it from its description, SPEC §15)
/// when `described` against its callsite; else its display name, `"{span}: {name}"` for a
/// span with a `name` field (a string as it is, another value as the records show it).
fn entry_name(meta: &'static Metadata<'static>, fields: &SpanFields, described: bool) -> Display {
    if described {
        return Display::Shared(names::empty());
    }
    let value = records::value_text(fields.bytes(), &field_names(meta), "name");
    display_name(meta, value.as_deref())
}

thread_local! {
    /// The buffer a span's field is written into before it takes its place.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `values` of a span into `fields`.
fn record_span_fields(fields: &mut SpanFields, values: &dyn Fn(&mut dyn Visit)) {
    let mut go = |scratch: &mut String| {
        values(&mut Visitor(SpanVisit {
            fields: &mut *fields,
            scratch,
        }));
    };
    // A field's Debug that itself records into a span finds the buffer taken: it gets its own.
    let done = SCRATCH
        .try_with(|b| match b.try_borrow_mut() {
            Ok(mut b) => {
                go(&mut b);
                true
            }
            Err(_) => false,
        })
        .unwrap_or(false);
    if !done {
        go(&mut String::new());
    }
}

/// The display name of a span of `meta` with `name` field `value` (`None`: none), shared
/// with every span of that callsite and name while the table of [`names`] has room.
fn display_name(meta: &'static Metadata<'static>, value: Option<&str>) -> Display {
    let make = || {
        let d = match value {
            Some(n) => format!("{}: {n}", meta.name()),
            None => meta.name().to_owned(),
        };
        SpanName::new(&no_nul_str(&d))
    };
    match names::intern(meta, value, make) {
        Some(n) => Display::Shared(n),
        None => Display::Own(Arc::new(make())),
    }
}

/// [`no_nul`] of a borrowed string, copied only when it has a NUL.
fn no_nul_str(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}").into()
    } else {
        s.into()
    }
}

thread_local! {
    /// An event's values and the text of its `Debug` values, reused so that events do not
    /// allocate once warm.
    static EVENT_BUF: RefCell<(Vec<u8>, String)> = const { RefCell::new((Vec::new(), String::new())) };
}

/// An enter the thread's cache could not serve: the span table's lookup, kept for next time.
#[cold]
#[inline(never)]
fn enter_slow(stack: u64, raw: u64) {
    let found = spans::with(stack, raw, |d| {
        d.slow_enters = d.slow_enters.saturating_add(1);
        (
            d.token,
            cache::Entered {
                key: d.key,
                name: d.display.clone(),
            },
        )
    });
    if let Some((token, e)) = found {
        bridge::enter_in(stack, &e.name, e.key, raw);
        cache::reclaim(stack, raw, token);
        cache::fill(stack, raw, token, e);
    }
}

impl<S> Layer<S> for TyphonLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_layer(&mut self, _subscriber: &mut S) {
        // A copy of one layer value added to two stacks gets two identities.
        self.stack = cache::new_token();
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let raw = id.into_u64();
        let stack = self.stack;
        // Its `tracing` parent, as the Registry will know it: an explicit `parent:`, else the
        // thread's current span (contextual), else none (a root).
        let parent = if let Some(p) = attrs.parent() {
            Some(p.into_u64())
        } else if attrs.is_contextual() {
            ctx.current_span().id().map(Id::into_u64)
        } else {
            None
        };
        let parent_key = parent
            .and_then(|p| {
                cache::with_cached(stack, p, |e| e.key).or_else(|| spans::with(stack, p, |d| d.key))
            })
            .unwrap_or(0);
        let mut fields = SpanFields::take();
        record_span_fields(&mut fields, &|v| attrs.record(v));
        let key = bridge::next_key();
        let described = write_span((key, parent_key, raw), meta, &fields);
        let token = cache::new_token();
        let display = entry_name(meta, &fields, described);
        let entered = cache::Entered {
            key,
            name: display.clone(),
        };
        let data = SpanData {
            key,
            parent_key,
            slow_enters: 0,
            token,
            meta,
            display,
            fields,
        };
        spans::insert(stack, raw, data);
        cache::publish(stack, raw, 0, token);
        cache::prime(stack, raw, token, entered);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let (stack, raw) = (self.stack, id.into_u64());
        // The fields are taken out while they record: a field's `Debug` may log or record,
        // which takes the table's lock.
        let Some((key, parent_key, meta, mut fields)) = spans::with(stack, raw, |d| {
            (d.key, d.parent_key, d.meta, std::mem::take(&mut d.fields))
        }) else {
            return;
        };
        record_span_fields(&mut fields, &|v| values.record(v));
        // The whole description again, with every field's last value: a reader keeps the last.
        // Its values are bounded, so this costs the same however often the span records.
        let described = write_span((key, parent_key, raw), meta, &fields);
        let display = entry_name(meta, &fields, described);
        spans::with(stack, raw, |d| {
            d.fields = fields;
            // The same shared name (a described span's: none) needs no compare of its text.
            let same = match (&d.display, &display) {
                (Display::Shared(a), Display::Shared(b)) => std::ptr::eq(*a, *b),
                _ => false,
            };
            if !same && d.display.as_str() != display.as_str() {
                d.display = display;
                // Threads that cached the old name look it up again.
                let token = cache::new_token();
                cache::publish(stack, raw, d.token, token);
                d.token = token;
            }
        });
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, _ctx: Context<'_, S>) {
        let key = |id: &Id| spans::with(self.stack, id.into_u64(), |d| d.key);
        if let (Some(a), Some(b)) = (key(id), key(follows)) {
            bridge::follows(a, b);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        // tracing-opentelemetry's metrics convention: counters, not an event.
        if counters::has_metric_fields(meta) {
            counters::record(event);
            return;
        }
        let stack = self.stack;
        let key_of = |raw: u64| {
            cache::with_cached(stack, raw, |e| e.key).or_else(|| spans::with(stack, raw, |d| d.key))
        };
        // The span `ctx.event_span` gives, found with one slab reference of the Registry's
        // fewer (or none): a span in this layer's table is one its per-layer filter (if any)
        // enabled, so it is the span that `event_span` would return, as is no span for an
        // explicit parent not in the table. A contextual event's current span that is not in
        // the table (one a filter hides from this layer) takes `event_span`'s search of the
        // stack below it.
        let span_key = if event.is_root() {
            0
        } else if event.is_contextual() {
            match ctx.current_span().id() {
                None => 0,
                Some(id) => key_of(id.into_u64())
                    .or_else(|| {
                        ctx.event_span(event)
                            .and_then(|s| key_of(s.id().into_u64()))
                    })
                    .unwrap_or(0),
            }
        } else {
            event
                .parent()
                .and_then(|id| key_of(id.into_u64()))
                .unwrap_or(0)
        };
        let write = |values: &mut Vec<u8>, scratch: &mut String| {
            values.clear();
            event.record(&mut Visitor(EventValues {
                out: &mut *values,
                scratch,
            }));
            if let Some(cs) = callsites::defined(meta) {
                let _ = bridge::event_values(span_key, cs, values);
                return;
            }
            let names = field_names(meta);
            let msg = records::value_text(values, &names, "message").unwrap_or_default();
            let mut text = String::new();
            records::write_text_skipping(values, &names, Some("message"), &mut text);
            let _ = bridge::event(
                span_key,
                level_byte(meta.level()),
                &no_nul_str(meta.target()),
                &no_nul_str(&msg),
                &no_nul_str(&text),
            );
        };
        // A field's Debug that itself logs finds the buffers taken: it gets its own.
        let done = EVENT_BUF
            .try_with(|b| match b.try_borrow_mut() {
                Ok(mut b) => {
                    let (m, f) = &mut *b;
                    write(m, f);
                    true
                }
                Err(_) => false,
            })
            .unwrap_or(false);
        if !done {
            write(&mut Vec::new(), &mut String::new());
        }
    }

    // Inline into the subscriber's `enter`/`exit`: a call of its own cost a prologue and an
    // epilogue of six register saves each (callgrind).
    #[inline(always)]
    fn on_enter(&self, id: &Id, _ctx: Context<'_, S>) {
        let raw = id.into_u64();
        let stack = self.stack;
        if cache::enter_cached(stack, raw, |e| bridge::enter_in(stack, &e.name, e.key, raw))
            .is_some()
        {
            return;
        }
        enter_slow(self.stack, raw);
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        // Before the Registry frees the id for reuse (it calls this first): a span created
        // with it later gets an entry of its own. Its fields' room serves a new span.
        if let Some(d) = spans::remove(self.stack, id.into_u64()) {
            let r = cache::retire(self.stack, id.into_u64(), d.token);
            let enters = d.slow_enters.saturating_add(u32::from(r.first));
            // A span whose last exit is not its end says when it closed (see the kind table:
            // TracingClose): one entered on several threads or twice on one, or never.
            if r.again || enters != 1 {
                bridge::close(d.key);
            }
            d.fields.give();
        }
    }

    #[inline(always)]
    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // The thread's stack knows the entry by its `tracing` id and this layer's stack (another
        // subscriber's span may have the same id): no lookup here.
        bridge::exit_in(self.stack, id.into_u64());
    }
}

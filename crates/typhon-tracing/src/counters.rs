//! Metrics events in tracing-opentelemetry's convention: an event with a field named
//! `counter.NAME` or `monotonic_counter.NAME` adds that field's value (i64, u64 or f64) to the
//! metric NAME. The layer records each such field as a typhon counter named NAME whose value is
//! the metric's running total across the program (each event's value is an increment, as
//! OpenTelemetry's counters take it), and does not record the event itself.
//!
//! The field names are `&'static str`, so NAME is too: the counter's name is written once per
//! slot as a definition ([`typhon_recorder::counter`]). Totals are kept per name (by the name's
//! address) in a short table under a lock, taken only by metrics events.

use std::sync::Mutex;
use tracing_core::field::{Field, Visit};
use tracing_core::{Event, Metadata};

const PREFIXES: [&str; 2] = ["monotonic_counter.", "counter."];

/// NAME of a metric field, if `field` is one.
fn metric_name(field: &'static str) -> Option<&'static str> {
    PREFIXES
        .iter()
        .find_map(|p| field.strip_prefix(p))
        .filter(|n| !n.is_empty())
}

/// Whether the callsite has a metric field: a scan of its field names, a few compares.
#[inline]
pub(crate) fn has_metric_fields(meta: &Metadata<'_>) -> bool {
    meta.fields().iter().any(|f| {
        matches!(f.name().as_bytes().first(), Some(b'c' | b'm')) && metric_name(f.name()).is_some()
    })
}

/// A metric's running total: an integer until an f64 increment makes it one.
#[derive(Clone, Copy)]
enum Total {
    Int(i64),
    Float(f64),
}

static TOTALS: Mutex<Vec<(&'static str, Total)>> = Mutex::new(Vec::new());

/// Adds `by` to the total of `name` and records the new total.
fn add(name: &'static str, by: Total) {
    let mut t = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let i = match t
        .iter()
        .position(|(n, _)| n.as_ptr() == name.as_ptr() && n.len() == name.len())
    {
        Some(i) => i,
        None => {
            t.push((name, Total::Int(0)));
            t.len() - 1
        }
    };
    let next = match (t[i].1, by) {
        (Total::Int(a), Total::Int(b)) => Total::Int(a.saturating_add(b)),
        (Total::Int(a), Total::Float(b)) => Total::Float(a as f64 + b),
        (Total::Float(a), Total::Int(b)) => Total::Float(a + b as f64),
        (Total::Float(a), Total::Float(b)) => Total::Float(a + b),
    };
    t[i].1 = next;
    // Written under the lock, so that the totals of one name go out in the order they grew.
    match next {
        Total::Int(v) => typhon_recorder::counter(name, v),
        Total::Float(v) => typhon_recorder::counter_f64(name, v),
    }
}

struct MetricVisitor;

impl Visit for MetricVisitor {
    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Some(n) = metric_name(field.name()) {
            add(n, Total::Int(value));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if let Some(n) = metric_name(field.name()) {
            add(n, Total::Int(i64::try_from(value).unwrap_or(i64::MAX)));
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if let Some(n) = metric_name(field.name()) {
            add(n, Total::Float(value));
        }
    }

    // Other types (a bool, a string, a `Debug` value) are no metric value, as in
    // tracing-opentelemetry; the event's other fields are not recorded.
    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

/// Records the metric fields of `event` as counters.
pub(crate) fn record(event: &Event<'_>) {
    event.record(&mut MetricVisitor);
}

#[cfg(test)]
mod tests {
    use super::metric_name;

    #[test]
    fn metric_names_follow_the_convention() {
        assert_eq!(metric_name("counter.requests"), Some("requests"));
        assert_eq!(
            metric_name("monotonic_counter.bytes.sent"),
            Some("bytes.sent")
        );
        assert_eq!(metric_name("counter."), None);
        assert_eq!(metric_name("histogram.latency"), None);
        assert_eq!(metric_name("counters"), None);
        assert_eq!(metric_name("message"), None);
    }
}

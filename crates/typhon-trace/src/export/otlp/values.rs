//! The small conversions every OTLP span needs: ids to bytes, file times to UNIX ns, attribute
//! values, and the thread a record was written on.

use crate::export::Arg;
use opentelemetry_proto::tonic::common::v1::{any_value::Value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use typhon_recorder::codec::records::TraceContext;

/// The 16-byte trace id of a trace context: a W3C id as its canonical bytes; a command's causal
/// id as `hi` then `lo`, each big-endian, so that its hex in a viewer reads as the two numbers
/// (`5459430000000007` `000000000003002a`: marker and session 7, then drain tick 3 and seq 42).
pub(super) fn trace_id(c: TraceContext) -> [u8; 16] {
    if c.is_command() {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&c.hi.to_be_bytes());
        b[8..].copy_from_slice(&c.lo.to_be_bytes());
        b
    } else {
        c.to_w3c_bytes()
    }
}

/// A span id as OTLP's 8 bytes (big-endian: its hex is the number's); 0 (no parent) as none.
pub(super) fn span_id(id: u64) -> Vec<u8> {
    if id == 0 {
        return Vec::new();
    }
    id.to_be_bytes().to_vec()
}

/// Monotonic file times to UNIX ns through the file's wall-clock anchor.
#[derive(Clone, Debug)]
pub(super) struct Clock {
    /// (monotonic ns, UNIX ns) at the session's start; `None`: the file has no anchor and times
    /// pass through as they are.
    pub(super) anchor: Option<(i64, i64)>,
    /// The file's clock-syncs with that anchor (SPEC §16): times map through them.
    pub(super) map: crate::clocksync::ClockMap,
}

impl Clock {
    pub(super) fn unix(&self, ts: u64) -> u64 {
        match (self.anchor, self.map.wall_ns(ts)) {
            (Some(_), Some(t)) => t.clamp(0, i128::from(u64::MAX)) as u64,
            (Some((mono, wall)), None) => {
                let t = i128::from(wall) + i128::from(ts) - i128::from(mono);
                t.clamp(0, i128::from(u64::MAX)) as u64
            }
            (None, _) => ts,
        }
    }
}

pub(super) fn kv(key: &str, v: Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(v) }),
        ..KeyValue::default()
    }
}

pub(super) fn kv_str(key: &str, v: &str) -> KeyValue {
    kv(key, Value::StringValue(v.to_string()))
}

pub(super) fn kv_int(key: &str, v: i64) -> KeyValue {
    kv(key, Value::IntValue(v))
}

/// An unsigned value: an int when it fits OTLP's i64, else its decimal string (never wrapped).
pub(super) fn kv_u64(key: &str, v: u64) -> KeyValue {
    match i64::try_from(v) {
        Ok(i) => kv_int(key, i),
        Err(_) => kv_str(key, &v.to_string()),
    }
}

/// An export argument as an attribute of its type.
pub(super) fn kv_arg(key: &str, v: Arg<'_>) -> KeyValue {
    match v {
        Arg::U(u) => kv_u64(key, u),
        Arg::I(i) => kv_int(key, i),
        Arg::S(s) => kv_str(key, &s),
        Arg::F(f) => kv(key, Value::DoubleValue(f)),
        Arg::B(b) => kv(key, Value::BoolValue(b)),
    }
}

/// The thread a slot's records belong to now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ThreadId {
    /// From its ThreadInfo; `None` before one.
    pub(super) tid: Option<i64>,
    /// ThreadInfo's name, else the file's cmdline for the slot, else "slot N".
    pub(super) name: String,
}

impl ThreadId {
    /// `thread.id` and `thread.name` (OpenTelemetry's semantic conventions).
    pub(super) fn attributes(&self, to: &mut Vec<KeyValue>) {
        if let Some(t) = self.tid {
            to.push(kv_int("thread.id", t));
        }
        to.push(kv_str("thread.name", &self.name));
    }
}

/// Lower-case hex of `b`.
pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A span with the fields every one of ours sets; the rest default.
pub(super) fn span(
    trace: [u8; 16],
    id: u64,
    parent: u64,
    name: &str,
    kind: i32,
    (start, end): (u64, u64),
) -> Span {
    Span {
        trace_id: trace.to_vec(),
        span_id: span_id(id),
        parent_span_id: span_id(parent),
        name: name.to_string(),
        kind,
        start_time_unix_nano: start,
        end_time_unix_nano: end.max(start),
        ..Span::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_ids_read_as_their_numbers_and_w3c_ids_stay_canonical() {
        let c = TraceContext::from_command(7, 3, 42);
        assert_eq!(hex(&trace_id(c)), "5459430000000007000000000003002a");
        let w3c: [u8; 16] = core::array::from_fn(|i| i as u8 + 1);
        assert_eq!(trace_id(TraceContext::from_w3c_bytes(w3c)), w3c);
    }

    #[test]
    fn times_follow_the_anchor_and_never_wrap() {
        let c = Clock {
            anchor: Some((1_000, 1_700_000_000_000_000_000)),
            map: Default::default(),
        };
        assert_eq!(c.unix(1_500), 1_700_000_000_000_000_500);
        assert_eq!(
            Clock {
                anchor: Some((1_000, 10)),
                map: Default::default(),
            }
            .unix(0),
            0
        );
        assert_eq!(
            kv_u64("k", u64::MAX).value.unwrap().value,
            Some(Value::StringValue(u64::MAX.to_string()))
        );
    }
}

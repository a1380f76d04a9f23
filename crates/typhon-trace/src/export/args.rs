//! What the writers show of a record: its display name ([`event_name`]) and its arguments
//! ([`event_args`], as [`Arg`] values), both decoded through the kind table, so that the two
//! formats name and describe every event the same way.

use typhon_recorder::codec::correlation::command_of_causal_id;
use typhon_recorder::codec::records::{self, FieldValue, Record as Body};
use typhon_recorder::codec::{kind_def, TraceEventKind as K};

/// A value of an event's arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg<'a> {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Text.
    S(std::borrow::Cow<'a, str>),
    /// A float (a `tracing` field).
    F(f64),
    /// A boolean (a `tracing` field).
    B(bool),
}

/// An event's display name: the span's (or named instant's, or named phase's) name, "tick",
/// "phase N", a `tracing` event's message, "new span NAME" for a `tracing` span's description
/// (which the exports show as its slices' arguments, not as an event), "follows_from", or the
/// kind's name.
///
/// ```
/// use typhon_recorder::codec::records::Record;
/// let mut b = [0u8; 16];
/// let n = Record::PhaseEnd { phase: 3 }.write(&mut b, 1, 0).unwrap();
/// assert_eq!(typhon_trace::export::event_name(&b[..n]), "phase 3");
/// ```
pub fn event_name(rec: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match records::decode(rec) {
        Ok((
            _,
            Body::NamedSpan { name, .. }
            | Body::TracedSpan { name, .. }
            | Body::TracingSpan { name, .. }
            | Body::NamedInstant { name, .. }
            | Body::NamedPhaseStart { name, .. }
            | Body::NamedPhaseEnd { name, .. },
        )) => Cow::Borrowed(name),
        // A `tracing` event shows its message (its level and target are arguments).
        Ok((_, Body::TracingEvent { message, .. })) if !message.is_empty() => {
            Cow::Borrowed(message)
        }
        Ok((_, Body::TracingSpanInfo { name, .. })) => Cow::Owned(format!("new span {name}")),
        Ok((_, Body::TracingFollows { .. })) => Cow::Borrowed("follows_from"),
        Ok((_, Body::TickEnd { .. })) => Cow::Borrowed("tick"),
        Ok((_, Body::PhaseStart { phase } | Body::PhaseEnd { phase })) => {
            Cow::Owned(format!("phase {phase}"))
        }
        Ok((_, Body::CeLog(ev))) => Cow::Owned(format!("CeLog 0x{:04x}", ev.id)),
        _ => {
            let kind = K(rec.get(2).copied().unwrap_or(0));
            kind_def(kind).map_or_else(|| Cow::Owned(kind.to_string()), |d| Cow::Borrowed(d.name))
        }
    }
}

/// An event's arguments: the record's fields by the kind table, plus the trace context of a
/// TracedSpan spelled out, a CeLog event's own fields, and the bytes of an undecodable record.
///
/// ```
/// use typhon_recorder::codec::records::Record;
/// use typhon_trace::export::{event_args, Arg};
/// let mut b = [0u8; 16];
/// let n = Record::TickEnd { overload_level: 2, tick_multiplier: 1 }.write(&mut b, 1, 0).unwrap();
/// assert_eq!(event_args(&b[..n])[0], ("overload_level", Arg::U(2)));
/// ```
pub fn event_args(rec: &[u8]) -> Vec<(&'static str, Arg<'_>)> {
    use std::borrow::Cow;
    let mut v = Vec::new();
    let d = match records::decode_fields(rec) {
        Ok(d) => d,
        Err(e) => {
            v.push(("undecodable", Arg::S(Cow::Owned(e.to_string()))));
            v.push(("bytes", Arg::S(Cow::Owned(hex(rec)))));
            return v;
        }
    };
    if d.header.kind == K::CELOG {
        match typhon_recorder::codec::celog::decode_event(d.payload) {
            Ok((ev, _)) => {
                v.push(("id", Arg::U(ev.id.into())));
                if let Some(ts) = ev.timestamp {
                    v.push(("celog_timestamp", Arg::U(ts.into())));
                }
                if let Some(flag) = ev.flag {
                    v.push(("flag", Arg::U(flag.into())));
                }
                v.push(("cpu", Arg::U(ev.cpu.into())));
                v.push(("data", Arg::S(Cow::Owned(hex(ev.data)))));
            }
            Err(e) => v.push(("undecodable", Arg::S(Cow::Owned(e.to_string())))),
        }
        return v;
    }
    for (f, val) in d.fields() {
        let a = match val {
            FieldValue::Unsigned(u) => Arg::U(u),
            FieldValue::Signed(i) => Arg::I(i),
            FieldValue::Str(s) => Arg::S(Cow::Borrowed(s)),
            FieldValue::Bytes(b) => Arg::S(Cow::Owned(hex(b))),
        };
        v.push((f.name, a));
    }
    if let Some(FieldValue::Unsigned(l)) = d.get("level") {
        if d.header.kind == K::TRACING_EVENT || d.header.kind == K::TRACING_SPAN_INFO {
            v.push((
                "level_name",
                Arg::S(Cow::Borrowed(records::level_name(l as u8))),
            ));
        }
    }
    if d.header.kind == K::TRACED_SPAN {
        if let (Some(hi), Some(lo)) = (
            d.get("trace_id_hi").and_then(FieldValue::as_u64),
            d.get("trace_id_lo").and_then(FieldValue::as_u64),
        ) {
            match command_of_causal_id(hi, lo) {
                Some((session, drain_tick, seq)) => {
                    v.push(("command_session", Arg::U(session.into())));
                    v.push(("command_drain_tick", Arg::U(drain_tick.into())));
                    v.push(("command_seq", Arg::U(seq.into())));
                }
                None => {
                    let w3c = records::TraceContext { hi, lo }.to_w3c_bytes();
                    v.push(("trace_id", Arg::S(Cow::Owned(hex(&w3c)))));
                }
            }
        }
    }
    v
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from_digit((x >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((x & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

/// The arguments the writers show: [`event_args`] less what the event already says (a span's
/// duration is its slice's length, its flags its kind, its name the event's name; a phase's
/// number is in its name "phase N", a CeLog event's id in its name "CeLog 0xID"; a command's causal id is spelled out as
/// `command_session`, `command_drain_tick` and `command_seq`), with whether each is a 64-bit
/// identifier (span ids, `tracing` keys and ids), which the Chrome JSON writes as a hex string.
pub(super) fn shown_args(rec: &[u8]) -> Vec<(&'static str, Arg<'_>, bool)> {
    let kind = K(rec.get(2).copied().unwrap_or(0));
    let span = kind == K::NAMED_SPAN || kind == K::TRACED_SPAN || kind == K::TRACING_SPAN;
    let phase = kind == K::PHASE_START || kind == K::PHASE_END;
    let args = event_args(rec);
    let spelled = args
        .iter()
        .any(|a| a.0 == "command_session" || a.0 == "trace_id");
    args.into_iter()
        .filter(|(name, _)| match *name {
            "duration_ns" | "flags" | "name" => !span,
            "phase" => !phase,
            "id" => kind != K::CELOG,
            "trace_id_hi" | "trace_id_lo" => !spelled,
            _ => true,
        })
        .map(|(name, v)| (name, v, is_id(name)))
        .collect()
}

/// Whether an argument is a 64-bit identifier.
fn is_id(name: &str) -> bool {
    matches!(
        name,
        "span_id"
            | "parent_span_id"
            | "key"
            | "tracing_id"
            | "span_key"
            | "follows_key"
            | "trace_id_hi"
            | "trace_id_lo"
    )
}

/// The arguments a `tracing` span's slice shows for its fields (`fields`, the text of its
/// latest description), each by its own name and with its own type; a field whose name one of
/// the slice's other arguments (`shown`) has is named `field.NAME`.
pub(super) fn field_args<'f>(
    fields: &'f str,
    shown: &[(&'static str, Arg<'_>, bool)],
) -> Vec<(std::borrow::Cow<'f, str>, Arg<'f>)> {
    use super::fields::FieldVal as V;
    use std::borrow::Cow;
    super::fields::parse(fields)
        .into_iter()
        .map(|(name, v)| {
            let name = if shown.iter().any(|a| a.0 == name) {
                Cow::Owned(format!("field.{name}"))
            } else {
                Cow::Borrowed(name)
            };
            let v = match v {
                V::I(i) => Arg::I(i),
                V::U(u) => Arg::U(u),
                V::F(f) => Arg::F(f),
                V::B(b) => Arg::B(b),
                V::S(s) => Arg::S(s),
            };
            (name, v)
        })
        .collect()
}

//! Definitions (SPEC §15), resolved in one place for every reader: a `tracing` callsite is
//! written once per recording (a TracingCallsite record), and span descriptions and events
//! carry its id and typed values (TracingSpanValues, TracingEventValues). [`Resolved`], what
//! [`TraceFile::stream_records`] yields, hands each such record out as the TracingSpanInfo or
//! TracingEvent it stands for, with the callsite's name, target, level and field names, so
//! `report`, `stats`, the exports and OTLP read files before and after §15 alike, with no code
//! of their own for it. A TracingSpan (a span's entry) written without its name is handed out
//! with it, as its span's description gives it, and a TracingEntry (a compact entry) as the
//! TracingSpan it stands for ([`crate::span_names`]). A record of a compact kind (221–224: a
//! short entry or close, a packed description or event) is first made the record of its full
//! kind ([`records::expand`]), so everything above, and every reader, sees only full kinds.
//!
//! A definition is in one slot's stream and used from every slot. Stream order usually puts it
//! first (it is written before its first use), but a record may come first (another slot's
//! record of the same nanosecond, or a definition on a page of a slot read later): a record
//! whose id is not known yet makes the reader read every slot's definitions once (a pass that
//! keeps nothing else). The table is bounded ([`Definitions::CAP`] callsites); definitions past
//! it are counted in [`Definitions::overflow`], and a record whose definition is not in the file
//! is handed out with `callsite#N` as its name and `fieldK` as its field names, counted in
//! [`Definitions::unresolved`].
//!
//! Static names are defined the same way, per slot: a NameDefinition (id → name) in a slot's
//! stream names the NamedSpanId, NamedInstantId, NamedPhaseStartId and NamedPhaseEndId records
//! of that slot, which are handed out as the NamedSpan, NamedInstant, NamedPhaseStart and
//! NamedPhaseEnd they stand for; one whose definition is not in the file is named `name#N`.
//! The same definitions hold the short strings that repeat in a slot's `tracing` values (a
//! span's `name`, an HTTP method, an event's literal message): values that carry one by id
//! ([`records::Value::StrId`]) are handed out with the string inline, as it was written
//! before; an id not in the file reads as `name#N`, counted in [`Definitions::unresolved`].

use crate::span_names::SpanNames;
use crate::tracedat::{CpuStream, Merge, OwnedRecord, TraceDatError, TraceFile};
use std::collections::HashMap;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::codec::{CommonHeader, TraceEventKind as K};

/// A callsite as the reader keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Site {
    level: u8,
    name: String,
    target: String,
    fields: Vec<String>,
}

/// The callsites of a file, by id.
///
/// ```
/// use typhon_recorder::codec::records::*;
/// use typhon_trace::defs::Definitions;
/// let c = Callsite { id: 4, level: 3, line: 1, name: "req", target: "app", file: "", field_names: "user" };
/// let mut d = [0u8; 64];
/// let n = write_tracing_callsite(&mut d, 1, 0, &c).unwrap();
/// let mut defs = Definitions::default();
/// assert!(defs.learn(&d[..n]));
/// let mut v = Vec::new();
/// put_entry(&mut v, 0, Value::U64(7));
/// let n = write_tracing_span_values(&mut d, 1, 5, 9, 3, 4, &v).unwrap();
/// let legacy = defs.resolve(&d[..n]).unwrap();
/// assert_eq!(decode(&legacy).unwrap().1, Record::TracingSpanInfo {
///     key: 9, tracing_id: 3, level: 3, name: "req", target: "app", fields: "user=7" });
/// ```
#[derive(Debug, Default)]
pub struct Definitions {
    sites: HashMap<u32, Site>,
    /// Static names, by slot and id.
    names: HashMap<(u8, u32), Box<str>>,
    /// Definitions not kept: the table was full.
    pub overflow: u64,
    /// Records handed out without their definition (not in the file, or past the table).
    pub unresolved: u64,
}

impl Definitions {
    /// Most callsites the table keeps.
    pub const CAP: usize = 1 << 16;

    /// Learns `data` if it is a definition (a TracingCallsite or a NameDefinition record);
    /// returns whether it was one.
    pub fn learn(&mut self, data: &[u8]) -> bool {
        if data.get(2) == Some(&K::NAME_DEFINITION.0) {
            let Ok((h, Record::NameDefinition { name_id, name })) = records::decode(data) else {
                return false;
            };
            let key = (h.slot, name_id);
            if !self.names.contains_key(&key) {
                if self.names.len() >= Self::CAP {
                    self.overflow += 1;
                } else {
                    self.names.insert(key, name.into());
                }
            }
            return true;
        }
        if data.get(2) != Some(&K::TRACING_CALLSITE.0) {
            return false;
        }
        let Ok((_, Record::TracingCallsite(c))) = records::decode(data) else {
            return false;
        };
        if self.sites.contains_key(&c.id) {
            return true;
        }
        if self.sites.len() >= Self::CAP {
            self.overflow += 1;
            return true;
        }
        self.sites.insert(
            c.id,
            Site {
                level: c.level,
                name: c.name.to_owned(),
                target: c.target.to_owned(),
                fields: c.fields().map(str::to_owned).collect(),
            },
        );
        true
    }

    /// Whether `data` uses a callsite or a static name this table does not know.
    fn misses(&self, data: &[u8]) -> bool {
        match records::decode(data) {
            Ok((
                h,
                Record::NamedSpanId { name_id, .. }
                | Record::NamedInstantId { name_id, .. }
                | Record::NamedPhaseStartId { name_id, .. }
                | Record::NamedPhaseEndId { name_id, .. }
                | Record::CounterId { name_id, .. },
            )) => !self.names.contains_key(&(h.slot, name_id)),
            Ok((
                h,
                Record::TracingSpanValues {
                    callsite, values, ..
                }
                | Record::TracingEventValues {
                    callsite, values, ..
                },
            )) => {
                !self.sites.contains_key(&callsite)
                    || records::value_ids(values).any(|id| !self.names.contains_key(&(h.slot, id)))
            }
            _ => false,
        }
    }

    /// The key and display name ([`crate::span_names`]) of the span that TracingSpanValues
    /// `data` describes, when its callsite is known.
    fn span_name(&self, data: &[u8]) -> Option<(u64, String)> {
        let Ok((
            h,
            Record::TracingSpanValues {
                key,
                callsite,
                values,
                ..
            },
        )) = records::decode(data)
        else {
            return None;
        };
        let site = self.sites.get(&callsite)?;
        let mut buf = Vec::new();
        let values = self.inline_ids(h.slot, values, &mut buf);
        let names: Vec<&str> = site.fields.iter().map(String::as_str).collect();
        Some((
            key,
            crate::span_names::display_name(&site.name, &names, values),
        ))
    }

    /// Learns every definition of `file` (a pass over every slot's records).
    pub fn scan(&mut self, file: &TraceFile) {
        for cpu in 0..file.cpus() {
            for r in file.stream_cpu(cpu).flatten() {
                self.learn(&r.data);
            }
        }
    }

    /// The TracingSpanInfo or TracingEvent that a TracingSpanValues or TracingEventValues
    /// record stands for (same slot and time), padded to 4 bytes as records are read; `None`
    /// for any other record (or one that does not decode: readers report it as it is).
    pub fn resolve(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        let (h, body) = records::decode(data).ok()?;
        if let Some(r) = self.resolve_name(h.slot, h.timestamp, &body) {
            return r;
        }
        let (callsite, values) = match body {
            Record::TracingSpanValues {
                callsite, values, ..
            }
            | Record::TracingEventValues {
                callsite, values, ..
            } => (callsite, values),
            _ => return None,
        };
        let missing =
            records::value_ids(values).filter(|id| !self.names.contains_key(&(h.slot, *id)));
        self.unresolved += missing.count() as u64;
        let mut buf = Vec::new();
        let values = self.inline_ids(h.slot, values, &mut buf);
        let unknown;
        let site = match self.sites.get(&callsite) {
            Some(s) => s,
            None => {
                self.unresolved += 1;
                unknown = Site {
                    level: 0,
                    name: format!("callsite#{callsite}"),
                    target: String::new(),
                    fields: Vec::new(),
                };
                &unknown
            }
        };
        let names: Vec<&str> = site.fields.iter().map(String::as_str).collect();
        let clean = |s: String| s.replace('\0', "\u{FFFD}");
        let mut out = Vec::new();
        let (slot, ts) = (h.slot, h.timestamp);
        let n =
            match body {
                // The description's `parent_key` goes out in the info's `tracing_id` (the
                // OTLP export reads it so, knowing the record's written kind); a file from
                // before kind 226 held the span's `tracing` id there.
                Record::TracingSpanValues {
                    key,
                    parent_key: tracing_id,
                    ..
                } => {
                    let mut text = String::new();
                    records::write_text(values, &names, &mut text);
                    let room = CommonHeader::MAX_RECORD.saturating_sub(
                        records::tracing_span_info_len(&site.name, &site.target, ""),
                    );
                    let text = fit(clean(text), room);
                    out.resize(
                        records::tracing_span_info_len(&site.name, &site.target, &text) + 3,
                        0,
                    );
                    records::write_tracing_span_info(
                        &mut out,
                        slot,
                        ts,
                        key,
                        tracing_id,
                        site.level,
                        &site.name,
                        &site.target,
                        &text,
                    )
                }
                Record::TracingEventValues { span_key, .. } => {
                    let msg = records::value_text(values, &names, "message").unwrap_or_default();
                    let mut text = String::new();
                    records::write_text_skipping(values, &names, Some("message"), &mut text);
                    let room = CommonHeader::MAX_RECORD.saturating_sub(records::tracing_event_len(
                        &site.target,
                        "",
                        "",
                    ));
                    // The message first, leaving the fields at least half the room they need.
                    let msg = fit(clean(msg), room - text.len().min(room / 2));
                    let text = fit(clean(text), room.saturating_sub(msg.len()));
                    out.resize(records::tracing_event_len(&site.target, &msg, &text) + 3, 0);
                    records::write_tracing_event(
                        &mut out,
                        slot,
                        ts,
                        span_key,
                        site.level,
                        &site.target,
                        &msg,
                        &text,
                    )
                }
                _ => return None,
            }
            .ok()?;
        out.truncate(n.next_multiple_of(4));
        Some(out)
    }
}

impl Definitions {
    /// `values` of a record of `slot` with the strings it gives by id ([`records::Value::StrId`],
    /// the slot's NameDefinitions) written inline into `buf`, or `values` itself when it has
    /// none; an id whose definition is not in the file reads as `name#ID`.
    fn inline_ids<'v>(&self, slot: u8, values: &'v [u8], buf: &'v mut Vec<u8>) -> &'v [u8] {
        let names = &self.names;
        if records::inline_ids(values, |id| names.get(&(slot, id)).map(|n| &**n), buf) {
            buf
        } else {
            values
        }
    }

    /// [`resolve`](Self::resolve) of a record named by a static name's id: `None` if `body`
    /// is no such record.
    fn resolve_name(&mut self, slot: u8, ts: i64, body: &Record<'_>) -> Option<Option<Vec<u8>>> {
        let name_id = match *body {
            Record::NamedSpanId { name_id, .. }
            | Record::NamedInstantId { name_id, .. }
            | Record::NamedPhaseStartId { name_id, .. }
            | Record::NamedPhaseEndId { name_id, .. }
            | Record::CounterId { name_id, .. } => name_id,
            _ => return None,
        };
        let unknown;
        let name = match self.names.get(&(slot, name_id)) {
            Some(n) => &**n,
            None => {
                self.unresolved += 1;
                unknown = format!("name#{name_id}");
                &unknown
            }
        };
        let inline = match *body {
            Record::NamedSpanId { span, .. } => Record::NamedSpan { span, name },
            Record::NamedInstantId { payload, .. } => Record::NamedInstant { payload, name },
            Record::NamedPhaseStartId { phase, .. } => Record::NamedPhaseStart { phase, name },
            Record::NamedPhaseEndId { phase, .. } => Record::NamedPhaseEnd { phase, name },
            Record::CounterId { value, .. } => Record::Counter { value, name },
            _ => return None,
        };
        // A definition's name fits its own record, so its inline record fits too (the span's
        // 21 bytes more and the counter's 5 are within the 65534 only up to their last bytes:
        // cut the name there).
        let mut out = vec![0u8; inline.encoded_len().next_multiple_of(4)];
        Some(match inline.write(&mut out, slot, ts) {
            Ok(n) => {
                out.truncate(n.next_multiple_of(4));
                Some(out)
            }
            Err(_) => {
                if let Record::Counter { value, .. } = inline {
                    let room = CommonHeader::MAX_RECORD - records::counter_len("");
                    let name = fit(name.to_owned(), room);
                    let mut out = vec![0u8; records::counter_len(&name).next_multiple_of(4)];
                    let n = records::write_counter(&mut out, slot, ts, value, &name).ok();
                    return Some(n.map(|n| {
                        out.truncate(n.next_multiple_of(4));
                        out
                    }));
                }
                let room = CommonHeader::MAX_RECORD - records::named_span_len("");
                let name = fit(name.to_owned(), room);
                let Record::NamedSpan { span, .. } = inline else {
                    return Some(None);
                };
                let mut out = vec![0u8; records::named_span_len(&name).next_multiple_of(4)];
                let n = records::write_named_span(&mut out, slot, ts, &span, &name).ok();
                n.map(|n| {
                    out.truncate(n.next_multiple_of(4));
                    out
                })
            }
        })
    }
}

/// `s` cut at a character boundary to at most `room` bytes, ending in `…` when cut.
fn fit(s: String, room: usize) -> String {
    if s.len() <= room {
        return s;
    }
    if room < 3 {
        return String::new();
    }
    let mut end = room.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// [`TraceFile::stream_records`]: every slot's records merged in time order, each record that
/// uses a definition handed out resolved (see the module).
#[derive(Debug)]
pub struct Resolved<'f> {
    file: &'f TraceFile,
    inner: Merge<CpuStream<'f>>,
    defs: Definitions,
    names: SpanNames,
    scanned: bool,
    /// The kind the last record handed out was written as.
    written_kind: u8,
    /// The kind byte the last record handed out has in the file.
    stored_kind: u8,
    /// The file's record filter ([`TraceFile::set_record_filter`]).
    keep: Option<crate::tracedat::Keep>,
}

impl<'f> Resolved<'f> {
    pub(crate) fn new(file: &'f TraceFile, inner: Merge<CpuStream<'f>>) -> Self {
        Resolved {
            file,
            inner,
            defs: Definitions::default(),
            names: SpanNames::default(),
            scanned: false,
            written_kind: 0,
            stored_kind: 0,
            keep: file.record_filter(),
        }
    }

    /// The kind the last record handed out was written as (a resolved record's is the kind
    /// of its typed form, not the one it is handed out as; a compact kind's, the full kind it
    /// stands for: what its ids mean is that kind's).
    pub fn written_kind(&self) -> K {
        K(self.written_kind)
    }

    /// The kind byte the last record handed out has in the file: [`Self::written_kind`], but
    /// a compact kind as itself.
    pub fn stored_kind(&self) -> K {
        K(self.stored_kind)
    }

    /// The definitions read so far, and what was not resolved.
    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }

    /// The span names learnt so far, and the entries handed out without one.
    pub fn span_names(&self) -> &SpanNames {
        &self.names
    }
}

impl Iterator for Resolved<'_> {
    type Item = Result<OwnedRecord, TraceDatError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let r = self.next_resolved()?;
            if let (Ok(rec), Some(keep)) = (&r, &mut self.keep) {
                if !(keep.0)(rec) {
                    continue;
                }
            }
            return Some(r);
        }
    }
}

impl Resolved<'_> {
    /// The next record, resolved, whatever the filter says of it.
    fn next_resolved(&mut self) -> Option<Result<OwnedRecord, TraceDatError>> {
        let mut r = match self.inner.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        // A compact kind reads as the full kind it stands for, from here on: so does its
        // written kind (what it means, to the OTLP export, is the full kind's).
        self.stored_kind = r.data.get(2).copied().unwrap_or(0);
        if let Some(full) = records::expand(&r.data) {
            r.data = full;
        }
        let kind = r.data.get(2).copied();
        self.written_kind = kind.unwrap_or(0);
        if kind == Some(K::TRACING_CALLSITE.0) || kind == Some(K::NAME_DEFINITION.0) {
            self.defs.learn(&r.data);
        } else if kind.is_some_and(uses_definition) && !self.scanned && self.defs.misses(&r.data) {
            // A use before its definition (a definition's page read later): learn them all.
            self.scanned = true;
            self.defs.scan(self.file);
        }
        if let Some(d) = resolve_use(&mut self.defs, &mut self.names, &r.data) {
            r.data = d;
        }
        Some(Ok(r))
    }
}

/// `data` (a record that is not a definition) as a reader shows it, with the definitions and
/// span names learnt so far: a record naming a definition by id resolved, a span's
/// description teaching `names` its name, a nameless `tracing` entry named, a compact one
/// (TracingEntry) handed out as the TracingSpan it stands for, a record of a compact kind
/// ([`records::expand`]) as its full kind's; `None` when it reads as it is. What
/// [`Resolved`] and the follower ([`crate::follow`]) both hand out.
pub(crate) fn resolve_use(
    defs: &mut Definitions,
    names: &mut SpanNames,
    data: &[u8],
) -> Option<Vec<u8>> {
    // A compact kind as the full kind it stands for (done already for `Resolved`'s records).
    let expanded = records::expand(data);
    let data = expanded.as_deref().unwrap_or(data);
    let resolved = resolve_full(defs, names, data);
    resolved.or(expanded)
}

/// [`resolve_use`] of a record of a full kind.
fn resolve_full(defs: &mut Definitions, names: &mut SpanNames, data: &[u8]) -> Option<Vec<u8>> {
    let kind = data.get(2).copied()?;
    names.note_span(data);
    if kind == K::TRACING_ENTRY.0 {
        return names.resolve_entry(data);
    }
    if uses_definition(kind) {
        if let Some((key, name)) = defs.span_name(data) {
            names.learn(key, &name);
        }
        defs.resolve(data)
    } else if kind == K::TRACING_SPAN.0 {
        names.resolve(data)
    } else {
        None
    }
}

/// Whether records of `kind` name a definition by its id.
fn uses_definition(kind: u8) -> bool {
    [
        K::TRACING_SPAN_VALUES,
        K::TRACING_EVENT_VALUES,
        K::NAMED_SPAN_ID,
        K::NAMED_INSTANT_ID,
        K::NAMED_PHASE_START_ID,
        K::NAMED_PHASE_END_ID,
        K::COUNTER_ID,
    ]
    .iter()
    .any(|k| k.0 == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_recorder::codec::records::{put_entry, Callsite, Value};

    /// Values that would not fit the record they stand for are cut to it (ending in `…`),
    /// never refused and never a panic: the record still reads, with its callsite's strings.
    #[test]
    fn a_use_too_large_for_its_inline_record_is_cut_to_fit() {
        let mut defs = Definitions::default();
        // Long field names make the inline text longer than the values.
        let names = format!("message,{}", "b".repeat(20_000));
        let c = Callsite {
            id: 1,
            level: 3,
            line: 0,
            name: "n",
            target: "t",
            file: "",
            field_names: &names,
        };
        let mut d = vec![0u8; 30_000];
        let n = records::write_tracing_callsite(&mut d, 1, 0, &c).unwrap();
        assert!(defs.learn(&d[..n]));
        let big = "x".repeat(25_000);
        let mut v = Vec::new();
        put_entry(&mut v, 0, Value::Debug(&big));
        put_entry(&mut v, 1, Value::Str(&big));
        for kind in [K::TRACING_SPAN_VALUES, K::TRACING_EVENT_VALUES] {
            let mut d = vec![0u8; 90_000];
            let n = if kind == K::TRACING_SPAN_VALUES {
                records::write_tracing_span_values(&mut d, 1, 0, 1, 1, 1, &v)
            } else {
                records::write_tracing_event_values(&mut d, 1, 0, 1, 1, &v)
            }
            .unwrap();
            let out = defs.resolve(&d[..n]).unwrap();
            assert!(out.len() <= CommonHeader::MAX_RECORD + 3);
            match records::decode(&out).unwrap().1 {
                Record::TracingSpanInfo { name, fields, .. } => {
                    assert_eq!(name, "n");
                    assert!(fields.ends_with('…') && fields.len() > 60_000);
                }
                Record::TracingEvent {
                    message, fields, ..
                } => {
                    assert_eq!(message, big);
                    assert!(fields.starts_with("bbb") && fields.ends_with('…'));
                }
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(defs.unresolved, 0);
    }
}

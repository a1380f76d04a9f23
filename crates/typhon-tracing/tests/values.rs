//! Values written compactly (SPEC §15): a short string that repeats (a span's `name`, an
//! event's literal message) goes once per slot into a NameDefinition and the values then carry
//! its id; numbers are varints. The bytes are pinned here, and the readers show the strings
//! as they did when each record carried them.

mod common;

use std::collections::HashMap;
use std::path::Path;
use tracing_subscriber::prelude::*;
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::RecorderBuilder;
use typhon_trace::tracedat::TraceFile;

fn program() {
    for _ in 0..3 {
        let s = tracing::info_span!("system", name = "physics", n = 300u64);
        s.in_scope(|| tracing::info!("stepped"));
    }
}

/// The raw records of `path`, in each slot's order: (kind, bytes).
fn raw(path: &Path) -> Vec<(u8, Vec<u8>)> {
    let f = TraceFile::open(path).unwrap();
    (0..f.cpus())
        .flat_map(|c| f.stream_cpu(c).map(|r| r.unwrap()).collect::<Vec<_>>())
        .map(|r| (r.data[2], r.data))
        .collect()
}

#[test]
fn repeated_strings_and_literal_messages_go_by_id() {
    let _g = typhon_recorder::doc_lock();
    let dir = common::scratch("values-ids");
    let dat = dir.join("ids.dat");
    let rec = RecorderBuilder::new().output(&dat).start().unwrap();
    let subscriber = tracing_subscriber::registry().with(typhon_tracing::TyphonLayer::new());
    tracing::subscriber::with_default(subscriber, program);
    rec.finish().unwrap();

    let recs = raw(&dat);
    // The definitions, each once: id → string.
    let defs: HashMap<String, u32> = recs
        .iter()
        .filter_map(|(_, d)| match records::decode(d).ok()?.1 {
            Record::NameDefinition { name_id, name } => Some((name.to_string(), name_id)),
            _ => None,
        })
        .collect();
    let n_defs = recs
        .iter()
        .filter(|(k, _)| *k == typhon_recorder::codec::TraceEventKind::NAME_DEFINITION.0)
        .count();
    assert_eq!(n_defs, 2, "{defs:?}");
    let (physics, stepped) = (defs["physics"], defs["stepped"]);
    assert!(physics < 128 && stepped < 128);
    let values = |kind: Record<'_>| match kind {
        Record::TracingSpanValues { values, .. } | Record::TracingEventValues { values, .. } => {
            Some(values.to_vec())
        }
        _ => None,
    };
    let spans: Vec<Vec<u8>> = recs
        .iter()
        .filter(|(k, _)| *k == typhon_recorder::codec::TraceEventKind::TRACING_SPAN_PACKED.0)
        .filter_map(|(_, d)| values(records::decode(d).unwrap().1))
        .collect();
    let events: Vec<Vec<u8>> = recs
        .iter()
        .filter(|(k, _)| *k == typhon_recorder::codec::TraceEventKind::TRACING_EVENT_PACKED.0)
        .filter_map(|(_, d)| values(records::decode(d).unwrap().1))
        .collect();
    // The first sight inline (field 0 a str of 7 bytes, field 1 a varint 300), then by id.
    #[rustfmt::skip]
    let inline: &[u8] = &[0, 8, 7, b'p', b'h', b'y', b's', b'i', b'c', b's', 1, 13, 0xac, 0x02];
    let by_id: &[u8] = &[0, 10, physics as u8, 1, 13, 0xac, 0x02];
    assert_eq!(spans, [inline, by_id, by_id]);
    // The message: a `Debug` text (tag 9) the first time, then by id (tag 11).
    let msg_inline: &[u8] = &[0, 9, 7, b's', b't', b'e', b'p', b'p', b'e', b'd'];
    let msg_id: &[u8] = &[0, 11, stepped as u8];
    assert_eq!(events, [msg_inline, msg_id, msg_id]);
    // A span description of 7 bytes' values and an event of 3, over their packed ids.
    let sizes: Vec<(usize, usize)> = recs
        .iter()
        .filter(|(k, _)| *k == 222 || *k == 223)
        .map(|(_, d)| {
            let size = u16::from_le_bytes([d[0], d[1]]) as usize;
            match records::decode(d).unwrap().1 {
                Record::TracingSpanValues {
                    key,
                    parent_key,
                    callsite,
                    values,
                } => (
                    size,
                    records::tracing_span_packed_len(key, parent_key, callsite, values.len()),
                ),
                Record::TracingEventValues {
                    span_key,
                    callsite,
                    values,
                } => (
                    size,
                    records::tracing_event_packed_len(span_key, callsite, values.len()),
                ),
                r => panic!("{r:?}"),
            }
        })
        .collect();
    assert!(sizes.iter().all(|(a, b)| a == b), "{sizes:?}");
    let values: Vec<usize> = spans
        .iter()
        .zip(&events)
        .flat_map(|(s, e)| [s.len(), e.len()])
        .collect();
    assert_eq!(values, [14, 10, 7, 3, 7, 3]);

    // The readers show what the records carried before.
    let r = common::read(&dat);
    let infos: Vec<_> = r
        .infos
        .iter()
        .map(|(_, n, f)| (n.as_str(), f.as_str()))
        .collect();
    assert_eq!(infos, [("system", "name=\"physics\" n=300"); 3]);
    let events: Vec<_> = r
        .events
        .iter()
        .map(|(_, m, f)| (m.as_str(), f.as_str()))
        .collect();
    assert_eq!(events, [("stepped", ""); 3]);
    let names: Vec<_> = r.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["system: physics"; 3]);
    let _ = std::fs::remove_dir_all(&dir);
}

//! The compact `tracing` lifecycle records (issue 33): TracingEntry (226) and TracingClose
//! (227) as golden bytes computed by hand from the kind table's comment, and the recorder's
//! choice between a TracingEntry and a TracingSpan for an entry, read back from the memory
//! sink's pages.

mod recording;

use recording::{read_stream, Names};
use typhon_recorder::codec::kinds::{kind_def, TRACING_ENTRY_ID_BIT};
use typhon_recorder::codec::records::*;
use typhon_recorder::codec::{Shape, TraceEventKind as K};
use typhon_recorder::sink::MemorySink;
use typhon_recorder::{bridge, doc_lock, RecorderBuilder};

/// ts = 0x0102030405060708 as it appears on the wire.
const TS: i64 = 0x0102_0304_0506_0708;
const TSB: [u8; 8] = [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01];

#[test]
fn golden_tracing_entry() {
    let mut d = [0u8; 28];
    assert_eq!(
        write_tracing_entry(&mut d, 3, TS, 0x0A0B, 0x1122_3344),
        Ok(28)
    );
    let mut want = vec![28, 0, 226, 3];
    want.extend_from_slice(&TSB);
    want.extend_from_slice(&[0x0B, 0x0A, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0]);
    assert_eq!(d.to_vec(), want);
    let def = kind_def(K::TRACING_ENTRY).unwrap();
    assert_eq!(
        (def.name, def.shape, def.fixed_size()),
        ("TracingEntry", Shape::Span, Some(28))
    );
    // 32 bytes on disk with the page's 4-byte event word: at most the 32.
    assert!(TRACING_ENTRY_SIZE.next_multiple_of(4) + 4 <= 32);
    let (h, r) = decode(&d).unwrap();
    assert_eq!((h.slot, h.timestamp), (3, TS));
    assert_eq!(
        r,
        Record::TracingEntry {
            duration_ns: 0x0A0B,
            key: 0x1122_3344
        }
    );
    let mut text = String::new();
    write_fields(&decode_fields(&d).unwrap(), &mut text).unwrap();
    assert_eq!(text, "duration_ns=2571 key=287454020");
    // Too short a destination is an error, not a panic.
    assert!(write_tracing_entry(&mut [0u8; 27], 3, TS, 1, 1).is_err());
}

#[test]
fn golden_tracing_close() {
    let mut d = [0u8; 20];
    assert_eq!(write_tracing_close(&mut d, 2, TS, 0x0102), Ok(20));
    let mut want = vec![20, 0, 227, 2];
    want.extend_from_slice(&TSB);
    want.extend_from_slice(&[0x02, 0x01, 0, 0, 0, 0, 0, 0]);
    assert_eq!(d.to_vec(), want);
    assert_eq!(decode(&d).unwrap().1, Record::TracingClose { key: 0x0102 });
    let def = kind_def(K::TRACING_CLOSE).unwrap();
    assert_eq!(
        (def.name, def.shape, def.fixed_size()),
        ("TracingClose", Shape::Instant, Some(20))
    );
}

#[test]
fn span_values_carry_the_parent_key() {
    let mut d = [0u8; 40];
    let n = write_tracing_span_values(&mut d, 1, TS, 9, 7, 4, &[]).unwrap();
    assert_eq!(n, 32);
    let mut want = vec![32, 0, 252, 1];
    want.extend_from_slice(&TSB);
    want.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[4, 0, 0, 0]);
    assert_eq!(d[..n].to_vec(), want);
    let r = decode_fields(&d[..n]).unwrap();
    assert_eq!(r.get("parent_key"), Some(FieldValue::Unsigned(7)));
}

/// A record as read back: (kind, span id, parent id, key).
fn written(sink: &MemorySink) -> Vec<(K, u64, u64, u64)> {
    let pages = sink.pages();
    let pages = pages.lock();
    let mut out = Vec::new();
    let mut names = Names::default();
    for stream in pages.slots.iter() {
        for p in read_stream(stream) {
            for (_, r) in &p.records {
                let Some(r) = names.read(r) else { continue };
                let (h, rec) = decode(&r).unwrap();
                match rec {
                    Record::TracingEntry { key, .. } => out.push((h.kind, 0, 0, key)),
                    Record::TracingSpan { span, key, .. } => {
                        out.push((h.kind, span.span_id, span.parent_span_id, key))
                    }
                    Record::NamedSpan { span, .. } => {
                        out.push((h.kind, span.span_id, span.parent_span_id, 0))
                    }
                    Record::TracingClose { key } => out.push((h.kind, 0, 0, key)),
                    _ => {}
                }
            }
        }
    }
    out
}

/// An entry of a described span (an empty name) is a compact entry (a TracingEntryShort, its
/// key and duration fitting 32 bits) at top level and inside another, a TracingSpan under a native span (it names that parent); a native span inside a
/// TracingEntry names the entry's id (bit 55 set); a named entry stays a TracingSpan.
#[test]
fn entries_are_compact_where_no_parent_needs_naming() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .spare_rings(0)
        .start()
        .unwrap();
    let empty = bridge::SpanName::new("");
    let named = bridge::SpanName::new("inline");
    assert!(bridge::enter(&empty, 1, 101)); // top level: compact
    assert!(bridge::enter(&empty, 2, 102)); // inside a compact entry: compact
    {
        let _native = typhon_recorder::span("native"); // names entry 2 as its parent
        assert!(bridge::enter(&empty, 3, 103)); // under a native span: a TracingSpan
        bridge::exit(103);
    }
    bridge::exit(102);
    assert!(bridge::enter(&named, 4, 104)); // a name of its own: a TracingSpan
    bridge::exit(104);
    bridge::exit(101);
    // Span 1's close follows its last exit with nothing between: that exit ends it, and no
    // close is written. Span 2's last exit is not this thread's last record: its close is.
    bridge::close(1);
    bridge::close(2);
    bridge::close(2);
    rec.finish().unwrap();
    let w = written(&sink);
    let kinds: Vec<(K, u64)> = w.iter().map(|&(k, _, _, key)| (k, key)).collect();
    assert_eq!(
        kinds,
        [
            (K::TRACING_SPAN, 3),
            (K::NAMED_SPAN, 0),
            (K::TRACING_ENTRY_SHORT, 2),
            (K::TRACING_SPAN, 4),
            (K::TRACING_ENTRY_SHORT, 1),
            (K::TRACING_CLOSE_SHORT, 2),
            (K::TRACING_CLOSE_SHORT, 2),
        ]
    );
    let native = w[1];
    assert_ne!(native.2 & TRACING_ENTRY_ID_BIT, 0, "{native:x?}");
    // The TracingSpan under the native span names it; the named one names entry 1's id.
    assert_eq!(w[0].2, native.1);
    assert_ne!(w[3].2 & TRACING_ENTRY_ID_BIT, 0);
    assert_ne!(w[3].2, native.2, "entries 1 and 2 have ids of their own");
}

/// A compact entry still open at finish is written by the recorder then, as a TracingEntry.
#[test]
fn an_entry_open_at_finish_is_written_compact() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new()
        .sink(sink.clone())
        .spare_rings(0)
        .start()
        .unwrap();
    assert!(bridge::enter(&bridge::SpanName::new(""), 5, 105));
    let stats = rec.finish().unwrap();
    assert_eq!(written(&sink), [(K::TRACING_ENTRY, 0, 0, 5)]);
    assert_eq!(stats.slots.iter().map(|s| s.unclosed).sum::<u64>(), 1);
    bridge::exit(105);
}

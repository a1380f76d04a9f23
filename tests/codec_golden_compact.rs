//! The compact `tracing` kinds (issue 33): TracingEntryShort (221), TracingSpanPacked (222),
//! TracingEventPacked (223) and TracingCloseShort (224) as golden bytes computed by hand from
//! the kind table's comments, at their edge values; each read back as the full kind it stands
//! for (the typed decoder and `expand`); and a recording that uses them, read by our reader
//! into the same records as the same program recorded with the full kinds, and by trace-cmd.

use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::codec::kinds::kind_def;
use typhon_recorder::codec::records::*;
use typhon_recorder::codec::{Shape, TraceEventKind as K};
use typhon_recorder::{bridge, doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;

/// ts = 0x0102030405060708 as it appears on the wire.
const TS: i64 = 0x0102_0304_0506_0708;
const TSB: [u8; 8] = [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01];

fn head(size: u8, kind: u8, slot: u8) -> Vec<u8> {
    let mut v = vec![size, 0, kind, slot];
    v.extend_from_slice(&TSB);
    v
}

/// `r` encoded as its full kind, padded to 4 as a reader gets it.
fn full(r: &Record<'_>, slot: u8) -> Vec<u8> {
    let mut out = vec![0u8; r.encoded_len().next_multiple_of(4)];
    let n = r.write(&mut out, slot, TS).unwrap();
    out.truncate(n.next_multiple_of(4));
    out
}

#[test]
fn golden_tracing_entry_short() {
    let mut d = [0u8; 20];
    assert_eq!(
        write_tracing_entry_short(&mut d, 3, TS, 0x0A0B, 0x1122_3344),
        Ok(20)
    );
    let mut want = head(20, 221, 3);
    want.extend_from_slice(&[0x0B, 0x0A, 0, 0]);
    want.extend_from_slice(&[0x44, 0x33, 0x22, 0x11]);
    assert_eq!(d.to_vec(), want);
    let def = kind_def(K::TRACING_ENTRY_SHORT).unwrap();
    assert_eq!(
        (def.name, def.shape, def.fixed_size()),
        ("TracingEntryShort", Shape::Span, Some(20))
    );
    // 24 bytes on disk with the page's event word, where a TracingEntry takes 32.
    assert_eq!(TRACING_ENTRY_SHORT_SIZE.next_multiple_of(4) + 4, 24);
    let (h, r) = decode(&d).unwrap();
    assert_eq!(
        (h.kind, h.slot, h.timestamp),
        (K::TRACING_ENTRY_SHORT, 3, TS)
    );
    let r0 = Record::TracingEntry {
        duration_ns: 0x0A0B,
        key: 0x1122_3344,
    };
    assert_eq!(r, r0);
    assert_eq!(expand(&d).unwrap(), full(&r0, 3));
    assert_eq!(expand(&d).unwrap()[2], 226);
    let mut text = String::new();
    write_fields(&decode_fields(&d).unwrap(), &mut text).unwrap();
    assert_eq!(text, "duration_ns=2571 key=287454020");
    // The largest values: both u32::MAX, read as the full kind's i64 and u64.
    write_tracing_entry_short(&mut d, 3, TS, u32::MAX, u32::MAX).unwrap();
    assert_eq!(&d[12..], &[0xFF; 8]);
    assert_eq!(
        decode(&d).unwrap().1,
        Record::TracingEntry {
            duration_ns: i64::from(u32::MAX),
            key: u64::from(u32::MAX)
        }
    );
    assert!(write_tracing_entry_short(&mut [0u8; 19], 3, TS, 1, 1).is_err());
}

#[test]
fn golden_tracing_close_short() {
    let mut d = [0u8; 16];
    assert_eq!(write_tracing_close_short(&mut d, 2, TS, 0x0102), Ok(16));
    let mut want = head(16, 224, 2);
    want.extend_from_slice(&[0x02, 0x01, 0, 0]);
    assert_eq!(d.to_vec(), want);
    let r0 = Record::TracingClose { key: 0x0102 };
    assert_eq!(decode(&d).unwrap().1, r0);
    assert_eq!(expand(&d).unwrap(), full(&r0, 2));
    let def = kind_def(K::TRACING_CLOSE_SHORT).unwrap();
    assert_eq!(
        (def.name, def.shape, def.fixed_size()),
        ("TracingCloseShort", Shape::Instant, Some(16))
    );
    write_tracing_close_short(&mut d, 2, TS, u32::MAX).unwrap();
    assert_eq!(
        decode(&d).unwrap().1,
        Record::TracingClose {
            key: u64::from(u32::MAX)
        }
    );
}

/// A description packed: key 300 (0xAC 0x02), parent 298 (two before: 2), callsite 4, then
/// the values as they are.
#[test]
fn golden_tracing_span_packed() {
    let values = [0u8, 10, 5]; // field 0, tag 10 (str by id), id 5
    let mut d = [0u8; 32];
    let n = write_tracing_span_packed(&mut d, 1, TS, 300, 298, 4, &values).unwrap();
    assert_eq!(n, 19);
    let mut want = head(19, 222, 1);
    want.extend_from_slice(&[0xAC, 0x02, 2, 4, 0, 10, 5]);
    assert_eq!(d[..n].to_vec(), want);
    assert_eq!(n, tracing_span_packed_len(300, 298, 4, values.len()));
    let r0 = Record::TracingSpanValues {
        key: 300,
        parent_key: 298,
        callsite: 4,
        values: &values,
    };
    assert_eq!(decode(&d[..n]).unwrap().1, r0);
    assert_eq!(expand(&d[..n]).unwrap(), full(&r0, 1));
    // 24 on disk where the TracingSpanValues takes 40.
    assert_eq!(n.next_multiple_of(4) + 4, 24);
    assert_eq!(full(&r0, 1).len() + 4, 40);
    let mut text = String::new();
    write_fields(&decode_fields(&d[..n]).unwrap(), &mut text).unwrap();
    assert!(text.starts_with("packed="), "{text}");
}

/// The ids at their edges: a root, a key past 32 bits, a span named as its own parent, a
/// parent after its child, the largest key and callsite; each reads back as it was written.
#[test]
fn packed_ids_at_their_edges() {
    let cases: [(u64, u64, u32, &[u8]); 7] = [
        (9, 0, 4, &[9, 0, 4]),
        (1 << 40, 0, 4, &[0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 4]),
        (
            (1 << 40) + 1,
            1 << 40,
            4,
            &[0x81, 0x80, 0x80, 0x80, 0x80, 0x20, 1, 4],
        ),
        (9, 9, 1, &[9, 9, 1]),
        (
            9,
            10,
            1,
            &[
                9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 1,
            ],
        ),
        (
            u64::MAX,
            1,
            u32::MAX,
            &[
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, //
                0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, //
                0xFF, 0xFF, 0xFF, 0xFF, 0x0F,
            ],
        ),
        (
            u64::MAX,
            u64::MAX,
            0,
            &[
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0xFF, 0xFF, 0xFF, 0xFF,
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0,
            ],
        ),
    ];
    for (key, parent_key, callsite, ids) in cases {
        let mut d = [0u8; 64];
        let n = write_tracing_span_packed(&mut d, 1, TS, key, parent_key, callsite, &[]).unwrap();
        assert_eq!(&d[12..n], ids, "{key} {parent_key} {callsite}");
        let r0 = Record::TracingSpanValues {
            key,
            parent_key,
            callsite,
            values: &[],
        };
        assert_eq!(decode(&d[..n]).unwrap().1, r0);
        assert_eq!(expand(&d[..n]).unwrap(), full(&r0, 1));
        // The event's ids: span key then callsite, as varints.
        let n = write_tracing_event_packed(&mut d, 1, TS, key, callsite, &[7]).unwrap();
        let r0 = Record::TracingEventValues {
            span_key: key,
            callsite,
            values: &[7],
        };
        assert_eq!(decode(&d[..n]).unwrap().1, r0);
        assert_eq!(expand(&d[..n]).unwrap(), full(&r0, 1));
    }
}

#[test]
fn golden_tracing_event_packed() {
    let mut d = [0u8; 32];
    let n = write_tracing_event_packed(&mut d, 2, TS, 0, 200, &[1, 12, 6]).unwrap();
    let mut want = head(18, 223, 2);
    want.extend_from_slice(&[0, 0xC8, 0x01, 1, 12, 6]);
    assert_eq!(d[..n].to_vec(), want);
    assert_eq!(n, tracing_event_packed_len(0, 200, 3));
    let r0 = Record::TracingEventValues {
        span_key: 0,
        callsite: 200,
        values: &[1, 12, 6],
    };
    assert_eq!(decode(&d[..n]).unwrap().1, r0);
    assert_eq!(expand(&d[..n]).unwrap(), full(&r0, 2));
}

/// A packed record whose ids do not read (a varint cut by the record's end, a callsite past
/// u32) is an error to decode, never a panic, and is not expanded.
#[test]
fn bad_packed_ids_do_not_decode() {
    let mut d = [0u8; 32];
    // Key 300 then its parent's varint cut: 12 + 2 + the callsite's byte as a continuation.
    let n = write_tracing_span_packed(&mut d, 1, TS, 300, 298, 4, &[]).unwrap();
    d[n - 1] = 0x80;
    assert!(decode(&d[..n]).is_err());
    assert_eq!(expand(&d[..n]), None);
    // A callsite of 2^32.
    let mut rec = head(0, 223, 1);
    rec.extend_from_slice(&[0, 0x80, 0x80, 0x80, 0x80, 0x10]);
    rec[0] = rec.len() as u8;
    assert!(decode(&rec).is_err());
    assert_eq!(expand(&rec), None);
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-compact-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Keys past 32 bits, which a short kind cannot hold.
const BIG: u64 = 1 << 33;

/// What a `tracing` layer writes for two spans (one of a key past 32 bits), entries of each,
/// an event and closes; `builder` says which kinds the recorder writes.
fn record(path: &Path, disable: &[K]) {
    let mut b = RecorderBuilder::new().output(path);
    for &k in disable {
        b = b.disable(k);
    }
    let rec = b.start().unwrap();
    let c = Callsite {
        id: 77,
        level: 3,
        line: 5,
        name: "system",
        target: "compact",
        file: "x.rs",
        field_names: "name",
    };
    assert!(bridge::callsite(&c));
    let ev = Callsite {
        id: 78,
        name: "event",
        field_names: "message,n",
        ..c
    };
    assert!(bridge::callsite(&ev));
    let mut v = Vec::new();
    put_entry(&mut v, 0, Value::Str("physics"));
    let empty = bridge::SpanName::new("");
    for (key, parent) in [(5, 0), (6, 5), (BIG, 6), (BIG + 1, BIG)] {
        bridge::span_values(key, parent, 77, &v).unwrap();
        assert!(bridge::enter(&empty, key, 100 + key));
        let mut e = Vec::new();
        put_entry(&mut e, 0, Value::Str("stepped"));
        put_entry(&mut e, 1, Value::U64(key));
        bridge::event_values(key, 78, &e).unwrap();
        bridge::exit(100 + key);
        // Entered twice: its close is written (something came after its last exit).
        assert!(bridge::enter(&empty, key, 100 + key));
        bridge::exit(100 + key);
        bridge::event_values(0, 78, &e).unwrap();
        bridge::close(key);
    }
    rec.finish().unwrap();
}

/// Each record of the file as written: (kind, bytes).
fn raw(path: &Path) -> Vec<(u8, Vec<u8>)> {
    let f = TraceFile::open(path).unwrap();
    let mut out = Vec::new();
    for cpu in 0..f.cpus() {
        for r in f.stream_cpu(cpu) {
            let r = r.unwrap();
            out.push((r.data[2], r.data.clone()));
        }
    }
    out
}

/// The file as our reader hands it out, times left out (the two runs' differ): every
/// record's kind and decoded body, and the definitions and span names it did not resolve.
fn read(path: &Path) -> (Vec<String>, u64, u64) {
    let f = TraceFile::open(path).unwrap();
    let mut out = Vec::new();
    let mut recs = f.stream_records();
    for r in recs.by_ref() {
        let r = r.unwrap();
        let (h, body) = decode(&r.data).unwrap();
        let body = match body {
            Record::TracingSpan {
                span,
                key,
                tracing_id,
                name,
            } => format!(
                "TracingSpan key={key} tracing_id={tracing_id} name={name} parent={}",
                span.parent_span_id
            ),
            Record::ClockSync { .. } | Record::ThreadInfo { .. } => continue,
            b => format!("{b:?}"),
        };
        out.push(format!("{} {body}", h.kind));
    }
    let u = (recs.definitions().unresolved, recs.span_names().unresolved);
    (out, u.0, u.1)
}

/// The same program recorded with the compact kinds and with their full kinds (the compact
/// ones disabled): the compact file is smaller, uses the short kinds exactly where the keys
/// fit 32 bits, and reads as the same records; trace-cmd parses every record of it.
#[test]
fn compact_recording_reads_as_the_full_kinds() {
    let _g = doc_lock();
    let d = dir("same");
    let (a, b) = (d.join("compact.dat"), d.join("full.dat"));
    record(&a, &[]);
    let compact = [
        K::TRACING_ENTRY_SHORT,
        K::TRACING_SPAN_PACKED,
        K::TRACING_EVENT_PACKED,
        K::TRACING_CLOSE_SHORT,
    ];
    record(&b, &compact);
    let (ra, rb) = (raw(&a), raw(&b));
    let count = |r: &[(u8, Vec<u8>)], k: K| r.iter().filter(|x| x.0 == k.0).count();
    // Compact: 2 short entries a span of a small key, full ones past 32 bits; every
    // description and event packed; closes short for the small keys.
    assert_eq!(count(&ra, K::TRACING_ENTRY_SHORT), 4);
    assert_eq!(count(&ra, K::TRACING_ENTRY), 4);
    assert_eq!(count(&ra, K::TRACING_SPAN_PACKED), 4);
    assert_eq!(count(&ra, K::TRACING_EVENT_PACKED), 8);
    assert_eq!(count(&ra, K::TRACING_CLOSE_SHORT), 2);
    assert_eq!(count(&ra, K::TRACING_CLOSE), 2);
    for (k, r) in &ra {
        if *k == K::TRACING_ENTRY.0 {
            let Record::TracingEntry { key, .. } = decode(r).unwrap().1 else {
                unreachable!()
            };
            assert!(key >= BIG);
        }
    }
    for k in compact {
        assert_eq!(count(&rb, k), 0);
    }
    assert_eq!(count(&rb, K::TRACING_ENTRY), 8);
    assert_eq!(count(&rb, K::TRACING_SPAN_VALUES), 4);
    let bytes = |r: &[(u8, Vec<u8>)]| r.iter().map(|x| x.1.len() + 4).sum::<usize>();
    assert!(bytes(&ra) < bytes(&rb), "{} vs {}", bytes(&ra), bytes(&rb));
    let (got, want) = (read(&a), read(&b));
    assert_eq!(got, want);
    assert_eq!((got.1, got.2), (0, 0), "everything resolved");
    assert!(
        got.0.iter().any(|l| l.contains("name=system: physics")),
        "{got:?}"
    );

    match Command::new("trace-cmd").arg("report").arg(&a).output() {
        Err(e) if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") => {
            panic!("TYPHON_REQUIRE_INTEROP=1 but trace-cmd cannot run: {e}")
        }
        Err(e) => eprintln!("SKIPPED trace-cmd check: trace-cmd not run: {e}"),
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(!text.contains("FAILED TO PARSE"), "{text}");
            assert!(!text.contains("UNKNOWN EVENT"), "{text}");
            // Each line with its runs of spaces as one, as trace-cmd pads the event name.
            let lines: Vec<String> = text
                .lines()
                .filter(|l| !l.starts_with("cpus="))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            assert_eq!(lines.len(), ra.len(), "{text}");
            let with = |s: &str| lines.iter().filter(|l| l.contains(s)).count();
            assert_eq!(with(" TracingEntryShort: "), 4);
            assert_eq!(with(" TracingSpanPacked: "), 4);
            assert_eq!(with(" TracingEventPacked: "), 8);
            assert_eq!(with(" TracingCloseShort: "), 2);
            // The short kinds' numbers print as numbers; the packed ids as their bytes.
            assert_eq!(with(" TracingCloseShort: key=5"), 1, "{text}");
            assert_eq!(with(" TracingEntryShort: duration_ns="), 4, "{text}");
            assert_eq!(with(" TracingSpanPacked: packed_len="), 4, "{text}");
            // A root's description: key 5, parent 0, callsite 77 (0x4d), then its values
            // (field 0 a string of 7 bytes, met here first: inline).
            let first = " TracingSpanPacked: packed_len=13 packed=05 00 4d 00 08 07 70 68 79";
            assert_eq!(with(first), 1, "{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The live view's follower hands out a finished compact recording's records as the file
/// reader does: the full kinds, resolved the same (one shared path).
#[test]
fn the_follower_reads_compact_kinds_as_the_file_reader_does() {
    let _g = doc_lock();
    let d = dir("follow");
    let a = d.join("compact.dat");
    record(&a, &[]);
    let f = TraceFile::open(&a).unwrap();
    let want: Vec<Vec<u8>> = f.stream_records().map(|r| r.unwrap().data).collect();
    let mut follower = typhon_trace::follow::Follower::open(&a).unwrap();
    let mut got = Vec::new();
    for _ in 0..100 {
        let b = follower.poll(usize::MAX).unwrap();
        got.extend(b.records.into_iter().map(|r| r.data));
        if b.state == typhon_trace::follow::RecordingState::Finished && !got.is_empty() {
            break;
        }
    }
    assert_eq!(got.len(), want.len());
    let sorted = |mut v: Vec<Vec<u8>>| {
        v.sort();
        v
    };
    assert_eq!(sorted(got.clone()), sorted(want));
    assert!(got.iter().all(|r| !is_compact(K(r[2]))));
    assert!(got.iter().any(|r| r[2] == K::TRACING_SPAN_INFO.0));
    let _ = std::fs::remove_dir_all(&d);
}

/// An entry longer than a TracingEntryShort holds (2^32 ticks, or 2^32 ns: 1.4 to 4.3 s on
/// this kind of machine) is a full TracingEntry, its duration whole; a short one beside it is
/// short. The sleep is what makes the duration, no time is asserted but its lower bound.
#[test]
fn an_entry_past_32_bits_of_time_is_a_full_entry() {
    let _g = doc_lock();
    let d = dir("long");
    let path = d.join("long.dat");
    let clock = typhon_recorder::clock::Clock::new();
    let ticks = clock
        .ticks_within_ns(u64::from(u32::MAX))
        .min(u64::from(u32::MAX));
    let t = clock.raw();
    let long_ns = clock.to_ns(t + ticks) - clock.to_ns(t);
    let rec = RecorderBuilder::new().output(&path).start().unwrap();
    let empty = bridge::SpanName::new("");
    assert!(bridge::enter(&empty, 1, 101));
    bridge::exit(101);
    assert!(bridge::enter(&empty, 2, 102));
    std::thread::sleep(std::time::Duration::from_nanos(long_ns + 50_000_000));
    bridge::exit(102);
    rec.finish().unwrap();
    let r = raw(&path);
    let entries: Vec<(u8, i64, u64)> = r
        .iter()
        .filter_map(|(k, d)| match decode(d).ok()?.1 {
            Record::TracingEntry { duration_ns, key } => Some((*k, duration_ns, key)),
            _ => None,
        })
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!((entries[0].0, entries[0].2), (K::TRACING_ENTRY_SHORT.0, 1));
    assert_eq!((entries[1].0, entries[1].2), (K::TRACING_ENTRY.0, 2));
    assert!(entries[1].1 as u64 >= long_ns, "{entries:?}");
    assert!(entries[0].1 < entries[1].1);
    let _ = std::fs::remove_dir_all(&d);
}

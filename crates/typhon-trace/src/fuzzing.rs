//! Entry points shared by the `cargo fuzz` targets (`fuzz/`) and the stable-Rust bounded fuzz
//! harness in the normal test suite (`tests/fuzz_harness.rs`): each feeds arbitrary bytes to one
//! reader and walks everything it returns. The property is the same everywhere: readers never
//! panic, never read out of bounds, never loop forever; bad input yields errors. The exporter
//! must also keep its own promises on whatever file parses: slices nest, the JSON parses.
//!
//! ```
//! typhon_trace::fuzzing::page(&[0xff; 64]);
//! typhon_trace::fuzzing::tracedat(b"\x17\x08\x44tracing6".to_vec());
//! typhon_trace::fuzzing::record(&[12, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
//! assert_eq!(typhon_trace::fuzzing::export(b"not a file".to_vec()), None);
//! ```

use crate::kbuffer::{Endian, KBuffer, LongSize};
use crate::tracedat::TraceFile;
use typhon_recorder::codec::{celog, correlation, records};

/// Upper bound on events walked per page: a page of N bytes holds at most N/4 events, so more
/// means the reader loops.
fn max_events(len: usize) -> usize {
    len / 4 + 2
}

/// The kbuffer page reader, in every header layout and byte order: load, walk every event with
/// `next_event`, query every accessor, jump with `read_at_offset`, copy with `read_buffer`.
/// Returns the number of events seen.
pub fn page(data: &[u8]) -> usize {
    let mut seen = 0;
    for (ls, en) in [
        (LongSize::Eight, Endian::Little),
        (LongSize::Four, Endian::Little),
        (LongSize::Eight, Endian::Big),
    ] {
        let mut kb = KBuffer::new(ls, en);
        if kb.load_subbuffer(data).is_err() {
            continue;
        }
        let _ = (kb.missed_events(), kb.subbuffer_size(), kb.start_of_data());
        let _ = (kb.timestamp(), kb.error(), kb.subbuffer().map(<[u8]>::len));
        let mut n = 0;
        let mut ev = kb.read_event();
        while let Some(e) = ev {
            assert!(e.data_offset + e.data.len() <= data.len());
            let _ = (
                kb.event_size(),
                kb.curr_size(),
                kb.curr_offset(),
                kb.curr_index(),
            );
            n += 1;
            assert!(n <= max_events(data.len()), "the page walk does not end");
            ev = kb.next_event();
        }
        seen += n;
        // Offsets past, inside and before the data.
        for off in [
            0,
            4,
            16,
            17,
            data.len() as i32 / 2,
            data.len() as i32,
            -1,
            i32::MAX,
        ] {
            let _ = kb.read_at_offset(off);
        }
        let mut buf = vec![0u8; data.len().min(1 << 16)];
        let _ = kb.read_buffer(&mut buf);
        let _ = kb.read_buffer(&mut []);
    }
    seen
}

/// The trace.dat reader: parse, then read every accessor and iterate every record of every CPU
/// and the merged stream; each record's payload also goes through the record decoders. Returns
/// the number of records read, or `None` when parsing failed.
pub fn tracedat(data: Vec<u8>) -> Option<usize> {
    let bound = data.len() / 4 + 2;
    let tf = TraceFile::parse(data).ok()?;
    let _ = (
        tf.version(),
        tf.big_endian(),
        tf.long_size(),
        tf.page_size(),
    );
    let _ = (tf.header_page(), tf.page_header_size(), tf.header_event());
    let _ = (
        tf.formats().len(),
        tf.cmdlines().len(),
        tf.options().len(),
        tf.clock(),
    );
    if let Some(Ok(_meta)) = tf.typhon_meta() {}
    let mut n = 0;
    for cpu in 0..tf.cpus().min(1024) {
        let _ = tf.cpu_data(cpu);
        let _ = tf.pages(cpu).count();
        for r in tf.cpu_records(cpu) {
            n += 1;
            assert!(n <= bound, "cpu_records does not end");
            if let Ok(r) = r {
                let _ = tf.event_of(r.data);
                record(r.data);
            }
        }
    }
    let mut m = 0;
    for r in tf.records() {
        m += 1;
        assert!(m <= bound, "records() does not end");
        let _ = r;
    }
    Some(n)
}

/// The exporter on a file that parses: every track's slices nest, events are in time order,
/// both formats are written, and the Chrome JSON parses. Returns the number of events, or
/// `None` when parsing or reading failed.
pub fn export(data: Vec<u8>) -> Option<usize> {
    use crate::export::{Format, Phase, Timeline};
    let tf = TraceFile::parse(data).ok()?;
    let t = Timeline::build(&tf).ok()?;
    let mut open = vec![0usize; t.tracks.len()];
    for e in &t.events {
        let o = &mut open[e.track as usize];
        match e.phase {
            Phase::Begin => *o += 1,
            Phase::End => *o = o.checked_sub(1).expect("an End closes an open slice"),
            Phase::Instant | Phase::Lost(_) => {}
        }
    }
    assert!(open.iter().all(|&o| o == 0), "every slice ends");
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    t.write(Format::Perfetto, &mut std::io::sink())
        .expect("a sink takes it");
    let mut json = Vec::new();
    t.write(Format::Chrome, &mut json).expect("a Vec takes it");
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&json) {
        panic!("the Chrome export is not JSON: {e}");
    }
    Some(t.events.len())
}

/// The record decoders on one record: `records::decode`, `decode_fields` (and printing the
/// fields), the correlation codec on the payload, and the CeLog event decoder on the payload.
pub fn record(data: &[u8]) {
    let _ = records::decode(data);
    if let Ok(d) = records::decode_fields(data) {
        let mut s = String::new();
        let _ = records::write_fields(&d, &mut s);
        let _ = d.values().len();
    }
    let payload = data.get(12..).unwrap_or(&[]);
    let _ = correlation::decode(data);
    let _ = correlation::decode(payload);
    if let Ok((ev, used)) = celog::decode_event(data) {
        assert!(used <= data.len());
        let _ = ev.data.len();
    }
    if let Ok((_, used)) = celog::decode_event(payload) {
        assert!(used <= payload.len());
    }
}

//! Rotating segments restate each live slot's static names (SPEC §15, §16): a thread that
//! defined its names in the first segment still reads by name in every later segment read
//! alone, with no unresolved `name#N`.

use typhon_recorder::codec::records::{decode, Record};
use typhon_recorder::{doc_lock, RecorderBuilder};
use typhon_trace::tracedat::TraceFile;

#[test]
fn every_segment_resolves_the_static_names_its_slots_use() {
    let _g = doc_lock();
    let dir = std::env::temp_dir().join(format!("typhon-rotate-names-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("run.dat");
    let rec = RecorderBuilder::new()
        .output(&out)
        .page_size(4096)
        .rotate(64 << 10, 100)
        .start()
        .unwrap();
    // One thread: each round a static-named span and enough inline-named instants to fill
    // several pages, so that segments are cut while the names were defined long before.
    for round in 0..40u32 {
        drop(typhon_recorder::span_static("static-round"));
        for i in 0..200 {
            typhon_recorder::named_instant("filler", i);
        }
        if round % 8 == 7 {
            rec.drain();
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
    }
    rec.finish().unwrap();
    let segments = typhon_recorder::sink::segment_files(&out).unwrap();
    assert!(segments.len() >= 3, "several segments: {segments:?}");
    let mut total = 0;
    for s in &segments {
        let f = TraceFile::open_streaming(s).unwrap();
        for r in f.stream_records() {
            let r = r.unwrap();
            if let Ok((_, Record::NamedSpan { name, .. })) = decode(&r.data) {
                assert_eq!(name, "static-round", "{}: resolved, not an id", s.display());
                total += 1;
            }
        }
    }
    assert_eq!(total, 40, "every span in exactly one segment");
    std::fs::remove_dir_all(&dir).unwrap();
}

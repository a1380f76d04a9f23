//! The CeLog event decoder (`codec::celog::decode_event`) on arbitrary bytes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok((ev, used)) = typhon_recorder::codec::celog::decode_event(data) {
        assert!(used <= data.len());
        let _ = (ev.id, ev.timestamp, ev.flag, ev.cpu, ev.data.len());
    }
});

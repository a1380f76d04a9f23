//! The record decoders: `codec::records::decode`, `decode_fields` (+ printing), `correlation::decode`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    typhon_trace::fuzzing::record(data);
});

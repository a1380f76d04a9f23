//! The trace.dat reader, v6 and v7 (`.ci/verify` seeds both): `TraceFile::parse`, then every
//! record of every CPU and the merged stream; a file that parses also goes through the exporter.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if typhon_trace::fuzzing::tracedat(data.to_vec()).is_some() {
        typhon_trace::fuzzing::export(data.to_vec());
    }
});

//! The trace.dat reader: `TraceFile::parse`, then every record of every CPU and the merged stream.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    typhon_recorder::fuzzing::tracedat(data.to_vec());
});

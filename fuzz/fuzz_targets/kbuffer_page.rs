//! The kbuffer page reader on arbitrary sub-buffers (every layout, every accessor).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    typhon_trace::fuzzing::page(data);
});

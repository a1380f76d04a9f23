//! Python ctypes drives the shared library (tests/ffi_ctypes.py) from several Python threads —
//! the same ABI the C# P/Invoke binding in crates/typhon-ffi/csharp uses; the recording is checked with
//! the crate's reader. Skipped (with a message) without `python3`, unless
//! `TYPHON_REQUIRE_INTEROP=1`.

mod ffi_support;

use ffi_support::*;
use std::path::Path;
use std::process::Command;

#[test]
fn ctypes_host_records_from_python_threads() {
    if !available("python3", "running the ctypes host of the C ABI") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = library("libtyphon_ffi.so");
    let dir = scratch("ctypes-host");
    let trace = dir.join("ctypes-host.dat");
    let run = Command::new("python3")
        .arg(root.join("tests/ffi_ctypes.py"))
        .arg(&lib)
        .arg(&trace)
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "ffi_ctypes.py failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(stdout.contains(&format!("VERSION {}", env!("CARGO_PKG_VERSION"))));
    let stats = parse_stats(&stdout);
    let c = check_file(&trace);
    check_workers(&c, "py-worker-", 6, 300, &stats);
    // Per worker: NULL name, bad UTF-8, NULL out-pointer, a record and a span too large.
    assert_eq!(stats["refused"], 6 * 5);
    assert_eq!(
        stats["clamped"], 2,
        "the main thread's span and instant an hour ahead"
    );
    eprintln!(
        "ctypes host: {} records, slots with more than one thread: {}; stats {stats:?}",
        c.records,
        c.infos_per_slot.values().filter(|&&n| n > 1).count()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

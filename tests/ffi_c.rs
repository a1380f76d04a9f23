//! A C program (tests/c/ffi_host.c) records through include/typhon_recorder.h and the static
//! library from 12 pthreads in 3 rounds; the recording is checked with the crate's reader.
//! Skipped (with a message) without `cc`, unless `TYPHON_REQUIRE_INTEROP=1`.

mod ffi_support;

use ffi_support::*;
use std::path::Path;
use std::process::Command;

const ROUNDS: usize = 3;
const THREADS: usize = 4;
const EVENTS: usize = 500;

#[test]
fn c_host_records_from_pthreads() {
    if !available("cc", "compiling the C host of the C ABI") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = library("libtyphon_recorder.a");
    let dir = scratch("c-host");
    let exe = dir.join("ffi_host");
    let out = Command::new("cc")
        .args([
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
        ])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("tests/c/ffi_host.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s", "-o"])
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let trace = dir.join("c-host.dat");
    let run = Command::new(&exe)
        .arg(&trace)
        .output()
        .expect("run ffi_host");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "ffi_host failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(stdout.contains(&format!("VERSION {}", env!("CARGO_PKG_VERSION"))));
    assert!(stdout.contains("FAILURES 0"));
    let stats = parse_stats(&stdout);

    let c = check_file(&trace);
    check_workers(&c, "c-worker-", ROUNDS * THREADS, EVENTS, &stats);
    for n in 0..ROUNDS * THREADS {
        let t = &c.threads[&format!("c-worker-{n}")];
        // Per iteration: 2 spans, Instant, IngressReceived, CeLog, kind 200, EgressSent.
        let per_kind = |k: u8| t.kinds.get(&k).copied().unwrap_or(0);
        for k in [6u8, 236, 255, 200, 240] {
            assert_eq!(per_kind(k), EVENTS as u64, "kind {k} of c-worker-{n}");
        }
        assert_eq!(per_kind(77), 1, "one ThreadInfo");
    }
    assert!(c.threads.contains_key("c-main"));
    // Each worker refused one too-large record.
    assert_eq!(stats["refused"], (ROUNDS * THREADS) as u64);

    // Slot reuse: host threads that exited gave their slots back (their Rust thread-local
    // destructors ran at pthread exit), so 12 workers in 3 rounds of 4 took fewer than 12.
    let user_slots: std::collections::BTreeSet<u32> = c
        .threads
        .iter()
        .filter(|(n, _)| n.starts_with("c-worker-"))
        .flat_map(|(_, t)| t.slots.iter().copied())
        .collect();
    let reused = c.infos_per_slot.values().filter(|&&n| n > 1).count();
    eprintln!(
        "C host: {} records, {} worker slots for {} workers, {} slots reused; stats {stats:?}",
        c.records,
        user_slots.len(),
        ROUNDS * THREADS,
        reused
    );
    assert!(
        user_slots.len() < ROUNDS * THREADS && reused > 0,
        "slots were not reused after host threads exited: {user_slots:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

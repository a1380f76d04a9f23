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
    let dir = scratch("c-host");
    let exe = dir.join("ffi_host");
    compile_c(
        &root.join("tests/c/ffi_host.c"),
        &exe,
        &[
            "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
        ],
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
    assert_eq!(
        c.threads["c-main"].named,
        [
            (241, 3, "c-named".to_string()),
            (234, -4, "c-depth".to_string()),
            (234, 1.5f64.to_bits() as i64, "c-load".to_string()),
            (242, 2, "io".to_string()),
            (243, 2, "io".to_string())
        ]
    );
    // Each worker's refused writes (bad pointers, UTF-8, payload, sizes), each counted once.
    assert_eq!(stats["refused"], (ROUNDS * THREADS * 7) as u64);
    assert_eq!(stats["clamped"], 1, "c-main's instant an hour ahead");

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

/// The README's C example, taken from the README as it stands, compiles with the README's build
/// line (warnings as errors) and records what it says: 100 IngressReceived from the thread
/// "net-io", and 10 ticks of two spans on the main thread.
#[test]
fn the_readme_c_example_builds_and_records() {
    if !available("cc", "compiling the README's C example") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let start = readme.find("```c\n").expect("a C example in the README") + 5;
    let len = readme[start..].find("```").expect("its end");
    let src = &readme[start..start + len];
    assert!(
        src.contains("int main(void)"),
        "the host example, not a snippet"
    );
    let dir = scratch("readme-c");
    std::fs::write(dir.join("host.c"), src).unwrap();
    let exe = dir.join("host");
    // The README's build line: `cc -Iinclude host.c libtyphon_ffi.a -lpthread ...`.
    compile_c(
        &dir.join("host.c"),
        &exe,
        &["-std=c11", "-Wall", "-Wextra", "-Werror"],
    );
    let run = Command::new(&exe)
        .current_dir(&dir)
        .output()
        .expect("run it");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("attempted"), "{stdout}");
    let c = check_file(&dir.join("server.dat"));
    assert_eq!(c.threads["net-io"].kinds[&236], 100, "IngressReceived");
    let main_spans: usize = c
        .threads
        .iter()
        .filter(|(n, _)| n.as_str() != "net-io" && n.as_str() != "typhon-recorder")
        .map(|(_, t)| t.spans.len())
        .sum();
    assert_eq!(main_spans, 20, "10 ticks of two spans");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's ways of finding `libtyphon_ffi.so` at run time work: the README's C example
/// linked against the shared library starts with `-Wl,-rpath,'$ORIGIN'` and the `.so` beside
/// it, and without an rpath through `LD_LIBRARY_PATH`; with neither it cannot start (so the
/// two are what made it start).
#[test]
fn the_shared_library_is_found_by_rpath_or_ld_library_path() {
    if !available(
        "cc",
        "linking the README's C example against the shared library",
    ) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let start = readme.find("```c\n").expect("a C example in the README") + 5;
    let len = readme[start..].find("```").expect("its end");
    assert!(readme.contains("-Wl,-rpath,'$ORIGIN'") && readme.contains("LD_LIBRARY_PATH"));
    let dir = scratch("readme-so");
    std::fs::write(dir.join("host.c"), &readme[start..start + len]).unwrap();
    let so = library("libtyphon_ffi.so");
    let libdir = dir.join("lib");
    std::fs::create_dir_all(&libdir).unwrap();
    std::fs::copy(&so, dir.join("libtyphon_ffi.so")).unwrap();
    std::fs::copy(&so, libdir.join("libtyphon_ffi.so")).unwrap();
    let link = |exe: &str, extra: &[&str]| {
        let o = Command::new("cc")
            .args(["-std=c11", "-I"])
            .arg(root.join("include"))
            .arg(dir.join("host.c"))
            .arg("-L")
            .arg(&libdir)
            .args(extra)
            .args(["-ltyphon_ffi", "-lpthread", "-ldl", "-lm", "-o"])
            .arg(dir.join(exe))
            .output()
            .expect("run cc");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    link("with-rpath", &["-Wl,-rpath,$ORIGIN"]);
    link("plain", &[]);
    let run = |exe: &str, ld: Option<&Path>| {
        let mut c = Command::new(dir.join(exe));
        c.current_dir(&dir).env_remove("LD_LIBRARY_PATH");
        if let Some(p) = ld {
            c.env("LD_LIBRARY_PATH", p);
        }
        c.output().expect("run it")
    };
    for (exe, ld) in [("with-rpath", None), ("plain", Some(libdir.as_path()))] {
        let o = run(exe, ld);
        assert!(
            o.status.success(),
            "{exe}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let _ = std::fs::remove_file(dir.join("server.dat"));
    }
    let o = run("plain", None);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("libtyphon_ffi.so"),
        "without an rpath or LD_LIBRARY_PATH the loader cannot find it"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Window mode from C (tests/c/window_host.c): the size-prefixed config's refusals, an older
/// caller's smaller struct recording a plain file with nothing past its size read, a newer
/// caller's larger one (extra fields 0) recording windowed; a span trigger, `typhon_snapshot`,
/// a snapshot into a too-small buffer and `typhon_request_snapshot` each leave one complete
/// file, which holds every record written (the window is a minute), as our reader and
/// trace-cmd read it.
#[test]
fn c_host_snapshots_a_window() {
    if !available("cc", "compiling the C host of window mode") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch("c-window");
    let exe = dir.join("window_host");
    compile_c(
        &root.join("tests/c/window_host.c"),
        &exe,
        &["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"],
    );
    let snaps = dir.join("snapshots");
    std::fs::create_dir_all(&snaps).unwrap();
    let older = dir.join("older.dat");
    let run = Command::new(&exe)
        .arg(&snaps)
        .arg(&older)
        .output()
        .expect("run window_host");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "window_host failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(stdout.contains("FAILURES 0"), "{stdout}\n{stderr}");

    // The older caller's file: its instants, and no snapshot came of its garbage window.
    let old = check_file(&older);
    let want: Vec<(i32, i32)> = (0..100).map(|i| (8, i)).collect();
    assert_eq!(old.threads["c-main"].instants, want);

    // trigger + typhon_snapshot + the too-small buffer + the request.
    let files: Vec<_> = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(stdout.contains("SNAPSHOTS 4"));
    let kv = |k: &str| -> String {
        let l = stdout.lines().find(|l| l.starts_with("SNAPSHOT ")).unwrap();
        l.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")[..]).map(String::from))
            .unwrap_or_else(|| panic!("{k} in {l}"))
    };
    let path = std::path::PathBuf::from(kv("path"));
    assert!(files.contains(&path), "{path:?} among {files:?}");
    assert!(path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("window_host-"));
    for f in &files {
        let c = check_file(f);
        // Every snapshot holds all the window's instants: the window is a minute.
        let want: Vec<(i32, i32)> = (0..2000).map(|i| (7, i)).collect();
        assert_eq!(c.threads["c-main"].instants, want, "{}", f.display());
        check_trace_cmd(f, &c);
        if *f == path {
            assert_eq!(c.records, kv("records").parse::<u64>().unwrap());
            assert!(kv("from").parse::<u64>().unwrap() < kv("to").parse::<u64>().unwrap());
            let named = &c.threads["c-main"].named;
            assert!(named.contains(&(234, 42, "c-queue".into())), "{named:?}");
            assert!(
                named.contains(&(234, 0.25f64.to_bits() as i64, "c-load".into())),
                "{named:?}"
            );
            let spans = &c.threads["c-main"].spans;
            assert!(spans.iter().any(|s| s.2 == "stall"), "{spans:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

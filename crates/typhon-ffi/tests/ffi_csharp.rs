//! The C# binding (csharp/TyphonRecorder.cs), compiled with Mono's `mcs` (C# 7.2) and run under
//! `mono` with the shared library: tests/cs/ffi_host.cs records from the main thread, from 12
//! dedicated `Thread`s in 3 rounds of 4 (their slots reused) and from `ThreadPool` work items
//! while the GC collects; the recording is checked with the project's reader, `trace-cmd report`
//! and the exact per-slot accounting. The sample (csharp/Program.cs) is compiled and run too.
//! Skipped (with a message) without `mcs`/`mono`, unless `TYPHON_REQUIRE_INTEROP=1`.

mod ffi_support;

use ffi_support::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const ROUNDS: usize = 3;
const THREADS: usize = 4;
const EVENTS: usize = 500;
const POOL_ITEMS: i32 = 48;
const POOL_EVENTS: i32 = 400;
const POOL_ITEM_BASE: i32 = 1000;
const TICKS: u64 = 20;
const COMMANDS_PER_TICK: u32 = 5;

fn mono_available() -> bool {
    available("mcs", "compiling the C# binding") && available("mono", "running the C# host")
}

/// Compiles `sources` (relative to the crate) into `exe` with the flags the binding promises to
/// compile with (C# 7.2, unsafe, warnings as errors).
fn mcs(sources: &[&str], exe: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("mcs")
        .args(["-langversion:7.2", "-unsafe", "-warnaserror", "-nologo"])
        .arg(format!("-out:{}", exe.display()))
        .args(sources.iter().map(|s| root.join(s)))
        .output()
        .expect("run mcs");
    assert!(
        out.status.success(),
        "mcs {sources:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `exe` under mono, with the shared library found through LD_LIBRARY_PATH.
fn mono(exe: &Path, args: &[&Path], cwd: &Path) -> (String, std::time::Duration) {
    let lib: PathBuf = library("libtyphon_ffi.so");
    let t0 = Instant::now();
    let run = Command::new("mono")
        .arg("--debug")
        .arg(exe)
        .args(args)
        .current_dir(cwd)
        .env("LD_LIBRARY_PATH", lib.parent().unwrap())
        .output()
        .expect("run mono");
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        exe.display(),
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    (stdout, took)
}

fn line<'a>(stdout: &'a str, prefix: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} line in:\n{stdout}"))
}

#[test]
fn csharp_host_records_from_managed_threads() {
    if !mono_available() {
        return;
    }
    let t0 = Instant::now();
    let dir = scratch("csharp-host");
    let exe = dir.join("ffi_host.exe");
    mcs(&["csharp/TyphonRecorder.cs", "tests/cs/ffi_host.cs"], &exe);
    let trace = dir.join("csharp-host.dat");
    let (stdout, took) = mono(&exe, &[&trace], &dir);
    assert!(stdout.contains(&format!("VERSION {}", env!("CARGO_PKG_VERSION"))));
    assert!(stdout.contains("FAILURES 0"), "{stdout}");
    let stats = parse_stats(&stdout);

    let c = check_file(&trace);
    // Dedicated threads: every Instant once, spans nested, the file's accounting, the stats.
    check_workers(&c, "cs-worker-", ROUNDS * THREADS, EVENTS, &stats);
    check_slot_accounting(&c);
    for n in 0..ROUNDS * THREADS {
        let name = format!("cs-worker-{n}");
        let t = &c.threads[&name];
        let per_kind = |k: u8| t.kinds.get(&k).copied().unwrap_or(0);
        // Per iteration: Instant, IngressReceived, CeLog, kind 200, EgressSent (+ 2 spans).
        for k in [6u8, 236, 255, 200, 240] {
            assert_eq!(per_kind(k), EVENTS as u64, "kind {k} of {name}");
        }
        assert_eq!(per_kind(77), 1, "one ThreadInfo for {name}");
        assert_eq!(t.thread_kind.as_deref(), Some("Worker"));
        // Each traced span carries its command's causal id.
        for (i, (span_name, hi, lo)) in t.traced.iter().enumerate() {
            assert_eq!(span_name, "apply");
            let want = typhon_recorder::command_causal_id(n as u32, i as u32, i as u16);
            assert_eq!((*hi, *lo), want, "{name} traced span {i}");
        }
        // The pinned stackalloc payloads arrived intact, in order (padded with zeros to the
        // record's 4-byte alignment).
        let want: Vec<Vec<u8>> = (0..EVENTS)
            .map(|i| vec![n as u8, i as u8, (i >> 8) as u8, 0])
            .collect();
        assert!(t.custom == want, "kind 200 payloads of {name}");
    }
    // Per worker: bad UTF-8, a TickStart payload, 8192-byte record, 5000-byte span name, CeLog
    // id 90, a NULL name through Native.
    assert_eq!(stats["refused"], (ROUNDS * THREADS * 6) as u64);
    assert_eq!(stats["clamped"], 1, "cs-main's instant far ahead");
    assert_eq!(
        stats["filtered"], 1,
        "the CeLog event outside the enabled zones"
    );
    assert_eq!(stats["no_slot"], 0);

    // Slot reuse: the dedicated threads that exited gave their slots back.
    let worker_slots: BTreeSet<u32> = c
        .threads
        .iter()
        .filter(|(n, _)| n.starts_with("cs-worker-"))
        .flat_map(|(_, t)| t.slots.iter().copied())
        .collect();
    let reused = c.infos_per_slot.values().filter(|&&n| n > 1).count();
    assert!(
        worker_slots.len() <= THREADS && reused > 0,
        "{} slots for {} threads, at most {THREADS} at once: {worker_slots:?}",
        worker_slots.len(),
        ROUNDS * THREADS
    );

    // ThreadPool items: every (item, i) Instant exactly once across the pool threads, with its
    // payload, each thread named once with the Pool kind; the GC ran meanwhile.
    let pool: Vec<_> = c
        .threads
        .iter()
        .filter(|(n, _)| n.starts_with("cs-pool-"))
        .collect();
    assert!(!pool.is_empty(), "pool threads recorded");
    let mut got: Vec<(i32, i32)> = Vec::new();
    let mut payloads: Vec<Vec<u8>> = Vec::new();
    for (name, t) in &pool {
        assert_eq!(t.thread_kind.as_deref(), Some("Pool"), "{name}");
        assert_eq!(t.kinds.get(&77), Some(&1), "{name}: one ThreadInfo");
        got.extend(t.instants.iter().copied());
        payloads.extend(t.custom.iter().cloned());
        assert!(t.spans.iter().all(|s| s.2 == "work" && s.1 == 0));
    }
    got.sort_unstable();
    let want: Vec<(i32, i32)> = (0..POOL_ITEMS)
        .flat_map(|k| (0..POOL_EVENTS).map(move |i| (POOL_ITEM_BASE + k, i)))
        .collect();
    assert_eq!(got, want, "pool items' instants");
    payloads.sort_unstable();
    let mut want: Vec<Vec<u8>> = (0..POOL_ITEMS)
        .flat_map(|k| (0..POOL_EVENTS).map(move |i| vec![0xCC, k as u8, i as u8, (i >> 8) as u8]))
        .collect();
    want.sort_unstable();
    assert!(
        payloads == want,
        "pool items' payloads (managed arrays pinned per call)"
    );
    let gc = line(&stdout, "GC ");
    let gen0: u64 = gc
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("gen0="))
        .and_then(|v| v.parse().ok())
        .expect("gen0=");
    assert!(gen0 >= 10, "the GC collected while recording: {gc}");
    assert!(gc.contains("hot_path_bytes=0"), "{gc}");
    assert!(
        gc.contains(&format!("scope_errors={}", ROUNDS * THREADS * (EVENTS - 1))),
        "{gc}"
    );

    // The main thread: ticks, phases, the correlation chain, CeLog.
    let main = &c.threads["cs-main"];
    assert_eq!(main.thread_kind.as_deref(), Some("Main"));
    let k = |kind: u8| main.kinds.get(&kind).copied().unwrap_or(0);
    let commands = TICKS * u64::from(COMMANDS_PER_TICK);
    assert_eq!((k(0), k(1), k(2), k(3)), (TICKS, TICKS, TICKS, TICKS));
    assert_eq!((k(236), k(237), k(238)), (commands, commands, 1));
    assert_eq!((k(239), k(240)), (commands, TICKS));
    assert_eq!(k(255), 2, "two CeLog events recorded, one filtered");
    assert_eq!(main.instants, vec![(-1, -1)]);
    // The named instant, and the named phase of every tick, by name.
    let mut named = vec![
        (241u8, 5i64, "cs-named".to_string()),
        (234, -4, "cs-depth".to_string()),
        (234, 1.5f64.to_bits() as i64, "cs-load".to_string()),
    ];
    // The 300 string names through the binding's cache, twice each.
    for i in 0..600 {
        named.push((241, i, format!("n{}", i % 300)));
    }
    for _ in 0..TICKS {
        named.push((242, 2, "ai".into()));
        named.push((243, 2, "ai".into()));
    }
    assert_eq!(main.named, named);
    let mut seq = 0u16;
    for tick in 0..TICKS as u32 {
        for _ in 0..COMMANDS_PER_TICK {
            let (name, hi, lo) = &main.traced[seq as usize];
            assert_eq!(name, "apply-command");
            assert_eq!((*hi, *lo), typhon_recorder::command_causal_id(7, tick, seq));
            seq += 1;
        }
    }
    assert_eq!(main.traced.len(), commands as usize);

    let trace_cmd = check_trace_cmd(&trace, &c);
    eprintln!(
        "C# host: {} | {} | {} records in {} slots ({} dedicated-thread slots for {} threads, {} slots reused, {} pool threads); trace-cmd {}; mono {:.2} s, whole test {:.2} s\n  {}",
        line(&stdout, "THREADS "),
        gc,
        c.records,
        c.records_per_slot.len(),
        worker_slots.len(),
        ROUNDS * THREADS,
        reused,
        pool.len(),
        if trace_cmd { "agrees" } else { "skipped" },
        took.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        line(&stdout, "STATS "),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sample the README points to (csharp/Program.cs) compiles with the binding and records
/// what it says: 100 IngressReceived/Admitted from "net-io", 10 ticks of a span with 10 traced
/// commands each on "sim-main".
#[test]
fn the_csharp_sample_builds_and_records() {
    if !mono_available() {
        return;
    }
    let dir = scratch("csharp-sample");
    let exe = dir.join("sample.exe");
    mcs(&["csharp/TyphonRecorder.cs", "csharp/Program.cs"], &exe);
    let (stdout, _) = mono(&exe, &[], &dir);
    assert!(stdout.contains("missed 0"), "{stdout}");
    let c = check_file(&dir.join("typhon-server.dat"));
    check_slot_accounting(&c);
    assert_eq!(c.threads["net-io"].kinds[&236], 100);
    assert_eq!(c.threads["net-io"].kinds[&237], 100);
    let main = &c.threads["sim-main"];
    assert_eq!(main.kinds[&0], 10, "ticks");
    assert_eq!(main.traced.len(), 100, "traced commands");
    assert_eq!(main.spans.len(), 110);
    assert_eq!(main.kinds[&255], 10, "CeLog");
    check_trace_cmd(&dir.join("typhon-server.dat"), &c);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Window mode from C# (tests/cs/window_host.cs): the size-prefixed config through `Native`
/// (bad sizes refused, an older caller's smaller struct records a plain file), then
/// `Start(RecorderOptions)` with a window, `Snapshot()` and `RequestSnapshot()`; every snapshot
/// holds every record written (the window is a minute) as our reader and trace-cmd read it,
/// and `CounterAt` and `RequestSnapshot` allocate nothing.
#[test]
fn csharp_host_snapshots_a_window() {
    if !mono_available() {
        return;
    }
    let dir = scratch("csharp-window");
    let exe = dir.join("window_host.exe");
    mcs(
        &["csharp/TyphonRecorder.cs", "tests/cs/window_host.cs"],
        &exe,
    );
    let snaps = dir.join("snapshots");
    std::fs::create_dir_all(&snaps).unwrap();
    let older = dir.join("older.dat");
    let (stdout, _) = mono(&exe, &[&snaps, &older], &dir);
    assert!(stdout.contains("FAILURES 0"), "{stdout}");
    assert!(
        line(&stdout, "ALLOC ").contains("counter_at=0 request_snapshot=0"),
        "{stdout}"
    );

    let old = check_file(&older);
    let want: Vec<(i32, i32)> = (0..100).map(|i| (8, i)).collect();
    assert_eq!(old.threads["cs-main"].instants, want);

    let snap = line(&stdout, "SNAPSHOT ");
    let kv = |k: &str| -> String {
        snap.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")[..]).map(String::from))
            .unwrap_or_else(|| panic!("{k} in {snap}"))
    };
    let path = PathBuf::from(kv("path"));
    let files: Vec<PathBuf> = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // Snapshot(), the request, and the second request unless the first was still in flight.
    assert!(
        (2..=3).contains(&files.len()) && files.contains(&path),
        "{files:?}"
    );
    for f in &files {
        let c = check_file(f);
        let want: Vec<(i32, i32)> = (0..2000).map(|i| (7, i)).collect();
        assert_eq!(c.threads["cs-main"].instants, want, "{}", f.display());
        check_trace_cmd(f, &c);
        if *f == path {
            assert_eq!(c.records, kv("records").parse::<u64>().unwrap());
            assert!(kv("from").parse::<u64>().unwrap() < kv("to").parse::<u64>().unwrap());
            let named = &c.threads["cs-main"].named;
            assert!(named.contains(&(234, 42, "cs-queue".into())), "{named:?}");
            assert!(
                named.contains(&(234, 0.25f64.to_bits() as i64, "cs-load".into())),
                "{named:?}"
            );
            assert_eq!(named.iter().filter(|n| n.2 == "cs-queue").count(), 1001);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

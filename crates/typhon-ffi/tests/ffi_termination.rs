//! `typhon_finish_on_termination` in a C host (tests/c/term_host.c): writer pthreads record
//! numbered instants without end; SIGTERM, SIGINT or `exit(3)` then leave a complete trace.dat
//! (no `OUT.parts/`) holding every record written before the host announced its counts, and
//! the host ends as it would have (killed by the signal, exit code 3). Skipped (with a message)
//! without `cc`, unless `TYPHON_REQUIRE_INTEROP=1`.

mod ffi_support;

use ffi_support::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use typhon_recorder::codec::records::{decode, Record};
use typhon_trace::tracedat::TraceFile;

const WRITERS: usize = 3;

fn host() -> Option<PathBuf> {
    if !available("cc", "compiling the C host of typhon_finish_on_termination") {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = scratch("term-host-bin").join("term_host");
    compile_c(
        &root.join("tests/c/term_host.c"),
        &exe,
        &["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread"],
    );
    Some(exe)
}

/// Runs the host (`host OUT signal|exit`), sends `signal` once it announced its counts; its
/// status and the counts.
fn run(mut host: Command, out: &Path, signal: Option<i32>) -> (std::process::ExitStatus, Vec<u64>) {
    let mode = if signal.is_some() { "signal" } else { "exit" };
    let mut child = host
        .arg(out)
        .arg(mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let counts: Vec<u64> = line
        .strip_prefix("WRITTEN ")
        .unwrap_or_else(|| panic!("no counts: {line:?}"))
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    if let Some(sig) = signal {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
    }
    // Bounded: a host that never ends fails the test, naming its threads, instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st, counts);
        }
        if std::time::Instant::now() > deadline {
            let threads = std::fs::read_dir(format!("/proc/{}/task", child.id()))
                .map(|d| {
                    d.flatten()
                        .map(|t| {
                            let f = |n: &str| {
                                std::fs::read_to_string(t.path().join(n)).unwrap_or_default()
                            };
                            format!("{} ({})", f("comm").trim(), f("wchan").trim())
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
            panic!("{mode}: the host had not ended after 120 s; its threads: {threads}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// OUT is complete; each writer's records are 0..k with k at least its announced count, the
/// main thread's 100 are there, nothing was missed.
fn check_complete(out: &Path, counts: &[u64]) {
    let parts = PathBuf::from(format!("{}.parts", out.display()));
    assert!(!parts.exists(), "{} is left", parts.display());
    let tf = TraceFile::open_streaming(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    let mut seqs = vec![Vec::new(); WRITERS];
    let (mut main, mut missed) = (0, 0);
    for r in tf.stream_records() {
        let r = r.unwrap();
        missed += r.missed_before.unwrap_or(0);
        if let Ok((_, Record::Instant { name_id, payload })) = decode(&r.data) {
            match name_id {
                99 => main += 1,
                t => seqs[t as usize].push(payload as u32 as u64),
            }
        }
    }
    assert_eq!((main, missed), (100, 0));
    for (t, s) in seqs.iter_mut().enumerate() {
        s.sort();
        assert!(
            s.len() as u64 >= counts[t],
            "writer {t}: {} < {}",
            s.len(),
            counts[t]
        );
        assert!(
            s.iter().enumerate().all(|(i, &q)| i as u64 == q),
            "writer {t}: a gap or a duplicate"
        );
    }
}

/// SIGTERM, SIGINT and exit(3), each in a fresh run of `host()`, in `dir`.
fn each_ending(dir: &Path, host: impl Fn() -> Command) {
    for (name, signal) in [("sigterm", Some(15)), ("sigint", Some(2)), ("exit", None)] {
        let out = dir.join(format!("{name}.dat"));
        let (status, counts) = run(host(), &out, signal);
        match signal {
            Some(sig) => assert_eq!(status.signal(), Some(sig), "{name}: {status}"),
            None => assert_eq!(status.code(), Some(3), "{name}: {status}"),
        }
        check_complete(&out, &counts);
    }
}

#[test]
fn a_c_host_signalled_or_exiting_leaves_a_complete_file() {
    let Some(exe) = host() else {
        return;
    };
    let dir = scratch("term-host");
    each_ending(&dir, || Command::new(&exe));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same through the C# binding under mono (whose runtime has signal handlers of its own).
#[test]
fn a_csharp_host_signalled_or_exiting_leaves_a_complete_file() {
    if !available("mcs", "compiling the C# binding") || !available("mono", "running the C# host") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch("term-cs-host");
    let exe = dir.join("term_host.exe");
    let out = Command::new("mcs")
        .args(["-langversion:7.2", "-unsafe", "-warnaserror", "-nologo"])
        .arg(format!("-out:{}", exe.display()))
        .arg(root.join("csharp/TyphonRecorder.cs"))
        .arg(root.join("tests/cs/term_host.cs"))
        .output()
        .expect("run mcs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lib = library("libtyphon_ffi.so");
    each_ending(&dir, || {
        let mut c = Command::new("mono");
        c.arg(&exe).env("LD_LIBRARY_PATH", lib.parent().unwrap());
        c
    });
    let _ = std::fs::remove_dir_all(&dir);
}

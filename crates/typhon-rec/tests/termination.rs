//! `RecorderBuilder::finish_on_termination` in real processes: a child recording under load is
//! sent SIGTERM or SIGINT, or calls `std::process::exit`, or returns from `main` with its
//! recorder leaked; each time OUT is a complete trace.dat (no `OUT.parts/`) holding every record
//! the child wrote before the point it announced, and the child ends as it would have without
//! the recorder (killed by the signal, exit code 3, or the program's own handler run).

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use typhon_recorder::codec::records::{decode, Record};
use typhon_recorder::RecorderBuilder;
use typhon_trace::tracedat::TraceFile;

const CHILD: &str = "TYPHON_TERM_CHILD";
const MODE: &str = "TYPHON_TERM_MODE";
const WRITERS: usize = 3;
/// The name id of the main thread's instants (the writers use 0..WRITERS).
const MAIN_ID: i32 = 99;
const MAIN_RECORDS: i32 = 100;

static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn program_handler(_: libc::c_int) {
    HANDLED.store(true, Ordering::SeqCst);
}

/// The child: WRITERS threads write numbered instants without end (each waits for a drain every
/// 1024, so no ring overflows and no record is missed), the main thread writes its own; once
/// every writer is past 20 000 it prints `WRITTEN p0 p1 p2`, each writer's count at that point
/// (every record below it was complete before the line was printed). Then, by TYPHON_TERM_MODE:
/// `signal` waits to be signalled, `exit` calls `std::process::exit(3)`, `return` leaks the
/// recorder and returns (the test harness then returns from `main`), `handler` is `signal` with
/// a SIGTERM handler of the program's installed before `start`, which must run, and `ignored`
/// is `signal` with SIGINT ignored before `start`.
#[test]
fn term_child() {
    let Some(out) = std::env::var_os(CHILD) else {
        return;
    };
    let mode = std::env::var(MODE).unwrap();
    if mode == "handler" {
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            libc::signal(
                libc::SIGTERM,
                program_handler as *const () as libc::sighandler_t,
            )
        };
    }
    if mode == "ignored" {
        // SAFETY: SIG_IGN for SIGINT, as a shell gives a background job.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    }
    let rec = RecorderBuilder::new()
        .output(&out)
        .finish_on_termination()
        .start()
        .unwrap();
    let progress: &'static [AtomicU64; WRITERS] =
        Box::leak(Box::new([const { AtomicU64::new(0) }; WRITERS]));
    for (t, p) in progress.iter().enumerate() {
        std::thread::spawn(move || {
            for seq in 0u32.. {
                typhon_recorder::instant(t as i32, seq as i32);
                // Release: the main thread's Acquire load of the count sees the write complete.
                p.store(u64::from(seq) + 1, Ordering::Release);
                if seq % 1024 == 1023 {
                    typhon_recorder::probe::drain_installed();
                }
            }
        });
    }
    for k in 0..MAIN_RECORDS {
        typhon_recorder::instant(MAIN_ID, k);
    }
    let t0 = Instant::now();
    while progress.iter().any(|p| p.load(Ordering::Acquire) < 20_000) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the writers stalled"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let counts: Vec<String> = progress
        .iter()
        .map(|p| p.load(Ordering::Acquire).to_string())
        .collect();
    {
        use std::io::Write;
        let mut o = std::io::stdout().lock();
        writeln!(o, "WRITTEN {}", counts.join(" ")).unwrap();
        o.flush().unwrap();
    }
    match mode.as_str() {
        "exit" => std::process::exit(3),
        "return" => std::mem::forget(rec),
        _ => {
            let t0 = Instant::now();
            while !HANDLED.load(Ordering::SeqCst) {
                assert!(t0.elapsed() < Duration::from_secs(120), "never signalled");
                std::thread::sleep(Duration::from_millis(1));
            }
            // The program's handler ran after the recording was finished for it: the file is
            // complete already, and the handle's finish says so.
            assert!(!parts_of(Path::new(&out)).exists());
            let stats = rec.finish().unwrap();
            assert_eq!(stats.total_missed(), 0);
            println!("HANDLER-RAN");
        }
    }
}

fn parts_of(out: &Path) -> std::path::PathBuf {
    let mut p = out.as_os_str().to_owned();
    p.push(".parts");
    p.into()
}

/// Runs the child in `mode`, sends `signal` (if any) once it has announced its counts, and
/// returns its exit status, the counts and its whole stdout.
fn run(
    out: &Path,
    mode: &str,
    signal: Option<libc::c_int>,
) -> (std::process::ExitStatus, Vec<u64>, String) {
    run_with(out, mode, signal, |_| {})
}

/// [`run`], with `before(&mut child)` called just before the signal is sent.
fn run_with(
    out: &Path,
    mode: &str,
    signal: Option<libc::c_int>,
    before: impl FnOnce(&mut std::process::Child),
) -> (std::process::ExitStatus, Vec<u64>, String) {
    let mut child = test_child(
        "term_child",
        &[(CHILD, out.as_os_str()), (MODE, mode.as_ref())],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let counts = loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let o = child.wait_with_output().unwrap();
            panic!(
                "the child ended before its counts ({}): {seen}\n{}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        seen.push_str(&line);
        // The harness's "test term_child ... " may start the line.
        if let Some((_, c)) = line.split_once("WRITTEN ") {
            break c
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect::<Vec<u64>>();
        }
    };
    before(&mut child);
    if let Some(sig) = signal {
        // SAFETY: kill(2) of our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    seen.push_str(&rest);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    (o.status, counts, seen)
}

/// OUT is complete, and holds for each writer the records 0..k (no gap, none twice) with k at
/// least its announced count, and all of the main thread's; nothing was missed.
fn check_complete(out: &Path, counts: &[u64]) {
    assert!(
        !parts_of(out).exists(),
        "{} is left: the recording was not finished",
        parts_of(out).display()
    );
    let tf = TraceFile::open_streaming(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    let mut seqs: Vec<Vec<u64>> = vec![Vec::new(); WRITERS];
    let mut main = Vec::new();
    let (mut slot0, mut missed) = (0, 0);
    for r in tf.stream_records() {
        let r = r.unwrap();
        slot0 += u64::from(r.cpu == 0);
        missed += r.missed_before.unwrap_or(0);
        if let Ok((_, Record::Instant { name_id, payload })) = decode(&r.data) {
            match name_id {
                MAIN_ID => main.push(payload),
                t => seqs[t as usize].push(payload as u32 as u64),
            }
        }
    }
    assert_eq!(missed, 0, "no ring overflowed");
    assert!(slot0 >= 2, "slot 0, the recorder's own stream, is there");
    main.sort();
    assert_eq!(main, (0..MAIN_RECORDS).collect::<Vec<_>>());
    for (t, s) in seqs.iter_mut().enumerate() {
        s.sort();
        assert!(
            s.len() as u64 >= counts[t],
            "writer {t}: {} records, {} were written before the announcement",
            s.len(),
            counts[t]
        );
        assert!(
            s.iter().enumerate().all(|(i, &q)| i as u64 == q),
            "writer {t}: a gap or a duplicate"
        );
    }
}

fn signalled(sig: libc::c_int, name: &str) {
    let dir = tmp(name);
    let out = dir.join("t.dat");
    let (status, counts, _) = run(&out, "signal", Some(sig));
    assert_eq!(status.signal(), Some(sig), "killed by the signal: {status}");
    check_complete(&out, &counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_finishes_the_file_and_the_process_dies_of_it() {
    signalled(libc::SIGTERM, "term-sigterm");
}

#[test]
fn sigint_finishes_the_file_and_the_process_dies_of_it() {
    signalled(libc::SIGINT, "term-sigint");
}

#[test]
fn process_exit_finishes_the_file_and_keeps_the_exit_code() {
    let dir = tmp("term-exit");
    let out = dir.join("t.dat");
    let (status, counts, _) = run(&out, "exit", None);
    assert_eq!(status.code(), Some(3), "{status}");
    check_complete(&out, &counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn returning_from_main_with_the_recorder_leaked_finishes_the_file() {
    let dir = tmp("term-return");
    let out = dir.join("t.dat");
    let (status, counts, _) = run(&out, "return", None);
    assert!(status.success(), "{status}");
    check_complete(&out, &counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A SIGTERM handler the program installed before `start` runs after the finish (the previous
/// disposition restored and the signal raised again); the program lives on, and its own
/// `finish()` gets the final counters.
#[test]
fn a_handler_installed_before_runs_after_the_finish() {
    let dir = tmp("term-handler");
    let out = dir.join("t.dat");
    let (status, counts, stdout) = run(&out, "handler", Some(libc::SIGTERM));
    assert!(status.success(), "{status}: {stdout}");
    assert!(stdout.contains("HANDLER-RAN"), "{stdout}");
    check_complete(&out, &counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A signal the process ignored when the recorder started stays ignored: SIGINT neither ends
/// the process nor finishes the recording; SIGTERM then does both.
#[test]
fn an_ignored_signal_stays_ignored() {
    let dir = tmp("term-ignored");
    let out = dir.join("t.dat");
    let (status, counts, _) = run_with(&out, "ignored", Some(libc::SIGTERM), |child| {
        // SAFETY: kill(2) of our own child, not yet reaped.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        std::thread::sleep(Duration::from_millis(300));
        let ended = child.try_wait().unwrap();
        assert!(ended.is_none(), "SIGINT ended the child: {ended:?}");
        assert!(parts_of(&out).exists(), "SIGINT finished the recording");
    });
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
    check_complete(&out, &counts);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `typhon-rec demo` interrupted by Ctrl-C (SIGINT) or SIGTERM mid-recording: the file is
/// complete and readable, the demo says so, and it dies of the signal.
#[test]
fn an_interrupted_demo_leaves_a_complete_file() {
    let dir = tmp("term-demo");
    for (name, sig) in [("sigint", libc::SIGINT), ("sigterm", libc::SIGTERM)] {
        let out = dir.join(format!("{name}.dat"));
        let child = std::process::Command::new(BIN)
            .args(["demo", "--duration", "600", "-o"])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Recording: the parts directory is there; let a few flush cycles go to disk.
        let t0 = Instant::now();
        while !parts_of(&out).exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "the demo never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill(2) of our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), Some(sig), "{name}: {}: {err}", o.status);
        let said = format!("{} is complete", out.display());
        assert!(err.contains(&said), "{name}: {err}");
        assert!(!parts_of(&out).exists(), "{name}");
        // Readable to its end; the demo's own threads wrote into it.
        let recs = records(&out);
        assert!(
            recs.iter().any(|r| r.0 > 0),
            "{name}: no records of the demo's threads"
        );
        let n = recs.len();
        assert!(
            err.contains(&format!("{n} records written")),
            "{name}: {n} records: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

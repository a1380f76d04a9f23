//! Helpers shared by the file tests: scratch directories, reading a trace.dat, running the
//! CLI, and small tmpfs mounts for full-disk cases.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use typhon_recorder::codec::TraceEventKind as K;
use typhon_trace::tracedat::TraceFile;

pub const BIN: &str = env!("CARGO_BIN_EXE_typhon-rec");

pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 4 KiB page of `n` records of slot `slot`: record `j` at time
/// `slot * 1_000_000 + k * 1000 + j + 1`, its payload 20 bytes of `slot` (a kind trace-cmd knows).
pub fn test_page(slot: u8, k: u64, n: u64) -> Vec<u8> {
    let mut w = typhon_recorder::page::PageWriter::new(4096).unwrap();
    for j in 0..n {
        w.try_push(u64::from(slot) * 1_000_000 + k * 1000 + j + 1, &[slot; 20])
            .unwrap();
    }
    w.finish().to_vec()
}

/// The (slot, time) of every record of `n` [`test_page`]s of 5 records for each `(slot, n)`,
/// sorted.
pub fn test_page_records(slots: &[(u8, u64)]) -> Vec<(u32, u64)> {
    let mut v: Vec<(u32, u64)> = slots
        .iter()
        .flat_map(|&(slot, n)| {
            (0..n).flat_map(move |k| {
                (0..5).map(move |j| {
                    (
                        u32::from(slot),
                        u64::from(slot) * 1_000_000 + k * 1000 + j + 1,
                    )
                })
            })
        })
        .collect();
    v.sort();
    v
}

/// The (cpu, time) of every record of a trace.dat, sorted.
pub fn sorted_records(out: &Path) -> Vec<(u32, u64)> {
    let mut v: Vec<(u32, u64)> = records(out).iter().map(|r| (r.0, r.1)).collect();
    v.sort();
    v
}

/// Runs the test `test` of this test binary alone, with `env` set: the child half of a test
/// that kills or crashes a recording process.
pub fn run_test_child(test: &str, env: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    test_child(test, env).output().unwrap()
}

/// The command of [`run_test_child`], for a test that talks to the child while it runs.
pub fn test_child(test: &str, env: &[(&str, &std::ffi::OsStr)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Every record of a trace.dat, checked (an error fails the test).
pub fn records(file: &Path) -> Vec<(u32, u64, u8)> {
    // Streaming: it reads compressed (v7 zstd) files too.
    let tf = TraceFile::open_streaming(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    tf.stream_records()
        .map(|r| {
            let r = r.unwrap();
            (r.cpu, r.ts, r.data[2])
        })
        .collect()
}

pub fn instants(file: &Path) -> usize {
    records(file).iter().filter(|r| r.2 == K::INSTANT.0).count()
}

pub fn cli(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs the CLI with string arguments: (success, stdout, stderr). Output must be UTF-8 (our
/// tools escape what a file holds), so invalid UTF-8 fails the test.
pub fn rec(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.success(),
        String::from_utf8(o.stdout).expect("stdout is UTF-8"),
        String::from_utf8(o.stderr).expect("stderr is UTF-8"),
    )
}

pub fn cli_recover(out: &Path) -> (bool, String, String) {
    cli(&["recover".as_ref(), out.as_os_str()])
}

/// A small tmpfs mounted for one test, unmounted when dropped.
pub struct Tmpfs(pub PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Mounts a tmpfs of `mib` MiB, or says why not and returns None (a failure when
/// TYPHON_REQUIRE_INTEROP=1).
pub fn tmpfs(name: &str, mib: u64) -> Option<Tmpfs> {
    let d = tmp(name);
    let r = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
        .arg(&d)
        .output();
    match r {
        Ok(o) if o.status.success() => Some(Tmpfs(d)),
        r => {
            let _ = std::fs::remove_dir(&d);
            let why = match r {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                Err(e) => e.to_string(),
            };
            if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") {
                panic!("cannot mount a tmpfs ({why}) but TYPHON_REQUIRE_INTEROP=1");
            }
            eprintln!("SKIPPED {name}: cannot mount a tmpfs here ({why})");
            None
        }
    }
}

pub fn free_bytes(p: &Path) -> u64 {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: an all-zero statvfs is a valid value; statvfs(3) fills it for a NUL-terminated
    // path that lives for the call.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
    s.f_bavail as u64 * s.f_frsize as u64
}

/// Fills the file system of `dir` until `leave` bytes are free; returns the filler.
pub fn fill(dir: &Path, leave: u64) -> PathBuf {
    use std::io::Write;
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while free_bytes(dir) > leave {
        if f.write_all(&chunk).is_err() {
            break;
        }
    }
    f.sync_all().unwrap();
    filler
}

/// Peak RSS in KiB of `typhon-rec ARGS` (its own, through `wait4`), and whether it succeeded.
// The child is reaped with wait4, which (unlike `Child::wait`) reports its peak RSS.
#[allow(clippy::zombie_processes)]
pub fn peak_rss_kib(args: &[&std::ffi::OsStr]) -> (i64, bool, String) {
    let child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped (the `Child` was consumed without waiting),
    // and both pointers are to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid, "wait4");
    assert!(!err.contains("panicked"), "{err}");
    (
        ru.ru_maxrss,
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        err,
    )
}

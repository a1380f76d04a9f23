//! Readers use bounded resources on any input (SPEC §10): hostile trace.dat v7 files cost every
//! reading command memory in proportion to their size, and `export` is O(n log n) in records
//! whatever their mix. Bounds are ratios between a small and a large input, never absolutes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use typhon_recorder::codec::correlation::CorrelationInstant;
use typhon_recorder::codec::records::{Record, SpanExt};
use typhon_recorder::page::{PageWriter, PushError};
use typhon_trace::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages, TraceFile};

mod common;
use common::peak_rss_kib;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-bounds-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A v6 recording of `recs` (page time, record) on slot 1.
fn recording<'a>(recs: impl IntoIterator<Item = (u64, Record<'a>)>) -> Vec<u8> {
    let mut w = PageWriter::new(4096).unwrap();
    let mut pages = Vec::new();
    let mut b = [0u8; 256];
    for (ts, r) in recs {
        let n = r.write(&mut b, 1, ts as i64).unwrap();
        match w.try_push(ts, &b[..n]) {
            Ok(_) => {}
            Err(PushError::Full) => {
                pages.extend_from_slice(w.finish());
                w.try_push(ts, &b[..n]).unwrap();
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    if !w.is_empty() {
        pages.extend_from_slice(w.finish());
    }
    let mut meta = FileMeta::new(4096);
    meta.slots.push(SlotMeta {
        slot: 1,
        name: "worker".into(),
        ..SlotMeta::default()
    });
    let mut out = std::io::Cursor::new(Vec::new());
    write_tracedat(&mut out, &meta, &mut [SlotPages::from_bytes(1, &pages)]).unwrap();
    out.into_inner()
}

fn small_v7() -> Vec<u8> {
    let v6 = recording((0..50).map(|i| {
        (
            1000 + i,
            Record::Instant {
                name_id: 1,
                payload: 2,
            },
        )
    }));
    typhon_trace::fuzzing::v6_to_v7(&v6).unwrap()
}

/// Offset of the first options section, from a v7 file header ("none\0\0" compression).
const OPTIONS_PTR: usize = 24;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `v7` (whose options section is its last) with that section nested `levels` deep: each
/// level is an options section holding one unknown option whose data is the next level, then
/// DONE pointing at that next level, inside itself. The innermost is the real options section.
fn nested_chain(v7: &[u8], levels: usize) -> Vec<u8> {
    let at = u64_at(v7, OPTIONS_PTR) as usize;
    let inner = &v7[at..];
    let mut out = v7[..at].to_vec();
    let inner_len = inner.len();
    // Level k (1-based, outermost 1) starts at `at + 22 (k-1)` and is
    // 22 bytes of header + option header, level k+1, 14 bytes of DONE.
    let len_of = |k: usize| inner_len + 36 * (levels - k);
    for k in 1..levels {
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&((len_of(k) - 16) as u64).to_le_bytes());
        out.extend_from_slice(&0x7777u16.to_le_bytes());
        out.extend_from_slice(&(len_of(k + 1) as u32).to_le_bytes());
    }
    out.extend_from_slice(inner);
    for k in (1..levels).rev() {
        let next = (at + 22 * k) as u64;
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&next.to_le_bytes());
    }
    out
}

/// `v7` with its options chain's DONE pointing at `target` (`None`: the section itself).
fn chain_to(v7: &[u8], target: Option<u64>) -> Vec<u8> {
    let mut v = v7.to_vec();
    let at = u64_at(&v, OPTIONS_PTR);
    let n = v.len();
    // The last 8 bytes are the DONE option's next offset.
    v[n - 8..].copy_from_slice(&target.unwrap_or(at).to_le_bytes());
    v
}

/// `v7` whose CPUCOUNT option says `cpus` and whose one CPU table entry has id `cpus - 1`.
fn many_cpus(v7: &[u8], cpus: u32) -> Vec<u8> {
    let mut v = v7.to_vec();
    let at = u64_at(&v, OPTIONS_PTR) as usize + 16;
    let mut p = at;
    loop {
        let id = u16::from_le_bytes([v[p], v[p + 1]]);
        let n = u32::from_le_bytes(v[p + 2..p + 6].try_into().unwrap()) as usize;
        let d = p + 6;
        match id {
            0 => break,
            8 => v[d..d + 4].copy_from_slice(&cpus.to_le_bytes()),
            3 => {
                // u64 offset, "" name, clock, u32 page size, u32 count, then the entries.
                let clock_end = d + 9 + v[d + 9..].iter().position(|&b| b == 0).unwrap() + 1;
                let entry = clock_end + 8;
                v[entry..entry + 4].copy_from_slice(&(cpus - 1).to_le_bytes());
            }
            _ => {}
        }
        p = d + n;
    }
    v
}

/// A zstd v7 file of page size 64 whose slot 1 holds `chunks` empty chunks, each declaring
/// 64 KiB: 8 bytes of file for 1024 damaged pages (none decompresses).
fn tiny_page_chunks(chunks: u32) -> Vec<u8> {
    use typhon_recorder::tracedat::{write_tracedat_v7, Compression};
    let data: Vec<u8> = (0..chunks)
        .flat_map(|_| [0u32.to_le_bytes(), (64u32 << 10).to_le_bytes()].concat())
        .collect();
    let mut meta = FileMeta::new(4096);
    meta.slots.push(SlotMeta {
        slot: 1,
        name: "worker".into(),
        ..SlotMeta::default()
    });
    let mut out = std::io::Cursor::new(Vec::new());
    let sp = SlotPages::chunked(1, data.len() as u64, chunks, &data[..]);
    write_tracedat_v7(
        &mut out,
        &meta,
        Compression::Zstd { level: 1 },
        0,
        &mut [sp],
    )
    .unwrap();
    let mut v = out.into_inner();
    // The writer takes 4096 at least, the reader 64: the file header's page size, and the
    // BUFFER option's (the last options section: its one CPU entry, then DONE, end the file).
    let buffer_ps = v.len() - 14 - 20 - 4 - 4;
    for at in [14, buffer_ps] {
        assert_eq!(v[at..at + 4], 4096u32.to_le_bytes());
        v[at..at + 4].copy_from_slice(&64u32.to_le_bytes());
    }
    v
}

/// For every reading command: the peak RSS on `large` stays within `factor` × that on `small`.
fn every_command_bounded(dir: &Path, small: &[u8], large: &[u8], factor: f64, what: &str) {
    let sp = dir.join("small.dat");
    let lp = dir.join("large.dat");
    std::fs::write(&sp, small).unwrap();
    std::fs::write(&lp, large).unwrap();
    for cmd in ["report", "stats", "export", "pages"] {
        let run = |p: &Path| {
            let out = dir.join(format!("{cmd}-out"));
            let mut a: Vec<&std::ffi::OsStr> = vec![cmd.as_ref(), p.as_os_str()];
            if cmd == "pages" {
                a.extend(["--slot", "1", "--out"].map(std::ffi::OsStr::new));
            }
            if cmd == "export" {
                a.push("--out".as_ref());
            }
            if cmd == "pages" || cmd == "export" {
                a.push(out.as_os_str());
                let r = peak_rss_kib(&a);
                let _ = std::fs::remove_dir_all(&out);
                let _ = std::fs::remove_file(&out);
                return r;
            }
            peak_rss_kib(&a)
        };
        let (s, _, _) = run(&sp);
        let (l, _, err) = run(&lp);
        assert!(
            (l as f64) < factor * s as f64,
            "{what}: `typhon-rec {cmd}` peaked at {l} KiB on {} bytes, {s} KiB on {} bytes ({err})",
            large.len(),
            small.len()
        );
    }
}

#[test]
fn a_nested_v7_options_chain_is_refused_in_bounded_memory() {
    let dir = scratch("nested");
    let v7 = small_v7();
    assert!(TraceFile::parse(v7.clone()).is_ok());
    // 250 and 4000 levels: about 9 KiB and 144 KiB of file. Read level by level, the large
    // one copied some 290 MB of option data.
    let small = nested_chain(&v7, 250);
    let large = nested_chain(&v7, 4000);
    // Twice the small run's peak: the large file itself is a small part of a process's RSS.
    every_command_bounded(&dir, &small, &large, 2.0, "nested options chain");
    let e = TraceFile::parse(large.clone()).unwrap_err().to_string();
    assert!(e.contains("options chain"), "{e}");
    let (_, ok, err) = peak_rss_kib(&["stats".as_ref(), dir.join("large.dat").as_os_str()]);
    assert!(
        !ok && err.contains("large.dat") && err.contains("options chain"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn v7_options_chains_that_repeat_or_point_back_are_refused() {
    let v7 = small_v7();
    let at = u64_at(&v7, OPTIONS_PTR);
    for (what, target) in [
        ("itself", None),
        ("the file header", Some(8)),
        ("a metadata section", Some(at - 64)),
    ] {
        let e = TraceFile::parse(chain_to(&v7, target))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("options chain") || e.contains("overlaps"),
            "{what}: {e}"
        );
    }
    // Two metadata sections on the same bytes: each would be parsed again.
    let mut v = v7.clone();
    let p = at as usize + 16; // the first option: HEADER_INFO's offset
    assert_eq!(u16::from_le_bytes([v[p], v[p + 1]]), 16);
    let header_info = v[p + 6..p + 14].to_vec();
    let q = p + 14; // FTRACE_EVENTS
    assert_eq!(u16::from_le_bytes([v[q], v[q + 1]]), 17);
    v[q + 6..q + 14].copy_from_slice(&header_info);
    let e = TraceFile::parse(v).unwrap_err().to_string();
    assert!(
        e.contains("section id 16, expected 17") || e.contains("overlaps"),
        "{e}"
    );
}

#[test]
fn a_declared_cpu_count_costs_nothing_per_cpu() {
    let dir = scratch("cpus");
    let v7 = small_v7();
    let small = many_cpus(&v7, 2);
    let large = many_cpus(&v7, 65536);
    let f = TraceFile::parse(large.clone()).unwrap();
    assert_eq!(f.cpus(), 65536);
    assert_eq!(f.records().count(), 50);
    // 65536 CPUs held a 16-byte entry each and a page walker each while reading (some 10 MB
    // for a file of a few KiB).
    every_command_bounded(&dir, &small, &large, 1.5, "CPUCOUNT 65536");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fastest of three exports of `file` (to a sink).
fn export_time(file: &[u8]) -> Duration {
    let f = TraceFile::parse(file.to_vec()).unwrap();
    (0..3)
        .map(|_| {
            let t = thread_cpu();
            let s = typhon_trace::export::export(
                &f,
                typhon_trace::export::Format::Perfetto,
                &mut std::io::sink(),
            )
            .unwrap();
            assert!(s.records > 0);
            thread_cpu() - t
        })
        .min()
        .unwrap()
}

/// This thread's CPU time (the export runs on it): unlike the wall clock, it does not grow
/// while the thread waits for a core, so the ratio below measures the work, not the
/// machine's load (wall time failed the flows bound once beside the other heavy tests).
fn thread_cpu() -> Duration {
    // SAFETY: an all-zero timespec is a valid value of the plain C struct, and the pointer
    // is to a live local.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above; CLOCK_THREAD_CPUTIME_ID is always available on Linux.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Export time of 8n records against n: an O(n log n) export takes about 10 times as long;
/// an O(n²) one 64 times. The bound leaves a factor of two over n log n for noise.
fn export_scales(what: &str, make: impl Fn(u64) -> Vec<u8>) {
    let (n, k) = (5_000, 8);
    let small = make(n);
    let large = make(k * n);
    let _ = export_time(&small); // warm up
                                 // The fastest of a few runs of each: on a shared machine one run can be held up many times
                                 // over, and the fastest is the one closest to the work itself.
    let fastest = |d: &[u8]| (0..3).map(|_| export_time(d)).min().unwrap();
    let (s, l) = (fastest(&small), fastest(&large));
    let ratio = l.as_secs_f64() / s.as_secs_f64().max(1e-6);
    let bound = 2.0 * k as f64 * ((k * n) as f64).ln() / (n as f64).ln();
    eprintln!(
        "{what}: {k}x the records took {ratio:.1}x the time ({s:?} -> {l:?}), bound {bound:.1}"
    );
    assert!(
        ratio < bound,
        "{what}: {k}x the records took {ratio:.1}x the time ({s:?} -> {l:?}), bound {bound:.1}"
    );
}

fn span(dur: u64, id: u64) -> Record<'static> {
    Record::NamedSpan {
        span: SpanExt {
            duration_ns: dur as i64,
            span_id: (1 << 56) | id,
            parent_span_id: 0,
        },
        name: "s",
    }
}

#[test]
fn export_is_n_log_n_for_spans_that_overlap_without_nesting() {
    // Span i starts at 10 i and ends after all the spans before it: none nests in another,
    // so each needs its own overlap lane.
    export_scales("overlapping spans", |n| {
        recording((0..n).map(|i| (10 * i + 1, span(10 * n, i))))
    });
}

#[test]
fn export_is_n_log_n_for_phase_ends_without_starts() {
    // Half the records open phase 1 and never close it; the other half end phase 2, which
    // never started.
    export_scales("phase ends without starts", |n| {
        recording((0..n).map(|i| {
            let r = if i < n / 2 {
                Record::PhaseStart { phase: 1 }
            } else {
                Record::PhaseEnd { phase: 2 }
            };
            (i + 1, r)
        }))
    });
}

#[test]
fn export_is_n_log_n_for_many_flows() {
    export_scales("flows", |n| {
        recording((0..n).map(|i| {
            let (session, seq) = ((i / 3 / 65536) as u32, ((i / 3) % 65536) as u16);
            let c = match i % 3 {
                0 => CorrelationInstant::IngressReceived {
                    session,
                    seq,
                    wire_idx: 0,
                    bytes: 8,
                },
                1 => CorrelationInstant::IngressAdmitted {
                    session,
                    seq,
                    wire_idx: 0,
                    drain_tick: 1,
                },
                _ => CorrelationInstant::CommandConsumed {
                    session,
                    seq,
                    sys_idx: 0,
                },
            };
            (i + 1, Record::Correlation(c))
        }))
    });
}

/// `typhon-rec ARGS` run to its end or for at most `limit`: (peak RSS in KiB, success,
/// stderr), or `None` if it was still running at the limit (it is then killed).
// Reaped with wait4 (WNOHANG, polled), which reports the child's peak RSS.
#[allow(clippy::zombie_processes)]
fn run_for(args: &[&std::ffi::OsStr], limit: Duration) -> Option<(i64, bool, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        err
    });
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not yet reaped (`child` is never waited on), and both
        // pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "wait4");
        if start.elapsed() > limit {
            let _ = child.kill();
            // SAFETY: as above; this reaps the killed child.
            unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = reader.join().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    Some((
        ru.ru_maxrss,
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        err,
    ))
}

/// Peak RSS in KiB of `typhon-rec ARGS` on its own, success and stderr: the highest VmHWM of
/// the running program, read every millisecond. `wait4`'s ru_maxrss (as [`peak_rss_kib`]) also
/// counts the memory the child had before its exec, which for a spawn from this test process
/// is the test process's own peak; the exec'd program's VmHWM is its own alone. A peak reached
/// in its last millisecond can be missed: these bounds are on memory that grows as it reads.
fn own_peak_rss_kib(args: &[&std::ffi::OsStr]) -> (i64, bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        err
    });
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let ok = loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            let hwm = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st.success();
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let err = reader.join().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    (peak, ok, err)
}

/// A FIFO, a device, a directory and a socket given to a reading command are refused at once,
/// with the path and what it is named, in the memory a small regular file costs. (Before:
/// `std::fs::read` read /dev/zero until memory ran out and blocked on a FIFO forever.)
#[test]
fn non_regular_inputs_are_refused_at_once_naming_the_path() {
    use std::ffi::OsStr;
    let dir = scratch("nonregular");
    let fifo = dir.join("fifo.dat");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let sock = dir.join("sock.dat");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let subdir = dir.join("dir.dat");
    std::fs::create_dir(&subdir).unwrap();
    let regular = dir.join("small.dat");
    std::fs::write(&regular, small_v7()).unwrap();
    // A symlink to a regular file is read like the file.
    let link = dir.join("link.dat");
    std::os::unix::fs::symlink(&regular, &link).unwrap();
    let mut inputs: Vec<(PathBuf, &str)> = vec![
        (fifo, "FIFO"),
        ("/dev/zero".into(), "character device"),
        (subdir, "directory"),
        (sock, "socket"),
    ];
    match std::fs::read_dir("/dev").ok().and_then(|d| {
        d.flatten().map(|e| e.path()).find(|p| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device())
        })
    }) {
        Some(p) => inputs.push((p, "block device")),
        None => eprintln!("no block device in /dev: that kind is not tried"),
    }
    let limit = Duration::from_secs(20);
    for cmd in ["report", "stats", "export", "pages"] {
        let out = dir.join(format!("{cmd}-out"));
        let args = |p: &Path| {
            let mut a: Vec<std::ffi::OsString> = vec![cmd.into(), p.into()];
            if cmd == "pages" {
                a.extend(["--slot", "1"].map(Into::into));
            }
            if cmd == "pages" || cmd == "export" {
                a.push("--out".into());
                a.push(out.clone().into());
            }
            a
        };
        let run = |p: &Path| {
            let a = args(p);
            let a: Vec<&OsStr> = a.iter().map(|s| s.as_os_str()).collect();
            let r = run_for(&a, limit);
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_file(&out);
            r
        };
        let (base, ok, err) = run(&link).expect("a small file is read at once");
        assert!(ok, "`{cmd}` on a symlink to a regular file: {err}");
        for (p, kind) in &inputs {
            let Some((rss, ok, err)) = run(p) else {
                panic!(
                    "`typhon-rec {cmd} {}` still ran after {limit:?}",
                    p.display()
                );
            };
            assert!(!ok, "`{cmd} {}` succeeded", p.display());
            assert!(
                err.contains(&p.display().to_string()) && err.contains(kind),
                "`{cmd} {}`: {err}",
                p.display()
            );
            assert!(
                (rss as f64) < 1.5 * base as f64,
                "`{cmd} {}` peaked at {rss} KiB, {base} KiB on a small file",
                p.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pages --out` writes only into a real directory and never through a link: an --out that is
/// a symlink or not a directory is refused, and a link planted under a page's name is not
/// followed (the page files are created exclusively). (Before: create_dir_all and fs::write
/// followed both, writing pages wherever the links pointed.)
#[test]
fn pages_never_write_through_a_planted_link() {
    let dir = scratch("pages-links");
    let dat = dir.join("rec.dat");
    std::fs::write(&dat, small_v7()).unwrap();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    let pages = |out: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
            .args([
                "pages".as_ref(),
                dat.as_os_str(),
                "--slot".as_ref(),
                "1".as_ref(),
            ])
            .arg("--out")
            .arg(out)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // --out a symlink to a directory.
    let link = dir.join("out-link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let (ok, err) = pages(&link);
    assert!(
        !ok && err.contains("out-link") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // --out a regular file.
    let (ok, err) = pages(&victim);
    assert!(
        !ok && err.contains("victim") && err.contains("not a directory"),
        "{err}"
    );
    // A link planted where the first page goes.
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("slot-001-page-000000.raw")).unwrap();
    let (ok, err) = pages(&out);
    assert!(!ok && err.contains("slot-001-page-000000.raw"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    // A fresh directory (and its parents) is made and filled.
    let fresh = dir.join("a/b/pages");
    let (ok, err) = pages(&fresh);
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `export` streams (SPEC §10): its peak RSS on a recording 4 times larger stays within 1.5
/// times that on the small one, in both formats (holding the file, or every event, grows
/// with it: about 4.6 times the file before).
#[test]
fn export_memory_does_not_grow_with_the_file() {
    let dir = scratch("export-streams");
    // Frames of nested spans, each written at its end as a recording does, with instants.
    let make = |n: u64| {
        recording((0..n).flat_map(|i| {
            let t = 100 * i + 1;
            [
                (t + 40, span(20, 3 * i)),
                (
                    t + 50,
                    Record::Instant {
                        name_id: 1,
                        payload: i as _,
                    },
                ),
                (t + 90, span(60, 3 * i + 1)),
            ]
        }))
    };
    let small = make(30_000);
    let large = make(120_000);
    let sp = dir.join("small.dat");
    let lp = dir.join("large.dat");
    std::fs::write(&sp, &small).unwrap();
    std::fs::write(&lp, &large).unwrap();
    for format in ["perfetto", "chrome"] {
        let run = |p: &Path| {
            let out = dir.join(format!("out.{format}"));
            let a: Vec<&std::ffi::OsStr> = vec![
                "export".as_ref(),
                p.as_os_str(),
                "--format".as_ref(),
                format.as_ref(),
                "--out".as_ref(),
                out.as_os_str(),
            ];
            let r = peak_rss_kib(&a);
            assert!(r.1, "export {format} failed: {}", r.2);
            let _ = std::fs::remove_file(&out);
            r.0
        };
        let (s, l) = (run(&sp), run(&lp));
        assert!(
            (l as f64) < 1.5 * s as f64,
            "`typhon-rec export --format {format}` peaked at {l} KiB on {} bytes, {s} KiB on {} bytes",
            large.len(),
            small.len()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Damaged pages cost `export` nothing each (SPEC §10): a run of them on a slot is one loss
/// mark carrying the run's page count. A file of 2^19 damaged pages of 64 bytes (4 KiB of
/// chunk headers) peaks within 1.5 times a file of 2^14, in both formats, and writes the same
/// one mark. (Before: one mark per page, all held in the export's window until the end: the
/// issue's 1 MB file of 134 M pages took 12.8 GiB.)
#[test]
fn damaged_pages_cost_the_export_one_mark_per_run() {
    let dir = scratch("damage-export");
    let (small, large) = (tiny_page_chunks(16), tiny_page_chunks(512));
    let sp = dir.join("small.dat");
    let lp = dir.join("large.dat");
    std::fs::write(&sp, &small).unwrap();
    std::fs::write(&lp, &large).unwrap();
    for format in ["perfetto", "chrome"] {
        let out = dir.join(format!("out.{format}"));
        let run = |p: &Path| {
            let a: Vec<&std::ffi::OsStr> = vec![
                "export".as_ref(),
                p.as_os_str(),
                "--format".as_ref(),
                format.as_ref(),
                "--out".as_ref(),
                out.as_os_str(),
            ];
            let (rss, ok, err) = own_peak_rss_kib(&a);
            // Damage is a loss: the export is written and says so, with status 1.
            assert!(!ok && err.contains("damaged pages skipped"), "{err}");
            (rss, std::fs::read(&out).unwrap(), err)
        };
        let ((s, s_out, _), (l, l_out, err)) = (run(&sp), run(&lp));
        assert!(
            (l as f64) < 1.5 * s as f64,
            "`export --format {format}` peaked at {l} KiB on {} damaged pages, {s} KiB on {}",
            512 * 1024,
            16 * 1024
        );
        assert!(err.contains("524288 damaged pages skipped"), "{err}");
        assert!(l_out.len() < s_out.len() + 64, "{}", l_out.len());
        if format == "chrome" {
            let v: serde_json::Value = serde_json::from_slice(&l_out).unwrap();
            let marks: Vec<&serde_json::Value> = v["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["name"] == "events lost")
                .collect();
            assert_eq!(marks.len(), 1, "{marks:?}");
            assert_eq!(marks[0]["args"]["not_counted"], true);
            assert_eq!(marks[0]["args"]["damaged_pages"], 512 * 1024);
        }
    }
    let f = TraceFile::parse(small).unwrap();
    let t = typhon_trace::export::Timeline::build(&f).unwrap();
    assert_eq!(t.damaged_pages, 16 * 1024);
    let phases: Vec<_> = t.events.iter().map(|e| e.phase).collect();
    assert!(
        phases == [typhon_trace::export::Phase::Damaged(16 * 1024)],
        "{} events, the first {:?}",
        phases.len(),
        phases.first()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: the decompressed chunks held while reading a compressed file are bounded in all,
/// whatever its CPU count. 128 CPUs of one 2 MiB chunk each, read in time order (a page of each
/// in turn), held 256 MiB where 16 of them held 32 MiB.
#[test]
fn many_cpus_of_large_chunks_read_in_bounded_memory() {
    use typhon_trace::fuzzing::shapes::many_cpu_chunks;
    let dir = scratch("chunks");
    let small = many_cpu_chunks(16, 512, 1);
    let large = many_cpu_chunks(128, 512, 1);
    every_command_bounded(&dir, &small, &large, 2.0, "128 CPUs of 2 MiB chunks");
    // Counted by a child: read here, the chunks would grow this process, and with it the
    // peak of every child it forks (a child's peak starts from its parent's size).
    let (ok, out, err) = common::cli(&[
        "stats".as_ref(),
        "--json".as_ref(),
        dir.join("large.dat").as_os_str(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["records"].as_u64(),
        Some(128 * 512),
        "every record, merged"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report` prints one line for a run of damaged pages of a slot, with the count, in plain
/// and JSON form: the output of 2^19 damaged pages is that of 2^14. (Before: one
/// `[DAMAGED PAGE]` line a page, 3.7 GB for the 1 MB file.)
#[test]
fn report_prints_a_run_of_damaged_pages_as_one_line() {
    let dir = scratch("damage-report");
    let lp = dir.join("large.dat");
    std::fs::write(&lp, tiny_page_chunks(512)).unwrap();
    for json in [false, true] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_typhon-rec"));
        c.arg("report").arg(&lp);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("524288 damaged pages"),
            "{err}"
        );
        let out = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{}", &out[..out.len().min(2000)]);
        if json {
            let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(
                (v["damaged_pages"].as_u64(), v["slot"].as_u64()),
                (Some(524288), Some(1))
            );
            assert!(
                v["first"]
                    .as_str()
                    .unwrap()
                    .contains("1024 pages from offset 4096"),
                "{v}"
            );
            let end: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
            assert_eq!(end["losses"]["damaged_pages"], 524288, "{end}");
        } else {
            assert!(
                lines[0].starts_with("[DAMAGED PAGES: 524288 pages of cpu 1 in a row"),
                "{}",
                lines[0]
            );
            assert_eq!(lines[1], "[LOSSES: damaged_pages=524288]");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `n` spans of 1 to 1000 ns, each followed by a named instant of its name: all named "s", or
/// (`distinct`) each its own name, `width` characters long at least.
fn named(n: u64, distinct: bool, width: usize) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|i| format!("name-{i:0width$}")).collect();
    recording((0..n).flat_map(|i| {
        let name = if distinct {
            &names[i as usize][..]
        } else {
            "s"
        };
        let span = Record::NamedSpan {
            span: SpanExt {
                duration_ns: (i % 1000 + 1) as i64,
                span_id: (1 << 56) | i,
                parent_span_id: 0,
            },
            name,
        };
        [
            (10 * i + 5_000, span),
            (10 * i + 5_001, Record::NamedInstant { payload: 0, name }),
        ]
    }))
}

/// `stats` keeps the first NAMES_KEPT span names (and named instant names) exactly and folds
/// the rest into an "other" row that counts them, their spans and time: on 2^16 spans of as
/// many names it peaks within twice what the same spans of one name take, in the table and
/// with --json, and every span and nanosecond is in a row. (Before: a table row per name, the
/// issue's 1 M names took 812 MiB, 4.4 GiB with --json.)
#[test]
fn stats_fold_span_names_past_the_table_into_a_counted_other_row() {
    let dir = scratch("names");
    let n = 1u64 << 16;
    let total: u64 = (0..n).map(|i| i % 1000 + 1).sum();
    let (one, many) = (named(n, false, 6), named(n, true, 6));
    let sp = dir.join("one-name.dat");
    let lp = dir.join("many-names.dat");
    std::fs::write(&sp, &one).unwrap();
    std::fs::write(&lp, &many).unwrap();
    for json in [false, true] {
        let run = |p: &Path| {
            let mut a: Vec<&std::ffi::OsStr> = vec!["stats".as_ref(), p.as_os_str()];
            if json {
                a.push("--json".as_ref());
            }
            let (rss, ok, err) = own_peak_rss_kib(&a);
            assert!(ok, "{err}");
            rss
        };
        let (s, l) = (run(&sp), run(&lp));
        assert!(
            (l as f64) < 2.0 * s as f64,
            "`stats{}` peaked at {l} KiB on {n} span names, {s} KiB on one ({} and {} bytes)",
            if json { " --json" } else { "" },
            many.len(),
            one.len()
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(["stats".as_ref(), lp.as_os_str(), "--json".as_ref()])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &v["durations"];
    let kept = d["names_kept"].as_u64().unwrap();
    let spans = d["spans"].as_array().unwrap();
    assert_eq!(spans.len() as u64, kept);
    let other = &d["spans_other"];
    assert_eq!(other["names"].as_u64(), Some(n - kept), "{other}");
    assert_eq!(other["count"].as_u64(), Some(n - kept), "{other}");
    let kept_total: u64 = spans.iter().map(|s| s["total_ns"].as_u64().unwrap()).sum();
    assert_eq!(kept_total + other["total_ns"].as_u64().unwrap(), total);
    assert!(spans
        .windows(2)
        .all(|w| w[0]["total_ns"].as_u64() >= w[1]["total_ns"].as_u64()));
    assert_eq!(d["instants"].as_array().unwrap().len() as u64, kept);
    assert_eq!(d["instants_other"]["names"].as_u64(), Some(n - kept));
    assert_eq!(d["instants_other"]["count"].as_u64(), Some(n - kept));
    let o = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(["stats".as_ref(), lp.as_os_str()])
        .output()
        .unwrap();
    let table = String::from_utf8(o.stdout).unwrap();
    let want = format!("the spans of {} more names", n - kept);
    assert!(table.contains(&want), "{table}");
    let want = format!("the instants of {} more names", n - kept);
    assert!(table.contains(&want), "{table}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Perfetto export interns at most 16 384 names and writes later ones in place: on 2^17
/// spans of as many names (of 105 characters) it peaks within 1.5 times what the same spans
/// of one name take. (Before: every distinct name stayed interned, 137 MiB for a million.)
#[test]
fn the_perfetto_export_does_not_keep_every_name() {
    let dir = scratch("export-names");
    let n = 1u64 << 17;
    let (one, many) = (named(n, false, 100), named(n, true, 100));
    let sp = dir.join("one-name.dat");
    let lp = dir.join("many-names.dat");
    std::fs::write(&sp, &one).unwrap();
    std::fs::write(&lp, &many).unwrap();
    let out = dir.join("out.pftrace");
    let run = |p: &Path| {
        let a: Vec<&std::ffi::OsStr> = vec![
            "export".as_ref(),
            p.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ];
        let (rss, ok, err) = own_peak_rss_kib(&a);
        assert!(ok, "{err}");
        rss
    };
    let (s, l) = (run(&sp), run(&lp));
    assert!(
        (l as f64) < 1.5 * s as f64,
        "`export` peaked at {l} KiB on {n} span names, {s} KiB on one"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 32: a compressed options section's unknown options are skipped as they are
/// decompressed, and what a file's compressed sections decompress to is capped: 2 sections of
/// 7 MiB in 20 kB were held (and decompressed whole) by every command, 40 of 8 MiB in 330 kB
/// are refused, naming the file and the section.
#[test]
fn compressed_options_sections_are_read_in_bounded_memory() {
    use typhon_trace::fuzzing::shapes::{options_bomb, small_zstd};
    let dir = scratch("options-bomb");
    let base = small_zstd(2);
    let small = options_bomb(&base, 1, 64 << 10).unwrap();
    let large = options_bomb(&base, 2, 7 << 20).unwrap();
    every_command_bounded(&dir, &small, &large, 1.5, "2 options sections of 7 MiB");
    let bomb = dir.join("bomb.dat");
    std::fs::write(&bomb, options_bomb(&base, 40, (8 << 20) - 20).unwrap()).unwrap();
    let (_, ok, err) = peak_rss_kib(&["stats".as_ref(), bomb.as_os_str()]);
    assert!(
        !ok && err.contains("bomb.dat")
            && err.contains("compressed section 0 (\"options\")")
            && err.contains("over the"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

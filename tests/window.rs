//! Window mode and snapshots (SPEC §16): what a snapshot holds, slot by slot, and what is
//! counted.

use std::path::{Path, PathBuf};
use std::time::Duration;
use typhon_recorder::codec::records::{decode, Callsite, Record};
use typhon_recorder::{RecorderBuilder, Snapshot, Trigger};
use typhon_trace::tracedat::TraceFile;

mod snapshots;
use snapshots::{slots_of, thread_name};

fn dir(name: &str) -> PathBuf {
    snapshots::dir("typhon-window", name)
}

fn meta(path: &Path) -> serde_json::Value {
    let f = TraceFile::open(path).unwrap();
    f.typhon_meta().unwrap().unwrap().session
}

/// Writers numbering their instants, with a byte budget small enough that most pages are
/// evicted: the snapshot holds, per slot, exactly the writers' records whose time lies in
/// `(W, T1]`, after a ThreadInfo at W, and every slot starts at the same W.
#[test]
fn a_snapshot_holds_exactly_the_records_of_its_interval_in_every_slot() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("exact");
    let rec = RecorderBuilder::new()
        .window(Duration::from_secs(600))
        .window_bytes(48 * 4096)
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let clock = rec.clock().clone();
    let busy_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Two writers at full speed and a slow one, whose few records spread over the whole run:
    // its pages reach across W, so the snapshot must cut inside them.
    let writers: Vec<_> = (0..3)
        .map(|k| {
            let (clock, done) = (clock.clone(), busy_done.clone());
            std::thread::Builder::new()
                .name(format!("seq-{k}"))
                .spawn(move || {
                    let mut times = Vec::new();
                    let mut i = 0;
                    loop {
                        let t = clock.raw();
                        typhon_recorder::instant_at(t, 100 + k, i);
                        times.push(clock.to_ns(t));
                        i += 1;
                        match k {
                            0 if i == 30_000 => break,
                            0 => {}
                            _ if done.load(std::sync::atomic::Ordering::Relaxed) => break,
                            1 if i % 16 == 0 => std::thread::sleep(Duration::from_micros(20)),
                            2 => std::thread::sleep(Duration::from_micros(200)),
                            _ => {}
                        }
                    }
                    if k == 0 {
                        done.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    times
                })
                .unwrap()
        })
        .collect();
    let times: Vec<Vec<u64>> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    rec.drain();
    let snap: Snapshot = rec.snapshot().unwrap();
    let stats = rec.finish().unwrap();
    assert!(
        stats.evicted_records > 0 && stats.evicted_pages > 0,
        "{stats:?}"
    );
    let slots = slots_of(&snap.path);
    let (w, t1) = (snap.from_ns, snap.to_ns);
    let mut seen = 0;
    for (cpu, recs) in &slots {
        assert_eq!(recs[0].0, w, "slot {cpu} starts at W");
        assert!(
            thread_name(&recs[0].1).is_some(),
            "slot {cpu} starts with a ThreadInfo"
        );
        assert!(recs[1..].iter().all(|(ts, _)| *ts > w && *ts <= t1) || *cpu == 0);
        let seqs: Vec<(i32, i32, u64)> = recs
            .iter()
            .filter_map(|(ts, r)| match decode(r).ok()?.1 {
                Record::Instant { name_id, payload } => Some((name_id, payload, *ts)),
                _ => None,
            })
            .collect();
        if seqs.is_empty() {
            continue;
        }
        let k = (seqs[0].0 - 100) as usize;
        let expected: Vec<i32> = times[k]
            .iter()
            .enumerate()
            .filter(|(_, &t)| t > w && t <= t1)
            .map(|(i, _)| i as i32)
            .collect();
        let got: Vec<i32> = seqs.iter().map(|s| s.1).collect();
        assert_eq!(
            got, expected,
            "slot {cpu} (writer {k}) holds exactly (W, T1]"
        );
        seen += 1;
    }
    // The busy writer's oldest records were evicted; W is the watermark, not T1 − window.
    assert!(w > t1.saturating_sub(600_000_000_000));
    assert_eq!(seen, 3, "every writer has records in the window");
    let slow = &times[2];
    assert!(
        slow.first() < Some(&w) && slow.last() > Some(&w),
        "the slow writer's records reach across W"
    );
    let m = meta(&snap.path);
    assert_eq!(m["window"]["start_ns"], w);
    assert_eq!(m["window"]["reduced_by_budget"], true);
    let _ = std::fs::remove_dir_all(&d);
}

/// Snapshots taken while the writers run: every slot's sequence is contiguous, starts at the
/// first record after W, and nothing is older than W.
#[test]
fn snapshots_while_writing_are_contiguous_from_w() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("running");
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(50))
        .window_bytes(1 << 20)
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let clock = rec.clock().clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|k| {
            let (clock, stop) = (clock.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut times = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = clock.raw();
                    typhon_recorder::instant_at(t, 200 + k, times.len() as i32);
                    times.push(clock.to_ns(t));
                    if times.len() % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
                times
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(120));
    let snaps: Vec<Snapshot> = (0..3)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(30));
            rec.snapshot().unwrap()
        })
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let times: Vec<Vec<u64>> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    rec.finish().unwrap();
    for s in &snaps {
        assert!(s.from_ns >= s.to_ns - 50_000_000, "a 50 ms window at most");
        for (_, recs) in slots_of(&s.path) {
            assert_eq!(recs[0].0, s.from_ns);
            let seqs: Vec<(i32, i32)> = recs
                .iter()
                .filter_map(|(_, r)| match decode(r).ok()?.1 {
                    Record::Instant { name_id, payload } => Some((name_id, payload)),
                    _ => None,
                })
                .collect();
            let Some(&(id, first)) = seqs.first() else {
                continue;
            };
            let t = &times[(id - 200) as usize];
            let want = t.iter().position(|&x| x > s.from_ns).unwrap() as i32;
            assert_eq!(first, want, "the first record after W");
            for (i, (_, p)) in seqs.iter().enumerate() {
                assert_eq!(*p, first + i as i32, "contiguous");
                assert!(t[*p as usize] <= s.to_ns);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A slot whose first thread ended and whose records aged out, reused by a second thread:
/// the snapshot restates the second thread; a snapshot reaching back before the reuse
/// restates the first and then holds the second's own ThreadInfo.
#[test]
fn a_reused_slot_shows_the_thread_that_owned_it_at_w() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("reuse");
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(300))
        .snapshot_dir(&d)
        .spare_rings(0)
        .start()
        .unwrap();
    let run = |name: &str| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(|| typhon_recorder::instant(1, 1))
            .unwrap()
            .join()
            .unwrap();
    };
    run("first-owner");
    rec.drain();
    rec.drain();
    std::thread::sleep(Duration::from_millis(100));
    run("second-owner");
    rec.drain();
    let both = rec.snapshot().unwrap();
    std::thread::sleep(Duration::from_millis(350));
    run("second-owner");
    rec.drain();
    let later = rec.snapshot().unwrap();
    let stats = rec.finish().unwrap();
    let reused = stats
        .slots
        .iter()
        .find(|s| s.threads >= 2)
        .expect("a slot reused");
    let names = |p: &Path| -> Vec<String> {
        slots_of(p)[&u32::from(reused.slot)]
            .iter()
            .filter_map(|(_, r)| thread_name(r))
            .collect()
    };
    assert_eq!(names(&both.path)[0], "first-owner");
    assert!(names(&both.path).iter().any(|n| n == "second-owner"));
    assert_eq!(names(&later.path)[0], "second-owner");
    let f = TraceFile::open(&later.path).unwrap();
    assert_eq!(f.cmdline(i64::from(reused.slot)), Some("second-owner"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Definitions written before the window are restated in slot 0; a span open at the cut is
/// written ending at it and counted; the session header opens slot 0.
#[test]
fn definitions_and_open_spans_are_in_every_snapshot() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("defs");
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(100))
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let c = Callsite {
        id: 77,
        level: 3,
        line: 1,
        name: "request",
        target: "app",
        file: "",
        field_names: "",
    };
    assert!(typhon_recorder::bridge::callsite(&c));
    rec.drain();
    std::thread::sleep(Duration::from_millis(250));
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let _s = typhon_recorder::span("held-open");
        tx.send(()).unwrap();
        done_rx.recv().unwrap();
    });
    rx.recv().unwrap();
    let snap = rec.snapshot().unwrap();
    done_tx.send(()).unwrap();
    h.join().unwrap();
    let stats = rec.finish().unwrap();
    assert!(stats.evicted_records > 0, "the callsite's page aged out");
    assert_eq!(snap.open_spans, 1);
    let slots = slots_of(&snap.path);
    let k = typhon_recorder::codec::CommonHeader::KIND_OFFSET;
    let kinds0: Vec<u8> = slots[&0].iter().map(|(_, r)| r[k]).collect();
    let defs = (typhon_recorder::codec::TraceEventKind::TRACING_CALLSITE).0;
    assert!(
        kinds0.contains(&defs),
        "the callsite is restated: {kinds0:?}"
    );
    let open: Vec<_> = slots
        .values()
        .flatten()
        .filter_map(|(ts, r)| match decode(r).ok()?.1 {
            Record::NamedSpan {
                name: "held-open",
                span,
            } => Some((*ts, span.duration_ns)),
            _ => None,
        })
        .collect();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].0, snap.to_ns, "it ends at the cut");
    let m = meta(&snap.path);
    assert_eq!(m["window"]["open_at_cut"], 1);
    // Not counted as unclosed: the span went on and ended in the recording.
    assert!(stats.slots.iter().all(|s| s.unclosed == 0));
    let _ = std::fs::remove_dir_all(&d);
}

/// Evicted records are written, not lost: the identity holds per slot, nothing is missed or
/// lost, and each snapshot's slots hold their attempted = written + missed.
#[test]
fn evicted_records_sit_beside_written_in_the_accounting() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("acct");
    let rec = RecorderBuilder::new()
        .window_bytes(16 * 4096)
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let n = 50_000u64;
    std::thread::spawn(move || {
        for i in 0..n {
            typhon_recorder::instant(5, i as i32);
        }
    })
    .join()
    .unwrap();
    rec.drain();
    let snap = rec.snapshot().unwrap();
    let s = rec.finish().unwrap();
    assert_eq!(s.user_attempted(), n + 1, "ThreadInfo + the instants");
    for sl in &s.slots {
        assert_eq!(sl.attempted, sl.written + sl.missed + sl.sink_lost);
    }
    assert_eq!((s.total_missed(), s.pages_lost), (0, 0));
    let held: u64 = slots_of(&snap.path).values().map(|v| v.len() as u64).sum();
    // Every record written is either evicted or in the snapshot (less its restatements).
    assert_eq!(
        s.total_written() - s.evicted_records,
        held - snap.restated,
        "{s:?} {snap:?}"
    );
    let f = TraceFile::open(&snap.path).unwrap();
    for m in f.typhon_meta().unwrap().unwrap().slots {
        assert_eq!(m.attempted, m.written + m.missed);
    }
    assert_eq!(meta(&snap.path)["evicted_records"], s.evicted_records);
    let _ = std::fs::remove_dir_all(&d);
}

/// A tick rule fires on over-long ticks, at most once per spacing, and cuts after the time
/// kept after it.
#[test]
fn a_tick_trigger_fires_at_most_once_per_spacing() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("trigger");
    let ms = Duration::from_millis;
    let rec = RecorderBuilder::new()
        .window(Duration::from_secs(5))
        .snapshot_dir(&d)
        .snapshot_when(
            Trigger::tick_over(ms(1))
                .keep_after(ms(20))
                .at_most_every(ms(190)),
        )
        .start()
        .unwrap();
    let t0 = rec.ns_to_ticks(typhon_recorder::clock::monotonic_ns() - 2_000_000_000);
    let count = || {
        std::fs::read_dir(&d)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy();
                n.ends_with(".dat") && !n.starts_with('.')
            })
            .count()
    };
    let step = rec.ns_to_ticks(50_000_000 + typhon_recorder::clock::monotonic_ns())
        - rec.ns_to_ticks(typhon_recorder::clock::monotonic_ns());
    let two_ms = step / 25;
    for k in 0..20u64 {
        let t = t0 + k * step;
        typhon_recorder::tick_start_at(t);
        typhon_recorder::tick_end_at(t + two_ms, 0, 1);
        rec.drain();
        // Wait for the snapshot this tick may have asked for, so none is refused as busy.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let want = (k / 4 + 1) as usize;
        while k % 4 == 0 && count() < want && std::time::Instant::now() < deadline {
            std::thread::sleep(ms(2));
        }
        // The file appears just before the snapshot thread syncs the directory and lets the
        // next request in: a tick over budget meanwhile would be refused as busy.
        if k % 4 == 0 {
            std::thread::sleep(ms(300));
        }
    }
    std::thread::sleep(ms(100));
    rec.finish().unwrap();
    // Ticks end every 50 ms (record time): fired at ticks 0, 4, 8, 12, 16.
    let names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(count(), 5, "{names:?}");
    for e in std::fs::read_dir(&d).unwrap() {
        let p = e.unwrap().path();
        let m = meta(&p);
        assert_eq!(m["window"]["trigger"], "tick over 1ms");
        let (cut, at) = (
            m["window"]["end_ns"].as_u64().unwrap(),
            m["window"]["trigger_ns"].as_u64().unwrap(),
        );
        assert!(cut >= at + 20_000_000, "kept 20 ms after the trigger");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A process killed while it writes a snapshot leaves no file under a snapshot's name that is
/// not complete (the child aborts as soon as the temporary file appears).
#[test]
fn a_kill_during_a_snapshot_leaves_no_partial_file_under_a_final_name() {
    if let Ok(d) = std::env::var("TYPHON_WINDOW_KILL_CHILD") {
        let rec = RecorderBuilder::new()
            .window(Duration::from_secs(60))
            .window_bytes(256 << 20)
            .snapshot_dir(&d)
            .start()
            .unwrap();
        for i in 0..2_000_000 {
            typhon_recorder::instant(1, i);
        }
        rec.drain();
        assert!(typhon_recorder::request_snapshot("kill test"));
        loop {
            let tmp = std::fs::read_dir(&d)
                .unwrap()
                .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"));
            if tmp {
                std::process::abort();
            }
        }
    }
    let d = dir("kill");
    let exe = std::env::current_exe().unwrap();
    let st = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_kill_during_a_snapshot_leaves_no_partial_file_under_a_final_name",
            "--nocapture",
        ])
        .env("TYPHON_WINDOW_KILL_CHILD", &d)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!st.success(), "the child aborted");
    let names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    for n in names
        .iter()
        .filter(|n| !n.starts_with('.') && n.ends_with(".dat"))
    {
        TraceFile::open(d.join(n)).expect("a file under a final name is complete");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// trace-cmd reads a snapshot (v6, and v7 from a compressed window).
#[test]
fn trace_cmd_reads_snapshots() {
    if !snapshots::trace_cmd("trace_cmd_reads_snapshots") {
        return;
    }
    let _g = typhon_recorder::doc_lock();
    for (name, c) in [
        ("tc6", typhon_recorder::Compression::None),
        ("tc7", typhon_recorder::Compression::Zstd { level: 1 }),
    ] {
        let d = dir(name);
        let rec = RecorderBuilder::new()
            .window(Duration::from_secs(5))
            .window_bytes(32 * 4096)
            .compression(c)
            .snapshot_dir(&d)
            .start()
            .unwrap();
        for i in 0..20_000 {
            typhon_recorder::instant(3, i);
        }
        rec.drain();
        let s = rec.snapshot().unwrap();
        rec.finish().unwrap();
        let f = TraceFile::open(&s.path).unwrap();
        assert_eq!(f.version(), if c.is_compressed() { 7 } else { 6 });
        let out = std::process::Command::new("trace-cmd")
            .arg("report")
            .arg("-i")
            .arg(&s.path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let lines = text.lines().filter(|l| l.contains("Instant:")).count() as u64;
        assert!(lines > 0 && lines <= s.records, "{lines} of {}", s.records);
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// What a process running as `uid` gets from the socket in `dir`: `Err(errno)` if it cannot
/// connect, else the reply line. The child (forked, so no exec and no file it must be allowed
/// to run) makes only async-signal-safe calls.
#[cfg(target_os = "linux")]
fn ask_as(uid: u32, dir: &Path) -> Result<String, i32> {
    let path = dir.join(typhon_recorder::window::SOCKET_NAME);
    // SAFETY: a zeroed sockaddr_un is valid; the path fits (checked).
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    assert!(bytes.len() < addr.sun_path.len());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child calls only async-signal-safe functions and ends with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: plain system calls on memory this frame owns.
        unsafe {
            if libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                libc::_exit(3);
            }
            let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let r = libc::connect(
                s,
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            );
            if r != 0 {
                let e = *libc::__errno_location();
                let msg = [b'C', e as u8];
                libc::write(fds[1], msg.as_ptr().cast(), 2);
                libc::_exit(0);
            }
            libc::write(s, b"snapshot\n".as_ptr().cast(), 9);
            let mut buf = [0u8; 512];
            buf[0] = b'R';
            let mut at = 1;
            while at < buf.len() {
                let n = libc::read(s, buf[at..].as_mut_ptr().cast(), buf.len() - at);
                if n <= 0 {
                    break;
                }
                at += n as usize;
            }
            libc::write(fds[1], buf.as_ptr().cast(), at);
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end; reading into a buffer we own.
    unsafe { libc::close(fds[1]) };
    let mut out = Vec::new();
    let mut f = unsafe { <std::fs::File as std::os::unix::io::FromRawFd>::from_raw_fd(fds[0]) };
    std::io::Read::read_to_end(&mut f, &mut out).unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child {status}"
    );
    match out.first() {
        Some(b'C') => Err(i32::from(out[1])),
        Some(b'R') => Ok(String::from_utf8_lossy(&out[1..]).trim_end().to_owned()),
        _ => panic!("no answer from the child: {out:?}"),
    }
}

/// `typhon-rec snapshot DIR`'s socket: mode 0600, served to this user, refused to another uid
/// both by its mode and, with the mode opened up, by the peer's uid; nothing is written then.
#[cfg(target_os = "linux")]
#[test]
fn the_control_socket_serves_this_user_and_refuses_another_uid() {
    use std::os::unix::fs::PermissionsExt;
    let _g = typhon_recorder::doc_lock();
    let d = dir("control");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rec = RecorderBuilder::new()
        .window(Duration::from_secs(5))
        .snapshot_dir(&d)
        .start()
        .unwrap();
    typhon_recorder::instant(1, 1);
    rec.drain();
    let sock = d.join(typhon_recorder::window::SOCKET_NAME);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let p = typhon_recorder::window::request_remote(&d).unwrap();
    assert_eq!(p.parent(), Some(d.as_path()));
    TraceFile::open(&p).unwrap();
    let files = || std::fs::read_dir(&d).unwrap().count();
    let before = files();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(
            ask_as(65534, &d),
            Err(libc::EACCES),
            "the mode keeps it out"
        );
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        let reply = ask_as(65534, &d).unwrap();
        assert!(reply.starts_with("error refused: uid 65534"), "{reply}");
        assert_eq!(files(), before, "no snapshot for another uid");
        // Root is served whatever the recorder's user (here the same).
        let reply = ask_as(0, &d);
        assert!(
            reply.as_ref().is_ok_and(|r| r.starts_with("ok ")),
            "{reply:?}"
        );
    } else {
        eprintln!("not root: the other-uid half is skipped");
    }
    rec.finish().unwrap();
    assert!(!sock.exists(), "the socket goes with the recorder");
    let _ = std::fs::remove_dir_all(&d);
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// What a full window costs: the growth of the process's resident memory from a running
/// recorder with an empty window (rings faulted in) to one whose window evicted many times its
/// budget, as a ratio to the budget. Measured in a child, alone, so that no other test's
/// memory is in it.
#[cfg(target_os = "linux")]
#[test]
fn a_full_window_holds_at_most_its_budget_and_a_tenth() {
    const BUDGET: u64 = 32 << 20;
    if std::env::var_os("TYPHON_WINDOW_MEMORY_CHILD").is_some() {
        // No spare rings: one made for the pool between the two readings is not the window's.
        let rec = RecorderBuilder::new()
            .window_bytes(BUDGET)
            .spare_rings(0)
            .snapshot_dir(std::env::temp_dir())
            .start()
            .unwrap();
        // One writing thread throughout, so that its ring is in both readings.
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let w = std::thread::spawn(move || {
            for i in 0..1000 {
                typhon_recorder::instant(9, i);
            }
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            // About 24 bytes a record: 4 M records are 3 budgets' worth.
            for i in 0..4_000_000 {
                typhon_recorder::instant(9, i);
            }
        });
        ready_rx.recv().unwrap();
        rec.drain();
        let base = rss_bytes();
        go_tx.send(()).unwrap();
        w.join().unwrap();
        rec.drain();
        let full = rss_bytes();
        let s = rec.stats();
        assert!(s.evicted_pages > 0);
        println!("RATIO {:.4}", (full - base) as f64 / BUDGET as f64);
        rec.finish().unwrap();
        return;
    }
    let o = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_full_window_holds_at_most_its_budget_and_a_tenth",
            "--nocapture",
        ])
        .env("TYPHON_WINDOW_MEMORY_CHILD", "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let ratio: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("RATIO "))
        .unwrap()
        .parse()
        .unwrap();
    eprintln!("window memory / budget: {ratio:.4}");
    assert!(ratio > 0.5, "the window was filled: {ratio}");
    assert!(ratio <= 1.10, "memory {ratio} × the budget");
}

/// A slot's static names (SPEC §15) are restated at the head of its data: the thread defined
/// "static-step" long before W (that page aged out of the window), and the snapshot's spans of
/// it still read by name, none as an unresolved `name#N`.
#[test]
fn static_names_defined_before_w_resolve_in_the_snapshot() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("static-names");
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(100))
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        drop(typhon_recorder::span_static("static-step")); // its definition goes out now
        go_rx.recv().unwrap();
        for _ in 0..10 {
            drop(typhon_recorder::span_static("static-step"));
        }
        done_tx.send(()).unwrap();
    });
    rec.drain();
    std::thread::sleep(Duration::from_millis(300)); // the definition's page ages out
    go_tx.send(()).unwrap();
    done_rx.recv().unwrap();
    h.join().unwrap();
    rec.drain();
    let snap = rec.snapshot().unwrap();
    let stats = rec.finish().unwrap();
    assert!(stats.evicted_records > 0, "the first page aged out");
    let f = TraceFile::open_streaming(&snap.path).unwrap();
    let mut named = 0;
    for r in f.stream_records() {
        let r = r.unwrap();
        if let Ok((_, Record::NamedSpan { name, .. })) = decode(&r.data) {
            assert_eq!(name, "static-step", "resolved, not an id");
            named += 1;
        }
    }
    assert_eq!(named, 10, "the 10 spans inside the window");
    let _ = std::fs::remove_dir_all(&d);
}

/// The ClockSync records of a snapshot's slot 0: (record time, CLOCK_MONOTONIC, UNIX).
fn clock_syncs(path: &Path) -> Vec<(u64, u64, u64)> {
    slots_of(path)
        .get(&0)
        .map(|recs| {
            recs.iter()
                .filter_map(|(ts, r)| match decode(r).ok()?.1 {
                    Record::ClockSync {
                        monotonic_ns,
                        wall_ns,
                    } => Some((*ts, monotonic_ns, wall_ns)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A snapshot taken sooner than a window into the recording starts at the session's start and
/// says it holds only that time; every snapshot restates the clock at its W in a ClockSync (the
/// session's syncs before W are not in it, and a window under a minute holds none), with the
/// session's own pairing of the clocks.
#[test]
fn a_snapshot_starts_no_earlier_than_the_session_and_restates_the_clock_at_w() {
    let _g = typhon_recorder::doc_lock();
    let d = dir("early");
    let rec = RecorderBuilder::new()
        .window(Duration::from_secs(600))
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let (start, wall0) = (
        rec.clock().monotonic_anchor_ns(),
        rec.clock().wall_anchor_ns(),
    );
    for i in 0..1000 {
        typhon_recorder::instant(7, i);
    }
    std::thread::sleep(Duration::from_millis(50));
    let snap = rec.snapshot().unwrap();
    rec.finish().unwrap();
    assert_eq!(
        snap.from_ns, start,
        "W is the session's start, not T1 − 600 s"
    );
    let m = meta(&snap.path);
    let held = m["window"]["held_ns"].as_u64().unwrap();
    assert_eq!(held, snap.to_ns - start);
    assert!(
        held < 60_000_000_000,
        "held {held} ns, not the window asked"
    );
    assert_eq!(m["window"]["requested_ns"], 600_000_000_000u64);
    for (cpu, recs) in slots_of(&snap.path) {
        assert!(
            recs.iter().all(|(ts, _)| *ts >= start),
            "slot {cpu} before the start"
        );
    }
    assert_eq!(clock_syncs(&snap.path)[0], (start, start, wall0));
    let _ = std::fs::remove_dir_all(&d);

    // W inside the session: the clock at W, between the session's sync and the cut's reading.
    let d = dir("sync-at-w");
    let rec = RecorderBuilder::new()
        .window(Duration::from_millis(100))
        .snapshot_dir(&d)
        .start()
        .unwrap();
    let (mono0, wall0) = (
        rec.clock().monotonic_anchor_ns(),
        rec.clock().wall_anchor_ns(),
    );
    std::thread::sleep(Duration::from_millis(300));
    typhon_recorder::instant(7, 1);
    let snap = rec.snapshot().unwrap();
    rec.finish().unwrap();
    let w = snap.from_ns;
    assert!(w > mono0 + 100_000_000, "W {w} inside the session");
    let syncs = clock_syncs(&snap.path);
    let &(ts, mono, wall) = syncs.first().expect("a ClockSync at W");
    assert_eq!(ts, w);
    // The tick clock keeps CLOCK_MONOTONIC's ns within parts per million (here under 1 ms),
    // and the UNIX clock stays the session's offset from it.
    assert!(mono.abs_diff(w) < 1_000_000, "mono {mono} at W {w}");
    let offset = i128::from(wall) - i128::from(mono);
    let offset0 = i128::from(wall0) - i128::from(mono0);
    assert!(
        (offset - offset0).abs() < 1_000_000,
        "{offset} vs {offset0}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

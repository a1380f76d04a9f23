//! The `typhon-rec` binary: the demo's summary describes its file exactly, and report, stats
//! and pages read it back; bad input gives a message and a non-zero exit, never a panic.

use std::path::Path;
use std::process::{Command, Output};

fn rec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
        .args(args)
        .output()
        .unwrap()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn assert_clean_failure(o: &Output) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "should fail: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("typhon-rec") || err.contains("error"), "{err}");
}

/// The demo's defaults make a light first look: a few hundred thousand records at most, and
/// every kind of the kind table in them (so each reader has something of each to show).
#[test]
fn the_default_demo_is_a_light_first_look_with_every_kind() {
    let d = scratch("demo-default");
    let out = d.join("demo.dat");
    let o = rec(&["demo", "--out", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("only JSON on stdout");
    let written = v["written"].as_u64().unwrap();
    assert!(
        (50_000..=400_000).contains(&written),
        "{written} records is no first look"
    );
    use typhon_recorder::codec::records::full_kind;
    let count = |name: &str| v["kinds"][name].as_u64().unwrap_or(0);
    for def in typhon_recorder::codec::KINDS {
        // A full kind whose compact form holds every value the demo writes (a description's
        // ids, an event's) is written as that form: the form stands for it.
        let forms = typhon_recorder::codec::KINDS
            .iter()
            .filter(|c| c.kind != def.kind && full_kind(c.kind) == def.kind)
            .map(|c| count(c.name))
            .sum::<u64>();
        assert!(
            count(def.name) > 0 || forms > 0,
            "the default demo records no {}: {}",
            def.name,
            v["kinds"]
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn demo_json_report_stats_and_pages() {
    let d = scratch("demo");
    let out = d.join("demo.dat");
    let t0 = std::time::Instant::now();
    let o = rec(&[
        "demo",
        "--out",
        out.to_str().unwrap(),
        "--duration",
        "0.5",
        "--threads",
        "2",
        "--rate",
        "20000",
        "--json",
    ]);
    let ran_ms = t0.elapsed().as_secs_f64() * 1e3;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("only JSON on stdout");
    for k in [
        "file",
        "attempted",
        "written",
        "missed",
        "filtered",
        "pages",
        "bytes",
        "slots",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    let written = v["written"].as_u64().unwrap();
    let missed = v["missed"].as_u64().unwrap();
    assert_eq!(v["attempted"].as_u64().unwrap(), written + missed);
    let slots = v["slots"].as_array().unwrap();
    assert!(
        slots.iter().any(|s| s["slot"] == 0),
        "slot 0 is counted too"
    );
    assert_eq!(slots.len(), 4, "recorder + game loop + 2 workers");
    // A 0.5 s run has many flusher cycles, and no gap between two of them is longer than the
    // whole command.
    let gap = v["longest_drain_gap_ms"]
        .as_f64()
        .expect("longest_drain_gap_ms");
    assert!(
        gap > 0.0 && gap <= ran_ms,
        "{gap} ms in a command of {ran_ms} ms"
    );
    let sum: u64 = slots.iter().map(|s| s["written"].as_u64().unwrap()).sum();
    assert_eq!(sum, written);
    assert_eq!(
        v["bytes"].as_u64().unwrap(),
        std::fs::metadata(&out).unwrap().len()
    );

    // report: one line per record (plus drop lines), then the line naming the losses.
    let o = rec(&["report", out.to_str().unwrap()]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("[LOSSES: "), "{last}");
    assert_eq!(last.starts_with("[LOSSES: none"), missed == 0, "{last}");
    let lines = text
        .lines()
        .filter(|l| !l.contains("EVENTS DROPPED]") && !l.starts_with("[LOSSES: "))
        .count() as u64;
    assert_eq!(lines, written);
    for kind in [
        "IngressReceived",
        "IngressAdmitted",
        "IngressDropped",
        "CommandConsumed",
        "EgressSent",
        "TracedSpan",
        "NamedSpan",
        "TickStart",
        "TickEnd",
        "PhaseStart",
        "CeLog",
        "ThreadInfo",
    ] {
        assert!(text.contains(kind), "demo records {kind}");
    }
    assert!(text.contains("game-loop") && text.contains("net-worker-1"));

    // stats --json agrees.
    let o = rec(&["stats", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["records"].as_u64().unwrap(), written);
    assert_eq!(s["missed"].as_u64().unwrap(), missed);

    // export: Perfetto next to the file by default, Chrome JSON on request; both say what
    // they hold, and the JSON has what they say.
    let o = rec(&["export", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8(o.stdout).unwrap();
    assert!(said.contains(&format!("{written} records -> ")), "{said}");
    assert!(
        std::fs::metadata(out.with_extension("pftrace"))
            .unwrap()
            .len()
            > 0
    );
    let json = d.join("demo-chrome.json");
    let o = rec(&[
        "export",
        out.to_str().unwrap(),
        "--format",
        "chrome",
        "--out",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said_chrome = String::from_utf8(o.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let count = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    assert_eq!(count("B") + count("E"), 0, "slices are complete (X) events");
    assert!(said_chrome.contains(&format!(
        "-> {} slices, {} instants",
        count("X"),
        count("i")
    )));
    // The same timeline; only the Perfetto format carries (and counts) flows.
    let counts = |s: &str| -> std::collections::BTreeMap<String, u64> {
        let first = s.lines().next().unwrap().split(" -> ").nth(1).unwrap();
        let words: Vec<&str> = first.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        words
            .windows(2)
            .filter_map(|w| Some((w[1].to_string(), w[0].parse().ok()?)))
            .collect()
    };
    let mut perfetto = counts(&said);
    assert!(perfetto.remove("flows").unwrap() > 0, "{said}");
    assert_eq!(counts(&said_chrome), perfetto);
    assert_eq!(
        perfetto.len(),
        4,
        "slices, instants, tracks, threads: {said}"
    );

    // The export never overwrites the recording through a hard link to it either (a valid
    // recording: a file that does not parse fails before anything is written).
    let link = d.join("link.dat");
    std::fs::hard_link(&out, &link).unwrap();
    let before = std::fs::read(&out).unwrap();
    let o = rec(&[
        "export",
        out.to_str().unwrap(),
        "--out",
        link.to_str().unwrap(),
    ]);
    assert_clean_failure(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("would overwrite the recording"));
    assert!(
        std::fs::read(&out).unwrap() == before,
        "the recording is untouched"
    );

    // A write that fails is an error naming the output, and an output that is not a regular
    // file is left where it is: here a device like /dev/full (ENOSPC on every write), made in
    // the scratch directory where the test may (as root; skipped otherwise).
    let full = d.join("full");
    let made = std::process::Command::new("mknod")
        .args([full.to_str().unwrap(), "c", "1", "7"])
        .status()
        .is_ok_and(|s| s.success());
    if made {
        let o = rec(&[
            "export",
            out.to_str().unwrap(),
            "--out",
            full.to_str().unwrap(),
        ]);
        assert_clean_failure(&o);
        assert!(String::from_utf8_lossy(&o.stderr).contains(full.to_str().unwrap()));
        assert!(
            std::fs::symlink_metadata(&full).is_ok(),
            "the device is still there"
        );
    } else {
        eprintln!("SKIPPED: mknod (needs root): the failed-write case of export");
    }

    // pages: raw pages of slot 1, each a page_size file.
    let pdir = d.join("pages");
    let o = rec(&[
        "pages",
        out.to_str().unwrap(),
        "--slot",
        "1",
        "--out",
        pdir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files: Vec<_> = std::fs::read_dir(&pdir).unwrap().collect();
    assert!(!files.is_empty());
    for f in files {
        assert_eq!(std::fs::metadata(f.unwrap().path()).unwrap().len(), 4096);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let d = scratch("bad");
    let missing = d.join("nope.dat");
    assert_clean_failure(&rec(&["report", missing.to_str().unwrap()]));
    let junk = d.join("junk.dat");
    std::fs::write(&junk, b"not a trace file at all").unwrap();
    assert_clean_failure(&rec(&["report", junk.to_str().unwrap()]));
    assert_clean_failure(&rec(&["stats", junk.to_str().unwrap()]));
    assert_clean_failure(&rec(&["recover", missing.to_str().unwrap()]));
    assert_clean_failure(&rec(&["export", junk.to_str().unwrap()]));
    assert!(!junk.with_extension("pftrace").exists());
    let o = rec(&["export", junk.to_str().unwrap(), "--format", "svg"]);
    assert_clean_failure(&o);
    // The export never overwrites the recording it reads.
    let o = rec(&[
        "export",
        junk.to_str().unwrap(),
        "--out",
        junk.to_str().unwrap(),
    ]);
    assert_clean_failure(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("would overwrite the recording"));

    assert_eq!(std::fs::read(&junk).unwrap(), b"not a trace file at all");
    let o = rec(&[
        "demo",
        "--out",
        d.join("x.dat").to_str().unwrap(),
        "--ring-size",
        "3000",
    ]);
    assert_clean_failure(&o);
    let o = rec(&[
        "demo",
        "--out",
        d.join("y.dat").to_str().unwrap(),
        "--duration",
        "-1",
    ]);
    assert_clean_failure(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--duration must be a positive number"),
        "{err}"
    );
    assert!(!Path::new(&d.join("y.dat")).exists());
    // Too long to be a Duration: an error, not a panic.
    let y = d.join("y.dat");
    assert_clean_failure(&rec(&[
        "demo",
        "--out",
        y.to_str().unwrap(),
        "--duration",
        "1e20",
    ]));
    // An output that cannot be written is refused before recording, naming the path, and
    // leaves nothing behind.
    for out in [d.clone(), d.join("no-such-dir").join("z.dat")] {
        let o = rec(&["demo", "--out", out.to_str().unwrap(), "--duration", "0.1"]);
        assert_clean_failure(&o);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(out.to_str().unwrap()), "{err}");
        assert!(!typhon_recorder::sink::parts_dir(&out).exists());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A reader that closes the pipe before the output comes (`typhon-rec stats f | head -0`) ends
/// the command quietly, as it ends other Unix tools, not with a panic in `println!`.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::io::Read;
    use std::process::Stdio;
    let d = scratch("pipe");
    let out = d.join("p.dat");
    let o = rec(&[
        "demo",
        "--out",
        out.to_str().unwrap(),
        "--duration",
        "0.2",
        "--threads",
        "1",
        "--rate",
        "10000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for cmd in ["stats", "report"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_typhon-rec"))
            .args([cmd, out.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone before the first line
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{cmd}: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.signal() == Some(13),
            "{cmd}: {status:?} {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The commands the demo prints under "Look at it" work when pasted into a shell that has no
/// `typhon-rec` on its PATH (as after `cargo run`): they name the binary by its path.
#[test]
fn the_demos_look_at_it_commands_run_when_pasted() {
    let d = scratch("look");
    let out = d.join("look.dat");
    let o = rec(&["demo", "-o", out.to_str().unwrap(), "--duration", "0.2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let look: Vec<&str> = text
        .split("Look at it:")
        .nth(1)
        .expect("the demo prints how to look at its file")
        .lines()
        .filter_map(|l| l.split("  # ").next().map(str::trim))
        .filter(|c| !c.is_empty())
        .collect();
    let ours: Vec<&str> = look
        .iter()
        .copied()
        .filter(|c| !c.starts_with("trace-cmd") && !c.starts_with("kernelshark"))
        .collect();
    assert_eq!(ours.len(), 3, "report, stats and export: {look:?}");
    for cmd in ours {
        let cmd = cmd.replace(" | less", " >/dev/null");
        let o = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "`{cmd}` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(out.with_extension("pftrace").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// After a kill, `stats X.dat` says that `X.dat.parts/` is there and how to rebuild the file
/// (it used to say only "No such file"), and `recover X.dat.parts` recovers `X.dat`.
#[test]
fn a_killed_recording_is_named_and_its_parts_directory_recovers() {
    use typhon_recorder::page::PageWriter;
    use typhon_recorder::sink::{parts_dir, FileSink, Sink};
    let d = scratch("killed-hint");
    let out = d.join("k.dat");
    let mut s = FileSink::create(&out, 4096).unwrap();
    let mut w = PageWriter::new(4096).unwrap();
    for j in 0..10 {
        w.try_push(j + 1, &[1; 20]).unwrap();
    }
    s.write_page(1, w.finish()).unwrap();
    s.flush().unwrap();
    drop(s); // as a kill leaves it: no finish
    let parts = parts_dir(&out);
    for cmd in ["stats", "report", "export"] {
        let o = rec(&[cmd, out.to_str().unwrap()]);
        assert_clean_failure(&o);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(parts.to_str().unwrap()) && err.contains("typhon-rec recover"),
            "{cmd}: {err}"
        );
    }
    let o = rec(&["recover", &format!("{}/", parts.display())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.is_file() && !parts.exists());
    let o = rec(&["stats", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

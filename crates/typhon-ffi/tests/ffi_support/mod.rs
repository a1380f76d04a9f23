//! Shared by the C and ctypes host tests: finding the built libraries, the interop-required
//! switch, and checking a recording made through the C ABI.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use typhon_recorder::codec::records::{self, Record};
use typhon_trace::tracedat::TraceFile;

/// Skips the test (returns false) with a printed reason, or panics when
/// `TYPHON_REQUIRE_INTEROP=1`.
pub fn available(tool: &str, why: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    skip_unless(ok, tool, why)
}

/// `available` for a tool without a `--version` that exits 0 (trace-cmd: its `--help` prints
/// its version and exits 255): installed when it runs and prints `marker`.
pub fn available_printing(tool: &str, arg: &str, marker: &str, why: &str) -> bool {
    let ok = Command::new(tool).arg(arg).output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).contains(marker)
            || String::from_utf8_lossy(&o.stderr).contains(marker)
    });
    skip_unless(ok, tool, why)
}

fn skip_unless(ok: bool, tool: &str, why: &str) -> bool {
    if !ok {
        if std::env::var_os("TYPHON_REQUIRE_INTEROP").is_some_and(|v| v == "1") {
            panic!("{tool} is required ({why}) because TYPHON_REQUIRE_INTEROP=1, but not found");
        }
        eprintln!(
            "SKIPPED: {tool} not found ({why}); set TYPHON_REQUIRE_INTEROP=1 to fail instead"
        );
    }
    ok
}

/// The cargo profile directory this test binary was built into (`target/<profile>`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// The built library `file` (`libtyphon_ffi.a` / `.so`) of this profile. `cargo test`
/// builds only the rlib, so this runs `cargo build --lib` (a quick no-op when it is current),
/// which also keeps a stale library from being tested.
pub fn library(file: &str) -> PathBuf {
    let dir = profile_dir();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--lib", "-p", "typhon-ffi"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    if let Some(target) = dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    let st = cmd.status().expect("run cargo build --lib");
    assert!(st.success(), "cargo build --lib failed");
    let lib = dir.join(file);
    assert!(lib.exists(), "{} not found", lib.display());
    lib
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = profile_dir()
        .join("ffi-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles the C source `src` against the checked-in header and the static library into
/// `exe`, with `flags` (warnings as errors among them), and fails the test with cc's output
/// if it does not compile.
pub fn compile_c(src: &Path, exe: &Path, flags: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("cc")
        .args(flags)
        .arg("-I")
        .arg(root.join("include"))
        .arg(src)
        .arg(library("libtyphon_ffi.a"))
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s", "-o"])
        .arg(exe)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "{} does not compile:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `key=value` pairs of the host's `STATS` line.
pub fn parse_stats(stdout: &str) -> BTreeMap<String, u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("STATS "))
        .unwrap_or_else(|| panic!("no STATS line in output:\n{stdout}"));
    line["STATS ".len()..]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.parse().expect("number"))
        })
        .collect()
}

/// What a host thread recorded, attributed through the ThreadInfo that opened its stretch of
/// its slot's stream.
#[derive(Default, Debug)]
pub struct ThreadRecords {
    /// Slots the thread name appeared on.
    pub slots: BTreeSet<u32>,
    /// `payload` of each Instant (the hosts write 0..events with `name_id` = thread number).
    pub instants: Vec<(i32, i32)>,
    /// Records of each kind.
    pub kinds: BTreeMap<u8, u64>,
    /// NamedSpan/TracedSpan: (span_id, parent_span_id, name, is_traced).
    pub spans: Vec<(u64, u64, String, bool)>,
    /// TracedSpan: (name, trace context hi, lo).
    pub traced: Vec<(String, u64, u64)>,
    /// Payloads (after the 12-byte header) of the hosts' own kind 200.
    pub custom: Vec<Vec<u8>>,
    /// The kind its ThreadInfo gave (`Main`, `Worker`, `Pool`, `Other`).
    pub thread_kind: Option<String>,
    /// NamedInstant, NamedPhaseStart, NamedPhaseEnd and Counter: (kind, phase, payload or
    /// value field, name).
    pub named: Vec<(u8, i64, String)>,
}

/// Summary of a recording made through the C ABI.
pub struct Checked {
    /// Per thread name.
    pub threads: BTreeMap<String, ThreadRecords>,
    /// ThreadInfo records per slot (more than one: the slot was reused).
    pub infos_per_slot: BTreeMap<u32, u64>,
    /// Per-slot (attempted, written, missed) from the file's metadata.
    pub slot_meta: Vec<(u8, u64, u64, u64)>,
    /// Records in the file.
    pub records: u64,
    /// Records in the file per slot.
    pub records_per_slot: BTreeMap<u32, u64>,
    /// Records of the hosts' own kind 200 (no event format: `[UNKNOWN EVENT]` for trace-cmd)
    /// per slot.
    pub custom_per_slot: BTreeMap<u32, u64>,
}

/// Reads `path` with the crate's reader and decodes every record.
pub fn check_file(path: &Path) -> Checked {
    let f = TraceFile::open(path).expect("open trace.dat");
    let mut threads: BTreeMap<String, ThreadRecords> = BTreeMap::new();
    let mut infos_per_slot = BTreeMap::new();
    let mut records_n = 0;
    let mut records_per_slot = BTreeMap::new();
    let mut custom_per_slot = BTreeMap::new();
    for cpu in 0..f.cpus() {
        let mut owner: Option<String> = None;
        for r in f.cpu_records(cpu) {
            let r = r.expect("record");
            records_n += 1;
            *records_per_slot.entry(cpu).or_default() += 1;
            let kind = r.data[2];
            if kind == 200 {
                // The hosts' own kind: no layout in the table.
                let t = threads.entry(owner.clone().expect("owner")).or_default();
                *t.kinds.entry(kind).or_default() += 1;
                t.custom.push(r.data[12..].to_vec());
                *custom_per_slot.entry(cpu).or_default() += 1;
                continue;
            }
            let (_, rec) = records::decode(r.data).expect("decodable record");
            if let Record::ThreadInfo { name, kind, .. } = rec {
                owner = Some(name.to_string());
                *infos_per_slot.entry(cpu).or_default() += 1;
                let t = threads.entry(name.to_string()).or_default();
                t.thread_kind = Some(format!("{kind:?}"));
            }
            let Some(o) = owner.clone() else {
                assert_eq!(cpu, 0, "user slot {cpu} record before its ThreadInfo");
                continue;
            };
            let t = threads.entry(o).or_default();
            t.slots.insert(cpu);
            *t.kinds.entry(kind).or_default() += 1;
            match rec {
                Record::Instant { name_id, payload } => t.instants.push((name_id, payload)),
                Record::NamedInstant { payload, name } => {
                    t.named.push((kind, payload.into(), name.to_string()))
                }
                Record::NamedPhaseStart { phase, name } | Record::NamedPhaseEnd { phase, name } => {
                    t.named.push((kind, phase.into(), name.to_string()))
                }
                // The value field as stored (an f64's bits for a double).
                Record::Counter { value, name } => t.named.push((kind, value.raw, name.into())),
                Record::NamedSpan { span, name } => {
                    t.spans
                        .push((span.span_id, span.parent_span_id, name.into(), false))
                }
                Record::TracedSpan {
                    span,
                    name,
                    context,
                } => {
                    assert!(typhon_recorder::is_command_causal_id(context.hi));
                    t.spans
                        .push((span.span_id, span.parent_span_id, name.into(), true));
                    t.traced.push((name.into(), context.hi, context.lo))
                }
                _ => {}
            }
        }
    }
    let meta = f
        .typhon_meta()
        .expect("typhon metadata")
        .expect("valid metadata");
    let slot_meta = meta
        .slots
        .iter()
        .map(|s| (s.slot, s.attempted, s.written, s.missed))
        .collect();
    Checked {
        threads,
        infos_per_slot,
        slot_meta,
        records: records_n,
        records_per_slot,
        custom_per_slot,
    }
}

/// The exact accounting, slot by slot: the file holds `written` records of each slot, and
/// `attempted = written + missed` for each.
pub fn check_slot_accounting(c: &Checked) {
    assert!(!c.slot_meta.is_empty(), "per-slot metadata");
    for &(slot, a, w, m) in &c.slot_meta {
        let in_file = c
            .records_per_slot
            .get(&u32::from(slot))
            .copied()
            .unwrap_or(0);
        assert_eq!(in_file, w, "slot {slot}: records in the file = written");
        assert_eq!(a, w + m, "slot {slot}: attempted = written + missed");
    }
    let metas: BTreeSet<u32> = c.slot_meta.iter().map(|s| u32::from(s.0)).collect();
    for slot in c.records_per_slot.keys() {
        assert!(
            metas.contains(slot),
            "slot {slot} has records but no metadata"
        );
    }
}

/// `trace-cmd report` reads the whole file: one line per record (after `cpus=`), every record
/// of a kind with a format parsed (none "FAILED TO PARSE"), `[UNKNOWN EVENT]` exactly for the
/// hosts' own kind 200 (it has no format), the per-slot counts of the rest as ours, and every
/// thread name in a ThreadInfo line. Skips (with a message) without trace-cmd, unless
/// `TYPHON_REQUIRE_INTEROP=1`. Returns whether it ran.
pub fn check_trace_cmd(path: &Path, c: &Checked) -> bool {
    if !available_printing(
        "trace-cmd",
        "--help",
        "trace-cmd version",
        "reading the recording independently",
    ) {
        return false;
    }
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(path)
        .output()
        .expect("run trace-cmd report");
    assert!(
        out.status.success(),
        "trace-cmd report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    assert!(first.starts_with("cpus="), "first line {first:?}");
    let (mut unknown, mut parsed) = (0u64, BTreeMap::<u32, u64>::new());
    let mut total = 0u64;
    for l in lines {
        total += 1;
        assert!(!l.contains("FAILED TO PARSE"), "{l}");
        assert!(!l.contains("EVENTS DROPPED]"), "nothing dropped: {l}");
        if l.contains("[UNKNOWN EVENT]") {
            unknown += 1;
            continue;
        }
        let cpu = l
            .split_once(" [")
            .and_then(|(_, r)| r.split_once(']'))
            .and_then(|(n, _)| n.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("no [cpu] in {l:?}"));
        *parsed.entry(cpu).or_default() += 1;
    }
    assert_eq!(total, c.records, "trace-cmd lists every record");
    assert_eq!(
        unknown,
        c.custom_per_slot.values().sum::<u64>(),
        "only kind 200 is unknown to trace-cmd"
    );
    for (slot, n) in &c.records_per_slot {
        let custom = c.custom_per_slot.get(slot).copied().unwrap_or(0);
        assert_eq!(
            parsed.get(slot).copied().unwrap_or(0),
            n - custom,
            "trace-cmd's records of slot {slot}"
        );
    }
    for name in c.threads.keys() {
        assert!(
            text.contains(&format!("name={name} ")),
            "trace-cmd shows the ThreadInfo of {name}"
        );
    }
    true
}

/// The checks both hosts share: each worker `"{prefix}{n}"` (n < workers) recorded every
/// Instant `(n, 0..events)` exactly once, plus `per_iter` records of its own kinds per
/// iteration; spans nest; the file's per-slot accounting holds; stats equation.
pub fn check_workers(
    c: &Checked,
    prefix: &str,
    workers: usize,
    events: usize,
    stats: &BTreeMap<String, u64>,
) {
    for n in 0..workers {
        let name = format!("{prefix}{n}");
        let t = c
            .threads
            .get(&name)
            .unwrap_or_else(|| panic!("thread {name} missing; have {:?}", c.threads.keys()));
        let mut want: Vec<(i32, i32)> = (0..events as i32).map(|i| (n as i32, i)).collect();
        let mut got = t.instants.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "instants of {name}");
        // Every span's parent is another span of the same thread or 0.
        let ids: BTreeSet<u64> = t.spans.iter().map(|s| s.0).collect();
        for (id, parent, span_name, traced) in &t.spans {
            if *traced {
                assert!(
                    ids.contains(parent),
                    "{name}: traced span {id:#x} has no parent"
                );
                assert_eq!(span_name, "apply");
            } else {
                assert_eq!(*parent, 0, "{name}: outer span {id:#x} has a parent");
                assert_eq!(span_name, "frame");
            }
        }
        assert_eq!(t.spans.len(), 2 * events, "spans of {name}");
    }
    let (mut attempted, mut written, mut missed) = (0, 0, 0);
    for &(slot, a, w, m) in &c.slot_meta {
        assert_eq!(a, w + m, "slot {slot}: attempted = written + missed");
        attempted += a;
        written += w;
        missed += m;
    }
    assert_eq!(written, c.records, "records in the file = written");
    assert_eq!(stats["attempted"], attempted, "stats vs file metadata");
    assert_eq!(stats["written"], written);
    assert_eq!(stats["missed"], missed);
    assert_eq!(
        stats["attempted"],
        stats["written"] + stats["missed"] + stats["sink_lost"]
    );
    assert_eq!(
        stats["missed"], 0,
        "rings are large enough for nothing to drop"
    );
    assert_eq!(stats["sink_errors"], 0);
}

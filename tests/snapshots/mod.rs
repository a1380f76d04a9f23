//! What the window tests share: scratch directories, a snapshot's records slot by slot (v6 or
//! v7), and trace-cmd, the independent reader.

#![allow(dead_code)] // each test file uses its own part of it

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use typhon_recorder::codec::records::{decode, Record};
use typhon_trace::tracedat::TraceFile;

/// A fresh scratch directory `<prefix>-<name>-<pid>` under the temporary directory.
pub fn dir(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Per slot: (page time, record bytes) of every record of a snapshot (v6 or v7: the streaming
/// reader decompresses chunks).
pub fn slots_of(path: &Path) -> BTreeMap<u32, Vec<(u64, Vec<u8>)>> {
    let f = TraceFile::open_streaming(path).unwrap();
    let mut out = BTreeMap::new();
    for cpu in f.data_cpus().collect::<Vec<_>>() {
        let recs: Vec<_> = f
            .stream_cpu(cpu)
            .map(|r| {
                let r = r.unwrap();
                (r.ts, r.data)
            })
            .collect();
        out.insert(cpu, recs);
    }
    out
}

/// (name id, payload, page time) of a slot's instants.
pub fn instants(recs: &[(u64, Vec<u8>)]) -> Vec<(i32, i32, u64)> {
    recs.iter()
        .filter_map(|(ts, r)| match decode(r).ok()?.1 {
            Record::Instant { name_id, payload } => Some((name_id, payload, *ts)),
            _ => None,
        })
        .collect()
}

/// The thread name of a ThreadInfo record.
pub fn thread_name(rec: &[u8]) -> Option<String> {
    match decode(rec).ok()?.1 {
        Record::ThreadInfo { name, .. } => Some(name.to_owned()),
        _ => None,
    }
}

/// True where trace-cmd runs; else says the check is skipped, and fails with
/// `TYPHON_REQUIRE_INTEROP=1`.
pub fn trace_cmd(what: &str) -> bool {
    match std::process::Command::new("trace-cmd")
        .arg("--version")
        .output()
    {
        Ok(_) => true,
        Err(e) if std::env::var("TYPHON_REQUIRE_INTEROP").as_deref() == Ok("1") => {
            panic!("TYPHON_REQUIRE_INTEROP=1 but trace-cmd cannot run: {e}")
        }
        Err(e) => {
            eprintln!("trace-cmd cannot run ({e}): {what} skipped");
            false
        }
    }
}

/// `trace-cmd report`'s count of Instant lines in `path`.
pub fn trace_cmd_instants(path: &Path) -> u64 {
    let out = std::process::Command::new("trace-cmd")
        .arg("report")
        .arg("-i")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "trace-cmd report {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("Instant:"))
        .count() as u64
}

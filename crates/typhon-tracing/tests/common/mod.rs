//! What the tests read back: a recording's `tracing` records, decoded by the project's reader.

#![allow(dead_code)] // each test file uses some of these

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use typhon_recorder::codec::records::{self, Record};
use typhon_trace::tracedat::TraceFile;

/// A fresh directory of this test process.
pub fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("typhon-tracing-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// CPU time this thread has used: a cost measured in it leaves out the time the machine's
/// other processes take.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into; CLOCK_THREAD_CPUTIME_ID is always there
    // on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// One TracingSpan record (an entry of a span): times in ns.
#[derive(Debug, Clone)]
pub struct Entry {
    pub slot: u32,
    pub ts: i64,
    pub dur: i64,
    pub id: u64,
    pub parent: u64,
    pub key: u64,
    pub name: String,
}

impl Entry {
    pub fn end(&self) -> i64 {
        self.ts + self.dur
    }

    /// Whether it nests in `outer` on its thread: within its time, and naming it as parent or
    /// (a compact entry, TracingEntry, handed out with parent 0: SPEC §12, readers rebuild its
    /// nesting from its time) naming none.
    #[allow(dead_code)]
    pub fn nests_in(&self, outer: &Entry) -> bool {
        let within = self.slot == outer.slot && self.ts >= outer.ts && self.end() <= outer.end();
        within && (self.parent == outer.id || self.parent == 0)
    }
}

/// The `tracing` records of a file.
#[derive(Debug, Default)]
pub struct Read {
    /// Entries in the file's order.
    pub entries: Vec<Entry>,
    /// Every TracingSpanInfo, in the file's order: (key, name, fields).
    pub infos: Vec<(u64, String, String)>,
    /// (span key, message, fields).
    pub events: Vec<(u64, String, String)>,
    /// (key, follows key).
    pub follows: Vec<(u64, u64)>,
}

impl Read {
    /// The entries named `name`.
    pub fn named(&self, name: &str) -> Vec<&Entry> {
        self.entries.iter().filter(|e| e.name == name).collect()
    }

    /// The one entry named `name`.
    pub fn one(&self, name: &str) -> &Entry {
        let v = self.named(name);
        assert_eq!(v.len(), 1, "{name}: {:#?}", self.entries);
        v[0]
    }

    /// Each span's last description: key → (name, fields).
    pub fn last_infos(&self) -> BTreeMap<u64, (String, String)> {
        self.infos
            .iter()
            .map(|(k, n, f)| (*k, (n.clone(), f.clone())))
            .collect()
    }
}

/// Reads `path` with the project's reader; every record must decode.
pub fn read(path: &Path) -> Read {
    let file = TraceFile::open(path).unwrap();
    let mut out = Read::default();
    for r in file.stream_records() {
        let r = r.unwrap();
        let (h, body) = records::decode(&r.data).unwrap();
        match body {
            Record::TracingSpan {
                span, key, name, ..
            } => out.entries.push(Entry {
                slot: r.cpu,
                ts: h.timestamp,
                dur: span.duration_ns,
                id: span.span_id,
                parent: span.parent_span_id,
                key,
                name: name.to_string(),
            }),
            Record::TracingSpanInfo {
                key, name, fields, ..
            } => out.infos.push((key, name.to_string(), fields.to_string())),
            Record::TracingEvent {
                span_key,
                message,
                fields,
                ..
            } => out
                .events
                .push((span_key, message.to_string(), fields.to_string())),
            Record::TracingFollows { key, follows_key } => out.follows.push((key, follows_key)),
            _ => {}
        }
    }
    out
}

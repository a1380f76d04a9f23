//! Window mode (SPEC §16): the newest pages of every slot kept in memory within a time window
//! and a byte budget, and snapshots of that window written as complete trace.dat files.
//!
//! The writers and the flusher's drain are those of a file recording; only where a finished
//! page goes differs: into a `store::Store` the flusher owns, instead of a sink. The store evicts the
//! item whose last record is oldest, across all slots (a min-heap over the slots' first items),
//! so that every slot reaches back to the same time: the largest page time ever evicted, the
//! *watermark*. A snapshot covers `(W, T1]`, W being the later of `T1 − window` and the
//! watermark, so every slot holds every record of that interval (page times: a span's is its
//! end) and none older.
//!
//! With compression on, an item is a chunk: each slot's pages are gathered as they come, and
//! once there are [`crate::tracedat::DEFAULT_CHUNK_PAGES`] (the v7 file writer's chunk),
//! they are compressed into one chunk in the v7 file's own form, kept with its pages' least
//! first and greatest last times, records and missed counts. The budget counts the compressed
//! bytes, so the same budget holds several times the time (4–6 × in BENCHMARKS.md's
//! measurements); a slot's newest pages, not yet a chunk, are held and counted raw.
//! Eviction takes a whole chunk (the one that ends first) and counts every page and record in
//! it, and the watermark is its last page's time: coarser steps than page by page, but never
//! a record of `(W, T1]` missing from any slot. Chunks are made on a `typhon-compress` thread
//! of their own (`pack`), as the file mode's are: the flusher gives a slot's pages over and,
//! at the first page (of any slot) or cut after the chunk is back, puts it in their place if
//! they are all still held. Until then the pages are held and counted raw, and a cut takes them
//! as they are, so it waits for no chunk (what a window holds then depends on the thread's
//! timing; the accounting does not).
//!
//! The cut is taken on the flusher thread (pointer copies of the held items and the slots'
//! owners); a `typhon-snapshot` thread then builds each slot's data (`parts`) and writes the
//! file under a temporary name and renames it when complete (`snapshot`). A held chunk wholly
//! inside `(W, T1]` goes into the v7 file as it is (no decompression, no compression: the
//! snapshot of a compressed window writes its already small bytes); one that crosses W or T1
//! is decompressed and trimmed page by page like a raw page, and the pages the snapshot makes
//! (restatements, trimmed records, open spans, raw pages held) are compressed into chunks of
//! their own. The records are exactly those an uncompressed window gives for the same
//! interval.

#[cfg(unix)]
mod control;
mod cut;
mod held;
mod pack;
mod parts;
pub(crate) mod request;
mod snapshot;
mod store;
mod trigger;

#[cfg(unix)]
pub use control::{request_remote, SOCKET_NAME};
pub(crate) use cut::{ClockReading, Session, Window};

pub use request::{Pending, Shared, Snapshot};
pub(crate) use trigger::Rules;
pub use trigger::Trigger;

use crate::codec::records::ThreadKind;
use std::path::PathBuf;
use std::sync::Arc;

/// Byte budget of a window given only a duration: 64 MiB.
pub const DEFAULT_WINDOW_BYTES: u64 = 64 << 20;

/// The configuration of window mode, fixed at `start()`.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// The window's length in ns (`u64::MAX`: only the byte budget bounds it).
    pub(crate) window_ns: u64,
    /// Most bytes the held pages may take, with their index.
    pub(crate) budget: u64,
    /// Where snapshots go (absolute).
    pub(crate) dir: PathBuf,
    /// The first part of the snapshots' names.
    pub(crate) program: String,
    pub(crate) compression: crate::tracedat::Compression,
    pub(crate) rules: Vec<Trigger>,
}

/// Who owned a slot from `since` on (ns): what a snapshot's ThreadInfo restates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) since: u64,
    pub(crate) tid: i32,
    pub(crate) name: String,
    pub(crate) kind: ThreadKind,
}

/// The program's name for snapshot file names: the executable's file name, with anything but
/// ASCII letters, digits, `-`, `_` and `.` replaced by `_`.
pub(crate) fn program_name() -> String {
    let exe = std::env::current_exe().ok();
    let name = exe
        .as_ref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "typhon".into());
    let clean: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        format!("typhon{clean}")
    } else {
        clean
    }
}

/// The builder's window settings.
#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) duration: Option<std::time::Duration>,
    pub(crate) bytes: Option<u64>,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) rules: Vec<Trigger>,
}

impl Builder {
    fn on(&self) -> bool {
        self.duration.is_some() || self.bytes.is_some()
    }

    pub(crate) fn check(&self, page_size: usize) -> Result<(), crate::RecorderError> {
        let cfg = |s: String| Err(crate::RecorderError::Config(s));
        if !self.on() {
            if self.dir.is_some() || !self.rules.is_empty() {
                return cfg(
                    "snapshot_dir and snapshot_when need a window (window or window_bytes)".into(),
                );
            }
            return Ok(());
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return cfg("the window's duration must be > 0".into());
        }
        // A budget under a few pages would evict every page as it comes.
        let least = 4 * (page_size as u64 + held::PAGE_OVERHEAD);
        if let Some(b) = self.bytes {
            if b < least {
                return cfg(format!("window_bytes {b}: at least {least} (4 pages)"));
            }
        }
        if self.dir.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return cfg("the snapshot directory is empty".into());
        }
        Ok(())
    }

    /// The window's configuration and shared state, if one is set; `has_output`: a sink or an
    /// output path is set too, which window mode does not take.
    pub(crate) fn make(
        &self,
        compression: crate::tracedat::Compression,
        has_output: bool,
    ) -> Result<Option<(Config, Arc<Shared>)>, crate::RecorderError> {
        if !self.on() {
            return Ok(None);
        }
        if has_output {
            return Err(crate::RecorderError::Config(
                "a window keeps its pages in memory: set no output, sink or rotation with it"
                    .into(),
            ));
        }
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => PathBuf::from("."),
        };
        // Resolved now: a later `chdir` changes nothing.
        let dir = dir.canonicalize().map_err(|e| {
            crate::RecorderError::Config(format!("snapshot directory {}: {e}", dir.display()))
        })?;
        if !dir.is_dir() {
            return Err(crate::RecorderError::Config(format!(
                "snapshot directory {}: not a directory",
                dir.display()
            )));
        }
        let window_ns = self.duration.map_or(u64::MAX, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
        });
        let cfg = Config {
            window_ns,
            budget: self.bytes.unwrap_or(DEFAULT_WINDOW_BYTES),
            dir,
            program: program_name(),
            compression,
            rules: self.rules.clone(),
        };
        Ok(Some((cfg, Arc::new(Shared::new()))))
    }
}

/// Lowers the calling thread's scheduling priority (nice +5, Linux: per thread): the window's
/// own threads (the snapshot writer, the chunk compressor) give way to the flusher and the
/// writers on a busy machine, so that their work costs its own time, not the rings' records
/// (a ring holds tens of ms). Best effort: a refusal leaves the priority as it was.
pub(crate) fn yield_to_the_recording() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority has no memory preconditions; `who` 0 with PRIO_PROCESS is the calling
    // thread on Linux, whose nice value is per thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 5);
    }
}

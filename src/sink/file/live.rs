//! What a reader that follows a recording in progress (`typhon_trace::follow`, SPEC §17) reads
//! of its parts directory, without its lock and without writing anything: the names of the
//! files, whether the recorder still holds the lock, and the losses it noted so far. The page
//! check is [`super::recover::page_fault`], the one `recover` uses.

use super::counters::{self, HALF};
use super::paths::{
    self, known, open_dir, read_small, try_flock, Known, COUNTERS, LOSSES, LOSSES_LEN,
};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// A pending file starts with these 8 bytes, then the u64 (little-endian) index of the chunk
/// its pages will be, then whole pages (see the file sink's `chunks`).
pub const PENDING_MAGIC: &[u8; 8] = paths::PENDING_MAGIC;

/// Bytes before a pending file's pages: the magic and the chunk's index.
pub const PENDING_HEADER_LEN: u64 = paths::PENDING_HEADER;

/// A name the file sink makes in a parts directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PartsName {
    /// `lock`, `session.json`, `losses.json` or `counters`.
    Control,
    /// `slot-NNN.pages`: a slot's pages (compressed: its chunks).
    Slot(u8),
    /// `slot-NNN.chunk-I.pending`: (slot, chunk index) pages of a chunk not yet in the part file.
    Pending(u8, u64),
    /// `slot-NNN.chunk-I.lost`: (slot, chunk index) a chunk the disk refused (its pages are
    /// counted in `losses.json`).
    Lost(u8, u64),
    /// `assembly-N.dat` or `assembly-N.journal`: the recording is being finished (or recovered).
    Assembly,
}

/// What `name` is, if it is exactly a name the file sink makes (`slot-001.pages`, never
/// `slot-1.pages`).
///
/// ```
/// use typhon_recorder::sink::{parts_name, PartsName};
/// assert_eq!(parts_name("slot-002.chunk-7.pending"), Some(PartsName::Pending(2, 7)));
/// assert_eq!(parts_name("slot-2.pages"), None);
/// ```
pub fn parts_name(name: &str) -> Option<PartsName> {
    Some(match known(name)? {
        Known::Lock | Known::Session | Known::Losses | Known::Counters => PartsName::Control,
        Known::Slot(s) => PartsName::Slot(s),
        Known::Pending(s, i) => PartsName::Pending(s, i),
        Known::Lost(s, i) => PartsName::Lost(s, i),
        Known::AssemblyDat(_) | Known::AssemblyJournal(_) => PartsName::Assembly,
    })
}

/// Whether a live process holds the lock of the parts directory `dir` (a recording writing
/// it, or a `recover` or finish of it). Tested with a shared, non-blocking `flock` of the
/// directory, released at once: it never waits and never takes the lock for writing, so the
/// recorder is never held up by it.
///
/// ```
/// let d = std::env::temp_dir();
/// assert!(!typhon_recorder::sink::parts_locked(&d).unwrap());
/// ```
pub fn parts_locked(dir: &Path) -> io::Result<bool> {
    let f = open_dir(dir)?;
    // Dropping `f` closes it, which releases the shared lock if it was taken.
    Ok(!try_flock(&f, libc::LOCK_SH).map_err(|e| paths::at(dir, "testing the lock of", e))?)
}

/// The losses a recording in progress noted in its parts directory `dir` so far, by the names
/// `recover` gives them: `pages_lost` and `sink_errors` (`losses.json`), `no_slot`, `filtered`,
/// `refused`, `sink_lost` and `clamped` (`counters`; `filtered` holds the writes of threads
/// without a slot too). Zero and non-zero alike; a file not made yet counts zero. Read without
/// the lock: a file caught in the middle of an update is an `InvalidData` error (the caller
/// keeps its last counts and asks again), never a wrong count.
pub fn parts_losses(dir: &Path) -> io::Result<BTreeMap<String, u64>> {
    let mut m: BTreeMap<String, u64> = [
        "pages_lost",
        "sink_errors",
        "no_slot",
        "filtered",
        "refused",
        "sink_lost",
        "clamped",
    ]
    .iter()
    .map(|k| (k.to_string(), 0))
    .collect();
    let absent = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
    let lpath = dir.join(LOSSES);
    match read_small(&lpath, LOSSES_LEN as u64) {
        Ok(b) => {
            let text = String::from_utf8_lossy(&b);
            let j: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", lpath.display()),
                )
            })?;
            for k in ["pages_lost", "sink_errors"] {
                m.insert(k.into(), j[k].as_u64().unwrap_or(0));
            }
        }
        Err(e) if absent(&e) => {}
        Err(e) => return Err(e),
    }
    let cpath = dir.join(COUNTERS);
    match read_small(&cpath, 2 * HALF as u64) {
        Ok(b) => {
            let c = counters::parse(&b).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: not a counters file the recorder wrote",
                        cpath.display()
                    ),
                )
            })?;
            let mut add = |k: &str, v: u64| *m.entry(k.into()).or_default() += v;
            add("no_slot", c.no_slot);
            add("filtered", c.filtered_no_slot);
            for s in &c.slots {
                add("filtered", s.filtered);
                add("refused", s.refused);
                add("sink_lost", s.sink_lost);
                add("clamped", s.clamped);
            }
        }
        Err(e) if absent(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(m)
}

/// Whether `out` is the file an assembly journal in `dir` says the finish renamed onto it (the
/// same device, inode and length): the recording is complete even though the parts directory
/// is still there (the finish was stopped while cleaning up, or is cleaning up now).
///
/// ```
/// let d = std::env::temp_dir();
/// assert!(!typhon_recorder::sink::parts_complete(&d, &d.join("nothing.dat")));
/// ```
pub fn parts_complete(dir: &Path, out: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    let Ok(m) = std::fs::symlink_metadata(out) else {
        return false;
    };
    let me = (m.dev(), m.ino(), m.len());
    rd.flatten().any(|e| {
        matches!(
            e.file_name().to_str().and_then(known),
            Some(Known::AssemblyJournal(_))
        ) && read_small(&e.path(), 64 * 1024)
            .ok()
            .and_then(|t| paths::parse_journal(&t))
            .and_then(|j| j.renamed)
            == Some(me)
            && m.file_type().is_file()
    })
}

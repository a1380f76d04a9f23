//! Finishing: slot by slot into `assembly-N.dat`, journaled, renamed onto OUT; then the clean-up
//! of the parts directory. Shared by `finish` and `recover`, with the test failpoint.

use super::paths::{
    assembly_files, at, create_new, journal_renamed, journal_slot, known, looks_ours, DirLock,
    Known, LOCK,
};
use crate::sink::tracedat::{
    write_tracedat_v7_with, write_tracedat_with, Compression, FileMeta, SlotPages,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub(super) fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A kill at any step of assembling or cleaning up, for tests: when the environment variable
/// `TYPHON_FAILPOINT_FINISH` is `k`, the process aborts (as SIGKILL would stop it: no clean-up)
/// at the k-th step. Steps are counted from the start of the process.
pub(super) fn failpoint() {
    use std::sync::atomic::{AtomicU32, Ordering};
    static STEP: AtomicU32 = AtomicU32::new(0);
    let Some(k) = std::env::var_os("TYPHON_FAILPOINT_FINISH") else {
        return;
    };
    // Relaxed: only the flusher (or `recover`'s caller) assembles, one step at a time.
    let step = STEP.fetch_add(1, Ordering::Relaxed) + 1;
    if k.to_str().and_then(|k| k.parse().ok()) == Some(step) {
        std::process::abort();
    }
}

/// One slot's pages: `len` bytes at `offset` in `file` (a part file, or an earlier assembly).
pub(super) struct Source {
    pub(super) slot: u8,
    pub(super) path: PathBuf,
    pub(super) file: File,
    pub(super) offset: u64,
    pub(super) len: u64,
    /// Delete `path` once its pages are durable in the new assembly (a part file).
    pub(super) remove: bool,
    /// `Some(n)`: the bytes are `n` compressed chunks, not pages.
    pub(super) chunks: Option<u32>,
    /// (offset, length) of the runs of the file that make the `len` bytes, in order, when
    /// they are not all of `offset..offset + len` (`recover` leaves out a damaged chunk).
    pub(super) ranges: Vec<(u64, u64)>,
}

impl Source {
    /// The runs of the file that hold the source's bytes.
    pub(super) fn extents(&self) -> Vec<(u64, u64)> {
        if self.ranges.is_empty() {
            vec![(self.offset, self.len)]
        } else {
            self.ranges.clone()
        }
    }
}

/// A page that could not be read: (slot, page index in the slot, error).
pub(super) type Unreadable = (u8, u64, String);

/// Reads a source page by page. Strict: a read error fails the copy. Otherwise the page is
/// written as zeros (an empty page) and the error noted, so the rest is still copied.
pub(super) struct PageSource {
    /// Closed once the pages are read: a deleted part file frees its space only when closed.
    file: Option<File>,
    path: PathBuf,
    slot: u8,
    /// The runs of the file to read, and the place in the current one.
    runs: Vec<(u64, u64)>,
    run: usize,
    in_run: u64,
    len: u64,
    pos: u64,
    page: u64,
    strict: bool,
    bad: Rc<RefCell<Vec<Unreadable>>>,
}

impl Read for PageSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let Some(file) = &self.file else {
            return Ok(0);
        };
        while self.runs.get(self.run).is_some_and(|r| self.in_run >= r.1) {
            self.run += 1;
            self.in_run = 0;
        }
        let Some(&(run_at, run_len)) = self.runs.get(self.run) else {
            return Ok(0);
        };
        let page_end = ((self.pos / self.page + 1) * self.page).min(self.len);
        let n = buf
            .len()
            .min((page_end - self.pos) as usize)
            .min((run_len - self.in_run) as usize);
        let e = loop {
            match file.read_at(&mut buf[..n], run_at + self.in_run) {
                Ok(0) => {
                    break io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("ends before byte {}", run_at + run_len),
                    )
                }
                Ok(k) => {
                    self.pos += k as u64;
                    self.in_run += k as u64;
                    self.close_at_end();
                    return Ok(k);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break e,
            }
        };
        let e = at(&self.path, "reading", e);
        if self.strict {
            return Err(e);
        }
        self.bad
            .borrow_mut()
            .push((self.slot, self.pos / self.page, e.to_string()));
        buf[..n].fill(0);
        self.pos += n as u64;
        self.in_run += n as u64;
        self.close_at_end();
        Ok(n)
    }
}

impl PageSource {
    fn close_at_end(&mut self) {
        if self.pos >= self.len {
            self.file = None;
        }
    }
}

/// Where an assembly ended up.
pub(super) struct Assembled {
    pub(super) journal: PathBuf,
    pub(super) unreadable: Vec<Unreadable>,
    /// Part files kept because a page of theirs could not be read.
    pub(super) kept: BTreeSet<PathBuf>,
}

/// Writes `out` from `sources` through a new `assembly-N.dat` in `dir` (see the module docs):
/// each slot's pages are copied, synced and journaled before its part file is deleted; the
/// assembly is renamed onto `out` last.
pub(super) fn assemble(
    dir: &Path,
    out: &Path,
    meta: &FileMeta,
    compression: Compression,
    sources: Vec<Source>,
    strict: bool,
) -> io::Result<Assembled> {
    let page = u64::from(meta.page_size);
    let mut n = 0;
    // The assembly before its journal: a journal without its assembly means "renamed".
    let (dat, journal, file) = loop {
        let (dat, journal) = assembly_files(dir, n);
        if fs::symlink_metadata(&journal).is_err() {
            match create_new(&dat) {
                Ok(f) => break (dat, journal, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        n += 1;
    };
    failpoint();
    let mut jf = create_new(&journal)?;
    failpoint();
    let bad = Rc::new(RefCell::new(Vec::new()));
    let mut paths = BTreeMap::new();
    let mut slots: Vec<SlotPages<'_>> = sources
        .into_iter()
        .filter(|s| s.len > 0)
        .map(|s| {
            paths.insert(s.slot, (s.path.clone(), s.remove));
            let len = s.len;
            let slot = s.slot;
            let chunks = s.chunks;
            let runs = s.extents();
            let src = PageSource {
                file: Some(s.file),
                path: s.path,
                slot,
                runs,
                run: 0,
                in_run: 0,
                len,
                pos: 0,
                page,
                strict,
                bad: bad.clone(),
            };
            match chunks {
                Some(n) => SlotPages::chunked(slot, len, n, src),
                None => SlotPages::new(slot, len, src),
            }
        })
        .collect();
    let mut kept = BTreeSet::new();
    let mut w = BufWriter::new(file);
    let copied = |w: &mut &mut BufWriter<File>, slot: u32, offset: u64, len: u64| {
        // The slots come from part files, all below 256.
        let slot = u8::try_from(slot).map_err(|_| io::Error::other(format!("slot {slot}")))?;
        w.flush()?;
        w.get_ref()
            .sync_data()
            .map_err(|e| at(&dat, "syncing", e))?;
        failpoint();
        jf.write_all(journal_slot(slot, offset, len).as_bytes())
            .map_err(|e| at(&journal, "writing", e))?;
        jf.sync_data().map_err(|e| at(&journal, "syncing", e))?;
        failpoint();
        if let Some((path, true)) = paths.get(&slot) {
            if bad.borrow().iter().any(|b| b.0 == slot) {
                kept.insert(path.clone());
            } else {
                fs::remove_file(path).map_err(|e| at(path, "removing", e))?;
                failpoint();
            }
        }
        Ok(())
    };
    if compression.is_compressed() {
        write_tracedat_v7_with(&mut w, meta, compression, 0, &mut slots, copied)
    } else {
        write_tracedat_with(&mut w, meta, &mut slots, copied)
    }
    .map_err(|e| {
        if e.to_string().contains(&dir.display().to_string()) {
            e
        } else {
            at(&dat, "writing", e)
        }
    })?;
    drop(slots);
    let file = w
        .into_inner()
        .map_err(|e| at(&dat, "writing", e.into_error()))?;
    file.sync_all().map_err(|e| at(&dat, "syncing", e))?;
    failpoint();
    // What OUT will be once renamed: only an OUT that is this very file is complete for a
    // later `recover` (an older recording of the same name is not).
    let m = file.metadata().map_err(|e| at(&dat, "reading", e))?;
    jf.write_all(journal_renamed(m.dev(), m.ino(), m.len()).as_bytes())
        .map_err(|e| at(&journal, "writing", e))?;
    jf.sync_data().map_err(|e| at(&journal, "syncing", e))?;
    failpoint();
    fs::rename(&dat, out).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("renaming {} to {}: {e}", dat.display(), out.display()),
        )
    })?;
    failpoint();
    // The rename must reach the disk before the parts that held the pages are gone.
    if let Some(parent) = out.parent() {
        if let Ok(d) = File::open(parent) {
            let _ = d.sync_all();
        }
    }
    let unreadable = bad.borrow().clone();
    Ok(Assembled {
        journal,
        unreadable,
        kept,
    })
}

/// Removes the files this module makes from `dir` (never `keep`, nor anything it did not make
/// or whose content is not what it writes: those are returned), then, if nothing is left,
/// `last` (the journal that says `out` is complete), the lock note and the directory. The
/// session's files (`session.json`, `losses.json`, `counters`) go only once no pages are left
/// (a part file, an assembly or its journal): a later `recover` needs them. Returns what was
/// left.
pub(super) fn cleanup(
    dir: &Path,
    last: &Path,
    keep: &BTreeSet<PathBuf>,
    lock: &mut Option<DirLock>,
) -> Vec<PathBuf> {
    let mut left = Vec::new();
    let mut session = Vec::new();
    let mut pages_left = false;
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let path = e.path();
            let name = e.file_name();
            let k = name.to_str().and_then(known);
            if path == last || k == Some(Known::Lock) {
                continue;
            }
            let regular = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
            let Some(k) = k.filter(|&k| regular && looks_ours(k, &path)) else {
                left.push(path);
                continue;
            };
            if matches!(k, Known::Session | Known::Losses | Known::Counters) {
                session.push(path);
                continue;
            }
            if keep.contains(&path) || fs::remove_file(&path).is_err() {
                pages_left = true;
                left.push(path);
            }
            failpoint();
        }
    }
    if pages_left {
        left.extend(session);
    } else {
        for path in session {
            if fs::remove_file(&path).is_err() {
                left.push(path);
            }
            failpoint();
        }
    }
    // While anything is left, the journal stays: it tells a later `recover` that `out` is
    // complete, so what is left can never make it overwrite `out` with less.
    if left.is_empty() {
        let _ = fs::remove_file(last);
        failpoint();
        let _ = fs::remove_file(dir.join(LOCK));
        failpoint();
    }
    drop(lock.take());
    let _ = fs::remove_dir(dir);
    left.sort();
    left
}

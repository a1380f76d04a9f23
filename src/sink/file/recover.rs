//! `recover`: rebuilds a trace.dat from what a killed recording (or an interrupted finish) left
//! in its parts directory.

mod chunks;
mod pending;
mod session;

use super::assemble::{assemble, cleanup, Source, Unreadable};
use super::counters::{self, Counts, HALF};
use super::paths::*;
use crate::flush::page::PageRecords;
use crate::sink::tracedat::{decompress_chunk, Compression, FileMeta, SlotMeta, CHUNK_HEADER};
use chunks::{chunk_sizes, walk, Walk};
use pending::{add_pending, Slot};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What [`recover`] rebuilt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Slots found, with the pages and records each held.
    pub slots: Vec<(u8, u64, u64)>,
    /// Records in the file.
    pub records: u64,
    /// Missed counts carried by the pages.
    pub missed: u64,
    /// Pages that did not load or whose records stopped at a damaged one. They are kept in the
    /// file as they are; their records from the damage on are in no count. (With the pages
    /// of a compressed recording's damaged chunks, which are left out: `damaged_chunks`.)
    pub damaged_pages: u64,
    /// Of `damaged_pages`, those that are all zero (a sparse or zeroed part file): no page
    /// the recorder writes is.
    pub zero_pages: u64,
    /// Bytes of a last page the kill cut short (per slot, at most a page less one byte), or of
    /// a compressed recording's last chunk that the kill cut short (or that does not
    /// decompress, and what follows it). Left out of the file: a partial page is not a
    /// sub-buffer.
    pub torn_bytes: u64,
    /// Compressed recordings: chunks left out as torn (at most one per slot after a kill; its
    /// pages are then in its pending file, made a chunk again). A torn chunk whose pending file
    /// is gone (the part file cut by hand) is also in `missing_chunks` when the indices show it.
    pub torn_chunks: u64,
    /// Compressed recordings: chunks that do not decompress (or whose sizes cannot be
    /// right), left out; their pages are in `damaged_pages`. Each is in `errors`.
    pub damaged_chunks: u64,
    /// Compressed recordings: chunks that repeat an earlier chunk of their slot byte for byte,
    /// left out so that no record counts twice. Each is in `errors`.
    pub duplicate_chunks: u64,
    /// Compressed recordings: chunks that neither the part file nor a pending file holds,
    /// though the pending files' indices or the chunks the slot handed over say they were
    /// written (a part file cut short or deleted, a pending file lost). In `errors`.
    pub missing_chunks: u64,
    /// Their pages (`chunk_pages` each), and pages a full chunk's pending file lacks: lost.
    pub missing_pages: u64,
    /// Pages that could not be read (an I/O error): written to the file as empty pages, their
    /// records lost; the part file is kept for another try. Each is in `errors`.
    pub unreadable_pages: u64,
    /// Pages the disk refused while recording (from the recording's `losses.json`).
    pub pages_lost: u64,
    /// Errors the sink met while recording.
    pub sink_errors: u64,
    /// The first of them, as text.
    pub first_sink_error: Option<String>,
    /// Events of threads that found no slot (from the recording's `counters`).
    pub no_slot: u64,
    /// Writes filtered out, all slots and threads without one (from `counters`).
    pub filtered: u64,
    /// Writes refused as invalid (from `counters`).
    pub refused: u64,
    /// Records in pages the disk refused (from `counters`).
    pub sink_lost: u64,
    /// Records whose time was clamped (from `counters`).
    pub clamped: u64,
    /// Every problem met reading the directory (each names its path): unreadable pages, files
    /// that are not regular. `typhon-rec recover` exits non-zero when there is one.
    pub errors: Vec<String>,
    /// What is left in the parts directory: files recover did not make (unknown names, links,
    /// FIFOs, directories) and part files it could not read whole. Never deleted.
    pub left: Vec<PathBuf>,
    /// `out` was already complete (the finish was killed after writing it, while removing the
    /// parts): it was not touched, only the leftovers were removed.
    pub already_complete: bool,
    /// The directory held no pages and no session (a start that failed, or was killed, before
    /// it wrote any): nothing was written to `out`; the files the recorder made were removed.
    pub nothing_to_recover: bool,
}

impl Recovered {
    /// Pages lost for any reason: refused by the disk while recording, damaged, unreadable,
    /// missing.
    ///
    /// ```
    /// let r = typhon_recorder::sink::Recovered { damaged_pages: 1, pages_lost: 2, ..Default::default() };
    /// assert_eq!(r.lost_pages(), 3);
    /// ```
    pub fn lost_pages(&self) -> u64 {
        self.pages_lost + self.damaged_pages + self.unreadable_pages + self.missing_pages
    }
}

/// Why `page` is not a page the recorder's writer made (SPEC §6, §8), if it is not: the
/// commit's data fits, no unknown commit bit is set, a page holds at least one record, and
/// every byte after the data (and after a stored missed count) is zero. An all-zero page (a
/// sparse or zeroed file) is not one either. `recover` checks every page of a parts directory
/// with it, and so does a reader following a recording in progress (`typhon_trace::follow`).
///
/// ```
/// use typhon_recorder::sink::page_fault;
/// let mut page = vec![0u8; 4096];
/// assert_eq!(page_fault(&page), Some("all zero"));
/// page[8..16].copy_from_slice(&8u64.to_le_bytes()); // 8 bytes of data after the header
/// page[16..24].copy_from_slice(&[1; 8]);
/// assert_eq!(page_fault(&page), None);
/// page[100] = 1;
/// assert_eq!(page_fault(&page), Some("bytes after the data"));
/// ```
pub fn page_fault(page: &[u8]) -> Option<&'static str> {
    use crate::flush::page::{COMMIT_MASK, PAGE_HEADER_SIZE, RB_MISSED_EVENTS, RB_MISSED_STORED};
    if page.iter().all(|&b| b == 0) {
        return Some("all zero");
    }
    let commit = u64::from_le_bytes(page[8..16].try_into().unwrap());
    if commit & !(COMMIT_MASK | RB_MISSED_EVENTS | RB_MISSED_STORED) != 0 {
        return Some("unknown commit bits");
    }
    let data = (commit & COMMIT_MASK) as usize;
    if data == 0 {
        return Some("no records");
    }
    let stored = if commit & RB_MISSED_STORED != 0 { 8 } else { 0 };
    let end = PAGE_HEADER_SIZE + data + stored;
    if end > page.len() {
        // The records before the overrun may still be read (and counted); the page is
        // damaged either way.
        return Some("data past the page's end");
    }
    if page[end..].iter().any(|&b| b != 0) {
        return Some("bytes after the data");
    }
    None
}

/// Refuses a page size (from session.json) that the part files contradict: a part file whose
/// first page is not a page at that size but is one at another size.
fn check_page_size(sources: &BTreeMap<u8, Source>, page: u64, session: &Path) -> io::Result<()> {
    for src in sources.values() {
        // A part file's own length (its pages are at offset 0; a torn tail is in no `len`).
        let real = if src.offset == 0 {
            src.file.metadata().map_or(src.len, |m| m.len())
        } else {
            src.len
        };
        let first_page_is = |size: u64| {
            let mut buf = vec![0u8; size as usize];
            size <= real
                && src.file.read_exact_at(&mut buf, src.offset).is_ok()
                && page_fault(&buf).is_none()
        };
        if real == 0 || first_page_is(page) {
            continue;
        }
        let mut size = crate::flush::page::MIN_PAGE_SIZE as u64;
        while size <= crate::flush::page::MAX_PAGE_SIZE as u64 {
            if size != page && src.offset == 0 && first_page_is(size) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} says the page size is {page}, but the first page of {} is a {size}-byte page: the session file does not describe these parts (fix its page_size, then run recover again)",
                        session.display(),
                        src.path.display()
                    ),
                ));
            }
            size *= 2;
        }
    }
    Ok(())
}

/// Counts and names a slot's pages, reading them one at a time.
pub(super) struct Scan {
    meta: SlotMeta,
    pages: u64,
    damaged: u64,
    /// Of the damaged pages, those that are all zero.
    zero: u64,
}

pub(super) fn scan(src: &Source, page: u64, bad: &mut Vec<Unreadable>) -> Scan {
    let mut sc = Scan {
        meta: SlotMeta {
            slot: src.slot,
            ..Default::default()
        },
        pages: 0,
        damaged: 0,
        zero: 0,
    };
    let mut buf = vec![0u8; page as usize];
    if src.chunks.is_some() {
        // The chunks were checked (they decompress) by `walk`.
        let mut z = Vec::new();
        let mut data = Vec::new();
        let mut i = 0;
        'runs: for (off, len) in src.extents() {
            let mut pos = 0;
            while pos + CHUNK_HEADER as u64 <= len {
                let mut h = [0u8; CHUNK_HEADER];
                let r = src.file.read_exact_at(&mut h, off + pos).and_then(|()| {
                    let (c, u) = chunk_sizes(&h);
                    z.resize(c as usize, 0);
                    src.file.read_exact_at(&mut z, off + pos + 8)?;
                    decompress_chunk(&z, u, &mut data)?;
                    pos += 8 + c;
                    Ok(())
                });
                if let Err(e) = r {
                    bad.push((src.slot, i, at(&src.path, "reading", e).to_string()));
                    break 'runs;
                }
                for p in data.chunks_exact(page as usize) {
                    scan_page(p, &mut sc);
                    i += 1;
                }
            }
        }
    } else {
        for i in 0..src.len / page {
            if let Err(e) = src.file.read_exact_at(&mut buf, src.offset + i * page) {
                sc.pages += 1;
                bad.push((src.slot, i, at(&src.path, "reading", e).to_string()));
                continue;
            }
            scan_page(&buf, &mut sc);
        }
    }
    sc.meta.attempted = sc.meta.written + sc.meta.missed;
    sc
}

fn scan_page(buf: &[u8], sc: &mut Scan) {
    let sm = &mut sc.meta;
    sc.pages += 1;
    match page_fault(buf) {
        // Its records up to the page's end are read; the reader counts the damage.
        Some("data past the page's end") | None => {}
        Some(why) => {
            sc.damaged += 1;
            sc.zero += u64::from(why == "all zero");
            return;
        }
    }
    let Ok(mut records) = PageRecords::new(buf) else {
        sc.damaged += 1;
        return;
    };
    sm.missed += records.missed();
    for r in records.by_ref() {
        let Ok((_, data)) = r else {
            sc.damaged += 1;
            break;
        };
        sm.written += 1;
        if let Some((tid, name, _)) = crate::codec::records::thread_info(data) {
            if sm.name.is_empty() {
                sm.name = name.to_owned();
            }
            sm.thread_id = Some(tid as i64);
        }
    }
}

/// The slots an assembly's journal says it holds, checked against the assembly's length.
/// (slot, offset, len) of the pages an assembly holds.
pub(super) type Journaled = Vec<(u8, u64, u64)>;

pub(super) fn journaled(
    dat: &Path,
    journal: &Path,
    page: u64,
    chunked: bool,
) -> io::Result<(File, Journaled)> {
    let text = read_small(journal, 64 * 1024)?;
    let j = parse_journal(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not an assembly's journal", journal.display()),
        )
    })?;
    let f = open_regular(dat, false)?;
    let size = f.metadata().map_err(|e| at(dat, "reading", e))?.len();
    let v = j
        .slots
        .into_iter()
        .filter(|&(_, o, l)| {
            // Compressed: the chunks come after the page-aligned chunk count.
            let aligned = if chunked {
                o >= 4 && (o - 4) % page == 0
            } else {
                o % page == 0 && l % page == 0
            };
            aligned && o.checked_add(l).is_some_and(|e| e <= size)
        })
        .collect();
    Ok((f, v))
}

/// Whether `out` is the assembly the journal at `path` says was renamed onto it: the same
/// file (device and inode) with the same length.
fn renamed_onto(path: &Path, out: &Path) -> Option<bool> {
    let j = parse_journal(&read_small(path, 64 * 1024).ok()?)?;
    let (dev, ino, len) = j.renamed?;
    Some(
        fs::symlink_metadata(out).is_ok_and(|m| {
            m.file_type().is_file() && (m.dev(), m.ino(), m.len()) == (dev, ino, len)
        }),
    )
}

/// Turns what a recording to `out` left behind when it was killed (`<out>.parts/`) into a valid
/// trace.dat at `out`, holding every page that was on disk.
///
/// It refuses a directory a live recording holds (its lock is taken), reads only regular files
/// it knows the names of (never following a link, never blocking on a FIFO), a page at a time,
/// and takes a slot's pages from its part file or, for a finish that was interrupted, from the
/// assembly that holds them. Everything it could not use is counted and named in the result;
/// it deletes only files it made, and the directory only once it is empty. When `out` is
/// already complete (the finish was killed while removing the parts), `out` is left as it is.
///
/// ```
/// let r = typhon_recorder::sink::recover("/nonexistent/x.dat");
/// assert!(r.is_err());
/// ```
pub fn recover(out: impl AsRef<Path>) -> io::Result<Recovered> {
    // OUT must be absent or a regular file: checked before anything in the directory is
    // touched (the rename at the end would fail only after the parts were moved).
    let out = output_path(out.as_ref())?;
    let dir = parts_dir(&out);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is {}, not a recording's parts directory",
                    dir.display(),
                    kind(&m.file_type())
                ),
            ))
        }
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("no recording to recover at {}: {e}", dir.display()),
            ))
        }
    }
    let mut lock = Some(take_lock(&dir)?);
    let mut rec = Recovered::default();
    let mut keep = BTreeSet::new();
    let mut entries: BTreeMap<Known, PathBuf> = BTreeMap::new();
    let rd = fs::read_dir(&dir).map_err(|e| at(&dir, "reading", e))?;
    for e in rd {
        let e = e.map_err(|e| at(&dir, "reading", e))?;
        let path = e.path();
        let Some(k) = e.file_name().to_str().and_then(known) else {
            rec.left.push(path);
            continue;
        };
        match fs::symlink_metadata(&path) {
            // A file named as ours whose content is not what we write there is not ours.
            Ok(m) if m.file_type().is_file() && !looks_ours(k, &path) => {
                rec.left.push(path);
            }
            Ok(m) if m.file_type().is_file() => {
                entries.insert(k, path);
            }
            Ok(m) if k != Known::Lock => {
                rec.errors.push(format!(
                    "{} is {}, not a file a recording makes: not read, left as it is",
                    path.display(),
                    kind(&m.file_type())
                ));
                rec.left.push(path);
            }
            Ok(_) => {}
            Err(e) => {
                rec.errors.push(at(&path, "reading", e).to_string());
                rec.left.push(path);
            }
        }
    }
    let journals: Vec<u32> = entries
        .keys()
        .filter_map(|k| match k {
            Known::AssemblyJournal(n) => Some(*n),
            _ => None,
        })
        .collect();
    // A journal whose assembly is gone and that names `out` as the assembly it renamed: `out`
    // is complete. (A journal without its assembly that names no rename, or names another
    // file, says nothing about `out`: an older recording of the same name is not complete.)
    for &n in &journals {
        if entries.contains_key(&Known::AssemblyDat(n)) {
            continue;
        }
        let path = &entries[&Known::AssemblyJournal(n)];
        match renamed_onto(path, &out) {
            Some(true) => {
                for (k, p) in &entries {
                    let holds_pages = match k {
                        Known::Slot(_) => fs::symlink_metadata(p).is_ok_and(|m| m.len() > 0),
                        Known::Pending(..) => {
                            fs::symlink_metadata(p).is_ok_and(|m| m.len() > PENDING_HEADER)
                        }
                        _ => false,
                    };
                    if holds_pages {
                        keep.insert(p.clone());
                    }
                }
                let left = cleanup(&dir, path, &keep, &mut lock);
                rec.left.extend(left);
                rec.left.sort();
                rec.left.dedup();
                rec.already_complete = true;
                return Ok(rec);
            }
            Some(false) => rec.errors.push(format!(
                "{} says its assembly was renamed onto {}, but {} is not that file: recovering what is left",
                path.display(),
                out.display(),
                out.display()
            )),
            None => {}
        }
    }
    // No pages and no session: a finish killed at the very end of its clean-up (OUT is there),
    // or a start that failed or was killed before it wrote its session (OUT is not).
    // (A journal whose assembly is gone holds no pages: it said nothing about `out` above.)
    let holds_nothing = entries.keys().all(|k| match k {
        Known::Lock | Known::Losses | Known::Counters => true,
        Known::AssemblyJournal(n) => !entries.contains_key(&Known::AssemblyDat(*n)),
        _ => false,
    });
    // (A file of ours that is not a regular file, session.json a directory: reported below.)
    if holds_nothing && rec.errors.is_empty() {
        let clean = rec.left.is_empty();
        rec.left
            .extend(cleanup(&dir, &dir.join(LOCK), &keep, &mut lock));
        rec.left.sort();
        rec.left.dedup();
        if clean && fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_file()) {
            rec.already_complete = true;
        } else {
            rec.nothing_to_recover = true;
        }
        return Ok(rec);
    }
    let session_path = dir.join(SESSION);
    let session: serde_json::Value = serde_json::from_slice(&read_small(&session_path, 64 * 1024)?)
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", session_path.display()),
            )
        })?;
    let ses = session::read(&session, &session_path)?;
    let (page, page_size, compression) = (ses.page, ses.page, ses.compression);
    let chunked = compression.is_compressed();
    if let Some(p) = entries.get(&Known::Losses) {
        match read_small(p, LOSSES_LEN as u64) {
            Ok(b) => {
                let text = String::from_utf8_lossy(&b);
                if let Ok(j) = serde_json::from_str::<serde_json::Value>(text.trim()) {
                    rec.pages_lost = j["pages_lost"].as_u64().unwrap_or(0);
                    rec.sink_errors = j["sink_errors"].as_u64().unwrap_or(0);
                    rec.first_sink_error = j["first_sink_error"].as_str().map(str::to_owned);
                }
            }
            Err(e) => rec.errors.push(e.to_string()),
        }
    }
    // The counters no page carries, as the recording last noted them.
    let mut counts = Counts::default();
    if let Some(p) = entries.get(&Known::Counters) {
        match read_small(p, 2 * HALF as u64).map(|b| counters::parse(&b)) {
            Ok(Some(c)) => counts = c,
            Ok(None) => rec.errors.push(format!(
                "{}: not a counters file the recorder wrote; the counters it holds are not in the file",
                p.display()
            )),
            Err(e) => rec.errors.push(e.to_string()),
        }
    }
    // Each slot's pages: its part file if it is still there, else a journaled assembly.
    let mut sources: BTreeMap<u8, Source> = BTreeMap::new();
    // A compressed slot's chunks as read.
    let mut walks: BTreeMap<u8, Walk> = BTreeMap::new();
    for (k, path) in &entries {
        let Known::Slot(slot) = *k else { continue };
        match open_regular(path, false).and_then(|f| {
            let len = f.metadata().map_err(|e| at(path, "reading", e))?.len();
            Ok((f, len))
        }) {
            Ok((file, len)) => {
                let (good, chunks, ranges) = if chunked {
                    match walk(&file, path, 0, len, page, ses.chunk_pages) {
                        Ok(w) => {
                            let r = (w.len(), Some(w.good), w.ranges.clone());
                            walks.insert(slot, w);
                            r
                        }
                        Err(e) => {
                            rec.errors.push(e.to_string());
                            rec.left.push(path.clone());
                            continue;
                        }
                    }
                } else {
                    rec.torn_bytes += len % page;
                    (len / page * page, None, Vec::new())
                };
                sources.insert(
                    slot,
                    Source {
                        slot,
                        path: path.clone(),
                        file,
                        offset: 0,
                        len: good,
                        remove: true,
                        chunks,
                        ranges,
                    },
                );
            }
            Err(e) => {
                rec.errors.push(e.to_string());
                rec.left.push(path.clone());
            }
        }
    }
    for &n in &journals {
        let (dat, journal) = assembly_files(&dir, n);
        if !entries.contains_key(&Known::AssemblyDat(n)) {
            continue;
        }
        match journaled(&dat, &journal, page, chunked) {
            Ok((f, slots)) => {
                for (slot, offset, len) in slots {
                    if sources.get(&slot).is_some_and(|s| s.len > 0) {
                        continue;
                    }
                    let file = f.try_clone().map_err(|e| at(&dat, "opening", e))?;
                    let (len, chunks, ranges) = if chunked {
                        let w = walk(&file, &dat, offset, len, page, ses.chunk_pages)?;
                        let r = (w.len(), Some(w.good), w.ranges.clone());
                        walks.insert(slot, w);
                        r
                    } else {
                        (len, None, Vec::new())
                    };
                    sources.insert(
                        slot,
                        Source {
                            slot,
                            path: dat.clone(),
                            file,
                            offset,
                            len,
                            remove: false,
                            chunks,
                            ranges,
                        },
                    );
                }
            }
            Err(e) => {
                // Nothing was taken from it: it stays, for a look or another try.
                rec.errors.push(e.to_string());
                keep.insert(dat);
                keep.insert(journal);
            }
        }
    }
    // What the chunks cost: torn, damaged, repeated. A part file not read whole is kept.
    for (slot, w) in &walks {
        rec.torn_bytes += w.torn_bytes;
        rec.torn_chunks += u64::from(w.torn_bytes > 0);
        rec.damaged_chunks += w.damaged_chunks;
        rec.damaged_pages += w.damaged_pages;
        rec.duplicate_chunks += w.duplicates;
        rec.errors.extend(w.problems.iter().cloned());
        if let Some(src) = sources.get_mut(slot).filter(|_| !w.whole()) {
            if src.remove {
                keep.insert(src.path.clone());
            }
            src.remove = false;
        }
    }
    // A compressed slot's chunks not yet in its part file: its pending files, in index order;
    // and the chunks it handed over that are nowhere.
    let mut pendings: BTreeMap<u8, Vec<(u64, PathBuf, bool)>> = BTreeMap::new();
    for (k, path) in &entries {
        if let Known::Pending(slot, index) | Known::Lost(slot, index) = *k {
            let lost = matches!(k, Known::Lost(..));
            pendings
                .entry(slot)
                .or_default()
                .push((index, path.clone(), lost));
        }
    }
    for files in pendings.values_mut() {
        files.sort_by_key(|f| f.0);
    }
    for &(slot, _) in &counts.chunks {
        pendings.entry(slot).or_default();
    }
    for (slot, files) in pendings {
        let Compression::Zstd { level } = compression else {
            for (_, path, _) in files {
                rec.errors.push(format!(
                    "{} belongs to a compressed recording, this one is not: not read, left as it is",
                    path.display()
                ));
                rec.left.push(path);
            }
            continue;
        };
        let s = Slot {
            slot,
            page,
            level,
            chunk_pages: ses.chunk_pages,
            handed_over: counts
                .chunks
                .iter()
                .find(|c| c.0 == slot)
                .map_or(0, |c| c.1),
            walk: walks.get(&slot),
        };
        let mut src = sources.remove(&slot);
        let r = add_pending(&dir, &s, &files, &mut src);
        if let Some(src) = src {
            sources.insert(slot, src);
        }
        match r {
            Ok(a) => {
                rec.torn_bytes += a.torn_bytes;
                rec.missing_chunks += a.missing_chunks;
                rec.missing_pages += a.missing_pages;
                rec.errors.extend(a.errors);
                keep.extend(a.keep);
            }
            Err(e) => {
                rec.errors.push(e.to_string());
                keep.extend(files.into_iter().map(|f| f.1));
                if let Some(src) = sources.get_mut(&slot) {
                    if src.remove {
                        keep.insert(src.path.clone());
                    }
                    src.remove = false;
                }
            }
        }
    }
    rec.no_slot = counts.no_slot;
    rec.filtered = counts.filtered_no_slot;
    for c in &counts.slots {
        rec.filtered += c.filtered;
        rec.refused += c.refused;
        rec.sink_lost += c.sink_lost;
        rec.clamped += c.clamped;
    }
    let mut meta = FileMeta::new(page_size as u32);
    meta.wall_anchor_ns = ses.wall_anchor_ns;
    meta.mono_anchor_ns = ses.mono_anchor_ns;
    if !chunked {
        check_page_size(&sources, page, &session_path)?;
    }
    let mut bad = Vec::new();
    // Slots none of whose pages the recorder can have made (a sparse or zeroed file): counted
    // as damaged, not copied into the file, and their source left in place for a look.
    let mut unusable = BTreeSet::new();
    for src in sources.values() {
        let s = scan(src, page, &mut bad);
        if s.pages > 0 && s.damaged == s.pages && s.meta.written == 0 {
            unusable.insert(src.slot);
        }
        rec.damaged_pages += s.damaged;
        rec.zero_pages += s.zero;
        rec.records += s.meta.written;
        rec.missed += s.meta.missed;
        rec.slots.push((src.slot, s.pages, s.meta.written));
        let mut sm = s.meta;
        // Records the disk refused were attempted too: attempted = written + missed + sink_lost.
        sm.attempted += counts
            .slots
            .iter()
            .find(|c| c.slot == src.slot)
            .map_or(0, |c| c.sink_lost);
        meta.slots.push(sm);
    }
    let mut unreadable: BTreeSet<(u8, u64)> = bad.iter().map(|b| (b.0, b.1)).collect();
    // A part file a page of which could not be read is kept, for another try.
    let unread_slots: BTreeSet<u8> = unreadable.iter().map(|b| b.0).collect();
    let srcs: Vec<Source> = sources
        .into_values()
        .map(|mut s| {
            if unread_slots.contains(&s.slot) || unusable.contains(&s.slot) {
                if s.remove {
                    keep.insert(s.path.clone());
                }
                s.remove = false;
            }
            if unusable.contains(&s.slot) {
                s.len = 0;
            }
            s
        })
        .collect();
    // The counts are final before the header is written: pages that fail only now are counted
    // in the result and the errors, not in the file's metadata.
    let unreadable_before = unreadable.len() as u64;
    meta.session = serde_json::json!({
        "recovered": true,
        "damaged_pages": rec.damaged_pages,
        "torn_bytes": rec.torn_bytes,
        "torn_chunks": rec.torn_chunks,
        "damaged_chunks": rec.damaged_chunks,
        "duplicate_chunks": rec.duplicate_chunks,
        "missing_chunks": rec.missing_chunks,
        "missing_pages": rec.missing_pages,
        "unreadable_pages": unreadable_before,
        "pages_lost": rec.pages_lost,
        "sink_errors": rec.sink_errors,
        "first_sink_error": rec.first_sink_error,
        "no_slot": counts.no_slot,
        "filtered_no_slot": counts.filtered_no_slot,
        "slots": counts.slots.iter().map(|c| serde_json::json!({
            "slot": c.slot, "filtered": c.filtered, "refused": c.refused,
            "sink_lost": c.sink_lost, "clamped": c.clamped,
        })).collect::<Vec<_>>(),
    });
    let a = assemble(&dir, &out, &meta, compression, srcs, false)?;
    for (slot, i, msg) in &bad {
        rec.errors.push(format!("slot {slot}, page {i}: {msg}"));
    }
    // Pages that failed only on the second read (a failing disk).
    for (slot, i, msg) in a.unreadable {
        if unreadable.insert((slot, i)) {
            rec.errors.push(format!("slot {slot}, page {i}: {msg}"));
        }
    }
    rec.unreadable_pages = unreadable.len() as u64;
    keep.extend(a.kept);
    let left = cleanup(&dir, &a.journal, &keep, &mut lock);
    rec.left.extend(left);
    rec.left.sort();
    rec.left.dedup();
    Ok(rec)
}

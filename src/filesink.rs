//! The file sink: pages stream to per-slot files while recording; `finish` assembles trace.dat.
//!
//! ```text
//!   recording to OUT                              finish() / recover
//!   OUT.parts/session.json   (page size, anchors)     │
//!   OUT.parts/slot-001.pages (slot 1's pages, in order)├──▶ OUT (trace.dat v6: header, formats,
//!   OUT.parts/slot-002.pages                           │        cmdlines, metadata, then each
//!   ...                                                │        slot's pages page-aligned)
//! ```
//!
//! Like trace-cmd, which records one file per CPU and assembles them at the end, the sink appends
//! every page to its slot's file and hands the bytes to the OS after every flush cycle, so a
//! process killed with SIGKILL leaves every flushed page on disk. [`recover`] turns such a
//! leftover directory into a valid trace.dat (thread names and totals are rebuilt from the pages'
//! ThreadInfo records and missed counts).

use crate::page::PageRecords;
use crate::sink::{SessionSummary, Sink};
use crate::tracedat::{write_tracedat, FileMeta, SlotMeta, SlotPages};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The directory next to `out` where pages stream while recording.
///
/// ```
/// let d = typhon_recorder::filesink::parts_dir(std::path::Path::new("/tmp/run.dat"));
/// assert_eq!(d, std::path::PathBuf::from("/tmp/run.dat.parts"));
/// ```
pub fn parts_dir(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".parts");
    PathBuf::from(s)
}

fn slot_file(dir: &Path, slot: u8) -> PathBuf {
    dir.join(format!("slot-{slot:03}.pages"))
}

/// Streams pages to `<out>.parts/` and assembles `out` at the end.
///
/// ```
/// use typhon_recorder::filesink::FileSink;
/// use typhon_recorder::sink::{Sink, SessionSummary};
/// let dir = std::env::temp_dir().join(format!("fs-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let out = dir.join("t.dat");
/// let mut s = FileSink::create(&out, 4096).unwrap();
/// s.finish(&SessionSummary { page_size: 4096, ..Default::default() }).unwrap();
/// assert!(out.exists());
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub struct FileSink {
    out: PathBuf,
    dir: PathBuf,
    page_size: usize,
    files: Vec<Option<SlotFile>>,
}

/// Bytes buffered per slot file before they go to the OS.
const SLOT_BUFFER: usize = 64 * 1024;

/// One slot's page file. Invariant: the bytes on disk and those in the buffer are, together,
/// the `accepted` bytes: whole pages, in order. A write that fails part-way is cut back off
/// the file, so a failing disk costs the pages it refused (counted by the flusher as
/// `sink_lost`) and never shifts the slot's later pages off the page grid.
struct SlotFile {
    w: BufWriter<File>,
    accepted: u64,
    /// The length the file must be cut back to, while cutting it failed: until it is done,
    /// the slot's pages are refused (and so counted lost), since they would land off the grid.
    cut_to: Option<u64>,
}

impl SlotFile {
    fn write_page(&mut self, page: &[u8]) -> io::Result<()> {
        self.cut_back()?;
        match self.w.write_all(page) {
            Ok(()) => {
                self.accepted += page.len() as u64;
                Ok(())
            }
            Err(e) => {
                // `BufWriter` either failed to flush its buffer (it keeps the unwritten part
                // and took none of `page`) or wrote a page of at least its capacity straight
                // to the file (its buffer empty), possibly in part: what belongs on disk is
                // what was accepted less what is still buffered.
                let keep = self.accepted - self.w.buffer().len() as u64;
                if self.w.get_ref().metadata().map_or(true, |m| m.len() > keep) {
                    self.cut_to = Some(keep);
                    self.cut_back().map_err(|t| {
                        io::Error::new(
                            t.kind(),
                            format!("{e}; then cutting the partial page off failed: {t}"),
                        )
                    })?;
                }
                Err(e)
            }
        }
    }

    /// Cuts a partial page off the file if an earlier attempt failed.
    fn cut_back(&mut self) -> io::Result<()> {
        if let Some(keep) = self.cut_to {
            self.w.get_ref().set_len(keep)?;
            self.cut_to = None;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.cut_back()?;
        self.w.flush()
    }
}

impl FileSink {
    /// Creates `<out>.parts/` (it must not exist: it may hold an unrecovered recording) and
    /// checks that `out` can be written: not a directory, in a directory that exists. Errors
    /// name the path, so a bad output is reported before anything is recorded, not at the end.
    ///
    /// ```
    /// use typhon_recorder::filesink::FileSink;
    /// let e = FileSink::create("/nonexistent-dir/x.dat", 4096).err().unwrap();
    /// assert!(e.to_string().contains("/nonexistent-dir"));
    /// let e = FileSink::create(std::env::temp_dir(), 4096).err().unwrap();
    /// assert!(e.to_string().contains("is a directory"));
    /// ```
    pub fn create(out: impl AsRef<Path>, page_size: usize) -> io::Result<Self> {
        let out = out.as_ref().to_path_buf();
        if out.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("output {} is a directory; give a file path", out.display()),
            ));
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "output {}: directory {} does not exist",
                    out.display(),
                    parent.display()
                ),
            ));
        }
        let dir = parts_dir(&out);
        if dir.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists: an earlier recording to {} was not finished; run `typhon-rec recover {}` or remove it",
                    dir.display(),
                    out.display(),
                    out.display()
                ),
            ));
        }
        fs::create_dir(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", dir.display())))?;
        let meta = serde_json::json!({ "page_size": page_size });
        fs::write(dir.join("session.json"), meta.to_string())?;
        Ok(Self {
            out,
            dir,
            page_size,
            files: (0..256).map(|_| None).collect(),
        })
    }
}

impl Sink for FileSink {
    fn begin(&mut self, start: &SessionSummary) -> io::Result<()> {
        let meta = serde_json::json!({
            "page_size": self.page_size,
            "wall_anchor_ns": start.wall_anchor_ns,
            "monotonic_anchor_ns": start.monotonic_anchor_ns,
            "version": start.version,
        });
        fs::write(self.dir.join("session.json"), meta.to_string())
    }

    fn write_page(&mut self, slot: u8, page: &[u8]) -> io::Result<()> {
        let entry = &mut self.files[slot as usize];
        let f = match entry {
            Some(f) => f,
            None => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(slot_file(&self.dir, slot))?;
                entry.insert(SlotFile {
                    w: BufWriter::with_capacity(SLOT_BUFFER, file),
                    accepted: 0,
                    cut_to: None,
                })
            }
        };
        f.write_page(page)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Every file is flushed even when one fails, so each one's pages reach the OS every
        // cycle and a kill loses none of them; the first error is returned. A failed flush
        // keeps its unwritten bytes buffered, to go out with the next one.
        let mut first = Ok(());
        for f in self.files.iter_mut().flatten() {
            if let Err(e) = f.flush() {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    fn finish(&mut self, summary: &SessionSummary) -> io::Result<()> {
        self.flush()?;
        self.files.iter_mut().for_each(|f| *f = None);
        let mut meta = FileMeta::new(self.page_size as u32);
        meta.wall_anchor_ns = summary.wall_anchor_ns as i64;
        meta.mono_anchor_ns = summary.monotonic_anchor_ns as i64;
        meta.slots = summary
            .slots
            .iter()
            .map(|s| SlotMeta {
                slot: s.slot,
                name: s.name.clone(),
                thread_id: (s.threads > 0).then_some(s.last_thread_id as i64),
                attempted: s.attempted,
                written: s.written,
                missed: s.missed,
            })
            .collect();
        meta.session = serde_json::json!({
            "end_ns": summary.end_ns,
            "no_slot": summary.no_slot,
            "filtered_no_slot": summary.filtered_no_slot,
            "slots": summary.slots.iter().map(|s| serde_json::json!({
                "slot": s.slot, "filtered": s.filtered, "refused": s.refused,
                "sink_lost": s.sink_lost, "thread_ids": s.thread_ids, "threads": s.threads,
            })).collect::<Vec<_>>(),
        });
        assemble(&self.dir, &self.out, &meta)
    }
}

/// Writes `out` from the page files in `dir`, then removes `dir`. The file is written under a
/// temporary name and renamed, so `out` is either the old file or the complete new one.
fn assemble(dir: &Path, out: &Path, meta: &FileMeta) -> io::Result<()> {
    let page = meta.page_size as u64;
    let mut sources = Vec::new();
    for slot in 0..=255u8 {
        let p = slot_file(dir, slot);
        let Ok(f) = File::open(&p) else { continue };
        // A kill during a write can leave a partial last page: only whole pages are taken.
        let len = f.metadata()?.len() / page * page;
        if len > 0 {
            sources.push(SlotPages::new(slot, len, io::Read::take(f, len)));
        }
    }
    let tmp = {
        let mut s = out.as_os_str().to_owned();
        s.push(".tmp");
        PathBuf::from(s)
    };
    let mut w = BufWriter::new(File::create(&tmp)?);
    write_tracedat(&mut w, meta, &mut sources)?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    drop(sources);
    fs::rename(&tmp, out)?;
    fs::remove_dir_all(dir)
}

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
    /// file as they are; their records from the damage on are in no count.
    pub damaged_pages: u64,
    /// Bytes of a last page the kill cut short (per slot, at most a page less one byte). Left
    /// out of the file: a partial page is not a sub-buffer.
    pub torn_bytes: u64,
}

/// Turns what a recording to `out` left behind when it was killed (`<out>.parts/`) into a valid
/// trace.dat at `out`, holding every page flushed before the kill.
///
/// ```
/// let r = typhon_recorder::filesink::recover("/nonexistent/x.dat");
/// assert!(r.is_err());
/// ```
pub fn recover(out: impl AsRef<Path>) -> io::Result<Recovered> {
    let out = out.as_ref();
    let dir = parts_dir(out);
    let session: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("session.json")).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("no recording to recover at {}: {e}", dir.display()),
            )
        })?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("session.json: {e}")))?;
    let page_size = session["page_size"].as_u64().unwrap_or(0);
    crate::page::validate_page_size(page_size as usize)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let mut meta = FileMeta::new(page_size as u32);
    meta.wall_anchor_ns = session["wall_anchor_ns"].as_i64().unwrap_or(0);
    meta.mono_anchor_ns = session["monotonic_anchor_ns"].as_i64().unwrap_or(0);
    meta.session = serde_json::json!({ "recovered": true });
    let mut rec = Recovered::default();
    for slot in 0..=255u8 {
        let Ok(bytes) = fs::read(slot_file(&dir, slot)) else {
            continue;
        };
        let whole = bytes.len() / page_size as usize * page_size as usize;
        rec.torn_bytes += (bytes.len() - whole) as u64;
        let mut sm = SlotMeta {
            slot,
            ..Default::default()
        };
        let mut pages = 0;
        for page in bytes[..whole].chunks(page_size as usize) {
            pages += 1;
            let Ok(mut records) = PageRecords::new(page) else {
                rec.damaged_pages += 1;
                continue;
            };
            sm.missed += records.missed();
            for r in records.by_ref() {
                let Ok((_, data)) = r else {
                    rec.damaged_pages += 1;
                    break;
                };
                sm.written += 1;
                if let Some((tid, name, _)) = crate::recorder::thread_info(data) {
                    if sm.name.is_empty() {
                        sm.name = name.to_owned();
                    }
                    sm.thread_id = Some(tid as i64);
                }
            }
        }
        sm.attempted = sm.written + sm.missed;
        rec.records += sm.written;
        rec.missed += sm.missed;
        rec.slots.push((slot, pages, sm.written));
        meta.slots.push(sm);
    }
    assemble(&dir, out, &meta)?;
    Ok(rec)
}
